/* shim/profiler.c: collscope's own side of NCCL's profiler plugin: matching NCCL's events to
 * collscope's records, the kernel timer stamps, the probation (ABI in
 * include/collscope/nccl_profiler_abi.h). The exported tables (ncclProfiler_v6 for NCCL
 * 2.29/2.30, v5 for 2.28, v4 for 2.27), the chaining to an inner plugin and the start-up
 * env handling are in shim/profiler_chain.c, which calls the cs_prof_core_* entry points here.
 *
 * With COLLSCOPE_TIMING=auto|profiler the constructor points NCCL_PROFILER_PLUGIN at this
 * library (unless the user set it). NCCL then calls init per communicator; collscope asks
 * for Coll, P2p and KernelCh events only.
 *  - Coll / P2p startEvent runs inside the real NCCL call (or inside the outermost
 *    ncclGroupEnd for grouped ops) on the calling thread: it is attached to that call's
 *    record exactly -- the NCCL_OP wrapper sets cs_prof_cur around the real call, and
 *    cs_group_launch_begin hands over the group's records (matched in call order by
 *    function name and count).
 *  - KernelCh start/stop carry GPU timer stamps per channel: start = earliest channel start,
 *    end = start + the longest channel span.
 * Event handles are not pointers: a handle encodes (slot, generation, kind), so a late
 * KernelCh event of a recycled slot is recognised and dropped. Slots are a fixed array;
 * the hot path takes no lock and makes no syscall. A slot linked to a record is pinned
 * until the harvest thread has read it (cs_prof_collect / cs_prof_release).
 * Every callback returns ncclSuccess (fail open); init refuses (so NCCL runs without the
 * plugin) when collscope is disabled or COLLSCOPE_TIMING is events|off.
 * COLLSCOPE_TIMING=auto (the default) trusts the plugin only after a probation, per op
 * type: the first COLLSCOPE_PROFILER_PROBES eligible ops of a type are timed by CUDA events
 * AND the plugin, the harvest thread compares the two (cs_prof_probe_judge), and the
 * verdict makes every later op of that type plugin-timed (>= 90% agreed) or event-timed
 * (one log line says why). A trusted type whose calls stop getting events is revoked
 * (cs_prof_unlinked); when every type probed is rejected, NCCL's activation mask is
 * cleared so NCCL stops its profiler work. Ops of non-blocking communicators never use the
 * plugin (NCCL launches them on its own thread). */
#include "cs_internal.h"
#include "profiler_internal.h"
#include "hooks/timing.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PROF_SLOTS 4096u
#define PROF_MAXCH 64u
/* When a Coll/P2p stop (at enqueue) has all the KernelCh events it will get. Done at once
 * when every channel reported. Otherwise only with evidence that its kernel has run --
 * some KernelCh event of its own, a later op of its communicator with kernel stamps (NCCL
 * runs a communicator's kernels in launch order), or its own CUDA end event reached (a
 * probe) -- and then PROF_IDLE_NS after its last event (the stop, or a KernelCh stop):
 * fewer KernelCh events than channels, or none for this op. Without evidence the kernel
 * may still be queued behind the GPU's earlier work (the host runs ahead), so the slot
 * waits, up to PROF_WAIT_NS, or the final pass. */
#define PROF_IDLE_NS 200000000LL
#define PROF_WAIT_NS 30000000000LL
#define PROF_COMM_KEYS 1024u /* communicators' kernel-evidence tickets, by hashed comm id */

