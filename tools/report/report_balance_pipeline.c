/* tools/report/report_balance_pipeline.c: the balance section's pipeline model: the stages in
 * their Send/Recv chain order, microbatches per step, per stage the time of one layer, the
 * layer counts that balance the stages, the step they predict (flushed or not, by the
 * schedule: include/collscope/schedule.h) and that gain's interval across steps
 * (docs/balance.md "Pipelines"). */
#include "report_balance_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "xalloc.h"

/* A pipeline's step, C_s stage s's compute per step (all its microbatches; its compute gaps
 * only: a Recv's wait for its Send is the Recv's duration, the bubble, not the stage's work):
 *  - flushed (the gradients come back to the first stage, whose next forward waits for its
 *    last backward, or a collective over several stages ends every step, as Megatron's
 *    grad-norm and tied-embedding AllReduces do after
 *    forward_backward_pipelining_without_interleaving,
 *    megatron/core/pipeline_parallel/schedules.py:2276-2279 the warm-up, :2416-2450 the steady
 *    state and the cool-down): the slowest stage's microbatch paces the M - 1 microbatches of
 *    the steady state and every stage's microbatch passes once through the fill and the drain:
 *    step = (M - 1) x max_s(t_s) + sum_s(t_s) + the transfers, t_s = C_s / M;
 *  - not flushed (forward only): the next step's fill runs under the previous one's drain, and
 *    the slowest stage alone paces the step: step = max_s(C_s) + the transfers (M = 0 here).
 * The gain of counts that take the slowest stage's compute from cmax to bal and the stages'
 * total from sum_now to sum_bal. */
static double pp_gain(int M, double cmax, double bal, double sum_now, double sum_bal) {
  if (M <= 0) return cmax - bal;
  return ((double)(M - 1) * (cmax - bal) + (sum_now - sum_bal)) / (double)M;
}

/* Student's t at 97.5 % for df 1..30; beyond, the normal's */
double bal_t975(size_t df) {
  static const double t[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                               2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                               2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  return df == 0 ? INFINITY : df <= 30 ? t[df - 1]
                                       : 1.960;
}

/* the predicted gain step by step (each step's stage computes through the same counts): its
 * 95 % interval over the last steps every stage holds; NaN with fewer than two */
static void pp_gain_interval(struct report_balance *b) {
  const struct bal_view *v = &b->pp;
  size_t K = BAL_STEPS;
  for (size_t i = 0; i < v->n; i++)
    if (v->r[i].nstep < K) K = v->r[i].nstep;
  b->pp_gain_steps = K;
  b->pp_gain_lo = b->pp_gain_hi = NAN;
  if (K < 2) return;
  double sum = 0, sq = 0;
  for (size_t k = 0; k < K; k++) {
    double cmax = 0, bal = 0, sn = 0, sb = 0;
    for (size_t i = 0; i < v->n; i++) {
      const struct bal_rank *r = &v->r[i];
      const struct bal_stage *st = &b->stages[i];
      double c = r->step_c[r->nstep - K + k], c2 = c * (double)st->layers / (double)st->layers_now;
      if (c > cmax) cmax = c;
      if (c2 > bal) bal = c2;
      sn += c;
      sb += c2;
    }
    double g = pp_gain(b->flushed ? b->microbatches : 0, cmax, bal, sn, sb);
    sum += g;
    sq += g * g;
  }
  double mean = sum / (double)K, var = (sq - (double)K * mean * mean) / (double)(K - 1);
  double half = bal_t975(K - 1) * sqrt(var > 0 ? var / (double)K : 0);
  b->pp_gain_lo = mean - half;
  b->pp_gain_hi = mean + half;
}

/* pipeline: per stage the time of one layer; the integer counts (at least 1 each, today's
 * total) that minimise the slowest stage: proportional counts rounded down, then one layer
 * at a time to the stage that stays fastest with it */
static void pp_model(struct report_balance *b, const double *layers, size_t nlayers) {
  struct bal_view *v = &b->pp;
  b->nstages = v->n;
  b->stages = xcalloc(v->n ? v->n : 1, sizeof *b->stages);
  double cmax = 0, step_max = -1;
  for (size_t i = 0; i < v->n; i++) {
    const struct bal_rank *r = &v->r[i];
    b->stages[i] = (struct bal_stage){(int)i, r->rank, r->host, r->gpu, r->compute_us, -1, 0, 0};
    if (r->compute_us > cmax) cmax = r->compute_us;
    if (r->step_us > step_max) step_max = r->step_us;
  }
  v->step_now = step_max;
  v->ok = step_max > 0;
  b->layers_given = layers != NULL;
  if (!layers) return;
  if (nlayers != v->n) {
    snprintf(b->layers_note, sizeof b->layers_note, "--layers gives %zu stages, the pipeline has %zu", nlayers, v->n);
    return;
  }
  long total = 0;
  double inv = 0;
  for (size_t i = 0; i < v->n; i++) {
    struct bal_stage *s = &b->stages[i];
    s->layers_now = (long)layers[i];
    total += s->layers_now;
    s->per_layer_us = s->compute_us / (double)s->layers_now;
    v->r[i].judge_us = s->per_layer_us; /* a stage is slow by its layer's time, not its layer count */
    if (!(s->per_layer_us > 0)) {
      snprintf(b->layers_note, sizeof b->layers_note, "stage %zu has no compute between its transfers", i);
      for (size_t k = 0; k < v->n; k++) v->r[k].judge_us = v->r[k].compute_us;
      return;
    }
    inv += 1.0 / s->per_layer_us;
  }
  long given = 0;
  for (size_t i = 0; i < v->n; i++) {
    struct bal_stage *s = &b->stages[i];
    double share = (double)total * (1.0 / s->per_layer_us) / inv;
    s->layers = share < 1 ? 1 : (long)floor(share);
    given += s->layers;
  }
  while (given > total) { /* the minimum of 1 each overshot: take from the stage that gains most */
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < v->n; i++)
      if (b->stages[i].layers > 1 &&
          (best == SIZE_MAX || b->stages[i].layers * b->stages[i].per_layer_us >
                                   b->stages[best].layers * b->stages[best].per_layer_us))
        best = i;
    if (best == SIZE_MAX) break;
    b->stages[best].layers--;
    given--;
  }
  for (; given < total; given++) {
    size_t best = 0;
    for (size_t i = 1; i < v->n; i++)
      if ((double)(b->stages[i].layers + 1) * b->stages[i].per_layer_us <
          (double)(b->stages[best].layers + 1) * b->stages[best].per_layer_us)
        best = i;
    b->stages[best].layers++;
  }
  double bal = 0, sum_now = 0, sum_bal = 0;
  for (size_t i = 0; i < v->n; i++) {
    double t = (double)b->stages[i].layers * b->stages[i].per_layer_us;
    if (t > bal) bal = t;
    sum_now += b->stages[i].compute_us;
    sum_bal += t;
  }
  b->layers_ok = given == total && v->ok;
  if (!b->layers_ok) return;
  v->compute_bal = bal;
  b->pp_step_bal = step_max - pp_gain(b->flushed ? b->microbatches : 0, cmax, bal, sum_now, sum_bal);
  b->pp_gain_pct = 100.0 * (step_max - b->pp_step_bal) / step_max;
  pp_gain_interval(b);
  v->step_bal = b->pp_step_bal;
  v->gain_pct = b->pp_gain_pct;
}

