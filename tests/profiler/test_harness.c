/* tests/profiler/test_harness.c: drives collscope's profiler plugin callbacks the way NCCL
 * 2.27 (v4) and 2.28 (v5) do, against the shim core (linked statically), and checks what
 * lands in the records:
 *  - ungrouped collective: Coll start inside the call (cs_prof_cur), stop at enqueue,
 *    KernelCh start/KernelChStop/stop per channel later on another thread;
 *    start = earliest channel start, end = start + longest channel span;
 *  - group: Coll/P2p events at the group launch matched to the group's records in order;
 *  - P2P (Send/Recv) events; a captured op (not eligible: no link, no children);
 *  - events of calls collscope does not time (no current record) get no handle;
 *  - a late KernelCh under a released record's handle does not touch the next record;
 *    a handle whose generation is not the slot's is dropped (case 7);
 *  - a Coll that never gets kernels completes (host timing) at the final pass; one whose
 *    kernel stamps come late (queued behind GPU work) waits for them, and one without
 *    stamps is done (host timing) once a later op of its communicator got stamps;
 *  - init refused in events mode. */
#include "shim/cs_internal.h"
#include "collscope/nccl_profiler_abi.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

extern cs_nccl_profiler_v5_t ncclProfiler_v5;
extern cs_nccl_profiler_v4_t ncclProfiler_v4;

static int fails;
#define CHECK(c) \
  do { \
    if (!(c)) { \
      fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #c); \
      fails++; \
    } \
  } while (0)

static void rec_init(struct cs_record *r, enum cs_op op, size_t count) {
  memset(r, 0, sizeof(*r));
  r->type = CS_REC_OP;
  r->op = (uint8_t)op;
  r->count = count;
  r->timing = CS_TIMING_PENDING;
  r->prof_want = 1;
}

static const char *coll_algo = "Ring", *coll_proto = "LL128";
static void *coll5(void *ctx, const char *func, size_t count, int nch) {
  cs_nccl_prof_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = CS_NCCL_PROFILE_COLL;
  d.coll.func = func;
  d.coll.count = count;
  d.coll.nChannels = (uint8_t)nch;
  d.coll.algo = coll_algo;
  d.coll.proto = coll_proto;
  void *h = NULL;
  CHECK(ncclProfiler_v5.startEvent(ctx, &h, &d) == 0);
  return h;
}
static void *p2p4(void *ctx, const char *func, size_t count, int peer) {
  cs_nccl_prof_descr_v4_t d;
  memset(&d, 0, sizeof d);
  d.type = CS_NCCL_PROFILE_P2P;
  d.p2p.func = func;
  d.p2p.count = count;
  d.p2p.peer = peer;
  d.p2p.nChannels = 1;
  void *h = NULL;
  CHECK(ncclProfiler_v4.startEvent(ctx, &h, &d) == 0);
  return h;
}
static void kch5(void *ctx, void *parent, int ch, uint64_t t0, uint64_t t1) {
  cs_nccl_prof_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = CS_NCCL_PROFILE_KERNEL_CH;
  d.parentObj = parent;
  d.kernelCh.channelId = (uint8_t)ch;
  d.kernelCh.pTimer = t0;
  void *h = NULL;
  CHECK(ncclProfiler_v5.startEvent(ctx, &h, &d) == 0);
  cs_nccl_prof_state_args_t a = {.kernelCh = {t1}};
  CHECK(ncclProfiler_v5.recordEventState(h, CS_NCCL_PROFILER_KERNEL_CH_STOP, &a) == 0);
  CHECK(ncclProfiler_v5.stopEvent(h) == 0);
}

struct kjob {
  void *ctx, *parent;
  int nch;
  uint64_t t0;
};
static void *kernel_thread(void *arg) { /* NCCL's proxy thread reports the kernel stamps */
  struct kjob *j = arg;
  for (int c = 0; c < j->nch; c++) kch5(j->ctx, j->parent, c, j->t0 + (uint64_t)c * 100, j->t0 + 1000 + (uint64_t)c * 500);
  return NULL;
}

