/* tests/sim/cuda/driver_api.c: the exported CUDA driver API of libcuda.so.1 (simulated).
 *
 * Names: cuda.h maps plain names to their current versions (cuMemAlloc -> cuMemAlloc_v2, ...);
 * the functions here are written with the plain names, so they are exported under the
 * versioned names exactly as cuda.h declares them. The *_ptds / *_ptsz variants (per-thread
 * default stream: NULL means the calling thread's per-thread stream) are written out by
 * hand. Plain legacy names and cuGetProcAddress live in driver_legacy.c.
 *
 * Context: with no current context, calls act on device 0's primary context, as if the
 * runtime had initialised it (cuCtxGetCurrent still reports NULL then, and cuCtxGetDevice
 * CUDA_ERROR_INVALID_CONTEXT, like the real driver). cuInit is optional. */
#include "sim_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* every function this file defines outside `static` is driver API: exported */
SIMCUDA_API_BEGIN

#define GIB (1024ull * 1024ull * 1024ull)
#define SIM_TOTAL_MEM (80ull * GIB)
#define SIM_NAME "NVIDIA H100 80GB HBM3 (collscope-sim)"

static int dev_ok(CUdevice d) { return d >= 0 && d < sim_ndev(); }

/* ------------------------------------------------------------------ init, version, errors */
CUresult cuInit(unsigned int flags)
{
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    sim_init();
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = CUDA_VERSION;
    return CUDA_SUCCESS;
}

static const struct { CUresult code; const char *name, *msg; } cu_errs[] = {
#define E(n, v, m) { (CUresult)(v), #n, m },
#include "cu_errors.inc"
#undef E
};

const char *sim_cu_error_name(CUresult r)
{
    for (size_t i = 0; i < sizeof cu_errs / sizeof cu_errs[0]; i++)
        if (cu_errs[i].code == r) return cu_errs[i].name;
    return NULL;
}

const char *sim_cu_error_string(CUresult r)
{
    for (size_t i = 0; i < sizeof cu_errs / sizeof cu_errs[0]; i++)
        if (cu_errs[i].code == r) return cu_errs[i].msg;
    return NULL;
}

