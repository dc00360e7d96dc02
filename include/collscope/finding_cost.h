/* include/collscope/finding_cost.h: what a straggler finding cost the job (analysis/finding_cost.c;
 * docs/detection.md "Findings that clear"): the lateness its peers waited for it, summed over
 * the instances of its flagged span, and that sum's share of the job's elapsed time there.
 *
 * Fed one collective instance at a time as the dump readers walk them (every member's op, in
 * seq order per communicator). In each instance of >= 2 timed members the last to arrive has
 * the shortest GPU duration; its lateness is the instance's median duration minus its own (the
 * detector's measure, include/collscope/detect.h), what the median rank waited for it. Per
 * (communicator, member) the running sum of its lateness is kept at checkpoints: after every
 * instance while the communicator has had at most CS_COST_POINTS of them, then every second,
 * fourth, ... (every other checkpoint dropped when full), so the memory is at most members x
 * CS_COST_POINTS (grown as a member's instances come: min(its instances, CS_COST_POINTS)
 * checkpoints) and a sum between two seqs is exact up to CS_COST_POINTS instances, beyond
 * that its ends fall on the checkpoints at or before them. */
#ifndef COLLSCOPE_FINDING_COST_H
#define COLLSCOPE_FINDING_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/detect.h"

#define CS_COST_POINTS 1024

struct cs_cost_op {
  int comm_rank; /* < 0: not counted */
  bool timed;    /* GPU start and end known, end >= start */
  bool p2p;      /* a Send or Recv: no lateness of its own */
  int64_t start_ns, end_ns;
};

struct cs_cost;
struct cs_cost *cs_cost_new(void); /* NULL: out of memory */
void cs_cost_free(struct cs_cost *c);
/* one instance of comm. 0, or -1 out of memory (then every later call refuses and no finding
 * has a cost) */
int cs_cost_instance(struct cs_cost *c, uint64_t comm, int64_t seq, const struct cs_cost_op *m, size_t n);
/* finding s's cost: the lateness of its member summed over the instances after its first
 * flagged one up to its last (us), and that sum over its op's elapsed time between them
 * (last_flag_ns - first_flag_ns; pct -1 when that is not positive). false unknown (no member,
 * a member of no instance of >= 2 timed collective members: a Send/Recv exchange's, out of
 * memory, a link entry with no rank) */
bool cs_cost_of(const struct cs_cost *c, const struct cs_det_straggler *s, double *cost_us, double *pct);

#endif
