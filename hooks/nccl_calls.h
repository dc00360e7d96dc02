/* hooks/nccl_calls.h: the NCCL functions hooks/ calls, as the shim hands them over at
 * load (shim/wiring.c), so that hooks/ names nothing of the shim. Two kinds:
 *  - real_<name>: NCCL's own function as the shim resolved it (read through
 *    CS_NCCL_REAL(name): NULL until found; resolve() retries what is missing, true when
 *    everything was found). Nothing of collscope runs around it (the online exchange on
 *    collscope's own communicator).
 *  - <name>: the shim's exported wrapper, as a call of the job would reach it; with this
 *    thread's depth raised it passes straight through to NCCL after the shim's entry
 *    checks (park, resolution) (topology routing). */
#ifndef COLLSCOPE_NCCL_CALLS_H
#define COLLSCOPE_NCCL_CALLS_H
#include <nccl.h>
#include <stdbool.h>

#define CS_NCCL_CALLS(X) \
  X(ncclCommSplit, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)) \
  X(ncclGetUniqueId, (ncclUniqueId * uniqueId)) \
  X(ncclCommInitRankConfig, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config)) \
  X(ncclCommAbort, (ncclComm_t comm)) \
  X(ncclCommDestroy, (ncclComm_t comm)) \
  X(ncclCommCount, (const ncclComm_t comm, int *count)) \
  X(ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t * asyncError)) \
  X(ncclAllReduce, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, \
                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) \
  X(ncclAllGather, (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, \
                    ncclComm_t comm, cudaStream_t stream))

struct cs_nccl_calls {
  bool (*resolve)(void);
#define CS_NCCL_REAL_FIELD(name, params) ncclResult_t(*const *real_##name) params;
#define CS_NCCL_ENTRY_FIELD(name, params) ncclResult_t(*name) params;
  CS_NCCL_CALLS(CS_NCCL_REAL_FIELD)
  CS_NCCL_CALLS(CS_NCCL_ENTRY_FIELD)
#undef CS_NCCL_REAL_FIELD
#undef CS_NCCL_ENTRY_FIELD
};
extern struct cs_nccl_calls cs_nccl;
void cs_nccl_calls_set(const struct cs_nccl_calls *c);

/* NCCL's own function `name` (NULL until the shim has found it) */
#define CS_NCCL_REAL(name) (*cs_nccl.real_##name)

#endif
