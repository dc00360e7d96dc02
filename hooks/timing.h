/* hooks/timing.h: what happens around an intercepted call -- fill a record, bracket the
 * work with CUDA events on the caller's stream (driver API, pooled events, no sync),
 * defer grouped ops to the outermost ncclGroupEnd, and skip events on capturing streams. */
#ifndef COLLSCOPE_TIMING_H
#define COLLSCOPE_TIMING_H
#include "thread_state.h"
#include "cuda_driver.h"
#include "graph_timing.h"
#include "stats/harvest.h"
#include <string.h>

/* A single call timed on one stream (collectives outside a group, memcpys). */
void cs_timed_begin(struct cs_record *r, void *stream);
void cs_timed_end(struct cs_record *r, void *stream, bool ok);
/* Only the events (no push): a copy-engine collective NCCL reports through its profiler
 * plugin (shim/profiler.c) is bracketed on the stream NCCL names. */
void cs_timed_stream_begin(struct cs_record *r, void *stream);
void cs_timed_stream_end(struct cs_record *r, void *stream, bool ok);

/* NCCL op wrapper helpers, in this order around the real call:
 *  cs_op_begin    (cs_op_fill, then cs_op_start)
 *                 fill the record from the call's arguments, take the communicator's next
 *                 seq (tentatively) and, outside a group, record the start event (unless
 *                 the op is left to the profiler plugin, or is a small collective whose
 *                 seq is outside the event sample: timing sampled_out); returns
 *                 the communicator's entry (NULL when unknown), for cs_op_returned;
 *  cs_op_returned the call returned `status`: a call NCCL rejected (neither ncclSuccess nor
 *                 ncclInProgress) gives its seq back and keeps seq UINT64_MAX (it is no
 *                 collective instance); outside a group the end event is recorded now, so
 *                 the op's timing ends where NCCL's work ends, before any work collscope's
 *                 after-op hooks add to the stream (the SDC output check);
 *  cs_op_end      after those hooks: push the record, or queue it for the group launch. */
struct cs_comm *cs_op_start_slow(struct cs_record *r, void *comm); /* every case */

/* Whether NCCL's profiler plugin may time ops (hooks/timing.c; set once, by the shim, when
 * the plugin is forced or NCCL initialised it): until then the wrappers never ask it. */
extern _Atomic int cs_timing_plugin_on;
void cs_timing_plugin_live(void);

/* The record's communicator fields and its tentative seq (see seq_give_back in timing.c). */
static inline __attribute__((always_inline)) void cs_op_comm_fill(struct cs_record *r, struct cs_comm *c) {
  r->comm_id = c->id;
  r->comm_size = c->size;
  r->comm_rank = c->rank;
  r->device = c->device;
  r->comm_nb = c->nonblocking;
  r->seq = cs_comm_seq_take(c);
}

/* The CUDA-event path's sample (COLLSCOPE_EVENT_SAMPLE): a small collective whose seq is
 * outside it keeps its enqueue time and no events, the same seqs on every rank of the
 * communicator. No driver call: the size below which ops are sampled (cs_sample_below,
 * hooks/graph_timing.h) is COLLSCOPE_EVENT_SAMPLE_BYTES once the driver is loaded, and 0
 * while any stream capture is open in the process, so that a captured op is bracketed in its
 * graph and every replay timed (docs/timing.md). */
static inline bool cs_op_sampled_out(uint64_t bytes, uint64_t seq) {
  return bytes < atomic_load_explicit(&cs_sample_below, memory_order_relaxed) && (seq & cs_cfg.event_sample_mask);
}
/* No row left blind by the sample: the first CS_ROW_TIMED sampled-out ops of every row (a
 * communicator entry, i.e. communicator and rank; op; bytes) get events whatever their seq.
 * Threads driving their own communicators, or ops whose seqs stride past the sample (one op
 * kind of a repeated pattern), would otherwise leave a row without a timed record. An empty
 * collective (0 bytes) is no row: NCCL enqueues no work for it (enqueue.cc:2554-2555), so it
 * never gets a slot (cs_op_row_probe refuses it).
 * One word per row in a fixed table (hash tag | count), open addressing over
 * CS_ROW_PROBES slots: a load once the row has its CS_ROW_TIMED, a CAS before; no lock, no
 * allocation. The row's first slot is tried inline, the others by cs_op_row_probe (rows that
 * collide). When all its slots hold other rows, a row takes its first slot over and starts
 * again (more events, never fewer); a lost CAS times the op anyway. Every rank calls a row's
 * ops in the same order, so the same seqs get events on every rank. */
