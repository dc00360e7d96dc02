/* tests/integration/local_lib.c: a library linked against the real -lnccl -lcudart that
 * the test loads with dlopen(RTLD_LOCAL), the way Python loads PyTorch's extension
 * modules, so libnccl.so.2 lands outside the global symbol scope. */
#include <cuda_runtime.h>
#include <nccl.h>

__attribute__((visibility("default"))) int local_allreduce(float *out) {
  ncclUniqueId id;
  ncclComm_t comm;
  float *d;
  float h[4] = {1, 2, 3, 4};
  if (cudaSetDevice(0) || ncclGetUniqueId(&id) || ncclCommInitRank(&comm, 1, id, 0)) return 1;
  if (cudaMalloc((void **)&d, sizeof(h)) || cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice)) return 2;
  if (ncclAllReduce(d, d, 4, ncclFloat, ncclSum, comm, NULL)) return 3;
  if (cudaStreamSynchronize(NULL) || cudaMemcpy(out, d, sizeof(h), cudaMemcpyDeviceToHost)) return 4;
  return ncclCommDestroy(comm) ? 5 : 0;
}
