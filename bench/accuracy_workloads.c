/* bench/accuracy_workloads.c: the in-process accuracy driver's workloads (the driver's core:
 * bench/accuracy_driver.c), each what the test app of the same name in tests/apps runs as
 * bench/accuracy.py runs it as processes (app_cmd): its communicators, the stream each uses,
 * its compute and its collectives in the app's order. Copies between host and GPU (tens of us
 * against ms of compute) are left out. */
#include <stdlib.h>
#include <string.h>

#include "accuracy_driver.h"

/* dp: one communicator of all ranks; per step 3 buckets (256 KiB, /8, /64), each after 2 ms
 * of compute (tests/apps/dp_train --size 256K --compute-us 2000) */
static void run_dp(void) { /* hetero too: the core makes simhost2's GPUs the older model */
  int *m = malloc((size_t)W.n * sizeof *m);
  for (int r = 0; r < W.n; r++) m[r] = r;
  struct comm *c = comm_new(m, W.n, 0);
  free(m);
  for (W.step = 0; running(); W.step++)
    for (int b = 0; b < 3; b++) {
      for (int r = 0; r < W.n; r++) compute(r, COMPUTE_US);
      collective(c, SN_COST_ALLREDUCE, 262144.0 / (1 << (3 * b)));
    }
}

/* 3d: tensor parallel 2 (inside a host), pipeline pp (2 at 8 ranks, else 4), data parallel
 * the rest; rank = (d x pp + s) x 2 + t. Per step, tests/apps/train3d's 1F1B over M = 4
 * microbatches, Megatron's (bench/accuracy_pipeline.c): each microbatch's forward (1 ms) and
 * backward (2 ms) end in a TP AllReduce of the stage pair, its activations and gradients go as
 * grouped 64 KiB Sends and Recvs on the PP communicator (the ranks of one DP and TP index, one
 * a stage), each meeting its peer's op, so a stage's fill and drain are its neighbours' time;
 * then a DP AllReduce of its gradients (the ranks of one stage and TP index) and a world
 * AllReduce (the gradient norm, which train3d leaves out), which every stage reaches at its
 * own place in the schedule. All on one stream a rank. Judged as the report judges it (the
 * schedule, the peer waits). */
static void run_3d(void) {
  int tp = 2, pp = W.n >= 64 ? 4 : 2, dp = W.n / (tp * pp), M = 4;
  if (dp < 1) return;
  struct comm **tpc = malloc((size_t)(dp * pp) * sizeof *tpc), **dpc = malloc((size_t)(pp * tp) * sizeof *dpc);
  struct comm **ppc = malloc((size_t)(dp * tp) * sizeof *ppc);
  int *m = malloc((size_t)W.n * sizeof *m);
  for (int d = 0; d < dp; d++) /* the communicators' ids in the order the faults name them */
    for (int s = 0; s < pp; s++) {
      m[0] = (d * pp + s) * tp;
      m[1] = m[0] + 1;
      tpc[s * dp + d] = comm_new(m, 2, 0);
    }
  for (int s = 0; s < pp; s++)
    for (int t = 0; t < tp; t++) {
      for (int d = 0; d < dp; d++) m[d] = (d * pp + s) * tp + t;
      dpc[s * tp + t] = comm_new(m, dp, 0);
    }
  for (int r = 0; r < W.n; r++) m[r] = r;
  struct comm *world = comm_new(m, W.n, 0);
  for (int d = 0; d < dp; d++) /* after the others: the hang faults act on the culprit's TP pair */
    for (int t = 0; t < tp; t++) {
      for (int s = 0; s < pp; s++) m[s] = (d * pp + s) * tp + t;
      ppc[d * tp + t] = comm_new(m, pp, 0);
    }
  struct pipeline pl = {pp, dp, M, 1000, 2000, 65536, tpc, ppc};
  judge_p2p();
  for (W.step = 0; running(); W.step++) {
    pipeline_step(&pl);
    for (int i = 0; i < pp * tp && dp > 1; i++) collective(dpc[i], SN_COST_ALLREDUCE, 262144);
    collective(world, SN_COST_ALLREDUCE, 8);
  }
  free(m);
  free(tpc);
  free(dpc);
  free(ppc);
}

/* moe: expert parallel over groups of 8 ranks (all ranks at 8), each rank one expert. Per
 * step, 2 layers: attention (1 ms), dispatch AlltoAll, the experts (2 ms x the tokens routed
 * to the rank's expert, which follow the data: one hot expert per layer and step, drawn from
 * the seed, 1.5-3x the mean load), combine AlltoAll; then a world AllReduce of the dense
 * gradients. */
