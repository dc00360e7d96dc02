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

bool cs_ring_name_ours(const char *name) {
  char pre[48];
  snprintf(pre, sizeof pre, "collscope-%u-", (unsigned)getuid());
  size_t l = strlen(name);
  return strncmp(name, pre, strlen(pre)) == 0 && l > 5 && strcmp(name + l - 5, ".ring") == 0;
}

bool cs_ring_writer_dead(const struct cs_ring_hdr *h) {
  if (h->pid <= 0) return true;
  if (kill(h->pid, 0) != 0) return errno == ESRCH;
  /* a zombie (killed, not yet reaped) is dead too */
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)h->pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  const char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

int cs_ring_reader_open(struct cs_ring_reader *r, const char *path) {
  memset(r, 0, sizeof *r);
  snprintf(r->path, sizeof r->path, "%s", path);
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(struct cs_ring_hdr)) {
    close(fd);
    errno = EAGAIN;
    return -1;
  }
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return -1;
  const struct cs_ring_hdr *h = p;
  int err = 0;
  if (atomic_load_explicit(&((struct cs_ring_hdr *)p)->init, memory_order_acquire) != CS_RING_INIT_MAGIC)
    err = EAGAIN;
  else if (h->magic != CS_RING_MAGIC || h->version != CS_RING_VERSION || h->rec_size != sizeof(struct cs_record) ||
           h->capacity == 0 || (h->capacity & (h->capacity - 1)) || cs_ring_bytes(h->capacity) > (size_t)st.st_size)
    err = EPROTO;
  if (err) {
    munmap(p, (size_t)st.st_size);
    errno = err;
    return -1;
  }
  r->h = h;
  r->map_len = (size_t)st.st_size;
  uint64_t head = atomic_load_explicit(&((struct cs_ring_hdr *)p)->head, memory_order_acquire);
  r->cursor = head > h->capacity ? head - h->capacity : 0;
  return 0;
}

void cs_ring_reader_close(struct cs_ring_reader *r) {
  if (r->h) munmap((void *)(uintptr_t)r->h, r->map_len);
  r->h = NULL;
}

size_t cs_ring_read(struct cs_ring_reader *r, struct cs_record *out, size_t max) {
  if (!r->h) return 0;
  struct cs_ring_hdr *h = (struct cs_ring_hdr *)(uintptr_t)r->h;
  struct cs_ring_slot *slots = cs_ring_slots(h);
  uint64_t cap = h->capacity, got = 0;
  uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
  while (got < max && r->cursor < head) {
    if (head - r->cursor > cap) { /* fell behind: those are gone */
      r->lost += head - cap - r->cursor;
      r->cursor = head - cap;
    }
    uint64_t n = r->cursor;
    struct cs_ring_slot *s = &slots[n & (cap - 1)];
    uint64_t want = 2 * n + 2;
    uint64_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (s1 == want) {
      uint64_t tmp[CS_RING_WORDS];
      for (size_t i = 0; i < CS_RING_WORDS; i++) tmp[i] = atomic_load_explicit(&s->w[i], memory_order_relaxed);
      atomic_thread_fence(memory_order_acquire);
      uint64_t s2 = atomic_load_explicit(&s->seq, memory_order_relaxed);
      if (s2 == want) {
        memcpy(&out[got++], tmp, sizeof(struct cs_record));
        r->cursor++;
        continue;
      }
    } else if (s1 < want) {
      break; /* not published yet (cannot happen below head, but be safe) */
    }
    r->lost++; /* overwritten while (or before) we read it */
    r->cursor++;
    head = atomic_load_explicit(&h->head, memory_order_acquire);
  }
  return (size_t)got;
}

#ifndef CS_RING_READER_ONLY
/* ------------------------------------------------------------------ writer */
#include "stats/ring.h"
#include <pthread.h>

static struct cs_ring_hdr *W;
static size_t wlen;
static char wpath[512];
static pthread_t owner;
static _Atomic int owner_set;
static uint64_t whead;

const char *cs_ring_path(void) { return W ? wpath : ""; }

static int create_at(const char *path, size_t len) {
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (ftruncate(fd, (off_t)len) != 0) {
    int e = errno;
    close(fd);
    unlink(path);
    errno = e;
    return -1;
  }
  return fd;
}

/* An existing segment: reclaim it when its writer is dead (or it is not a ring at all and
 * belongs to us). Returns true when it was removed. */
