/* hooks/online_exchange.c: the job-wide online exchange (protocol in online_exchange.h) once it runs: the
 * count of world collectives, the feed from the harvest thread, the exchange thread, what
 * it does with the findings (analysis/online_eval.c), and shutdown. The set-up (the world
 * communicator, collscope's own communicator split from it) is hooks/online_setup.c. Every
 * failure logs one line and turns the feature off; the job's communicators are never
 * waited on. */
#include "online_state.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collscope/hash.h"
#include "collscope/online.h"
#include "collscope/online_sched.h"
#include "hooks/health.h"
#include "cuda_driver.h"
#include "nccl_calls.h"
#include "stats/flight.h"
#include "stats/harvest.h"

struct cs_online_hook cs_on;
_Atomic int cs_online_running; /* state == ON_RUNNING (hooks.h), kept by cs_online_set_state */

static struct cs_online_pipe pipe_seen; /* harvest thread: is this rank a pipeline's stage (online_sched.h) */

static void *exchange_main(void *arg);

bool cs_online_start_thread(void) {
  if (cs_thread_start(&cs_on.th, exchange_main, false, "collscope-online")) return false;
  cs_on.th_running = true;
  return true;
}

void cs_online_after_op(struct cs_call *c, int status) {
  if (CS_LIKELY(atomic_load_explicit(&cs_on.state, memory_order_acquire) != ON_RUNNING)) return;
  if (!c->rec || c->rec->comm_id != cs_on.parent_id || status != 0 || cs_op_table[c->op].cls == CS_CLASS_P2P) return;
  uint64_t n = atomic_fetch_add_explicit(&cs_on.colls, 1, memory_order_relaxed) + 1;
  if (n % cs_on.every == 0) atomic_store_explicit(&cs_on.trigger, n / cs_on.every, memory_order_relaxed);
}

/* ---- feed (harvest thread) ---- */
static void feed_push(const struct feed_item *it) {
  uint32_t h = atomic_load_explicit(&cs_on.head, memory_order_relaxed);
  if (h - atomic_load_explicit(&cs_on.tail, memory_order_acquire) >= FEED_CAP) {
    atomic_fetch_add_explicit(&cs_on.feed_lost, 1, memory_order_relaxed);
    return;
  }
  cs_on.feed[h % FEED_CAP] = *it;
  atomic_store_explicit(&cs_on.head, h + 1, memory_order_release);
}

static uint32_t u32(int x) { return x < 0 ? 0 : (uint32_t)x; }

/* the Send/Recv bytes of comm since its previous collective (the data-load fit's x, as the
 * report has it: analysis/detect_dataload.c): its slot, NULL when it has none (add: made for a
 * communicator with Send/Recv; NULL when the table is full) */
static uint64_t *p2p_bytes_of(uint64_t comm, bool add) {
  unsigned h = (unsigned)cs_hash_fin(comm) & (ONLINE_P2P_COMMS - 1);
  for (unsigned i = 0; i < ONLINE_P2P_COMMS; i++, h = (h + 1) & (ONLINE_P2P_COMMS - 1)) {
    if (cs_on.p2p[h].used && cs_on.p2p[h].comm == comm) return &cs_on.p2p[h].bytes;
    if (!cs_on.p2p[h].used) {
      if (!add) return NULL;
      cs_on.p2p[h].used = true;
      cs_on.p2p[h].comm = comm;
      cs_on.p2p[h].bytes = 0;
      return &cs_on.p2p[h].bytes;
    }
  }
  return NULL;
}

