/* tests/sim/nccl/tests/test_fidelity.c: the simulator behaves as NCCL 2.28.9's source says
 * (file:line of the v2.28.9-1 tag in each comment; README.md "Checked against the NCCL
 * 2.28.9 source" has the table):
 *  - ring order inside a host (GPUs in PCI bus id order, not rank order) for a reversed
 *    device mapping on one host and on two hosts, and for a split whose key reverses the
 *    ranks: the NCCL_DEBUG=INFO ring line and bitwise fp32 AllReduce / ReduceScatter results;
 *  - ncclCommInitRank failures and *newcomm, ncclCommFinalize twice / NULL, ncclConfig_t
 *    field validation;
 *  - a NULL buffer with count > 0: accepted at the call, an asynchronous fault later (its
 *    peers wait until an abort); checked at the call with NCCL_CHECK_POINTERS=1;
 *  - a 0-count Send is a task that needs its peer. */
#include "harness.h"
#include <cuda.h>
#include <sys/mman.h>

/* ------------------------------------------------------------------ ring order */
struct mapping {
  const char *name;
  int n;
  const char *host[8];
  int dev[8];
  int split_reverse;       /* also split color 0, key n-1-rank, and check the child comm */
  const char *ring_line;   /* NCCL's ring as rank 0 prints it (the child's when split) */
};

static int cmp_str(const char *a, const char *b) { return strcmp(a, b); }

/* NCCL 2.28.9's ring, written from its source independently of the simulator:
 * hosts in the order of their lowest rank (init.cc:1099-1109 nodesFirstRank); inside a host
 * the GPUs in PCI bus id order (xml.cc:705-722 keeps PCI children sorted by bus id;
 * search.cc:797 tries FORCED_ORDER_PCI first, search.cc:640-642 takes GPU step+1, and
 * search.cc:596 stores each GPU's rank in graph->intra); host i's last GPU sends to host
 * i+1's first (connect.cc:47-50 ringRecv/ringSend, connect.cc:102-110 connectRings); the
 * sequence read from rank 0 (rings.cc:41-48, init.cc:684-693 ring->index from rank 0).
 * The bus id comes from cudaDeviceGetPCIBusId ("dddd:bb:00.0": string order = bus order). */
static void nccl_ring(int n, const char *const *host, const int *dev, int *ring, int *pos) {
  char bus[8][32];
  for (int r = 0; r < n; r++) cudaDeviceGetPCIBusId(bus[r], sizeof bus[r], dev[r]);
  int done[8] = {0}, k = 0, seq[8] = {0};
  for (int r = 0; r < n; r++) {
    if (done[r]) continue;
    int first = k;
    for (int q = r; q < n; q++) {
      if (done[q] || strcmp(host[q], host[r])) continue;
      done[q] = 1;
      int i = k++;
      while (i > first && cmp_str(bus[seq[i - 1]], bus[q]) > 0) { seq[i] = seq[i - 1]; i--; }
      seq[i] = q;
    }
  }
  int z = 0;
  while (seq[z] != 0) z++;
  for (int p = 0; p < n; p++) { ring[p] = seq[(p + z) % n]; pos[ring[p]] = p; }
}

/* the simulator before: ranks ascending inside a host (kept to show the inputs tell the two
 * orders apart) */
static void rank_order_ring(int n, const char *const *host, int *ring, int *pos) {
  int done[8] = {0}, k = 0;
  for (int r = 0; r < n; r++) {
    if (done[r]) continue;
    for (int q = r; q < n; q++)
      if (!done[q] && !strcmp(host[q], host[r])) { done[q] = 1; ring[k++] = q; }
  }
  for (int p = 0; p < n; p++) pos[ring[p]] = p;
}

