/* hooks/sdc_check.c: launches the SDC check kernel (hooks/sdc_kernels.cu) around eligible
 * collectives and hands its results to the harvest thread (see sdc_check.h, DESIGN.md "SDC").
 *
 * Hot path (caller's thread, no syscall, no lock, no sync): policy decision, a slot taken
 * from a per-context ring with one CAS, and one cuLaunchKernel before the collective
 * (input sums) and one after it (output fingerprint + sums), both on the collective's
 * stream. Slow path, once per CUDA context: cuModuleLoadData of the embedded fatbin (on
 * the simulator: its host twin), device scratch and pinned result slots, and the kernel
 * self-test (the GPU kernel against its host twin); the ticket counters are zeroed, and
 * the self-test runs, on a private non-blocking stream, so the set-up waits (at most 2 s)
 * for that work only, not for the work already queued on the application's streams (a
 * plain cuMemsetD8 goes through the legacy stream, which joins every blocking stream).
 *
 * The extra driver entry points are resolved here (not in cuda_driver.h's all-or-nothing
 * list), so a driver without them only turns the checks off, never the timing. */
#include "sdc_check.h"
#include "cuda_driver.h"
#include "sdc_kernel_defs.h"
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SDC_MAX_CTX 32
#define SDC_NSLOTS 1024 /* checks in flight per context (32 MiB of device scratch) */
#define SDC_COMM_TABLE 1024
#define NCCL_IN_PROGRESS 7

#ifdef COLLSCOPE_SDC_FATBIN
extern const unsigned char cs_sdc_fatbin[];
#endif

struct slot_meta {
  uint32_t tag[2]; /* [0] input launch, [1] output launch */
  uint8_t launched[2];
};

struct sdc_ctx {
  _Atomic(CUcontext) ctx;
  _Atomic int ready;
  bool ok;         /* false: this context cannot run checks (logged once) */
  const char *why; /* !ok: setup_failed, selftest_failed, selftest_timeout */
  CUfunction fn;
  unsigned sms;              /* the device's multiprocessors (0: unknown), for cs_sdc_grid */
  CUdeviceptr scratch;       /* SDC_NSLOTS * 2 * CS_SDC_MAX_BLOCKS parts */
  CUdeviceptr counters;      /* SDC_NSLOTS * 2 unsigned */
  struct cs_sdc_result *res; /* pinned, SDC_NSLOTS * 2 */
  CUdeviceptr res_dev;       /* the same memory as the device sees it */
  struct slot_meta meta[SDC_NSLOTS];
  _Atomic uint8_t state[SDC_NSLOTS]; /* 0 free, 1 in use */
  _Atomic uint32_t next;
};
static struct sdc_ctx ctxs[SDC_MAX_CTX];
static _Atomic int nctx;
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
} fx;
static pthread_once_t fx_once = PTHREAD_ONCE_INIT;

/* grouped ops whose output check waits for the group launch (per thread) */
#define SDC_GROUP_MAX 64
struct grp_out {
  struct sdc_ctx *x;
  unsigned slot;
  const void *p;
  uint64_t nb;
  int dtype;
  void *stream;
};
/* The thread's deferred output checks, allocated at its first grouped check (the library's
 * TLS stays small: see cs_tls in hooks/thread_state.h); freed when the thread exits. */
struct sdc_grp {
  uint64_t group;
  size_t n;
  struct grp_out v[SDC_GROUP_MAX];
};
static __thread struct sdc_grp *grp_p;
#define grp (*grp_p)
static pthread_key_t grp_key;
static pthread_once_t grp_key_once = PTHREAD_ONCE_INIT;
static void grp_key_create(void) { pthread_key_create(&grp_key, free); }
static bool grp_ready(void) {
  if (CS_LIKELY(grp_p != NULL)) return true;
  struct sdc_grp *g = calloc(1, sizeof(*g));
  if (!g) return false;
  pthread_once(&grp_key_once, grp_key_create);
  pthread_setspecific(grp_key, g);
  grp_p = g;
  return true;
}

