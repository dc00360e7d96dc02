/* hooks/timing.c: GPU timing of intercepted calls (see timing.h). The hot path pops a
 * pair of pre-created events from a lock-free per-context pool (one queue operation) and
 * records them on the caller's stream, or leaves an op to NCCL's profiler plugin (the
 * timing plugin the shim hands over), or, for a small collective outside the event sample
 * (COLLSCOPE_EVENT_SAMPLE), records none; the harvest thread reads them later
 * (hooks/timing_harvest.c). No syscall, lock or sync here. This file owns the event pools,
 * the plugin handed over, and the per-thread group state. */
#include "timing.h"
#include "timing_internal.h"
#include "cuda_driver.h"
#include "graph_timing.h"
#include "stats/queue.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CS_MAX_CTX 32

/* The second timing source (NCCL's profiler plugin), once the shim has handed it over:
 * until then no op is wanted and nothing is claimed. */
static bool plugin_none_wanted(int op) {
  (void)op;
  return false;
}
static int plugin_none_claim(int op) {
  (void)op;
  return CS_PROF_NONE;
}
static void plugin_none_unlinked(int op) { (void)op; }
static void plugin_none_group_set(struct cs_record *recs, size_t n) {
  (void)recs;
  (void)n;
}
static bool plugin_none_collect(struct cs_record *r, bool final) {
  (void)r;
  (void) final;
  return true;
}
static void plugin_none_probe_judge(const struct cs_record *r) { (void)r; }
static struct cs_timing_plugin plugin = {
    plugin_none_wanted,
    plugin_none_claim,
    plugin_none_unlinked,
    plugin_none_group_set,
    plugin_none_collect,
    plugin_none_probe_judge,
};

void cs_timing_plugin_set(const struct cs_timing_plugin *p) { plugin = *p; }
_Atomic int cs_timing_plugin_on;
void cs_timing_plugin_live(void) { atomic_store(&cs_timing_plugin_on, 1); }

static struct cs_evpool pools[CS_MAX_CTX];
static _Atomic int npools;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* Per-thread group state, freed by a pthread key destructor when the thread exits. */
struct grp_stream {
  uint64_t stream;
  uint32_t members;      /* the group's ops that share this stream's span */
  uint32_t prof_members; /* the group's ops on this stream timed by NCCL's profiler plugin: one
                          * fused launch, so each gets the launch's kernel stamps, not its own */
  struct cs_record ev;
};
struct cs_pending {
  size_t n, cap;
  struct cs_record *recs;
  struct grp_stream *gstreams; /* streams of the group being launched */
  size_t ngstreams, capgstreams;
};
static pthread_key_t pending_key;
static pthread_once_t pending_key_once = PTHREAD_ONCE_INIT;

static void pending_free(void *arg) {
  struct cs_pending *p = arg;
  if (!p) return;
  free(p->recs);
  free(p->gstreams);
  free(p);
}
static void pending_key_create(void) { pthread_key_create(&pending_key, pending_free); }

