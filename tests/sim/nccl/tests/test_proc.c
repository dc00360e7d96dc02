/* tests/sim/nccl/tests/test_proc.c: multi-process tests of the NCCL simulator:
 * asynchrony (the call returns before peers arrive), NCCL_DEBUG=INFO ring print, link
 * statistics with a topology map, every COLLSCOPE_SIM_FAULTS kind, and ncclCommSplit with a
 * rank that calls late or never (blocking and non-blocking parents, abort), and the abort of a
 * non-blocking init whose peer never comes. */
#include "harness.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

static float *shared;   /* MAP_SHARED scratch visible to all children */

static void setup(struct rank_ctx *c, ncclComm_t *comm, cudaStream_t *st, float **d, size_t n) {
  NCCLOK(ncclCommInitRank(comm, c->nranks, c->id, c->rank));
  CUDAOK(cudaStreamCreate(st));
  CUDAOK(cudaMalloc((void **)d, n * sizeof(float) * 2));
}
static void fill(float *d, size_t n, int rank) {
  float *h = malloc(n * 4);
  for (size_t i = 0; i < n; i++) h[i] = (float)(rank + 1) * 0.5f + (float)i;
  CUDAOK(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
  free(h);
}

/* ---- asynchrony ---- */
static void r_async(struct rank_ctx *c) {
  ncclComm_t comm; cudaStream_t st; float *d;
  setup(c, &comm, &st, &d, 1000);
  if (c->rank == 1) usleep(600000);
  double t0 = now_s();
  NCCLOK(ncclAllReduce(d, d, 1000, ncclFloat, ncclSum, comm, st));
  double dt = now_s() - t0;
  if (c->rank == 0) {
    cudaEvent_t ev;
    CUDAOK(cudaEventCreate(&ev));
    CUDAOK(cudaEventRecord(ev, st));
    CHECK(dt < 0.3, "ncclAllReduce blocked for %.3fs", dt);
    CHECK(cudaEventQuery(ev) == cudaErrorNotReady, "event complete before the peer arrived");
    CUDAOK(cudaEventSynchronize(ev));
    CHECK(now_s() - t0 > 0.3, "completed too early");
  }
  CUDAOK(cudaStreamSynchronize(st));
  NCCLOK(ncclCommDestroy(comm));
}

/* ---- plain allreduce used by the debug / linkstats runs ---- */
static void r_simple(struct rank_ctx *c) {
  ncclComm_t comm; cudaStream_t st; float *d;
  setup(c, &comm, &st, &d, 4096);
  fill(d, 4096, c->rank);
  NCCLOK(ncclAllReduce(d, d, 4096, ncclFloat, ncclSum, comm, st));
  CUDAOK(cudaStreamSynchronize(st));
  NCCLOK(ncclCommDestroy(comm));
}

/* ---- flip out / hop: seq 0 and 1 are int32 / fp32 allreduces ---- */
static void r_flip(struct rank_ctx *c) {
  ncclComm_t comm; cudaStream_t st; float *d;
  const size_t n = 64;
  setup(c, &comm, &st, &d, n);
  float got[2][64], want[64];
  for (int s = 0; s < 2; s++) {
    fill(d, n, c->rank);
    NCCLOK(ncclAllReduce(d, d, n, ncclFloat, ncclSum, comm, st));
    CUDAOK(cudaStreamSynchronize(st));
    CUDAOK(cudaMemcpy(got[s], d, n * 4, cudaMemcpyDeviceToHost));
  }
  /* all ranks publish seq-1 results; rank 0 computes the clean value from seq 0 */
  memcpy(shared + (size_t)c->rank * n, got[1], n * 4);
  memcpy(want, got[0], n * 4);
  memcpy(shared + 8 * n + (size_t)c->rank * n, want, n * 4);
  NCCLOK(ncclCommDestroy(comm));
}

static int check_flip(int nranks, int target, int hop) {
  const size_t n = 64;
  int bad = 0;
  for (int r = 0; r < nranks; r++) {
    float *got = shared + (size_t)r * n, *want = shared + 8 * n + (size_t)r * n;
    for (size_t i = 0; i < n; i++) {
      int should_differ = i == 5 && (hop || r == target);
      uint32_t a, b;
      memcpy(&a, &got[i], 4); memcpy(&b, &want[i], 4);
      if (should_differ && !hop && (a ^ b) != (1u << 3)) { bad++; fprintf(stderr, "flip out: rank %d elem 5 %08x vs %08x\n", r, a, b); }
      if (should_differ && hop && a == b) { bad++; fprintf(stderr, "flip hop: rank %d elem 5 unchanged\n", r); }
      if (!should_differ && a != b) { bad++; fprintf(stderr, "flip: rank %d elem %zu changed\n", r, i); }
    }
    if (hop && memcmp(got, shared, n * 4)) { bad++; fprintf(stderr, "flip hop: rank %d differs from rank 0\n", r); }
  }
  return bad;
}

/* ---- fail: rank 0's second call returns the code; its third call matches the peers' second ---- */
static void r_fail(struct rank_ctx *c) {
  ncclComm_t comm; cudaStream_t st; float *d;
  setup(c, &comm, &st, &d, 100);
  fill(d, 100, c->rank);
  NCCLOK(ncclAllReduce(d, d, 100, ncclFloat, ncclSum, comm, st));
  if (c->rank == 0) {
    ncclResult_t r = ncclAllReduce(d, d, 100, ncclFloat, ncclSum, comm, st);
    CHECK(r == ncclSystemError, "fail fault returned %d", r);
  }
  NCCLOK(ncclAllReduce(d, d, 100, ncclFloat, ncclSum, comm, st));
  CUDAOK(cudaStreamSynchronize(st));
  float h;
  CUDAOK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost));
  CHECK(h == 3.0f, "value %g", h);   /* (0.5 + 1.0) summed twice */
  NCCLOK(ncclCommDestroy(comm));
}