CUresult cuGetErrorName(CUresult r, const char **p)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    *p = sim_cu_error_name(r);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **p)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    *p = sim_cu_error_string(r);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------ devices */
CUresult cuDeviceGetCount(int *n)
{
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    *n = sim_ndev();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", SIM_NAME);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = SIM_TOTAL_MEM;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice d)
{
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    simcuda_gpu_uuid(d, (unsigned char *)uuid->bytes); /* the same bytes the simulated NVML prints */
    return CUDA_SUCCESS;
}

static const unsigned char pci_bus[8] = { 0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb };

/* value of a device attribute; -1 means "not an attribute" */
static long long dev_attr(CUdevice_attribute a, int d)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return pci_bus[d % 8];
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return d / 8;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 5;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return 32505856;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: return 134213632;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return d < 4 ? 0 : 1;
    default:
        return (a >= 1 && a < CU_DEVICE_ATTRIBUTE_MAX) ? 0 : -1;
    }
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute a, CUdevice d)
{
    if (!pi) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    long long v = dev_attr(a, d);
    if (v < 0) return CUDA_ERROR_INVALID_VALUE;
    *pi = (int)v;
    return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice d)
{
    if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    *major = 9;
    *minor = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice d)
{
    if (!buf || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    simcuda_pci_bus_id(d, buf, (size_t)len);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
    unsigned dom = 0, bus = 0, slot = 0, fn = 0;
    if (!dev || !id) return CUDA_ERROR_INVALID_VALUE;
    if (sscanf(id, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4) {
        dom = 0;
        if (sscanf(id, "%x:%x.%x", &bus, &slot, &fn) != 3) return CUDA_ERROR_INVALID_VALUE;
    }
    for (int d = 0; d < sim_ndev(); d++) {
        if ((unsigned)(d / 8) == dom && pci_bus[d % 8] == bus && slot == 0) {
            *dev = d;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer)
{
    if (!can) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d) || !dev_ok(peer)) return CUDA_ERROR_INVALID_DEVICE;
    *can = d != peer;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetP2PAttribute(int *v, CUdevice_P2PAttribute a, CUdevice src, CUdevice dst)
{
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(src) || !dev_ok(dst) || src == dst) return CUDA_ERROR_INVALID_DEVICE;
    switch (a) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *v = 0; break;
    default: *v = 1; break;
    }
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ contexts */
static CUcontext ctx_or_default(void)
{
    CUcontext c = sim_ctx_current();
    return c ? c : sim_primary_ctx(0);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d)
{
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    *pctx = sim_primary_ctx(d);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d) { return dev_ok(d) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
CUresult cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned int f) { (void)f; return dev_ok(d) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }

CUresult cuDevicePrimaryCtxReset(CUdevice d)
{
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    device_sync(d);
    alloc_free_device(d);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active)
{
    if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = 1;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    sim_init();
    *pctx = sim_ctx_current();
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c)
{
    sim_init();
    if (c && !reg_ok(c, OBJ_CTX)) return CUDA_ERROR_INVALID_CONTEXT;
    sim_ctx_set_current(c);
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext c)
{
    sim_init();
    if (!reg_ok(c, OBJ_CTX)) return CUDA_ERROR_INVALID_CONTEXT;
    return sim_ctx_push(c) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    CUcontext c = sim_ctx_pop();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    if (pctx) *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *d)
{
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    CUcontext c = sim_ctx_current();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    *d = c->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice d)
{
    (void)params; (void)flags;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
    c->type = OBJ_CTX;
    c->device = d;
    reg_add(c, OBJ_CTX);
    if (sim_ctx_push(c) != 0) { reg_del(c); free(c); return CUDA_ERROR_OUT_OF_MEMORY; }
    *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext c)
{
    if (!reg_ok(c, OBJ_CTX) || c->primary) return CUDA_ERROR_INVALID_CONTEXT;
    if (sim_ctx_current() == c) sim_ctx_pop();
    reg_del(c);
    free(c);
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) { sim_init(); return device_sync(ctx_or_default()->device); }

CUresult cuCtxGetFlags(unsigned int *flags)
{
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext c, unsigned int *v)
{
    (void)c;
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = 3020;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext c, unsigned long long *id)
{
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    if (!c) c = sim_ctx_current();
    if (!c || !reg_ok(c, OBJ_CTX)) return CUDA_ERROR_INVALID_CONTEXT;
    *id = c->primary ? (unsigned long long)c->device + 1 : (unsigned long long)(uintptr_t)c;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    if (!reg_ok(peer, OBJ_CTX)) return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    return reg_ok(peer, OBJ_CTX) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* ------------------------------------------------------------------ memory */
CUresult cuMemAlloc(CUdeviceptr *dptr, size_t size)
{
    void *p = NULL;
    if (!dptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = capture_unsafe_call();
    if (r != CUDA_SUCCESS) return r;
    int dev = ctx_or_default()->device;
    if (size > SIM_TOTAL_MEM || alloc_used(dev) + size > SIM_TOTAL_MEM) return CUDA_ERROR_OUT_OF_MEMORY;
    /* whole pages of its own, so cuIpcGetMemHandle can swap a shared mapping in place */
    p = mmap(NULL, alloc_map_len(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    alloc_add(p, size, 1, dev, SIM_OWN_MAP, 0);
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
    void *p = NULL;
    if (!dptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = capture_unsafe_call();
    if (r != CUDA_SUCCESS) return r;
    if (posix_memalign(&p, 4096, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    alloc_add(p, size, 3, ctx_or_default()->device, SIM_OWN_HEAP, flags);
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

/* cuMemFree synchronises the allocation's device first (so queued work using the memory has
 * finished), like cudaFree does on a real GPU. */
CUresult cuMemFree(CUdeviceptr dptr)
{
    struct sim_alloc a;
    if (!dptr) return CUDA_SUCCESS;   /* cuMemFree(0) succeeds on CUDA 13 */
    CUresult r = capture_unsafe_call();
    if (r != CUDA_SUCCESS) return r;
    if (!alloc_find((void *)dptr, &a) || a.base != dptr || (a.kind != 1 && a.kind != 3) || a.owned == SIM_OWN_IPC)
        return CUDA_ERROR_INVALID_VALUE;
    device_sync(a.device);
    if (!alloc_remove((void *)dptr, (1 << 1) | (1 << 3), &a)) return CUDA_ERROR_INVALID_VALUE;
    alloc_release(&a);
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
    void *p = NULL;
    if (!pp || size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = capture_unsafe_call();
    if (r != CUDA_SUCCESS) return r;
    if (posix_memalign(&p, 4096, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    alloc_add(p, size, 2, ctx_or_default()->device, SIM_OWN_HEAP, flags);
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void **pp, size_t size) { return cuMemHostAlloc(pp, size, 0); }

CUresult cuMemFreeHost(void *p)
{
    struct sim_alloc a;
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = capture_unsafe_call();
    if (r != CUDA_SUCCESS) return r;
    if (!alloc_find(p, &a) || a.base != (uintptr_t)p || a.kind != 2 || !a.owned) return CUDA_ERROR_INVALID_VALUE;
    for (int d = 0; d < sim_ndev(); d++) device_sync(d);
    if (!alloc_remove(p, 1 << 2, &a)) return CUDA_ERROR_INVALID_VALUE;
    alloc_release(&a);
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
    struct sim_alloc a;
    if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (alloc_find(p, &a) || alloc_find((char *)p + size - 1, &a)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    alloc_add(p, size, 2, ctx_or_default()->device, 0, flags);
    return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
    struct sim_alloc a;
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    if (!alloc_find(p, &a) || a.base != (uintptr_t)p || a.kind != 2 || a.owned) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    alloc_remove(p, 1 << 2, NULL);
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr *pd, void *p, unsigned int flags)
{
    struct sim_alloc a;
    if (!pd || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (!alloc_find(p, &a) || a.kind != 2) return CUDA_ERROR_INVALID_VALUE;
    *pd = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    struct sim_alloc a;
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    if (!alloc_find(p, &a) || a.kind != 2) return CUDA_ERROR_INVALID_VALUE;
    *flags = a.flags;
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t *freeb, size_t *total)
{
    int dev = ctx_or_default()->device;
    size_t used = alloc_used(dev);
    if (freeb) *freeb = used >= SIM_TOTAL_MEM ? 0 : SIM_TOTAL_MEM - used;
    if (total) *total = SIM_TOTAL_MEM;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    struct sim_alloc a;
    if (!alloc_find((void *)p, &a) || a.kind == 2) return CUDA_ERROR_NOT_FOUND;
    if (base) *base = a.base;
    if (size) *size = a.size;
    return CUDA_SUCCESS;
}

/* ---- copies and sets: work items */
struct copy1d { void *dst; const void *src; size_t n; };
static void copy1d_run(void *p) { struct copy1d *c = p; memmove(c->dst, c->src, c->n); sim_model_copy(c->n); }

struct copy2d { char *dst; const char *src; size_t dpitch, spitch, width, height; };
static void copy2d_run(void *p)
{
    struct copy2d *c = p;
    for (size_t y = 0; y < c->height; y++) memmove(c->dst + y * c->dpitch, c->src + y * c->spitch, c->width);
    sim_model_copy(c->width * c->height);
}

struct memset_op { char *dst; size_t pitch, width, height; unsigned elem; unsigned value; };
static void memset_run(void *p)
{
    struct memset_op *m = p;
    for (size_t y = 0; y < m->height; y++) {
        char *row = m->dst + y * m->pitch;
        if (m->elem == 1) { memset(row, (int)(m->value & 0xff), m->width); continue; }
        for (size_t x = 0; x < m->width; x++) {
            if (m->elem == 2) { uint16_t v = (uint16_t)m->value; memcpy(row + x * 2, &v, 2); }
            else { uint32_t v = m->value; memcpy(row + x * 4, &v, 4); }
        }
    }
}

/* enqueue fn(arg) on stream h (pt: NULL means the per-thread stream); sync: wait for it */
static CUresult submit_work(CUstream h, int pt, int sync, simcuda_fn fn, void *arg)
{
    struct CUstream_st *s;
    CUresult r = stream_resolve(h, pt, &s);
    if (r != CUDA_SUCCESS) { free(arg); return r; }
    if (sync && simcuda_stream_capturing(s)) {
        free(arg);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    struct unit u = { .kind = U_FN, .fn = fn, .arg = arg, .free_arg = free };
    uint64_t seq = 0;
    r = stream_submit(s, &u, &seq);
    if (r != CUDA_SUCCESS) { free(arg); return r; }
    if (sync && seq) stream_wait_seq(s, seq);
    return CUDA_SUCCESS;
}

static CUresult do_copy(void *dst, const void *src, size_t n, CUstream h, int pt, int sync)
{
    if (n == 0) return CUDA_SUCCESS;
    if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
    struct copy1d *c = malloc(sizeof *c);
    if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
    *c = (struct copy1d){ dst, src, n };
    return submit_work(h, pt, sync, copy1d_run, c);
}

static CUresult do_copy2d(const CUDA_MEMCPY2D *p, CUstream h, int pt, int sync)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY) return CUDA_ERROR_NOT_SUPPORTED;
    const char *src = p->srcMemoryType == CU_MEMORYTYPE_HOST ? p->srcHost : (const char *)p->srcDevice;
    char *dst = p->dstMemoryType == CU_MEMORYTYPE_HOST ? p->dstHost : (char *)p->dstDevice;
    if (p->srcMemoryType == CU_MEMORYTYPE_UNIFIED) src = (const char *)p->srcDevice;
    if (p->dstMemoryType == CU_MEMORYTYPE_UNIFIED) dst = (char *)p->dstDevice;
    if (p->WidthInBytes == 0 || p->Height == 0) return CUDA_SUCCESS;
    if (!src || !dst) return CUDA_ERROR_INVALID_VALUE;
    size_t spitch = p->srcPitch ? p->srcPitch : p->WidthInBytes, dpitch = p->dstPitch ? p->dstPitch : p->WidthInBytes;
    if (p->Height > 1 && (spitch < p->WidthInBytes || dpitch < p->WidthInBytes)) return CUDA_ERROR_INVALID_VALUE;
    struct copy2d *c = malloc(sizeof *c);
    if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
    *c = (struct copy2d){ dst + p->dstXInBytes + p->dstY * dpitch, src + p->srcXInBytes + p->srcY * spitch,
                          dpitch, spitch, p->WidthInBytes, p->Height };
    return submit_work(h, pt, sync, copy2d_run, c);
}

static CUresult do_memset(CUdeviceptr d, size_t pitch, unsigned value, unsigned elem, size_t w, size_t hgt,
                          CUstream h, int pt, int sync)
{
    if (w == 0 || hgt == 0) return CUDA_SUCCESS;
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    if ((elem == 2 && (d & 1)) || (elem == 4 && (d & 3))) return CUDA_ERROR_INVALID_VALUE;
    struct memset_op *m = malloc(sizeof *m);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *m = (struct memset_op){ (char *)d, pitch ? pitch : w * elem, w, hgt, elem, value };
    return submit_work(h, pt, sync, memset_run, m);
}

#define DP(x) ((void *)(uintptr_t)(x))
CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return do_copy(DP(d), DP(s), n, NULL, 0, 1); }
CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return do_copy(DP(d), DP(s), n, NULL, 1, 1); }
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) { return do_copy(DP(d), DP(s), n, h, 0, 0); }
CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) { return do_copy(DP(d), DP(s), n, h, 1, 0); }
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) { return do_copy(DP(d), s, n, NULL, 0, 1); }
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *s, size_t n) { return do_copy(DP(d), s, n, NULL, 1, 1); }
CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { return do_copy(d, DP(s), n, NULL, 0, 1); }
CUresult cuMemcpyDtoH_v2_ptds(void *d, CUdeviceptr s, size_t n) { return do_copy(d, DP(s), n, NULL, 1, 1); }
CUresult cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { return do_copy(DP(d), DP(s), n, NULL, 0, 1); }
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return do_copy(DP(d), DP(s), n, NULL, 1, 1); }
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream h) { return do_copy(DP(d), s, n, h, 0, 0); }
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void *s, size_t n, CUstream h) { return do_copy(DP(d), s, n, h, 1, 0); }
CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream h) { return do_copy(d, DP(s), n, h, 0, 0); }
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *d, CUdeviceptr s, size_t n, CUstream h) { return do_copy(d, DP(s), n, h, 1, 0); }
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) { return do_copy(DP(d), DP(s), n, h, 0, 0); }
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) { return do_copy(DP(d), DP(s), n, h, 1, 0); }
CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n)
{ (void)dc; (void)sc; return do_copy(DP(d), DP(s), n, NULL, 0, 1); }
CUresult cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n)
{ (void)dc; (void)sc; return do_copy(DP(d), DP(s), n, NULL, 1, 1); }
CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream h)
{ (void)dc; (void)sc; return do_copy(DP(d), DP(s), n, h, 0, 0); }
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream h)
{ (void)dc; (void)sc; return do_copy(DP(d), DP(s), n, h, 1, 0); }
CUresult cuMemcpy2D(const CUDA_MEMCPY2D *p) { return do_copy2d(p, NULL, 0, 1); }
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p) { return do_copy2d(p, NULL, 1, 1); }
CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *p) { return do_copy2d(p, NULL, 0, 1); }
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p) { return do_copy2d(p, NULL, 1, 1); }
CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream h) { return do_copy2d(p, h, 0, 0); }
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream h) { return do_copy2d(p, h, 1, 0); }

CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) { return do_memset(d, 0, v, 1, n, 1, NULL, 0, 1); }
CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) { return do_memset(d, 0, v, 1, n, 1, NULL, 1, 1); }
CUresult cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n) { return do_memset(d, 0, v, 2, n, 1, NULL, 0, 1); }
CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n) { return do_memset(d, 0, v, 2, n, 1, NULL, 1, 1); }
CUresult cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n) { return do_memset(d, 0, v, 4, n, 1, NULL, 0, 1); }
CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) { return do_memset(d, 0, v, 4, n, 1, NULL, 1, 1); }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream h) { return do_memset(d, 0, v, 1, n, 1, h, 0, 0); }
CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream h) { return do_memset(d, 0, v, 1, n, 1, h, 1, 0); }
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream h) { return do_memset(d, 0, v, 2, n, 1, h, 0, 0); }
CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream h) { return do_memset(d, 0, v, 2, n, 1, h, 1, 0); }
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream h) { return do_memset(d, 0, v, 4, n, 1, h, 0, 0); }
CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream h) { return do_memset(d, 0, v, 4, n, 1, h, 1, 0); }
CUresult cuMemsetD2D8(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t hg)
{ return do_memset(d, pitch, v, 1, w, hg, NULL, 0, 1); }
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t hg)
{ return do_memset(d, pitch, v, 1, w, hg, NULL, 1, 1); }
CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t hg, CUstream h)
{ return do_memset(d, pitch, v, 1, w, hg, h, 0, 0); }
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t hg, CUstream h)
{ return do_memset(d, pitch, v, 1, w, hg, h, 1, 0); }

