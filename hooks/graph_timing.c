/* hooks/graph_timing.c: replays of CUDA graphs holding captured NCCL ops, timed (see
 * graph_timing.h).
 *
 * Capture: an external event record (CU_EVENT_RECORD_EXTERNAL) made while a stream captures
 * is an event record node of the graph, and cuStreamGetCaptureInfo names it as the stream's
 * one dependency right after; the span's two nodes record a per-context placeholder event
 * at capture. A span and the ops in it live in two fixed tables (no allocation while a
 * stream captures), claimed under one lock (capture, instantiation and destruction only).
 * Instantiation copies its graph's ops, in capture order, into the executable's own entry
 * (allocated then) and finds each op's communicator. A launch looks the executable up
 * without a lock (open addressing, keys published with a release store), sets a fresh
 * pooled event pair on each span's nodes (cuGraphExecEventRecordNodeSetEvent: only later
 * launches see it, so a replay keeps its own pair while the next is set), launches, and
 * pushes one record per op; the harvest thread completes them like an eager op's and
 * returns the events. If a span gets no pair or no node takes it, its nodes get the
 * placeholder back and its ops' records say host timing.
 *
 * NCCL captures a collective as a persistent plan: its kernel (and the host callbacks that
 * post its proxy work) are nodes of the graph and run again at every replay with the same
 * work, nothing being enqueued by the host (NCCL 2.28.9 src/enqueue.cc:1420-1435 persistent
 * plans and work storage, :1519-1533 host-stream callbacks captured, :1542-1545 the plans
 * freed with the graph). So a replay is one more collective instance per captured op on
 * every rank, in the graph's order: each takes the next seq of its communicator. */
#include "graph_timing.h"
#include "cuda_driver.h"
#include "timing.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define GT_SPANS 4096 /* captured spans (node pairs) of graphs not yet destroyed (record.h graph_node: 16 bits) */
#define GT_OPS 4096   /* captured ops of those graphs */
#define GT_EXECS 1024 /* executables with captured ops (open addressing, power of two) */
#define GT_MAX_CTX 32
#define GT_TOMB ((uint64_t)1)

/* the driver entry points only this file uses; any missing turns graph timing off */
typedef CUresult (*rec_flags_fn)(CUevent, CUstream, unsigned);
typedef CUresult (*cap_info3_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, const CUgraphNode **,
                                 const CUgraphEdgeData **, size_t *);
typedef CUresult (*cap_info2_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, const CUgraphNode **,
                                 size_t *);
typedef CUresult (*set_event_fn)(CUgraphExec, CUgraphNode, CUevent);
typedef CUresult (*get_nodes_fn)(CUgraph, CUgraphNode *, size_t *);
static struct {
  pthread_once_t once;
  bool ok;
  rec_flags_fn record;
  cap_info3_fn info3;
  cap_info2_fn info2;
  set_event_fn set_event;
  get_nodes_fn get_nodes;
} drv = {.once = PTHREAD_ONCE_INIT};

static void drv_load(void) {
  if (!cs_driver_load()) return;
  const char *name = cs_cfg.libcuda ? cs_cfg.libcuda : "libcuda.so.1";
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) return;
  drv.record = (rec_flags_fn)dlsym(h, "cuEventRecordWithFlags");
  drv.info3 = (cap_info3_fn)dlsym(h, "cuStreamGetCaptureInfo_v3");
  if (!drv.info3) drv.info2 = (cap_info2_fn)dlsym(h, "cuStreamGetCaptureInfo_v2");
  drv.set_event = (set_event_fn)dlsym(h, "cuGraphExecEventRecordNodeSetEvent");
  drv.get_nodes = (get_nodes_fn)dlsym(h, "cuGraphGetNodes");
  drv.ok = drv.record && (drv.info3 || drv.info2) && drv.set_event && drv.get_nodes;
  if (!drv.ok)
    cs_log(CS_LOG_WARN, "%s lacks the graph entry points (external event records, capture info, "
                        "executable event nodes): CUDA graph replays are not recorded",
           name);
}

static bool drv_ready(void) {
  pthread_once(&drv.once, drv_load);
  return drv.ok;
}

