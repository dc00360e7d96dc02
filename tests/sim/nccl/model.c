/* tests/sim/nccl/model.c: what a collective costs on the modeled clock
 * (COLLSCOPE_SIM_CLOCK=model, tests/sim/cuda/model.c).
 *
 * An item (the fused ops of one comm launch) arrives at its stream's virtual time. Items
 * with a collective complete on every member at the latest member's arrival plus the
 * longest member's modeled cost (each rank publishes both on the comm's vt board), as a
 * synchronising ring does. Items of only Send/Recv complete at the rank's own arrival plus
 * their cost (the peer's arrival is not exchanged).
 *
 * Cost of one op, after NCCL 2.28.9's tuning model (src/graph/tuning.cc):
 *   base latency 8.4 us (Ring/Simple, tuning.cc:143-144) + nsteps x step, nsteps = 2(n-1)
 *   for AllReduce, n-1 for ReduceScatter/AllGather, n for the rest (tuning.cc:268-270);
 *   a step sends one chunk (AllReduce: bytes/n; ReduceScatter/AllGather: one rank's
 *   part) over every ring edge at once, so it takes the slowest edge's latency plus
 *   chunk / bandwidth. Edge latency: 3.4 us inside a host (NVLink Ring/Simple,
 *   tuning.cc:150-151), 14 us between hosts (NET Ring/Simple, tuning.cc:162-163), plus the
 *   `link:` fault's us of that host pair; bandwidth: 150 GB/s inside a host,
 *   COLLSCOPE_SIMNET_GBPS (Gbit/s, default 100) between hosts. Fabric (with a
 *   COLLSCOPE_SIM_TOPOLOGY map): an edge between two leaves crosses two more switches
 *   (+1 us) and shares its leaves' uplinks: a leaf of H hosts has H x NIC / COLLSCOPE_SIM_OVERSUB
 *   (default 2, i.e. 2:1) up and down; the ring edges leaving (entering) a leaf split its
 *   uplink (downlink) evenly, so a ring that crosses leaves more often is slower. Broadcast/Reduce are
 *   pipelined chains: nsteps latencies plus bytes / the slowest bandwidth once.
 *   Pairwise ops (AlltoAll, Gather, Scatter): n-1 steps of one peer's block over the
 *   slowest pair. Send/Recv: one step on the pair's edge. One rank: a local copy.
 * The total is divided by the GPU model's speed and multiplied by the item's jitter factor
 * (keyed by the comm and the instance, so every member draws the same). */
#include "simnccl.h"
#include <stdlib.h>
#include <string.h>

#define BASE_LAT_NS 8400.0     /* tuning.cc:143-144 baseLatencies Ring Simple */
#define NVL_LAT_NS 3400.0      /* tuning.cc:150-151 hwLatencies NVLINK Ring Simple */
#define NET_LAT_NS 14000.0     /* tuning.cc:162-163 hwLatencies NET Ring Simple */
#define NVL_BYTES_PER_NS 150.0 /* 150 GB/s inside a host */

static double net_bytes_per_ns(void) {
  static double bpns;
  if (bpns <= 0) {
    const char *v = getenv("COLLSCOPE_SIMNET_GBPS");
    double g = v ? atof(v) : 0;
    bpns = (g > 0 ? g : 100.0) / 8.0;
  }
  return bpns;
}

#define FABRIC_HOP_NS 1000.0 /* two more switches between leaves */

static double oversub(void) {
  static double o;
  if (o <= 0) {
    const char *v = getenv("COLLSCOPE_SIM_OVERSUB");
    double x = v ? atof(v) : 0;
    o = x >= 1 && x <= 64 ? x : 2.0;
  }
  return o;
}

struct edge { double lat, bpns; };
/* the op being costed: its seq selects the link/nic faults whose onset has passed */
static __thread long long cost_seq = -1;
static struct edge edge_of(struct ncclComm *c, int a, int b) {
  const char *ha = c->shm->ranks[a].host, *hb = c->shm->ranks[b].host;
  struct edge e;
  if (!strcmp(ha, hb)) { e.lat = NVL_LAT_NS; e.bpns = NVL_BYTES_PER_NS; }
  else { e.lat = NET_LAT_NS; e.bpns = net_bytes_per_ns(); }
  if (sn_nfaults) {
    double scale = 1.0;
    e.lat += 1000.0 * sn_link_delay_us(ha, hb, cost_seq, &scale);
    e.bpns *= scale;
  }
  return e;
}

/* Fabric: the ring edges that leave (out) or enter leaf `leaf` from another leaf */
static int leaf_flows(struct ncclComm *c, const char *leaf, int out) {
  int n = 0;
  for (int p = 0; p < c->nranks; p++) {
    const char *hs = c->shm->ranks[c->ring[p]].host, *hd = c->shm->ranks[c->ring[(p + 1) % c->nranks]].host;
    const char *ls = sn_leaf_of(hs), *ld = sn_leaf_of(hd);
    if (!ls || !ld || !strcmp(ls, ld)) continue;
    n += !strcmp(out ? ls : ld, leaf);
  }
  return n;
}
/* a ring edge's bandwidth and latency with the fabric: an inter-leaf edge gets its share of
 * the source leaf's uplink and the destination leaf's downlink, at most the NIC's */
