/* tests/sim/nccl/comm.c: communicator lifetime (unique id, init, split, shrink,
 * finalize, destroy, abort, revoke), the shm segment with its futexes, queries,
 * registration stubs, user reduction operators, version and error strings. */
#include "simnccl.h"
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------------------------------------------------------------- futexes
 * FUTEX_WAIT / FUTEX_WAKE without FUTEX_PRIVATE_FLAG: the words live in shared memory
 * mapped by several processes. */
void sn_wait(_Atomic uint32_t *w, uint32_t val) {
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, NULL, NULL, 0);
}
void sn_wait_ns(_Atomic uint32_t *w, uint32_t val, long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, &ts, NULL, 0);
}
void sn_wake(_Atomic uint32_t *w) { syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0); }
static void bump(_Atomic uint32_t *w) { atomic_fetch_add(w, 1); sn_wake(w); }

/* A rank's doorbell: word 0 counts rings (the futex word); words 1 and 2 are set by a
 * thread that goes to sleep on it for data (a channel's head) or for space (a channel's
 * tail), both by one that sleeps for anything. A ring always bumps word 0 (a thread about to
 * sleep sees it move and looks again) but makes the wake system call only when it clears a
 * set flag of its kind: on a ring of hundreds of processes most rings find no sleeper, or
 * only the neighbour that waits for its other neighbour's data, or one already woken. The
 * wake wakes every sleeper. Every lock-prefixed update is a full barrier, so a sleeper that
 * sets its flag after a ring cleared it reads the bumped word 0 in FUTEX_WAIT and returns. */
_Atomic uint32_t *sn_doorbell(struct ncclComm *c, int rank) { return &c->shm->doorbell[rank][0]; }
void sn_ring_bell_for(struct ncclComm *c, int rank, int kind) {
  _Atomic uint32_t *d = c->shm->doorbell[rank];
  atomic_fetch_add(&d[0], 1);
  int sleeper = 0;
  if ((kind & SN_BELL_DATA) && atomic_load(&d[1])) sleeper |= atomic_exchange(&d[1], 0) != 0;
  if ((kind & SN_BELL_SPACE) && atomic_load(&d[2])) sleeper |= atomic_exchange(&d[2], 0) != 0;
  if (sleeper) sn_wake(&d[0]);
}
void sn_ring_bell(struct ncclComm *c, int rank) { sn_ring_bell_for(c, rank, SN_BELL_ANY); }
void sn_bell_wait(struct ncclComm *c, uint32_t val, int kind, long ns) {
  _Atomic uint32_t *d = c->shm->doorbell[c->rank];
  if (kind & SN_BELL_DATA) atomic_exchange(&d[1], 1);
  if (kind & SN_BELL_SPACE) atomic_exchange(&d[2], 1);
  if (ns > 0) sn_wait_ns(&d[0], val, ns);
  else sn_wait(&d[0], val);
}
struct sn_chan_ctrl *sn_chan(struct ncclComm *c, int src, int dst) {
  size_t h = (sizeof(struct sn_shm) + 4095) & ~(size_t)4095;
  return (struct sn_chan_ctrl *)((char *)c->shm + h + ((size_t)src * (size_t)c->nranks + (size_t)dst) * sn_chan_bytes());
}
struct sn_slot_hdr *sn_slot(struct sn_chan_ctrl *ch, uint32_t i) {
  return (struct sn_slot_hdr *)((char *)(ch + 1) + (size_t)(i % SN_SLOTS) * (sizeof(struct sn_slot_hdr) + SN_SLOT_BYTES));
}

/* ---------------------------------------------------------------- checks */
#define COMM_MAGIC 0x636f6d6d73696d32ull
int sn_comm_ok(struct ncclComm *c) { return c && c->start_magic == COMM_MAGIC && c->end_magic == COMM_MAGIC; }
ncclResult_t sn_comm_check(struct ncclComm *c, const char *opname) {
  if (!c) { sn_warn(-1, "%s : comm argument is NULL", opname); return ncclInvalidArgument; }
  if (!sn_comm_ok(c)) { sn_warn(-1, "Error: corrupted comm object detected"); return ncclInvalidArgument; }
  return ncclSuccess;
}
static ncclResult_t ptr_check(const void *p, const char *opname, const char *name) {
  if (!p) { sn_warn(-1, "%s : %s argument is NULL", opname, name); return ncclInvalidArgument; }
  return ncclSuccess;
}

/* ---------------------------------------------------------------- version, errors */
SN_API ncclResult_t pncclGetVersion(int *version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
SN_ALIAS(ncclGetVersion)

SN_API const char *pncclGetErrorString(ncclResult_t code) {
  switch (code) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "unknown result code";
  }
}
SN_ALIAS(ncclGetErrorString)

/* ---------------------------------------------------------------- unique id */
static void random_bytes(void *p, size_t n) {
  if (getrandom(p, n, 0) == (ssize_t)n) return;
  unsigned char *b = p;
  uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)p;
  for (size_t i = 0; i < n; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; b[i] = (unsigned char)x; }
}
static void id_fill(struct sn_id *id, uint64_t a, uint64_t b) {
  memset(id, 0, sizeof *id);
  id->magic = SN_ID_MAGIC;
  id->rnd[0] = a; id->rnd[1] = b;
  id->uid = (uint32_t)getuid();
  snprintf(id->name, sizeof id->name, "/collscope-nccl-%u-%016llx%016llx", id->uid,
           (unsigned long long)a, (unsigned long long)b);
}
/* Segments of communicators whose every checked-in rank has died (a killed job never
 * destroys its communicator) stay in /dev/shm. Remove this user's ones when a new id
 * is made. A segment with a rank that has not written its pid yet is left alone. */
static void reclaim_dead_segments(void) {
  char prefix[64];
  int plen = snprintf(prefix, sizeof prefix, "collscope-nccl-%u-", (unsigned)getuid());
  DIR *d = opendir("/dev/shm");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, prefix, (size_t)plen) != 0) continue;
    char name[300];
    snprintf(name, sizeof name, "/%s", e->d_name);
    int fd = shm_open(name, O_RDONLY | O_NOFOLLOW, 0);
    if (fd < 0) continue;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(struct sn_shm))
      p = mmap(NULL, sizeof(struct sn_shm), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) continue;
    const struct sn_shm *h = p;
    int seen = 0, alive = 0;
    uint32_t n = atomic_load(&((struct sn_shm *)p)->nranks);
    for (uint32_t r = 0; r < n && r < SN_MAXRANKS; r++) {
      if (!__atomic_load_n(&h->ranks[r].present, __ATOMIC_ACQUIRE)) continue;
      int pid = __atomic_load_n(&h->ranks[r].pid, __ATOMIC_ACQUIRE);
      if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) alive++;
      else seen++;
    }
    munmap(p, sizeof(struct sn_shm));
    if (seen > 0 && alive == 0) shm_unlink(name);
  }
  closedir(d);
}

