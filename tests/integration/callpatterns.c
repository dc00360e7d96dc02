/* tests/integration/callpatterns.c: call patterns of real frameworks, one process driving
 * NDEV simulated GPUs with one thread each (one rank per thread), linked against the REAL
 * -lnccl -lcudart. Each thread prints what it saw; the process exits 0 when every call
 * returned what NCCL promises and every result is right, else 3.
 *   capture MODE GROUPED COUNT   an AllReduce of COUNT floats (grouped: inside
 *                                ncclGroupStart/End) captured into a CUDA graph
 *                                (MODE global, thread or relaxed) as the first collective
 *                                of the process, then 100 replays; prints the return codes
 *                                and the result
 *   beside                       rank 0 captures a graph of its own work (global mode) while
 *                                rank 1 runs its first 2 MiB AllReduce eagerly, on a
 *                                communicator of one rank; prints the return codes
 *   comm KIND                    a communicator NCCL completes later, then 3 AllReduces on it:
 *                                KIND splitnb (ncclCommSplit of a non-blocking parent, polled
 *                                with ncclCommGetAsyncError), splitgroup (ncclCommSplit inside
 *                                ncclGroupStart/End), initnb (a non-blocking
 *                                ncclCommInitRankConfig, polled; rank 1 calls it only after
 *                                rank 0's call returned)
 *   simulate                     ncclGroupStart, 2 AllReduces, ncclGroupSimulateEnd, then
 *                                20 AllReduces
 *   sample                       per size (32 B, 2 KiB, 128 KiB) 6 AlltoAlls (the collective)
 *                                and 6 rounds of grouped Send/Recv to every peer, each
 *                                thread on its own communicator */
#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NDEV 2
#define REPLAYS 100

static pthread_barrier_t bar;
static ncclUniqueId uid;
static int argc_g;
static char **argv_g;
static int failed;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

#define FAIL(...) \
  do { \
    pthread_mutex_lock(&out_lock); \
    printf(__VA_ARGS__); \
    printf("\n"); \
    failed = 1; \
    pthread_mutex_unlock(&out_lock); \
  } while (0)
#define CK(x) \
  do { \
    int e_ = (int)(x); \
    if (e_) { \
      FAIL("rank %d: %s = %d (line %d)", rank, #x, e_, __LINE__); \
      return NULL; \
    } \
  } while (0)

static float *dev_fill(size_t n, float v) {
  float *h = malloc(n * sizeof(float)), *d = NULL;
  if (!h) return NULL;
  for (size_t i = 0; i < n; i++) h[i] = v;
  if (cudaMalloc((void **)&d, n * sizeof(float)) || cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice)) d = NULL;
  free(h);
  return d;
}

/* every element of d equal to want */
static int dev_check(const float *d, size_t n, float want) {
  float *h = malloc(n * sizeof(float));
  int ok = h && !cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (size_t i = 0; ok && i < n; i++) ok = h[i] == want;
  free(h);
  return ok;
}

static void *capture_thread(void *arg) {
  int rank = (int)(long)arg;
  const char *m = argv_g[2];
  int grouped = atoi(argv_g[3]);
  size_t n = (size_t)atol(argv_g[4]);
  enum cudaStreamCaptureMode mode = !strcmp(m, "global")   ? cudaStreamCaptureModeGlobal
                                    : !strcmp(m, "thread") ? cudaStreamCaptureModeThreadLocal
                                                           : cudaStreamCaptureModeRelaxed;
  ncclComm_t comm;
  cudaStream_t s;
  CK(cudaSetDevice(rank));
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(ncclCommInitRank(&comm, NDEV, uid, rank));
  /* rank r sends r + 1: every replay writes out = 1 + ... + NDEV */
  float *in = dev_fill(n, (float)(rank + 1)), *out = dev_fill(n, 0);
  if (!in || !out) {
    FAIL("rank %d: no memory", rank);
    return NULL;
  }
  pthread_barrier_wait(&bar); /* every allocation done before any capture begins */
  cudaGraph_t g;
  cudaGraphExec_t ge;
  int rb = cudaStreamBeginCapture(s, mode), rs = 0, rc = 0, re = 0, rend;
  if (grouped) rs = ncclGroupStart();
  rc = ncclAllReduce(in, out, n, ncclFloat, ncclSum, comm, s);
  if (grouped) re = ncclGroupEnd();
  rend = cudaStreamEndCapture(s, &g);
  pthread_barrier_wait(&bar); /* every capture ended before any instantiation */
  int ri = rend ? -1 : (int)cudaGraphInstantiate(&ge, g, 0), rl = 0;
  for (int i = 0; i < REPLAYS && !ri && !rl; i++) rl = cudaGraphLaunch(ge, s);
  int ry = cudaStreamSynchronize(s);
  float want = (float)(NDEV * (NDEV + 1) / 2);
  int ok = !rb && !rs && !rc && !re && !rend && !ri && !rl && !ry && dev_check(out, n, want);
  pthread_mutex_lock(&out_lock);
  printf("rank %d: begin %d groupstart %d allreduce %d groupend %d endcapture %d instantiate %d launch %d sync %d "
         "result %s\n",
         rank, rb, rs, rc, re, rend, ri, rl, ry, ok ? "ok" : "WRONG");
  if (!ok) failed = 1;
  pthread_mutex_unlock(&out_lock);
  pthread_barrier_wait(&bar);
  ncclCommDestroy(comm);
  return NULL;
}