#define RC 1001   /* AllReduce count: chunks of ceil(RC/n) */
/* inputs whose fp32 sum depends on the order: rank r's values scaled by 10^r */
static void ring_input(float *h, size_t cnt, int r) {
  float scale = 1.0f;
  for (int i = 0; i < r; i++) scale *= 10.0f;
  for (size_t i = 0; i < cnt; i++)
    h[i] = (float)((long)((i * 7 + (size_t)r * 13) % 23) - 11) * 0.37f * scale + 1e-3f * (float)(i % 5);
}

/* AllReduce reference in ring order (README "Ring and accumulation order"): chunk k starts at
 * position k+1 and ends at position k */
static void ref_allreduce(int n, const int *ring, float *const *in, float *out, size_t cnt) {
  size_t cs = (cnt + (size_t)n - 1) / (size_t)n;
  int order[8] = {0};
  for (int k = 0; k < n; k++) {
    size_t a = (size_t)k * cs, b = a + cs;
    if (a > cnt) a = cnt;
    if (b > cnt) b = cnt;
    if (a == b) continue;
    for (int j = 0; j < n; j++) order[j] = ring[(k + 1 + j) % n];
    ref_chain(SN_F32, 0, NULL, out + a, (void *const *)in, order, n, a, b - a, n);
  }
}
/* ReduceScatter reference: rank ring[k]'s block reduced from position k+1 to position k */
static void ref_reducescatter(int n, const int *ring, const int *pos, float *const *in, int me, float *out,
                              size_t rc) {
  int order[8] = {0}, k = pos[me];
  for (int j = 0; j < n; j++) order[j] = ring[(k + 1 + j) % n];
  ref_chain(SN_F32, 0, NULL, out, (void *const *)in, order, n, (size_t)me * rc, rc, n);
}

/* one comm: AllReduce and ReduceScatter, compared bitwise with the reference in NCCL's ring */
static void check_ring_results(ncclComm_t comm, int me, int n, const char *const *host, const int *dev,
                               const char *what) {
  int ring[8], pos[8];
  nccl_ring(n, host, dev, ring, pos);
  size_t rc = RC / (size_t)n + 1, cnt = RC > rc * (size_t)n ? RC : rc * (size_t)n;
  float *in[8] = {0}, *ref = malloc(cnt * 4), *got = malloc(cnt * 4), *d;
  for (int r = 0; r < n; r++) { in[r] = malloc(cnt * 4); ring_input(in[r], cnt, r); }
  cudaStream_t st;
  CUDAOK(cudaStreamCreate(&st));
  CUDAOK(cudaMalloc((void **)&d, cnt * 4 * 2));
  /* AllReduce, in place */
  CUDAOK(cudaMemcpy(d, in[me], RC * 4, cudaMemcpyHostToDevice));
  NCCLOK(ncclAllReduce(d, d, RC, ncclFloat, ncclSum, comm, st));
  CUDAOK(cudaStreamSynchronize(st));
  CUDAOK(cudaMemcpy(got, d, RC * 4, cudaMemcpyDeviceToHost));
  ref_allreduce(n, ring, in, ref, RC);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < RC; i++) if (memcmp(&got[i], &ref[i], 4) && !bad++) first = i;
  CHECK(bad == 0, "%s: AllReduce rank %d: %zu elements differ from NCCL's ring order, first %zu: %.9g vs %.9g",
        what, me, bad, first, (double)got[first], (double)ref[first]);
  /* ReduceScatter, out of place */
  CUDAOK(cudaMemcpy(d, in[me], rc * (size_t)n * 4, cudaMemcpyHostToDevice));
  NCCLOK(ncclReduceScatter(d, d + cnt, rc, ncclFloat, ncclSum, comm, st));
  CUDAOK(cudaStreamSynchronize(st));
  CUDAOK(cudaMemcpy(got, d + cnt, rc * 4, cudaMemcpyDeviceToHost));
  ref_reducescatter(n, ring, pos, in, me, ref, rc);
  bad = 0;
  for (size_t i = 0; i < rc; i++) if (memcmp(&got[i], &ref[i], 4) && !bad++) first = i;
  CHECK(bad == 0, "%s: ReduceScatter rank %d: %zu elements differ, first %zu", what, me, bad, first);
  CUDAOK(cudaFree(d));
  CUDAOK(cudaStreamDestroy(st));
  for (int r = 0; r < n; r++) free(in[r]);
  free(ref); free(got);
}