static void run_moe(void) {
  int ep = W.n < 8 ? W.n : 8, ng = W.n / ep;
  struct comm **g = malloc((size_t)ng * sizeof *g);
  int *m = malloc((size_t)W.n * sizeof *m);
  for (int i = 0; i < ng; i++) {
    for (int k = 0; k < ep; k++) m[k] = i * ep + k;
    g[i] = comm_new(m, ep, 0);
  }
  for (int r = 0; r < W.n; r++) m[r] = r;
  struct comm *world = comm_new(m, W.n, 0);
  for (W.step = 0; running(); W.step++) {
    for (int layer = 0; layer < 2; layer++)
      for (int i = 0; i < ng; i++) {
        struct comm *c = g[i];
        for (int k = 0; k < ep; k++) compute(c->m[k], 1000);
        collective(c, SN_COST_PAIRS, 65536);
        uint64_t key = ((uint64_t)W.step << 20) ^ ((uint64_t)layer << 18) ^ (uint64_t)i ^ 0x5a5a000000ull;
        int hot = (int)(unif(key) * ep);
        double hf = 1.5 + 1.5 * unif(key ^ 0xabcdef);
        for (int k = 0; k < ep; k++) {
          double load = k == hot ? hf : (ep - hf) / (ep - 1);
          compute(c->m[k], 2000 * load);
        }
        collective(c, SN_COST_PAIRS, 65536);
      }
    collective(world, SN_COST_ALLREDUCE, 262144);
  }
  free(m);
  free(g);
}

/* fsdp: one world communicator on a second stream (stream 1; compute on stream 0), 4 layers of
 * 256 KiB (even layers bf16 up to 64 ranks, else fp32: the shard is full / N elements). Per
 * step (tests/apps/fsdp --prefetch 1): the forward's AllGathers run back to back on stream 1
 * (layer l+1's is issued before layer l computes), layer l's 2 ms forward compute on stream 0
 * waits for its AllGather; the host waits for stream 0; the backward computes layer 3..0 on
 * stream 0, each layer's ReduceScatter on stream 1 waiting for its compute; the host waits
 * for both streams. */
static void run_fsdp(void) {
  enum { L = 4 };
  int *m = malloc((size_t)W.n * sizeof *m);
  double *ev = malloc((size_t)W.n * L * sizeof *ev), shard[L];
  if (!m || !ev) exit(2);
  for (int r = 0; r < W.n; r++) m[r] = r;
  struct comm *c = comm_new(m, W.n, 1);
  for (int l = 0; l < L; l++) {
    double esize = l % 2 == 0 && W.n <= 64 ? 2 : 4, full = (double)(262144 / (int)esize / W.n * W.n);
    shard[l] = (full > 0 ? full : W.n) / W.n * esize;
  }
  for (W.step = 0; running(); W.step++) {
    for (int l = 0; l < L; l++) {
      collective(c, SN_COST_RING, shard[l]); /* AllGather */
      for (int r = 0; r < W.n; r++) ev[(size_t)r * L + (size_t)l] = *stream_t(1, r);
    }
    for (int r = 0; r < W.n; r++) {
      for (int l = 0; l < L; l++) {
        double *t0 = stream_t(0, r);
        if (*t0 < ev[(size_t)r * L + (size_t)l]) *t0 = ev[(size_t)r * L + (size_t)l]; /* waits for layer l */
        compute_on(0, r, COMPUTE_US);
      }
      sync_streams(r, 0, 0);
    }
    for (int l = L - 1; l >= 0; l--) {
      for (int r = 0; r < W.n; r++) {
        compute_on(0, r, COMPUTE_US);
        double *t1 = stream_t(1, r);
        if (*t1 < *stream_t(0, r)) *t1 = *stream_t(0, r); /* its gradients ready */
      }
      collective(c, SN_COST_RING, shard[l]); /* ReduceScatter */
    }
    for (int r = 0; r < W.n; r++) sync_streams(r, 0, 1);
  }
  free(m);
  free(ev);
}

/* accum: one world communicator; every step 500 us of compute, every 4th step a 256 KiB
 * AllReduce of the accumulated gradients (tests/apps/accum --accum 4 --compute-us 500;
 * --steps counts compute steps) */
static void run_accum(void) {
  int *m = malloc((size_t)W.n * sizeof *m);
  if (!m) exit(2);
  for (int r = 0; r < W.n; r++) m[r] = r;
  struct comm *c = comm_new(m, W.n, 0);
  free(m);
  for (W.step = 0; running(); W.step++) {
    for (int r = 0; r < W.n; r++) compute(r, 500);
    if ((W.step + 1) % 4 == 0) collective(c, SN_COST_ALLREDUCE, 262144);
  }
}

/* multicomm: 4 world communicators, communicator k on stream k + 1; per step, on every stream,
 * 2 ms of compute then a 256 KiB AllReduce, all four in flight at once; then the host waits
 * for the four streams (tests/apps/multicomm --comms 4 --compute-us 2000) */
static void run_multicomm(void) {
  enum { K = 4 };
  int *m = malloc((size_t)W.n * sizeof *m);
  if (!m) exit(2);
  for (int r = 0; r < W.n; r++) m[r] = r;
  struct comm *c[K];
  for (int k = 0; k < K; k++) c[k] = comm_new(m, W.n, k + 1);
  free(m);
  for (W.step = 0; running(); W.step++) {
    for (int k = 0; k < K; k++) {
      for (int r = 0; r < W.n; r++) compute_on(k + 1, r, COMPUTE_US);
      collective(c[k], SN_COST_ALLREDUCE, 262144);
    }
    for (int r = 0; r < W.n; r++) sync_streams(r, 1, K);
  }
}

