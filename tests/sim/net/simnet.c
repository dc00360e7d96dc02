/* tests/sim/net/simnet.c: libnccl-net-simnet.so, the simulator's network plugin. It exports
 * ncclNetPlugin_v11 (NCCL's net plugin ABI, include/collscope/nccl_net_abi.h) over a real
 * inter-process transport, so the simulated libnccl.so.2 carries its inter-host traffic (ring
 * hops and pairwise transfers) through the same calls NCCL makes on a NIC, and libcollscope's
 * NCCL_NET wrapper can sit in between (tests/net).
 *
 * Transport: one POSIX shm segment per connection, created by listen() and named in the
 * 56-byte handle. connect() maps it, claims it (one connection per listen handle, as NCCL
 * uses them), writes its host and unlinks the name; accept() returns a recvComm once claimed
 * (NULL before, as the ABI allows). The segment holds SN_NET_SLOTS message slots of
 * SN_NET_SLOT_BYTES: isend copies the message into a free slot at once (the request completes
 * when the message is delivered, see below), or returns a NULL request at once when all slots
 * are full; irecv/test copy the oldest message out. One receive per irecv (maxRecvs 1).
 *
 * Wire model: a message of B bytes posted at t is delivered at t + B / COLLSCOPE_SIMNET_GBPS
 * (default 100 Gbit/s) + the link delay of the host pair (COLLSCOPE_SIM_FAULTS
 * `link:a=HOST,b=HOST,us=U`, same syntax as the simulator; both ends use the delay the
 * connector computed), and a slow NIC at either end (`nic:host=H,pct=P` or `us=U`: every
 * message to or from H at 1 / (1 + P/100) of the bandwidth, U us later, as the simulator's
 * collective cost model applies it to every inter-host edge with an end on H). Both sides' test() report done no earlier than the
 * delivery time, so a slow link shows in every message's isend/irecv-to-done time.
 *
 * Modeled clock (COLLSCOPE_SIM_CLOCK=model, docs/simulator.md): inside a collective the
 * stream worker's CLOCK_MONOTONIC is the simulator's modeled network clock (libcuda.so.1's
 * simcuda_model_mono, found with dlsym: this plugin links no simulator library). Then a
 * send completes at its first test(), moving that clock to its delivery time (post + wire
 * + link delay), and a receive as soon as the message is there: no waiting, and every
 * post-to-done time a wrapper measures on the sending side is the wire model's.
 *
 * Waiting: to keep 2-core machines usable, a test() that cannot complete waits up
 * to 1 ms (futex on the segment's doorbell, or a sleep until the delivery time) before it
 * returns "not done"; callers poll again. No thread of its own.
 *
 * Test hooks: COLLSCOPE_SIMNET_FAIL=init makes init fail (fail-open tests), =connect makes
 * connect fail. */
#include "collscope/nccl_net_abi.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
#define SN_NET_SLOTS 4
#define SN_NET_SLOT_BYTES (512u * 1024u)
#define SEG_MAGIC 0x53494d4e4554302full     /* "SIMNET0/" */
#define HANDLE_MAGIC 0x736e6574686e646cull  /* "snethndl" */

struct seg {
  uint64_t magic;
  _Atomic uint32_t connected;   /* 0 listening, 1 being claimed, 2 connected */
  _Atomic uint32_t bell;        /* futex: bumped on every head/tail change and on connect */
  _Atomic uint32_t head, tail;
  uint32_t delay_us;
  uint32_t slow_ppm;            /* the wire time's extra share in millionths (slow NICs at the ends) */
  _Atomic uint32_t sleeper;     /* set by a receiver that sleeps on bell (bell_wait) */
  char lhost[64], chost[64];
  struct { uint64_t len; int64_t deliver_ns; } meta[SN_NET_SLOTS];
  unsigned char data[SN_NET_SLOTS][SN_NET_SLOT_BYTES] __attribute__((aligned(64)));
};
struct handle { uint64_t magic; char name[48]; };
_Static_assert(sizeof(struct handle) <= CS_NET_ID_OFFSET, "simnet leaves room for collscope's identity block");

