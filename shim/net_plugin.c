/* shim/net_plugin.c: libcollscope as NCCL's network plugin (NCCL_NET_PLUGIN=libcollscope.so).
 * It exports ncclNetPlugin_v12 (NCCL 2.30), _v11, _v10 and _v9 and wraps the inner plugin
 * named by COLLSCOPE_NET_INNER (a path, a library name, or <name> for libnccl-net-<name>.so),
 * whose highest version among v12, v11, v10, v9 is used whatever version NCCL calls us
 * through (v12 and v11 differ only in the property structs: a v12 inner is driven through
 * the v11 calls, its properties converted; shim/net_plugin_props.c). This file loads the
 * inner and holds the calls every exported table (shim/net_plugin_tables.c) forwards through.
 * Every call is forwarded; isend/irecv are timed from the post to the test() that reports done.
 *
 * Fail open:
 *  - no COLLSCOPE_NET_INNER, the inner library or its symbols missing, the inner pointing back
 *    at collscope, or the inner's init failing: init returns an error (logged once), and NCCL
 *    then uses its own IB/Socket transports (their symbols are hidden, nothing can wrap them);
 *  - every inner result, request, size and handle byte is passed through unchanged;
 *  - when a fixed pool (connections, listen comms, requests) is full the inner object is
 *    handed to NCCL unwrapped; the wrapper recognises its own objects by address (they live in
 *    static arrays), so unwrapped objects keep working, only untimed.
 *
 * Peer identity: listen() zero-fills the handle before the inner writes it; if the inner left
 * the last 16 bytes zero, the wrapper writes its cs_net_id there (magic, the listener's global
 * rank, a random 64-bit connection token). connect() takes it out, restores the zeros for the
 * inner call and puts it back afterwards (NCCL retries connect with the same handle). The send
 * side thus knows the peer rank; the receive side knows only the token. Both ends' link records
 * carry the token, and `collscope report` joins them across dump files (each file's header has
 * its host). Nothing is added to the job's own traffic.
 *
 * Hot path (isend/irecv/test): one clock read (vDSO), one CAS on a request bitmap word, relaxed
 * atomic adds on the connection's own counters; no syscall, lock or allocation. The harvest
 * thread turns the counters into CS_REC_LINK records (cs_net_collect) every COLLSCOPE_FLUSH_MS,
 * at close and at exit. */
#include "cs_internal.h"
#include "net_plugin_internal.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- the inner plugin ---------------------------------------------------------------- */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
int cs_net_in_ver; /* 11 (also for a v12 inner), 10, 9; 0 = none */
const cs_net_v11_t *cs_net_in11;
const cs_net_v12_t *cs_net_in12; /* a v12 inner (then in11 is the same table) */
const cs_net_v10_t *cs_net_in10;
const cs_net_v9_t *cs_net_in9;
#define in_ver cs_net_in_ver
#define in11 cs_net_in11
#define in12 cs_net_in12
#define in10 cs_net_in10
#define in9 cs_net_in9
char cs_net_in_name[128] = "collscope";
/* An inner with irecvConsumed may be handed a receive request after test() reported it done,
 * when the wrapper has already recycled its slot: such receives are passed through unwrapped
 * (untimed; the send side still measures the link). NCCL 2.28 does not call irecvConsumed. */
static int in_has_consumed;

static _Atomic int in_global_done; /* v9/v10 inner init, or the v11 inner ctx of v9/v10 callers */
static pthread_mutex_t in_global_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_net_result_t in_global_res;
void *cs_net_in_global_ctx; /* v11 inner: the ctx used by v9/v10 callers */
static uint64_t token_seed;
static _Atomic uint64_t token_ctr;

static void *open_inner(const char *v) {
  void *h = dlopen(v, RTLD_NOW | RTLD_LOCAL);
  if (!h && !strchr(v, '/')) {
    char name[300];
    snprintf(name, sizeof name, "libnccl-net-%s.so", v);
    h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  }
  return h;
}

static void atfork_child(void);

