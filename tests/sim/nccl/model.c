/* tests/sim/nccl/model.c: what a collective costs on the modeled clock
 * (COLLSCOPE_SIM_CLOCK=model, tests/sim/cuda/model.c).
 *
 * An item (the fused ops of one comm launch) arrives at its stream's virtual time. Items
 * with a collective complete on every member at the latest member's arrival plus the
 * longest member's modeled cost (each rank publishes both on the comm's vt board), as a
 * synchronising ring does. Items of only Send/Recv complete at the rank's own arrival plus
 * their cost, and a Recv no earlier than its Send's data lands: the sender's stream time when
 * its item started plus the Send's transfer time, stamped on the pair's channel (NCCL 2.28.9:
 * the recv kernel, src/device/sendrecv.h:33-44 runRecv -> directRecv, spins in
 * src/device/prims_simple.h:109-116 waitPeer until the sender's step counter shows the data;
 * a Send is not held back by its Recv, its data fits the peer's buffers).
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
 * (keyed by the comm's members and the instance, so every member draws the same).
 * The formula itself is collcost.c's (the in-process accuracy driver links the same copy);
 * this file forms the edges (hosts, link faults, fabric) and completes the items. */
#include "simnccl.h"
#include "collcost.h"
#include <stdlib.h>
#include <string.h>

static double net_bytes_per_ns(void) {
  static double bpns;
  if (bpns <= 0) {
    const char *v = getenv("COLLSCOPE_SIMNET_GBPS");
    double g = v ? atof(v) : 0;
    bpns = (g > 0 ? g : SN_COST_NET_GBPS) / 8.0;
  }
  return bpns;
}

static double oversub(void) {
  static double o;
  if (o <= 0) {
    const char *v = getenv("COLLSCOPE_SIM_OVERSUB");
    double x = v ? atof(v) : 0;
    o = x >= 1 && x <= 64 ? x : 2.0;
  }
  return o;
}

/* the op being costed: its seq selects the link/nic faults whose onset has passed */
static __thread long long cost_seq = -1;
static struct sn_edge edge_of(struct ncclComm *c, int a, int b) {
  const char *ha = c->shm->ranks[a].host, *hb = c->shm->ranks[b].host;
  double scale = 1.0, extra_us = sn_nfaults ? (double)sn_link_delay_us(ha, hb, cost_seq, &scale) : 0;
  return sn_cost_edge(!strcmp(ha, hb), net_bytes_per_ns(), extra_us, scale);
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
static struct sn_edge ring_edge(void *ctx, int p) {
  struct ncclComm *c = ctx;
  int a = c->ring[p], b = c->ring[(p + 1) % c->nranks];
  struct sn_edge e = edge_of(c, a, b);
  const char *la = sn_leaf_of(c->shm->ranks[a].host), *lb = sn_leaf_of(c->shm->ranks[b].host);
  if (!la || !lb || !strcmp(la, lb)) return e;
  double nic = net_bytes_per_ns();
  double up = sn_leaf_hosts(la) * nic / oversub() / leaf_flows(c, la, 1);
  double down = sn_leaf_hosts(lb) * nic / oversub() / leaf_flows(c, lb, 0);
  return sn_cost_fabric(e, up, down);
}
static struct sn_edge pair_edge(void *ctx, int a, int b) { return edge_of(ctx, a, b); }

static double op_ns(struct ncclComm *c, const struct sn_op *op) {
  struct sn_cost_net net = {.n = c->nranks, .ring = ring_edge, .pair = pair_edge, .ctx = c};
  double bytes = (double)op->count * (double)sn_type_size(op->dtype);
  enum sn_cost_algo a;
  switch (op->coll) {
  case SN_ALLREDUCE: a = SN_COST_ALLREDUCE; break;
  case SN_REDUCESCATTER:
  case SN_ALLGATHER: a = SN_COST_RING; break;
  case SN_BROADCAST:
  case SN_REDUCE: a = SN_COST_CHAIN; break;
  case SN_ALLTOALL:
  case SN_GATHER:
  case SN_SCATTER: a = SN_COST_PAIRS; break;
  default: a = SN_COST_P2P; break; /* Send/Recv: the pair's edge */
  }
  return sn_cost_op_ns(&net, a, bytes, c->rank, op->root);
}

static int has_collective(const struct sn_op *ops, int nops) {
  for (int i = 0; i < nops; i++)
    if (ops[i].coll != SN_SEND && ops[i].coll != SN_RECV) return 1;
  return 0;
}

/* the comm's identity across runs: its members' job ranks (RANK), the same on every member;
 * not its creation index, which another thread's communicator (collscope's own) can shift */
static uint64_t comm_key(struct ncclComm *c) {
  if (c->model_key) return c->model_key;
  uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)c->nranks;
  for (int r = 0; r < c->nranks; r++) {
    h ^= (uint64_t)(uint32_t)c->shm->ranks[r].pad;
    h *= 0x100000001b3ull;
  }
  return c->model_key = h | 1;
}
uint64_t sn_model_item_ns(struct ncclComm *c, const struct sn_op *ops, int nops) {
  double ns = 0;
  for (int i = 0; i < nops; i++) {
    cost_seq = (long long)ops[i].seq;
    ns += op_ns(c, &ops[i]);
  }
  cost_seq = -1;
  /* jitter: collectives keyed by the comm (its members' job ranks) and the instance, so the
   * members of a job's comms draw the same factors run after run (the segment name is
   * random); Send/Recv-only items also by the rank */
  uint64_t key = comm_key(c) ^ ((uint64_t)c->vt_gen << 20);
  if (!has_collective(ops, nops)) key ^= (uint64_t)(c->rank + 1) << 48;
  ns = sn_cost_item_ns(ns, simcuda_model_speed(), simcuda_model_noise(key));
  return (uint64_t)(ns + 0.5);
}

