/* tests/sim/nccl/netload.c: NCCL_NET_PLUGIN, the host side of NCCL's network plugin ABI as
 * NCCL drives it, for the simulator's inter-host ring hops (exec.c).
 *  - NCCL_NET_PLUGIN=path|name (name: libnccl-net-<name>.so; unset or "none": no plugin) is
 *    dlopen'ed once per process; ncclNetPlugin_v11 is looked up, then v10, then v9
 *    (COLLSCOPE_SIM_NET_ABI=10 or 9 starts the search there, to drive older entry points).
 *    v9/v10 plugins are initialised once per process, v11 once per communicator. A plugin that
 *    is missing or whose init fails is not used: the sim logs it (NCCL_DEBUG=INFO) and keeps
 *    its built-in shared-memory path, as NCCL falls back to its internal transports.
 *  - Set-up happens on every rank at its first ring algorithm (AllReduce, ReduceScatter,
 *    AllGather, Broadcast, Reduce) of a communicator, on the stream worker, through the
 *    communicator's segment (sn_shm.net[]): each rank publishes whether it has a usable
 *    plugin; an edge ring[p] -> ring[p+1] whose two hosts differ goes through the plugin when
 *    both ends have one. The receiver listens and publishes the 128-byte handle, the sender
 *    connects (retrying while the plugin returns a NULL comm) and publishes the outcome, the
 *    receiver accepts (retrying likewise). Any failure on the way makes that edge use shared
 *    memory at both ends. Both ends register their staging buffers (regMr).
 *  - Data: exec.c's channel primitives call sn_net_send_acquire/commit and
 *    sn_net_recv_acquire for the net edges: 2 send staging slots of SN_SLOT_BYTES with one
 *    isend each, polled right after the post for up to 20 ms (NCCL's proxy polls sends
 *    continuously; a slot is reused once its send is done), one receive staging buffer
 *    (irecv + test until done). sn_net_drain() completes the outstanding sends at the
 *    end of each ring operation. Every wait checks the communicator's abort flag.
 *  - Connections live until the process exits (the simulator has no hook at communicator
 *    destroy in this file); plugins see no closeSend/closeRecv/finalize.
 *  - Link faults: on a net edge the plugin models the wire (simnet applies the
 *    COLLSCOPE_SIM_FAULTS `link:` delay to each message), so exec.c adds no delay of its own. */
#include "simnccl.h"
#include "collscope/nccl_net_abi.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int ver;               /* 11, 10, 9; 0 = no plugin */
static const cs_net_v11_t *p11;
static const cs_net_v10_t *p10;
static const cs_net_v9_t *p9;
static int global_ok;         /* v9/v10: init succeeded */
static const char *pname = "";

static void plugin_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static void load(void) {
  const char *v = getenv("NCCL_NET_PLUGIN");
  if (!v || !*v || !strcmp(v, "none")) return;
  void *h = dlopen(v, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    char name[300];
    snprintf(name, sizeof name, "libnccl-net-%s.so", v);
    h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) { sn_info(-1, "NET/Plugin: Could not find: %s. Using internal net plugin.", v); return; }
  const char *abi = getenv("COLLSCOPE_SIM_NET_ABI");
  int want = abi && *abi ? atoi(abi) : 11;
  if (want >= 11) p11 = dlsym(h, "ncclNetPlugin_v11");
  if (!p11 && want >= 10) p10 = dlsym(h, "ncclNetPlugin_v10");
  if (!p11 && !p10 && want >= 9) p9 = dlsym(h, "ncclNetPlugin_v9");
  if (!p11 && !p10 && !p9) {
    sn_info(-1, "NET/Plugin: Failed to find ncclNetPlugin_v11/v10/v9 symbol in %s. Using internal net plugin.", v);
    dlclose(h);
    return;
  }
  ver = p11 ? 11 : p10 ? 10 : 9;
  if (ver == 10) global_ok = p10->init(plugin_log, NULL) == ncclSuccess;
  if (ver == 9) global_ok = p9->init(plugin_log) == ncclSuccess;
  pname = p11 ? p11->name : p10 ? p10->name : p9->name;
  if (ver != 11 && !global_ok) {
    sn_info(-1, "NET/Plugin: Failed to initialize %s (v%d). Using internal net plugin.", pname, ver);
    ver = 0;
    return;
  }
  sn_info(-1, "NET/Plugin: Loaded net plugin %s (v%d)", pname, ver);
}

