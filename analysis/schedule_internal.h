/* analysis/schedule_internal.h: the pipeline schedule's state (analysis/schedule.c) shared with
 * the judgement of a stage's ranks by their compute per step (analysis/stage_compute.c). */
#ifndef COLLSCOPE_ANALYSIS_SCHEDULE_INTERNAL_H
#define COLLSCOPE_ANALYSIS_SCHEDULE_INTERNAL_H

#include "collscope/uthash_nonfatal.h"

#include "collscope/schedule.h"

struct skey {
  uint64_t comm;
  int comm_rank;
};
struct smem { /* one (communicator, member) */
  struct skey k;
  int rank;
  const char *host;
  int64_t first_seq, last_seq; /* the instances its compute gaps came from */
  int64_t first_ns, last_ns;   /* its ops' GPU ends there (0 unknown) */
  bool flagged, slow;          /* cs_sched_judge: a straggler already; slower than its stage peers */
  double peers;                /* its stage peers' median gap (surface) */
  int peer[2], npeers;         /* the distinct peers it sent to or received from, up to two */
  bool peer_over;              /* a third peer: not a chain */
  bool first_seen, first_send;
  uint64_t sends, recvs;
  uint64_t before[2]; /* sends to peer[i] before the first Recv from it */
  bool got[2];        /* a Recv from peer[i] seen */
  double gap_sum;
  uint64_t gap_n;
  uint64_t above, below; /* instances its gap was above, below the other members' median */
  double wsum, w2sum;    /* over those: +-(that median), its square (the weighted sign test) */
  int stage;             /* on a pipeline chain: its position, else -1 */
  UT_hash_handle hh;
};
struct scomm {
  uint64_t comm;
  bool all_p2p;
  size_t nmem;
  int64_t last_seq; /* its last instance */
  enum cs_sched_kind kind;
  UT_hash_handle hh;
};
struct srank {
  int rank, stage;
  UT_hash_handle hh;
};

struct cs_sched {
  struct smem *mem;
  struct scomm *comms;
  struct srank *ranks;
  int nstages;
  bool oom, finished;
  struct cs_sched_verdict *v;
  size_t nv, capv;
  struct sgap *scr; /* one instance's members with a gap (cs_sched_instance's scratch) */
  size_t capscr;
};
struct sgap {
  double gap;
  struct smem *m;
};

int cs_sched_rank_stage(const struct cs_sched *s, int rank); /* -1: in no pipeline */
void cs_sched_verdict_add(struct cs_sched *s, const struct cs_sched_verdict *v);
/* one instance's members with a gap (k >= 2, sorted here): each above or below the others' median */
void cs_sched_stage_instance(struct sgap *g, size_t k);
/* cs_sched_judge's last part: the ranks slower than their stage peers by their own compute
 * (include/collscope/schedule.h); returns how many were named */
size_t cs_sched_stage_compute(struct cs_sched *s, struct cs_det_result *r);

/* (communicator, member)'s entry, NULL none */
struct smem *cs_sched_find_mem(const struct cs_sched *s, uint64_t comm, int comm_rank);

#endif
