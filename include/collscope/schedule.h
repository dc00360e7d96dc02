/* include/collscope/schedule.h: a training job's pipeline schedule recovered from its collective
 * instances alone (analysis/schedule.c; docs/detection.md "Pipelines"): which communicators
 * carry a pipeline's Send/Recv chain, which collectives span pipeline stages, each rank's
 * stage, and per stage the forwards it runs before its first backward (1F1B's warm-up).
 *
 * Fed one instance at a time as the dump readers walk them (every member's op), in memory
 * bounded by communicators x members, never by the number of instances:
 *  - a communicator whose every op is a Send or Recv and whose members' peers form one chain
 *    (each member talks to at most two others, the graph a path) is a pipeline; a member's
 *    stage is its position on the chain, counted from the end that sent first (the forward
 *    direction);
 *  - a collective communicator whose members sit in two or more stages is cross-stage (the
 *    grad-norm AllReduce over the model-parallel group, the tied-embedding AllReduce between
 *    the first and the last stage): who arrives last there is the pipeline's drain, not a
 *    slow GPU;
 *  - a straggler at a cross-stage communicator is judged against its own stage's peers (the
 *    data-parallel replicas of the stage): kept when its compute gap there exceeds theirs,
 *    else explained by the schedule and left out, counted (cs_sched_judge); a member the
 *    detector did not flag whose gap there exceeds its stage peers' is added as a compute
 *    straggler (the drain's first stage arrives last whatever else is slow). */
#ifndef COLLSCOPE_SCHEDULE_H
#define COLLSCOPE_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/detect.h"

/* one member's op of an instance */
struct cs_sched_op {
  int comm_rank, rank; /* comm_rank < 0: not counted */
  const char *host;    /* its process's host (kept, not copied: it must outlive the schedule) */
  int peer;            /* Send/Recv: the peer's comm rank, else -1 */
  bool p2p, send;      /* a Send or Recv; of those a Send */
  double gap_us;       /* its compute gap, < 0 unknown */
  int64_t end_ns;      /* its GPU end on its own clock, 0 unknown: a finding's flagged span (its cost's share) */
};

enum cs_sched_kind { CS_SCHED_OTHER = 0,
                     CS_SCHED_PIPELINE = 1,    /* Send/Recv chain between stages */
                     CS_SCHED_CROSS_STAGE = 2, /* a collective over ranks of several stages */
                     CS_SCHED_STAGE = 3 };     /* a collective inside one stage (its replicas) */

/* a cross-stage straggler's verdict, or a rank named by its own compute (by_compute) */
struct cs_sched_verdict {
  uint64_t comm;
  int rank, stage;
  double gap_us, stage_gap_us; /* its mean compute gap there; its stage peers' median (-1 none);
                                  by_compute: its mean gap at its stage's collective */
  bool kept;                   /* slower than its stage's peers: a finding */
  bool by_compute;             /* by its compute at its stage's collective: the instances
                                  judged, those above its peers, the sign test's p */
  size_t instances, above;
  double p;
};

struct cs_sched;
struct cs_sched *cs_sched_new(void); /* NULL: out of memory */
void cs_sched_free(struct cs_sched *s);
/* one instance of comm (any member order). 0, or -1 out of memory (the schedule then only
 * refuses and knows no pipeline) */
int cs_sched_instance(struct cs_sched *s, uint64_t comm, int64_t seq, const struct cs_sched_op *m, size_t n);
/* one member's figures summed elsewhere (a COLLSCOPE_RECORD=summary "gaps" line,
 * stats/summary_gaps.c) in place of its instances: what cs_sched_instance would have gathered
 * from them. 0, or -1 out of memory */
struct cs_sched_sum {
  int comm_rank, rank;
  const char *host;
  bool p2p, first_send, peer_over; /* every op a Send or Recv; its first a Send; a third peer */
  int npeers, peer[2];             /* the distinct peers, in the order first seen */
  uint64_t before[2];              /* Sends to peer[i] before the first Recv from it */
  bool got[2];                     /* a Recv from peer[i] */
  uint64_t sends, recvs, gap_n;    /* gap_n: its collective ops with a compute gap */
  double gap_sum;                  /* their gaps (us) */
  int64_t last_seq;                /* its last instance */
  int64_t first_ns, last_ns;       /* its first and last op's GPU end with a gap (0 unknown) */
};
int cs_sched_summed(struct cs_sched *s, uint64_t comm, const struct cs_sched_sum *m);
/* one instance of comm's collective whose members were summed (cs_sched_summed) from lines that
 * also hold their last ops' compute gaps: each member's gap there against the others', the stage
 * comparison's per-instance step (analysis/stage_compute.c, as cs_sched_instance takes it), its
 * sums and span left as cs_sched_summed gave them. Members not summed are skipped. 0, or -1 out
 * of memory */