/* the stream's last captured node and its graph (one dependency: the record just made) */
static bool capture_node(void *stream, uint64_t *graph, uint64_t *capid, uint64_t *node) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph g = NULL;
  const CUgraphNode *deps = NULL;
  size_t n = 0;
  CUresult rc = drv.info3 ? drv.info3((CUstream)stream, &st, &id, &g, &deps, NULL, &n)
                          : drv.info2((CUstream)stream, &st, &id, &g, &deps, &n);
  if (rc != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_ACTIVE || !g || n != 1 || !deps || !deps[0]) return false;
  *graph = (uint64_t)(uintptr_t)g;
  *capid = (uint64_t)id;
  *node = (uint64_t)(uintptr_t)deps[0];
  return true;
}

/* ---- the capture tables (under lock) ---- */
enum { SPAN_FREE = 0,
       SPAN_OPEN,   /* start node made, the call not yet returned */
       SPAN_CLOSED, /* both nodes made */
};
struct span {
  int state;
  uint64_t graph, capid, ctx;
  uint64_t node_a, node_b;
};
struct op {
  uint32_t span; /* 1 + index, 0: free */
  uint64_t order;
  struct cs_record tmpl;
};
static struct span spans[GT_SPANS];
static struct op ops[GT_OPS];
static uint64_t op_order;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* the placeholder event a context's nodes record when no pool pair is set (never returned) */
static struct {
  uint64_t ctx, ev;
} placeholders[GT_MAX_CTX];

static void capture_untimed(const char *why) {
  atomic_fetch_add_explicit(&cs_st.timing_lost, 1, memory_order_relaxed);
  cs_log_once(CS_LOG_WARN, "a captured NCCL op gets no graph timing (%s): its replays are not recorded", why);
}

/* lock held: the context's placeholder, taken from its event pool once */
static uint64_t placeholder_of(uint64_t ctx) {
  for (int i = 0; i < GT_MAX_CTX; i++)
    if (placeholders[i].ctx == ctx) return placeholders[i].ev;
  for (int i = 0; i < GT_MAX_CTX; i++) {
    if (placeholders[i].ctx) continue;
    uint64_t c = 0, a = 0, b = 0;
    if (!cs_event_pair_take(ctx, &c, &a, &b)) return 0;
    cs_event_release(c, b);
    placeholders[i].ctx = ctx;
    placeholders[i].ev = a;
    return a;
  }
  return 0;
}

/* lock held: free the spans of `graph` (but those of capture `keep_capid` when keep) and the
 * ops left in freed spans */
static void spans_drop(uint64_t graph, bool keep, uint64_t keep_capid) {
  for (size_t i = 0; i < GT_SPANS; i++)
    if (spans[i].state != SPAN_FREE && spans[i].graph == graph && !(keep && spans[i].capid == keep_capid))
      spans[i].state = SPAN_FREE;
  for (size_t i = 0; i < GT_OPS; i++)
    if (ops[i].span && spans[ops[i].span - 1].state == SPAN_FREE) ops[i].span = 0;
}

void cs_graph_capture_begin(struct cs_record *r, void *stream) {
  r->graph_node = 0;
  if (!drv_ready()) return;
  CUcontext cur = NULL;
  if (cs_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur) {
    capture_untimed("no current context");
    return;
  }
  uint64_t ctx = (uint64_t)(uintptr_t)cur, graph = 0, capid = 0, node = 0;
  pthread_mutex_lock(&lock);
  uint64_t ph = placeholder_of(ctx);
  pthread_mutex_unlock(&lock);
  if (!ph) {
    capture_untimed("no event");
    return;
  }
  if (drv.record((CUevent)(uintptr_t)ph, (CUstream)stream, CU_EVENT_RECORD_EXTERNAL) != CUDA_SUCCESS) {
    capture_untimed("external event record failed");
    return;
  }
  if (!capture_node(stream, &graph, &capid, &node)) {
    capture_untimed("no capture node");
    return;
  }
  pthread_mutex_lock(&lock);
  /* what an earlier capture into a graph at this address left (an invalidated capture's graph
   * is freed by the driver and its address may come back) */
  spans_drop(graph, true, capid);
  size_t i = 0;
  while (i < GT_SPANS && spans[i].state != SPAN_FREE) i++;
  if (i < GT_SPANS) spans[i] = (struct span){SPAN_OPEN, graph, capid, ctx, node, 0};
  pthread_mutex_unlock(&lock);
  if (i == GT_SPANS) {
    capture_untimed("span table full");
    return;
  }
  r->graph_node = (uint16_t)(i + 1); /* (GT_SPANS fits) */
}

