/* tests/abi/check_nccl_headers.c: collscope's own declarations of NCCL's plugin ABIs
 * (include/collscope/nccl_profiler_abi.h, nccl_net_abi.h) against NCCL's real plugin
 * headers, member by member: same offset and same size for every member collscope
 * declares, same struct size. Compiled by scripts/check-nccl-abi.sh with -I pointing at
 * the "example/nccl" header folders of an NCCL source tree (profiler and net plugin
 * examples), one NCCL release at a time; a mismatch is a compile error naming the member.
 * NCCL installs no plugin headers, so this runs where an NCCL source tree is at hand (a
 * clone of NVIDIA/nccl), not in the unit suite; the hand-derived numbers in
 * tests/profiler/test_abi.c and tests/net/test_net_abi.c are what CI checks. */
#ifndef __cplusplus
#include <stdbool.h>
#endif
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Two kinds of NCCL headers:
 *  - the plugin examples' C headers (ext-profiler|plugins/profiler/example/nccl, and the
 *    net one): their two common.h files share an include guard, so the profiler half
 *    (-DCS_CHECK_PROFILER) and the net half (-DCS_CHECK_NET) are separate compilations;
 *  - the headers NCCL itself is built with (src/include/plugin/nccl_profiler.h and
 *    nccl_net.h, C++): -DCS_CHECK_INTERNAL, compiled as C++ with -I src/include and the
 *    installed nccl.h, both halves at once. */
#if defined(CS_CHECK_INTERNAL)
#define _Static_assert static_assert
#define CS_CHECK_PROFILER 1
#define CS_CHECK_NET 1
#include <cstddef>
#include <sys/types.h>
#include "nccl.h"
#include "nccl_common.h"
#include "plugin/nccl_profiler.h"
#include "plugin/nccl_net.h"
#elif defined(CS_CHECK_PROFILER)
#include "err.h"      /* NCCL: ncclResult_t */
#include "profiler.h" /* NCCL: ncclProfilerEventDescr_v4_t, ... */
#elif defined(CS_CHECK_NET)
#include "net.h" /* NCCL: ncclNet_v9_t, ... */
#else
#error "define CS_CHECK_PROFILER, CS_CHECK_NET or CS_CHECK_INTERNAL"
#endif

#include "collscope/nccl_net_abi.h"
#include "collscope/nccl_profiler_abi.h"

