/* tests/sim/cuda/tests/nvcc_launch.cu: an ordinary CUDA program built by nvcc with
 * -cudart shared, run on the simulator: <<<>>> launches go through __cudaGetKernel and
 * __cudaLaunchKernel (CUDA 13). `fill` has a host implementation here
 * (collscope_simkernel__Z4fillPff); `scale` lives in an anonymous namespace, so its mangled
 * name carries a per-build component, and its host implementation is found by the name
 * without it (collscope_simkernel__ZN5scaleEPff); `nosim` has none.
 * Prints one `launch <kernel> <cudaError>` line per launch and `result <value>`; with
 * argument `model` (run with COLLSCOPE_SIM_KERNELS=model) `nosim` runs as modeled time and
 * must leave its output untouched. Exit status 0 when every expectation holds. */
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void fill(float *p, float v) { p[threadIdx.x] = v; }
namespace {
__global__ void scale(float *p, float f) { p[threadIdx.x] *= f; }
}  // namespace
__global__ void nosim(float *p) { p[threadIdx.x] = -1.0f; }

#define N 256
#define KEXPORT extern "C" __attribute__((visibility("default")))
KEXPORT const size_t collscope_simkernel__Z4fillPff_argsizes[] = {sizeof(float *), sizeof(float), 0};
KEXPORT void collscope_simkernel__Z4fillPff(void **params, const unsigned grid[3], const unsigned block[3]) {
  float *p = *(float **)params[0];
  float v = *(float *)params[1];
  for (unsigned i = 0; i < grid[0] * block[0]; i++) p[i] = v;
}
KEXPORT const size_t collscope_simkernel__ZN5scaleEPff_argsizes[] = {sizeof(float *), sizeof(float), 0};
KEXPORT void collscope_simkernel__ZN5scaleEPff(void **params, const unsigned grid[3], const unsigned block[3]) {
  float *p = *(float **)params[0];
  float f = *(float *)params[1];
  for (unsigned i = 0; i < grid[0] * block[0]; i++) p[i] *= f;
}

int main(int argc, char **argv) {
  bool model = argc > 1 && !strcmp(argv[1], "model");
  int bad = 0;
  float *d = nullptr;
  if (cudaMalloc(&d, N * sizeof(float)) != cudaSuccess) return 2;
  fill<<<1, N>>>(d, 2.0f);
  cudaError_t e = cudaGetLastError();
  printf("launch fill %d\n", (int)e);
  bad += e != cudaSuccess;
  scale<<<2, N / 2>>>(d, 3.0f);
  e = cudaGetLastError();
  printf("launch scale %d\n", (int)e);
  bad += e != cudaSuccess;
  for (int k = 0; k < 2; k++) {
    nosim<<<1, N>>>(d);
    e = cudaGetLastError();
    printf("launch nosim %d\n", (int)e);
    bad += model ? e != cudaSuccess : e != cudaErrorInvalidDeviceFunction;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) bad++;
  float h[N];
  if (cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) bad++;
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += h[i] != 6.0f;
  printf("result %g wrong %d\n", h[0], wrong);
  bad += wrong != 0;
  cudaFree(d);
  return bad ? 1 : 0;
}