/* on rank 0 of the checked comm: the ring derived from NCCL's rules is the expected one, and
 * the inputs tell it from rank order (or the bitwise check would prove nothing) */
static void check_derivation(const struct mapping *m, int n, const char *const *host, const int *dev) {
  int rn[8], pn[8], ro[8], po[8];
  nccl_ring(n, host, dev, rn, pn);
  rank_order_ring(n, host, ro, po);
  char mine[96];
  int off = snprintf(mine, sizeof mine, "%d", rn[0]);
  for (int p = 1; p < n; p++) off += snprintf(mine + off, sizeof mine - (size_t)off, " %d", rn[p]);
  CHECK(!strcmp(mine, m->ring_line), "%s: ring derived from NCCL's rules '%s', expected '%s'", m->name, mine,
        m->ring_line);
  float *in[8] = {0}, *a = malloc(RC * 4), *b = malloc(RC * 4);
  for (int r = 0; r < n; r++) { in[r] = malloc(RC * 4); ring_input(in[r], RC, r); }
  ref_allreduce(n, rn, in, a, RC);
  ref_allreduce(n, ro, in, b, RC);
  CHECK(memcmp(a, b, RC * 4) != 0, "%s: the inputs give the same sums in NCCL's and in rank order", m->name);
  for (int r = 0; r < n; r++) free(in[r]);
  free(a); free(b);
}

static void r_ring(struct rank_ctx *c) {
  const struct mapping *m = c->arg;
  CUDAOK(cudaSetDevice(m->dev[c->rank]));
  ncclComm_t comm;
  NCCLOK(ncclCommInitRank(&comm, c->nranks, c->id, c->rank));
  if (!m->split_reverse) {
    if (c->rank == 0) check_derivation(m, c->nranks, m->host, m->dev);
    check_ring_results(comm, c->rank, c->nranks, m->host, m->dev, m->name);
  } else {
    ncclComm_t child;
    NCCLOK(ncclCommSplit(comm, 0, c->nranks - 1 - c->rank, &child, NULL));
    int me = -1;
    NCCLOK(ncclCommUserRank(child, &me));
    CHECK(me == c->nranks - 1 - c->rank, "split rank %d", me);
    const char *host[8];
    int dev[8];
    for (int q = 0; q < c->nranks; q++) { host[q] = m->host[c->nranks - 1 - q]; dev[q] = m->dev[c->nranks - 1 - q]; }
    if (me == 0) check_derivation(m, c->nranks, host, dev);
    check_ring_results(child, me, c->nranks, host, dev, m->name);
    NCCLOK(ncclCommDestroy(child));
  }
  NCCLOK(ncclCommDestroy(comm));
}

static int body_ring(void *a) {
  const struct mapping *m = a;
  static const char *const env[] = {"NCCL_DEBUG=INFO", NULL};
  return run_ranks(m->n, m->host, m->n, r_ring, (void *)m, env, 60);
}

static int test_ring(const struct mapping *m) {
  int rc;
  char *out = capture(1, body_ring, (void *)m, &rc);
  char want[96];
  snprintf(want, sizeof want, "NCCL INFO Channel 00/02 : %s\n", m->ring_line);
  int ok = !rc && count_substr(out, want) == 1;
  if (!ok) fprintf(stderr, "%s: rc %d, want '%s'\n---- NCCL_DEBUG output ----\n%s----\n", m->name, rc, want, out);
  printf("ring order, %s: ring %s: %s\n", m->name, m->ring_line, ok ? "ok" : "FAIL");
  free(out);
  return !ok;
}

