/* bench/null/null_cuda.c: a "null backend" libcuda.so.1 for overhead benchmarks: the
 * driver entry points collscope's timing uses, returning at once (events complete
 * immediately, 10 us apart). Not a simulator. */
#include <cuda.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
static _Atomic uintptr_t next_handle = 0x1000;

EXPORT CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetCurrent(CUcontext *c) {
  *c = (CUcontext)(uintptr_t)0x42;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c) {
  (void)c;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c) {
  *c = (CUcontext)(uintptr_t)0x42;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetDevice(CUdevice *d) {
  *d = 0;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetPCIBusId(char *b, int len, CUdevice d) {
  (void)d;
  strncpy(b, "0000:00:00.0", (size_t)len);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventCreate(CUevent *e, unsigned f) {
  (void)f;
  *e = (CUevent)atomic_fetch_add(&next_handle, 16);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  (void)e;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  (void)e;
  (void)s;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventQuery(CUevent e) {
  (void)e;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventSynchronize(CUevent e) {
  (void)e;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  (void)a;
  (void)b;
  *ms = 0.01f;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) {
  (void)s;
  *st = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamCreate(CUstream *s, unsigned f) {
  (void)f;
  *s = (CUstream)atomic_fetch_add(&next_handle, 16);
  return CUDA_SUCCESS;
}
