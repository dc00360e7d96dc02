/* tests/integration/shim_probe.c: a job linked against the REAL -lnccl -lcudart that
 * exercises what the shim must record, and prints what it did so the test harness can
 * check the dump files against it:
 *   "expect Op=N ..."   the ops this rank issued, by record op name
 *   "result ..."        a checksum of the results (identical with and without the shim)
 *   "codes ..."         return codes of invalid calls (identical with and without)
 * Scenarios (argv[1]): mix, capture, threads, fork, errors.
 * Ranks come from RANK/WORLD_SIZE/LOCAL_RANK; the unique id travels through files in
 * $PROBE_DIR (rank 0 writes uid.<tag>, others wait for it). */
#include <cuda_runtime.h>
#include <nccl.h>
#include "uid_file.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int rank, nranks, local_rank;
static const char *dir;

#define CHECK(x) \
  do { \
    int e_ = (int)(x); \
    if (e_) { \
      fprintf(stderr, "rank %d: %s failed: %d (line %d)\n", rank, #x, e_, __LINE__); \
      exit(1); \
    } \
  } while (0)

enum { AR,
       BC,
       RD,
       AG,
       RS,
       A2A,
       GA,
       SC,
       SD,
       RV,
       MC,
       NOPS };
static const char *names[NOPS] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                  "AlltoAll", "Gather", "Scatter", "Send", "Recv", "Memcpy"};
static int issued[NOPS];
static pthread_mutex_t issued_lock = PTHREAD_MUTEX_INITIALIZER;
static void count(int op) {
  pthread_mutex_lock(&issued_lock);
  issued[op]++;
  pthread_mutex_unlock(&issued_lock);
}

static void print_expect(void) {
  printf("expect");
  for (int i = 0; i < NOPS; i++) printf(" %s=%d", names[i], issued[i]);
  printf("\n");
}

static void share_uid(ncclUniqueId *id, const char *tag) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/uid.%s", dir, tag);
  uid_file_share(id, path, rank);
}

static float *dev_floats(size_t n, float v) {
  float *h = malloc(n * sizeof(float)), *d;
  for (size_t i = 0; i < n; i++) h[i] = v + (float)(i % 7);
  CHECK(cudaMalloc((void **)&d, n * sizeof(float)));
  CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
  count(MC);
  free(h);
  return d;
}

static double checksum(const float *d, size_t n) {
  float *h = malloc(n * sizeof(float));
  CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
  count(MC);
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)h[i] * (double)((i % 13) + 1);
  free(h);
  return s;
}

static ncclComm_t world(const char *tag) {
  ncclUniqueId id;
  ncclComm_t c;
  share_uid(&id, tag);
  ncclResult_t r = ncclCommInitRank(&c, nranks, id, rank);
  while (r == ncclInProgress) { /* NCCL_COMM_BLOCKING=0: a non-blocking communicator */
    usleep(1000);
    CHECK(ncclCommGetAsyncError(c, &r) != ncclSuccess);
  }
  CHECK(r);
  return c;
}

