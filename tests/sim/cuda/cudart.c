/* tests/sim/cuda/cudart.c: libcudart.so.13 of the simulator, a thin layer over the simulated
 * driver (libcuda.so.1). Exported under the version node libcudart.so.13 (cudart.map), so
 * binaries linked against the real CUDA 13 runtime bind to it unchanged.
 *
 * Like the real runtime, it reaches the driver through function pointers looked up in
 * libcuda.so.1 itself (dlsym on its handle), never through the global symbol scope: an
 * LD_PRELOAD shim that wraps cu* functions does not see the runtime's internal driver calls.
 *
 * Per-thread state: the current device is the device of the thread's current driver context
 * (default 0: the first call that needs a context makes device 0's primary context current,
 * like cudaFree(0)); the last error is per thread (cudaGetLastError resets it,
 * cudaPeekAtLastError does not; cudaErrorNotReady is not recorded), except a sticky device
 * fault, which both return until the process exits. */
#include "simcuda.h"
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ driver access */
static void *drv_handle(void)
{
    static void *h;
    void *cur = __atomic_load_n(&h, __ATOMIC_ACQUIRE);
    if (cur) return cur;
    Dl_info di;
    if (dladdr((void *)&simcuda_enqueue, &di) && di.dli_fname) cur = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!cur) cur = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!cur) {
        fprintf(stderr, "collscope-sim libcudart: cannot find the simulated libcuda.so.1\n");
        abort();
    }
    __atomic_store_n(&h, cur, __ATOMIC_RELEASE);
    return cur;
}

static void *drv_sym(const char *name)
{
    void *p = dlsym(drv_handle(), name);
    if (!p) {
        fprintf(stderr, "collscope-sim libcudart: libcuda.so.1 lacks %s\n", name);
        abort();
    }
    return p;
}

/* DRV(cuFoo) calls the driver's cuFoo (after cuda.h's version mapping); DRVX(cuFoo, _ptsz)
 * calls cuFoo_ptsz, which has cuFoo's signature. */
#define DRV(fn) DRV2_(fn, )
#define DRVX(fn, sfx) DRV2_(fn, sfx)
#define DRV2_(fn, sfx) (*({ static void *p_; void *q_ = __atomic_load_n(&p_, __ATOMIC_ACQUIRE); \
    if (!q_) { q_ = drv_sym(#fn #sfx); __atomic_store_n(&p_, q_, __ATOMIC_RELEASE); } (__typeof__(&fn))q_; }))
#define DRVP(fn, pt) ((pt) ? DRVX(fn, _ptsz) : DRV(fn))
#define DRVD(fn, pt) ((pt) ? DRVX(fn, _ptds) : DRV(fn))

/* ------------------------------------------------------------------ errors */
static __thread cudaError_t tls_last = cudaSuccess;

static cudaError_t R(cudaError_t e)
{
    if (e != cudaSuccess && e != cudaErrorNotReady) tls_last = e;
    return e;
}

/* CUresult and cudaError_t share their numeric values for every code the simulator returns */
static cudaError_t RC(CUresult r) { return R((cudaError_t)r); }

static const struct { cudaError_t code; const char *name, *msg; } rt_errs[] = {
#define E(n, v, m) { (cudaError_t)(v), #n, m },
#include "rt_errors.inc"
#undef E
};

EXPORT const char *cudaGetErrorName(cudaError_t e)
{
    for (size_t i = 0; i < sizeof rt_errs / sizeof rt_errs[0]; i++)
        if (rt_errs[i].code == e) return rt_errs[i].name;
    return "unrecognized error code";
}

EXPORT const char *cudaGetErrorString(cudaError_t e)
{
    for (size_t i = 0; i < sizeof rt_errs / sizeof rt_errs[0]; i++)
        if (rt_errs[i].code == e) return rt_errs[i].msg;
    return "unrecognized error code";
}

/* A sticky device fault of the current device (driver_types.h:769-775) is not reset: both
 * return it on every call, whatever the thread's own last error was. */
EXPORT cudaError_t cudaGetLastError(void)
{
    cudaError_t e = tls_last;
    tls_last = cudaSuccess;
    CUresult f = simcuda_device_error(simcuda_current_device());
    return f != CUDA_SUCCESS ? (cudaError_t)f : e;
}

EXPORT cudaError_t cudaPeekAtLastError(void)
{
    CUresult f = simcuda_device_error(simcuda_current_device());
    return f != CUDA_SUCCESS ? (cudaError_t)f : tls_last;
}

/* ------------------------------------------------------------------ context / device */
static cudaError_t rt_init(void)
{
    CUcontext c = NULL;
    DRV(cuCtxGetCurrent)(&c);
    if (c) return cudaSuccess;
    if (simcuda_device_count() == 0) return cudaErrorNoDevice;
    CUresult r = DRV(cuDevicePrimaryCtxRetain)(&c, 0);
    if (r == CUDA_SUCCESS) r = DRV(cuCtxSetCurrent)(c);
    return (cudaError_t)r;
}

#define INIT() do { cudaError_t e_ = rt_init(); if (e_ != cudaSuccess) return R(e_); } while (0)

static int dev_valid(int d) { return d >= 0 && d < simcuda_device_count(); }

EXPORT cudaError_t cudaGetDeviceCount(int *n)
{
    if (!n) return R(cudaErrorInvalidValue);
    *n = simcuda_device_count();
    return *n ? cudaSuccess : R(cudaErrorNoDevice);
}

EXPORT cudaError_t cudaSetDevice(int d)
{
    if (!dev_valid(d)) return R(cudaErrorInvalidDevice);
    CUcontext c;
    CUresult r = DRV(cuDevicePrimaryCtxRetain)(&c, d);
    if (r == CUDA_SUCCESS) r = DRV(cuCtxSetCurrent)(c);
    return RC(r);
}

EXPORT cudaError_t cudaInitDevice(int d, unsigned int deviceFlags, unsigned int flags)
{
    (void)deviceFlags; (void)flags;
    return dev_valid(d) ? cudaSuccess : R(cudaErrorInvalidDevice);
}

EXPORT cudaError_t cudaGetDevice(int *d)
{
    if (!d) return R(cudaErrorInvalidValue);
    *d = simcuda_current_device();
    return cudaSuccess;
}

EXPORT cudaError_t cudaChooseDevice(int *d, const struct cudaDeviceProp *p)
{
    if (!d || !p) return R(cudaErrorInvalidValue);
    *d = 0;
    return cudaSuccess;
}

EXPORT cudaError_t cudaSetValidDevices(int *devs, int n)
{
    for (int i = 0; i < n; i++) if (!devs || !dev_valid(devs[i])) return R(cudaErrorInvalidDevice);
    return cudaSuccess;
}

static unsigned g_devflags;

EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    if (flags & ~(unsigned)(cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax | cudaDeviceSyncMemops))
        return R(cudaErrorInvalidValue);
    INIT();
    __atomic_store_n(&g_devflags, flags, __ATOMIC_RELAXED);
    return cudaSuccess;
}

EXPORT cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    if (!flags) return R(cudaErrorInvalidValue);
    *flags = __atomic_load_n(&g_devflags, __ATOMIC_RELAXED) | cudaDeviceMapHost;
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d)
{
    if (!v) return R(cudaErrorInvalidValue);
    if (!dev_valid(d)) return R(cudaErrorInvalidDevice);
    return RC(DRV(cuDeviceGetAttribute)(v, (CUdevice_attribute)a, d));
}

