/* stats/ring_writer.h: the shim's writer side of the shared-memory stats ring
 * (include/collscope/ring.h has the layout and the protocol). Only the harvest thread
 * publishes; the hot path never touches the ring. */
#ifndef COLLSCOPE_STATS_RING_H
#define COLLSCOPE_STATS_RING_H
#include "core.h"
#include "collscope/ring.h"

/* Create the ring (COLLSCOPE_RING slots; 0 = no ring). The calling thread becomes the one
 * writer. Returns false (one log line) when it cannot: the job and the dump carry on. */
bool cs_ring_open(void);
/* The calling thread becomes the writer (after the previous one was joined). */
void cs_ring_adopt(void);
/* Publish a finished record (op, xfer, comm, or CS_REC_HANG). Ignored from any thread but
 * the writer (counted, logged once). */
void cs_ring_publish(const struct cs_record *r);
/* The latest health sample, and the GPU's identity (once), into the summary block
 * (stats/ring_stats.h); from the writer thread only, like cs_ring_publish. */
void cs_ring_health(const struct cs_ring_health_vals *v);
void cs_ring_gpu_identity(const char *uuid, const char *bus_id);
/* Liveness figures for readers. */
void cs_ring_status(uint64_t pending, int64_t oldest_pending_ns, uint64_t drops);
/* Unmap; at a clean exit also unlink unless COLLSCOPE_KEEP_SHM=1. */
void cs_ring_close(bool clean_exit);
void cs_ring_note_hang(void); /* count a hang report in the header */
/* What the process writes (CS_RING_REC_*), once its outputs are open. */
void cs_ring_set_record(uint32_t what);
/* `collscope snapshot`'s requests (include/collscope/ring.h "Requests"): the header's
 * snap_asked (0 without a ring), and the answer to the value ASKED (CS_RING_SNAP_*). */
uint64_t cs_ring_snap_asked(void);
void cs_ring_snap_answer(uint64_t asked, uint32_t result);
void cs_ring_atfork_child(void);
const char *cs_ring_path(void);

#endif
