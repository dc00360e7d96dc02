/* hooks/sdc_context.c: the SDC checks' slow path, once per CUDA context: the extra driver
 * entry points (resolved here, not in cuda_driver.h's all-or-nothing list, so a driver
 * without them only turns the checks off), cuModuleLoadData of the embedded fatbin (on the
 * simulator: its host twin), device scratch and pinned result slots, and the kernel
 * self-test (the GPU kernel against its host twin), on a private non-blocking stream so the
 * set-up waits (at most 2 s) for that work only, in the relaxed capture mode so that no
 * other thread's graph capture is touched (sdc.h, DESIGN.md "SDC checks"). */
#include "sdc_internal.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef COLLSCOPE_SDC_FATBIN
extern const unsigned char cs_sdc_fatbin[];
#endif

struct sdc_ctx cs_sdc_ctxs[SDC_MAX_CTX];
_Atomic int cs_sdc_nctx;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
  bool ok;
  CUresult (*modload)(CUmodule *, const void *);
  CUresult (*getfn)(CUfunction *, CUmodule, const char *);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void **, void **);
  CUresult (*memalloc)(CUdeviceptr *, size_t);
  CUresult (*memallochost)(void **, size_t);
  CUresult (*hostdevptr)(CUdeviceptr *, void *, unsigned);
  CUresult (*memsetd8async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*streamquery)(CUstream);
  CUresult (*streamdestroy)(CUstream);
  CUresult (*devattr)(int *, CUdevice_attribute, CUdevice); /* optional: grid size */
  CUresult (*htod)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*capmode)(CUstreamCaptureMode *); /* optional: set-up beside another thread's capture */
} fx;
static pthread_once_t fx_once = PTHREAD_ONCE_INIT;

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  const char *v = strstr(name, "_v2");
  if (!p && v) {
    char base[64];
    size_t n = (size_t)(v - name);
    if (n < sizeof base) {
      memcpy(base, name, n);
      base[n] = 0;
      p = dlsym(h, base);
    }
  }
  return p;
}

static _Atomic bool fx_tried; /* fx_load ran (fx.ok then says whether it found all) */

static void fx_resolve(void) {
  const char *name = cs_cfg.libcuda ? cs_cfg.libcuda : "libcuda.so.1";
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) return;
  *(void **)&fx.modload = sym(h, "cuModuleLoadData");
  *(void **)&fx.getfn = sym(h, "cuModuleGetFunction");
  *(void **)&fx.launch = sym(h, "cuLaunchKernel");
  *(void **)&fx.memalloc = sym(h, "cuMemAlloc_v2");
  *(void **)&fx.memallochost = sym(h, "cuMemAllocHost_v2");
  *(void **)&fx.hostdevptr = sym(h, "cuMemHostGetDevicePointer_v2");
  *(void **)&fx.memsetd8async = sym(h, "cuMemsetD8Async");
  *(void **)&fx.streamquery = sym(h, "cuStreamQuery");
  *(void **)&fx.streamdestroy = sym(h, "cuStreamDestroy_v2");
  *(void **)&fx.devattr = sym(h, "cuDeviceGetAttribute");
  *(void **)&fx.htod = sym(h, "cuMemcpyHtoDAsync_v2");
  *(void **)&fx.capmode = sym(h, "cuThreadExchangeStreamCaptureMode");
  fx.ok = fx.modload && fx.getfn && fx.launch && fx.memalloc && fx.memallochost && fx.hostdevptr &&
          fx.memsetd8async && fx.streamquery && fx.streamdestroy && fx.htod && cs_drv.cuStreamCreate;
  if (!fx.ok) cs_log(CS_LOG_WARN, "%s lacks the module/launch entry points: SDC checks off", name);
}

static void fx_load(void) {
  fx_resolve();
  atomic_store_explicit(&fx_tried, true, memory_order_release);
}

