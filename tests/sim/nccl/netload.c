/* tests/sim/nccl/netload.c: NCCL_NET_PLUGIN, the host side of NCCL's network plugin ABI as
 * NCCL drives it, for the simulator's inter-host traffic (exec.c): ring hops and pairwise
 * transfers.
 *  - NCCL_NET_PLUGIN=path|name (name: libnccl-net-<name>.so; unset or "none": no plugin) is
 *    dlopen'ed once per process; ncclNetPlugin_v12 is looked up, then v11, v10, v9, as NCCL
 *    2.30 does (src/plugin/net.cc, v2.30.7-1: getNcclNet[] = {v12, v11, v10, v9, ...}, first
 *    found wins); COLLSCOPE_SIM_NET_ABI=11, 10 or 9 starts the search there, to drive older
 *    entry points. v12's calls are v11's but for the property structs, which the sim does not
 *    use: a v12 table is driven through the v11 declarations.
 *    v9/v10 plugins are initialised once per process, v11 once per communicator. A plugin that
 *    is missing or whose init fails is not used: the sim logs it (NCCL_DEBUG=INFO) and keeps
 *    its built-in shared-memory path, as NCCL falls back to its internal transports.
 *  - Plugin state (net_init): at a communicator's first ring algorithm or first pairwise
 *    transfer to another host, each rank initialises the plugin (when some rank is on another
 *    host) and publishes in the segment (sn_shm.net[rank].state) whether it can use it.
 *  - Ring edges (sn_net_setup), at the first ring algorithm (AllReduce, ReduceScatter,
 *    AllGather, Broadcast, Reduce), on the stream worker: an edge ring[p] -> ring[p+1] whose two
 *    hosts differ goes through the plugin when both ends can use one. The receiver listens and
 *    publishes the 128-byte handle, the sender connects (retrying while the plugin returns a
 *    NULL comm) and publishes the outcome, the receiver accepts (retrying likewise). Any
 *    failure before the sender is connected makes that edge use shared memory at both ends.
 *    Both ends register their staging buffers (regMr).
 *  - Ring data: exec.c's channel primitives call sn_net_send_acquire/commit and
 *    sn_net_recv_acquire for the net edges: 2 send staging slots of SN_SLOT_BYTES with one
 *    isend each, polled right after the post for up to 20 ms (NCCL's proxy polls sends
 *    continuously; a slot is reused once its send is done), one receive staging buffer
 *    (irecv + test until done). sn_net_drain() completes the outstanding sends at the
 *    end of each ring operation. Every wait checks the communicator's abort flag.
 *  - Pairwise transfers (Send/Recv, AlltoAll, Gather, Scatter; sn_net_p2p_*, end of file): a
 *    connection per ordered (src, dst) pair of ranks on different hosts, separate from the ring
 *    edges (NCCL's P2P channels have their own too), set up at the pair's first transfer with
 *    the same steps through sn_shm.net_pair[src][dst] and the same fallback rule, but taken one
 *    non-blocking step at a time from exec.c's progress loop. Data: 2 send staging slots per
 *    pair (isend; tested right after the post and on every pass), one receive slot (irecv +
 *    test); a message shorter than SN_SLOT_BYTES ends a transfer. Same-host pairs: shm.
 *  - Communicator destroy (sn_net_close) closes the connections (deregMr, closeSend/closeRecv,
 *    listen comms of unfinished set-ups) and finalizes the v11 context, unless the comm was
 *    aborted or requests are still in flight (then the plugin objects are left alone).
 *  - Link faults: on a net edge or pair the plugin models the wire (simnet applies the
 *    COLLSCOPE_SIM_FAULTS `link:` delay to each message), so exec.c adds no delay of its own. */