static bool reclaim_stale(const char *path) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool dead = false;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid()) {
    if ((size_t)st.st_size < sizeof(struct cs_ring_hdr)) {
      dead = true; /* creator died before sizing it */
    } else {
      void *p = mmap(NULL, sizeof(struct cs_ring_hdr), PROT_READ, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) {
        const struct cs_ring_hdr *h = p;
        dead = h->magic != CS_RING_MAGIC || cs_ring_writer_dead(h);
        munmap(p, sizeof(struct cs_ring_hdr));
      }
    }
  }
  close(fd);
  if (dead && unlink(path) == 0) {
    cs_log(CS_LOG_INFO, "reclaimed stale stats ring %s", path);
    return true;
  }
  return false;
}

bool cs_ring_open(void) {
  if (W || cs_cfg.ring_cap == 0) return W != NULL;
  uint64_t cap = 1;
  while (cap < cs_cfg.ring_cap) cap <<= 1;
  size_t len = cs_ring_bytes(cap);
  char rank[16];
  if (cs_cfg.rank >= 0) snprintf(rank, sizeof rank, "%d", cs_cfg.rank);
  else snprintf(rank, sizeof rank, "x");
  int fd = -1;
  for (int attempt = 0; attempt < 3 && fd < 0; attempt++) {
    if (attempt < 2)
      snprintf(wpath, sizeof wpath, "%s/collscope-%u-%s-r%s.ring", cs_ring_dir(), (unsigned)getuid(), cs_cfg.job,
               rank);
    else
      snprintf(wpath, sizeof wpath, "%s/collscope-%u-%s-r%s-p%d.ring", cs_ring_dir(), (unsigned)getuid(),
               cs_cfg.job, rank, (int)getpid());
    fd = create_at(wpath, len);
    if (fd < 0 && errno == EEXIST && attempt == 0 && !reclaim_stale(wpath)) attempt++; /* alive: use -p<pid> */
  }
  if (fd < 0) {
    cs_log(CS_LOG_WARN, "cannot create stats ring %s: %s; no live view for this process", wpath, strerror(errno));
    return false;
  }
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    cs_log(CS_LOG_WARN, "cannot map stats ring %s: %s", wpath, strerror(errno));
    unlink(wpath);
    return false;
  }
  struct cs_ring_hdr *h = p; /* zero-filled by ftruncate */
  h->magic = CS_RING_MAGIC;
  h->version = CS_RING_VERSION;
  h->rec_size = sizeof(struct cs_record);
  h->capacity = cap;
  h->pid = getpid();
  h->rank = cs_cfg.rank;
  h->local_rank = cs_cfg.local_rank;
  h->world_size = cs_cfg.world_size;
  h->device = -1;
  h->uid = (uint32_t)getuid();
  h->created_ns = cs_now_ns(CLOCK_REALTIME);
  snprintf(h->host, sizeof h->host, "%.127s", cs_cfg.host);
  snprintf(h->job, sizeof h->job, "%.127s", cs_cfg.job);
  atomic_store_explicit(&h->init, CS_RING_INIT_MAGIC, memory_order_release); /* last */
  W = h;
  wlen = len;
  whead = 0;
  cs_ring_adopt();
  cs_log(CS_LOG_INFO, "stats ring %s (%llu records)", wpath, (unsigned long long)cap);
  return true;
}

void cs_ring_adopt(void) {
  owner = pthread_self();
  atomic_store_explicit(&owner_set, 1, memory_order_release);
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
  if (W->device < 0) W->device = r->device;
  atomic_store_explicit(&W->ncomms, n + 1, memory_order_release);
}

void cs_ring_publish(const struct cs_record *r) {
  if (!W) return;
  if (!atomic_load_explicit(&owner_set, memory_order_acquire) || !pthread_equal(owner, pthread_self())) {
    cs_log_once(CS_LOG_WARN, "stats ring: publish from a thread that is not the ring's writer; ignored");
    return;
  }
  if (r->type == CS_REC_COMM && (r->event == CS_COMM_INIT || r->event == CS_COMM_SPLIT)) add_comm(r);
  struct cs_ring_slot *s = &cs_ring_slots(W)[whead & (W->capacity - 1)];
  uint64_t words[CS_RING_WORDS] = {0};
  memcpy(words, r, sizeof *r);
  atomic_store_explicit(&s->seq, 2 * whead + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  for (size_t i = 0; i < CS_RING_WORDS; i++) atomic_store_explicit(&s->w[i], words[i], memory_order_relaxed);
  atomic_store_explicit(&s->seq, 2 * whead + 2, memory_order_release);
  whead++;
  atomic_store_explicit(&W->head, whead, memory_order_release);
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
  if (clean_exit && !cs_cfg.keep_shm) unlink(wpath);
}

void cs_ring_atfork_child(void) {
  /* the parent's ring stays the parent's: unmap, never unlink */
  if (W) munmap(W, wlen);
  W = NULL;
  atomic_store(&owner_set, 0);
}
#endif