/* ------------------------------------------------------------------ error paths */
static void test_init_errors(struct rank_ctx *rc) {
  (void)rc;
  ncclUniqueId id;
  NCCLOK(ncclGetUniqueId(&id));
  ncclComm_t sentinel = (ncclComm_t)(uintptr_t)0x1234, c;
  /* rank >= nranks, rank < 0: init.cc:1986-1990 goto fail, which sets *newcomm = NULL
   * (init.cc:2040) */
  c = sentinel;
  CHECK(ncclCommInitRank(&c, 2, id, 2) == ncclInvalidArgument && c == NULL, "rank >= nranks: comm %p", (void *)c);
  c = sentinel;
  CHECK(ncclCommInitRank(&c, 2, id, -1) == ncclInvalidArgument && c == NULL, "rank < 0: comm %p", (void *)c);
  /* nranks 0: ncclCommInitRank passes nId = 1 (init.cc:2055), and nId > nranks returns at once
   * (init.cc:1965-1968), before anything touches *newcomm */
  c = sentinel;
  CHECK(ncclCommInitRank(&c, 0, id, 0) == ncclInvalidArgument && c == sentinel, "nranks 0: comm %p", (void *)c);
  /* a config that fails parseCommConfig: init.cc:1998 goto fail -> *newcomm = NULL */
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.CTAPolicy = 7;
  c = sentinel;
  CHECK(ncclCommInitRankConfig(&c, 1, id, 0, &bad) == ncclInvalidArgument && c == NULL, "bad config: comm %p", (void *)c);
}

/* ncclConfig_t: init.cc:1880-1916 (parseCommConfig) rejects each out-of-range field; a
 * field newer than the config's version is reset to its default first (init.cc:1825-1849) */
static void test_config(struct rank_ctx *rc) {
  (void)rc;
  struct { const char *what; int field, value; ncclResult_t want; } cases[] = {
    {"CTAPolicy -1 (UNDEF: default)", 0, NCCL_CONFIG_UNDEF_INT, ncclSuccess},
    {"CTAPolicy 3", 0, 3, ncclInvalidArgument},           /* init.cc:1887-1892 */
    {"CTAPolicy -2", 0, -2, ncclInvalidArgument},
    {"CTAPolicy ZERO", 0, NCCL_CTA_POLICY_ZERO, ncclSuccess},
    {"nvlsCTAs 0", 1, 0, ncclInvalidArgument},             /* init.cc:1900-1904 */
    {"nvlsCTAs 1", 1, 1, ncclSuccess},
    {"collnetEnable 2", 2, 2, ncclInvalidArgument},        /* init.cc:1881-1885 */
    {"collnetEnable 1", 2, 1, ncclSuccess},
    {"shrinkShare 2", 3, 2, ncclInvalidArgument},          /* init.cc:1894-1898 */
    {"nChannelsPerNetPeer 0", 4, 0, ncclInvalidArgument},  /* init.cc:1906-1910, device.h:86 */
    {"nChannelsPerNetPeer 65", 4, 65, ncclInvalidArgument},
    {"nChannelsPerNetPeer 64", 4, 64, ncclSuccess},
    {"nvlinkCentricSched 2", 5, 2, ncclInvalidArgument},   /* init.cc:1912-1916 */
    {"nvlinkCentricSched 1", 5, 1, ncclSuccess},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    int *f[] = {&cfg.CTAPolicy, &cfg.nvlsCTAs, &cfg.collnetEnable, &cfg.shrinkShare, &cfg.nChannelsPerNetPeer,
                &cfg.nvlinkCentricSched};
    *f[cases[i].field] = cases[i].value;
    ncclUniqueId id;
    NCCLOK(ncclGetUniqueId(&id));
    ncclComm_t c = NULL;
    ncclResult_t r = ncclCommInitRankConfig(&c, 1, id, 0, &cfg);
    CHECK(r == cases[i].want, "config %s: %d, want %d", cases[i].what, (int)r, (int)cases[i].want);
    if (r == ncclSuccess && c) NCCLOK(ncclCommDestroy(c));
  }
  /* a 2.26 caller's config: the 2.27 fields are not read (init.cc:1840-1845) */
  ncclConfig_t old = NCCL_CONFIG_INITIALIZER;
  old.version = NCCL_VERSION(2, 26, 0);
  old.CTAPolicy = 9; old.nvlsCTAs = -5;
  ncclUniqueId id;
  NCCLOK(ncclGetUniqueId(&id));
  ncclComm_t c = NULL;
  CHECK(ncclCommInitRankConfig(&c, 1, id, 0, &old) == ncclSuccess, "2.26 config with 2.27 fields set");
  /* ncclCommSplit validates its config too */
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.shrinkShare = 5;
  ncclComm_t child = (ncclComm_t)(uintptr_t)0x1;
  if (c) {
    CHECK(ncclCommSplit(c, 0, 0, &child, &bad) == ncclInvalidArgument, "split with a bad config");
    NCCLOK(ncclCommDestroy(c));
  }
}

