/* shim/profiler_chain.c: the profiler plugin tables NCCL calls (ncclProfiler_v6 for NCCL
 * 2.29/2.30, v5 for 2.28, v4 for 2.27), the chaining to an inner profiler plugin
 * (COLLSCOPE_PROFILER_INNER), and the start-up step that points NCCL_PROFILER_PLUGIN at
 * this library.
 *
 * NCCL loads exactly one profiler plugin. With COLLSCOPE_PROFILER_INNER=PATH|NAME collscope,
 * in that slot, loads a second one and forwards every call to it, so that it sees what it
 * would have seen alone:
 *  - lookup as NCCL's src/plugin/plugin_open.cc (openPluginLib, v2.30.7-1) does for
 *    NCCL_PROFILER_PLUGIN: dlopen the value as given; if that fails and the value has no '/'
 *    and is not a "lib*.so" name, dlopen "libnccl-profiler-<value>.so"; "none" means none,
 *    a prefix of "STATIC_PLUGIN" means the process itself. The version, as NCCL's
 *    src/plugin/profiler.cc (ncclProfilerPluginLoad) does, is the highest of v6, v5, v4 the
 *    inner exports -- but no higher than the table NCCL called collscope through (an NCCL
 *    that calls v5 would never have used the inner's v6). Older inner plugins (v1-v3) and
 *    collscope itself are declined.
 *  - init: the inner gets its own mask word (a process-wide int, as NCCL's is) and sets its
 *    event types there; NCCL's mask gets collscope's types OR the inner's (the inner's
 *    limited to what its version knows, as NCCL's v5 adapter clears the CE bits). An inner
 *    that changes its word later is seen at the next event.
 *  - events: each plugin gets only the types it asked for, with its own parent handles. The
 *    handle NCCL holds is a pair (collscope's, the inner's) from a fixed table, encoded like
 *    collscope's own handles (index, generation): no pointer NCCL hands back is ever
 *    dereferenced. Stopped pairs stay readable (children of a stopped Coll -- KernelCh,
 *    ProxyOp -- still find their parent) until the table wraps round (PAIRS entries; a
 *    parent older than that reaches both plugins as NULL, one WARN line).
 *    A descriptor is converted to the inner's version as NCCL's own adapters do (v6 -> v5:
 *    CE events and states dropped; -> v4: one-byte type, v5-only types and states dropped).
 *  - collscope's own communicators (commName "collscope-*") are not shown to the inner.
 *  - A failing inner (library or symbol missing, its init failing on the first communicator)
 *    is dropped with one log line; collscope keeps timing. Its init failing on a later
 *    communicator drops it for that communicator only.
 * `auto` chaining: when NCCL_PROFILER_PLUGIN names another plugin at start-up and
 * COLLSCOPE_TIMING is auto (or profiler), collscope takes the slot and chains to that plugin
 * (one INFO line at the first init) instead of losing the profiler timer. */
#include "cs_internal.h"
#include "profiler_internal.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

CS_EXPORT extern cs_nccl_profiler_v6_t ncclProfiler_v6;
CS_EXPORT extern cs_nccl_profiler_v5_t ncclProfiler_v5;
CS_EXPORT extern cs_nccl_profiler_v4_t ncclProfiler_v4;

/* ---- the inner plugin ---- */
static pthread_once_t inner_once = PTHREAD_ONCE_INIT;
static int load_abi; /* the version NCCL called first (decides the inner's) */
static int in_ver;   /* 6, 5, 4; 0 = none (or dropped) */
static const cs_nccl_profiler_v6_t *in6;
static const cs_nccl_profiler_v5_t *in5;
static const cs_nccl_profiler_v4_t *in4;
static char in_desc[300];
static _Atomic int chain_on;   /* the inner initialised once: every handle NCCL gets is a pair */
static int inner_mask;         /* the inner's own mask word */
static int *_Atomic nccl_mask; /* NCCL's mask word */
static _Atomic int published;  /* what collscope last wrote there */
static char auto_from[256];    /* NCCL_PROFILER_PLUGIN that `auto` chained to */