void cs_online_note(const struct cs_record *r) {
  if (CS_LIKELY(atomic_load_explicit(&cs_on.state, memory_order_acquire) != ON_RUNNING)) return;
  if (r->type != CS_REC_OP || r->status != 0 || r->op >= CS_OP_COUNT) return;
  bool timed = r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_PROFILER;
  bool p2p = cs_op_table[r->op].cls == CS_CLASS_P2P;
  /* the compute gap since this process's previous collective of the comm on the stream, as
   * the report has it (analysis/detect_window.c): a Send/Recv's span is the stream's busy
   * time and the idle time before it counts, so it is tracked under a key of its own that
   * leaves the collectives' sum running */
  double gap = -1;
  if (timed)
    gap = cs_gap_timed(&cs_on.gaps, p2p ? ~r->comm_id : r->comm_id, r->stream, r->start_ns, r->end_ns);
  else
    cs_gap_untimed(&cs_on.gaps, r->stream); /* ran untimed: the next timed op's span holds it */
  cs_online_pipe_note(&pipe_seen, r->comm_id, r->comm_size, r->comm_rank, p2p, r->peer);
  uint64_t *xb = p2p_bytes_of(r->comm_id, p2p); /* only communicators with Send/Recv take a slot */
  if (!xb && p2p && cs_on.p2p_untracked++ == 0)
    cs_log_once(CS_LOG_WARN, "online: Send/Recv on more than %d communicators; the data-load fit reads no bytes for "
                             "the others",
                ONLINE_P2P_COMMS);
  if (p2p) {
    if (xb) *xb += r->bytes;
    return;
  }
  uint64_t bytes = xb ? *xb : 0;
  if (xb) *xb = 0;
  struct feed_item it;
  if (timed && r->seq % cs_on.stride == 0 && r->comm_size > 1) {
    memset(&it, 0, sizeof it);
    it.kind = 1;
    it.u.op.comm = r->comm_id;
    it.u.op.seq = r->seq;
    it.u.op.p2p_bytes = bytes;
    it.u.op.dur_us = (float)((double)(r->end_ns - r->start_ns) / 1e3);
    it.u.op.gap_us = (float)gap;
    it.u.op.comm_size = u32(r->comm_size);
    it.u.op.comm_rank = u32(r->comm_rank);
    feed_push(&it);
  }
  if (r->sdc_checked) {
    memset(&it, 0, sizeof it);
    it.kind = 2;
    struct cs_online_sdc *s = &it.u.sdc;
    s->comm = r->comm_id;
    s->seq = r->seq;
    s->fp = r->fingerprint;
    s->in_sum = r->in_sum;
    s->in_abs = r->in_abs;
    s->out_sum = r->out_sum;
    s->count = r->count;
    s->root = r->root;
    s->comm_size = u32(r->comm_size);
    s->comm_rank = u32(r->comm_rank);
    s->op = r->op;
    s->checked = r->sdc_checked;
    s->dtype = (int8_t)r->dtype;
    s->redop = (int8_t)(r->redop > 127 ? 127 : r->redop);
    feed_push(&it);
  }
}

/* the harvest thread's client (registered by shim/wiring.c) */
const struct cs_harvest_client cs_online_harvest = {.name = "online", .finished = cs_online_note};

/* ---- exchange thread ---- */
static void drain_feed(void) {
  uint32_t t = atomic_load_explicit(&cs_on.tail, memory_order_relaxed);
  uint32_t h = atomic_load_explicit(&cs_on.head, memory_order_acquire);
  cs_online_rank_set_pipeline(cs_on.st, cs_online_pipe_member(&pipe_seen));
  cs_online_rank_set_stage(cs_on.st, cs_online_pipe_stage(&pipe_seen));
  for (; t != h; t++) {
    const struct feed_item *it = &cs_on.feed[t % FEED_CAP];
    uint64_t lost = cs_online_rank_lost(cs_on.st);
    if (it->kind == 1)
      cs_online_rank_feed_op(cs_on.st, &it->u.op);
    else
      cs_online_rank_feed_sdc(cs_on.st, &it->u.sdc);
    if (it->kind == 2 && cs_online_rank_lost(cs_on.st) > lost)
      cs_log_once(CS_LOG_WARN, "online: too many checked collectives waiting for an exchange; the oldest are "
                               "dropped (a lower COLLSCOPE_ONLINE_EVERY or a sparser COLLSCOPE_SDC sample keeps up)");
  }
  atomic_store_explicit(&cs_on.tail, t, memory_order_release);
}

/* the abort parks the job's threads (cs_park_begin): that flag is the one state */
bool cs_online_aborting(void) { return atomic_load(&cs_st.park) != 0; }