/* ncclCommFinalize: NULL -> ncclSuccess (init.cc:2271 `if (comm == NULL) goto exit;`);
 * twice -> ncclInvalidArgument (init.cc:2276-2280 "prevent double finalize") */
static void test_finalize(struct rank_ctx *rc) {
  (void)rc;
  CHECK(ncclCommFinalize(NULL) == ncclSuccess, "finalize NULL");
  ncclUniqueId id;
  NCCLOK(ncclGetUniqueId(&id));
  ncclComm_t c;
  NCCLOK(ncclCommInitRank(&c, 1, id, 0));
  NCCLOK(ncclCommFinalize(c));
  ncclResult_t r = ncclCommFinalize(c);
  CHECK(r == ncclInvalidArgument, "second finalize: %d", (int)r);
  NCCLOK(ncclCommDestroy(c));
}

/* ------------------------------------------------------------------ NULL buffers */
/* Default: ArgsCheck looks at pointers only when comm->checkPointers (argcheck.cc:71), which is
 * NCCL_CHECK_POINTERS == 1 (init.cc:55, init.cc:452): the call succeeds and the kernel faults
 * later; the fault surfaces as the comm's asynchronous error, and as the sticky
 * cudaErrorIllegalAddress of the context: "any further CUDA work will return the same error"
 * (driver_types.h:769-775, cuda.h:2829-2837), so every later synchronize or query says so. */
