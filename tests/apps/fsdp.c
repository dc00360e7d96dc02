/* tests/apps/fsdp.c: fully sharded data parallel, per layer.
 *
 * Each layer has P parameters (BYTES of its dtype, rounded down to a multiple of the
 * world size); every rank owns a shard of P/W. Per step: forward = AllGather of every
 * layer's shard (check that the full parameters arrive in owner order), backward (in
 * reverse layer order) = ReduceScatter of full-size gradients (check the summed shard).
 * --prefetch 1 (default), as FSDP does: the collectives run on a second stream; layer l+1's
 * AllGather is issued before layer l computes (the compute stream waits on an event per
 * layer), and a layer's ReduceScatter waits on an event for its gradients, so communication
 * overlaps the --compute-us of the other layers.
 * Even layers are bf16 (up to 64 ranks; fp32 above), odd layers fp32. All values are small
 * integers, exact in bf16. */
#include <string.h>

#include "common.h"

static const char usage[] =
    "usage: fsdp [--steps N] [--size BYTES] [--layers N] [--compute-us N] [--prefetch 0|1] [-v]\n"
    "  per layer and step: AllGather of parameter shards, ReduceScatter of gradients;\n"
    "  even layers bf16, odd layers fp32 (defaults --size 1M per layer, --layers 4).\n"
    "  --compute-us N: each layer's forward and backward compute (GPU time);\n"
    "  --prefetch 1 (default): the collectives run on a second stream, the next layer's\n"
    "  AllGather overlapping this layer's compute; 0: one stream.\n";

struct layer {
  int bf16;
  size_t esize, full, shard; /* elements */
  void *dshard, *dfull, *dgrad, *dgshard;
  void *hfull, *hgshard, *hshard; /* pinned: staging and results */
  cudaEvent_t ev;                 /* --prefetch 1: AllGather done (forward), gradients ready (backward) */
};

static double param_val(size_t j, int l, int step) { return (double)((j * 7 + (size_t)l + (size_t)step) % 13); }
static double grad_val(size_t j, int r, int l, int step) {
  return (double)((j + (size_t)r + (size_t)l + (size_t)step) % 5);
}

static void put(const struct layer *L, void *buf, size_t i, double v) {
  if (L->bf16)
    ((uint16_t *)buf)[i] = app_f2bf((float)v);
  else
    ((float *)buf)[i] = (float)v;
}
static double get(const struct layer *L, const void *buf, size_t i) {
  return L->bf16 ? app_bf2f(((const uint16_t *)buf)[i]) : ((const float *)buf)[i];
}

static long compute_us;
static void CUDART_CB compute(void *p) { app_sleep_us(*(long *)p); }

/* --prefetch 1: layer l's shard up and its AllGather on stream s2, done at L->ev */
static void gather(struct app *a, struct layer *L, int l, int step, cudaStream_t s2, ncclComm_t comm) {
  size_t base = (size_t)a->rank * L->shard;
  for (size_t k = 0; k < L->shard; k++) put(L, L->hshard, k, param_val(base + k, l, step));
  CUDACHECK(cudaMemcpyAsync(L->dshard, L->hshard, L->shard * L->esize, cudaMemcpyHostToDevice, s2));
  NCCLCHECK(ncclAllGather(L->dshard, L->dfull, L->shard, L->bf16 ? ncclBfloat16 : ncclFloat32, comm, s2));
  CUDACHECK(cudaEventRecord(L->ev, s2));
}

