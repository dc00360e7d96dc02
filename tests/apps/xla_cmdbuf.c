/* tests/apps/xla_cmdbuf.c: XLA's GPU runtime as NCCL and CUDA see it: grouped collectives
 * traced into command buffers (CUDA graphs) through the driver API and launched with
 * cuGraphLaunch every execution.
 *
 * Call patterns from openxla/xla (functions named; cuda_command_buffer.cc as stored at commit
 * a3610678a47f):
 * - the driver API is reached through a stub that opens libcuda.so.1 and looks each symbol up
 *   in it (tsl/cuda: CachedDsoLoader::GetCudaDriverDsoHandle, then a symbol look-up per
 *   function), so a call resolves inside the driver library, not through the program's own
 *   dynamic symbols. The replica does the same: dlopen("libcuda.so.1") and dlsym per function.
 * - collectives in a command buffer are recorded by tracing
 *   (xla/backends/gpu/runtime/command_buffer_cmd.cc: a collective command's Record runs the
 *   collective under RecordTracedCommand, se::TraceCommandBufferFactory): the stream is put
 *   into capture mode, the collective launched on it, the capture ended
 *   (xla/stream_executor/cuda/cuda_command_buffer.cc CudaCommandBuffer::Trace:
 *   cuStreamBeginCaptureToGraph(..., CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), cuStreamEndCapture).
 *   The simulator has no cuStreamBeginCaptureToGraph, so the replica captures with
 *   cuStreamBeginCapture into a graph of its own; --capture-mode picks the mode (default
 *   thread_local, as Trace).
 * - grouped collectives (xla/backends/gpu/runtime/collective_group_thunk.cc: the group's
 *   collectives between the communicator's GroupStart and GroupEnd, i.e. ncclGroupStart and
 *   ncclGroupEnd): here an AllReduce, an AllGather and a ReduceScatter of one group in one
 *   command buffer on the world, two AllReduce in one group in another on a replica group.
 * - the finalized command buffer is instantiated (cuGraphInstantiateWithFlags) and launched
 *   once per execution (command_buffer_thunk.cc ExecuteOnStream -> CommandBuffer::Submit ->
 *   CudaCommandBuffer::LaunchGraph: cuGraphLaunch(exec_, stream)).
 * - a collective-permute outside command buffers (collective_permute_thunk.cc: ncclGroupStart,
 *   ncclSend to the target, ncclRecv from the source, ncclGroupEnd), eager, on a communicator
 *   of its own: the simulator does not order captured and eager work of one communicator.
 *
 * Replica groups of --tp ranks are split from the world (ncclCommSplit). Every result is
 * checked exactly (small integers in fp32); each communicator has message sizes of its own. */
#include <dlfcn.h>
#include <string.h>

#include <cuda.h>

#include "calls.h"
#include "common.h"

static const char usage[] =
    "usage: xla_cmdbuf [--steps N] [--size BYTES] [--tp GROUP] [--compute-us N]\n"
    "                  [--capture-mode global|thread_local|relaxed] [-v]\n"
    "  XLA-style command buffers: grouped collectives traced into CUDA graphs with the driver\n"
    "  API (libcuda.so.1 opened and looked up like XLA's stub) and launched with cuGraphLaunch\n"
    "  every step, plus an eager collective-permute. BYTES (default 1M) per AllReduce.\n";

static struct app A;
static CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;

static struct {
  CUresult (*begin)(CUstream, CUstreamCaptureMode);
  CUresult (*end)(CUstream, CUgraph *);
  CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*launch)(CUgraphExec, CUstream);
  CUresult (*exec_destroy)(CUgraphExec);
  CUresult (*destroy)(CUgraph);
} drv;

#define CUCHECK(call) \
  do { \
    CUresult c_ = (call); \
    if (c_ != CUDA_SUCCESS) { \
      char why_[32]; \
      snprintf(why_, sizeof why_, "CUresult %d", (int)c_); \
      app_die(__FILE__, __LINE__, #call, why_); \
    } \
  } while (0)

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) app_die(__FILE__, __LINE__, name, "not in libcuda.so.1");
  return p;
}

static void load_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) app_die(__FILE__, __LINE__, "dlopen(libcuda.so.1)", dlerror());
  /* cuda.h's cuStreamBeginCapture is the _v2 entry point */
  *(void **)&drv.begin = sym(h, "cuStreamBeginCapture_v2");
  *(void **)&drv.end = sym(h, "cuStreamEndCapture");
  *(void **)&drv.instantiate = sym(h, "cuGraphInstantiateWithFlags");
  *(void **)&drv.launch = sym(h, "cuGraphLaunch");
  *(void **)&drv.exec_destroy = sym(h, "cuGraphExecDestroy");
  *(void **)&drv.destroy = sym(h, "cuGraphDestroy");
}

