/* stats/ring_writer.c: the shim's writer of the shared-memory stats ring (stats/ring_writer.h;
 * protocol in include/collscope/ring.h, names and liveness checks shared with the reader in
 * analysis/ring_reader.c). */
#include "stats/ring_writer.h"
#include "stats/ring_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static struct cs_ring_hdr *W;
static size_t wlen;
static char wpath[512];
static dev_t wdev;
static ino_t wino;
static pthread_t owner;
static _Atomic int owner_set;
static uint64_t whead;
static struct cs_ring_stats_writer wstats;

const char *cs_ring_path(void) { return W ? wpath : ""; }

/* A segment already under a ring name: reclaim it when its writer is dead (pid gone, a
 * zombie, or the pid reused by a process with another start time). A name that is not a
 * complete ring of ours is never taken: the caller then uses its -p<pid> name. Two
 * creators may judge the same stale ring at once: the winner moves it aside and checks that
 * what it moved is what it judged, so a ring that replaced it in between is put back.
 * Returns true when the name is free now. */
static bool reclaim_stale(const char *path) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  struct stat st;
  struct cs_ring_hdr h;
  bool dead = false;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
      st.st_size >= (off_t)sizeof h && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && h.magic == CS_RING_MAGIC &&
      atomic_load_explicit(&h.init, memory_order_relaxed) == CS_RING_INIT_MAGIC)
    dead = cs_ring_writer_dead(&h);
  close(fd);
  if (!dead) return false;
  char aside[640];
  snprintf(aside, sizeof aside, "%s/.collscope-%u-reclaim-p%d.tmp", cs_ring_dir(), (unsigned)geteuid(), (int)getpid());
  if (rename(path, aside) != 0) return errno == ENOENT;
  struct stat moved;
  if (lstat(aside, &moved) == 0 && moved.st_dev == st.st_dev && moved.st_ino == st.st_ino) {
    unlink(aside);
    cs_log(CS_LOG_WARN, "reclaimed stale stats ring %s (writer pid %d is gone)", path, (int)h.pid);
    return true;
  }
  if (link(aside, path) != 0)
    cs_log(CS_LOG_WARN, "stats ring %s: a live ring took the name while a stale one was reclaimed and could "
                        "not be put back (%s); that process has no live view",
           path, strerror(errno));
  unlink(aside);
  return false;
}

/* The whole ring, built in a private temporary: header first, `init` last. */
static struct cs_ring_hdr *build(const char *tmp, uint64_t cap, size_t len) {
  int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST && unlink(tmp) == 0) /* left by a dead process that had our pid */
    fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return NULL;
  struct stat st;
  void *p = MAP_FAILED;
  if (ftruncate(fd, (off_t)len) == 0 && fstat(fd, &st) == 0)
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    unlink(tmp);
    errno = e;
    return NULL;
  }
  wdev = st.st_dev;
  wino = st.st_ino;
  struct cs_ring_hdr *h = p; /* zero-filled by ftruncate */
  h->magic = CS_RING_MAGIC;
  h->version = CS_RING_VERSION;
  h->rec_size = sizeof(struct cs_record);
  h->capacity = cap;
  h->stats_size = sizeof(struct cs_ring_stats);
  h->pid = getpid();
  char state;
  if (!cs_ring_proc_stat(getpid(), &state, &h->start_time)) h->start_time = 0;
  h->rank = cs_cfg.rank;
  h->local_rank = cs_cfg.local_rank;
  h->world_size = cs_cfg.world_size;
  h->device = -1;
  h->uid = (uint32_t)geteuid();
  h->created_ns = cs_now_ns(CLOCK_REALTIME);
  snprintf(h->host, sizeof h->host, "%.127s", cs_cfg.host);
  snprintf(h->job, sizeof h->job, "%.127s", cs_cfg.job);
  atomic_store_explicit(&h->init, CS_RING_INIT_MAGIC, memory_order_release); /* last */
  return h;
}

/* Give the finished temporary its ring name: the rank's name, reclaimed when its writer is
 * dead, else the rank's name with -p<pid>. */
static bool publish_name(const char *tmp, const char *base) {
  for (int attempt = 0; attempt < 2; attempt++) {
    if (link(tmp, base) == 0) {
      snprintf(wpath, sizeof wpath, "%s", base);
      return true;
    }
    if (errno != EEXIST || !reclaim_stale(base)) break;
  }
  size_t bl = strlen(base) - strlen(".ring");
  snprintf(wpath, sizeof wpath, "%.*s-p%d.ring", (int)bl, base, (int)getpid());
  for (int attempt = 0; attempt < 2; attempt++) {
    if (link(tmp, wpath) == 0) return true;
    if (errno != EEXIST) return rename(tmp, wpath) == 0; /* no hard links here: our pid's name is ours */
    if (!reclaim_stale(wpath)) break;
  }
  return false;
}