static int scenario_mix(void) {
  const size_t n = 1000;
  cudaStream_t s, s2;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaStreamCreate(&s2));
  ncclComm_t comm = world("mix");
  float *a = dev_floats(n, (float)rank + 1), *b = dev_floats(n * nranks, 0), *c = dev_floats(n * nranks, 2);
  double sum = 0;
  CHECK(ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s));
  count(AR);
  CHECK(ncclAllReduce(b, b, n, ncclFloat, ncclMax, comm, s));
  count(AR); /* in place */
  CHECK(ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s));
  count(AR);
  CHECK(ncclBroadcast(a, b, n, ncclFloat, 0, comm, s));
  count(BC);
  CHECK(ncclBcast(b, n, ncclFloat, nranks - 1, comm, s));
  count(BC);
  CHECK(ncclReduce(a, b, n, ncclFloat, ncclSum, 0, comm, s));
  count(RD);
  CHECK(ncclAllGather(a, c, n, ncclFloat, comm, s));
  count(AG);
  CHECK(ncclReduceScatter(c, a, n, ncclFloat, ncclSum, comm, s));
  count(RS);
  CHECK(ncclAlltoAll(c, b, n, ncclFloat, comm, s));
  count(A2A);
  CHECK(ncclGather(a, c, n, ncclFloat, 0, comm, s));
  count(GA);
  CHECK(ncclScatter(c, a, n, ncclFloat, 0, comm, s));
  count(SC);
  CHECK(ncclGroupStart());
  CHECK(ncclSend(a, n, ncclFloat, (rank + 1) % nranks, comm, s));
  count(SD);
  CHECK(ncclRecv(b, n, ncclFloat, (rank + nranks - 1) % nranks, comm, s));
  count(RV);
  CHECK(ncclGroupEnd());
  CHECK(ncclGroupStart()); /* nested group on two streams */
  CHECK(ncclGroupStart());
  CHECK(ncclAllReduce(a, a, n, ncclFloat, ncclSum, comm, s));
  count(AR);
  CHECK(ncclGroupEnd());
  CHECK(ncclAllReduce(c, c, n, ncclFloat, ncclSum, comm, s2));
  count(AR);
  CHECK(ncclGroupEnd());
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamSynchronize(s2));
  /* a split communicator: even and odd ranks */
  ncclComm_t sub;
  CHECK(ncclCommSplit(comm, rank % 2, rank, &sub, NULL));
  CHECK(ncclAllReduce(a, b, n, ncclFloat, ncclSum, sub, s));
  count(AR);
  CHECK(cudaMemcpyAsync(c, a, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
  count(MC);
  CHECK(cudaMemcpy2D(c, 64, a, 64, 64, 4, cudaMemcpyDeviceToDevice));
  count(MC);
  CHECK(cudaStreamSynchronize(s));
  sum += checksum(a, n) + checksum(b, n) + checksum(c, n);
  printf("result %.6e\n", sum);
  print_expect();
  CHECK(ncclCommDestroy(sub));
  CHECK(ncclCommDestroy(comm));
  return 0;
}

/* A training-loop shape: PROBE_STEPS (48) steps of an AllReduce and a Broadcast, each step
 * synchronised and followed by 2 ms of "compute", so the harvest thread keeps up with the
 * job (COLLSCOPE_TIMING=auto's probation decides while the job still runs). */
static int scenario_steps(void) {
  const size_t n = 4096;
  int steps = getenv("PROBE_STEPS") ? atoi(getenv("PROBE_STEPS")) : 48;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  ncclComm_t comm = world("steps");
  float *a = dev_floats(n, (float)rank + 1), *b = dev_floats(n, 0);
  for (int i = 0; i < steps; i++) {
    CHECK(ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s));
    count(AR);
    CHECK(ncclBroadcast(b, a, n, ncclFloat, i % nranks, comm, s));
    count(BC);
    CHECK(cudaStreamSynchronize(s));
    usleep(2000);
  }
  printf("result %.6e\n", checksum(a, n) + checksum(b, n));
  print_expect();
  CHECK(ncclCommDestroy(comm));
  return 0;
}

static int scenario_capture(void) {
  const size_t n = 256;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  ncclComm_t comm = world("cap");
  float *a = dev_floats(n, (float)rank), *b = dev_floats(n, 0);
  CHECK(ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s));
  count(AR); /* not captured */
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CHECK(ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s));
  count(AR);
  CHECK(cudaStreamEndCapture(s, &g));
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  CHECK(cudaGraphLaunch(ge, s));
  count(AR); /* each replay is an AllReduce instance, recorded with its graph and replay number */
  CHECK(cudaGraphLaunch(ge, s));
  count(AR);
  CHECK(cudaStreamSynchronize(s));
  printf("result %.6e\n", checksum(b, n));
  print_expect();
  CHECK(ncclCommDestroy(comm));
  return 0;
}

static void *thread_main(void *arg) {
  int t = (int)(intptr_t)arg;
  char tag[32];
  snprintf(tag, sizeof(tag), "thr%d", t);
  /* each thread its own GPU and a non-blocking stream: two comms sharing one device with
   * legacy-stream copies in between can deadlock on a real GPU too */
  CHECK(cudaSetDevice(local_rank * 2 + t));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ncclComm_t comm = world(tag);
  float *a = dev_floats(512, (float)(rank + t)), *b = dev_floats(512, 0);
  for (int i = 0; i < 5; i++) {
    CHECK(ncclAllReduce(a, b, 512, ncclFloat, ncclSum, comm, s));
    count(AR);
  }
  CHECK(cudaStreamSynchronize(s));
  double *out = malloc(sizeof(double));
  *out = checksum(b, 512);
  CHECK(ncclCommDestroy(comm));
  return out;
}