static int attr(CUdevice_attribute a, int d)
{
    int v = 0;
    DRV(cuDeviceGetAttribute)(&v, a, d);
    return v;
}

EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (!p) return R(cudaErrorInvalidValue);
    if (!dev_valid(d)) return R(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    DRV(cuDeviceGetName)(p->name, (int)sizeof p->name, d);
    CUuuid u;
    DRV(cuDeviceGetUuid)(&u, d);
    memcpy(p->uuid.bytes, u.bytes, sizeof u.bytes);
    size_t total = 0;
    DRV(cuDeviceTotalMem)(&total, d);
    p->totalGlobalMem = total;
    p->sharedMemPerBlock = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, d);
    p->regsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, d);
    p->warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, d);
    p->memPitch = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_PITCH, d);
    p->maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, d);
    p->maxThreadsDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, d);
    p->maxThreadsDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, d);
    p->maxThreadsDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, d);
    p->maxGridSize[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, d);
    p->maxGridSize[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, d);
    p->maxGridSize[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, d);
    p->totalConstMem = (size_t)attr(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, d);
    p->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
    p->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
    p->textureAlignment = (size_t)attr(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, d);
    p->texturePitchAlignment = 32;
    p->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
    p->canMapHostMemory = 1;
    p->surfaceAlignment = 512;
    p->concurrentKernels = 1;
    p->ECCEnabled = attr(CU_DEVICE_ATTRIBUTE_ECC_ENABLED, d);
    p->pciBusID = attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
    p->pciDeviceID = attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
    p->pciDomainID = attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
    p->asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, d);
    p->unifiedAddressing = 1;
    p->memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, d);
    p->l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, d);
    p->persistingL2CacheMaxSize = attr(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, d);
    p->maxThreadsPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, d);
    p->streamPrioritiesSupported = 1;
    p->globalL1CacheSupported = 1;
    p->localL1CacheSupported = 1;
    p->sharedMemPerMultiprocessor = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, d);
    p->regsPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, d);
    p->managedMemory = 1;
    p->concurrentManagedAccess = 1;
    p->computePreemptionSupported = 1;
    p->canUseHostPointerForRegisteredMem = 1;
    p->cooperativeLaunch = 1;
    p->sharedMemPerBlockOptin = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d);
    p->maxBlocksPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, d);
    p->accessPolicyMaxWindowSize = attr(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, d);
    p->reservedSharedMemPerBlock = (size_t)attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, d);
    p->hostRegisterSupported = 1;
    p->memoryPoolsSupported = 1;
    p->gpuDirectRDMASupported = 1;
    p->ipcEventSupported = 1;
    p->clusterLaunch = 1;
    p->hostNumaId = attr(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, d);
    p->deviceNumaId = -1;
    p->gpuPciDeviceID = 0x233010de;
    p->gpuPciSubsystemID = 0x16c110de;
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int d)
{
    if (!buf || len <= 0) return R(cudaErrorInvalidValue);
    if (!dev_valid(d)) return R(cudaErrorInvalidDevice);
    return RC(DRV(cuDeviceGetPCIBusId)(buf, len, d));
}

EXPORT cudaError_t cudaDeviceGetByPCIBusId(int *d, const char *id)
{
    CUdevice dev;
    if (!d || !id) return R(cudaErrorInvalidValue);
    CUresult r = DRV(cuDeviceGetByPCIBusId)(&dev, id);
    if (r == CUDA_SUCCESS) *d = dev;
    return RC(r);
}

EXPORT cudaError_t cudaDeviceSynchronize(void) { INIT(); return RC(DRV(cuCtxSynchronize)()); }

EXPORT cudaError_t cudaDeviceReset(void)
{
    INIT();
    return RC(DRV(cuDevicePrimaryCtxReset)(simcuda_current_device()));
}

EXPORT cudaError_t cudaDeviceCanAccessPeer(int *can, int d, int peer)
{
    if (!can) return R(cudaErrorInvalidValue);
    if (!dev_valid(d) || !dev_valid(peer)) return R(cudaErrorInvalidDevice);
    return RC(DRV(cuDeviceCanAccessPeer)(can, d, peer));
}

/* peer access state per (device, peer), like the real runtime's */
static unsigned char g_peer[64][64];
static pthread_mutex_t g_peer_mu = PTHREAD_MUTEX_INITIALIZER;

EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    if (flags) return R(cudaErrorInvalidValue);
    if (!dev_valid(peer)) return R(cudaErrorInvalidDevice);
    INIT();
    int d = simcuda_current_device();
    if (d == peer || d >= 64 || peer >= 64) return R(cudaErrorInvalidDevice);
    pthread_mutex_lock(&g_peer_mu);
    int was = g_peer[d][peer];
    g_peer[d][peer] = 1;
    pthread_mutex_unlock(&g_peer_mu);
    return was ? R(cudaErrorPeerAccessAlreadyEnabled) : cudaSuccess;
}

EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peer)
{
    if (!dev_valid(peer)) return R(cudaErrorInvalidDevice);
    INIT();
    int d = simcuda_current_device();
    if (d == peer || d >= 64 || peer >= 64) return R(cudaErrorInvalidDevice);
    pthread_mutex_lock(&g_peer_mu);
    int was = g_peer[d][peer];
    g_peer[d][peer] = 0;
    pthread_mutex_unlock(&g_peer_mu);
    return was ? cudaSuccess : R(cudaErrorPeerAccessNotEnabled);
}

EXPORT cudaError_t cudaDeviceGetP2PAttribute(int *v, enum cudaDeviceP2PAttr a, int src, int dst)
{
    if (!v) return R(cudaErrorInvalidValue);
    return RC(DRV(cuDeviceGetP2PAttribute)(v, (CUdevice_P2PAttribute)a, src, dst));
}

EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return cudaSuccess;
}

static size_t g_limits[8] = { 1024, 1048576, 8388608, 2, 2048, 64, 0, 0 };

EXPORT cudaError_t cudaDeviceSetLimit(enum cudaLimit l, size_t v)
{
    if ((unsigned)l >= 8) return R(cudaErrorUnsupportedLimit);
    g_limits[l] = v;
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetLimit(size_t *v, enum cudaLimit l)
{
    if (!v) return R(cudaErrorInvalidValue);
    if ((unsigned)l >= 8) return R(cudaErrorUnsupportedLimit);
    *v = g_limits[l];
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache c) { (void)c; return cudaSuccess; }
EXPORT cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *c)
{
    if (!c) return R(cudaErrorInvalidValue);
    *c = cudaFuncCachePreferNone;
    return cudaSuccess;
}

EXPORT cudaError_t cudaDriverGetVersion(int *v)
{
    if (!v) return R(cudaErrorInvalidValue);
    return RC(DRV(cuDriverGetVersion)(v));
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (!v) return R(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}

EXPORT cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
EXPORT cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

/* ------------------------------------------------------------------ memory */
EXPORT cudaError_t cudaMalloc(void **p, size_t n)
{
    if (!p) return R(cudaErrorInvalidValue);
    INIT();
    if (n == 0) { *p = NULL; return cudaSuccess; }
    CUdeviceptr d;
    CUresult r = DRV(cuMemAlloc)(&d, n);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return R(cudaErrorMemoryAllocation);
    if (r == CUDA_SUCCESS) *p = (void *)d;
    return RC(r);
}

EXPORT cudaError_t cudaMallocManaged(void **p, size_t n, unsigned int flags)
{
    if (!p || n == 0) return R(cudaErrorInvalidValue);
    INIT();
    CUdeviceptr d;
    CUresult r = DRV(cuMemAllocManaged)(&d, n, flags);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return R(cudaErrorMemoryAllocation);
    if (r == CUDA_SUCCESS) *p = (void *)d;
    return RC(r);
}

EXPORT cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t w, size_t h)
{
    if (!pitch) return R(cudaErrorInvalidValue);
    size_t pt = (w + 511) / 512 * 512;
    cudaError_t e = cudaMalloc(p, pt * h);
    if (e == cudaSuccess) *pitch = pt;
    return e;
}