/* ---- pointer attributes */
static CUresult ptr_attr(void *data, CUpointer_attribute attr, CUdeviceptr ptr, int known, const struct sim_alloc *a)
{
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    int dev = known ? a->device : -2;
    int isdev = known && (a->kind == 1 || a->kind == 3);
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = known ? sim_primary_ctx(a->device) : NULL; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = !known ? 0u : isdev ? (unsigned)CU_MEMORYTYPE_DEVICE : (unsigned)CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = known ? ptr : 0; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (known && a->kind == 1) return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)ptr;
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *(unsigned int *)data = 1; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = known ? a->id : 0; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *)data = known && a->kind == 3; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = dev; break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: *(unsigned int *)data = known && a->kind == 1; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *(CUdeviceptr *)data = known ? a->base : 0; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *(size_t *)data = known ? a->size : 0; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *(unsigned int *)data = known; break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: *(unsigned long long *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: *(unsigned int *)data = isdev; break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: *(unsigned int *)data = known ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE : 0; break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(void **)data = NULL; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: *(unsigned long long *)data = known ? a->id : 0; break;
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: *(unsigned int *)data = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
    struct sim_alloc a;
    if (!alloc_find((void *)ptr, &a)) return CUDA_ERROR_INVALID_VALUE;
    return ptr_attr(data, attr, ptr, 1, &a);
}

CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
    struct sim_alloc a;
    if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
    int known = alloc_find((void *)ptr, &a);
    for (unsigned i = 0; i < n; i++) {
        CUresult r = ptr_attr(data[i], attrs[i], ptr, known, &a);
        if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ streams */
CUresult cuStreamCreate(CUstream *ph, unsigned int flags)
{
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    return stream_create(ctx_or_default()->device, flags, 0, (struct CUstream_st **)ph);
}

CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int prio)
{
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    if (prio > 0) prio = 0;
    if (prio < -5) prio = -5;
    return stream_create(ctx_or_default()->device, flags, prio, (struct CUstream_st **)ph);
}