int main(void) {
  cs_config_load();
  atomic_store(&cs_st.ready, 1);
  void *ctx = NULL;
  int mask = 0;

  /* refused unless COLLSCOPE_TIMING=auto|profiler */
  cs_cfg.timing_mode = CS_TMODE_EVENTS;
  CHECK(ncclProfiler_v5.init(&ctx, 1, &mask, "c", 1, 2, 0, NULL) != 0 && mask == 0 && !ctx);
  CHECK(!cs_prof_active());
  cs_cfg.timing_mode = CS_TMODE_AUTO;
  cs_cfg.prof_probes = 0; /* no probation here: the plugin times ops from the first claim on
                           * (the probation runs end to end in test_profiler_sim.py) */
  CHECK(ncclProfiler_v5.init(&ctx, 1, &mask, "c", 1, 2, 0, NULL) == 0 && ctx);
  CHECK(mask == (CS_NCCL_PROFILE_COLL | CS_NCCL_PROFILE_P2P | CS_NCCL_PROFILE_KERNEL_CH));
  CHECK(cs_prof_active());
  void *ctx4 = NULL;
  CHECK(ncclProfiler_v4.init(&ctx4, &mask, "c", 1, 1, 2, 0, NULL) == 0 && ctx4);

  /* 1. ungrouped AllReduce, 4 channels, kernels reported from another thread (monotonic stamps) */
  struct cs_record r;
  rec_init(&r, CS_OP_AllReduce, 1000);
  cs_prof_cur = &r;
  void *h = coll5(ctx, "AllReduce", 1000, 4);
  cs_prof_cur = NULL;
  CHECK(h && r.prof_slot && r.nchannels == 4 && r.algo == CS_ALGO_RING && r.proto == CS_PROTO_LL128);
  CHECK(ncclProfiler_v5.stopEvent(h) == 0);
  CHECK(!cs_prof_collect(&r, false)); /* enqueued, kernels not run yet */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  struct kjob j = {ctx, h, 4, t0};
  pthread_t th;
  pthread_create(&th, NULL, kernel_thread, &j);
  pthread_join(th, NULL);
  CHECK(cs_prof_collect(&r, false));
  CHECK(r.timing == CS_TIMING_PROFILER);
  /* channel c: [t0 + 100c, t0 + 1000 + 500c]: earliest start t0, longest span (c=3) 2200 ns */
  CHECK(r.end_ns - r.start_ns == 2200);
  int64_t rt = cs_now_ns(CLOCK_REALTIME);
  CHECK(r.start_ns > rt - 1000000000LL && r.start_ns <= rt);
  CHECK(r.prof_slot == 0 && r.prof_want == 0);
  /* a late KernelCh under the released record's handle does not disturb the next record */
  struct cs_record r2;
  rec_init(&r2, CS_OP_Broadcast, 8);
  cs_prof_cur = &r2;
  void *h2 = coll5(ctx, "Broadcast", 8, 1);
  cs_prof_cur = NULL;
  CHECK(h2 && h2 != h);
  kch5(ctx, h, 0, t0, t0 + 999999); /* stale parent handle */
  ncclProfiler_v5.stopEvent(h2);
  kch5(ctx, h2, 0, 5000, 6000); /* GPU stamps far from realtime: treated as monotonic */
  CHECK(cs_prof_collect(&r2, false) && r2.timing == CS_TIMING_PROFILER && r2.end_ns - r2.start_ns == 1000);

  /* 2. mismatches: wrong function, wrong count, no current record -> no handle */
  struct cs_record r3;
  rec_init(&r3, CS_OP_AllGather, 64);
  cs_prof_cur = &r3;
  CHECK(coll5(ctx, "AllReduce", 64, 2) == NULL);
  CHECK(coll5(ctx, "AllGather", 65, 2) == NULL);
  cs_prof_cur = NULL;
  CHECK(coll5(ctx, "AllGather", 64, 2) == NULL);
  CHECK(r3.prof_slot == 0);
  CHECK(cs_prof_collect(&r3, false) && r3.timing == CS_TIMING_HOST); /* not linked: enqueue time only */

  /* 3. a group: AllReduce, Send, Recv, AllReduce (v4 P2p events), launched at ncclGroupEnd */
  struct cs_record g[4];
  rec_init(&g[0], CS_OP_AllReduce, 10);
  rec_init(&g[1], CS_OP_Send, 20);
  rec_init(&g[2], CS_OP_Recv, 20);
  rec_init(&g[3], CS_OP_AllReduce, 10);
  cs_prof_group_set(g, 4);
  void *gh[4];
  gh[0] = coll5(ctx, "AllReduce", 10, 2);
  gh[1] = p2p4(ctx4, "Send", 20, 1);
  gh[2] = p2p4(ctx4, "Recv", 20, 1);
  gh[3] = coll5(ctx, "AllReduce", 10, 2);
  cs_prof_group_set(NULL, 0);
  for (int i = 0; i < 4; i++) CHECK(gh[i] && g[i].prof_slot);
  CHECK(g[0].prof_slot != g[3].prof_slot && g[1].nchannels == 1 && g[1].algo == CS_ALGO_NONE);
  for (int i = 0; i < 4; i++) ncclProfiler_v4.stopEvent(gh[i]);
  for (int i = 0; i < 4; i++)
    for (int c = 0; c < (i == 1 || i == 2 ? 1 : 2); c++) kch5(ctx, gh[i], c, t0 + 10 * (uint64_t)i, t0 + 10 * (uint64_t)i + 50);
  for (int i = 0; i < 4; i++) CHECK(cs_prof_collect(&g[i], false) && g[i].timing == CS_TIMING_PROFILER && g[i].end_ns - g[i].start_ns == 50);

  /* 3b. NCCL variant that starts Coll events inside the grouped API call: claimed at once */
  {
    struct cs_record gr;
    rec_init(&gr, CS_OP_AllGather, 33);
    gr.prof_want = 0;
    gr.group = 9;
    cs_tls.group_depth = 1;
    cs_prof_cur = &gr;
    void *hg = coll5(ctx, "AllGather", 33, 1);
    cs_prof_cur = NULL;
    cs_tls.group_depth = 0;
    CHECK(hg && gr.prof_want && gr.prof_slot);
    ncclProfiler_v5.stopEvent(hg);
    kch5(ctx, hg, 0, t0, t0 + 77);
    CHECK(cs_prof_collect(&gr, false) && gr.timing == CS_TIMING_PROFILER && gr.end_ns - gr.start_ns == 77);
  }

  /* 4. a captured op is not eligible (prof_want 0): its Coll event gets no handle */
  struct cs_record rc;
  rec_init(&rc, CS_OP_AllReduce, 10);
  rc.prof_want = 0;
  rc.timing = CS_TIMING_CAPTURED;
  cs_prof_cur = &rc;
  CHECK(coll5(ctx, "AllReduce", 10, 2) == NULL);
  cs_prof_cur = NULL;
  CHECK(cs_prof_collect(&rc, false) && rc.timing == CS_TIMING_CAPTURED);

  /* 5. a Coll whose kernels are never reported: pending, then host timing at the final pass */
  struct cs_record rn;
  rec_init(&rn, CS_OP_ReduceScatter, 4);
  cs_prof_cur = &rn;
  void *hn = coll5(ctx, "ReduceScatter", 4, 2);
  cs_prof_cur = NULL;
  CHECK(hn != NULL);
  CHECK(!cs_prof_collect(&rn, false));
  CHECK(cs_prof_collect(&rn, true) && rn.timing == CS_TIMING_HOST);
  ncclProfiler_v5.stopEvent(hn); /* after release: harmless */

  /* 5b. a kernel queued behind the GPU's earlier work: the Coll stop comes at enqueue, the
   * kernel stamps much later. Without a sign that its kernel ran, the op waits (not 200 ms
   * and host timing), and gets its stamps when they come. */
  {
    struct cs_record q;
    rec_init(&q, CS_OP_AllReduce, 12);
    cs_prof_cur = &q;
    void *hq = coll5(ctx, "AllReduce", 12, 1);
    cs_prof_cur = NULL;
    ncclProfiler_v5.stopEvent(hq);
    struct timespec nap = {0, 300000000};
    nanosleep(&nap, NULL);
    CHECK(!cs_prof_collect(&q, false));
    kch5(ctx, hq, 0, t0, t0 + 4321);
    CHECK(cs_prof_collect(&q, false) && q.timing == CS_TIMING_PROFILER && q.end_ns - q.start_ns == 4321);
    /* an op that gets no stamps while a later op of its communicator gets them: done (host
     * timing) once that is seen, 200 ms after its stop */
    struct cs_record a, b;
    rec_init(&a, CS_OP_AllReduce, 13);
    rec_init(&b, CS_OP_AllReduce, 14);
    cs_prof_cur = &a;
    void *ha = coll5(ctx, "AllReduce", 13, 1);
    cs_prof_cur = &b;
    void *hb = coll5(ctx, "AllReduce", 14, 1);
    cs_prof_cur = NULL;
    ncclProfiler_v5.stopEvent(ha);
    ncclProfiler_v5.stopEvent(hb);
    nanosleep(&nap, NULL);
    CHECK(!cs_prof_collect(&a, false)); /* no evidence yet */
    kch5(ctx, hb, 0, t0, t0 + 10);
    CHECK(cs_prof_collect(&a, false) && a.timing == CS_TIMING_HOST);
    CHECK(cs_prof_collect(&b, false) && b.timing == CS_TIMING_PROFILER && b.end_ns - b.start_ns == 10);
  }

  /* 7. recycle every slot once: the first handle's generation is then stale, its KernelCh dropped */
  for (int i = 0; i < 4096 + 1; i++) {
    struct cs_record x;
    rec_init(&x, CS_OP_AllReduce, 7);
    cs_prof_cur = &x;
    void *hx = coll5(ctx, "AllReduce", 7, 1);
    cs_prof_cur = NULL;
    ncclProfiler_v5.stopEvent(hx);
    CHECK(cs_prof_collect(&x, true));
  }
  {
    void *hk = (void *)1;
    cs_nccl_prof_descr_v5_t dk;
    memset(&dk, 0, sizeof dk);
    dk.type = CS_NCCL_PROFILE_KERNEL_CH;
    dk.parentObj = h; /* case 1's handle: its slot has been reallocated since */
    CHECK(ncclProfiler_v5.startEvent(ctx, &hk, &dk) == 0 && hk == NULL);
  }

  /* 6. NCCL's own spellings (ncclAlgoToString / ncclProtoToString), and an AllGather whose
   * count NCCL reports in bytes (float32: 4 x the API count) */
  {
    static const struct {
      const char *algo, *proto;
      int want_algo, want_proto;
    } sp[] = {
        {"TREE", "LL", CS_ALGO_TREE, CS_PROTO_LL},
        {"RING", "SIMPLE", CS_ALGO_RING, CS_PROTO_SIMPLE},
        {"COLLNET_DIRECT", "LL128", CS_ALGO_TREE + 2, CS_PROTO_LL128},
        {"COLLNET_CHAIN", "SIMPLE", CS_ALGO_TREE + 3, CS_PROTO_SIMPLE},
        {"NVLS", "SIMPLE", CS_ALGO_TREE + 4, CS_PROTO_SIMPLE},
        {"NVLS_TREE", "SIMPLE", CS_ALGO_TREE + 5, CS_PROTO_SIMPLE},
        {"PAT", "SIMPLE", CS_ALGO_TREE + 6, CS_PROTO_SIMPLE},
        {"Unknown", "Unknown", CS_ALGO_OTHER, CS_PROTO_OTHER},
    };
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
      struct cs_record x;
      rec_init(&x, CS_OP_AllGather, 100);
      x.dtype = 7; /* ncclFloat32 */
      coll_algo = sp[i].algo, coll_proto = sp[i].proto;
      cs_prof_cur = &x;
      void *hx = coll5(ctx, "AllGather", 400, 1);
      cs_prof_cur = NULL;
      CHECK(hx && x.prof_slot && x.algo == sp[i].want_algo && x.proto == sp[i].want_proto);
      ncclProfiler_v5.stopEvent(hx);
      cs_prof_release(&x);
    }
    coll_algo = "Ring", coll_proto = "LL128";
    struct cs_record y; /* a count that is neither the API count nor its bytes */
    rec_init(&y, CS_OP_AllGather, 100);
    y.dtype = 7;
    cs_prof_cur = &y;
    void *hy = coll5(ctx, "AllGather", 200, 1);
    cs_prof_cur = NULL;
    CHECK(!hy && !y.prof_slot);
  }

  /* 7. unknown event types and NULL handles are accepted */
  cs_nccl_prof_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = CS_NCCL_PROFILE_PROXY_OP;
  void *hp = (void *)1;
  CHECK(ncclProfiler_v5.startEvent(ctx, &hp, &d) == 0 && hp == NULL);
  CHECK(ncclProfiler_v5.stopEvent(NULL) == 0 && ncclProfiler_v5.recordEventState(NULL, 22, NULL) == 0);

  CHECK(ncclProfiler_v5.finalize(ctx) == 0 && ncclProfiler_v4.finalize(ctx4) == 0);
  if (fails) return 1;
  printf("ok: profiler callbacks (ungrouped, group, P2P, captured, stale, unmatched, never-run)\n");
  return 0;
}