static int inner_types(void) {
  if (!in_ver) return 0;
  int m = __atomic_load_n(&inner_mask, __ATOMIC_RELAXED);
  return m & (in_ver >= 6 ? ~0 : in_ver == 5 ? CS_NCCL_PROFILE_V5_TYPES
                                             : CS_NCCL_PROFILE_V4_TYPES);
}

int cs_prof_mask_published(void) { return atomic_load(&published); }

void cs_prof_mask_publish(void) {
  int *m = atomic_load(&nccl_mask);
  int v = cs_prof_core_bits() | (atomic_load(&chain_on) ? inner_types() : 0);
  atomic_store(&published, v);
  if (m) __atomic_store_n(m, v, __ATOMIC_RELAXED);
}

/* NCCL's openPluginLib, for the profiler prefix */
static void *open_like_nccl(const char *v) {
  size_t n = strlen(v);
  if (!strncasecmp(v, "STATIC_PLUGIN", n)) return dlopen(NULL, RTLD_NOW | RTLD_LOCAL);
  void *h = dlopen(v, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  bool libso = !strncmp(v, "lib", 3) && n >= 3 && !strcmp(v + n - 3, ".so");
  if (strchr(v, '/') || libso) return NULL;
  char name[300];
  snprintf(name, sizeof name, "libnccl-profiler-%s.so", v);
  return dlopen(name, RTLD_NOW | RTLD_LOCAL);
}

static void load_inner(void) {
  const char *v = getenv("COLLSCOPE_PROFILER_INNER");
  if (!v || !*v || !strcasecmp(v, "none")) return;
  snprintf(in_desc, sizeof in_desc, "%s", v);
  void *h = open_like_nccl(v);
  if (!h) {
    const char *e = dlerror();
    cs_log(CS_LOG_WARN, "profiler chaining: cannot load COLLSCOPE_PROFILER_INNER=%s (%s); dropped, collscope "
                        "keeps timing alone",
           v, e ? e : "not found");
    return;
  }
  if (load_abi >= 6) in6 = dlsym(h, "ncclProfiler_v6");
  if (!in6 && load_abi >= 5) in5 = dlsym(h, "ncclProfiler_v5");
  if (!in6 && !in5) in4 = dlsym(h, "ncclProfiler_v4");
  const void *t = in6 ? (const void *)in6 : in5 ? (const void *)in5
                                                : (const void *)in4;
  const char *why = !t                                                                        ? "exports no ncclProfiler_v6/v5/v4 that this NCCL would use"
                    : t == &ncclProfiler_v6 || t == &ncclProfiler_v5 || t == &ncclProfiler_v4 ? "is collscope itself"
                                                                                              : NULL;
  const char *name = in6 ? in6->name : in5 ? in5->name
                                   : in4   ? in4->name
                                           : NULL;
  if (!why && (in6   ? !in6->init || !in6->startEvent || !in6->stopEvent || !in6->recordEventState || !in6->finalize
               : in5 ? !in5->init || !in5->startEvent || !in5->stopEvent || !in5->recordEventState || !in5->finalize
                     : !in4->init || !in4->startEvent || !in4->stopEvent || !in4->recordEventState || !in4->finalize))
    why = "has a NULL entry point";
  if (why) {
    cs_log(CS_LOG_WARN, "profiler chaining: COLLSCOPE_PROFILER_INNER=%s %s; dropped, collscope keeps timing alone", v,
           why);
    in6 = NULL, in5 = NULL, in4 = NULL;
    if (t != &ncclProfiler_v6 && t != &ncclProfiler_v5 && t != &ncclProfiler_v4) dlclose(h);
    return;
  }
  in_ver = in6 ? 6 : in5 ? 5
                         : 4;
  snprintf(in_desc, sizeof in_desc, "%s (%s, ncclProfiler_v%d)", name ? name : "?", v, in_ver);
}

/* ---- handle pairs ---- */
#define PAIRS 65536u
struct pair {
  _Atomic uint64_t gen;
  _Atomic int live; /* started, not stopped */
  void *cs, *in;
};
static struct pair pairs[PAIRS];
static _Atomic uint32_t pair_cursor;
static _Atomic uint64_t pairs_lost;
#define H_PAIR 3u

static void *pair_new(void *cs, void *in) {
  uint32_t start = atomic_fetch_add_explicit(&pair_cursor, 1, memory_order_relaxed);
  for (uint32_t k = 0; k < 256; k++) {
    uint32_t idx = (start + k) & (PAIRS - 1);
    struct pair *p = &pairs[idx];
    int z = 0;
    if (!atomic_compare_exchange_strong_explicit(&p->live, &z, 1, memory_order_acq_rel, memory_order_relaxed))
      continue;
    uint64_t gen = (atomic_load_explicit(&p->gen, memory_order_relaxed) + 1) & ((1ull << 44) - 1);
    if (!gen) gen = 1;
    atomic_store_explicit(&p->gen, 0, memory_order_release); /* readers see no pair while it changes */
    p->cs = cs;
    p->in = in;
    atomic_store_explicit(&p->gen, gen, memory_order_release);
    return (void *)(uintptr_t)((gen << 20) | ((uint64_t)idx << 2) | H_PAIR);
  }
  if (atomic_fetch_add_explicit(&pairs_lost, 1, memory_order_relaxed) == 0)
    cs_log(CS_LOG_WARN, "profiler chaining: more than %u profiler events open at once; further events reach neither "
                        "plugin",
           PAIRS);
  return NULL;
}
static struct pair *pair_get(const void *h, void **cs, void **in) {
  uintptr_t v = (uintptr_t)h;
  if (!v || (v & 3u) != H_PAIR) return NULL;
  struct pair *p = &pairs[(v >> 2) & (PAIRS - 1)];
  uint64_t g = atomic_load_explicit(&p->gen, memory_order_acquire);
  if (g != (uint64_t)(v >> 20)) return NULL;
  *cs = p->cs;
  *in = p->in;
  if (atomic_load_explicit(&p->gen, memory_order_acquire) != g) return NULL;
  return p;
}

/* ---- the per-communicator context ---- */
struct chain_ctx {
  void *cs; /* collscope's context (NULL: collscope declined) */
  void *in; /* the inner's context */
  bool in_ok;
};

static cs_nccl_result_t chain_init(void **context, uint64_t comm, int *mask, const char *commName, int nNodes,
                                   int nranks, int rank, cs_nccl_logger_t logfn, int abi) {
  if (!context || !mask) return 3;
  *context = NULL;
  if (!load_abi) load_abi = abi;
  pthread_once(&inner_once, load_inner);
  static _Atomic int said;
  if (auto_from[0] && !atomic_exchange(&said, 1))
    cs_log(CS_LOG_INFO, "NCCL_PROFILER_PLUGIN=%s was set: collscope takes NCCL's profiler slot and chains to it "
                        "(COLLSCOPE_PROFILER_INNER); both time",
           auto_from);
  struct chain_ctx *c = calloc(1, sizeof *c);
  if (!c) return 3;
  atomic_store(&nccl_mask, mask);
  bool cs_ok = cs_prof_core_init(&c->cs, comm, nranks, rank, abi) == 0;
  /* collscope's own communicators (the online exchange's "collscope-online") would not
   * exist without it: the inner never hears of them */
  bool ours = commName && !strncmp(commName, "collscope-", 10);
  if (in_ver && !ours) {
    cs_nccl_result_t r = in_ver == 6   ? in6->init(&c->in, comm, &inner_mask, commName, nNodes, nranks, rank, logfn)
                         : in_ver == 5 ? in5->init(&c->in, comm, &inner_mask, commName, nNodes, nranks, rank, logfn)
                                       : in4->init(&c->in, &inner_mask, commName, comm, nNodes, nranks, rank, logfn);
    if (r == 0) {
      c->in_ok = true;
      if (!atomic_exchange(&chain_on, 1))
        cs_log(CS_LOG_INFO, "profiler chaining: NCCL's profiler events are forwarded to %s", in_desc);
    } else if (!atomic_load(&chain_on)) {
      cs_log(CS_LOG_WARN, "profiler chaining: %s failed to initialise (%d); dropped, collscope keeps timing alone",
             in_desc, r);
      in_ver = 0;
      __atomic_store_n(&inner_mask, 0, __ATOMIC_RELAXED);
    } else {
      cs_log_once(CS_LOG_WARN, "profiler chaining: %s failed to initialise (%d) for a communicator; that "
                               "communicator's events are not forwarded to it",
                  in_desc, r);
    }
  }
  if (!cs_ok && !c->in_ok) {
    free(c);
    *mask = 0;
    return 3; /* NCCL then runs without this plugin */
  }
  *context = c;
  cs_prof_mask_publish();
  return 0;
}

/* v6/v5 descriptor (same union offsets) -> the inner's version; false: not for the inner */
static bool to_inner(const cs_nccl_prof_descr_v6_t *d, void *in_parent, void *in_group, cs_nccl_prof_descr_v6_t *o6,
                     cs_nccl_prof_descr_v4_t *o4) {
  if (in_ver >= 5) {
    *o6 = *d;
    o6->parentObj = in_parent;
    if (d->type == CS_NCCL_PROFILE_COLL) o6->coll.parentGroup = in_group;
    if (d->type == CS_NCCL_PROFILE_P2P) o6->p2p.parentGroup = in_group;
    return true;
  }
  if (d->type & ~(uint64_t)CS_NCCL_PROFILE_V4_TYPES) return false;
  memset(o4, 0, sizeof *o4);
  o4->type = (uint8_t)d->type;
  o4->parentObj = in_parent;
  o4->rank = d->rank;
  memcpy(&o4->coll, &d->coll, sizeof o4->coll); /* v4's members are prefixes of v5's, same offsets */
  return true;
}

/* A parent handle for one side. Every handle NCCL holds came from pair_new; one that no
 * longer reads (its entry reused after the table wrapped round: a parent open that long)
 * becomes NULL, so neither plugin is ever handed a handle it did not make. */
static _Atomic uint64_t stale_parents;
static void *translate(void *h, bool inner) {
  void *cs, *in;
  if (!h) return NULL;
  if (!pair_get(h, &cs, &in)) {
    if (atomic_fetch_add_explicit(&stale_parents, 1, memory_order_relaxed) == 0)
      cs_log(CS_LOG_WARN, "profiler chaining: an event's parent was started more than %u events earlier and is no "
                          "longer known; such events reach both plugins without a parent",
             PAIRS);
    return NULL;
  }
  return inner ? in : cs;
}

static cs_nccl_result_t chain_start(void *context, void **eHandle, const cs_nccl_prof_descr_v6_t *d,
                                    const void *u_cs) {
  struct chain_ctx *c = context;
  if (!eHandle) return 0;
  *eHandle = NULL;
  if (!c || !d) return 0;
  if (!atomic_load_explicit(&chain_on, memory_order_relaxed)) { /* no inner: collscope's handles as they are */
    if (c->cs && (d->type & (uint64_t)cs_prof_core_bits())) *eHandle = cs_prof_core_start(d->type, d->parentObj, u_cs);
    return 0;
  }
  if (atomic_load_explicit(&published, memory_order_relaxed) != (cs_prof_core_bits() | inner_types()))
    cs_prof_mask_publish(); /* the inner changed its word */
  void *hcs = NULL, *hin = NULL;
  if (c->cs && (d->type & (uint64_t)cs_prof_core_bits()))
    hcs = cs_prof_core_start(d->type, translate(d->parentObj, false), u_cs);
  if (c->in_ok && (d->type & (uint64_t)inner_types())) {
    void *grp = d->type == CS_NCCL_PROFILE_COLL  ? d->coll.parentGroup
                : d->type == CS_NCCL_PROFILE_P2P ? d->p2p.parentGroup
                                                 : NULL;
    cs_nccl_prof_descr_v6_t o6;
    cs_nccl_prof_descr_v4_t o4;
    if (to_inner(d, translate(d->parentObj, true), grp ? translate(grp, true) : NULL, &o6, &o4)) {
      if (in_ver == 6)
        in6->startEvent(c->in, &hin, &o6);
      else if (in_ver == 5)
        in5->startEvent(c->in, &hin, (cs_nccl_prof_descr_v5_t *)&o6);
      else
        in4->startEvent(c->in, &hin, &o4);
    }
  }
  if (hcs || hin) {
    *eHandle = pair_new(hcs, hin);
    if (!*eHandle) { /* no pair free: both ends are told the event is over */
      if (hcs) cs_prof_core_stop(hcs);
      if (hin) (in_ver == 6 ? in6->stopEvent : in_ver == 5 ? in5->stopEvent
                                                           : in4->stopEvent)(hin);
    }
  }
  return 0;
}

static cs_nccl_result_t chain_stop(void *h) {
  if (!atomic_load_explicit(&chain_on, memory_order_relaxed)) {
    cs_prof_core_stop(h);
    return 0;
  }
  void *cs, *in;
  struct pair *p = pair_get(h, &cs, &in);
  if (!p) return 0;
  if (cs) cs_prof_core_stop(cs);
  if (in) (in_ver == 6 ? in6->stopEvent : in_ver == 5 ? in5->stopEvent
                                                      : in4->stopEvent)(in);
  atomic_store_explicit(&p->live, 0, memory_order_release);
  return 0;
}

static cs_nccl_result_t chain_state(void *h, cs_nccl_profiler_state_t st, cs_nccl_prof_state_args_t *a) {
  if (!atomic_load_explicit(&chain_on, memory_order_relaxed)) {
    cs_prof_core_state(h, st, a);
    return 0;
  }
  void *cs, *in;
  if (!pair_get(h, &cs, &in)) return 0;
  if (cs) cs_prof_core_state(cs, st, a);
  if (!in) return 0;
  bool ce = st >= CS_NCCL_PROFILER_CE_FIRST && st <= CS_NCCL_PROFILER_CE_LAST;
  bool v5only = st == CS_NCCL_PROFILER_GROUP_START_API_STOP || st == CS_NCCL_PROFILER_GROUP_END_API_START;
  if (in_ver == 6)
    in6->recordEventState(in, st, a);
  else if (in_ver == 5 && !ce)
    in5->recordEventState(in, st, a);
  else if (in_ver == 4 && !ce && !v5only)
    in4->recordEventState(in, st, a);
  return 0;
}

static cs_nccl_result_t chain_finalize(void *context) {
  struct chain_ctx *c = context;
  if (!c) return 0;
  if (c->cs) cs_prof_core_finalize(c->cs);
  if (c->in_ok) (in_ver == 6 ? in6->finalize : in_ver == 5 ? in5->finalize
                                                           : in4->finalize)(c->in);
  free(c);
  return 0;
}

/* ---- the tables NCCL looks up ---- */
static cs_nccl_result_t v6_init(void **context, uint64_t commId, int *mask, const char *commName, int nNodes,
                                int nranks, int rank, cs_nccl_logger_t logfn) {
  return chain_init(context, commId, mask, commName, nNodes, nranks, rank, logfn, 6);
}
static cs_nccl_result_t v5_init(void **context, uint64_t commId, int *mask, const char *commName, int nNodes,
                                int nranks, int rank, cs_nccl_logger_t logfn) {
  return chain_init(context, commId, mask, commName, nNodes, nranks, rank, logfn, 5);
}
static cs_nccl_result_t v4_init(void **context, int *mask, const char *commName, uint64_t commHash, int nNodes,
                                int nranks, int rank, cs_nccl_logger_t logfn) {
  return chain_init(context, commHash, mask, commName, nNodes, nranks, rank, logfn, 4);
}
static cs_nccl_result_t v6_start(void *context, void **h, cs_nccl_prof_descr_v6_t *d) {
  return chain_start(context, h, d, d ? (const void *)&d->coll : NULL);
}
static cs_nccl_result_t v5_start(void *context, void **h, cs_nccl_prof_descr_v5_t *d) {
  if (!d) return chain_start(context, h, NULL, NULL);
  cs_nccl_prof_descr_v6_t d6; /* v5's descriptor is v6's without the CE members: same size and offsets */
  memcpy(&d6, d, sizeof d6);
  return chain_start(context, h, &d6, &d->coll);
}
static cs_nccl_result_t v4_start(void *context, void **h, cs_nccl_prof_descr_v4_t *d) {
  if (!d) return chain_start(context, h, NULL, NULL);
  cs_nccl_prof_descr_v6_t d6;
  memset(&d6, 0, sizeof d6);
  d6.type = d->type;
  d6.parentObj = d->parentObj;
  d6.rank = d->rank;
  memcpy(&d6.coll, &d->coll, sizeof d->coll);
  return chain_start(context, h, &d6, &d->coll);
}

CS_EXPORT cs_nccl_profiler_v6_t ncclProfiler_v6 = {"collscope", v6_init, v6_start, chain_stop, chain_state,
                                                   chain_finalize};
CS_EXPORT cs_nccl_profiler_v5_t ncclProfiler_v5 = {"collscope", v5_init, v5_start, chain_stop, chain_state,
                                                   chain_finalize};
CS_EXPORT cs_nccl_profiler_v4_t ncclProfiler_v4 = {"collscope", v4_init, v4_start, chain_stop, chain_state,
                                                   chain_finalize};

/* ---- start-up: point NCCL at this library ---- */
__attribute__((constructor)) static void cs_prof_constructor(void) {
  const char *dis = getenv("COLLSCOPE_DISABLE");
  if (dis && (!strcmp(dis, "1") || !strcasecmp(dis, "true") || !strcasecmp(dis, "yes") || !strcasecmp(dis, "on")))
    return;
  int mode = cs_timing_mode_parse(getenv("COLLSCOPE_TIMING"));
  if (mode < 0) mode = cs_timing_mode_parse(NULL); /* a bad value means the default (config.c logs it) */
  if (mode != CS_TMODE_AUTO && mode != CS_TMODE_PROFILER) return;
  Dl_info info;
  if (!dladdr((void *)&ncclProfiler_v5, &info) || !info.dli_fname || !*info.dli_fname) return;
  char *abs = realpath(info.dli_fname, NULL); /* LD_PRELOAD may name it relative to the cwd */
  if (!abs) return;
  const char *cur = getenv("NCCL_PROFILER_PLUGIN");
  if (cur && *cur) {
    /* another plugin holds the slot: chain to it, unless the user named the inner already */
    const char *inner = getenv("COLLSCOPE_PROFILER_INNER");
    char *cur_abs = realpath(cur, NULL);
    bool self = cur_abs && !strcmp(cur_abs, abs);
    free(cur_abs);
    if (!self && strcasecmp(cur, "none") && !(inner && *inner) && strlen(cur) < sizeof auto_from) {
      snprintf(auto_from, sizeof auto_from, "%s", cur);
      setenv("COLLSCOPE_PROFILER_INNER", cur, 1);
      setenv("NCCL_PROFILER_PLUGIN", abs, 1);
    }
  } else {
    setenv("NCCL_PROFILER_PLUGIN", abs, 0);
  }
  free(abs);
}
