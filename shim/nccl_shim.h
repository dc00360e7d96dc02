/* shim/nccl_shim.h: declarations shared by the generated NCCL wrappers and the
 * hand-written life-cycle wrappers: the real-function pointers (from nccl_api.def),
 * resolution and the entry guard every wrapper starts with. */
#ifndef COLLSCOPE_NCCL_SHIM_H
#define COLLSCOPE_NCCL_SHIM_H
#include <nccl.h>
#include "cs_internal.h"

#define NCCL_API(ret, name, params, args, err) extern ret(*cs_real_##name) params;
#define NCCL_HOOKED NCCL_API
#define NCCL_OP(name, csop, params, args, count, dtype, redop, root, peer, send, recv) \
  NCCL_API(ncclResult_t, name, params, args, ncclSystemError)
#include "nccl_api.def"

bool cs_resolve_nccl(void);
void cs_missing_real(const char *name);

/* Find the real function (once; retried while missing) or return err with a log line.
 * First, while COLLSCOPE_SDC_ACTION=abort is ending the process, park the caller: it must
 * not use a communicator collscope is aborting (cs_park, shim/init.c). */
#define CS_RESOLVE(name, err) \
  do { \
    if (CS_UNLIKELY(atomic_load_explicit(&cs_st.park, memory_order_relaxed))) cs_park(); \
    if (CS_UNLIKELY(!__atomic_load_n(&cs_real_##name, __ATOMIC_ACQUIRE))) { \
      cs_resolve_nccl(); \
      if (!__atomic_load_n(&cs_real_##name, __ATOMIC_ACQUIRE)) { \
        static _Atomic int warned_; \
        if (!atomic_exchange(&warned_, 1)) cs_missing_real(#name); \
        return err; \
      } \
    } \
  } while (0)

/* Recording is on (initialising on first use). ready is set only once initialisation
 * is complete, so the steady state is one load. */
static inline bool cs_active(void) {
  if (CS_LIKELY(atomic_load_explicit(&cs_st.ready, memory_order_acquire))) return true;
  cs_ensure_init();
  return atomic_load_explicit(&cs_st.ready, memory_order_acquire) != 0;
}

#endif