/* ---- version-independent calls ---- */
static int do_listen(struct sn_net *n, void *handle, void **lc) {
  return ver == 11 ? p11->listen(n->ctx, 0, handle, lc) : ver == 10 ? p10->listen(0, handle, lc) : p9->listen(0, handle, lc);
}
static int do_connect(struct sn_net *n, void *handle, void **sc) {
  void *dc = NULL;
  return ver == 11 ? p11->connect(n->ctx, 0, handle, sc, &dc)
         : ver == 10 ? p10->connect(0, NULL, handle, sc, &dc) : p9->connect(0, handle, sc, &dc);
}
static int do_accept(void *lc, void **rc) {
  void *dc = NULL;
  return ver == 11 ? p11->accept(lc, rc, &dc) : ver == 10 ? p10->accept(lc, rc, &dc) : p9->accept(lc, rc, &dc);
}
static int do_close_listen(void *lc) {
  return ver == 11 ? p11->closeListen(lc) : ver == 10 ? p10->closeListen(lc) : p9->closeListen(lc);
}
static int do_reg(void *comm, void *buf, size_t len, void **mh) {
  return ver == 11 ? p11->regMr(comm, buf, len, CS_NET_PTR_HOST, mh)
         : ver == 10 ? p10->regMr(comm, buf, len, CS_NET_PTR_HOST, mh) : p9->regMr(comm, buf, len, CS_NET_PTR_HOST, mh);
}
static int do_isend(struct sn_net *n, void *buf, size_t len, void **req) {
  return ver == 11 ? p11->isend(n->scomm, buf, len, 0, n->smh, NULL, req)
         : ver == 10 ? p10->isend(n->scomm, buf, len, 0, n->smh, NULL, req) : p9->isend(n->scomm, buf, len, 0, n->smh, req);
}
static int do_irecv(struct sn_net *n, void *buf, size_t cap, void **req) {
  void *data[1] = {buf};
  size_t sizes[1] = {cap};
  int tags[1] = {0};
  void *mhs[1] = {n->rmh};
  return ver == 11 ? p11->irecv(n->rcomm, 1, data, sizes, tags, mhs, NULL, req)
         : ver == 10 ? p10->irecv(n->rcomm, 1, data, sizes, tags, mhs, NULL, req)
                     : p9->irecv(n->rcomm, 1, data, sizes, tags, mhs, req);
}
static int do_test(void *req, int *done, int *size) {
  return ver == 11 ? p11->test(req, done, size) : ver == 10 ? p10->test(req, done, size) : p9->test(req, done, size);
}

static int aborted(struct ncclComm *c) { return atomic_load(&c->shm->abort) != 0; }

static void do_close_comms(struct sn_net *n) {
  if (n->smh) ver == 11 ? p11->deregMr(n->scomm, n->smh) : ver == 10 ? p10->deregMr(n->scomm, n->smh) : p9->deregMr(n->scomm, n->smh);
  if (n->rmh) ver == 11 ? p11->deregMr(n->rcomm, n->rmh) : ver == 10 ? p10->deregMr(n->rcomm, n->rmh) : p9->deregMr(n->rcomm, n->rmh);
  if (n->scomm) ver == 11 ? p11->closeSend(n->scomm) : ver == 10 ? p10->closeSend(n->scomm) : p9->closeSend(n->scomm);
  if (n->rcomm) ver == 11 ? p11->closeRecv(n->rcomm) : ver == 10 ? p10->closeRecv(n->rcomm) : p9->closeRecv(n->rcomm);
  if (ver == 11 && n->ctx) p11->finalize(n->ctx);
}

/* Communicator destroy (NCCL closes its connections there too). After an abort, or with
 * sends still in flight, the plugin objects are left alone (closing them could wait). */
void sn_net_close(struct ncclComm *c) {
  struct sn_net *n = c->net;
  if (!n) return;
  c->net = NULL;
  int busy = aborted(c) || n->failed;
  for (unsigned i = 0; i < SN_SLOTS && !busy; i++) busy = n->sreq[i] != NULL;
  if (!busy) do_close_comms(n);
  free(n->bufs);
  free(n);
}

#define SEND_POLL_NS 20000000LL   /* 20 ms */

