/* include/collscope/comm_elsewhere.h: the straggler findings that a rank's longer communication in
 * its other communicators explains (analysis/comm_elsewhere.c; docs/detection.md "Pipelines").
 *
 * A rank whose op in another communicator lasts longer than its peers' (its Send crosses a
 * host boundary in a ring exchange, it waits inside a collective for a slow peer) is released
 * later to its next op: it arrives late there by that much, with a stream gap as long, though
 * its GPU computed no longer than its peers'. PyTorch's process groups run each on a stream of
 * their own, the compute stream waiting on their end events (ProcessGroupNCCL's syncStream and
 * WorkNCCL::synchronizeStream), so an all_to_all or batch_isend_irecv on the world group delays
 * the rank's next AllReduce of a sub-group.
 *
 * The figures per (communicator, member), the time its ops took and its spans (a group's
 * members sharing one GPU span: the span once), are the peer waits' (include/collscope/
 * peer_wait.h cs_pwait_spans), gathered from the same walk. A finding of rank R at communicator C is explained when R's time
 * at its other communicators per instance of C exceeds the median of the same figure over C's
 * other members that belong to as many communicators as R by at least CS_CELSE_SHARE of its
 * lateness at C (its median arrival offset, or its lateness when last times its share last,
 * the larger). Members of as many communicators play the same part in the job (a row and a
 * column of a mesh, a stage's replicas); a rank in more than its peers compares with none and
 * is never explained, nor is a finding at a communicator across pipeline stages (below). A slow GPU is not explained: its peers wait for
 * it inside their ops, so theirs is the longer time elsewhere. Memory while judging:
 * communicators x members. */
#ifndef COLLSCOPE_COMM_ELSEWHERE_H
#define COLLSCOPE_COMM_ELSEWHERE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/detect.h"
#include "collscope/peer_wait.h"
#include "collscope/schedule.h"

#define CS_CELSE_SHARE 0.5

/* a finding cs_celse_judge removed: whose, where, and the figures */
struct cs_celse_explained {
  uint64_t comm;
  int rank;
  double excess_us, late_us; /* its time elsewhere per instance above its peers'; its lateness */
};

struct cs_celse;
struct cs_celse *cs_celse_new(void); /* NULL: out of memory */
void cs_celse_free(struct cs_celse *c);
/* removes r's findings that the rank's time elsewhere, from p's figures, explains (out of
 * memory: none; the rest keep their order;
 * r->ranks no longer mark them stragglers); a finding at a communicator the pipeline schedule
 * s (NULL: none) calls cross-stage is kept: the schedule judged it against its stage's peers,
 * and the stages' ranks play different parts elsewhere. Returns how many were removed. */
size_t cs_celse_judge(struct cs_celse *c, const struct cs_pwait *p, struct cs_det_result *r, const struct cs_sched *s);
const struct cs_celse_explained *cs_celse_explained(const struct cs_celse *c, size_t *n);

#endif
