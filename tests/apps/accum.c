/* tests/apps/accum.c: data parallel with gradient accumulation.
 *
 * Every step "computes" gradients on the stream (a host function: --compute-us of modeled
 * GPU time, then rank r adds (r+1) * g(i, step) to its pinned accumulator); every --accum K
 * steps the accumulated gradients are copied to the GPU, sum-AllReduced and checked exactly
 * against sum_r (r+1) * sum_{steps of the window} g(i, step) = W(W+1)/2 x that sum. So the
 * job has one collective every K steps, and K steps of compute between two of them. */
#include <string.h>

#include "common.h"

static const char usage[] =
    "usage: accum [--steps N] [--size BYTES] [--accum K] [--compute-us N] [-v]\n"
    "  gradient accumulation: each step computes (--compute-us of GPU time) and adds\n"
    "  its gradients; every K steps (default 4) one fp32 sum-AllReduce of BYTES\n"
    "  (default 1M), checked exactly. --steps counts compute steps.\n";

static float g_of(size_t i, int step) { return (float)((i + (size_t)step) % 7 + 1); }

struct compute_arg {
  float *acc;
  size_t n;
  int rank, step;
  long us;
};

/* on the stream: the backward pass of one step, accumulating into acc */
static void CUDART_CB compute(void *p) {
  struct compute_arg *c = p;
  app_sleep_us(c->us);
  for (size_t i = 0; i < c->n; i++) c->acc[i] += (float)(c->rank + 1) * g_of(i, c->step);
}

int main(int argc, char **argv) {
  struct app a;
  app_init(&a, "accum", argc, argv, usage);
  ncclComm_t comm = app_world_comm(&a);
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));
  size_t n = a.size / sizeof(float) ? a.size / sizeof(float) : 1;
  float *acc, *d;
  CUDACHECK(cudaMallocHost((void **)&acc, n * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&d, n * sizeof(float)));
  memset(acc, 0, n * sizeof(float));
  struct compute_arg *args = calloc((size_t)a.accum, sizeof *args);
  if (!args) app_die(__FILE__, __LINE__, "calloc", "out of memory");
  double tri = (double)a.world * (a.world + 1) / 2.0;
  long reductions = 0;
  uint64_t h = APP_FNV_INIT;
  int window0 = 0;
  for (int step = 0; step < a.steps; step++) {
    struct compute_arg *c = &args[step - window0];
    *c = (struct compute_arg){acc, n, a.rank, step, a.compute_us};
    CUDACHECK(cudaLaunchHostFunc(s, compute, c));
    if ((step + 1) % a.accum != 0 && step != a.steps - 1) continue;
    CUDACHECK(cudaMemcpyAsync(d, acc, n * sizeof(float), cudaMemcpyHostToDevice, s));
    NCCLCHECK(ncclAllReduce(d, d, n, ncclFloat32, ncclSum, comm, s));
    CUDACHECK(cudaMemcpyAsync(acc, d, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDACHECK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < n; i++) {
      double want = 0;
      for (int k = window0; k <= step; k++) want += g_of(i, k);
      want *= tri;
      if (acc[i] != want) app_mismatch(&a, "allreduce", i, acc[i], want);
    }
    h = app_fnv(h, acc, n * sizeof(float));
    memset(acc, 0, n * sizeof(float));
    reductions++;
    window0 = step + 1;
    if (a.verbose && a.rank == 0) printf("accum: step %d reduced\n", step);
  }
  int rc = app_finish(&a);
  if (rc == 0 && a.rank == 0)
    printf("summary accum world=%d steps=%d accum=%d bytes=%zu allreduces=%ld checksum=%016llx PASS\n", a.world,
           a.steps, a.accum, n * sizeof(float), reductions, (unsigned long long)h);
  free(args);
  CUDACHECK(cudaFree(d));
  CUDACHECK(cudaFreeHost(acc));
  CUDACHECK(cudaStreamDestroy(s));
  NCCLCHECK(ncclCommDestroy(comm));
  return rc;
}
