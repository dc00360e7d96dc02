/* hooks/timing.h: what happens around an intercepted call -- fill a record, bracket the
 * work with CUDA events on the caller's stream (driver API, pooled events, no sync),
 * defer grouped ops to the outermost ncclGroupEnd, and skip events on capturing streams. */
#ifndef COLLSCOPE_TIMING_H
#define COLLSCOPE_TIMING_H
#include "shim/cs_internal.h"

/* A single call timed on one stream (collectives outside a group, memcpys). */
void cs_timed_begin(struct cs_record *r, void *stream);
void cs_timed_end(struct cs_record *r, void *stream, bool ok);
/* Only the events (no push): a copy-engine collective NCCL reports through its profiler
 * plugin (shim/profiler.c) is bracketed on the stream NCCL names. */
void cs_timed_stream_begin(struct cs_record *r, void *stream);
void cs_timed_stream_end(struct cs_record *r, void *stream, bool ok);

/* NCCL op wrapper helpers, in this order around the real call:
 *  cs_op_begin    fill the record from the call's arguments, take the communicator's next
 *                 seq (tentatively) and, outside a group, record the start event; returns
 *                 the communicator's entry (NULL when unknown), for cs_op_returned;
 *  cs_op_returned the call returned `status`: a call NCCL rejected (neither ncclSuccess nor
 *                 ncclInProgress) gives its seq back and keeps seq UINT64_MAX (it is no
 *                 collective instance); outside a group the end event is recorded now, so
 *                 the op's timing ends where NCCL's work ends, before any work collscope's
 *                 after-op hooks add to the stream (the SDC output check);
 *  cs_op_end      after those hooks: push the record, or queue it for the group launch. */
struct cs_comm *cs_op_begin(struct cs_record *r, enum cs_op op, void *comm, size_t count, int dtype,
                            int redop, int root, int peer, void *stream, void *site);
void cs_op_returned(struct cs_record *r, struct cs_comm *c, int status, int inprogress_code);
void cs_op_end(struct cs_record *r);

/* Outermost group launch: events before/after the real ncclGroupEnd on every stream
 * used by the group's ops. cs_group_launch_returned records the end events right after
 * the real ncclGroupEnd returned (before the deferred SDC output checks are launched);
 * cs_group_launch_end then hands the group's records to the harvest thread. */
void cs_group_launch_begin(void);
void cs_group_launch_returned(int status, int inprogress_code);
void cs_group_launch_end(int status, int inprogress_code);
void cs_group_started(void);   /* after a successful real ncclGroupStart */

/* Event pools (one per CUDA context); the harvest thread returns and tops up events. */
void cs_event_release(uint64_t ctx, uint64_t ev);
void cs_event_pools_maintain(void);
/* GPU->realtime: start time of an event in CLOCK_REALTIME ns via the context's anchor.
 * Returns false if the event cannot be converted. */
bool cs_event_to_realtime(uint64_t ctx, uint64_t ev, int64_t *ns);
void cs_timing_atfork_child(void);

#endif