CUresult cuStreamDestroy(CUstream h) { return stream_destroy(h); }

#define RESOLVE(h, pt, s) struct CUstream_st *s; do { CUresult r_ = stream_resolve((h), (pt), &s); \
    if (r_ != CUDA_SUCCESS) return r_; } while (0)

static CUresult s_sync(CUstream h, int pt) { RESOLVE(h, pt, s); return stream_sync(s); }
CUresult cuStreamSynchronize(CUstream h) { return s_sync(h, 0); }
CUresult cuStreamSynchronize_ptsz(CUstream h) { return s_sync(h, 1); }

static CUresult s_query(CUstream h, int pt) { RESOLVE(h, pt, s); return stream_query(s); }
CUresult cuStreamQuery(CUstream h) { return s_query(h, 0); }
CUresult cuStreamQuery_ptsz(CUstream h) { return s_query(h, 1); }

static CUresult s_wait(CUstream h, CUevent e, unsigned flags, int pt)
{
    RESOLVE(h, pt, s);
    return stream_wait_event(s, e, flags);
}
CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int f) { return s_wait(h, e, f, 0); }
CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int f) { return s_wait(h, e, f, 1); }

static CUresult host_fn(CUstream h, CUhostFn fn, void *ud, int pt)
{
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    struct unit u = { .kind = U_FN, .fn = fn, .arg = ud, .app_fn = 1 };
    return stream_submit(s, &u, NULL);
}
CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *ud) { return host_fn(h, fn, ud, 0); }
CUresult cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void *ud) { return host_fn(h, fn, ud, 1); }

struct cb_arg { CUstreamCallback cb; CUstream h; void *ud; };
static void cb_run(void *p) { struct cb_arg *c = p; c->cb(c->h, CUDA_SUCCESS, c->ud); }

static CUresult add_cb(CUstream h, CUstreamCallback cb, void *ud, unsigned flags, int pt)
{
    if (!cb || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    struct cb_arg *c = malloc(sizeof *c);
    if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
    *c = (struct cb_arg){ cb, h, ud };
    struct unit u = { .kind = U_FN, .fn = cb_run, .arg = c, .free_arg = free, .app_fn = 1 };
    CUresult r = stream_submit(s, &u, NULL);
    if (r != CUDA_SUCCESS) free(c);
    return r;
}
CUresult cuStreamAddCallback(CUstream h, CUstreamCallback cb, void *ud, unsigned int f) { return add_cb(h, cb, ud, f, 0); }
CUresult cuStreamAddCallback_ptsz(CUstream h, CUstreamCallback cb, void *ud, unsigned int f) { return add_cb(h, cb, ud, f, 1); }

static CUresult s_prio(CUstream h, int *p, int pt)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    *p = s->priority;
    return CUDA_SUCCESS;
}
CUresult cuStreamGetPriority(CUstream h, int *p) { return s_prio(h, p, 0); }
CUresult cuStreamGetPriority_ptsz(CUstream h, int *p) { return s_prio(h, p, 1); }

static CUresult s_flags(CUstream h, unsigned *f, int pt)
{
    if (!f) return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    *f = s->flags;
    return CUDA_SUCCESS;
}
CUresult cuStreamGetFlags(CUstream h, unsigned int *f) { return s_flags(h, f, 0); }
CUresult cuStreamGetFlags_ptsz(CUstream h, unsigned int *f) { return s_flags(h, f, 1); }

static CUresult s_id(CUstream h, unsigned long long *id, int pt)
{
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    *id = s->id;
    return CUDA_SUCCESS;
}
CUresult cuStreamGetId(CUstream h, unsigned long long *id) { return s_id(h, id, 0); }
CUresult cuStreamGetId_ptsz(CUstream h, unsigned long long *id) { return s_id(h, id, 1); }

static CUresult s_dev(CUstream h, CUdevice *d, int pt)
{
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    *d = s->device;
    return CUDA_SUCCESS;
}
CUresult cuStreamGetDevice(CUstream h, CUdevice *d) { return s_dev(h, d, 0); }
CUresult cuStreamGetDevice_ptsz(CUstream h, CUdevice *d) { return s_dev(h, d, 1); }

static CUresult s_ctx(CUstream h, CUcontext *c, int pt)
{
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    *c = sim_primary_ctx(s->device);
    return CUDA_SUCCESS;
}
CUresult cuStreamGetCtx(CUstream h, CUcontext *c) { return s_ctx(h, c, 0); }
CUresult cuStreamGetCtx_ptsz(CUstream h, CUcontext *c) { return s_ctx(h, c, 1); }

/* ---- capture */
static CUresult begin_cap(CUstream h, CUstreamCaptureMode mode, int pt)
{
    RESOLVE(h, pt, s);
    return capture_begin(s, (int)mode);
}
CUresult cuStreamBeginCapture(CUstream h, CUstreamCaptureMode mode) { return begin_cap(h, mode, 0); }
CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode) { return begin_cap(h, mode, 1); }

static CUresult end_cap(CUstream h, CUgraph *g, int pt) { RESOLVE(h, pt, s); return capture_end(s, g); }
CUresult cuStreamEndCapture(CUstream h, CUgraph *g) { return end_cap(h, g, 0); }
CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph *g) { return end_cap(h, g, 1); }

