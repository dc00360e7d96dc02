/* include/collscope/step_breakdown.h: a training step's time on one rank's GPU, split into
 * compute, communication not overlapped, waiting for peers and pipeline bubble, from the
 * collective instances alone (analysis/step_breakdown.c; docs/balance.md "Steps").
 *
 * Fed one instance at a time as the dump readers walk them (every member's op; one
 * communicator's instances may come after another's later ones). Each rank (a slot: the
 * report's file) holds its CS_STEPS_RING latest timed ops by start (an earlier one evicted
 * first), each with the part of it spent waiting for its last peer:
 *  - a collective: min(the latest timed member's start - its own start, its duration),
 *    clamped at 0;
 *  - a Send or Recv: the same against its matching op on the peer (the k-th Send from a to
 *    b on a communicator matches the k-th Recv at b from a: NCCL 2.28.9 queues each peer's
 *    Sends and Recvs in call order, src/enqueue.cc:2406-2408, and dequeues them from the
 *    head, src/enqueue.cc:1064-1065);
 *    a Recv waits until its Send could deliver, a Send until its Recv is posted.
 * A step of a rank runs from the start of its step communicator's op whose seq is a multiple
 * of the step's period to the start of the next such op (the balance section says which
 * communicator and period). Its time splits over the rank's ops, all streams together:
 *  - compute: time inside no op (the GPU between collectives; copies count here);
 *  - waiting: time every op then running is still waiting for its last peer; bubble when
 *    one of those ops is on a pipeline (Send/Recv chain) communicator, else waiting for
 *    peers;
 *  - comm (communication not overlapped): the rest of the time inside ops.
 * The four are integer nanoseconds and sum to the step exactly. A step is given only when
 * every op that overlaps it is still held (no op evicted from the ring ended after its
 * start); step 0 (the set-up) is never given. Memory: per slot min(its ops, CS_STEPS_RING) (44 bytes an
 * op), plus per directed pair of a Send/Recv communicator the unmatched ops of each side,
 * grown as they queue up to CS_STEPS_PENDING (past that the oldest counts as unmatched: no
 * wait). */
#ifndef COLLSCOPE_STEP_BREAKDOWN_H
#define COLLSCOPE_STEP_BREAKDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CS_STEPS_RING 1024  /* a rank's latest timed ops held */
#define CS_STEPS_MAX 64     /* a rank's last steps given */
#define CS_STEPS_PENDING 64 /* unmatched Sends (or Recvs) held per directed pair */
#define CS_STEPS_SLOTS (1u << 24)

/* one member's op of an instance */
struct cs_steps_op {
  uint32_t slot;  /* its rank's slot (< CS_STEPS_SLOTS) */
  int comm_rank;  /* < 0: not counted */
  int peer;       /* a Send or Recv: the peer's comm rank */
  bool timed;     /* GPU start and end known, end >= start */
  bool p2p, send; /* a Send or Recv; of those a Send */
  int64_t start_ns, end_ns;
};

/* one step of one rank (ns) */
struct cs_step_fig {
  int64_t step;     /* the step communicator's seq / period */
  int64_t start_ns; /* its first op's start */
  int64_t step_ns, compute_ns, comm_ns, wait_ns, bubble_ns;
};

/* what a rank's figures leave out, counted */
struct cs_steps_counts {
  size_t untimed;    /* its ops without GPU times (their time counts as compute) */
  size_t unmatched;  /* its Sends/Recvs whose matching op was not found or not timed (no wait) */
  size_t incomplete; /* steps left out: a boundary op untimed, or ops evicted from the ring */
  size_t steps;      /* steps found, all of them; at most CS_STEPS_MAX given */
};

/* is comm a pipeline communicator (its waits are bubble)? */
typedef bool (*cs_steps_pipeline_fn)(void *ctx, uint64_t comm);

struct cs_steps;
struct cs_steps *cs_steps_new(void); /* NULL: out of memory */
void cs_steps_free(struct cs_steps *s);
/* one instance of comm (any member order). 0, or -1 out of memory (then every later call
 * refuses: the caller says so once) */
int cs_steps_instance(struct cs_steps *s, uint64_t comm, int64_t seq, const struct cs_steps_op *m, size_t n);
/* the last steps of slot (at most CS_STEPS_MAX, oldest first) into out; step_comm and period
 * delimit them. Returns how many, or -1 out of memory; c gets the counts. */
int cs_steps_slot(const struct cs_steps *s, uint32_t slot, uint64_t step_comm, int period, cs_steps_pipeline_fn pipe,
                  void *ctx, struct cs_step_fig *out, struct cs_steps_counts *c);

#endif
