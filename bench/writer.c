/* bench/writer.c: dump writer throughput per rank: formats and writes N synthetic op
 * records (AllReduce, gpu_event timing, a real call site) through the same code the
 * harvest thread uses, into a file under /tmp, and prints records/s and MB/s. */
#include "shim/cs_internal.h"
#include "stats/dump_writer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  char dir[] = "/tmp/collscope-writer-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_LOG", "quiet", 1);
  cs_config_load();
  if (!cs_dump_open()) return 1;
  struct cs_record r;
  memset(&r, 0, sizeof(r));
  r.type = CS_REC_OP;
  r.op = CS_OP_AllReduce;
  r.dtype = 7;
  r.redop = 0;
  r.root = r.peer = -1;
  r.comm_id = 0x1234567890abcdefULL;
  r.comm_size = 8;
  r.comm_rank = 3;
  r.device = 3;
  r.count = 262144;
  r.bytes = 1048576;
  r.stream = 0x5555deadbeef;
  r.site = (uint64_t)(uintptr_t)&main;
  r.timing = CS_TIMING_GPU_EVENT;
  int64_t t0 = cs_now_ns(CLOCK_MONOTONIC);
  for (long i = 0; i < n; i++) {
    r.seq = (uint64_t)i;
    r.enqueue_ns = 1764000000000000000LL + i * 2000;
    r.start_ns = r.enqueue_ns + 1500;
    r.end_ns = r.start_ns + 123456;
    cs_dump_record(&r);
  }
  cs_dump_close();
  double secs = (double)(cs_now_ns(CLOCK_MONOTONIC) - t0) * 1e-9;
  struct stat st;
  stat(cs_dump_path(), &st);
  printf("dump writer: %ld records in %.3f s = %.0f records/s, %.1f MB/s (%.0f bytes/record)\n", n, secs,
         (double)n / secs, (double)st.st_size / secs / 1e6, (double)st.st_size / (double)n);
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  return system(cmd) ? 1 : 0;
}