/* a plugin whose calls return at once must not make the worker spin on a 2-core machine */
static void nap(void) {
  struct timespec ts = {0, 20000};
  nanosleep(&ts, NULL);
}
/* wait until *w != 0 (set by a peer, which rings our doorbell), or abort */
static uint32_t wait_set(struct ncclComm *c, _Atomic uint32_t *w) {
  _Atomic uint32_t *bell = sn_doorbell(c, c->rank);
  for (;;) {
    uint32_t b = atomic_load(bell);
    uint32_t v = atomic_load_explicit(w, memory_order_acquire);
    if (v) return v;
    if (aborted(c)) return 0;
    sn_wait(bell, b);
  }
}

/* 1 = the plugin moves data between the two hosts of this edge, 0 = shared memory */
void sn_net_setup(struct ncclComm *c) {
  if (c->net_setup) return;
  c->net_setup = 1;
  int n = c->nranks, p = c->pos[c->rank];
  if (n < 2) return;
  int next = c->ring[(p + 1) % n], prev = c->ring[(p - 1 + n) % n];
  struct sn_shm *h = c->shm;
  const char *me = h->ranks[c->rank].host;
  int cross_next = strcmp(me, h->ranks[next].host) != 0, cross_prev = strcmp(me, h->ranks[prev].host) != 0;
  pthread_once(&load_once, load);
  struct sn_net *net = NULL;
  int usable = 0;
  if (ver && (cross_next || cross_prev)) {
    net = calloc(1, sizeof *net);
    if (net) {
      net->bufs = aligned_alloc(64, (SN_SLOTS + 1) * (SN_SLOT_BYTES + 64));
      if (!net->bufs) { free(net); net = NULL; }
    }
    usable = net != NULL;
    if (usable && ver == 11) {
      uint64_t id = 0;
      for (const char *q = c->shm_name; *q; q++) id = (id ^ (unsigned char)*q) * 0x100000001b3ull;
      if (p11->init(&net->ctx, id, NULL, plugin_log, NULL) != ncclSuccess) {
        sn_info(c->dev, "NET/Plugin: Failed to initialize %s for comm %p. Using internal net plugin.", pname, (void *)c);
        usable = 0;
      }
    }
  }
  /* 1. publish whether this rank has a usable plugin, learn the neighbours' */
  atomic_store_explicit(&h->net[c->rank].state, usable ? 2u : 1u, memory_order_release);
  sn_ring_bell(c, next);
  sn_ring_bell(c, prev);
  uint32_t sn = wait_set(c, &h->net[next].state), sp = wait_set(c, &h->net[prev].state);
  int want_send = usable && cross_next && sn == 2, want_recv = usable && cross_prev && sp == 2;
  /* 2. receiver: listen, publish the handle (hready 1 = valid, 2 = failed) */
  void *lc = NULL;
  if (want_recv) {
    unsigned char handle[CS_NET_HANDLE_MAXSIZE] = {0};
    int ok = do_listen(net, handle, &lc) == ncclSuccess && lc;
    if (ok) memcpy(h->net[c->rank].handle, handle, sizeof handle);
    atomic_store_explicit(&h->net[c->rank].hready, ok ? 1u : 2u, memory_order_release);
    if (!ok) want_recv = 0;
  } else {
    atomic_store_explicit(&h->net[c->rank].hready, 2u, memory_order_release);
  }
  sn_ring_bell(c, prev);
  /* 3. sender: connect to next's handle, publish the outcome (cready 1 = connected, 2 = not) */
  if (want_send && wait_set(c, &h->net[next].hready) == 1) {
    unsigned char handle[CS_NET_HANDLE_MAXSIZE];
    memcpy(handle, h->net[next].handle, sizeof handle);
    void *sc = NULL;
    while (!aborted(c) && do_connect(net, handle, &sc) == ncclSuccess && !sc) nap();
    if (sc && do_reg(sc, net->bufs, (SN_SLOTS + 1) * (SN_SLOT_BYTES + 64), &net->smh) == ncclSuccess) {
      net->scomm = sc;
      net->send_on = 1;
    }
    if (!net->send_on && sc) sn_warn(c->dev, "NET/Plugin: regMr failed on a send connection; using shared memory");
  }
  atomic_store_explicit(&h->net[c->rank].cready, net && net->send_on ? 1u : 2u, memory_order_release);
  sn_ring_bell(c, next);
  /* 4. receiver: accept once the sender connected */
  if (want_recv && wait_set(c, &h->net[prev].cready) == 1) {
    void *rc = NULL;
    while (!aborted(c) && do_accept(lc, &rc) == ncclSuccess && !rc) nap();
    if (rc && do_reg(rc, net->bufs, (SN_SLOTS + 1) * (SN_SLOT_BYTES + 64), &net->rmh) == ncclSuccess) {
      net->rcomm = rc;
      net->recv_on = 1;
    } else {
      /* the sender already committed to the net for this edge: nothing would reach us */
      sn_warn(c->dev, "NET/Plugin: accept failed after the peer connected; ring ops on comm %p will fail", (void *)c);
      net->recv_broken = 1;
    }
  }
  if (lc) do_close_listen(lc);
  if (net && (net->send_on || net->recv_on || net->recv_broken)) {
    net->next = next;
    net->prev = prev;
    c->net = net;
    sn_info(c->dev, "comm %p rank %d: ring edges via %s: send to %d %s, recv from %d %s", (void *)c, c->rank, pname,
            next, net->send_on ? "net" : "shm", prev, net->recv_on ? "net" : "shm");
  } else if (net) {
    free(net->bufs);
    free(net);   /* an initialised v11 ctx stays with the plugin (no finalize: nothing used it) */
  }
}

