/* stats/ring_stats.h: the writer of the stats ring's summary block (layout and protocol in
 * include/collscope/ring.h): per (communicator row, op, size class) counters and duration
 * histograms, the side ring of rare records, the health sample and the GPU's identity.
 * Runs on the ring's one writer thread (the harvest thread), never in the wrappers. Depends
 * on include/ only, so benchmarks and tests build real summary blocks with it. */
#ifndef COLLSCOPE_STATS_RING_STATS_H
#define COLLSCOPE_STATS_RING_STATS_H
#include "collscope/ring.h"

/* the writer's private state (which communicator owns which row) */
struct cs_ring_stats_writer {
  uint64_t comms[CS_RING_STAT_COMMS];
  unsigned ncomms;
};

/* Store record r as the n-th record of a slot ring (the slot's seqlock: odd while written). */
void cs_ring_slot_store(struct cs_ring_slot *s, uint64_t n, const struct cs_record *r);

/* Fold one published record into the block: an op record into its series, an SDC-checked op,
 * a link or a hang record also into the side ring. */
void cs_ring_stats_add(struct cs_ring_stats *b, struct cs_ring_stats_writer *w, const struct cs_record *r);
/* Publish a health sample (gauges as sampled, counters as totals). */
void cs_ring_stats_health(struct cs_ring_stats *b, const struct cs_ring_health_vals *v);
/* Write the GPU's identity into the header once (later calls change nothing). */
void cs_ring_stats_ident(struct cs_ring_hdr *h, const char *uuid, const char *bus_id);
#endif
