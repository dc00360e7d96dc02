/* shim/net_plugin_internal.h: state shared by the net plugin wrapper's files --
 * shim/net_plugin.c (the inner plugin, the pools, the forwarding calls and the hot path),
 * net_plugin_tables.c (the tables NCCL calls, one per exported version), net_plugin_props.c
 * (the property structs across versions) and net_plugin_harvest.c (link records). */
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

/* the inner's name (NCCL_NET=<name> selects a transport by name), and the v11 inner ctx that
 * v9/v10 callers share */
extern char cs_net_in_name[128];
extern void *cs_net_in_global_ctx;

/* the tables NCCL looks up (shim/net_plugin_tables.c) */
CS_EXPORT extern cs_net_v12_t ncclNetPlugin_v12;
CS_EXPORT extern cs_net_v11_t ncclNetPlugin_v11;
CS_EXPORT extern cs_net_v10_t ncclNetPlugin_v10;
CS_EXPORT extern cs_net_v9_t ncclNetPlugin_v9;

/* per-NCCL-communicator context of the v11 table */
struct wctx {
  void *inner; /* inner v11 ctx, else NULL */
  struct cs_net_comm_config cfg;
  int has_cfg;
};

/* shim/net_plugin.c: load the inner once (CS_NET_OK when there is one), init it once for
 * v9/v10 callers, and the calls every exported version forwards through */
cs_net_result_t cs_net_init_common(void);
cs_net_result_t cs_net_inner_global_init(cs_net_logger_t log, cs_net_prof_cb_t prof);
cs_net_result_t cs_net_devices(int *ndev);
cs_net_result_t cs_net_listen(struct wctx *x, int dev, void *handle, void **listenComm);
cs_net_result_t cs_net_connect(struct wctx *x, int dev, struct cs_net_comm_config *cfg, void *handle,
                               void **sendComm, void **devComm);
cs_net_result_t cs_net_accept(void *listenComm, void **recvComm, void **devComm);
cs_net_result_t cs_net_reg_mr(void *comm, void *data, size_t size, int type, void **mh);
cs_net_result_t cs_net_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t off, int fd,
                                     void **mh);
cs_net_result_t cs_net_dereg_mr(void *comm, void *mh);
cs_net_result_t cs_net_isend(void *sendComm, void *data, size_t size, int tag, void *mh, void *ph, void **request);
cs_net_result_t cs_net_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhs, void **phs,
                             void **request);
cs_net_result_t cs_net_iflush(void *recvComm, int n, void **data, int *sizes, void **mhs, void **request);
cs_net_result_t cs_net_test(void *request, int *done, int *sizes);
cs_net_result_t cs_net_close_send(void *c);
cs_net_result_t cs_net_close_recv(void *c);
cs_net_result_t cs_net_close_listen(void *listenComm);
cs_net_result_t cs_net_get_device_mr(void *comm, void *mh, void **dptr);
cs_net_result_t cs_net_irecv_consumed(void *recvComm, int n, void *request);

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