EXPORT cudaError_t cudaFree(void *p)
{
    INIT();
    if (!p) return cudaSuccess;
    return RC(DRV(cuMemFree)((CUdeviceptr)p));
}

EXPORT cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
    if (!p) return R(cudaErrorInvalidValue);
    INIT();
    if (n == 0) { *p = NULL; return cudaSuccess; }
    CUresult r = DRV(cuMemHostAlloc)(p, n, flags);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return R(cudaErrorMemoryAllocation);
    return RC(r);
}

EXPORT cudaError_t cudaMallocHost(void **p, size_t n) { return cudaHostAlloc(p, n, cudaHostAllocDefault); }

EXPORT cudaError_t cudaFreeHost(void *p)
{
    INIT();
    if (!p) return cudaSuccess;
    return RC(DRV(cuMemFreeHost)(p));
}

EXPORT cudaError_t cudaHostRegister(void *p, size_t n, unsigned int flags)
{
    INIT();
    return RC(DRV(cuMemHostRegister)(p, n, flags));
}

EXPORT cudaError_t cudaHostUnregister(void *p) { INIT(); return RC(DRV(cuMemHostUnregister)(p)); }

EXPORT cudaError_t cudaHostGetDevicePointer(void **pd, void *p, unsigned int flags)
{
    CUdeviceptr d;
    if (!pd) return R(cudaErrorInvalidValue);
    CUresult r = DRV(cuMemHostGetDevicePointer)(&d, p, flags);
    if (r == CUDA_SUCCESS) *pd = (void *)d;
    return RC(r);
}

EXPORT cudaError_t cudaHostGetFlags(unsigned int *flags, void *p) { return RC(DRV(cuMemHostGetFlags)(flags, p)); }

EXPORT cudaError_t cudaMemGetInfo(size_t *f, size_t *t) { INIT(); return RC(DRV(cuMemGetInfo)(f, t)); }

EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    if (!a) return R(cudaErrorInvalidValue);
    INIT();
    memset(a, 0, sizeof *a);
    int dev = -2;
    int kind = simcuda_ptr_kind(p, &dev);
    switch (kind) {
    case 1: a->type = cudaMemoryTypeDevice; a->device = dev; a->devicePointer = (void *)p; a->hostPointer = NULL; break;
    case 3: a->type = cudaMemoryTypeManaged; a->device = dev; a->devicePointer = (void *)p; a->hostPointer = (void *)p; break;
    case 2: {
        int ord = 0;
        DRV(cuPointerGetAttribute)(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p);
        a->type = cudaMemoryTypeHost; a->device = ord; a->devicePointer = (void *)p; a->hostPointer = (void *)p;
        break;
    }
    default: a->type = cudaMemoryTypeUnregistered; a->device = -2; a->devicePointer = NULL; a->hostPointer = (void *)p; break;
    }
    return cudaSuccess;
}

/* copy direction check against what the pointers are (UVA), as measured on CUDA 13 */
static cudaError_t check_kind(void *dst, const void *src, enum cudaMemcpyKind kind)
{
    if ((unsigned)kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
    int dk = simcuda_ptr_kind(dst, NULL), sk = simcuda_ptr_kind(src, NULL);
    switch (kind) {
    case cudaMemcpyHostToDevice: return dk ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost: return sk ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice: return dk && sk ? cudaSuccess : cudaErrorInvalidValue;
    default: return cudaSuccess;
    }
}

static cudaError_t memcpy_(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, int pt)
{
    INIT();
    cudaError_t e = check_kind(dst, src, kind);
    if (e != cudaSuccess) return R(e);
    if (n == 0) return cudaSuccess;
    return RC(DRVD(cuMemcpy, pt)((CUdeviceptr)dst, (CUdeviceptr)src, n));
}
EXPORT cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { return memcpy_(d, s, n, k, 0); }
EXPORT cudaError_t cudaMemcpy_ptds(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { return memcpy_(d, s, n, k, 1); }

static cudaError_t memcpy_async(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s, int pt)
{
    INIT();
    cudaError_t e = check_kind(dst, src, kind);
    if (e != cudaSuccess) return R(e);
    if (n == 0) return cudaSuccess;
    return RC(DRVP(cuMemcpyAsync, pt)((CUdeviceptr)dst, (CUdeviceptr)src, n, s));
}
EXPORT cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st)
{ return memcpy_async(d, s, n, k, st, 0); }
EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st)
{ return memcpy_async(d, s, n, k, st, 1); }

static cudaError_t memcpy2d(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                            enum cudaMemcpyKind kind, cudaStream_t s, int async, int pt)
{
    INIT();
    if (h > 1 && (dp < w || sp < w)) return R(cudaErrorInvalidPitchValue);
    cudaError_t e = check_kind(dst, src, kind);
    if (e != cudaSuccess) return R(e);
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    c.srcDevice = (CUdeviceptr)src;
    c.srcPitch = sp;
    c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    c.dstDevice = (CUdeviceptr)dst;
    c.dstPitch = dp;
    c.WidthInBytes = w;
    c.Height = h;
    if (async) return RC(DRVP(cuMemcpy2DAsync, pt)(&c, s));
    return RC(DRVD(cuMemcpy2D, pt)(&c));
}
EXPORT cudaError_t cudaMemcpy2D(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k)
{ return memcpy2d(d, dp, s, sp, w, h, k, NULL, 0, 0); }
EXPORT cudaError_t cudaMemcpy2D_ptds(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k)
{ return memcpy2d(d, dp, s, sp, w, h, k, NULL, 0, 1); }
EXPORT cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h,
                                     enum cudaMemcpyKind k, cudaStream_t st)
{ return memcpy2d(d, dp, s, sp, w, h, k, st, 1, 0); }
EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h,
                                          enum cudaMemcpyKind k, cudaStream_t st)
{ return memcpy2d(d, dp, s, sp, w, h, k, st, 1, 1); }

/* 3D copies of linear memory (no CUDA arrays): one 2D copy per slice, in stream order.
 * extent.width is in bytes; a slice is pitch x ysize bytes. */
