/* stats/harvest.c: the background thread. It drains the record queue, asks the
 * registered clients (harvest.h; e.g. hooks/timing.c reads the GPU events without
 * blocking) whether each record is finished, hands finished records to the dump writer
 * and the ring, runs the clients' periodic work, and flushes the file at least every
 * COLLSCOPE_FLUSH_MS. Records whose work never completes stay pending; nothing here can
 * block the job.
 *
 * Order: a communicator's op records are written in seq order (DESIGN.md "Dump files"). A
 * finished op is held while an earlier op of its communicator is still pending (a timed op
 * whose GPU work runs while the sampled-out ops enqueued after it finish at once), at most
 * HOLD_MAX per communicator: past that the pending op stops holding the others, is written
 * when it finishes, late, and counted (cs_harvest_order_breaks; one log line at the first
 * and the total at exit). Other records go out as they finish.
 *
 * Termination signals (shim/init.c): the handler asks this thread, through a pipe
 * (write(2) and poll(2) are async-signal-safe), to write everything queued and the footer,
 * and waits for a byte on a second pipe, a bounded time. */
#include "dump_writer.h"
#include "flight.h"
#include "harvest.h"
#include "queue.h"
#include "ring_writer.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PENDING_MAX (1u << 22)
#define HOLD_MAX 1024 /* finished op records held behind one pending op of their communicator */
#define HOLD_COMMS 64 /* communicators with a pending op tracked in a pass */

struct cs_queue cs_rq; /* harvest.h */
bool cs_rq_ok;         /* set before recording starts; cleared at stop / fork */
static pthread_t th;
static bool th_running;
static _Atomic int stop_req;
static _Atomic uint64_t flush_req, flush_done;
static _Atomic unsigned stop_timeout_ms; /* cs_harvest_stop's bound for in-flight GPU work */

/* the final flush: FINAL_NONE, then FINAL_ASKED (by a signal handler), FINAL_DONE (the
 * footer is written, by this thread or by cs_harvest_stop) */
enum { FINAL_NONE,
       FINAL_ASKED,
       FINAL_DONE };
static _Atomic int final_state;
static _Atomic int th_live;       /* the thread runs and no one is stopping it */
static _Atomic long stopping_tid; /* the thread inside cs_harvest_stop */
static _Atomic long harvest_tid;  /* the harvest thread itself (abort() on it waits for no one) */
static int wake_fd[2] = {-1, -1}; /* signal handler -> harvest thread */
static int done_fd[2] = {-1, -1}; /* footer written -> signal handler */

/* the pending list, in queue order: a record not finished yet, or finished and held */
struct pending {
  struct cs_record r;
  bool done;   /* finished, waiting for an earlier op of its communicator */
  bool waived; /* pending, but no longer holds its communicator's later ops */
};
static struct pending *pend;
static size_t npend, cappend;
static _Atomic uint64_t order_breaks;

bool cs_record_push(const struct cs_record *r) { return cs_record_push_inline(r); }

static const struct cs_harvest_client *clients[CS_HARVEST_CLIENTS];
static size_t nclients;

bool cs_harvest_register(const struct cs_harvest_client *c) {
  if (nclients == CS_HARVEST_CLIENTS) return false;
  clients[nclients++] = c;
  return true;
}

/* Returns true when every client has finished the record (or given up on it). */
static bool try_complete(struct cs_record *r, bool final) {
  for (size_t i = 0; i < nclients; i++)
    if (clients[i]->complete && !clients[i]->complete(r, final)) return false;
  return true;
}

/* 1 started, 0 not (a client with a start event says not), -1 no client can tell */
static int gpu_started(const struct cs_record *r) {
  int v = -1;
  for (size_t i = 0; i < nclients; i++) {
    int s = clients[i]->started ? clients[i]->started(r) : -1;
    if (s == 1) return 1;
    if (s == 0) v = 0;
  }
  return v;
}

static void pend_add(const struct cs_record *r) {
  if (npend == cappend) {
    size_t cap = cappend ? cappend * 2 : 4096;
    struct pending *np = cap <= PENDING_MAX ? realloc(pend, cap * sizeof(*np)) : NULL;
    if (!np) {
      atomic_fetch_add(&cs_st.drops, 1);
      return;
    }
    pend = np;
    cappend = cap;
  }
  pend[npend].r = *r;
  pend[npend].done = pend[npend].waived = false;
  npend++;
}

