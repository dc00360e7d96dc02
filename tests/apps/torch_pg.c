/* tests/apps/torch_pg.c: PyTorch's ProcessGroupNCCL as NCCL and CUDA see it, in plain C.
 *
 * Each call pattern below is the one of PyTorch's source (pytorch/pytorch; the versions read:
 * torch/csrc/distributed/c10d/NCCLUtils.cpp at 0323141fed06, aten/src/ATen/cuda/CUDAGraph.cpp
 * at 00cbb1f84c40, torch/cuda/graphs.py at 006be72d443c; in ProcessGroupNCCL.cpp and
 * torch/csrc/cuda/nccl.cpp, whose lines move from release to release, the function is named):
 * - eager init: a process group given its device creates its communicator at once
 *   (ProcessGroupNCCL::eagerConnectSingleDevice -> initNCCLComm), with the group's ncclConfig_t:
 *   ncclCommInitRankConfig.
 * - non-blocking communicators: TORCH_NCCL_USE_COMM_NONBLOCKING=1 (NCCLUtils.cpp:150-152
 *   nccl_use_nonblocking; ProcessGroupNCCL::useNonblocking, which also honours
 *   options.config.blocking) sets blocking = 0, and the communicator is polled with
 *   ncclCommGetAsyncError until it reports success (NCCLUtils.cpp:46-68
 *   NCCLComm::waitUntilInitialized, the call at :51). --nonblocking 0 is PyTorch's default.
 * - sub-groups (new_group, DeviceMesh) split from the default group's communicator
 *   (NCCLUtils.cpp:74-89 NCCLComm::split: ncclCommSplit with the group's config at :82), here a
 *   2-D mesh of --tp columns: one communicator per row and one per column. On a non-blocking
 *   parent the split's outcome is polled on the parent, then the child until it is ready.
 * - coalesced collectives (ProcessGroupNCCL::startCoalescing / endCoalescing,
 *   allreduce_coalesced): ncclGroupStart, several ncclAllReduce, ncclGroupEnd.
 * - all_to_all_single with equal splits (torch/csrc/cuda/nccl.cpp at e6f159a3f649,
 *   all2all_single_equal_split: the ncclCommCount, ncclGroupStart, per-peer loop, ncclGroupEnd):
 *   ncclGroupStart, a ncclSend and a ncclRecv of count/size elements per peer (itself too),
 *   ncclGroupEnd. (Builds with NCCL_ALLTOALL_SUPPORTED call ncclAllToAll instead.)
 * - batch_isend_irecv (its P2P ops coalesced: startCoalescing, send/recv, endCoalescing):
 *   one group of Send/Recv with both ring neighbours.
 * - stream order: each collective runs on the group's own NCCL stream, which first waits on an
 *   event recorded on the current (compute) stream (ProcessGroupNCCL's syncStream:
 *   cudaEventRecord on the current stream, cudaStreamWaitEvent on the NCCL stream); the caller
 *   later waits on the work's end event (WorkNCCL::synchronizeStream).
 * - torch.cuda.graph: CUDAGraph::capture_begin (CUDAGraph.cpp:94) calls cudaStreamBeginCapture
 *   with the requested mode on a side stream (CUDAGraph.cpp:135; graphs.py's
 *   CUDAGraph.capture_begin defaults capture_error_mode to "global", Megatron passes
 *   "thread_local"); the collectives join the capture through syncStream's event; capture_end
 *   ends it and instantiates (CUDAGraph::instantiate: cudaGraphInstantiateWithFlags with
 *   AutoFreeOnLaunch); every step replays it (CUDAGraph::replay: cudaGraphLaunch on the current
 *   stream). The graph's collectives use a communicator of their own (a new_group of every
 *   rank): the simulator does not order captured and eager work of one communicator.
 *
 * Per step: world: coalesced AllReduce x3, all_to_all_single, batch_isend_irecv; row and
 * column AllReduce; one replay of the captured graph (a coalesced pair of AllReduce and one
 * lone AllReduce on the graph group). Every result is checked exactly (small integers in fp32);
 * each communicator's calls are printed (calls.h) and a checksum line per rank. Each
 * communicator uses message sizes of its own, so a reader can tell them apart by size. */
#include <sched.h>
#include <string.h>
#include <time.h>

#include "calls.h"
#include "common.h"