static cudaError_t memcpy3d(const struct cudaMemcpy3DParms *p, cudaStream_t s, int async, int pt)
{
    if (!p) return R(cudaErrorInvalidValue);
    INIT();
    if (p->srcArray || p->dstArray) return R(cudaErrorInvalidValue);   /* CUDA arrays are not simulated */
    const struct cudaExtent x = p->extent;
    if (!x.width || !x.height || !x.depth) return cudaSuccess;
    const struct cudaPitchedPtr *sp = &p->srcPtr, *dp = &p->dstPtr;
    if (!sp->ptr || !dp->ptr || sp->pitch < x.width || dp->pitch < x.width) return R(cudaErrorInvalidPitchValue);
    if (x.depth > 1 && (sp->ysize < x.height || dp->ysize < x.height)) return R(cudaErrorInvalidValue);
    if (p->srcPos.x > sp->pitch - x.width || p->dstPos.x > dp->pitch - x.width) return R(cudaErrorInvalidValue);
    size_t sslice, dslice, soff, doff, t;
    if (__builtin_mul_overflow(sp->pitch, sp->ysize, &sslice) || __builtin_mul_overflow(dp->pitch, dp->ysize, &dslice) ||
        __builtin_mul_overflow(p->srcPos.z, sslice, &soff) || __builtin_mul_overflow(p->srcPos.y, sp->pitch, &t) ||
        __builtin_add_overflow(soff, t + p->srcPos.x, &soff) ||
        __builtin_mul_overflow(p->dstPos.z, dslice, &doff) || __builtin_mul_overflow(p->dstPos.y, dp->pitch, &t) ||
        __builtin_add_overflow(doff, t + p->dstPos.x, &doff) ||
        __builtin_mul_overflow(x.depth, sslice, &t) || __builtin_mul_overflow(x.depth, dslice, &t))
        return R(cudaErrorInvalidValue);
    for (size_t z = 0; z < x.depth; z++) {
        cudaError_t e = memcpy2d((char *)dp->ptr + doff + z * dslice, dp->pitch, (const char *)sp->ptr + soff + z * sslice,
                                 sp->pitch, x.width, x.height, p->kind, s, async, pt);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
EXPORT cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p) { return memcpy3d(p, NULL, 0, 0); }
EXPORT cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p) { return memcpy3d(p, NULL, 0, 1); }
EXPORT cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t s) { return memcpy3d(p, s, 1, 0); }
EXPORT cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t s) { return memcpy3d(p, s, 1, 1); }

static cudaError_t memcpy_peer(void *dst, int dd, const void *src, int sd, size_t n, cudaStream_t s, int async, int pt)
{
    INIT();
    if (!dev_valid(dd) || !dev_valid(sd)) return R(cudaErrorInvalidDevice);
    if (n == 0) return cudaSuccess;
    CUcontext dc, sc;
    DRV(cuDevicePrimaryCtxRetain)(&dc, dd);
    DRV(cuDevicePrimaryCtxRetain)(&sc, sd);
    if (async) return RC(DRVP(cuMemcpyPeerAsync, pt)((CUdeviceptr)dst, dc, (CUdeviceptr)src, sc, n, s));
    return RC(DRVD(cuMemcpyPeer, pt)((CUdeviceptr)dst, dc, (CUdeviceptr)src, sc, n));
}
EXPORT cudaError_t cudaMemcpyPeer_ptds(void *d, int dd, const void *s, int sd, size_t n);
EXPORT cudaError_t cudaMemcpyPeerAsync_ptsz(void *d, int dd, const void *s, int sd, size_t n, cudaStream_t st);
EXPORT cudaError_t cudaMemcpyPeer(void *d, int dd, const void *s, int sd, size_t n) { return memcpy_peer(d, dd, s, sd, n, NULL, 0, 0); }
EXPORT cudaError_t cudaMemcpyPeer_ptds(void *d, int dd, const void *s, int sd, size_t n) { return memcpy_peer(d, dd, s, sd, n, NULL, 0, 1); }
EXPORT cudaError_t cudaMemcpyPeerAsync(void *d, int dd, const void *s, int sd, size_t n, cudaStream_t st)
{ return memcpy_peer(d, dd, s, sd, n, st, 1, 0); }
EXPORT cudaError_t cudaMemcpyPeerAsync_ptsz(void *d, int dd, const void *s, int sd, size_t n, cudaStream_t st)
{ return memcpy_peer(d, dd, s, sd, n, st, 1, 1); }

static cudaError_t memset_(void *p, int v, size_t n, cudaStream_t s, int async, int pt)
{
    INIT();
    if (n == 0) return cudaSuccess;
    if (!simcuda_ptr_kind(p, NULL)) return R(cudaErrorInvalidValue);
    if (async) return RC(DRVP(cuMemsetD8Async, pt)((CUdeviceptr)p, (unsigned char)v, n, s));
    return RC(DRVD(cuMemsetD8, pt)((CUdeviceptr)p, (unsigned char)v, n));
}
EXPORT cudaError_t cudaMemset(void *p, int v, size_t n) { return memset_(p, v, n, NULL, 0, 0); }
EXPORT cudaError_t cudaMemset_ptds(void *p, int v, size_t n) { return memset_(p, v, n, NULL, 0, 1); }
EXPORT cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) { return memset_(p, v, n, s, 1, 0); }
EXPORT cudaError_t cudaMemsetAsync_ptsz(void *p, int v, size_t n, cudaStream_t s) { return memset_(p, v, n, s, 1, 1); }

static cudaError_t memset2d(void *p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s, int async, int pt)
{
    INIT();
    if (w == 0 || h == 0) return cudaSuccess;
    if (!simcuda_ptr_kind(p, NULL)) return R(cudaErrorInvalidValue);
    if (h > 1 && pitch < w) return R(cudaErrorInvalidPitchValue);
    if (async) return RC(DRVP(cuMemsetD2D8Async, pt)((CUdeviceptr)p, pitch, (unsigned char)v, w, h, s));
    return RC(DRVD(cuMemsetD2D8, pt)((CUdeviceptr)p, pitch, (unsigned char)v, w, h));
}
EXPORT cudaError_t cudaMemset2D(void *p, size_t pitch, int v, size_t w, size_t h) { return memset2d(p, pitch, v, w, h, NULL, 0, 0); }
EXPORT cudaError_t cudaMemset2D_ptds(void *p, size_t pitch, int v, size_t w, size_t h) { return memset2d(p, pitch, v, w, h, NULL, 0, 1); }
EXPORT cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s)
{ return memset2d(p, pitch, v, w, h, s, 1, 0); }
EXPORT cudaError_t cudaMemset2DAsync_ptsz(void *p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s)
{ return memset2d(p, pitch, v, w, h, s, 1, 1); }

static cudaError_t malloc_async(void **p, size_t n, cudaStream_t s, int pt)
{
    if (!p) return R(cudaErrorInvalidValue);
    INIT();
    if (n == 0) { *p = NULL; return cudaSuccess; }
    CUdeviceptr d;
    CUresult r = DRVP(cuMemAllocAsync, pt)(&d, n, s);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return R(cudaErrorMemoryAllocation);
    if (r == CUDA_SUCCESS) *p = (void *)d;
    return RC(r);
}
EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s) { return malloc_async(p, n, s, 0); }
EXPORT cudaError_t cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s) { return malloc_async(p, n, s, 1); }
EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { INIT(); return RC(DRV(cuMemFreeAsync)((CUdeviceptr)p, s)); }
EXPORT cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) { INIT(); return RC(DRVX(cuMemFreeAsync, _ptsz)((CUdeviceptr)p, s)); }

static cudaError_t stream_ok(cudaStream_t s, int pt)
{
    int dummy;
    return RC(DRVP(cuStreamGetPriority, pt)(s, &dummy));
}
EXPORT cudaError_t cudaMemPrefetchAsync(const void *p, size_t n, struct cudaMemLocation loc, unsigned int flags, cudaStream_t s)
{ (void)p; (void)n; (void)loc; (void)flags; INIT(); return stream_ok(s, 0); }
EXPORT cudaError_t cudaMemPrefetchAsync_ptsz(const void *p, size_t n, struct cudaMemLocation loc, unsigned int flags, cudaStream_t s)
{ (void)p; (void)n; (void)loc; (void)flags; INIT(); return stream_ok(s, 1); }
EXPORT cudaError_t cudaMemAdvise(const void *p, size_t n, enum cudaMemoryAdvise a, struct cudaMemLocation loc)
{ (void)p; (void)n; (void)a; (void)loc; return cudaSuccess; }
EXPORT cudaError_t cudaStreamAttachMemAsync(cudaStream_t s, void *p, size_t n, unsigned int flags)
{ (void)p; (void)n; (void)flags; INIT(); return stream_ok(s, 0); }
EXPORT cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t s, void *p, size_t n, unsigned int flags)
{ (void)p; (void)n; (void)flags; INIT(); return stream_ok(s, 1); }

