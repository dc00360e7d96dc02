/* tests/sim/nccl/nested.c: the two entry points that, like real NCCL, call other public
 * NCCL functions: ncclBcast -> ncclBroadcast and ncclCommInitAll -> ncclGetUniqueId.
 * They live in their own translation unit and call the exported (interposable) names, so
 * the calls go through the PLT and an LD_PRELOAD interposer sees the nested call. */
#include "simnccl.h"
#include <stdlib.h>

SN_API ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
SN_ALIAS(ncclBcast)

SN_API ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  if (comms == NULL) { sn_warn(-1, "CommInitAll : comms argument is NULL"); return ncclInvalidArgument; }
  if (ndev < 0) { sn_warn(-1, "Invalid device count requested : %d", ndev); return ncclInvalidArgument; }
  int total = simcuda_device_count();
  if (devlist) {
    char *seen = calloc((size_t)total + 1, 1);
    if (!seen) return ncclSystemError;
    for (int i = 0; i < ndev; i++) {
      if (devlist[i] < 0 || devlist[i] >= total) {
        sn_warn(-1, "Invalid device %d (totalnDev=%d)", devlist[i], total);
        free(seen);
        return ncclInvalidArgument;
      }
      if (seen[devlist[i]]) { free(seen); return ncclInvalidUsage; }
      seen[devlist[i]] = 1;
    }
    free(seen);
  }
  if (ndev == 0) return ncclSuccess;
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);   /* public symbol on purpose */
  if (r) return r;
  sn_group_start_internal();
  for (int i = 0; i < ndev; i++) {
    int dev = devlist ? devlist[i] : i;
    (void)sn_init_rank_dev(comms + i, ndev, &id, i, dev);   /* errors surface at group end */
  }
  return sn_group_end_internal();
}
SN_ALIAS(ncclCommInitAll)