/* beside: rank 0 captures a graph (global mode) of its own work, no NCCL in it; meanwhile
 * rank 1 runs its first collective at the SDC size eagerly, on a communicator of its own
 * (one rank), so collscope's SDC set-up happens during rank 0's capture */
static void *beside_thread(void *arg) {
  int rank = (int)(long)arg;
  const size_t n = 1 << 19; /* 2 MiB of floats */
  cudaStream_t s;
  ncclComm_t solo = NULL;
  CK(cudaSetDevice(rank));
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *buf = dev_fill(n, 1);
  if (!buf) CK(1);
  if (rank == 1) {
    ncclUniqueId own;
    CK(ncclGetUniqueId(&own));
    CK(ncclCommInitRank(&solo, 1, own, 0));
  }
  pthread_barrier_wait(&bar);
  cudaGraph_t g = NULL;
  int rb = 0, rm = 0, rend = 0, rc = 0;
  if (rank == 0) {
    rb = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    rm = cudaMemsetAsync(buf, 0, n * sizeof(float), s);
  }
  pthread_barrier_wait(&bar); /* rank 0 is capturing */
  if (rank == 1) {
    rc = ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, solo, s);
    CK(cudaStreamSynchronize(s));
  }
  pthread_barrier_wait(&bar);
  if (rank == 0) {
    rend = cudaStreamEndCapture(s, &g);
    if (!rend) {
      cudaGraphExec_t ge;
      rend = cudaGraphInstantiate(&ge, g, 0) || cudaGraphLaunch(ge, s) || cudaStreamSynchronize(s);
    }
  }
  int ok = !rb && !rm && !rend && !rc && dev_check(buf, n, rank == 0 ? 0.0f : 1.0f);
  pthread_mutex_lock(&out_lock);
  printf("rank %d: begin %d memset %d allreduce %d endcapture %d result %s\n", rank, rb, rm, rc, rend,
         ok ? "ok" : "WRONG");
  if (!ok) failed = 1;
  pthread_mutex_unlock(&out_lock);
  if (solo) ncclCommDestroy(solo);
  return NULL;
}

static int poll_ready(ncclComm_t c) {
  ncclResult_t st = ncclInProgress;
  for (int i = 0; i < 200000 && st == ncclInProgress; i++) {
    if (ncclCommGetAsyncError(c, &st) != ncclSuccess) return -1;
    if (st == ncclInProgress) usleep(100);
  }
  return (int)st;
}

static void *comm_thread(void *arg) {
  int rank = (int)(long)arg;
  const char *kind = argv_g[2];
  ncclComm_t parent = NULL, child = NULL;
  cudaStream_t s;
  const size_t n = 1024;
  CK(cudaSetDevice(rank));
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (!strcmp(kind, "splitnb") || !strcmp(kind, "initnb")) cfg.blocking = 0;
  /* initnb: rank 1 joins only after rank 0's call returned, so rank 0's communicator is still
   * being created when its call returns */
  if (!strcmp(kind, "initnb") && rank == 1) pthread_barrier_wait(&bar);
  ncclResult_t r = ncclCommInitRankConfig(&parent, NDEV, uid, rank, &cfg);
  if (!strcmp(kind, "initnb") && rank == 0) pthread_barrier_wait(&bar);
  if (r != ncclSuccess && r != ncclInProgress) CK(r);
  if (r == ncclInProgress) CK(poll_ready(parent));
  if (!strcmp(kind, "initnb")) {
    child = parent;
    parent = NULL;
  } else if (!strcmp(kind, "splitnb")) {
    r = ncclCommSplit(parent, 0, rank, &child, NULL);
    if (r != ncclInProgress && r != ncclSuccess) CK(r);
    CK(poll_ready(parent));
  } else if (!strcmp(kind, "splitgroup")) {
    CK(ncclGroupStart());
    CK(ncclCommSplit(parent, 0, NDEV - rank, &child, NULL));
    CK(ncclGroupEnd());
  }
  if (!child) {
    FAIL("rank %d: no child communicator", rank);
    return NULL;
  }
  float *buf = dev_fill(n, 1);
  if (!buf) CK(1);
  for (int i = 0; i < 3; i++) CK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, child, s));
  CK(cudaStreamSynchronize(s));
  int nr = 0;
  CK(ncclCommCount(child, &nr));
  float want = 1;
  for (int i = 0; i < 3; i++) want *= (float)nr;
  pthread_mutex_lock(&out_lock);
  printf("rank %d: child size %d result %s\n", rank, nr, dev_check(buf, n, want) ? "ok" : "WRONG");
  pthread_mutex_unlock(&out_lock);
  pthread_barrier_wait(&bar);
  ncclCommDestroy(child);
  if (parent) ncclCommDestroy(parent);
  return NULL;
}