static int take_own_options(int argc, char **argv) {
  int out = 1;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(argv[i], "--capture-mode")) {
      capture_mode = (CUstreamCaptureMode)calls_capture_mode("xla_cmdbuf", v);
      i++;
    } else {
      argv[out++] = argv[i];
    }
  }
  argv[out] = NULL;
  return out;
}

struct dbuf { /* device input and output, pinned host staging */
  float *in, *out, *h;
  size_t nin, nout;
};

static void dbuf_alloc(struct dbuf *b, size_t nin, size_t nout) {
  b->nin = nin;
  b->nout = nout;
  size_t nh = nin > nout ? nin : nout;
  CUDACHECK(cudaMalloc((void **)&b->in, nin * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&b->out, nout * sizeof(float)));
  CUDACHECK(cudaMallocHost((void **)&b->h, nh * sizeof(float)));
}

static void dbuf_free(struct dbuf *b) {
  CUDACHECK(cudaFree(b->in));
  CUDACHECK(cudaFree(b->out));
  CUDACHECK(cudaFreeHost(b->h));
}

static float f(int step, int tag, size_t i) { return (float)((i + (size_t)step + (size_t)tag) % 7 + 1); }

static void upload(struct dbuf *b, cudaStream_t s) {
  CUDACHECK(cudaMemcpyAsync(b->in, b->h, b->nin * sizeof(float), cudaMemcpyHostToDevice, s));
}

static void download(struct dbuf *b, cudaStream_t s) {
  CUDACHECK(cudaMemcpyAsync(b->h, b->out, b->nout * sizeof(float), cudaMemcpyDeviceToHost, s));
}

static void check(struct dbuf *b, size_t i, double want, const char *what) {
  if (b->h[i] != want) app_mismatch(&A, what, i, b->h[i], want);
}

static void CUDART_CB compute(void *p) { app_sleep_us(*(long *)p); }

