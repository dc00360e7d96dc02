/* hooks/online.c: the job-wide online exchange (protocol in online.h): collscope's own
 * communicator split from the world communicator, the feed from the harvest thread, the
 * exchange thread, and what it does with the findings (stats/online_eval.c). Every
 * failure logs one line and turns the feature off; the job's communicators are never
 * waited on. */
#include "online.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collscope/online.h"
#include "cuda_driver.h"
#include "nccl_calls.h"
#include "stats/harvest.h"

enum { ON_UNSET = 0, ON_SETUP, ON_RUNNING, ON_OFF };

#define FEED_CAP 4096u     /* harvest -> exchange thread (single producer, single consumer) */
#define DRAIN_MS 2000      /* at shutdown: how long the exchanges already due may take */
#define FINAL_MAX 4        /* at shutdown: exchanges after the due ones (see exchange_main) */

struct feed_item {
  int kind;                /* 1 op, 2 sdc */
  union { struct cs_online_op op; struct cs_online_sdc sdc; } u;
};

static struct {
  _Atomic int state;
  void *parent;            /* the user's world communicator */
  uint64_t parent_id;      /* its collscope id (the hooks may route a call to another comm) */
  _Atomic uint64_t colls;  /* collectives called on it (P2P counts differ between ranks) */
  ncclComm_t own;
  int rank, n;
  unsigned every, stride;
  CUcontext ctx;
  CUstream stream;
  CUdeviceptr dwire;                 /* one round, reduced in place */
  struct cs_online_wire *hwire;      /* pinned: this rank's contribution, then the result */
  pthread_t th;
  bool th_running;
  _Atomic int stop;                  /* 1: leave now; 2: run the exchanges due, then leave */
  _Atomic int64_t drain_deadline;    /* CLOCK_MONOTONIC ns bound of a drain */
  _Atomic uint64_t trigger;          /* exchanges due (world collectives / K) */
  uint64_t done;
  struct cs_online_rank *st;         /* protocol state (stats/online_eval.c) */
  /* feed */
  struct feed_item *feed;
  _Atomic uint32_t head, tail;
  _Atomic uint32_t feed_lost;
  int64_t last_end;                  /* harvest thread: latest op end seen */
  uint32_t reduced_backlog;          /* the last exchange: most entries any rank still had queued */
} on;

static void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void turn_off(void) { atomic_store(&on.state, ON_OFF); }
static bool stop_is_shutdown(void) { return atomic_load(&on.stop) != 0; }

/* ---- set-up on the caller's thread ---- */

/* Poll a non-blocking communicator until it is ready; ncclInProgress after the timeout. */
static ncclResult_t wait_ready(ncclComm_t comm, unsigned timeout_s) {
  int64_t deadline = cs_now_ns(CLOCK_MONOTONIC) + (int64_t)timeout_s * 1000000000LL;
  for (;;) {
    ncclResult_t st = ncclInProgress;
    ncclResult_t r = CS_NCCL_REAL(ncclCommGetAsyncError)(comm, &st);
    if (r != ncclSuccess) return r;
    if (st != ncclInProgress) return st;
    if (cs_now_ns(CLOCK_MONOTONIC) > deadline) return ncclInProgress;
    sleep_ms(1);
  }
}

static bool alloc_buffers(void) {
  void *h = NULL;
  if (cs_drv.cuStreamCreate(&on.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return false;
  if (cs_drvx.cuMemAlloc(&on.dwire, CS_ONLINE_WIRE_BYTES) != CUDA_SUCCESS ||
      cs_drvx.cuMemAllocHost(&h, CS_ONLINE_WIRE_BYTES) != CUDA_SUCCESS)
    return false; /* what was allocated stays: freeing device memory synchronizes the device */
  on.hwire = h;
  return true;
}

static void *exchange_main(void *arg);

static bool start_thread(void) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 1 << 20);
  int rc = pthread_create(&on.th, &a, exchange_main, NULL);
  pthread_attr_destroy(&a);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc) return false;
  pthread_setname_np(on.th, "collscope-online");
  on.th_running = true;
  return true;
}

