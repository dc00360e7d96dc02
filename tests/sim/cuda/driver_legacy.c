/* tests/sim/cuda/driver_legacy.c: the plain (unversioned) driver entry points and
 * cuGetProcAddress.
 *
 * cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on; callers that dlsym() the plain name get
 * these thin aliases. Where the plain name keeps the same meaning with 64-bit types
 * (cuMemAlloc, cuMemcpyHtoD, cuEventDestroy, cuEventElapsedTime, ...) it forwards to the
 * current version (64-bit sizes/pointers, not the 32-bit CUDA 3.1 ABI). Where the plain name
 * has a different argument list in cuda.h's legacy block (cuStreamGetCaptureInfo: 3 args,
 * cuStreamBeginCapture: 1 arg, cuCtxCreate: 3 args, cuGraphInstantiate: 5 args,
 * cuGetProcAddress: 4 args) it takes that argument list. */
#include "sim_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* every function this file defines outside `static` is driver API: exported */
SIMCUDA_API_BEGIN

/* versioned implementations in driver_api.c that cuda.h does not declare */
CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode);
CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                   const CUgraphNode **deps, size_t *n);
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                        const CUgraphNode **deps, size_t *n);

#define FWD(ret, plain, target, params, args) \
    ret plain params; \
    ret plain params { return target args; }

#undef cuDeviceTotalMem
#undef cuCtxCreate
#undef cuMemGetInfo
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemGetAddressRange
#undef cuMemAllocHost
#undef cuMemHostGetDevicePointer
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuMemcpyDtoD
#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoDAsync
#undef cuMemcpy2D
#undef cuMemcpy2DUnaligned
#undef cuMemcpy2DAsync
#undef cuMemsetD8
#undef cuMemsetD16
#undef cuMemsetD32
#undef cuMemsetD2D8
#undef cuCtxDestroy
#undef cuCtxPopCurrent
#undef cuCtxPushCurrent
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuMemHostRegister
#undef cuStreamBeginCapture
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuDeviceGetUuid
#undef cuGraphInstantiate
#undef cuGetProcAddress
#undef cuStreamGetCaptureInfo

FWD(CUresult, cuDeviceTotalMem, cuDeviceTotalMem_v2, (size_t *b, CUdevice d), (b, d))
FWD(CUresult, cuMemGetInfo, cuMemGetInfo_v2, (size_t *f, size_t *t), (f, t))
FWD(CUresult, cuMemAlloc, cuMemAlloc_v2, (CUdeviceptr *p, size_t n), (p, n))
FWD(CUresult, cuMemFree, cuMemFree_v2, (CUdeviceptr p), (p))
FWD(CUresult, cuMemGetAddressRange, cuMemGetAddressRange_v2, (CUdeviceptr *b, size_t *s, CUdeviceptr p), (b, s, p))
FWD(CUresult, cuMemAllocHost, cuMemAllocHost_v2, (void **p, size_t n), (p, n))
FWD(CUresult, cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, (CUdeviceptr *d, void *p, unsigned int f), (d, p, f))
FWD(CUresult, cuMemcpyHtoD, cuMemcpyHtoD_v2, (CUdeviceptr d, const void *s, size_t n), (d, s, n))
FWD(CUresult, cuMemcpyDtoH, cuMemcpyDtoH_v2, (void *d, CUdeviceptr s, size_t n), (d, s, n))
FWD(CUresult, cuMemcpyDtoD, cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))
FWD(CUresult, cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, (CUdeviceptr d, const void *s, size_t n, CUstream h), (d, s, n, h))
FWD(CUresult, cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, (void *d, CUdeviceptr s, size_t n, CUstream h), (d, s, n, h))
FWD(CUresult, cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h), (d, s, n, h))
FWD(CUresult, cuMemcpy2D, cuMemcpy2D_v2, (const CUDA_MEMCPY2D *p), (p))
FWD(CUresult, cuMemcpy2DUnaligned, cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *p), (p))
FWD(CUresult, cuMemcpy2DAsync, cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *p, CUstream h), (p, h))
FWD(CUresult, cuMemsetD8, cuMemsetD8_v2, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n))
FWD(CUresult, cuMemsetD16, cuMemsetD16_v2, (CUdeviceptr d, unsigned short v, size_t n), (d, v, n))
FWD(CUresult, cuMemsetD32, cuMemsetD32_v2, (CUdeviceptr d, unsigned int v, size_t n), (d, v, n))
FWD(CUresult, cuMemsetD2D8, cuMemsetD2D8_v2, (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h), (d, p, v, w, h))
FWD(CUresult, cuCtxDestroy, cuCtxDestroy_v2, (CUcontext c), (c))
FWD(CUresult, cuCtxPopCurrent, cuCtxPopCurrent_v2, (CUcontext *c), (c))
FWD(CUresult, cuCtxPushCurrent, cuCtxPushCurrent_v2, (CUcontext c), (c))
FWD(CUresult, cuStreamDestroy, cuStreamDestroy_v2, (CUstream s), (s))
FWD(CUresult, cuEventDestroy, cuEventDestroy_v2, (CUevent e), (e))
FWD(CUresult, cuEventElapsedTime, cuEventElapsedTime_v2, (float *ms, CUevent a, CUevent b), (ms, a, b))
FWD(CUresult, cuMemHostRegister, cuMemHostRegister_v2, (void *p, size_t n, unsigned int f), (p, n, f))
FWD(CUresult, cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice d), (d))
FWD(CUresult, cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2, (CUdevice d), (d))
FWD(CUresult, cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags_v2, (CUdevice d, unsigned int f), (d, f))
FWD(CUresult, cuDeviceGetUuid, cuDeviceGetUuid_v2, (CUuuid *u, CUdevice d), (u, d))
FWD(CUresult, cuStreamBeginCapture, cuStreamBeginCapture_v2, (CUstream h), (h, CU_STREAM_CAPTURE_MODE_GLOBAL))
FWD(CUresult, cuStreamBeginCapture_ptsz, cuStreamBeginCapture_v2_ptsz, (CUstream h), (h, CU_STREAM_CAPTURE_MODE_GLOBAL))
FWD(CUresult, cuStreamGetCaptureInfo, cuStreamGetCaptureInfo_v2, (CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id),
    (h, st, id, NULL, NULL, NULL))