static void load_inner(void) {
  pthread_atfork(NULL, NULL, atfork_child);
  const char *v = getenv("COLLSCOPE_NET_INNER");
  if (getrandom(&token_seed, sizeof token_seed, GRND_NONBLOCK) != (ssize_t)sizeof token_seed)
    token_seed = (uint64_t)cs_now_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);
  if (!v || !*v) {
    cs_log(CS_LOG_WARN, "net plugin: COLLSCOPE_NET_INNER is not set; NCCL's internal IB/Socket transports "
                        "cannot be wrapped, so the collscope net plugin declines and NCCL uses its own");
    return;
  }
  void *h = open_inner(v);
  if (!h) {
    cs_log(CS_LOG_WARN, "net plugin: cannot load COLLSCOPE_NET_INNER=%s (%s); NCCL uses its own transports", v,
           dlerror());
    return;
  }
  in12 = dlsym(h, "ncclNetPlugin_v12");
  in11 = in12 ? (const cs_net_v11_t *)(const void *)in12 : dlsym(h, "ncclNetPlugin_v11");
  if (!in11) in10 = dlsym(h, "ncclNetPlugin_v10");
  if (!in11 && !in10) in9 = dlsym(h, "ncclNetPlugin_v9");
  const void *tbl = in11 ? (const void *)in11 : in10 ? (const void *)in10
                                                     : (const void *)in9;
  if (!tbl) {
    cs_log(CS_LOG_WARN, "net plugin: %s has no ncclNetPlugin_v12/v11/v10/v9; NCCL uses its own transports", v);
    dlclose(h);
    return;
  }
  if (tbl == (const void *)&ncclNetPlugin_v12 || tbl == (const void *)&ncclNetPlugin_v11 ||
      tbl == (const void *)&ncclNetPlugin_v10 || tbl == (const void *)&ncclNetPlugin_v9) {
    cs_log(CS_LOG_WARN, "net plugin: COLLSCOPE_NET_INNER=%s is collscope itself; declining", v);
    in12 = NULL, in11 = NULL, in10 = NULL, in9 = NULL;
    return;
  }
  in_ver = in11 ? 11 : in10 ? 10
                            : 9;
  in_has_consumed = (in11 ? in11->irecvConsumed : in10 ? in10->irecvConsumed
                                                       : in9->irecvConsumed) != NULL;
  const char *n = in11 ? in11->name : in10 ? in10->name
                                           : in9->name;
  /* NCCL_NET=<name> selects a transport by name: keep the inner's */
  snprintf(cs_net_in_name, sizeof cs_net_in_name, "%s", n ? n : "collscope");
  cs_log(CS_LOG_INFO, "net plugin: wrapping %s (%s, ncclNetPlugin_v%d)", cs_net_in_name, v, in12 ? 12 : in_ver);
}

cs_net_result_t cs_net_inner_global_init(cs_net_logger_t log, cs_net_prof_cb_t prof) {
  if (atomic_load_explicit(&in_global_done, memory_order_acquire)) return in_global_res;
  pthread_mutex_lock(&in_global_lock);
  if (!atomic_load(&in_global_done)) {
    if (in_ver == 11)
      in_global_res = in11->init(&cs_net_in_global_ctx, 0, NULL, log, prof);
    else if (in_ver == 10)
      in_global_res = in10->init(log, prof);
    else
      in_global_res = in9->init(log);
    atomic_store_explicit(&in_global_done, 1, memory_order_release);
  }
  pthread_mutex_unlock(&in_global_lock);
  return in_global_res;
}

/* ---- connection, listen and request pools --------------------------------------------- */
#define NLISTEN 1024
#define NREQ 8192

struct wlisten {
  _Atomic int used;
  void *inner;
  int dev;
  uint64_t token;
};
struct wreq {
  void *inner;
  struct wconn *c;
  int64_t t0;
  uint64_t bytes; /* isend: size; irecv: 0 (taken from sizes at done) */
  int n;          /* irecv: number of receives */
};

struct wconn cs_net_conns[NCONN];
#define conns cs_net_conns
static struct wlisten listens[NLISTEN];
static struct wreq reqs[NREQ];
static _Atomic uint64_t req_bits[NREQ / 64];
static _Atomic uint64_t untracked; /* objects handed out unwrapped (pools full) */
static _Atomic unsigned conn_hint;