int cs_sched_summed_instance(struct cs_sched *s, uint64_t comm, const struct cs_sched_op *m, size_t n);
/* once every instance is in: chains, stages, kinds. 0, or -1 out of memory */
int cs_sched_finish(struct cs_sched *s);

int cs_sched_stages(const struct cs_sched *s);          /* the longest chain's stage count, 0: no pipeline */
int cs_sched_stage(const struct cs_sched *s, int rank); /* -1: in no pipeline */
enum cs_sched_kind cs_sched_comm_kind(const struct cs_sched *s, uint64_t comm);
/* per stage over its ranks' pipeline members: Sends, Recvs and the sends to the next stage
 * before the first Recv from it (the forwards before the first backward), summed; false
 * when out of range */
bool cs_sched_stage_counts(const struct cs_sched *s, int stage, size_t *ranks, uint64_t *sends, uint64_t *recvs,
                           uint64_t *fwd_before_bwd);
/* the communicators of one kind, into out (cap); returns how many there are */
size_t cs_sched_comms(const struct cs_sched *s, enum cs_sched_kind kind, uint64_t *out, size_t cap);

/* The stragglers of r at cross-stage communicators judged against their stage's peers:
 * those the schedule explains are removed from r (the rest keep their order); then every
 * unflagged member of a cross-stage communicator slower than its stage's peers is appended
 * to r as a compute straggler (none when out of memory). Every verdict is kept for
 * cs_sched_verdicts. Returns how many were removed. */
size_t cs_sched_judge(struct cs_sched *s, struct cs_det_result *r);
const struct cs_sched_verdict *cs_sched_verdicts(const struct cs_sched *s, size_t *n);

/* a straggler is kept when its gap exceeds its stage peers' median by this share */
#define CS_SCHED_STAGE_EXCESS 0.03
/* An unflagged member of a cross-stage communicator named by that share must also clear its
 * stage group's spread (1.4826 x the median absolute deviation of the members' mean gaps) z
 * times, the normal tail beyond z at most CS_SCHED_STEPS_ALPHA / (the members judged), in a
 * group of at least this many members (fewer: the share alone) */
#define CS_SCHED_SPREAD_MIN 16

/* A rank slower than its stage's peers by its own compute (analysis/stage_compute.c), part of
 * cs_sched_judge: in a pipeline without collectives across its stages a slow GPU's pipeline
 * copy waits for it at every Send/Recv, so its data-parallel peers (the same stage's ranks of
 * the other copies) arrive late with it at their stage's collective and the detector sees no
 * one late. Its compute gap at a collective of its stage's ranks alone (CS_SCHED_STAGE: the
 * data-parallel gradient reduction, once a step: the step's GPU time outside NCCL, its own
 * work; a Recv's wait for its Send is inside the Recv, not in the gap) is compared with its
 * stage peers' at the same instance:
 *  - per instance: above (+1) when its gap exceeds the median w of the other members' gaps
 *    there, below (-1) when under it (a tie counts neither);
 *  - a one-sided sign test weighted by w (an instance with little compute before it, such as
 *    the all-gather right after the reduce-scatter, weighs little): T = sum(sign * w); with
 *    no difference between the ranks each sign is +-1 with chance 1/2, so Hoeffding's
 *    inequality bounds the chance of T so large: p = exp(-T^2 / (2 sum w^2));
 *  - named when p < CS_SCHED_STEPS_ALPHA / (the members judged) (Bonferroni: at most that
 *    chance of naming anyone in a clean job) and its mean gap there exceeds the median of the
 *    other members' by CS_SCHED_STAGE_EXCESS (a difference that matters).
 * A named rank gets a kept verdict (by_compute) unless one names it already, and, when r holds
 * no straggler of it, a compute straggler at that communicator, so the link findings its
 * pipeline copy's waits explain move to it (cs_pwait_attribute). Summed members are judged
 * over the instances cs_sched_summed_instance gave (a summary recording's last ops), their mean
 * gaps the summed ones; without such instances they are not judged. */
#define CS_SCHED_STEPS_ALPHA 0.001

#endif