#include "simnccl.h"
#include <sys/syscall.h>
#include <unistd.h>
#include "collscope/nccl_net_abi.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int ver;               /* 11 (also for a v12 table), 10, 9; 0 = no plugin */
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
  int want = abi && *abi ? atoi(abi) : 12;
  int v12 = want >= 12 && (p11 = dlsym(h, "ncclNetPlugin_v12")) != NULL;
  if (!p11 && want >= 11) p11 = dlsym(h, "ncclNetPlugin_v11");
  if (!p11 && want >= 10) p10 = dlsym(h, "ncclNetPlugin_v10");
  if (!p11 && !p10 && want >= 9) p9 = dlsym(h, "ncclNetPlugin_v9");
  if (!p11 && !p10 && !p9) {
    sn_info(-1, "NET/Plugin: Failed to find ncclNetPlugin_v12/v11/v10/v9 symbol in %s. Using internal net plugin.", v);
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
  sn_info(-1, "NET/Plugin: Loaded net plugin %s (v%d)", pname, v12 ? 12 : ver);
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
static int do_isend(void *comm, void *mh, void *buf, size_t len, void **req) {
  return ver == 11 ? p11->isend(comm, buf, len, 0, mh, NULL, req)
         : ver == 10 ? p10->isend(comm, buf, len, 0, mh, NULL, req) : p9->isend(comm, buf, len, 0, mh, req);
}
static int do_irecv(void *comm, void *mh, void *buf, size_t cap, void **req) {
  void *data[1] = {buf};
  size_t sizes[1] = {cap};
  int tags[1] = {0};
  void *mhs[1] = {mh};
  return ver == 11 ? p11->irecv(comm, 1, data, sizes, tags, mhs, NULL, req)
         : ver == 10 ? p10->irecv(comm, 1, data, sizes, tags, mhs, NULL, req)
                     : p9->irecv(comm, 1, data, sizes, tags, mhs, req);
}
static int do_test(void *req, int *done, int *size) {
  return ver == 11 ? p11->test(req, done, size) : ver == 10 ? p10->test(req, done, size) : p9->test(req, done, size);
}

static int aborted(struct ncclComm *c) { return atomic_load(&c->shm->abort) != 0; }

static void do_dereg(void *comm, void *mh) {
  if (mh) ver == 11 ? p11->deregMr(comm, mh) : ver == 10 ? p10->deregMr(comm, mh) : p9->deregMr(comm, mh);
}
static void do_close_send(void *comm) {
  if (comm) ver == 11 ? p11->closeSend(comm) : ver == 10 ? p10->closeSend(comm) : p9->closeSend(comm);
}
static void do_close_recv(void *comm) {
  if (comm) ver == 11 ? p11->closeRecv(comm) : ver == 10 ? p10->closeRecv(comm) : p9->closeRecv(comm);
}

#define STAGE_BYTES (SN_SLOT_BYTES + 64)   /* one staging slot (room for a slot header in front) */
#define RING_BUF_BYTES ((SN_SLOTS + 1) * STAGE_BYTES)

/* 1 if pairwise connection d has a request in flight */
static int p2p_busy(const struct sn_p2p_dir *d) {
  for (unsigned i = 0; i < SN_SLOTS; i++)
    if (d->req[i]) return 1;
  return 0;
}

/* Communicator destroy (NCCL closes its connections there too): ring edges, pairwise
 * connections, listen comms of unfinished set-ups, then (v11) the context. After an abort,
 * or with requests still in flight, the plugin objects are left alone (closing them could
 * wait), and a staging buffer the plugin may still write is not freed. */
void sn_net_close(struct ncclComm *c) {
  struct sn_net *n = c->net;
  if (!n) return;
  c->net = NULL;
  int ab = aborted(c), busy = ab || n->failed;
  for (unsigned i = 0; i < SN_SLOTS && !busy; i++) busy = n->sreq[i] != NULL;
  if (!busy) {
    do_dereg(n->scomm, n->smh);
    do_dereg(n->rcomm, n->rmh);
    do_close_send(n->scomm);
    do_close_recv(n->rcomm);
  }
  int all_closed = !busy;
  for (int i = 0; n->p2p && i < 2 * c->nranks; i++) {
    struct sn_p2p_dir *d = &n->p2p[i];
    int inflight = p2p_busy(d);
    if (ab || inflight) {
      all_closed = 0;
      if (!inflight) free(d->buf);
      continue;
    }
    if (d->lc) do_close_listen(d->lc);
    if (d->comm) {
      do_dereg(d->comm, d->mh);
      if (i % 2 == 0) do_close_send(d->comm);
      else do_close_recv(d->comm);
    }
    free(d->buf);
  }
  if (all_closed && ver == 11 && n->ctx) p11->finalize(n->ctx);
  free(n->p2p);
  free(n->bufs);
  free(n);
}

#define SEND_POLL_NS 20000000LL   /* 20 ms */
#define SPACE_WAIT_NS 1000000L    /* 1 ms */

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
    sn_bell_wait(c, b, SN_BELL_ANY, 0);
  }
}

/* Once per communicator, at its first ring algorithm or first pairwise transfer to another
 * host: load the plugin, initialise it (v11: a context per communicator) when some rank is on
 * another host, and publish in sn_shm.net[rank].state whether this rank can use it (2) or
 * not (1); every rank's doorbell is rung, as any of them may wait for it. */
