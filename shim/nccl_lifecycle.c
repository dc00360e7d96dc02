/* shim/nccl_lifecycle.c: the hand-written NCCL wrappers (NCCL_HOOKED rows of
 * nccl_api.def): unique ids, communicator creation (ids that agree across ranks),
 * finalize/destroy/abort (flush), and group start/end (grouped ops are timed around
 * the outermost ncclGroupEnd). */
#include "nccl_shim.h"
#include "hooks/cuda_driver.h"
#include "hooks/hooks.h"
#include "hooks/sdc_check.h"
#include "hooks/timing.h"
#include <pthread.h>
#include <string.h>

static void comm_record(struct cs_comm *c, int event) {
  struct cs_record r;
  memset(&r, 0, sizeof(r));
  r.type = CS_REC_COMM;
  r.event = (uint8_t)event;
  r.comm_id = c->id;
  r.parent_id = c->parent_id;
  r.comm_size = c->size;
  r.comm_rank = c->rank;
  r.device = c->device;
  r.enqueue_ns = cs_now_ns(CLOCK_REALTIME);
  r.dtype = r.redop = -1;
  cs_record_push(&r);
}

/* Register a new communicator; size/rank/device asked from the real NCCL. */
/* A communicator collscope does not record: the hooks that all ranks must run alike
 * still see it (size and rank only; a non-blocking one is not queried, that would wait
 * for its init). Nothing at all with COLLSCOPE_DISABLE=1. */
static void comm_unrecorded(ncclComm_t comm, ncclResult_t r) {
  if (cs_cfg.disabled) return;
  struct cs_comm c;
  memset(&c, 0, sizeof c);
  c.nonblocking = r == ncclInProgress;
  c.size = c.rank = -1;
  int v;
  cs_tls.depth++;
  if (!c.nonblocking && cs_real_ncclCommCount && cs_real_ncclCommUserRank) {
    if (cs_real_ncclCommCount(comm, &v) == ncclSuccess) c.size = v;
    if (cs_real_ncclCommUserRank(comm, &v) == ncclSuccess) c.rank = v;
  }
  cs_hooks_comm_unrecorded(comm, &c);
  cs_tls.depth--;
}

/* size and rank >= 0: known from the call (an init's nranks and rank). A communicator still
 * being created (non-blocking, or in a group until its outermost ncclGroupEnd) answers no query
 * without waiting or failing (NCCL's ncclCommEnsureReady, init.cc:2748, 379-383): then NCCL is
 * not asked; a blocking one outside a group is ready, and asked. */
static void comm_register_known(ncclComm_t comm, uint64_t id, uint64_t parent, int event, ncclResult_t r, int size,
                                int rank) {
  if (!comm) return;
  if (!cs_active()) {
    comm_unrecorded(comm, r);
    return;
  }
  /* every field is known before the entry is published: collscope's threads read the table */
  struct cs_comm init;
  memset(&init, 0, sizeof init);
  int v;
  init.id = id;
  init.parent_id = parent;
  init.nonblocking = r == ncclInProgress;
  cs_tls.depth++;
  if (size >= 0 && rank >= 0 && (r == ncclInProgress || cs_tls.group_depth > 0)) {
    /* NCCL's device is the one current at the call (ncclCommInitRankConfig: cudaGetDevice) */
    CUdevice dev;
    init.size = size;
    init.rank = rank;
    init.device = cs_drv.loaded && cs_drv.cuCtxGetDevice(&dev) == CUDA_SUCCESS ? (int)dev : -1;
  } else {
    init.size = (cs_real_ncclCommCount && cs_real_ncclCommCount(comm, &v) == ncclSuccess) ? v : -1;
    init.rank = (cs_real_ncclCommUserRank && cs_real_ncclCommUserRank(comm, &v) == ncclSuccess) ? v : -1;
    init.device = (cs_real_ncclCommCuDevice && cs_real_ncclCommCuDevice(comm, &v) == ncclSuccess) ? v : -1;
  }
  cs_tls.depth--;
  struct cs_comm *c = cs_comm_insert(comm, &init);
  if (!c) {
    cs_log_once(CS_LOG_WARN, "communicator table full: ops of further communicators are recorded without comm info");
    comm_unrecorded(comm, r);
    return;
  }
  comm_record(c, event);
  cs_tls.depth++;
  cs_hooks_comm_created(comm, c);
  cs_tls.depth--;
}