static const char usage[] =
    "usage: torch_pg [--steps N] [--size BYTES] [--tp COLS] [--compute-us N]\n"
    "                [--capture-mode global|thread_local|relaxed] [--nonblocking 0|1] [-v]\n"
    "  ProcessGroupNCCL's NCCL and CUDA calls: eager init with a config (non-blocking by\n"
    "  default, as TORCH_NCCL_USE_COMM_NONBLOCKING=1), a 2-D mesh of split communicators,\n"
    "  coalesced AllReduce, all_to_all_single, batch_isend_irecv, and a torch.cuda.graph of\n"
    "  collectives replayed every step. BYTES (default 1M) of fp32 per AllReduce.\n";

struct pg { /* one process group: its communicator, NCCL stream and sync events */
  ncclComm_t comm;
  cudaStream_t s;
  cudaEvent_t pre, post;
  struct calls_comm calls;
};

struct buf { /* one tensor: device input and output, pinned host staging */
  float *in, *out, *h;
  size_t n;
};

static struct app A;
static int nonblocking = 1;
static enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

/* --capture-mode and --nonblocking are this app's; the rest go to app_init */
static int take_own_options(int argc, char **argv) {
  int out = 1;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(argv[i], "--capture-mode")) {
      capture_mode = (enum cudaStreamCaptureMode)calls_capture_mode("torch_pg", v);
      i++;
    } else if (!strcmp(argv[i], "--nonblocking")) {
      if (strcmp(v, "0") && strcmp(v, "1")) {
        fprintf(stderr, "torch_pg: --nonblocking: expected 0 or 1, got '%s'\n", v);
        exit(2);
      }
      nonblocking = v[0] == '1';
      i++;
    } else {
      argv[out++] = argv[i];
    }
  }
  argv[out] = NULL;
  return out;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* NCCLComm::waitReady: poll the communicator's async error until it is not in progress */
static void wait_ready(ncclComm_t comm, const char *what) {
  double t0 = now_s();
  for (;;) {
    ncclResult_t st = ncclInProgress;
    NCCLCHECK(ncclCommGetAsyncError(comm, &st));
    if (st == ncclSuccess) return;
    if (st != ncclInProgress) app_die(__FILE__, __LINE__, what, ncclGetErrorString(st));
    if (now_s() - t0 > 120) app_die(__FILE__, __LINE__, what, "still in progress after 120 s");
    sched_yield();
  }
}

static void pg_streams(struct pg *g) {
  CUDACHECK(cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking));
  CUDACHECK(cudaEventCreateWithFlags(&g->pre, cudaEventDisableTiming));
  CUDACHECK(cudaEventCreateWithFlags(&g->post, cudaEventDisableTiming));
}

static void pg_init_world(struct pg *g, ncclUniqueId id) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = nonblocking ? 0 : 1;
  cfg.commName = "torch_pg.default_pg";
  ncclResult_t r = ncclCommInitRankConfig(&g->comm, A.world, id, A.rank, &cfg);
  if (r != ncclSuccess && r != ncclInProgress)
    app_die(__FILE__, __LINE__, "ncclCommInitRankConfig", ncclGetErrorString(r));
  if (nonblocking) wait_ready(g->comm, "ncclCommInitRankConfig");
  pg_streams(g);
  calls_init(&g->calls, "default_pg", 0, g->comm);
}

static void pg_split(struct pg *g, struct pg *parent, const char *name, int color, int key) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = nonblocking ? 0 : 1;
  cfg.commName = name;
  g->comm = NULL;
  ncclResult_t r = ncclCommSplit(parent->comm, color, key, &g->comm, &cfg);
  if (r == ncclInProgress)
    wait_ready(parent->comm, "ncclCommSplit (parent)");
  else if (r != ncclSuccess)
    app_die(__FILE__, __LINE__, "ncclCommSplit", ncclGetErrorString(r));
  if (!g->comm) app_die(__FILE__, __LINE__, "ncclCommSplit", "no communicator");
  if (nonblocking) wait_ready(g->comm, "ncclCommSplit (child)");
  pg_streams(g);
  calls_init(&g->calls, name, color, g->comm);
}

/* syncStream: the NCCL stream waits for the work already on the current stream */
static void pre(struct pg *g, cudaStream_t cur) {
  CUDACHECK(cudaEventRecord(g->pre, cur));
  CUDACHECK(cudaStreamWaitEvent(g->s, g->pre, 0));
}

