/* include/collscope/nccl_profiler_abi.h: NCCL's profiler plugin ABI, declared by
 * collscope from NCCL's documented layout (ext-profiler, src/include/plugin/profiler/
 * profiler_v4.h as shipped with NCCL 2.27, profiler_v5.h with NCCL 2.28 and profiler_v6.h
 * with NCCL 2.29/2.30, v2.30.7-1: copy-engine collectives). Only the
 * parts collscope uses are named; every struct keeps NCCL's member order and types, so
 * the sizes and offsets below (LP64) are NCCL's. The static asserts at the end pin them;
 * tests/profiler/test_abi.c checks them again, and against <nccl_profiler.h> style headers
 * when such a header is installed.
 *
 * Names carry a cs_ prefix so this header never collides with NCCL's own. */
#ifndef COLLSCOPE_NCCL_PROFILER_ABI_H
#define COLLSCOPE_NCCL_PROFILER_ABI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int cs_nccl_result_t; /* ncclResult_t: 0 = ncclSuccess, 3 = ncclInternalError */
typedef void (*cs_nccl_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

/* event types (eDescr->type, and bits of the activation mask) */
enum {
  CS_NCCL_PROFILE_GROUP = 1 << 0,
  CS_NCCL_PROFILE_COLL = 1 << 1,
  CS_NCCL_PROFILE_P2P = 1 << 2,
  CS_NCCL_PROFILE_PROXY_OP = 1 << 3,
  CS_NCCL_PROFILE_PROXY_STEP = 1 << 4,
  CS_NCCL_PROFILE_PROXY_CTRL = 1 << 5,
  CS_NCCL_PROFILE_KERNEL_CH = 1 << 6,
  CS_NCCL_PROFILE_NET_PLUGIN = 1 << 7,
  /* v5 (2.28): API-level events */
  CS_NCCL_PROFILE_GROUP_API = 1 << 8,
  CS_NCCL_PROFILE_COLL_API = 1 << 9,
  CS_NCCL_PROFILE_P2P_API = 1 << 10,
  CS_NCCL_PROFILE_KERNEL_LAUNCH = 1 << 11,
  /* v6 (2.29): copy-engine (CE) collectives */
  CS_NCCL_PROFILE_CE_COLL = 1 << 12,
  CS_NCCL_PROFILE_CE_SYNC = 1 << 13,
  CS_NCCL_PROFILE_CE_BATCH = 1 << 14,
};
#define CS_NCCL_PROFILE_V5_TYPES ((1 << 12) - 1) /* every type a v5 plugin knows */
#define CS_NCCL_PROFILE_V4_TYPES ((1 << 8) - 1)  /* every type a v4 plugin knows */
/* event states used by collscope (ncclProfilerEventState_t, an int-sized enum) */
enum {
  CS_NCCL_PROFILER_KERNEL_CH_STOP = 22,
  CS_NCCL_PROFILER_GROUP_START_API_STOP = 23, /* v5 */
  CS_NCCL_PROFILER_GROUP_END_API_START = 24,  /* v5 */
  CS_NCCL_PROFILER_CE_FIRST = 25,             /* v6: CeCollStart .. CeBatchComplete = 25..30 */
  CS_NCCL_PROFILER_CE_LAST = 30,
};
typedef int cs_nccl_profiler_state_t;

/* --- v4 (NCCL 2.27) ---------------------------------------------------------------- */
struct cs_nccl_prof_coll_v4 {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char *algo;
  const char *proto;
};
struct cs_nccl_prof_p2p_v4 {
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};
struct cs_nccl_prof_proxy_op {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct cs_nccl_prof_kernel_ch {
  uint8_t channelId;
  uint64_t pTimer; /* GPU globaltimer at the channel's start */
};
struct cs_nccl_prof_net_plugin {
  int64_t id;
  void *data;
};

typedef struct {
  uint8_t type; /* v4: one byte */
  void *parentObj;
  int rank;
  union {
    struct cs_nccl_prof_coll_v4 coll;
    struct cs_nccl_prof_p2p_v4 p2p;
    struct cs_nccl_prof_proxy_op proxyOp;
    struct {
      int step;
    } proxyStep;
    struct cs_nccl_prof_kernel_ch kernelCh;
    struct cs_nccl_prof_net_plugin netPlugin;
  };
} cs_nccl_prof_descr_v4_t;

/* the state-args union is the same in v4 and v5 */
typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void *data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh; /* GPU globaltimer at the channel's end */
} cs_nccl_prof_state_args_t;

typedef struct {
  const char *name;
  cs_nccl_result_t (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash,
                           int nNodes, int nranks, int rank, cs_nccl_logger_t logfn);
  cs_nccl_result_t (*startEvent)(void *context, void **eHandle, cs_nccl_prof_descr_v4_t *eDescr);
  cs_nccl_result_t (*stopEvent)(void *eHandle);
  cs_nccl_result_t (*recordEventState)(void *eHandle, cs_nccl_profiler_state_t eState,
                                       cs_nccl_prof_state_args_t *eStateArgs);
  cs_nccl_result_t (*finalize)(void *context);
} cs_nccl_profiler_v4_t;

/* --- v5 (NCCL 2.28) ---------------------------------------------------------------- */
struct cs_nccl_prof_coll_v5 {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char *algo;
  const char *proto;
  void *parentGroup; /* v5 addition */
};
struct cs_nccl_prof_p2p_v5 {
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void *parentGroup; /* v5 addition */
};

typedef struct {
  uint64_t type; /* v5: eight bytes */
  void *parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      int root;
      void *stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      void *stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void *stream;
    } kernelLaunch;
    struct cs_nccl_prof_coll_v5 coll;
    struct cs_nccl_prof_p2p_v5 p2p;
    struct cs_nccl_prof_proxy_op proxyOp;
    struct {
      int step;
    } proxyStep;
    struct cs_nccl_prof_kernel_ch kernelCh;
    struct cs_nccl_prof_net_plugin netPlugin;
  };
} cs_nccl_prof_descr_v5_t;