uint64_t cs_harvest_order_breaks(void) { return atomic_load(&order_breaks); }

static void order_broken(uint64_t comm, uint64_t seq) {
  if (atomic_fetch_add(&order_breaks, 1) == 0)
    cs_log(CS_LOG_WARN, "harvest: comm %016llx seq %llu still pending behind %d finished ops: it will be written out of "
                        "seq order",
           (unsigned long long)comm, (unsigned long long)seq, HOLD_MAX);
}

static bool ordered(const struct cs_record *r) { return r->type == CS_REC_OP && r->seq != UINT64_MAX; }

/* Hang detection (COLLSCOPE_HANG_TIMEOUT): the oldest not-complete op of a communicator
 * that is older than the timeout gets one log line, a "hang" dump record and a CS_REC_HANG
 * ring record, once. Also publishes the pending figures to the stats ring. */
static struct { uint64_t comm, seq; } hang_seen[256];
static size_t nhang_seen;
static void hang_check(void) {
  int64_t now = cs_now_ns(CLOCK_REALTIME), oldest = 0;
  uint64_t npending = 0;
  for (size_t i = 0; i < npend; i++)
    if (pend[i].r.type == CS_REC_OP && pend[i].r.timing == CS_TIMING_PENDING) {
      npending++;
      if (!oldest || pend[i].r.enqueue_ns < oldest) oldest = pend[i].r.enqueue_ns;
    }
  cs_ring_status(npending, oldest, atomic_load(&cs_st.drops));
  int64_t tmo = (int64_t)cs_cfg.hang_timeout_s * 1000000000LL;
  if (!tmo || !oldest || now - oldest < tmo) return;
  for (size_t i = 0; i < npend && nhang_seen < 256; i++) {
    const struct cs_record *r = &pend[i].r;
    if (r->type != CS_REC_OP || r->timing != CS_TIMING_PENDING || r->seq == UINT64_MAX || now - r->enqueue_ns < tmo)
      continue;
    bool skip = false;
    for (size_t k = 0; k < nhang_seen && !skip; k++) skip = hang_seen[k].comm == r->comm_id && hang_seen[k].seq == r->seq;
    for (size_t j = 0; j < npend && !skip; j++)
      skip = pend[j].r.type == CS_REC_OP && pend[j].r.timing == CS_TIMING_PENDING && pend[j].r.comm_id == r->comm_id &&
             pend[j].r.seq < r->seq;
    if (skip) continue;
    hang_seen[nhang_seen].comm = r->comm_id;
    hang_seen[nhang_seen++].seq = r->seq;
    int started = gpu_started(r);
    cs_log(CS_LOG_WARN, "hang: %s seq %llu on comm %016llx (rank %d of %d) not complete after %.1f s "
                        "(COLLSCOPE_HANG_TIMEOUT=%u, GPU start %s)",
           r->op < CS_OP_COUNT ? cs_op_table[r->op].name : "op", (unsigned long long)r->seq,
           (unsigned long long)r->comm_id, r->comm_rank, r->comm_size, (double)(now - r->enqueue_ns) / 1e9,
           cs_cfg.hang_timeout_s, started > 0 ? "reached" : started == 0 ? "not reached"
                                                                         : "unknown");
    cs_dump_hang(r, now, started);
    cs_dump_flush();
    struct cs_record h = *r;
    h.type = CS_REC_HANG;
    h.start_ns = started; /* 1 reached, 0 not reached, -1 unknown (docs/rings.md) */
    h.end_ns = now;
    cs_ring_publish(&h);
    cs_ring_note_hang();
  }
}

/* extra records from the clients' passes (e.g. NCCL_NET link records): dump file and ring */
static void emit(const struct cs_record *r) {
  cs_dump_record(r);
  cs_ring_publish(r);
}

