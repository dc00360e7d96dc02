/* include/collscope/peer_wait.h: how long each rank waited inside its ops for which peer, from the
 * collective instances alone (analysis/peer_wait.c), and the straggler findings such a wait
 * explains (docs/detection.md "Pipelines": a Recv waits for its Send, so a slow rank's
 * pipeline neighbours arrive late at their own collectives).
 *
 * Fed one instance at a time as the dump readers walk them (every member's op):
 *  - a collective: each timed member waited min(the latest timed member's start - its own
 *    start, its duration), clamped at 0, for the member that started last;
 *  - a Send or Recv: the same against its matching op on the peer (the k-th Send from a to b
 *    on a communicator matches the k-th Recv at b from a: NCCL 2.28.9 queues each peer's
 *    Sends and Recvs in call order, src/enqueue.cc:2406-2408, and dequeues them from the
 *    head, src/enqueue.cc:1064-1065), for that peer;
 *  - the members of one group share a GPU span: a span's wait counts once (its largest), and
 *    the span is one instance of its communicator.
 * Per (communicator, member) the wait there and the CS_PWAIT_TOP peers waited for longest
 * (a heavy-hitter table: a peer that takes most of the wait is in it); unmatched Sends/Recvs
 * are held per directed pair up to CS_PWAIT_PENDING (past that the oldest counts as
 * unmatched: no wait). Memory: communicators x members, plus the pending ops. */
#ifndef COLLSCOPE_PEER_WAIT_H
#define COLLSCOPE_PEER_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/detect.h"

#define CS_PWAIT_TOP 4
#define CS_PWAIT_PENDING 64
/* a link finding's lateness is a peer's when the rank waited elsewhere, per instance of the
 * finding's communicator, more than the communicator's other members by at least this share of
 * its lateness there */
#define CS_PWAIT_SHARE 0.5

struct cs_pwait_op {
  int comm_rank, rank; /* comm_rank < 0: not counted */
  int peer;            /* a Send or Recv: the peer's comm rank, else -1 */
  bool p2p, send;      /* a Send or Recv; of those a Send */
  bool timed;          /* GPU start and end known, end >= start > 0 */
  int64_t start_ns, end_ns;
};

struct cs_pwait;
struct cs_pwait *cs_pwait_new(void); /* NULL: out of memory */
void cs_pwait_free(struct cs_pwait *p);
/* one instance of comm (any member order). 0, or -1 out of memory (then every later call
 * refuses and cs_pwait_attribute removes nothing) */
int cs_pwait_instance(struct cs_pwait *p, uint64_t comm, const struct cs_pwait_op *m, size_t n);
/* rank's wait in us at comm (or, with elsewhere, at every other communicator) and its timed
 * spans at comm (its instances there: a group's members share one span); false when it is no member of comm */
/* each (communicator, member) with timed spans: its rank, its spans there (a group's members
 * sharing one GPU span: one) and the ns they took; nothing when out of memory */
typedef void (*cs_pwait_span_fn)(void *ctx, uint64_t comm, int rank, uint64_t spans, int64_t busy_ns);
void cs_pwait_spans(const struct cs_pwait *p, cs_pwait_span_fn fn, void *ctx);
bool cs_pwait_member(const struct cs_pwait *p, uint64_t comm, int rank, bool elsewhere, double *wait_us,
                     uint64_t *instances);

/* The link findings of r whose lateness a peer's wait explains are removed (the rest keep their
 * order; their window figures no longer say straggler): rank R's finding at comm C is explained
 * when R's wait at the other communicators per timed instance of C exceeds the median of C's
 * other members' by CS_PWAIT_SHARE of its lateness there (its median arrival offset, or its
 * lateness when last times its share last, the larger), and the peer R waited for longest
 * there leads, through such findings, to a rank with a finding that is not explained (its own:
 * a compute finding, or one no peer's wait explains); failing that, the next of its
 * CS_PWAIT_TOP peers waited for longest that does, when R waited for it at least
 * CS_PWAIT_SHARE of its lateness per instance too (a pipeline's ranks wait for each other in
 * their Recvs, and the one beside a slow tensor-parallel partner waits for it as well). The
 * first such peer found is kept. A cycle of ranks waiting for each other, and for no one else
 * so, explains nothing. Returns how many were removed. */
size_t cs_pwait_attribute(struct cs_pwait *p, struct cs_det_result *r);

/* a finding cs_pwait_attribute removed: whose, where, the peer it waited for and the figures */
struct cs_pwait_moved {
  uint64_t comm;
  int rank, peer;
  double excess_us, late_us; /* its wait elsewhere per instance above its peers'; its lateness */
};
const struct cs_pwait_moved *cs_pwait_moved(const struct cs_pwait *p, size_t *n);

#endif
