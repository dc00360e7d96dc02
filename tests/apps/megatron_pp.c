/* tests/apps/megatron_pp.c: Megatron-LM's tensor x pipeline x data parallel training step as
 * NCCL and CUDA see it, with the tensor-parallel layers captured in CUDA graphs.
 *
 * Call patterns from NVIDIA/Megatron-LM at commit d98e8a64ddf3 (file:line):
 * - rank order and groups (megatron/core/parallel_state.py:617, order "tp-cp-ep-dp-pp"):
 *   tensor innermost, then data, pipeline outermost; every group a new_group split from the
 *   default group's communicator.
 * - 1F1B (megatron/core/pipeline_parallel/schedules.py:2147
 *   forward_backward_pipelining_without_interleaving): warm-up forwards, min(P - stage - 1, M)
 *   (schedules.py:2276-2279), the steady state with send_forward_recv_backward (:2416) and
 *   send_backward_recv_forward (:2446), the cool-down backwards (:2450).
 * - P2P between stages (megatron/core/pipeline_parallel/p2p_communication.py:22-57
 *   _batched_p2p_ops): one torch.distributed.batch_isend_irecv of the P2POps in the order
 *   send_prev, recv_prev, send_next, recv_next: ncclGroupStart, ncclSend/ncclRecv, ncclGroupEnd
 *   (PyTorch's coalesced P2P).
 * - CUDA graphs of the transformer layers (megatron/core/transformer/cuda_graphs.py): each
 *   layer's forward is captured with torch.cuda.graph(..., capture_error_mode="thread_local")
 *   (cuda_graphs.py:1380-1381), its backward with torch.cuda.graph's default, global
 *   (cuda_graphs.py:1519); each microbatch replays them (runner.fwd_graph.replay(),
 *   cuda_graphs.py:875-878; runner.bwd_graph.replay(), :909-915). The tensor-parallel
 *   collectives of a layer (the row-parallel linears' AllReduce in the forward, the
 *   column-parallel linears' input-gradient AllReduce in the backward) are inside the graphs.
 *   --capture-mode sets the mode of both.
 * - data-parallel gradient reduction (megatron/core/distributed/param_and_grad_buffer.py:600
 *   start_grad_sync): with the distributed optimizer a reduce_scatter_tensor of the bucket
 *   (:51, :718-723), then the updated parameters all-gathered; without it an all_reduce (:730).
 *   --dp-reduce reduce_scatter|allreduce.
 * - grad-norm (megatron/core/optimizer/clip_grads.py:55 get_grad_norm_fp32): the squared norm
 *   all-reduced with SUM over the model-parallel group (tensor x pipeline ranks, :132-134).
 *   --no-grad-norm leaves it out, as --clip-grad 0 does (megatron/core/optimizer/optimizer.py:830
 *   MixedPrecisionOptimizer.step: the norm only with config.clip_grad > 0.0): with no
 *   --tied-embedding either, no collective crosses the stages.
 * - tied word embedding (--tied-embedding): after the data-parallel sync
 *   (megatron/core/distributed/finalize_model_grads.py:640 finish_grad_sync, then :676
 *   _allreduce_word_embedding_grads) the embedding's gradient all-reduced over the embedding
 *   group (:258), the first and the last stage of each pipeline (parallel_state.py:560
 *   default_embedding_ranks; the group split from the world, :1269-1277); only ranks of those
 *   stages call it.
 * - exit-duration check (--exit-check): Megatron's checkpoint_and_decide_exit, called after
 *   every iteration (megatron/training/training.py:4989), all-reduces with MAX a one-int
 *   "train time > --exit-duration-in-mins" flag over the default group, the world
 *   (training.py:4104-4113), so every rank takes the same exit decision: a collective on the
 *   world communicator each step, where the split groups above carry every other one.
 * - --stage-layers L0,L1,...: stage s's compute per pass is that of L_s layers, --compute-us N x
 *   L_s (default: one --compute-us per pass); the captured layer graphs stay --layers.
 * - --pause-ms N: the host thread sleeps N ms of wall time after each step (no modeled time:
 *   on the simulator's modeled clock it only lets collscope's harvest thread catch up).
 *
 * The layers' math (the first activation-sized elements; the rest are zero): a stage's pass over a microbatch runs --layers L layers; each layer adds
 * stage + 1 on every tensor rank and reduces: out = in + TP x (stage + 1) per layer, so the
 * last stage sees x + L x TP x P(P+1)/2 (stage 0 the same for the backward). Every result is
 * checked exactly; each communicator uses message sizes of its own (calls.h). */
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "calls.h"
#include "common.h"