int main(int argc, char **argv) {
  struct app a;
  app_init(&a, "fsdp", argc, argv, usage);
  ncclComm_t comm = app_world_comm(&a);
  cudaStream_t s, s2; /* compute; communication (--prefetch 1) */
  CUDACHECK(cudaStreamCreate(&s));
  CUDACHECK(cudaStreamCreate(&s2));
  compute_us = a.compute_us;

  struct layer *Ls = calloc((size_t)a.layers, sizeof *Ls);
  if (!Ls) app_die(__FILE__, __LINE__, "calloc", "out of memory");
  for (int l = 0; l < a.layers; l++) {
    struct layer *L = &Ls[l];
    L->bf16 = l % 2 == 0 && a.world <= 64; /* bf16 sums of more ranks would not be exact */
    L->esize = L->bf16 ? 2 : 4;
    L->full = a.size / L->esize / (size_t)a.world * (size_t)a.world;
    if (L->full == 0) L->full = (size_t)a.world;
    L->shard = L->full / (size_t)a.world;
    CUDACHECK(cudaMalloc(&L->dshard, L->shard * L->esize));
    CUDACHECK(cudaMalloc(&L->dfull, L->full * L->esize));
    CUDACHECK(cudaMalloc(&L->dgrad, L->full * L->esize));
    CUDACHECK(cudaMalloc(&L->dgshard, L->shard * L->esize));
    CUDACHECK(cudaMallocHost(&L->hfull, L->full * L->esize));
    CUDACHECK(cudaMallocHost(&L->hgshard, L->shard * L->esize));
    CUDACHECK(cudaMallocHost(&L->hshard, L->shard * L->esize));
    CUDACHECK(cudaEventCreateWithFlags(&L->ev, cudaEventDisableTiming));
  }
  long gathers = 0, scatters = 0;
  for (int step = 0; step < a.steps; step++) {
    /* forward: gather each layer's parameters (with --prefetch 1, the next layer's on s2
     * while this one computes on s) */
    if (a.prefetch) {
      gather(&a, &Ls[0], 0, step, s2, comm);
      for (int l = 0; l < a.layers; l++) {
        struct layer *L = &Ls[l];
        if (l + 1 < a.layers) gather(&a, &Ls[l + 1], l + 1, step, s2, comm);
        CUDACHECK(cudaStreamWaitEvent(s, L->ev, 0));
        if (a.compute_us > 0) CUDACHECK(cudaLaunchHostFunc(s, compute, &compute_us));
        CUDACHECK(cudaMemcpyAsync(L->hfull, L->dfull, L->full * L->esize, cudaMemcpyDeviceToHost, s));
        gathers++;
      }
    } else {
      for (int l = 0; l < a.layers; l++) {
        struct layer *L = &Ls[l];
        size_t base = (size_t)a.rank * L->shard;
        for (size_t k = 0; k < L->shard; k++) put(L, L->hshard, k, param_val(base + k, l, step));
        CUDACHECK(cudaMemcpyAsync(L->dshard, L->hshard, L->shard * L->esize, cudaMemcpyHostToDevice, s));
        NCCLCHECK(ncclAllGather(L->dshard, L->dfull, L->shard, L->bf16 ? ncclBfloat16 : ncclFloat32, comm, s));
        if (a.compute_us > 0) CUDACHECK(cudaLaunchHostFunc(s, compute, &compute_us));
        CUDACHECK(cudaMemcpyAsync(L->hfull, L->dfull, L->full * L->esize, cudaMemcpyDeviceToHost, s));
        gathers++;
      }
    }
    CUDACHECK(cudaStreamSynchronize(s));
    for (int l = 0; l < a.layers; l++) {
      struct layer *L = &Ls[l];
      for (size_t j = 0; j < L->full; j++)
        if (get(L, L->hfull, j) != param_val(j, l, step))
          app_mismatch(&a, L->bf16 ? "allgather.bf16" : "allgather.fp32", j, get(L, L->hfull, j), param_val(j, l, step));
    }
    /* backward: reduce-scatter each layer's gradients, last layer first (with --prefetch 1 on
     * s2, as soon as the layer's gradients are ready on s, while s computes the next) */
    cudaStream_t rs = a.prefetch ? s2 : s;
    for (int l = a.layers - 1; l >= 0; l--) {
      struct layer *L = &Ls[l];
      for (size_t j = 0; j < L->full; j++) put(L, L->hfull, j, grad_val(j, a.rank, l, step));
      if (a.compute_us > 0) CUDACHECK(cudaLaunchHostFunc(s, compute, &compute_us));
      CUDACHECK(cudaMemcpyAsync(L->dgrad, L->hfull, L->full * L->esize, cudaMemcpyHostToDevice, s));
      if (a.prefetch) {
        CUDACHECK(cudaEventRecord(L->ev, s));
        CUDACHECK(cudaStreamWaitEvent(s2, L->ev, 0));
      }
      NCCLCHECK(ncclReduceScatter(L->dgrad, L->dgshard, L->shard, L->bf16 ? ncclBfloat16 : ncclFloat32, ncclSum,
                                  comm, rs));
      CUDACHECK(cudaMemcpyAsync(L->hgshard, L->dgshard, L->shard * L->esize, cudaMemcpyDeviceToHost, rs));
      scatters++;
    }
    CUDACHECK(cudaStreamSynchronize(s));
    CUDACHECK(cudaStreamSynchronize(s2));
    for (int l = 0; l < a.layers; l++) {
      struct layer *L = &Ls[l];
      size_t base = (size_t)a.rank * L->shard;
      for (size_t k = 0; k < L->shard; k++) {
        double want = 0;
        for (int r = 0; r < a.world; r++) want += grad_val(base + k, r, l, step);
        double got = get(L, L->hgshard, k);
        if (got != want) app_mismatch(&a, L->bf16 ? "reducescatter.bf16" : "reducescatter.fp32", k, got, want);
      }
    }
    if (a.verbose && a.rank == 0) printf("fsdp: step %d ok\n", step);
  }
  /* checksum: rank 0's view of the last parameters (same on all ranks) */
  uint64_t h = APP_FNV_INIT;
  for (int l = 0; l < a.layers; l++) {
    struct layer *L = &Ls[l];
    for (size_t j = 0; j < L->full; j++) put(L, L->hfull, j, param_val(j, l, a.steps - 1));
    h = app_fnv(h, L->hfull, L->full * L->esize);
    h = app_fnv(h, L->hgshard, L->shard * L->esize);
  }
  int rc = app_finish(&a);
  if (rc == 0)
    printf("result fsdp rank=%d shard_checksum=%016llx\n", a.rank, (unsigned long long)h);
  if (rc == 0 && a.rank == 0)
    printf("summary fsdp world=%d steps=%d layers=%d bytes=%zu allgathers=%ld reducescatters=%ld PASS\n", a.world,
           a.steps, a.layers, a.size, gathers, scatters);
  for (int l = 0; l < a.layers; l++) {
    struct layer *L = &Ls[l];
    CUDACHECK(cudaFree(L->dshard));
    CUDACHECK(cudaFree(L->dfull));
    CUDACHECK(cudaFree(L->dgrad));
    CUDACHECK(cudaFree(L->dgshard));
    CUDACHECK(cudaFreeHost(L->hfull));
    CUDACHECK(cudaFreeHost(L->hgshard));
    CUDACHECK(cudaFreeHost(L->hshard));
    CUDACHECK(cudaEventDestroy(L->ev));
  }
  free(Ls);
  CUDACHECK(cudaStreamDestroy(s));
  CUDACHECK(cudaStreamDestroy(s2));
  NCCLCHECK(ncclCommDestroy(comm));
  return rc;
}
