/* tests/apps/dp_train.c: data-parallel training loop.
 *
 * Per step and gradient bucket (BYTES, BYTES/8, BYTES/64 of fp32): "compute" the
 * gradients in stream order (cudaLaunchHostFunc fills a pinned staging buffer), copy
 * them to the GPU, sum-AllReduce them (even buckets in place, odd ones out of place),
 * copy back and check every element exactly against the closed form
 * sum_r (r+1) * k = k * W(W+1)/2. Then an "optimizer" folds the averaged gradient
 * into host weights. Rank 0 prints one deterministic summary line (checksum of the
 * final weights and gradients), identical with and without the shim.
 *
 * --compute-us N: the "backward pass" also takes N us on the stream (a sleep: a busy GPU
 * costs the host no CPU), so the collectives' arrival times are set by it rather than by
 * the host's CPU scheduling. On the modeled clock it is GPU time, 1/speed as long on a
 * slower GPU model (tests/sim/cuda/model.c).
 * --shares W0,W1,...: one weight per rank; rank r's compute is N x WORLD x W_r / sum(W) (its
 * share of the global batch; the gradients, and so the collectives, keep their size).
 * --batch-bytes B: each step first copies this rank's input batch to the GPU, B x WORLD x
 * W_r / sum(W) bytes (its share of a global batch of B x WORLD bytes; B without --shares), so
 * uneven shards show in the copies as in the compute.
 * --ops mixed: per step one AllReduce, AllGather, ReduceScatter and Broadcast (root
 * rotating), sizes cycling over 8 B .. 4 MiB (capped by --size), each checked exactly.
 * --ops pairwise: per step one AlltoAll and one grouped Send/Recv exchange (rank r sends to
 * r + shift and receives from r - shift, shift cycling over 1 .. W-1), both moving the same
 * size per peer (the cycle of --ops mixed, one size per step), each checked exactly. */
#include <string.h>
#include <time.h>

#include "common.h"

#define NBUCKETS 3

static const char usage[] =
    "usage: dp_train [--steps N] [--size BYTES] [--compute-us N] [--shares W0,W1,...]\n"
    "                [--batch-bytes B] [--ops allreduce|mixed|pairwise] [-v]\n"
    "  data-parallel loop: per step, fp32 sum-AllReduce of gradient buckets of BYTES,\n"
    "  BYTES/8 and BYTES/64 (default --size 1M, --steps 5), results checked exactly.\n"
    "  --compute-us N: each bucket's compute also sleeps N us on the stream.\n"
    "  --shares W0,...: per-rank work weights: rank r's compute is N x WORLD x W_r / sum(W).\n"
    "  --batch-bytes B: per step copy the input batch, B x WORLD x W_r / sum(W) bytes, to the GPU.\n"
    "  --ops mixed: per step AllReduce, AllGather, ReduceScatter, Broadcast of 8 B..BYTES.\n"
    "  --ops pairwise: per step AlltoAll and grouped Send/Recv (peer r+shift), 8 B..BYTES per peer.\n"
    "  Run under a launcher: collscope run -n N -- dp_train ...\n";

struct bucket {
  size_t count;
  float *host; /* pinned: staging for gradients, then results */
  float *dgrad, *dout;
  double *weights; /* host "model" */
};

struct compute_arg {
  struct bucket *b;
  int rank, step, idx;
};

static float grad_k(size_t i, int step, int idx) { return (float)((i + (size_t)step + (size_t)idx) % 7 + 1); }