/* One pass: drain the queue, complete what can be completed, write it. */
static size_t harvest_pass(bool final) {
  struct cs_record r;
  size_t drained = 0;
  while (cs_queue_pop(&cs_rq, &r)) {
    pend_add(&r);
    drained++;
  }
  size_t done = 0, keep = 0;
  /* Work on one stream completes in order: once a record's end event is not ready, later
   * records of that stream are not either, so they are not queried in this pass (on a
   * real GPU each query of an unreached event is a driver call that contends with the
   * job's launches). */
  uint64_t blocked[64];
  size_t nblocked = 0;
  /* communicators whose earliest pending op (not waived) comes before: their finished ops
   * are held; at (where it sits now in pend) and held (how many) */
  struct {
    uint64_t comm;
    size_t at, held;
  } hold[HOLD_COMMS];
  size_t nhold = 0;
  for (size_t i = 0; i < npend; i++) {
    struct pending *e = &pend[i];
    if (!e->done) {
      bool skip = false;
      if (!final && e->r.timing == CS_TIMING_PENDING)
        for (size_t k = 0; k < nblocked && !skip; k++) skip = blocked[k] == e->r.stream;
      if (!skip && try_complete(&e->r, final)) e->done = true;
      if (!skip && !e->done && e->r.timing == CS_TIMING_PENDING && nblocked < 64) blocked[nblocked++] = e->r.stream;
    }
    size_t h = nhold;
    if (ordered(&e->r))
      for (h = 0; h < nhold && hold[h].comm != e->r.comm_id; h++) {
      }
    /* the bound: the pending op stops holding from the next pass on (this pass's held ops
     * then go out first, in order) */
    if (e->done && h < nhold && ++hold[h].held == HOLD_MAX + 1) {
      pend[hold[h].at].waived = true;
      order_broken(pend[hold[h].at].r.comm_id, pend[hold[h].at].r.seq);
    }
    if (e->done && h == nhold) {
      cs_dump_record(&e->r);
      cs_ring_publish(&e->r);
      for (size_t c = 0; c < nclients; c++)
        if (clients[c]->finished) clients[c]->finished(&e->r);
      done++;
      continue;
    }
    if (!e->done && !e->waived && ordered(&e->r) && h == nhold) {
      if (nhold < HOLD_COMMS) {
        hold[nhold].comm = e->r.comm_id;
        hold[nhold].at = keep;
        hold[nhold++].held = 0;
      } else { /* more communicators with pending ops than tracked: this one's later ops go as they finish */
        e->waived = true;
        order_broken(e->r.comm_id, e->r.seq);
      }
    }
    if (keep != i) pend[keep] = *e;
    keep++;
  }
  npend = keep;
  if (!final) hang_check();
  for (size_t c = 0; c < nclients; c++)
    if (clients[c]->pass) clients[c]->pass(final, emit);
  cs_dump_drops_sync();
  return drained + done;
}

/* Bounded time for in-flight GPU work, then everything is written with the footer. */
static void finish(unsigned timeout_ms, bool from_signal) {
  int64_t deadline = cs_now_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000LL;
  do {
    harvest_pass(false);
    if (npend == 0 && cs_queue_size_approx(&cs_rq) == 0) break;
    usleep(1000);
  } while (cs_now_ns(CLOCK_MONOTONIC) < deadline);
  harvest_pass(true);
  cs_flight_tick();                                        /* COLLSCOPE_RECORD=summary: a window asked for (an online finding's abort) */
  if (from_signal) cs_flight_trigger(CS_WIN_SIGNAL, NULL); /* the ring's detail */
  uint64_t breaks = atomic_load(&order_breaks);
  if (breaks)
    cs_log(CS_LOG_WARN, "harvest: %llu pending ops stopped holding their communicator's later ops (more than %d held): "
                        "written out of seq order",
           (unsigned long long)breaks, HOLD_MAX);
  cs_dump_footer();
  cs_dump_close();
  cs_flight_free(); /* logs the triggers that wrote no window */
  cs_ring_close(true);
  atomic_store(&final_state, FINAL_DONE);
  if (done_fd[1] >= 0) {
    char c = 1;
    if (write(done_fd[1], &c, 1) < 0) { /* the pipe is empty and its reader ours: cannot fail */
    }
  }
}

/* Sleep up to us microseconds, or until a signal handler writes to wake_fd. */
static void idle_wait(unsigned us) {
  if (wake_fd[0] < 0) {
    usleep(us);
    return;
  }
  struct pollfd p = {.fd = wake_fd[0], .events = POLLIN};
  struct timespec ts = {0, (long)us * 1000L};
  if (ppoll(&p, 1, &ts, NULL) > 0) {
    char drain[16];
    while (read(wake_fd[0], drain, sizeof drain) > 0) {
    }
  }
}