static void comm_register(ncclComm_t comm, uint64_t id, uint64_t parent, int event, ncclResult_t r) {
  comm_register_known(comm, id, parent, event, r, -1, -1);
}

static uint64_t uid_hash(const ncclUniqueId *id) { return cs_hash_bytes(id, sizeof(*id), 0); }

/* Child id from the parent's id and how many children the parent had before: every
 * member calls split/shrink on the parent the same number of times, so all agree. */
static uint64_t child_id(ncclComm_t parent, uint64_t salt, uint64_t *parent_id) {
  struct cs_comm *p = cs_comm_lookup(parent);
  uint64_t pid = p ? p->id : (uint64_t)(uintptr_t)parent;
  uint64_t n = p ? atomic_fetch_add(&p->splits, 1) : 0;
  uint64_t buf[3] = {pid, n, salt};
  *parent_id = pid;
  return cs_hash_bytes(buf, sizeof(buf), 1);
}

/* Children NCCL completes later. A split or shrink inside a group only queues its job: NCCL
 * writes *newcomm when the outermost ncclGroupEnd runs the job (group.cc, ncclGroupEndInternal
 * -> groupLaunch; the simulator: tests/sim/nccl/comm.c split_job). Of a non-blocking parent it
 * returns ncclInProgress and writes *newcomm once the child is ready (init.cc:1612-1614, the
 * caller polls the parent with ncclCommGetAsyncError, init.cc:2706-2710). The child's id is
 * taken at the call (child_id: every member calls split/shrink on the parent the same number
 * of times); the entry waits here with the slot NCCL writes, and is registered when NCCL
 * says the child is done: the outermost ncclGroupEnd returning ncclSuccess, or
 * ncclCommGetAsyncError of the parent reporting ncclSuccess. The slot is read only then,
 * while NCCL's contract keeps it alive. No NCCL call is added and nothing waits. */
#define PENDING_MAX 64
struct pending_child {
  ncclComm_t *slot; /* NULL: a free entry */
  ncclComm_t parent;
  uint64_t id, parent_id, group; /* group: the calling thread's group id, 0 outside a group */
};
static struct pending_child pend[PENDING_MAX];
static pthread_mutex_t pend_lock = PTHREAD_MUTEX_INITIALIZER;
/* entries in use: a poll of ncclCommGetAsyncError (a framework's watchdog, every few ms per
 * communicator) takes no lock while no child is pending */
static _Atomic int npend;

static void child_made(ncclComm_t parent, ncclComm_t *newcomm, uint64_t id, uint64_t parent_id, ncclResult_t r) {
  if (!newcomm) return;
  if (r == ncclSuccess && cs_tls.group_depth == 0) { /* a blocking parent outside a group: done */
    if (*newcomm) comm_register(*newcomm, id, parent_id, CS_COMM_SPLIT, r);
    return;
  }
  pthread_mutex_lock(&pend_lock);
  int i = 0;
  while (i < PENDING_MAX && pend[i].slot) i++;
  if (i < PENDING_MAX) {
    pend[i] = (struct pending_child){newcomm, parent, id, parent_id, cs_tls.group_depth > 0 ? cs_tls.group_id : 0};
    atomic_fetch_add(&npend, 1);
  }
  pthread_mutex_unlock(&pend_lock);
  if (i == PENDING_MAX)
    cs_log_once(CS_LOG_WARN, "more than %d communicators being created at once: ops of further ones are recorded "
                             "without comm info",
                PENDING_MAX);
}

/* Take the pending children of `parent` (when not NULL) or of this thread's group `group`
 * (when not 0) off the table, copying them to out (when not NULL); returns their number. */
static int children_take(ncclComm_t parent, uint64_t group, struct pending_child *out) {
  int n = 0;
  if (!atomic_load(&npend)) return 0;
  pthread_mutex_lock(&pend_lock);
  for (int i = 0; i < PENDING_MAX; i++) {
    if (!pend[i].slot || !((parent && pend[i].parent == parent) || (group && pend[i].group == group))) continue;
    if (out) out[n] = pend[i];
    n++;
    pend[i].slot = NULL;
    atomic_fetch_sub(&npend, 1);
  }
  pthread_mutex_unlock(&pend_lock);
  return n;
}

/* NCCL completed the children of `parent` or of this thread's group `group`: register those it
 * made (a NULL slot: NCCL_SPLIT_NOCOLOR or a failure). */