CUresult cs_sdc_kernel_launch(const struct sdc_ctx *x, unsigned k, CUdeviceptr buf, uint64_t nbytes, int dtype,
                              unsigned grid, CUstream stream, uint32_t tag) {
  CUdeviceptr scratch = x->scratch + (CUdeviceptr)k * CS_SDC_MAX_BLOCKS * sizeof(struct cs_sdc_part);
  CUdeviceptr counter = x->counters + (CUdeviceptr)k * sizeof(unsigned);
  CUdeviceptr res = x->res_dev + (CUdeviceptr)k * sizeof(struct cs_sdc_result);
  void *args[] = {&buf, &nbytes, &dtype, &scratch, &counter, &res, &tag};
  return fx.launch(x->fn, grid, 1, 1, CS_SDC_THREADS, 1, 1, 0, stream, args, NULL);
}

#ifdef COLLSCOPE_SDC_FATBIN
/* The self-test at set-up: the GPU kernel against its host twin (in this library) on a
 * fixed pattern, bit for bit, before any collective is checked. A kernel that computes
 * something else on this GPU (a compiler or architecture difference, a JIT from PTX)
 * would raise false SDC findings -- and with COLLSCOPE_SDC_ACTION=abort stop the job --
 * so a mismatch turns the checks off on the context. The cases cover the 16-byte loop
 * (one and several blocks, unrolled and not), the unaligned first word, the 4-, 2- and
 * 1-byte load paths, partial words, the float, half and exact-integer decoders, and the
 * fingerprint-only kernel. */
#define SDC_SELFTEST_BYTES 65536
static const struct {
  int dtype;
  unsigned off, grid;
  uint64_t nbytes;
} selftest[] = {
    {CS_SDC_FLOAT32, 0, 1, SDC_SELFTEST_BYTES - 64 - 4}, {CS_SDC_BFLOAT16, 8, 5, 60006}, {CS_SDC_INT8, 4, 3, 50003}, {CS_SDC_FLOAT16, 2, 2, 20000}, {CS_SDC_FLOAT64, 16, 4, 40000}, {CS_SDC_INT32, 24, 1, 40004}, {CS_SDC_UINT8, 1, 3, 10001}, {-1, 0, 2, 30000}, /* the fingerprint alone: what fp8 collectives launch */
};
#define SDC_SELFTEST_N (sizeof selftest / sizeof selftest[0])
void collscope_simkernel_sdc_reduce(void **params, const unsigned grid[3], const unsigned block[3]);

static bool same_bits_or_nan(double a, double b) { return !memcmp(&a, &b, sizeof a) || (a != a && b != b); }

/* Launches on zs (not synchronized); returns the number launched. */
static unsigned selftest_launch(struct sdc_ctx *x, CUdeviceptr pattern, CUstream zs) {
  unsigned i;
  for (i = 0; i < SDC_SELFTEST_N; i++)
    if (cs_sdc_kernel_launch(x, i, pattern + selftest[i].off, selftest[i].nbytes, selftest[i].dtype, selftest[i].grid, zs,
                             0xc5000001u + i) != CUDA_SUCCESS)
      break;
  return i;
}

/* After zs is synchronized: compare with the host twin; -1 = all agree, else the case. */
static int selftest_compare(const struct sdc_ctx *x, const unsigned char *host_pattern) {
  static struct cs_sdc_part scratch[CS_SDC_MAX_BLOCKS]; /* under ctx_lock */
  for (unsigned i = 0; i < SDC_SELFTEST_N; i++) {
    unsigned counter = 0;
    struct cs_sdc_result want;
    memset(&want, 0, sizeof want);
    const unsigned char *buf = host_pattern + selftest[i].off;
    uint64_t nbytes = selftest[i].nbytes;
    int dtype = selftest[i].dtype;
    void *sp = scratch, *cp = &counter, *rp = &want;
    uint32_t tag = 0xc5000001u + i;
    void *params[] = {&buf, &nbytes, &dtype, &sp, &cp, &rp, &tag};
    unsigned g[3] = {selftest[i].grid, 1, 1}, b[3] = {CS_SDC_THREADS, 1, 1};
    collscope_simkernel_sdc_reduce(params, g, b);
    const struct cs_sdc_result *got = &x->res[i];
    if (got->done != tag || got->fp != want.fp || got->isum != want.isum || !same_bits_or_nan(got->sum, want.sum) ||
        !same_bits_or_nan(got->abs, want.abs))
      return (int)i;
  }
  return -1;
}
#endif

