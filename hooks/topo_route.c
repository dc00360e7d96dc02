/* hooks/topo_route.c: topology-ordered routing of AllReduce/Broadcast/Reduce (see
 * topo_route.h for the protocol). Hot path (before_op): one relaxed atomic load when the
 * feature is off; when on, a lock-free open-addressing lookup of the communicator. */
#include "topo_route.h"

#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collscope/topology.h"
#include "cuda_driver.h"
#include "nccl_calls.h"

#define REC 512    /* per rank: host name [256] + SLURM_TOPOLOGY_ADDR [256] */
#define NSLOT 1024 /* communicators tracked at once (power of two) */
#define TOMB ((void *)1)

enum { ST_FREE = 0,
       ST_PENDING,
       ST_ROUTED,
       ST_NONE };

struct route {
  _Atomic(void *) key;
  _Atomic int state;
  uint64_t id;
  int n, rank;
  void *newcomm;
  int *newrank; /* user's rank -> rank in newcomm */
  /* the all-gather in flight */
  CUcontext ctx;
  CUstream stream;
  CUdeviceptr dbuf;
  char *hbuf;
};

static struct route slots[NSLOT];
_Atomic int cs_topo_route_active; /* slots in use: 0 = nothing to look up (hooks.h) */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int mode; /* 0 off, 1 COLLSCOPE_TOPOLOGY, 2 SLURM_TOPOLOGY_ADDR */
static struct cs_topo *topo;
static char topo_path[1024];

/* The file is parsed on the job's thread (in its first communicator's init), so the
 * parse is bounded: at most this many work units (a host, a Switches= name, 64 bytes of
 * text; parsing is linear, so time is proportional: about 0.2-0.4 s of CPU at the limit
 * on a loaded 2-core machine), else one line and NCCL's order. A count, not a clock:
 * every rank given the same file decides the same, where a timeout could let one rank
 * give up while the others enqueue the host-name all-gather or the split that it then
 * never joins. 2^19 units admit a fleet of ~500k hosts written compactly (a
 * 131,072-host tree costs ~135k); larger files are for `collscope topo plan`. */
#define ROUTE_WORK_BUDGET (1u << 19)

static void load_once(void) {
  const char *f = getenv("COLLSCOPE_TOPOLOGY");
  if (f && *f) {
    char err[512];
    const struct cs_topo_limits lim = {.max_work = ROUTE_WORK_BUDGET};
    snprintf(topo_path, sizeof topo_path, "%s", f);
    if (cs_topo_load_limited(f, CS_TOPO_AUTO, &lim, &topo, err, sizeof err)) {
      cs_log(CS_LOG_WARN, "COLLSCOPE_TOPOLOGY: %s; communicators keep NCCL's order", err);
      return;
    }
    mode = 1;
  } else {
    const char *a = getenv("SLURM_TOPOLOGY_ADDR");
    if (!a || !*a) return;
    mode = 2;
  }
  if (!cs_driver_xchg_load()) {
    cs_log(CS_LOG_WARN, "topology routing: CUDA driver entry points not found; communicators keep NCCL's order");
    mode = 0;
  }
}

static size_t slot_of(void *comm) { return (size_t)(((uintptr_t)comm >> 4) * 0x9E3779B97F4A7C15ULL >> 54) & (NSLOT - 1); }

static struct route *lookup(void *comm) {
  size_t i = slot_of(comm);
  for (size_t k = 0; k < NSLOT; k++, i = (i + 1) & (NSLOT - 1)) {
    void *key = atomic_load_explicit(&slots[i].key, memory_order_acquire);
    if (key == comm) return &slots[i];
    if (!key) return NULL;
  }
  return NULL;
}

static struct route *claim(void *comm) {
  size_t i = slot_of(comm);
  for (size_t k = 0; k < NSLOT; k++, i = (i + 1) & (NSLOT - 1)) {
    void *key = atomic_load_explicit(&slots[i].key, memory_order_acquire);
    if ((key == NULL || key == TOMB) && atomic_load(&slots[i].state) == ST_FREE) {
      int f = ST_FREE;
      if (atomic_compare_exchange_strong(&slots[i].state, &f, ST_NONE)) return &slots[i];
    }
  }
  return NULL;
}