static void children_done(ncclComm_t parent, uint64_t group) {
  struct pending_child done[PENDING_MAX];
  int n = children_take(parent, group, done);
  for (int i = 0; i < n; i++) {
    ncclComm_t c = __atomic_load_n(done[i].slot, __ATOMIC_ACQUIRE); /* NCCL may have written it on its thread */
    if (c) comm_register(c, done[i].id, done[i].parent_id, CS_COMM_SPLIT, ncclSuccess);
  }
}

/* A group that ended non-blocking (ncclInProgress): its children complete with the parent. */
static void group_children_wait_parent(uint64_t group) {
  pthread_mutex_lock(&pend_lock);
  for (int i = 0; i < PENDING_MAX; i++)
    if (pend[i].slot && pend[i].group == group) pend[i].group = 0;
  pthread_mutex_unlock(&pend_lock);
}

CS_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  CS_RESOLVE(ncclCommGetAsyncError, ncclSystemError);
  if (cs_tls.depth || cs_cfg.disabled) return cs_real_ncclCommGetAsyncError(comm, asyncError);
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclCommGetAsyncError(comm, asyncError);
  cs_tls.depth--;
  if (r == ncclSuccess && asyncError && *asyncError == ncclSuccess && cs_active()) children_done(comm, 0);
  return r;
}

CS_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  CS_RESOLVE(ncclGetUniqueId, ncclSystemError);
  ncclResult_t r = cs_real_ncclGetUniqueId(uniqueId);
  /* also when nested (ncclCommInitAll calls it): remember it for the comm ids */
  if (r == ncclSuccess && uniqueId) cs_tls.last_uid_hash = uid_hash(uniqueId);
  return r;
}

static bool started(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

CS_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                              ncclConfig_t *config) {
  CS_RESOLVE(ncclCommInitRankConfig, ncclSystemError);
  if (cs_tls.depth) return cs_real_ncclCommInitRankConfig(comm, nranks, commId, rank, config);
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclCommInitRankConfig(comm, nranks, commId, rank, config);
  cs_tls.depth--;
  if (started(r) && comm) comm_register_known(*comm, uid_hash(&commId), 0, CS_COMM_INIT, r, nranks, rank);
  return r;
}

CS_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  CS_RESOLVE(ncclCommInitRank, ncclSystemError);
  if (cs_tls.depth) return cs_real_ncclCommInitRank(comm, nranks, commId, rank);
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclCommInitRank(comm, nranks, commId, rank);
  cs_tls.depth--;
  if (started(r) && comm) comm_register_known(*comm, uid_hash(&commId), 0, CS_COMM_INIT, r, nranks, rank);
  return r;
}

CS_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist) {
  CS_RESOLVE(ncclCommInitAll, ncclSystemError);
  if (cs_tls.depth) return cs_real_ncclCommInitAll(comm, ndev, devlist);
  cs_tls.last_uid_hash = 0;
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclCommInitAll(comm, ndev, devlist);
  cs_tls.depth--;
  if (started(r) && comm) {
    /* NCCL made the id itself (a nested ncclGetUniqueId); fall back to the first
     * comm's address if that call was not visible. */
    uint64_t id = cs_tls.last_uid_hash ? cs_tls.last_uid_hash : cs_hash_bytes(&comm[0], sizeof(comm[0]), 2);
    for (int i = 0; i < ndev; i++) comm_register(comm[i], id, 0, CS_COMM_INIT, r);
  }
  return r;
}

CS_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                                ncclUniqueId *commIds, ncclConfig_t *config) {
  CS_RESOLVE(ncclCommInitRankScalable, ncclSystemError);
  if (cs_tls.depth) return cs_real_ncclCommInitRankScalable(newcomm, nranks, myrank, nId, commIds, config);
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclCommInitRankScalable(newcomm, nranks, myrank, nId, commIds, config);
  cs_tls.depth--;
  if (started(r) && newcomm && commIds && nId > 0)
    comm_register_known(*newcomm, uid_hash(&commIds[0]), 0, CS_COMM_INIT, r, nranks, myrank);
  return r;
}

CS_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                     ncclConfig_t *config) {
  CS_RESOLVE(ncclCommSplit, ncclSystemError);
  if (cs_tls.depth) return cs_real_ncclCommSplit(comm, color, key, newcomm, config);
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclCommSplit(comm, color, key, newcomm, config);
  cs_tls.depth--;
  if (cs_active()) {
    uint64_t parent;
    uint64_t id = child_id(comm, (uint64_t)(uint32_t)color, &parent);
    if (started(r)) child_made(comm, newcomm, id, parent, r);
  }
  return r;
}

