/* hooks/cuda_driver.h: the CUDA driver entry points collscope uses, resolved at run time
 * from dlopen("libcuda.so.1") -- collscope never links libcuda. All pointers are NULL
 * when the driver is missing; callers then degrade to host-only timing. */
#ifndef COLLSCOPE_CUDA_DRIVER_H
#define COLLSCOPE_CUDA_DRIVER_H
#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#define CS_DRIVER_FNS(X) \
  X(CUresult, cuDriverGetVersion, (int *v), "cuDriverGetVersion") \
  X(CUresult, cuCtxGetCurrent, (CUcontext * c), "cuCtxGetCurrent") \
  X(CUresult, cuCtxPushCurrent, (CUcontext c), "cuCtxPushCurrent_v2") \
  X(CUresult, cuCtxPopCurrent, (CUcontext * c), "cuCtxPopCurrent_v2") \
  X(CUresult, cuCtxGetDevice, (CUdevice * d), "cuCtxGetDevice") \
  X(CUresult, cuDeviceGetPCIBusId, (char *b, int len, CUdevice d), "cuDeviceGetPCIBusId") \
  X(CUresult, cuEventCreate, (CUevent * e, unsigned flags), "cuEventCreate") \
  X(CUresult, cuEventDestroy, (CUevent e), "cuEventDestroy_v2") \
  X(CUresult, cuEventRecord, (CUevent e, CUstream s), "cuEventRecord") \
  X(CUresult, cuEventQuery, (CUevent e), "cuEventQuery") \
  X(CUresult, cuEventSynchronize, (CUevent e), "cuEventSynchronize") \
  X(CUresult, cuEventElapsedTime, (float *ms, CUevent a, CUevent b), "cuEventElapsedTime_v2") \
  X(CUresult, cuStreamIsCapturing, (CUstream s, CUstreamCaptureStatus * st), "cuStreamIsCapturing") \
  X(CUresult, cuStreamCreate, (CUstream * s, unsigned flags), "cuStreamCreate")

/* Optional entry points: each may be NULL on a driver that lacks it, which turns off only what
 * uses it (never the timing). cuDeviceGetUuid is asked by its legacy unversioned name: the
 * physical GPU's UUID, as NVML's handle by PCI bus id reports it (cuDeviceGetUuid_v2 names
 * the MIG compute instance in MIG mode). */
#define CS_DRIVER_OPT_FNS(X) \
  X(CUresult, cuDeviceGetUuid, (CUuuid * u, CUdevice d), "cuDeviceGetUuid") \
  X(CUresult, cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * m), "cuThreadExchangeStreamCaptureMode")

struct cs_driver {
  bool loaded;
#define CS_DRV_FIELD(ret, name, params, sym) ret(*name) params;
  CS_DRIVER_FNS(CS_DRV_FIELD)
  CS_DRIVER_OPT_FNS(CS_DRV_FIELD)
#undef CS_DRV_FIELD
};

extern struct cs_driver cs_drv;

/* Entry points for collscope's own buffers and streams (online exchange, topology
 * routing): resolved
 * separately, so a driver without them turns that feature off, never the timing. */
#define CS_DRIVER_XCHG_FNS(X) \
  X(CUresult, cuCtxSetCurrent, (CUcontext c), "cuCtxSetCurrent") \
  X(CUresult, cuMemAlloc, (CUdeviceptr * p, size_t n), "cuMemAlloc_v2") \
  X(CUresult, cuMemAllocHost, (void **p, size_t n), "cuMemAllocHost_v2") \
  X(CUresult, cuMemcpyHtoDAsync, (CUdeviceptr d, const void *h, size_t n, CUstream s), "cuMemcpyHtoDAsync_v2") \
  X(CUresult, cuMemcpyDtoHAsync, (void *h, CUdeviceptr d, size_t n, CUstream s), "cuMemcpyDtoHAsync_v2") \
  X(CUresult, cuStreamQuery, (CUstream s), "cuStreamQuery") \
  X(CUresult, cuStreamSynchronize, (CUstream s), "cuStreamSynchronize") \
  X(CUresult, cuStreamDestroy, (CUstream s), "cuStreamDestroy_v2") \
  X(CUresult, cuMemFree, (CUdeviceptr p), "cuMemFree_v2") \
  X(CUresult, cuMemFreeHost, (void *p), "cuMemFreeHost")

struct cs_driver_xchg {
  bool loaded;
#define CS_DRV_FIELD(ret, name, params, sym) ret(*name) params;
  CS_DRIVER_XCHG_FNS(CS_DRV_FIELD)
#undef CS_DRV_FIELD
};
extern struct cs_driver_xchg cs_drvx;
/* Resolve CS_DRIVER_XCHG_FNS once (after cs_driver_load); true when all were found. */
bool cs_driver_xchg_load(void);

/* Load libcuda.so.1 once; returns true if every entry point was found. Safe to call
 * repeatedly and from any thread. */
bool cs_driver_load(void);

/* Put the calling thread (one of collscope's own) in the relaxed stream-capture mode, once at
 * its start: its allocations, syncs and event queries never invalidate a capture the job has
 * under way in the global mode (torch.cuda.graph's default), whatever they coincide with. A
 * driver without the call leaves the thread as it is. */
void cs_driver_thread_relaxed(void);

/* For the dump's header: the driver's version and the PCI bus id of `device` (left as
 * they are when the driver is not loaded or cannot tell). */
void cs_driver_device_info(int device, int *driver_version, char *bus, size_t bus_len);

#endif