/* Buffers are never freed while the job runs: cuMemFree and cuMemFreeHost synchronize
 * the device, which can deadlock against collectives in flight that wait for a peer.
 * Released buffers go to a small per-process cache (per context) for the next
 * communicator; a full cache leaks them ((n+1) x 512 bytes each). */
#define NCACHE 64
static struct {
  CUcontext ctx;
  CUdeviceptr d;
  char *h;
  size_t cap;
} cache[NCACHE];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int get_buffers(CUcontext ctx, size_t bytes, CUdeviceptr *d, char **h) {
  pthread_mutex_lock(&cache_lock);
  for (int i = 0; i < NCACHE; i++)
    if (cache[i].ctx == ctx && cache[i].cap >= bytes) {
      *d = cache[i].d;
      *h = cache[i].h;
      cache[i].ctx = NULL;
      pthread_mutex_unlock(&cache_lock);
      return 0;
    }
  pthread_mutex_unlock(&cache_lock);
  if (cs_drvx.cuMemAlloc(d, bytes) != CUDA_SUCCESS) return -1;
  if (cs_drvx.cuMemAllocHost((void **)h, bytes) != CUDA_SUCCESS) {
    *h = NULL;
    return -1; /* *d stays allocated: put back into the cache by the caller */
  }
  return 0;
}

static void put_buffers(CUcontext ctx, CUdeviceptr d, char *h, size_t cap) {
  pthread_mutex_lock(&cache_lock);
  for (int i = 0; i < NCACHE; i++)
    if (!cache[i].ctx) {
      cache[i].ctx = ctx;
      cache[i].d = d;
      cache[i].h = h;
      cache[i].cap = cap;
      break;
    }
  pthread_mutex_unlock(&cache_lock);
}

static void release_buffers(struct route *r) {
  CUcontext old;
  if (!r->ctx) return;
  cs_drv.cuCtxPushCurrent(r->ctx);
  if (r->stream) cs_drvx.cuStreamDestroy(r->stream);
  cs_drv.cuCtxPopCurrent(&old);
  if (r->dbuf && r->hbuf) put_buffers(r->ctx, r->dbuf, r->hbuf, (size_t)(r->n + 1) * REC);
  r->stream = NULL;
  r->dbuf = 0;
  r->hbuf = NULL;
  r->ctx = NULL;
}

