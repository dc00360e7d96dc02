/* shim/net_plugin_internal.h: state shared by the net plugin wrapper's files --
 * shim/net_plugin.c (the tables NCCL calls, the pools, the hot path), net_plugin_props.c (the
 * property structs across versions) and net_plugin_harvest.c (link records). */
#ifndef COLLSCOPE_NET_PLUGIN_INTERNAL_H
#define COLLSCOPE_NET_PLUGIN_INTERNAL_H
#include "cs_internal.h"
#include "collscope/nccl_net_abi.h"

/* the inner plugin: cs_net_in_ver 11 (also for a v12 inner, driven through its v11-shaped
 * calls; cs_net_in12 then set), 10, 9; 0 = none */
extern int cs_net_in_ver;
extern const cs_net_v12_t *cs_net_in12;
extern const cs_net_v11_t *cs_net_in11;
extern const cs_net_v10_t *cs_net_in10;
extern const cs_net_v9_t *cs_net_in9;

/* getProperties / makeVDevice of each exported version, over whatever the inner is */
cs_net_result_t cs_net_get_props12(int dev, struct cs_net_props_v12 *p);
cs_net_result_t cs_net_get_props11(int dev, struct cs_net_props_v11 *p);
cs_net_result_t cs_net_get_props9(int dev, struct cs_net_props_v9 *p);
cs_net_result_t cs_net_make_vdevice12(int *d, struct cs_net_vprops_v12 *p);
cs_net_result_t cs_net_make_vdevice(int *d, struct cs_net_vprops *p);

#define NCONN 1024
#define NHIST 96 /* throughput buckets: 4 per octave of MB/s */

struct wconn {
  _Atomic int state; /* 0 free, 1 claimed, 2 active, 3 closed (waiting for its last record) */
  void *inner;
  int dir;       /* 0 send, 1 recv */
  int peer_rank; /* send side: from the handle; recv side -1 */
  int dev;
  uint64_t token;
  _Atomic uint64_t bytes, msgs, busy_ns;
  _Atomic int inflight, max_inflight;
  _Atomic uint64_t hist[NHIST]; /* byte-weighted per-message throughput */
  /* harvest thread only */
  uint64_t l_bytes, l_msgs, l_busy, l_hist[NHIST];
  int64_t l_emit_mono, l_emit_real;
};
extern struct wconn cs_net_conns[NCONN];
#endif
