/* tests/sim/nccl/tests/test_api.c: single-process tests of the NCCL simulator: argument
 * error codes, strings, version, ncclCommInitAll (+ its nested ncclGetUniqueId, and
 * ncclBcast's nested ncclBroadcast, seen through interposed definitions in this
 * executable), multi-comm groups from one thread, send/recv rings in a group, split key
 * ordering, shrink, one thread per comm, nonblocking init, ncclGroupSimulateEnd,
 * registration, ncclMemAlloc. Link with -rdynamic so the interposers below win. */
#include "harness.h"
#include <dlfcn.h>
#include <pthread.h>

/* ---- interposers: count nested calls made by the library through public symbols ---- */
static int n_getuniqueid, n_broadcast;
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { n_getuniqueid++; return pncclGetUniqueId(id); }
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st) {
  n_broadcast++;
  return pncclBroadcast(s, r, n, t, root, c, st);
}

#define ND 4
static ncclComm_t comms[ND];
static cudaStream_t streams[ND];
static float *dbuf[ND], *dbuf2[ND];

static void test_errors(void) {
  int v = 0;
  NCCLOK(ncclGetVersion(&v));
  CHECK(v == 22809, "version %d", v);
  CHECK(ncclGetVersion(NULL) == ncclInvalidArgument, "GetVersion(NULL)");
  CHECK(!strcmp(ncclGetErrorString(ncclInvalidArgument), "invalid argument (run with NCCL_DEBUG=WARN for details)"), "str");
  CHECK(!strcmp(ncclGetErrorString(ncclSuccess), "no error"), "str0");
  CHECK(!strcmp(ncclGetErrorString((ncclResult_t)99), "unknown result code"), "str99");
  CHECK(ncclGroupEnd() == ncclInvalidUsage, "GroupEnd without start");
  float x = 0;
  CHECK(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, NULL, 0) == ncclInvalidArgument, "NULL comm");
  CHECK(strstr(ncclGetLastError(NULL), "comm argument is NULL") != NULL, "last error '%s'", ncclGetLastError(NULL));
  CHECK(ncclGetUniqueId(NULL) == ncclInvalidArgument, "GetUniqueId(NULL)");
  ncclUniqueId id;
  NCCLOK(ncclGetUniqueId(&id));
  ncclComm_t c;
  CHECK(ncclCommInitRank(&c, 2, id, 2) == ncclInvalidArgument, "rank out of range");
  CHECK(ncclCommInitRank(&c, 0, id, 0) == ncclInvalidArgument, "nranks 0");
  CHECK(ncclCommInitRank(NULL, 1, id, 0) == ncclInvalidArgument, "NULL newcomm");
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  CHECK(ncclCommInitRankConfig(&c, 1, id, 0, &bad) == ncclInvalidArgument, "bad config magic");
  ncclConfig_t bad2 = NCCL_CONFIG_INITIALIZER;
  bad2.blocking = 7;
  CHECK(ncclCommInitRankConfig(&c, 1, id, 0, &bad2) == ncclInvalidArgument, "bad blocking");
  CHECK(ncclCommInitRankScalable(&c, 1, 0, 0, &id, NULL) == ncclInvalidArgument, "nId 0");
  CHECK(ncclRedOpDestroy(ncclSum, NULL) == ncclInvalidArgument, "destroy builtin op");
  CHECK(ncclCommDestroy(NULL) == ncclSuccess, "destroy NULL");
  CHECK(ncclCommCount(NULL, &v) == ncclInvalidArgument, "count NULL comm");
  /* NCCL 2.28.9 falls through to cudaMalloc(ptr, size) (allocator.cc:27, 92) */
  CHECK(ncclMemAlloc(NULL, 64) == ncclUnhandledCudaError, "memalloc NULL");
  void *p0 = &v;
  CHECK(ncclMemAlloc(&p0, 0) == ncclSuccess && p0 == NULL, "memalloc size 0: %p", p0);
  int dl[2] = {0, 0};
  CHECK(ncclCommInitAll(comms, 2, dl) == ncclInvalidUsage, "InitAll duplicate device");
  dl[1] = 999;
  CHECK(ncclCommInitAll(comms, 2, dl) == ncclInvalidArgument, "InitAll bad device");
  /* single-rank comm: argument checks that need a comm */
  NCCLOK(ncclCommInitRank(&c, 1, id, 0));
  float *d;
  CUDAOK(cudaMalloc((void **)&d, 64));
  CHECK(ncclAllReduce(d, d, 4, (ncclDataType_t)12, ncclSum, c, 0) == ncclInvalidArgument, "bad datatype");
  CHECK(ncclAllReduce(d, d, 4, ncclFloat, (ncclRedOp_t)9, c, 0) == ncclInvalidArgument, "unknown op");
  CHECK(ncclAllReduce(d, d, 4, ncclFloat, (ncclRedOp_t)-1, c, 0) == ncclInvalidArgument, "negative op");
  CHECK(ncclBroadcast(d, d, 4, ncclFloat, 1, c, 0) == ncclInvalidArgument, "root out of range");
  CHECK(ncclSend(d, 4, ncclFloat, 3, c, 0) == ncclInvalidArgument, "peer out of range");
  CHECK(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, c, 0) == ncclSuccess, "count 0 no-op");
  /* NULL buffers with count > 0: test_fidelity (accepted, then an asynchronous fault) */
  /* an error inside a group fails the group and drops its ops */
  NCCLOK(ncclGroupStart());
  NCCLOK(ncclAllReduce(d, d, 4, ncclFloat, ncclSum, c, 0));
  CHECK(ncclAllReduce(d, d, 4, (ncclDataType_t)77, ncclSum, c, 0) == ncclInvalidArgument, "bad type in group");
  CHECK(ncclGroupEnd() == ncclInvalidArgument, "group end reports the error");
  ncclRedOp_t op;
  float s = 2;
  NCCLOK(ncclRedOpCreatePreMulSum(&op, &s, ncclFloat, ncclScalarHostImmediate, c));
  CHECK((int)op >= (int)ncclNumOps, "user op %d", (int)op);
  NCCLOK(ncclRedOpDestroy(op, c));
  CHECK(ncclRedOpDestroy(op, c) == ncclInvalidArgument, "double destroy");
  CHECK(ncclAllReduce(d, d, 4, ncclFloat, op, c, 0) == ncclInvalidArgument, "destroyed op");
  void *h;
  NCCLOK(ncclCommRegister(c, d, 64, &h));
  NCCLOK(ncclCommDeregister(c, h));
  ncclWindow_t w;
  NCCLOK(ncclCommWindowRegister(c, d, 64, &w, NCCL_WIN_DEFAULT));
  NCCLOK(ncclCommWindowDeregister(c, w));
  CHECK(ncclCommRevoke(c, 5) == ncclInvalidArgument, "revoke flags");
  NCCLOK(ncclCommFinalize(c));
  NCCLOK(ncclCommDestroy(c));
  cudaFree(d);
  void *m = NULL;
  NCCLOK(ncclMemAlloc(&m, 1 << 20));
  CHECK(m != NULL, "memalloc");
  NCCLOK(ncclMemFree(m));
  /* strong pncclX and weak ncclX are the same function in the library */
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  CHECK(lib != NULL, "dlopen");
  if (lib) {
    CHECK(dlsym(lib, "pncclAllReduce") == dlsym(lib, "ncclAllReduce"), "alias");
    dlclose(lib);
  }
}