/* ---- the split ---- */
/* ncclCommSplit of a blocking parent runs on the calling thread until every rank of the
 * parent has called it: in NCCL 2.28.9 the group's blocking mode is the parent's
 * (group.cc, ncclAsyncLaunch), whatever the child's config says; *newcomm stays NULL
 * until the split is complete (init.cc, ncclCommInitChildComm and ncclCommInitRankFunc),
 * so there is nothing to abort meanwhile; and the parent's bootstrap all-gather has no
 * timeout. A rank that never calls it (no collscope there, or COLLSCOPE_ONLINE=0 or
 * COLLSCOPE_DISABLE=1 on that rank only) would hold the caller for good. So the split
 * runs on a thread of its own and the caller waits for it COLLSCOPE_ONLINE_TIMEOUT at
 * most; a split given up on stays pending on that thread, and aborts its child should
 * it ever complete. */
enum { SPLIT_RUNNING = 0, SPLIT_DONE, SPLIT_ABANDONED };
static struct {
  _Atomic int state;
  ncclComm_t parent, child;
  int color, key;
  ncclConfig_t cfg;
  ncclResult_t r;
} sp;

static void *split_main(void *arg) {
  (void)arg;
  cs_tls.depth = 1; /* whatever NCCL calls from here passes straight through */
  ncclComm_t child = NULL;
  ncclResult_t r = CS_NCCL_REAL(ncclCommSplit)(sp.parent, sp.color, sp.key, &child, &sp.cfg);
  sp.r = r;
  sp.child = child;
  int expect = SPLIT_RUNNING;
  if (!atomic_compare_exchange_strong(&sp.state, &expect, SPLIT_DONE) && child) CS_NCCL_REAL(ncclCommAbort)(child);
  return NULL;
}

/* Split `comm` (color NCCL_SPLIT_NOCOLOR: take part without a child) within the timeout.
 * ncclInProgress: not complete in time, left pending. */
static ncclResult_t split_bounded(void *comm, int color, int key, const ncclConfig_t *cfg, ncclComm_t *child) {
  *child = NULL;
  sp.parent = (ncclComm_t)comm;
  sp.color = color;
  sp.key = key;
  sp.cfg = *cfg;
  atomic_store(&sp.state, SPLIT_RUNNING);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 1 << 20);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  int rc = pthread_create(&th, &a, split_main, NULL);
  pthread_attr_destroy(&a);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc) return ncclSystemError; /* the peers' split then times out like a missing rank's */
  pthread_setname_np(th, "collscope-split");
  int64_t deadline = cs_now_ns(CLOCK_MONOTONIC) + (int64_t)cs_cfg.online_timeout_s * 1000000000LL;
  unsigned nap = 1;
  while (atomic_load(&sp.state) != SPLIT_DONE) {
    if (cs_now_ns(CLOCK_MONOTONIC) > deadline) {
      int expect = SPLIT_RUNNING;
      if (atomic_compare_exchange_strong(&sp.state, &expect, SPLIT_ABANDONED)) return ncclInProgress;
      break; /* completed just now */
    }
    sleep_ms(nap);
    if (nap < 16) nap *= 2;
  }
  *child = sp.child;
  return sp.r;
}

/* The world communicator collscope splits: the same one on every rank, whatever each
 * rank's own state, so that they all call the split at the same place. */
static bool is_world(struct cs_comm *info) {
  if (!cs_cfg.online || atomic_load(&on.state) != ON_UNSET) return false;
  if (cs_cfg.world_size < 2 || cs_cfg.rank < 0 || info->size != cs_cfg.world_size || info->rank != cs_cfg.rank)
    return false;
  if (cs_tls.group_depth > 0) {
    cs_log_once(CS_LOG_INFO, "online: a world-sized communicator created inside a group is not used for the exchange");
    return false;
  }
  /* A non-blocking communicator stays non-blocking: waiting here for it to join would
   * change the job's timing. Every rank uses the same config, so all skip it alike. */
  if (info->nonblocking) {
    cs_log_once(CS_LOG_INFO, "online: non-blocking world-sized communicators are not used for the exchange");
    return false;
  }
  /* Only the main thread's communicators: when several threads create world-sized
   * communicators at once, which one comes first differs between processes, and ranks
   * splitting different communicators would wait for each other. */
  if (gettid() != getpid()) {
    cs_log_once(CS_LOG_INFO, "online: world-sized communicators created off the main thread are not used for the exchange");
    return false;
  }
  int expect = ON_UNSET;
  return atomic_compare_exchange_strong(&on.state, &expect, ON_SETUP);
}

/* A rank that cannot take part still calls the split, without a color: the others' split
 * completes at once, with fewer ranks than the world, and they turn the feature off too. */