typedef struct {
  const char *name;
  cs_nccl_result_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
                           int nranks, int rank, cs_nccl_logger_t logfn);
  cs_nccl_result_t (*startEvent)(void *context, void **eHandle, cs_nccl_prof_descr_v5_t *eDescr);
  cs_nccl_result_t (*stopEvent)(void *eHandle);
  cs_nccl_result_t (*recordEventState)(void *eHandle, cs_nccl_profiler_state_t eState,
                                       cs_nccl_prof_state_args_t *eStateArgs);
  cs_nccl_result_t (*finalize)(void *context);
} cs_nccl_profiler_v5_t;

/* --- v6 (NCCL 2.29, 2.30): v5's descriptor plus the copy-engine ones --------------- */
struct cs_nccl_prof_ce_coll {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  const char *syncStrategy;
  bool intraBatchSync;
  uint32_t batchSize;
  uint32_t numBatches;
  uint32_t ceSeqNum;
  void *stream; /* the stream NCCL enqueues the copies on */
};
typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      int root;
      void *stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      void *stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void *stream;
    } kernelLaunch;
    struct cs_nccl_prof_coll_v5 coll;
    struct cs_nccl_prof_p2p_v5 p2p;
    struct cs_nccl_prof_proxy_op proxyOp;
    struct {
      int step;
    } proxyStep;
    struct cs_nccl_prof_kernel_ch kernelCh;
    struct cs_nccl_prof_net_plugin netPlugin;
    struct cs_nccl_prof_ce_coll ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} cs_nccl_prof_descr_v6_t;

typedef struct {
  const char *name;
  cs_nccl_result_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
                           int nranks, int rank, cs_nccl_logger_t logfn);
  cs_nccl_result_t (*startEvent)(void *context, void **eHandle, cs_nccl_prof_descr_v6_t *eDescr);
  cs_nccl_result_t (*stopEvent)(void *eHandle);
  cs_nccl_result_t (*recordEventState)(void *eHandle, cs_nccl_profiler_state_t eState,
                                       cs_nccl_prof_state_args_t *eStateArgs);
  cs_nccl_result_t (*finalize)(void *context);
} cs_nccl_profiler_v6_t;

