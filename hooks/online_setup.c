/* hooks/online_setup.c: the online exchange's set-up (protocol in online_exchange.h, step 1), in two
 * halves that never wait on each other:
 *  - on the job's thread (cs_online_comm_created): which communicator is the world, the
 *    feed, and the start of collscope's online thread; no NCCL call and no wait;
 *  - on collscope's online thread (cs_online_own_setup): collscope's own communicator,
 *    from an ncclUniqueId that world rank 0 makes and leaves in COLLSCOPE_DIR, created
 *    non-blocking, polled, and aborted when it is not complete within
 *    COLLSCOPE_ONLINE_TIMEOUT or at shutdown; then its stream and buffers.
 * The job's communicators are never called, so a rank without collscope (or with the
 * exchange off) costs the others nothing but a line at the end. Every failure logs one
 * line and turns the feature off. */
#include "online_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_calls.h"

/* ---- the rendezvous file: world rank 0's ncclUniqueId for collscope's communicator ----
 * <COLLSCOPE_DIR>/.collscope-online-<world communicator id>.id, written whole under a
 * temporary name and renamed, so a reader sees all of it or nothing. The world
 * communicator's id is the hash of the job's own ncclUniqueId (shim/nccl_lifecycle.c):
 * the same on every rank, new in every run, so a file a former run left is never read.
 * Rank 0 removes the file once its init completes (every rank has connected by then). */
#define ID_MAGIC "CSONLID1"
struct id_file {
  char magic[8];
  uint64_t world; /* the world communicator's id, again */
  ncclUniqueId id;
};

static char id_path[4200];

static bool id_path_set(void) {
  int n = snprintf(id_path, sizeof id_path, "%s/.collscope-online-%016llx.id", cs_cfg.dir,
                   (unsigned long long)cs_on.parent_id);
  return n > 0 && (size_t)n < sizeof id_path;
}

static bool id_publish(const ncclUniqueId *id) {
  struct id_file f;
  memset(&f, 0, sizeof f);
  memcpy(f.magic, ID_MAGIC, sizeof f.magic);
  f.world = cs_on.parent_id;
  f.id = *id;
  char tmp[sizeof id_path + 16];
  if (snprintf(tmp, sizeof tmp, "%s.%d", id_path, (int)getpid()) >= (int)sizeof tmp) return false;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = write(fd, &f, sizeof f) == (ssize_t)sizeof f;
  ok = close(fd) == 0 && ok;
  if (ok && rename(tmp, id_path) == 0) return true;
  unlink(tmp);
  return false;
}

