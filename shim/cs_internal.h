/* shim/cs_internal.h: collscope's process-wide state and the internal API between
 * shim/ (entry points), hooks/ (timing) and stats/ (queue, harvest, dump). */
#ifndef COLLSCOPE_INTERNAL_H
#define COLLSCOPE_INTERNAL_H
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

/* ---- configuration (shim/config.c), read from the environment once ---- */
struct cs_config {
  bool disabled;          /* COLLSCOPE_DISABLE=1: pure pass-through */
  bool timing;            /* COLLSCOPE_TIMING != off */
  int timing_mode;        /* COLLSCOPE_TIMING: CS_TMODE_* (shim/profiler.c) */
  unsigned prof_probes;   /* COLLSCOPE_PROFILER_PROBES: auto mode's probation length (ops) */
  int log_level;          /* COLLSCOPE_LOG: quiet|warn|info|debug */
  char dir[4096];         /* COLLSCOPE_DIR or ./collscope-<job> */
  char job[256];
  char host[256];
  int rank;               /* global rank or -1 */
  int local_rank;
  int world_size;
  int step;               /* SLURM_STEP_ID: the job step, -1 when unset */
  size_t queue_cap;       /* COLLSCOPE_QUEUE (records) */
  unsigned flush_ms;      /* COLLSCOPE_FLUSH_MS, <= 1000 */
  const char *libcuda;    /* COLLSCOPE_LIBCUDA (tests) */
  const char *libnccl;    /* COLLSCOPE_LIBNCCL (tests) */
  size_t ring_cap;        /* COLLSCOPE_RING: shm stats ring slots (0 = no ring) */
  bool keep_shm;          /* COLLSCOPE_KEEP_SHM=1: leave the ring at clean exit */
  unsigned hang_timeout_s;/* COLLSCOPE_HANG_TIMEOUT: report ops not complete after this (0 = off) */
  int sdc_mode;           /* COLLSCOPE_SDC: CS_SDC_OFF | CS_SDC_ALL | CS_SDC_SAMPLE (hooks/sdc.c) */
  unsigned sdc_sample;    /* COLLSCOPE_SDC=sample:N: every Nth eligible collective per comm */
  uint64_t sdc_min_bytes; /* COLLSCOPE_SDC_MIN_BYTES: smaller collectives are not checked */
  int sdc_action;         /* COLLSCOPE_SDC_ACTION: CS_SDC_ACTION_LOG | CS_SDC_ACTION_ABORT */
  bool online;            /* COLLSCOPE_ONLINE (default 1): the job-wide exchange (hooks/online.c) */
  unsigned online_every;  /* COLLSCOPE_ONLINE_EVERY: world-communicator collectives between exchanges */
  unsigned online_timeout_s; /* COLLSCOPE_ONLINE_TIMEOUT: bound on the split and on each exchange */
};
enum { CS_SDC_OFF = 0, CS_SDC_ALL = 1, CS_SDC_SAMPLE = 2 };
/* COLLSCOPE_TIMING=off|events(on)|auto|profiler; the default is auto */
enum { CS_TMODE_OFF = 0, CS_TMODE_EVENTS = 1, CS_TMODE_AUTO = 2, CS_TMODE_PROFILER = 3 };
int cs_timing_mode_parse(const char *v);  /* -1 when not valid */
enum { CS_SDC_ACTION_LOG = 0, CS_SDC_ACTION_ABORT = 1 };
#define CS_SDC_ABORT_STATUS 86  /* exit status of COLLSCOPE_SDC_ACTION=abort */
extern struct cs_config cs_cfg;
void cs_config_load(void);

