/* tests/apps/train3d.c: 3D parallelism, tensor x pipeline x data, Megatron's rank order
 * (tensor innermost, pipeline outermost): tp = r mod TP, dp = (r / TP) mod DP,
 * stage = r / (TP x DP). With TP = the GPUs of a host the tensor groups stay inside a host
 * and pipeline neighbours (TP x DP ranks apart) sit on other hosts.
 *
 * Three communicators per rank, split from the world: TP (the stage's tensor group), PP (one
 * rank per stage, the same tp and dp: Send/Recv), DP (the same stage and tp).
 * Per step: --microbatches M through --pp P stages with the 1F1B schedule of Megatron-LM's
 * forward_backward_pipelining_without_interleaving (warm-up forwards, steady one-forward-
 * one-backward with send_forward_recv_backward / send_backward_recv_forward as grouped
 * Send/Recv, cool-down backwards). A stage's forward or backward of a microbatch: compute
 * (--compute-us on its stream), then a TP AllReduce of the partial results
 * (tp rank 0 holds the input, every tp rank adds stage + 1: out = in + TP x (stage + 1)).
 * The last stage checks the forward output x + TP x P(P+1)/2, stage 0 the backward output
 * y + TP x P(P+1)/2. After the pipeline, a DP AllReduce of the "weight gradients", checked.
 * All values are small integers in fp32: exact. */
#include <string.h>

#include "common.h"

static const char usage[] =
    "usage: train3d [--steps N] [--size BYTES] [--tp N] [--pp N] [--microbatches M]\n"
    "               [--compute-us N] [-v]\n"
    "  tensor (--tp, default 2) x pipeline (--pp, default 2) x data parallel (the rest):\n"
    "  per step 1F1B over M microbatches (default 4) of BYTES (default 1M) of fp32 with\n"
    "  grouped Send/Recv between stages, a TP AllReduce per microbatch and pass, and a DP\n"
    "  AllReduce of the gradients; every result checked exactly.\n";

struct job {
  struct app *a;
  int TP, PP, DP, tp, dp, stage;
  ncclComm_t tpc, ppc, dpc;
  cudaStream_t s;
  size_t n;
  float **act, **grad; /* per microbatch: received activation / gradient (device) */
  float *out, *dpart;  /* this pass's output (device), TP partial */
  float *host;
  long us;
  long tp_ops, p2p_ops;
};

static float x_val(int step, int dp, int m, size_t i) { return (float)(((size_t)(m * 3 + dp + step) + i) % 17); }
static float y_val(int step, int dp, int m, size_t i) { return (float)(((size_t)(m + dp * 2 + step) + 2 * i) % 19); }

static void CUDART_CB compute(void *p) { app_sleep_us(*(long *)p); }

/* P2P, one grouped call: send `sbuf` to stage `sto` and/or receive into `rbuf` from `rfrom`
 * (-1: none) over the PP communicator (its ranks are the stages) */
static void p2p(struct job *j, const float *sbuf, int sto, float *rbuf, int rfrom) {
  if (sto < 0 && rfrom < 0) return;
  NCCLCHECK(ncclGroupStart());
  if (sto >= 0) NCCLCHECK(ncclSend(sbuf, j->n, ncclFloat32, sto, j->ppc, j->s));
  if (rfrom >= 0) NCCLCHECK(ncclRecv(rbuf, j->n, ncclFloat32, rfrom, j->ppc, j->s));
  NCCLCHECK(ncclGroupEnd());
  j->p2p_ops += (sto >= 0) + (rfrom >= 0);
}

/* one stage's pass over microbatch m: in (device; NULL on the first stage of the flow: the
 * closed-form input) -> j->out = in + TP x (stage + 1), checked at the end of the flow */