/* 1: *id read; 0: no file yet; -1: a file that is not a rendezvous file of this job */
static int id_read(ncclUniqueId *id) {
  int fd = open(id_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  struct id_file f;
  char extra;
  ssize_t n = read(fd, &f, sizeof f);
  bool longer = n == (ssize_t)sizeof f && read(fd, &extra, 1) != 0;
  close(fd);
  if (n != (ssize_t)sizeof f || longer || memcmp(f.magic, ID_MAGIC, sizeof f.magic) != 0 ||
      f.world != cs_on.parent_id)
    return -1;
  *id = f.id;
  return 1;
}

/* ---- collscope's online thread ---- */

static bool alloc_buffers(void) {
  void *h = NULL;
  if (cs_drv.cuStreamCreate(&cs_on.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return false;
  if (cs_drvx.cuMemAlloc(&cs_on.dwire, CS_ONLINE_WIRE_BYTES) != CUDA_SUCCESS ||
      cs_drvx.cuMemAllocHost(&h, CS_ONLINE_WIRE_BYTES) != CUDA_SUCCESS)
    return false; /* what was allocated stays: freeing device memory synchronizes the device */
  cs_on.hwire = h;
  return true;
}

/* Why the set-up stops waiting: NULL while it may go on (then it naps). */
static const char *setup_wait(int64_t deadline, unsigned *nap) {
  if (atomic_load(&cs_on.stop)) return "at shutdown";
  if (cs_now_ns(CLOCK_MONOTONIC) > deadline) return "after COLLSCOPE_ONLINE_TIMEOUT";
  cs_online_sleep_ms(*nap);
  if (*nap < 20) *nap *= 2;
  return NULL;
}

/* when: "at shutdown", "after COLLSCOPE_ONLINE_TIMEOUT", "during set-up" (a failure) */
static void setup_off(int64_t t0, const char *when, const char *what) {
  double s = (double)(cs_now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
  cs_log(CS_LOG_WARN, "online exchange off: %s (%.1f s) %s", when, s, what);
  cs_online_off();
}

/* why collscope's communicator is not complete, from where this rank waited */
#define NOT_JOINED "collscope's communicator was not complete (%s): a rank runs without collscope, or with " \
                   "COLLSCOPE_ONLINE=0 or COLLSCOPE_DISABLE=1, or COLLSCOPE_DIR is not shared between the hosts"
static void not_joined(int64_t t0, const char *when, const char *waiting) {
  char what[sizeof id_path + 320];
  snprintf(what, sizeof what, NOT_JOINED, waiting);
  setup_off(t0, when, what);
}

/* Wait for the non-blocking init of collscope's communicator; abort it when it does not
 * complete. This thread is the only one that ever calls NCCL on it. */
static bool own_ready(ncclComm_t own, int64_t t0, int64_t deadline) {
  unsigned nap = 1;
  for (;;) {
    ncclResult_t st = ncclInProgress;
    if (CS_NCCL_REAL(ncclCommGetAsyncError)(own, &st) != ncclSuccess) st = ncclInternalError;
    if (st == ncclSuccess) return true;
    if (st != ncclInProgress) {
      char what[96];
      snprintf(what, sizeof what, "its init failed (%d): another rank gave up on it or left", (int)st);
      CS_NCCL_REAL(ncclCommAbort)
      (own);
      not_joined(t0, "during set-up", what);
      return false;
    }
    const char *when = setup_wait(deadline, &nap);
    if (when) {
      CS_NCCL_REAL(ncclCommAbort)
      (own);
      not_joined(t0, when, "the other ranks had not all joined it");
      return false;
    }
  }
}

static bool own_setup(void) {
  int64_t t0 = cs_now_ns(CLOCK_MONOTONIC);
  int64_t deadline = t0 + (int64_t)cs_cfg.online_timeout_s * 1000000000LL;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (!id_path_set()) {
    setup_off(t0, "during set-up", "(COLLSCOPE_DIR is too long for the rendezvous file's name)");
    return false;
  }
  if (cs_on.rank == 0) {
    ncclResult_t r = CS_NCCL_REAL(ncclGetUniqueId)(&id);
    if (r != ncclSuccess || !id_publish(&id)) {
      char what[sizeof id_path + 96];
      snprintf(what, sizeof what, "ncclGetUniqueId (%d) or writing %s failed", (int)r, id_path);
      setup_off(t0, "during set-up", what);
      return false;
    }
  } else {
    /* the file may sit on a shared file system that every rank polls: its reads back off
     * from 1 ms to 1 s (where rank 0 never writes it, 10,000 ranks read it 10,000 times a
     * second at most), while the stop checks stay at 20 ms (the job's thread joins this
     * one at shutdown) */
    unsigned nap = 1, read_gap_ms = 1;
    int64_t next_read = t0;
    for (;;) {
      int got = 0;
      if (cs_now_ns(CLOCK_MONOTONIC) >= next_read) {
        got = id_read(&id);
        if (got == 1) break;
        next_read = cs_now_ns(CLOCK_MONOTONIC) + (int64_t)read_gap_ms * 1000000LL;
        if (read_gap_ms < 1000) read_gap_ms *= 2;
      }
      char what[sizeof id_path + 80];
      if (got < 0) {
        snprintf(what, sizeof what, "%s is not world rank 0's rendezvous file for this job", id_path);
        setup_off(t0, "during set-up", what);
        return false;
      }
      const char *when = setup_wait(deadline, &nap);
      if (when) {
        snprintf(what, sizeof what, "world rank 0's rendezvous file %s had not appeared", id_path);
        not_joined(t0, when, what);
        return false;
      }
    }
  }
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.minCTAs = 1;
  cfg.maxCTAs = 1;
  cfg.commName = "collscope-online";
  ncclComm_t own = NULL;
  ncclResult_t r = CS_NCCL_REAL(ncclCommInitRankConfig)(&own, cs_on.n, id, cs_on.rank, &cfg);
  bool ready = false;
  if ((r == ncclSuccess || r == ncclInProgress) && own)
    ready = own_ready(own, t0, deadline);
  else
    setup_off(t0, "during set-up", "ncclCommInitRankConfig of collscope's communicator failed");
  if (cs_on.rank == 0) unlink(id_path); /* ready: every rank has connected; or given up */
  if (!ready) return false;
  int joined = 0;
  if (CS_NCCL_REAL(ncclCommCount)(own, &joined) != ncclSuccess || joined != cs_on.n || !alloc_buffers()) {
    CS_NCCL_REAL(ncclCommAbort)
    (own);
    setup_off(t0, "during set-up", "collscope's communicator has the wrong size, or its buffers cannot be allocated");
    return false;
  }
  cs_on.own = own;
  cs_log(CS_LOG_INFO, "online: exchange every %u collectives of communicator %016llx (%d ranks); collscope's "
                      "communicator ready after %.1f ms on its own thread",
         cs_on.every, (unsigned long long)cs_on.parent_id, cs_on.n, (double)(cs_now_ns(CLOCK_MONOTONIC) - t0) / 1e6);
  return true;
}

/* The first thing collscope's online thread does (hooks/online_exchange.c, exchange_main): true
 * when collscope's communicator and buffers are ready; false (one line logged, the
 * feature off) when not. */
bool cs_online_own_setup(void) {
  cs_tls.depth++; /* whatever NCCL calls back meanwhile passes straight through */
  bool ok = own_setup();
  cs_tls.depth--;
  return ok;
}

/* ---- the job's thread ---- */

/* The world communicator: the same one on every rank, whatever each rank's own state, so
 * that the exchanges count the same collectives everywhere. */
static bool is_world(struct cs_comm *info) {
  if (!cs_cfg.online || atomic_load(&cs_on.state) != ON_UNSET) return false;
  if (cs_cfg.world_size < 2 || cs_cfg.rank < 0 || info->size != cs_cfg.world_size || info->rank != cs_cfg.rank)
    return false;
  if (cs_tls.group_depth > 0) {
    cs_log_once(CS_LOG_INFO, "online: a world-sized communicator created inside a group is not used for the exchange");
    return false;
  }
  /* a non-blocking one may not be ready when the job's next call is: its size and rank
   * would need a wait; every rank uses the same config, so all skip it alike */
  if (info->nonblocking) {
    cs_log_once(CS_LOG_INFO, "online: non-blocking world-sized communicators are not used for the exchange");
    return false;
  }
  /* Only the main thread's communicators: when several threads create world-sized
   * communicators at once, which one comes first differs between processes, and ranks
   * counting different communicators would post different exchanges. */
  if (gettid() != getpid()) {
    cs_log_once(CS_LOG_INFO, "online: world-sized communicators created off the main thread are not used for the exchange");
    return false;
  }
  int expect = ON_UNSET;
  return atomic_compare_exchange_strong(&cs_on.state, &expect, ON_SETUP);
}

/* A rank whose recording is off takes no part: it never joins collscope's communicator,
 * and the others give up on it in the background (nothing here waits). */
void cs_online_comm_unrecorded(void *comm, struct cs_comm *info) {
  (void)comm;
  if (is_world(info)) {
    cs_log(CS_LOG_WARN, "online exchange off: recording is off on this rank");
    cs_online_off();
  }
}

void cs_online_comm_created(void *comm, struct cs_comm *info) {
  int64_t t0 = cs_now_ns(CLOCK_MONOTONIC);
  if (!is_world(info)) return;
  const char *why = NULL;
  CUcontext ctx = NULL;
  if (!cs_driver_xchg_load() || !cs_nccl.resolve() || !CS_NCCL_REAL(ncclGetUniqueId) ||
      !CS_NCCL_REAL(ncclCommInitRankConfig) || !CS_NCCL_REAL(ncclAllReduce) || !CS_NCCL_REAL(ncclCommGetAsyncError) ||
      !CS_NCCL_REAL(ncclCommAbort) || !CS_NCCL_REAL(ncclCommDestroy) || !CS_NCCL_REAL(ncclCommCount))
    why = "CUDA driver or NCCL entry points missing";
  else if (cs_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
    why = "no current CUDA context on the thread that created the world communicator";
  if (why) {
    cs_log(CS_LOG_WARN, "online exchange off: %s", why);
    cs_online_off();
    return;
  }
  cs_on.parent = comm;
  cs_on.parent_id = info->id;
  cs_on.rank = info->rank;
  cs_on.n = info->size;
  cs_on.every = cs_cfg.online_every;
  cs_on.stride = cs_on.every / 16 ? cs_on.every / 16 : 1;
  /* rounded up to a multiple of the CUDA-event sample N (hooks/timing.c) when that at most
   * doubles it: then each fed instance is timed on the event path, small ones too (a
   * shorter stride keeps its value: small instances fed are those whose seq is a multiple
   * of both, the same on every rank) */
  uint64_t sample = cs_cfg.event_sample_mask + 1;
  if (cs_cfg.event_sample_bytes && sample > 1 && sample <= (1u << 16) && 2 * (uint64_t)cs_on.stride >= sample)
    cs_on.stride = (unsigned)((cs_on.stride + sample - 1) / sample * sample);
  cs_on.ctx = ctx;
  cs_on.feed = calloc(FEED_CAP, sizeof *cs_on.feed);
  cs_on.st = cs_online_rank_new(cs_on.rank, cs_on.n, cs_cfg.host, NULL);
  /* counting starts now, on every rank alike; the thread runs the exchanges due once
   * collscope's communicator is ready */
  cs_online_set_state(ON_RUNNING);
  if (!cs_on.feed || !cs_on.st || !cs_online_start_thread()) {
    cs_log(CS_LOG_WARN, "online exchange off: cannot allocate its feed or start its thread");
    cs_online_off();
    return;
  }
  cs_log(CS_LOG_INFO, "online: set-up on the job's thread took %lld us; collscope's communicator is created on "
                      "collscope's thread",
         (long long)((cs_now_ns(CLOCK_MONOTONIC) - t0) / 1000));
}
