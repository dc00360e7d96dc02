/* stats/flight_local.h: the flight recorder's local trigger (docs/always-on.md, reason `local`):
 * per (communicator, op, bytes) of this process's collectives, a bounded baseline of its GPU
 * durations and the typical duration of the latest instances; a departure past the margins
 * opens a window. Runs on the harvest thread from the records it writes, never in a wrapper. */
#ifndef COLLSCOPE_STATS_FLIGHT_LOCAL_H
#define COLLSCOPE_STATS_FLIGHT_LOCAL_H
#include "core.h"

/* instances whose mean is the typical duration (one block), and the blocks before it whose
 * minima and means are the baseline */
#define CS_LOCAL_BLOCK 8
#define CS_LOCAL_BLOCKS 8
#define CS_LOCAL_KEYS 64
/* departing blocks in a row that fire: jitter makes one block of a clean key depart now and
 * then, three in a row almost never (bench_always_on: none in a day at 500 ops/s) */
#define CS_LOCAL_STREAK 3
/* the margins: the block's least duration above the baseline's floor (the least duration of
 * the blocks before), or its mean below the least of their means, by more than
 * CS_LOCAL_REL_PCT % of it and more than CS_LOCAL_ABS_NS. 5 %: a straggler 20 % slower adds
 * 7 % to its peers' tensor-parallel AllReduce at 64 ranks of train3d (tp 4, pp 4: ~1.8 ms,
 * most of it the pipeline's wait), and the zoo's clean keys stay within 2 % */
#define CS_LOCAL_REL_PCT 5
#define CS_LOCAL_ABS_NS 50000
/* a block whose least is past the floor by CS_LOCAL_JUMP times both margins (20 %, 200 us)
 * fires alone: a key seen once a step (moe's 256-byte AlltoAll: a block is 8 steps) must not
 * wait 24 steps, or the onset is older than the ring when the window opens */
#define CS_LOCAL_JUMP 4

struct cs_local_change {
  bool pending;      /* set by a departure, cleared by the window it opens */
  int64_t base_ns;   /* the baseline it departed from (floor or least mean) */
  int64_t recent_ns; /* the latest block's least (longer) or mean (shorter) */
  bool longer;       /* true: longer than the floor (waits, a slow link); false: shorter */
};

void cs_local_reset(void);
/* one finished op timed alone (stats/summary.c, with its GPU duration d): when it completes
 * the CS_LOCAL_STREAK-th block in a row that departs from its key's baseline, or a block past
 * it by CS_LOCAL_JUMP times the margins (the key re-arms
 * once a block stays within the margins), cs_local_fired says what changed and is pending
 * until stats/flight.c opens the window, after the record is in the ring */
void cs_local_add(const struct cs_record *r, int64_t d);
extern struct cs_local_change cs_local_fired;
size_t cs_local_mem(void);
/* collectives not judged because every key of the table was taken (the footer's local_unkeyed) */
uint64_t cs_local_unkeyed(void);

#endif