/* ------------------------------------------------------------------ IPC handles (the driver's, ipc.c) */
EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
    if (!h) return R(cudaErrorInvalidValue);
    INIT();
    return RC(DRV(cuIpcGetMemHandle)((CUipcMemHandle *)h, (CUdeviceptr)p));
}
EXPORT cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags)
{
    if (!p) return R(cudaErrorInvalidValue);
    INIT();
    CUipcMemHandle ch;
    memcpy(&ch, &h, sizeof ch);
    CUdeviceptr d = 0;
    CUresult r = DRV(cuIpcOpenMemHandle)(&d, ch, flags);
    if (r == CUDA_SUCCESS) *p = (void *)d;
    return RC(r);
}
EXPORT cudaError_t cudaIpcCloseMemHandle(void *p) { INIT(); return RC(DRV(cuIpcCloseMemHandle)((CUdeviceptr)p)); }
EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *h, cudaEvent_t e)
{
    if (!h) return R(cudaErrorInvalidValue);
    INIT();
    return RC(DRV(cuIpcGetEventHandle)((CUipcEventHandle *)h, e));
}
EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *e, cudaIpcEventHandle_t h)
{
    if (!e) return R(cudaErrorInvalidValue);
    INIT();
    CUipcEventHandle ch;
    memcpy(&ch, &h, sizeof ch);
    return RC(DRV(cuIpcOpenEventHandle)(e, ch));
}

/* ------------------------------------------------------------------ streams */
EXPORT cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    if (!s) return R(cudaErrorInvalidValue);
    INIT();
    return RC(DRV(cuStreamCreate)(s, 0));
}

EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    if (!s) return R(cudaErrorInvalidValue);
    INIT();
    return RC(DRV(cuStreamCreate)(s, flags));
}

EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int prio)
{
    if (!s) return R(cudaErrorInvalidValue);
    INIT();
    return RC(DRV(cuStreamCreateWithPriority)(s, flags, prio));
}

EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s) { INIT(); return RC(DRV(cuStreamDestroy)(s)); }

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s) { INIT(); return RC(DRV(cuStreamSynchronize)(s)); }
EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { INIT(); return RC(DRVX(cuStreamSynchronize, _ptsz)(s)); }
EXPORT cudaError_t cudaStreamQuery(cudaStream_t s) { INIT(); return RC(DRV(cuStreamQuery)(s)); }
EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) { INIT(); return RC(DRVX(cuStreamQuery, _ptsz)(s)); }
EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int f)
{ INIT(); return RC(DRV(cuStreamWaitEvent)(s, e, f)); }
EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int f)
{ INIT(); return RC(DRVX(cuStreamWaitEvent, _ptsz)(s, e, f)); }
EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *ud)
{ INIT(); return RC(DRV(cuLaunchHostFunc)(s, fn, ud)); }
EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void *ud)
{ INIT(); return RC(DRVX(cuLaunchHostFunc, _ptsz)(s, fn, ud)); }

struct rt_cb { cudaStreamCallback_t cb; cudaStream_t s; void *ud; };
static void rt_cb_run(void *p)
{
    struct rt_cb *c = p;
    c->cb(c->s, cudaSuccess, c->ud);
    free(c);
}

static cudaError_t add_callback(cudaStream_t s, cudaStreamCallback_t cb, void *ud, unsigned int flags, int pt)
{
    if (!cb || flags) return R(cudaErrorInvalidValue);
    INIT();
    struct rt_cb *c = malloc(sizeof *c);
    if (!c) return R(cudaErrorMemoryAllocation);
    *c = (struct rt_cb){ cb, s, ud };
    CUresult r = DRVP(cuLaunchHostFunc, pt)(s, rt_cb_run, c);
    if (r != CUDA_SUCCESS) free(c);
    return RC(r);
}
EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void *ud, unsigned int f)
{ return add_callback(s, cb, ud, f, 0); }
EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t s, cudaStreamCallback_t cb, void *ud, unsigned int f)
{ return add_callback(s, cb, ud, f, 1); }

EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t s, int *p) { INIT(); return RC(DRV(cuStreamGetPriority)(s, p)); }
EXPORT cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int *p) { INIT(); return RC(DRVX(cuStreamGetPriority, _ptsz)(s, p)); }
EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int *f) { INIT(); return RC(DRV(cuStreamGetFlags)(s, f)); }
EXPORT cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t s, unsigned int *f) { INIT(); return RC(DRVX(cuStreamGetFlags, _ptsz)(s, f)); }
EXPORT cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long *id) { INIT(); return RC(DRV(cuStreamGetId)(s, id)); }
EXPORT cudaError_t cudaStreamGetId_ptsz(cudaStream_t s, unsigned long long *id) { INIT(); return RC(DRVX(cuStreamGetId, _ptsz)(s, id)); }
EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t s, int *d) { INIT(); return RC(DRV(cuStreamGetDevice)(s, d)); }
EXPORT cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t s, int *d) { INIT(); return RC(DRVX(cuStreamGetDevice, _ptsz)(s, d)); }

EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode m)
{ INIT(); return RC(DRV(cuStreamBeginCapture)(s, (CUstreamCaptureMode)m)); }
EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode m)
{ INIT(); return RC(DRVX(cuStreamBeginCapture, _ptsz)(s, (CUstreamCaptureMode)m)); }
EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) { INIT(); return RC(DRV(cuStreamEndCapture)(s, g)); }
EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *g) { INIT(); return RC(DRVX(cuStreamEndCapture, _ptsz)(s, g)); }
EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{ INIT(); return RC(DRV(cuStreamIsCapturing)(s, (CUstreamCaptureStatus *)st)); }
EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{ INIT(); return RC(DRVX(cuStreamIsCapturing, _ptsz)(s, (CUstreamCaptureStatus *)st)); }

static cudaError_t capinfo(cudaStream_t s, enum cudaStreamCaptureStatus *st, unsigned long long *id, cudaGraph_t *g,
                           const cudaGraphNode_t **deps, const cudaGraphEdgeData **e, size_t *n, int pt)
{
    if (!st) return R(cudaErrorInvalidValue);
    INIT();
    return RC(DRVP(cuStreamGetCaptureInfo, pt)(s, (CUstreamCaptureStatus *)st, (cuuint64_t *)id, g, deps,
                                               (const CUgraphEdgeData **)e, n));
}
EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus *st, unsigned long long *id,
                                            cudaGraph_t *g, const cudaGraphNode_t **deps, const cudaGraphEdgeData **e, size_t *n)
{ return capinfo(s, st, id, g, deps, e, n, 0); }
EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus *st, unsigned long long *id,
                                                 cudaGraph_t *g, const cudaGraphNode_t **deps, const cudaGraphEdgeData **e, size_t *n)
{ return capinfo(s, st, id, g, deps, e, n, 1); }

EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *m)
{ return RC(DRV(cuThreadExchangeStreamCaptureMode)((CUstreamCaptureMode *)m)); }

/* ------------------------------------------------------------------ events */
EXPORT cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    if (!e) return R(cudaErrorInvalidValue);
    INIT();
    return RC(DRV(cuEventCreate)(e, 0));
}

EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    if (!e) return R(cudaErrorInvalidValue);
    INIT();
    return RC(DRV(cuEventCreate)(e, flags));
}

EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) { INIT(); return RC(DRV(cuEventDestroy)(e)); }
EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { INIT(); return RC(DRV(cuEventRecord)(e, s)); }
EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) { INIT(); return RC(DRVX(cuEventRecord, _ptsz)(e, s)); }
EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int f)
{ INIT(); return RC(DRV(cuEventRecordWithFlags)(e, s, f)); }
EXPORT cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned int f)
{ INIT(); return RC(DRVX(cuEventRecordWithFlags, _ptsz)(e, s, f)); }
EXPORT cudaError_t cudaEventQuery(cudaEvent_t e) { INIT(); return RC(DRV(cuEventQuery)(e)); }
EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e) { INIT(); return RC(DRV(cuEventSynchronize)(e)); }
EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{ INIT(); return RC(DRV(cuEventElapsedTime)(ms, a, b)); }
EXPORT cudaError_t cudaEventElapsedTime_v2(float *ms, cudaEvent_t a, cudaEvent_t b);
EXPORT cudaError_t cudaEventElapsedTime_v2(float *ms, cudaEvent_t a, cudaEvent_t b) { return cudaEventElapsedTime(ms, a, b); }

/* ------------------------------------------------------------------ graphs */
EXPORT cudaError_t cudaGraphCreate(cudaGraph_t *g, unsigned int flags) { INIT(); return RC(DRV(cuGraphCreate)(g, flags)); }
EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t g) { return RC(DRV(cuGraphDestroy)(g)); }
EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags)
{ INIT(); return RC(DRV(cuGraphInstantiateWithFlags)(x, g, flags)); }
EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags)
{ INIT(); return RC(DRV(cuGraphInstantiateWithFlags)(x, g, flags)); }
EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) { return RC(DRV(cuGraphExecDestroy)(x)); }
/* cudaGraphInstantiateParams and CUDA_GRAPH_INSTANTIATE_PARAMS share one layout (driver_types.h,
 * cuda.h of CUDA 13.0); the runtime's result codes equal the driver's */
EXPORT cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *x, cudaGraph_t g, cudaGraphInstantiateParams *p)
{ INIT(); return RC(DRV(cuGraphInstantiateWithParams)(x, g, (CUDA_GRAPH_INSTANTIATE_PARAMS *)p)); }
EXPORT cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *x, cudaGraph_t g, cudaGraphInstantiateParams *p)
{ return cudaGraphInstantiateWithParams(x, g, p); }
EXPORT cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t x, cudaGraphNode_t node, cudaEvent_t e)
{ return RC(DRV(cuGraphExecEventRecordNodeSetEvent)(x, node, e)); }
EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) { INIT(); return RC(DRV(cuGraphLaunch)(x, s)); }
EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t x, cudaStream_t s) { INIT(); return RC(DRVX(cuGraphLaunch, _ptsz)(x, s)); }
EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t x, cudaStream_t s) { INIT(); return RC(DRV(cuGraphUpload)(x, s)); }
EXPORT cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t x, cudaStream_t s) { INIT(); return RC(DRVX(cuGraphUpload, _ptsz)(x, s)); }
EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n)
{ return RC(DRV(cuGraphGetNodes)(g, nodes, n)); }
EXPORT cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                        const struct cudaHostNodeParams *p)
{
    if (!p) return R(cudaErrorInvalidValue);
    CUDA_HOST_NODE_PARAMS hp = { p->fn, p->userData };
    return RC(DRV(cuGraphAddHostNode)(node, g, deps, n, &hp));
}

/* ------------------------------------------------------------------ kernels */
/* nvcc-generated registration: host stub address -> device function name. A registered
 * function runs collscope_simkernel_<name> (see cuModuleGetFunction); cudaLaunchKernel of
 * an unregistered pointer returns cudaErrorInvalidResourceHandle, as CUDA 13 does. */
struct kreg { const void *host; char *name; CUfunction fn; struct kreg *next; };
static struct kreg *g_kregs;
static pthread_mutex_t g_kreg_mu = PTHREAD_MUTEX_INITIALIZER;
static CUmodule g_kmod;

EXPORT void **__cudaRegisterFatBinary(void *fatCubin);
EXPORT void __cudaRegisterFatBinaryEnd(void **h);
EXPORT void __cudaUnregisterFatBinary(void **h);
EXPORT void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName, int threadLimit,
                                   uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
EXPORT void __cudaRegisterVar(void **h, char *hostVar, char *deviceAddress, const char *deviceName, int ext, size_t size,
                              int constant, int global);
EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void *stream);
EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream);
EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);
EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s);
EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s);

static char g_fatbin_dummy;

EXPORT void **__cudaRegisterFatBinary(void *fatCubin)
{
    (void)fatCubin;
    void **h = malloc(sizeof *h);
    if (h) *h = &g_fatbin_dummy;
    return h;
}
EXPORT void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
EXPORT void __cudaUnregisterFatBinary(void **h) { free(h); }

EXPORT void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName, int threadLimit,
                                   uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)h; (void)deviceFun; (void)threadLimit; (void)tid; (void)bid; (void)bDim; (void)gDim; (void)wSize;
    struct kreg *k = calloc(1, sizeof *k);
    if (!k || !deviceName || !(k->name = strdup(deviceName))) { free(k); return; }
    k->host = hostFun;
    pthread_mutex_lock(&g_kreg_mu);
    k->next = g_kregs;
    g_kregs = k;
    pthread_mutex_unlock(&g_kreg_mu);
}

/* __device__/__constant__ variables: device memory is host memory, so a variable's device
 * copy is its host shadow (hostVar) itself; the table gives symbol -> size. */
struct vreg { const char *host; size_t size; struct vreg *next; };
static struct vreg *g_vregs;

EXPORT void __cudaRegisterVar(void **h, char *hostVar, char *deviceAddress, const char *deviceName, int ext, size_t size,
                              int constant, int global)
{
    (void)h; (void)deviceAddress; (void)deviceName; (void)ext; (void)constant; (void)global;
    struct vreg *v = calloc(1, sizeof *v);
    if (!v || !hostVar) { free(v); return; }
    v->host = hostVar;
    v->size = size;
    pthread_mutex_lock(&g_kreg_mu);
    v->next = g_vregs;
    g_vregs = v;
    pthread_mutex_unlock(&g_kreg_mu);
}

/* the registered variable at symbol, and whether [offset, offset+count) lies inside it */
static cudaError_t symbol_range(const void *symbol, size_t offset, size_t count, char **at, size_t *size)
{
    pthread_mutex_lock(&g_kreg_mu);
    struct vreg *v = g_vregs;
    while (v && v->host != (const char *)symbol) v = v->next;
    size_t sz = v ? v->size : 0;
    pthread_mutex_unlock(&g_kreg_mu);
    if (!v) return cudaErrorInvalidSymbol;
    if (size) *size = sz;
    if (offset > sz || count > sz - offset) return cudaErrorInvalidValue;
    if (at) *at = (char *)symbol + offset;
    return cudaSuccess;
}

EXPORT cudaError_t cudaGetSymbolAddress(void **p, const void *symbol)
{
    if (!p) return R(cudaErrorInvalidValue);
    INIT();
    char *at;
    cudaError_t e = symbol_range(symbol, 0, 0, &at, NULL);
    if (e == cudaSuccess) *p = at;
    return R(e);
}

