/* analysis/ring_reader.c: the reader of the shared-memory stats ring (protocol in
 * include/collscope/ring.h), and the ring names and liveness checks the writer
 * (stats/ring_writer.c) shares with it. */
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

bool cs_ring_proc_stat(int pid, char *state, uint64_t *start) {
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
  if (!cs_ring_proc_stat(pid, &state, &start)) return false; /* cannot tell: alive */
  if (state == 'Z' || state == 'X') return true;             /* killed, not yet reaped */
  return born != 0 && start != born;                         /* the pid now belongs to another process */
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