FWD(CUresult, cuStreamGetCaptureInfo_ptsz, cuStreamGetCaptureInfo_v2_ptsz,
    (CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id), (h, st, id, NULL, NULL, NULL))
FWD(CUresult, cuCtxCreate, cuCtxCreate_v4, (CUcontext *c, unsigned int f, CUdevice d), (c, NULL, f, d))
FWD(CUresult, cuCtxCreate_v2, cuCtxCreate_v4, (CUcontext *c, unsigned int f, CUdevice d), (c, NULL, f, d))
CUresult cuCtxCreate_v3(CUcontext *c, CUexecAffinityParam *p, int n, unsigned int f, CUdevice d);
CUresult cuCtxCreate_v3(CUcontext *c, CUexecAffinityParam *p, int n, unsigned int f, CUdevice d)
{
    (void)p; (void)n;
    return cuCtxCreate_v4(c, NULL, f, d);
}

CUresult cuGraphInstantiate(CUgraphExec *x, CUgraph g, CUgraphNode *errnode, char *log, size_t logsz);
CUresult cuGraphInstantiate(CUgraphExec *x, CUgraph g, CUgraphNode *errnode, char *log, size_t logsz)
{
    if (errnode) *errnode = NULL;
    if (log && logsz) log[0] = '\0';
    return cuGraphInstantiateWithFlags(x, g, 0);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *x, CUgraph g, CUgraphNode *errnode, char *log, size_t logsz);
CUresult cuGraphInstantiate_v2(CUgraphExec *x, CUgraph g, CUgraphNode *errnode, char *log, size_t logsz)
{
    return cuGraphInstantiate(x, g, errnode, log, logsz);
}

