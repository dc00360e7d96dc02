/* tests/integration/evfail_cuda.c: a driver library whose cuEventCreate always fails
 * (out of memory); every other entry point comes from the simulator's libcuda.so.1, a
 * dependency of this library. Loaded by the shim via COLLSCOPE_LIBCUDA to prove that
 * failing event creation leaves the job untouched. */
#include <cuda.h>

__attribute__((visibility("default"))) CUresult cuEventCreate(CUevent *e, unsigned flags) {
  (void)e;
  (void)flags;
  return CUDA_ERROR_OUT_OF_MEMORY;
}

/* a real reference into the simulator's libcuda keeps it a DT_NEEDED dependency
 * (the linker drops unused libraries with --as-needed) */
__attribute__((visibility("default"))) void *evfail_keep_dependency = (void *)&cuEventRecord;