static void r_null_default(struct rank_ctx *rc) {
  (void)rc;
  ncclComm_t c;
  ncclUniqueId id;
  NCCLOK(ncclGetUniqueId(&id));
  NCCLOK(ncclCommInitRank(&c, 1, id, 0));
  float *d;
  cudaStream_t st, other;
  cudaEvent_t ev;
  CUDAOK(cudaStreamCreate(&st));
  CUDAOK(cudaStreamCreate(&other));
  CUDAOK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CUDAOK(cudaMalloc((void **)&d, 64));
  CHECK(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, c, st) == ncclSuccess, "count 0, NULL: discarded");
  CUDAOK(cudaStreamSynchronize(st));
  ncclResult_t ae = ncclInternalError;
  NCCLOK(ncclCommGetAsyncError(c, &ae));
  CHECK(ae == ncclSuccess, "count 0 must not fault: async %d", (int)ae);
  CHECK(cudaGetLastError() == cudaSuccess, "no error before the fault");
  /* both in one group: nothing runs before ncclGroupEnd, so the second call cannot see the
   * first one's fault; outside a group it may, since every enqueue returns the comm's async
   * error once set (ncclEnqueueCheck -> ncclCommEnsureReady) */
  NCCLOK(ncclGroupStart());
  CHECK(ncclAllReduce(NULL, d, 4, ncclFloat, ncclSum, c, st) == ncclSuccess, "NULL sendbuff accepted at the call");
  CHECK(ncclReduce(d, NULL, 4, ncclFloat, ncclSum, 0, c, st) == ncclSuccess, "NULL recvbuff at the root accepted");
  NCCLOK(ncclGroupEnd());
  CUDAOK(cudaEventRecord(ev, st));
  cudaError_t ce = cudaStreamSynchronize(st);
  CHECK(ce == cudaErrorIllegalAddress, "next stream sync after the fault: %d (%s)", (int)ce, cudaGetErrorName(ce));
  /* sticky: every later sync or query of the context, any stream, runtime or driver */
  CHECK(cudaStreamSynchronize(st) == cudaErrorIllegalAddress, "second stream sync");
  CHECK(cudaStreamQuery(st) == cudaErrorIllegalAddress, "stream query");
  CHECK(cudaStreamSynchronize(other) == cudaErrorIllegalAddress, "another stream's sync");
  CHECK(cudaStreamSynchronize(NULL) == cudaErrorIllegalAddress, "legacy stream sync");
  CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress, "device sync");
  CHECK(cudaEventSynchronize(ev) == cudaErrorIllegalAddress, "event sync");
  CHECK(cudaEventQuery(ev) == cudaErrorIllegalAddress, "event query");
  CHECK(cuStreamSynchronize((CUstream)st) == CUDA_ERROR_ILLEGAL_ADDRESS, "cuStreamSynchronize");
  CHECK(cuStreamQuery((CUstream)st) == CUDA_ERROR_ILLEGAL_ADDRESS, "cuStreamQuery");
  CHECK(cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS, "cuCtxSynchronize");
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress, "last error");
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress, "last error is not reset");
  CHECK(cudaPeekAtLastError() == cudaErrorIllegalAddress, "peek at last error");
  NCCLOK(ncclCommGetAsyncError(c, &ae));
  CHECK(ae == ncclUnhandledCudaError, "fault as async error: %d", (int)ae);
  CHECK(strstr(ncclGetLastError(c), "illegal memory access") != NULL, "last error '%s'", ncclGetLastError(c));
  NCCLOK(ncclCommAbort(c));
}

/* two ranks, rank 0's sendbuff NULL: rank 0's item faults (its stream sync returns
 * cudaErrorIllegalAddress), rank 1 waits for it as for a dead GPU (bounded wait: its stream
 * stays busy) until rank 0 aborts; then rank 1's item ends with ncclRemoteError and its own
 * context is fine (its stream sync succeeds) */
static volatile int *fault_flag;   /* MAP_SHARED: [0] rank 1 -> 0 "queried", [1] rank 0 -> 1 "aborted" */
static void r_null_peer(struct rank_ctx *c) {
  ncclComm_t comm;
  NCCLOK(ncclCommInitRank(&comm, c->nranks, c->id, c->rank));
  cudaStream_t st;
  CUDAOK(cudaStreamCreate(&st));
  float *d;
  CUDAOK(cudaMalloc((void **)&d, 64));
  NCCLOK(ncclAllReduce(c->rank == 0 ? NULL : d, d, 4, ncclFloat, ncclSum, comm, st));
  ncclResult_t ae = ncclSuccess;
  if (c->rank == 0) {
    cudaError_t ce = cudaStreamSynchronize(st);
    CHECK(ce == cudaErrorIllegalAddress, "rank 0 stream sync: %d", (int)ce);
    NCCLOK(ncclCommGetAsyncError(comm, &ae));
    CHECK(ae == ncclUnhandledCudaError, "rank 0 async %d", (int)ae);
    while (!fault_flag[0]) usleep(1000);   /* abort only once rank 1 saw its item wait */
    NCCLOK(ncclCommAbort(comm));
    fault_flag[1] = 1;
  } else {
    usleep(300000);
    cudaError_t q = cudaStreamQuery(st);
    CHECK(q == cudaErrorNotReady, "rank 1 finished without rank 0's data: %d", (int)q);
    fault_flag[0] = 1;
    while (!fault_flag[1]) usleep(1000);
    CUDAOK(cudaStreamSynchronize(st));
    NCCLOK(ncclCommGetAsyncError(comm, &ae));
    CHECK(ae == ncclRemoteError, "rank 1 async %d", (int)ae);
    NCCLOK(ncclCommAbort(comm));
  }
}