void cs_graph_capture_end(struct cs_record *r, void *stream, bool ok) {
  if (!r->graph_node || r->graph_node > GT_SPANS) return;
  struct span *sp = &spans[r->graph_node - 1];
  pthread_mutex_lock(&lock);
  uint64_t ph = sp->state == SPAN_OPEN ? placeholder_of(sp->ctx) : 0;
  pthread_mutex_unlock(&lock);
  uint64_t graph = 0, capid = 0, node = 0;
  bool made = ok && ph &&
              drv.record((CUevent)(uintptr_t)ph, (CUstream)stream, CU_EVENT_RECORD_EXTERNAL) == CUDA_SUCCESS &&
              capture_node(stream, &graph, &capid, &node);
  pthread_mutex_lock(&lock);
  if (made && sp->state == SPAN_OPEN && sp->graph == graph && sp->capid == capid) {
    sp->node_b = node;
    sp->state = SPAN_CLOSED;
  } else {
    if (sp->state == SPAN_OPEN) sp->state = SPAN_FREE;
    made = false;
  }
  pthread_mutex_unlock(&lock);
  if (!made) {
    if (ok) capture_untimed("end node not made");
    r->graph_node = 0;
    return;
  }
  if (!r->group) cs_graph_capture_op(r); /* an op outside a group: the template of its replays */
}

void cs_graph_capture_op(const struct cs_record *r) {
  if (!r->graph_node || r->graph_node > GT_SPANS) return;
  pthread_mutex_lock(&lock);
  size_t i = 0;
  bool closed = spans[r->graph_node - 1].state == SPAN_CLOSED;
  while (closed && i < GT_OPS && ops[i].span) i++;
  if (closed && i < GT_OPS) {
    ops[i].span = r->graph_node;
    ops[i].order = ++op_order;
    ops[i].tmpl = *r;
  }
  pthread_mutex_unlock(&lock);
  if (!closed || i == GT_OPS) capture_untimed(closed ? "op table full" : "span not closed");
}

void cs_graph_destroyed(void *graph) {
  uint64_t g = (uint64_t)(uintptr_t)graph;
  if (!g) return;
  pthread_mutex_lock(&lock);
  spans_drop(g, false, 0);
  pthread_mutex_unlock(&lock);
}

/* ---- executables ---- */
struct xspan {
  uint64_t node_a, node_b, ctx, ph;
  uint64_t ev_a, ev_b; /* this launch's pair (0: none); the launching thread's only */
  uint32_t members;
  bool pooled; /* the nodes hold a pool pair (else the placeholder, as at capture) */
  bool dead;   /* a node kept an event it was given: no pair is set here again (it stays out of the pool) */
};
struct xop {
  struct cs_record tmpl;
  uint32_t span; /* index into spans */
  bool last;     /* the span's last op: its record returns the span's pair */
  struct cs_comm *comm;
  void *comm_key;
};
struct cs_graph_exec {
  _Atomic uint64_t key; /* CUgraphExec; 0 free, GT_TOMB removed */
  uint64_t id;
  uint64_t launches;
  int64_t launch_ns; /* the launch under way (the launching thread's) */
  size_t nops, nspans;
  struct xop *ops;
  struct xspan *spans;
};
static struct cs_graph_exec execs[GT_EXECS];
static _Atomic size_t nexecs; /* live entries: the launch path's early out */
static uint64_t exec_ids;

