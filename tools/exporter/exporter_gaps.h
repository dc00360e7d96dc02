/* tools/exporter/exporter_gaps.h: what the exporter keeps of a rank's collectives across its
 * analyses for the pipeline schedule's stage comparison (tools/ring/ring_sched.h): the compute
 * gap of each collective instance (include/collscope/compute_gap.h, taken in the ring's order
 * from every record the exporter reads), the last EXP_GAP_INST instances of each of the first
 * EXP_GAP_COMMS communicators (size > 1) a rank runs. The detector's window holds a rank's
 * last EXP_DET_WINDOW op records, a few steps of a pipeline; the stage comparison's sign test
 * needs more instances than that. Memory: fixed per rank (about 19 KiB). */
#ifndef COLLSCOPE_TOOLS_EXPORTER_GAPS_H
#define COLLSCOPE_TOOLS_EXPORTER_GAPS_H
#include <stddef.h>
#include <stdint.h>

#include "collscope/compute_gap.h"
#include "collscope/ring.h"
#include "ring/ring_sched.h"

#define EXP_GAP_COMMS 8  /* communicators kept per rank; later ones are counted, not kept */
#define EXP_GAP_INST 128 /* instances kept per communicator (the newest) */

struct exp_gap_comm {
  uint64_t comm;
  int comm_rank;
  size_t n, next; /* ring of the newest EXP_GAP_INST */
  struct {
    int64_t seq;
    float gap_us; /* -1: none */
  } e[EXP_GAP_INST];
};

struct exp_gaps {
  struct cs_gap_tracker t;
  struct exp_gap_comm c[EXP_GAP_COMMS];
  size_t ncomms;
  uint64_t untracked; /* collectives of communicators beyond EXP_GAP_COMMS */
  uint64_t breaks;    /* reads that found records overwritten first (the gaps' sums restart) */
};

/* Every record of rd's main ring since the last call (its cursor), through buf (cap records). */
void exp_gaps_fold(struct exp_gaps *g, struct cs_ring_reader *rd, struct cs_record *buf, size_t cap);
size_t exp_gaps_count(const struct exp_gaps *g);
/* the kept instances as the schedule reads them (exp_gaps_count entries into out) */
size_t exp_gaps_put(const struct exp_gaps *g, int rank, const char *host, struct ring_sched_gap *out);

#endif