static const char usage[] =
    "usage: megatron_pp [--steps N] [--size BYTES] [--tp N] [--pp N] [--microbatches M] [--layers L]\n"
    "                   [--compute-us N] [--capture-mode global|thread_local|relaxed]\n"
    "                   [--dp-reduce reduce_scatter|allreduce] [--tied-embedding]\n"
    "                   [--no-grad-norm] [--exit-check] [--stage-layers L0,L1,...]\n"
    "                   [--pause-ms N] [-v]\n"
    "  Megatron-style TP x PP x DP: 1F1B with batch_isend_irecv between stages, each layer's\n"
    "  TP AllReduces in a CUDA graph replayed per microbatch, the DP gradient reduce-scatter\n"
    "  and all-gather (or AllReduce), the grad-norm AllReduce over the model-parallel group, and\n"
    "  with --exit-check the exit decision's MAX AllReduce over the world each step.\n";

enum { FWD,
       BWD };

struct layer_graph { /* one layer's forward or backward: AllReduce, copy, AllReduce */
  float *p1, *o1, *p2, *o2;
  cudaGraph_t g;
  cudaGraphExec_t x;
  struct calls_graph calls;
};

struct job {
  struct app *a;
  int TP, PP, DP, tp, dp, stage, L;
  ncclComm_t world, tpc, ppc, dpc, mpc;
  struct calls_comm ctp, cpp, cdp, cmp;
  cudaStream_t s;
  size_t n;                  /* activation elements */
  float **act, **grad;       /* per microbatch: received activation / gradient (device) */
  float *host;               /* pinned staging */
  struct layer_graph *lg[2]; /* [FWD|BWD][layer] */
  long us;
  int set_mode;
  enum cudaStreamCaptureMode mode;
  int dist_opt;
  int tied;       /* --tied-embedding */
  int no_norm;    /* --no-grad-norm */
  int exit_check; /* --exit-check */
  struct calls_comm cworld;
  ncclComm_t embc; /* the embedding group (first and last stage), NULL elsewhere */
  struct calls_comm cemb;
  const char *stage_layers; /* --stage-layers */
  long pause_ms;            /* --pause-ms */
};

static struct app A;

static int take_own_options(struct job *j, int argc, char **argv) {
  int out = 1;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(argv[i], "--capture-mode")) {
      j->set_mode = 1;
      j->mode = (enum cudaStreamCaptureMode)calls_capture_mode("megatron_pp", v);
      i++;
    } else if (!strcmp(argv[i], "--tied-embedding")) {
      j->tied = 1;
    } else if (!strcmp(argv[i], "--no-grad-norm")) {
      j->no_norm = 1;
    } else if (!strcmp(argv[i], "--exit-check")) {
      j->exit_check = 1;
    } else if (!strcmp(argv[i], "--pause-ms")) {
      char *end;
      j->pause_ms = strtol(v, &end, 10);
      if (end == v || *end || j->pause_ms < 0 || j->pause_ms > 10000) {
        fprintf(stderr, "megatron_pp: --pause-ms: expected 0..10000, got '%s'\n", v);
        exit(2);
      }
      i++;
    } else if (!strcmp(argv[i], "--stage-layers")) {
      j->stage_layers = v;
      i++;
    } else if (!strcmp(argv[i], "--dp-reduce")) {
      if (!strcmp(v, "reduce_scatter"))
        j->dist_opt = 1;
      else if (!strcmp(v, "allreduce"))
        j->dist_opt = 0;
      else {
        fprintf(stderr, "megatron_pp: --dp-reduce: expected reduce_scatter or allreduce, got '%s'\n", v);
        exit(2);
      }
      i++;
    } else {
      argv[out++] = argv[i];
    }
  }
  argv[out] = NULL;
  return out;
}

static float x_val(int step, int dp, int m, size_t i) { return (float)(((size_t)(m * 3 + dp + step) + i) % 17); }
static float y_val(int step, int dp, int m, size_t i) { return (float)(((size_t)(m + dp * 2 + step) + 2 * i) % 19); }

