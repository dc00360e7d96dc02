/* bench/always_on.c: COLLSCOPE_RECORD=summary's disk and memory per rank per day
 * (docs/always-on.md): one process's writer fed a modeled day of dp_train's mix at 500 NCCL
 * ops/s (AllReduce of 4 KiB, 32 KiB and 256 KiB a step, each with its two memcpys; GPU
 * durations of 205, 209 and 241 us with +-20 % deterministic jitter), through the same calls
 * the harvest thread makes, into a dump file under /tmp; WINDOWS flight-recorder windows a day
 * (failed ops spread over the day, each the ring's 4096 records and 1024 after). Prints the
 * file's bytes per day (with and without the windows' share) and the process's peak memory.
 * The file is plain unless COLLSCOPE_COMPRESS=zstd is set.
 * Usage: bench_always_on [HOURS (24)] [WINDOWS (24)] */
#include "shim/cs_internal.h"
#include "stats/dump_writer.h"
#include "stats/flight.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long peak_kib(void) {
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) v = atol(line + 6);
  if (f) fclose(f);
  return v;
}

int main(int argc, char **argv) {
  double hours = argc > 1 ? atof(argv[1]) : 24;
  long windows = argc > 2 ? atol(argv[2]) : 24;
  char dir[] = "/tmp/collscope-always-XXXXXX";
  if (!mkdtemp(dir) || hours <= 0) return 1;
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_LOG", "quiet", 1);
  setenv("COLLSCOPE_RECORD", "summary", 1);
  setenv("COLLSCOPE_COMPRESS", "off", 0); /* plain unless asked (summary mode's default is zstd) */
  setenv("RANK", "3", 1);
  cs_config_load();
  if (!cs_dump_open() || !cs_flight_init(cs_cfg.flight_ops, cs_cfg.flight_after, cs_cfg.summary_s)) return 1;
  static const uint64_t sizes[3] = {4096, 32768, 262144};
  static const int64_t base_ns[3] = {204972, 208992, 241100};
  struct cs_record r;
  memset(&r, 0, sizeof r);
  r.dtype = 7;
  r.redop = 0;
  r.root = r.peer = -1;
  r.comm_id = 0x1234567890abcdefULL;
  r.comm_size = 8;
  r.comm_rank = 3;
  r.device = 3;
  r.stream = 0x5555deadbeef;
  r.site = (uint64_t)(uintptr_t)&main;
  r.timing = CS_TIMING_GPU_EVENT;
  const int64_t t0 = 1764000000000000000LL, step_ns = 6000000; /* 3 ops a 6 ms step: 500 ops/s */
  long steps = (long)(hours * 3600e9 / (double)step_ns);
  long fail_every = windows > 0 ? steps / windows : 0;
  uint64_t lcg = 1, seq = 0;
  int64_t wall0 = cs_now_ns(CLOCK_MONOTONIC);
  for (long s = 0; s < steps; s++) {
    int64_t t = t0 + s * step_ns;
    for (int k = 0; k < 3; k++) {
      lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
      int64_t d = base_ns[k] + (int64_t)((double)base_ns[k] * 0.2 * ((double)(lcg >> 11) / 9007199254740992.0 * 2 - 1));
      for (int x = 0; x < 2; x++) { /* the step's memcpys: in, out */
        r.type = CS_REC_XFER;
        r.bytes = sizes[k];
        r.enqueue_ns = r.start_ns = t + k * 2000000 + x * 1000000;
        r.end_ns = r.start_ns + 12485;
        r.status = 0;
        cs_dump_record(&r);
      }
      r.type = CS_REC_OP;
      r.op = CS_OP_AllReduce;
      r.seq = seq++;
      r.count = sizes[k] / 4;
      r.bytes = sizes[k];
      r.enqueue_ns = t + k * 2000000 + 500000;
      r.start_ns = r.enqueue_ns + 1500;
      r.end_ns = r.start_ns + d;
      r.status = fail_every && k == 0 && s % fail_every == fail_every / 2 ? 5 : 0; /* a window's trigger */
      cs_dump_record(&r);
    }
  }
  cs_dump_footer();
  cs_dump_close();
  double secs = (double)(cs_now_ns(CLOCK_MONOTONIC) - wall0) * 1e-9;
  struct stat st;
  if (stat(cs_dump_path(), &st) != 0) return 1;
  double per_day = (double)st.st_size * 24 / hours;
  /* the windows' share: their op and xfer lines at the file's full-line size */
  double win_lines = (double)cs_flight_ops_written();
  printf("always-on (COLLSCOPE_RECORD=summary): %.0f h modeled at 500 ops/s/rank (+ 1000 memcpys/s) = %ld ops, "
         "written in %.1f s\n",
         hours, steps * 3, secs);
  printf("  bytes per rank per day: %.2f MB (%llu windows, %.0f records of detail in them)\n", per_day / 1e6,
         (unsigned long long)cs_flight_windows(), win_lines);
  printf("  peak memory (VmHWM): %.1f MB; flight ring + summary tables: %.1f MB\n", (double)peak_kib() / 1024.0,
         (double)cs_flight_mem() / 1e6);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) ? 1 : 0;
}