struct comm;
struct req {
  struct comm *c;
  int used, send;
  int64_t deliver_ns;           /* send */
  void *buf;                    /* recv */
  size_t cap;
  uint64_t seq;
};
struct comm {
  struct seg *s;
  int send;
  uint64_t posted, consumed;    /* recv: irecv order */
  struct req reqs[CS_NET_MAX_REQUESTS];
};
struct listen { struct seg *s; char name[48]; int accepted; };

static char self_host[64];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static _Atomic unsigned name_ctr;
static int mh_dummy;

static void host_init(void) {
  const char *h = getenv("COLLSCOPE_HOSTNAME");
  if (h && *h) snprintf(self_host, sizeof self_host, "%s", h);
  else if (gethostname(self_host, sizeof self_host - 1) != 0) snprintf(self_host, sizeof self_host, "localhost");
}

/* the modeled network clock, while a collective runs on this stream worker (see above) */
typedef int (*mono_fn)(uint64_t *);
typedef void (*mono_adv_fn)(uint64_t);
static int model_mono(uint64_t *ns, mono_adv_fn *adv) {
  static _Atomic int looked;
  static mono_fn get;
  static mono_adv_fn set;
  if (!atomic_load_explicit(&looked, memory_order_acquire)) {
    get = (mono_fn)dlsym(RTLD_DEFAULT, "simcuda_model_mono");
    set = (mono_adv_fn)dlsym(RTLD_DEFAULT, "simcuda_model_mono_advance_to");
    atomic_store_explicit(&looked, 1, memory_order_release);
  }
  if (!get || !set || !get(ns)) return 0;
  if (adv) *adv = set;
  return 1;
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}
/* waits of up to 50 us are spun (a sleep that short oversleeps by tens of us, which would be
 * most of a small message's modelled time); longer ones sleep */
static void sleep_ns(int64_t ns) {
  if (ns <= 0) return;
  if (ns <= 50000) {
    int64_t end = now_ns() + ns;
    while (now_ns() < end) {}
    return;
  }
  struct timespec t = {ns / 1000000000LL, ns % 1000000000LL};
  nanosleep(&t, NULL);
}
/* The receiver sets `sleeper` before it sleeps on bell; a ring always bumps bell but makes
 * the wake system call only when it clears that flag. Both sides' updates are lock-prefixed
 * (full barriers): a receiver that sets the flag after a ring cleared it reads the bumped
 * bell in FUTEX_WAIT and returns at once. */
