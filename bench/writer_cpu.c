/* bench/writer_cpu.c: the driver of the writer's CPU per record (bench/writer_cpu_check.py,
 * docs/always-on.md): SECONDS of dp_train's mix at 500 NCCL ops/s (AllReduce of 4 KiB, 32 KiB
 * and 256 KiB a step, each with its two memcpys; GPU durations of 205, 209 and 241 us with
 * +-20 % deterministic jitter, as bench/always_on.c) fed to the dump writer through the calls
 * the harvest thread makes (cs_dump_record per record, cs_dump_flush once a second of the
 * records' time: COLLSCOPE_FLUSH_MS's default), in the mode the environment sets
 * (COLLSCOPE_RECORD, COLLSCOPE_COMPRESS). Only measured_records() is meant to be counted
 * (callgrind --toggle-collect): the formatting, summaries, flight ring, compression and the
 * write calls' user-space side, not the set-up or the footer. Prints the records fed.
 * Usage: bench_writer_cpu [SECONDS (20)] */
#include "shim/cs_internal.h"
#include "stats/dump_writer.h"
#include "stats/flight.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) long measured_records(long steps, struct cs_record *r) {
  static const uint64_t sizes[3] = {4096, 32768, 262144};
  static const int64_t base_ns[3] = {204972, 208992, 241100};
  const int64_t t0 = 1764000000000000000LL, step_ns = 6000000; /* 3 ops a 6 ms step: 500 ops/s */
  uint64_t lcg = 1, seq = 0;
  long n = 0;
  int64_t flushed_s = 0;
  for (long s = 0; s < steps; s++) {
    int64_t t = t0 + s * step_ns;
    for (int k = 0; k < 3; k++) {
      lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
      int64_t d = base_ns[k] + (int64_t)((double)base_ns[k] * 0.2 * ((double)(lcg >> 11) / 9007199254740992.0 * 2 - 1));
      for (int x = 0; x < 2; x++) { /* the step's memcpys: in, out */
        r->type = CS_REC_XFER;
        r->bytes = sizes[k];
        r->enqueue_ns = r->start_ns = t + k * 2000000 + x * 1000000;
        r->end_ns = r->start_ns + 12485;
        cs_dump_record(r);
        n++;
      }
      r->type = CS_REC_OP;
      r->op = CS_OP_AllReduce;
      r->seq = seq++;
      r->count = sizes[k] / 4;
      r->bytes = sizes[k];
      r->enqueue_ns = t + k * 2000000 + 500000;
      r->start_ns = r->enqueue_ns + 1500;
      r->end_ns = r->start_ns + d;
      cs_dump_record(r);
      n++;
    }
    if ((t - t0) / 1000000000 != flushed_s) { /* the harvest thread's flush, once a second */
      flushed_s = (t - t0) / 1000000000;
      cs_dump_flush();
    }
  }
  cs_dump_flush();
  return n;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 20;
  char dir[] = "/tmp/collscope-writer-cpu-XXXXXX";
  if (seconds <= 0 || !mkdtemp(dir)) return 1;
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_LOG", "quiet", 1);
  setenv("RANK", "3", 1);
  cs_config_load();
  if (!cs_dump_open()) return 1;
  if (cs_cfg.record_summary && !cs_flight_init(cs_cfg.flight_ops, cs_cfg.flight_after, cs_cfg.summary_s)) return 1;
  struct cs_record r;
  memset(&r, 0, sizeof r);
  r.dtype = 7;
  r.root = r.peer = -1;
  r.comm_id = 0x1234567890abcdefULL;
  r.comm_size = 8;
  r.comm_rank = 3;
  r.device = 3;
  r.stream = 0x5555deadbeef;
  r.site = (uint64_t)(uintptr_t)&main;
  r.timing = CS_TIMING_GPU_EVENT;
  long n = measured_records((long)(seconds * 1e9 / 6e6), &r);
  cs_dump_footer();
  cs_dump_close();
  cs_flight_free();
  printf("records %ld (%s, %s)\n", n, cs_cfg.record_summary ? "summary" : "full", cs_cfg.compress ? "zstd" : "plain");
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) ? 1 : 0;
}