static void CUDART_CB compute(void *p) { app_sleep_us(*(long *)p); }

/* capture one layer's pass: AllReduce(p1 -> o1); p2 = o1 on tensor rank 0, 0 elsewhere;
 * AllReduce(p2 -> o2). Counts differ per pass so every collective has its own size. */
static void capture_layer(struct job *j, struct layer_graph *lg, int pass) {
  size_t n1 = j->n + (pass == FWD ? 32 : 40), n2 = n1 + 4;
  CUDACHECK(cudaMalloc((void **)&lg->p1, n1 * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&lg->o1, n1 * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&lg->p2, n2 * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&lg->o2, n2 * sizeof(float)));
  enum cudaStreamCaptureMode mode = j->set_mode   ? j->mode
                                    : pass == FWD ? cudaStreamCaptureModeThreadLocal
                                                  : cudaStreamCaptureModeGlobal;
  memset(&lg->calls, 0, sizeof lg->calls);
  CUDACHECK(cudaStreamBeginCapture(j->s, mode));
  NCCLCHECK(ncclAllReduce(lg->p1, lg->o1, n1, ncclFloat32, ncclSum, j->tpc, j->s));
  calls_capture(&lg->calls, &j->ctp, "AllReduce", n1 * sizeof(float), 1);
  CUDACHECK(cudaMemsetAsync(lg->p2, 0, n2 * sizeof(float), j->s));
  if (j->tp == 0) CUDACHECK(cudaMemcpyAsync(lg->p2, lg->o1, n1 * sizeof(float), cudaMemcpyDeviceToDevice, j->s));
  NCCLCHECK(ncclAllReduce(lg->p2, lg->o2, n2, ncclFloat32, ncclSum, j->tpc, j->s));
  calls_capture(&lg->calls, &j->ctp, "AllReduce", n2 * sizeof(float), 1);
  CUDACHECK(cudaStreamEndCapture(j->s, &lg->g));
  CUDACHECK(cudaGraphInstantiateWithFlags(&lg->x, lg->g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
}

/* _batched_p2p_ops: send_prev, recv_prev, send_next, recv_next as one batch_isend_irecv */
static void p2p(struct job *j, const float *send_prev, float *recv_prev, const float *send_next, float *recv_next) {
  int s = j->stage, ops = (send_prev != NULL) + (recv_prev != NULL) + (send_next != NULL) + (recv_next != NULL);
  if (!ops) return;
  size_t bytes = j->n * sizeof(float);
  NCCLCHECK(ncclGroupStart());
  if (send_prev) NCCLCHECK(ncclSend(send_prev, j->n, ncclFloat32, s - 1, j->ppc, j->s));
  if (recv_prev) NCCLCHECK(ncclRecv(recv_prev, j->n, ncclFloat32, s - 1, j->ppc, j->s));
  if (send_next) NCCLCHECK(ncclSend(send_next, j->n, ncclFloat32, s + 1, j->ppc, j->s));
  if (recv_next) NCCLCHECK(ncclRecv(recv_next, j->n, ncclFloat32, s + 1, j->ppc, j->s));
  NCCLCHECK(ncclGroupEnd());
  for (int k = 0; k < (send_prev != NULL) + (send_next != NULL); k++) calls_add(&j->cpp, "Send", bytes, CALLS_GROUP, ops);
  for (int k = 0; k < (recv_prev != NULL) + (recv_next != NULL); k++) calls_add(&j->cpp, "Recv", bytes, CALLS_GROUP, ops);
}

/* one stage's pass over microbatch m through its L layer graphs; returns the device output
 * (the last layer's o2, valid until that graph's next replay) */
static float *stage_pass(struct job *j, int pass, int step, int m, const float *in, uint64_t *h) {
  size_t bytes = j->n * sizeof(float);
  if (j->us > 0) CUDACHECK(cudaLaunchHostFunc(j->s, compute, &j->us));
  if (in) {
    CUDACHECK(cudaMemcpyAsync(j->host, in, bytes, cudaMemcpyDeviceToHost, j->s));
    CUDACHECK(cudaStreamSynchronize(j->s));
  } else {
    for (size_t i = 0; i < j->n; i++) j->host[i] = pass == FWD ? x_val(step, j->dp, m, i) : y_val(step, j->dp, m, i);
  }
  float *out = NULL;
  for (int l = 0; l < j->L; l++) {
    struct layer_graph *lg = &j->lg[pass][l];
    size_t n1 = j->n + (pass == FWD ? 32 : 40);
    for (size_t i = 0; i < j->n; i++) j->host[i] = (j->tp == 0 ? j->host[i] : 0.0f) + (float)(j->stage + 1);
    for (size_t i = j->n; i < n1; i++) j->host[i] = 0.0f;
    CUDACHECK(cudaMemcpyAsync(lg->p1, j->host, n1 * sizeof(float), cudaMemcpyHostToDevice, j->s));
    CUDACHECK(cudaGraphLaunch(lg->x, j->s));
    calls_replay(&lg->calls);
    CUDACHECK(cudaMemcpyAsync(j->host, lg->o2, bytes, cudaMemcpyDeviceToHost, j->s));
    CUDACHECK(cudaStreamSynchronize(j->s));
    out = lg->o2;
  }
  int end = pass == FWD ? j->stage == j->PP - 1 : j->stage == 0;
  if (end) {
    double tri = (double)j->L * j->TP * j->PP * (j->PP + 1) / 2.0;
    for (size_t i = 0; i < j->n; i++) {
      double want = (pass == FWD ? x_val(step, j->dp, m, i) : y_val(step, j->dp, m, i)) + tri;
      if (j->host[i] != want) app_mismatch(&A, pass == FWD ? "forward" : "backward", i, j->host[i], want);
    }
    if (step == A.steps - 1) *h = app_fnv(*h, j->host, bytes);
  }
  return out;
}

/* forward_backward_pipelining_without_interleaving */
static void one_f_one_b(struct job *j, int step, uint64_t *h) {
  int M = A.microbatches, P = j->PP, s = j->stage;
  int first = s == 0, last = s == P - 1;
  int warm = P - s - 1 < M ? P - s - 1 : M, rest = M - warm;
  int mf = 0, mb = 0;
  for (int i = 0; i < warm; i++, mf++) {
    p2p(j, NULL, first ? NULL : j->act[mf], NULL, NULL); /* recv_forward */
    float *out = stage_pass(j, FWD, step, mf, first ? NULL : j->act[mf], h);
    p2p(j, NULL, NULL, last ? NULL : out, NULL); /* send_forward */
  }
  if (rest > 0) p2p(j, NULL, first ? NULL : j->act[mf], NULL, NULL); /* recv_forward */
  for (int i = 0; i < rest; i++, mf++, mb++) {
    float *out = stage_pass(j, FWD, step, mf, first ? NULL : j->act[mf], h);
    p2p(j, NULL, NULL, last ? NULL : out, last ? NULL : j->grad[mb]); /* send_forward_recv_backward */
    out = stage_pass(j, BWD, step, mb, last ? NULL : j->grad[mb], h);
    if (i == rest - 1)
      p2p(j, first ? NULL : out, NULL, NULL, NULL); /* send_backward */
    else
      p2p(j, first ? NULL : out, first ? NULL : j->act[mf + 1], NULL, NULL); /* send_backward_recv_forward */
  }
  for (int i = 0; i < warm; i++, mb++) {
    p2p(j, NULL, NULL, NULL, last ? NULL : j->grad[mb]); /* recv_backward */
    float *out = stage_pass(j, BWD, step, mb, last ? NULL : j->grad[mb], h);
    p2p(j, first ? NULL : out, NULL, NULL, NULL); /* send_backward */
  }
}

static float g_val(int step, int stage, int tp, size_t i) { return (float)((i + (size_t)(step + stage + tp)) % 5 + 1); }

/* start_grad_sync, then the optimizer's parameter all-gather (distributed optimizer) */
static void dp_sync(struct job *j, int step, float *gd, float *rd, uint64_t *h) {
  size_t rc = j->n + 20, total = rc * (size_t)j->DP;
  for (size_t i = 0; i < total; i++) j->host[i] = (float)(j->dp + 1) * g_val(step, j->stage, j->tp, i);
  CUDACHECK(cudaMemcpyAsync(gd, j->host, total * sizeof(float), cudaMemcpyHostToDevice, j->s));
  double tri = (double)j->DP * (j->DP + 1) / 2.0;
  if (j->dist_opt) {
    NCCLCHECK(ncclReduceScatter(gd, rd + (size_t)j->dp * rc, rc, ncclFloat32, ncclSum, j->dpc, j->s));
    calls_add(&j->cdp, "ReduceScatter", total * sizeof(float), CALLS_EAGER, 1);
    NCCLCHECK(ncclAllGather(rd + (size_t)j->dp * rc, rd, rc, ncclFloat32, j->dpc, j->s));
    calls_add(&j->cdp, "AllGather", total * sizeof(float), CALLS_EAGER, 1);
  } else {
    NCCLCHECK(ncclAllReduce(gd, rd, total, ncclFloat32, ncclSum, j->dpc, j->s));
    calls_add(&j->cdp, "AllReduce", total * sizeof(float), CALLS_EAGER, 1);
  }
  CUDACHECK(cudaMemcpyAsync(j->host, rd, total * sizeof(float), cudaMemcpyDeviceToHost, j->s));
  CUDACHECK(cudaStreamSynchronize(j->s));
  for (size_t i = 0; i < total; i++) {
    double want = tri * g_val(step, j->stage, j->tp, i);
    if (j->host[i] != want) app_mismatch(&A, "dp.grads", i, j->host[i], want);
  }
  *h = app_fnv(*h, j->host, total * sizeof(float));
}

/* _allreduce_word_embedding_grads: the first and the last stage sum the tied embedding's
 * gradient (each adds its own: stage + 1 + dp per element, so the sum is PP + 1 + 2 dp) */
static void tied_embedding(struct job *j, float *ed, uint64_t *h) {
  if (!j->embc) return;
  size_t n = j->n + 12;
  for (size_t i = 0; i < n; i++) j->host[i] = (float)(j->stage + 1 + j->dp) + (float)(i % 7);
  CUDACHECK(cudaMemcpyAsync(ed, j->host, n * sizeof(float), cudaMemcpyHostToDevice, j->s));
  NCCLCHECK(ncclAllReduce(ed, ed, n, ncclFloat32, ncclSum, j->embc, j->s));
  calls_add(&j->cemb, "AllReduce", n * sizeof(float), CALLS_EAGER, 1);
  CUDACHECK(cudaMemcpyAsync(j->host, ed, n * sizeof(float), cudaMemcpyDeviceToHost, j->s));
  CUDACHECK(cudaStreamSynchronize(j->s));
  for (size_t i = 0; i < n; i++) {
    double want = (double)(j->PP + 1 + 2 * j->dp) + 2.0 * (double)(i % 7);
    if (j->host[i] != want) app_mismatch(&A, "tied_embedding", i, j->host[i], want);
  }
  *h = app_fnv(*h, j->host, n * sizeof(float));
}

/* get_grad_norm_fp32: this rank's squared norm, summed over the model-parallel group */
static void grad_norm(struct job *j, int step, float *nd, uint64_t *h) {
  float local = (float)((A.rank + step) % 9 + 1);
  CUDACHECK(cudaMemcpyAsync(nd, &local, sizeof local, cudaMemcpyHostToDevice, j->s));
  NCCLCHECK(ncclAllReduce(nd, nd, 1, ncclFloat32, ncclSum, j->mpc, j->s));
  calls_add(&j->cmp, "AllReduce", sizeof(float), CALLS_EAGER, 1);
  float got;
  CUDACHECK(cudaMemcpyAsync(&got, nd, sizeof got, cudaMemcpyDeviceToHost, j->s));
  CUDACHECK(cudaStreamSynchronize(j->s));
  double want = 0;
  for (int st = 0; st < j->PP; st++)
    for (int t = 0; t < j->TP; t++) want += ((st * j->TP * j->DP + j->dp * j->TP + t) + step) % 9 + 1;
  if (got != want) app_mismatch(&A, "grad_norm", 0, got, want);
  *h = app_fnv(*h, &got, sizeof got);
}

/* checkpoint_and_decide_exit: "train time over the limit" (never, here) MAX-reduced over the
 * world; every rank sees the same decision */
static void exit_check(struct job *j, int *xd, uint64_t *h) {
  int done = 0;
  CUDACHECK(cudaMemcpyAsync(xd, &done, sizeof done, cudaMemcpyHostToDevice, j->s));
  NCCLCHECK(ncclAllReduce(xd, xd, 1, ncclInt32, ncclMax, j->world, j->s));
  calls_add(&j->cworld, "AllReduce", sizeof(int), CALLS_EAGER, 1);
  CUDACHECK(cudaMemcpyAsync(&done, xd, sizeof done, cudaMemcpyDeviceToHost, j->s));
  CUDACHECK(cudaStreamSynchronize(j->s));
  if (done != 0) app_mismatch(&A, "exit_check", 0, done, 0);
  *h = app_fnv(*h, &done, sizeof done);
}

int main(int argc, char **argv) {
  struct job j = {.a = &A, .dist_opt = 1};
  argc = take_own_options(&j, argc, argv);
  app_init(&A, "megatron_pp", argc, argv, usage);
  j.TP = A.tp;
  j.PP = A.pp;
  j.L = A.layers;
  if (A.world % (j.TP * j.PP) != 0) {
    fprintf(stderr, "megatron_pp: --tp %d x --pp %d does not divide world %d\n", j.TP, j.PP, A.world);
    return 2;
  }
  j.DP = A.world / (j.TP * j.PP);
  j.tp = A.rank % j.TP;
  j.dp = (A.rank / j.TP) % j.DP;
  j.stage = A.rank / (j.TP * j.DP);
  j.us = A.compute_us;
  j.world = app_world_comm(&A);
  NCCLCHECK(ncclCommSplit(j.world, j.stage * j.DP + j.dp, j.tp, &j.tpc, NULL));
  NCCLCHECK(ncclCommSplit(j.world, j.dp * j.TP + j.tp, j.stage, &j.ppc, NULL));
  NCCLCHECK(ncclCommSplit(j.world, j.stage * j.TP + j.tp, j.dp, &j.dpc, NULL));
  NCCLCHECK(ncclCommSplit(j.world, j.dp, A.rank, &j.mpc, NULL));
  calls_init(&j.ctp, "tp", j.stage * j.DP + j.dp, j.tpc);
  calls_init(&j.cpp, "pp", j.dp * j.TP + j.tp, j.ppc);
  calls_init(&j.cdp, "dp", j.stage * j.TP + j.tp, j.dpc);
  calls_init(&j.cmp, "mp", j.dp, j.mpc);
  if (j.exit_check) calls_init(&j.cworld, "world", 0, j.world);
  int emb = j.tied && j.PP > 1 && (j.stage == 0 || j.stage == j.PP - 1);
  if (j.tied && j.PP > 1) { /* default_embedding_ranks: first and last stage of each pipeline */
    NCCLCHECK(ncclCommSplit(j.world, emb ? j.dp * j.TP + j.tp : NCCL_SPLIT_NOCOLOR, j.stage, &j.embc, NULL));
    if (!emb) j.embc = NULL;
  }
  if (j.embc) calls_init(&j.cemb, "emb", j.dp * j.TP + j.tp, j.embc);
  if (j.stage_layers) {
    long l[1024];
    int nl = 0;
    for (const char *p = j.stage_layers; *p && nl < 1024;) {
      char *end;
      long v = strtol(p, &end, 10);
      if (end == p || v < 1 || v > 100000) break;
      l[nl++] = v;
      p = *end == ',' ? end + 1 : end;
      if (*end && *end != ',') break;
    }
    if (nl != j.PP) {
      fprintf(stderr, "megatron_pp: --stage-layers: expected %d positive counts, got '%s'\n", j.PP, j.stage_layers);
      return 2;
    }
    j.us = A.compute_us * l[j.stage];
  }
  if (j.cpp.size != j.PP || j.cpp.crank != j.stage)
    app_mismatch(&A, "pp.comm(size,rank)", 0, j.cpp.size * 1000 + j.cpp.crank, j.PP * 1000 + j.stage);
  CUDACHECK(cudaStreamCreateWithFlags(&j.s, cudaStreamNonBlocking));
  j.n = A.size / sizeof(float) > 64 ? A.size / sizeof(float) : 64;
  size_t bytes = j.n * sizeof(float), total = (j.n + 20) * (size_t)j.DP;
  int M = A.microbatches;
  j.act = calloc((size_t)M, sizeof *j.act);
  j.grad = calloc((size_t)M, sizeof *j.grad);
  for (int p = 0; p < 2; p++) j.lg[p] = calloc((size_t)j.L, sizeof *j.lg[p]);
  if (!j.act || !j.grad || !j.lg[0] || !j.lg[1]) app_die(__FILE__, __LINE__, "calloc", "out of memory");
  for (int m = 0; m < M; m++) {
    CUDACHECK(cudaMalloc((void **)&j.act[m], bytes));
    CUDACHECK(cudaMalloc((void **)&j.grad[m], bytes));
  }
  float *gd, *rd, *nd, *ed;
  int *xd;
  CUDACHECK(cudaMalloc((void **)&gd, total * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&rd, total * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&nd, sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&ed, (j.n + 12) * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&xd, sizeof(int)));
  CUDACHECK(cudaMallocHost((void **)&j.host, (total > j.n + 64 ? total : j.n + 64) * sizeof(float)));
  for (int p = 0; p < 2; p++)
    for (int l = 0; l < j.L; l++) capture_layer(&j, &j.lg[p][l], p);

  uint64_t h = APP_FNV_INIT;
  for (int step = 0; step < A.steps; step++) {
    one_f_one_b(&j, step, &h);
    dp_sync(&j, step, gd, rd, &h);
    tied_embedding(&j, ed, &h);
    if (!j.no_norm) grad_norm(&j, step, nd, &h);
    if (j.exit_check) exit_check(&j, xd, &h);
    if (j.pause_ms > 0) {
      /* the raw system call: the simulator models the job's nanosleep as host time
       * (tests/sim/vclock.c), this pause must take wall time only */
      struct timespec ts = {j.pause_ms / 1000, (j.pause_ms % 1000) * 1000000L};
      while (syscall(SYS_nanosleep, &ts, &ts) != 0) {
      }
    }
    if (A.verbose && A.rank == 0) printf("megatron_pp: step %d ok\n", step);
  }
  int rc = app_finish(&A);
  calls_print("megatron_pp", A.rank, &j.ctp);
  calls_print("megatron_pp", A.rank, &j.cpp);
  calls_print("megatron_pp", A.rank, &j.cdp);
  calls_print("megatron_pp", A.rank, &j.cmp);
  if (j.embc) calls_print("megatron_pp", A.rank, &j.cemb);
  if (j.exit_check) calls_print("megatron_pp", A.rank, &j.cworld);
  if (rc == 0)
    printf("result megatron_pp rank=%d tp=%d dp=%d stage=%d checksum=%016llx\n", A.rank, j.tp, j.dp, j.stage,
           (unsigned long long)h);
  if (rc == 0 && A.rank == 0)
    printf("summary megatron_pp world=%d tp=%d pp=%d dp=%d layers=%d microbatches=%d steps=%d PASS\n", A.world, j.TP,
           j.PP, j.DP, j.L, M, A.steps);

  for (int p = 0; p < 2; p++) {
    for (int l = 0; l < j.L; l++) {
      struct layer_graph *lg = &j.lg[p][l];
      CUDACHECK(cudaGraphExecDestroy(lg->x));
      CUDACHECK(cudaGraphDestroy(lg->g));
      CUDACHECK(cudaFree(lg->p1));
      CUDACHECK(cudaFree(lg->o1));
      CUDACHECK(cudaFree(lg->p2));
      CUDACHECK(cudaFree(lg->o2));
    }
    free(j.lg[p]);
  }
  for (int m = 0; m < M; m++) {
    CUDACHECK(cudaFree(j.act[m]));
    CUDACHECK(cudaFree(j.grad[m]));
  }
  free(j.act);
  free(j.grad);
  CUDACHECK(cudaFree(gd));
  CUDACHECK(cudaFree(rd));
  CUDACHECK(cudaFree(nd));
  CUDACHECK(cudaFree(ed));
  CUDACHECK(cudaFree(xd));
  CUDACHECK(cudaFreeHost(j.host));
  CUDACHECK(cudaStreamDestroy(j.s));
  if (j.embc) NCCLCHECK(ncclCommDestroy(j.embc));
  NCCLCHECK(ncclCommDestroy(j.mpc));
  NCCLCHECK(ncclCommDestroy(j.dpc));
  NCCLCHECK(ncclCommDestroy(j.ppc));
  NCCLCHECK(ncclCommDestroy(j.tpc));
  NCCLCHECK(ncclCommDestroy(j.world));
  return rc;
}