/* NCCL_CHECK_POINTERS=1: CudaPtrCheck at the call (argcheck.cc:10-26, 71-84) */
static void r_null_checked(struct rank_ctx *rc) {
  ncclComm_t c = NULL;
  CUDAOK(cudaSetDevice(0));
  NCCLOK(ncclCommInitRank(&c, rc->nranks, rc->id, rc->rank));
  float *d, *other, host[4] = {0};
  cudaStream_t st;
  CUDAOK(cudaStreamCreate(&st));
  CUDAOK(cudaMalloc((void **)&d, 64));
  CUDAOK(cudaSetDevice(1));
  CUDAOK(cudaMalloc((void **)&other, 64));
  CUDAOK(cudaSetDevice(0));
  CHECK(ncclAllReduce(NULL, d, 4, ncclFloat, ncclSum, c, st) == ncclInvalidArgument, "NULL sendbuff");
  CHECK(strstr(ncclGetLastError(c), "sendbuff (nil) is not a valid pointer") != NULL, "'%s'", ncclGetLastError(c));
  /* ArgsCheck runs before taskAppend discards an empty collective (enqueue.cc:2643 vs 2555) */
  CHECK(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, c, st) == ncclInvalidArgument, "NULL, count 0");
  CHECK(ncclAllReduce(host, d, 4, ncclFloat, ncclSum, c, st) == ncclInvalidArgument, "unregistered host memory");
  CHECK(ncclAllReduce(d, other, 4, ncclFloat, ncclSum, c, st) == ncclInvalidArgument, "recvbuff on device 1");
  CHECK(strstr(ncclGetLastError(c), "allocated on device 1 mismatchs with NCCL device 0") != NULL, "'%s'",
        ncclGetLastError(c));
  /* the root's Broadcast sendbuff is checked whatever the count (argcheck.cc:77-78); Send/Recv
   * buffers only when count > 0 (argcheck.cc:72-74) */
  CHECK(ncclBroadcast(NULL, d, 0, ncclFloat, 0, c, st) == ncclInvalidArgument, "Broadcast root, count 0, NULL");
  NCCLOK(ncclGroupStart());
  CHECK(ncclSend(NULL, 0, ncclFloat, 0, c, st) == ncclSuccess, "Send, count 0, NULL");
  CHECK(ncclRecv(NULL, 0, ncclFloat, 0, c, st) == ncclSuccess, "Recv, count 0, NULL");
  NCCLOK(ncclGroupEnd());
  CHECK(ncclSend(NULL, 1, ncclFloat, 0, c, st) == ncclInvalidArgument, "Send, count 1, NULL");
  NCCLOK(ncclAllReduce(d, d, 4, ncclFloat, ncclSum, c, st));
  CUDAOK(cudaStreamSynchronize(st));
  ncclResult_t ae = ncclInternalError;
  NCCLOK(ncclCommGetAsyncError(c, &ae));
  CHECK(ae == ncclSuccess, "no fault: %d", (int)ae);
  NCCLOK(ncclCommDestroy(c));
}

/* ------------------------------------------------------------------ 0-count Send */
/* p2pTaskAppend keeps a Send/Recv of any count (enqueue.cc:2550-2551, no count test, unlike
 * collectives at enqueue.cc:2554-2555); a 0-byte transfer is one proxy step
 * (enqueue.cc:983-985). So a 0-byte Send needs its Recv: without one it does not complete. */