#define MSIZE(T, m) sizeof(((T *)0)->m)
/* member m of our type A sits where NCCL's type B has it and has the same size */
#define SAME(A, B, m) \
  _Static_assert(offsetof(A, m) == offsetof(B, m), #A "." #m " offset differs from " #B); \
  _Static_assert(MSIZE(A, m) == MSIZE(B, m), #A "." #m " size differs from " #B)
#define SAME_SIZE(A, B) _Static_assert(sizeof(A) == sizeof(B), "sizeof " #A " != sizeof " #B)

#if defined(CS_CHECK_PROFILER)
/* ---- profiler v4 (NCCL 2.27+) ---- */
#define DESCR_COMMON(A, B) \
  SAME(A, B, type); \
  SAME(A, B, parentObj); \
  SAME(A, B, rank); \
  SAME(A, B, coll.seqNumber); \
  SAME(A, B, coll.func); \
  SAME(A, B, coll.sendBuff); \
  SAME(A, B, coll.recvBuff); \
  SAME(A, B, coll.count); \
  SAME(A, B, coll.root); \
  SAME(A, B, coll.datatype); \
  SAME(A, B, coll.nChannels); \
  SAME(A, B, coll.nWarps); \
  SAME(A, B, coll.algo); \
  SAME(A, B, coll.proto); \
  SAME(A, B, p2p.func); \
  SAME(A, B, p2p.buff); \
  SAME(A, B, p2p.datatype); \
  SAME(A, B, p2p.count); \
  SAME(A, B, p2p.peer); \
  SAME(A, B, p2p.nChannels); \
  SAME(A, B, proxyOp.pid); \
  SAME(A, B, proxyOp.channelId); \
  SAME(A, B, proxyOp.peer); \
  SAME(A, B, proxyOp.nSteps); \
  SAME(A, B, proxyOp.chunkSize); \
  SAME(A, B, proxyOp.isSend); \
  SAME(A, B, proxyStep.step); \
  SAME(A, B, kernelCh.channelId); \
  SAME(A, B, kernelCh.pTimer); \
  SAME(A, B, netPlugin.id); \
  SAME(A, B, netPlugin.data); \
  SAME_SIZE(A, B)

DESCR_COMMON(cs_nccl_prof_descr_v4_t, ncclProfilerEventDescr_v4_t);
SAME(cs_nccl_prof_state_args_t, ncclProfilerEventStateArgs_v4_t, proxyStep.transSize);
SAME(cs_nccl_prof_state_args_t, ncclProfilerEventStateArgs_v4_t, proxyCtrl.appendedProxyOps);
SAME(cs_nccl_prof_state_args_t, ncclProfilerEventStateArgs_v4_t, netPlugin.data);
SAME(cs_nccl_prof_state_args_t, ncclProfilerEventStateArgs_v4_t, kernelCh.pTimer);
SAME_SIZE(cs_nccl_prof_state_args_t, ncclProfilerEventStateArgs_v4_t);
#define PLUGIN_TABLE(A, B) \
  SAME(A, B, name); \
  SAME(A, B, init); \
  SAME(A, B, startEvent); \
  SAME(A, B, stopEvent); \
  SAME(A, B, recordEventState); \
  SAME(A, B, finalize); \
  SAME_SIZE(A, B)
PLUGIN_TABLE(cs_nccl_profiler_v4_t, ncclProfiler_v4_t);
#define SAME_VAL(a, b) _Static_assert((long)(a) == (long)(b), #a " != " #b)
SAME_VAL(CS_NCCL_PROFILE_GROUP, ncclProfileGroup);
SAME_VAL(CS_NCCL_PROFILE_COLL, ncclProfileColl);
SAME_VAL(CS_NCCL_PROFILE_P2P, ncclProfileP2p);
SAME_VAL(CS_NCCL_PROFILE_PROXY_OP, ncclProfileProxyOp);
SAME_VAL(CS_NCCL_PROFILE_PROXY_STEP, ncclProfileProxyStep);
SAME_VAL(CS_NCCL_PROFILE_PROXY_CTRL, ncclProfileProxyCtrl);
SAME_VAL(CS_NCCL_PROFILE_KERNEL_CH, ncclProfileKernelCh);
SAME_VAL(CS_NCCL_PROFILE_NET_PLUGIN, ncclProfileNetPlugin);
SAME_VAL(CS_NCCL_PROFILER_KERNEL_CH_STOP, ncclProfilerKernelChStop);
_Static_assert(sizeof(cs_nccl_profiler_state_t) == sizeof(ncclProfilerEventState_v4_t), "state enum size");

/* ---- profiler v5 (NCCL 2.28+) ---- */
#ifdef CS_CHECK_PROFILER_V5
DESCR_COMMON(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, coll.parentGroup);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, p2p.parentGroup);
/* groupApi.graphCaptured: bool in the header NCCL itself builds with
 * (src/include/plugin/profiler/profiler_v5.h, every 2.28/2.29 release), int in the example
 * header until 2.29.2, bool from 2.29.3. Either way groupDepth sits at offset 4 and a
 * little-endian reader of the first byte sees the same value; collscope never reads it. */
_Static_assert(offsetof(cs_nccl_prof_descr_v5_t, groupApi.graphCaptured) ==
                   offsetof(ncclProfilerEventDescr_v5_t, groupApi.graphCaptured),
               "groupApi.graphCaptured offset");
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, groupApi.groupDepth);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, collApi.func);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, collApi.count);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, collApi.datatype);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, collApi.root);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, collApi.stream);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, collApi.graphCaptured);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, p2pApi.func);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, p2pApi.count);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, p2pApi.datatype);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, p2pApi.stream);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, p2pApi.graphCaptured);
SAME(cs_nccl_prof_descr_v5_t, ncclProfilerEventDescr_v5_t, kernelLaunch.stream);
SAME(cs_nccl_prof_state_args_t, ncclProfilerEventStateArgs_v5_t, kernelCh.pTimer);
SAME_SIZE(cs_nccl_prof_state_args_t, ncclProfilerEventStateArgs_v5_t);
PLUGIN_TABLE(cs_nccl_profiler_v5_t, ncclProfiler_v5_t);
SAME_VAL(CS_NCCL_PROFILE_GROUP_API, ncclProfileGroupApi);
SAME_VAL(CS_NCCL_PROFILE_COLL_API, ncclProfileCollApi);
SAME_VAL(CS_NCCL_PROFILE_P2P_API, ncclProfileP2pApi);
SAME_VAL(CS_NCCL_PROFILE_KERNEL_LAUNCH, ncclProfileKernelLaunch);
_Static_assert(sizeof(cs_nccl_profiler_state_t) == sizeof(ncclProfilerEventState_v5_t), "state enum size");
#endif

