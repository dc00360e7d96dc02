/* include/collscope/ring.h: the shared-memory stats ring, ONE layout for the writer (the
 * shim's harvest thread, stats/ring_writer.c) and its readers (`collscope top`, `collscope
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
 * Layout: struct cs_ring_hdr, struct cs_ring_stats (the summary block, below), then
 * `capacity` (a power of two) struct cs_ring_slot.
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
 * Readers never write to the segment (they map it read-only) and never block the writer.
 *
 * Requests (version 4): `collscope snapshot`, run by the ring's owner or root, is the one
 * writer of snap_asked besides the zero the ring starts with: it adds 1 (an atomic add on a
 * mapping of the header, after the reader's checks) to ask for a flight-recorder window. The
 * harvest thread loads snap_asked on each loop; when it differs from the last value it
 * answered, it writes one window (bounded as every requested window is, docs/always-on.md),
 * flushes the dump, stores snap_result, then snap_seen = the value it answered (release). The
 * value is only compared, never used as a count or a size, so whatever the file holds costs
 * the process at most one bounded window per harvest loop. No signal is sent, no handler added.
 *
 * Summary block (struct cs_ring_stats, filled by the same writer thread from the records it
 * publishes; stats/ring_stats.c): a reader that wants totals reads O(series), not every record.
 *  - comm_ids[c]: the communicator of series row c (first come, first served; 0 = free),
 *    stored (release) before any series of that row is touched; the row after the last
 *    holds every later communicator;
 *  - series[c][op][size class]: counters and a duration histogram, each series under its
 *    own seqlock: gen odd while an update is in flight, gen+2 after it (release); a reader
 *    copies a series when gen is even and non-zero and unchanged after the copy, else retries
 *    a few times and then keeps what it had. Every field only grows;
 *  - health: the latest health sample (one seqlock, gen), counters as totals;
 *  - side ring: a copy of the records a follower must not miss but that are rare (SDC-checked
 *    ops, NCCL_NET link records, hang reports), same slot protocol as the main ring;
 *  - the header's gpu_uuid and gpu_bus_id: written once when the GPU is known, then
 *    gpu_ident = 1 (release); the CUDA driver's identity is written before the header's
 *    device (with a release store), so a reader that sees the device finds it. */
#ifndef COLLSCOPE_RING_H
#define COLLSCOPE_RING_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collscope/record.h"
#include "collscope/schema.h"

/* The seqlocks' fences. ThreadSanitizer does not model fences (gcc refuses them under
 * -fsanitize=thread): there the data words are stored with release and loaded with acquire
 * order instead, which orders them at least as strongly as the fences do. */
#if defined(__SANITIZE_THREAD__)
#define CS_SEQ_FENCE(mo) ((void)0)
#define CS_SEQ_STORE memory_order_release
#define CS_SEQ_LOAD memory_order_acquire
#else
#define CS_SEQ_FENCE(mo) atomic_thread_fence(mo)
#define CS_SEQ_STORE memory_order_relaxed
#define CS_SEQ_LOAD memory_order_relaxed
#endif

#define CS_RING_MAGIC 0x31474e4952534353ULL /* "SCSRING1" little-endian */
#define CS_RING_VERSION 4
#define CS_RING_INIT_MAGIC 0x494e4954u /* "INIT" */
#define CS_RING_MAX_COMMS 64
#define CS_RING_MAX_CAPACITY (1ull << 22) /* COLLSCOPE_RING's upper bound, rounded up */
#define CS_RING_WORDS ((sizeof(struct cs_record) + 7) / 8)
#define CS_RING_STAT_COMMS 4   /* communicators with series of their own; later ones share a row */
#define CS_RING_SIZES 5        /* message size classes (cs_ring_size_class) */
#define CS_RING_BUCKETS 14     /* finite duration buckets (cs_ring_bucket_ns), +Inf implied */
#define CS_RING_SIDE_CAP 256   /* side ring slots */
#define CS_RING_IB_PORTS 8     /* InfiniBand ports in the health block */
#define CS_RING_IB_COUNTERS 14 /* counters per port (cs_ring_ib_counter_name) */