static CUresult is_cap(CUstream h, CUstreamCaptureStatus *st, int pt)
{
    if (!st) return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    /* the common answer without the global lock: no capture was ever attached */
    if (!__atomic_load_n(&s->cap, __ATOMIC_ACQUIRE)) {
        *st = CU_STREAM_CAPTURE_STATUS_NONE;
        return CUDA_SUCCESS;
    }
    return capture_info(s, st, NULL, NULL, NULL, NULL);
}
CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *st) { return is_cap(h, st, 0); }
CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *st) { return is_cap(h, st, 1); }

static CUresult cap_info(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                         const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n, int pt)
{
    RESOLVE(h, pt, s);
    if (edges) *edges = NULL;
    return capture_info(s, st, id, g, deps, n);
}
CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                   const CUgraphNode **deps, size_t *n)
{ return cap_info(h, st, id, g, deps, NULL, n, 0); }
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                        const CUgraphNode **deps, size_t *n)
{ return cap_info(h, st, id, g, deps, NULL, n, 1); }
CUresult cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                const CUgraphNode **deps, const CUgraphEdgeData **e, size_t *n)
{ return cap_info(h, st, id, g, deps, e, n, 0); }
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                        const CUgraphNode **deps, const CUgraphEdgeData **e, size_t *n)
{ return cap_info(h, st, id, g, deps, e, n, 1); }

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || *mode < CU_STREAM_CAPTURE_MODE_GLOBAL || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = capture_exchange_mode(*mode);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ events */
CUresult cuEventCreate(CUevent *ph, unsigned int flags)
{
    if (!ph) return CUDA_ERROR_INVALID_VALUE;
    sim_init();
    return event_create(flags, (struct CUevent_st **)ph);
}

CUresult cuEventDestroy(CUevent e) { return event_destroy(e); }

static CUresult ev_rec(CUevent e, CUstream h, unsigned flags, int pt)
{
    if (!reg_ok(e, OBJ_EVENT)) return CUDA_ERROR_INVALID_HANDLE;
    RESOLVE(h, pt, s);
    CUresult rc = event_record(e, s, flags);
    if (rc == CUDA_SUCCESS && sim_kstats_on) sim_kstats_event_record();
    return rc;
}
CUresult cuEventRecord(CUevent e, CUstream h) { return ev_rec(e, h, 0, 0); }
CUresult cuEventRecord_ptsz(CUevent e, CUstream h) { return ev_rec(e, h, 0, 1); }
CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned int f) { return ev_rec(e, h, f, 0); }
CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream h, unsigned int f) { return ev_rec(e, h, f, 1); }
CUresult cuEventQuery(CUevent e) { return event_query(e); }
CUresult cuEventSynchronize(CUevent e) { return event_sync(e); }
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return event_elapsed(ms, a, b); }

/* ------------------------------------------------------------------ modules and kernels */
static CUresult mod_new(CUmodule *m, const void *image)
{
    if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
    sim_init();
    struct CUmod_st *mod = calloc(1, sizeof *mod);
    if (!mod) return CUDA_ERROR_OUT_OF_MEMORY;
    mod->type = OBJ_MODULE;
    reg_add(mod, OBJ_MODULE);
    *m = mod;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image) { return mod_new(m, image); }
CUresult cuModuleLoadFatBinary(CUmodule *m, const void *fatbin) { return mod_new(m, fatbin); }
CUresult cuModuleLoad(CUmodule *m, const char *fname) { return mod_new(m, fname); }
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *o, void **v)
{
    (void)n; (void)o; (void)v;
    return mod_new(m, image);
}

CUresult cuModuleUnload(CUmodule m)
{
    if (!reg_ok(m, OBJ_MODULE)) return CUDA_ERROR_INVALID_HANDLE;
    reg_del(m);
    for (struct CUfunc_st *f = m->funcs, *n; f; f = n) {
        n = f->next;
        reg_del(f);
        free(f);
    }
    free(m);
    return CUDA_SUCCESS;
}

/* A kernel in an anonymous namespace carries a per-build component in its mangled name:
 * nvcc writes `_ZN36_GLOBAL__N__5747c7f7_4_k_cu_5c0bf09a5scaleEPff` (the length, then
 * `_GLOBAL__N_`, hashes and the file name). The lookup name leaves every such component out
 * (`_ZN5scaleEPff`), so that collscope_simkernel_<that> matches every build. Returns 1 when
 * `out` differs from `name`; 0 (and out unset) when nothing was left out or it does not fit. */
static int sim_kernel_name_stable(const char *name, char *out, size_t n)
{
    size_t o = 0;
    int changed = 0;
    for (const char *p = name; *p;) {
        if (*p >= '1' && *p <= '9' && (p == name || p[-1] < '0' || p[-1] > '9')) {
            char *end;
            unsigned long len = strtoul(p, &end, 10);
            size_t rest = strlen(end);
            if (len >= 11 && len <= rest && !strncmp(end, "_GLOBAL__N_", 11)) {
                p = end + len; /* the whole component */
                changed = 1;
                continue;
            }
        }
        if (o + 1 >= n) return 0;
        out[o++] = *p++;
    }
    if (!changed) return 0;
    out[o] = 0;
    return 1;
}

/* COLLSCOPE_SIM_KERNELS=model: a kernel with no host implementation runs as modeled time and
 * touches no data. Duration: COLLSCOPE_SIM_KERNEL_US when set (0..10^7), else 5 us plus 1 us
 * per 132 blocks (one wave of the simulated H100's SMs). */
