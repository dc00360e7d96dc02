/* tests/sim/nccl/profiler.c: NCCL's profiler plugin host side, as NCCL 2.27-2.30 drives it.
 *  - NCCL_PROFILER_PLUGIN=path|name (name: libnccl-profiler-<name>.so) is dlopen'ed once per
 *    process at the first communicator init; ncclProfiler_v6 is looked up, then v5, then v4,
 *    as NCCL 2.29+ does (src/plugin/profiler.cc, ncclProfilerPluginLoad, v2.30.7-1:
 *    getNcclProfiler_v6, then _v5, _v4, ...). COLLSCOPE_SIM_PROFILER_ABI=5 starts at v5 (NCCL
 *    2.28), 4 at v4 (NCCL 2.27), 3 finds none (older NCCL).
 *  - COLLSCOPE_SIM_PROFILER_CE=1: AllGather runs as a copy-engine collective (NCCL 2.29+ with
 *    a zero-CTA communicator): a v6 plugin whose mask has CeColl gets one CeColl event per
 *    AllGather (start before the copies are enqueued on the op's stream, stop after; no
 *    Coll, no KernelCh), a v5/v4 plugin gets nothing for it (NCCL's v5 adapter,
 *    src/plugin/profiler/profiler_v5.cc, discards CE events and clears the CE mask bits).
 *  - init per communicator (after it joined); a plugin whose init fails is not used for that
 *    communicator; finalize at destroy/abort.
 *  - At launch -- inside the API call for an ungrouped op, inside the outermost
 *    ncclGroupEnd for grouped ops, on the calling thread -- one Coll (or P2p) event per op
 *    is started before the work is enqueued and stopped once it is enqueued (Coll events
 *    are "enqueued" markers; NCCL's Group event is not emitted here).
 *  - When the stream worker runs the work item, each op gets one KernelCh event per channel
 *    when the mask has KernelCh (parent = its Coll/P2p handle, NULL if it has none): start with pTimer = the item's start, recordEventState
 *    KernelChStop with pTimer = its end, stop. The simulated GPU timer is CLOCK_MONOTONIC ns.
 *    A fused (grouped) item gives every op the item's span.
 *  - Graph-captured ops get their Coll/P2p events at capture time and no KernelCh events
 *    on replay.
 *  - COLLSCOPE_SIM_PROFILER_FAULT=nokch|long|skew sends wrong kernel stamps (below).
 * The sim reports algo "RING", proto "SIMPLE", nChannels 2 (collectives) / 1 (P2P), and,
 * like NCCL, an AllGather's or Broadcast's count in bytes with datatype ncclInt8. */
#include "simnccl.h"
#include "collscope/nccl_profiler_abi.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cs_nccl_profiler_v5_t *prof5; /* a v6 table too: v6's descriptor is v5's plus CE members */
static cs_nccl_profiler_v4_t *prof4;
static int abi6;                     /* prof5 is the plugin's ncclProfiler_v6 */

static void plugin_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static void load(void) {
  const char *v = getenv("NCCL_PROFILER_PLUGIN");
  if (!v || !*v || !strcmp(v, "none")) return;
  void *h = dlopen(v, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    char name[256];
    snprintf(name, sizeof name, "libnccl-profiler-%s.so", v);
    h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) { sn_info(-1, "PROFILER/Plugin: Could not find: %s", v); return; }
  /* COLLSCOPE_SIM_PROFILER_ABI=4 models NCCL 2.27 (v4 only), 3 an NCCL that knows neither */
  const char *abi = getenv("COLLSCOPE_SIM_PROFILER_ABI");
  int want = abi && *abi ? atoi(abi) : 6;
  if (want >= 6 && (prof5 = dlsym(h, "ncclProfiler_v6"))) abi6 = 1;
  if (!prof5 && want >= 5) prof5 = dlsym(h, "ncclProfiler_v5");
  if (!prof5 && want >= 4) prof4 = dlsym(h, "ncclProfiler_v4");
  if (!prof5 && !prof4) { sn_info(-1, "PROFILER/Plugin: no ncclProfiler_v6/v5/v4 in %s", v); dlclose(h); return; }
  sn_info(-1, "PROFILER/Plugin: Loaded %s (v%d)", prof5 ? prof5->name : prof4->name, abi6 ? 6 : prof5 ? 5 : 4);
}