struct prof_slot {
  _Atomic uint64_t gen; /* bumped at every allocation */
  _Atomic int pinned;   /* linked to a record the harvest thread has not read yet */
  _Atomic int stopped;  /* Coll/P2p stopEvent seen */
  _Atomic uint32_t kstarted, kstopped;
  _Atomic uint64_t tmin;     /* earliest channel start (GPU timer), UINT64_MAX when none */
  _Atomic uint64_t span;     /* longest channel span */
  _Atomic int64_t last_mono; /* host CLOCK_MONOTONIC of the last Coll stop / KernelCh stop */
  _Atomic uint64_t chstart[PROF_MAXCH];
  uint64_t ticket; /* launch order (prof_ticket), for the evidence rule above */
  uint32_t ckey;   /* its communicator's entry in comm_kch */
  uint8_t nch;
  uint8_t ce;               /* a CeColl event's slot: no record link, free at its stop */
  struct cs_record *ce_rec; /* a grouped copy-engine collective's record, until its stop */
  void *ce_stream;
};
static struct prof_slot slots[PROF_SLOTS];
static _Atomic uint32_t slot_cursor;
static _Atomic uint64_t prof_ticket;              /* Coll/P2p starts, in launch order */
static _Atomic uint64_t comm_kch[PROF_COMM_KEYS]; /* per communicator: the latest ticket with kernel stamps */
static uint32_t comm_key(uint64_t comm) { return (uint32_t)((comm * 0x9e3779b97f4a7c15ULL) >> 54) & (PROF_COMM_KEYS - 1); }
static _Atomic int prof_inited;        /* NCCL initialised the plugin at least once */
static _Atomic uint64_t prof_stats[3]; /* linked, unlinked, no slot (debug log at exit) */

/* auto mode's probation (COLLSCOPE_PROFILER_PROBES), per op type: the first ops of each
 * type are timed both ways. Per type because NCCL may describe one type differently from
 * what collscope expects (as it reports AllGather/Broadcast counts in bytes): that type
 * alone then keeps CUDA events. */
static _Atomic int verdict[CS_OP_COUNT];             /* 0 on probation, 1 trusted, -1 rejected */
static _Atomic uint32_t probes_issued[CS_OP_COUNT];  /* hot path */
static _Atomic uint32_t probes_settled[CS_OP_COUNT]; /* harvest thread */
static struct {
  unsigned judged, agreed, no_stamps, bad_span, bad_clock;
  double ratio_sum;
} probe[CS_OP_COUNT];
#define PROBE_CLOCK_NS 1000000000LL /* the plugin's start may be this far off the start event */
#define PROBE_SLACK_NS 20000LL      /* kernel span may exceed the event span by 25% + this */

static __thread struct cs_record *grp_recs;
static __thread size_t grp_n, grp_next;

enum { H_COLL = 1,
       H_KCH = 2 };
static inline void *h_make(uint32_t idx, uint64_t gen, unsigned kind, unsigned ch) {
  return (void *)(uintptr_t)((gen << 20) | ((uint64_t)ch << 14) | ((uint64_t)idx << 2) | kind);
}
static inline struct prof_slot *h_slot(const void *h, unsigned kind, unsigned *ch) {
  uintptr_t v = (uintptr_t)h;
  if ((v & 3u) != kind) return NULL;
  uint32_t idx = (uint32_t)(v >> 2) & (PROF_SLOTS - 1);
  if (ch) *ch = (unsigned)(v >> 14) & (PROF_MAXCH - 1);
  struct prof_slot *s = &slots[idx];
  if (atomic_load_explicit(&s->gen, memory_order_acquire) != (uint64_t)(v >> 20)) return NULL;
  return s;
}

int cs_timing_mode_parse(const char *v) {
  if (!v || !*v) return CS_TMODE_AUTO; /* the default */
  if (!strcmp(v, "off") || !strcmp(v, "0")) return CS_TMODE_OFF;
  if (!strcmp(v, "events") || !strcmp(v, "on") || !strcmp(v, "1")) return CS_TMODE_EVENTS;
  if (!strcmp(v, "auto")) return CS_TMODE_AUTO;
  if (!strcmp(v, "profiler")) return CS_TMODE_PROFILER;
  return -1;
}

/* NCCL's activation mask (its global ncclProfilerEventMask: init hands every plugin its
 * address, and NCCL 2.27-2.29 reads it atomically at every enqueue). When every op type
 * collscope has probed ended rejected or revoked, collscope clears it, so NCCL stops the
 * per-op profiler work (kernel timestamps, proxy events) nobody uses any more. */
