/* shim/profiler_internal.h: between collscope's profiler core (shim/profiler.c: records,
 * stamps, probation) and the plugin tables NCCL calls (shim/profiler_chain.c: ncclProfiler_v6,
 * v5, v4, and the chaining to an inner profiler plugin). */
#ifndef COLLSCOPE_PROFILER_INTERNAL_H
#define COLLSCOPE_PROFILER_INTERNAL_H
#include "collscope/nccl_profiler_abi.h"
#include <stdint.h>

/* Per NCCL communicator. abi: the table version NCCL called (6, 5, 4). 0 = a context, else
 * ncclInternalError (collscope disabled, or COLLSCOPE_TIMING=events|off). */
cs_nccl_result_t cs_prof_core_init(void **context, uint64_t comm, int nranks, int rank, int abi);
/* The event types collscope wants from NCCL now (0 once every op type was rejected). */
int cs_prof_core_bits(void);
/* u points at the descriptor's union (v5 and v6 members share offsets; v4's coll, p2p and
 * kernelCh are prefixes of theirs). Returns collscope's handle, or NULL. */
void *cs_prof_core_start(uint64_t type, void *parent, const void *u);
void cs_prof_core_stop(void *h);
void cs_prof_core_state(void *h, cs_nccl_profiler_state_t st, const cs_nccl_prof_state_args_t *a);
void cs_prof_core_finalize(void *context);

/* profiler_chain.c: write collscope's event types OR the inner plugin's into NCCL's mask. */
void cs_prof_mask_publish(void);
int cs_prof_mask_published(void); /* the mask collscope last wrote (0: NCCL sends nothing) */
#endif