/* NCCL's ncclProfilerEventMask: one per process, its address handed to the plugin at every
 * init, read atomically for every op (NCCL 2.27-2.29 enqueue.cc), so the plugin may change
 * it at any time. */
static int event_mask;

void sn_prof_comm_init(struct ncclComm *c) {
  c->prof_ctx = NULL;
  c->prof_mask = 0;
  pthread_once(&load_once, load);
  if (!prof5 && !prof4) return;
  uint64_t id = 0;
  for (const char *p = c->shm_name; *p; p++) id = (id ^ (unsigned char)*p) * 0x100000001b3ull;
  void *ctx = NULL;
  int nnodes = 1;
  const char *name = c->comm_name[0] ? c->comm_name : NULL;
  ncclResult_t r = prof5 ? prof5->init(&ctx, id, &event_mask, name, nnodes, c->nranks, c->rank, plugin_log)
                         : prof4->init(&ctx, &event_mask, name, id, nnodes, c->nranks, c->rank, plugin_log);
  if (r != ncclSuccess) { sn_info(c->dev, "PROFILER/Plugin: init failed (%d), not used", (int)r); return; }
  if (!abi6) __atomic_and_fetch(&event_mask, ~(CS_NCCL_PROFILE_CE_COLL | CS_NCCL_PROFILE_CE_SYNC |
                                               CS_NCCL_PROFILE_CE_BATCH), __ATOMIC_RELAXED);
  c->prof_ctx = ctx;
  c->prof_mask = __atomic_load_n(&event_mask, __ATOMIC_RELAXED);
  c->prof_on = 1;
}

void sn_prof_comm_fini(struct ncclComm *c) {
  if (!c->prof_on) return;
  if (prof5) prof5->finalize(c->prof_ctx);
  else if (prof4) prof4->finalize(c->prof_ctx);
  c->prof_on = 0;
}

static const char *const funcs[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                    "AlltoAll", "Gather", "Scatter", "Send", "Recv"};
static const char *const dtypes[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
                                     "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
                                     "ncclFloat8e5m2"};
/* NCCL (enqueue.cc, 2.27-2.29) counts an AllGather's or Broadcast's task in bytes, with
 * datatype ncclInt8, before the profiler sees it */
static size_t coll_count(const struct sn_op *op, const char **dt) {
  if (op->coll != SN_ALLGATHER && op->coll != SN_BROADCAST) return op->count;
  *dt = dtypes[0];
  return op->count * sn_type_size(op->dtype);
}
static int nch_of(const struct sn_op *op) { return op->coll == SN_SEND || op->coll == SN_RECV ? 1 : 2; }

/* COLLSCOPE_SIM_PROFILER_FAULT=KIND[:FUNC]: wrong events, to test a plugin's checks, for
 * every op or only FUNC's (e.g. nokch:Broadcast): nokch (no KernelCh events), long (each
 * channel's span 5x + 20 ms: longer than the work really took), skew (both stamps 10 s
 * late), stop=N (after N Coll/P2p events of this process no more: what a plugin sees when
 * NCCL starts them on a CUDA host-callback thread, as it does once CUDA graphs with NCCL
 * work exist). */
enum { PF_NONE, PF_NOKCH, PF_LONG, PF_SKEW, PF_STOP };
static long pf_stop_after;
static _Atomic long pf_started;
static int prof_fault(const struct sn_op *op) {
  static _Atomic int f = -1;
  static char only[32];
  int v = atomic_load(&f);
  if (v < 0) {
    const char *e = getenv("COLLSCOPE_SIM_PROFILER_FAULT");
    const char *colon = e ? strchr(e, ':') : NULL;
    size_t n = e ? (colon ? (size_t)(colon - e) : strlen(e)) : 0;
    v = !e ? PF_NONE : !strncmp(e, "nokch", n) && n == 5 ? PF_NOKCH : !strncmp(e, "long", n) && n == 4 ? PF_LONG
        : !strncmp(e, "skew", n) && n == 4 ? PF_SKEW : !strncmp(e, "stop=", 5) ? PF_STOP : PF_NONE;
    if (v == PF_STOP) pf_stop_after = strtol(e + 5, NULL, 10);
    if (colon) snprintf(only, sizeof only, "%s", colon + 1);
    atomic_store(&f, v);
  }
  if (v != PF_NONE && only[0] && strcmp(only, funcs[op->coll])) return PF_NONE;
  return v;
}