/* size classes: [0, 64 KiB), [64 KiB, 1 MiB), [1, 16 MiB), [16, 256 MiB), 256 MiB and more */
static inline unsigned cs_ring_size_class(uint64_t bytes) {
  static const uint64_t bound[CS_RING_SIZES - 1] = {64ull << 10, 1ull << 20, 16ull << 20, 256ull << 20};
  unsigned c = 0;
  while (c < CS_RING_SIZES - 1 && bytes >= bound[c]) c++;
  return c;
}
/* upper bound (inclusive) of duration bucket b, in ns */
static inline uint64_t cs_ring_bucket_ns(unsigned b) {
  static const uint64_t le[CS_RING_BUCKETS] = {10000, 50000, 100000, 250000, 500000, 1000000, 2500000,
                                               5000000, 10000000, 25000000, 50000000, 100000000, 250000000, 1000000000};
  return b < CS_RING_BUCKETS ? le[b] : UINT64_MAX;
}

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
  uint32_t stats_size;               /* sizeof(struct cs_ring_stats) of the writer */
  _Atomic uint32_t gpu_ident;        /* 1 once gpu_uuid and gpu_bus_id are written (release) */
  char gpu_uuid[96];                 /* NVML's UUID ("GPU-..."), "" unknown */
  char gpu_bus_id[32];               /* PCI bus id (domain:bus:device.function), "" unknown */
  _Atomic uint32_t record;           /* what the process writes (CS_RING_REC_*), stored (release) once known */
  _Atomic uint32_t snap_result;      /* CS_RING_SNAP_* of the request snap_seen answers, stored before it */
  _Atomic uint64_t snap_asked;       /* flight windows asked for: `collscope snapshot` adds 1 (see "Requests") */
  _Atomic uint64_t snap_seen;        /* the last snap_asked the writer answered (release) */
  uint64_t reserved[3];
};

/* What a process writes (the header's `record`): unknown while it starts, no dump (the ring
 * only: COLLSCOPE_DIR=none or unusable), every op (COLLSCOPE_RECORD=full), or summaries and
 * flight-recorder windows (COLLSCOPE_RECORD=summary, docs/always-on.md). */
enum { CS_RING_REC_UNKNOWN = 0,
       CS_RING_REC_NONE = 1,
       CS_RING_REC_FULL = 2,
       CS_RING_REC_SUMMARY = 3 };
/* How the writer answered a request (the header's `snap_result`): a window written and
 * flushed; none of its own (a window was open, or the bound on windows was reached); the
 * dump flushed (the full recording holds every op); nothing to write (no dump). */
enum { CS_RING_SNAP_WINDOW = 1,
       CS_RING_SNAP_SUPPRESSED = 2,
       CS_RING_SNAP_FLUSHED = 3,
       CS_RING_SNAP_NO_DUMP = 4 };

/* One (communicator row, op, size class): counters and a duration histogram. */
struct cs_ring_series {
  _Atomic uint64_t gen; /* seqlock: 0 never written, odd while written */
  _Atomic uint64_t w[CS_RING_BUCKETS + 6];
};
/* the words of a series, in order (a reader copies them into this) */
struct cs_ring_series_vals {
  uint64_t count;                   /* op records */
  uint64_t errors;                  /* of those, calls that returned an error */
  uint64_t bytes;                   /* their bytes (saturating) */
  uint64_t timed;                   /* records with a usable span: the histogram's count */
  uint64_t dur_ns;                  /* sum of the timed durations */
  uint64_t bus_bytes;               /* bytes x bus bandwidth factor of the timed records */
  uint64_t bucket[CS_RING_BUCKETS]; /* not cumulative */
};

/* The latest health sample (hooks/health.c): gauges as sampled, counters as totals since
 * the sampler's first sample. `valid` says which groups were sampled. */
enum { CS_RH_REASONS = 1,
       CS_RH_CLOCKS = 2,
       CS_RH_POWER = 4,
       CS_RH_TEMP = 8,
       CS_RH_ECC = 16,
       CS_RH_REMAP = 32,
       CS_RH_PCIE = 64,
       CS_RH_NVLINK = 128,
       CS_RH_XID = 256,
       CS_RH_PLIMIT = 512,
       CS_RH_IB = 1024 };
/* the IB port counters of struct cs_ring_ib_port's c[], in order (sysfs counters/ then
 * hw_counters/); error: a rise is an error (not traffic or congestion) */
static inline const char *cs_ring_ib_counter_name(unsigned k) {
  static const char *const names[CS_RING_IB_COUNTERS] = {
      "symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_xmit_discards",
      "port_xmit_wait", "local_link_integrity_errors", "excessive_buffer_overrun_errors", "port_xmit_data",
      "port_rcv_data", "out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled"};
  return k < CS_RING_IB_COUNTERS ? names[k] : "?";
}
static inline bool cs_ring_ib_counter_is_error(unsigned k) {
  return k <= 4 || k == 6 || k == 7 || k == 10 || k == 11;
}
struct cs_ring_ib_port {
  char dev[32]; /* [A-Za-z0-9_.-] */
  uint32_t port;
  uint32_t active;                 /* 1: state ACTIVE */
  uint64_t rate_mbps;              /* link rate, Mbit/s */
  uint64_t c[CS_RING_IB_COUNTERS]; /* totals of the port's counters (cs_ring_ib_counter_name) */
};
struct cs_ring_health_vals {
  int64_t t_ns;   /* CLOCK_REALTIME of the sample; 0: none yet */
  uint64_t valid; /* CS_RH_* */
  uint64_t reasons;
  uint64_t sm_mhz, mem_mhz, power_mw, power_limit_mw, temp_c;
  uint64_t ecc_corrected, ecc_uncorrected, remap_pending, remap_failure, pcie_replay;
  uint64_t nvlinks, nvlink_down, nvlink_crc, nvlink_replay, nvlink_recovery;
  uint64_t xid_events, xid_last;
  uint64_t nib;
  struct cs_ring_ib_port ib[CS_RING_IB_PORTS];
};
#define CS_RING_HEALTH_WORDS ((sizeof(struct cs_ring_health_vals) + 7) / 8)

