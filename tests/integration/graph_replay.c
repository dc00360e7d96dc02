/* tests/integration/graph_replay.c: a job linked against the REAL -lnccl -lcudart that
 * captures AllReduces into a CUDA graph and replays it, as training frameworks and
 * nccl-tests (-G) do: one eager AllReduce first (the reference duration), then a capture of
 * ITERS AllReduces (in an NCCL group of GROUP ops each when GROUP > 0, in the capture mode
 * MODE), instantiated once and launched LAUNCHES times.
 * Usage: graph_replay MODE(global|thread|relaxed) ITERS GROUP LAUNCHES [driver]
 * ("driver": instantiate, launch and destroy through the driver API, as XLA does).
 * GRAPH_HOLD_MS=N: a global-mode capture on a side stream is open from before the
 * communicator's creation until N ms after the eager AllReduce (this thread relaxed, so its own
 * calls are allowed), while collscope's threads set up: it must still end valid.
 * Prints "result <checksum>" (identical with and without the shim) and
 * "expect eager=1 captured=<ops> replayed=<ops x launches>". Ranks come from RANK /
 * WORLD_SIZE / LOCAL_RANK; rank 0 shares the unique id through $PROBE_DIR/uid. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include "uid_file.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank;

#define CHECK(x) \
  do { \
    int e_ = (int)(x); \
    if (e_) { \
      fprintf(stderr, "rank %d: %s failed: %d (line %d)\n", rank, #x, e_, __LINE__); \
      exit(1); \
    } \
  } while (0)

static void share_uid(ncclUniqueId *id) {
  const char *dir = getenv("PROBE_DIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/uid", dir ? dir : ".");
  uid_file_share(id, path, rank);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: %s global|thread|relaxed ITERS GROUP LAUNCHES [driver]\n", argv[0]);
    return 2;
  }
  enum cudaStreamCaptureMode mode = !strcmp(argv[1], "thread")    ? cudaStreamCaptureModeThreadLocal
                                    : !strcmp(argv[1], "relaxed") ? cudaStreamCaptureModeRelaxed
                                                                  : cudaStreamCaptureModeGlobal;
  int iters = atoi(argv[2]), group = atoi(argv[3]), launches = atoi(argv[4]);
  int drv = argc == 6 && !strcmp(argv[5], "driver");
  rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
  int nranks = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
  int local = atoi(getenv("LOCAL_RANK") ? getenv("LOCAL_RANK") : "0");
  CHECK(cudaSetDevice(local));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ncclUniqueId id;
  ncclComm_t comm;
  int hold_ms = getenv("GRAPH_HOLD_MS") ? atoi(getenv("GRAPH_HOLD_MS")) : 0;
  cudaStream_t side;
  float *side_buf = NULL;
  if (hold_ms > 0) {
    CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CHECK(cudaMalloc((void **)&side_buf, 4096));
    CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemsetAsync(side_buf, 0, 4096, side));
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    CHECK(cudaThreadExchangeStreamCaptureMode(&m));
  }
  share_uid(&id);
  CHECK(ncclCommInitRank(&comm, nranks, id, rank));

  /* 2 MiB of floats (above the event sample's size) unless GRAPH_COUNT says; GRAPH_EAGER eager
   * AllReduces first (1: the reference duration; more: a small op's seq and row past the sample's
   * first, so that only an open capture keeps its captured copy from being sampled out) */
  const size_t n = getenv("GRAPH_COUNT") ? (size_t)atol(getenv("GRAPH_COUNT")) : (size_t)1 << 19;
  int eager = getenv("GRAPH_EAGER") ? atoi(getenv("GRAPH_EAGER")) : 1;
  float *h = malloc(n * sizeof(float)), *a, *b;
  for (size_t i = 0; i < n; i++) h[i] = (float)(rank + 1) + (float)(i % 5);
  CHECK(cudaMalloc((void **)&a, n * sizeof(float)));
  CHECK(cudaMalloc((void **)&b, n * sizeof(float)));
  CHECK(cudaMemcpy(a, h, n * sizeof(float), cudaMemcpyHostToDevice));

  for (int e = 0; e < eager; e++) CHECK(ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s)); /* the reference */
  CHECK(cudaStreamSynchronize(s));
  if (hold_ms > 0) {
    usleep((useconds_t)hold_ms * 1000);
    cudaGraph_t side_g;
    CHECK(cudaStreamEndCapture(side, &side_g)); /* invalidated: cudaErrorStreamCaptureInvalidated */
    CHECK(cudaGraphDestroy(side_g));
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeGlobal;
    CHECK(cudaThreadExchangeStreamCaptureMode(&m));
    CHECK(cudaFree(side_buf));
  }

  cudaGraph_t g;
  cudaGraphExec_t x;
  int ops = 0;
  CHECK(cudaStreamBeginCapture(s, mode));
  for (int i = 0; i < iters; i++) {
    if (group) CHECK(ncclGroupStart());
    for (int k = 0; k < (group ? group : 1); k++, ops++)
      CHECK(ncclAllReduce(k % 2 ? b : a, k % 2 ? a : b, n, ncclFloat, ncclSum, comm, s));
    if (group) CHECK(ncclGroupEnd());
  }
  CHECK(cudaStreamEndCapture(s, &g));
  if (drv) {
    CHECK(cuGraphInstantiateWithFlags((CUgraphExec *)&x, (CUgraph)g, 0));
    for (int l = 0; l < launches; l++) CHECK(cuGraphLaunch((CUgraphExec)x, (CUstream)s));
  } else {
    CHECK(cudaGraphInstantiate(&x, g, 0));
    for (int l = 0; l < launches; l++) CHECK(cudaGraphLaunch(x, s));
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(h, b, n * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (size_t i = 0; i < n; i += 4099) sum += (double)h[i];
  printf("result %.9e\n", sum);
  printf("expect eager=%d captured=%d replayed=%d\n", eager, ops, ops * launches);
  if (drv) {
    CHECK(cuGraphExecDestroy((CUgraphExec)x));
    CHECK(cuGraphDestroy((CUgraph)g));
  } else {
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
  }
  CHECK(ncclCommDestroy(comm));
  return 0;
}