bool cs_ring_open(void) {
  if (W || cs_cfg.ring_cap == 0) return W != NULL;
  uint64_t cap = 1;
  while (cap < cs_cfg.ring_cap && cap < CS_RING_MAX_CAPACITY) cap <<= 1;
  size_t len = cs_ring_bytes(cap);
  char rank[16], base[512], tmp[640];
  if (cs_cfg.rank >= 0)
    snprintf(rank, sizeof rank, "%d", cs_cfg.rank);
  else
    snprintf(rank, sizeof rank, "x");
  unsigned uid = (unsigned)geteuid();
  /* the job as the header holds it (127 bytes): readers require the name to carry it */
  if (snprintf(base, sizeof base, "%s/collscope-%u-%.127s-r%s.ring", cs_ring_dir(), uid, cs_cfg.job, rank) >=
      (int)sizeof base - 16) {
    cs_log(CS_LOG_WARN, "stats ring: directory name too long; no live view for this process");
    return false;
  }
  snprintf(tmp, sizeof tmp, "%s/.collscope-%u-%.127s-r%s-p%d.tmp", cs_ring_dir(), uid, cs_cfg.job, rank, (int)getpid());
  struct cs_ring_hdr *h = build(tmp, cap, len);
  if (!h) {
    cs_log(CS_LOG_WARN, "cannot create stats ring %s: %s; no live view for this process", tmp, strerror(errno));
    return false;
  }
  bool named = publish_name(tmp, base);
  int e = errno;
  unlink(tmp);
  if (!named) {
    cs_log(CS_LOG_WARN, "cannot name stats ring %s: %s; no live view for this process", wpath, strerror(e));
    munmap(h, len);
    return false;
  }
  W = h;
  wlen = len;
  whead = 0;
  memset(&wstats, 0, sizeof wstats);
  cs_ring_adopt();
  cs_log(CS_LOG_INFO, "stats ring %s (%llu records)", wpath, (unsigned long long)cap);
  return true;
}

void cs_ring_adopt(void) {
  owner = pthread_self();
  atomic_store_explicit(&owner_set, 1, memory_order_release);
}

static bool is_writer(void) {
  if (!atomic_load_explicit(&owner_set, memory_order_acquire) || !pthread_equal(owner, pthread_self())) {
    cs_log_once(CS_LOG_WARN, "stats ring: publish from a thread that is not the ring's writer; ignored");
    return false;
  }
  return true;
}

static void add_comm(const struct cs_record *r) {
  uint32_t n = atomic_load_explicit(&W->ncomms, memory_order_relaxed);
  for (uint32_t i = 0; i < n; i++)
    if (W->comms[i].id == r->comm_id) return;
  if (n >= CS_RING_MAX_COMMS) return;
  W->comms[n].id = r->comm_id;
  W->comms[n].size = r->comm_size;
  W->comms[n].rank = r->comm_rank;
  W->comms[n].device = r->device;
  if (W->device < 0) /* a release store: a reader that sees the device sees the GPU's identity written before it */
    __atomic_store_n(&W->device, r->device, __ATOMIC_RELEASE);
  atomic_store_explicit(&W->ncomms, n + 1, memory_order_release);
}

void cs_ring_publish(const struct cs_record *r) {
  if (!W || !is_writer()) return;
  if (r->type == CS_REC_COMM && (r->event == CS_COMM_INIT || r->event == CS_COMM_SPLIT)) add_comm(r);
  cs_ring_slot_store(&cs_ring_slots(W)[whead & (W->capacity - 1)], whead, r);
  whead++;
  atomic_store_explicit(&W->head, whead, memory_order_release);
  cs_ring_stats_add(cs_ring_stats_of(W), &wstats, r); /* the summary block: totals for followers */
}

void cs_ring_health(const struct cs_ring_health_vals *v) {
  if (W && is_writer()) cs_ring_stats_health(cs_ring_stats_of(W), v);
}

void cs_ring_gpu_identity(const char *uuid, const char *bus_id) {
  if (W && is_writer()) cs_ring_stats_ident(W, uuid, bus_id);
}

void cs_ring_status(uint64_t pending, int64_t oldest_pending_ns, uint64_t drops) {
  if (!W) return;
  atomic_store_explicit(&W->pending, pending, memory_order_relaxed);
  atomic_store_explicit(&W->oldest_pending_ns, oldest_pending_ns, memory_order_relaxed);
  atomic_store_explicit(&W->drops, drops, memory_order_relaxed);
  atomic_store_explicit(&W->heartbeat_ns, cs_now_ns(CLOCK_REALTIME), memory_order_release);
}

void cs_ring_set_record(uint32_t what) {
  if (W) atomic_store_explicit(&W->record, what, memory_order_release);
}

uint64_t cs_ring_snap_asked(void) { return W ? atomic_load_explicit(&W->snap_asked, memory_order_acquire) : 0; }

void cs_ring_snap_answer(uint64_t asked, uint32_t result) {
  if (!W) return;
  atomic_store_explicit(&W->snap_result, result, memory_order_relaxed);
  atomic_store_explicit(&W->snap_seen, asked, memory_order_release);
}

void cs_ring_note_hang(void) {
  if (W) atomic_fetch_add_explicit(&W->hung, 1, memory_order_relaxed);
}

void cs_ring_close(bool clean_exit) {
  if (!W) return;
  if (clean_exit) atomic_store_explicit(&W->closed, 1, memory_order_release);
  munmap(W, wlen);
  W = NULL;
  /* only our own ring: never a file that took the name since */
  struct stat st;
  if (clean_exit && !cs_cfg.keep_shm && lstat(wpath, &st) == 0 && st.st_dev == wdev && st.st_ino == wino)
    unlink(wpath);
}

void cs_ring_atfork_child(void) {
  /* the parent's ring stays the parent's: unmap, never unlink */
  if (W) munmap(W, wlen);
  W = NULL;
  atomic_store(&owner_set, 0);
}
