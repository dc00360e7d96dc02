/* shim/cudart_wrappers.c: the CUDA runtime wrappers generated from shim/cudart_api.def: the
 * cudaMemcpy family, timed as transfers (bytes, direction, stream), and the graph calls
 * that time replays of captured NCCL ops (hooks/graph_timing.c). Only calls that reach the
 * dynamic libcudart are seen: a statically linked cudart bypasses this (see README). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include "cs_internal.h"
#include "hooks/graph_timing.h"
#include "hooks/timing.h"

/* The per-thread-stream variants are declared by the CUDA headers only in per-thread
 * builds; declare every row ourselves. */
#define CUDART_COPY(name, params, args, B_, K_, S_, A_) \
  CS_EXPORT cudaError_t name params; \
  static cudaError_t(*real_##name) params;
#define CUDART_GRAPH(name, params, args, W_, X_, G_) \
  CS_EXPORT cudaError_t name params; \
  static cudaError_t(*real_##name) params;
#define CUDRV_GRAPH(name, params, args, W_, X_, G_) \
  CS_EXPORT CUresult name params; \
  static CUresult(*real_##name) params;
#include "cudart_api.def"

enum {
#define CUDART_COPY(name, params, args, B_, K_, S_, A_) CS_API_##name,
#include "cudart_api.def"
  CS_API_COUNT
};
static const char *const api_names[] = {
#define CUDART_COPY(name, params, args, B_, K_, S_, A_) #name,
#include "cudart_api.def"
};

const char *cs_cudart_api_name(int api) {
  return (api >= 0 && api < CS_API_COUNT) ? api_names[api] : "unknown";
}

/* `name` as the next object defines it, else as one of the libraries already loaded defines
 * it; never `self` (this library's own wrapper) */
static void *find_real_in(const char *name, void *self, const char *const *libs, size_t nlibs) {
  void *p = dlsym(RTLD_NEXT, name);
  if (p && p != self) return p;
  for (size_t i = 0; i < nlibs; i++) {
    void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
    if (h && (p = dlsym(h, name)) && p != self) return p;
  }
  return NULL;
}

static void *find_real(const char *name, void *self) {
  static const char *const libs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  return find_real_in(name, self, libs, sizeof(libs) / sizeof(libs[0]));
}

static uint8_t kind_of(int kind) {
  switch (kind) {
  case cudaMemcpyHostToHost: return CS_XFER_HTOH;
  case cudaMemcpyHostToDevice: return CS_XFER_HTOD;
  case cudaMemcpyDeviceToHost: return CS_XFER_DTOH;
  case cudaMemcpyDeviceToDevice: return CS_XFER_DTOD;
  case -1: return CS_XFER_PEER;
  default: return CS_XFER_DEFAULT;
  }
}

#define CUDART_COPY(name, params, args, BYTES_, KIND_, STREAM_, ASYNC_) \
  CS_EXPORT cudaError_t name params { \
    cudaError_t(*real_) params = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE); \
    if (CS_UNLIKELY(!real_)) { \
      real_ = (cudaError_t(*) params)find_real(#name, (void *)name); \
      if (!real_) { \
        static _Atomic int warned_; \
        if (!atomic_exchange(&warned_, 1)) \
          cs_log(CS_LOG_WARN, "the real %s was not found; returning an error", #name); \
        return cudaErrorSharedObjectSymbolNotFound; \
      } \
      __atomic_store_n(&real_##name, real_, __ATOMIC_RELEASE); \
    } \
    if (CS_UNLIKELY(cs_cfg.disabled)) return real_ args; /* before any per-thread state */ \
    if (cs_tls.depth) return real_ args; \
    cs_ensure_init(); \
    if (CS_UNLIKELY(!atomic_load_explicit(&cs_st.ready, memory_order_relaxed))) \
      return real_ args; \
    struct cs_record r_; \
    __builtin_memset(&r_, 0, sizeof(r_)); \
    r_.type = CS_REC_XFER; \
    r_.op = CS_OP_Memcpy; \
    r_.api = CS_API_##name; \
    r_.event = kind_of((int)(KIND_)); \
    r_.async = ASYNC_; \
    r_.bytes = (BYTES_); \
    r_.count = r_.bytes; \
    r_.dtype = r_.redop = r_.root = r_.peer = r_.comm_size = r_.comm_rank = r_.device = -1; \
    r_.stream = (uint64_t)(uintptr_t)(STREAM_); \
    r_.site = (uint64_t)(uintptr_t)__builtin_return_address(0); \
    cs_tls.depth++; \
    cudaError_t e_; \
    if (ASYNC_) { \
      cs_timed_begin(&r_, (void *)(STREAM_)); \
      e_ = real_ args; \
      r_.status = (int)e_; \
      cs_timed_end(&r_, (void *)(STREAM_), e_ == cudaSuccess); \
    } else { \
      /* synchronous copy: time it on the host; adds nothing to the legacy stream,      \
       * whose implicit synchronisation with other streams must stay the job's own */ \
      r_.enqueue_ns = r_.start_ns = cs_now_ns(CLOCK_REALTIME); \
      e_ = real_ args; \
      r_.end_ns = cs_now_ns(CLOCK_REALTIME); \
      r_.status = (int)e_; \
      r_.timing = e_ == cudaSuccess ? CS_TIMING_HOST_SPAN : CS_TIMING_ERROR; \
      cs_record_push(&r_); \
    } \
    cs_tls.depth--; \
    return e_; \
  }
#include "cudart_api.def"

/* ---- the graph calls: what hooks/graph_timing.c needs around them; the job's call and
 * its return code are the real function's, whatever happens here ---- */
enum { CS_G_INSTANTIATE,
       CS_G_LAUNCH,
       CS_G_EXEC_DESTROY,
       CS_G_DESTROY,
       CS_G_CAPTURE_BEGIN,
       CS_G_CAPTURE_END };

/* the driver's own function (libcuda.so.1, or COLLSCOPE_LIBCUDA), never this library's */
static void *find_real_drv(const char *name, void *self) {
  const char *lib = cs_cfg.libcuda ? cs_cfg.libcuda : "libcuda.so.1";
  return find_real_in(name, self, &lib, 1);
}

/* one wrapper of either API: RET_ its return type, FIND_ the real function's lookup, OK_ and
 * MISSING_ its success and symbol-not-found codes */
#define CS_GRAPH_WRAPPER(RET_, FIND_, OK_, MISSING_, name, params, args, WHAT_, EXEC_, GRAPH_) \
  CS_EXPORT RET_ name params { \
    RET_(*real_) \
    params = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE); \
    if (CS_UNLIKELY(!real_)) { \
      real_ = (RET_(*) params)FIND_(#name, (void *)name); \
      if (!real_) { \
        static _Atomic int warned_; \
        if (!atomic_exchange(&warned_, 1)) \
          cs_log(CS_LOG_WARN, "the real %s was not found; returning an error", #name); \
        return MISSING_; \
      } \
      __atomic_store_n(&real_##name, real_, __ATOMIC_RELEASE); \
    } \
    if (CS_UNLIKELY(cs_cfg.disabled)) return real_ args; \
    if ((WHAT_) == CS_G_CAPTURE_BEGIN || (WHAT_) == CS_G_CAPTURE_END) { \
      /* counted whoever calls (also nested: the runtime's own driver call is not seen twice, \
       * it reaches the driver through its entry-point table) */ \
      if ((WHAT_) == CS_G_CAPTURE_BEGIN) cs_graph_capture_opening(); \
      RET_ c_ = real_ args; \
      if ((WHAT_) == CS_G_CAPTURE_BEGIN && c_ != OK_) cs_graph_capture_closed(); \
      /* ended, or invalidated (901 in both APIs): the capture is over */ \
      if ((WHAT_) == CS_G_CAPTURE_END && (c_ == OK_ || (int)c_ == 901)) cs_graph_capture_closed(); \
      return c_; \
    } \
    if (cs_tls.depth) return real_ args; \
    cs_ensure_init(); \
    if (CS_UNLIKELY(!atomic_load_explicit(&cs_st.ready, memory_order_relaxed))) return real_ args; \
    cs_tls.depth++; \
    RET_ e_; \
    if ((WHAT_) == CS_G_LAUNCH) { \
      struct cs_graph_exec *x_ = cs_graph_launch_begin((void *)(EXEC_)); \
      e_ = real_ args; \
      if (x_) cs_graph_launch_end(x_, e_ == OK_); \
    } else if ((WHAT_) == CS_G_INSTANTIATE) { \
      e_ = real_ args; \
      if (e_ == OK_) cs_graph_instantiated((void *)(EXEC_), (void *)(GRAPH_)); \
    } else { \
      if ((WHAT_) == CS_G_EXEC_DESTROY) cs_graph_exec_destroyed((void *)(EXEC_)); \
      if ((WHAT_) == CS_G_DESTROY) cs_graph_destroyed((void *)(GRAPH_)); \
      e_ = real_ args; \
    } \
    cs_tls.depth--; \
    return e_; \
  }
#define CUDART_GRAPH(name, params, args, W_, X_, G_) \
  CS_GRAPH_WRAPPER(cudaError_t, find_real, cudaSuccess, cudaErrorSharedObjectSymbolNotFound, name, params, args, W_, \
                   X_, G_)
#define CUDRV_GRAPH(name, params, args, W_, X_, G_) \
  CS_GRAPH_WRAPPER(CUresult, find_real_drv, CUDA_SUCCESS, CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, name, params, args, \
                   W_, X_, G_)
#include "cudart_api.def"

/* The wrapper of a driver graph function by its name (shim/dlsym_hook.c), NULL if none. */
void *cs_cudrv_wrapper(const char *name) {
#define CUDRV_GRAPH(name_, params, args, W_, X_, G_) \
  if (!strcmp(name, #name_)) return (void *)name_;
#include "cudart_api.def"
  return NULL;
}