static void abort_one(void *comm, struct cs_comm *c, void *arg) {
  (void)c;
  (void)arg;
  CS_NCCL_REAL(ncclCommAbort)
  ((ncclComm_t)comm);
}

/* a finding this rank has not acted on yet: an SDC finding, or a (comm, rank) straggler not seen
 * before (the exchange repeats an ongoing straggler every time) */
static bool new_finding(const struct cs_online_findings *f) {
  static struct {
    uint64_t comm;
    int rank;
  } seen[64];
  static size_t nseen;
  bool fresh = f->nsdc > 0;
  for (size_t i = 0; i < f->nstragglers; i++) {
    bool known = false;
    for (size_t k = 0; k < nseen && !known; k++)
      known = seen[k].comm == f->stragglers[i].comm && seen[k].rank == f->stragglers[i].rank;
    if (known) continue;
    fresh = true;
    if (nseen < 64) seen[nseen].comm = f->stragglers[i].comm, seen[nseen++].rank = f->stragglers[i].rank;
  }
  return fresh;
}

static void act_on(const struct cs_online_findings *f, uint64_t exchange, double wait_us, double eval_us) {
  /* COLLSCOPE_RECORD=summary: a new finding opens a flight-recorder window on every rank */
  if (new_finding(f)) cs_flight_request(CS_WIN_FINDING);
  if (cs_on.rank == 0) {
    for (size_t i = 0; i < f->nstragglers; i++) {
      const struct cs_online_straggler *s = &f->stragglers[i];
      char cause[96];
      cs_health_cause_text(s->cause, cause, sizeof cause);
      cs_log(CS_LOG_WARN, "online: straggler rank %d (%s) on comm %016llx: last in %.0f%% of %zu sampled instances, "
                          "lateness %.0f us (median duration %.0f us), kind %s%s%s",
             s->rank, s->host, (unsigned long long)s->comm,
             100 * s->share_last, s->instances, s->lateness_us, s->median_dur_us, cs_det_kind_name(s->kind),
             cause[0] ? ", cause=" : "", cause);
    }
    for (size_t i = 0; i < f->nsdc; i++) {
      const struct cs_online_sdc_finding *s = &f->sdc[i];
      char who[320];
      if (s->suspect_rank >= 0 && s->suspects > 1)
        snprintf(who, sizeof who, "suspect rank %d and %llu more ranks with the same wrong bytes", s->suspect_rank,
                 (unsigned long long)(s->suspects - 1));
      else if (s->suspect_rank >= 0)
        snprintf(who, sizeof who, "suspect rank %d (%s)", s->suspect_rank, s->suspect_host ? s->suspect_host : "?");
      else
        snprintf(who, sizeof who, "no single suspect (every rank received the same wrong result)");
      char vals[160] = "";
      if (s->check == CS_SDC_CHECK_SUM)
        snprintf(vals, sizeof vals, " (output sum %.17g, expected %.17g, tolerance %.3g)", s->got, s->want, s->tol);
      cs_log(CS_LOG_WARN, "online: SDC: %s seq %llu on comm %016llx, %llu bytes %s: %s check failed%s, %s",
             s->op < CS_OP_COUNT ? cs_op_table[s->op].name : "op", (unsigned long long)s->seq,
             (unsigned long long)s->comm, (unsigned long long)s->bytes, cs_dtype_name(s->dtype),
             cs_sdc_check_name(s->check), vals, who);
    }
    if (f->bad_summaries)
      cs_log(CS_LOG_WARN, "online: exchange %llu: the ranks' contributions did not agree (version or exchange "
                          "number); its data was not used",
             (unsigned long long)exchange);
    cs_log(CS_LOG_DEBUG, "online: exchange %llu: %zu instances, %zu checked collectives compared, %u rounds, "
                         "%zu slots lost to collisions; all-reduce %.0f us, evaluation %.0f us",
           (unsigned long long)exchange,
           f->instances, f->sdc_compared, f->rounds, f->lost_slots, wait_us, eval_us);
  }
  if (f->nsdc && cs_cfg.sdc_action == CS_SDC_ACTION_ABORT) {
    cs_log(CS_LOG_WARN, "online: SDC detected (exchange %llu; rank 0 logs the details); COLLSCOPE_SDC_ACTION=abort: "
                        "aborting every NCCL communicator and exiting with status %d",
           (unsigned long long)exchange,
           CS_SDC_ABORT_STATUS);
    cs_park_begin();               /* job threads entering NCCL now wait for the exit, and an
                                      * exit of the job's own meanwhile waits for this one */
    atomic_store(&cs_st.ready, 0); /* nothing new is recorded */
    cs_harvest_stop(2000);         /* write the dump and close the ring */
    cs_online_sleep_ms(20);        /* calls already inside NCCL return */
    cs_comm_foreach(abort_one, NULL);
    CS_NCCL_REAL(ncclCommAbort)
    (cs_on.own);
    _exit(CS_SDC_ABORT_STATUS);
  }
}