static void stage_pass(struct job *j, int fwd, int step, int m, const float *in, uint64_t *h) {
  struct app *a = j->a;
  size_t bytes = j->n * sizeof(float);
  if (j->us > 0) CUDACHECK(cudaLaunchHostFunc(j->s, compute, &j->us));
  if (j->tp == 0) {
    if (in) {
      CUDACHECK(cudaMemcpyAsync(j->host, in, bytes, cudaMemcpyDeviceToHost, j->s));
      CUDACHECK(cudaStreamSynchronize(j->s));
    } else {
      for (size_t i = 0; i < j->n; i++) j->host[i] = fwd ? x_val(step, j->dp, m, i) : y_val(step, j->dp, m, i);
    }
  } else {
    memset(j->host, 0, bytes);
  }
  for (size_t i = 0; i < j->n; i++) j->host[i] += (float)(j->stage + 1);
  CUDACHECK(cudaMemcpyAsync(j->dpart, j->host, bytes, cudaMemcpyHostToDevice, j->s));
  NCCLCHECK(ncclAllReduce(j->dpart, j->out, j->n, ncclFloat32, ncclSum, j->tpc, j->s));
  j->tp_ops++;
  CUDACHECK(cudaStreamSynchronize(j->s)); /* host is reused by the next pass */
  int end = fwd ? j->stage == j->PP - 1 : j->stage == 0;
  if (!end) return;
  CUDACHECK(cudaMemcpyAsync(j->host, j->out, bytes, cudaMemcpyDeviceToHost, j->s));
  CUDACHECK(cudaStreamSynchronize(j->s));
  double tri = (double)j->TP * j->PP * (j->PP + 1) / 2.0;
  for (size_t i = 0; i < j->n; i++) {
    double want = (fwd ? x_val(step, j->dp, m, i) : y_val(step, j->dp, m, i)) + tri;
    if (j->host[i] != want) app_mismatch(a, fwd ? "forward" : "backward", i, j->host[i], want);
  }
  if (step == a->steps - 1) *h = app_fnv(*h, j->host, bytes);
}

/* Megatron-LM 1F1B (schedules.py forward_backward_pipelining_without_interleaving) */
static void one_f_one_b(struct job *j, int step, uint64_t *h) {
  int M = j->a->microbatches, P = j->PP, s = j->stage;
  int prev = s > 0 ? s - 1 : -1, next = s < P - 1 ? s + 1 : -1;
  int warm = P - s - 1 < M ? P - s - 1 : M, rest = M - warm;
  int mf = 0, mb = 0; /* next microbatch to run forward / backward */
  for (int i = 0; i < warm; i++, mf++) {
    p2p(j, NULL, -1, j->act[mf], prev); /* recv_forward */
    stage_pass(j, 1, step, mf, prev >= 0 ? j->act[mf] : NULL, h);
    p2p(j, j->out, next, NULL, -1); /* send_forward */
  }
  if (rest > 0) p2p(j, NULL, -1, j->act[mf], prev);
  for (int i = 0; i < rest; i++, mf++, mb++) {
    stage_pass(j, 1, step, mf, prev >= 0 ? j->act[mf] : NULL, h);
    p2p(j, j->out, next, j->grad[mb], next); /* send_forward_recv_backward */
    stage_pass(j, 0, step, mb, next >= 0 ? j->grad[mb] : NULL, h);
    if (i == rest - 1)
      p2p(j, j->out, prev, NULL, -1); /* send_backward */
    else
      p2p(j, j->out, prev, j->act[mf + 1], prev); /* send_backward_recv_forward */
  }
  for (int i = 0; i < warm; i++, mb++) {
    p2p(j, NULL, -1, j->grad[mb], next); /* recv_backward */
    stage_pass(j, 0, step, mb, next >= 0 ? j->grad[mb] : NULL, h);
    p2p(j, j->out, prev, NULL, -1); /* send_backward */
  }
}