static void *harvest_main(void *arg) {
  (void)arg;
  atomic_store(&harvest_tid, (long)syscall(SYS_gettid));
  cs_ring_adopt(); /* this thread is the ring's one writer (opened by cs_harvest_start) */
  for (size_t c = 0; c < nclients; c++)
    if (clients[c]->thread_start) clients[c]->thread_start();
  int64_t last_flush = cs_now_ns(CLOCK_MONOTONIC);
  unsigned idle_us = 1000;
  while (!atomic_load(&stop_req)) {
    uint64_t want = atomic_load(&flush_req);
    harvest_pass(false);
    for (size_t c = 0; c < nclients; c++)
      if (clients[c]->tick) clients[c]->tick();
    cs_flight_tick();
    int64_t now = cs_now_ns(CLOCK_MONOTONIC);
    if (want != atomic_load(&flush_done) || now - last_flush >= (int64_t)cs_cfg.flush_ms * 1000000LL) {
      cs_dump_flush();
      last_flush = now;
      atomic_store(&flush_done, want);
    }
    /* Wake as rarely as the queue allows: every wake-up preempts a job thread on a
     * busy core. Back off to 10 ms while the queue is under a quarter full (at 500k
     * ops/s, 10 ms is 5,000 of its 65,536 records); 1 ms when it fills up. */
    if (cs_queue_size_approx(&cs_rq) > cs_cfg.queue_cap / 4)
      idle_us = 1000;
    else if (idle_us < 10000)
      idle_us *= 2;
    idle_wait(idle_us);
    if (atomic_load(&final_state) == FINAL_ASKED) {
      finish(CS_TERM_PENDING_MS, true);
      /* the footer is written: stay joinable, idle, until cs_harvest_stop (if ever) */
      while (!atomic_load(&stop_req)) idle_wait(100000);
      break;
    }
  }
  /* cs_harvest_stop: the last records, the final pass and the footer on this thread too, so
   * every record is finished by the same thread (clients that read its clock, e.g. the
   * health sampler's stamps, see one clock) */
  if (atomic_load(&final_state) != FINAL_DONE) finish(atomic_load(&stop_timeout_ms), false);
  return NULL;
}

static void close_pipes(void) {
  for (int i = 0; i < 2; i++) {
    if (wake_fd[i] >= 0) close(wake_fd[i]);
    if (done_fd[i] >= 0) close(done_fd[i]);
    wake_fd[i] = done_fd[i] = -1;
  }
}

bool cs_harvest_final_from_signal(unsigned timeout_ms) {
  long tid = (long)syscall(SYS_gettid);
  int expect = FINAL_NONE;
  if (atomic_load(&th_live) && atomic_compare_exchange_strong(&final_state, &expect, FINAL_ASKED)) {
    char c = 1;
    if (write(wake_fd[1], &c, 1) < 0) { /* full: the thread is being woken anyway */
    }
  }
  /* nothing to wait for: no thread, or this very thread is the one finishing */
  if (done_fd[0] < 0 || atomic_load(&stopping_tid) == tid || atomic_load(&harvest_tid) == tid ||
      (atomic_load(&final_state) == FINAL_NONE && !atomic_load(&stopping_tid)))
    return atomic_load(&final_state) == FINAL_DONE;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (atomic_load(&final_state) == FINAL_DONE) return true;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long spent = (t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L;
    if (spent >= (long)timeout_ms) return false;
    struct pollfd p = {.fd = done_fd[0], .events = POLLIN};
    if (poll(&p, 1, (int)((long)timeout_ms - spent)) < 0 && errno != EINTR) return false;
  }
}

/* The dump file and the stats ring, each on its own: with COLLSCOPE_DIR=none or an unusable
 * COLLSCOPE_DIR the ring still records the process (collscope top, exporter, salvage); with
 * neither the process runs in pass-through. Without a dump the online exchange is off: its
 * rendezvous file lives in COLLSCOPE_DIR (hooks/online_setup.c). */