/* ------------------------------------------------------------------ cuGetProcAddress */
static const struct { const char *base; int since; const char *target; } versioned[] = {
    { "cuEventElapsedTime", 12080, "cuEventElapsedTime_v2" },
    { "cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3" },
    { "cuStreamGetCaptureInfo", 11030, "cuStreamGetCaptureInfo_v2" },
    { "cuGetProcAddress", 12000, "cuGetProcAddress_v2" },
    { "cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags" },
    { "cuGraphInstantiate", 11000, "cuGraphInstantiate_v2" },
    { "cuCtxCreate", 12050, "cuCtxCreate_v4" },
    { "cuCtxCreate", 11040, "cuCtxCreate_v3" },
    { "cuCtxCreate", 3020, "cuCtxCreate_v2" },
    { "cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2" },
    { "cuDeviceGetUuid", 11040, "cuDeviceGetUuid_v2" },
    { "cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2" },
    { "cuDevicePrimaryCtxReset", 11000, "cuDevicePrimaryCtxReset_v2" },
    { "cuDevicePrimaryCtxSetFlags", 11000, "cuDevicePrimaryCtxSetFlags_v2" },
    { "cuMemHostRegister", 6050, "cuMemHostRegister_v2" },
    { "cuCtxDestroy", 4000, "cuCtxDestroy_v2" },
    { "cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2" },
    { "cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2" },
    { "cuStreamDestroy", 4000, "cuStreamDestroy_v2" },
    { "cuEventDestroy", 4000, "cuEventDestroy_v2" },
};

/* CUDA 3.2 moved these to 64-bit *_v2 entry points */
static const char *const v2_3020[] = {
    "cuDeviceTotalMem", "cuMemGetInfo", "cuMemAlloc", "cuMemAllocPitch", "cuMemFree", "cuMemGetAddressRange",
    "cuMemAllocHost", "cuMemHostGetDevicePointer", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD",
    "cuMemcpyDtoA", "cuMemcpyAtoD", "cuMemcpyHtoA", "cuMemcpyAtoH", "cuMemcpyAtoA", "cuMemcpyHtoAAsync",
    "cuMemcpyAtoHAsync", "cuMemcpy2D", "cuMemcpy2DUnaligned", "cuMemcpy3D", "cuMemcpyHtoDAsync",
    "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuMemcpy2DAsync", "cuMemcpy3DAsync", "cuMemsetD8",
    "cuMemsetD16", "cuMemsetD32", "cuMemsetD2D8", "cuMemsetD2D16", "cuMemsetD2D32", "cuModuleGetGlobal",
};

static void *self_handle(void)
{
    static void *h;
    void *cur = __atomic_load_n(&h, __ATOMIC_ACQUIRE);
    if (cur) return cur;
    Dl_info di;
    if (dladdr((void *)&self_handle, &di) && di.dli_fname) cur = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!cur) cur = RTLD_DEFAULT;
    __atomic_store_n(&h, cur, __ATOMIC_RELEASE);
    return cur;
}

static void *find_self(const char *name)
{
    void *p = dlsym(self_handle(), name);
    Dl_info di, me;
    /* only hand out our own functions, never an interposer's */
    if (p && self_handle() == RTLD_DEFAULT && dladdr(p, &di) && dladdr((void *)&self_handle, &me) &&
        di.dli_fbase != me.dli_fbase)
        return NULL;
    return p;
}

static CUresult proc_address(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    char name[256];
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (strncmp(symbol, "cu", 2) != 0 || strlen(symbol) > 200) return CUDA_SUCCESS;
    const char *target = symbol;
    for (size_t i = 0; i < sizeof versioned / sizeof versioned[0]; i++) {
        if (strcmp(symbol, versioned[i].base) == 0 && ver >= versioned[i].since) { target = versioned[i].target; break; }
    }
    if (target == symbol && ver >= 3020) {
        for (size_t i = 0; i < sizeof v2_3020 / sizeof v2_3020[0]; i++) {
            if (strcmp(symbol, v2_3020[i]) == 0) {
                snprintf(name, sizeof name, "%s_v2", symbol);
                target = name;
                break;
            }
        }
    }
    char full[300];
    void *p = NULL;
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
        snprintf(full, sizeof full, "%s_ptsz", target);
        p = find_self(full);
        if (!p) {
            snprintf(full, sizeof full, "%s_ptds", target);
            p = find_self(full);
        }
    }
    if (!p) p = find_self(target);
    if (!p) return CUDA_SUCCESS;
    if (ver < 2000) {
        if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_SUCCESS;
    }
    *pfn = p;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    return proc_address(symbol, pfn, ver, flags, status);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags)
{
    CUdriverProcAddressQueryResult st;
    CUresult r = proc_address(symbol, pfn, ver, flags, &st);
    if (r == CUDA_SUCCESS && st != CU_GET_PROC_ADDRESS_SUCCESS) r = CUDA_ERROR_NOT_FOUND;
    return r;
}
SIMCUDA_API_END
