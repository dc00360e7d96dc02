/* tests/sim/nccl/tests/test_realnccl.c: a plain job linked against the REAL libnccl and
 * libcudart (-lnccl -lcudart from the CUDA tree); run with LD_LIBRARY_PATH at the sim
 * build dir it must pass on the simulator: InitAll, a grouped AllReduce, Bcast, a
 * send/recv ring, then destroy. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define N 3
#define CNT 4097
#define OK(x) do { int r_ = (int)(x); if (r_) { fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, r_); return 1; } } while (0)

int main(void) {
  ncclComm_t comms[N];
  cudaStream_t st[N];
  float *buf[N], *out[N], h[CNT];
  int v = 0;
  OK(ncclGetVersion(&v));
  if (v != NCCL_VERSION_CODE) { fprintf(stderr, "version %d\n", v); return 1; }
  OK(ncclCommInitAll(comms, N, NULL));
  for (int i = 0; i < N; i++) {
    OK(cudaSetDevice(i));
    OK(cudaStreamCreate(&st[i]));
    OK(cudaMalloc((void **)&buf[i], CNT * sizeof(float)));
    OK(cudaMalloc((void **)&out[i], CNT * sizeof(float)));
    for (int j = 0; j < CNT; j++) h[j] = (float)(i + 1);
    OK(cudaMemcpy(buf[i], h, sizeof h, cudaMemcpyHostToDevice));
  }
  OK(ncclGroupStart());
  for (int i = 0; i < N; i++) OK(ncclAllReduce(buf[i], out[i], CNT, ncclFloat, ncclSum, comms[i], st[i]));
  OK(ncclGroupEnd());
  OK(ncclGroupStart());
  for (int i = 0; i < N; i++) {
    OK(ncclSend(out[i], CNT, ncclFloat, (i + 1) % N, comms[i], st[i]));
    OK(ncclRecv(buf[i], CNT, ncclFloat, (i + N - 1) % N, comms[i], st[i]));
  }
  OK(ncclGroupEnd());
  for (int i = 0; i < N; i++) {
    OK(cudaSetDevice(i));
    OK(cudaStreamSynchronize(st[i]));
    OK(cudaMemcpy(h, buf[i], sizeof h, cudaMemcpyDeviceToHost));
    if (h[0] != 6.0f || h[CNT - 1] != 6.0f) { fprintf(stderr, "rank %d got %g\n", i, h[0]); return 1; }
  }
  for (int i = 0; i < N; i++) OK(ncclCommDestroy(comms[i]));
  printf("real-linked job on the simulator: ok\n");
  return 0;
}