static inline struct wconn *as_conn(void *p) {
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)conns;
  if (a < b || a >= b + sizeof conns || (a - b) % sizeof(struct wconn)) return NULL;
  return (struct wconn *)p;
}
static inline void *unwrap_comm(void *p) {
  struct wconn *c = as_conn(p);
  return c ? c->inner : p;
}
static inline struct wlisten *as_listen(void *p) {
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)listens;
  if (a < b || a >= b + sizeof listens || (a - b) % sizeof(struct wlisten)) return NULL;
  return (struct wlisten *)p;
}
static inline struct wreq *as_req(void *p) {
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)reqs;
  if (a < b || a >= b + sizeof reqs || (a - b) % sizeof(struct wreq)) return NULL;
  return (struct wreq *)p;
}

static struct wconn *conn_new(void *inner, int dir, int peer, int dev, uint64_t token) {
  unsigned h = atomic_fetch_add_explicit(&conn_hint, 1, memory_order_relaxed);
  for (unsigned k = 0; k < NCONN; k++) {
    struct wconn *c = &conns[(h + k) % NCONN];
    int z = 0;
    if (atomic_load_explicit(&c->state, memory_order_relaxed) != 0 ||
        !atomic_compare_exchange_strong(&c->state, &z, 1))
      continue;
    c->inner = inner;
    c->dir = dir;
    c->peer_rank = peer;
    c->dev = dev;
    c->token = token;
    atomic_store_explicit(&c->bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&c->msgs, 0, memory_order_relaxed);
    atomic_store_explicit(&c->busy_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&c->inflight, 0, memory_order_relaxed);
    atomic_store_explicit(&c->max_inflight, 0, memory_order_relaxed);
    for (int i = 0; i < NHIST; i++) atomic_store_explicit(&c->hist[i], 0, memory_order_relaxed);
    c->l_bytes = c->l_msgs = c->l_busy = 0;
    memset(c->l_hist, 0, sizeof c->l_hist);
    c->l_emit_mono = cs_now_ns(CLOCK_MONOTONIC);
    c->l_emit_real = cs_now_ns(CLOCK_REALTIME);
    atomic_store_explicit(&c->state, 2, memory_order_release);
    return c;
  }
  atomic_fetch_add_explicit(&untracked, 1, memory_order_relaxed);
  cs_log_once(CS_LOG_WARN, "net plugin: more than %d open connections; further ones are not timed", NCONN);
  return NULL;
}

static __thread unsigned req_hint;
static struct wreq *req_new(void) {
  unsigned w0 = req_hint;
  for (unsigned k = 0; k < NREQ / 64; k++) {
    unsigned w = (w0 + k) % (NREQ / 64);
    uint64_t v = atomic_load_explicit(&req_bits[w], memory_order_relaxed);
    while (~v) {
      int b = __builtin_ctzll(~v);
      if (atomic_compare_exchange_weak_explicit(&req_bits[w], &v, v | (1ull << b), memory_order_acquire,
                                                memory_order_relaxed)) {
        req_hint = w;
        return &reqs[w * 64 + (unsigned)b];
      }
    }
  }
  return NULL;
}
static void req_free(struct wreq *r) {
  size_t i = (size_t)(r - reqs);
  atomic_fetch_and_explicit(&req_bits[i / 64], ~(1ull << (i % 64)), memory_order_release);
}

/* throughput bucket: 4 per octave of bytes/us (= MB/s); bucket b covers [2^(b/4)...) */
static inline int rate_bucket(uint64_t bytes, int64_t ns) {
  if (ns <= 0) ns = 1;
  uint64_t r = bytes * 1000u / (uint64_t)ns; /* MB/s; bytes < 2^44 in practice */
  if (r == 0) return 0;
  int m = 63 - __builtin_clzll(r);
  int sub = m >= 2 ? (int)((r >> (m - 2)) & 3) : (int)((r << (2 - m)) & 3);
  int b = 1 + m * 4 + sub;
  return b < NHIST ? b : NHIST - 1;
}
static inline void conn_done(struct wconn *c, uint64_t bytes, int64_t dur) {
  if (dur < 0) dur = 0;
  atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->msgs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->busy_ns, (uint64_t)dur, memory_order_relaxed);
  if (bytes) atomic_fetch_add_explicit(&c->hist[rate_bucket(bytes, dur)], bytes, memory_order_relaxed);
  atomic_fetch_sub_explicit(&c->inflight, 1, memory_order_relaxed);
}
static inline void conn_posted(struct wconn *c) {
  int f = atomic_fetch_add_explicit(&c->inflight, 1, memory_order_relaxed) + 1;
  int m = atomic_load_explicit(&c->max_inflight, memory_order_relaxed);
  while (f > m && !atomic_compare_exchange_weak_explicit(&c->max_inflight, &m, f, memory_order_relaxed,
                                                         memory_order_relaxed)) {
  }
}