SN_API ncclResult_t pncclGetUniqueId(ncclUniqueId *out) {
  if (ptr_check(out, "ncclGetUniqueId", "uniqueId")) return ncclInvalidArgument;
  reclaim_dead_segments();
  _Static_assert(sizeof(struct sn_id) <= sizeof(ncclUniqueId), "id too big");
  uint64_t r[2];
  random_bytes(r, sizeof r);
  struct sn_id id;
  id_fill(&id, r[0], r[1]);
  memset(out, 0, sizeof *out);
  memcpy(out->internal, &id, sizeof id);
  return ncclSuccess;
}
SN_ALIAS(ncclGetUniqueId)

/* ---------------------------------------------------------------- config */
#define SN_NCCL_MAXCHANNELS 64   /* NCCL 2.28.9 src/include/device.h:86 MAXCHANNELS */
static ncclResult_t parse_config(const ncclConfig_t *in, ncclConfig_t *out) {
  ncclConfig_t def = NCCL_CONFIG_INITIALIZER;
  *out = def;
  if (in) {
    size_t real;
    memcpy(&real, in, sizeof real);
    if (real > sizeof *out) real = sizeof *out;
    ncclConfig_t tmp = def;
    memcpy(&tmp, in, real);
    if (tmp.magic != 0xcafebeef) {
      sn_warn(-1, "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
      return ncclInvalidArgument;
    }
    /* fields newer than the caller's header version keep their defaults (init.cc:1825-1849) */
    if (tmp.version < NCCL_VERSION(2, 14, 0)) tmp.blocking = def.blocking;
    if (tmp.version < NCCL_VERSION(2, 17, 0)) {
      tmp.cgaClusterSize = def.cgaClusterSize; tmp.minCTAs = def.minCTAs;
      tmp.maxCTAs = def.maxCTAs; tmp.netName = def.netName;
    }
    if (tmp.version < NCCL_VERSION(2, 25, 0)) tmp.trafficClass = def.trafficClass;
    if (tmp.version < NCCL_VERSION(2, 27, 0)) {
      tmp.collnetEnable = def.collnetEnable; tmp.CTAPolicy = def.CTAPolicy;
      tmp.shrinkShare = def.shrinkShare; tmp.nvlsCTAs = def.nvlsCTAs;
    }
    if (tmp.version < NCCL_VERSION(2, 28, 0)) {
      tmp.nChannelsPerNetPeer = def.nChannelsPerNetPeer; tmp.nvlinkCentricSched = def.nvlinkCentricSched;
    }
    *out = tmp;
  }
  if (out->blocking != NCCL_CONFIG_UNDEF_INT && out->blocking != 0 && out->blocking != 1) {
    sn_warn(-1, "Invalid config blocking attribute value %d", out->blocking);
    return ncclInvalidArgument;
  }
  if (out->cgaClusterSize != NCCL_CONFIG_UNDEF_INT && out->cgaClusterSize < 0) {
    sn_warn(-1, "Invalid config cgaClusterSize attribute value %d", out->cgaClusterSize);
    return ncclInvalidArgument;
  }
  if ((out->minCTAs != NCCL_CONFIG_UNDEF_INT && out->minCTAs <= 0) ||
      (out->maxCTAs != NCCL_CONFIG_UNDEF_INT && out->maxCTAs <= 0) ||
      (out->minCTAs > out->maxCTAs)) {
    sn_warn(-1, "Invalid config min/max channels attribute value %d/%d", out->minCTAs, out->maxCTAs);
    return ncclInvalidArgument;
  }
  if (out->splitShare != NCCL_CONFIG_UNDEF_INT && out->splitShare != 0 && out->splitShare != 1) {
    sn_warn(-1, "Invalid config splitShare attribute value %d", out->splitShare);
    return ncclInvalidArgument;
  }
  /* init.cc:1880-1916 (parseCommConfig) */
  if (out->collnetEnable != NCCL_CONFIG_UNDEF_INT && (out->collnetEnable < 0 || out->collnetEnable > 1)) {
    sn_warn(-1, "Invalid config collnetEnable attribute value %d", out->collnetEnable);
    return ncclInvalidArgument;
  }
  if (out->CTAPolicy != NCCL_CONFIG_UNDEF_INT &&
      (out->CTAPolicy < NCCL_CTA_POLICY_DEFAULT || out->CTAPolicy > NCCL_CTA_POLICY_ZERO)) {
    sn_warn(-1, "Invalid config policy attribute value %d", out->CTAPolicy);
    return ncclInvalidArgument;
  }
  if (out->shrinkShare != NCCL_CONFIG_UNDEF_INT && out->shrinkShare != 0 && out->shrinkShare != 1) {
    sn_warn(-1, "Invalid config shrinkShare attribute value %d", out->shrinkShare);
    return ncclInvalidArgument;
  }
  if (out->nvlsCTAs != NCCL_CONFIG_UNDEF_INT && out->nvlsCTAs <= 0) {
    sn_warn(-1, "Invalid config nvlsCTAs attribute value %d", out->nvlsCTAs);
    return ncclInvalidArgument;
  }
  if (out->nChannelsPerNetPeer != NCCL_CONFIG_UNDEF_INT &&
      (out->nChannelsPerNetPeer <= 0 || out->nChannelsPerNetPeer > SN_NCCL_MAXCHANNELS)) {
    sn_warn(-1, "Invalid config nChannelsPerNetPeer attribute value %d", out->nChannelsPerNetPeer);
    return ncclInvalidArgument;
  }
  if (out->nvlinkCentricSched != NCCL_CONFIG_UNDEF_INT && out->nvlinkCentricSched != 0 && out->nvlinkCentricSched != 1) {
    sn_warn(-1, "Invalid config nvlinkCentricSched attribute value %d", out->nvlinkCentricSched);
    return ncclInvalidArgument;
  }
  if (out->blocking == NCCL_CONFIG_UNDEF_INT) {
    const char *e = getenv("NCCL_COMM_BLOCKING");
    out->blocking = e ? atoi(e) != 0 : 1;
  }
  return ncclSuccess;
}

/* ---------------------------------------------------------------- creation */
static _Atomic int comm_counter, tool_comm_counter;
#define TOOL_COMM_INDEX0 1000000
static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static void show_version(void) { sn_info(simcuda_current_device(), "NCCL version 2.28.9+cuda13.0"); }

/* NCCL_CHECK_POINTERS: an NCCL_PARAM (read once per process, init.cc:55), copied into each
 * comm at init as "== 1" (init.cc:452) */
static pthread_once_t check_ptr_once = PTHREAD_ONCE_INIT;
static int check_ptr_param;
static void check_ptr_read(void) {
  const char *e = getenv("NCCL_CHECK_POINTERS");
  check_ptr_param = e && *e ? (int)strtoll(e, NULL, 0) : 0;
}

static struct ncclComm *comm_new(int nranks, int rank, int dev, const char *name, const ncclConfig_t *cfg) {
  struct ncclComm *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->start_magic = c->end_magic = COMM_MAGIC;
  snprintf(c->shm_name, sizeof c->shm_name, "%s", name);
  c->nranks = nranks; c->rank = rank; c->dev = dev;
  /* the job's communicators are numbered 0, 1, ... in creation order (the faults' comm=C);
   * collscope's own (commName collscope-*, created on its thread whenever it gets there)
   * from TOOL_COMM_INDEX0 on, so they never shift the job's numbers */
  if (cfg->commName && !strncmp(cfg->commName, "collscope-", 10))
    c->index = TOOL_COMM_INDEX0 + atomic_fetch_add(&tool_comm_counter, 1);
  else
    c->index = atomic_fetch_add(&comm_counter, 1);
  const char *r = getenv("RANK");
  c->fault_rank = (r && *r) ? atoi(r) : rank;
  c->config = *cfg;
  snprintf(c->comm_name, sizeof c->comm_name, "%s", cfg->commName ? cfg->commName : "");
  c->blocking = cfg->blocking != 0;
  pthread_once(&check_ptr_once, check_ptr_read);
  c->check_pointers = check_ptr_param == 1;
  atomic_store(&c->async_err, ncclInProgress);
  pthread_mutex_init(&c->lock, NULL);
  c->ring = calloc((size_t)nranks, sizeof(int));
  c->pos = calloc((size_t)nranks, sizeof(int));
  c->sent_bytes = calloc((size_t)nranks, sizeof(*c->sent_bytes));
  if (!c->ring || !c->pos || !c->sent_bytes) {
    free(c->ring); free(c->pos); free(c->sent_bytes); free(c);
    return NULL;
  }
  return c;
}

static void comm_free(struct ncclComm *c) {
  if (c->shm) munmap(c->shm, c->shm_size);
  free(c->ring); free(c->pos); free((void *)c->sent_bytes); free(c->userops);
  pthread_mutex_destroy(&c->lock);
  c->start_magic = c->end_magic = 0;
  free(c);
}

static uint64_t bus_id_int(int dev) {
  char buf[64] = "";
  simcuda_pci_bus_id(dev, buf, sizeof buf);
  uint64_t v = 0;
  for (const char *p = buf; *p; p++) {
    int d;
    if (*p >= '0' && *p <= '9') d = *p - '0';
    else if (*p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
    else if (*p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
    else continue;
    v = v << 4 | (uint64_t)d;
  }
  return v;
}

/* The ring NCCL 2.28.9 builds (README "Ring", with source lines): hosts in the order of their
 * lowest rank (init.cc nodesFirstRank); inside a host the GPUs in PCI bus id order
 * (xml.cc keeps PCI children sorted, search.cc tries FORCED_ORDER_PCI first and stores each
 * GPU's rank in graph->intra); the hosts' sequences joined end to start (connect.cc
 * connectRings), and the ring read from rank 0 onwards (rings.cc ncclBuildRings, init.cc
 * setupChannel: ring->index is the distance from rank 0). Ranks sharing one GPU
 * (NCCL_MULTI_RANK_GPU_ENABLE) keep rank order. ring[p] = rank at position p, pos[r] = p. */
static int ring_build(const struct sn_shm *h, int n, int *ring, int *pos) {
  char *done = calloc((size_t)n, 1);
  if (!done) return -1;
  int k = 0;
  for (int r = 0; r < n; r++) {
    if (done[r]) continue;
    /* host of rank r (its lowest rank): insertion sort of its ranks by (bus id, rank) */
    int first = k;
    for (int q = r; q < n; q++) {
      if (done[q] || strcmp(h->ranks[q].host, h->ranks[r].host)) continue;
      done[q] = 1;
      int i = k++;
      while (i > first && h->ranks[ring[i - 1]].busid > h->ranks[q].busid) { ring[i] = ring[i - 1]; i--; }
      ring[i] = q;
    }
  }
  free(done);
  int z = 0;
  while (ring[z] != 0) z++;
  /* rotate so that rank 0 is at position 0 */
  int *tmp = malloc((size_t)n * sizeof *tmp);
  if (!tmp) return -1;
  for (int p = 0; p < n; p++) tmp[p] = ring[(p + z) % n];
  for (int p = 0; p < n; p++) { ring[p] = tmp[p]; pos[ring[p]] = p; }
  free(tmp);
  return 0;
}

/* "Channel 00/02 : 0 3 2 1" as rings.cc:9-26 (dumpLine) prints it from ncclBuildRings on rank
 * 0 (rings.cc:46): " %*d" per rank, the width of nranks-1, the line cut at 127 characters
 * with its end replaced by "..." */
static void ring_print(const struct ncclComm *c, int ch, int nch) {
  enum { LINE = 128 };
  char line[LINE];
  int width = snprintf(NULL, 0, "%d", c->nranks - 1);
  int n = snprintf(line, LINE, "Channel %02d/%02d :", ch, nch);
  for (int i = 0; i < c->nranks && n < LINE - 1; i++)
    n += snprintf(line + n, (size_t)(LINE - n), " %*d", width, c->ring[i]);
  if (n >= LINE) snprintf(line + LINE - 4, 4, "...");
  sn_info(c->dev, "%s", line);
}

static void poison(struct sn_shm *h, ncclResult_t r) {
  uint32_t z = 0;
  atomic_compare_exchange_strong(&h->error, &z, (uint32_t)r);
  bump(&h->board_bell);
}

/* bootstrap: map the segment, check in, wait until all nranks have joined. watch: the
 * parent's segment of a split child (its abort ends the wait, as the parent's
 * childAbortFlag does in NCCL 2.28.9: init.cc:2394-2401 setCommAbortFlags), else NULL */
static ncclResult_t comm_join_watch(struct ncclComm *c, struct sn_shm *watch) {
  int n = c->nranks;
  size_t sz = sn_shm_bytes(n);
  int fd = shm_open(c->shm_name, O_CREAT | O_RDWR, 0600);
  if (fd < 0) { sn_warn(c->dev, "shm_open %s failed: %s", c->shm_name, strerror(errno)); return ncclSystemError; }
  struct stat st;
  if (fstat(fd, &st) != 0 || ((size_t)st.st_size < sz && ftruncate(fd, (off_t)sz) != 0)) {
    sn_warn(c->dev, "cannot size %s: %s", c->shm_name, strerror(errno));
    close(fd);
    return ncclSystemError;
  }
  void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) { sn_warn(c->dev, "mmap %s: %s", c->shm_name, strerror(errno)); return ncclSystemError; }
  c->shm = p; c->shm_size = sz;
  struct sn_shm *h = c->shm;
  uint32_t exp = 0;
  if (!atomic_compare_exchange_strong(&h->nranks, &exp, (uint32_t)n) && exp != (uint32_t)n) {
    sn_warn(c->dev, "Bootstrap : mismatch in rank count: rank %d says nranks %d, communicator has %u",
            c->rank, n, exp);
    poison(h, ncclInvalidUsage);
    return ncclInvalidUsage;
  }
  struct sn_rankinfo *me = &h->ranks[c->rank];
  int zero = 0;
  if (!__atomic_compare_exchange_n(&me->present, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    sn_warn(c->dev, "Bootstrap : rank %d of %d ranks has already checked in", c->rank, n);
    poison(h, ncclInvalidUsage);
    return ncclInvalidUsage;
  }
  snprintf(me->host, sizeof me->host, "%s", simcuda_hostname());
  me->dev = c->dev;
  me->pid = (int)getpid();
  me->busid = bus_id_int(c->dev);
  me->pad = c->fault_rank;   /* the job's rank: the modeled clock's jitter key (model.c) */
  /* the thread that called init (a non-blocking init joins on its own thread) */
  uint64_t vt_in = atomic_load(&c->init_vt);
  me->host_vt = simcuda_model_on() && simcuda_model_now() > vt_in ? simcuda_model_now() : vt_in;
  atomic_fetch_add(&h->joined, 1);
  bump(&h->board_bell);
  for (;;) {
    uint32_t b = atomic_load(&h->board_bell);
    uint32_t err = atomic_load(&h->error);
    if (err) return (ncclResult_t)err;
    if (atomic_load(&h->abort) || atomic_load(&c->aborting) || (watch && atomic_load(&watch->abort)))
      return ncclRemoteError;
    if (atomic_load(&h->joined) >= (uint32_t)n) break;
    /* timed: the parent's abort rings the parent's bell, and this comm's own abort may have
     * come before the segment was mapped */
    sn_wait_ns(&h->board_bell, b, 10000000L);
  }
  /* modeled clock: every member leaves init at the latest member's arrival, as NCCL's init
   * is a bootstrap all-gather (NCCL 2.28.9 src/init.cc:890 initTransportsRank, and :1465 for
   * a split's); so host sleeps before init (a job's own rendezvous retrying) move every
   * member alike */
  if (simcuda_model_on()) {
    uint64_t latest = 0;
    for (int i = 0; i < n; i++)
      if (h->ranks[i].host_vt > latest) latest = h->ranks[i].host_vt;
    simcuda_model_advance_to(latest);
    atomic_store(&c->init_vt, latest);   /* before `ready`: the caller's thread sees it there */
  }
  if (ring_build(h, n, c->ring, c->pos) != 0) return ncclSystemError;
  const char *multi = getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  if (!(multi && atoi(multi))) {
    for (int i = 0; i < n; i++)
      for (int j = 0; j < i; j++)
        if (!strcmp(h->ranks[i].host, h->ranks[j].host) && h->ranks[i].dev == h->ranks[j].dev) {
          sn_warn(c->dev, "Duplicate GPU detected : rank %d and rank %d both on CUDA device %d (host %s)",
                  j, i, h->ranks[i].dev, h->ranks[i].host);
          return ncclInvalidUsage;
        }
  }
  if (c->rank == 0 && sn_debug_level >= 2)
    for (int ch = 0; ch < 2; ch++) ring_print(c, ch, 2);
  sn_info(c->dev, "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %llx - Init COMPLETE",
          (void *)c, c->rank, n, c->dev, c->dev, (unsigned long long)me->busid);
  sn_linkstats_register();
  sn_linkstats_track(c, 1);
  sn_prof_comm_init(c);   /* NCCL_PROFILER_PLUGIN */
  return ncclSuccess;
}
static ncclResult_t comm_join(struct ncclComm *c) { return comm_join_watch(c, NULL); }

static ncclResult_t join_job(struct sn_job *j) {
  ncclResult_t r = comm_join(j->comm);
  atomic_store(&j->comm->async_err, r);
  atomic_store(&j->comm->ready, 1);
  return r;
}
void *sn_job_thread(void *arg) {
  struct sn_job *j = arg;
  j->res = j->fn(j);
  return NULL;
}

ncclResult_t sn_comm_ensure_ready(struct ncclComm *c) {
  pthread_mutex_lock(&c->lock);
  if (c->init_thread_live) {
    pthread_join(c->init_thread, NULL);
    if (simcuda_model_on()) simcuda_model_advance_to(atomic_load(&c->init_vt));   /* waited for it */
    c->init_thread_live = 0;
    free(c->init_job);
    c->init_job = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  int e = atomic_load(&c->async_err);
  return e == ncclInProgress ? ncclSuccess : (ncclResult_t)e;
}

static void job_free(struct sn_job *j) { free(j); }

static ncclResult_t init_rank(ncclComm_t *newcomm, int nranks, const ncclUniqueId *uid, int rank,
                              const ncclConfig_t *config, int dev, const char *fn) {
  sn_debug_init();
  pthread_once(&version_once, show_version);
  /* NCCL's order (init.cc ncclCommInitRankDev): nId <= 0 || nId > nranks returns at once and
   * leaves *newcomm alone (init.cc:1965, nId is 1 here, so nranks < 1 lands there); every later
   * failure goes to its fail label, which sets *newcomm = NULL (init.cc:2040): a bad rank
   * (init.cc:1986), a bad config (init.cc:1998); the simulator's own refusals do the same. */
  if (nranks < 1) {
    sn_warn(dev, "improper usage of ncclCommInitRank: nId = %d, nranks=%d", 1, nranks);
    return ncclInvalidArgument;
  }
  if (ptr_check(newcomm, fn, "newcomm")) return ncclInvalidArgument;
  if (rank < 0 || rank >= nranks) {
    sn_warn(dev, "Invalid rank requested : %d/%d", rank, nranks);
    *newcomm = NULL;
    return ncclInvalidArgument;
  }
  ncclConfig_t cfg;
  ncclResult_t r = parse_config(config, &cfg);
  if (r) { *newcomm = NULL; return r; }
  if (nranks > SN_MAXRANKS) {
    sn_warn(dev, "simulator limit: nranks %d > %d", nranks, SN_MAXRANKS);
    *newcomm = NULL;
    return ncclInvalidUsage;
  }
  struct sn_id id;
  memcpy(&id, uid->internal, sizeof id);
  if (id.magic != SN_ID_MAGIC || !memchr(id.name, 0, sizeof id.name) || id.name[0] != '/') {
    sn_warn(dev, "%s : ncclUniqueId was not produced by ncclGetUniqueId", fn);
    *newcomm = NULL;
    return ncclInvalidArgument;
  }
  struct ncclComm *c = comm_new(nranks, rank, dev, id.name, &cfg);
  if (!c) { *newcomm = NULL; return ncclSystemError; }
  *newcomm = c;
  if (simcuda_model_on()) atomic_store(&c->init_vt, simcuda_model_now());   /* the caller's host time */
  struct sn_job *j = calloc(1, sizeof *j);
  if (!j) { comm_free(c); *newcomm = NULL; return ncclSystemError; }
  j->fn = join_job; j->done = job_free; j->comm = c; j->nonblocking = !c->blocking;
  if (sn_group_add_job(j)) return c->blocking ? ncclSuccess : ncclInProgress;
  if (!c->blocking) {
    if (pthread_create(&c->init_thread, NULL, sn_job_thread, j) != 0) { free(j); return ncclSystemError; }
    c->init_thread_live = 1;
    c->init_job = j;
    return ncclInProgress;
  }
  r = join_job(j);
  free(j);
  if (r != ncclSuccess) {
    sn_linkstats_track(c, 0);
    shm_unlink(c->shm_name);
    comm_free(c);
    *newcomm = NULL;
  }
  return r;
}

SN_API ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                            ncclConfig_t *config) {
  return init_rank(comm, nranks, &commId, rank, config, simcuda_current_device(), "ncclCommInitRankConfig");
}
SN_ALIAS(ncclCommInitRankConfig)

SN_API ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank(comm, nranks, &commId, rank, NULL, simcuda_current_device(), "ncclCommInitRank");
}
SN_ALIAS(ncclCommInitRank)

SN_API ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                              ncclUniqueId *commIds, ncclConfig_t *config) {
  if (nId <= 0 || nId > nranks) {
    sn_warn(-1, "improper usage of ncclCommInitRank: nId = %d, nranks=%d", nId, nranks);
    return ncclInvalidArgument;
  }
  if (ptr_check(commIds, "ncclCommInitRankScalable", "commIds")) return ncclInvalidArgument;
  return init_rank(newcomm, nranks, &commIds[0], myrank, config, simcuda_current_device(),
                   "ncclCommInitRankScalable");
}
SN_ALIAS(ncclCommInitRankScalable)

/* used by ncclCommInitAll (nested.c) */
ncclResult_t sn_init_rank_dev(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank, int dev) {
  return init_rank(comm, nranks, id, rank, NULL, dev, "ncclCommInitAll");
}

/* ---------------------------------------------------------------- split / shrink */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ull; }
  return h;
}