/* ---- profiler v6 (NCCL 2.29+): v5 plus the copy-engine descriptors ---- */
#ifdef CS_CHECK_PROFILER_V6
DESCR_COMMON(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, coll.parentGroup);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, p2p.parentGroup);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, groupApi.groupDepth);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, collApi.stream);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, p2pApi.stream);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, kernelLaunch.stream);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.seqNumber);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.func);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.sendBuff);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.recvBuff);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.count);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.root);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.datatype);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.syncStrategy);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.intraBatchSync);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.batchSize);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.numBatches);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.ceSeqNum);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceColl.stream);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceCollSync.isComplete);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceCollSync.nRanks);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceCollBatch.numOps);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceCollBatch.totalBytes);
SAME(cs_nccl_prof_descr_v6_t, ncclProfilerEventDescr_v6_t, ceCollBatch.useIntraSync);
SAME(cs_nccl_prof_state_args_t, ncclProfilerEventStateArgs_v6_t, kernelCh.pTimer);
SAME_SIZE(cs_nccl_prof_state_args_t, ncclProfilerEventStateArgs_v6_t);
PLUGIN_TABLE(cs_nccl_profiler_v6_t, ncclProfiler_v6_t);
SAME_VAL(CS_NCCL_PROFILE_CE_COLL, ncclProfileCeColl);
SAME_VAL(CS_NCCL_PROFILE_CE_SYNC, ncclProfileCeSync);
SAME_VAL(CS_NCCL_PROFILE_CE_BATCH, ncclProfileCeBatch);
SAME_VAL(CS_NCCL_PROFILER_GROUP_START_API_STOP, ncclProfilerGroupStartApiStop);
SAME_VAL(CS_NCCL_PROFILER_GROUP_END_API_START, ncclProfilerGroupEndApiStart);
SAME_VAL(CS_NCCL_PROFILER_CE_FIRST, ncclProfilerCeCollStart);
SAME_VAL(CS_NCCL_PROFILER_CE_LAST, ncclProfilerCeBatchComplete);
_Static_assert(sizeof(cs_nccl_profiler_state_t) == sizeof(ncclProfilerEventState_v6_t), "state enum size");
#endif

#endif /* CS_CHECK_PROFILER */

#if defined(CS_CHECK_NET)
/* ---- net v9 / v10 / v11 ---- */
#define PROPS(A, B) \
  SAME(A, B, name); \
  SAME(A, B, pciPath); \
  SAME(A, B, guid); \
  SAME(A, B, ptrSupport); \
  SAME(A, B, regIsGlobal); \
  SAME(A, B, forceFlush); \
  SAME(A, B, speed); \
  SAME(A, B, port); \
  SAME(A, B, latency); \
  SAME(A, B, maxComms); \
  SAME(A, B, maxRecvs); \
  SAME(A, B, netDeviceType); \
  SAME(A, B, netDeviceVersion); \
  SAME(A, B, vProps); \
  SAME(A, B, maxP2pBytes); \
  SAME(A, B, maxCollBytes); \
  SAME_SIZE(A, B)
PROPS(struct cs_net_props_v9, ncclNetProperties_v9_t);
PROPS(cs_net_props_v10, ncclNetProperties_v10_t);
SAME(struct cs_net_vprops, ncclNetVDeviceProps_v9_t, ndevs);
SAME(struct cs_net_vprops, ncclNetVDeviceProps_v9_t, devs);
SAME_SIZE(struct cs_net_vprops, ncclNetVDeviceProps_v10_t);
_Static_assert(CS_NET_HANDLE_MAXSIZE == NCCL_NET_HANDLE_MAXSIZE, "handle size");
_Static_assert(CS_NET_PTR_HOST == NCCL_PTR_HOST && CS_NET_PTR_CUDA == NCCL_PTR_CUDA &&
                   CS_NET_PTR_DMABUF == NCCL_PTR_DMABUF,
               "pointer support bits");
_Static_assert(CS_NET_MAX_REQUESTS == NCCL_NET_MAX_REQUESTS, "requests per comm");
SAME(struct cs_net_comm_config, ncclNetCommConfig_v10_t, trafficClass);
SAME_SIZE(struct cs_net_comm_config, ncclNetCommConfig_v10_t);

