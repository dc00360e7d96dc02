/* shim/nccl_wrappers.c: every NCCL entry point, generated from shim/nccl_api.def:
 * the real-function pointers and their resolution (pncclX, else RTLD_NEXT ncclX, else
 * the already loaded libnccl.so.2 for jobs that loaded it RTLD_LOCAL), the plain
 * forwarders and the timed collective / P2P wrappers. Hand-written life-cycle and
 * group wrappers are in nccl_lifecycle.c. */
#include "nccl_shim.h"
#include "hooks/hooks.h"
#include "hooks/timing.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NCCL_API(ret, name, params, args, err) ret(*cs_real_##name) params;
#define NCCL_HOOKED NCCL_API
#define NCCL_OP(name, csop, params, args, count, dtype, redop, root, peer, send, recv) \
  NCCL_API(ncclResult_t, name, params, args, ncclSystemError)
#include "nccl_api.def"

/* own wrappers, to refuse resolving to ourselves */
#define NCCL_API(ret, name, params, args, err) CS_EXPORT ret name params;
#define NCCL_HOOKED NCCL_API
#define NCCL_OP(name, csop, params, args, count, dtype, redop, root, peer, send, recv) \
  NCCL_API(ncclResult_t, name, params, args, ncclSystemError)
#include "nccl_api.def"

static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int resolved_all;

static void *find_in(void *h, const char *name, void *self) {
  char pname[128];
  snprintf(pname, sizeof(pname), "p%s", name);
  void *p = dlsym(h, pname);
  if (!p || p == self) p = dlsym(h, name);
  if (p == self) p = NULL;
  return p;
}

static void *find_real(const char *name, void *self) {
  void *p = find_in(RTLD_NEXT, name, self);
  if (p) return p;
  const char *lib = cs_cfg.libnccl ? cs_cfg.libnccl : "libnccl.so.2";
  void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
  if (!h && cs_cfg.libnccl) h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
  if (h) p = find_in(h, name, self);
  return p;
}

/* Resolve every missing pointer; cheap no-op once all are found. Called again on a
 * miss because NCCL may be loaded (RTLD_LOCAL) after collscope's first look. */