static _Atomic uint32_t tags;
static _Atomic uint64_t n_launched, n_no_slot;

/* per-communicator counters of eligible collectives (sample:N), keyed by comm id */
static struct {
  _Atomic uint64_t key;
  _Atomic uint64_t n;
} comm_ctr[SDC_COMM_TABLE];

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
  fx.ok = fx.modload && fx.getfn && fx.launch && fx.memalloc && fx.memallochost && fx.hostdevptr &&
          fx.memsetd8async && fx.streamquery && fx.streamdestroy && fx.htod && cs_drv.cuStreamCreate;
  if (!fx.ok) cs_log(CS_LOG_WARN, "%s lacks the module/launch entry points: SDC checks off", name);
}

static void fx_load(void) {
  fx_resolve();
  atomic_store_explicit(&fx_tried, true, memory_order_release);
}

/* One kernel launch into result slot k (its scratch, ticket counter and pinned result). */
static CUresult kernel_launch(const struct sdc_ctx *x, unsigned k, CUdeviceptr buf, uint64_t nbytes, int dtype,
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
    if (kernel_launch(x, i, pattern + selftest[i].off, selftest[i].nbytes, selftest[i].dtype, selftest[i].grid, zs,
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

static struct sdc_ctx *ctx_get(int *index) {
  CUcontext cu = NULL;
  /* with COLLSCOPE_TIMING=off the shim has not loaded the driver: the checks do (once) */
  if (CS_UNLIKELY(!cs_drv.loaded) && !cs_driver_load()) return NULL;
  if (cs_drv.cuCtxGetCurrent(&cu) != CUDA_SUCCESS || !cu) return NULL;
  int n = atomic_load_explicit(&nctx, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (atomic_load_explicit(&ctxs[i].ctx, memory_order_relaxed) == cu &&
        atomic_load_explicit(&ctxs[i].ready, memory_order_acquire)) {
      *index = i;
      return ctxs[i].ok ? &ctxs[i] : NULL;
    }
  pthread_once(&fx_once, fx_load);
  if (!fx.ok) return NULL;
  struct sdc_ctx *x = NULL;
  pthread_mutex_lock(&ctx_lock);
  n = atomic_load(&nctx);
  for (int i = 0; i < n; i++)
    if (atomic_load(&ctxs[i].ctx) == cu) x = &ctxs[i], *index = i;
  if (!x && n < SDC_MAX_CTX) {
    x = &ctxs[n];
    *index = n;
    atomic_store(&x->ctx, cu);
    ctx_setup(x);
    atomic_store_explicit(&x->ready, 1, memory_order_release);
    atomic_store_explicit(&nctx, n + 1, memory_order_release);
  }
  pthread_mutex_unlock(&ctx_lock);
  return x && x->ok ? x : NULL;
}

static bool eligible_op(int op) { return op >= 0 && op < 32 && ((CS_SDC_OP_MASK >> op) & 1u); }

/* sample:N -- the k-th eligible collective of a communicator is checked when k % N == 0;
 * every rank sees the same eligible sequence, so all check the same ones. The counter is
 * advanced before the call; a call NCCL rejects gives its count back (sample_give_back),
 * as it gives back its seq: it is no collective instance, its peers never made it. */
static bool sampled(struct cs_call *c, uint64_t comm_id) {
  if (cs_cfg.sdc_mode == CS_SDC_ALL || cs_cfg.sdc_sample <= 1) return true;
  uint64_t key = comm_id ? comm_id : 1;
  for (unsigned i = 0; i < SDC_COMM_TABLE; i++) {
    unsigned h = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 54) + i;
    h %= SDC_COMM_TABLE;
    uint64_t k = atomic_load_explicit(&comm_ctr[h].key, memory_order_acquire);
    if (k == 0) {
      uint64_t z = 0;
      if (!atomic_compare_exchange_strong(&comm_ctr[h].key, &z, key) && z != key) continue;
      k = key;
    }
    if (k != key) continue;
    uint64_t n = atomic_fetch_add_explicit(&comm_ctr[h].n, 1, memory_order_relaxed);
    c->sdc_ctr = h + 1;
    c->sdc_ctr_at = n;
    return n % cs_cfg.sdc_sample == 0;
  }
  return false;
}

/* The call failed: undo its advance of the sample:N counter, unless another thread
 * advanced it since (then the counters of this rank drift by one, as its seq would). */
static void sample_give_back(struct cs_call *c) {
  if (!c->sdc_ctr) return;
  uint64_t next = c->sdc_ctr_at + 1;
  atomic_compare_exchange_strong_explicit(&comm_ctr[c->sdc_ctr - 1].n, &next, c->sdc_ctr_at, memory_order_relaxed,
                                          memory_order_relaxed);
  c->sdc_ctr = 0;
}

/* The buffer each launch reads: which = 0 input (before), 1 output (after). */
static bool op_buffer(const struct cs_call *c, int which, const void **p, uint64_t *nbytes) {
  const struct cs_record *r = c->rec;
  uint64_t es = cs_dtype_size(c->dtype), n = (uint64_t)(r->comm_size > 0 ? r->comm_size : 1);
  uint64_t b = (uint64_t)c->count * es;
  bool at_root = r->comm_rank == r->root;
  switch (c->op) {
  case CS_OP_AllReduce: break;
  case CS_OP_Broadcast:
    if (which == 0 && !at_root) return false;
    break;
  case CS_OP_Reduce:
    if (which == 1 && !at_root) return false;
    break;
  case CS_OP_AllGather:
    if (which == 1) b *= n;
    break;
  case CS_OP_ReduceScatter:
    if (which == 0) b *= n;
    break;
  default: return false;
  }
  *p = which ? (const void *)c->recvbuff : c->sendbuff;
  *nbytes = b;
  return *p && b;
}

/* fp8 collectives get the fingerprint check only (analysis/sdc_compare.c: their reductions
 * saturate, so no sum rule holds): the kernel then computes the fingerprint alone, and the
 * record's sums are NaN (null in the dump) */
static bool fp8(int dtype) { return dtype == CS_SDC_FP8E4M3 || dtype == CS_SDC_FP8E5M2; }

static bool launch(struct sdc_ctx *x, unsigned slot, int which, const void *buf, uint64_t nbytes, int dtype,
                   void *stream) {
  unsigned k = slot * 2 + (unsigned)which;
  uint32_t tag = atomic_fetch_add_explicit(&tags, 1, memory_order_relaxed) + 1;
  if (!tag) tag = atomic_fetch_add_explicit(&tags, 1, memory_order_relaxed) + 1;
  int kdtype = fp8(dtype) ? -1 : dtype; /* fp8: the fingerprint is all that is compared */
  x->meta[slot].launched[which] = 0;
  if (kernel_launch(x, k, (CUdeviceptr)(uintptr_t)buf, nbytes, kdtype, cs_sdc_grid(nbytes, x->sms), (CUstream)stream,
                    tag) != CUDA_SUCCESS) {
    cs_log_once(CS_LOG_WARN, "cuLaunchKernel of the SDC check failed: that collective is not checked");
    return false;
  }
  x->meta[slot].tag[which] = tag;
  x->meta[slot].launched[which] = 1;
  atomic_fetch_add_explicit(&n_launched, 1, memory_order_relaxed);
  return true;
}

void cs_sdc_before_op(struct cs_call *c) {
  struct cs_record *r = c->rec;
  r->sdc_slot = 0;
  r->sdc_ctx = 0;
  if (CS_LIKELY(cs_cfg.sdc_mode == CS_SDC_OFF) || !eligible_op((int)c->op)) return;
#ifndef COLLSCOPE_SDC_FATBIN
  cs_log_once(CS_LOG_INFO, "SDC checks were compiled out (no nvcc when libcollscope was built)");
  return;
#endif
  /* graph capture is not checked; a grouped op's output check waits for the group launch
   * (cs_sdc_group_launched; without that call the record gets its input sums only) */
  if (r->captured || r->seq == UINT64_MAX || r->comm_size < 1) return;
  if (!c->count || !cs_dtype_size(c->dtype) || r->bytes < cs_cfg.sdc_min_bytes) return;
  if (!sampled(c, r->comm_id)) return;
  int xi;
  struct sdc_ctx *x = ctx_get(&xi);
  if (!x) return;
  if (cs_tls.group_depth > 0) {
    /* a grouped op's timing (and capture check) is decided at the launch: check here */
    CUstreamCaptureStatus cst = CU_STREAM_CAPTURE_STATUS_NONE;
    if (cs_drv.cuStreamIsCapturing((CUstream)c->stream, &cst) != CUDA_SUCCESS || cst != CU_STREAM_CAPTURE_STATUS_NONE)
      return;
    if (!grp_ready()) return;                                   /* no memory to defer its output check */
    if (grp.group != r->group) grp.n = 0, grp.group = r->group; /* a new group */
    if (grp.n == SDC_GROUP_MAX) return;                         /* no room to defer its output check */
  }
  uint32_t start = atomic_fetch_add_explicit(&x->next, 1, memory_order_relaxed);
  unsigned slot = SDC_NSLOTS;
  for (unsigned i = 0; i < 8 && slot == SDC_NSLOTS; i++) {
    unsigned s = (start + i) % SDC_NSLOTS;
    uint8_t z = 0;
    if (atomic_compare_exchange_strong_explicit(&x->state[s], &z, 1, memory_order_acquire, memory_order_relaxed))
      slot = s;
  }
  if (slot == SDC_NSLOTS) {
    atomic_fetch_add_explicit(&n_no_slot, 1, memory_order_relaxed);
    cs_log_once(CS_LOG_WARN, "SDC: all %d result slots busy; some collectives are not checked", SDC_NSLOTS);
    return;
  }
  x->meta[slot].launched[0] = x->meta[slot].launched[1] = 0;
  const void *p;
  uint64_t nb;
  if (op_buffer(c, 0, &p, &nb)) launch(x, slot, 0, p, nb, c->dtype, c->stream);
  r->sdc_ctx = (uint8_t)(xi + 1);
  r->sdc_slot = slot + 1;
}

void cs_sdc_after_op(struct cs_call *c, int status) {
  struct cs_record *r = c->rec;
  if (status != 0 && status != NCCL_IN_PROGRESS) sample_give_back(c);
  if (!r->sdc_slot) return;
  struct sdc_ctx *x = &ctxs[r->sdc_ctx - 1];
  unsigned slot = r->sdc_slot - 1;
  const void *p;
  uint64_t nb;
  if (cs_tls.group_depth > 0) {
    /* NCCL launches a group's work at the outermost ncclGroupEnd: the output check waits
     * for cs_sdc_group_launched; the record (pushed after that) keeps the slot */
    if (status == 0 && op_buffer(c, 1, &p, &nb) && grp.n < SDC_GROUP_MAX)
      grp.v[grp.n++] = (struct grp_out){x, slot, p, nb, c->dtype, c->stream};
    else if (!x->meta[slot].launched[0]) {
      atomic_store_explicit(&x->state[slot], 0, memory_order_release);
      r->sdc_slot = 0;
      r->sdc_ctx = 0;
    }
    return;
  }
  /* ncclInProgress (non-blocking communicator): the work may not be on the stream yet, so
   * a kernel enqueued now could run before it -- no output check then */
  if (status == 0 && op_buffer(c, 1, &p, &nb))
    launch(x, slot, 1, p, nb, c->dtype, c->stream);
  if (!x->meta[slot].launched[0] && !x->meta[slot].launched[1]) {
    atomic_store_explicit(&x->state[slot], 0, memory_order_release);
    r->sdc_slot = 0;
    r->sdc_ctx = 0;
  }
}

/* The outermost ncclGroupEnd returned (status): launch the deferred output checks on
 * their streams, before the group's records are pushed to the harvest thread. */
void cs_sdc_group_launched(int status) {
  if (!grp_p) return;
  for (size_t i = 0; i < grp.n; i++)
    if (status == 0) launch(grp.v[i].x, grp.v[i].slot, 1, grp.v[i].p, grp.v[i].nb, grp.v[i].dtype, grp.v[i].stream);
  /* slots with no launch at all are released by cs_sdc_collect (nothing to wait for) */
  grp.n = 0;
}

/* Integer sums are kept modulo 2^min(8*size, 52): exact in a double, and consistent with
 * the wrapping arithmetic of an integer reduction (readers compare modulo the same). */
static double int_sum(uint64_t isum, int dtype) {
  unsigned bits = cs_dtype_size(dtype) * 8;
  if (bits > 52) bits = 52;
  return (double)(isum & ((1ull << bits) - 1));
}

static bool is_int(int dtype) { return dtype >= CS_SDC_INT8 && dtype <= CS_SDC_UINT64; }

bool cs_sdc_collect(struct cs_record *r, bool final) {
  if (!r->sdc_slot) return true;
  struct sdc_ctx *x = &ctxs[r->sdc_ctx - 1];
  unsigned slot = r->sdc_slot - 1;
  struct slot_meta *m = &x->meta[slot];
  for (int k = 0; k < 2; k++) {
    if (!m->launched[k]) continue;
    uint32_t done = __atomic_load_n(&x->res[slot * 2 + k].done, __ATOMIC_ACQUIRE);
    if (done != m->tag[k]) {
      if (!final) return false;
      /* never finished before exit: the slot stays taken (the kernel may still write it) */
      r->sdc_slot = 0;
      r->sdc_ctx = 0;
      return true;
    }
  }
  bool ok = r->status == 0 || r->status == NCCL_IN_PROGRESS;
  const struct cs_sdc_result *in = &x->res[slot * 2], *out = &x->res[slot * 2 + 1];
  r->sdc_checked = 0;
  if (ok && m->launched[1]) {
    r->fingerprint = out->fp;
    r->out_sum = fp8(r->dtype) ? NAN : is_int(r->dtype) ? int_sum(out->isum, r->dtype)
                                                        : out->sum;
    r->sdc_checked |= 1;
  }
  if (ok && m->launched[0]) {
    r->in_sum = fp8(r->dtype) ? NAN : is_int(r->dtype) ? int_sum(in->isum, r->dtype)
                                                       : in->sum;
    r->in_abs = fp8(r->dtype) ? NAN : in->abs;
    r->sdc_checked |= 2;
  }
  atomic_store_explicit(&x->state[slot], 0, memory_order_release);
  r->sdc_slot = 0;
  r->sdc_ctx = 0;
  return true;
}

const char *cs_sdc_standing(uint64_t *launched, uint64_t *no_slot) {
  *launched = atomic_load(&n_launched);
  *no_slot = atomic_load(&n_no_slot);
  if (cs_cfg.sdc_mode == CS_SDC_OFF) return NULL;
#ifndef COLLSCOPE_SDC_FATBIN
  return "compiled_out";
#else
  int n = atomic_load_explicit(&nctx, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (atomic_load_explicit(&ctxs[i].ready, memory_order_acquire) && !ctxs[i].ok) return ctxs[i].why;
  if (n) return "ready";
  return atomic_load_explicit(&fx_tried, memory_order_acquire) && !fx.ok ? "no_driver" : "unused";
#endif
}

/* ---- what the harvest thread and the dump get (registered by shim/wiring.c) ---- */
static bool sdc_complete(struct cs_record *r, bool final) {
  return !r->sdc_slot || cs_sdc_collect(r, final); /* false: the kernels are still running */
}
const struct cs_harvest_client cs_sdc_harvest = {.name = "sdc", .complete = sdc_complete};

void cs_sdc_dump_footer(const struct cs_dump_kv *kv) {
  uint64_t launches, no_slot;
  const char *sdc = cs_sdc_standing(&launches, &no_slot);
  if (!sdc) return; /* COLLSCOPE_SDC=off */
  kv->str("sdc", sdc);
  kv->u64("sdc_launches", launches);
  kv->u64("sdc_no_slot", no_slot);
}
