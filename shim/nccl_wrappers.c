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
#define NCCL_API(ret, name, params, args, err)                                       \
  if (!__atomic_load_n(&cs_real_##name, __ATOMIC_ACQUIRE)) {                        \
    void *p_ = find_real(#name, (void *)name);                                      \
    if (p_) __atomic_store_n((void **)(void *)&cs_real_##name, p_, __ATOMIC_RELEASE); \
    else all = false;                                                               \
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

/* plain forwarders */
#define NCCL_API(ret, name, params, args, err)    \
  CS_EXPORT ret name params {                     \
    CS_RESOLVE(name, err);                        \
    cs_tls.depth++;                               \
    ret r_ = cs_real_##name args;                 \
    cs_tls.depth--;                               \
    return r_;                                    \
  }
/* timed collectives and P2P: record, run the hooks (which may route the call to
 * another communicator and translate its root), call the real function, end the record's
 * timing (and, if NCCL rejected the call, give its seq back), run the after-op hooks,
 * push the record */
#define NCCL_OP(name, csop, params, args, count, dtype, redop, root, peer, send, recv)          \
  CS_EXPORT ncclResult_t name params {                                                     \
    CS_RESOLVE(name, ncclSystemError);                                                     \
    if (cs_tls.depth || CS_UNLIKELY(!cs_active())) return cs_real_##name args;            \
    int cs_noroot_ = -1;                                                                   \
    struct cs_record rec_;                                                                 \
    struct cs_comm *cs_ce_ = cs_op_begin(&rec_, csop, comm, count, (int)(dtype), (int)(redop), \
                                         root, peer, stream, __builtin_return_address(0)); \
    struct cs_call call_ = {csop, send, recv, count, (int)(dtype), (int)(redop), root, peer, \
                            comm, stream, &rec_};                                          \
    cs_tls.depth++;                                                                        \
    cs_hooks_before_op(&call_);                                                            \
    comm = (ncclComm_t)call_.comm;                                                         \
    root = cs_call_root(&call_);                                                           \
    (void)cs_noroot_;                                                                      \
    cs_prof_cur = &rec_; /* NCCL's profiler Coll/P2p event of this call attaches here */  \
    ncclResult_t r_ = cs_real_##name args;                                                 \
    cs_prof_cur = NULL;                                                                    \
    cs_op_returned(&rec_, cs_ce_, (int)r_, (int)ncclInProgress); /* end event, seq */     \
    cs_hooks_after_op(&call_, (int)r_);  /* may add work (SDC check) after the end event */ \
    cs_tls.depth--;                                                                        \
    cs_op_end(&rec_);                                                                      \
    return r_;                                                                             \
  }
#include "nccl_api.def"