static _Atomic int cs_bits; /* the event types collscope asked NCCL for (0 once switched off) */
static void quiet_nccl_if_useless(void) {
  if (cs_cfg.timing_mode != CS_TMODE_AUTO) return;
  if (!atomic_load(&cs_bits)) return;
  int nrej = 0;
  for (int op = 0; op < CS_OP_COUNT; op++) {
    int v = atomic_load_explicit(&verdict[op], memory_order_relaxed);
    if (v > 0) return;
    if (v < 0)
      nrej++;
    else if (atomic_load_explicit(&probes_issued[op], memory_order_relaxed))
      return; /* on probation */
  }
  if (nrej && atomic_exchange(&cs_bits, 0)) {
    cs_prof_mask_publish(); /* NCCL keeps only an inner plugin's own event types, if any */
    cs_log(CS_LOG_INFO, "NCCL profiler: every op type probed was rejected; NCCL's profiler events are switched off%s",
           cs_prof_mask_published() ? " (but an inner plugin's)" : "");
  }
}
int cs_prof_core_bits(void) { return atomic_load_explicit(&cs_bits, memory_order_relaxed); }

#define PROF_UNLINKED_MAX 8u
static _Atomic uint32_t unlinked[CS_OP_COUNT];
void cs_prof_unlinked(int op) {
  if (op < 0 || op >= CS_OP_COUNT || cs_cfg.timing_mode != CS_TMODE_AUTO) return;
  if (atomic_fetch_add_explicit(&unlinked[op], 1, memory_order_relaxed) + 1 != PROF_UNLINKED_MAX) return;
  int one = 1;
  if (atomic_compare_exchange_strong(&verdict[op], &one, -1)) {
    cs_log(CS_LOG_WARN, "NCCL profiler timing of %s revoked: %u calls the plugin was trusted with got no NCCL "
                        "event (host timing only); %s goes back to CUDA event timing",
           cs_op_table[op].name, PROF_UNLINKED_MAX,
           cs_op_table[op].name);
    quiet_nccl_if_useless();
  }
}

bool cs_prof_active(void) {
  if (cs_cfg.timing_mode == CS_TMODE_PROFILER) return true;
  return cs_cfg.timing_mode == CS_TMODE_AUTO && atomic_load_explicit(&prof_inited, memory_order_relaxed);
}

bool cs_prof_wanted(int op) {
  return cs_prof_active() && cs_prof_op_eligible(op) &&
         (cs_cfg.timing_mode == CS_TMODE_PROFILER || atomic_load_explicit(&verdict[op], memory_order_relaxed) >= 0);
}

int cs_prof_claim(int op) {
  if (cs_cfg.timing_mode == CS_TMODE_PROFILER) return CS_PROF_ONLY;
  if (op < 0 || op >= CS_OP_COUNT) return CS_PROF_NONE;
  int v = atomic_load_explicit(&verdict[op], memory_order_relaxed);
  if (v) return v > 0 ? CS_PROF_ONLY : CS_PROF_NONE;
  if (!cs_cfg.prof_probes) {
    int z = 0;
    if (atomic_compare_exchange_strong(&verdict[op], &z, 1))
      cs_log(CS_LOG_INFO, "NCCL profiler timing of %s trusted without probation (COLLSCOPE_PROFILER_PROBES=0)",
             cs_op_table[op].name);
    return CS_PROF_ONLY;
  }
  /* at most COLLSCOPE_PROFILER_PROBES probes of a type in flight; until the verdict the
   * others get CUDA events every time (not the event sample's 1 in N) */
  uint32_t issued = atomic_load_explicit(&probes_issued[op], memory_order_relaxed);
  if (issued - atomic_load_explicit(&probes_settled[op], memory_order_relaxed) >= cs_cfg.prof_probes)
    return CS_PROF_EVENTS;
  atomic_fetch_add_explicit(&probes_issued[op], 1, memory_order_relaxed);
  return CS_PROF_PROBE;
}

/* ops NCCL reports as one Coll/P2p event of the same name (AlltoAll, Gather and Scatter
 * are sets of P2P events in NCCL: they keep the event path) */
bool cs_prof_op_eligible(int op) {
  return op == CS_OP_AllReduce || op == CS_OP_Broadcast || op == CS_OP_Reduce || op == CS_OP_AllGather ||
         op == CS_OP_ReduceScatter || op == CS_OP_Send || op == CS_OP_Recv;
}

void cs_prof_group_set(struct cs_record *recs, size_t n) {
  grp_recs = recs;
  grp_n = n;
  grp_next = 0;
}

/* a == name, ignoring case and underscores (NCCL's ncclAlgoToString says "COLLNET_DIRECT",
 * "NVLS_TREE"; collscope's names are "CollNetDirect", "NVLSTree") */