/* Layout pins (LP64), derived by hand from the member lists above / NCCL's headers:
 * descr header: type @0, parentObj @8, rank @16, union @24 (8-aligned);
 * coll: seqNumber 0, func 8, sendBuff 16, recvBuff 24, count 32, root 40, datatype 48,
 *       nChannels 56, nWarps 57, algo 64, proto 72, [v5 parentGroup 80] -> 80 / 88 bytes;
 * p2p: func 0, buff 8, datatype 16, count 24, peer 32, nChannels 36, [v5 parentGroup 40];
 * kernelCh: channelId 0, pTimer 8 (16 bytes); so descr v4 = 24 + 80 = 104, v5 = 24 + 88 = 112;
 * v6 ceColl: seqNumber 0 .. datatype 48, syncStrategy 56, intraBatchSync 64, batchSize 68,
 *       numBatches 72, ceSeqNum 76, stream 80 -> 88 bytes, so descr v6 = 24 + 88 = 112 too;
 * plugin tables: name + 5 function pointers = 48 bytes. */
#if defined(__LP64__) || defined(_LP64)
#define CS_NCCL_PROF_ASSERT(c) _Static_assert(c, #c)
CS_NCCL_PROF_ASSERT(offsetof(cs_nccl_prof_descr_v4_t, parentObj) == 8);
CS_NCCL_PROF_ASSERT(offsetof(cs_nccl_prof_descr_v4_t, rank) == 16);
CS_NCCL_PROF_ASSERT(offsetof(cs_nccl_prof_descr_v4_t, coll) == 24);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_coll_v4, root) == 40);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_coll_v4, nChannels) == 56);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_coll_v4, algo) == 64);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_coll_v4, proto) == 72);
CS_NCCL_PROF_ASSERT(sizeof(struct cs_nccl_prof_coll_v4) == 80);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_p2p_v4, peer) == 32);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_p2p_v4, nChannels) == 36);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_kernel_ch, pTimer) == 8);
CS_NCCL_PROF_ASSERT(sizeof(cs_nccl_prof_descr_v4_t) == 104);
CS_NCCL_PROF_ASSERT(offsetof(cs_nccl_prof_descr_v5_t, parentObj) == 8);
CS_NCCL_PROF_ASSERT(offsetof(cs_nccl_prof_descr_v5_t, rank) == 16);
CS_NCCL_PROF_ASSERT(offsetof(cs_nccl_prof_descr_v5_t, coll) == 24);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_coll_v5, parentGroup) == 80);
CS_NCCL_PROF_ASSERT(sizeof(struct cs_nccl_prof_coll_v5) == 88);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_p2p_v5, parentGroup) == 40);
CS_NCCL_PROF_ASSERT(sizeof(cs_nccl_prof_descr_v5_t) == 112);
CS_NCCL_PROF_ASSERT(offsetof(cs_nccl_prof_descr_v6_t, coll) == 24);
CS_NCCL_PROF_ASSERT(offsetof(cs_nccl_prof_descr_v6_t, ceColl) == 24);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_ce_coll, syncStrategy) == 56);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_ce_coll, batchSize) == 68);
CS_NCCL_PROF_ASSERT(offsetof(struct cs_nccl_prof_ce_coll, stream) == 80);
CS_NCCL_PROF_ASSERT(sizeof(struct cs_nccl_prof_ce_coll) == 88);
CS_NCCL_PROF_ASSERT(sizeof(cs_nccl_prof_descr_v6_t) == 112);
CS_NCCL_PROF_ASSERT(sizeof(cs_nccl_prof_state_args_t) == 8);
CS_NCCL_PROF_ASSERT(sizeof(cs_nccl_profiler_v4_t) == 48 && sizeof(cs_nccl_profiler_v5_t) == 48);
CS_NCCL_PROF_ASSERT(sizeof(cs_nccl_profiler_v6_t) == 48);
#undef CS_NCCL_PROF_ASSERT
#endif

#endif
