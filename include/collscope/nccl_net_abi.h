/* include/collscope/nccl_net_abi.h: NCCL's network plugin ABI (NCCL_NET_PLUGIN), declared
 * by collscope from NCCL's documented layout: src/include/plugin/net/net_v9.h (NCCL 2.24),
 * net_v10.h (2.26/2.27), net_v11.h (2.28, 2.29) and net_v12.h (2.30) of NVIDIA/nccl. NCCL installs no net-plugin
 * header (the installed 2.28.9 tree has nccl.h and nccl_device/ only), so the sizes and
 * offsets pinned below (LP64) were derived from those headers; tests/net/test_net_abi.c
 * checks them again.
 *
 * Every struct keeps NCCL's member order and types. Pointers NCCL treats as opaque
 * (ncclNetDeviceHandle_vN_t*, the profiler callback's handles) are void *, and enums
 * (ncclNetDeviceType, ncclResult_t, ncclDataType_t, ncclRedOp_t) are int-sized, as in
 * NCCL. Names carry a cs_ prefix so this header never collides with NCCL's own.
 *
 * Used by shim/net_plugin.c (the wrapper libcollscope exports as ncclNetPlugin_v12/v11/v10/v9)
 * and by the simulator's own plugin, tests/sim/net/simnet.c. */
#ifndef COLLSCOPE_NCCL_NET_ABI_H
#define COLLSCOPE_NCCL_NET_ABI_H
#include <stddef.h>
#include <stdint.h>

typedef int cs_net_result_t; /* ncclResult_t: 0 ncclSuccess, 2 ncclSystemError, 3 ncclInternalError,
                               * 4 ncclInvalidArgument */
enum { CS_NET_OK = 0,
       CS_NET_UNHANDLED_CUDA = 1,
       CS_NET_SYSTEM_ERROR = 2,
       CS_NET_INTERNAL_ERROR = 3,
       CS_NET_INVALID_ARGUMENT = 4 };
typedef void (*cs_net_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
/* ncclProfilerCallback_t (v10+): lets a net plugin emit profiler events through NCCL */
typedef cs_net_result_t (*cs_net_prof_cb_t)(void **eHandle, int type, void *pHandle, int64_t pluginId,
                                            void *extData);

#define CS_NET_HANDLE_MAXSIZE 128 /* NCCL_NET_HANDLE_MAXSIZE */
#define CS_NET_MAX_REQUESTS 32    /* NCCL_NET_MAX_REQUESTS: outstanding requests per comm */
#define CS_NET_MAX_DEVS_PER_NIC 4 /* NCCL_NET_MAX_DEVS_PER_NIC_V11 (also used by v9, v10) */
#define CS_NET_PTR_HOST 0x1
#define CS_NET_PTR_CUDA 0x2
#define CS_NET_PTR_DMABUF 0x4

struct cs_net_vprops { /* ncclNetVDeviceProps_v9/v10/v11_t */
  int ndevs;
  int devs[CS_NET_MAX_DEVS_PER_NIC];
};

/* ncclNetProperties_v9_t == ncclNetProperties_v10_t; v11 appends maxMultiRequestSize */
struct cs_net_props_v9 {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed; /* Mbps */
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  int netDeviceType; /* ncclNetDeviceType */
  int netDeviceVersion;
  struct cs_net_vprops vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
};
typedef struct cs_net_props_v9 cs_net_props_v10;
struct cs_net_props_v11 {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
  struct cs_net_vprops vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
};

/* v12 (NCCL 2.30): eight devices per virtual NIC, and rail / plane ids at the end */
#define CS_NET_MAX_DEVS_PER_NIC_V12 8
struct cs_net_vprops_v12 { /* ncclNetVDeviceProps_v12_t */
  int ndevs;
  int devs[CS_NET_MAX_DEVS_PER_NIC_V12];
};
struct cs_net_props_v12 {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
  struct cs_net_vprops_v12 vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId; /* -1 (NCCL_NET_ID_UNDEF): not known */
  int16_t planeId;
};
#define CS_NET_ID_UNDEF (-1)

struct cs_net_comm_config {
  int trafficClass;
}; /* ncclNetCommConfig_v10_t / _v11_t */
struct cs_net_comm_attr {
  int32_t maxConcurrentPeers, minConcurrentPeers, maxFlowsPerPeer, minFlowsPerPeer;
};
struct cs_net_attr_v11 { /* ncclNetAttr_v11_t */
  struct cs_net_comm_attr sendCommAttr;
  struct cs_net_comm_attr recvCommAttr;
  uint32_t op, algo, proto;
};

typedef struct { /* ncclNet_v9_t */
  const char *name;
  cs_net_result_t (*init)(cs_net_logger_t logFunction);
  cs_net_result_t (*devices)(int *ndev);
  cs_net_result_t (*getProperties)(int dev, struct cs_net_props_v9 *props);
  cs_net_result_t (*listen)(int dev, void *handle, void **listenComm);
  cs_net_result_t (*connect)(int dev, void *handle, void **sendComm, void **sendDevComm);
  cs_net_result_t (*accept)(void *listenComm, void **recvComm, void **recvDevComm);
  cs_net_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  cs_net_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                 void **mhandle);
  cs_net_result_t (*deregMr)(void *comm, void *mhandle);
  cs_net_result_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void **request);
  cs_net_result_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                           void **request);
  cs_net_result_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
  cs_net_result_t (*test)(void *request, int *done, int *sizes);
  cs_net_result_t (*closeSend)(void *sendComm);
  cs_net_result_t (*closeRecv)(void *recvComm);
  cs_net_result_t (*closeListen)(void *listenComm);
  cs_net_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  cs_net_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
  cs_net_result_t (*makeVDevice)(int *d, struct cs_net_vprops *props);
} cs_net_v9_t;