static void split_without_color(void *comm, int rank, const char *why) {
  cs_log(CS_LOG_WARN, "online exchange off: %s", why);
  turn_off();
  if (!cs_nccl.resolve() || !CS_NCCL_REAL(ncclCommSplit)) return;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t none = NULL;
  ncclResult_t r = split_bounded(comm, NCCL_SPLIT_NOCOLOR, rank, &cfg, &none);
  if (r != ncclSuccess)
    cs_log(CS_LOG_WARN, "online: ncclCommSplit of the world communicator without a color %s (%d)",
           r == ncclInProgress ? "did not finish within COLLSCOPE_ONLINE_TIMEOUT; left pending" : "failed", (int)r);
}

void cs_online_comm_unrecorded(void *comm, struct cs_comm *info) {
  if (is_world(info)) split_without_color(comm, info->rank, "recording is off on this rank");
}

void cs_online_comm_created(void *comm, struct cs_comm *info) {
  if (!is_world(info)) return;
  const char *why = NULL;
  CUcontext ctx = NULL;
  if (!cs_driver_xchg_load() || !cs_nccl.resolve() || !CS_NCCL_REAL(ncclCommSplit) || !CS_NCCL_REAL(ncclAllReduce) ||
      !CS_NCCL_REAL(ncclCommGetAsyncError) || !CS_NCCL_REAL(ncclCommAbort) || !CS_NCCL_REAL(ncclCommDestroy) || !CS_NCCL_REAL(ncclCommCount))
    why = "CUDA driver or NCCL entry points missing";
  else if (cs_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
    why = "no current CUDA context on the thread that created the world communicator";
  if (why) {
    split_without_color(comm, info->rank, why);
    return;
  }
  on.parent = comm;
  on.parent_id = info->id;
  on.rank = info->rank;
  on.n = info->size;
  on.every = cs_cfg.online_every;
  on.stride = on.every / 16 ? on.every / 16 : 1;
  on.ctx = ctx;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.minCTAs = 1;
  cfg.maxCTAs = 1;
  cfg.commName = "collscope-online";
  ncclComm_t own = NULL;
  ncclResult_t r = split_bounded(comm, 0, info->rank, &cfg, &own);
  if (r == ncclSuccess && own) r = wait_ready(own, cs_cfg.online_timeout_s);
  else if (r == ncclSuccess) r = ncclInternalError;
  if (r != ncclSuccess) {
    cs_log(CS_LOG_WARN, "online exchange off: ncclCommSplit of the world communicator %s (%d)",
           r == ncclInProgress ? "did not finish within COLLSCOPE_ONLINE_TIMEOUT (a rank without collscope, or with "
                                 "COLLSCOPE_ONLINE=0 or COLLSCOPE_DISABLE=1, never joins it)" : "failed", (int)r);
    if (own) CS_NCCL_REAL(ncclCommAbort)(own);
    turn_off();
    return;
  }
  int joined = 0;
  if (CS_NCCL_REAL(ncclCommCount)(own, &joined) != ncclSuccess || joined != on.n) {
    /* every rank that joined sees the same count, so all of them stop here */
    cs_log(CS_LOG_WARN, "online exchange off: %d of %d ranks joined collscope's communicator (the others record "
           "nothing or cannot exchange)", joined, on.n);
    CS_NCCL_REAL(ncclCommAbort)(own);
    turn_off();
    return;
  }
  on.own = own;
  on.feed = calloc(FEED_CAP, sizeof *on.feed);
  on.st = cs_online_rank_new(on.rank, on.n, cs_cfg.host, NULL);
  if (!on.feed || !on.st || !alloc_buffers() || !start_thread()) {
    cs_log(CS_LOG_WARN, "online exchange off: cannot allocate its buffers or start its thread");
    CS_NCCL_REAL(ncclCommAbort)(own);
    on.own = NULL;
    turn_off();
    return;
  }
  cs_log(CS_LOG_INFO, "online: exchange every %u collectives of communicator %016llx (%d ranks)", on.every,
         (unsigned long long)info->id, on.n);
  atomic_store(&on.state, ON_RUNNING);
}

void cs_online_after_op(struct cs_call *c, int status) {
  if (CS_LIKELY(atomic_load_explicit(&on.state, memory_order_acquire) != ON_RUNNING)) return;
  if (!c->rec || c->rec->comm_id != on.parent_id || status != 0 || cs_op_table[c->op].cls == CS_CLASS_P2P) return;
  uint64_t n = atomic_fetch_add_explicit(&on.colls, 1, memory_order_relaxed) + 1;
  if (n % on.every == 0) atomic_store_explicit(&on.trigger, n / on.every, memory_order_relaxed);
}

/* ---- feed (harvest thread) ---- */
static void feed_push(const struct feed_item *it) {
  uint32_t h = atomic_load_explicit(&on.head, memory_order_relaxed);
  if (h - atomic_load_explicit(&on.tail, memory_order_acquire) >= FEED_CAP) {
    atomic_fetch_add_explicit(&on.feed_lost, 1, memory_order_relaxed);
    return;
  }
  on.feed[h % FEED_CAP] = *it;
  atomic_store_explicit(&on.head, h + 1, memory_order_release);
}

static uint32_t u32(int x) { return x < 0 ? 0 : (uint32_t)x; }

void cs_online_note(const struct cs_record *r) {
  if (CS_LIKELY(atomic_load_explicit(&on.state, memory_order_acquire) != ON_RUNNING)) return;
  if (r->type != CS_REC_OP || r->status != 0 || r->op >= CS_OP_COUNT || cs_op_table[r->op].cls == CS_CLASS_P2P)
    return;
  bool timed = r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_PROFILER;
  double gap = -1;
  if (timed) {
    if (on.last_end) gap = r->start_ns > on.last_end ? (double)(r->start_ns - on.last_end) / 1e3 : 0;
    if (r->end_ns > on.last_end) on.last_end = r->end_ns;
  }
  struct feed_item it;
  if (timed && r->seq % on.stride == 0 && r->comm_size > 1) {
    memset(&it, 0, sizeof it);
    it.kind = 1;
    it.u.op.comm = r->comm_id;
    it.u.op.seq = r->seq;
    it.u.op.dur_us = (float)((double)(r->end_ns - r->start_ns) / 1e3);
    it.u.op.gap_us = (float)gap;
    it.u.op.comm_size = u32(r->comm_size);
    it.u.op.comm_rank = u32(r->comm_rank);
    feed_push(&it);
  }
  if (r->sdc_checked) {
    memset(&it, 0, sizeof it);
    it.kind = 2;
    struct cs_online_sdc *s = &it.u.sdc;
    s->comm = r->comm_id;
    s->seq = r->seq;
    s->fp = r->fingerprint;
    s->in_sum = r->in_sum;
    s->in_abs = r->in_abs;
    s->out_sum = r->out_sum;
    s->count = r->count;
    s->root = r->root;
    s->comm_size = u32(r->comm_size);
    s->comm_rank = u32(r->comm_rank);
    s->op = r->op;
    s->checked = r->sdc_checked;
    s->dtype = (int8_t)r->dtype;
    s->redop = (int8_t)(r->redop > 127 ? 127 : r->redop);
    feed_push(&it);
  }
}

/* the harvest thread's client (registered by shim/wiring.c) */
const struct cs_harvest_client cs_online_harvest = {.name = "online", .finished = cs_online_note};

/* ---- exchange thread ---- */
static void drain_feed(void) {
  uint32_t t = atomic_load_explicit(&on.tail, memory_order_relaxed);
  uint32_t h = atomic_load_explicit(&on.head, memory_order_acquire);
  for (; t != h; t++) {
    const struct feed_item *it = &on.feed[t % FEED_CAP];
    uint64_t lost = cs_online_rank_lost(on.st);
    if (it->kind == 1) cs_online_rank_feed_op(on.st, &it->u.op);
    else cs_online_rank_feed_sdc(on.st, &it->u.sdc);
    if (it->kind == 2 && cs_online_rank_lost(on.st) > lost)
      cs_log_once(CS_LOG_WARN, "online: too many checked collectives waiting for an exchange; the oldest are "
                  "dropped (a lower COLLSCOPE_ONLINE_EVERY or a sparser COLLSCOPE_SDC sample keeps up)");
  }
  atomic_store_explicit(&on.tail, t, memory_order_release);
}

/* the abort parks the job's threads (cs_park_begin): that flag is the one state */
bool cs_online_aborting(void) { return atomic_load(&cs_st.park) != 0; }

static void abort_one(void *comm, struct cs_comm *c, void *arg) {
  (void)c; (void)arg;
  CS_NCCL_REAL(ncclCommAbort)((ncclComm_t)comm);
}

static void act_on(const struct cs_online_findings *f, uint64_t exchange, double wait_us, double eval_us) {
  if (on.rank == 0) {
    for (size_t i = 0; i < f->nstragglers; i++) {
      const struct cs_online_straggler *s = &f->stragglers[i];
      cs_log(CS_LOG_WARN, "online: straggler rank %d (%s) on comm %016llx: last in %.0f%% of %zu sampled instances, "
             "lateness %.0f us (median duration %.0f us), kind %s", s->rank, s->host, (unsigned long long)s->comm,
             100 * s->share_last, s->instances, s->lateness_us, s->median_dur_us, cs_det_kind_name(s->kind));
    }
    for (size_t i = 0; i < f->nsdc; i++) {
      const struct cs_online_sdc_finding *s = &f->sdc[i];
      char who[320];
      if (s->suspect_rank >= 0 && s->suspects > 1)
        snprintf(who, sizeof who, "suspect rank %d and %llu more ranks with the same wrong bytes", s->suspect_rank,
                 (unsigned long long)(s->suspects - 1));
      else if (s->suspect_rank >= 0)
        snprintf(who, sizeof who, "suspect rank %d (%s)", s->suspect_rank, s->suspect_host ? s->suspect_host : "?");
      else snprintf(who, sizeof who, "no single suspect (every rank received the same wrong result)");
      char vals[160] = "";
      if (s->check == CS_SDC_CHECK_SUM)
        snprintf(vals, sizeof vals, " (output sum %.17g, expected %.17g, tolerance %.3g)", s->got, s->want, s->tol);
      cs_log(CS_LOG_WARN, "online: SDC: %s seq %llu on comm %016llx, %llu bytes %s: %s check failed%s, %s",
             s->op < CS_OP_COUNT ? cs_op_table[s->op].name : "op", (unsigned long long)s->seq,
             (unsigned long long)s->comm, (unsigned long long)s->bytes, cs_dtype_name(s->dtype),
             cs_sdc_check_name(s->check), vals, who);
    }
    if (f->bad_summaries)
      cs_log(CS_LOG_WARN, "online: exchange %llu: the ranks' contributions did not agree (version or exchange "
             "number); its data was not used", (unsigned long long)exchange);
    cs_log(CS_LOG_DEBUG, "online: exchange %llu: %zu instances, %zu checked collectives compared, %u rounds, "
           "%zu slots lost to collisions; all-reduce %.0f us, evaluation %.0f us", (unsigned long long)exchange,
           f->instances, f->sdc_compared, f->rounds, f->lost_slots, wait_us, eval_us);
  }
  if (f->nsdc && cs_cfg.sdc_action == CS_SDC_ACTION_ABORT) {
    cs_log(CS_LOG_WARN, "online: SDC detected (exchange %llu; rank 0 logs the details); COLLSCOPE_SDC_ACTION=abort: "
           "aborting every NCCL communicator and exiting with status %d", (unsigned long long)exchange,
           CS_SDC_ABORT_STATUS);
    cs_park_begin();                 /* job threads entering NCCL now wait for the exit, and an
                                      * exit of the job's own meanwhile waits for this one */
    atomic_store(&cs_st.ready, 0);   /* nothing new is recorded */
    cs_harvest_stop(2000);           /* write the dump and close the ring */
    sleep_ms(20);                    /* calls already inside NCCL return */
    cs_comm_foreach(abort_one, NULL);
    CS_NCCL_REAL(ncclCommAbort)(on.own);
    _exit(CS_SDC_ABORT_STATUS);
  }
}

/* Why the wait for an exchange ends early; NULL while it may go on. A pending exchange
 * is never left behind: its kernel would hold every device-wide synchronization of the
 * job (cudaDeviceSynchronize, cudaFree, cudaFreeHost) until the peers joined. */
static const char *wait_verdict(int64_t deadline, unsigned *polls) {
  int stop = atomic_load(&on.stop);
  int64_t now = cs_now_ns(CLOCK_MONOTONIC);
  if (stop == 1) return "stop requested";
  if (stop == 2 && now > atomic_load(&on.drain_deadline)) return "at shutdown the other ranks did not join within 2 s";
  if (now > deadline) return "not complete after COLLSCOPE_ONLINE_TIMEOUT (a rank stopped exchanging)";
  if (++*polls % 8 == 0) { /* a peer that died shows up as an asynchronous error */
    ncclResult_t st = ncclSuccess;
    if (CS_NCCL_REAL(ncclCommGetAsyncError)(on.own, &st) != ncclSuccess || (st != ncclSuccess && st != ncclInProgress))
      return "collscope's communicator reports an error (a peer left)";
  }
  return NULL;
}

static void nap_backoff(unsigned *nap) {
  sleep_ms(*nap);
  if (*nap < 20) *nap *= 2;
}

/* Give up on the exchange in flight: abort collscope's communicator (its kernel exits, the
 * device is free again; in NCCL a local operation). */
static void abandon(uint64_t exchange, const char *why) {
  cs_log(stop_is_shutdown() ? CS_LOG_INFO : CS_LOG_WARN, "online exchange off: exchange %llu: %s",
         (unsigned long long)exchange, why);
  if (on.own) CS_NCCL_REAL(ncclCommAbort)(on.own);
  on.own = NULL;
}

/* Wait for a non-blocking call on collscope's communicator to be enqueued: NCCL may
 * return before the collective is on the stream (it connects lazily at the first one). */
static const char *enqueued(ncclResult_t r, int64_t deadline, unsigned *polls, unsigned *nap) {
  while (r == ncclInProgress) {
    ncclResult_t st = ncclInProgress;
    if (CS_NCCL_REAL(ncclCommGetAsyncError)(on.own, &st) != ncclSuccess) st = ncclInternalError;
    if (st != ncclInProgress) { r = st; break; }
    const char *why = wait_verdict(deadline, polls);
    if (why) return why;
    nap_backoff(nap);
  }
  return r == ncclSuccess ? NULL : "ncclAllReduce failed";
}

/* The transport of one round: on.hwire (this rank's contribution) is copied to the device,
 * reduced in place across all ranks -- MIN over the uint64 array, SUM over the uint64 and
 * the double arrays -- and copied back. NULL, or why it failed. */
static const char *reduce_round(int64_t deadline, unsigned *polls) {
  unsigned nap = 1;
  const char *why = NULL;
  void *d = (void *)(uintptr_t)on.dwire;
  struct { size_t off, count; ncclDataType_t type; ncclRedOp_t op; } part[3] = {
    {offsetof(struct cs_online_wire, min), CS_ONLINE_NMIN, ncclUint64, ncclMin},
    {offsetof(struct cs_online_wire, sum), CS_ONLINE_NSUM, ncclUint64, ncclSum},
    {offsetof(struct cs_online_wire, fsum), CS_ONLINE_NFSUM, ncclFloat64, ncclSum},
  };
  cs_tls.depth++;
  if (cs_drvx.cuMemcpyHtoDAsync(on.dwire, on.hwire, CS_ONLINE_WIRE_BYTES, on.stream) != CUDA_SUCCESS)
    why = "cuMemcpyHtoDAsync failed";
  for (int i = 0; i < 3 && !why; i++) {
    char *p = (char *)d + part[i].off;
    ncclResult_t r = CS_NCCL_REAL(ncclAllReduce)(p, p, part[i].count, part[i].type, part[i].op, on.own, (cudaStream_t)on.stream);
    why = enqueued(r, deadline, polls, &nap);
  }
  cs_tls.depth--;
  if (!why && cs_drvx.cuMemcpyDtoHAsync(on.hwire, on.dwire, CS_ONLINE_WIRE_BYTES, on.stream) != CUDA_SUCCESS)
    why = "cuMemcpyDtoHAsync failed";
  while (!why) {
    CUresult q = cs_drvx.cuStreamQuery(on.stream);
    if (q == CUDA_SUCCESS) break;
    if (q != CUDA_ERROR_NOT_READY) { why = "its stream failed"; break; }
    if ((why = wait_verdict(deadline, polls))) break;
    nap_backoff(&nap);
  }
  if (!why) {
    ncclResult_t st = ncclSuccess;
    if (CS_NCCL_REAL(ncclCommGetAsyncError)(on.own, &st) != ncclSuccess || st != ncclSuccess)
      why = "collscope's communicator reports an error";
  }
  return why;
}

/* One exchange (its rounds); false when the feature must stop (error, timeout or stop
 * request). The deadline covers all its rounds. */
static bool exchange_once(uint64_t exchange) {
  drain_feed();
  cs_online_rank_set_drops(on.st, atomic_load(&cs_st.drops) + atomic_load(&on.feed_lost));
  int64_t t0 = cs_now_ns(CLOCK_MONOTONIC), wait_ns = 0, eval_ns = 0;
  int64_t deadline = t0 + (int64_t)cs_cfg.online_timeout_s * 1000000000LL;
  unsigned polls = 0;
  struct cs_online_findings f;
  int rc;
  for (unsigned round = 0;; round++) {
    int64_t a = cs_now_ns(CLOCK_MONOTONIC);
    cs_online_pack(on.st, (uint32_t)exchange, round, on.hwire);
    int64_t b = cs_now_ns(CLOCK_MONOTONIC);
    const char *why = reduce_round(deadline, &polls);
    if (why) {
      abandon(exchange, why);
      return false;
    }
    int64_t c = cs_now_ns(CLOCK_MONOTONIC);
    rc = cs_online_unpack(on.st, (uint32_t)exchange, round, on.hwire, &f);
    int64_t e = cs_now_ns(CLOCK_MONOTONIC);
    eval_ns += (b - a) + (e - c);
    wait_ns += c - b;
    if (rc != 1) break;
  }
  on.reduced_backlog = f.max_backlog; /* the same bytes on every rank: every rank decides alike */
  if (rc == 0) act_on(&f, exchange, (double)wait_ns / 1e3, (double)eval_ns / 1e3);
  return true;
}

static void *exchange_main(void *arg) {
  (void)arg;
  if (cs_drvx.cuCtxSetCurrent(on.ctx) != CUDA_SUCCESS) {
    cs_log(CS_LOG_WARN, "online exchange off: cannot use the world communicator's CUDA context");
    turn_off();
    return NULL;
  }
  unsigned finals = 0;
  for (;;) {
    int stop = atomic_load(&on.stop);
    if (stop == 1) break;
    drain_feed();
    uint64_t due = atomic_load_explicit(&on.trigger, memory_order_relaxed);
    if (on.done < due) {
      if (!exchange_once(on.done + 1)) {
        turn_off();
        break;
      }
      on.done++;
      continue;
    }
    if (stop == 2) {
      /* Shutdown, every due exchange done: one more for what the harvest thread fed since
       * the last one (the job's last checked collectives), then more while any rank still
       * had entries queued, at most FINAL_MAX. Only for a job that exchanged at all (ran
       * K world collectives): a short job's exit gains no all-gather, nor the 2 s wait
       * for a peer that exits later. Every rank runs the same number: they all reach this
       * point after the same world collectives, and decide from the same gathered bytes. */
      if (on.done == 0 || finals >= FINAL_MAX || (finals > 0 && !on.reduced_backlog)) break;
      if (!exchange_once(on.done + 1)) {
        turn_off();
        break;
      }
      on.done++;
      finals++;
      continue;
    }
    sleep_ms(20);
  }
  return NULL;
}

/* ---- shutdown ---- */
/* Every rank ran the same number of world collectives, so the exchanges already due are
 * due everywhere: give them DRAIN_MS to complete (the findings of the job's last steps),
 * then stop. */
static bool stop_thread(void) {
  if (!on.th_running || pthread_equal(pthread_self(), on.th)) return false;
  cs_flush(200); /* the harvest thread feeds what has completed */
  atomic_store(&on.drain_deadline, cs_now_ns(CLOCK_MONOTONIC) + DRAIN_MS * 1000000LL);
  atomic_store(&on.stop, 2);
  pthread_join(on.th, NULL);
  on.th_running = false;
  return true;
}

void cs_online_comm_destroying(void *comm) {
  if (!comm || comm != on.parent) return;
  stop_thread();
  atomic_store(&on.state, ON_OFF);
  on.parent = NULL;
  if (on.own) {
    /* the thread abandons (aborts) any exchange it gives up on; should anything still be
     * in flight on collscope's stream, a destroy would wait for it: abort instead */
    if (cs_drvx.cuStreamQuery(on.stream) == CUDA_SUCCESS) CS_NCCL_REAL(ncclCommDestroy)(on.own);
    else CS_NCCL_REAL(ncclCommAbort)(on.own);
    on.own = NULL;
  }
}

void cs_online_shutdown(void) {
  stop_thread();
  atomic_store(&on.state, ON_OFF);
}

void cs_online_atfork_child(void) {
  /* the thread and the communicator belong to the parent */
  on.th_running = false;
  on.own = NULL;
  on.parent = NULL;
  atomic_store(&on.state, ON_OFF);
}