static int scenario_threads(void) {
  pthread_t th[2];
  for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t);
  double sum = 0;
  for (int t = 0; t < 2; t++) {
    void *r;
    pthread_join(th[t], &r);
    sum += *(double *)r;
    free(r);
  }
  printf("result %.6e\n", sum);
  print_expect();
  return 0;
}

static int scenario_fork(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  ncclComm_t comm = world("fork");
  float *a = dev_floats(128, (float)rank), *b = dev_floats(128, 0);
  CHECK(ncclAllReduce(a, b, 128, ncclFloat, ncclSum, comm, s));
  count(AR);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    /* the child does host work only, like a data-loader worker, and exits */
    char *p = malloc(1 << 20);
    memset(p, 1, 1 << 20);
    free(p);
    exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
  CHECK(ncclAllReduce(a, b, 128, ncclFloat, ncclSum, comm, s));
  count(AR);
  CHECK(ncclAllReduce(b, b, 128, ncclFloat, ncclSum, comm, s));
  count(AR);
  CHECK(cudaStreamSynchronize(s));
  printf("result %.6e\n", checksum(b, 128));
  print_expect();
  CHECK(ncclCommDestroy(comm));
  return 0;
}

static int scenario_errors(void) {
  /* NCCL checks buffers at the call only with pointer checks on; without them the NULL
   * sendbuff below would succeed and fault later on the device */
  setenv("NCCL_CHECK_POINTERS", "1", 1);
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  ncclComm_t comm = world("err");
  float *a = dev_floats(64, 1), *b = dev_floats(64, 0);
  int c1 = ncclAllReduce(a, b, 64, ncclFloat, ncclSum, NULL, s);
  count(AR);
  int c2 = ncclAllReduce(a, b, 64, (ncclDataType_t)99, ncclSum, comm, s);
  count(AR);
  int c3 = ncclBroadcast(a, b, 64, ncclFloat, nranks + 5, comm, s);
  count(BC);
  int c4 = ncclAllReduce(NULL, b, 64, ncclFloat, ncclSum, comm, s);
  count(AR);
  int c5 = ncclGroupEnd(); /* without a start */
  int c6 = ncclAllReduce(a, b, 64, ncclFloat, (ncclRedOp_t)77, comm, s);
  count(AR);
  CHECK(ncclAllReduce(a, b, 64, ncclFloat, ncclSum, comm, s));
  count(AR); /* still works */
  CHECK(cudaStreamSynchronize(s));
  printf("codes %d %d %d %d %d %d\n", c1, c2, c3, c4, c5, c6);
  printf("errstr %s\n", ncclGetErrorString(ncclInvalidArgument));
  printf("result %.6e\n", checksum(b, 64));
  print_expect();
  CHECK(ncclCommDestroy(comm));
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *sc = argc > 1 ? argv[1] : "mix";
  rank = getenv("RANK") ? atoi(getenv("RANK")) : 0;
  nranks = getenv("WORLD_SIZE") ? atoi(getenv("WORLD_SIZE")) : 1;
  local_rank = getenv("LOCAL_RANK") ? atoi(getenv("LOCAL_RANK")) : 0;
  dir = getenv("PROBE_DIR") ? getenv("PROBE_DIR") : ".";
  CHECK(cudaSetDevice(local_rank));
  if (!strcmp(sc, "mix")) return scenario_mix();
  if (!strcmp(sc, "capture")) return scenario_capture();
  if (!strcmp(sc, "steps")) return scenario_steps();
  if (!strcmp(sc, "threads")) return scenario_threads();
  if (!strcmp(sc, "fork")) return scenario_fork();
  if (!strcmp(sc, "errors")) return scenario_errors();
  fprintf(stderr, "unknown scenario %s\n", sc);
  return 2;
}
