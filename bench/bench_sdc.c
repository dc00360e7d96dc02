/* bench/bench_sdc.c: cost of the SDC checks (README "Benchmarks").
 *
 *   bench_sdc [COLLSCOPE_CLI SDC_JOB]
 *
 * 1. Check cost per byte: the kernel's host twin (what the simulator runs for the GPU
 *    kernel) over a 64 MiB fp32 buffer: GB/s and ns per byte.
 * 2. With the CLI and tests/sdc/sdc_job: bandwidth-bound AllReduce runs on the simulator
 *    (4 ranks on 2 hosts, 4 MiB fp32 per rank, 40 steps, shim preloaded) with
 *    COLLSCOPE_SDC=off, all, sample:4, sample:16 and the default; the median over 3 runs
 *    of rank 0's loop time, and the overhead against off. */
#include "hooks/sdc_kernel_defs.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void collscope_simkernel_sdc_reduce(void **params, const unsigned grid[3], const unsigned block[3]);

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void kernel_cost(void) {
  size_t n = 16u << 20;   /* floats */
  float *buf = malloc(n * sizeof *buf);
  static struct cs_sdc_part scratch[CS_SDC_MAX_BLOCKS];
  if (!buf) return;
  for (size_t i = 0; i < n; i++) buf[i] = (float)(i % 1000) * 0.001f - 0.5f;
  unsigned counter = 0;
  struct cs_sdc_result res;
  const void *b = buf;
  uint64_t nbytes = n * sizeof *buf;
  int dtype = CS_SDC_FLOAT32;
  void *sp = scratch, *cp = &counter, *rp = &res;
  uint32_t tag = 1;
  void *params[] = {&b, &nbytes, &dtype, &sp, &cp, &rp, &tag};
  unsigned grid[3] = {64, 1, 1}, block[3] = {CS_SDC_THREADS, 1, 1};
  double best = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now_s();
    collscope_simkernel_sdc_reduce(params, grid, block);
    double t = now_s() - t0;
    if (t < best) best = t;
  }
  printf("sdc kernel host twin (fp32, 64 MiB): %.2f GB/s, %.3f ns/byte (best of 5)\n", (double)nbytes / best / 1e9,
         best * 1e9 / (double)nbytes);
  free(buf);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double run_job(const char *cli, const char *job, const char *sdc) {
  double v[3];
  for (int rep = 0; rep < 3; rep++) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s%s COLLSCOPE_SDC_MIN_BYTES=0 COLLSCOPE_DIR=/tmp/bench_sdc_$$ %s run -n 4 --hosts 'simhost[1-2]' --sim -- "
             "%s --steps 40 --op AllReduce --dtype float32 --count 1048576 --reuse 2>/dev/null; rm -rf /tmp/bench_sdc_$$",
             sdc ? "COLLSCOPE_SDC=" : "", sdc ? sdc : "", cli, job);
    FILE *p = popen(cmd, "r");
    v[rep] = NAN;
    if (!p) continue;
    char line[512];
    while (fgets(line, sizeof line, p)) {
      const char *m = strstr(line, "loop_ms=");
      if (m && strstr(line, "rank=0 ")) v[rep] = atof(m + 8);
    }
    pclose(p);
  }
  qsort(v, 3, sizeof v[0], cmp);
  return v[1];
}

int main(int argc, char **argv) {
  kernel_cost();
  if (argc < 3) return 0;
  const char *cfg[] = {"off", "all", "sample:4", "sample:16", NULL};
  double base = run_job(argv[1], argv[2], "off");
  printf("sim AllReduce 4 MiB fp32 x 40 steps, 4 ranks / 2 hosts (median of 3, rank 0 loop):\n");
  printf("  %-24s %9.1f ms\n", "COLLSCOPE_SDC=off", base);
  for (int i = 1; cfg[i] || i == 4; i++) {
    const char *c = cfg[i];
    double t = run_job(argv[1], argv[2], c);
    char name[64];
    snprintf(name, sizeof name, c ? "COLLSCOPE_SDC=%s" : "(default)", c);
    printf("  %-24s %9.1f ms  overhead %+.1f%%\n", name, t, (t / base - 1) * 100);
    if (!c) break;
  }
  return 0;
}