/* ---- hang: rank 1 blocks at seq 0, rank 0 waits until it aborts ---- */
static void r_hang(struct rank_ctx *c) {
  ncclComm_t comm; cudaStream_t st; float *d;
  setup(c, &comm, &st, &d, 100);
  NCCLOK(ncclAllReduce(d, d, 100, ncclFloat, ncclSum, comm, st));
  usleep(300000);
  CHECK(cudaStreamQuery(st) == cudaErrorNotReady, "rank %d: stream finished despite the hang", c->rank);
  volatile float *flag = &shared[1000];
  if (c->rank == 0) {
    /* abort only after rank 1 has seen its own stream stuck */
    for (int i = 0; i < 10000 && *flag == 0.0f; i++) usleep(1000);
    NCCLOK(ncclCommAbort(comm));
    CUDAOK(cudaStreamSynchronize(st));
  } else {
    *flag = 1.0f;
    CUDAOK(cudaStreamSynchronize(st));   /* released by rank 0's abort */
    ncclResult_t ae = ncclSuccess;
    NCCLOK(ncclCommGetAsyncError(comm, &ae));
    CHECK(ae == ncclRemoteError, "async error %d", ae);
    NCCLOK(ncclCommAbort(comm));
  }
}

/* ---- slow / link: timed allreduces ---- */
static void r_timed(struct rank_ctx *c) {
  ncclComm_t comm; cudaStream_t st; float *d;
  setup(c, &comm, &st, &d, 1000);
  double t0 = now_s();
  for (int i = 0; i < 3; i++) NCCLOK(ncclAllReduce(d, d, 1000, ncclFloat, ncclSum, comm, st));
  CUDAOK(cudaStreamSynchronize(st));
  if (c->rank == 0) shared[0] = (float)(now_s() - t0);
  NCCLOK(ncclCommDestroy(comm));
}