int main(int argc, char **argv) {
  struct app a;
  app_init(&a, "train3d", argc, argv, usage);
  struct job j = {.a = &a, .TP = a.tp, .PP = a.pp};
  if (a.world % (j.TP * j.PP) != 0) {
    fprintf(stderr, "train3d: --tp %d x --pp %d does not divide world %d\n", j.TP, j.PP, a.world);
    return 2;
  }
  j.DP = a.world / (j.TP * j.PP);
  j.tp = a.rank % j.TP;
  j.dp = (a.rank / j.TP) % j.DP;
  j.stage = a.rank / (j.TP * j.DP);
  j.us = a.compute_us;
  ncclComm_t world = app_world_comm(&a);
  NCCLCHECK(ncclCommSplit(world, j.stage * j.DP + j.dp, j.tp, &j.tpc, NULL));
  NCCLCHECK(ncclCommSplit(world, j.dp * j.TP + j.tp, j.stage, &j.ppc, NULL));
  NCCLCHECK(ncclCommSplit(world, j.stage * j.TP + j.tp, j.dp, &j.dpc, NULL));
  int cnt, r;
  NCCLCHECK(ncclCommCount(j.ppc, &cnt));
  NCCLCHECK(ncclCommUserRank(j.ppc, &r));
  if (cnt != j.PP || r != j.stage) app_mismatch(&a, "pp.comm(size,rank)", 0, cnt * 1000 + r, j.PP * 1000 + j.stage);
  CUDACHECK(cudaStreamCreate(&j.s));
  j.n = a.size / sizeof(float) ? a.size / sizeof(float) : 1;
  size_t bytes = j.n * sizeof(float);
  int M = a.microbatches;
  j.act = calloc((size_t)M, sizeof *j.act);
  j.grad = calloc((size_t)M, sizeof *j.grad);
  if (!j.act || !j.grad) app_die(__FILE__, __LINE__, "calloc", "out of memory");
  for (int m = 0; m < M; m++) {
    CUDACHECK(cudaMalloc((void **)&j.act[m], bytes));
    CUDACHECK(cudaMalloc((void **)&j.grad[m], bytes));
  }
  CUDACHECK(cudaMalloc((void **)&j.out, bytes));
  CUDACHECK(cudaMalloc((void **)&j.dpart, bytes));
  CUDACHECK(cudaMallocHost((void **)&j.host, bytes));
  uint64_t h = APP_FNV_INIT;
  long dp_ops = 0;
  for (int step = 0; step < a.steps; step++) {
    one_f_one_b(&j, step, &h);
    /* DP AllReduce of this rank's gradient shard: rank (dp) contributes (dp + 1) x g(i) */
    for (size_t i = 0; i < j.n; i++) j.host[i] = (float)((j.dp + 1) * (int)((i + (size_t)(step + j.stage + j.tp)) % 5 + 1));
    CUDACHECK(cudaMemcpyAsync(j.dpart, j.host, bytes, cudaMemcpyHostToDevice, j.s));
    NCCLCHECK(ncclAllReduce(j.dpart, j.dpart, j.n, ncclFloat32, ncclSum, j.dpc, j.s));
    CUDACHECK(cudaMemcpyAsync(j.host, j.dpart, bytes, cudaMemcpyDeviceToHost, j.s));
    CUDACHECK(cudaStreamSynchronize(j.s));
    dp_ops++;
    double tri = (double)j.DP * (j.DP + 1) / 2.0;
    for (size_t i = 0; i < j.n; i++) {
      double want = tri * (double)((i + (size_t)(step + j.stage + j.tp)) % 5 + 1);
      if (j.host[i] != want) app_mismatch(&a, "dp.allreduce", i, j.host[i], want);
    }
    if (a.verbose && a.rank == 0) printf("train3d: step %d ok\n", step);
  }
  int rc = app_finish(&a);
  if (rc == 0)
    printf("result train3d rank=%d tp=%d dp=%d stage=%d tp_allreduces=%ld p2p=%ld dp_allreduces=%ld checksum=%016llx\n",
           a.rank, j.tp, j.dp, j.stage, j.tp_ops, j.p2p_ops, dp_ops, (unsigned long long)h);
  if (rc == 0 && a.rank == 0)
    printf("summary train3d world=%d tp=%d pp=%d dp=%d steps=%d microbatches=%d bytes=%zu PASS\n", a.world, j.TP,
           j.PP, j.DP, a.steps, M, bytes);
  for (int m = 0; m < M; m++) {
    CUDACHECK(cudaFree(j.act[m]));
    CUDACHECK(cudaFree(j.grad[m]));
  }
  CUDACHECK(cudaFree(j.out));
  CUDACHECK(cudaFree(j.dpart));
  CUDACHECK(cudaFreeHost(j.host));
  free(j.act);
  free(j.grad);
  CUDACHECK(cudaStreamDestroy(j.s));
  NCCLCHECK(ncclCommDestroy(j.dpc));
  NCCLCHECK(ncclCommDestroy(j.ppc));
  NCCLCHECK(ncclCommDestroy(j.tpc));
  NCCLCHECK(ncclCommDestroy(world));
  return rc;
}