static int split_cmp_key[SN_MAXRANKS];
static int cmp_member(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  if (split_cmp_key[x] != split_cmp_key[y]) return split_cmp_key[x] < split_cmp_key[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}
static pthread_mutex_t split_mu = PTHREAD_MUTEX_INITIALIZER;

static ncclResult_t split_job(struct sn_job *j) {
  struct ncclComm *p = j->parent;
  struct sn_shm *h = p->shm;
  int n = p->nranks;
  unsigned g = (unsigned)j->gen;
  struct sn_board_entry *mine = &h->board[g % 2][p->rank];
  mine->v[0] = j->color; mine->v[1] = j->key;
  __atomic_store_n(&mine->gen, g + 1, __ATOMIC_RELEASE);
  bump(&h->board_bell);
  char excluded[SN_MAXRANKS] = {0};
  for (int i = 0; i < j->nexclude; i++)
    if (j->exclude[i] >= 0 && j->exclude[i] < n) excluded[j->exclude[i]] = 1;
  for (;;) {
    uint32_t b = atomic_load(&h->board_bell);
    int all = 1;
    for (int r = 0; r < n && all; r++)
      if (!excluded[r] && __atomic_load_n(&h->board[g % 2][r].gen, __ATOMIC_ACQUIRE) < g + 1) all = 0;
    if (all) break;
    if (atomic_load(&h->abort)) return ncclRemoteError;
    sn_wait(&h->board_bell, b);
  }
  if (j->color == NCCL_SPLIT_NOCOLOR) { *j->newcomm = NULL; return ncclSuccess; }
  int members[SN_MAXRANKS], nm = 0, newrank = -1;
  pthread_mutex_lock(&split_mu);
  for (int r = 0; r < n; r++) {
    if (excluded[r] || h->board[g % 2][r].v[0] != j->color) continue;
    split_cmp_key[r] = (int)h->board[g % 2][r].v[1];
    members[nm++] = r;
  }
  qsort(members, (size_t)nm, sizeof(int), cmp_member);   /* by key, ties by parent rank */
  pthread_mutex_unlock(&split_mu);
  for (int i = 0; i < nm; i++) if (members[i] == p->rank) newrank = i;
  uint64_t hsh = fnv(0xcbf29ce484222325ull, p->shm_name, strlen(p->shm_name));
  hsh = fnv(hsh, &g, sizeof g);
  hsh = fnv(hsh, &j->color, sizeof j->color);
  hsh = fnv(hsh, &j->is_shrink, sizeof j->is_shrink);
  char name[112];
  snprintf(name, sizeof name, "/collscope-nccl-%u-split-%016llx", (unsigned)getuid(), (unsigned long long)hsh);
  /* the child's config is the given one, else a copy of the parent's (init.cc:2598-2602):
   * its blocking flag is the child's own (init.cc:1936); the split call itself follows the
   * parent's (split_common) */
  ncclConfig_t cfg;
  ncclResult_t r = parse_config(j->has_config ? &j->config : &p->config, &cfg);
  if (r) return r;
  struct ncclComm *c = comm_new(nm, newrank, p->dev, name, &cfg);
  if (!c) return ncclSystemError;
  r = comm_join_watch(c, h);
  atomic_store(&c->async_err, r);
  atomic_store(&c->ready, 1);
  if (r != ncclSuccess) {
    sn_linkstats_track(c, 0);
    shm_unlink(c->shm_name);
    comm_free(c);
    *j->newcomm = NULL;
    return r;
  }
  __atomic_store_n(j->newcomm, c, __ATOMIC_RELEASE); /* init.cc:1612-1614 */
  return ncclSuccess;
}

/* A split of a non-blocking parent finishing on its own thread: its result becomes the
 * parent's asynchronous error (group.cc:608-611; on failure group.cc:389-391), so
 * ncclSuccess once the child is ready. */
static ncclResult_t split_async_job(struct sn_job *j) {
  ncclResult_t r = split_job(j);
  atomic_store(&j->parent->async_err, r);
  return r;
}

static ncclResult_t split_common(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config,
                                 int *excl, int nexcl, int is_shrink, const char *fn) {
  ncclResult_t r;
  if ((r = sn_comm_check(comm, fn))) return r;
  if (ptr_check(newcomm, fn, "newcomm")) return ncclInvalidArgument;
  if (is_shrink) {
    if (ptr_check(excl, fn, "excludeRanksList")) return ncclInvalidArgument;
    if (nexcl <= 0) return ncclInvalidArgument;
    for (int i = 0; i < nexcl; i++) if (excl[i] == comm->rank) return ncclInvalidArgument;
  }
  if ((r = sn_comm_ensure_ready(comm))) return r;
  if (config) { ncclConfig_t tmp; if ((r = parse_config(config, &tmp))) return r; }
  *newcomm = NULL;
  struct sn_job *j = calloc(1, sizeof *j + (size_t)(nexcl > 0 ? nexcl : 0) * sizeof(int));
  if (!j) return ncclSystemError;
  j->fn = split_job; j->done = job_free; j->parent = comm;
  j->color = is_shrink ? 0 : color; j->key = is_shrink ? comm->rank : key;
  j->newcomm = newcomm; j->is_shrink = is_shrink;
  if (config) { j->config = *config; j->has_config = 1; }
  j->exclude = (int *)(j + 1); j->nexclude = nexcl;
  for (int i = 0; i < nexcl; i++) j->exclude[i] = excl[i];
  pthread_mutex_lock(&comm->lock);
  j->gen = comm->splits++;
  pthread_mutex_unlock(&comm->lock);
  if (sn_group_add_job(j)) return ncclSuccess;
  if (!comm->blocking) {
    /* NCCL 2.28.9: ncclCommSplit runs in a group of its own (init.cc:2670, 2678) whose
     * blocking mode is the parent's (group.cc:54-56, ncclAsyncLaunch), whatever the child's
     * config says. A non-blocking group marks the parent ncclInProgress, finishes on a
     * thread and returns ncclInProgress (group.cc:706-738); *newcomm stays NULL until the
     * child is complete (init.cc:2572, 1612-1614). The caller polls the parent with
     * ncclCommGetAsyncError (init.cc:2706-2710); ncclCommAbort of the parent ends a split
     * still waiting for ranks (init.cc:2515-2519: the abort flags, then the join). The
     * parent is ready here (sn_comm_ensure_ready above), so its init thread slot is free. */
    j->fn = split_async_job;
    atomic_store(&comm->async_err, ncclInProgress);
    pthread_mutex_lock(&comm->lock);
    if (pthread_create(&comm->init_thread, NULL, sn_job_thread, j) != 0) {
      pthread_mutex_unlock(&comm->lock);
      atomic_store(&comm->async_err, ncclSuccess);
      free(j);
      return ncclSystemError;
    }
    comm->init_thread_live = 1;
    comm->init_job = j;
    pthread_mutex_unlock(&comm->lock);
    return ncclInProgress;
  }
  /* a blocking parent: the split returns once every rank of the parent has called it */
  r = split_job(j);
  free(j);
  return r;
}

/* Any color is accepted: NCCL 2.28.9 treats only NCCL_SPLIT_NOCOLOR specially (init.cc:1468,
 * 2573) and has no range check, so a color of -5 is one more color. */
SN_API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
  return split_common(comm, color, key, newcomm, config, NULL, 0, 0, "ncclCommSplit");
}
SN_ALIAS(ncclCommSplit)