/* ---- common implementations -------------------------------------------------------------- */
cs_net_result_t cs_net_init_common(void) {
  cs_ensure_init();
  pthread_once(&load_once, load_inner);
  return in_ver ? CS_NET_OK : CS_NET_INTERNAL_ERROR;
}

cs_net_result_t cs_net_devices(int *ndev) {
  return in_ver == 11 ? in11->devices(ndev) : in_ver == 10 ? in10->devices(ndev)
                                                           : in9->devices(ndev);
}

static uint64_t new_token(void) {
  uint64_t z = token_seed + 0x9e3779b97f4a7c15ull * (atomic_fetch_add(&token_ctr, 1) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z ? z : 1;
}

cs_net_result_t cs_net_listen(struct wctx *x, int dev, void *handle, void **listenComm) {
  memset(handle, 0, CS_NET_HANDLE_MAXSIZE);
  void *lc = NULL;
  cs_net_result_t r = in_ver == 11   ? in11->listen(x->inner, dev, handle, &lc)
                      : in_ver == 10 ? in10->listen(dev, handle, &lc)
                                     : in9->listen(dev, handle, &lc);
  if (r != CS_NET_OK || !lc) {
    *listenComm = lc;
    return r;
  }
  uint64_t token = 0;
  static const unsigned char zero[sizeof(struct cs_net_id)];
  unsigned char *tail = (unsigned char *)handle + CS_NET_ID_OFFSET;
  if (!memcmp(tail, zero, sizeof zero)) {
    struct cs_net_id id = {CS_NET_ID_MAGIC, cs_cfg.rank, new_token()};
    memcpy(tail, &id, sizeof id);
    token = id.token;
  } else {
    cs_log_once(CS_LOG_INFO, "net plugin: the inner plugin's handle uses all %d bytes; peers are "
                             "identified by the dump files' link tokens only where they fit",
                CS_NET_HANDLE_MAXSIZE);
  }
  for (int i = 0; i < NLISTEN; i++) {
    int z = 0;
    if (atomic_load_explicit(&listens[i].used, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong(&listens[i].used, &z, 1)) {
      listens[i].inner = lc;
      listens[i].dev = dev;
      listens[i].token = token;
      *listenComm = &listens[i];
      return r;
    }
  }
  atomic_fetch_add_explicit(&untracked, 1, memory_order_relaxed);
  *listenComm = lc;
  return r;
}

cs_net_result_t cs_net_connect(struct wctx *x, int dev, struct cs_net_comm_config *cfg, void *handle,
                               void **sendComm, void **devComm) {
  struct cs_net_id id;
  unsigned char *tail = (unsigned char *)handle + CS_NET_ID_OFFSET;
  memcpy(&id, tail, sizeof id);
  int ours = id.magic == CS_NET_ID_MAGIC;
  if (ours) memset(tail, 0, sizeof id); /* the inner sees exactly the bytes it wrote */
  void *sc = NULL;
  cs_net_result_t r;
  if (in_ver == 11)
    r = in11->connect(x->inner, dev, handle, &sc, devComm);
  else if (in_ver == 10)
    r = in10->connect(dev, cfg ? cfg : (x->has_cfg ? &x->cfg : NULL), handle, &sc, devComm);
  else
    r = in9->connect(dev, handle, &sc, devComm);
  if (ours) memcpy(tail, &id, sizeof id); /* NCCL retries with the same handle */
  if (r != CS_NET_OK || !sc) {
    *sendComm = sc;
    return r;
  }
  struct wconn *c = conn_new(sc, 0, ours ? id.rank : -1, dev, ours ? id.token : 0);
  *sendComm = c ? (void *)c : sc;
  return r;
}

cs_net_result_t cs_net_accept(void *listenComm, void **recvComm, void **devComm) {
  struct wlisten *l = as_listen(listenComm);
  void *rc = NULL;
  void *lc = l ? l->inner : listenComm;
  cs_net_result_t r = in_ver == 11   ? in11->accept(lc, &rc, devComm)
                      : in_ver == 10 ? in10->accept(lc, &rc, devComm)
                                     : in9->accept(lc, &rc, devComm);
  if (r != CS_NET_OK || !rc) {
    *recvComm = rc;
    return r;
  }
  struct wconn *c = conn_new(rc, 1, -1, l ? l->dev : -1, l ? l->token : 0);
  *recvComm = c ? (void *)c : rc;
  return r;
}

cs_net_result_t cs_net_reg_mr(void *comm, void *data, size_t size, int type, void **mh) {
  void *ic = unwrap_comm(comm);
  return in_ver == 11   ? in11->regMr(ic, data, size, type, mh)
         : in_ver == 10 ? in10->regMr(ic, data, size, type, mh)
                        : in9->regMr(ic, data, size, type, mh);
}
cs_net_result_t cs_net_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t off, int fd,
                                     void **mh) {
  void *ic = unwrap_comm(comm);
  return in_ver == 11   ? in11->regMrDmaBuf(ic, data, size, type, off, fd, mh)
         : in_ver == 10 ? in10->regMrDmaBuf(ic, data, size, type, off, fd, mh)
                        : in9->regMrDmaBuf(ic, data, size, type, off, fd, mh);
}
cs_net_result_t cs_net_dereg_mr(void *comm, void *mh) {
  void *ic = unwrap_comm(comm);
  return in_ver == 11 ? in11->deregMr(ic, mh) : in_ver == 10 ? in10->deregMr(ic, mh)
                                                             : in9->deregMr(ic, mh);
}

/* The request handed to NCCL for a posted isend/irecv: collscope's wrapper around the inner
 * plugin's request ir, so that its completion is timed; the inner request itself (counted as
 * untracked) when no wrapper is free. */
static void *track(void *ir, struct wconn *c, int64_t t0, size_t bytes, int n) {
  struct wreq *w = req_new();
  if (!w) {
    atomic_fetch_add_explicit(&untracked, 1, memory_order_relaxed);
    return ir;
  }
  w->inner = ir;
  w->c = c;
  w->t0 = t0;
  w->bytes = bytes;
  w->n = n;
  conn_posted(c);
  return w;
}

cs_net_result_t cs_net_isend(void *sendComm, void *data, size_t size, int tag, void *mh, void *ph, void **request) {
  struct wconn *c = as_conn(sendComm);
  void *ic = c ? c->inner : sendComm;
  void *ir = NULL;
  int64_t t0 = cs_now_ns(CLOCK_MONOTONIC); /* the post: a plugin's copy or doorbell in isend is part of it */
  cs_net_result_t r = in_ver == 11   ? in11->isend(ic, data, size, tag, mh, ph, &ir)
                      : in_ver == 10 ? in10->isend(ic, data, size, tag, mh, ph, &ir)
                                     : in9->isend(ic, data, size, tag, mh, &ir);
  *request = (r == CS_NET_OK && ir && c) ? track(ir, c, t0, size, 0) : ir;
  return r;
}

cs_net_result_t cs_net_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhs, void **phs,
                             void **request) {
  struct wconn *c = as_conn(recvComm);
  void *ic = c ? c->inner : recvComm;
  void *ir = NULL;
  int64_t t0 = cs_now_ns(CLOCK_MONOTONIC);
  cs_net_result_t r = in_ver == 11   ? in11->irecv(ic, n, data, sizes, tags, mhs, phs, &ir)
                      : in_ver == 10 ? in10->irecv(ic, n, data, sizes, tags, mhs, phs, &ir)
                                     : in9->irecv(ic, n, data, sizes, tags, mhs, &ir);
  *request = (r == CS_NET_OK && ir && c && !in_has_consumed) ? track(ir, c, t0, 0, n) : ir;
  return r;
}

