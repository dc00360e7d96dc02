/* stats/ring.c: the shared-memory stats ring (protocol in include/collscope/ring.h).
 * Reader half: always built (CLI, tests). Writer half: the shim only (not with
 * -DCS_RING_READER_ONLY). */
#include "collscope/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *cs_ring_dir(void) {
  const char *d = getenv("COLLSCOPE_SHM_DIR");
  return d && *d ? d : "/dev/shm";
}

/* "collscope-<uid>-...ring": the uid, and where the rest (<job>-r...) starts. */
static bool parse_name(const char *name, unsigned long *uid, const char **rest) {
  static const char pre[] = "collscope-";
  if (strncmp(name, pre, sizeof pre - 1) != 0) return false;
  const char *p = name + sizeof pre - 1;
  unsigned long v = 0;
  if (*p < '0' || *p > '9') return false;
  for (; *p >= '0' && *p <= '9'; p++) {
    v = v * 10 + (unsigned long)(*p - '0');
    if (v > UINT32_MAX) return false;
  }
  size_t l = strlen(name);
  if (*p != '-' || l < 5 || strcmp(name + l - 5, ".ring") != 0) return false;
  *uid = v;
  *rest = p + 1;
  return true;
}

bool cs_ring_name_ours(const char *name) {
  unsigned long uid;
  const char *rest;
  uid_t me = geteuid();
  return parse_name(name, &uid, &rest) && (me == 0 || uid == (unsigned long)me);
}

static const char *skip_digits(const char *p) {
  if (*p < '0' || *p > '9') return NULL;
  while (*p >= '0' && *p <= '9') p++;
  return p;
}

bool cs_ring_name_job(const char *name, const char *job) {
  unsigned long uid;
  const char *p;
  size_t jl = strlen(job);
  if (!parse_name(name, &uid, &p) || jl == 0 || strncmp(p, job, jl) != 0 || strncmp(p + jl, "-r", 2) != 0)
    return false;
  p += jl + 2;
  p = *p == 'x' ? p + 1 : skip_digits(p);
  if (p && p[0] == '-' && p[1] == 'p') p = skip_digits(p + 2);
  return p && strcmp(p, ".ring") == 0;
}

/* State letter and start time (field 22, clock ticks after boot) of a process. */
static bool proc_stat(int pid, char *state, uint64_t *start) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  const char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ' || !p[2]) return false;
  *state = p[2];
  p += 2; /* field 3 */
  for (int field = 3; field < 22; field++) {
    p = strchr(p, ' ');
    if (!p) return false;
    p++;
  }
  char *e;
  errno = 0;
  unsigned long long v = strtoull(p, &e, 10);
  if (e == p || errno) return false;
  *start = v;
  return true;
}

bool cs_ring_writer_dead(const struct cs_ring_hdr *h) {
  int pid = *(const volatile int32_t *)&h->pid;
  uint64_t born = *(const volatile uint64_t *)&h->start_time;
  if (pid <= 0) return true;
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  char state;
  uint64_t start;
  if (!proc_stat(pid, &state, &start)) return false; /* cannot tell: alive */
  if (state == 'Z' || state == 'X') return true;     /* killed, not yet reaped */
  return born != 0 && start != born;                 /* the pid now belongs to another process */
}

static int open_fail(struct cs_ring_reader *r, int fd, int err, const char *why) {
  if (fd >= 0) close(fd);
  r->why = why;
  errno = err;
  return -1;
}

