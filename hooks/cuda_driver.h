/* hooks/cuda_driver.h: the CUDA driver entry points collscope uses, resolved at run time
 * from dlopen("libcuda.so.1") -- collscope never links libcuda. All pointers are NULL
 * when the driver is missing; callers then degrade to host-only timing. */
#ifndef COLLSCOPE_CUDA_DRIVER_H
#define COLLSCOPE_CUDA_DRIVER_H
#include <cuda.h>
#include <stdbool.h>

#define CS_DRIVER_FNS(X)                                                                   \
  X(CUresult, cuDriverGetVersion, (int *v), "cuDriverGetVersion")                          \
  X(CUresult, cuCtxGetCurrent, (CUcontext *c), "cuCtxGetCurrent")                          \
  X(CUresult, cuCtxPushCurrent, (CUcontext c), "cuCtxPushCurrent_v2")                      \
  X(CUresult, cuCtxPopCurrent, (CUcontext *c), "cuCtxPopCurrent_v2")                       \
  X(CUresult, cuCtxGetDevice, (CUdevice *d), "cuCtxGetDevice")                             \
  X(CUresult, cuDeviceGetPCIBusId, (char *b, int len, CUdevice d), "cuDeviceGetPCIBusId")  \
  X(CUresult, cuEventCreate, (CUevent *e, unsigned flags), "cuEventCreate")                \
  X(CUresult, cuEventDestroy, (CUevent e), "cuEventDestroy_v2")                            \
  X(CUresult, cuEventRecord, (CUevent e, CUstream s), "cuEventRecord")                     \
  X(CUresult, cuEventQuery, (CUevent e), "cuEventQuery")                                   \
  X(CUresult, cuEventSynchronize, (CUevent e), "cuEventSynchronize")                       \
  X(CUresult, cuEventElapsedTime, (float *ms, CUevent a, CUevent b), "cuEventElapsedTime_v2") \
  X(CUresult, cuStreamIsCapturing, (CUstream s, CUstreamCaptureStatus *st), "cuStreamIsCapturing") \
  X(CUresult, cuStreamCreate, (CUstream *s, unsigned flags), "cuStreamCreate")

struct cs_driver {
  bool loaded;
#define CS_DRV_FIELD(ret, name, params, sym) ret (*name) params;
  CS_DRIVER_FNS(CS_DRV_FIELD)
#undef CS_DRV_FIELD
};

extern struct cs_driver cs_drv;

/* Load libcuda.so.1 once; returns true if every entry point was found. Safe to call
 * repeatedly and from any thread. */
bool cs_driver_load(void);

#endif
