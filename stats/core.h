/* stats/core.h: collscope's process-wide state, shared by every layer of the shim
 * (shim/ -> hooks/ -> stats/): the configuration record, the logger, the process
 * counters, the record queue and harvest thread, the communicator table. stats/ owns
 * these; the layers above fill and use them (shim/config.c reads the environment into
 * cs_cfg). Nothing here names a function of hooks/ or shim/. */
#ifndef COLLSCOPE_STATS_CORE_H
#define COLLSCOPE_STATS_CORE_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>
#include "collscope/record.h"
#include "collscope/schema.h"

#define CS_EXPORT __attribute__((visibility("default")))
#define CS_LIKELY(x) __builtin_expect(!!(x), 1)
#define CS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- configuration: stored here (stats/core.c), read from the environment once by
 * shim/config.c (cs_config_load) ---- */
struct cs_config {
  bool disabled;        /* COLLSCOPE_DISABLE=1: pure pass-through */
  bool timing;          /* COLLSCOPE_TIMING != off */
  int timing_mode;      /* COLLSCOPE_TIMING: CS_TMODE_* (shim/profiler.c) */
  unsigned prof_probes; /* COLLSCOPE_PROFILER_PROBES: auto mode's probation length (ops) */
  int log_level;        /* COLLSCOPE_LOG: quiet|warn|info|debug */
  char dir[4096];       /* COLLSCOPE_DIR or ./collscope-<job> */
  bool dumps_off;       /* COLLSCOPE_DIR=none: no dump files, the stats ring only */
  char job[256];
  char host[256];
  char slurm_node[64]; /* SLURMD_NODENAME when it is a plain node name, "" otherwise
                        * (include/collscope/slurm_node.h) */
  int rank;            /* global rank or -1 */
  int local_rank;
  int world_size;
  int step;                  /* SLURM_STEP_ID: the job step, -1 when unset */
  size_t queue_cap;          /* COLLSCOPE_QUEUE (records) */
  unsigned flush_ms;         /* COLLSCOPE_FLUSH_MS, <= 1000 */
  bool compress;             /* COLLSCOPE_COMPRESS=zstd: the dump is zstd frames (*.jsonl.zst) */
  uint64_t budget;           /* COLLSCOPE_BUDGET: the dump's bytes on disk at most (0: no bound) */
  const char *libcuda;       /* COLLSCOPE_LIBCUDA (tests) */
  const char *libnccl;       /* COLLSCOPE_LIBNCCL (tests) */
  size_t ring_cap;           /* COLLSCOPE_RING: shm stats ring slots (0 = no ring) */
  bool keep_shm;             /* COLLSCOPE_KEEP_SHM=1: leave the ring at clean exit */
  unsigned hang_timeout_s;   /* COLLSCOPE_HANG_TIMEOUT: report ops not complete after this (0 = off) */
  int sdc_mode;              /* COLLSCOPE_SDC: CS_SDC_OFF | CS_SDC_ALL | CS_SDC_SAMPLE (hooks/sdc_check.c) */
  unsigned sdc_sample;       /* COLLSCOPE_SDC=sample:N: every Nth eligible collective per comm */
  uint64_t sdc_min_bytes;    /* COLLSCOPE_SDC_MIN_BYTES: smaller collectives are not checked */
  uint64_t sdc_gate_bytes;   /* derived: sdc_min_bytes, UINT64_MAX when the checks are off (the
                              * wrappers' one compare; sdc_min_bytes is at most 2^50) */
  int sdc_action;            /* COLLSCOPE_SDC_ACTION: CS_SDC_ACTION_LOG | CS_SDC_ACTION_ABORT */
  bool online;               /* COLLSCOPE_ONLINE (default 1): the job-wide exchange (hooks/online_exchange.c) */
  unsigned online_every;     /* COLLSCOPE_ONLINE_EVERY: world-communicator collectives between exchanges */
  unsigned online_timeout_s; /* COLLSCOPE_ONLINE_TIMEOUT: bound on the split and on each exchange */
  /* COLLSCOPE_EVENT_SAMPLE=N, COLLSCOPE_EVENT_SAMPLE_BYTES=B (hooks/timing.c): on the CUDA-event
   * path a collective of fewer than B bytes gets events only when seq & mask == 0, where
   * mask = N - 1 (N a power of two); B is 0 when timing is off */
  uint64_t event_sample_bytes;
  uint64_t event_sample_mask;
  unsigned event_prefill; /* COLLSCOPE_EVENT_PREFILL: events a context's pool starts with */
  /* COLLSCOPE_RECORD=summary (docs/always-on.md): summaries and the flight recorder instead of
   * every op line; COLLSCOPE_SUMMARY_S, COLLSCOPE_FLIGHT_OPS, COLLSCOPE_FLIGHT_AFTER,
   * COLLSCOPE_FLIGHT_LOCAL (0: off, 1: this process's window, 2: also the trigger file) */
  bool record_summary;
  unsigned summary_s;
  size_t flight_ops, flight_after;
  int flight_local;
};
enum { CS_SDC_OFF = 0,
       CS_SDC_ALL = 1,
       CS_SDC_SAMPLE = 2 };
