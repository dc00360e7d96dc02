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
  }
  if (p2p) {
    p->c[i].p2p = true;
    if (!neighbour(comm_size, comm_rank, peer)) p->c[i].chain = false;
  } else {
    p->c[i].coll = true;
  }
  bool member = false;
  for (unsigned k = 0; k < CS_ONLINE_PIPE_COMMS; k++)
    member |= p->c[k].used && p->c[k].p2p && !p->c[k].coll && p->c[k].chain;
  atomic_store_explicit(&p->member, member, memory_order_relaxed);
}

void cs_online_rank_set_pipeline(struct cs_online_rank *st, bool member) { st->pipeline = member; }

void cs_onl_sched_adjust(const struct cs_online_rank *st, const struct self_win *w, struct went *e) {
  if (!st->pipeline) return;
  /* its own compute explains its lateness: kept, as the report keeps a stage slower than its peers */
  if (e->gap >= 0 && e->pgap > 0 && e->gap > e->pgap * (1 + CS_SCHED_STAGE_EXCESS)) return;
  if (e->last == (int)w->crank) e->last = -1; /* not last by its own doing */
  if (e->a > 0) e->a = 0;                     /* nor late */
}
