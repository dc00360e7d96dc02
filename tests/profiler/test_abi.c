/* tests/profiler/test_abi.c: collscope's declaration of NCCL's profiler plugin ABI
 * (include/collscope/nccl_profiler_abi.h) against the layout of NCCL's profiler_v4.h
 * (2.27) and profiler_v5.h (2.28), written out here as numbers derived from NCCL's member
 * lists on LP64; and the exported plugin tables of libcollscope (argv[1]). */
#include "collscope/nccl_profiler_abi.h"
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int fails;
#define EQ(a, b) \
  do { \
    long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) { \
      fprintf(stderr, "FAIL %s = %lld, want %lld\n", #a, a_, b_); \
      fails++; \
    } \
  } while (0)

int main(int argc, char **argv) {
  /* v4 descr: uint8_t type; void *parentObj; int rank; union {...} */
  EQ(offsetof(cs_nccl_prof_descr_v4_t, type), 0);
  EQ(sizeof(((cs_nccl_prof_descr_v4_t *)0)->type), 1);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, parentObj), 8);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, rank), 16);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, coll.seqNumber), 24);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, coll.func), 32);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, coll.count), 56);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, coll.nChannels), 80);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, coll.algo), 88);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, coll.proto), 96);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, p2p.count), 48);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, p2p.nChannels), 60);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, kernelCh.channelId), 24);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, kernelCh.pTimer), 32);
  EQ(offsetof(cs_nccl_prof_descr_v4_t, proxyOp.isSend), 44);
  EQ(sizeof(cs_nccl_prof_descr_v4_t), 104);
  /* v5 descr: uint64_t type, API events added to the union, parentGroup at the end of coll/p2p */
  EQ(sizeof(((cs_nccl_prof_descr_v5_t *)0)->type), 8);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, parentObj), 8);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, rank), 16);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, coll.nChannels), 80);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, coll.algo), 88);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, coll.proto), 96);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, coll.parentGroup), 104);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, p2p.parentGroup), 64);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, collApi.stream), 56);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, collApi.graphCaptured), 64);
  EQ(offsetof(cs_nccl_prof_descr_v5_t, kernelCh.pTimer), 32);
  EQ(sizeof(cs_nccl_prof_descr_v5_t), 112);
  EQ(sizeof(cs_nccl_prof_state_args_t), 8);
  EQ(offsetof(cs_nccl_profiler_v5_t, init), 8);
  EQ(offsetof(cs_nccl_profiler_v5_t, finalize), 40);
  EQ(sizeof(cs_nccl_profiler_v4_t), 48);
  /* v6 descr (NCCL 2.29+): v5's union plus ceColl (88 bytes), ceCollSync, ceCollBatch */
  EQ(offsetof(cs_nccl_prof_descr_v6_t, coll.parentGroup), 104);
  EQ(offsetof(cs_nccl_prof_descr_v6_t, ceColl.syncStrategy), 80);
  EQ(offsetof(cs_nccl_prof_descr_v6_t, ceColl.intraBatchSync), 88);
  EQ(offsetof(cs_nccl_prof_descr_v6_t, ceColl.batchSize), 92);
  EQ(offsetof(cs_nccl_prof_descr_v6_t, ceColl.ceSeqNum), 100);
  EQ(offsetof(cs_nccl_prof_descr_v6_t, ceColl.stream), 104);
  EQ(offsetof(cs_nccl_prof_descr_v6_t, ceCollBatch.totalBytes), 32);
  EQ(sizeof(cs_nccl_prof_descr_v6_t), 112);
  EQ(sizeof(cs_nccl_profiler_v6_t), 48);
  EQ(CS_NCCL_PROFILE_CE_COLL, 4096);
  EQ(CS_NCCL_PROFILER_CE_FIRST, 25);
  EQ(CS_NCCL_PROFILE_COLL, 2);
  EQ(CS_NCCL_PROFILE_P2P, 4);
  EQ(CS_NCCL_PROFILE_KERNEL_CH, 64);
  EQ(CS_NCCL_PROFILER_KERNEL_CH_STOP, 22);

  if (argc > 1) { /* the exported tables */
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "FAIL dlopen %s: %s\n", argv[1], dlerror());
      return 1;
    }
    cs_nccl_profiler_v6_t *p6 = dlsym(h, "ncclProfiler_v6");
    EQ(p6 != NULL, 1);
    if (p6) EQ(p6->name && !strcmp(p6->name, "collscope") && p6->init && p6->startEvent && p6->stopEvent &&
                   p6->recordEventState && p6->finalize,
               1);
    cs_nccl_profiler_v5_t *p5 = dlsym(h, "ncclProfiler_v5");
    cs_nccl_profiler_v4_t *p4 = dlsym(h, "ncclProfiler_v4");
    EQ(p5 != NULL, 1);
    EQ(p4 != NULL, 1);
    if (p5) EQ(p5->name && !strcmp(p5->name, "collscope") && p5->init && p5->startEvent && p5->stopEvent &&
                   p5->recordEventState && p5->finalize,
               1);
    if (p4) EQ(p4->name && p4->init && p4->startEvent && p4->stopEvent && p4->recordEventState && p4->finalize, 1);
  }
  if (fails) return 1;
  printf("ok: profiler ABI v4/v5/v6 layout and exports\n");
  return 0;
}