static void net_init(struct ncclComm *c) {
  if (c->net_init) return;
  c->net_init = 1;
  struct sn_shm *h = c->shm;
  const char *me = h->ranks[c->rank].host;
  int remote = 0;
  for (int r = 0; r < c->nranks && !remote; r++) remote = strcmp(me, h->ranks[r].host) != 0;
  pthread_once(&load_once, load);
  struct sn_net *net = NULL;
  if (ver && remote) {
    net = calloc(1, sizeof *net);
    if (net && !(net->p2p = calloc(2 * (size_t)c->nranks, sizeof *net->p2p))) { free(net); net = NULL; }
    if (net && ver == 11) {
      uint64_t id = 0;
      for (const char *q = c->shm_name; *q; q++) id = (id ^ (unsigned char)*q) * 0x100000001b3ull;
      if (p11->init(&net->ctx, id, NULL, plugin_log, NULL) != ncclSuccess) {
        sn_info(c->dev, "NET/Plugin: Failed to initialize %s for comm %p. Using internal net plugin.", pname, (void *)c);
        free(net->p2p);
        free(net);
        net = NULL;
      }
    }
  }
  c->net = net;
  atomic_store_explicit(&h->net[c->rank].state, net ? 2u : 1u, memory_order_release);
  for (int r = 0; r < c->nranks; r++)
    if (r != c->rank) sn_ring_bell(c, r);
}

/* Ring edges, once per communicator at its first ring algorithm: the edge to next / from prev
 * goes through the plugin (send_on / recv_on) when its two hosts differ and both ends can use
 * one; otherwise, or after a failure before the sender connected, shared memory. */
void sn_net_setup(struct ncclComm *c) {
  if (c->net_setup) return;
  c->net_setup = 1;
  int n = c->nranks, p = c->pos[c->rank];
  if (n < 2) return;
  int next = c->ring[(p + 1) % n], prev = c->ring[(p - 1 + n) % n];
  struct sn_shm *h = c->shm;
  const char *me = h->ranks[c->rank].host;
  int cross_next = strcmp(me, h->ranks[next].host) != 0, cross_prev = strcmp(me, h->ranks[prev].host) != 0;
  /* 1. this rank's plugin state (published once per comm), the neighbours' */
  net_init(c);
  struct sn_net *net = c->net;
  uint32_t sn = wait_set(c, &h->net[next].state), sp = wait_set(c, &h->net[prev].state);
  int want_send = net && cross_next && sn == 2, want_recv = net && cross_prev && sp == 2;
  if ((want_send || want_recv) && !net->bufs && !(net->bufs = aligned_alloc(64, RING_BUF_BYTES)))
    want_send = want_recv = 0;   /* the peers learn it from hready / cready below */
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
    if (sc && do_reg(sc, net->bufs, RING_BUF_BYTES, &net->smh) == ncclSuccess) {
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
    if (rc && do_reg(rc, net->bufs, RING_BUF_BYTES, &net->rmh) == ncclSuccess) {
      net->rcomm = rc;
      net->recv_on = 1;
    } else {
      /* the sender already committed to the net for this edge: nothing would reach us */
      sn_warn(c->dev, "NET/Plugin: accept failed after the peer connected; ring ops on comm %p will fail", (void *)c);
      net->recv_broken = 1;
    }
  }
  if (lc) do_close_listen(lc);
  if (net) {
    net->next = next;
    net->prev = prev;
    if (net->send_on || net->recv_on || net->recv_broken)
      sn_info(c->dev, "comm %p rank %d: ring edges via %s: send to %d %s, recv from %d %s", (void *)c, c->rank, pname,
              next, net->send_on ? "net" : "shm", prev, net->recv_on ? "net" : "shm");
  }
}