static pthread_once_t model_once = PTHREAD_ONCE_INIT;
static int model_mode;
static long model_us_env = -1; /* -1: unset, the grid-size model */
static void model_read_env(void)
{
    const char *e = getenv("COLLSCOPE_SIM_KERNELS");
    model_mode = e && !strcmp(e, "model");
    const char *u = getenv("COLLSCOPE_SIM_KERNEL_US");
    if (!u || !*u) return;
    char *end;
    long v = strtol(u, &end, 10);
    if (*end || v < 0 || v > 10000000)
        fprintf(stderr, "collscope sim: COLLSCOPE_SIM_KERNEL_US=%s is not 0..10000000: the grid-size model applies\n", u);
    else
        model_us_env = v;
}
static int model_on(void)
{
    pthread_once(&model_once, model_read_env);
    return model_mode;
}
static void model_kernel(void **params, const unsigned grid[3], const unsigned block[3])
{
    (void)params; (void)block;
    long us = model_us_env;
    if (us < 0) {
        unsigned long long blocks = (unsigned long long)grid[0] * grid[1] * grid[2];
        us = 5 + (long)(blocks / 132 < 10000000ull ? blocks / 132 : 10000000ull);
    }
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0) {}
}

static struct CUfunc_st *func_new(const char *name, struct CUmod_st *mod, simkernel_fn fn, const size_t *argsizes)
{
    struct CUfunc_st *f = calloc(1, sizeof *f + strlen(name) + 1);
    if (!f) return NULL;
    f->type = OBJ_FUNC;
    f->fn = fn;
    f->argsizes = argsizes;
    f->mod = mod;
    strcpy(f->name, name);
    reg_add(f, OBJ_FUNC);
    return f;
}

/* Host implementation of kernel <name>: collscope_simkernel_<name>, found with
 * dlsym(RTLD_DEFAULT) (for a kernel in an anonymous namespace, the name without that
 * component: sim_kernel_name_stable); optional collscope_simkernel_<name>_argsizes (const
 * size_t[], 0-ended) lets the launch copy the argument values, as a real launch does. None,
 * and COLLSCOPE_SIM_KERNELS=model: a modeled kernel (model_kernel), announced once per name
 * and module, loudly, since its results are not computed. */
SIM_HIDDEN struct CUfunc_st *sim_func_lookup(const char *name, struct CUmod_st *mod)
{
    char sym[512], stable[480];
    if (snprintf(sym, sizeof sym, "collscope_simkernel_%s", name) >= (int)sizeof sym) return NULL;
    void *fn = dlsym(RTLD_DEFAULT, sym);
    if (!fn && sim_kernel_name_stable(name, stable, sizeof stable)) {
        snprintf(sym, sizeof sym, "collscope_simkernel_%s", stable);
        fn = dlsym(RTLD_DEFAULT, sym);
    }
    if (!fn) {
        if (!model_on()) return NULL;
        struct CUfunc_st *f = func_new(name, mod, model_kernel, NULL);
        if (f)
            fprintf(stderr, "collscope sim: WARNING: kernel %s has no simulator implementation; COLLSCOPE_SIM_KERNELS=model "
                            "runs it as modeled time only: its results are NOT computed, its output memory is left as it was\n",
                    name);
        return f;
    }
    size_t len = strlen(sym);
    snprintf(sym + len, sizeof sym - len, "_argsizes");
    const size_t *argsizes = dlsym(RTLD_DEFAULT, sym);
    simkernel_fn kfn;
    /* POSIX guarantees data/function pointer conversion for dlsym */
    memcpy(&kfn, &fn, sizeof fn);
    return func_new(name, mod, kfn, argsizes);
}

CUresult cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name)
{
    if (!pf || !name) return CUDA_ERROR_INVALID_VALUE;
    if (!reg_ok(m, OBJ_MODULE)) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_lock);
    for (struct CUfunc_st *f = m->funcs; f; f = f->next) {
        if (strcmp(f->name, name) == 0) {
            pthread_mutex_unlock(&g_lock);
            *pf = (CUfunction)f;
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_lock);
    struct CUfunc_st *f = sim_func_lookup(name, m);
    if (!f) return CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&g_lock);
    f->next = m->funcs;
    m->funcs = f;
    pthread_mutex_unlock(&g_lock);
    *pf = (CUfunction)f;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char **name, CUfunction hf)
{
    struct CUfunc_st *f = (struct CUfunc_st *)hf;
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    if (!reg_ok(f, OBJ_FUNC)) return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute a, CUfunction hf)
{
    if (!pi) return CUDA_ERROR_INVALID_VALUE;
    if (!reg_ok(hf, OBJ_FUNC)) return CUDA_ERROR_INVALID_HANDLE;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hf, CUfunction_attribute a, int v)
{
    (void)a; (void)v;
    return reg_ok(hf, OBJ_FUNC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncSetCacheConfig(CUfunction hf, CUfunc_cache c)
{
    (void)c;
    return reg_ok(hf, OBJ_FUNC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult launch(CUfunction hf, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       CUstream h, void **params, void **extra, int pt)
{
    struct CUfunc_st *f = (struct CUfunc_st *)hf;
    if (!reg_ok(f, OBJ_FUNC)) return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz) return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned long long)bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
    if (params && extra) return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    const unsigned grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
    return kernel_launch(f, grid, block, s, params, extra);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int shmem, CUstream h, void **params, void **extra)
{ (void)shmem; return launch(f, gx, gy, gz, bx, by, bz, h, params, extra, 0); }
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int shmem, CUstream h, void **params, void **extra)
{ (void)shmem; return launch(f, gx, gy, gz, bx, by, bz, h, params, extra, 1); }

/* every block of a simulated kernel runs in one host call, so co-residency always holds */
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                   unsigned int by, unsigned int bz, unsigned int shmem, CUstream h, void **params)
{ (void)shmem; return launch(f, gx, gy, gz, bx, by, bz, h, params, NULL, 0); }
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                        unsigned int by, unsigned int bz, unsigned int shmem, CUstream h, void **params)
{ (void)shmem; return launch(f, gx, gy, gz, bx, by, bz, h, params, NULL, 1); }

CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                  c->hStream, params, extra, 0);
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                  c->hStream, params, extra, 1);
}

/* ------------------------------------------------------------------ graphs */
CUresult cuGraphCreate(CUgraph *g, unsigned int flags)
{
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    return graph_create(g);
}
CUresult cuGraphDestroy(CUgraph g) { return graph_destroy(g); }
CUresult cuGraphInstantiateWithFlags(CUgraphExec *x, CUgraph g, unsigned long long flags)
{ (void)flags; return graph_instantiate(x, g); }
CUresult cuGraphInstantiateWithParams(CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    CUresult r = graph_instantiate(x, g);
    if (p) p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{ return cuGraphInstantiateWithParams(x, g, p); }
CUresult cuGraphExecDestroy(CUgraphExec x) { return graph_exec_destroy(x); }
CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec x, CUgraphNode node, CUevent e)
{ return graph_exec_set_event(x, node, e); }

static CUresult g_launch(CUgraphExec x, CUstream h, int pt) { RESOLVE(h, pt, s); return graph_launch(x, s); }
CUresult cuGraphLaunch(CUgraphExec x, CUstream h) { return g_launch(x, h, 0); }
CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream h) { return g_launch(x, h, 1); }
CUresult cuGraphUpload(CUgraphExec x, CUstream h) { (void)h; return reg_ok(x, OBJ_GEXEC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuGraphUpload_ptsz(CUgraphExec x, CUstream h) { return cuGraphUpload(x, h); }
CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n) { return graph_nodes(g, nodes, n); }

CUresult cuGraphAddHostNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                            const CUDA_HOST_NODE_PARAMS *p)
{
    (void)deps; (void)ndeps;   /* nodes run in insertion order, which respects any dependency */
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    return graph_add_host_node(out, g, p->fn, p->userData);
}

CUresult cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              const CUDA_KERNEL_NODE_PARAMS *p)
{
    (void)deps; (void)ndeps;   /* as for host nodes: insertion order respects every dependency */
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    struct CUfunc_st *f = (struct CUfunc_st *)p->func;
    if (!reg_ok(f, OBJ_FUNC)) return CUDA_ERROR_INVALID_VALUE;
    if (!p->gridDimX || !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY || !p->blockDimZ ||
        (unsigned long long)p->blockDimX * p->blockDimY * p->blockDimZ > 1024 || (p->kernelParams && p->extra))
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned grid[3] = { p->gridDimX, p->gridDimY, p->gridDimZ };
    const unsigned block[3] = { p->blockDimX, p->blockDimY, p->blockDimZ };
    return graph_add_kernel_node(out, g, f, grid, block, p->kernelParams, p->extra);
}

/* ------------------------------------------------------------------ stream-ordered allocation */
/* The allocation happens at once (nothing can use it before the stream reaches this point
 * anyway); the free is a stream item, so it happens after the work queued before it. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUstream h, int pt)
{
    RESOLVE(h, pt, s);
    (void)s;
    return cuMemAlloc(dptr, size);
}
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream h) { return alloc_async(dptr, size, h, 0); }
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream h) { return alloc_async(dptr, size, h, 1); }

static void free_now(void *p)
{
    struct sim_alloc a;
    if (alloc_remove(p, (1 << 1) | (1 << 3), &a)) alloc_release(&a);
}

static CUresult free_async(CUdeviceptr d, CUstream h, int pt)
{
    struct sim_alloc a;
    if (!d || !alloc_find((void *)d, &a) || a.base != d || (a.kind != 1 && a.kind != 3) || a.owned == SIM_OWN_IPC)
        return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(h, pt, s);
    struct unit u = { .kind = U_FN, .fn = free_now, .arg = (void *)d };
    return stream_submit(s, &u, NULL);
}
CUresult cuMemFreeAsync(CUdeviceptr d, CUstream h) { return free_async(d, h, 0); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream h) { return free_async(d, h, 1); }

/* ------------------------------------------------------------------ accounting names */
#define FNKEY(f) ((const void *)(uintptr_t)(f))
void sim_api_kstats_labels(void)
{
    sim_kstats_label(FNKEY(copy1d_run), "memcpy");
    sim_kstats_label(FNKEY(copy2d_run), "memcpy2d");
    sim_kstats_label(FNKEY(memset_run), "memset");
    sim_kstats_label(FNKEY(cb_run), "stream-callback");
    sim_kstats_label(FNKEY(free_now), "free-async");
}
SIMCUDA_API_END