#define NET_TABLE(A, B) \
  SAME(A, B, name); \
  SAME(A, B, init); \
  SAME(A, B, devices); \
  SAME(A, B, getProperties); \
  SAME(A, B, listen); \
  SAME(A, B, connect); \
  SAME(A, B, accept); \
  SAME(A, B, regMr); \
  SAME(A, B, regMrDmaBuf); \
  SAME(A, B, deregMr); \
  SAME(A, B, isend); \
  SAME(A, B, irecv); \
  SAME(A, B, iflush); \
  SAME(A, B, test); \
  SAME(A, B, closeSend); \
  SAME(A, B, closeRecv); \
  SAME(A, B, closeListen); \
  SAME(A, B, getDeviceMr); \
  SAME(A, B, irecvConsumed); \
  SAME(A, B, makeVDevice)
NET_TABLE(cs_net_v9_t, ncclNet_v9_t);
SAME_SIZE(cs_net_v9_t, ncclNet_v9_t);
NET_TABLE(cs_net_v10_t, ncclNet_v10_t);
SAME_SIZE(cs_net_v10_t, ncclNet_v10_t);

#ifdef CS_CHECK_NET_V11
PROPS(struct cs_net_props_v11, ncclNetProperties_v11_t);
SAME(struct cs_net_props_v11, ncclNetProperties_v11_t, maxMultiRequestSize);
SAME_SIZE(struct cs_net_vprops, ncclNetVDeviceProps_v11_t);
SAME(struct cs_net_comm_config, ncclNetCommConfig_v11_t, trafficClass);
SAME_SIZE(struct cs_net_comm_config, ncclNetCommConfig_v11_t);
SAME(struct cs_net_attr_v11, ncclNetAttr_v11_t, sendCommAttr);
SAME(struct cs_net_attr_v11, ncclNetAttr_v11_t, recvCommAttr);
SAME(struct cs_net_attr_v11, ncclNetAttr_v11_t, op);
SAME(struct cs_net_attr_v11, ncclNetAttr_v11_t, algo);
SAME(struct cs_net_attr_v11, ncclNetAttr_v11_t, proto);
SAME_SIZE(struct cs_net_attr_v11, ncclNetAttr_v11_t);
SAME(struct cs_net_comm_attr, ncclNetCommAttr_v11_t, maxConcurrentPeers);
SAME(struct cs_net_comm_attr, ncclNetCommAttr_v11_t, minConcurrentPeers);
SAME(struct cs_net_comm_attr, ncclNetCommAttr_v11_t, maxFlowsPerPeer);
SAME(struct cs_net_comm_attr, ncclNetCommAttr_v11_t, minFlowsPerPeer);
NET_TABLE(cs_net_v11_t, ncclNet_v11_t);
SAME(cs_net_v11_t, ncclNet_v11_t, finalize);
SAME(cs_net_v11_t, ncclNet_v11_t, setNetAttr);
SAME_SIZE(cs_net_v11_t, ncclNet_v11_t);
#endif

#ifdef CS_CHECK_NET_V12
PROPS(struct cs_net_props_v12, ncclNetProperties_v12_t);
SAME(struct cs_net_props_v12, ncclNetProperties_v12_t, maxMultiRequestSize);
SAME(struct cs_net_props_v12, ncclNetProperties_v12_t, railId);
SAME(struct cs_net_props_v12, ncclNetProperties_v12_t, planeId);
SAME(struct cs_net_vprops_v12, ncclNetVDeviceProps_v12_t, ndevs);
SAME(struct cs_net_vprops_v12, ncclNetVDeviceProps_v12_t, devs);
SAME_SIZE(struct cs_net_vprops_v12, ncclNetVDeviceProps_v12_t);
_Static_assert(CS_NET_MAX_DEVS_PER_NIC_V12 == NCCL_NET_MAX_DEVS_PER_NIC_V12, "devices per virtual NIC");
_Static_assert(CS_NET_ID_UNDEF == NCCL_NET_ID_UNDEF, "undefined rail/plane id");
SAME_SIZE(struct cs_net_comm_config, ncclNetCommConfig_v12_t);
SAME_SIZE(struct cs_net_attr_v11, ncclNetAttr_v12_t);
SAME(struct cs_net_attr_v11, ncclNetAttr_v12_t, op);
SAME(struct cs_net_attr_v11, ncclNetAttr_v12_t, proto);
NET_TABLE(cs_net_v12_t, ncclNet_v12_t);
SAME(cs_net_v12_t, ncclNet_v12_t, finalize);
SAME(cs_net_v12_t, ncclNet_v12_t, setNetAttr);
SAME_SIZE(cs_net_v12_t, ncclNet_v12_t);
#endif
#endif /* CS_CHECK_NET */

int main(void) { return 0; }