SN_API ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                    ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) return ncclInvalidArgument;
  return split_common(comm, 0, 0, newcomm, config, excludeRanksList, excludeRanksCount, 1, "ncclCommShrink");
}
SN_ALIAS(ncclCommShrink)

/* ---------------------------------------------------------------- teardown */
void sn_comm_wait_idle(struct ncclComm *c) {
  for (;;) {
    pthread_mutex_lock(&c->lock);
    uint32_t issued = c->issued;
    pthread_mutex_unlock(&c->lock);
    uint32_t d = atomic_load(&c->done);
    if (d == issued) return;
    sn_wait(&c->done, d);
  }
}

static void set_abort(struct ncclComm *c) {
  /* also before the init thread mapped the segment: it checks this flag every 10 ms (NCCL's
   * abort sets the flag its bootstrap waits poll, then joins the init thread: init.cc:2515-2519) */
  atomic_store(&c->aborting, 1);
  struct sn_shm *h = c->shm;
  if (!h) return;
  atomic_store(&h->abort, 1);
  sn_wake(&h->abort);
  bump(&h->board_bell);
  for (int r = 0; r < c->nranks; r++) sn_ring_bell(c, r);
}

static void comm_leave(struct ncclComm *c, int unlink_now) {
  sn_prof_comm_fini(c);
  sn_net_close(c);
  sn_linkstats_track(c, 0);
  if (c->shm) {
    uint32_t left = atomic_fetch_add(&c->shm->left, 1) + 1;
    if (left == (uint32_t)c->nranks || unlink_now) shm_unlink(c->shm_name);
  }
  comm_free(c);
}

