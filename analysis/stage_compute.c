/* analysis/stage_compute.c: a pipeline stage's rank slower than its stage peers by its own compute
 * (the rule in include/collscope/schedule.h, docs/detection.md "Pipelines"): per instance of a
 * collective, each member's compute gap above or below the others'; then a sign test per member
 * of the stage's collectives, its verdict, and the compute straggler its pipeline copy's waits
 * can be moved to. The instances come from the full recording (cs_sched_instance) or, for
 * members summed from a summary recording's lines, from their last ops
 * (cs_sched_summed_instance). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schedule_internal.h"

static int cmp_gap(const void *pa, const void *pb) {
  const struct sgap *a = pa, *b = pb;
  return a->gap < b->gap ? -1 : a->gap > b->gap;
}

/* the median of the sorted g[0..k-1]'s gaps without g[skip]; k >= 2 */
static double median_without(const struct sgap *g, size_t k, size_t skip) {
  size_t n = k - 1, a = (n - 1) / 2, b = n / 2;
  return 0.5 * (g[a < skip ? a : a + 1].gap + g[b < skip ? b : b + 1].gap);
}

void cs_sched_stage_instance(struct sgap *g, size_t k) {
  qsort(g, k, sizeof *g, cmp_gap);
  for (size_t i = 0; i < k; i++) {
    double peers = median_without(g, k, i);
    if (g[i].gap == peers) continue; /* a tie: no sign */
    struct smem *m = g[i].m;
    m->above += g[i].gap > peers;
    m->below += g[i].gap < peers;
    m->wsum += g[i].gap > peers ? peers : -peers;
    m->w2sum += peers * peers;
  }
}

int cs_sched_summed_instance(struct cs_sched *s, uint64_t comm, const struct cs_sched_op *m, size_t n) {
  if (!s || s->oom) return -1;
  if (n > s->capscr) {
    struct sgap *g = realloc(s->scr, n * sizeof *g);
    if (!g) return s->oom = true, -1;
    s->scr = g, s->capscr = n;
  }
  size_t ng = 0; /* the summed members with a compute gap here */
  for (size_t k = 0; k < n; k++) {
    if (m[k].comm_rank < 0 || m[k].p2p || !(m[k].gap_us >= 0 && m[k].gap_us < 1e15)) continue;
    struct smem *e = cs_sched_find_mem(s, comm, m[k].comm_rank);
    if (!e || e->rank != m[k].rank) continue;
    s->scr[ng++] = (struct sgap){m[k].gap_us, e};
  }
  if (ng >= 2) cs_sched_stage_instance(s->scr, ng);
  return 0;
}

/* the weighted sign test's p bound: with no difference between the ranks each instance's sign is
 * +-1 with chance 1/2 whatever its weight, and Hoeffding's inequality bounds the chance of a sum
 * T of such signs times weights w_t: P(T >= t) <= exp(-t^2 / (2 sum w_t^2)) */
static double sign_p(const struct smem *m) {
  if (m->wsum <= 0 || m->w2sum <= 0) return 1;
  return exp(-m->wsum * m->wsum / (2 * m->w2sum));
}

static bool named_already(const struct cs_sched *s, int rank) {
  for (size_t i = 0; i < s->nv; i++)
    if (s->v[i].kept && s->v[i].rank == rank) return true;
  return false;
}

static bool flagged(const struct cs_det_result *r, int rank) {
  for (size_t i = 0; i < r->nstragglers; i++)
    if (r->stragglers[i].rank == rank) return true;
  return false;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* the median of the mean gaps of comm's members other than comm_rank; -1 none (or out of
 * memory) */
static double peers_gap(const struct cs_sched *s, const struct scomm *c, int comm_rank) {
  double *v = malloc((c->nmem ? c->nmem : 1) * sizeof *v), med = -1;
  size_t n = 0;
  if (!v) return -1;
  for (int r = 0; (size_t)r < c->nmem; r++) {
    const struct smem *e = cs_sched_find_mem(s, c->comm, r);
    if (e && r != comm_rank && e->gap_n) v[n++] = e->gap_sum / (double)e->gap_n;
  }
  if (n) {
    qsort(v, n, sizeof *v, cmp_double);
    med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  free(v);
  return med;
}

static struct scomm *stage_comm(const struct cs_sched *s, const struct smem *m) {
  struct scomm *c;
  HASH_FIND(hh, s->comms, &m->k.comm, sizeof m->k.comm, c);
  return c && c->kind == CS_SCHED_STAGE && c->nmem >= 2 && m->rank >= 0 && m->above + m->below > 0 ? c : NULL;
}

/* the verdict, and the straggler when r has none of the rank; false out of memory */
static bool name(struct cs_sched *s, struct cs_det_result *r, struct smem *m, const struct scomm *c, double gap,
                 double peers, double p) {
  int stage = cs_sched_rank_stage(s, m->rank);
  cs_sched_verdict_add(s, &(struct cs_sched_verdict){m->k.comm, m->rank, stage, gap, peers, true, true,
                                                     m->above + m->below, m->above, p});
  if (flagged(r, m->rank)) return true;
  struct cs_det_straggler *ns = realloc(r->stragglers, (r->nstragglers + 1) * sizeof *ns);
  if (!ns) return false;
  r->stragglers = ns;
  ns[r->nstragglers++] = (struct cs_det_straggler){.comm = m->k.comm,
                                                   .comm_size = (int)c->nmem,
                                                   .comm_rank = m->k.comm_rank,
                                                   .rank = m->rank,
                                                   .host = m->host,
                                                   .kind = CS_DET_COMPUTE,
                                                   .rule = CS_DET_RULE_STAGE,
                                                   .window_instances = m->above + m->below,
                                                   .median_dur_us = -1,
                                                   .gap_us = gap,
                                                   .peer_gap_us = peers,
                                                   .first_flag_instance = 1,
                                                   .first_flag_seq = m->first_seq,
                                                   .last_flag_seq = c->last_seq,
                                                   .first_flag_ns = m->first_ns,
                                                   /* its own last op's end, when it is the communicator's last instance */
                                                   .last_flag_ns = m->last_seq == c->last_seq ? m->last_ns : 0,
                                                   .comm_last_seq = c->last_seq};
  return true;
}

size_t cs_sched_stage_compute(struct cs_sched *s, struct cs_det_result *r) {
  if (!r || cs_sched_stages(s) == 0) return 0;
  size_t judged = 0, named = 0;
  struct smem *m, *mt;
  HASH_ITER(hh, s->mem, m, mt)
  judged += stage_comm(s, m) != NULL;
  HASH_ITER(hh, s->mem, m, mt) {
    const struct scomm *c = stage_comm(s, m);
    if (!c || !m->gap_n) continue;
    double p = sign_p(m);
    if (p >= CS_SCHED_STEPS_ALPHA / (double)judged) continue;
    double gap = m->gap_sum / (double)m->gap_n, peers = peers_gap(s, c, m->k.comm_rank);
    if (peers <= 0 || gap <= (1 + CS_SCHED_STAGE_EXCESS) * peers || named_already(s, m->rank)) continue;
    if (!name(s, r, m, c, gap, peers, p)) break;
    named++;
  }
  return named;
}