static bool name_eq(const char *a, const char *name) {
  for (;; a++, name++) {
    while (*a == '_') a++;
    if (tolower((unsigned char)*a) != tolower((unsigned char)*name)) return false;
    if (!*a) return true;
  }
}
static uint8_t algo_code(const char *a) {
  static const char *const names[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  if (!a) return CS_ALGO_NONE;
  for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (name_eq(a, names[i])) return (uint8_t)(CS_ALGO_TREE + i);
  return CS_ALGO_OTHER;
}
static uint8_t proto_code(const char *p) {
  if (!p) return CS_PROTO_NONE;
  if (!strcasecmp(p, "LL")) return CS_PROTO_LL;
  if (!strcasecmp(p, "LL128")) return CS_PROTO_LL128;
  if (!strcasecmp(p, "Simple")) return CS_PROTO_SIMPLE;
  return CS_PROTO_OTHER;
}

/* NCCL (2.27-2.29, enqueue.cc) turns an AllGather's or Broadcast's count into bytes (and
 * its datatype into ncclInt8) before the profiler sees the task: accept either. */
static bool count_matches(const struct cs_record *r, size_t count) {
  if (r->count == count) return true;
  return (r->op == CS_OP_AllGather || r->op == CS_OP_Broadcast) && r->count * cs_dtype_size(r->dtype) == count;
}
static bool rec_matches(const struct cs_record *r, const char *func, size_t count) {
  return r->prof_want && !r->prof_slot && r->op < CS_OP_COUNT && func && !strcmp(cs_op_table[r->op].name, func) &&
         count_matches(r, count);
}
/* A grouped op whose Coll event NCCL starts inside the API call itself (rather than at the
 * group launch): the record is claimed for the profiler now (cs_group_launch_begin keeps it). */
static bool grouped_call_matches(struct cs_record *r, const char *func, size_t count) {
  if (!r->group || r->prof_want || r->prof_slot || !cs_prof_wanted(r->op)) return false;
  r->prof_want = 1;
  bool m = rec_matches(r, func, count);
  r->prof_want = 0;
  int pc = m ? cs_prof_claim(r->op) : CS_PROF_NONE;
  if (pc != CS_PROF_ONLY && pc != CS_PROF_PROBE) return false;
  r->prof_want = 1;
  r->prof_probe = pc == CS_PROF_PROBE; /* cs_group_launch_begin adds the stream's events */
  return true;
}

/* the record this Coll/P2p event belongs to, or NULL */
static struct cs_record *find_record(const char *func, size_t count) {
  if (grp_recs) {
    for (size_t i = grp_next; i < grp_n; i++)
      if (rec_matches(&grp_recs[i], func, count)) {
        if (i == grp_next) grp_next++;
        return &grp_recs[i];
      }
    return NULL;
  }
  struct cs_record *r = cs_prof_cur;
  if (r && cs_tls.group_depth == 0 && rec_matches(r, func, count)) return r;
  if (r && cs_tls.group_depth > 0 && grouped_call_matches(r, func, count)) return r;
  return NULL;
}

static void *task_start(struct cs_record *r, uint8_t nch, const char *algo, const char *proto) {
  if (!r) {
    atomic_fetch_add_explicit(&prof_stats[1], 1, memory_order_relaxed);
    return NULL; /* not ours to time: no handle, so NCCL sends no children either */
  }
  uint32_t start = atomic_fetch_add_explicit(&slot_cursor, 1, memory_order_relaxed);
  for (uint32_t k = 0; k < 64; k++) {
    uint32_t idx = (start + k) & (PROF_SLOTS - 1);
    struct prof_slot *s = &slots[idx];
    int z = 0;
    if (!atomic_compare_exchange_strong_explicit(&s->pinned, &z, 1, memory_order_acq_rel, memory_order_relaxed))
      continue;
    atomic_store_explicit(&s->stopped, 0, memory_order_relaxed);
    atomic_store_explicit(&s->kstarted, 0, memory_order_relaxed);
    atomic_store_explicit(&s->kstopped, 0, memory_order_relaxed);
    atomic_store_explicit(&s->tmin, UINT64_MAX, memory_order_relaxed);
    atomic_store_explicit(&s->span, 0, memory_order_relaxed);
    atomic_store_explicit(&s->last_mono, 0, memory_order_relaxed);
    s->nch = nch;
    s->ce = 0;
    s->ce_rec = NULL;
    s->ticket = atomic_fetch_add_explicit(&prof_ticket, 1, memory_order_relaxed) + 1;
    s->ckey = comm_key(r->comm_id);
    uint64_t gen = (atomic_load_explicit(&s->gen, memory_order_relaxed) + 1) & ((1ull << 44) - 1);
    if (!gen) gen = 1;
    atomic_store_explicit(&s->gen, gen, memory_order_release);
    r->prof_slot = idx + 1;
    r->prof_gen = (uint32_t)gen;
    r->nchannels = nch;
    r->algo = algo_code(algo);
    r->proto = proto_code(proto);
    atomic_fetch_add_explicit(&prof_stats[0], 1, memory_order_relaxed);
    return h_make(idx, gen, H_COLL, 0);
  }
  atomic_fetch_add_explicit(&prof_stats[2], 1, memory_order_relaxed);
  return NULL;
}

static void *kch_start(void *parent, uint8_t ch, uint64_t ptimer) {
  struct prof_slot *s = h_slot(parent, H_COLL, NULL);
  if (!s) return NULL;
  ch &= PROF_MAXCH - 1;
  atomic_store_explicit(&s->chstart[ch], ptimer, memory_order_relaxed);
  uint64_t cur = atomic_load_explicit(&s->tmin, memory_order_relaxed);
  while (ptimer < cur && !atomic_compare_exchange_weak_explicit(&s->tmin, &cur, ptimer, memory_order_relaxed,
                                                                memory_order_relaxed)) {
  }
  atomic_fetch_add_explicit(&s->kstarted, 1, memory_order_release);
  _Atomic uint64_t *ck = &comm_kch[s->ckey];
  uint64_t t = atomic_load_explicit(ck, memory_order_relaxed);
  while (s->ticket > t && !atomic_compare_exchange_weak_explicit(ck, &t, s->ticket, memory_order_release,
                                                                 memory_order_relaxed)) {
  }
  uint64_t gen = (uint64_t)((uintptr_t)parent >> 20);
  return h_make((uint32_t)(s - slots), gen, H_KCH, ch);
}

static void kch_stop_state(void *h, uint64_t ptimer) {
  unsigned ch;
  struct prof_slot *s = h_slot(h, H_KCH, &ch);
  if (!s) return;
  uint64_t st = atomic_load_explicit(&s->chstart[ch], memory_order_relaxed);
  uint64_t span = ptimer > st ? ptimer - st : 0, cur = atomic_load_explicit(&s->span, memory_order_relaxed);
  while (span > cur && !atomic_compare_exchange_weak_explicit(&s->span, &cur, span, memory_order_relaxed,
                                                              memory_order_relaxed)) {
  }
}

/* A copy-engine collective (profiler v6, NCCL 2.29+): NCCL sends no kernel stamps for it, so
 * it is timed like an event-timed op -- CUDA events around the copies on the stream NCCL
 * names. The op's record is found as for a Coll event. A probe record already has its
 * stream's events: it leaves the probation uncounted (no stamps to compare). A record the
 * plugin alone was to time gets a start event now; its end event is recorded by the op
 * wrapper after the call (ungrouped) or at the CeColl stop (grouped: the group's own stream
 * events do not cover it). */
static void *ce_start(const struct cs_nccl_prof_ce_coll *c) {
  struct cs_record *r = find_record(c->func, c->count);
  if (!r) {
    atomic_fetch_add_explicit(&prof_stats[1], 1, memory_order_relaxed);
    return NULL;
  }
  void *h = task_start(r, 0, NULL, NULL);
  if (!h) return NULL;
  struct prof_slot *s = &slots[r->prof_slot - 1];
  s->ce = 1; /* no algo, proto or channels: NCCL names none for copy-engine work */
  if (r->prof_probe) {
    atomic_fetch_add_explicit(&probes_settled[r->op], 1, memory_order_relaxed);
  } else {
    cs_timed_stream_begin(r, c->stream);
    if (r->group && r->timing == CS_TIMING_PENDING) {
      s->ce_rec = r;
      s->ce_stream = c->stream;
    }
  }
  r->prof_want = r->prof_probe = 0; /* event-timed from here on */
  r->prof_slot = 0;                 /* the slot lives until the CeColl stop only */
  return h;
}

static void *start_common(uint64_t type, void *parent, const void *u) {
  if (!atomic_load_explicit(&cs_st.ready, memory_order_relaxed)) return NULL;
  if (type == CS_NCCL_PROFILE_CE_COLL) return ce_start(u);
  if (type == CS_NCCL_PROFILE_COLL) {
    const struct cs_nccl_prof_coll_v4 *c = u; /* v5's coll starts with v4's members */
    return task_start(find_record(c->func, c->count), c->nChannels, c->algo, c->proto);
  }
  if (type == CS_NCCL_PROFILE_P2P) {
    const struct cs_nccl_prof_p2p_v4 *p = u;
    return task_start(find_record(p->func, p->count), p->nChannels, NULL, NULL);
  }
  if (type == CS_NCCL_PROFILE_KERNEL_CH) {
    const struct cs_nccl_prof_kernel_ch *k = u;
    return kch_start(parent, k->channelId, k->pTimer);
  }
  return NULL;
}

/* ---- the core entry points (shim/profiler_chain.c calls them) ---- */
struct prof_ctx {
  uint64_t comm;
  int rank, nranks;
};

cs_nccl_result_t cs_prof_core_init(void **context, uint64_t comm, int nranks, int rank, int abi) {
  *context = NULL;
  if (cs_cfg.disabled || (cs_cfg.timing_mode != CS_TMODE_AUTO && cs_cfg.timing_mode != CS_TMODE_PROFILER))
    return 3; /* ncclInternalError: NCCL then runs without this plugin */
  struct prof_ctx *c = calloc(1, sizeof(*c));
  if (!c) return 3;
  c->comm = comm;
  c->rank = rank;
  c->nranks = nranks;
  *context = c;
  int want = CS_NCCL_PROFILE_COLL | CS_NCCL_PROFILE_P2P | CS_NCCL_PROFILE_KERNEL_CH;
  if (abi >= 6) want |= CS_NCCL_PROFILE_CE_COLL;
  if (!atomic_exchange(&prof_inited, 1)) {
    atomic_store(&cs_bits, want);
    cs_timing_plugin_live(); /* from now on the wrappers ask cs_prof_wanted */
    cs_log(CS_LOG_INFO, "NCCL profiler plugin initialised (ncclProfiler_v%d): collectives are timed from NCCL's "
                        "kernel timer stamps",
           abi);
  }
  quiet_nccl_if_useless(); /* a communicator created after the plugin was rejected everywhere */
  return 0;
}

void *cs_prof_core_start(uint64_t type, void *parent, const void *u) { return start_common(type, parent, u); }

void cs_prof_core_stop(void *h) {
  struct prof_slot *s;
  if ((s = h_slot(h, H_COLL, NULL))) {
    struct cs_record *r = s->ce_rec;
    if (r) { /* a grouped copy-engine collective: its end event now, then the slot is done */
      s->ce_rec = NULL;
      cs_timed_stream_end(r, s->ce_stream, true);
    }
    atomic_store_explicit(&s->last_mono, cs_now_ns(CLOCK_MONOTONIC), memory_order_relaxed);
    atomic_store_explicit(&s->stopped, 1, memory_order_release);
    if (s->ce) atomic_store_explicit(&s->pinned, 0, memory_order_release); /* CeColl: no record link */
  } else if ((s = h_slot(h, H_KCH, NULL))) {
    atomic_store_explicit(&s->last_mono, cs_now_ns(CLOCK_MONOTONIC), memory_order_relaxed);
    atomic_fetch_add_explicit(&s->kstopped, 1, memory_order_release);
  }
}

void cs_prof_core_state(void *h, cs_nccl_profiler_state_t st, const cs_nccl_prof_state_args_t *a) {
  if (st == CS_NCCL_PROFILER_KERNEL_CH_STOP && a) kch_stop_state(h, a->kernelCh.pTimer);
}

void cs_prof_core_finalize(void *context) {
  free(context);
  cs_log(CS_LOG_DEBUG, "profiler: %llu ops linked, %llu events not matched, %llu without a free slot",
         (unsigned long long)atomic_load(&prof_stats[0]), (unsigned long long)atomic_load(&prof_stats[1]),
         (unsigned long long)atomic_load(&prof_stats[2]));
}

/* ---- harvest thread side ---- */

void cs_prof_release(struct cs_record *r) {
  if (r->prof_slot) atomic_store_explicit(&slots[(r->prof_slot - 1) & (PROF_SLOTS - 1)].pinned, 0,
                                          memory_order_release);
  r->prof_slot = 0;
  r->prof_want = 0;
}

/* GPU timer -> CLOCK_REALTIME: NCCL's stamps are the GPU globaltimer (Unix-epoch ns on
 * current drivers); the simulator's are CLOCK_MONOTONIC. A value within a day of the
 * realtime clock is taken as realtime, anything else as monotonic. */
static int64_t gpu_to_realtime(uint64_t t) {
  int64_t rt = cs_now_ns(CLOCK_REALTIME), mono = cs_now_ns(CLOCK_MONOTONIC);
  int64_t d = (int64_t)t - rt;
  if (d > -86400LL * 1000000000LL && d < 86400LL * 1000000000LL) return (int64_t)t;
  return (int64_t)t + (rt - mono);
}

/* Is the slot's op finished (Coll/P2p stopped and every channel's KernelCh stopped, or the
 * rule at PROF_IDLE_NS)? kernel_ran: the caller knows its kernel has run (its CUDA end
 * event). On true, t0 and span hold the stamps (*t0 == UINT64_MAX: none arrived). */
static bool slot_done(struct prof_slot *s, bool final, bool kernel_ran, uint64_t *t0, uint64_t *span) {
  bool stopped = atomic_load_explicit(&s->stopped, memory_order_acquire);
  uint32_t ks = atomic_load_explicit(&s->kstopped, memory_order_acquire);
  uint32_t kb = atomic_load_explicit(&s->kstarted, memory_order_acquire);
  bool done = stopped && s->nch && ks >= s->nch;
  if (!done && stopped && ks == kb) {
    int64_t idle = cs_now_ns(CLOCK_MONOTONIC) - atomic_load_explicit(&s->last_mono, memory_order_relaxed);
    bool ran = kb > 0 || kernel_ran || atomic_load_explicit(&comm_kch[s->ckey], memory_order_acquire) > s->ticket;
    if (idle > (ran ? PROF_IDLE_NS : PROF_WAIT_NS)) done = true;
  }
  if (!done && !final) return false;
  *t0 = ks ? atomic_load_explicit(&s->tmin, memory_order_relaxed) : UINT64_MAX;
  *span = atomic_load_explicit(&s->span, memory_order_relaxed);
  return true;
}

bool cs_prof_collect(struct cs_record *r, bool final) {
  if (!r->prof_want) return true;
  struct prof_slot *s = r->prof_slot ? &slots[(r->prof_slot - 1) & (PROF_SLOTS - 1)] : NULL;
  if (s && (uint32_t)atomic_load_explicit(&s->gen, memory_order_acquire) != r->prof_gen) s = NULL; /* cannot happen while pinned */
  uint64_t t0 = UINT64_MAX, span = 0;
  if (r->prof_probe) {                                                                /* probation: the events time the record; keep the plugin's span aside */
    bool failed = r->timing != CS_TIMING_PENDING && r->timing != CS_TIMING_GPU_EVENT; /* call failed: no stop may come */
    bool ran = cs_timing_event_done(r->ev_end);                                       /* its CUDA end event: the kernel has run */
    if (s && !failed && !slot_done(s, final, ran, &t0, &span)) return false;
    if (t0 != UINT64_MAX) {
      r->prof_start_ns = gpu_to_realtime(t0);
      r->prof_end_ns = r->prof_start_ns + (int64_t)span;
      r->prof_probe = 2;
    }
    cs_prof_release(r);
    return true;
  }
  if (r->timing != CS_TIMING_PENDING || !s) {
    if (r->timing == CS_TIMING_PENDING) r->timing = CS_TIMING_HOST;
    cs_prof_release(r);
    return true;
  }
  if (!slot_done(s, final, false, &t0, &span)) return false;
  if (t0 != UINT64_MAX) {
    r->start_ns = gpu_to_realtime(t0);
    r->end_ns = r->start_ns + (int64_t)span;
    r->timing = CS_TIMING_PROFILER;
  } else {
    r->timing = CS_TIMING_HOST;
  }
  cs_prof_release(r);
  return true;
}

/* Probation verdict, harvest thread. A probe agrees when the plugin's kernel span starts
 * within PROBE_CLOCK_NS of the CUDA start event and is no longer than the event span
 * (+25% + PROBE_SLACK_NS): NCCL's kernel runs between the two events. After
 * COLLSCOPE_PROFILER_PROBES compared probes of an op type, >= 90% agreeing makes the plugin
 * the timer of every later op of that type; otherwise that type keeps CUDA events (one log
 * line says why). */
void cs_prof_probe_judge(const struct cs_record *r) {
  if (r->op >= CS_OP_COUNT) return;
  int op = r->op;
  atomic_fetch_add_explicit(&probes_settled[op], 1, memory_order_relaxed);
  if (atomic_load_explicit(&verdict[op], memory_order_relaxed) != 0) return;
  if (r->timing != CS_TIMING_GPU_EVENT || r->status != 0) return; /* nothing to compare with */
  __typeof__(probe[0]) *p = &probe[op];
  p->judged++;
  int64_t ed = r->end_ns - r->start_ns, pd = r->prof_end_ns - r->prof_start_ns;
  if (r->prof_probe != 2)
    p->no_stamps++;
  else if (r->prof_start_ns < r->start_ns - PROBE_CLOCK_NS || r->prof_start_ns > r->end_ns + PROBE_CLOCK_NS)
    p->bad_clock++;
  else if (pd < 0 || pd > ed + ed / 4 + PROBE_SLACK_NS)
    p->bad_span++;
  else {
    p->agreed++;
    p->ratio_sum += ed > 0 ? (double)pd / (double)ed : 1.0;
  }
  if (p->judged < cs_cfg.prof_probes) return;
  const char *name = cs_op_table[op].name;
  if ((uint64_t)p->agreed * 10 >= (uint64_t)p->judged * 9) {
    atomic_store(&verdict[op], 1);
    cs_log(CS_LOG_INFO, "NCCL profiler timing of %s trusted: %u of %u probe ops agreed with CUDA events (kernel "
                        "span %.2f of the event span on average); later %s calls are timed by the plugin alone",
           name, p->agreed,
           p->judged, p->agreed ? p->ratio_sum / p->agreed : 0.0, name);
  } else {
    atomic_store(&verdict[op], -1);
    cs_log(CS_LOG_WARN, "NCCL profiler timing of %s rejected: of %u probe ops %u agreed with CUDA events, %u had no "
                        "kernel timer stamps, %u a kernel span longer than the event span, %u a clock over 1 s off; %s keeps "
                        "CUDA event timing",
           name, p->judged, p->agreed, p->no_stamps, p->bad_span, p->bad_clock, name);
    quiet_nccl_if_useless();
  }
}

/* For the dump footer (harvest thread, at the end): the plugin's standing in this process. */
const char *cs_prof_standing(struct cs_prof_standing *st) {
  memset(st, 0, sizeof *st);
  if (cs_cfg.timing_mode == CS_TMODE_PROFILER) return atomic_load(&prof_inited) ? "forced" : "not_loaded";
  if (cs_cfg.timing_mode != CS_TMODE_AUTO) return NULL;
  if (!atomic_load(&prof_inited)) return "not_loaded";
  unsigned ntrusted = 0, nrejected = 0;
  for (int op = 0; op < CS_OP_COUNT; op++) {
    st->judged += probe[op].judged;
    st->agreed += probe[op].agreed;
    int v = atomic_load(&verdict[op]);
    if (!v) continue;
    char *list = v > 0 ? st->trusted : st->rejected;
    size_t len = strlen(list);
    snprintf(list + len, sizeof st->trusted - len, "%s%s", len ? "," : "", cs_op_table[op].name);
    if (v > 0)
      ntrusted++;
    else
      nrejected++;
  }
  return ntrusted && nrejected ? "mixed" : ntrusted ? "trusted"
                                       : nrejected  ? "rejected"
                                                    : "probation";
}