SN_API ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  ncclResult_t r;
  if (comm == NULL) return ncclSuccess;   /* init.cc:2271 goto exit with ncclSuccess */
  if ((r = sn_comm_check(comm, "ncclCommFinalize"))) return r;
  (void)sn_comm_ensure_ready(comm);
  /* init.cc:2276-2280 "prevent double finalize": ncclInvalidArgument, no WARN */
  if (comm->finalized) return ncclInvalidArgument;
  sn_comm_wait_idle(comm);
  comm->finalized = 1;
  return ncclSuccess;
}
SN_ALIAS(ncclCommFinalize)

SN_API ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  /* a destroyed comm: NCCL's own double-free check and text (init.cc:2373-2376) */
  if (!sn_comm_ok(comm)) {
    sn_warn(-1, "comm %p has already been destroyed", (void *)comm);
    return ncclInvalidArgument;
  }
  (void)sn_comm_ensure_ready(comm);
  sn_info(comm->dev, "comm %p rank %d nRanks %d cudaDev %d - Destroy COMPLETE", (void *)comm, comm->rank,
          comm->nranks, comm->dev);
  sn_comm_wait_idle(comm);
  comm_leave(comm, 0);
  return ncclSuccess;
}
SN_ALIAS(ncclCommDestroy)

SN_API ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  ncclResult_t r;
  if ((r = sn_comm_check(comm, "ncclCommAbort"))) return r;
  /* a nonblocking init still waiting for peers stops on the abort flag */
  set_abort(comm);
  (void)sn_comm_ensure_ready(comm);
  set_abort(comm);
  sn_comm_wait_idle(comm);
  sn_info(comm->dev, "comm %p rank %d nRanks %d cudaDev %d - Abort COMPLETE", (void *)comm, comm->rank,
          comm->nranks, comm->dev);
  comm_leave(comm, 1);
  return ncclSuccess;
}
SN_ALIAS(ncclCommAbort)