#define CS_ROW_SLOTS 4096 /* power of two */
#define CS_ROW_TIMED 4
#define CS_ROW_PROBES 8
extern _Atomic uint64_t cs_row_counts[CS_ROW_SLOTS];
bool cs_op_row_probe(uint64_t h, uint64_t bytes); /* hooks/thread_state.c: the row's other slots */
static inline __attribute__((always_inline)) bool cs_op_row_wants_events(struct cs_comm *c, enum cs_op op,
                                                                         uint64_t bytes) {
  /* the communicator's last row found full (its own ops only: NCCL's one-thread-at-a-time rule) */
  uint64_t key = bytes << 8 | (uint64_t)op;
  if (CS_LIKELY(c != NULL) && atomic_load_explicit(&c->row_full, memory_order_relaxed) == key) return false;
  uint64_t h = ((uint64_t)(uintptr_t)c ^ (bytes << 20) ^ ((uint64_t)op << 58)) * 0x9e3779b97f4a7c15ull;
  _Atomic uint64_t *w = &cs_row_counts[h >> 52]; /* (the top 12 bits: CS_ROW_SLOTS) */
  uint64_t v = atomic_load_explicit(w, memory_order_relaxed);
  if (CS_LIKELY(((v ^ h) >> 4) == 0)) { /* the same tag (all but the count bits) */
    if (CS_LIKELY((v & 15u) >= CS_ROW_TIMED)) {
      if (c) atomic_store_explicit(&c->row_full, key, memory_order_relaxed);
      return false;
    }
    atomic_compare_exchange_strong_explicit(w, &v, v + 1, memory_order_relaxed, memory_order_relaxed);
    return true;
  }
  return cs_op_row_probe(h, bytes);
}
_Static_assert(CS_ROW_SLOTS == 1u << 12, "cs_op_row_wants_events indexes by the hash's top 12 bits");
static inline void cs_op_sample_out(struct cs_record *r) {
  r->enqueue_ns = cs_now_ns(CLOCK_REALTIME);
  r->timing = CS_TIMING_SAMPLED_OUT;
}

/* cs_op_start's common case, inline in the wrappers: the communicator this thread used
 * last, outside a group, no profiler plugin. The op takes its seq and either its events
 * (cs_timed_begin) or, a small collective outside the event sample, its enqueue time
 * only. Anything else is cs_op_start_slow's. */
static inline __attribute__((always_inline)) struct cs_comm *cs_op_start(struct cs_record *r, void *comm,
                                                                         enum cs_op op, size_t count, int dtype) {
  /* never NULL, and no entry's key is NULL: a key that matches is this (non-NULL) comm's */
  struct cs_comm *c = cs_tls.last_comm;
  if (CS_UNLIKELY(atomic_load_explicit(&c->key, memory_order_acquire) != comm ||
                  cs_tls.group_depth > 0 || atomic_load_explicit(&cs_timing_plugin_on, memory_order_relaxed)))
    return cs_op_start_slow(r, comm);
  cs_op_comm_fill(r, c);
  /* (the call's arguments, not the record's copies: constants fold) */
  r->bytes = cs_op_bytes(op, count, cs_dtype_size(dtype), c->size > 0 ? c->size : 1);
  if (cs_op_sampled_out(r->bytes, r->seq)) {
    cs_op_sample_out(r);
    return c;
  }
  cs_timed_begin(r, (void *)(uintptr_t)r->stream);
  return c;
}

/* memset(r, 0, sizeof(*r)) as 16-byte stores: gcc turns a plain memset of this size
 * into `rep stos`, which costs more than the stores on the hot path. (The empty asm
 * hides the zero from the compiler so that it cannot turn the stores back into memset.) */
static inline void cs_record_zero(struct cs_record *r) {
#if defined(__x86_64__)
  typedef uint64_t v2u64 __attribute__((vector_size(16)));
  v2u64 z = {0, 0};
  __asm__(""
          : "+x"(z));
  unsigned char *p = (unsigned char *)r;
#pragma GCC unroll 16
  for (size_t i = 0; i + 16 <= sizeof(*r); i += 16) __builtin_memcpy(p + i, &z, 16);
  memset(p + (sizeof(*r) & ~(size_t)15), 0, sizeof(*r) & 15);
#else
  memset(r, 0, sizeof(*r));
#endif
}

/* cs_op_begin's first half, inline in the wrappers (no call with ten arguments): the
 * record from the call's arguments; cs_op_start does the rest. */
static inline void cs_op_fill(struct cs_record *r, enum cs_op op, size_t count, int dtype, int redop, int root,
                              int peer, void *stream, void *site) {
  cs_record_zero(r);
  r->type = CS_REC_OP;
  r->op = (uint8_t)op;
  r->dtype = dtype;
  r->redop = redop;
  r->root = root;
  r->peer = peer;
  r->count = count;
  r->stream = (uint64_t)(uintptr_t)stream;
  r->site = (uint64_t)(uintptr_t)site;
  /* (comm_size, comm_rank, device: cs_op_start's, -1 for an unknown communicator) */
}