/* the pipeline's ranks in their stage order (the Send/Recv chain's), when the schedule knows
 * every one; else comm rank order */
static void stage_order(struct bal_view *v, const struct cs_sched *sched) {
  for (size_t i = 0; i < v->n; i++)
    if (cs_sched_stage(sched, v->r[i].rank) < 0) return;
  for (size_t i = 1; i < v->n; i++) {
    struct bal_rank t = v->r[i];
    size_t j = i;
    while (j > 0 && cs_sched_stage(sched, v->r[j - 1].rank) > cs_sched_stage(sched, t.rank)) {
      v->r[j] = v->r[j - 1];
      j--;
    }
    v->r[j] = t;
  }
}

/* microbatches per step: the first stage's Sends per rank and step (its forwards), 0 unknown */
static int microbatches(const struct bal_view *v, const struct cs_sched *sched) {
  size_t ranks;
  uint64_t sends, recvs, fwd;
  if (!v->n || !cs_sched_stage_counts(sched, 0, &ranks, &sends, &recvs, &fwd) || !ranks) return 0;
  uint64_t steps = (uint64_t)v->r[0].steps + 1, per = (uint64_t)ranks * steps;
  return sends % per == 0 && sends / per <= 1u << 20 ? (int)(sends / per) : 0;
}

void bal_pipeline_model(struct report_balance *b, const struct cs_sched *sched, const double *layers,
                        size_t nlayers) {
  stage_order(&b->pp, sched);
  b->microbatches = microbatches(&b->pp, sched);
  /* flushed: a collective over several stages ends the step, or the gradients come back to
   * the first stage (its Recvs), whose next forward then waits for the drain's last backward */
  size_t ranks;
  uint64_t sends, recvs, fwd;
  bool grads_back = cs_sched_stage_counts(sched, 0, &ranks, &sends, &recvs, &fwd) && recvs > 0;
  b->flushed = cs_sched_comms(sched, CS_SCHED_CROSS_STAGE, NULL, 0) > 0 || grads_back;
  pp_model(b, layers, nlayers);
}