SN_API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  if (comm == NULL) return ncclSuccess;
  ncclResult_t r;
  if ((r = sn_comm_check(comm, "ncclCommRevoke"))) return r;
  if (revokeFlags != NCCL_REVOKE_DEFAULT) return ncclInvalidArgument;
  if (comm->finalized || comm->revoked) return ncclInvalidArgument;
  (void)sn_comm_ensure_ready(comm);
  comm->revoked = 1;
  set_abort(comm);
  sn_comm_wait_idle(comm);
  comm->finalized = 1;
  return ncclSuccess;
}
SN_ALIAS(ncclCommRevoke)

/* ---------------------------------------------------------------- queries */
SN_API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  ncclResult_t r;
  if ((r = sn_comm_check(comm, "ncclGetAsyncError"))) return r;
  if (ptr_check(asyncError, "ncclGetAsyncError", "asyncError")) return ncclInvalidArgument;
  if (!atomic_load(&comm->ready)) { *asyncError = ncclInProgress; return ncclSuccess; }
  *asyncError = (ncclResult_t)atomic_load(&comm->async_err);
  /* modeled clock: a thread that sees the init done is no earlier than the init's end */
  if (simcuda_model_on() && *asyncError != ncclInProgress) simcuda_model_advance_to(atomic_load(&comm->init_vt));
  return ncclSuccess;
}
SN_ALIAS(ncclCommGetAsyncError)