static size_t exec_hash(uint64_t k) { return (size_t)((k >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (GT_EXECS - 1); }

static struct cs_graph_exec *exec_find(uint64_t k) {
  size_t h = exec_hash(k);
  for (size_t n = 0; n < GT_EXECS; n++, h = (h + 1) & (GT_EXECS - 1)) {
    uint64_t v = atomic_load_explicit(&execs[h].key, memory_order_acquire);
    if (v == k) return &execs[h];
    if (!v) return NULL;
  }
  return NULL;
}

/* lock held */
static void exec_free(struct cs_graph_exec *x) {
  free(x->ops);
  free(x->spans);
  x->ops = NULL;
  x->spans = NULL;
  x->nops = x->nspans = 0;
  atomic_store_explicit(&x->key, GT_TOMB, memory_order_release);
  atomic_fetch_sub(&nexecs, 1);
}

/* a communicator by its id and this process's rank in it (one process may hold several ranks
 * of one communicator, a GPU each: ncclCommInitAll, or threads) */
struct comm_find {
  uint64_t id;
  int rank;
  void *key;
};
static void comm_find_cb(void *comm, struct cs_comm *c, void *arg) {
  struct comm_find *f = arg;
  if (!f->key && c->id == f->id && c->rank == f->rank) f->key = comm;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The graph's nodes, sorted (NULL: none or too many to check). A span is the graph's only if
 * both its nodes are among them: a graph the driver freed (an invalidated capture) may leave
 * spans behind at an address a later graph takes. */
#define GT_MAX_NODES (1u << 20)
static uint64_t *graph_nodes(uint64_t g, size_t *n) {
  size_t cnt = 0;
  if (drv.get_nodes((CUgraph)(uintptr_t)g, NULL, &cnt) != CUDA_SUCCESS || !cnt || cnt > GT_MAX_NODES) return NULL;
  uint64_t *v = malloc(cnt * sizeof(*v));
  if (!v) return NULL;
  _Static_assert(sizeof(CUgraphNode) == sizeof(uint64_t), "node handles are pointers");
  if (drv.get_nodes((CUgraph)(uintptr_t)g, (CUgraphNode *)v, &cnt) != CUDA_SUCCESS) {
    free(v);
    return NULL;
  }
  qsort(v, cnt, sizeof(*v), u64_cmp);
  *n = cnt;
  return v;
}

static bool has_node(const uint64_t *v, size_t n, uint64_t node) {
  return bsearch(&node, v, n, sizeof(*v), u64_cmp) != NULL;
}

/* A replay's record as far as it is the same at every launch: the captured op's, with what
 * belonged to the capture (its timing, checks, profiler claim) cleared; the executable's id and
 * the span's member count. Per launch: replay, enqueue time, seq, events. */
static struct cs_record replay_template(const struct cs_record *cap, uint64_t graph, uint32_t members) {
  struct cs_record r = *cap;
  r.graph = graph;
  r.graph_node = 0;
  r.captured = 0;
  r.start_ns = r.end_ns = 0;
  r.sdc_checked = r.sdc_ctx = 0;
  r.sdc_slot = 0;
  r.fingerprint = 0;
  r.in_sum = r.in_abs = r.out_sum = 0;
  r.prof_probe = r.prof_want = 0;
  r.prof_slot = 0;
  r.prof_gen = 0;
  r.prof_start_ns = r.prof_end_ns = 0;
  r.group_ops = members > 1 ? members : 0;
  r.owns_events = 0;
  return r;
}

static int op_order_cmp(const void *a, const void *b) {
  uint64_t x = ops[*(const size_t *)a].order, y = ops[*(const size_t *)b].order;
  return x < y ? -1 : x > y;
}

void cs_graph_instantiated(void *exec, void *graph) {
  uint64_t k = (uint64_t)(uintptr_t)exec, g = (uint64_t)(uintptr_t)graph;
  if (!k || k == GT_TOMB || !g || !drv.ok) return;
  size_t nnodes = 0;
  uint64_t *nodes = graph_nodes(g, &nnodes);
  size_t *idx = nodes ? malloc(GT_OPS * sizeof(*idx)) : NULL;
  if (!idx) {
    free(nodes);
    return;
  }
  pthread_mutex_lock(&lock);
  struct cs_graph_exec *old = exec_find(k); /* a handle the driver reused */
  if (old) exec_free(old);
  size_t n = 0;
  for (size_t i = 0; i < GT_OPS; i++) {
    const struct span *sp = ops[i].span ? &spans[ops[i].span - 1] : NULL;
    if (sp && sp->graph == g && sp->state == SPAN_CLOSED && has_node(nodes, nnodes, sp->node_a) &&
        has_node(nodes, nnodes, sp->node_b))
      idx[n++] = i;
  }
  struct cs_graph_exec *x = NULL;
  if (n) {
    qsort(idx, n, sizeof(*idx), op_order_cmp);
    size_t h = exec_hash(k);
    for (size_t t = 0; t < GT_EXECS && !x; t++, h = (h + 1) & (GT_EXECS - 1)) {
      uint64_t v = atomic_load_explicit(&execs[h].key, memory_order_relaxed);
      if (v == 0 || v == GT_TOMB) x = &execs[h];
    }
  }
  struct xop *xo = x ? calloc(n, sizeof(*xo)) : NULL;
  struct xspan *xs = x ? calloc(n, sizeof(*xs)) : NULL;
  if (x && xo && xs) {
    size_t ns = 0;
    for (size_t j = 0; j < n; j++) {
      const struct op *o = &ops[idx[j]];
      const struct span *sp = &spans[o->span - 1];
      size_t s = 0;
      while (s < ns && xs[s].node_a != sp->node_a) s++;
      if (s == ns) {
        xs[ns++] = (struct xspan){.node_a = sp->node_a, .node_b = sp->node_b, .ctx = sp->ctx, .ph = placeholder_of(sp->ctx)};
      }
      xs[s].members++;
      xo[j].tmpl = o->tmpl;
      xo[j].span = (uint32_t)s;
    }
    for (size_t j = 0; j < n; j++) {
      size_t m = j + 1;
      while (m < n && xo[m].span != xo[j].span) m++;
      xo[j].last = m == n;
    }
    x->id = ++exec_ids;
    for (size_t j = 0; j < n; j++) xo[j].tmpl = replay_template(&xo[j].tmpl, x->id, xs[xo[j].span].members);
    x->ops = xo;
    x->spans = xs;
    x->nops = n;
    x->nspans = ns;
    x->launches = 0;
    atomic_fetch_add(&nexecs, 1);
    atomic_store_explicit(&x->key, k, memory_order_release);
  } else {
    free(xo);
    free(xs);
    if (n) {
      atomic_fetch_add_explicit(&cs_st.timing_lost, n, memory_order_relaxed);
      cs_log_once(CS_LOG_WARN, "an executable graph with captured NCCL ops could not be tracked: its replays are not recorded");
    }
    x = NULL;
  }
  pthread_mutex_unlock(&lock);
  free(idx);
  free(nodes);
  /* each op's communicator, by id (the table's lock, not this file's) */
  for (size_t j = 0; x && j < x->nops; j++) {
    struct comm_find f = {x->ops[j].tmpl.comm_id, x->ops[j].tmpl.comm_rank, NULL};
    if (x->ops[j].tmpl.seq != UINT64_MAX) cs_comm_foreach(comm_find_cb, &f);
    x->ops[j].comm_key = f.key;
    x->ops[j].comm = f.key ? cs_comm_lookup(f.key) : NULL;
  }
}

void cs_graph_exec_destroyed(void *exec) {
  uint64_t k = (uint64_t)(uintptr_t)exec;
  if (!k || !atomic_load_explicit(&nexecs, memory_order_relaxed)) return;
  pthread_mutex_lock(&lock);
  struct cs_graph_exec *x = exec_find(k);
  if (x) exec_free(x);
  pthread_mutex_unlock(&lock);
}

/* ---- launch (job threads: no lock, allocation or syscall) ---- */
static bool span_set(uint64_t exec, const struct xspan *s, uint64_t a, uint64_t b) {
  return drv.set_event((CUgraphExec)(uintptr_t)exec, (CUgraphNode)(uintptr_t)s->node_a, (CUevent)(uintptr_t)a) ==
             CUDA_SUCCESS &&
         drv.set_event((CUgraphExec)(uintptr_t)exec, (CUgraphNode)(uintptr_t)s->node_b, (CUevent)(uintptr_t)b) ==
             CUDA_SUCCESS;
}

/* The placeholder back on a span's nodes; then a, b (when set: a pair the nodes may hold and
 * no launch recorded) go back to the pool. If a node keeps what it held, the span is dead:
 * no pool pair is set on it again, and what it may hold stays out of the pool. */
static void span_unset(uint64_t exec, struct xspan *s, uint64_t a, uint64_t b) {
  if (s->ph && span_set(exec, s, s->ph, s->ph)) {
    s->pooled = false;
    if (a) cs_event_release(s->ctx, a);
    if (b) cs_event_release(s->ctx, b);
    return;
  }
  s->dead = true;
  cs_log_once(CS_LOG_WARN, "setting an event on a CUDA graph's node failed: replays of that executable get host timing");
}

struct cs_graph_exec *cs_graph_launch_begin(void *exec) {
  uint64_t k = (uint64_t)(uintptr_t)exec;
  if (CS_LIKELY(!atomic_load_explicit(&nexecs, memory_order_relaxed)) || !k || k == GT_TOMB) return NULL;
  struct cs_graph_exec *x = exec_find(k);
  if (!x) return NULL;
  x->launch_ns = cs_now_ns(CLOCK_REALTIME); /* the replays' enqueue time: before the launch */
  for (size_t i = 0; i < x->nspans; i++) {
    struct xspan *s = &x->spans[i];
    uint64_t c = 0;
    s->ev_a = s->ev_b = 0;
    if (s->dead) continue;
    if (cs_cfg.timing && cs_event_pair_take(s->ctx, &c, &s->ev_a, &s->ev_b)) {
      if (span_set(k, s, s->ev_a, s->ev_b)) {
        s->pooled = true;
        continue;
      }
      /* a node may hold the new event: it goes back only once the placeholder replaced it */
      span_unset(k, s, s->ev_a, s->ev_b);
      s->ev_a = s->ev_b = 0;
      continue;
    }
    s->ev_a = s->ev_b = 0;
    /* no pair: the nodes must not keep an earlier replay's events, which go back to the pool */
    if (s->pooled) span_unset(k, s, 0, 0);
  }
  return x;
}

void cs_graph_launch_end(struct cs_graph_exec *x, bool ok) {
  uint64_t k = atomic_load_explicit(&x->key, memory_order_relaxed);
  if (!ok) { /* nothing enqueued: the pairs are unused once the nodes hold the placeholder */
    for (size_t i = 0; i < x->nspans; i++) {
      struct xspan *s = &x->spans[i];
      if (s->ev_a) span_unset(k, s, s->ev_a, s->ev_b);
      s->ev_a = s->ev_b = 0;
    }
    return;
  }
  uint64_t replay = ++x->launches;
  for (size_t j = 0; j < x->nops; j++) {
    const struct xop *o = &x->ops[j];
    const struct xspan *s = &x->spans[o->span];
    struct cs_record r = o->tmpl; /* (replay_template) */
    r.replay = replay;
    r.enqueue_ns = x->launch_ns;
    r.seq = UINT64_MAX;
    if (o->comm && atomic_load_explicit(&o->comm->key, memory_order_acquire) == o->comm_key)
      r.seq = cs_comm_seq_take(o->comm);
    if (s->ev_a) {
      r.timing = CS_TIMING_PENDING;
      r.ev_start = s->ev_a;
      r.ev_end = s->ev_b;
      r.ctx = s->ctx;
      r.owns_events = o->last; /* the span's last member returns the pair */
    } else {
      r.timing = CS_TIMING_HOST;
      r.ev_start = r.ev_end = r.ctx = 0;
      atomic_fetch_add_explicit(&cs_st.timing_lost, 1, memory_order_relaxed);
    }
    cs_record_push(&r);
  }
  for (size_t i = 0; i < x->nspans; i++) x->spans[i].ev_a = x->spans[i].ev_b = 0;
}

_Atomic uint64_t cs_sample_below;
static pthread_mutex_t sample_lock = PTHREAD_MUTEX_INITIALIZER;
static int captures_open; /* stream captures open in the process (sample_lock) */

/* sample_lock held */
static void sample_set(void) {
  bool on = cs_drv.loaded && captures_open == 0;
  atomic_store_explicit(&cs_sample_below, on ? cs_cfg.event_sample_bytes : 0, memory_order_release);
}

void cs_graph_sample_update(void) {
  pthread_mutex_lock(&sample_lock);
  sample_set();
  pthread_mutex_unlock(&sample_lock);
}

void cs_graph_capture_opening(void) {
  pthread_mutex_lock(&sample_lock);
  captures_open++;
  sample_set(); /* nothing sampled out from here: before the capture begins */
  pthread_mutex_unlock(&sample_lock);
}

void cs_graph_capture_closed(void) {
  pthread_mutex_lock(&sample_lock);
  if (captures_open > 0) captures_open--;
  sample_set();
  pthread_mutex_unlock(&sample_lock);
}

void cs_graph_atfork_child(void) {
  captures_open = 0; /* the parent's captures are not the child's */
  pthread_mutex_init(&sample_lock, NULL);
  sample_set();
  /* the child has its own CUDA state: the parent's graphs, executables and events are not its */
  memset(spans, 0, sizeof(spans));
  memset(ops, 0, sizeof(ops));
  memset(placeholders, 0, sizeof(placeholders));
  for (size_t i = 0; i < GT_EXECS; i++) {
    atomic_store(&execs[i].key, 0);
    execs[i].ops = NULL; /* the parent's allocations: left, not freed (another thread may have held them) */
    execs[i].spans = NULL;
  }
  atomic_store(&nexecs, 0);
  pthread_mutex_init(&lock, NULL);
}
