/* stats/flight.c: the flight recorder of COLLSCOPE_RECORD=summary (stats/flight.h,
 * docs/always-on.md): a ring of the last op records (allocated once), and the windows of full
 * detail written around a failed op, a hang, an online finding, a termination signal, the
 * trigger file, a process whose records stopped or the local trigger's departure of a
 * collective's GPU durations from their baseline (stats/flight_local.c). Op n of the process sits in slot n mod capacity; `written` is the first op
 * not yet on the file, so overlapping windows never write an op twice. */
#include "flight.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include "collscope/schema.h"
#include "dump_writer.h"
#include "flight_local.h"
#include "ring_writer.h"
#include "summary.h"

static struct cs_record *ring;
static size_t cap, after_max;
static uint64_t nops, written, after_left, nwindows, nwritten;
static _Atomic int requested;
static int64_t last_check_ns, trigger_mtime_ns;
static bool trigger_seen;    /* trigger_mtime_ns holds the file's first state (-1: absent) */
static int64_t last_op_mono; /* host time of the last record (0: none since the last idle window) */
/* The bound on disk: windows of failed ops, findings and requests take a token; a token comes
 * back every WINDOW_REFILL_S of the records' time, at most WINDOW_BURST held (hangs and
 * signals end a process's story and always get theirs). A trigger without a token, or one
 * inside the window still open, writes nothing more: counted, logged at the end. */
#define WINDOW_BURST 8
#define WINDOW_REFILL_S 3600
static double tokens = WINDOW_BURST;
static int64_t tokens_ns;
static uint64_t suppressed;
static uint64_t snap_answered; /* the stats ring's snap_asked last answered */
static uint64_t nlocal;        /* local trigger's departures */

const char *cs_flight_reason_name(int why) {
  switch (why) {
  case CS_WIN_FAILED: return "failed";
  case CS_WIN_HANG: return "hang";
  case CS_WIN_FINDING: return "finding";
  case CS_WIN_SIGNAL: return "signal";
  case CS_WIN_REQUEST: return "request";
  case CS_WIN_IDLE: return "idle";
  case CS_WIN_SNAPSHOT: return "snapshot";
  case CS_WIN_LOCAL: return "local";
  default: return "unknown";
  }
}

bool cs_flight_init(size_t ring_ops, size_t after_ops, unsigned summary_s) {
  cs_flight_free();
  cap = ring_ops ? ring_ops : 1;
  ring = calloc(cap, sizeof *ring);
  if (!ring || !cs_summary_init(summary_s)) {
    cs_log(CS_LOG_WARN, "COLLSCOPE_RECORD=summary off: cannot allocate the flight ring (%zu ops) and the summaries: "
                        "every op is written whole",
           cap);
    cs_flight_free();
    return false;
  }
  after_max = after_ops;
  nops = written = after_left = nwindows = nwritten = suppressed = 0;
  last_op_mono = 0;
  tokens = WINDOW_BURST;
  tokens_ns = 0;
  trigger_seen = false;
  nlocal = 0;
  cs_local_reset();
  return true;
}

bool cs_flight_on(void) { return ring != NULL; }

size_t cs_flight_mem(void) { return ring ? cap * sizeof *ring + cs_summary_mem() + cs_local_mem() : 0; }

void cs_flight_free(void) {
  if (suppressed)
    cs_log(CS_LOG_WARN, "flight recorder: %llu triggers wrote no window of their own (inside an open window, or past "
                        "the bound of %d windows, then one an hour)",
           (unsigned long long)suppressed, WINDOW_BURST);
  suppressed = 0;
  free(ring);
  ring = NULL;
  cs_summary_free();
}

uint64_t cs_flight_windows(void) { return nwindows; }
uint64_t cs_flight_ops_written(void) { return nwritten; }
uint64_t cs_flight_local_windows(void) { return nlocal; }

static void write_op(uint64_t n) {
  cs_dump_op_line(&ring[n % cap]);
  nwritten++;
}

static bool take_token(enum cs_flight_reason why, const struct cs_record *r) {
  if (why == CS_WIN_HANG || why == CS_WIN_SIGNAL) return true;
  if (after_left) return false; /* the open window holds it */
  int64_t now = r ? r->enqueue_ns : cs_now_ns(CLOCK_REALTIME);
  if (tokens_ns && now > tokens_ns) tokens += (double)(now - tokens_ns) / (WINDOW_REFILL_S * 1e9);
  if (tokens > WINDOW_BURST) tokens = WINDOW_BURST;
  if (!tokens_ns || now > tokens_ns) tokens_ns = now;
  if (tokens < 1) return false;
  tokens -= 1;
  return true;
}

uint64_t cs_flight_suppressed(void) { return suppressed; }

void cs_flight_trigger(enum cs_flight_reason why, const struct cs_record *r) {
  if (!ring) return;
  if (!take_token(why, r)) {
    suppressed++;
    return;
  }
  uint64_t from = nops > cap ? nops - cap : 0;
  if (written > from) from = written;
  cs_summary_flush(); /* the open interval's counts reach the file with the detail */
  cs_dump_window_line(why, r, nops - from, after_max);
  nwindows++;
  for (uint64_t n = from; n < nops; n++) write_op(n);
  written = nops;
  after_left = after_max;
}

