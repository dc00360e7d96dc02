/* tests/apps/busbw_loop.c: a bandwidth sweep timed on the host, the way benchmark programs
 * report it: per size, `--warmup` untimed iterations, then `--steps` iterations enqueued back
 * to back between two stream synchronisations; time = the host time of the loop / steps (the
 * mean), read from CLOCK_REALTIME (the simulator's modeled clock models that one). Prints one
 * line per size:
 *   busbw op=<AllReduce|AllGather|AlltoAll> bytes=<B> count=<C> agg=<N> time_us=<mean> algbw_gbs=<A> busbw_gbs=<B>
 * with bytes as collscope counts them (AllReduce: count x size of float; AllGather: the
 * whole output; AlltoAll: what one rank sends, count per peer x peers, as nccl-tests'
 * src/alltoall.cu AlltoAllGetBw counts it) and busbw = algbw x factor (AllReduce 2(n-1)/n,
 * AllGather and AlltoAll (n-1)/n).
 * `--agg N` (nccl-tests' -m): an iteration is N ops of the size inside one
 * ncclGroupStart/End, and time is the loop's time / (steps x N), as nccl-tests' src/common.cu
 * (BenchTime: deltaSec / (iters * agg_iters)) divides it. `--op alltoall` is an iteration of
 * one ncclSend and one ncclRecv per peer (itself included) in one group, as nccl-tests'
 * AlltoAllRunColl and PyTorch's all_to_all_single issue it. Sizes run from --min to --size,
 * times 4 each step; an AllGather or AlltoAll whose bytes do not fill one float per rank runs
 * with count 0, as such a sweep does. One process per rank (RANK/WORLD_SIZE, the common
 * options of common.h); results are not checked. */
#include <string.h>
#include <time.h>

#include "common.h"

static const char usage[] =
    "usage: busbw_loop [--op allreduce|allgather|alltoall] [--min BYTES] [--warmup N] [--agg N] [--size MAXBYTES]\n"
    "                  [--steps N]\n"
    "  per size from --min to --size (times 4): N warm-up iterations, then --steps iterations\n"
    "  timed on the host between two stream synchronisations; an iteration is --agg ops (default\n"
    "  1) in one group; prints the mean time per op and the bus bandwidth.\n";

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  int allgather = 0, alltoall = 0, warmup = 1, agg = 1;
  size_t min_bytes = 8;
  char *rest[64];
  int nrest = 0;
  rest[nrest++] = argv[0];
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--op") && v) {
      allgather = !strcmp(v, "allgather");
      alltoall = !strcmp(v, "alltoall");
      i++;
    } else if ((!strcmp(argv[i], "--agg") || !strcmp(argv[i], "-m")) && v) {
      agg = atoi(v);
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
  if (agg < 1 || agg > 1024) agg = 1;
  ncclComm_t comm = app_world_comm(&a);
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));
  void *d, *rd;
  CUDACHECK(cudaMalloc(&d, a.size + 64));
  CUDACHECK(cudaMemset(d, 0, a.size + 64));
  CUDACHECK(cudaMalloc(&rd, a.size + 64));
  CUDACHECK(cudaMemset(rd, 0, a.size + 64));
  double W = a.world;
  for (size_t bytes = min_bytes; bytes <= a.size; bytes *= 4) {
    /* AllGather: bytes is the whole output, each rank sends bytes / world; AlltoAll: bytes is
     * what a rank sends, bytes / world to each peer */
    size_t count = allgather || alltoall ? bytes / 4 / (size_t)a.world : bytes / 4;
    size_t moved = allgather || alltoall ? count * 4 * (size_t)a.world : count * 4;
    double t0 = 0;
    for (int k = 0; k < warmup + a.steps; k++) {
      if (k == warmup) {
        CUDACHECK(cudaStreamSynchronize(s));
        t0 = now_us();
      }
      if (agg > 1 || alltoall) NCCLCHECK(ncclGroupStart());
      for (int m = 0; m < agg; m++) {
        if (alltoall) {
          for (int r = 0; r < a.world; r++) {
            NCCLCHECK(ncclSend((char *)d + (size_t)r * count * 4, count, ncclFloat32, r, comm, s));
            NCCLCHECK(ncclRecv((char *)rd + (size_t)r * count * 4, count, ncclFloat32, r, comm, s));
          }
        } else if (allgather) {
          NCCLCHECK(ncclAllGather(d, d, count, ncclFloat32, comm, s));
        } else {
          NCCLCHECK(ncclAllReduce(d, d, count, ncclFloat32, ncclSum, comm, s));
        }
      }
      if (agg > 1 || alltoall) NCCLCHECK(ncclGroupEnd());
      if (k == warmup + a.steps - 1) {
        CUDACHECK(cudaStreamSynchronize(s));
        double mean = (now_us() - t0) / a.steps / agg;
        double algbw = mean > 0 ? (double)moved / mean / 1e3 : 0; /* GB/s */
        double factor = allgather || alltoall ? (W - 1) / W : 2 * (W - 1) / W;
        printf("busbw op=%s bytes=%zu count=%zu agg=%d time_us=%.4f algbw_gbs=%.6f busbw_gbs=%.6f\n",
               alltoall ? "AlltoAll" : allgather ? "AllGather"
                                                 : "AllReduce",
               moved, count, agg, mean, algbw,
               algbw * factor);
      }
    }
  }
  CUDACHECK(cudaStreamSynchronize(s));
  NCCLCHECK(ncclCommDestroy(comm));
  CUDACHECK(cudaFree(d));
  CUDACHECK(cudaFree(rd));
  return 0;
}