static void test_initall(void) {
  int before = n_getuniqueid;
  NCCLOK(ncclCommInitAll(comms, ND, NULL));
  CHECK(n_getuniqueid == before + 1, "ncclCommInitAll must call the public ncclGetUniqueId (%d)", n_getuniqueid - before);
  for (int i = 0; i < ND; i++) {
    int r, n, d;
    NCCLOK(ncclCommUserRank(comms[i], &r));
    NCCLOK(ncclCommCount(comms[i], &n));
    NCCLOK(ncclCommCuDevice(comms[i], &d));
    CHECK(r == i && n == ND && d == i, "rank %d n %d dev %d", r, n, d);
    CUDAOK(cudaSetDevice(i));
    CUDAOK(cudaStreamCreate(&streams[i]));
    CUDAOK(cudaMalloc((void **)&dbuf[i], 4 << 20));
    CUDAOK(cudaMalloc((void **)&dbuf2[i], 4 << 20));
  }
  /* one thread, four comms: a group */
  const size_t n = 1000;
  for (int i = 0; i < ND; i++) {
    float h[1000];
    for (size_t j = 0; j < n; j++) h[j] = (float)(i + 1);
    CUDAOK(cudaMemcpy(dbuf[i], h, n * 4, cudaMemcpyHostToDevice));
  }
  NCCLOK(ncclGroupStart());
  for (int i = 0; i < ND; i++) NCCLOK(ncclAllReduce(dbuf[i], dbuf[i], n, ncclFloat, ncclSum, comms[i], streams[i]));
  NCCLOK(ncclGroupEnd());
  for (int i = 0; i < ND; i++) {
    CUDAOK(cudaStreamSynchronize(streams[i]));
    float h[1000];
    CUDAOK(cudaMemcpy(h, dbuf[i], n * 4, cudaMemcpyDeviceToHost));
    CHECK(h[0] == 10.0f && h[n - 1] == 10.0f, "allreduce %g", h[0]);
  }
  /* ncclBcast goes through the public ncclBroadcast */
  before = n_broadcast;
  NCCLOK(ncclGroupStart());
  for (int i = 0; i < ND; i++) NCCLOK(ncclBcast(dbuf[i], 10, ncclFloat, 2, comms[i], streams[i]));
  NCCLOK(ncclGroupEnd());
  CHECK(n_broadcast == before + ND, "ncclBcast must call ncclBroadcast");
  for (int i = 0; i < ND; i++) CUDAOK(cudaStreamSynchronize(streams[i]));
}