static int aborted(struct ncclComm *c) { return atomic_load(&c->shm->abort) != 0; }

/* the stamps ring of the channel src -> dst: a seqlock per entry (tag 0 while written) */
void sn_model_p2p_post(struct ncclComm *c, const struct sn_op *send) {
  if (!simcuda_model_on()) return;
  struct sn_chan_ctrl *ch = sn_chan(c, c->rank, send->root);
  uint32_t k = atomic_fetch_add(&ch->vt_posted, 1);
  struct sn_p2p_stamp *e = &ch->vt_stamp[k % 3];
  atomic_store_explicit(&e->tag, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&e->t, simcuda_model_now() + sn_model_item_ns(c, send, 1), memory_order_relaxed);
  atomic_store_explicit(&e->tag, (uint64_t)k + 1, memory_order_release);
}

void sn_model_p2p_take(struct ncclComm *c, int peer) {
  if (!simcuda_model_on()) return;
  struct sn_chan_ctrl *ch = sn_chan(c, peer, c->rank);
  uint32_t k = atomic_fetch_add(&ch->vt_taken, 1);
  struct sn_p2p_stamp *e = &ch->vt_stamp[k % 3];
  uint64_t tag = atomic_load_explicit(&e->tag, memory_order_acquire);
  uint64_t t = atomic_load_explicit(&e->t, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  /* overwritten (the sender 3 sends ahead, possible only through a net plugin that buffers
   * them): no bound from it */
  if (tag != (uint64_t)k + 1 || atomic_load_explicit(&e->tag, memory_order_relaxed) != tag) return;
  if (t > c->p2p_ready) c->p2p_ready = t;
}

void sn_model_item_done(struct ncclComm *c, const struct sn_op *ops, int nops, uint64_t v0) {
  uint64_t d = sn_model_item_ns(c, ops, nops);
  uint32_t gen = ++c->vt_gen;
  uint64_t ready = c->p2p_ready;   /* the item's receives: their data landed then */
  c->p2p_ready = 0;
  simcuda_model_advance_to(ready);
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