struct cs_ring_slot {
  _Atomic uint64_t seq; /* 2n+1 while record n is written, 2n+2 once complete */
  _Atomic uint64_t w[CS_RING_WORDS];
};

struct cs_ring_stats {
  _Atomic uint64_t comm_ids[CS_RING_STAT_COMMS];
  struct cs_ring_series series[CS_RING_STAT_COMMS + 1][CS_OP_COUNT][CS_RING_SIZES];
  _Atomic uint64_t health_gen; /* seqlock of health_w */
  _Atomic uint64_t health_w[CS_RING_HEALTH_WORDS];
  _Atomic uint64_t side_head; /* side records published */
  struct cs_ring_slot side[CS_RING_SIDE_CAP];
};

static inline size_t cs_ring_bytes(uint64_t capacity) {
  return sizeof(struct cs_ring_hdr) + sizeof(struct cs_ring_stats) + (size_t)capacity * sizeof(struct cs_ring_slot);
}
static inline struct cs_ring_stats *cs_ring_stats_of(const struct cs_ring_hdr *h) {
  return (struct cs_ring_stats *)(void *)((char *)(uintptr_t)h + sizeof(struct cs_ring_hdr));
}
static inline struct cs_ring_slot *cs_ring_slots(const struct cs_ring_hdr *h) {
  return (struct cs_ring_slot *)(void *)((char *)(uintptr_t)h + sizeof(struct cs_ring_hdr) + sizeof(struct cs_ring_stats));
}

/* ---- reader API (analysis/ring_reader.c; also linked into the CLI) ---- */
struct cs_ring_reader {
  const struct cs_ring_hdr *h; /* read-only mapping, NULL when not open */
  size_t map_len;
  uint64_t capacity;               /* validated at open (the header's may change under us) */
  const char *why;                 /* after a failed open: why, for the caller's one line */
  uint64_t dev, ino;               /* the file that was checked (a remover compares before unlink) */
  uint64_t cursor;                 /* next record to read */
  uint64_t lost;                   /* records overwritten before this reader got them */
  uint64_t side_cursor, side_lost; /* the same for the summary block's side ring */
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
/* The side ring (see "Summary block"): like cs_ring_read, with side_cursor and side_lost.
 * The side cursor starts at the oldest side record still there. */
size_t cs_ring_read_side(struct cs_ring_reader *r, struct cs_record *out, size_t max);
/* Up to max of the newest records of the main ring, oldest first; the cursor and the lost
 * count are not touched (a follower that wants the recent past, not every record). */
size_t cs_ring_read_latest(const struct cs_ring_reader *r, struct cs_record *out, size_t max);
/* One series (a pointer into r's mapping): 1 = copied into *out (its gen in *gen), 0 = never
 * written or unchanged since *gen, -1 = torn on every try (an update in flight or a hostile
 * writer): *out not usable. Checks nothing else: the caller validates the values. */
int cs_ring_read_series(const struct cs_ring_series *s, struct cs_ring_series_vals *out, uint64_t *gen);
/* The health sample, same answers as cs_ring_read_series; the IB device names are made
 * NUL-terminated, nib clamped to CS_RING_IB_PORTS. */
int cs_ring_read_health(const struct cs_ring_reader *r, struct cs_ring_health_vals *out, uint64_t *gen);
/* The GPU's identity once the writer published it: NUL-terminated copies (bytes outside
 * [A-Za-z0-9:.-] become '_'); false while unknown. */
bool cs_ring_gpu_ident(const struct cs_ring_reader *r, char *uuid, size_t uuid_cap, char *bus, size_t bus_cap);
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
/* State letter and start time (field 22 of /proc/<pid>/stat, clock ticks after boot) of a
 * process; false when it cannot be read. The writer stamps its own into the header. */
bool cs_ring_proc_stat(int pid, char *state, uint64_t *start);

#endif
