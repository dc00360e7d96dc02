/* tests/apps/hostsleep.c: a job whose host sleeps and whose P2P waits for a busy sender.
 * Per step: rank R sleeps US us on the host with FN on odd steps (--sleep R:US:FN, before
 * it enqueues the step: a slow data loader written as a plain sleep), then two AllReduces of
 * --size BYTES, then each even rank computes --p2p-compute-us C us on its stream (a host
 * function that sleeps: modeled GPU compute) and sends BYTES to the next rank (ncclSend),
 * which receives them (ncclRecv, not grouped), then a stream synchronize and exact checks.
 * FN: usleep, nanosleep, clock_nanosleep (relative, CLOCK_MONOTONIC), clock_nanosleep_abs
 * (absolute, CLOCK_REALTIME), poll (no fds), select (no fds).
 * On the modeled clock (docs/simulator.md) the sleep is host time and the receive ends when
 * the send's data lands, so both show in the ranks' GPU durations exactly. */
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/select.h>

#include "common.h"

static const char usage[] =
    "usage: hostsleep [--steps N] [--size BYTES] [--sleep R:US:FN] [--p2p-compute-us C] [-v]\n"
    "  per step: rank R sleeps US us on the host with FN on odd steps, two AllReduces, then\n"
    "  each even rank computes C us on its stream and sends BYTES to the next rank.\n"
    "  FN: usleep nanosleep clock_nanosleep clock_nanosleep_abs poll select.\n"
    "  Run under a launcher: collscope run -n N -- hostsleep ...\n";

static int sleep_rank = -1;
static long sleep_us, p2p_compute_us;
static char sleep_fn[32] = "usleep";

static void host_sleep(void) {
  struct timespec ts = {sleep_us / 1000000, (sleep_us % 1000000) * 1000};
  int bad = 0;
  if (!strcmp(sleep_fn, "usleep")) {
    bad = usleep((useconds_t)sleep_us) != 0;
  } else if (!strcmp(sleep_fn, "nanosleep")) {
    bad = nanosleep(&ts, NULL) != 0;
  } else if (!strcmp(sleep_fn, "clock_nanosleep")) {
    bad = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) != 0;
  } else if (!strcmp(sleep_fn, "clock_nanosleep_abs")) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long ns = (long long)now.tv_nsec + sleep_us * 1000;
    struct timespec until = {now.tv_sec + (time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    bad = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &until, NULL) != 0;
  } else if (!strcmp(sleep_fn, "poll")) {
    bad = poll(NULL, 0, (int)(sleep_us / 1000)) != 0;
  } else if (!strcmp(sleep_fn, "select")) {
    struct timeval tv = {sleep_us / 1000000, sleep_us % 1000000};
    bad = select(0, NULL, NULL, NULL, &tv) != 0;
  }
  if (bad) app_die(__FILE__, __LINE__, sleep_fn, "failed");
}

static void CUDART_CB compute(void *p) { app_sleep_us(*(long *)p); }

static void parse_own(int *argc, char **argv) {
  int n = 1;
  for (int i = 1; i < *argc; i++) {
    const char *v = i + 1 < *argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--sleep") && v) {
      char fn[32];
      if (sscanf(v, "%d:%ld:%31s", &sleep_rank, &sleep_us, fn) != 3 || sleep_us < 0 || sleep_us > 10000000) {
        fprintf(stderr, "hostsleep: --sleep R:US:FN, got '%s'\n", v);
        exit(2);
      }
      snprintf(sleep_fn, sizeof sleep_fn, "%s", fn);
      i++;
    } else if (!strcmp(argv[i], "--p2p-compute-us") && v) {
      p2p_compute_us = strtol(v, NULL, 10);
      i++;
    } else {
      argv[n++] = argv[i];
    }
  }
  *argc = n;
}

int main(int argc, char **argv) {
  parse_own(&argc, argv);
  struct app a;
  app_init(&a, "hostsleep", argc, argv, usage);
  if (a.world < 2 || a.world % 2) app_die(__FILE__, __LINE__, "world", "needs an even number of ranks");
  ncclComm_t comm = app_world_comm(&a);
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));
  size_t n = a.size / sizeof(float) ? a.size / sizeof(float) : 1;
  float *h, *d, *p;
  CUDACHECK(cudaMallocHost((void **)&h, n * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&d, n * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&p, n * sizeof(float)));
  int sender = a.rank % 2 == 0;
  uint64_t sum = APP_FNV_INIT;
  for (int step = 0; step < a.steps; step++) {
    if (a.rank == sleep_rank && step % 2 == 1) host_sleep();
    for (size_t i = 0; i < n; i++) h[i] = (float)((a.rank + step + (int)(i % 5)) % 8);
    CUDACHECK(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, s));
    NCCLCHECK(ncclAllReduce(d, d, n, ncclFloat32, ncclSum, comm, s));
    NCCLCHECK(ncclAllReduce(d, d, n, ncclFloat32, ncclSum, comm, s));
    if (sender) {
      if (p2p_compute_us) CUDACHECK(cudaLaunchHostFunc(s, compute, &p2p_compute_us));
      NCCLCHECK(ncclSend(d, n, ncclFloat32, a.rank + 1, comm, s));
    } else {
      NCCLCHECK(ncclRecv(p, n, ncclFloat32, a.rank - 1, comm, s));
    }
    CUDACHECK(cudaMemcpyAsync(h, sender ? d : p, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDACHECK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < n; i++) {
      double once = 0;
      for (int r = 0; r < a.world; r++) once += (r + step + (int)(i % 5)) % 8;
      double want = once * a.world; /* the second AllReduce sums world copies of the first */
      if ((double)h[i] != want) app_mismatch(&a, sender ? "allreduce" : "recv", i, h[i], want);
    }
    sum = app_fnv(sum, h, n * sizeof(float));
  }
  int rc = app_finish(&a);
  if (rc == 0 && a.rank == 0)
    printf("summary hostsleep world=%d steps=%d bytes=%zu checksum=%016llx PASS\n", a.world, a.steps,
           n * sizeof(float), (unsigned long long)sum);
  CUDACHECK(cudaFreeHost(h));
  CUDACHECK(cudaFree(d));
  CUDACHECK(cudaFree(p));
  CUDACHECK(cudaStreamDestroy(s));
  NCCLCHECK(ncclCommDestroy(comm));
  return rc;
}