/* Waits for collscope's own set-up work on zs, at most SDC_SETUP_WAIT_MS. The set-up runs
 * on the job's thread inside its first checked collective; a device whose SMs are all
 * held by the job's kernels could keep the self-test's kernels waiting, and a job whose
 * kernels wait for that very thread would then never finish: bounded, never a hang. */
#ifdef COLLSCOPE_SDC_FATBIN
#define SDC_SETUP_WAIT_MS 2000
static CUresult wait_bounded(CUstream zs) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    CUresult e = fx.streamquery(zs);
    if (e != CUDA_ERROR_NOT_READY) return e;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L >= SDC_SETUP_WAIT_MS)
      return CUDA_ERROR_TIMEOUT;
    struct timespec nap = {0, 50000};
    nanosleep(&nap, NULL);
  }
}
#endif

/* Slow path, once per context (ctx is current). */
static void ctx_setup(struct sdc_ctx *x) {
  x->ok = false;
  x->why = "setup_failed";
#ifdef COLLSCOPE_SDC_FATBIN
  CUmodule mod;
  CUresult e;
  void *host = NULL;
  CUstream zs = NULL;
  if ((e = fx.modload(&mod, cs_sdc_fatbin)) != CUDA_SUCCESS || (e = fx.getfn(&x->fn, mod, "sdc_reduce")) != CUDA_SUCCESS) {
    cs_log(CS_LOG_WARN, "cannot load the SDC check kernel (CUresult %d): SDC checks off on this context", (int)e);
    return;
  }
  /* the grid is at most CS_SDC_BLOCKS_PER_SM per SM: without the SM count, the scratch's
   * CS_SDC_MAX_BLOCKS (one wave on GPUs of up to 128 SMs) */
  CUdevice dev;
  int sms = 0;
  if (!fx.devattr || cs_drv.cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
      fx.devattr(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS || sms < 0)
    sms = 0;
  x->sms = (unsigned)sms;
  size_t scratch = (size_t)SDC_NSLOTS * 2 * CS_SDC_MAX_BLOCKS * sizeof(struct cs_sdc_part);
  size_t counters = (size_t)SDC_NSLOTS * 2 * sizeof(unsigned);
  size_t res = (size_t)SDC_NSLOTS * 2 * sizeof(struct cs_sdc_result);
  /* the self-test's pattern: every 16-bit lane's bit 14 clear, so the words are finite
   * as fp64, fp32, bf16 and fp16 (bit 14 of a lane is an exponent's top bit or a
   * mantissa bit in each); bytes of both signs */
  static unsigned char pattern[SDC_SELFTEST_BYTES]; /* under ctx_lock */
  for (size_t i = 0; i < SDC_SELFTEST_BYTES / 8; i++) {
    uint64_t w = cs_sdc_mix(i, 0x5e1f) & 0xbfffbfffbfffbfffull;
    memcpy(pattern + 8 * i, &w, 8);
  }
  CUdeviceptr dpattern = 0;
  if ((e = fx.memalloc(&x->scratch, scratch + counters + SDC_SELFTEST_BYTES)) != CUDA_SUCCESS ||
      (e = cs_drv.cuStreamCreate(&zs, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS ||
      (e = fx.memsetd8async(x->scratch + scratch, 0, counters, zs)) != CUDA_SUCCESS ||
      (e = fx.htod(dpattern = x->scratch + scratch + counters, pattern, SDC_SELFTEST_BYTES, zs)) != CUDA_SUCCESS ||
      (e = fx.memallochost(&host, res)) != CUDA_SUCCESS || (e = fx.hostdevptr(&x->res_dev, host, 0)) != CUDA_SUCCESS) {
    if (zs) {
      wait_bounded(zs);
      fx.streamdestroy(zs);
    }
    cs_log(CS_LOG_WARN, "cannot allocate SDC check memory (CUresult %d): SDC checks off on this context", (int)e);
    return;
  }
  memset(host, 0, res);
  x->counters = x->scratch + scratch;
  x->res = host;
  unsigned launched = selftest_launch(x, dpattern, zs);
  e = wait_bounded(zs);
  fx.streamdestroy(zs); /* work still queued completes first */
  int bad = launched == SDC_SELFTEST_N && e == CUDA_SUCCESS ? selftest_compare(x, pattern) : -2;
  if (bad != -1) {
    x->why = e == CUDA_ERROR_TIMEOUT ? "selftest_timeout" : bad >= 0 ? "selftest_failed"
                                                                     : "setup_failed";
    if (e == CUDA_ERROR_TIMEOUT)
      cs_log(CS_LOG_WARN, "SDC set-up and kernel self-test did not finish within %d ms (the GPU is busy with other "
                          "work): SDC checks off on this context",
             SDC_SETUP_WAIT_MS);
    else if (bad == -2)
      cs_log(CS_LOG_WARN, "SDC kernel self-test could not run (%u of %u launches, CUresult %d): SDC checks off on this context",
             launched, (unsigned)SDC_SELFTEST_N, (int)e);
    else
      cs_log(CS_LOG_WARN, "SDC kernel self-test failed: the GPU kernel and its host reference disagree (case %d, %s, "
                          "%llu bytes): SDC checks off on this context. A wrong result on a fixed input: if other ranks' "
                          "GPUs passed, suspect this one",
             bad,
             selftest[bad].dtype < 0 ? "fingerprint only" : cs_dtype_name(selftest[bad].dtype),
             (unsigned long long)selftest[bad].nbytes);
    return; /* the device memory is kept: a launch may still be running after a failed sync */
  }
  memset(host, 0, res);
  x->ok = true;
  cs_log(CS_LOG_INFO, "SDC checks ready on context %p (%u SMs; kernel self-test passed, %u cases)",
         (void *)atomic_load(&x->ctx), x->sms, (unsigned)SDC_SELFTEST_N);
#endif
}

struct sdc_ctx *cs_sdc_ctx_get(int *index) {
  CUcontext cu = NULL;
  /* with COLLSCOPE_TIMING=off the shim has not loaded the driver: the checks do (once) */
  if (CS_UNLIKELY(!cs_drv.loaded) && !cs_driver_load()) return NULL;
  if (cs_drv.cuCtxGetCurrent(&cu) != CUDA_SUCCESS || !cu) return NULL;
  int n = atomic_load_explicit(&cs_sdc_nctx, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (atomic_load_explicit(&cs_sdc_ctxs[i].ctx, memory_order_relaxed) == cu &&
        atomic_load_explicit(&cs_sdc_ctxs[i].ready, memory_order_acquire)) {
      *index = i;
      return cs_sdc_ctxs[i].ok ? &cs_sdc_ctxs[i] : NULL;
    }
  pthread_once(&fx_once, fx_load);
  if (!fx.ok) return NULL;
  struct sdc_ctx *x = NULL;
  pthread_mutex_lock(&ctx_lock);
  n = atomic_load(&cs_sdc_nctx);
  for (int i = 0; i < n; i++)
    if (atomic_load(&cs_sdc_ctxs[i].ctx) == cu) x = &cs_sdc_ctxs[i], *index = i;
  if (!x && n < SDC_MAX_CTX) {
    x = &cs_sdc_ctxs[n];
    *index = n;
    atomic_store(&x->ctx, cu);
    /* The set-up allocates and synchronises: while another thread captures a graph in
     * global mode, CUDA refuses such calls from any thread in the default mode and
     * invalidates that capture. This thread's calls are made in relaxed mode, so no
     * capture is touched (the caller's own stream is never capturing here: cs_sdc_before_op
     * asked first); the thread's mode is restored after. */
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    bool relaxed = fx.capmode && fx.capmode(&mode) == CUDA_SUCCESS;
    ctx_setup(x);
    if (relaxed) fx.capmode(&mode);
    atomic_store_explicit(&x->ready, 1, memory_order_release);
    atomic_store_explicit(&cs_sdc_nctx, n + 1, memory_order_release);
  }
  pthread_mutex_unlock(&ctx_lock);
  return x && x->ok ? x : NULL;
}

bool cs_sdc_no_driver(void) { return atomic_load_explicit(&fx_tried, memory_order_acquire) && !fx.ok; }