/* Why the wait for an exchange ends early; NULL while it may go cs_on. A pending exchange
 * is never left behind: its kernel would hold every device-wide synchronization of the
 * job (cudaDeviceSynchronize, cudaFree, cudaFreeHost) until the peers joined. */
static const char *wait_verdict(int64_t deadline, unsigned *polls) {
  int stop = atomic_load(&cs_on.stop);
  int64_t now = cs_now_ns(CLOCK_MONOTONIC);
  if (stop == 1) return "stop requested";
  if (stop == 2 && now > atomic_load(&cs_on.drain_deadline)) return "at shutdown the other ranks did not join within 2 s";
  if (now > deadline) return "not complete after COLLSCOPE_ONLINE_TIMEOUT (a rank stopped exchanging)";
  if (++*polls % 8 == 0) { /* a peer that died shows up as an asynchronous error */
    ncclResult_t st = ncclSuccess;
    if (CS_NCCL_REAL(ncclCommGetAsyncError)(cs_on.own, &st) != ncclSuccess || (st != ncclSuccess && st != ncclInProgress))
      return "collscope's communicator reports an error (a peer left)";
  }
  return NULL;
}

static void nap_backoff(unsigned *nap) {
  cs_online_sleep_ms(*nap);
  if (*nap < 20) *nap *= 2;
}

/* Give up on the exchange in flight: abort collscope's communicator (its kernel exits, the
 * device is free again; in NCCL a local operation). */
static void abandon(uint64_t exchange, const char *why) {
  cs_log(cs_online_stop_is_shutdown() ? CS_LOG_INFO : CS_LOG_WARN, "online exchange off: exchange %llu: %s",
         (unsigned long long)exchange, why);
  if (cs_on.own) CS_NCCL_REAL(ncclCommAbort)
  (cs_on.own);
  cs_on.own = NULL;
}

/* Wait for a non-blocking call on collscope's communicator to be enqueued: NCCL may
 * return before the collective is on the stream (it connects lazily at the first one). */
static const char *enqueued(ncclResult_t r, int64_t deadline, unsigned *polls, unsigned *nap) {
  while (r == ncclInProgress) {
    ncclResult_t st = ncclInProgress;
    if (CS_NCCL_REAL(ncclCommGetAsyncError)(cs_on.own, &st) != ncclSuccess) st = ncclInternalError;
    if (st != ncclInProgress) {
      r = st;
      break;
    }
    const char *why = wait_verdict(deadline, polls);
    if (why) return why;
    nap_backoff(nap);
  }
  return r == ncclSuccess ? NULL : "ncclAllReduce failed";
}

/* The transport of one round: cs_on.hwire (this rank's contribution) is copied to the device,
 * reduced in place across all ranks -- MIN over the uint64 array, SUM over the uint64 and
 * the double arrays -- and copied back. NULL, or why it failed. */
