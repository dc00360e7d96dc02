/* include/collscope/compute_gap.h: one process's compute gap before each op, as the straggler
 * detector reads it (docs/detection.md, `kind`): the idle time of the op's stream summed since
 * the process's previous op of the same communicator on the same stream. Each stream's idle
 * spans (an op's start - the end of the stream's previous op) add up; an op's gap is that sum
 * since its communicator's previous op there. Ops of other communicators on the stream are not
 * counted (their own time is not compute); other streams' ops are not either (in multi-
 * communicator jobs the streams overlap). A stream's op that ran untimed (sampled out of the
 * CUDA-event path, host-timed) breaks the sum: a span over it holds its wait for a straggler
 * on every rank alike, no compute gap. Fixed-size tables, no allocation (the online exchange's
 * harvest thread uses it); an op whose stream or (communicator, stream) finds no room has no
 * gap. Analysis/compute_gap.c. */
#ifndef COLLSCOPE_COMPUTE_GAP_H
#define COLLSCOPE_COMPUTE_GAP_H
#include <stdbool.h>
#include <stdint.h>

#define CS_GAP_STREAMS 8 /* power of two */
#define CS_GAP_PAIRS 64  /* power of two */

struct cs_gap_stream {
  uint64_t stream;
  int64_t last_end; /* the end of its previous timed op */
  uint64_t sum_ns;  /* its idle spans summed (modulo 2^64: only differences are read) */
  uint32_t epoch;   /* bumped where the sum breaks (an untimed op, the stream's first op) */
  bool used, has_prev;
};
struct cs_gap_pair {
  uint64_t comm, stream;
  uint64_t sum_ns; /* the stream's sum at the communicator's previous op there */
  uint32_t epoch;
  bool used;
};
struct cs_gap_tracker {
  struct cs_gap_stream s[CS_GAP_STREAMS];
  struct cs_gap_pair p[CS_GAP_PAIRS];
};

void cs_gap_reset(struct cs_gap_tracker *t);
/* An op that ran timed on `stream`, in the stream's order: its gap in us, -1 when none (the
 * communicator's first op on the stream, a break in between, no room). */
double cs_gap_timed(struct cs_gap_tracker *t, uint64_t comm, uint64_t stream, int64_t start_ns, int64_t end_ns);
/* An op that ran untimed on `stream`: the next timed op's span there is no gap. */
void cs_gap_untimed(struct cs_gap_tracker *t, uint64_t stream);

#endif