CS_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                      ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  CS_RESOLVE(ncclCommShrink, ncclSystemError);
  if (cs_tls.depth)
    return cs_real_ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  cs_tls.depth--;
  if (cs_active()) {
    uint64_t parent;
    uint64_t id = child_id(comm, 0x5348524bULL /* "SHRK" */, &parent);
    if (started(r)) child_made(comm, newcomm, id, parent, r);
  }
  return r;
}

/* finalize / destroy / abort: record, forward, then flush what is complete */
static ncclResult_t comm_end(ncclResult_t (*real)(ncclComm_t), ncclComm_t comm, int event, bool remove) {
  if (cs_tls.depth || !cs_active()) return real(comm);
  struct cs_comm *c = cs_comm_lookup(comm);
  if (c) comm_record(c, event);
  children_take(comm, 0, NULL); /* the parent goes away: children not completed by then are forgotten */
  cs_tls.depth++;
  cs_hooks_comm_destroying(comm);
  ncclResult_t r = real(comm);
  cs_tls.depth--;
  if (remove && c) cs_comm_remove(comm);
  cs_flush(200);
  return r;
}

CS_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  CS_RESOLVE(ncclCommFinalize, ncclSystemError);
  return comm_end(cs_real_ncclCommFinalize, comm, CS_COMM_FINALIZE, false);
}

CS_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  CS_RESOLVE(ncclCommDestroy, ncclSystemError);
  return comm_end(cs_real_ncclCommDestroy, comm, CS_COMM_DESTROY, true);
}

CS_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  CS_RESOLVE(ncclCommAbort, ncclSystemError);
  return comm_end(cs_real_ncclCommAbort, comm, CS_COMM_ABORT, true);
}

CS_EXPORT ncclResult_t ncclGroupStart(void) {
  CS_RESOLVE(ncclGroupStart, ncclSystemError);
  if (cs_tls.depth || !cs_active()) return cs_real_ncclGroupStart();
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclGroupStart();
  cs_tls.depth--;
  if (r == ncclSuccess) cs_group_started();
  return r;
}

/* ncclGroupSimulateEnd ends the group as ncclGroupEnd does (NCCL's group depth goes down, its
 * tasks are estimated, never launched), so the shim's group ends too: at the outermost one the
 * group's records are dropped and counted (drops), children it queued are never made. */
CS_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  CS_RESOLVE(ncclGroupSimulateEnd, ncclSystemError);
  if (cs_tls.depth || !cs_active() || cs_tls.group_depth == 0) return cs_real_ncclGroupSimulateEnd(simInfo);
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclGroupSimulateEnd(simInfo);
  cs_tls.depth--;
  cs_tls.group_depth--;
  if (cs_tls.group_depth == 0) {
    size_t n = cs_group_discard(cs_sdc_group_simulated);
    if (n) atomic_fetch_add_explicit(&cs_st.drops, n, memory_order_relaxed);
    cs_sdc_group_launched(-1);
    children_take(NULL, cs_tls.group_id, NULL); /* a group only simulated: its children are never made */
  }
  return r;
}

CS_EXPORT ncclResult_t ncclGroupEnd(void) {
  CS_RESOLVE(ncclGroupEnd, ncclSystemError);
  if (cs_tls.depth || !cs_active() || cs_tls.group_depth == 0) return cs_real_ncclGroupEnd();
  bool outermost = cs_tls.group_depth == 1;
  if (outermost) cs_group_launch_begin();
  cs_tls.depth++;
  ncclResult_t r = cs_real_ncclGroupEnd();
  cs_tls.depth--;
  cs_tls.group_depth--;
  if (outermost) {
    cs_group_launch_returned((int)r, (int)ncclInProgress); /* end events before the SDC checks */
    cs_sdc_group_launched((int)r);
    cs_group_launch_end((int)r, (int)ncclInProgress);
    if (r == ncclSuccess)
      children_done(NULL, cs_tls.group_id);
    else if (r == ncclInProgress)
      group_children_wait_parent(cs_tls.group_id);
    else
      children_done(NULL, cs_tls.group_id); /* failed: NCCL left the slots NULL */
  }
  return r;
}