static void bell_wait(struct seg *s, uint32_t v, int64_t ns) {
  struct timespec t = {ns / 1000000000LL, ns % 1000000000LL};
  atomic_exchange(&s->sleeper, 1);
  syscall(SYS_futex, (uint32_t *)&s->bell, FUTEX_WAIT, v, &t, NULL, 0);
}
static void bell_ring(struct seg *s) {
  atomic_fetch_add(&s->bell, 1);
  if (atomic_load(&s->sleeper) && atomic_exchange(&s->sleeper, 0))
    syscall(SYS_futex, (uint32_t *)&s->bell, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* `link:a=HOST,b=HOST,us=U` entries of COLLSCOPE_SIM_FAULTS between the two hosts (summed), and
 * `nic:host=H,...` entries with H at one end (their us summed, their pct slowing the wire:
 * *slow_ppm the product's extra share); other kinds and bad entries are the simulator's business
 * (it reports them). A fault with a mid-job onset (`from=S`, S > 0) is left to the simulator's
 * modeled cost: a connection here has no collective count. */
static unsigned link_delay_us(const char *ha, const char *hb, uint32_t *slow_ppm) {
  double scale = 1.0;
  const char *v = getenv("COLLSCOPE_SIM_FAULTS");
  if (!v || !*v) return 0;
  char *dup = strdup(v), *save = NULL;
  unsigned us = 0;
  if (!dup) return 0;
  for (char *ent = strtok_r(dup, ";", &save); ent; ent = strtok_r(NULL, ";", &save)) {
    while (*ent == ' ') ent++;
    int nic = !strncmp(ent, "nic:", 4);
    if (strncmp(ent, "link:", 5) && !nic) continue;
    char a[64] = "", b[64] = "", *s2 = NULL;
    long u = nic ? 0 : -1;
    double pct = 0;
    for (char *kv = strtok_r(ent + (nic ? 4 : 5), ",", &s2); kv; kv = strtok_r(NULL, ",", &s2)) {
      char *eq = strchr(kv, '=');
      if (!eq) continue;
      *eq = 0;
      if (!strcmp(kv, "a") || (nic && !strcmp(kv, "host"))) snprintf(a, sizeof a, "%s", eq + 1);
      else if (nic && !strcmp(kv, "pct")) pct = strtod(eq + 1, NULL);
      else if (!strcmp(kv, "b")) snprintf(b, sizeof b, "%s", eq + 1);
      else if (!strcmp(kv, "us")) u = strtol(eq + 1, NULL, 10);
      else if (!strcmp(kv, "from") && strtol(eq + 1, NULL, 10) > 0) u = -1;   /* an onset: the simulator's cost only */
    }
    if (nic) { /* its NIC carries every inter-host message with an end on it */
      if (!a[0] || u < 0 || !(pct >= 0 && pct < 1e6) || !strcmp(ha, hb) || (strcmp(a, ha) && strcmp(a, hb))) continue;
      us += (unsigned)u;
      scale *= 1.0 + pct / 100.0;
      continue;
    }
    if (!a[0] || !b[0] || u < 0) continue;
    if ((!strcmp(a, ha) && !strcmp(b, hb)) || (!strcmp(a, hb) && !strcmp(b, ha))) us += (unsigned)u;
  }
  free(dup);
  *slow_ppm = scale < 4000.0 ? (uint32_t)((scale - 1.0) * 1e6 + 0.5) : UINT32_MAX;
  return us;
}

static int64_t wire_ns(size_t bytes) {
  static double gbps;
  if (gbps <= 0) {
    const char *v = getenv("COLLSCOPE_SIMNET_GBPS");
    double g = v && *v ? strtod(v, NULL) : 100.0;
    gbps = g > 0 ? g : 100.0;
  }
  return (int64_t)((double)bytes * 8.0 / gbps);
}

static int fail_is(const char *what) {
  const char *v = getenv("COLLSCOPE_SIMNET_FAIL");
  return v && !strcmp(v, what);
}

/* ---------------------------------------------------------------- the v11 table */
static int ctx_token;
static cs_net_result_t sn_init(void **ctx, uint64_t commId, struct cs_net_comm_config *cfg, cs_net_logger_t log,
                               cs_net_prof_cb_t prof) {
  (void)commId, (void)cfg, (void)log, (void)prof;
  if (fail_is("init")) return CS_NET_SYSTEM_ERROR;
  pthread_once(&host_once, host_init);
  *ctx = &ctx_token;
  return CS_NET_OK;
}
static cs_net_result_t sn_devices(int *n) { *n = 1; return CS_NET_OK; }
static cs_net_result_t sn_props(int dev, struct cs_net_props_v11 *p) {
  if (dev != 0) return CS_NET_INVALID_ARGUMENT;
  static char name[] = "simnet0";
  memset(p, 0, sizeof *p);
  p->name = name;
  p->guid = 0x73696d6e6574ull;
  p->ptrSupport = CS_NET_PTR_HOST | CS_NET_PTR_CUDA;   /* simulated device memory is host memory */
  p->speed = 100000;
  p->maxComms = 1 << 20;
  p->maxRecvs = 1;
  p->vProps.ndevs = 1;
  p->maxP2pBytes = SN_NET_SLOT_BYTES;
  p->maxCollBytes = SN_NET_SLOT_BYTES;
  p->maxMultiRequestSize = 1;
  return CS_NET_OK;
}
static cs_net_result_t sn_listen(void *ctx, int dev, void *handle, void **listenComm) {
  (void)ctx, (void)dev;
  struct listen *l = calloc(1, sizeof *l);
  if (!l) return CS_NET_SYSTEM_ERROR;
  unsigned rnd = (unsigned)(now_ns() & 0xffffff);
  snprintf(l->name, sizeof l->name, "/simnet-%d-%u-%06x", (int)getpid(), atomic_fetch_add(&name_ctr, 1), rnd);
  int fd = shm_open(l->name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) { free(l); return CS_NET_SYSTEM_ERROR; }
  if (ftruncate(fd, sizeof(struct seg)) != 0) { close(fd); shm_unlink(l->name); free(l); return CS_NET_SYSTEM_ERROR; }
  l->s = mmap(NULL, sizeof(struct seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (l->s == MAP_FAILED) { shm_unlink(l->name); free(l); return CS_NET_SYSTEM_ERROR; }
  pthread_once(&host_once, host_init);
  snprintf(l->s->lhost, sizeof l->s->lhost, "%s", self_host);
  l->s->magic = SEG_MAGIC;
  struct handle h = {HANDLE_MAGIC, ""};
  snprintf(h.name, sizeof h.name, "%s", l->name);
  memcpy(handle, &h, sizeof h);   /* the rest of NCCL's 128 bytes is left alone */
  *listenComm = l;
  return CS_NET_OK;
}
static struct comm *comm_new(struct seg *s, int send) {
  struct comm *c = calloc(1, sizeof *c);
  if (c) { c->s = s; c->send = send; }
  return c;
}
static cs_net_result_t sn_connect(void *ctx, int dev, void *handle, void **sendComm, void **devComm) {
  (void)ctx, (void)dev;
  if (devComm) *devComm = NULL;
  *sendComm = NULL;
  struct handle h;
  memcpy(&h, handle, sizeof h);
  if (h.magic != HANDLE_MAGIC || fail_is("connect")) return CS_NET_INTERNAL_ERROR;
  h.name[sizeof h.name - 1] = 0;
  int fd = shm_open(h.name, O_RDWR, 0);
  if (fd < 0) return CS_NET_SYSTEM_ERROR;
  struct seg *s = mmap(NULL, sizeof(struct seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (s == MAP_FAILED) return CS_NET_SYSTEM_ERROR;
  uint32_t z = 0;
  if (s->magic != SEG_MAGIC || !atomic_compare_exchange_strong(&s->connected, &z, 1)) {
    munmap(s, sizeof *s);
    return CS_NET_INTERNAL_ERROR;
  }
  pthread_once(&host_once, host_init);
  snprintf(s->chost, sizeof s->chost, "%s", self_host);
  s->delay_us = link_delay_us(s->lhost, s->chost, &s->slow_ppm);
  shm_unlink(h.name);   /* both ends have it mapped now */
  struct comm *c = comm_new(s, 1);
  if (!c) { munmap(s, sizeof *s); return CS_NET_SYSTEM_ERROR; }
  atomic_store_explicit(&s->connected, 2, memory_order_release);
  bell_ring(s);
  *sendComm = c;
  return CS_NET_OK;
}
static cs_net_result_t sn_accept(void *listenComm, void **recvComm, void **devComm) {
  struct listen *l = listenComm;
  if (devComm) *devComm = NULL;
  *recvComm = NULL;
  if (l->accepted) return CS_NET_INTERNAL_ERROR;
  if (atomic_load_explicit(&l->s->connected, memory_order_acquire) != 2) return CS_NET_OK;  /* not yet */
  struct comm *c = comm_new(l->s, 0);
  if (!c) return CS_NET_SYSTEM_ERROR;
  l->accepted = 1;
  *recvComm = c;
  return CS_NET_OK;
}
static cs_net_result_t sn_reg_mr(void *comm, void *data, size_t size, int type, void **mh) {
  (void)comm, (void)data, (void)size, (void)type;
  *mh = &mh_dummy;
  return CS_NET_OK;
}
static cs_net_result_t sn_dereg_mr(void *comm, void *mh) { (void)comm, (void)mh; return CS_NET_OK; }

static struct req *req_get(struct comm *c) {
  for (int i = 0; i < CS_NET_MAX_REQUESTS; i++)
    if (!c->reqs[i].used) { memset(&c->reqs[i], 0, sizeof c->reqs[i]); c->reqs[i].used = 1; c->reqs[i].c = c; return &c->reqs[i]; }
  return NULL;
}

static cs_net_result_t sn_isend(void *sendComm, void *data, size_t size, int tag, void *mh, void *ph, void **request) {
  (void)tag, (void)mh, (void)ph;
  struct comm *c = sendComm;
  struct seg *s = c->s;
  *request = NULL;
  if (!c->send || size > SN_NET_SLOT_BYTES) return CS_NET_INVALID_ARGUMENT;
  uint32_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
  /* all slots full: a NULL request, NCCL posts again later (no wait here: the post time is
   * what the caller measures from) */
  if (head - atomic_load_explicit(&s->tail, memory_order_acquire) >= SN_NET_SLOTS) return CS_NET_OK;
  struct req *r = req_get(c);
  if (!r) return CS_NET_OK;
  unsigned i = head % SN_NET_SLOTS;
  memcpy(s->data[i], data, size);
  r->send = 1;
  int64_t wire = wire_ns(size);
  r->deliver_ns = now_ns() + wire + wire * (int64_t)s->slow_ppm / 1000000 + (int64_t)s->delay_us * 1000;
  s->meta[i].len = size;
  s->meta[i].deliver_ns = r->deliver_ns;
  atomic_store_explicit(&s->head, head + 1, memory_order_release);
  bell_ring(s);
  *request = r;
  return CS_NET_OK;
}
static cs_net_result_t sn_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhs, void **phs,
                                void **request) {
  (void)tags, (void)mhs, (void)phs;
  struct comm *c = recvComm;
  *request = NULL;
  if (c->send || n != 1) return CS_NET_INVALID_ARGUMENT;
  struct req *r = req_get(c);
  if (!r) return CS_NET_OK;
  r->buf = data[0];
  r->cap = sizes[0];
  r->seq = c->posted++;
  *request = r;
  return CS_NET_OK;
}
static cs_net_result_t sn_test(void *request, int *done, int *sizes) {
  struct req *r = request;
  struct comm *c = r->c;
  struct seg *s = c->s;
  uint64_t m;
  mono_adv_fn adv = NULL;
  int model = model_mono(&m, &adv);
  *done = 0;
  if (r->send && model) {   /* delivered at its modeled time: the clock moves there */
    adv((uint64_t)r->deliver_ns);
    if (sizes) sizes[0] = 0;
    r->used = 0;
    *done = 1;
    return CS_NET_OK;
  }
  if (r->send) {
    int64_t left = r->deliver_ns - now_ns();
    if (left > 0) sleep_ns(left < 1000000 ? left : 1000000);
    if (r->deliver_ns - now_ns() > 0) return CS_NET_OK;
    if (sizes) sizes[0] = 0;
    r->used = 0;
    *done = 1;
    return CS_NET_OK;
  }
  if (c->consumed != r->seq) return CS_NET_OK;   /* an earlier receive completes first */
  uint32_t b = atomic_load_explicit(&s->bell, memory_order_acquire);
  uint32_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
  if (atomic_load_explicit(&s->head, memory_order_acquire) == tail) {
    bell_wait(s, b, 1000000);
    if (atomic_load_explicit(&s->head, memory_order_acquire) == tail) return CS_NET_OK;
  }
  unsigned i = tail % SN_NET_SLOTS;
  int64_t left = model ? 0 : s->meta[i].deliver_ns - now_ns();   /* model: the sender's clock, not ours */
  if (left > 0) {
    sleep_ns(left < 1000000 ? left : 1000000);
    if (s->meta[i].deliver_ns - now_ns() > 0) return CS_NET_OK;
  }
  size_t len = s->meta[i].len;
  if (len > r->cap) return CS_NET_INTERNAL_ERROR;   /* NCCL: a message larger than the receive */
  memcpy(r->buf, s->data[i], len);
  atomic_store_explicit(&s->tail, tail + 1, memory_order_release);
  bell_ring(s);
  c->consumed++;
  if (sizes) sizes[0] = (int)len;
  r->used = 0;
  *done = 1;
  return CS_NET_OK;
}
static cs_net_result_t sn_close(void *comm) {
  struct comm *c = comm;
  munmap(c->s, sizeof *c->s);
  free(c);
  return CS_NET_OK;
}
static cs_net_result_t sn_close_listen(void *listenComm) {
  struct listen *l = listenComm;
  if (atomic_load(&l->s->connected) == 0) shm_unlink(l->name);
  if (!l->accepted) munmap(l->s, sizeof *l->s);   /* else the recvComm owns the mapping */
  free(l);
  return CS_NET_OK;
}
static cs_net_result_t sn_finalize(void *ctx) { (void)ctx; return CS_NET_OK; }

API cs_net_v11_t ncclNetPlugin_v11 = {
  "simnet", sn_init, sn_devices, sn_props, sn_listen, sn_connect, sn_accept, sn_reg_mr, NULL, sn_dereg_mr,
  sn_isend, sn_irecv, NULL, sn_test, sn_close, sn_close, sn_close_listen, NULL, NULL, NULL, sn_finalize, NULL,
};
