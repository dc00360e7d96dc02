/* bench/bench_sdc.c: cost of the SDC checks (docs/benchmarks.md).
 *
 *   bench_sdc [COLLSCOPE_CLI SDC_JOB]
 *
 * 1. Check cost per byte: the kernel's host twin (what the simulator runs for the GPU
 *    kernel) over a 64 MiB fp32 buffer: GB/s and ns per byte.
 * 2. With the CLI and tests/sdc/sdc_job: bandwidth-bound AllReduce runs on the simulator
 *    (4 ranks on 2 hosts, 4 MiB fp32 per rank, 200 steps, shim preloaded) with
 *    COLLSCOPE_SDC=off, all, sample:16, sample:256 and the default (sample:2048), in 5
 *    interleaved rounds: the minimum of rank 0's loop time and the overhead against off. */
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
  size_t n = 16u << 20; /* floats */
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

static double run_once(const char *cli, const char *job, const char *sdc) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "%s%s COLLSCOPE_SDC_MIN_BYTES=0 COLLSCOPE_DIR=/tmp/bench_sdc_$$ %s run -n 4 --hosts 'simhost[1-2]' --sim -- "
           "%s --steps 200 --op AllReduce --dtype float32 --count 1048576 --reuse 2>/dev/null; rm -rf /tmp/bench_sdc_$$",
           sdc ? "COLLSCOPE_SDC=" : "", sdc ? sdc : "", cli, job);
  FILE *p = popen(cmd, "r");
  double v = NAN;
  if (!p) return v;
  char line[512];
  while (fgets(line, sizeof line, p)) {
    const char *m = strstr(line, "loop_ms=");
    if (m && strstr(line, "rank=0 ")) v = atof(m + 8);
  }
  pclose(p);
  return v;
}

int main(int argc, char **argv) {
  kernel_cost();
  if (argc < 3) return 0;
  /* configurations interleaved, REPS rounds, minimum per configuration: the machine is
   * shared, and the minimum is the best estimate of the undisturbed time */
  enum { NCFG = 5,
         REPS = 5 };
  const char *cfg[NCFG] = {"off", "all", "sample:16", "sample:256", NULL /* default */};
  double best[NCFG];
  for (int c = 0; c < NCFG; c++) best[c] = INFINITY;
  for (int r = 0; r < REPS; r++)
    for (int c = 0; c < NCFG; c++) {
      double t = run_once(argv[1], argv[2], cfg[c]);
      if (t < best[c]) best[c] = t;
    }
  printf("sim AllReduce 4 MiB fp32 x 200 steps, 4 ranks / 2 hosts, rank 0 loop time (min of %d interleaved runs):\n",
         REPS);
  for (int c = 0; c < NCFG; c++) {
    char name[64];
    snprintf(name, sizeof name, cfg[c] ? "COLLSCOPE_SDC=%s" : "(default, sample:2048)", cfg[c]);
    printf("  %-26s %9.1f ms  overhead %+.1f%%\n", name, best[c], (best[c] / best[0] - 1) * 100);
  }
  return 0;
}