static struct cs_evpool *pool_find(CUcontext ctx) {
  /* the pool this thread used last, if it is still this context's (pools are never
   * removed; fork in the child clears them all) */
  struct cs_evpool *last = cs_tls.last_pool;
  if (CS_LIKELY(last != NULL) && atomic_load_explicit(&last->ctx, memory_order_relaxed) == ctx &&
      atomic_load_explicit(&last->ready, memory_order_acquire))
    return last;
  int n = atomic_load_explicit(&npools, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (atomic_load_explicit(&pools[i].ctx, memory_order_relaxed) == ctx &&
        atomic_load_explicit(&pools[i].ready, memory_order_acquire))
      return cs_tls.last_pool = &pools[i];
  return NULL;
}

/* Return one free event to the pool: it waits in `half`, or goes into the queue with
 * the event that was waiting there. false (ev not taken) when the queue is full. */
static bool pool_put(struct cs_evpool *p, uint64_t ev) {
  uint64_t h = atomic_load_explicit(&p->half, memory_order_acquire);
  for (;;) {
    if (!h) {
      if (atomic_compare_exchange_weak_explicit(&p->half, &h, ev, memory_order_acq_rel, memory_order_acquire))
        return true;
    } else if (atomic_compare_exchange_weak_explicit(&p->half, &h, 0, memory_order_acq_rel, memory_order_acquire)) {
      struct ev_pair pr = {h, ev};
      if (cs_queue_push(&p->q, &pr)) return true;
      /* full: the partner taken from `half` goes back there if it is still free */
      uint64_t z = 0;
      if (!atomic_compare_exchange_strong_explicit(&p->half, &z, h, memory_order_acq_rel, memory_order_acquire) &&
          cs_drv.cuEventDestroy)
        cs_drv.cuEventDestroy((CUevent)(uintptr_t)h);
      return false;
    }
  }
}

static void pool_fill(struct cs_evpool *p, int n) {
  for (int i = 0; i < n; i++) {
    CUevent e;
    if (cs_drv.cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      cs_log_once(CS_LOG_WARN, "cuEventCreate failed: some ops get host timing only");
      break;
    }
    if (!pool_put(p, (uint64_t)(uintptr_t)e)) {
      cs_drv.cuEventDestroy(e);
      break;
    }
    atomic_fetch_add(&p->created, 1);
  }
}

/* Slow path, once per context: create the pool with a few events (ctx is current). */
static struct cs_evpool *pool_create(CUcontext ctx) {
  pthread_mutex_lock(&pool_lock);
  struct cs_evpool *p = pool_find(ctx);
  int n = atomic_load(&npools);
  if (!p && n < CS_MAX_CTX) {
    p = &pools[n];
    memset(&p->anchor_stream, 0, sizeof(*p) - offsetof(struct cs_evpool, anchor_stream));
    if (!cs_queue_init(&p->q, POOL_CAP / 2, sizeof(struct ev_pair))) {
      p = NULL;
    } else {
      atomic_store(&p->half, 0);
      atomic_store(&p->created, 0);
      atomic_store(&p->ctx, ctx);
      pool_fill(p, cs_cfg.event_prefill ? (int)cs_cfg.event_prefill : POOL_PREFILL);
      atomic_store_explicit(&p->ready, 1, memory_order_release);
      atomic_store_explicit(&npools, n + 1, memory_order_release);
    }
  }
  pthread_mutex_unlock(&pool_lock);
  return p;
}

/* (inlined into stream_begin: the hot path's one caller) */
static inline __attribute__((always_inline)) bool event_pair(uint64_t *ctx_out, uint64_t *a, uint64_t *b) {
  CUcontext ctx = NULL;
  if (!cs_cfg.timing || !cs_drv.loaded || cs_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return false;
  struct cs_evpool *p = pool_find(ctx);
  if (CS_UNLIKELY(!p)) p = pool_create(ctx);
  if (!p) return false;
  struct ev_pair pr;
  if (!cs_queue_pop(&p->q, &pr)) {
    atomic_fetch_add_explicit(&cs_st.timing_lost, 1, memory_order_relaxed);
    return false;
  }
  *a = pr.a;
  *b = pr.b;
  *ctx_out = (uint64_t)(uintptr_t)ctx;
  return true;
}

/* the calling thread's current context (NULL when none) */
static CUcontext cs_ctx_current(void) {
  CUcontext c = NULL;
  return cs_drv.cuCtxGetCurrent(&c) == CUDA_SUCCESS ? c : NULL;
}

bool cs_event_pair_take(uint64_t ctx, uint64_t *ctx_out, uint64_t *a, uint64_t *b) {
  if (!ctx) return event_pair(ctx_out, a, b);
  if (!cs_cfg.timing || !cs_drv.loaded) return false;
  struct cs_evpool *p = pool_find((CUcontext)(uintptr_t)ctx);
  /* a context whose first op is captured has no pool yet: made here (event creation is no
   * capture-unsafe call; a graph's capture and launch are no hot path) */
  if (!p && ctx == (uint64_t)(uintptr_t)cs_ctx_current()) p = pool_create((CUcontext)(uintptr_t)ctx);
  struct ev_pair pr;
  if (!p || !cs_queue_pop(&p->q, &pr)) return false; /* (the caller counts what it leaves untimed) */
  *a = pr.a;
  *b = pr.b;
  *ctx_out = ctx;
  return true;
}

void cs_event_release(uint64_t ctx, uint64_t ev) {
  struct cs_evpool *p = pool_find((CUcontext)(uintptr_t)ctx);
  if (!p || !pool_put(p, ev)) {
    if (cs_drv.cuEventDestroy) cs_drv.cuEventDestroy((CUevent)(uintptr_t)ev);
  }
}

static bool stream_capturing(void *stream) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!cs_drv.loaded) return false;
  if (cs_drv.cuStreamIsCapturing((CUstream)stream, &st) != CUDA_SUCCESS) return false;
  return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Begin timing on a stream: captured, events recorded, or host-only. */
static void stream_begin(struct cs_record *r, void *stream) {
  r->ev_start = r->ev_end = r->ctx = 0;
  if (!cs_drv.loaded) {
    r->timing = CS_TIMING_HOST;
    return;
  }
  if (stream_capturing(stream)) {
    r->timing = CS_TIMING_CAPTURED;
    r->captured = 1;
    /* a memcpy is never replay-timed; an op's span gets its graph nodes (graph_timing.c) */
    if (r->type == CS_REC_OP) cs_graph_capture_begin(r, stream);
    return;
  }
  if (!event_pair(&r->ctx, &r->ev_start, &r->ev_end)) {
    r->timing = CS_TIMING_HOST;
    return;
  }
  if (cs_drv.cuEventRecord((CUevent)(uintptr_t)r->ev_start, (CUstream)stream) != CUDA_SUCCESS) {
    cs_event_release(r->ctx, r->ev_start);
    cs_event_release(r->ctx, r->ev_end);
    r->ev_start = r->ev_end = 0;
    r->timing = CS_TIMING_HOST;
    return;
  }
  r->timing = CS_TIMING_PENDING;
}

/* stream_end of an op without events (host, sampled out, captured: out of the hot path) */
static __attribute__((noinline, cold)) void stream_end_untimed(struct cs_record *r, void *stream, bool ok) {
  /* captured: the span's end node; an op outside a group is its template too */
  if (r->graph_node) cs_graph_capture_end(r, stream, ok);
  if (!ok) r->timing = CS_TIMING_ERROR;
}

static void stream_end(struct cs_record *r, void *stream, bool ok) {
  if (r->timing != CS_TIMING_PENDING) {
    stream_end_untimed(r, stream, ok);
    return;
  }
  if (!ok || cs_drv.cuEventRecord((CUevent)(uintptr_t)r->ev_end, (CUstream)stream) != CUDA_SUCCESS) {
    /* The start event may still be in the stream: the harvest thread releases both once
     * the start has completed, so a pooled event is never re-recorded while in flight. */
    r->timing = ok ? CS_TIMING_HOST : CS_TIMING_ERROR;
    cs_event_release(r->ctx, r->ev_end); /* never recorded: reusable now */
    r->owns_events = 1;
    r->ev_end = 0;
    return;
  }
  r->owns_events = 1;
}

void cs_timed_begin(struct cs_record *r, void *stream) {
  r->enqueue_ns = cs_now_ns(CLOCK_REALTIME);
  stream_begin(r, stream);
}

void cs_timed_stream_begin(struct cs_record *r, void *stream) { stream_begin(r, stream); }
void cs_timed_stream_end(struct cs_record *r, void *stream, bool ok) { stream_end(r, stream, ok); }

void cs_timed_end(struct cs_record *r, void *stream, bool ok) {
  stream_end(r, stream, ok);
  cs_record_push(r);
}

struct cs_comm *cs_op_start_slow(struct cs_record *r, void *comm) {
  enum cs_op op = (enum cs_op)r->op; /* the call's arguments, as cs_op_fill stored them */
  size_t count = (size_t)r->count;
  int dtype = r->dtype;
  void *stream = (void *)(uintptr_t)r->stream;
  /* the entry this thread used last, while it still holds this communicator */
  struct cs_comm *c = cs_tls.last_comm;
  if (CS_UNLIKELY(atomic_load_explicit(&c->key, memory_order_acquire) != comm)) { /* (never NULL) */
    c = cs_comm_lookup(comm);
    cs_tls.last_comm = c ? c : &cs_comm_none;
  }
  if (c) {
    cs_op_comm_fill(r, c);
  } else {
    r->comm_size = r->comm_rank = r->device = -1;
    r->seq = UINT64_MAX;
  }
  r->bytes = cs_op_bytes(op, count, cs_dtype_size(dtype), r->comm_size > 0 ? r->comm_size : 1);
  if (cs_tls.group_depth > 0) {
    r->group = cs_tls.group_id;
    r->enqueue_ns = cs_now_ns(CLOCK_REALTIME);
    r->timing = CS_TIMING_PENDING; /* decided at the group launch */
  } else {
    int pc = CS_PROF_NONE;
    if (!r->comm_nb && count && atomic_load_explicit(&cs_timing_plugin_on, memory_order_relaxed) &&
        plugin.wanted(op) && !stream_capturing(stream))
      pc = plugin.claim(op);
    if (pc == CS_PROF_ONLY) {
      r->enqueue_ns = cs_now_ns(CLOCK_REALTIME); /* NCCL's profiler plugin times it: no events */
      r->timing = CS_TIMING_PENDING;
      r->prof_want = 1;
      return c;
    }
    if (pc == CS_PROF_PROBE) {
      r->prof_want = r->prof_probe = 1; /* both: events and the plugin */
    } else if (pc != CS_PROF_EVENTS && r->seq != UINT64_MAX && cs_op_sampled_out(r->bytes, r->seq)) {
      cs_op_sample_out(r); /* CUDA events only, and this op outside their sample */
      return c;
    }
    cs_timed_begin(r, stream);
  }
  return c;
}

static void pending_add(const struct cs_record *r) {
  struct cs_pending *p = cs_tls.pending;
  if (CS_UNLIKELY(!p)) {
    p = calloc(1, sizeof(*p));
    if (!p) goto drop;
    pthread_once(&pending_key_once, pending_key_create);
    pthread_setspecific(pending_key, p);
    cs_tls.pending = p;
  }
  if (CS_UNLIKELY(p->n == p->cap)) {
    size_t cap = p->cap ? p->cap * 2 : 256;
    if (cap > (1u << 20)) goto drop;
    struct cs_record *nr = realloc(p->recs, cap * sizeof(*nr));
    if (!nr) goto drop;
    p->recs = nr;
    p->cap = cap;
  }
  p->recs[p->n++] = *r;
  return;
drop:
  atomic_fetch_add_explicit(&cs_st.drops, 1, memory_order_relaxed);
}

/* A call NCCL rejected is no collective instance: the seq it took before the call goes
 * back to the communicator, so this rank's next call gets the number its peers give the
 * same collective. Only possible while no other thread took a later one (NCCL does not
 * allow concurrent calls on one communicator; if a job does it anyway, the gap stays and
 * is logged). Lock-free: one CAS, on the failure path only. */
static void seq_give_back(struct cs_record *r, struct cs_comm *c) {
  if (r->seq == UINT64_MAX) return;
  uint64_t next = r->seq + 1;
  if (c && !atomic_compare_exchange_strong_explicit(&c->seq, &next, r->seq, memory_order_relaxed,
                                                    memory_order_relaxed))
    cs_log_once(CS_LOG_WARN, "a failed NCCL call could not return its sequence number (another thread used its "
                             "communicator meanwhile): this rank's later instances of that communicator may not match its peers'");
  r->seq = UINT64_MAX;
}

void cs_op_returned_slow(struct cs_record *r, struct cs_comm *c, int status, int inprogress_code) {
  bool ok = status == 0 || status == inprogress_code;
  r->status = status;
  if (!ok) seq_give_back(r, c);
  if (r->group) {
    if (!ok) r->timing = CS_TIMING_ERROR;
    return;
  }
  if (r->prof_want && !r->prof_probe) { /* no profiler event attached (or the call failed): enqueue time only */
    if (!ok || !r->prof_slot) r->timing = ok ? CS_TIMING_HOST : CS_TIMING_ERROR;
    if (ok && !r->prof_slot) plugin.unlinked(r->op);
    return;
  }
  stream_end(r, (void *)(uintptr_t)r->stream, ok);
}

void cs_op_group_add(const struct cs_record *r) { pending_add(r); }

void cs_group_started(void) {
  if (cs_tls.group_depth++ == 0)
    cs_tls.group_id = atomic_fetch_add_explicit(&cs_st.group_ids, 1, memory_order_relaxed) + 1;
}

/* Index of `stream` among the group's streams, or p->ngstreams if it is not there. */
static size_t group_stream_find(const struct cs_pending *p, uint64_t stream) {
  size_t k = 0;
  while (k < p->ngstreams && p->gstreams[k].stream != stream) k++;
  return k;
}

/* A new entry for `stream` (no events yet), or p->ngstreams when it cannot be added. */
static size_t group_stream_add(struct cs_pending *p, uint64_t stream) {
  size_t k = p->ngstreams;
  if (p->ngstreams == p->capgstreams) {
    size_t cap = p->capgstreams ? p->capgstreams * 2 : 16;
    struct grp_stream *ng = realloc(p->gstreams, cap * sizeof(*ng));
    if (!ng) return p->ngstreams;
    p->gstreams = ng;
    p->capgstreams = cap;
  }
  memset(&p->gstreams[k], 0, sizeof(p->gstreams[k]));
  p->gstreams[k].stream = stream;
  return p->ngstreams++;
}

/* `stream`'s entry, added without events when the group has none for it (its ops are timed by
 * the profiler plugin); p->ngstreams when it cannot be added */
static size_t group_stream_bare(struct cs_pending *p, uint64_t stream) {
  size_t k = group_stream_find(p, stream);
  return k < p->ngstreams ? k : group_stream_add(p, stream);
}

void cs_group_launch_begin(void) {
  struct cs_pending *p = cs_tls.pending;
  if (!p) return;
  p->ngstreams = 0;
  for (size_t i = 0; i < p->n; i++) {
    struct cs_record *r = &p->recs[i];
    if (r->timing != CS_TIMING_PENDING) continue;
    if ((r->prof_slot || (!r->comm_nb && r->count && plugin.wanted(r->op))) &&
        !stream_capturing((void *)(uintptr_t)r->stream)) {
      /* claimed when NCCL started its event inside the call (prof_slot), or now */
      int pc = r->prof_slot ? (r->prof_probe ? CS_PROF_PROBE : CS_PROF_ONLY) : plugin.claim(r->op);
      if (pc == CS_PROF_ONLY) {
        r->prof_want = 1; /* timed by NCCL's profiler plugin: no events on its stream */
        continue;
      }
      if (pc == CS_PROF_PROBE) r->prof_want = r->prof_probe = 1; /* and the stream's events */
    }
    size_t k = group_stream_find(p, r->stream);
    if (k == p->ngstreams) {
      if (group_stream_add(p, r->stream) == p->ngstreams) {
        r->timing = CS_TIMING_HOST;
        continue;
      }
      p->gstreams[k].ev.type = CS_REC_OP; /* the span of the group's ops on this stream */
      p->gstreams[k].ev.group = cs_tls.group_id;
      stream_begin(&p->gstreams[k].ev, (void *)(uintptr_t)r->stream);
    }
  }
  plugin.group_set(p->recs, p->n);
}

void cs_group_launch_returned(int status, int inprogress_code) {
  bool ok = status == 0 || status == inprogress_code;
  struct cs_pending *p = cs_tls.pending;
  if (!p) return;
  plugin.group_set(NULL, 0);
  for (size_t k = 0; k < p->ngstreams; k++) stream_end(&p->gstreams[k].ev, (void *)(uintptr_t)p->gstreams[k].stream, ok);
}

void cs_group_launch_end(int status, int inprogress_code) {
  bool ok = status == 0 || status == inprogress_code;
  struct cs_pending *p = cs_tls.pending;
  if (!p) return;
  /* the last record of each stream owns (returns) that stream's events */
  for (size_t i = 0; i < p->n; i++) {
    struct cs_record *r = &p->recs[i];
    if (r->timing != CS_TIMING_PENDING) continue;
    if (r->owns_events) continue; /* timed on its own stream (a copy-engine collective, shim/profiler.c) */
    if (r->prof_want && !r->prof_probe) {
      if (!ok || !r->prof_slot) r->timing = ok ? CS_TIMING_HOST : CS_TIMING_ERROR;
      if (ok && !r->prof_slot) plugin.unlinked(r->op);
      if (!ok) r->status = status;
      if (ok && r->prof_slot) { /* counted with its stream's other profiler-timed ops */
        size_t k = group_stream_bare(p, r->stream);
        if (k < p->ngstreams) {
          p->gstreams[k].prof_members++;
          r->group_ops = (uint32_t)k + 1;
        }
      }
      continue;
    }
    size_t k = group_stream_find(p, r->stream);
    if (k == p->ngstreams) {
      r->timing = ok ? CS_TIMING_HOST : CS_TIMING_ERROR;
      continue;
    }
    struct cs_record *ev = &p->gstreams[k].ev;
    if (ev->ev_start) {
      p->gstreams[k].members++;
      r->group_ops = (uint32_t)k + 1;
    }
    r->timing = ev->timing;
    r->captured = ev->captured;
    r->graph_node = ok ? ev->graph_node : 0;
    r->ev_start = ev->ev_start;
    r->ev_end = ev->ev_end;
    r->ctx = ev->ctx;
    r->owns_events = 0;
    if (!ok) r->status = status;
  }
  /* members that share one stream's span: each is marked with their number, so no reader
   * takes the group's time for a member's own (docs/timing.md) */
  for (size_t i = 0; i < p->n; i++) {
    struct cs_record *r = &p->recs[i];
    if (r->owns_events || r->group_ops == 0) continue;
    size_t k = r->group_ops - 1; /* the stream's index, left by the loop above */
    uint32_t n = r->prof_want && !r->prof_probe ? p->gstreams[k].prof_members : p->gstreams[k].members;
    r->group_ops = n > 1 ? n : 0;
  }
  for (size_t k = 0; k < p->ngstreams; k++) {
    if (!p->gstreams[k].ev.owns_events) continue;
    for (size_t i = p->n; i-- > 0;)
      if (p->recs[i].stream == p->gstreams[k].stream && p->recs[i].ev_start == p->gstreams[k].ev.ev_start &&
          p->recs[i].ev_start) {
        p->recs[i].owns_events = 1;
        break;
      }
  }
  for (size_t i = 0; i < p->n; i++) {
    if (CS_UNLIKELY(p->recs[i].graph_node)) cs_graph_capture_op(&p->recs[i]);
    cs_record_push(&p->recs[i]);
  }
  p->n = 0;
  p->ngstreams = 0;
}

/* ---- what the harvest thread's side (timing_harvest.c) reaches ---- */

struct cs_evpool *cs_evpools(int *n) {
  *n = atomic_load_explicit(&npools, memory_order_acquire);
  return pools;
}
struct cs_evpool *cs_evpool_find(uint64_t ctx) {
  return pool_find((CUcontext)(uintptr_t)ctx);
}
void cs_evpool_fill(struct cs_evpool *p, int n) { pool_fill(p, n); }
const struct cs_timing_plugin *cs_timing_plugin_current(void) { return &plugin; }

/* ncclGroupSimulateEnd ended the group: NCCL ran none of its ops, so they are no op
 * records. Each pending record goes to `each` (what other hooks hold for it), none to the
 * harvest thread; returns how many there were. */
size_t cs_group_discard(void (*each)(struct cs_record *r)) {
  struct cs_pending *p = cs_tls.pending;
  if (!p) return 0;
  size_t n = p->n;
  for (size_t i = 0; i < n; i++) each(&p->recs[i]);
  p->n = 0;
  p->ngstreams = 0;
  return n;
}

void cs_timing_atfork_child(void) {
  /* The child has its own CUDA state (if any); inherited pools and anchors are unusable. */
  atomic_store(&npools, 0);
  memset(pools, 0, sizeof(pools));
  pthread_mutex_init(&pool_lock, NULL);
  if (cs_tls.pending) cs_tls.pending->n = 0;
  cs_graph_atfork_child();
}