static int ce_op(const struct sn_op *op) {
  static int ce = -1;
  if (ce < 0) {
    const char *e = getenv("COLLSCOPE_SIM_PROFILER_CE");
    ce = e && !strcmp(e, "1");
  }
  return ce && op->coll == SN_ALLGATHER;
}

/* A copy-engine collective's CeColl event (v6 only; NCCL's ncclProfilerStartCeCollEvent) */
static void ce_start(struct ncclComm *c, struct sn_op *op) {
  if (!abi6 || !(op->prof_mask & (CS_NCCL_PROFILE_CE_COLL | CS_NCCL_PROFILE_CE_SYNC | CS_NCCL_PROFILE_CE_BATCH)))
    return;
  cs_nccl_prof_descr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = CS_NCCL_PROFILE_CE_COLL;
  d.rank = c->rank;
  d.ceColl.seqNumber = op->seq; d.ceColl.func = funcs[op->coll]; d.ceColl.sendBuff = op->sendbuff;
  d.ceColl.recvBuff = op->recvbuff; d.ceColl.count = op->count; d.ceColl.root = op->root;
  d.ceColl.datatype = op->dtype >= 0 && op->dtype < (int)(sizeof dtypes / sizeof dtypes[0]) ? dtypes[op->dtype] : "?";
  d.ceColl.syncStrategy = "UC"; d.ceColl.ceSeqNum = (uint32_t)op->seq; d.ceColl.stream = (void *)op->stream;
  prof5->startEvent(c->prof_ctx, &op->prof_h, (cs_nccl_prof_descr_v5_t *)(void *)&d);
}

/* Start one Coll/P2p event per op (launch, calling thread). */
void sn_prof_launch_start(struct ncclComm *c, struct sn_op *ops, int nops) {
  for (int i = 0; i < nops; i++) ops[i].prof_h = NULL;
  if (!c->prof_on) return;
  int mask = __atomic_load_n(&event_mask, __ATOMIC_RELAXED); /* per launch, as NCCL reads it per op */
  for (int i = 0; i < nops; i++) ops[i].prof_mask = mask;
  for (int i = 0; i < nops; i++) {
    struct sn_op *op = &ops[i];
    int p2p = op->coll == SN_SEND || op->coll == SN_RECV;
    if (ce_op(op)) { ce_start(c, op); continue; }
    if (!(op->prof_mask & (p2p ? CS_NCCL_PROFILE_P2P : CS_NCCL_PROFILE_COLL))) continue;
    if (prof_fault(op) == PF_STOP && atomic_fetch_add(&pf_started, 1) >= pf_stop_after) continue;
    const char *dt = op->dtype >= 0 && op->dtype < (int)(sizeof dtypes / sizeof dtypes[0]) ? dtypes[op->dtype] : "?";
    if (prof5) {
      cs_nccl_prof_descr_v5_t d;
      memset(&d, 0, sizeof d);
      d.type = p2p ? CS_NCCL_PROFILE_P2P : CS_NCCL_PROFILE_COLL;
      d.rank = c->rank;
      if (p2p) {
        d.p2p.func = funcs[op->coll]; d.p2p.buff = op->coll == SN_SEND ? (void *)op->sendbuff : op->recvbuff;
        d.p2p.datatype = dt; d.p2p.count = op->count; d.p2p.peer = op->root; d.p2p.nChannels = (uint8_t)nch_of(op);
      } else {
        d.coll.seqNumber = op->seq; d.coll.func = funcs[op->coll]; d.coll.sendBuff = op->sendbuff;
        d.coll.recvBuff = op->recvbuff; d.coll.count = coll_count(op, &dt); d.coll.root = op->root; d.coll.datatype = dt;
        d.coll.nChannels = (uint8_t)nch_of(op); d.coll.nWarps = 16; d.coll.algo = "RING"; d.coll.proto = "SIMPLE";
      }
      prof5->startEvent(c->prof_ctx, &op->prof_h, &d);
    } else {
      cs_nccl_prof_descr_v4_t d;
      memset(&d, 0, sizeof d);
      d.type = (uint8_t)(p2p ? CS_NCCL_PROFILE_P2P : CS_NCCL_PROFILE_COLL);
      d.rank = c->rank;
      if (p2p) {
        d.p2p.func = funcs[op->coll]; d.p2p.buff = op->coll == SN_SEND ? (void *)op->sendbuff : op->recvbuff;
        d.p2p.datatype = dt; d.p2p.count = op->count; d.p2p.peer = op->root; d.p2p.nChannels = (uint8_t)nch_of(op);
      } else {
        d.coll.seqNumber = op->seq; d.coll.func = funcs[op->coll]; d.coll.sendBuff = op->sendbuff;
        d.coll.recvBuff = op->recvbuff; d.coll.count = coll_count(op, &dt); d.coll.root = op->root; d.coll.datatype = dt;
        d.coll.nChannels = (uint8_t)nch_of(op); d.coll.nWarps = 16; d.coll.algo = "RING"; d.coll.proto = "SIMPLE";
      }
      prof4->startEvent(c->prof_ctx, &op->prof_h, &d);
    }
  }
}