/* ---- split: rank 3 calls late (shared[2000] set just before), or never ---- */
static ncclResult_t poll_parent(ncclComm_t parent, double for_s) {
  ncclResult_t st = ncclInProgress;
  double t0 = now_s();
  do {
    NCCLOK(ncclCommGetAsyncError(parent, &st));
    if (st != ncclInProgress) break;
    usleep(2000);
  } while (for_s <= 0 || now_s() - t0 < for_s);
  return st;
}
static void r_split(struct rank_ctx *c) {
  volatile float *late = &shared[2000], *gave_up = &shared[2001 + c->rank];
  int blocking = *(int *)c->arg;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = blocking;
  ncclComm_t parent = NULL, child = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&parent, c->nranks, c->id, c->rank, &cfg);
  CHECK(r == ncclSuccess || r == ncclInProgress, "init %d", r);
  CHECK(poll_parent(parent, 0) == ncclSuccess, "parent init");
  /* 1: rank 3 calls 300 ms late */
  if (c->rank == 3) {
    usleep(300000);
    *late = 1.0f;
  }
  r = ncclCommSplit(parent, 0, c->rank, &child, NULL);
  if (blocking) {
    /* a blocking parent: the call returns once every rank has called it */
    CHECK(r == ncclSuccess, "blocking split %d", r);
    CHECK(*late == 1.0f, "rank %d: a blocking split returned before rank 3 called it", c->rank);
  } else {
    /* a non-blocking parent: ncclInProgress at once, the child NULL until complete */
    CHECK(r == ncclInProgress, "non-blocking split returned %d", r);
    if (c->rank != 3) CHECK(__atomic_load_n(&child, __ATOMIC_ACQUIRE) == NULL, "child set before the split completed");
    if (c->rank != 3) CHECK(poll_parent(parent, 0.1) == ncclInProgress, "split complete before rank 3 called it");
    CHECK(poll_parent(parent, 0) == ncclSuccess, "split failed");
  }
  int n = 0;
  CHECK(child && ncclCommCount(child, &n) == ncclSuccess && n == 4, "child of %d ranks", n);
  NCCLOK(ncclCommDestroy(child));
  if (blocking) {
    NCCLOK(ncclCommDestroy(parent));
    return;
  }
  /* 2: rank 3 never calls; the others see ncclInProgress and abort the parent */
  if (c->rank != 3) {
    child = NULL;
    CHECK(ncclCommSplit(parent, 0, c->rank, &child, NULL) == ncclInProgress, "second split");
    CHECK(poll_parent(parent, 0.2) == ncclInProgress, "second split completed without rank 3");
    /* the simulator's abort reaches every rank's segment: abort once all three have polled */
    shared[2005 + c->rank] = 1.0f;
    for (int i = 0; i < 20000 && (shared[2005] == 0 || shared[2006] == 0 || shared[2007] == 0); i++) usleep(1000);
    double t0 = now_s();
    NCCLOK(ncclCommAbort(parent));
    CHECK(now_s() - t0 < 10, "the abort took %.1f s", now_s() - t0);
    CHECK(child == NULL, "child of an aborted split");
    *gave_up = 1.0f;
  } else {
    for (int i = 0; i < 20000 && (shared[2001] == 0 || shared[2002] == 0 || shared[2003] == 0); i++) usleep(1000);
    NCCLOK(ncclCommAbort(parent));
  }
}

/* a non-blocking init whose peer never comes, aborted at once, 200 times: the abort ends
 * it whether or not its init thread has mapped the segment yet (rank 1 never joins) */
static void r_abort_pending(struct rank_ctx *c) {
  if (c->rank != 0) return;
  double t0 = now_s();
  for (int i = 0; i < 200; i++) {
    ncclUniqueId id;
    NCCLOK(ncclGetUniqueId(&id));
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t comm = NULL;
    ncclResult_t r = ncclCommInitRankConfig(&comm, 2, id, 0, &cfg);
    CHECK(r == ncclInProgress, "init %d", r);
    NCCLOK(ncclCommAbort(comm));
  }
  CHECK(now_s() - t0 < 20, "200 aborts took %.1f s", now_s() - t0);
}
static const char *const h2[] = {"hostA", "hostB"};
static int body_debug(void *a) {
  (void)a;
  static const char *const env[] = {"NCCL_DEBUG=INFO", NULL};
  return run_ranks(4, h2, 2, r_simple, NULL, env, 30);
}
static int body_badfault(void *a) {
  (void)a;
  static const char *const env[] = {"COLLSCOPE_SIM_FAULTS=bogus:x=1;flip:rank=0;slow:rank=0,us=1;"
                                     "nic:us=5;slow:rank=0,compute=5,every=2;slow:rank=0,us=1,pct=2;"
                                     "jitter:pct=1,from=3;nic:host=h,us=1,from=2;slow:rank=0,us=1,from=4,every=3", NULL};
  return run_ranks(1, NULL, 1, r_simple, NULL, env, 30);
}