typedef struct { /* ncclNet_v10_t */
  const char *name;
  cs_net_result_t (*init)(cs_net_logger_t logFunction, cs_net_prof_cb_t profFunction);
  cs_net_result_t (*devices)(int *ndev);
  cs_net_result_t (*getProperties)(int dev, cs_net_props_v10 *props);
  cs_net_result_t (*listen)(int dev, void *handle, void **listenComm);
  cs_net_result_t (*connect)(int dev, struct cs_net_comm_config *config, void *handle, void **sendComm,
                             void **sendDevComm);
  cs_net_result_t (*accept)(void *listenComm, void **recvComm, void **recvDevComm);
  cs_net_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  cs_net_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                 void **mhandle);
  cs_net_result_t (*deregMr)(void *comm, void *mhandle);
  cs_net_result_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                           void **request);
  cs_net_result_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                           void **phandles, void **request);
  cs_net_result_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
  cs_net_result_t (*test)(void *request, int *done, int *sizes);
  cs_net_result_t (*closeSend)(void *sendComm);
  cs_net_result_t (*closeRecv)(void *recvComm);
  cs_net_result_t (*closeListen)(void *listenComm);
  cs_net_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  cs_net_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
  cs_net_result_t (*makeVDevice)(int *d, struct cs_net_vprops *props);
} cs_net_v10_t;

typedef struct { /* ncclNet_v11_t: init is per communicator (ctx) */
  const char *name;
  cs_net_result_t (*init)(void **ctx, uint64_t commId, struct cs_net_comm_config *config,
                          cs_net_logger_t logFunction, cs_net_prof_cb_t profFunction);
  cs_net_result_t (*devices)(int *ndev);
  cs_net_result_t (*getProperties)(int dev, struct cs_net_props_v11 *props);
  cs_net_result_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
  cs_net_result_t (*connect)(void *ctx, int dev, void *handle, void **sendComm, void **sendDevComm);
  cs_net_result_t (*accept)(void *listenComm, void **recvComm, void **recvDevComm);
  cs_net_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  cs_net_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                 void **mhandle);
  cs_net_result_t (*deregMr)(void *comm, void *mhandle);
  cs_net_result_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                           void **request);
  cs_net_result_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                           void **phandles, void **request);
  cs_net_result_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
  cs_net_result_t (*test)(void *request, int *done, int *sizes);
  cs_net_result_t (*closeSend)(void *sendComm);
  cs_net_result_t (*closeRecv)(void *recvComm);
  cs_net_result_t (*closeListen)(void *listenComm);
  cs_net_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  cs_net_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
  cs_net_result_t (*makeVDevice)(int *d, struct cs_net_vprops *props);
  cs_net_result_t (*finalize)(void *ctx);
  cs_net_result_t (*setNetAttr)(void *ctx, struct cs_net_attr_v11 *netAttr);
} cs_net_v11_t;

typedef struct { /* ncclNet_v12_t: v11's calls, v12 property structs */
  const char *name;
  cs_net_result_t (*init)(void **ctx, uint64_t commId, struct cs_net_comm_config *config,
                          cs_net_logger_t logFunction, cs_net_prof_cb_t profFunction);
  cs_net_result_t (*devices)(int *ndev);
  cs_net_result_t (*getProperties)(int dev, struct cs_net_props_v12 *props);
  cs_net_result_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
  cs_net_result_t (*connect)(void *ctx, int dev, void *handle, void **sendComm, void **sendDevComm);
  cs_net_result_t (*accept)(void *listenComm, void **recvComm, void **recvDevComm);
  cs_net_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  cs_net_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                 void **mhandle);
  cs_net_result_t (*deregMr)(void *comm, void *mhandle);
  cs_net_result_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                           void **request);
  cs_net_result_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                           void **phandles, void **request);
  cs_net_result_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
  cs_net_result_t (*test)(void *request, int *done, int *sizes);
  cs_net_result_t (*closeSend)(void *sendComm);
  cs_net_result_t (*closeRecv)(void *recvComm);
  cs_net_result_t (*closeListen)(void *listenComm);
  cs_net_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  cs_net_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
  cs_net_result_t (*makeVDevice)(int *d, struct cs_net_vprops_v12 *props);
  cs_net_result_t (*finalize)(void *ctx);
  cs_net_result_t (*setNetAttr)(void *ctx, struct cs_net_attr_v11 *netAttr); /* ncclNetAttr_v12_t == v11 */
} cs_net_v12_t;