/* Stop the Coll/P2p events once the work is enqueued; `hs` is a copy of the handles taken
 * before the enqueue (the stream worker owns `ops` from then on). */
void sn_prof_launch_stop(struct ncclComm *c, void **hs, int n) {
  if (!c->prof_on) return;
  for (int i = 0; i < n; i++)
    if (hs[i]) (prof5 ? prof5->stopEvent : prof4->stopEvent)(hs[i]);
}

uint64_t sn_prof_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Stream worker, after the item ran from t0 to t1: KernelCh events per op and channel. */
void sn_prof_kernels(struct ncclComm *c, struct sn_op *ops, int nops, uint64_t t0, uint64_t t1) {
  if (!c->prof_on) return;
  const uint64_t item_t0 = t0, item_t1 = t1;
  for (int i = 0; i < nops; i++) {
    /* as NCCL (ncclProfilerStartKernelChEvent): by the mask alone, parent NULL when the op's
     * Coll/P2p event was not started (not asked for, or the plugin gave no handle) */
    if (!(ops[i].prof_mask & CS_NCCL_PROFILE_KERNEL_CH) || ce_op(&ops[i])) continue;
    t0 = item_t0, t1 = item_t1;
    switch (prof_fault(&ops[i])) {
    case PF_NOKCH: continue;
    case PF_LONG: t1 += 4 * (t1 - t0) + 20000000; break;
    case PF_SKEW: t0 += 10000000000ull; t1 += 10000000000ull; break;
    default: break;
    }
    for (int ch = 0; ch < nch_of(&ops[i]); ch++) {
      void *kh = NULL;
      cs_nccl_prof_state_args_t a;
      memset(&a, 0, sizeof a);
      a.kernelCh.pTimer = t1;
      if (prof5) {
        cs_nccl_prof_descr_v5_t d;
        memset(&d, 0, sizeof d);
        d.type = CS_NCCL_PROFILE_KERNEL_CH; d.parentObj = ops[i].prof_h; d.rank = c->rank;
        d.kernelCh.channelId = (uint8_t)ch; d.kernelCh.pTimer = t0;
        prof5->startEvent(c->prof_ctx, &kh, &d);
        if (kh) { prof5->recordEventState(kh, CS_NCCL_PROFILER_KERNEL_CH_STOP, &a); prof5->stopEvent(kh); }
      } else {
        cs_nccl_prof_descr_v4_t d;
        memset(&d, 0, sizeof d);
        d.type = CS_NCCL_PROFILE_KERNEL_CH; d.parentObj = ops[i].prof_h; d.rank = c->rank;
        d.kernelCh.channelId = (uint8_t)ch; d.kernelCh.pTimer = t0;
        prof4->startEvent(c->prof_ctx, &kh, &d);
        if (kh) { prof4->recordEventState(kh, CS_NCCL_PROFILER_KERNEL_CH_STOP, &a); prof4->stopEvent(kh); }
      }
    }
  }
}