int main(void) {
  int bad = 0, rc;
  shared = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);


  rc = run_ranks(2, NULL, 1, r_async, NULL, NULL, 30);
  printf("asynchrony: %s\n", rc ? "FAIL" : "ok"); bad += rc;

  rc = run_ranks(2, NULL, 1, r_abort_pending, NULL, NULL, 30);
  printf("abort of a pending non-blocking init: %s\n", rc ? "FAIL" : "ok"); bad += rc;

  char *out = capture(1, body_debug, NULL, &rc);
  int okd = !rc && count_substr(out, "NCCL INFO Channel 00/02 : 0 2 1 3\n") == 1 &&
            count_substr(out, "NCCL INFO Channel 01/02 : 0 2 1 3\n") == 1 &&
            count_substr(out, "NCCL INFO NCCL version 2.28.9+cuda13.0") == 4 &&
            count_substr(out, "nranks 4 cudaDev") == 4 && count_substr(out, "Init COMPLETE") == 4 &&
            strstr(out, "hostA:") != NULL;
  if (!okd) fprintf(stderr, "---- NCCL_DEBUG output ----\n%s----\n", out);
  printf("NCCL_DEBUG=INFO ring print: %s\n", okd ? "ok" : "FAIL"); bad += !okd;
  free(out);

  /* link stats with a topology map: hostA, hostB on leaf1, hostC on leaf2; ring 0 1 2 */
  char dir[] = "/tmp/simnccl-lsXXXXXX";
  if (!mkdtemp(dir)) return 1;
  char topo[300], pre[300], envl[400], envt[400];
  snprintf(topo, sizeof topo, "%s/topo.map", dir);
  FILE *f = fopen(topo, "w");
  fprintf(f, "# host leaf spine\nhostA leaf1 spine0\nhostB leaf1 spine0\nhostC leaf2 spine0\n");
  fclose(f);
  snprintf(pre, sizeof pre, "%s/ls", dir);
  snprintf(envl, sizeof envl, "COLLSCOPE_SIM_LINKSTATS=%s", pre);
  snprintf(envt, sizeof envt, "COLLSCOPE_SIM_TOPOLOGY=%s", topo);
  {
    static const char *const h3[] = {"hostA", "hostB", "hostC"};
    const char *env[] = {envl, envt, NULL};
    rc = run_ranks(3, h3, 3, r_simple, NULL, env, 30);
    int files = 0, leafonly = 0, cross = 0;
    DIR *dd = opendir(dir);
    struct dirent *de;
    while (dd && (de = readdir(dd))) {
      if (strncmp(de->d_name, "ls.", 3)) continue;
      char p[600], buf[4096] = "";
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      FILE *g = fopen(p, "r");
      size_t k = fread(buf, 1, sizeof buf - 1, g);
      buf[k] = 0;
      fclose(g);
      unlink(p);
      files++;
      unsigned long long sh = 1, sl = 0, cl = 0;
      char *q;
      if ((q = strstr(buf, "\"same_host\":"))) sh = strtoull(q + 12, NULL, 10);
      if ((q = strstr(buf, "\"same_leaf\":"))) sl = strtoull(q + 12, NULL, 10);
      if ((q = strstr(buf, "\"cross_leaf\":"))) cl = strtoull(q + 13, NULL, 10);
      if (sh == 0 && sl > 0 && cl == 0 && strstr(buf, "\"class\":\"same_leaf\"")) leafonly++;
      if (sh == 0 && sl == 0 && cl > 0) cross++;
    }
    if (dd) closedir(dd);
    unlink(topo);
    rmdir(dir);
    int ok = !rc && files == 3 && leafonly == 1 && cross == 2;
    printf("link stats (files %d, same_leaf-only %d, cross_leaf %d): %s\n", files, leafonly, cross, ok ? "ok" : "FAIL");
    bad += !ok;
  }

  /* split with rank 3 late or absent */
  for (int blocking = 1; blocking >= 0; blocking--) {
    for (int i = 2000; i < 2010; i++) shared[i] = 0.0f;
    rc = run_ranks(4, h2, 2, r_split, &blocking, NULL, 30);
    printf("split of a %s parent, rank 3 late%s: %s\n", blocking ? "blocking" : "non-blocking",
           blocking ? "" : ", then absent and aborted", rc ? "FAIL" : "ok");
    bad += rc;
  }

  /* flips */
  {
    static const char *const env[] = {"COLLSCOPE_SIM_FAULTS=flip:rank=1,seq=1,elem=5,bit=3,at=out", NULL};
    rc = run_ranks(3, h2, 2, r_flip, NULL, env, 30);
    int b = rc + check_flip(3, 1, 0);
    printf("fault flip at=out: %s\n", b ? "FAIL" : "ok"); bad += b;
  }
  {
    static const char *const env[] = {"COLLSCOPE_SIM_FAULTS=flip:rank=2,seq=1,elem=5,bit=20,at=hop", NULL};
    rc = run_ranks(3, h2, 2, r_flip, NULL, env, 30);
    int b = rc + check_flip(3, 2, 1);
    printf("fault flip at=hop: %s\n", b ? "FAIL" : "ok"); bad += b;
  }
  {
    static const char *const env[] = {"COLLSCOPE_SIM_FAULTS=fail:rank=0,seq=1,code=ncclSystemError", NULL};
    rc = run_ranks(2, NULL, 1, r_fail, NULL, env, 30);
    printf("fault fail: %s\n", rc ? "FAIL" : "ok"); bad += rc;
  }
  {
    static const char *const env[] = {"COLLSCOPE_SIM_FAULTS=hang:rank=1,seq=0", NULL};
    shared[1000] = 0.0f;
    rc = run_ranks(2, NULL, 1, r_hang, NULL, env, 30);
    printf("fault hang + abort: %s\n", rc ? "FAIL" : "ok"); bad += rc;
  }
  {
    rc = run_ranks(2, h2, 2, r_timed, NULL, NULL, 30);
    double base = shared[0];
    static const char *const env[] = {"COLLSCOPE_SIM_FAULTS=slow:rank=1,us=100000", NULL};

    rc += run_ranks(2, h2, 2, r_timed, NULL, env, 30);
    double slow = shared[0];
    static const char *const envl2[] = {"COLLSCOPE_SIM_FAULTS=link:a=hostA,b=hostB,us=30000", NULL};
    rc += run_ranks(2, h2, 2, r_timed, NULL, envl2, 30);
    double link = shared[0];
    int ok = !rc && slow >= 0.19 && link >= 3 * 2 * 0.03 - 0.005;   /* base: informative */
    printf("fault slow (%.3fs) / link (%.3fs) vs clean (%.3fs): %s\n", slow, link, base, ok ? "ok" : "FAIL");
    bad += !ok;
  }
  {
    char *err = capture(2, body_badfault, NULL, &rc);
    int ok = !rc && count_substr(err, "ignoring bad entry 'bogus:x=1'") == 1 &&
             count_substr(err, "ignoring bad entry 'flip:rank=0'") == 1 &&
             count_substr(err, "ignoring bad entry 'nic:us=5' (nic needs host") == 1 &&
             count_substr(err, "'slow:rank=0,compute=5,every=2' (slow: every applies to us and pct)") == 1 &&
             count_substr(err, "'slow:rank=0,us=1,pct=2' (slow needs rank and one of us, pct, compute)") == 1 &&
             count_substr(err, "ignoring bad entry 'jitter:pct=1,from=3' (bad key") == 1 &&
             count_substr(err, "ignoring bad entry") == 6;
    if (!ok) fprintf(stderr, "---- stderr ----\n%s----\n", err);
    printf("fault syntax errors: %s\n", ok ? "ok" : "FAIL"); bad += !ok;
    free(err);
  }
  printf("%s\n", bad ? "FAILED" : "all passed");
  return bad ? 1 : 0;
}