static char *trigger_path(char *path, size_t n) {
  return snprintf(path, n, "%s/collscope-flight", cs_cfg.dir) < (int)n ? path : NULL;
}

static int64_t trigger_mtime(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec : -1;
}

/* COLLSCOPE_FLIGHT_LOCAL=job: the trigger file's modification time set now, so every process
 * writing to this directory opens a window at its next look (this one's own look sees it as
 * seen); a file that is not this user's regular file is left alone */
static void touch_trigger(void) {
  char path[4096];
  if (cs_cfg.dumps_off || !trigger_path(path, sizeof path)) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    cs_log(CS_LOG_INFO, "flight recorder: cannot touch %s: the local window stays this process's", path);
    return;
  }
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) futimens(fd, NULL);
  close(fd);
  if (trigger_seen) trigger_mtime_ns = trigger_mtime(path);
}

static void local_window(const struct cs_record *r, struct cs_local_change *c) {
  c->pending = false;
  nlocal++;
  uint64_t before = nwindows;
  cs_flight_trigger(CS_WIN_LOCAL, r);
  cs_log(CS_LOG_INFO, "flight recorder: local trigger: %s of %llu bytes on comm %016llx seq %llu: GPU time %.1f us (%s of 8), "
                      "%s the baseline's %.1f us%s",
         r->op < CS_OP_COUNT ? cs_op_table[r->op].name : "?", (unsigned long long)r->bytes,
         (unsigned long long)r->comm_id, (unsigned long long)r->seq, c->recent_ns / 1e3, c->longer ? "least" : "mean",
         c->longer ? "over" : "under",
         c->base_ns / 1e3, nwindows > before ? "" : " (no window of its own)");
  if (cs_cfg.flight_local == 2) touch_trigger();
}

void cs_flight_op(const struct cs_record *r) {
  if (!ring) {
    cs_dump_op_line(r);
    return;
  }
  if (!cs_summary_add(r)) cs_dump_op_line(r); /* no summary tables: written whole */
  ring[nops % cap] = *r;
  nops++;
  last_op_mono = cs_now_ns(CLOCK_MONOTONIC);
  if (after_left) { /* an open window */
    after_left--;
    write_op(nops - 1);
    written = nops;
  }
  if (r->type != CS_REC_OP) return;
  if (r->status != 0) cs_flight_trigger(CS_WIN_FAILED, r);
  if (cs_local_fired.pending) local_window(r, &cs_local_fired);
}

void cs_flight_atfork_child(void) {
  nops = written = after_left = nwindows = nwritten = suppressed = 0;
  last_op_mono = 0;
  atomic_store(&requested, 0);
  snap_answered = 0; /* the child has no ring of its own (stats/ring_writer.c) */
  nlocal = 0;
  cs_local_reset();
  cs_summary_reset();
}

void cs_flight_request(enum cs_flight_reason why) { atomic_store_explicit(&requested, (int)why, memory_order_release); }

/* `collscope snapshot` (include/collscope/ring.h "Requests"): one load of the ring's header
 * a loop; a changed value is one request whatever it changed by */
static void snapshot_poll(void) {
  uint64_t asked = cs_ring_snap_asked();
  if (asked == snap_answered) return;
  snap_answered = asked;
  uint32_t result = CS_RING_SNAP_NO_DUMP;
  if (cs_cfg.dumps_off) {
    /* COLLSCOPE_DIR=none: nowhere to write */
  } else if (ring) {
    uint64_t before = nwindows;
    cs_flight_trigger(CS_WIN_SNAPSHOT, NULL);
    result = nwindows > before ? CS_RING_SNAP_WINDOW : CS_RING_SNAP_SUPPRESSED;
  } else {
    result = CS_RING_SNAP_FLUSHED; /* the full recording: every op goes to the file */
  }
  cs_dump_flush(); /* on the file before the answer */
  cs_ring_snap_answer(asked, result);
}

static void trigger_look(void);

void cs_flight_tick(void) {
  snapshot_poll();
  if (!ring) return;
  int why = atomic_exchange_explicit(&requested, 0, memory_order_acquire);
  if (why) cs_flight_trigger((enum cs_flight_reason)why, NULL);
  int64_t now = cs_now_ns(CLOCK_MONOTONIC);
  if (last_op_mono && cs_cfg.hang_timeout_s && now - last_op_mono >= (int64_t)cs_cfg.hang_timeout_s * 1000000000LL) {
    last_op_mono = 0; /* once, until records flow again */
    cs_flight_trigger(CS_WIN_IDLE, NULL);
    cs_dump_flush();
  }
  if (now - last_check_ns < 1000000000LL) return;
  last_check_ns = now;
  trigger_look();
}

void cs_flight_closing(void) {
  if (ring && trigger_seen) trigger_look();
}

static void trigger_look(void) {
  char path[4096];
  if (!trigger_path(path, sizeof path)) return;
  int64_t m = trigger_mtime(path);
  if (!trigger_seen) { /* the first look: a file already there is no request */
    trigger_seen = true;
    trigger_mtime_ns = m;
    return;
  }
  if (m >= 0 && m != trigger_mtime_ns) {
    trigger_mtime_ns = m;
    cs_flight_trigger(CS_WIN_REQUEST, NULL);
  }
}