/* A query needs a ready communicator: NCCL 2.28.9's ncclCommCount, ncclCommCuDevice and
 * ncclCommUserRank call ncclCommEnsureReady (init.cc:2748), which refuses a communicator whose
 * non-blocking init or split is still in progress -- its asynchronous state is ncclInProgress --
 * with a WARN and ncclInvalidArgument (init.cc:379-383); it never waits for it. A blocking
 * communicator's state is ncclSuccess from the start (calloc; only a non-blocking group sets
 * ncclInProgress, group.cc:711, 724). */
static ncclResult_t query_ready(struct ncclComm *c) {
  if (!c->blocking && atomic_load(&c->async_err) == ncclInProgress) {
    sn_warn(c->dev, "Attempt to use communicator before the previous operation returned ncclSuccess");
    return ncclInvalidArgument;
  }
  return sn_comm_ensure_ready(c);
}

/* NCCL names these checks "CommCount", "CommCuDevice", "CommUserRank" (init.cc:2744-2772) */
#define QUERY(fnname, T, field, label)                                                      \
  SN_API ncclResult_t p##fnname(const ncclComm_t comm, T *out) {                            \
    ncclResult_t r;                                                                         \
    if ((r = sn_comm_check(comm, &#fnname[4]))) return r;                                   \
    if (ptr_check(out, &#fnname[4], label)) return ncclInvalidArgument;                     \
    if ((r = query_ready(comm))) return r;                                                  \
    *out = comm->field;                                                                     \
    return ncclSuccess;                                                                     \
  }                                                                                         \
  SN_ALIAS(fnname)
QUERY(ncclCommCount, int, nranks, "count")
QUERY(ncclCommCuDevice, int, dev, "devid")
QUERY(ncclCommUserRank, int, rank, "rank")

/* ---------------------------------------------------------------- memory, registration */
/* NCCL 2.28.9 (allocator.cc:27, 92): a NULL ptr or a size of 0 falls through to
 * cudaMalloc(ptr, size) under CUDACHECKGOTO (checks.h:21-28): size 0 returns ncclSuccess with
 * *ptr NULL (cudaMalloc's answer), a NULL ptr "Cuda failure 'invalid argument'" and
 * ncclUnhandledCudaError. */
SN_API ncclResult_t pncclMemAlloc(void **ptr, size_t size) {
  if (ptr == NULL) {
    sn_warn(-1, "Cuda failure 'invalid argument'");
    return ncclUnhandledCudaError;
  }
  if (size == 0) {
    *ptr = NULL;
    return ncclSuccess;
  }
  CUdeviceptr d = 0;
  CUresult cr = cuMemAlloc(&d, size);
  if (cr != CUDA_SUCCESS) { sn_warn(-1, "Cuda failure %d in ncclMemAlloc", (int)cr); return ncclUnhandledCudaError; }
  *ptr = (void *)(uintptr_t)d;
  return ncclSuccess;
}
SN_ALIAS(ncclMemAlloc)

SN_API ncclResult_t pncclMemFree(void *ptr) {
  if (ptr == NULL) return ncclSuccess;
  CUresult cr = cuMemFree((CUdeviceptr)(uintptr_t)ptr);
  if (cr != CUDA_SUCCESS) { sn_warn(-1, "Cuda failure %d in ncclMemFree", (int)cr); return ncclUnhandledCudaError; }
  return ncclSuccess;
}
SN_ALIAS(ncclMemFree)

struct sn_reg { uint64_t magic; void *buff; size_t size; };
#define REG_MAGIC 0x7265676973746572ull
SN_API ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  ncclResult_t r;
  if ((r = sn_comm_check(comm, "ncclCommRegister"))) return r;
  if (ptr_check(buff, "ncclCommRegister", "buff") || ptr_check(handle, "ncclCommRegister", "handle"))
    return ncclInvalidArgument;
  struct sn_reg *g = malloc(sizeof *g);
  if (!g) return ncclSystemError;
  g->magic = REG_MAGIC; g->buff = buff; g->size = size;
  *handle = g;
  return ncclSuccess;
}
SN_ALIAS(ncclCommRegister)

SN_API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle) {
  ncclResult_t r;
  if ((r = sn_comm_check(comm, "ncclCommDeregister"))) return r;
  struct sn_reg *g = handle;
  if (!g || g->magic != REG_MAGIC) { sn_warn(comm->dev, "ncclCommDeregister : invalid handle"); return ncclInvalidArgument; }
  g->magic = 0;
  free(g);
  return ncclSuccess;
}
SN_ALIAS(ncclCommDeregister)

struct ncclWindow_vidmem { uint64_t magic; void *buff; size_t size; int flags; };
SN_API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags) {
  ncclResult_t r;
  if ((r = sn_comm_check(comm, "ncclCommWindowRegister"))) return r;
  if (ptr_check(win, "ncclCommWindowRegister", "win")) return ncclInvalidArgument;
  if (buff == NULL || size == 0) { *win = NULL; return ncclSuccess; }
  struct ncclWindow_vidmem *w = malloc(sizeof *w);
  if (!w) return ncclSystemError;
  w->magic = REG_MAGIC; w->buff = buff; w->size = size; w->flags = winFlags;
  *win = w;
  return ncclSuccess;
}
SN_ALIAS(ncclCommWindowRegister)

SN_API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  ncclResult_t r;
  if ((r = sn_comm_check(comm, "ncclCommWindowDeregister"))) return r;
  if (win == NULL) return ncclSuccess;
  if (win->magic != REG_MAGIC) return ncclInvalidArgument;
  win->magic = 0;
  free(win);
  return ncclSuccess;
}
SN_ALIAS(ncclCommWindowDeregister)