static unsigned char *send_buf(struct sn_net *n, unsigned i) { return n->bufs + (size_t)i * (SN_SLOT_BYTES + 64); }

/* wait for request *r to finish; 0 done, -1 abort or plugin error */
static int wait_req(struct ncclComm *c, void **r, struct sn_slot_hdr *hdr) {
  for (;;) {
    int done = 0, size = 0;
    if (do_test(*r, &done, &size) != ncclSuccess) { *r = NULL; return -1; }
    if (done) {
      *r = NULL;
      if (hdr) hdr->len = (uint64_t)size;
      return 0;
    }
    if (aborted(c)) return -1;
    nap();
  }
}

void *sn_net_send_acquire(struct ncclComm *c) {
  struct sn_net *n = c->net;
  unsigned i = n->shead % SN_SLOTS;
  if (n->failed) return NULL;
  if (n->sreq[i] && wait_req(c, &n->sreq[i], NULL)) { n->failed = 1; return NULL; }
  return send_buf(n, i);
}

int sn_net_send_commit(struct ncclComm *c, size_t len) {
  struct sn_net *n = c->net;
  unsigned i = n->shead % SN_SLOTS;
  void *req = NULL;
  for (;;) {
    if (do_isend(n, send_buf(n, i), len, &req) != ncclSuccess) { n->failed = 1; return -1; }
    if (req) break;
    if (aborted(c)) { n->failed = 1; return -1; }
    nap();
  }
  /* Complete the send now, as NCCL's proxy thread polls its sends continuously (so the
   * post-to-done time is the wire's, not this thread's other work); a plugin whose send
   * needs the receiver (rendezvous) gets SEND_POLL_NS, then the request stays outstanding
   * and is tested again when its slot is reused or at sn_net_drain(). */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int done = 0, size = 0;
    if (do_test(req, &done, &size) != ncclSuccess) { n->failed = 1; return -1; }
    if (done) { req = NULL; break; }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if ((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec) > SEND_POLL_NS || aborted(c)) break;
    nap();
  }
  n->sreq[i] = req;
  n->shead++;
  return 0;
}

struct sn_slot_hdr *sn_net_recv_acquire(struct ncclComm *c) {
  struct sn_net *n = c->net;
  if (n->recv_broken || n->failed) return NULL;
  struct sn_slot_hdr *hdr = (struct sn_slot_hdr *)send_buf(n, SN_SLOTS);
  void *req = NULL;
  for (;;) {
    if (do_irecv(n, hdr + 1, SN_SLOT_BYTES, &req) != ncclSuccess) return NULL;
    if (req) break;
    if (aborted(c)) return NULL;
    nap();
  }
  if (wait_req(c, &req, hdr)) return NULL;
  hdr->last = 0;
  return hdr;
}

int sn_net_drain(struct ncclComm *c) {
  struct sn_net *n = c->net;
  if (!n) return 0;
  int r = 0;
  for (unsigned i = 0; i < SN_SLOTS; i++)
    if (n->sreq[i] && wait_req(c, &n->sreq[i], NULL)) r = -1;
  return r || n->failed ? -1 : 0;
}
