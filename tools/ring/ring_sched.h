/* tools/ring/ring_sched.h: the pipeline schedule, the peers' waits and the ranks' time in their
 * other communicators applied to the detector's result over the ops of rings (`top`, the exporter), as the report applies them
 * (include/collscope/schedule.h, peer_wait.h, comm_elsewhere.h; docs/detection.md
 * "Pipelines"). A ring holds each process's last records only: the schedule is what those
 * records show. */
#ifndef COLLSCOPE_TOOLS_RING_SCHED_H
#define COLLSCOPE_TOOLS_RING_SCHED_H
#include <stddef.h>

#include "collscope/detect.h"

struct ring_sched_counts {
  size_t explained_by_schedule, explained_by_peer_wait, explained_by_comm_elsewhere;
};

/* A collective op older than the ops' window, as its reader kept it (the exporter's
 * tools/exporter/exporter_gaps.c): its identity and its compute gap (compute_gap.h, taken in
 * its ring's order), -1 when none. */
struct ring_sched_gap {
  uint64_t comm;
  int64_t seq;
  int comm_rank, rank;
  const char *host;
  double gap_us;
};

/* ops: every process's ops of one job, each process's together and in its ring's order
 * (ring_det_op); det:
 * cs_detect's result over them, changed in place. Returns 0, or -1 when out of memory (det
 * then as cs_detect left it). */
int ring_sched_judge(const struct cs_det_op *ops, size_t n, struct cs_det_result *det, struct ring_sched_counts *c);
/* The same with hist, collectives kept from before the ops' window (any order): their
 * members join the schedule's instances (a member the window also holds counts once, from
 * the window), so the stage comparison (its sign test) sees every instance kept; the peers'
 * waits read the window alone (they need the ops' spans). */
int ring_sched_judge_hist(const struct cs_det_op *ops, size_t n, const struct ring_sched_gap *hist, size_t nhist,
                          struct cs_det_result *det, struct ring_sched_counts *c);

#endif
