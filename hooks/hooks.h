/* hooks/hooks.h: the extension points of an intercepted NCCL call. Feature modules
 * (topology routing, SDC checks, the online exchange) implement their part in their own
 * hooks/<feature>.c and are called from the dispatchers in hooks/hooks.c, which are the
 * only functions the shim's wrappers call. All run on the caller's thread with the
 * re-entrancy depth already raised, so NCCL calls they make pass straight through. */
#ifndef COLLSCOPE_HOOKS_H
#define COLLSCOPE_HOOKS_H
#include "thread_state.h"

/* One intercepted collective or P2P call. Hooks may change `comm` and `root` (the
 * wrapper passes the changed values to the real NCCL); the record keeps the user's. */
struct cs_call {
  enum cs_op op;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  int dtype;
  int redop;
  int root;
  int peer;
  void *comm;
  void *stream;
  struct cs_record *rec;
  /* set by the before-op hooks, for their after-op part (zero-initialised by the wrapper) */
  uint32_t sdc_ctr;    /* 1 + hooks/sdc_check.c sample:N counter this call advanced, 0 when none */
  uint64_t sdc_ctr_at; /* that counter's value before it did */
};

/* Fill every member (an initializer would zero the struct first, then store). */
static inline void cs_call_set(struct cs_call *c, enum cs_op op, const void *sendbuff, void *recvbuff, size_t count,
                               int dtype, int redop, int root, int peer, void *comm, void *stream,
                               struct cs_record *rec) {
  c->op = op;
  c->sendbuff = sendbuff;
  c->recvbuff = recvbuff;
  c->count = count;
  c->dtype = dtype;
  c->redop = redop;
  c->root = root;
  c->peer = peer;
  c->comm = comm;
  c->stream = stream;
  c->rec = rec;
  c->sdc_ctr = 0;
  c->sdc_ctr_at = 0;
}

/* (an accessor: the wrappers' macros use `root` as a parameter name) */
static inline int cs_call_root(const struct cs_call *c) { return c->root; }

/* The feature hooks the dispatchers call (hooks/sdc_check.c, hooks/topo_route.c, hooks/online_exchange.c). */
void cs_sdc_before_op(struct cs_call *c);
void cs_sdc_after_op(struct cs_call *c, int status);
void cs_topo_route_before_op(struct cs_call *c);
void cs_online_after_op(struct cs_call *c, int status);
/* Their gates, read by the inline dispatchers below so that a hook with nothing to do
 * costs one load and one predictable branch, no call:
 *  cs_topo_route_active  routes in use (hooks/topo_route.c); 0: nothing to look up
 *  cs_online_running     the online exchange is running (hooks/online_exchange.c) */
extern _Atomic int cs_topo_route_active;
extern _Atomic int cs_online_running;

/* The ops hooks/sdc_check.c checks (AllReduce, Broadcast, Reduce, AllGather, ReduceScatter), as
 * a bit mask of enum cs_op. */
#define CS_SDC_OP_MASK \
  ((1u << CS_OP_AllReduce) | (1u << CS_OP_Broadcast) | (1u << CS_OP_Reduce) | (1u << CS_OP_AllGather) | \
   (1u << CS_OP_ReduceScatter))

/* SDC: the before-op part has work (checks on, the op checked, not too small): one
 * compare, the op being a constant in each wrapper. */
static inline bool cs_hooks_sdc_wanted_op(enum cs_op op, uint64_t bytes) {
  return ((CS_SDC_OP_MASK >> op) & 1u) && bytes >= cs_cfg.sdc_gate_bytes;
}
static inline bool cs_hooks_sdc_wanted(const struct cs_record *r) {
  return cs_hooks_sdc_wanted_op((enum cs_op)r->op, r->bytes);
}

/* Whether any hook may have work for this call (read once, before it): when not, the
 * wrapper neither describes the call (struct cs_call) nor runs the dispatchers. */
static inline bool cs_hooks_wanted(enum cs_op op, uint64_t bytes) {
  return cs_hooks_sdc_wanted_op(op, bytes) || atomic_load_explicit(&cs_topo_route_active, memory_order_relaxed) != 0 ||
         atomic_load_explicit(&cs_online_running, memory_order_relaxed) != 0;
}

/* Before the real call. cs_sdc_before_op has nothing to do (and the record's SDC fields
 * stay zero, as cs_op_begin left them) when the checks are off, the op is not checked or
 * it is smaller than COLLSCOPE_SDC_MIN_BYTES: the common case of small collectives. */
static inline void cs_hooks_before_op(struct cs_call *c) {
  if (cs_hooks_sdc_wanted(c->rec)) cs_sdc_before_op(c);
  if (CS_UNLIKELY(atomic_load_explicit(&cs_topo_route_active, memory_order_relaxed) != 0)) cs_topo_route_before_op(c);
}

/* After it returned. cs_sdc_after_op has work only for a call whose before-op part
 * advanced a sample counter (sdc_ctr) or took a result slot (sdc_slot). */
static inline void cs_hooks_after_op(struct cs_call *c, int status) {
  if (CS_UNLIKELY((c->sdc_ctr | c->rec->sdc_slot) != 0)) cs_sdc_after_op(c, status);
  if (CS_UNLIKELY(atomic_load_explicit(&cs_online_running, memory_order_relaxed) != 0)) cs_online_after_op(c, status);
}
/* A communicator was created (after collscope registered it) / is about to go. */
void cs_hooks_comm_created(void *comm, struct cs_comm *info);
/* A communicator was created while this process records nothing (recording off, or the
 * table full): info has only size, rank and nonblocking. Hooks whose communication all
 * ranks must take part in still take part. */
void cs_hooks_comm_unrecorded(void *comm, struct cs_comm *info);
void cs_hooks_comm_destroying(void *comm);

#endif