int cs_ring_reader_open(struct cs_ring_reader *r, const char *path) {
  memset(r, 0, sizeof *r);
  snprintf(r->path, sizeof r->path, "%s", path);
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  unsigned long name_uid;
  const char *rest;
  if (!parse_name(base, &name_uid, &rest))
    return open_fail(r, -1, EINVAL, "not a ring name (collscope-<uid>-<job>-r<rank>.ring)");
  /* O_NONBLOCK: a FIFO planted under a ring name must not block the reader */
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return open_fail(r, -1, errno, errno == ELOOP ? "a symbolic link" : strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) return open_fail(r, fd, errno, strerror(errno));
  if (!S_ISREG(st.st_mode)) return open_fail(r, fd, EPERM, "not a regular file");
  if ((unsigned long)st.st_uid != name_uid) return open_fail(r, fd, EPERM, "its owner is not the uid in its name");
  uid_t me = geteuid();
  if (me != 0 && st.st_uid != me) return open_fail(r, fd, EPERM, "owned by another user");
  if (st.st_size < (off_t)sizeof(struct cs_ring_hdr)) return open_fail(r, fd, EPROTO, "smaller than a ring header");
  struct cs_ring_hdr h; /* a private copy: the checks below hold for it, whatever the file does next */
  if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) return open_fail(r, fd, EPROTO, "short read of its header");
  if (atomic_load_explicit(&h.init, memory_order_relaxed) != CS_RING_INIT_MAGIC)
    return open_fail(r, fd, EAGAIN, "not initialised");
  if (h.magic != CS_RING_MAGIC) return open_fail(r, fd, EPROTO, "bad magic");
  if (h.version != CS_RING_VERSION) return open_fail(r, fd, EPROTO, "another ring version");
  if (h.rec_size != sizeof(struct cs_record)) return open_fail(r, fd, EPROTO, "another record size");
  if (h.capacity == 0 || (h.capacity & (h.capacity - 1)) != 0 || h.capacity > CS_RING_MAX_CAPACITY)
    return open_fail(r, fd, EPROTO, "capacity is not a power of two up to 2^22");
  if (h.stats_size != sizeof(struct cs_ring_stats)) return open_fail(r, fd, EPROTO, "another summary block size");
  uint64_t bytes;
  if (__builtin_mul_overflow(h.capacity, (uint64_t)sizeof(struct cs_ring_slot), &bytes) ||
      __builtin_add_overflow(bytes, (uint64_t)(sizeof(struct cs_ring_hdr) + sizeof(struct cs_ring_stats)), &bytes) ||
      bytes > SIZE_MAX)
    return open_fail(r, fd, EPROTO, "capacity overflows");
  if (bytes != (uint64_t)st.st_size) return open_fail(r, fd, EPROTO, "file size does not match its capacity");
  if ((unsigned long)h.uid != name_uid) return open_fail(r, fd, EPERM, "header uid is not the uid in its name");
  if (!memchr(h.host, 0, sizeof h.host) || !memchr(h.job, 0, sizeof h.job))
    return open_fail(r, fd, EPROTO, "host or job not terminated");
  if (!cs_ring_name_job(base, h.job)) return open_fail(r, fd, EPERM, "its name does not carry its header's job");
  void *p = mmap(NULL, (size_t)bytes, PROT_READ, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return open_fail(r, -1, e, strerror(e));
  r->h = p;
  r->map_len = (size_t)bytes;
  r->capacity = h.capacity;
  r->dev = (uint64_t)st.st_dev;
  r->ino = (uint64_t)st.st_ino;
  uint64_t head = atomic_load_explicit(&((struct cs_ring_hdr *)p)->head, memory_order_acquire);
  r->cursor = head > r->capacity ? head - r->capacity : 0;
  uint64_t side = atomic_load_explicit(&cs_ring_stats_of(p)->side_head, memory_order_acquire);
  r->side_cursor = side > CS_RING_SIDE_CAP ? side - CS_RING_SIDE_CAP : 0;
  return 0;
}

void cs_ring_reader_close(struct cs_ring_reader *r) {
  if (r->h) munmap((void *)(uintptr_t)r->h, r->map_len);
  r->h = NULL;
}

/* Copy up to max records of a slot ring (main or side) from *cursor on. */
static size_t read_slots(_Atomic uint64_t *headp, struct cs_ring_slot *slots, uint64_t cap, uint64_t *cursor,
                         uint64_t *lost, struct cs_record *out, size_t max) {
  uint64_t got = 0;
  uint64_t head = atomic_load_explicit(headp, memory_order_acquire);
  /* bounded even when a hostile writer keeps moving head */
  for (uint64_t budget = cap + max; budget && got < max && *cursor < head; budget--) {
    if (head - *cursor > cap) { /* fell behind: those are gone */
      *lost += head - cap - *cursor;
      *cursor = head - cap;
    }
    uint64_t n = *cursor;
    struct cs_ring_slot *s = &slots[n & (cap - 1)];
    uint64_t want = 2 * n + 2;
    uint64_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (s1 == want) {
      uint64_t tmp[CS_RING_WORDS];
      for (size_t i = 0; i < CS_RING_WORDS; i++) tmp[i] = atomic_load_explicit(&s->w[i], CS_SEQ_LOAD);
      CS_SEQ_FENCE(memory_order_acquire);
      uint64_t s2 = atomic_load_explicit(&s->seq, memory_order_relaxed);
      if (s2 == want) {
        memcpy(&out[got++], tmp, sizeof(struct cs_record));
        (*cursor)++;
        continue;
      }
    } else if (s1 < want) {
      break; /* not published yet (cannot happen below head, but be safe) */
    }
    (*lost)++; /* overwritten while (or before) we read it */
    (*cursor)++;
    head = atomic_load_explicit(headp, memory_order_acquire);
  }
  return (size_t)got;
}