/* collscope's identity block, written by the wrapper into the LAST 16 bytes of a listen
 * handle when the inner plugin left them zero (shim/net_plugin.c). The wrapper on the
 * connect side reads it, restores the zeros, and only then passes the handle on, so the
 * inner plugin always sees exactly the bytes it wrote. */
#define CS_NET_ID_MAGIC 0x43534e31u /* "CSN1" */
#define CS_NET_ID_OFFSET (CS_NET_HANDLE_MAXSIZE - 16)
struct cs_net_id {
  uint32_t magic;
  int32_t rank;   /* the listener's global rank (-1 unknown) */
  uint64_t token; /* random connection token, also in both ends' link records */
};

/* ---- layout pins (LP64), from NVIDIA/nccl src/include/plugin/net/net_v{9,10,11,12}.h ---- */
#if defined(__LP64__)
_Static_assert(sizeof(struct cs_net_vprops) == 20, "ncclNetVDeviceProps size");
_Static_assert(offsetof(struct cs_net_props_v9, guid) == 16, "props.guid");
_Static_assert(offsetof(struct cs_net_props_v9, latency) == 44, "props.latency");
_Static_assert(offsetof(struct cs_net_props_v9, netDeviceType) == 56, "props.netDeviceType");
_Static_assert(offsetof(struct cs_net_props_v9, vProps) == 64, "props.vProps");
_Static_assert(offsetof(struct cs_net_props_v9, maxP2pBytes) == 88, "props.maxP2pBytes");
_Static_assert(offsetof(struct cs_net_props_v9, maxCollBytes) == 96, "props.maxCollBytes");
_Static_assert(sizeof(struct cs_net_props_v9) == 104, "ncclNetProperties_v9/v10 size");
_Static_assert(offsetof(struct cs_net_props_v11, maxMultiRequestSize) == 104, "props.maxMultiRequestSize");
_Static_assert(sizeof(struct cs_net_props_v11) == 112, "ncclNetProperties_v11 size");
_Static_assert(sizeof(struct cs_net_attr_v11) == 44, "ncclNetAttr_v11 size");
_Static_assert(sizeof(struct cs_net_vprops_v12) == 36, "ncclNetVDeviceProps_v12 size");
_Static_assert(offsetof(struct cs_net_props_v12, vProps) == 64, "props v12.vProps");
_Static_assert(offsetof(struct cs_net_props_v12, maxP2pBytes) == 104, "props v12.maxP2pBytes");
_Static_assert(offsetof(struct cs_net_props_v12, maxMultiRequestSize) == 120, "props v12.maxMultiRequestSize");
_Static_assert(offsetof(struct cs_net_props_v12, railId) == 124 && offsetof(struct cs_net_props_v12, planeId) == 126,
               "props v12 rail/plane ids");
_Static_assert(sizeof(struct cs_net_props_v12) == 128, "ncclNetProperties_v12 size");
_Static_assert(sizeof(cs_net_v12_t) == 22 * 8, "ncclNet_v12_t: name + 21 functions");
_Static_assert(sizeof(cs_net_v9_t) == 20 * 8, "ncclNet_v9_t: name + 19 functions");
_Static_assert(sizeof(cs_net_v10_t) == 20 * 8, "ncclNet_v10_t: name + 19 functions");
_Static_assert(sizeof(cs_net_v11_t) == 22 * 8, "ncclNet_v11_t: name + 21 functions");
_Static_assert(offsetof(cs_net_v9_t, isend) == 80, "v9 isend");
_Static_assert(offsetof(cs_net_v9_t, test) == 104, "v9 test");
_Static_assert(offsetof(cs_net_v9_t, makeVDevice) == 152, "v9 makeVDevice");
_Static_assert(offsetof(cs_net_v10_t, test) == 104, "v10 test");
_Static_assert(offsetof(cs_net_v11_t, test) == 104, "v11 test");
_Static_assert(offsetof(cs_net_v11_t, finalize) == 160, "v11 finalize");
_Static_assert(offsetof(cs_net_v11_t, setNetAttr) == 168, "v11 setNetAttr");
#endif
_Static_assert(sizeof(struct cs_net_id) == 16 && CS_NET_ID_OFFSET + sizeof(struct cs_net_id) == CS_NET_HANDLE_MAXSIZE,
               "identity block fills the handle's last 16 bytes");

#endif