bool cs_resolve_nccl(void) {
  if (atomic_load_explicit(&resolved_all, memory_order_acquire)) return true;
  pthread_mutex_lock(&resolve_lock);
  bool all = true;
#define NCCL_API(ret, name, params, args, err) \
  if (!__atomic_load_n(&cs_real_##name, __ATOMIC_ACQUIRE)) { \
    void *p_ = find_real(#name, (void *)name); \
    if (p_) \
      __atomic_store_n((void **)(void *)&cs_real_##name, p_, __ATOMIC_RELEASE); \
    else \
      all = false; \
  }
#define NCCL_HOOKED NCCL_API
#define NCCL_OP(name, csop, params, args, count, dtype, redop, root, peer, send, recv) \
  NCCL_API(ncclResult_t, name, params, args, ncclSystemError)
#include "nccl_api.def"
  if (all) atomic_store_explicit(&resolved_all, 1, memory_order_release);
  pthread_mutex_unlock(&resolve_lock);
  return all;
}

void cs_missing_real(const char *name) {
  cs_log(CS_LOG_WARN, "the real %s was not found (is libnccl.so.2 loaded?); returning an error", name);
}

/* Every wrapper checks COLLSCOPE_DISABLE (a process-wide flag, fixed at load) right after
 * finding the real function and before any per-thread state: disabled, a call costs a
 * few loads and one jump. */
#define CS_PASS_IF_DISABLED(name, args) \
  if (CS_UNLIKELY(cs_cfg.disabled)) return cs_real_##name args

/* plain forwarders */
#define NCCL_API(ret, name, params, args, err) \
  CS_EXPORT ret name params { \
    CS_RESOLVE(name, err); \
    CS_PASS_IF_DISABLED(name, args); \
    cs_tls.depth++; \
    ret r_ = cs_real_##name args; \
    cs_tls.depth--; \
    return r_; \
  }
/* timed collectives and P2P. The exported wrapper only decides, in its common cases,
 * whether to record, and ends in a tail call on every path, so it needs no stack frame:
 * disabled or recording, it costs a few loads. Anything else (real function not found
 * yet, parking, re-entry, not initialised) goes to cs_slow_X, the full entry logic.
 * cs_timed_X records: fill the record on its stack, run the hooks when one may have work
 * (they may route the call to another communicator and translate its root), call the real
 * function, end the record's timing (and, if NCCL rejected the call, give its seq back),
 * run the after-op hooks, copy the record into the queue (inline). The wrapper tail-calls
 * it with the same arguments, leaving the caller's return address (the call site) in
 * cs_tls.site, read before anything else can call a wrapper on this thread. */
#define NCCL_OP(name, csop, params, args, count, dtype, redop, root, peer, send, recv) \
  static __attribute__((noinline)) ncclResult_t cs_timed_##name params; \
  static __attribute__((noinline, cold)) ncclResult_t cs_slow_##name params { \
    CS_RESOLVE(name, ncclSystemError); \
    CS_PASS_IF_DISABLED(name, args); \
    if (cs_tls.depth || CS_UNLIKELY(!cs_active())) return cs_real_##name args; \
    return cs_timed_##name args; \
  } \
  CS_EXPORT ncclResult_t name params { \
    ncclResult_t(*real_) params = __atomic_load_n(&cs_real_##name, __ATOMIC_ACQUIRE); \
    /* (disabled, nothing can park: cs_st.park is set by recording only) */ \
    if (CS_LIKELY(real_ != NULL)) { \
      if (cs_cfg.disabled) return real_ args; \
      if (CS_LIKELY(!atomic_load_explicit(&cs_st.park, memory_order_relaxed)) && \
          CS_LIKELY(!cs_tls.depth && atomic_load_explicit(&cs_st.ready, memory_order_acquire))) { \
        cs_tls.site = __builtin_return_address(0); \
        return cs_timed_##name args; \
      } \
    } \
    cs_tls.site = __builtin_return_address(0); \
    return cs_slow_##name args; \
  } \
  static ncclResult_t cs_timed_##name params { \
    void *cs_site_ = cs_tls.site; \
    int cs_noroot_ = -1; \
    struct cs_record rec_; \
    cs_op_fill(&rec_, csop, count, (int)(dtype), (int)(redop), root, peer, stream, cs_site_); \
    struct cs_comm *cs_ce_ = cs_op_start(&rec_, comm, csop, count, (int)(dtype)); \
    if (rec_.timing == CS_TIMING_SAMPLED_OUT && cs_op_row_wants_events(cs_ce_, csop, rec_.bytes)) \
      cs_timed_begin(&rec_, stream); /* one of its row's first: events whatever the seq */ \
    struct cs_call call_; \
    bool cs_hooked_ = cs_hooks_wanted(csop, rec_.bytes); /* no hook has work: no call to describe */ \
    cs_tls.depth++; \
    if (CS_UNLIKELY(cs_hooked_)) { \
      cs_call_set(&call_, csop, send, recv, count, (int)(dtype), (int)(redop), root, peer, comm, stream, &rec_); \
      cs_hooks_before_op(&call_); \
      comm = (ncclComm_t)call_.comm; \
      root = cs_call_root(&call_); \
    } \
    (void)cs_noroot_; \
    cs_prof_cur = &rec_; /* NCCL's profiler Coll/P2p event of this call attaches here */ \
    ncclResult_t r_ = cs_real_##name args; \
    cs_prof_cur = NULL; \
    cs_op_returned(&rec_, cs_ce_, (int)r_, (int)ncclInProgress);     /* end event, seq */ \
    if (CS_UNLIKELY(cs_hooked_)) cs_hooks_after_op(&call_, (int)r_); /* may add work (SDC check) after the end event */ \
    cs_tls.depth--; \
    cs_op_end(&rec_); \
    return r_; \
  }
#include "nccl_api.def"
