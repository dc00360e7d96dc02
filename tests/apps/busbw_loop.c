/* tests/apps/busbw_loop.c: a bandwidth sweep timed on the host, the way benchmark programs
 * report it: per size, `--warmup` untimed calls, then `--steps` calls enqueued back to back
 * between two stream synchronisations; time = the host wall time of the loop / steps (the
 * mean). Prints one line per size:
 *   busbw op=<AllReduce|AllGather> bytes=<B> count=<C> time_us=<mean> algbw_gbs=<A> busbw_gbs=<B>
 * with bytes as collscope counts them (AllReduce: count x size of float; AllGather: the
 * whole output) and busbw = algbw x factor (AllReduce 2(n-1)/n, AllGather (n-1)/n). Sizes
 * run from --min to --size, times 4 each step; an AllGather whose bytes do not fill one
 * float per rank runs with count 0, as such a sweep does. One process per rank
 * (RANK/WORLD_SIZE, the common options of common.h); results are not checked. */
#include <string.h>
#include <time.h>

#include "common.h"

static const char usage[] =
    "usage: busbw_loop [--op allreduce|allgather] [--min BYTES] [--warmup N] [--size MAXBYTES] [--steps N]\n"
    "  per size from --min to --size (times 4): N warm-up calls, then --steps calls timed on the\n"
    "  host between two stream synchronisations; prints the mean time and bus bandwidth.\n";

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  int allgather = 0, warmup = 1;
  size_t min_bytes = 8;
  char *rest[64];
  int nrest = 0;
  rest[nrest++] = argv[0];
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--op") && v) {
      allgather = !strcmp(v, "allgather");
      i++;
    } else if (!strcmp(argv[i], "--min") && v) {
      min_bytes = (size_t)strtoull(v, NULL, 10);
      i++;
    } else if (!strcmp(argv[i], "--warmup") && v) {
      warmup = atoi(v);
      i++;
    } else if (nrest < 63) {
      rest[nrest++] = argv[i];
    }
  }
  rest[nrest] = NULL;
  struct app a;
  app_init(&a, "busbw_loop", nrest, rest, usage);
  if (min_bytes < 4) min_bytes = 4;
  ncclComm_t comm = app_world_comm(&a);
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));
  void *d;
  CUDACHECK(cudaMalloc(&d, a.size + 64));
  CUDACHECK(cudaMemset(d, 0, a.size + 64));
  double W = a.world;
  for (size_t bytes = min_bytes; bytes <= a.size; bytes *= 4) {
    /* AllGather: bytes is the whole output, each rank sends bytes / world */
    size_t count = allgather ? bytes / 4 / (size_t)a.world : bytes / 4;
    size_t moved = allgather ? count * 4 * (size_t)a.world : count * 4;
    double t0 = 0;
    for (int k = 0; k < warmup + a.steps; k++) {
      if (k == warmup) {
        CUDACHECK(cudaStreamSynchronize(s));
        t0 = now_us();
      }
      if (allgather)
        NCCLCHECK(ncclAllGather(d, d, count, ncclFloat32, comm, s));
      else
        NCCLCHECK(ncclAllReduce(d, d, count, ncclFloat32, ncclSum, comm, s));
      if (k == warmup + a.steps - 1) {
        CUDACHECK(cudaStreamSynchronize(s));
        double mean = (now_us() - t0) / a.steps;
        double algbw = mean > 0 ? (double)moved / mean / 1e3 : 0; /* GB/s */
        double factor = allgather ? (W - 1) / W : 2 * (W - 1) / W;
        printf("busbw op=%s bytes=%zu count=%zu time_us=%.2f algbw_gbs=%.4f busbw_gbs=%.4f\n",
               allgather ? "AllGather" : "AllReduce", moved, count, mean, algbw, algbw * factor);
      }
    }
  }
  CUDACHECK(cudaStreamSynchronize(s));
  NCCLCHECK(ncclCommDestroy(comm));
  CUDACHECK(cudaFree(d));
  return 0;
}