/* pp1f1b, pp1f1b_x: Megatron's tensor x pipeline x data parallel step (tests/apps/megatron_pp):
 * TP 2, PP 4 (tensor innermost, then data, pipeline outermost: rank = (s x dp + d) x 2 + t,
 * megatron/core/parallel_state.py:617, order "tp-cp-ep-dp-pp"), 1F1B over M = 4 microbatches as
 * tests/apps/megatron_pp runs it (each pass's TP AllReduce, 64 KiB Sends and Recvs between
 * stages meeting their peers'), then the data-parallel
 * gradient AllReduce of each (stage, TP index). pp1f1b_x adds the collectives that cross the
 * stages: the tied-embedding AllReduce of the first and the last stage of each (replica, TP
 * index) (megatron/core/distributed/finalize_model_grads.py:676 _allreduce_word_embedding_grads),
 * then the grad-norm AllReduce over each replica's model-parallel group, its TP x PP ranks
 * (megatron/core/optimizer/clip_grads.py:132-134); pp1f1b has neither (--clip-grad 0, untied
 * embeddings: megatron/core/optimizer/optimizer.py:830). All on one stream a rank. The step's
 * passes and grouped Sends and Recvs are Megatron's 1F1B (bench/accuracy_pipeline.c), judged
 * as the report judges them (the schedule, the peer waits). */
static void run_pp_common(bool cross) {
  int tp = 2, pp = 4, dp = W.n / (tp * pp), M = 4;
  if (dp < 1) return;
#define PP_RANK(s, d, t) (((s)*dp + (d)) * tp + (t))
  struct comm **tpc = malloc((size_t)(dp * pp) * sizeof *tpc), **dpc = malloc((size_t)(pp * tp) * sizeof *dpc);
  struct comm **ppc = malloc((size_t)(dp * tp) * sizeof *ppc), **emb = malloc((size_t)(dp * tp) * sizeof *emb);
  struct comm **mpc = malloc((size_t)dp * sizeof *mpc);
  int *m = malloc((size_t)W.n * sizeof *m);
  for (int s = 0; s < pp; s++)
    for (int d = 0; d < dp; d++) {
      for (int t = 0; t < tp; t++) m[t] = PP_RANK(s, d, t);
      tpc[s * dp + d] = comm_new(m, tp, 0);
    }
  for (int s = 0; s < pp; s++)
    for (int t = 0; t < tp; t++) {
      for (int d = 0; d < dp; d++) m[d] = PP_RANK(s, d, t);
      dpc[s * tp + t] = comm_new(m, dp, 0);
    }
  for (int d = 0; cross && d < dp; d++) {
    for (int t = 0; t < tp; t++) {
      m[0] = PP_RANK(0, d, t);
      m[1] = PP_RANK(pp - 1, d, t);
      emb[d * tp + t] = comm_new(m, 2, 0);
    }
    for (int s = 0; s < pp; s++)
      for (int t = 0; t < tp; t++) m[s * tp + t] = PP_RANK(s, d, t);
    mpc[d] = comm_new(m, pp * tp, 0);
  }
  for (int d = 0; d < dp; d++)
    for (int t = 0; t < tp; t++) {
      for (int s = 0; s < pp; s++) m[s] = PP_RANK(s, d, t);
      ppc[d * tp + t] = comm_new(m, pp, 0);
    }
  struct pipeline pl = {pp, dp, M, 1000, 2000, 65536, tpc, ppc};
  judge_p2p();
  for (W.step = 0; running(); W.step++) {
    pipeline_step(&pl);
    for (int i = 0; i < pp * tp && dp > 1; i++) collective(dpc[i], SN_COST_ALLREDUCE, 262144);
    for (int d = 0; cross && d < dp; d++) {
      for (int t = 0; t < tp; t++) collective(emb[d * tp + t], SN_COST_ALLREDUCE, 65536);
      collective(mpc[d], SN_COST_ALLREDUCE, 4);
    }
  }
#undef PP_RANK
  free(m);
  free(tpc);
  free(dpc);
  free(ppc);
  free(emb);
  free(mpc);
}
static void run_pp1f1b(void) { run_pp_common(false); }
static void run_pp1f1b_x(void) { run_pp_common(true); }

int run_workload(const char *name) {
  static const struct {
    const char *name;
    void (*run)(void);
  } wl[] = {{"dp", run_dp}, {"hetero", run_dp}, {"3d", run_3d}, {"moe", run_moe}, {"fsdp", run_fsdp}, {"accum", run_accum}, {"multicomm", run_multicomm}, {"pp1f1b", run_pp1f1b}, {"pp1f1b_x", run_pp1f1b_x}};
  for (size_t i = 0; i < sizeof wl / sizeof wl[0]; i++)
    if (!strcmp(name, wl[i].name)) {
      wl[i].run();
      return 0;
    }
  return -1;
}