cs_net_result_t cs_net_iflush(void *recvComm, int n, void **data, int *sizes, void **mhs, void **request) {
  void *ic = unwrap_comm(recvComm);
  return in_ver == 11   ? in11->iflush(ic, n, data, sizes, mhs, request)
         : in_ver == 10 ? in10->iflush(ic, n, data, sizes, mhs, request)
                        : in9->iflush(ic, n, data, sizes, mhs, request);
}

cs_net_result_t cs_net_test(void *request, int *done, int *sizes) {
  struct wreq *w = as_req(request);
  void *ir = w ? w->inner : request;
  int local[8];
  int *sz = sizes;
  if (w && !sz && w->n > 0 && w->n <= 8) sz = local; /* NCCL may pass NULL; we still want the sizes */
  cs_net_result_t r = in_ver == 11 ? in11->test(ir, done, sz) : in_ver == 10 ? in10->test(ir, done, sz)
                                                                             : in9->test(ir, done, sz);
  if (!w) return r;
  if (r != CS_NET_OK) { /* the request is dead: stop tracking it */
    atomic_fetch_sub_explicit(&w->c->inflight, 1, memory_order_relaxed);
    req_free(w);
    return r;
  }
  if (!*done) return r;
  uint64_t bytes = w->bytes;
  if (w->n > 0 && sz)
    for (int i = 0; i < w->n; i++) bytes += sz[i] > 0 ? (uint64_t)sz[i] : 0;
  conn_done(w->c, bytes, cs_now_ns(CLOCK_MONOTONIC) - w->t0);
  req_free(w);
  return r;
}