/* work.wait(): the current stream waits for the collective's end */
static void post(struct pg *g, cudaStream_t cur) {
  CUDACHECK(cudaEventRecord(g->post, g->s));
  CUDACHECK(cudaStreamWaitEvent(cur, g->post, 0));
}

static void buf_alloc(struct buf *b, size_t n) {
  b->n = n;
  CUDACHECK(cudaMalloc((void **)&b->in, n * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&b->out, n * sizeof(float)));
  CUDACHECK(cudaMallocHost((void **)&b->h, n * sizeof(float)));
}

static void buf_free(struct buf *b) {
  CUDACHECK(cudaFree(b->in));
  CUDACHECK(cudaFree(b->out));
  CUDACHECK(cudaFreeHost(b->h));
}

/* an AllReduce input: comm rank c contributes (c + 1) x f(i); the sum is n(n+1)/2 x f(i) */
static float ar_f(int step, int tag, size_t i) { return (float)((i + (size_t)step + (size_t)tag) % 7 + 1); }

static void ar_upload(struct buf *b, int crank, int step, int tag, cudaStream_t s) {
  for (size_t i = 0; i < b->n; i++) b->h[i] = (float)(crank + 1) * ar_f(step, tag, i);
  CUDACHECK(cudaMemcpyAsync(b->in, b->h, b->n * sizeof(float), cudaMemcpyHostToDevice, s));
}

static void download(struct buf *b, cudaStream_t s) {
  CUDACHECK(cudaMemcpyAsync(b->h, b->out, b->n * sizeof(float), cudaMemcpyDeviceToHost, s));
}

static void ar_check(struct buf *b, int n, int step, int tag, const char *what, uint64_t *h) {
  double tri = (double)n * (n + 1) / 2.0;
  for (size_t i = 0; i < b->n; i++) {
    double want = tri * ar_f(step, tag, i);
    if (b->h[i] != want) app_mismatch(&A, what, i, b->h[i], want);
  }
  *h = app_fnv(*h, b->h, b->n * sizeof(float));
}

static void allreduce(struct pg *g, struct buf *b, enum calls_kind kind, int group_ops) {
  NCCLCHECK(ncclAllReduce(b->in, b->out, b->n, ncclFloat32, ncclSum, g->comm, g->s));
  calls_add(&g->calls, "AllReduce", b->n * sizeof(float), kind, group_ops);
}

static void CUDART_CB compute(void *p) { app_sleep_us(*(long *)p); }