static unsigned char *send_buf(struct sn_net *n, unsigned i) { return n->bufs + (size_t)i * STAGE_BYTES; }

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
    uint32_t b = atomic_load(sn_doorbell(c, c->rank));
    if (do_isend(n->scomm, n->smh, send_buf(n, i), len, &req) != ncclSuccess) { n->failed = 1; return -1; }
    if (req) break;
    if (aborted(c)) { n->failed = 1; return -1; }
    /* the plugin's buffers are full: next takes a message out in sn_net_recv_acquire and
     * rings us (at most SPACE_WAIT_NS, for a plugin that frees them otherwise) */
    sn_bell_wait(c, b, SN_BELL_SPACE, SPACE_WAIT_NS);
  }
  /* Complete the send now, as NCCL's proxy thread polls its sends continuously (so the
   * post-to-done time is the wire's, not this thread's other work); a plugin whose send
   * needs the receiver (rendezvous) gets SEND_POLL_NS, then the request stays outstanding
   * and is tested again when its slot is reused or at sn_net_drain(). */
  struct timespec t0, t1;   /* the host's clock (a syscall: on the modeled clock this
                             * thread's CLOCK_MONOTONIC only moves with completed sends) */
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t0);
  for (;;) {
    int done = 0, size = 0;
    if (do_test(req, &done, &size) != ncclSuccess) { n->failed = 1; return -1; }
    if (done) { req = NULL; break; }
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t1);
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
    if (do_irecv(n->rcomm, n->rmh, hdr + 1, SN_SLOT_BYTES, &req) != ncclSuccess) return NULL;
    if (req) break;
    if (aborted(c)) return NULL;
    nap();
  }
  if (wait_req(c, &req, hdr)) return NULL;
  sn_ring_bell_for(c, n->prev, SN_BELL_SPACE);   /* prev's isend may wait for the slot this freed */
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

/* ---- pairwise transfers -----------------------------------------------------------------
 * One connection per ordered (src, dst) pair of a communicator whose hosts differ, set up at
 * the pair's first transfer (NCCL connects its P2P channels lazily too) through
 * sn_shm.net_pair[src][dst], in the steps of the ring edges: both ends' plugin states, the
 * receiver listens and publishes the handle (hready), the sender connects and publishes the
 * outcome (cready), the receiver accepts. Any failure before the sender is connected puts the
 * pair on shared memory at both ends; a failed accept after it leaves the receiver BROKEN.
 * Each step is taken without blocking: exec.c's p2p_run calls sn_net_p2p_route() for every
 * pending transfer on each pass, so set-ups and data of all the peers of a group progress
 * together. Set-up states below SN_P2P_SHM: */
enum { P_START = 0, P_HANDLE, P_CONNECT, P_ACCEPT };

static int p2p_resolve(struct ncclComm *c, struct sn_p2p_dir *d, int peer, int send, int state) {
  d->state = state;
  if (state == SN_P2P_NET)
    sn_info(c->dev, "comm %p rank %d: p2p %s %d via %s", (void *)c, c->rank, send ? "send to" : "recv from", peer, pname);
  return state;
}

int sn_net_p2p_route(struct ncclComm *c, int peer, int send) {
  net_init(c);
  struct sn_net *n = c->net;
  if (!n) return SN_P2P_SHM;
  struct sn_p2p_dir *d = &n->p2p[2 * peer + (send ? 0 : 1)];
  if (d->state >= SN_P2P_SHM) return d->state;
  struct sn_shm *h = c->shm;
  struct sn_net_pair *bp = send ? &h->net_pair[c->rank][peer] : &h->net_pair[peer][c->rank];
  if (d->state == P_START) {
    uint32_t ps = atomic_load_explicit(&h->net[peer].state, memory_order_acquire);
    if (ps == 0) return SN_P2P_WAIT;
    if (ps != 2) return p2p_resolve(c, d, peer, send, SN_P2P_SHM);
    if (send) {
      d->state = P_HANDLE;
    } else {
      /* receiver: staging buffer, listen, publish the handle (hready 1 valid, 2 failed) */
      unsigned char handle[CS_NET_HANDLE_MAXSIZE] = {0};
      void *lc = NULL;
      int ok = (d->buf = aligned_alloc(64, STAGE_BYTES)) != NULL && do_listen(n, handle, &lc) == ncclSuccess && lc;
      if (ok) memcpy(bp->handle, handle, sizeof handle);
      atomic_store_explicit(&bp->hready, ok ? 1u : 2u, memory_order_release);
      sn_ring_bell(c, peer);
      if (!ok) return p2p_resolve(c, d, peer, send, SN_P2P_SHM);
      d->lc = lc;
      d->state = P_ACCEPT;
    }
  }
  if (d->state == P_HANDLE) {
    uint32_t hr = atomic_load_explicit(&bp->hready, memory_order_acquire);
    if (hr == 0) return SN_P2P_WAIT;
    if (hr != 1 || !(d->buf = aligned_alloc(64, SN_SLOTS * STAGE_BYTES))) {
      atomic_store_explicit(&bp->cready, 2u, memory_order_release);
      sn_ring_bell(c, peer);
      return p2p_resolve(c, d, peer, send, SN_P2P_SHM);
    }
    d->state = P_CONNECT;
  }
  if (d->state == P_CONNECT) {
    /* sender: connect (a NULL comm: retry on a later pass), register, publish cready */
    unsigned char handle[CS_NET_HANDLE_MAXSIZE];
    memcpy(handle, bp->handle, sizeof handle);
    void *sc = NULL;
    int r = do_connect(n, handle, &sc);
    if (r == ncclSuccess && !sc) return SN_P2P_RETRY;
    int ok = r == ncclSuccess && do_reg(sc, d->buf, SN_SLOTS * STAGE_BYTES, &d->mh) == ncclSuccess;
    if (!ok && sc) {
      sn_warn(c->dev, "NET/Plugin: regMr failed on a send connection; using shared memory");
      do_close_send(sc);
    }
    if (ok) d->comm = sc;
    atomic_store_explicit(&bp->cready, ok ? 1u : 2u, memory_order_release);
    sn_ring_bell(c, peer);
    return p2p_resolve(c, d, peer, send, ok ? SN_P2P_NET : SN_P2P_SHM);
  }
  /* P_ACCEPT, receiver: once the sender published its outcome */
  uint32_t cr = atomic_load_explicit(&bp->cready, memory_order_acquire);
  if (cr == 0) return SN_P2P_WAIT;
  if (cr != 1) {
    do_close_listen(d->lc);
    d->lc = NULL;
    return p2p_resolve(c, d, peer, send, SN_P2P_SHM);
  }
  void *rc = NULL;
  int r = do_accept(d->lc, &rc);
  if (r == ncclSuccess && !rc) return SN_P2P_RETRY;
  do_close_listen(d->lc);
  d->lc = NULL;
  if (r == ncclSuccess && do_reg(rc, d->buf, STAGE_BYTES, &d->mh) == ncclSuccess) {
    d->comm = rc;
    return p2p_resolve(c, d, peer, send, SN_P2P_NET);
  }
  /* the sender already committed to the net for this pair: nothing would reach us */
  sn_warn(c->dev, "NET/Plugin: accept failed after peer %d connected; transfers from it on comm %p will fail", peer,
          (void *)c);
  if (rc) do_close_recv(rc);
  return p2p_resolve(c, d, peer, send, SN_P2P_BROKEN);
}