static const char *reduce_round(int64_t deadline, unsigned *polls) {
  unsigned nap = 1;
  const char *why = NULL;
  void *d = (void *)(uintptr_t)cs_on.dwire;
  struct {
    size_t off, count;
    ncclDataType_t type;
    ncclRedOp_t op;
  } part[3] = {
      {offsetof(struct cs_online_wire, min), CS_ONLINE_NMIN, ncclUint64, ncclMin},
      {offsetof(struct cs_online_wire, sum), CS_ONLINE_NSUM, ncclUint64, ncclSum},
      {offsetof(struct cs_online_wire, fsum), CS_ONLINE_NFSUM, ncclFloat64, ncclSum},
  };
  cs_tls.depth++;
  if (cs_drvx.cuMemcpyHtoDAsync(cs_on.dwire, cs_on.hwire, CS_ONLINE_WIRE_BYTES, cs_on.stream) != CUDA_SUCCESS)
    why = "cuMemcpyHtoDAsync failed";
  for (int i = 0; i < 3 && !why; i++) {
    char *p = (char *)d + part[i].off;
    ncclResult_t r = CS_NCCL_REAL(ncclAllReduce)(p, p, part[i].count, part[i].type, part[i].op, cs_on.own, (cudaStream_t)cs_on.stream);
    why = enqueued(r, deadline, polls, &nap);
  }
  cs_tls.depth--;
  if (!why && cs_drvx.cuMemcpyDtoHAsync(cs_on.hwire, cs_on.dwire, CS_ONLINE_WIRE_BYTES, cs_on.stream) != CUDA_SUCCESS)
    why = "cuMemcpyDtoHAsync failed";
  while (!why) {
    CUresult q = cs_drvx.cuStreamQuery(cs_on.stream);
    if (q == CUDA_SUCCESS) break;
    if (q != CUDA_ERROR_NOT_READY) {
      why = "its stream failed";
      break;
    }
    if ((why = wait_verdict(deadline, polls))) break;
    nap_backoff(&nap);
  }
  if (!why) {
    ncclResult_t st = ncclSuccess;
    if (CS_NCCL_REAL(ncclCommGetAsyncError)(cs_on.own, &st) != ncclSuccess || st != ncclSuccess)
      why = "collscope's communicator reports an error";
  }
  return why;
}

/* One exchange (its rounds); false when the feature must stop (error, timeout or stop
 * request). The deadline covers all its rounds. */
static bool exchange_once(uint64_t exchange) {
  drain_feed();
  cs_online_rank_set_drops(cs_on.st, atomic_load(&cs_st.drops) + atomic_load(&cs_on.feed_lost));
  cs_online_rank_set_cause(cs_on.st, cs_health_cause()); /* hooks/health.c: its own samples */
  int64_t t0 = cs_now_ns(CLOCK_MONOTONIC), wait_ns = 0, eval_ns = 0;
  int64_t deadline = t0 + (int64_t)cs_cfg.online_timeout_s * 1000000000LL;
  unsigned polls = 0;
  struct cs_online_findings f;
  int rc;
  for (unsigned round = 0;; round++) {
    int64_t a = cs_now_ns(CLOCK_MONOTONIC);
    cs_online_pack(cs_on.st, (uint32_t)exchange, round, cs_on.hwire);
    int64_t b = cs_now_ns(CLOCK_MONOTONIC);
    const char *why = reduce_round(deadline, &polls);
    if (why) {
      abandon(exchange, why);
      return false;
    }
    int64_t c = cs_now_ns(CLOCK_MONOTONIC);
    rc = cs_online_unpack(cs_on.st, (uint32_t)exchange, round, cs_on.hwire, &f);
    int64_t e = cs_now_ns(CLOCK_MONOTONIC);
    eval_ns += (b - a) + (e - c);
    wait_ns += c - b;
    if (rc != 1) break;
  }
  cs_on.reduced_backlog = f.max_backlog; /* the same bytes on every rank: every rank decides alike */
  if (rc == 0) act_on(&f, exchange, (double)wait_ns / 1e3, (double)eval_ns / 1e3);
  return true;
}

