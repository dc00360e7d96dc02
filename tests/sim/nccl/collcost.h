/* tests/sim/nccl/collcost.h: the modeled clock's cost of one collective or Send/Recv, after
 * NCCL 2.28.9's tuning model (src/graph/tuning.cc), as a pure function of the communicator's
 * edges: the one copy the simulated libnccl (model.c) and the in-process accuracy driver
 * (bench/accuracy_driver.c) both link. No I/O, no environment, no state: the caller forms
 * the edges (its hosts, its link faults, its fabric) and applies the item's jitter.
 * tests/sim/nccl/model.c describes the model; collcost.c computes it. */
#ifndef SIM_NCCL_COLLCOST_H
#define SIM_NCCL_COLLCOST_H
#include <stdbool.h>

#define SN_COST_BASE_LAT_NS 8400.0     /* tuning.cc:143-144 baseLatencies Ring Simple */
#define SN_COST_NVL_LAT_NS 3400.0      /* tuning.cc:150-151 hwLatencies NVLINK Ring Simple */
#define SN_COST_NET_LAT_NS 14000.0     /* tuning.cc:162-163 hwLatencies NET Ring Simple */
#define SN_COST_NVL_BYTES_PER_NS 150.0 /* 150 GB/s inside a host */
#define SN_COST_NET_GBPS 100.0         /* between hosts, unless the caller says otherwise */
#define SN_COST_FABRIC_HOP_NS 1000.0   /* two more switches between leaves */

/* one directed edge: its latency (ns) and bandwidth (bytes per ns) */
struct sn_edge {
  double lat, bpns;
};

/* how an op moves its bytes (tuning.cc:268-270 for the step counts) */
enum sn_cost_algo {
  SN_COST_ALLREDUCE, /* ring, 2(n-1) steps of bytes/n */
  SN_COST_RING,      /* ReduceScatter/AllGather: ring, n-1 steps of one rank's part */
  SN_COST_CHAIN,     /* Broadcast/Reduce: pipelined chain */
  SN_COST_PAIRS,     /* AlltoAll/Gather/Scatter: n-1 steps over the slowest pair */
  SN_COST_P2P        /* Send/Recv: one step on the pair's edge */
};

/* the communicator as the cost sees it: n ranks, its ring's edges and any pair's edge */
struct sn_cost_net {
  int n;
  struct sn_edge (*ring)(void *ctx, int p);        /* ring position p -> p + 1 (mod n) */
  struct sn_edge (*pair)(void *ctx, int a, int b); /* comm rank a -> comm rank b */
  void *ctx;
};

/* an edge inside a host or between hosts (net_bpns), plus a link fault's extra latency (us)
 * and bandwidth scale (0 and 1.0: none) */
struct sn_edge sn_cost_edge(bool same_host, double net_bpns, double extra_us, double bw_scale);
/* an edge between two leaves of a fabric: at most its share of the source leaf's uplink and
 * the destination leaf's downlink, two switches more */
struct sn_edge sn_cost_fabric(struct sn_edge e, double up_bpns, double down_bpns);
/* one op of `bytes` in ns, before the GPU model and the jitter; P2P is from comm rank `self`
 * to `peer` */
double sn_cost_op_ns(const struct sn_cost_net *net, enum sn_cost_algo algo, double bytes, int self, int peer);
/* an item's ops summed (ns) on a GPU of `speed` (1.0 = H100) with the jitter factor `noise` */
double sn_cost_item_ns(double ns, double speed, double noise);

#endif