static volatile int *p2p_flag;   /* MAP_SHARED: rank 0 -> rank 1 "done, leave" */
static void r_zero_send(struct rank_ctx *c) {
  ncclComm_t comm;
  NCCLOK(ncclCommInitRank(&comm, c->nranks, c->id, c->rank));
  cudaStream_t st;
  CUDAOK(cudaStreamCreate(&st));
  float *d;
  CUDAOK(cudaMalloc((void **)&d, 64));
  if (c->rank == 0) {
    /* matched: a 0-byte Send and Recv pair completes */
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclSend(d, 0, ncclFloat, 1, comm, st));
    NCCLOK(ncclRecv(d, 0, ncclFloat, 1, comm, st));
    NCCLOK(ncclGroupEnd());
    CUDAOK(cudaStreamSynchronize(st));
    /* unmatched: rank 1 posts no Recv; the stream stays busy (bounded wait), then abort */
    NCCLOK(ncclSend(NULL, 0, ncclFloat, 1, comm, st));
    usleep(300000);
    cudaError_t q = cudaStreamQuery(st);
    CHECK(q == cudaErrorNotReady, "0-byte Send without a Recv completed (query %d)", (int)q);
    NCCLOK(ncclCommAbort(comm));
    CUDAOK(cudaStreamSynchronize(st));
    *p2p_flag = 1;
  } else {
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclRecv(d, 0, ncclFloat, 0, comm, st));
    NCCLOK(ncclSend(d, 0, ncclFloat, 0, comm, st));
    NCCLOK(ncclGroupEnd());
    CUDAOK(cudaStreamSynchronize(st));
    while (!*p2p_flag) usleep(1000);
    NCCLOK(ncclCommAbort(comm));
  }
}

static int step(const char *what, int rc) {
  printf("%s: %s\n", what, rc ? "FAIL" : "ok");
  return rc != 0;
}

int main(void) {
  int bad = 0;
  /* rank r on device 3-r of one host: NCCL's ring 0 3 2 1 */
  static const struct mapping rev1 = {"one host, rank r on device 3-r", 4, {"hostA", "hostA", "hostA", "hostA"},
                                      {3, 2, 1, 0}, 0, "0 3 2 1"};
  /* two hosts, devices reversed on each: hostA = ranks 0 (dev 1), 2 (dev 0); hostB = ranks 1
   * (dev 1), 3 (dev 0). Hosts stay in lowest-rank order; inside each, bus order: A 2 0, B 3 1;
   * joined 2 0 3 1, read from rank 0: 0 3 1 2 */
  static const struct mapping rev2 = {"two hosts, devices reversed", 4, {"hostA", "hostB", "hostA", "hostB"},
                                      {1, 1, 0, 0}, 0, "0 3 1 2"};
  /* devices in rank order, split with key n-1-rank: child rank r is on device 3-r */
  static const struct mapping split = {"split reversing the ranks", 4, {"hostA", "hostA", "hostA", "hostA"},
                                       {0, 1, 2, 3}, 1, "0 3 2 1"};
  bad += test_ring(&rev1);
  bad += test_ring(&rev2);
  bad += test_ring(&split);

  bad += step("ncclCommInitRank failures and *newcomm", run_ranks(1, NULL, 1, test_init_errors, NULL, NULL, 30));
  bad += step("ncclConfig_t validation", run_ranks(1, NULL, 1, test_config, NULL, NULL, 30));
  bad += step("ncclCommFinalize NULL / twice", run_ranks(1, NULL, 1, test_finalize, NULL, NULL, 30));
  bad += step("NULL buffer, default: accepted, asynchronous fault", run_ranks(1, NULL, 1, r_null_default, NULL, NULL, 30));
  fault_flag = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  bad += step("NULL buffer on one rank: its peer waits until the abort", run_ranks(2, NULL, 1, r_null_peer, NULL, NULL, 30));
  static const char *const chk[] = {"NCCL_CHECK_POINTERS=1", NULL};
  bad += step("NULL buffer, NCCL_CHECK_POINTERS=1: checked at the call", run_ranks(1, NULL, 1, r_null_checked, NULL, chk, 30));
  p2p_flag = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  bad += step("0-count Send needs its Recv", run_ranks(2, NULL, 1, r_zero_send, NULL, NULL, 30));
  printf("%s\n", bad ? "FAILED" : "ALL OK");
  return bad ? 1 : 0;
}