static inline struct cs_comm *cs_op_begin(struct cs_record *r, enum cs_op op, void *comm, size_t count, int dtype,
                                          int redop, int root, int peer, void *stream, void *site) {
  cs_op_fill(r, op, count, dtype, redop, root, peer, stream, site);
  return cs_op_start(r, comm, op, count, dtype);
}
void cs_op_returned_slow(struct cs_record *r, struct cs_comm *c, int status, int inprogress_code);
/* (inline: a sampled-out op that succeeded has nothing to end) */
static inline __attribute__((always_inline)) void cs_op_returned(struct cs_record *r, struct cs_comm *c, int status,
                                                                 int inprogress_code) {
  if (CS_LIKELY(status == 0) && r->timing == CS_TIMING_SAMPLED_OUT) return;
  cs_op_returned_slow(r, c, status, inprogress_code);
}
void cs_op_group_add(const struct cs_record *r); /* a grouped op: kept for the group launch */
static inline void cs_op_end(struct cs_record *r) {
  if (CS_UNLIKELY(r->group))
    cs_op_group_add(r);
  else
    cs_record_push_inline(r);
}

/* Outermost group launch: events before/after the real ncclGroupEnd on every stream
 * used by the group's ops. cs_group_launch_returned records the end events right after
 * the real ncclGroupEnd returned (before the deferred SDC output checks are launched);
 * cs_group_launch_end then hands the group's records to the harvest thread. */
void cs_group_launch_begin(void);
void cs_group_launch_returned(int status, int inprogress_code);
void cs_group_launch_end(int status, int inprogress_code);
void cs_group_started(void); /* after a successful real ncclGroupStart */
/* ncclGroupSimulateEnd ended the group: its records are dropped (each first handed to `each`);
 * returns their number. */
size_t cs_group_discard(void (*each)(struct cs_record *r));

/* How an eligible op is timed when NCCL's profiler plugin may time it (the plugin's
 * claim, once per op):
 * CS_PROF_ONLY   the plugin alone, no CUDA events;
 * CS_PROF_PROBE  auto mode's probation: CUDA events AND the plugin, compared by the harvest
 *                thread (probe_judge) until COLLSCOPE_PROFILER_PROBES ops agreed or
 *                not -- the verdict then makes every later op ONLY or NONE;
 * CS_PROF_NONE   CUDA events only (a small op: within the event sample);
 * CS_PROF_EVENTS CUDA events on every op, outside the event sample: the type is on probation
 *                and its probes are all in flight, so that a short job is not left with the
 *                sample alone until the verdict comes.
 * An empty collective (count 0) is never offered to the plugin: NCCL discards it before
 * its profiler sees a task (enqueue.cc:2554-2555), so it could only count as a probe
 * without stamps, or a trusted op without an event. */
enum { CS_PROF_NONE = 0,
       CS_PROF_ONLY = 1,
       CS_PROF_PROBE = 2,
       CS_PROF_EVENTS = 3 };

/* The second timing source beside CUDA events: NCCL's profiler plugin (shim/profiler.c),
 * handed over at load by shim/wiring.c (which makes hooks/ call the shim's plugin
 * without naming it). Until then no op is wanted. The members are the plugin's
 * cs_prof_wanted, cs_prof_claim, cs_prof_unlinked, cs_prof_group_set (hot path),
 * cs_prof_collect and cs_prof_probe_judge (harvest thread): shim/cs_internal.h. */
struct cs_timing_plugin {
  bool (*wanted)(int op);
  int (*claim)(int op);
  void (*unlinked)(int op);
  void (*group_set)(struct cs_record *recs, size_t n);
  bool (*collect)(struct cs_record *r, bool final);
  void (*probe_judge)(const struct cs_record *r);
};
void cs_timing_plugin_set(const struct cs_timing_plugin *p);

/* The harvest thread's part (registered by shim/wiring.c): a record is finished once the
 * plugin's span is collected and its end event is reached (GPU times converted to the
 * realtime clock, events returned to their pool; probation records compared); its tick
 * tops up the event pools; `started` answers for hang reports. */
extern const struct cs_harvest_client cs_timing_harvest;

/* Event pools (one per CUDA context); the harvest thread returns and tops up events. */
void cs_event_release(uint64_t ctx, uint64_t ev);
/* A free pair of `ctx`'s pool (0: the current context's, its pool made if needed, and a miss
 * counted in cs_st.timing_lost): lock-free when the pool exists. false when there is none. */
bool cs_event_pair_take(uint64_t ctx, uint64_t *ctx_out, uint64_t *a, uint64_t *b);
void cs_event_pools_maintain(void);
/* GPU->realtime: start time of an event in CLOCK_REALTIME ns via the context's anchor.
 * Returns false if the event cannot be converted. */
bool cs_event_to_realtime(uint64_t ctx, uint64_t ev, int64_t *ns);
/* harvest thread: has the GPU reached this recorded event (cuEventQuery says done)? */
bool cs_timing_event_done(uint64_t ev);
void cs_timing_atfork_child(void);

#endif
