/* tests/apps/moe.c: mixture-of-experts token exchange, one expert per rank.
 *
 * Per step every rank routes T tokens (--size / 256 B, H = 64 fp32 per token) to the experts.
 * The routing is skewed and moves: expert e's popularity in step s is Zipf, weight
 * 1 / (1 + (e + s) mod W)^A (--skew A, default 1.2), so the hot expert changes every step;
 * c(s, r, e) = floor(T x weight share) + (r + e + s) mod 3 tokens go from rank r to expert e.
 * A step is, as in expert-parallel MoE layers:
 *  1. AlltoAll of the token counts (one int32 per peer): each rank learns what it receives,
 *     checked against the closed form;
 *  2. dispatch: grouped Send/Recv of the tokens (AlltoAllv: c(s, r, e) x H fp32 to each e);
 *  3. the expert's work: --compute-us per average rank's load, scaled by this rank's tokens
 *     (the hot expert computes longest), on the stream; then out = token + (e + 1);
 *  4. combine: grouped Send/Recv of the results back to their ranks.
 * Every received token (dispatch and combine) is checked exactly. */
#include <math.h>
#include <string.h>

#include "common.h"

#define H 64 /* fp32 per token */

static const char usage[] =
    "usage: moe [--steps N] [--size BYTES] [--skew A] [--compute-us N] [-v]\n"
    "  expert parallel: per step an AlltoAll of token counts, then a grouped Send/Recv\n"
    "  dispatch and combine of Zipf-skewed (--skew A, default 1.2) token counts that shift\n"
    "  every step; BYTES (default 1M) per rank per step on average; --compute-us N: the\n"
    "  expert's GPU time at the average load, scaled by its tokens.\n";

static int W, T;
static double *zipf; /* zipf[k]: weight share of popularity rank k */

static int count(int step, int r, int e) {
  int k = (e + step) % W;
  return (int)floor((double)T * zipf[k]) + (r + e + step) % 3;
}
static float tok(int step, int r, int e, int j, int h) {
  return (float)((r * 31 + e * 7 + j * 3 + h + step) % 251);
}

struct expert_arg {
  long us;
};
static void CUDART_CB expert_compute(void *p) { app_sleep_us(((struct expert_arg *)p)->us); }