/* ---------------------------------------------------------------- user reduction ops */
SN_API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                              ncclScalarResidence_t residence, ncclComm_t comm) {
  ncclResult_t r;
  if ((r = sn_comm_check(comm, "ncclRedOpCreatePreMulSum"))) return r;
  if ((r = sn_comm_ensure_ready(comm))) return r;
  if (ptr_check(op, "ncclRedOpCreatePreMulSum", "op")) return ncclInvalidArgument;
  if (sn_type_size((int)datatype) < 1) return ncclInternalError;
  if (ptr_check(scalar, "ncclRedOpCreatePreMulSum", "scalar")) return ncclInvalidArgument;
  pthread_mutex_lock(&comm->lock);
  int ix;
  for (ix = 0; ix < comm->nuserops; ix++) if (!comm->userops[ix].used) break;
  if (ix == comm->nuserops) {
    struct sn_userop *n = realloc(comm->userops, (size_t)(ix + 4) * sizeof *n);
    if (!n) { pthread_mutex_unlock(&comm->lock); return ncclSystemError; }
    memset(n + ix, 0, 4 * sizeof *n);
    comm->userops = n; comm->nuserops = ix + 4;
  }
  struct sn_userop *u = &comm->userops[ix];
  u->used = 1; u->dtype = (int)datatype;
  if (residence == ncclScalarHostImmediate) {
    u->is_ptr = 0;
    memset(u->scalar, 0, 8);
    memcpy(u->scalar, scalar, sn_type_size((int)datatype));
  } else {
    u->is_ptr = 1; u->ptr = scalar;
  }
  pthread_mutex_unlock(&comm->lock);
  *op = (ncclRedOp_t)((int)ncclNumOps + ix);
  return ncclSuccess;
}
SN_ALIAS(ncclRedOpCreatePreMulSum)

SN_API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  if (0 <= (int)op && (int)op < (int)ncclNumOps) { sn_warn(-1, "ncclRedOpDestroy : operator is a NCCL builtin."); return ncclInvalidArgument; }
  if ((int)op < 0) { sn_warn(-1, "ncclRedOpDestroy :  operator is garbage."); return ncclInvalidArgument; }
  if (comm == NULL) { sn_warn(-1, "ncclRedOpDestroy : invalid communicator passed."); return ncclInvalidArgument; }
  int ix = (int)op - (int)ncclNumOps;
  pthread_mutex_lock(&comm->lock);
  if (ix >= comm->nuserops || !comm->userops[ix].used) {
    pthread_mutex_unlock(&comm->lock);
    sn_warn(comm->dev, "ncclRedOpDestroy : operator unknown to this communicator.");
    return ncclInvalidArgument;
  }
  comm->userops[ix].used = 0;
  pthread_mutex_unlock(&comm->lock);
  return ncclSuccess;
}
SN_ALIAS(ncclRedOpDestroy)