int main(int argc, char **argv) {
  argc = take_own_options(argc, argv);
  app_init(&A, "torch_pg", argc, argv, usage);
  int W = A.world, C = A.tp, r = A.rank;
  if (C < 1 || W % C != 0) {
    fprintf(stderr, "torch_pg: --tp %d does not divide world %d\n", C, W);
    return 2;
  }
  size_t E = A.size / sizeof(float) > 64 ? A.size / sizeof(float) : 64;
  size_t a2a = E / (size_t)W ? E / (size_t)W : 1, nb = E / 2 + 4;

  ncclUniqueId id;
  app_share_ids(&A, &id, 1);
  struct pg world, row, col, gpg;
  pg_init_world(&world, id);
  pg_split(&row, &world, "row", r / C, r);
  pg_split(&col, &world, "col", r % C, r);
  pg_split(&gpg, &world, "graph_pg", 0, r);

  cudaStream_t cur, side;
  CUDACHECK(cudaStreamCreateWithFlags(&cur, cudaStreamNonBlocking));
  CUDACHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));

  struct buf war[3], rowb, colb, gb[3], a2s, a2r, nbuf[4];
  for (int k = 0; k < 3; k++) buf_alloc(&war[k], E - (size_t)k * 64);
  buf_alloc(&rowb, E + 8);
  buf_alloc(&colb, E + 16);
  for (int k = 0; k < 3; k++) buf_alloc(&gb[k], E + 24 + (size_t)k * 8);
  buf_alloc(&a2s, a2a * (size_t)W);
  buf_alloc(&a2r, a2a * (size_t)W);
  for (int k = 0; k < 4; k++) buf_alloc(&nbuf[k], nb);

  /* torch.cuda.graph(g, capture_error_mode=...): capture on a side stream, the graph group's
   * collectives joined through syncStream's event, the side stream waiting on their end */
  struct calls_graph cg = {0};
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDACHECK(cudaStreamBeginCapture(side, capture_mode));
  pre(&gpg, side);
  NCCLCHECK(ncclGroupStart());
  for (int k = 0; k < 2; k++) {
    NCCLCHECK(ncclAllReduce(gb[k].in, gb[k].out, gb[k].n, ncclFloat32, ncclSum, gpg.comm, gpg.s));
    calls_capture(&cg, &gpg.calls, "AllReduce", gb[k].n * sizeof(float), 2);
  }
  NCCLCHECK(ncclGroupEnd());
  NCCLCHECK(ncclAllReduce(gb[2].in, gb[2].out, gb[2].n, ncclFloat32, ncclSum, gpg.comm, gpg.s));
  calls_capture(&cg, &gpg.calls, "AllReduce", gb[2].n * sizeof(float), 1);
  post(&gpg, side);
  CUDACHECK(cudaStreamEndCapture(side, &graph));
  CUDACHECK(cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));

  long us = A.compute_us;
  uint64_t h = APP_FNV_INIT;
  int next = (r + 1) % W, prev = (r + W - 1) % W;
  for (int step = 0; step < A.steps; step++) {
    uint64_t hs = APP_FNV_INIT;
    if (us > 0) CUDACHECK(cudaLaunchHostFunc(cur, compute, &us));
    for (int k = 0; k < 3; k++) ar_upload(&war[k], r, step, k, cur);
    ar_upload(&rowb, row.calls.crank, step, 3, cur);
    ar_upload(&colb, col.calls.crank, step, 4, cur);
    for (int k = 0; k < 3; k++) ar_upload(&gb[k], r, step, 5 + k, cur);
    for (int p = 0; p < W; p++)
      for (size_t i = 0; i < a2a; i++) a2s.h[(size_t)p * a2a + i] = (float)(r * W + p) + (float)(i % 3);
    CUDACHECK(cudaMemcpyAsync(a2s.in, a2s.h, a2s.n * sizeof(float), cudaMemcpyHostToDevice, cur));
    for (size_t i = 0; i < nb; i++) {
      nbuf[0].h[i] = (float)(1000 + r * 10) + (float)(i % 4); /* to next */
      nbuf[1].h[i] = (float)(2000 + r * 10) + (float)(i % 4); /* to prev */
    }
    CUDACHECK(cudaMemcpyAsync(nbuf[0].in, nbuf[0].h, nb * sizeof(float), cudaMemcpyHostToDevice, cur));
    CUDACHECK(cudaMemcpyAsync(nbuf[1].in, nbuf[1].h, nb * sizeof(float), cudaMemcpyHostToDevice, cur));

    /* allreduce_coalesced on the default group */
    pre(&world, cur);
    NCCLCHECK(ncclGroupStart());
    for (int k = 0; k < 3; k++) allreduce(&world, &war[k], CALLS_GROUP, 3);
    NCCLCHECK(ncclGroupEnd());
    post(&world, cur);

    /* all_to_all_single, equal splits */
    pre(&world, cur);
    NCCLCHECK(ncclGroupStart());
    for (int p = 0; p < W; p++) {
      NCCLCHECK(ncclSend(a2s.in + (size_t)p * a2a, a2a, ncclFloat32, p, world.comm, world.s));
      NCCLCHECK(ncclRecv(a2r.out + (size_t)p * a2a, a2a, ncclFloat32, p, world.comm, world.s));
      calls_add(&world.calls, "Send", a2a * sizeof(float), CALLS_GROUP, 2 * W);
      calls_add(&world.calls, "Recv", a2a * sizeof(float), CALLS_GROUP, 2 * W);
    }
    NCCLCHECK(ncclGroupEnd());
    post(&world, cur);

    /* batch_isend_irecv with both ring neighbours */
    pre(&world, cur);
    NCCLCHECK(ncclGroupStart());
    NCCLCHECK(ncclSend(nbuf[0].in, nb, ncclFloat32, next, world.comm, world.s));
    NCCLCHECK(ncclRecv(nbuf[2].out, nb, ncclFloat32, prev, world.comm, world.s));
    NCCLCHECK(ncclSend(nbuf[1].in, nb, ncclFloat32, prev, world.comm, world.s));
    NCCLCHECK(ncclRecv(nbuf[3].out, nb, ncclFloat32, next, world.comm, world.s));
    NCCLCHECK(ncclGroupEnd());
    for (int k = 0; k < 2; k++) {
      calls_add(&world.calls, "Send", nb * sizeof(float), CALLS_GROUP, 4);
      calls_add(&world.calls, "Recv", nb * sizeof(float), CALLS_GROUP, 4);
    }
    post(&world, cur);

    /* the mesh's row and column groups */
    pre(&row, cur);
    allreduce(&row, &rowb, CALLS_EAGER, 1);
    post(&row, cur);
    pre(&col, cur);
    allreduce(&col, &colb, CALLS_EAGER, 1);
    post(&col, cur);

    /* CUDAGraph::replay */
    CUDACHECK(cudaGraphLaunch(exec, cur));
    calls_replay(&cg);

    for (int k = 0; k < 3; k++) download(&war[k], cur);
    download(&rowb, cur);
    download(&colb, cur);
    for (int k = 0; k < 3; k++) download(&gb[k], cur);
    download(&a2r, cur);
    download(&nbuf[2], cur);
    download(&nbuf[3], cur);
    CUDACHECK(cudaStreamSynchronize(cur));

    for (int k = 0; k < 3; k++) ar_check(&war[k], W, step, k, "default_pg.allreduce_coalesced", &hs);
    ar_check(&rowb, row.calls.size, step, 3, "row.allreduce", &hs);
    ar_check(&colb, col.calls.size, step, 4, "col.allreduce", &hs);
    for (int k = 0; k < 3; k++) ar_check(&gb[k], W, step, 5 + k, "graph.allreduce", &hs);
    for (int p = 0; p < W; p++)
      for (size_t i = 0; i < a2a; i++) {
        float want = (float)(p * W + r) + (float)(i % 3), got = a2r.h[(size_t)p * a2a + i];
        if (got != want) app_mismatch(&A, "all_to_all_single", (size_t)p * a2a + i, got, want);
      }
    for (size_t i = 0; i < nb; i++) {
      float from_prev = (float)(1000 + prev * 10) + (float)(i % 4), from_next = (float)(2000 + next * 10) + (float)(i % 4);
      if (nbuf[2].h[i] != from_prev) app_mismatch(&A, "batch_isend_irecv.prev", i, nbuf[2].h[i], from_prev);
      if (nbuf[3].h[i] != from_next) app_mismatch(&A, "batch_isend_irecv.next", i, nbuf[3].h[i], from_next);
    }
    hs = app_fnv(hs, a2r.h, a2r.n * sizeof(float));
    hs = app_fnv(hs, nbuf[2].h, nb * sizeof(float));
    hs = app_fnv(hs, nbuf[3].h, nb * sizeof(float));
    h = app_fnv(h, &hs, sizeof hs);
    if (A.verbose && r == 0) printf("torch_pg: step %d ok\n", step);
  }

  int rc = app_finish(&A);
  calls_print("torch_pg", r, &world.calls);
  calls_print("torch_pg", r, &row.calls);
  calls_print("torch_pg", r, &col.calls);
  calls_print("torch_pg", r, &gpg.calls);
  if (rc == 0) printf("result torch_pg rank=%d checksum=%016llx\n", r, (unsigned long long)h);
  if (rc == 0 && r == 0)
    printf("summary torch_pg world=%d mesh=%dx%d steps=%d nonblocking=%d PASS\n", W, W / C, C, A.steps, nonblocking);

  CUDACHECK(cudaGraphExecDestroy(exec));
  CUDACHECK(cudaGraphDestroy(graph));
  for (int k = 0; k < 3; k++) buf_free(&war[k]);
  buf_free(&rowb);
  buf_free(&colb);
  for (int k = 0; k < 3; k++) buf_free(&gb[k]);
  buf_free(&a2s);
  buf_free(&a2r);
  for (int k = 0; k < 4; k++) buf_free(&nbuf[k]);
  struct pg *all[] = {&gpg, &col, &row, &world};
  for (int k = 0; k < 4; k++) {
    NCCLCHECK(ncclCommDestroy(all[k]->comm));
    CUDACHECK(cudaStreamDestroy(all[k]->s));
    CUDACHECK(cudaEventDestroy(all[k]->pre));
    CUDACHECK(cudaEventDestroy(all[k]->post));
  }
  CUDACHECK(cudaStreamDestroy(cur));
  CUDACHECK(cudaStreamDestroy(side));
  return rc;
}