enum { CS_LOG_QUIET = 0, CS_LOG_WARN = 1, CS_LOG_INFO = 2, CS_LOG_DEBUG = 3 };
void cs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Logs a given format string once per process (keyed by the format's address). */
#define cs_log_once(level, ...)                              \
  do {                                                       \
    static _Atomic int cs_once_;                             \
    if (!atomic_exchange(&cs_once_, 1)) cs_log(level, __VA_ARGS__); \
  } while (0)

static inline int64_t cs_now_ns(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts); /* vDSO: no syscall */
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- process state (shim/init.c) ---- */
struct cs_state {
  _Atomic int ready;           /* 1 once recording works, 0 = pass-through */
  _Atomic uint64_t group_ids;  /* process-unique group ids */
  _Atomic uint64_t drops;      /* records lost: queue full or bounded list full */
  _Atomic uint64_t timing_lost;/* ops that got host timing only because no event was free */
  _Atomic uint64_t ops_total;  /* records enqueued */
  _Atomic uint64_t comm_index; /* communicator creation counter */
  _Atomic int park;            /* 1: the process is ending (COLLSCOPE_SDC_ACTION=abort) */
  _Atomic int64_t park_since;  /* CLOCK_MONOTONIC ns when park was set */
  int pid;
};
extern struct cs_state cs_st;
/* COLLSCOPE_SDC_ACTION=abort ends the process from collscope's thread, which aborts every
 * communicator: from cs_park_begin on, a job thread entering any NCCL wrapper sleeps in
 * cs_park instead (the aborting thread is exempt) until that thread's _exit; if the abort
 * itself hangs, a parked thread exits the process after CS_PARK_MAX_S. */
#define CS_PARK_MAX_S 30
void cs_park_begin(void);
void cs_park(void);

/* Lazy init on the first intercepted call (cheap after the first time). */
void cs_ensure_init(void);
/* Ask the harvest thread to write everything complete now; waits at most timeout_ms. */
void cs_flush(unsigned timeout_ms);

/* ---- per-thread state ---- */
struct cs_pending;  /* hooks/timing.c */
struct cs_tls {
  int depth;                 /* re-entrancy guard: >0 inside a collscope wrapper */
  int group_depth;           /* ncclGroupStart nesting, mirrors NCCL's per-thread depth */
  uint64_t group_id;
  struct cs_pending *pending;/* ops queued in the current group */
  uint64_t last_uid_hash;    /* last ncclGetUniqueId result seen on this thread */
  int park_exempt;           /* the thread that set cs_st.park (it aborts and exits) */
  struct cs_record *prof_cur;/* cs_prof_cur (below) */
  void *site;                /* call site of the NCCL_OP wrapper entered last (shim/nccl_wrappers.c) */
  struct cs_comm *last_comm; /* the communicator entry this thread used last (hooks/timing.c) */
  void *last_pool;           /* the event pool this thread used last (hooks/timing.c) */
};
/* Initial-exec TLS: the wrappers reach it with one %fs-relative access, no __tls_get_addr
 * call. The model puts the library's whole TLS segment in glibc's static TLS block, so
 * when NCCL dlopen()s the library as a plugin without LD_PRELOAD, the segment must fit
 * glibc's static-TLS surplus (a few hundred bytes): keep every __thread in the library
 * small (larger per-thread state is allocated per thread and reached through a pointer,
 * e.g. hooks/sdc.c's group list); tests/profiler dlopens the library that way. */
#define CS_TLS_IE __attribute__((tls_model("initial-exec")))
extern __thread struct cs_tls cs_tls CS_TLS_IE;

/* ---- record queue (stats/harvest.c) ---- */
bool cs_record_push(const struct cs_record *r);  /* counts a drop when full */
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
  _Atomic(void *) key;       /* ncclComm_t */
  uint64_t id;
  uint64_t parent_id;
  int size;
  int rank;
  int device;
  uint64_t index;
  _Atomic uint64_t seq;
  _Atomic uint64_t splits;   /* ncclCommSplit/Shrink calls on this comm (child ids) */
  bool nonblocking;          /* its init/split returned ncclInProgress (config blocking = 0) */
};
struct cs_comm *cs_comm_lookup(void *comm);
struct cs_comm *cs_comm_insert(void *comm);  /* NULL when the table is full */
void cs_comm_remove(void *comm);
/* Calls fn for every registered communicator (a snapshot; not for the hot path). */
void cs_comm_foreach(void (*fn)(void *comm, struct cs_comm *c, void *arg), void *arg);

uint64_t cs_hash_bytes(const void *p, size_t n, uint64_t seed);

/* ---- NCCL profiler plugin (shim/profiler.c) ---- */
/* The op record of the NCCL call this thread is inside (set around the real call by the
 * NCCL_OP wrappers); profiler Coll/P2p events started on this thread attach to it. */
#define cs_prof_cur (cs_tls.prof_cur)
/* true when the plugin may time ops: COLLSCOPE_TIMING=profiler, or auto once NCCL has
 * initialised the plugin (cheap, hot path) */
bool cs_prof_active(void);
/* cs_prof_active, the op is eligible, and its type's probation has not rejected the plugin */
bool cs_prof_wanted(int op);
/* How an eligible op is timed (hot path; call once per op, after cs_prof_wanted):
 * CS_PROF_ONLY   the plugin alone, no CUDA events;
 * CS_PROF_PROBE  auto mode's probation: CUDA events AND the plugin, compared by the harvest
 *                thread (cs_prof_probe_judge) until COLLSCOPE_PROFILER_PROBES ops agreed or
 *                not -- the verdict then makes every later op ONLY or NONE;
 * CS_PROF_NONE   CUDA events only. */
enum { CS_PROF_NONE = 0, CS_PROF_ONLY = 1, CS_PROF_PROBE = 2 };
int cs_prof_claim(int op);
/* hot path, rare: an op the plugin was trusted to time got no event from NCCL (e.g. NCCL
 * launched it from a CUDA host callback once CUDA graphs with NCCL work exist); after
 * PROF_UNLINKED_MAX such ops the type goes back to CUDA events (one log line) */
void cs_prof_unlinked(int op);
/* harvest thread: a finished probation record (its event timing final) */
void cs_prof_probe_judge(const struct cs_record *r);
/* the plugin's standing for the dump footer: "trusted" / "rejected" (every op type with a
 * verdict), "mixed" (some of each), "probation" (no verdict yet), "not_loaded" (NCCL never
 * initialised it), "forced" (COLLSCOPE_TIMING=profiler), or NULL (events/off); st gets the
 * probes compared and agreeing, and the op types trusted / rejected (comma lists) */
struct cs_prof_standing {
  unsigned judged, agreed;
  char trusted[160], rejected[160];
};
const char *cs_prof_standing(struct cs_prof_standing *st);
bool cs_prof_op_eligible(int op);
/* the group records being launched by this thread's outermost ncclGroupEnd */
void cs_prof_group_set(struct cs_record *recs, size_t n);
/* harvest thread: true when the record's profiler timing is final (filled or given up) */
bool cs_prof_collect(struct cs_record *r, bool final);
void cs_prof_release(struct cs_record *r);

/* ---- NCCL_NET wrapper (shim/net_plugin.c) ---- */
/* harvest thread: hand one CS_REC_LINK record per connection that moved data (every
 * COLLSCOPE_FLUSH_MS), closed, or (final) is still open, to emit; returns the count */
size_t cs_net_collect(bool final, void (*emit)(const struct cs_record *r));

#endif
