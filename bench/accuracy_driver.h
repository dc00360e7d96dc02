/* bench/accuracy_driver.h: the in-process accuracy driver's internal interface, between its
 * core (bench/accuracy_driver.c: the job's state, faults, cost, compute, collective instances,
 * the detector's feed and the output) and its workloads (bench/accuracy_workloads.c: what each
 * rank runs, in the order the test apps in tests/apps run it). Not installed. */
#ifndef BENCH_ACCURACY_DRIVER_H
#define BENCH_ACCURACY_DRIVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/comm_elsewhere.h"
#include "collscope/compute_gap.h"
#include "collscope/detect.h"
#include "collscope/peer_wait.h"
#include "collscope/schedule.h"
#include "tests/sim/nccl/collcost.h"

#define NSTREAMS 5 /* per rank: stream 0 (compute, and every op of one-stream apps), 1..4 */
#define COMPUTE_US 2000.0

enum fault { F_NONE,
             F_SLOW,
             F_INTERMITTENT,
             F_HOST,
             F_LINK,
             F_THROTTLE,
             F_TWO,
             F_HANG_HOST,
             F_HANG_GPU,
             F_HANG_KERNEL,
             F_COMPUTE,   /* the culprit's GPU pct% slower at its own compute (slow:compute=P) */
             F_HOSTDELAY, /* its host pct% of a step's compute late to enqueue each step (hostdelay) */
             F_NIC };     /* its host's NIC at 1 / (1 + pct/100) of the bandwidth (nic:pct=P) */

struct comm {
  int id, n;
  int stream; /* the stream its ops run on, on every member */
  int *m;     /* members' global ranks, in comm-rank (ring) order */
  int64_t seq;
  int64_t onset; /* 1-based instance of the first delayed arrival of a culprit, 0 none */
  struct cs_det_op *mb;
  double hist[32]; /* a slowed member's last measured durations here (slow: P% of their median) */
  size_t nhist;
};

struct driver {
  int n, rph, steps;
  uint64_t seed;
  enum fault fault;
  double pct;
  int64_t from;        /* the fault starts at this step */
  double jitter, tail; /* noise: each compute and instance 1 + jitter u (u in [-1, 1)) + tail Exp(1) */
  double wire_us;      /* every ring step's added latency (link:a=*,b=*,us=N; 0: the bare model) */
  int64_t *hstep;      /* per rank: the step its host last enqueued (hostdelay) */
  double *step0;       /* per rank: its compute in step 0 (us, before jitter), hostdelay's base */
  int culprit, culprit2, chost;
  int old_host;                /* hetero: the host whose GPUs are the older, half-speed model; -1 none */
  double *t;                   /* per stream and rank: the stream's time (us), t[s * n + r] */
  struct cs_gap_tracker *gaps; /* per rank: its compute gaps, as the report forms them */
  uint64_t *draws;
  char **host;
  struct cs_det_stream *det;
  struct comm *comms;
  size_t ncomms;
  int64_t step;
  size_t ninst, min_inst; /* instances fed; run on past --steps until --min-instances */
  bool hung;
  int hang_comm; /* the hang faults act on the culprit's first communicator */
  /* the report's pipeline schedule, peer waits and time elsewhere, fed every member's op of
   * every instance (judge_p2p: every workload, the Send/Recv ones with their peers) */
  struct cs_sched *sched;
  struct cs_pwait *pwait;
  struct cs_celse *celse;
  struct cs_sched_op *sop; /* scratch, W.n entries */
  struct cs_pwait_op *pop;
};
extern struct driver W;

static inline double *stream_t(int s, int r) { return &W.t[(size_t)s * (size_t)W.n + (size_t)r]; }
static inline int host_of(int r) { return r / W.rph; }
/* the job goes on: --steps not reached, or fewer than --min-instances instances, and no hang */
static inline bool running(void) { return (W.step < W.steps || W.ninst < W.min_inst) && !W.hung; }

double unif(uint64_t key);
struct comm *comm_new(const int *m, int n, int stream);
/* rank r's stream s computes for `us` of GPU time (jittered; throttled; the older model slower) */
void compute_on(int s, int r, double us);
static inline void compute(int r, double us) { compute_on(0, r, us); }
/* rank r's host waits for its streams s0..s1 (a stream synchronize each): every one of its
 * streams' next items start no earlier than the latest of them */
void sync_streams(int r, int s0, int s1);
/* one collective instance on c (on c's stream of every member) */
void collective(struct comm *c, enum sn_cost_algo op, double bytes);
/* the report's schedule and peer waits from now on (a workload with Send/Recv calls it first) */
void judge_p2p(void);
/* the jittered cost in us of a Send or Recv of c's rank k with `peer` (comm ranks) */
double p2p_cost_us(struct comm *c, int k, int peer, double bytes);
/* one group of Sends and Recvs of c's rank k, issued in this order, that ran on its stream
 * from st to en (us): the rank's compute gaps, the schedule's and the peer waits' instance */
struct p2p_op {
  int peer; /* comm rank */
  bool send;
};
void p2p_span(struct comm *c, int k, const struct p2p_op *ops, int n, double st, double en);

/* one step of Megatron's 1F1B (bench/accuracy_pipeline.c) over dp replicas of a pipeline of pp
 * stages, each stage a tensor-parallel pair */
struct pipeline {
  int pp, dp, M;
  double fwd_us, bwd_us, bytes; /* a pass's compute; a Send's bytes (the TP AllReduce's too) */
  struct comm **tp;             /* [s * dp + d]: stage s of replica d, its two ranks */
  struct comm **pc;             /* [d * 2 + t]: replica d's chain of tensor index t, comm rank = stage */
};
void pipeline_step(const struct pipeline *p);

/* the workloads (bench/accuracy_workloads.c); 0 on success, -1 unknown */
int run_workload(const char *name);

#endif
