/* analysis/online_sched.c: the online exchange judged against a pipeline's schedule
 * (include/collscope/online_sched.h): a rank's own view of whether it is a pipeline's stage,
 * and the lateness that schedule explains, set aside before the rank judges itself
 * (analysis/online_stragglers.c calls cs_onl_sched_adjust for each instance it windows).
 *
 * The report's rule (docs/detection.md "Pipelines"): at a collective whose members sit in
 * several stages, the drain's stage order decides who is last (1F1B ends on the first
 * stage), so a rank last there stays a straggler only when its compute gap exceeds its stage
 * peers' by CS_SCHED_STAGE_EXCESS; at its own stage's collective a slow GPU's pipeline copy
 * arrives as late as the slow GPU, which the compute gap tells apart too. A rank of the
 * exchange sees neither its communicators' members (NCCL exposes none, the wire carries no
 * stage) nor its stage peers' gaps, but it sees its peers' mean gap at the instance
 * (e->pgap). So a pipeline's rank treats each of its collectives alike: arriving late there
 * counts against it only when its own gap is more than CS_SCHED_STAGE_EXCESS above its
 * peers' mean. Lateness it waited for (the schedule at a cross-stage collective, an upstream
 * stage at its Recvs) leaves its gap where its peers' is. */
#include "collscope/online_sched.h"

#include "collscope/schedule.h"
#include "online_internal.h"

static bool neighbour(int size, int rank, int peer) {
  if (size < 2 || rank < 0 || rank >= size || peer < 0 || peer >= size) return false;
  return peer == (rank + 1) % size || peer == (rank + size - 1) % size;
}

void cs_online_pipe_note(struct cs_online_pipe *p, uint64_t comm, int comm_size, int comm_rank, bool p2p, int peer) {
  unsigned i, free_at = CS_ONLINE_PIPE_COMMS;
  for (i = 0; i < CS_ONLINE_PIPE_COMMS; i++) {
    if (p->c[i].used && p->c[i].comm == comm) break;
    if (!p->c[i].used && free_at == CS_ONLINE_PIPE_COMMS) free_at = i;
  }
  if (i == CS_ONLINE_PIPE_COMMS) {
    if (!p2p) return; /* a communicator never seen with Send/Recv: not a pipeline */
    if (free_at == CS_ONLINE_PIPE_COMMS) {
      p->untracked++;
      return;
    }
    i = free_at;
    p->c[i].used = true;
    p->c[i].comm = comm;
    p->c[i].chain = true;
    p->c[i].rank = comm_rank;
  }
  if (p2p) {
    p->c[i].p2p = true;
    if (!neighbour(comm_size, comm_rank, peer)) p->c[i].chain = false;
  } else {
    p->c[i].coll = true;
  }
  bool member = false;
  int stage = -1;
  for (unsigned k = 0; k < CS_ONLINE_PIPE_COMMS; k++)
    if (p->c[k].used && p->c[k].p2p && !p->c[k].coll && p->c[k].chain) {
      if (!member) stage = p->c[k].rank;
      member = true;
    }
  atomic_store_explicit(&p->stage, stage, memory_order_relaxed);
  atomic_store_explicit(&p->member, member, memory_order_relaxed);
}

void cs_online_rank_set_pipeline(struct cs_online_rank *st, bool member) { st->pipeline = member; }
void cs_online_rank_set_stage(struct cs_online_rank *st, int stage) { st->stage = stage; }

/* The report's stage comparison (analysis/stage_compute.c), for this rank alone: per instance its
 * gap above (+1) or below (-1) the median of the others' (cs_sched_stage_instance), weighted by
 * that median; named once the weighted sign test's Hoeffding bound is below
 * CS_SCHED_STEPS_ALPHA / (the ranks judged: this job's ranks, each in one stage's communicator
 * as the report counts them) and its mean gap is more than CS_SCHED_STAGE_EXCESS above the
 * median of its peers' mean gaps. */
bool cs_onl_stage_instance(struct cs_online_rank *st, struct self_win *w, const struct onl_exact *x) {
  struct onl_stage *g = &w->stg;
  if (!st->pipeline || st->stage < 0 || !x->n || !x->one_stage || w->crank >= x->n || g->named) return false;
  /* the report names by the stage comparison only a rank its rules named nowhere */
  for (const struct self_win *o = st->wins; o; o = o->hh.next)
    if (o->flagged) return false;
  double me = x->gap[w->crank], v[ONL_EXACT];
  size_t k = 0;
  for (size_t r = 0; r < x->n; r++)
    if (r != w->crank && x->gap[r] >= 0) {
      v[k++] = x->gap[r];
      g->peer_sum[r] += x->gap[r];
      g->peer_n[r]++;
    }
  if (me < 0) return false;
  g->gap_sum += me;
  g->gap_n++;
  if (!k) return false;
  double peers = cs_det_median_mid(v, k);
  if (me != peers) {
    g->above += me > peers;
    g->below += me < peers;
    g->wsum += me > peers ? peers : -peers;
    g->w2sum += peers * peers;
  }
  if (g->wsum <= 0 || g->w2sum <= 0) return false;
  double p = exp(-g->wsum * g->wsum / (2 * g->w2sum));
  if (p >= CS_SCHED_STEPS_ALPHA / (double)(st->n > 0 ? st->n : 1)) return false;
  k = 0;
  for (size_t r = 0; r < x->n; r++)
    if (r != w->crank && g->peer_n[r]) v[k++] = g->peer_sum[r] / (double)g->peer_n[r];
  if (!k) return false;
  double pm = cs_det_median_mid(v, k), mean = g->gap_sum / (double)g->gap_n;
  if (pm <= 0 || mean <= (1 + CS_SCHED_STAGE_EXCESS) * pm) return false;
  return g->named = true;
}

void cs_onl_sched_adjust(const struct cs_online_rank *st, const struct self_win *w, struct went *e) {
  if (!st->pipeline) return;
  /* its own compute explains its lateness: kept, as the report keeps a stage slower than its peers */
  if (e->gap >= 0 && e->pgap > 0 && e->gap > e->pgap * (1 + CS_SCHED_STAGE_EXCESS)) return;
  if (e->last == (int)w->crank) e->last = -1; /* not last by its own doing */
  if (e->a > 0) e->a = 0;                     /* nor late */
}
