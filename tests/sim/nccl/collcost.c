/* tests/sim/nccl/collcost.c: the modeled cost of one op from its communicator's edges
 * (collcost.h; the model is described in model.c). Pure: the simulator and the in-process
 * accuracy driver get the same figures, bit for bit. */
#include "collcost.h"

struct sn_edge sn_cost_edge(bool same_host, double net_bpns, double extra_us, double bw_scale) {
  struct sn_edge e;
  if (same_host) {
    e.lat = SN_COST_NVL_LAT_NS;
    e.bpns = SN_COST_NVL_BYTES_PER_NS;
  } else {
    e.lat = SN_COST_NET_LAT_NS;
    e.bpns = net_bpns;
  }
  e.lat += 1000.0 * extra_us;
  e.bpns *= bw_scale;
  return e;
}

struct sn_edge sn_cost_fabric(struct sn_edge e, double up_bpns, double down_bpns) {
  if (up_bpns < e.bpns) e.bpns = up_bpns;
  if (down_bpns < e.bpns) e.bpns = down_bpns;
  e.lat += SN_COST_FABRIC_HOP_NS;
  return e;
}

/* the slowest step moving `chunk` bytes over every ring edge at once */
static double ring_step(const struct sn_cost_net *c, double chunk) {
  double worst = 0;
  for (int p = 0; p < c->n; p++) {
    struct sn_edge e = c->ring(c->ctx, p);
    double t = e.lat + chunk / e.bpns;
    if (t > worst) worst = t;
  }
  return worst;
}

/* the slowest pair moving `chunk` bytes */
static double pairs_step(const struct sn_cost_net *c, double chunk) {
  double worst = 0;
  for (int a = 0; a < c->n; a++)
    for (int b = 0; b < c->n; b++) {
      if (a == b) continue;
      struct sn_edge e = c->pair(c->ctx, a, b);
      double t = e.lat + chunk / e.bpns;
      if (t > worst) worst = t;
    }
  return worst;
}

/* a pipelined chain: n latencies of its slowest edge plus the bytes once at its narrowest */
static double chain_cost(const struct sn_cost_net *c, double bytes) {
  double lat = 0, bpns = 1e30;
  for (int p = 0; p < c->n; p++) {
    struct sn_edge e = c->ring(c->ctx, p);
    if (e.lat > lat) lat = e.lat;
    if (e.bpns < bpns) bpns = e.bpns;
  }
  return c->n * lat + bytes / bpns;
}

double sn_cost_op_ns(const struct sn_cost_net *c, enum sn_cost_algo algo, double bytes, int self, int peer) {
  int n = c->n;
  if (n == 1) return SN_COST_BASE_LAT_NS + bytes / SN_COST_NVL_BYTES_PER_NS; /* a local copy */
  switch (algo) {
  case SN_COST_ALLREDUCE: return SN_COST_BASE_LAT_NS + 2.0 * (n - 1) * ring_step(c, bytes / n);
  case SN_COST_RING: return SN_COST_BASE_LAT_NS + (double)(n - 1) * ring_step(c, bytes);
  case SN_COST_CHAIN: return SN_COST_BASE_LAT_NS + chain_cost(c, bytes);
  case SN_COST_PAIRS: return SN_COST_BASE_LAT_NS + (double)(n - 1) * pairs_step(c, bytes);
  case SN_COST_P2P:
  default: {
    struct sn_edge e = c->pair(c->ctx, self, peer);
    return e.lat + bytes / e.bpns;
  }
  }
}

double sn_cost_item_ns(double ns, double speed, double noise) {
  ns /= speed;
  ns *= noise;
  return ns;
}