/* send/recv ring in one group (larger than the shm slots), plus a pairwise exchange */
static void test_sendrecv(void) {
  const size_t n = 3 << 20 >> 2;   /* 3 MiB of floats per message */
  float *h = malloc(n * 4);
  for (int i = 0; i < ND; i++) {
    for (size_t j = 0; j < n; j++) h[j] = (float)(i * 1000000 + (int)j % 1000);
    CUDAOK(cudaMemcpy(dbuf[i], h, n * 4, cudaMemcpyHostToDevice));
  }
  NCCLOK(ncclGroupStart());
  for (int i = 0; i < ND; i++) {
    NCCLOK(ncclSend(dbuf[i], n, ncclFloat, (i + 1) % ND, comms[i], streams[i]));
    NCCLOK(ncclRecv(dbuf2[i], n, ncclFloat, (i + ND - 1) % ND, comms[i], streams[i]));
  }
  NCCLOK(ncclGroupEnd());
  for (int i = 0; i < ND; i++) {
    CUDAOK(cudaStreamSynchronize(streams[i]));
    CUDAOK(cudaMemcpy(h, dbuf2[i], n * 4, cudaMemcpyDeviceToHost));
    int from = (i + ND - 1) % ND;
    CHECK(h[0] == (float)(from * 1000000) && h[n - 1] == (float)(from * 1000000 + (int)(n - 1) % 1000), "ring recv %g", h[0]);
  }
  free(h);
}