static void *exchange_main(void *arg) {
  (void)arg;
  cs_driver_thread_relaxed(); /* its set-up allocates: never inside the job's global capture */
  if (cs_drvx.cuCtxSetCurrent(cs_on.ctx) != CUDA_SUCCESS) {
    cs_log(CS_LOG_WARN, "online exchange off: cannot use the world communicator's CUDA context");
    cs_online_off();
    return NULL;
  }
  if (!cs_online_own_setup()) return NULL;
  unsigned finals = 0;
  for (;;) {
    int stop = atomic_load(&cs_on.stop);
    if (stop == 1) break;
    drain_feed();
    uint64_t due = atomic_load_explicit(&cs_on.trigger, memory_order_relaxed);
    if (cs_on.done < due) {
      if (!exchange_once(cs_on.done + 1)) {
        cs_online_off();
        break;
      }
      cs_on.done++;
      continue;
    }
    if (stop == 2) {
      /* Shutdown, every due exchange done: one more for what the harvest thread fed since
       * the last one (the job's last checked collectives), then more while any rank still
       * had entries queued, at most FINAL_MAX. Only for a job that exchanged at all (ran
       * K world collectives): a short job's exit gains no all-gather, nor the 2 s wait
       * for a peer that exits later. Every rank runs the same number: they all reach this
       * point after the same world collectives, and decide from the same gathered bytes. */
      if (cs_on.done == 0 || finals >= FINAL_MAX || (finals > 0 && !cs_on.reduced_backlog)) break;
      if (!exchange_once(cs_on.done + 1)) {
        cs_online_off();
        break;
      }
      cs_on.done++;
      finals++;
      continue;
    }
    cs_online_sleep_ms(20);
  }
  return NULL;
}

/* ---- shutdown ---- */
/* Every rank ran the same number of world collectives, so the exchanges already due are
 * due everywhere: give them DRAIN_MS to complete (the findings of the job's last steps),
 * then stop. */
static bool stop_thread(void) {
  if (!cs_on.th_running || pthread_equal(pthread_self(), cs_on.th)) return false;
  cs_flush(200); /* the harvest thread feeds what has completed */
  atomic_store(&cs_on.drain_deadline, cs_now_ns(CLOCK_MONOTONIC) + DRAIN_MS * 1000000LL);
  atomic_store(&cs_on.stop, 2);
  /* bounded: the job's thread never waits on collscope longer than STOP_WAIT_MS; a thread
   * still inside NCCL then is left to end with the process, with what it owns.
   * CLOCK_MONOTONIC: the simulator's modeled clock replaces CLOCK_REALTIME */
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  long long ns = (long long)until.tv_nsec + (STOP_WAIT_MS % 1000) * 1000000LL;
  until.tv_sec += STOP_WAIT_MS / 1000 + (time_t)(ns / 1000000000LL);
  until.tv_nsec = (long)(ns % 1000000000LL);
  cs_on.th_running = false;
  if (pthread_clockjoin_np(cs_on.th, NULL, CLOCK_MONOTONIC, &until) != 0) {
    cs_log(CS_LOG_WARN, "online: collscope's exchange thread did not stop within %d ms; the job goes on "
                        "without waiting for it (its communicator is left to end with the process)",
           STOP_WAIT_MS);
    pthread_detach(cs_on.th);
    cs_on.th_abandoned = true;
    return false;
  }
  return true;
}

void cs_online_comm_destroying(void *comm) {
  if (!comm || comm != cs_on.parent) return;
  stop_thread();
  cs_online_set_state(ON_OFF);
  cs_on.parent = NULL;
  if (cs_on.th_abandoned) cs_on.own = NULL; /* still the abandoned thread's */
  if (cs_on.own) {
    /* the thread abandons (aborts) any exchange it gives up on; should anything still be
     * in flight on collscope's stream, a destroy would wait for it: abort instead */
    if (cs_drvx.cuStreamQuery(cs_on.stream) == CUDA_SUCCESS) {
      CS_NCCL_REAL(ncclCommDestroy)
      (cs_on.own);
    } else {
      CS_NCCL_REAL(ncclCommAbort)
      (cs_on.own);
    }
    cs_on.own = NULL;
  }
}

void cs_online_shutdown(void) {
  stop_thread();
  cs_online_set_state(ON_OFF);
}

void cs_online_atfork_child(void) {
  /* the thread and the communicator belong to the parent */
  cs_on.th_running = false;
  cs_on.th_abandoned = false;
  cs_on.own = NULL;
  cs_on.parent = NULL;
  cs_online_set_state(ON_OFF);
}
