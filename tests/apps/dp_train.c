/* tests/apps/dp_train.c: data-parallel training loop.
 *
 * Per step and gradient bucket (BYTES, BYTES/8, BYTES/64 of fp32): "compute" the
 * gradients in stream order (cudaLaunchHostFunc fills a pinned staging buffer), copy
 * them to the GPU, sum-AllReduce them (even buckets in place, odd ones out of place),
 * copy back and check every element exactly against the closed form
 * sum_r (r+1) * k = k * W(W+1)/2. Then an "optimizer" folds the averaged gradient
 * into host weights. Rank 0 prints one deterministic summary line (checksum of the
 * final weights and gradients), identical with and without the shim. */
#include <string.h>

#include "common.h"

#define NBUCKETS 3

static const char usage[] =
    "usage: dp_train [--steps N] [--size BYTES] [-v]\n"
    "  data-parallel loop: per step, fp32 sum-AllReduce of gradient buckets of BYTES,\n"
    "  BYTES/8 and BYTES/64 (default --size 1M, --steps 5), results checked exactly.\n"
    "  Run under a launcher: collscope run -n N -- dp_train ...\n";

struct bucket {
  size_t count;
  float *host;      /* pinned: staging for gradients, then results */
  float *dgrad, *dout;
  double *weights;  /* host "model" */
};

struct compute_arg {
  struct bucket *b;
  int rank, step, idx;
};

static float grad_k(size_t i, int step, int idx) { return (float)((i + (size_t)step + (size_t)idx) % 7 + 1); }

/* Runs on the stream (host function): the "backward pass" producing this rank's grads. */
static void CUDART_CB compute_grads(void *p) {
  struct compute_arg *c = p;
  float scale = (float)(c->rank + 1);
  for (size_t i = 0; i < c->b->count; i++) c->b->host[i] = scale * grad_k(i, c->step, c->idx);
}

int main(int argc, char **argv) {
  struct app a;
  app_init(&a, "dp_train", argc, argv, usage);
  ncclUniqueId id;
  app_share_ids(&a, &id, 1);
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, a.world, id, a.rank));
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));

  struct bucket b[NBUCKETS];
  struct compute_arg ca[NBUCKETS];
  size_t bytes[NBUCKETS] = {a.size, a.size / 8, a.size / 64};
  for (int k = 0; k < NBUCKETS; k++) {
    b[k].count = bytes[k] / sizeof(float) ? bytes[k] / sizeof(float) : 1;
    CUDACHECK(cudaMallocHost((void **)&b[k].host, b[k].count * sizeof(float)));
    CUDACHECK(cudaMalloc((void **)&b[k].dgrad, b[k].count * sizeof(float)));
    CUDACHECK(cudaMalloc((void **)&b[k].dout, b[k].count * sizeof(float)));
    b[k].weights = calloc(b[k].count, sizeof(double));
    if (!b[k].weights) app_die(__FILE__, __LINE__, "calloc", "out of memory");
  }
  const double tri = (double)a.world * (a.world + 1) / 2.0;
  long ops = 0;
  for (int step = 0; step < a.steps; step++) {
    for (int k = 0; k < NBUCKETS; k++) {
      ca[k] = (struct compute_arg){&b[k], a.rank, step, k};
      CUDACHECK(cudaLaunchHostFunc(s, compute_grads, &ca[k]));
      CUDACHECK(cudaMemcpyAsync(b[k].dgrad, b[k].host, b[k].count * sizeof(float), cudaMemcpyHostToDevice, s));
      float *out = (k % 2 == 0) ? b[k].dgrad : b[k].dout;
      NCCLCHECK(ncclAllReduce(b[k].dgrad, out, b[k].count, ncclFloat32, ncclSum, comm, s));
      CUDACHECK(cudaMemcpyAsync(b[k].host, out, b[k].count * sizeof(float), cudaMemcpyDeviceToHost, s));
      ops++;
    }
    CUDACHECK(cudaStreamSynchronize(s));
    for (int k = 0; k < NBUCKETS; k++) {
      for (size_t i = 0; i < b[k].count; i++) {
        double want = grad_k(i, step, k) * tri;
        if ((double)b[k].host[i] != want) app_mismatch(&a, "allreduce", i, b[k].host[i], want);
        b[k].weights[i] -= 0.125 * b[k].host[i] / a.world;   /* SGD with the mean gradient */
      }
    }
    if (a.verbose && a.rank == 0) printf("dp_train: step %d ok\n", step);
  }
  uint64_t h = APP_FNV_INIT;
  for (int k = 0; k < NBUCKETS; k++) {
    h = app_fnv(h, b[k].host, b[k].count * sizeof(float));
    h = app_fnv(h, b[k].weights, b[k].count * sizeof(double));
  }
  int rc = app_finish(&a);
  if (rc == 0 && a.rank == 0)
    printf("summary dp_train world=%d steps=%d buckets=%zu,%zu,%zu allreduces=%ld checksum=%016llx PASS\n", a.world,
           a.steps, b[0].count * sizeof(float), b[1].count * sizeof(float), b[2].count * sizeof(float), ops,
           (unsigned long long)h);
  for (int k = 0; k < NBUCKETS; k++) {
    CUDACHECK(cudaFreeHost(b[k].host));
    CUDACHECK(cudaFree(b[k].dgrad));
    CUDACHECK(cudaFree(b[k].dout));
    free(b[k].weights);
  }
  CUDACHECK(cudaStreamDestroy(s));
  NCCLCHECK(ncclCommDestroy(comm));
  return rc;
}