void cs_topo_route_comm_created(void *comm, struct cs_comm *info) {
  pthread_once(&once, load_once);
  if (!mode || !comm || !info || info->size <= 1 || info->rank < 0) return;
  if (cs_tls.group_depth > 0) {
    cs_log_once(CS_LOG_INFO, "topology routing: communicators created inside a group keep NCCL's order");
    return;
  }
  /* a non-blocking communicator may still be joining: wait for it (every rank is in
   * its init, so this ends), sleeping between polls */
  ncclResult_t st = ncclSuccess;
  for (int k = 0; cs_nccl.ncclCommGetAsyncError((ncclComm_t)comm, &st) == ncclSuccess && st == ncclInProgress; k++) {
    struct timespec ts = {0, k < 100 ? 100000 : 2000000};
    nanosleep(&ts, NULL);
  }
  if (st != ncclSuccess) return; /* init failed: nothing to route */
  struct route *r = claim(comm);
  if (!r) {
    cs_log_once(CS_LOG_WARN, "topology routing: more than %d communicators; the others keep NCCL's order", NSLOT);
    return;
  }
  r->n = info->size;
  r->rank = info->rank;
  r->id = info->id;
  r->newcomm = NULL;
  r->newrank = NULL;
  r->ctx = NULL;
  r->stream = NULL;
  r->dbuf = 0;
  r->hbuf = NULL;
  size_t bytes = (size_t)(r->n + 1) * REC;
  const char *why = NULL;
  if (cs_drv.cuCtxGetCurrent(&r->ctx) != CUDA_SUCCESS || !r->ctx) {
    why = "no current CUDA context";
    r->ctx = NULL;
  } else if (cs_drv.cuStreamCreate(&r->stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    why = "cuStreamCreate";
    r->stream = NULL;
  } else if (get_buffers(r->ctx, bytes, &r->dbuf, &r->hbuf))
    why = "cuMemAlloc/cuMemAllocHost";
  if (why) {
    cs_log(CS_LOG_WARN, "topology routing: %s failed; communicator %016llx keeps NCCL's order", why,
           (unsigned long long)info->id);
    release_buffers(r);
    atomic_store(&r->state, ST_FREE);
    return;
  }
  char *mine = r->hbuf + (size_t)r->n * REC;
  memset(mine, 0, REC);
  snprintf(mine, 256, "%s", cs_cfg.host);
  const char *addr = getenv("SLURM_TOPOLOGY_ADDR");
  if (addr) snprintf(mine + 256, 256, "%s", addr);
  CUdeviceptr dmine = r->dbuf + (CUdeviceptr)((size_t)r->n * REC);
  ncclResult_t nr = ncclSuccess;
  if (cs_drvx.cuMemcpyHtoDAsync(dmine, mine, REC, r->stream) != CUDA_SUCCESS)
    why = "cuMemcpyHtoDAsync";
  else if ((nr = cs_nccl.ncclAllGather((const void *)dmine, (void *)r->dbuf, REC, ncclChar, (ncclComm_t)comm,
                                       (cudaStream_t)r->stream)) != ncclSuccess &&
           nr != ncclInProgress)
    why = "ncclAllGather of the host names";
  if (nr == ncclInProgress) nr = ncclSuccess;
  if (why) {
    /* nothing of ours is in flight (or the all-gather was refused): drop the slot */
    cs_log(CS_LOG_WARN, "topology routing: %s failed (%d); communicator %016llx keeps NCCL's order", why, (int)nr,
           (unsigned long long)info->id);
    if (nr == ncclSuccess) release_buffers(r); /* else: leave the buffers, the peers' may use ours */
    atomic_store(&r->state, ST_FREE);
    return;
  }
  cs_drvx.cuMemcpyDtoHAsync(r->hbuf, r->dbuf, (size_t)r->n * REC, r->stream);
  atomic_store(&r->state, ST_PENDING);
  atomic_store_explicit(&r->key, comm, memory_order_release);
  atomic_fetch_add(&cs_topo_route_active, 1);
}

/* Wait for the host names, plan, maybe split. Runs at the first call on the comm. */
static void finish(struct route *r, void *comm) {
  CUcontext old;
  cs_drv.cuCtxPushCurrent(r->ctx);
  CUresult cr = cs_drvx.cuStreamSynchronize(r->stream);
  cs_drv.cuCtxPopCurrent(&old);
  int n = r->n;
  const char **hosts = calloc((size_t)n, sizeof *hosts);
  const char **addrs = calloc((size_t)n, sizeof *addrs);
  struct cs_topo *t = topo, *own = NULL;
  char err[512] = "";
  int state = ST_NONE;
  if (cr != CUDA_SUCCESS || !hosts || !addrs) {
    cs_log(CS_LOG_WARN, "topology routing: the host-name all-gather failed; communicator %016llx keeps NCCL's order",
           (unsigned long long)r->id);
    goto out;
  }
  for (int i = 0; i < n; i++) {
    char *rec = r->hbuf + (size_t)i * REC;
    rec[255] = rec[511] = '\0';
    hosts[i] = rec;
    addrs[i] = rec + 256;
  }
  if (mode == 2) {
    if (cs_topo_from_addrs(addrs, (size_t)n, getenv("SLURM_TOPOLOGY_ADDR_PATTERN"), &own, err, sizeof err)) {
      cs_log(CS_LOG_WARN, "topology routing: %s; communicator %016llx keeps NCCL's order", err, (unsigned long long)r->id);
      goto out;
    }
    /* the host is the address' last component */
    for (int i = 0; i < n; i++) {
      char *dot = strrchr((char *)addrs[i], '.');
      hosts[i] = dot ? dot + 1 : addrs[i];
    }
    t = own;
  }
  struct cs_plan p;
  if (cs_topo_plan(t, hosts, (size_t)n, &p, err, sizeof err)) {
    cs_log(CS_LOG_WARN, "topology routing: communicator %016llx: %s (in %s); it keeps NCCL's order",
           (unsigned long long)r->id, err, mode == 1 ? topo_path : "SLURM_TOPOLOGY_ADDR");
    goto out;
  }
  if (p.after.groups[1] > 1 && p.changed) {
    ncclComm_t nc = NULL;
    ncclResult_t res = cs_nccl.ncclCommSplit((ncclComm_t)comm, 0, (int)p.pos[r->rank], &nc, NULL);
    for (int k = 0; res == ncclInProgress && nc; k++) { /* non-blocking parent */
      ncclResult_t st = ncclSuccess;
      if (cs_nccl.ncclCommGetAsyncError(nc, &st) != ncclSuccess) {
        res = ncclSystemError;
        break;
      }
      res = st;
      if (res == ncclInProgress) {
        struct timespec ts = {0, k < 100 ? 100000 : 2000000};
        nanosleep(&ts, NULL);
      }
    }
    int *map = malloc((size_t)n * sizeof *map);
    if (res != ncclSuccess || !nc || !map) {
      cs_log(CS_LOG_WARN, "topology routing: ncclCommSplit failed (%d); communicator %016llx keeps NCCL's order",
             (int)res, (unsigned long long)r->id);
      free(map);
      if (res == ncclSuccess && nc) cs_nccl.ncclCommDestroy(nc);
    } else {
      for (int i = 0; i < n; i++) map[i] = (int)p.pos[i];
      r->newcomm = nc;
      r->newrank = map;
      state = ST_ROUTED;
      if (r->rank == 0)
        cs_log(CS_LOG_INFO,
               "topology routing: communicator %016llx (%d ranks, %ld hosts, %ld leaves) reordered: ring hops "
               "crossing leaves %ld -> %ld, tree edges %ld -> %ld",
               (unsigned long long)r->id, n, p.after.groups[0], p.after.groups[1], p.before.ring[1],
               p.after.ring[1], p.before.tree[1], p.after.tree[1]);
    }
  }
  cs_plan_free(&p);
out:
  free(hosts);
  free(addrs);
  cs_topo_free(own);
  if (cr == CUDA_SUCCESS) release_buffers(r);
  atomic_store_explicit(&r->state, state, memory_order_release);
}

void cs_topo_route_before_op(struct cs_call *c) {
  if (CS_LIKELY(atomic_load_explicit(&cs_topo_route_active, memory_order_relaxed) == 0)) return;
  struct route *r = lookup(c->comm);
  if (!r) return;
  int st = atomic_load_explicit(&r->state, memory_order_acquire);
  if (CS_UNLIKELY(st == ST_PENDING)) {
    if (cs_tls.group_depth > 0) {
      cs_log_once(CS_LOG_INFO, "topology routing: a communicator's first call is inside a group; it keeps NCCL's order");
      atomic_store(&r->state, ST_NONE);
      return;
    }
    finish(r, c->comm);
    st = atomic_load_explicit(&r->state, memory_order_acquire);
  }
  if (st != ST_ROUTED) return;
  if (c->op == CS_OP_AllReduce) {
    c->comm = r->newcomm;
  } else if (c->op == CS_OP_Broadcast || c->op == CS_OP_Reduce) {
    c->comm = r->newcomm;
    if (c->root >= 0 && c->root < r->n) c->root = r->newrank[c->root];
  }
}

void cs_topo_route_comm_destroying(void *comm) {
  if (atomic_load_explicit(&cs_topo_route_active, memory_order_relaxed) == 0) return;
  struct route *r = lookup(comm);
  if (!r) return;
  int st = atomic_load(&r->state);
  if (st == ST_ROUTED && r->newcomm) cs_nccl.ncclCommDestroy((ncclComm_t)r->newcomm);
  if (r->stream && cs_drvx.cuStreamQuery(r->stream) == CUDA_SUCCESS) release_buffers(r); /* else: still in flight, leak */
  free(r->newrank);
  r->newrank = NULL;
  r->newcomm = NULL;
  atomic_store_explicit(&r->key, TOMB, memory_order_release);
  atomic_store(&r->state, ST_FREE);
  atomic_fetch_sub(&cs_topo_route_active, 1);
}