static void test_split(void) {
  /* color = rank % 2, key = -rank: new rank order reversed */
  ncclComm_t sub[ND];
  NCCLOK(ncclGroupStart());
  for (int i = 0; i < ND; i++) NCCLOK(ncclCommSplit(comms[i], i % 2, -i, &sub[i], NULL));
  NCCLOK(ncclGroupEnd());
  for (int i = 0; i < ND; i++) {
    int r = -1, n = -1;
    NCCLOK(ncclCommUserRank(sub[i], &r));
    NCCLOK(ncclCommCount(sub[i], &n));
    int want = (i >= 2) ? 0 : 1;   /* {0,2}: 2 first, {1,3}: 3 first */
    CHECK(n == 2 && r == want, "split: parent %d -> rank %d of %d", i, r, n);
  }
  /* equal keys: ties broken by parent rank; NOCOLOR -> NULL; a negative color other than
   * NOCOLOR is a color like any other (init.cc:1468, 2573) */
  ncclComm_t s2[ND];
  NCCLOK(ncclGroupStart());
  for (int i = 0; i < ND; i++) NCCLOK(ncclCommSplit(comms[i], i == 0 ? NCCL_SPLIT_NOCOLOR : -5, 7, &s2[i], NULL));
  NCCLOK(ncclGroupEnd());
  CHECK(s2[0] == NULL, "NOCOLOR gives NULL");
  for (int i = 1; i < ND; i++) {
    int r = -1;
    NCCLOK(ncclCommUserRank(s2[i], &r));
    CHECK(r == i - 1, "tie by parent rank: %d -> %d", i, r);
  }
  /* allreduce on the split comms */
  for (int i = 0; i < ND; i++) { float v = (float)i; CUDAOK(cudaMemcpy(dbuf[i], &v, 4, cudaMemcpyHostToDevice)); }
  NCCLOK(ncclGroupStart());
  for (int i = 0; i < ND; i++) NCCLOK(ncclAllReduce(dbuf[i], dbuf2[i], 1, ncclFloat, ncclSum, sub[i], streams[i]));
  NCCLOK(ncclGroupEnd());
  for (int i = 0; i < ND; i++) {
    float v;
    CUDAOK(cudaStreamSynchronize(streams[i]));
    CUDAOK(cudaMemcpy(&v, dbuf2[i], 4, cudaMemcpyDeviceToHost));
    CHECK(v == (i % 2 ? 4.0f : 2.0f), "split allreduce %g", v);
  }
  /* shrink: exclude rank 1 */
  ncclComm_t sh[ND];
  int excl[1] = {1};
  NCCLOK(ncclGroupStart());
  for (int i = 0; i < ND; i++) if (i != 1) NCCLOK(ncclCommShrink(comms[i], excl, 1, &sh[i], NULL, NCCL_SHRINK_DEFAULT));
  NCCLOK(ncclGroupEnd());
  for (int i = 0; i < ND; i++) {
    if (i == 1) continue;
    int r = -1, n = -1;
    NCCLOK(ncclCommUserRank(sh[i], &r));
    NCCLOK(ncclCommCount(sh[i], &n));
    CHECK(n == 3 && r == (i == 0 ? 0 : i - 1), "shrink %d -> %d/%d", i, r, n);
  }
  CHECK(ncclCommShrink(comms[1], excl, 1, &sh[1], NULL, 0) == ncclInvalidArgument, "excluded rank calling shrink");
  for (int i = 0; i < ND; i++) {
    NCCLOK(ncclCommDestroy(sub[i]));
    if (s2[i]) NCCLOK(ncclCommDestroy(s2[i]));
    if (i != 1) NCCLOK(ncclCommDestroy(sh[i]));
  }
}