void *sn_net_p2p_send_acquire(struct ncclComm *c, int peer) {
  struct sn_p2p_dir *d = &c->net->p2p[2 * peer];
  if (d->head - d->done >= SN_SLOTS) return NULL;
  return d->buf + (size_t)(d->head % SN_SLOTS) * STAGE_BYTES;
}

void sn_net_p2p_send_commit(struct ncclComm *c, int peer, size_t len) {
  struct sn_p2p_dir *d = &c->net->p2p[2 * peer];
  d->len[d->head % SN_SLOTS] = len;
  d->head++;
}

int sn_net_p2p_send_progress(struct ncclComm *c, int peer, uint32_t *busy) {
  struct sn_p2p_dir *d = &c->net->p2p[2 * peer];
  int moved = 0;
  /* post the staged pieces in order (a NULL request: the plugin is busy, post again later) */
  while (d->posted != d->head) {
    unsigned i = d->posted % SN_SLOTS;
    void *req = NULL;
    if (do_isend(d->comm, d->mh, d->buf + (size_t)i * STAGE_BYTES, d->len[i], &req) != ncclSuccess) return -1;
    if (!req) break;
    d->req[i] = req;
    d->posted++;
    moved = 1;
  }
  /* test the posted ones, oldest first, right after their post too (NCCL's proxy polls
   * continuously, so the post-to-done time a wrapper measures is the wire's) */
  while (d->done != d->posted) {
    unsigned i = d->done % SN_SLOTS;
    int done = 0, size = 0;
    if (do_test(d->req[i], &done, &size) != ncclSuccess) return -1;
    if (!done) break;
    d->req[i] = NULL;
    d->done++;
    moved = 1;
  }
  *busy = d->head - d->done;
  return moved;
}

int sn_net_p2p_recv(struct ncclComm *c, int peer, const void **data, size_t *len) {
  struct sn_p2p_dir *d = &c->net->p2p[2 * peer + 1];
  if (!d->req[0]) {
    void *req = NULL;
    if (do_irecv(d->comm, d->mh, d->buf, SN_SLOT_BYTES, &req) != ncclSuccess) return -1;
    if (!req) return 0;
    d->req[0] = req;
  }
  int done = 0, size = 0;
  if (do_test(d->req[0], &done, &size) != ncclSuccess) return -1;
  if (!done) return 0;
  d->req[0] = NULL;
  *data = d->buf;
  *len = size > 0 ? (size_t)size : 0;
  return 1;
}
