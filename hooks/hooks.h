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
  uint32_t sdc_ctr;    /* 1 + hooks/sdc.c sample:N counter this call advanced, 0 when none */
  uint64_t sdc_ctr_at; /* that counter's value before it did */
};

/* (an accessor: the wrappers' macros use `root` as a parameter name) */
static inline int cs_call_root(const struct cs_call *c) { return c->root; }

void cs_hooks_before_op(struct cs_call *c);            /* before the real call */
void cs_hooks_after_op(struct cs_call *c, int status); /* after it returned */
/* A communicator was created (after collscope registered it) / is about to go. */
void cs_hooks_comm_created(void *comm, struct cs_comm *info);
/* A communicator was created while this process records nothing (recording off, or the
 * table full): info has only size, rank and nonblocking. Hooks whose communication all
 * ranks must take part in still take part. */
void cs_hooks_comm_unrecorded(void *comm, struct cs_comm *info);
void cs_hooks_comm_destroying(void *comm);

#endif