static int compute_us;
static void sleep_us(int us) {
  if (us <= 0) return;
  struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Runs on the stream (host function): the "backward pass" producing this rank's grads. */
static void CUDART_CB compute_grads(void *p) {
  struct compute_arg *c = p;
  sleep_us(compute_us);
  float scale = (float)(c->rank + 1);
  for (size_t i = 0; i < c->b->count; i++) c->b->host[i] = scale * grad_k(i, c->step, c->idx);
}

/* --ops mixed. Element i of rank r's input in step `step`, op `k`: (r+1) * grad_k(i, step, k). */
struct mixed_arg {
  float *host;
  size_t n;
  int rank, step, k;
};
static void CUDART_CB fill_input(void *p) {
  struct mixed_arg *m = p;
  sleep_us(compute_us);
  for (size_t i = 0; i < m->n; i++) m->host[i] = (float)(m->rank + 1) * grad_k(i, m->step, m->k);
}

/* End of --ops mixed|pairwise: rank 0's summary line ("ops=<kind> <unit>=N") and the
 * staging buffers freed. */
static int finish_steps(struct app *a, const char *kind_unit, long ops, uint64_t h, float *hin, float *hout,
                        float *din, float *dout) {
  int rc = app_finish(a);
  const char *sp = strchr(kind_unit, ' ');
  if (rc == 0 && a->rank == 0 && sp)
    printf("summary dp_train world=%d steps=%d ops=%.*s %s=%ld checksum=%016llx PASS\n", a->world, a->steps,
           (int)(sp - kind_unit), kind_unit, sp + 1, ops, (unsigned long long)h);
  CUDACHECK(cudaFreeHost(hin));
  CUDACHECK(cudaFreeHost(hout));
  CUDACHECK(cudaFree(din));
  CUDACHECK(cudaFree(dout));
  return rc;
}

static int run_mixed(struct app *a, ncclComm_t comm, cudaStream_t s) {
  static const size_t sizes[] = {8, 4096, 256, 65536, 32, 1 << 20, 1024, 16384, 64, 4 << 20, 512, 262144};
  const size_t nsizes = sizeof sizes / sizeof *sizes, W = (size_t)a->world;
  size_t maxn = a->size / sizeof(float) * W + W; /* ReduceScatter input: W x count */
  float *hin, *hout, *din, *dout;
  CUDACHECK(cudaMallocHost((void **)&hin, maxn * sizeof(float)));
  CUDACHECK(cudaMallocHost((void **)&hout, maxn * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&din, maxn * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&dout, maxn * sizeof(float)));
  const double tri = (double)W * (double)(W + 1) / 2.0;
  struct mixed_arg ma[4];
  long ops = 0;
  uint64_t h = APP_FNV_INIT;
  size_t pick = 0;
  for (int step = 0; step < a->steps; step++) {
    size_t cnt[4], nin[4], nout[4];
    int root = step % a->world;
    for (int k = 0; k < 4; k++) {
      size_t bytes = sizes[pick++ % nsizes];
      if (bytes > a->size) bytes = a->size;
      /* bytes = the op's output buffer (AllGather: all ranks' parts; ReduceScatter: input) */
      size_t n = bytes / sizeof(float) ? bytes / sizeof(float) : 1;
      cnt[k] = (k == 1 || k == 2) ? (n / W ? n / W : 1) : n;
      nin[k] = k == 2 ? cnt[k] * W : cnt[k];
      nout[k] = k == 1 ? cnt[k] * W : cnt[k];
      ma[k] = (struct mixed_arg){hin + 0, nin[k], a->rank, step, k};
    }
    for (int k = 0; k < 4; k++) {
      CUDACHECK(cudaLaunchHostFunc(s, fill_input, &ma[k]));
      CUDACHECK(cudaMemcpyAsync(din, hin, nin[k] * sizeof(float), cudaMemcpyHostToDevice, s));
      switch (k) {
      case 0: NCCLCHECK(ncclAllReduce(din, dout, cnt[k], ncclFloat32, ncclSum, comm, s)); break;
      case 1: NCCLCHECK(ncclAllGather(din, dout, cnt[k], ncclFloat32, comm, s)); break;
      case 2: NCCLCHECK(ncclReduceScatter(din, dout, cnt[k], ncclFloat32, ncclSum, comm, s)); break;
      default: NCCLCHECK(ncclBroadcast(din, dout, cnt[k], ncclFloat32, root, comm, s)); break;
      }
      CUDACHECK(cudaMemcpyAsync(hout, dout, nout[k] * sizeof(float), cudaMemcpyDeviceToHost, s));
      CUDACHECK(cudaStreamSynchronize(s));
      static const char *what[4] = {"allreduce", "allgather", "reducescatter", "broadcast"};
      for (size_t i = 0; i < nout[k]; i++) {
        double want;
        if (k == 0)
          want = tri * grad_k(i, step, k);
        else if (k == 1)
          want = (double)(i / cnt[k] + 1) * grad_k(i % cnt[k], step, k);
        else if (k == 2)
          want = tri * grad_k((size_t)a->rank * cnt[k] + i, step, k);
        else
          want = (double)(root + 1) * grad_k(i, step, k);
        if ((double)hout[i] != want) app_mismatch(a, what[k], i, hout[i], want);
      }
      h = app_fnv(h, hout, nout[k] * sizeof(float));
      ops++;
    }
    if (a->verbose && a->rank == 0) printf("dp_train: step %d ok\n", step);
  }
  return finish_steps(a, "mixed collectives", ops, h, hin, hout, din, dout);
}

/* --ops pairwise. Step `step` moves n = size/4 floats (size from the cycle below, capped by
 * --size) per peer: AlltoAll block d of rank r's input, element i: (r+1) * grad_k(d*n+i, step, 0),
 * so rank me's block s holds (s+1) * grad_k(me*n+i, step, 0); then a grouped Send/Recv whose
 * message from rank r is (r+1) * grad_k(i, step, 1). */
static int run_pairwise(struct app *a, ncclComm_t comm, cudaStream_t s) {
  static const size_t sizes[] = {8, 4096, 256, 65536, 32, 1 << 20, 1024, 16384, 64, 4 << 20, 512, 262144};
  const size_t nsizes = sizeof sizes / sizeof *sizes, W = (size_t)a->world;
  size_t maxn = (a->size / sizeof(float) + 1) * W;
  float *hin, *hout, *din, *dout;
  CUDACHECK(cudaMallocHost((void **)&hin, maxn * sizeof(float)));
  CUDACHECK(cudaMallocHost((void **)&hout, maxn * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&din, maxn * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&dout, maxn * sizeof(float)));
  struct mixed_arg ma;
  long ops = 0;
  uint64_t h = APP_FNV_INIT;
  for (int step = 0; step < a->steps; step++) {
    size_t bytes = sizes[(size_t)step % nsizes];
    if (bytes > a->size) bytes = a->size;
    size_t n = bytes / sizeof(float) ? bytes / sizeof(float) : 1;
    int shift = W > 1 ? 1 + step % (a->world - 1) : 0;
    int to = (a->rank + shift) % a->world, from = (a->rank - shift + a->world) % a->world;
    for (int k = 0; k < 2; k++) {
      if (k == 1 && W == 1) continue;
      size_t tot = k == 0 ? n * W : n;
      ma = (struct mixed_arg){hin, tot, a->rank, step, k};
      CUDACHECK(cudaLaunchHostFunc(s, fill_input, &ma));
      CUDACHECK(cudaMemcpyAsync(din, hin, tot * sizeof(float), cudaMemcpyHostToDevice, s));
      if (k == 0) {
        NCCLCHECK(ncclAlltoAll(din, dout, n, ncclFloat32, comm, s));
      } else {
        NCCLCHECK(ncclGroupStart());
        NCCLCHECK(ncclSend(din, n, ncclFloat32, to, comm, s));
        NCCLCHECK(ncclRecv(dout, n, ncclFloat32, from, comm, s));
        NCCLCHECK(ncclGroupEnd());
      }
      CUDACHECK(cudaMemcpyAsync(hout, dout, tot * sizeof(float), cudaMemcpyDeviceToHost, s));
      CUDACHECK(cudaStreamSynchronize(s));
      for (size_t i = 0; i < tot; i++) {
        double want = k == 0 ? (double)(i / n + 1) * grad_k((size_t)a->rank * n + i % n, step, 0)
                             : (double)(from + 1) * grad_k(i, step, 1);
        if ((double)hout[i] != want) app_mismatch(a, k == 0 ? "alltoall" : "sendrecv", i, hout[i], want);
      }
      h = app_fnv(h, hout, tot * sizeof(float));
      ops++;
    }
    if (a->verbose && a->rank == 0) printf("dp_train: step %d ok\n", step);
  }
  return finish_steps(a, "pairwise transfers", ops, h, hin, hout, din, dout);
}

int main(int argc, char **argv) {
  struct app a;
  app_init(&a, "dp_train", argc, argv, usage);
  compute_us = (int)((double)a.compute_us * a.work + 0.5); /* --shares */
  ncclComm_t comm = app_world_comm(&a);
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));
  if (a.mixed) {
    int rc = a.mixed == APP_OPS_PAIRWISE ? run_pairwise(&a, comm, s) : run_mixed(&a, comm, s);
    CUDACHECK(cudaStreamDestroy(s));
    NCCLCHECK(ncclCommDestroy(comm));
    return rc;
  }

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
  size_t batch = (size_t)((double)a.batch_bytes * a.work + 0.5); /* this rank's input batch */
  unsigned char *hbatch = NULL, *dbatch = NULL;
  if (batch) {
    CUDACHECK(cudaMallocHost((void **)&hbatch, batch));
    CUDACHECK(cudaMalloc((void **)&dbatch, batch));
    memset(hbatch, 7, batch);
  }
  long ops = 0;
  for (int step = 0; step < a.steps; step++) {
    if (batch) CUDACHECK(cudaMemcpyAsync(dbatch, hbatch, batch, cudaMemcpyHostToDevice, s));
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
        b[k].weights[i] -= 0.125 * b[k].host[i] / a.world; /* SGD with the mean gradient */
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
  if (batch) {
    CUDACHECK(cudaFreeHost(hbatch));
    CUDACHECK(cudaFree(dbatch));
  }
  CUDACHECK(cudaStreamDestroy(s));
  NCCLCHECK(ncclCommDestroy(comm));
  return rc;
}