static bool dumping; /* a dump file is open (the ring's `record` says so to `collscope snapshot`) */
static bool open_outputs(void) {
  bool dump = !cs_cfg.dumps_off && cs_dump_open();
  bool ring = cs_ring_open();
  dumping = dump;
  if (dump) return true;
  if (!ring) { /* (an unusable directory: the dump writer said so) */
    if (cs_cfg.dumps_off) cs_log(CS_LOG_WARN, "COLLSCOPE_DIR=none and no stats ring: recording off, job runs untouched");
    return false;
  }
  bool online = cs_cfg.online;
  cs_cfg.online = false;
  cs_log(cs_cfg.dumps_off ? CS_LOG_INFO : CS_LOG_WARN,
         "dumps off (%s), stats ring on: %s records this process for collscope top, exporter and salvage%s",
         cs_cfg.dumps_off ? "COLLSCOPE_DIR=none" : "COLLSCOPE_DIR unusable", cs_ring_path(),
         online ? "; online exchange off (it needs COLLSCOPE_DIR)" : "");
  return true;
}

bool cs_harvest_start(void) {
  if (!cs_rq_ok) {
    if (!cs_queue_init(&cs_rq, cs_cfg.queue_cap, sizeof(struct cs_record))) {
      cs_log(CS_LOG_WARN, "cannot allocate the record queue; recording off");
      return false;
    }
    cs_rq_ok = true;
  }
  if (!open_outputs()) return false;
  if (cs_cfg.record_summary && !cs_flight_on()) cs_flight_init(cs_cfg.flight_ops, cs_cfg.flight_after, cs_cfg.summary_s);
  cs_ring_set_record(!dumping ? CS_RING_REC_NONE : cs_flight_on() ? CS_RING_REC_SUMMARY
                                                                  : CS_RING_REC_FULL);
  atomic_store(&stop_req, 0);
  atomic_store(&final_state, FINAL_NONE);
  if (wake_fd[0] < 0 && (pipe2(wake_fd, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(done_fd, O_CLOEXEC | O_NONBLOCK) != 0)) {
    cs_log(CS_LOG_WARN, "cannot create the signal pipes: %s; a termination signal will not flush the dump",
           strerror(errno));
    close_pipes();
  }
  if (cs_thread_start(&th, harvest_main, false, "collscope") != 0) {
    cs_log(CS_LOG_WARN, "cannot start the harvest thread; recording off");
    cs_dump_close();
    cs_ring_close(true);
    return false;
  }
  th_running = true;
  atomic_store(&th_live, wake_fd[0] >= 0);
  return true;
}

void cs_flush(unsigned timeout_ms) {
  if (!th_running || atomic_load(&final_state) != FINAL_NONE) return;
  uint64_t ticket = atomic_fetch_add(&flush_req, 1) + 1;
  for (unsigned waited = 0; waited < timeout_ms * 10; waited++) {
    if (atomic_load(&flush_done) >= ticket) return;
    usleep(100);
  }
}

void cs_harvest_stop(unsigned timeout_ms) {
  if (!th_running) return;
  atomic_store(&stopping_tid, (long)syscall(SYS_gettid));
  atomic_store(&th_live, 0);
  atomic_store(&stop_timeout_ms, timeout_ms);
  atomic_store(&stop_req, 1);
  if (wake_fd[1] >= 0) {
    char c = 1;
    if (write(wake_fd[1], &c, 1) < 0) { /* full: the thread is being woken anyway */
    }
  }
  pthread_join(th, NULL); /* the thread writes what is left and the footer (harvest_main) */
  th_running = false;
  if (atomic_load(&final_state) == FINAL_DONE) return;
  cs_ring_adopt(); /* not reached while the thread finishes: kept for a thread that could not */
  finish(timeout_ms, false);
}

void cs_harvest_atfork_child(void) {
  /* The harvest thread does not exist in the child; the queue may hold the parent's
   * half-written cells. Start over with fresh state (the old memory is leaked on
   * purpose: another thread of the parent may have been inside it). */
  th_running = false;
  atomic_store(&th_live, 0);
  atomic_store(&stopping_tid, 0);
  atomic_store(&harvest_tid, 0);
  atomic_store(&final_state, FINAL_NONE);
  close_pipes(); /* shared with the parent: its harvest thread must not hear this process */
  cs_rq_ok = false;
  npend = 0;
  cappend = 0;
  pend = NULL;
  nhang_seen = 0;
  atomic_store(&order_breaks, 0);
  cs_ring_atfork_child();
  atomic_store(&flush_req, 0);
  atomic_store(&flush_done, 0);
  cs_dump_atfork_child();
  cs_flight_atfork_child();
}