EXPORT cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    if (!size) return R(cudaErrorInvalidValue);
    INIT();
    return R(symbol_range(symbol, 0, 0, NULL, size));
}

/* to: kind HtoD, DtoD or Default; from: DtoH, DtoD or Default (else InvalidMemcpyDirection).
 * Stream-ordered like cudaMemcpy(Async) on the same stream. */
static cudaError_t symbol_copy(void *dst, const void *src, const void *symbol, size_t count, size_t offset,
                               enum cudaMemcpyKind kind, int to, cudaStream_t s, int async, int pt)
{
    INIT();
    if (to ? (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
           : (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault))
        return R(cudaErrorInvalidMemcpyDirection);
    char *at;
    cudaError_t e = symbol_range(symbol, offset, count, &at, NULL);
    if (e != cudaSuccess) return R(e);
    if (count == 0) return cudaSuccess;
    if (to) dst = at; else src = at;
    if (async) return RC(DRVP(cuMemcpyAsync, pt)((CUdeviceptr)dst, (CUdeviceptr)src, count, s));
    return RC(DRVD(cuMemcpy, pt)((CUdeviceptr)dst, (CUdeviceptr)src, count));
}
EXPORT cudaError_t cudaMemcpyToSymbol(const void *sym, const void *src, size_t n, size_t off, enum cudaMemcpyKind k)
{ return symbol_copy(NULL, src, sym, n, off, k, 1, NULL, 0, 0); }
EXPORT cudaError_t cudaMemcpyToSymbol_ptds(const void *sym, const void *src, size_t n, size_t off, enum cudaMemcpyKind k)
{ return symbol_copy(NULL, src, sym, n, off, k, 1, NULL, 0, 1); }
EXPORT cudaError_t cudaMemcpyFromSymbol(void *dst, const void *sym, size_t n, size_t off, enum cudaMemcpyKind k)
{ return symbol_copy(dst, NULL, sym, n, off, k, 0, NULL, 0, 0); }
EXPORT cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *sym, size_t n, size_t off, enum cudaMemcpyKind k)
{ return symbol_copy(dst, NULL, sym, n, off, k, 0, NULL, 0, 1); }
EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void *sym, const void *src, size_t n, size_t off, enum cudaMemcpyKind k,
                                           cudaStream_t s)
{ return symbol_copy(NULL, src, sym, n, off, k, 1, s, 1, 0); }
EXPORT cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *sym, const void *src, size_t n, size_t off,
                                                enum cudaMemcpyKind k, cudaStream_t s)
{ return symbol_copy(NULL, src, sym, n, off, k, 1, s, 1, 1); }
EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *sym, size_t n, size_t off, enum cudaMemcpyKind k,
                                             cudaStream_t s)
{ return symbol_copy(dst, NULL, sym, n, off, k, 0, s, 1, 0); }
EXPORT cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *sym, size_t n, size_t off,
                                                  enum cudaMemcpyKind k, cudaStream_t s)
{ return symbol_copy(dst, NULL, sym, n, off, k, 0, s, 1, 1); }

static __thread struct { dim3 grid, block; size_t shmem; void *stream; } tls_callcfg;

EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void *stream)
{
    tls_callcfg.grid = gridDim;
    tls_callcfg.block = blockDim;
    tls_callcfg.shmem = sharedMem;
    tls_callcfg.stream = stream;
    return 0;
}

EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream)
{
    if (gridDim) *gridDim = tls_callcfg.grid;
    if (blockDim) *blockDim = tls_callcfg.block;
    if (sharedMem) *sharedMem = tls_callcfg.shmem;
    if (stream) *(void **)stream = tls_callcfg.stream;
    return cudaSuccess;
}

static cudaError_t kernel_for(const void *func, CUfunction *out)
{
    pthread_mutex_lock(&g_kreg_mu);
    struct kreg *k = g_kregs;
    while (k && k->host != func) k = k->next;
    if (!k) { pthread_mutex_unlock(&g_kreg_mu); return cudaErrorInvalidResourceHandle; }
    if (!k->fn) {
        CUresult r = CUDA_SUCCESS;
        if (!g_kmod) r = DRV(cuModuleLoadData)(&g_kmod, &g_fatbin_dummy);
        if (r == CUDA_SUCCESS) r = DRV(cuModuleGetFunction)(&k->fn, g_kmod, k->name);
        if (r != CUDA_SUCCESS) { pthread_mutex_unlock(&g_kreg_mu); return cudaErrorInvalidDeviceFunction; }
    }
    *out = k->fn;
    pthread_mutex_unlock(&g_kreg_mu);
    return cudaSuccess;
}

static cudaError_t launch_kernel(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s, int pt)
{
    INIT();
    CUfunction f;
    cudaError_t e = kernel_for(func, &f);
    if (e != cudaSuccess) return R(e);
    if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z || (unsigned long long)b.x * b.y * b.z > 1024)
        return R(cudaErrorInvalidConfiguration);
    return RC(DRVP(cuLaunchKernel, pt)(f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem, s, args, NULL));
}
EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s)
{ return launch_kernel(func, g, b, args, shmem, s, 0); }
EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s)
{ return launch_kernel(func, g, b, args, shmem, s, 1); }
EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *func, void **args)
{
    if (!c) return R(cudaErrorInvalidValue);
    return launch_kernel(func, c->gridDim, c->blockDim, args, c->dynamicSmemBytes, c->stream, 0);
}
EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *c, const void *func, void **args)
{
    if (!c) return R(cudaErrorInvalidValue);
    return launch_kernel(func, c->gridDim, c->blockDim, args, c->dynamicSmemBytes, c->stream, 1);
}

/* nvcc 13's <<<>>> launch (crt/host_runtime.h, __cudaLaunch): __cudaGetKernel once per call
 * site turns the host stub into a cudaKernel_t, then __cudaLaunchKernel(_ptsz) launches it
 * (crt/device_functions.h). The handle is the registration entry itself; a handle that is
 * not one (0: the stub was never registered) returns cudaErrorInvalidResourceHandle. */
EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
    if (!kernel) return R(cudaErrorInvalidValue);
    INIT();
    pthread_mutex_lock(&g_kreg_mu);
    struct kreg *k = g_kregs;
    while (k && k->host != func) k = k->next;
    pthread_mutex_unlock(&g_kreg_mu);
    if (!k) return R(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)(void *)k;
    return cudaSuccess;
}
static cudaError_t launch_handle(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s, int pt)
{
    pthread_mutex_lock(&g_kreg_mu);
    struct kreg *k = g_kregs;
    while (k && (void *)k != (void *)kernel) k = k->next;
    const void *host = k ? k->host : NULL;
    pthread_mutex_unlock(&g_kreg_mu);
    if (!host) return R(cudaErrorInvalidResourceHandle);
    return launch_kernel(host, g, b, args, shmem, s, pt);
}
EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s)
{ return launch_handle(kernel, g, b, args, shmem, s, 0); }
EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s)
{ return launch_handle(kernel, g, b, args, shmem, s, 1); }

EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a, const void *func)
{
    CUfunction f;
    if (!a) return R(cudaErrorInvalidValue);
    INIT();
    cudaError_t e = kernel_for(func, &f);
    if (e != cudaSuccess) return R(cudaErrorInvalidDeviceFunction);
    memset(a, 0, sizeof *a);
    a->maxThreadsPerBlock = 1024;
    a->numRegs = 32;
    a->ptxVersion = 90;
    a->binaryVersion = 90;
    return cudaSuccess;
}