/* COLLSCOPE_TIMING=off|events(on)|auto|profiler; the default is auto */
enum { CS_TMODE_OFF = 0,
       CS_TMODE_EVENTS = 1,
       CS_TMODE_AUTO = 2,
       CS_TMODE_PROFILER = 3 };
enum { CS_SDC_ACTION_LOG = 0,
       CS_SDC_ACTION_ABORT = 1 };
#define CS_SDC_ABORT_STATUS 86 /* exit status of COLLSCOPE_SDC_ACTION=abort */
extern struct cs_config cs_cfg;

enum { CS_LOG_QUIET = 0,
       CS_LOG_WARN = 1,
       CS_LOG_INFO = 2,
       CS_LOG_DEBUG = 3 };
void cs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Logs a given format string once per process (keyed by the format's address). */
#define cs_log_once(level, ...) \
  do { \
    static _Atomic int cs_once_; \
    if (!atomic_exchange(&cs_once_, 1)) cs_log(level, __VA_ARGS__); \
  } while (0)

/* Start one of collscope's own threads: every signal blocked in it (the job's signals stay
 * the job's), a 1 MiB stack, the given name; detached unless th is kept for a join.
 * Returns pthread_create's result. */
int cs_thread_start(pthread_t *th, void *(*fn)(void *), bool detached, const char *name);

static inline int64_t cs_now_ns(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts); /* vDSO: no syscall */
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- process state (stats/core.c) ---- */
struct cs_state {
  _Atomic int ready;            /* 1 once recording works, 0 = pass-through */
  _Atomic uint64_t group_ids;   /* process-unique group ids */
  _Atomic uint64_t drops;       /* records lost: queue full or bounded list full */
  _Atomic uint64_t timing_lost; /* ops that got host timing only because no event was free */
  _Atomic uint64_t comm_index;  /* communicator creation counter */
  _Atomic int park;             /* 1: the process is ending (COLLSCOPE_SDC_ACTION=abort) */
  _Atomic int64_t park_since;   /* CLOCK_MONOTONIC ns when park was set */
  int pid;
};
extern struct cs_state cs_st;
/* Ask the harvest thread to write everything complete now; waits at most timeout_ms
 * (stats/harvest.c). */
void cs_flush(unsigned timeout_ms);

/* ---- record queue (stats/harvest.c) ---- */
bool cs_record_push(const struct cs_record *r); /* counts a drop when full */
bool cs_harvest_start(void);
void cs_harvest_stop(unsigned timeout_ms);
void cs_harvest_atfork_child(void);
/* From a signal handler (async-signal-safe): have the harvest thread write what is queued
 * and the footer, giving in-flight GPU work CS_TERM_PENDING_MS, and wait at most timeout_ms
 * for it. True when the footer is written. */
#define CS_TERM_PENDING_MS 1000
bool cs_harvest_final_from_signal(unsigned timeout_ms);

/* ---- communicator table (stats/comm_table.c), lock-free lookup ---- */
struct cs_comm {
  _Atomic(void *) key; /* ncclComm_t */
  uint64_t id;
  uint64_t parent_id;
  int size;
  int rank;
  int device;
  uint64_t index;
  _Atomic uint64_t seq;
  _Atomic uint64_t splits; /* ncclCommSplit/Shrink calls on this comm (child ids) */
  bool nonblocking;        /* its init/split returned ncclInProgress (config blocking = 0) */
  /* hooks/timing.h: the (bytes << 8 | op) row of this communicator last found to have its
   * timed ops (the event sample's row rule), 0 when none */
  _Atomic uint64_t row_full;
};
/* The communicator's next seq, taken by the thread calling NCCL on it: a load and a store,
 * no locked read-modify-write (~7 ns), since NCCL forbids issuing operations to one
 * communicator from several threads in parallel (user guide, "Thread Safety"); threads
 * taking turns are ordered by the job's own synchronisation. */
static inline uint64_t cs_comm_seq_take(struct cs_comm *c) {
  uint64_t s = atomic_load_explicit(&c->seq, memory_order_relaxed);
  atomic_store_explicit(&c->seq, s + 1, memory_order_relaxed);
  return s;
}
/* Lock-free (an acquire load of the key): the entry found is complete. Its fields stay valid
 * while the caller holds the communicator (NCCL forbids using one being destroyed). */
struct cs_comm *cs_comm_lookup(void *comm);
/* An entry no communicator matches (its key is no ncclComm_t): what a thread's cache of its
 * last entry holds until it has one, so the hot path needs no NULL test. Never written. */
extern struct cs_comm cs_comm_none;
/* A new entry for comm with init's id, parent_id, size, rank, device and nonblocking (index
 * from cs_st.comm_index; seq and splits start at 0), published complete: a reader on another thread sees no entry
 * or this one whole. NULL when the table is full. */
struct cs_comm *cs_comm_insert(void *comm, const struct cs_comm *init);
void cs_comm_remove(void *comm);
/* Calls fn for every registered communicator with a copy of its entry, taken under the
 * table's lock (never torn by a concurrent insert, remove or reuse of the slot); fn runs
 * without the lock. Not for the hot path. */
void cs_comm_foreach(void (*fn)(void *comm, struct cs_comm *c, void *arg), void *arg);

uint64_t cs_hash_bytes(const void *p, size_t n, uint64_t seed);

#endif