int main(int argc, char **argv) {
  argc = take_own_options(argc, argv);
  app_init(&A, "xla_cmdbuf", argc, argv, usage);
  load_driver();
  int W = A.world, G = A.tp, r = A.rank;
  if (G < 1 || W % G != 0) {
    fprintf(stderr, "xla_cmdbuf: --tp %d does not divide world %d\n", G, W);
    return 2;
  }
  size_t E = A.size / sizeof(float) > 64 ? A.size / sizeof(float) : 64;
  size_t ag = E / 4 + 8, rs = E / 4 + 16, pm = E / 2 + 4;

  ncclComm_t world = app_world_comm(&A), grp, perm;
  NCCLCHECK(ncclCommSplit(world, r / G, r, &grp, NULL));
  NCCLCHECK(ncclCommSplit(world, 0, r, &perm, NULL));
  struct calls_comm cw, cg, cp;
  calls_init(&cw, "world", 0, world);
  calls_init(&cg, "replica_group", r / G, grp);
  calls_init(&cp, "permute", 0, perm);

  cudaStream_t s;
  CUDACHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct dbuf ar, agb, rsb, g0, g1, ps;
  dbuf_alloc(&ar, E, E);
  dbuf_alloc(&agb, ag, ag * (size_t)W);
  dbuf_alloc(&rsb, rs * (size_t)W, rs);
  dbuf_alloc(&g0, E + 32, E + 32);
  dbuf_alloc(&g1, E + 40, E + 40);
  dbuf_alloc(&ps, pm, pm);

  /* command buffer 1: the world's grouped AllReduce, AllGather, ReduceScatter, traced */
  struct calls_graph gw = {0}, gg = {0};
  CUgraph graph_w, graph_g;
  CUgraphExec exec_w, exec_g;
  CUCHECK(drv.begin((CUstream)s, capture_mode));
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(ar.in, ar.out, E, ncclFloat32, ncclSum, world, s));
  calls_capture(&gw, &cw, "AllReduce", E * sizeof(float), 3);
  NCCLCHECK(ncclAllGather(agb.in, agb.out, ag, ncclFloat32, world, s));
  calls_capture(&gw, &cw, "AllGather", ag * sizeof(float) * (size_t)W, 3);
  NCCLCHECK(ncclReduceScatter(rsb.in, rsb.out, rs, ncclFloat32, ncclSum, world, s));
  calls_capture(&gw, &cw, "ReduceScatter", rs * sizeof(float) * (size_t)W, 3);
  NCCLCHECK(ncclGroupEnd());
  CUCHECK(drv.end((CUstream)s, &graph_w));
  CUCHECK(drv.instantiate(&exec_w, graph_w, 0));

  /* command buffer 2: a replica group's two grouped AllReduce */
  CUCHECK(drv.begin((CUstream)s, capture_mode));
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(g0.in, g0.out, g0.nin, ncclFloat32, ncclSum, grp, s));
  calls_capture(&gg, &cg, "AllReduce", g0.nin * sizeof(float), 2);
  NCCLCHECK(ncclAllReduce(g1.in, g1.out, g1.nin, ncclFloat32, ncclSum, grp, s));
  calls_capture(&gg, &cg, "AllReduce", g1.nin * sizeof(float), 2);
  NCCLCHECK(ncclGroupEnd());
  CUCHECK(drv.end((CUstream)s, &graph_g));
  CUCHECK(drv.instantiate(&exec_g, graph_g, 0));

  long us = A.compute_us;
  uint64_t h = APP_FNV_INIT;
  int next = (r + 1) % W, prev = (r + W - 1) % W, gr = cg.crank, gn = cg.size;
  for (int step = 0; step < A.steps; step++) {
    if (us > 0) CUDACHECK(cudaLaunchHostFunc(s, compute, &us));
    for (size_t i = 0; i < E; i++) ar.h[i] = (float)(r + 1) * f(step, 0, i);
    for (size_t i = 0; i < ag; i++) agb.h[i] = (float)((r + 1) * 100) + (float)((i + (size_t)step) % 7);
    for (size_t i = 0; i < rsb.nin; i++) rsb.h[i] = (float)(r + 1) * f(step, 1, i);
    for (size_t i = 0; i < g0.nin; i++) g0.h[i] = (float)(gr + 1) * f(step, 2, i);
    for (size_t i = 0; i < g1.nin; i++) g1.h[i] = (float)(gr + 1) * f(step, 3, i);
    for (size_t i = 0; i < pm; i++) ps.h[i] = (float)(r * 10 + step) + (float)(i % 4);
    struct dbuf *all[] = {&ar, &agb, &rsb, &g0, &g1, &ps};
    for (int k = 0; k < 6; k++) upload(all[k], s);

    /* the executable's thunks: two command buffers, then the collective-permute */
    CUCHECK(drv.launch(exec_w, (CUstream)s));
    calls_replay(&gw);
    CUCHECK(drv.launch(exec_g, (CUstream)s));
    calls_replay(&gg);
    NCCLCHECK(ncclGroupStart());
    NCCLCHECK(ncclSend(ps.in, pm, ncclFloat32, next, perm, s));
    NCCLCHECK(ncclRecv(ps.out, pm, ncclFloat32, prev, perm, s));
    NCCLCHECK(ncclGroupEnd());
    calls_add(&cp, "Send", pm * sizeof(float), CALLS_GROUP, 2);
    calls_add(&cp, "Recv", pm * sizeof(float), CALLS_GROUP, 2);

    for (int k = 0; k < 6; k++) download(all[k], s);
    CUDACHECK(cudaStreamSynchronize(s));
    double tw = (double)W * (W + 1) / 2.0, tg = (double)gn * (gn + 1) / 2.0;
    for (size_t i = 0; i < E; i++) check(&ar, i, tw * f(step, 0, i), "world.allreduce");
    for (int p = 0; p < W; p++)
      for (size_t i = 0; i < ag; i++)
        check(&agb, (size_t)p * ag + i, (double)((p + 1) * 100) + (double)((i + (size_t)step) % 7), "world.allgather");
    for (size_t i = 0; i < rs; i++) check(&rsb, i, tw * f(step, 1, (size_t)r * rs + i), "world.reducescatter");
    for (size_t i = 0; i < g0.nout; i++) check(&g0, i, tg * f(step, 2, i), "replica_group.allreduce0");
    for (size_t i = 0; i < g1.nout; i++) check(&g1, i, tg * f(step, 3, i), "replica_group.allreduce1");
    for (size_t i = 0; i < pm; i++) check(&ps, i, (double)(prev * 10 + step) + (double)(i % 4), "permute");
    for (int k = 0; k < 6; k++) h = app_fnv(h, all[k]->h, all[k]->nout * sizeof(float));
    if (A.verbose && r == 0) printf("xla_cmdbuf: step %d ok\n", step);
  }

  int rc = app_finish(&A);
  calls_print("xla_cmdbuf", r, &cw);
  calls_print("xla_cmdbuf", r, &cg);
  calls_print("xla_cmdbuf", r, &cp);
  if (rc == 0) printf("result xla_cmdbuf rank=%d checksum=%016llx\n", r, (unsigned long long)h);
  if (rc == 0 && r == 0) printf("summary xla_cmdbuf world=%d group=%d steps=%d PASS\n", W, G, A.steps);

  CUCHECK(drv.exec_destroy(exec_w));
  CUCHECK(drv.exec_destroy(exec_g));
  CUCHECK(drv.destroy(graph_w));
  CUCHECK(drv.destroy(graph_g));
  struct dbuf *all[] = {&ar, &agb, &rsb, &g0, &g1, &ps};
  for (int k = 0; k < 6; k++) dbuf_free(all[k]);
  CUDACHECK(cudaStreamDestroy(s));
  NCCLCHECK(ncclCommDestroy(perm));
  NCCLCHECK(ncclCommDestroy(grp));
  NCCLCHECK(ncclCommDestroy(world));
  return rc;
}