size_t cs_ring_read(struct cs_ring_reader *r, struct cs_record *out, size_t max) {
  if (!r->h) return 0;
  struct cs_ring_hdr *h = (struct cs_ring_hdr *)(uintptr_t)r->h;
  return read_slots(&h->head, cs_ring_slots(h), r->capacity, &r->cursor, &r->lost, out, max);
}

size_t cs_ring_read_side(struct cs_ring_reader *r, struct cs_record *out, size_t max) {
  if (!r->h) return 0;
  struct cs_ring_stats *b = cs_ring_stats_of(r->h);
  return read_slots(&b->side_head, b->side, CS_RING_SIDE_CAP, &r->side_cursor, &r->side_lost, out, max);
}

size_t cs_ring_read_latest(const struct cs_ring_reader *r, struct cs_record *out, size_t max) {
  if (!r->h || !max) return 0;
  struct cs_ring_hdr *h = (struct cs_ring_hdr *)(uintptr_t)r->h;
  uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
  uint64_t back = max < r->capacity ? max : r->capacity;
  uint64_t cursor = head > back ? head - back : 0, lost = 0;
  return read_slots(&h->head, cs_ring_slots(h), r->capacity, &cursor, &lost, out, max);
}

/* seqlock copy of n words under gen: 1 copied, 0 empty or unchanged, -1 torn */
static int seq_copy(_Atomic uint64_t *genp, _Atomic uint64_t *w, size_t n, uint64_t *out, uint64_t *gen) {
  for (int attempt = 0; attempt < 4; attempt++) {
    uint64_t g1 = atomic_load_explicit(genp, memory_order_acquire);
    if (g1 == 0 || g1 == *gen) return 0;
    if (g1 & 1) continue;
    for (size_t i = 0; i < n; i++) out[i] = atomic_load_explicit(&w[i], CS_SEQ_LOAD);
    CS_SEQ_FENCE(memory_order_acquire);
    if (atomic_load_explicit(genp, memory_order_relaxed) == g1) {
      *gen = g1;
      return 1;
    }
  }
  return -1;
}

int cs_ring_read_series(const struct cs_ring_series *s, struct cs_ring_series_vals *out, uint64_t *gen) {
  _Static_assert(sizeof(struct cs_ring_series_vals) == sizeof(((struct cs_ring_series *)0)->w), "series words");
  struct cs_ring_series *m = (struct cs_ring_series *)(uintptr_t)s;
  uint64_t tmp[CS_RING_BUCKETS + 6];
  int rc = seq_copy(&m->gen, m->w, CS_RING_BUCKETS + 6, tmp, gen);
  if (rc == 1) memcpy(out, tmp, sizeof *out);
  return rc;
}

int cs_ring_read_health(const struct cs_ring_reader *r, struct cs_ring_health_vals *out, uint64_t *gen) {
  if (!r->h) return 0;
  struct cs_ring_stats *b = cs_ring_stats_of(r->h);
  uint64_t tmp[CS_RING_HEALTH_WORDS];
  int rc = seq_copy(&b->health_gen, b->health_w, CS_RING_HEALTH_WORDS, tmp, gen);
  if (rc != 1) return rc;
  memcpy(out, tmp, sizeof *out);
  if (out->nib > CS_RING_IB_PORTS) out->nib = CS_RING_IB_PORTS;
  for (size_t i = 0; i < CS_RING_IB_PORTS; i++) out->ib[i].dev[sizeof out->ib[i].dev - 1] = 0;
  return 1;
}

static void ident_copy(char *dst, size_t cap, const volatile char *src, size_t n) {
  size_t k = 0;
  for (; k < n && k + 1 < cap && src[k]; k++) {
    char c = src[k];
    dst[k] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' || c == '.' ||
                     c == '-'
                 ? c
                 : '_';
  }
  if (cap) dst[k] = 0;
}

bool cs_ring_gpu_ident(const struct cs_ring_reader *r, char *uuid, size_t uuid_cap, char *bus, size_t bus_cap) {
  if (!r->h) return false;
  struct cs_ring_hdr *h = (struct cs_ring_hdr *)(uintptr_t)r->h;
  if (atomic_load_explicit(&h->gpu_ident, memory_order_acquire) != 1) return false;
  ident_copy(uuid, uuid_cap, h->gpu_uuid, sizeof h->gpu_uuid);
  ident_copy(bus, bus_cap, h->gpu_bus_id, sizeof h->gpu_bus_id);
  return true;
}

#ifndef CS_RING_READER_ONLY
/* ------------------------------------------------------------------ writer */
#include "stats/ring.h"
#include "stats/ring_stats.h"
#include <pthread.h>

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
  if (!proc_stat(getpid(), &state, &h->start_time)) h->start_time = 0;
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
#endif
