/* include/collscope/ring.h: the shared-memory stats ring, ONE layout for the writer (the
 * shim's harvest thread, stats/ring.c) and its readers (`collscope top`, `collscope
 * salvage`, tests).
 *
 * File: $COLLSCOPE_SHM_DIR (default /dev/shm) / collscope-<uid>-<job>-r<rank>[-p<pid>].ring.
 * The writer builds the whole ring (header and `init`) in a private temporary
 * (.collscope-...-p<pid>.tmp, 0600, O_CREAT|O_EXCL|O_NOFOLLOW) and then link()s it to the ring
 * name, so a ring name never shows a half-created ring. A segment of the same name whose
 * writer is dead (pid gone, a zombie, or a pid reused by a process with another start time)
 * is stale and reclaimed; if its writer is alive the name gets a -p<pid> suffix. Removed at
 * clean exit unless COLLSCOPE_KEEP_SHM=1.
 *
 * Readers trust nothing in the file: it must be a regular file (opened O_NOFOLLOW|O_NONBLOCK)
 * owned by the uid in its name, and by the reader's euid unless the reader is root; the
 * header's job must be the one in the name; every size is checked against the file's size.
 *
 * Layout: struct cs_ring_hdr, then `capacity` (a power of two) struct cs_ring_slot.
 * Protocol (one writer, enforced: only the thread that opened the ring publishes):
 *  - the header's fixed fields are written first, then `init` = CS_RING_INIT_MAGIC with
 *    release ordering; readers load `init` with acquire and ignore the ring until it is set;
 *  - communicator table: comms[i] is written, then `ncomms` = i+1 (release);
 *  - record n (n = 0, 1, ...) goes to slot n & (capacity-1): slot.seq = 2n+1 (writing),
 *    release fence, the record's words (relaxed atomic stores), slot.seq = 2n+2 (release),
 *    then head = n+1 (release). Readers copy a slot only when slot.seq == 2n+2 before AND
 *    after the copy (acquire fence between); otherwise record n was overwritten (or is being
 *    overwritten) and is counted as lost. A reader whose cursor fell more than `capacity`
 *    behind head knows exactly how many records it lost: head - capacity - cursor.
 * Readers never write to the segment (they map it read-only) and never block the writer. */
#ifndef COLLSCOPE_RING_H
#define COLLSCOPE_RING_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collscope/record.h"

#define CS_RING_MAGIC 0x31474e4952534353ULL /* "SCSRING1" little-endian */
#define CS_RING_VERSION 1
#define CS_RING_INIT_MAGIC 0x494e4954u /* "INIT" */
#define CS_RING_MAX_COMMS 64
#define CS_RING_MAX_CAPACITY (1ull << 22) /* COLLSCOPE_RING's upper bound, rounded up */
#define CS_RING_WORDS ((sizeof(struct cs_record) + 7) / 8)

/* Ring-only record type (beside CS_REC_OP/XFER/COMM): an op not complete after
 * COLLSCOPE_HANG_TIMEOUT; comm_id, comm_size, comm_rank, seq, op, enqueue_ns are the op's,
 * start_ns = 1 when its GPU start event had completed, end_ns = time of the report. */
#define CS_REC_HANG 4

struct cs_ring_comm {
  uint64_t id;
  int32_t size;
  int32_t rank;
  int32_t device;
  int32_t pad_;
};

struct cs_ring_hdr {
  uint64_t magic;
  uint32_t version;
  uint32_t rec_size; /* sizeof(struct cs_record) of the writer */
  uint64_t capacity; /* slots, a power of two */
  int32_t pid;
  int32_t rank; /* global rank, -1 unknown */
  int32_t local_rank;
  int32_t world_size;
  int32_t device; /* first communicator's device, -1 until known */
  uint32_t uid;
  int64_t created_ns; /* CLOCK_REALTIME */
  char host[128];
  char job[128];
  _Atomic uint32_t init; /* CS_RING_INIT_MAGIC, stored last (release) */
  _Atomic uint32_t ncomms;
  struct cs_ring_comm comms[CS_RING_MAX_COMMS];
  _Atomic uint64_t head;             /* records published */
  _Atomic uint64_t drops;            /* records the process lost (queue full etc.) */
  _Atomic int64_t heartbeat_ns;      /* CLOCK_REALTIME of the harvest thread's last pass */
  _Atomic uint64_t pending;          /* ops entered, not complete */
  _Atomic int64_t oldest_pending_ns; /* enqueue_ns of the oldest pending op, 0 none */
  _Atomic uint32_t hung;             /* ops reported as hung (COLLSCOPE_HANG_TIMEOUT) */
  _Atomic uint32_t closed;           /* 1: the writer exited cleanly */
  uint64_t start_time;               /* the writer's start time (/proc/<pid>/stat field 22), 0 unknown */
  uint64_t reserved[7];
};

struct cs_ring_slot {
  _Atomic uint64_t seq; /* 2n+1 while record n is written, 2n+2 once complete */
  _Atomic uint64_t w[CS_RING_WORDS];
};

static inline size_t cs_ring_bytes(uint64_t capacity) {
  return sizeof(struct cs_ring_hdr) + (size_t)capacity * sizeof(struct cs_ring_slot);
}
static inline struct cs_ring_slot *cs_ring_slots(const struct cs_ring_hdr *h) {
  return (struct cs_ring_slot *)(void *)((char *)(uintptr_t)h + sizeof(struct cs_ring_hdr));
}

/* ---- reader API (stats/ring.c; also linked into the CLI) ---- */
struct cs_ring_reader {
  const struct cs_ring_hdr *h; /* read-only mapping, NULL when not open */
  size_t map_len;
  uint64_t capacity; /* validated at open (the header's may change under us) */
  const char *why;   /* after a failed open: why, for the caller's one line */
  uint64_t dev, ino; /* the file that was checked (a remover compares before unlink) */
  uint64_t cursor;   /* next record to read */
  uint64_t lost;     /* records overwritten before this reader got them */
  char path[512];
};
/* Check PATH (see "Readers trust nothing" above) and map it read-only. Returns 0, or -1 with
 * errno and r->why set (EAGAIN: not initialised, EPROTO: not a valid ring of this version,
 * EPERM: wrong owner or name, others from open). The cursor starts at the oldest record
 * still in the ring. */
int cs_ring_reader_open(struct cs_ring_reader *r, const char *path);
void cs_ring_reader_close(struct cs_ring_reader *r);
/* Copy up to max records from the cursor on; returns how many. Overwritten records are
 * skipped and added to r->lost. */
size_t cs_ring_read(struct cs_ring_reader *r, struct cs_record *out, size_t max);
/* Directory of the rings: $COLLSCOPE_SHM_DIR or /dev/shm. */
const char *cs_ring_dir(void);
/* true when NAME (a base name) looks like a collscope ring the caller may read: one of its
 * euid's, or of any uid for root. */
bool cs_ring_name_ours(const char *name);
/* true when NAME (a base name) is collscope-<uid>-<job>-r<rank>[-p<pid>].ring of that job. */
bool cs_ring_name_job(const char *name, const char *job);
/* true when the writer is gone: its pid does not exist, is a zombie, or now belongs to a
 * process with another start time than the header's. Unknown (no /proc) counts as alive. */
bool cs_ring_writer_dead(const struct cs_ring_hdr *h);

#endif