static void *simulate_thread(void *arg) {
  int rank = (int)(long)arg;
  ncclComm_t comm;
  cudaStream_t s;
  const size_t n = 1024;
  CK(cudaSetDevice(rank));
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(ncclCommInitRank(&comm, NDEV, uid, rank));
  float *buf = dev_fill(n, 1);
  if (!buf) CK(1);
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  CK(ncclGroupStart());
  CK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, s));
  CK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, s));
  CK(ncclGroupSimulateEnd(&info));
  for (int i = 0; i < 20; i++) CK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, s));
  CK(cudaStreamSynchronize(s));
  float want = 1;
  for (int i = 0; i < 20; i++) want *= NDEV;
  pthread_mutex_lock(&out_lock);
  printf("rank %d: simulated, 20 AllReduces, result %s\n", rank, dev_check(buf, n, want) ? "ok" : "WRONG");
  pthread_mutex_unlock(&out_lock);
  pthread_barrier_wait(&bar);
  ncclCommDestroy(comm);
  return NULL;
}

static void *sample_thread(void *arg) {
  int rank = (int)(long)arg;
  ncclComm_t comm;
  cudaStream_t s;
  static const size_t sizes[] = {32, 2048, 131072}; /* bytes per peer */
  CK(cudaSetDevice(rank));
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(ncclCommInitRank(&comm, NDEV, uid, rank));
  char *sb = NULL, *rb = NULL;
  CK(cudaMalloc((void **)&sb, 131072 * NDEV));
  CK(cudaMalloc((void **)&rb, 131072 * NDEV));
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t c = sizes[k] / sizeof(float);
    for (int it = 0; it < 6; it++) CK(ncclAlltoAll(sb, rb, c, ncclFloat, comm, s));
    for (int it = 0; it < 6; it++) {
      CK(ncclGroupStart());
      for (int p = 0; p < NDEV; p++) {
        CK(ncclSend(sb + p * sizes[k], c, ncclFloat, p, comm, s));
        CK(ncclRecv(rb + p * sizes[k], c, ncclFloat, p, comm, s));
      }
      CK(ncclGroupEnd());
    }
  }
  CK(cudaStreamSynchronize(s));
  pthread_mutex_lock(&out_lock);
  printf("rank %d: sample done\n", rank);
  pthread_mutex_unlock(&out_lock);
  pthread_barrier_wait(&bar);
  ncclCommDestroy(comm);
  return NULL;
}

int main(int argc, char **argv) {
  argc_g = argc;
  argv_g = argv;
  void *(*fn)(void *) = NULL;
  if (argc == 5 && !strcmp(argv[1], "capture"))
    fn = capture_thread;
  else if (argc == 2 && !strcmp(argv[1], "beside"))
    fn = beside_thread;
  else if (argc == 3 && !strcmp(argv[1], "comm"))
    fn = comm_thread;
  else if (argc == 2 && !strcmp(argv[1], "simulate"))
    fn = simulate_thread;
  else if (argc == 2 && !strcmp(argv[1], "sample"))
    fn = sample_thread;
  if (!fn) {
    fprintf(stderr, "usage: callpatterns capture global|thread|relaxed 0|1 COUNT | beside | comm splitnb|splitgroup|"
                    "initnb | simulate | sample\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (ncclGetUniqueId(&uid) != ncclSuccess) return 3;
  pthread_barrier_init(&bar, NULL, NDEV);
  pthread_t th[NDEV];
  for (long i = 0; i < NDEV; i++) pthread_create(&th[i], NULL, fn, (void *)i);
  for (int i = 0; i < NDEV; i++) pthread_join(th[i], NULL);
  return failed ? 3 : 0;
}