static struct edge ring_edge(struct ncclComm *c, int p) {
  int a = c->ring[p], b = c->ring[(p + 1) % c->nranks];
  struct edge e = edge_of(c, a, b);
  const char *la = sn_leaf_of(c->shm->ranks[a].host), *lb = sn_leaf_of(c->shm->ranks[b].host);
  if (!la || !lb || !strcmp(la, lb)) return e;
  double nic = net_bytes_per_ns();
  double up = sn_leaf_hosts(la) * nic / oversub() / leaf_flows(c, la, 1);
  double down = sn_leaf_hosts(lb) * nic / oversub() / leaf_flows(c, lb, 0);
  if (up < e.bpns) e.bpns = up;
  if (down < e.bpns) e.bpns = down;
  e.lat += FABRIC_HOP_NS;
  return e;
}

/* the slowest step moving `chunk` bytes over every ring edge at once */
static double ring_step(struct ncclComm *c, double chunk) {
  double worst = 0;
  for (int p = 0; p < c->nranks; p++) {
    struct edge e = ring_edge(c, p);
    double t = e.lat + chunk / e.bpns;
    if (t > worst) worst = t;
  }
  return worst;
}
static double pairs_step(struct ncclComm *c, double chunk) {
  double worst = 0;
  for (int a = 0; a < c->nranks; a++)
    for (int b = 0; b < c->nranks; b++) {
      if (a == b) continue;
      struct edge e = edge_of(c, a, b);
      double t = e.lat + chunk / e.bpns;
      if (t > worst) worst = t;
    }
  return worst;
}
static double chain_cost(struct ncclComm *c, double bytes) {
  double lat = 0, bpns = 1e30;
  for (int p = 0; p < c->nranks; p++) {
    struct edge e = ring_edge(c, p);
    if (e.lat > lat) lat = e.lat;
    if (e.bpns < bpns) bpns = e.bpns;
  }
  return c->nranks * lat + bytes / bpns;
}

static double op_ns(struct ncclComm *c, const struct sn_op *op) {
  int n = c->nranks;
  double es = (double)sn_type_size(op->dtype), bytes = (double)op->count * es;
  if (n == 1) return BASE_LAT_NS + bytes / NVL_BYTES_PER_NS;
  switch (op->coll) {
  case SN_ALLREDUCE: return BASE_LAT_NS + 2.0 * (n - 1) * ring_step(c, bytes / n);
  case SN_REDUCESCATTER:
  case SN_ALLGATHER: return BASE_LAT_NS + (double)(n - 1) * ring_step(c, bytes);
  case SN_BROADCAST:
  case SN_REDUCE: return BASE_LAT_NS + chain_cost(c, bytes);
  case SN_ALLTOALL:
  case SN_GATHER:
  case SN_SCATTER: return BASE_LAT_NS + (double)(n - 1) * pairs_step(c, bytes);
  default: {   /* Send/Recv: the pair's edge */
    struct edge e = edge_of(c, c->rank, op->root);
    return e.lat + bytes / e.bpns;
  }
  }
}

static int has_collective(const struct sn_op *ops, int nops) {
  for (int i = 0; i < nops; i++)
    if (ops[i].coll != SN_SEND && ops[i].coll != SN_RECV) return 1;
  return 0;
}

uint64_t sn_model_item_ns(struct ncclComm *c, const struct sn_op *ops, int nops) {
  double ns = 0;
  for (int i = 0; i < nops; i++) {
    cost_seq = (long long)ops[i].seq;
    ns += op_ns(c, &ops[i]);
  }
  cost_seq = -1;
  ns /= simcuda_model_speed();
  /* jitter: collectives keyed by the comm (creation index, size) and the instance, so the
   * members of a job's comms draw the same factors run after run (the segment name is
   * random); Send/Recv-only items also by the rank */
  uint64_t key = ((uint64_t)c->index << 56) ^ ((uint64_t)c->nranks << 40) ^ c->vt_gen;
  if (!has_collective(ops, nops)) key ^= (uint64_t)(c->rank + 1) << 48;
  ns *= simcuda_model_noise(key);
  return (uint64_t)(ns + 0.5);
}

static int aborted(struct ncclComm *c) { return atomic_load(&c->shm->abort) != 0; }

void sn_model_item_done(struct ncclComm *c, const struct sn_op *ops, int nops, uint64_t v0) {
  uint64_t d = sn_model_item_ns(c, ops, nops);
  uint32_t gen = ++c->vt_gen;
  if (!has_collective(ops, nops) || c->nranks == 1) {
    simcuda_model_advance_to(v0 + d);
    return;
  }
  struct sn_vt_entry *mine = &c->shm->vt_board[gen & 1][c->rank];
  mine->t = v0;
  mine->d = d;
  atomic_store_explicit(&mine->gen, gen, memory_order_release);
  atomic_fetch_add(&c->shm->vt_bell, 1);
  sn_wake(&c->shm->vt_bell);
  uint64_t tmax = v0, dmax = d;
  for (int r = 0; r < c->nranks; r++) {
    struct sn_vt_entry *e = &c->shm->vt_board[gen & 1][r];
    for (;;) {
      uint32_t b = atomic_load(&c->shm->vt_bell);
      if (atomic_load_explicit(&e->gen, memory_order_acquire) == gen) break;
      if (aborted(c)) { simcuda_model_advance_to(v0 + d); return; }
      sn_wait_ns(&c->shm->vt_bell, b, 20000000L);
    }
    if (e->t > tmax) tmax = e->t;
    if (e->d > dmax) dmax = e->d;
  }
  simcuda_model_advance_to(tmax + dmax);
}