int main(int argc, char **argv) {
  struct app a;
  app_init(&a, "moe", argc, argv, usage);
  W = a.world;
  T = (int)(a.size / (H * sizeof(float)));
  if (T < 1) T = 1;
  zipf = calloc((size_t)W, sizeof *zipf);
  if (!zipf) app_die(__FILE__, __LINE__, "calloc", "out of memory");
  double zs = 0;
  for (int k = 0; k < W; k++) zs += zipf[k] = 1.0 / pow(1.0 + k, a.skew);
  for (int k = 0; k < W; k++) zipf[k] /= zs;
  /* the most one rank can send or receive in a step: every peer at popularity rank 0 */
  size_t cap = 0;
  for (int e = 0; e < W; e++) cap += (size_t)floor((double)T * zipf[0]) + 2;
  cap *= H;
  ncclComm_t comm = app_world_comm(&a);
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));
  float *hsend, *hrecv, *dsend, *drecv, *dout, *dback;
  int32_t *hcnt, *dcnt_s, *dcnt_r;
  CUDACHECK(cudaMallocHost((void **)&hsend, cap * sizeof(float)));
  CUDACHECK(cudaMallocHost((void **)&hrecv, cap * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&dsend, cap * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&drecv, cap * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&dout, cap * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&dback, cap * sizeof(float)));
  CUDACHECK(cudaMallocHost((void **)&hcnt, (size_t)W * sizeof(int32_t)));
  CUDACHECK(cudaMalloc((void **)&dcnt_s, (size_t)W * sizeof(int32_t)));
  CUDACHECK(cudaMalloc((void **)&dcnt_r, (size_t)W * sizeof(int32_t)));
  size_t *soff = calloc((size_t)W + 1, sizeof *soff), *roff = calloc((size_t)W + 1, sizeof *roff);
  if (!soff || !roff) app_die(__FILE__, __LINE__, "calloc", "out of memory");
  struct expert_arg ea;
  long tokens_in = 0, max_load = 0;
  uint64_t hsum = APP_FNV_INIT;
  for (int step = 0; step < a.steps; step++) {
    /* 1. counts */
    for (int e = 0; e < W; e++) hcnt[e] = count(step, a.rank, e);
    CUDACHECK(cudaMemcpyAsync(dcnt_s, hcnt, (size_t)W * sizeof(int32_t), cudaMemcpyHostToDevice, s));
    NCCLCHECK(ncclAlltoAll(dcnt_s, dcnt_r, 1, ncclInt32, comm, s));
    CUDACHECK(cudaMemcpyAsync(hcnt, dcnt_r, (size_t)W * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
    CUDACHECK(cudaStreamSynchronize(s));
    for (int r = 0; r < W; r++)
      if (hcnt[r] != count(step, r, a.rank)) app_mismatch(&a, "alltoall.counts", (size_t)r, hcnt[r], count(step, r, a.rank));
    for (int p = 0; p < W; p++) {
      soff[p + 1] = soff[p] + (size_t)count(step, a.rank, p) * H;
      roff[p + 1] = roff[p] + (size_t)count(step, p, a.rank) * H;
    }
    /* 2. dispatch */
    for (int e = 0; e < W; e++)
      for (int j = 0; j < count(step, a.rank, e); j++)
        for (int h = 0; h < H; h++) hsend[soff[e] + (size_t)j * H + (size_t)h] = tok(step, a.rank, e, j, h);
    CUDACHECK(cudaMemcpyAsync(dsend, hsend, soff[W] * sizeof(float), cudaMemcpyHostToDevice, s));
    NCCLCHECK(ncclGroupStart());
    for (int p = 0; p < W; p++) {
      NCCLCHECK(ncclSend(dsend + soff[p], soff[p + 1] - soff[p], ncclFloat32, p, comm, s));
      NCCLCHECK(ncclRecv(drecv + roff[p], roff[p + 1] - roff[p], ncclFloat32, p, comm, s));
    }
    NCCLCHECK(ncclGroupEnd());
    /* 3. the expert: GPU time in proportion to its load, then out = token + (e + 1) */
    long load = (long)(roff[W] / H);
    tokens_in += load;
    if (load > max_load) max_load = load;
    ea.us = (long)((double)a.compute_us * (double)load / ((double)T + W) + 0.5); /* average load: T + ~W */
    if (ea.us > 0) CUDACHECK(cudaLaunchHostFunc(s, expert_compute, &ea));
    CUDACHECK(cudaMemcpyAsync(hrecv, drecv, roff[W] * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDACHECK(cudaStreamSynchronize(s));
    for (int r = 0; r < W; r++)
      for (int j = 0; j < count(step, r, a.rank); j++)
        for (int h = 0; h < H; h++) {
          size_t i = roff[r] + (size_t)j * H + (size_t)h;
          float want = tok(step, r, a.rank, j, h);
          if (hrecv[i] != want) app_mismatch(&a, "dispatch", i, hrecv[i], want);
          hrecv[i] += (float)(a.rank + 1);
        }
    CUDACHECK(cudaMemcpyAsync(dout, hrecv, roff[W] * sizeof(float), cudaMemcpyHostToDevice, s));
    /* 4. combine: the results go back to the ranks that sent the tokens */
    NCCLCHECK(ncclGroupStart());
    for (int p = 0; p < W; p++) {
      NCCLCHECK(ncclSend(dout + roff[p], roff[p + 1] - roff[p], ncclFloat32, p, comm, s));
      NCCLCHECK(ncclRecv(dback + soff[p], soff[p + 1] - soff[p], ncclFloat32, p, comm, s));
    }
    NCCLCHECK(ncclGroupEnd());
    CUDACHECK(cudaMemcpyAsync(hsend, dback, soff[W] * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDACHECK(cudaStreamSynchronize(s));
    for (int e = 0; e < W; e++)
      for (int j = 0; j < count(step, a.rank, e); j++)
        for (int h = 0; h < H; h++) {
          size_t i = soff[e] + (size_t)j * H + (size_t)h;
          float want = tok(step, a.rank, e, j, h) + (float)(e + 1);
          if (hsend[i] != want) app_mismatch(&a, "combine", i, hsend[i], want);
        }
    hsum = app_fnv(hsum, hsend, soff[W] * sizeof(float));
    if (a.verbose && a.rank == 0) printf("moe: step %d ok\n", step);
  }
  int rc = app_finish(&a);
  if (rc == 0)
    printf("result moe rank=%d tokens_in=%ld max_load=%ld checksum=%016llx\n", a.rank, tokens_in, max_load,
           (unsigned long long)hsum);
  if (rc == 0 && a.rank == 0)
    printf("summary moe world=%d steps=%d tokens_per_rank=%d skew=%.2f PASS\n", W, a.steps, T, a.skew);
  CUDACHECK(cudaFreeHost(hsend));
  CUDACHECK(cudaFreeHost(hrecv));
  CUDACHECK(cudaFreeHost(hcnt));
  CUDACHECK(cudaFree(dsend));
  CUDACHECK(cudaFree(drecv));
  CUDACHECK(cudaFree(dout));
  CUDACHECK(cudaFree(dback));
  CUDACHECK(cudaFree(dcnt_s));
  CUDACHECK(cudaFree(dcnt_r));
  free(soff);
  free(roff);
  free(zipf);
  CUDACHECK(cudaStreamDestroy(s));
  NCCLCHECK(ncclCommDestroy(comm));
  return rc;
}
