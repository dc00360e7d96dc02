/* tests/sim/nccl/devapi.c: the host functions of NCCL's device API (nccl_device/core.h,
 * lsa_barrier.h, gin_barrier.h, ll_a2a.h). The simulator has no device-side communicator,
 * so a program that uses them gets a clean error instead of a symbol lookup failure:
 * every function that needs device state returns ncclInvalidUsage (or, returning a team
 * or a rank, the value NCCL itself returns when its device runtime fails to initialise:
 * a zero team, rank -1) and logs one NCCL WARN line. ncclTeamWorld, ncclTeamRankToWorld
 * and ncclLLA2ACalcSlots need no device state and compute what NCCL computes
 * (src/nccl_device/core.cc, ll_a2a.cc).
 * The headers are C++; the declarations below repeat their C signatures. */
#include "simnccl.h"

typedef struct ncclTeam { int nRanks, rank, stride; } ncclTeam_t;
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

SN_API ncclResult_t pncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const *reqs, ncclDevComm_t *outDevComm);
SN_API ncclResult_t pncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const *devComm);
SN_API ncclTeam_t pncclTeamWorld(ncclComm_t comm);
SN_API ncclTeam_t pncclTeamLsa(ncclComm_t comm);
SN_API ncclTeam_t pncclTeamRail(ncclComm_t comm);
SN_API int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
SN_API int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);
SN_API ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t *outHandle,
                                                     ncclDevResourceRequirements_t *outReq);
SN_API ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                                     ncclGinBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq);
SN_API ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
                                                ncclDevResourceRequirements_t *outReq);
SN_API int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);

static void not_simulated(const char *fn)
{
  sn_warn(simcuda_current_device(), "%s: the NCCL device API is not simulated", fn);
}

SN_API ncclResult_t pncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const *reqs, ncclDevComm_t *outDevComm) {
  (void)comm; (void)reqs; (void)outDevComm;
  not_simulated("ncclDevCommCreate");
  return ncclInvalidUsage;
}
SN_ALIAS(ncclDevCommCreate)

SN_API ncclResult_t pncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const *devComm) {
  (void)comm; (void)devComm;
  not_simulated("ncclDevCommDestroy");
  return ncclInvalidUsage;
}
SN_ALIAS(ncclDevCommDestroy)

/* core.cc: { comm->nRanks, comm->rank, 1 } */
SN_API ncclTeam_t pncclTeamWorld(ncclComm_t comm) {
  ncclTeam_t t = { 0, 0, 0 };
  if (ncclCommCount(comm, &t.nRanks) != ncclSuccess || ncclCommUserRank(comm, &t.rank) != ncclSuccess)
    return (ncclTeam_t){ 0, 0, 0 };
  t.stride = 1;
  return t;
}
SN_ALIAS(ncclTeamWorld)

/* core.cc returns ncclTeam_t{} when the device runtime cannot initialise */
SN_API ncclTeam_t pncclTeamLsa(ncclComm_t comm) {
  (void)comm;
  not_simulated("ncclTeamLsa");
  return (ncclTeam_t){ 0, 0, 0 };
}
SN_ALIAS(ncclTeamLsa)

SN_API ncclTeam_t pncclTeamRail(ncclComm_t comm) {
  (void)comm;
  not_simulated("ncclTeamRail");
  return (ncclTeam_t){ 0, 0, 0 };
}
SN_ALIAS(ncclTeamRail)

/* core.cc: comm->rank + (rank - team.rank) * team.stride */
SN_API int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  int me = 0;
  if (ncclCommUserRank(comm, &me) != ncclSuccess) return -1;
  long long r = (long long)me + ((long long)rank - team.rank) * team.stride;
  return r < 0 || r > __INT_MAX__ ? -1 : (int)r;
}
SN_ALIAS(ncclTeamRankToWorld)

/* core.cc returns -1 when the device runtime cannot initialise */
SN_API int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  (void)comm; (void)team; (void)rank;
  not_simulated("ncclTeamRankToLsa");
  return -1;
}
SN_ALIAS(ncclTeamRankToLsa)

SN_API ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t *outHandle,
                                                     ncclDevResourceRequirements_t *outReq) {
  (void)team; (void)nBarriers; (void)outHandle; (void)outReq;
  not_simulated("ncclLsaBarrierCreateRequirement");
  return ncclInvalidUsage;
}
SN_ALIAS(ncclLsaBarrierCreateRequirement)

SN_API ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                                     ncclGinBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq) {
  (void)comm; (void)team; (void)nBarriers; (void)outHandle; (void)outReq;
  not_simulated("ncclGinBarrierCreateRequirement");
  return ncclInvalidUsage;
}
SN_ALIAS(ncclGinBarrierCreateRequirement)

SN_API ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
                                                ncclDevResourceRequirements_t *outReq) {
  (void)nBlocks; (void)nSlots; (void)outHandle; (void)outReq;
  not_simulated("ncclLLA2ACreateRequirement");
  return ncclInvalidUsage;
}
SN_ALIAS(ncclLLA2ACreateRequirement)

/* ll_a2a.cc: maxElts * divUp(maxEltSize, 8) */
SN_API int pncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
  long long slots = (long long)maxElts * (((long long)maxEltSize + 7) / 8);
  return slots > __INT_MAX__ || slots < -__INT_MAX__ ? -1 : (int)slots;
}
SN_ALIAS(ncclLLA2ACalcSlots)
