/* include/collscope/online_sched.h: the online exchange's judgement against a pipeline's
 * schedule (analysis/online_sched.c): what a rank observes of its own Send/Recv (is it a
 * pipeline's stage?), and the rule that sets aside the lateness its schedule explains before
 * the rank judges itself (analysis/online_stragglers.c). Rank-local: the exchange's wire and
 * its shared state are unchanged, so every rank still reaches the same shared verdicts.
 *
 * A pipeline, as the report has it (include/collscope/schedule.h): a communicator that
 * carries only Send/Recv, its members a chain. A rank sees its own part of it: a
 * communicator on which it issued Send/Recv and no collective, every peer its neighbour:
 * comm rank +-1 modulo the size (Megatron's stage order: megatron/core/pipeline_parallel/
 * p2p_communication.py:160-164 sends to and receives from (rank +- 1) % size of the
 * pipeline group, the last stage's next being the first in the interleaved schedule). */
#ifndef COLLSCOPE_ONLINE_SCHED_H
#define COLLSCOPE_ONLINE_SCHED_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collscope/online.h"

#define CS_ONLINE_PIPE_COMMS 32 /* communicators with Send/Recv a rank tracks; more are not judged */

struct cs_online_pipe {
  struct {
    uint64_t comm;
    bool used, coll, p2p, chain; /* chain: every peer so far was comm rank +-1 (mod size) */
    int rank;                    /* this rank's comm rank on it */
  } c[CS_ONLINE_PIPE_COMMS];
  uint32_t untracked;  /* communicators with Send/Recv beyond the table (counted, not judged) */
  _Atomic bool member; /* some tracked communicator is a pipeline: the reader's flag */
  _Atomic int stage;   /* this rank's comm rank on the first such pipeline: its stage (-1 none) */
};

/* One finished op of this rank (one thread: the harvest thread): comm id, its size, this
 * rank's comm rank, whether it is a Send/Recv and its peer's comm rank (-1 unknown). Updates
 * `member`. */
void cs_online_pipe_note(struct cs_online_pipe *p, uint64_t comm, int comm_size, int comm_rank, bool p2p, int peer);
/* any thread: is this rank a pipeline's stage, as far as it has seen? */
static inline bool cs_online_pipe_member(const struct cs_online_pipe *p) {
  return atomic_load_explicit(&p->member, memory_order_relaxed);
}
/* any thread: its stage, its comm rank on its first pipeline (Megatron's pipeline group is ordered
 * by stage), -1 none (a zeroed table reads stage 0 only once `member` is set) */
static inline int cs_online_pipe_stage(const struct cs_online_pipe *p) {
  return cs_online_pipe_member(p) ? atomic_load_explicit(&p->stage, memory_order_relaxed) : -1;
}

/* The evaluator's side: is this rank a pipeline's stage (from cs_online_pipe_member)? While
 * it is, an instance where it arrived late with a compute gap no more than
 * CS_SCHED_STAGE_EXCESS above its peers' mean does not count against it. */
void cs_online_rank_set_pipeline(struct cs_online_rank *st, bool member);
/* ... and its stage (cs_online_pipe_stage, -1 none): at a communicator of at most 16 ranks that
 * all sit in its stage, its compute gap is compared with its stage peers' as the report's stage
 * comparison does (analysis/stage_compute.c), and a rank slower there names itself. */
void cs_online_rank_set_stage(struct cs_online_rank *st, int stage);

#endif