static void test_simulate(void) {
  ncclSimInfo_t si = NCCL_SIM_INFO_INITIALIZER;
  NCCLOK(ncclGroupStart());
  for (int i = 0; i < ND; i++) NCCLOK(ncclAllReduce(dbuf[i], dbuf[i], 1 << 20, ncclFloat, ncclSum, comms[i], streams[i]));
  NCCLOK(ncclGroupSimulateEnd(&si));
  CHECK(si.estimatedTime > 0, "estimatedTime %g", si.estimatedTime);
  /* nothing was launched: the next real group still lines up on every rank */
  NCCLOK(ncclGroupStart());
  for (int i = 0; i < ND; i++) NCCLOK(ncclAllReduce(dbuf[i], dbuf[i], 1, ncclFloat, ncclSum, comms[i], streams[i]));
  NCCLOK(ncclGroupEnd());
  for (int i = 0; i < ND; i++) CUDAOK(cudaStreamSynchronize(streams[i]));
  ncclSimInfo_t bad = NCCL_SIM_INFO_INITIALIZER;
  bad.magic = 1;
  NCCLOK(ncclGroupStart());
  CHECK(ncclGroupSimulateEnd(&bad) == ncclInvalidArgument, "bad siminfo");
}

/* several threads, each with its own communicator (two independent 2-rank comms) */
struct th { ncclUniqueId id; int rank, dev, ok; };
static void *thread_main(void *arg) {
  struct th *t = arg;
  cudaSetDevice(t->dev);
  ncclComm_t c;
  cudaStream_t s;
  float *d, v = (float)(t->rank + 1);
  t->ok = 0;
  if (ncclCommInitRank(&c, 2, t->id, t->rank) != ncclSuccess) return NULL;
  cudaStreamCreate(&s);
  cudaMalloc((void **)&d, 4 * 1000);
  for (int it = 0; it < 50; it++) {
    cudaMemcpy(d, &v, 4, cudaMemcpyHostToDevice);
    ncclAllReduce(d, d, 1000, ncclFloat, ncclSum, c, s);
    cudaStreamSynchronize(s);
  }
  float out;
  cudaMemcpy(&out, d, 4, cudaMemcpyDeviceToHost);
  t->ok = ncclCommDestroy(c) == ncclSuccess;
  cudaFree(d);
  cudaStreamDestroy(s);
  return NULL;
}
static void test_threads(void) {
  struct th t[4];
  pthread_t p[4];
  ncclUniqueId a, b;
  NCCLOK(ncclGetUniqueId(&a));
  NCCLOK(ncclGetUniqueId(&b));
  for (int i = 0; i < 4; i++) {
    t[i].id = i < 2 ? a : b; t[i].rank = i % 2; t[i].dev = i;
    pthread_create(&p[i], NULL, thread_main, &t[i]);
  }
  for (int i = 0; i < 4; i++) { pthread_join(p[i], NULL); CHECK(t[i].ok, "thread %d", i); }
}

/* nonblocking init from one thread without a group: ncclInProgress, then ready */
static void test_nonblocking(void) {
  ncclUniqueId id;
  NCCLOK(ncclGetUniqueId(&id));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t c[2];
  for (int i = 0; i < 2; i++) {
    CUDAOK(cudaSetDevice(i));
    ncclResult_t r = ncclCommInitRankConfig(&c[i], 2, id, i, &cfg);
    CHECK(r == ncclInProgress, "nonblocking init returned %d", r);
  }
  for (int i = 0; i < 2; i++) {
    ncclResult_t st = ncclInProgress;
    double t0 = now_s();
    while (st == ncclInProgress && now_s() - t0 < 10) {
      NCCLOK(ncclCommGetAsyncError(c[i], &st));
      if (st == ncclInProgress) usleep(1000);
    }
    CHECK(st == ncclSuccess, "async state %d", st);
  }
  for (int i = 0; i < 2; i++) NCCLOK(ncclCommDestroy(c[i]));
}

int main(void) {
  test_errors();
  test_initall();
  test_sendrecv();
  test_split();
  test_simulate();
  for (int i = 0; i < ND; i++) NCCLOK(ncclCommDestroy(comms[i]));
  test_threads();
  test_nonblocking();
  printf("test_api: %d failure(s)\n", h_fail);
  return h_fail ? 1 : 0;
}