EXPORT cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int v)
{
    CUfunction f;
    (void)attr; (void)v;
    INIT();
    return kernel_for(func, &f) == cudaSuccess ? cudaSuccess : R(cudaErrorInvalidDeviceFunction);
}

/* ------------------------------------------------------------------ occupancy */
/* The simulated device is an H100 (driver attributes): 132 SMs, 2048 threads, 32 blocks and
 * 228 KiB shared memory per SM, 1 KiB of it reserved per block; 32 registers a thread
 * (cudaFuncGetAttributes) never limit. Blocks per SM = the smallest of those limits. */
#define SIM_SMS 132
static int blocks_per_sm(int block_size, size_t dyn_smem)
{
    if (block_size <= 0 || block_size > 1024 || dyn_smem > 232448) return -1;
    int warps = (block_size + 31) / 32;
    int by_threads = 2048 / (warps * 32);
    int by_smem = (int)(233472 / (dyn_smem + 1024));
    int n = by_threads < 32 ? by_threads : 32;
    return by_smem < n ? by_smem : n;
}

static cudaError_t occupancy(int *num, const void *func, int block_size, size_t dyn_smem, unsigned flags)
{
    CUfunction f;
    if (!num || flags > cudaOccupancyDisableCachingOverride) return R(cudaErrorInvalidValue);
    INIT();
    if (kernel_for(func, &f) != cudaSuccess) return R(cudaErrorInvalidDeviceFunction);
    int n = blocks_per_sm(block_size, dyn_smem);
    if (n < 0) return R(cudaErrorInvalidValue);
    *num = n;
    return cudaSuccess;
}
EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *num, const void *func, int bs, size_t smem)
{ return occupancy(num, func, bs, smem, 0); }
EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *num, const void *func, int bs, size_t smem,
                                                                          unsigned int flags)
{ return occupancy(num, func, bs, smem, flags); }

EXPORT cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *smem, const void *func, int num_blocks, int bs)
{
    CUfunction f;
    if (!smem || num_blocks <= 0 || bs <= 0 || bs > 1024) return R(cudaErrorInvalidValue);
    INIT();
    if (kernel_for(func, &f) != cudaSuccess) return R(cudaErrorInvalidDeviceFunction);
    if (blocks_per_sm(bs, 0) < num_blocks) { *smem = 0; return cudaSuccess; }
    size_t per = 233472 / (size_t)num_blocks;
    per = per > 1024 ? per - 1024 : 0;
    *smem = per > 232448 ? 232448 : per;
    return cudaSuccess;
}

/* clusters: at most 8 blocks (the portable size); the whole device holds SMs/size of them */
EXPORT cudaError_t cudaOccupancyMaxPotentialClusterSize(int *size, const void *func, const cudaLaunchConfig_t *c)
{
    CUfunction f;
    if (!size || !c) return R(cudaErrorInvalidValue);
    INIT();
    if (kernel_for(func, &f) != cudaSuccess) return R(cudaErrorInvalidDeviceFunction);
    *size = 8;
    return cudaSuccess;
}

EXPORT cudaError_t cudaOccupancyMaxActiveClusters(int *num, const void *func, const cudaLaunchConfig_t *c)
{
    CUfunction f;
    if (!num || !c) return R(cudaErrorInvalidValue);
    INIT();
    if (kernel_for(func, &f) != cudaSuccess) return R(cudaErrorInvalidDeviceFunction);
    unsigned cluster = 1;
    for (unsigned i = 0; i < c->numAttrs; i++)
        if (c->attrs && c->attrs[i].id == cudaLaunchAttributeClusterDimension)
            cluster = c->attrs[i].val.clusterDim.x * c->attrs[i].val.clusterDim.y * c->attrs[i].val.clusterDim.z;
    int per_sm = blocks_per_sm((int)(c->blockDim.x * c->blockDim.y * c->blockDim.z), c->dynamicSmemBytes);
    if (per_sm < 0 || cluster == 0 || cluster > 8) return R(cudaErrorInvalidClusterSize);
    *num = (int)((unsigned)(per_sm * SIM_SMS) / cluster);
    return cudaSuccess;
}

/* a cooperative grid must be co-resident: at most blocks-per-SM x SMs blocks, as on the GPU */
static cudaError_t launch_cooperative(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s, int pt)
{
    INIT();
    CUfunction f;
    cudaError_t e = kernel_for(func, &f);
    if (e != cudaSuccess) return R(e);
    int per_sm = blocks_per_sm((int)((unsigned long long)b.x * b.y * b.z > 1024 ? 0 : b.x * b.y * b.z), shmem);
    if (!g.x || !g.y || !g.z || per_sm < 0) return R(cudaErrorInvalidConfiguration);
    if ((unsigned long long)g.x * g.y * g.z > (unsigned long long)per_sm * SIM_SMS)
        return R(cudaErrorCooperativeLaunchTooLarge);
    return RC(DRVP(cuLaunchCooperativeKernel, pt)(f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem, s, args));
}
EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s)
{ return launch_cooperative(func, g, b, args, shmem, s, 0); }
EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 g, dim3 b, void **args, size_t shmem,
                                                    cudaStream_t s)
{ return launch_cooperative(func, g, b, args, shmem, s, 1); }

/* ------------------------------------------------------------------ graph kernel nodes */
EXPORT cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                          const struct cudaKernelNodeParams *p)
{
    if (!p || !node) return R(cudaErrorInvalidValue);
    INIT();
    CUfunction f;
    cudaError_t e = kernel_for(p->func, &f);
    if (e != cudaSuccess) return R(cudaErrorInvalidDeviceFunction);
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = f;
    kp.gridDimX = p->gridDim.x; kp.gridDimY = p->gridDim.y; kp.gridDimZ = p->gridDim.z;
    kp.blockDimX = p->blockDim.x; kp.blockDimY = p->blockDim.y; kp.blockDimZ = p->blockDim.z;
    kp.sharedMemBytes = p->sharedMemBytes;
    kp.kernelParams = p->kernelParams;
    kp.extra = p->extra;
    return RC(DRV(cuGraphAddKernelNode)(node, g, deps, n, &kp));
}

/* ------------------------------------------------------------------ driver entry points */
static cudaError_t entry_point(const char *sym, void **fp, unsigned ver, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *st, int pt)
{
    if (!sym || !fp) return R(cudaErrorInvalidValue);
    if (pt && (flags & (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)) == 0)
        flags |= cudaEnablePerThreadDefaultStream;
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = DRV(cuGetProcAddress)(sym, fp, (int)ver, flags, &q);
    if (st) *st = (enum cudaDriverEntryPointQueryResult)q;
    if (r != CUDA_SUCCESS) return RC(r);
    if (q != CU_GET_PROC_ADDRESS_SUCCESS && !st) return R(cudaErrorSymbolNotFound);
    return cudaSuccess;
}
EXPORT cudaError_t cudaGetDriverEntryPoint(const char *s, void **fp, unsigned long long f, enum cudaDriverEntryPointQueryResult *st)
{ return entry_point(s, fp, CUDART_VERSION, f, st, 0); }
EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *s, void **fp, unsigned long long f, enum cudaDriverEntryPointQueryResult *st)
{ return entry_point(s, fp, CUDART_VERSION, f, st, 1); }
EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *s, void **fp, unsigned int v, unsigned long long f,
                                                    enum cudaDriverEntryPointQueryResult *st)
{ return entry_point(s, fp, v, f, st, 0); }
EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *s, void **fp, unsigned int v, unsigned long long f,
                                                         enum cudaDriverEntryPointQueryResult *st)
{ return entry_point(s, fp, v, f, st, 1); }