static cs_net_result_t close_conn(void *comm, int send) {
  struct wconn *c = as_conn(comm);
  void *ic = c ? c->inner : comm;
  cs_net_result_t r;
  if (send)
    r = in_ver == 11 ? in11->closeSend(ic) : in_ver == 10 ? in10->closeSend(ic)
                                                          : in9->closeSend(ic);
  else
    r = in_ver == 11 ? in11->closeRecv(ic) : in_ver == 10 ? in10->closeRecv(ic)
                                                          : in9->closeRecv(ic);
  /* the harvest thread writes its last record and frees it; with no harvest thread, free it now */
  if (c) atomic_store_explicit(&c->state, atomic_load(&cs_st.ready) ? 3 : 0, memory_order_release);
  return r;
}
cs_net_result_t cs_net_close_send(void *c) { return close_conn(c, 1); }
cs_net_result_t cs_net_close_recv(void *c) { return close_conn(c, 0); }
cs_net_result_t cs_net_close_listen(void *listenComm) {
  struct wlisten *l = as_listen(listenComm);
  void *lc = l ? l->inner : listenComm;
  cs_net_result_t r = in_ver == 11 ? in11->closeListen(lc) : in_ver == 10 ? in10->closeListen(lc)
                                                                          : in9->closeListen(lc);
  if (l) atomic_store_explicit(&l->used, 0, memory_order_release);
  return r;
}
cs_net_result_t cs_net_get_device_mr(void *comm, void *mh, void **dptr) {
  void *ic = unwrap_comm(comm);
  return in_ver == 11   ? in11->getDeviceMr(ic, mh, dptr)
         : in_ver == 10 ? in10->getDeviceMr(ic, mh, dptr)
                        : in9->getDeviceMr(ic, mh, dptr);
}
cs_net_result_t cs_net_irecv_consumed(void *recvComm, int n, void *request) {
  void *ic = unwrap_comm(recvComm);
  struct wreq *w = as_req(request);
  void *ir = w ? w->inner : request;
  return in_ver == 11   ? in11->irecvConsumed(ic, n, ir)
         : in_ver == 10 ? in10->irecvConsumed(ic, n, ir)
                        : in9->irecvConsumed(ic, n, ir);
}

/* A forked child has none of the parent's connections (NCCL's do not survive fork): its dump
 * must not get the parent's figures. */
static void atfork_child(void) {
  for (int i = 0; i < NCONN; i++) atomic_store(&conns[i].state, 0);
  for (int i = 0; i < NLISTEN; i++) atomic_store(&listens[i].used, 0);
  for (int i = 0; i < NREQ / 64; i++) atomic_store(&req_bits[i], 0);
}