/* hooks/online_setup.c: the online exchange's set-up, on the thread that created the
 * world communicator (protocol in online.h, step 1): which communicator is the world,
 * collscope's own communicator split from it within COLLSCOPE_ONLINE_TIMEOUT (or a split
 * without a color, for a rank that cannot take part), its buffers, and the start of the
 * exchange thread (hooks/online.c). Every failure logs one line and turns the feature
 * off; the job's communicators are never waited on. */
#include "online_state.h"

#include <stdlib.h>
#include <unistd.h>

#include "nccl_calls.h"

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
    cs_online_sleep_ms(1);
  }
}

static bool alloc_buffers(void) {
  void *h = NULL;
  if (cs_drv.cuStreamCreate(&cs_on.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return false;
  if (cs_drvx.cuMemAlloc(&cs_on.dwire, CS_ONLINE_WIRE_BYTES) != CUDA_SUCCESS ||
      cs_drvx.cuMemAllocHost(&h, CS_ONLINE_WIRE_BYTES) != CUDA_SUCCESS)
    return false; /* what was allocated stays: freeing device memory synchronizes the device */
  cs_on.hwire = h;
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
enum { SPLIT_RUNNING = 0,
       SPLIT_DONE,
       SPLIT_ABANDONED };
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
  if (!atomic_compare_exchange_strong(&sp.state, &expect, SPLIT_DONE) && child) CS_NCCL_REAL(ncclCommAbort)
  (child);
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
  pthread_t th;
  if (cs_thread_start(&th, split_main, true, "collscope-split"))
    return ncclSystemError; /* the peers' split then times out like a missing rank's */
  int64_t deadline = cs_now_ns(CLOCK_MONOTONIC) + (int64_t)cs_cfg.online_timeout_s * 1000000000LL;
  unsigned nap = 1;
  while (atomic_load(&sp.state) != SPLIT_DONE) {
    if (cs_now_ns(CLOCK_MONOTONIC) > deadline) {
      int expect = SPLIT_RUNNING;
      if (atomic_compare_exchange_strong(&sp.state, &expect, SPLIT_ABANDONED)) return ncclInProgress;
      break; /* completed just now */
    }
    cs_online_sleep_ms(nap);
    if (nap < 16) nap *= 2;
  }
  *child = sp.child;
  return sp.r;
}

/* The world communicator collscope splits: the same one on every rank, whatever each
 * rank's own state, so that they all call the split at the same place. */
static bool is_world(struct cs_comm *info) {
  if (!cs_cfg.online || atomic_load(&cs_on.state) != ON_UNSET) return false;
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
  return atomic_compare_exchange_strong(&cs_on.state, &expect, ON_SETUP);
}

/* A rank that cannot take part still calls the split, without a color: the others' split
 * completes at once, with fewer ranks than the world, and they turn the feature off too. */
static void split_without_color(void *comm, int rank, const char *why) {
  cs_log(CS_LOG_WARN, "online exchange off: %s", why);
  cs_online_off();
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
  cs_on.parent = comm;
  cs_on.parent_id = info->id;
  cs_on.rank = info->rank;
  cs_on.n = info->size;
  cs_on.every = cs_cfg.online_every;
  cs_on.stride = cs_on.every / 16 ? cs_on.every / 16 : 1;
  /* rounded up to a multiple of the CUDA-event sample N (hooks/timing.c) when that at most
   * doubles it: then each fed instance is timed on the event path, small ones too (a
   * shorter stride keeps its value: small instances fed are those whose seq is a multiple
   * of both, the same on every rank) */
  uint64_t sample = cs_cfg.event_sample_mask + 1;
  if (cs_cfg.event_sample_bytes && sample > 1 && sample <= (1u << 16) && 2 * (uint64_t)cs_on.stride >= sample)
    cs_on.stride = (unsigned)((cs_on.stride + sample - 1) / sample * sample);
  cs_on.ctx = ctx;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.minCTAs = 1;
  cfg.maxCTAs = 1;
  cfg.commName = "collscope-online";
  ncclComm_t own = NULL;
  ncclResult_t r = split_bounded(comm, 0, info->rank, &cfg, &own);
  if (r == ncclSuccess && own)
    r = wait_ready(own, cs_cfg.online_timeout_s);
  else if (r == ncclSuccess)
    r = ncclInternalError;
  if (r != ncclSuccess) {
    cs_log(CS_LOG_WARN, "online exchange off: ncclCommSplit of the world communicator %s (%d)",
           r == ncclInProgress ? "did not finish within COLLSCOPE_ONLINE_TIMEOUT (a rank without collscope, or with "
                                 "COLLSCOPE_ONLINE=0 or COLLSCOPE_DISABLE=1, never joins it)"
                               : "failed",
           (int)r);
    if (own) CS_NCCL_REAL(ncclCommAbort)
    (own);
    cs_online_off();
    return;
  }
  int joined = 0;
  if (CS_NCCL_REAL(ncclCommCount)(own, &joined) != ncclSuccess || joined != cs_on.n) {
    /* every rank that joined sees the same count, so all of them stop here */
    cs_log(CS_LOG_WARN, "online exchange off: %d of %d ranks joined collscope's communicator (the others record "
                        "nothing or cannot exchange)",
           joined, cs_on.n);
    CS_NCCL_REAL(ncclCommAbort)
    (own);
    cs_online_off();
    return;
  }
  cs_on.own = own;
  cs_on.feed = calloc(FEED_CAP, sizeof *cs_on.feed);
  cs_on.st = cs_online_rank_new(cs_on.rank, cs_on.n, cs_cfg.host, NULL);
  if (!cs_on.feed || !cs_on.st || !alloc_buffers() || !cs_online_start_thread()) {
    cs_log(CS_LOG_WARN, "online exchange off: cannot allocate its buffers or start its thread");
    CS_NCCL_REAL(ncclCommAbort)
    (own);
    cs_on.own = NULL;
    cs_online_off();
    return;
  }
  cs_log(CS_LOG_INFO, "online: exchange every %u collectives of communicator %016llx (%d ranks)", cs_on.every,
         (unsigned long long)info->id, cs_on.n);
  cs_online_set_state(ON_RUNNING);
}
