/* tests/sim/nccl/exec.c: what a fused work item does on the stream worker. Data moves
 * through per-(src,dst) channels in the comm's shm segment: SN_SLOTS slots of
 * SN_SLOT_BYTES each, head written by the sender, tail by the receiver; every state
 * change rings the other side's doorbell futex. Algorithms (see README.md):
 * ring reduce-scatter + all-gather for AllReduce/ReduceScatter/AllGather, chains along the
 * ring for Reduce/Broadcast, pairwise transfers for Send/Recv/AlltoAll/Gather/Scatter.
 * With NCCL_NET_PLUGIN (netload.c), traffic between two hosts goes through the net plugin
 * when both ends have a usable one, as in NCCL:
 *  - a ring edge between two hosts: the four channel primitives below switch to the plugin
 *    for that edge, and each ring op ends by completing its outstanding sends;
 *  - a pairwise transfer between two hosts: p2p_run uses the pair's own plugin connection
 *    (one per ordered pair, set up lazily at its first transfer, without blocking the other
 *    transfers of the group), else the shm channel; same-host pairs always use shm.
 * Link faults (COLLSCOPE_SIM_FAULTS `link:`): on a shm edge or pair exec.c sleeps before
 * sending; on a net edge or pair the plugin models the wire (simnet applies the delay to
 * each message), so exec.c adds none: one delay source per hop. */
#include "simnccl.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct x {
  struct ncclComm *c;
  struct sn_op *op;
  int t, redop, n, p, next, prev;
  size_t es, P;                 /* element size, elements per slot */
  unsigned char scalar[8];
  unsigned delay_next;          /* link fault us on the edge to next */
};

static int aborted(struct ncclComm *c) { return atomic_load(&c->shm->abort) != 0; }

static void sleep_us(unsigned us) {
  if (!us || simcuda_model_on()) return;   /* modeled clock: the delay is in the item's cost (model.c) */
  struct timespec ts = {us / 1000000u, (long)(us % 1000000u) * 1000L};
  while (nanosleep(&ts, &ts) != 0) {}
}
static unsigned edge_delay(struct ncclComm *c, int peer, long long seq) {
  if (!sn_nfaults) return 0;
  return sn_link_delay_us(c->shm->ranks[c->rank].host, c->shm->ranks[peer].host, seq, NULL);
}

/* ---- blocking channel primitives (return NULL/-1 on abort) ---- */
/* only inside a ring algorithm (net->in_ring): pairwise transfers use the shm primitives
 * for shm pairs and their own plugin connections for net pairs (p2p_run) */
static inline int net_send(struct ncclComm *c, int peer) {
  return c->net && c->net->in_ring && c->net->send_on && peer == c->net->next;
}
static inline int net_recv(struct ncclComm *c, int peer) {
  return c->net && c->net->in_ring && (c->net->recv_on || c->net->recv_broken) && peer == c->net->prev;
}
static void *send_acquire(struct ncclComm *c, int peer) {
  if (net_send(c, peer)) return sn_net_send_acquire(c);
  struct sn_chan_ctrl *ch = sn_chan(c, c->rank, peer);
  _Atomic uint32_t *bell = sn_doorbell(c, c->rank);
  for (;;) {
    uint32_t b = atomic_load(bell);
    uint32_t head = atomic_load_explicit(&ch->head, memory_order_relaxed);
    if (head - atomic_load_explicit(&ch->tail, memory_order_acquire) < SN_SLOTS) return sn_slot(ch, head) + 1;
    if (aborted(c)) return NULL;
    sn_bell_wait(c, b, SN_BELL_SPACE, 0);
  }
}
static void send_commit(struct ncclComm *c, int peer, size_t len, int last) {
  if (net_send(c, peer)) {   /* a failed isend makes the next acquire fail (the op aborts) */
    sn_net_send_commit(c, len);
    atomic_fetch_add_explicit(&c->sent_bytes[peer], len, memory_order_relaxed);
    return;
  }
  struct sn_chan_ctrl *ch = sn_chan(c, c->rank, peer);
  uint32_t head = atomic_load_explicit(&ch->head, memory_order_relaxed);
  struct sn_slot_hdr *s = sn_slot(ch, head);
  s->len = len; s->last = (uint32_t)last;
  atomic_store_explicit(&ch->head, head + 1, memory_order_release);
  atomic_fetch_add_explicit(&c->sent_bytes[peer], len, memory_order_relaxed);
  sn_ring_bell_for(c, peer, SN_BELL_DATA);
}
static struct sn_slot_hdr *recv_acquire(struct ncclComm *c, int peer) {
  if (net_recv(c, peer)) return sn_net_recv_acquire(c);
  struct sn_chan_ctrl *ch = sn_chan(c, peer, c->rank);
  _Atomic uint32_t *bell = sn_doorbell(c, c->rank);
  for (;;) {
    uint32_t b = atomic_load(bell);
    uint32_t tail = atomic_load_explicit(&ch->tail, memory_order_relaxed);
    if (atomic_load_explicit(&ch->head, memory_order_acquire) != tail) return sn_slot(ch, tail);
    if (aborted(c)) return NULL;
    sn_bell_wait(c, b, SN_BELL_DATA, 0);
  }
}
static void recv_release(struct ncclComm *c, int peer) {
  if (net_recv(c, peer)) return;   /* the plugin's receive buffer is reused by the next irecv */
  struct sn_chan_ctrl *ch = sn_chan(c, peer, c->rank);
  atomic_fetch_add_explicit(&ch->tail, 1, memory_order_release);
  sn_ring_bell_for(c, peer, SN_BELL_SPACE);
}

static void flip(struct sn_op *op, size_t es, void *buf, size_t base, size_t n) {
  if (op->flip_elem < base || op->flip_elem >= base + n) return;
  unsigned char *b = (unsigned char *)buf + (op->flip_elem - base) * es + (size_t)op->flip_bit / 8;
  if ((size_t)op->flip_bit < es * 8) *b ^= (unsigned char)(1u << (op->flip_bit % 8));
}
static void hop_flip(struct x *x, void *buf, size_t base, size_t n) {
  if (x->op->flip_hop) flip(x->op, x->es, buf, base, n);
}

/* The first hop of a reduction: this rank's own piece (elements e0..e0+pl) into the
 * next rank's slot, after the link fault's delay on the first piece. -1 on abort. */
static int send_own_piece(struct x *x, const void *mine, size_t e0, size_t pl, int first) {
  if (first && x->delay_next) sleep_us(x->delay_next);
  void *out = send_acquire(x->c, x->next);
  if (!out) return -1;
  sn_reduce(x->t, x->redop, x->scalar, out, NULL, mine, pl);
  hop_flip(x, out, e0, pl);
  send_commit(x->c, x->next, pl * x->es, 0);
  return 0;
}

/* ---- ring phases, piece-major: for each piece i, walk the n-1 (or n) ring steps ----
 * chunk k (by ring position) starts at element off[k] and has len[k] elements. */
static size_t piece_len(size_t len, size_t i, size_t P) {
  size_t s = i * P;
  if (s >= len) return 0;
  return len - s < P ? len - s : P;
}

/* reduce-scatter: chunk k's partial starts at position k+1, is combined rank by rank in
 * ring order and ends at position k, which writes it to dst + (dst_off) */
static int ring_reduce_scatter(struct x *x, const size_t *off, const size_t *len, size_t npieces,
                               void *dst_final, size_t dst_shift) {
  const char *own = x->op->sendbuff;
  int n = x->n, p = x->p;
  for (size_t i = 0; i < npieces; i++) {
    for (int s = 0; s < n; s++) {
      int k = ((p - 1 - s) % n + n) % n;
      size_t pl = piece_len(len[k], i, x->P);
      size_t e0 = off[k] + i * x->P;
      const void *mine = own + e0 * x->es;
      if (s == 0) {
        if (send_own_piece(x, mine, e0, pl, i == 0)) return -1;
        continue;
      }
      struct sn_slot_hdr *in = recv_acquire(x->c, x->prev);
      if (!in) return -1;
      if (s < n - 1) {
        if (i == 0 && x->delay_next) sleep_us(x->delay_next);
        void *out = send_acquire(x->c, x->next);
        if (!out) return -1;
        sn_reduce(x->t, x->redop, x->scalar, out, in + 1, mine, pl);
        hop_flip(x, out, e0, pl);
        send_commit(x->c, x->next, pl * x->es, 0);
      } else {
        char *d = (char *)dst_final + (e0 - dst_shift) * x->es;
        sn_reduce(x->t, x->redop, x->scalar, d, in + 1, mine, pl);
        sn_post(x->t, x->redop, d, pl, n);
        hop_flip(x, d, e0, pl);
      }
      recv_release(x->c, x->prev);
    }
  }
  return 0;
}

/* all-gather: chunk k is final at position k (in buf + off[k]); it travels k -> k+1 -> ... */
static int ring_all_gather(struct x *x, const size_t *off, const size_t *len, size_t npieces, char *buf,
                           const char *own_src, int flips) {
  int n = x->n, p = x->p;
  for (size_t i = 0; i < npieces; i++) {
    for (int s = 0; s < n; s++) {
      int k = ((p - s) % n + n) % n;
      size_t pl = piece_len(len[k], i, x->P);
      size_t e0 = off[k] + i * x->P;
      if (s == 0) {
        if (i == 0 && x->delay_next) sleep_us(x->delay_next);
        void *out = send_acquire(x->c, x->next);
        if (!out) return -1;
        memcpy(out, (own_src ? own_src + i * x->P * x->es : buf + e0 * x->es), pl * x->es);
        if (flips) hop_flip(x, out, e0, pl);
        send_commit(x->c, x->next, pl * x->es, 0);
        continue;
      }
      struct sn_slot_hdr *in = recv_acquire(x->c, x->prev);
      if (!in) return -1;
      memcpy(buf + e0 * x->es, in + 1, pl * x->es);
      if (s < n - 1) {
        if (i == 0 && x->delay_next) sleep_us(x->delay_next);
        void *out = send_acquire(x->c, x->next);
        if (!out) return -1;
        memcpy(out, in + 1, pl * x->es);
        if (flips) hop_flip(x, out, e0, pl);
        send_commit(x->c, x->next, pl * x->es, 0);
      }
      recv_release(x->c, x->prev);
    }
  }
  return 0;
}

static size_t npieces_of(const size_t *len, int n, size_t P) {
  size_t m = 0;
  for (int k = 0; k < n; k++) if (len[k] > m) m = len[k];
  size_t np = (m + P - 1) / P;
  return np ? np : 1;
}

static int do_allreduce(struct x *x) {
  struct sn_op *op = x->op;
  int n = x->n;
  if (n == 1) {
    sn_reduce(x->t, x->redop, x->scalar, op->recvbuff, NULL, op->sendbuff, op->count);
    sn_post(x->t, x->redop, op->recvbuff, op->count, 1);
    hop_flip(x, op->recvbuff, 0, op->count);
    return 0;
  }
  size_t *off = calloc((size_t)n * 2, sizeof(size_t)), *len = off + n;
  if (!off) return -1;
  size_t cs = (op->count + (size_t)n - 1) / (size_t)n;
  for (int k = 0; k < n; k++) {
    size_t a = (size_t)k * cs, b = a + cs;
    if (a > op->count) a = op->count;
    if (b > op->count) b = op->count;
    off[k] = a; len[k] = b - a;
  }
  size_t np = npieces_of(len, n, x->P);
  int r = ring_reduce_scatter(x, off, len, np, op->recvbuff, 0);
  if (!r) r = ring_all_gather(x, off, len, np, op->recvbuff, NULL, 0);   /* the flip already happened in RS */
  free(off);
  return r;
}

static int do_reducescatter(struct x *x) {
  struct sn_op *op = x->op;
  int n = x->n;
  size_t rc = op->count;
  if (n == 1) {
    sn_reduce(x->t, x->redop, x->scalar, op->recvbuff, NULL, op->sendbuff, rc);
    sn_post(x->t, x->redop, op->recvbuff, rc, 1);
    hop_flip(x, op->recvbuff, 0, rc);
    return 0;
  }
  size_t off[SN_MAXRANKS] = {0}, len[SN_MAXRANKS] = {0};
  for (int k = 0; k < n; k++) { off[k] = (size_t)x->c->ring[k] * rc; len[k] = rc; }
  return ring_reduce_scatter(x, off, len, npieces_of(len, n, x->P), op->recvbuff, off[x->p]);
}

static int do_allgather(struct x *x) {
  struct sn_op *op = x->op;
  int n = x->n;
  size_t sc = op->count;
  char *rb = op->recvbuff;
  const char *own = (const char *)op->sendbuff;
  char *mine = rb + (size_t)x->c->rank * sc * x->es;
  if (own != mine) memmove(mine, own, sc * x->es);
  if (n == 1) { hop_flip(x, rb, 0, sc); return 0; }
  size_t off[SN_MAXRANKS] = {0}, len[SN_MAXRANKS] = {0};
  for (int k = 0; k < n; k++) { off[k] = (size_t)x->c->ring[k] * sc; len[k] = sc; }
  return ring_all_gather(x, off, len, npieces_of(len, n, x->P), rb, NULL, 1);
}

/* broadcast: root -> root+1 -> ... along the ring, pipelined by piece */
static int do_broadcast(struct x *x) {
  struct sn_op *op = x->op;
  int n = x->n;
  int d = ((x->p - x->c->pos[op->root]) % n + n) % n;
  size_t cnt = op->count, np = (cnt + x->P - 1) / x->P;
  if (d == 0 && op->sendbuff != op->recvbuff) memmove(op->recvbuff, op->sendbuff, cnt * x->es);
  if (n == 1) return 0;
  for (size_t i = 0; i < np; i++) {
    size_t pl = piece_len(cnt, i, x->P), e0 = i * x->P;
    char *dst = (char *)op->recvbuff + e0 * x->es;
    struct sn_slot_hdr *in = NULL;
    if (d != 0) {
      if (!(in = recv_acquire(x->c, x->prev))) return -1;
      memcpy(dst, in + 1, pl * x->es);
    }
    if (d != n - 1) {
      if (i == 0 && x->delay_next) sleep_us(x->delay_next);
      void *out = send_acquire(x->c, x->next);
      if (!out) return -1;
      memcpy(out, dst, pl * x->es);
      hop_flip(x, out, e0, pl);
      send_commit(x->c, x->next, pl * x->es, 0);
    }
    if (in) recv_release(x->c, x->prev);
  }
  return 0;
}

/* reduce: chain root+1 -> root+2 -> ... -> root, the root adds its own input last */
static int do_reduce(struct x *x) {
  struct sn_op *op = x->op;
  int n = x->n;
  int d = ((x->p - x->c->pos[op->root]) % n + n) % n;
  size_t cnt = op->count, np = (cnt + x->P - 1) / x->P;
  if (n == 1) {
    sn_reduce(x->t, x->redop, x->scalar, op->recvbuff, NULL, op->sendbuff, cnt);
    sn_post(x->t, x->redop, op->recvbuff, cnt, 1);
    hop_flip(x, op->recvbuff, 0, cnt);
    return 0;
  }
  for (size_t i = 0; i < np; i++) {
    size_t pl = piece_len(cnt, i, x->P), e0 = i * x->P;
    const char *mine = (const char *)op->sendbuff + e0 * x->es;
    if (d == 1) {
      if (send_own_piece(x, mine, e0, pl, i == 0)) return -1;
      continue;
    }
    struct sn_slot_hdr *in = recv_acquire(x->c, x->prev);
    if (!in) return -1;
    if (d == 0) {
      char *dst = (char *)op->recvbuff + e0 * x->es;
      sn_reduce(x->t, x->redop, x->scalar, dst, in + 1, mine, pl);
      sn_post(x->t, x->redop, dst, pl, n);
      hop_flip(x, dst, e0, pl);
    } else {
      if (i == 0 && x->delay_next) sleep_us(x->delay_next);
      void *out = send_acquire(x->c, x->next);
      if (!out) return -1;
      sn_reduce(x->t, x->redop, x->scalar, out, in + 1, mine, pl);
      hop_flip(x, out, e0, pl);
      send_commit(x->c, x->next, pl * x->es, 0);
    }
    recv_release(x->c, x->prev);
  }
  return 0;
}

/* ---- pairwise transfers: progress every send/recv of the set until all are done ----
 * Each transfer's route is decided at its first pass: shared memory for a same-host pair or
 * without a usable plugin, else the pair's plugin connection (set up lazily, netload.c; a
 * set-up that fails puts the pair on shared memory at both ends). Every pass progresses every
 * transfer that is not behind an earlier one on the same (direction, peer): set-up steps,
 * shm slots, staged/posted isends, the posted irecv; nothing blocks on one transfer while
 * another could move (the plugin's own test() may wait briefly: simnet waits up to 1 ms).
 * On shm a message is cut into SN_SLOT_BYTES pieces, the last one flagged; on the net a
 * piece shorter than SN_SLOT_BYTES (an empty one if need be) ends the message. */
struct xfer {
  int send, peer;
  char *buf;
  size_t bytes, off;
  int pushed_last, done, delayed, route;
  int recv_op;             /* a Recv op's (not a collective's): takes its Send's stamp (model.c) */
  uint32_t final_head;
  struct sn_op *op;        /* for hop flips (element base = 0 within this transfer) */
  size_t elem_base, es;
};

/* the pair's route (SN_P2P_*); same host, or one rank: shared memory */
static int xfer_route(struct ncclComm *c, struct xfer *t) {
  if (t->route == SN_P2P_SHM || t->route == SN_P2P_NET || t->route == SN_P2P_BROKEN) return t->route;
  if (!strcmp(c->shm->ranks[c->rank].host, c->shm->ranks[t->peer].host)) return t->route = SN_P2P_SHM;
  return t->route = sn_net_p2p_route(c, t->peer, t->send);
}

static void stage_piece(struct xfer *t, void *out, size_t l) {
  if (l == 0) return;   /* an empty Send: t->buf may be NULL */
  memcpy(out, t->buf + t->off, l);
  if (t->op && t->op->flip_hop && t->es) flip(t->op, t->es, out, t->elem_base + t->off / t->es, l / t->es);
  t->off += l;
}

/* one pass over a net-routed transfer: 1 if it moved, 0 if not, -1 on a plugin error */
static int net_xfer(struct ncclComm *c, struct xfer *t) {
  int progress = 0;
  if (t->send) {
    for (;;) {
      while (!t->pushed_last) {
        void *out = sn_net_p2p_send_acquire(c, t->peer);
        if (!out) break;
        size_t l = t->bytes - t->off;
        if (l > SN_SLOT_BYTES) l = SN_SLOT_BYTES;
        stage_piece(t, out, l);
        t->pushed_last = l < SN_SLOT_BYTES;   /* a short (or empty) piece ends the message */
        sn_net_p2p_send_commit(c, t->peer, l);
        atomic_fetch_add_explicit(&c->sent_bytes[t->peer], l, memory_order_relaxed);
        progress = 1;
      }
      uint32_t busy = 0;
      int m = sn_net_p2p_send_progress(c, t->peer, &busy);
      if (m < 0) return -1;
      /* like NCCL's net transport: a send completes when the plugin reports its isends done */
      if (t->pushed_last && busy == 0) { t->done = 1; return 1; }
      if (m) progress = 1;
      /* again only when a completion freed a staging slot for the next piece (a second test of
       * a request that is not done would only wait in the plugin while other transfers could move) */
      if (!m || t->pushed_last || !sn_net_p2p_send_acquire(c, t->peer)) break;
    }
    return progress;
  }
  for (;;) {
    const void *data;
    size_t l;
    int r = sn_net_p2p_recv(c, t->peer, &data, &l);
    if (r < 0) return -1;
    if (r == 0) return progress;
    int last = l < SN_SLOT_BYTES;
    if (t->off + l > t->bytes) l = t->off < t->bytes ? t->bytes - t->off : 0;   /* truncate */
    if (l) memcpy(t->buf + t->off, data, l);
    t->off += l;
    progress = 1;
    if (last) {
      if (t->recv_op) sn_model_p2p_take(c, t->peer);
      t->done = 1;
      return 1;
    }
  }
}

static int p2p_run(struct ncclComm *c, struct xfer *v, int nv) {
  _Atomic uint32_t *bell = sn_doorbell(c, c->rank);
  for (;;) {
    uint32_t b = atomic_load(bell);
    int progress = 0, all = 1, poll = 0;   /* poll: a plugin call to repeat (no doorbell for it) */
    for (int i = 0; i < nv; i++) {
      struct xfer *t = &v[i];
      if (t->done) continue;
      all = 0;
      int route = xfer_route(c, t);   /* set-ups of queued transfers progress too */
      if (route == SN_P2P_BROKEN) return -1;
      if (route == SN_P2P_RETRY) poll = 1;
      if (route != SN_P2P_SHM && route != SN_P2P_NET) continue;
      int blocked = 0;   /* an earlier transfer on the same channel goes first */
      for (int j = 0; j < i && !blocked; j++)
        if (!v[j].done && v[j].send == t->send && v[j].peer == t->peer) blocked = 1;
      if (blocked) continue;
      if (route == SN_P2P_NET) {   /* the plugin models the wire, link fault delay included */
        int r = net_xfer(c, t);
        if (r < 0) return -1;
        progress |= r;
        poll |= !t->done;
        continue;
      }
      if (t->send) {
        struct sn_chan_ctrl *ch = sn_chan(c, c->rank, t->peer);
        if (!t->delayed) { t->delayed = 1; sleep_us(edge_delay(c, t->peer, t->op ? (long long)t->op->seq : -1)); }
        while (!t->pushed_last) {
          uint32_t head = atomic_load_explicit(&ch->head, memory_order_relaxed);
          if (head - atomic_load_explicit(&ch->tail, memory_order_acquire) >= SN_SLOTS) break;
          size_t l = t->bytes - t->off;
          if (l > SN_SLOT_BYTES) l = SN_SLOT_BYTES;
          stage_piece(t, sn_slot(ch, head) + 1, l);
          t->pushed_last = t->off == t->bytes;
          t->final_head = head + 1;
          send_commit(c, t->peer, l, t->pushed_last);
          progress = 1;
        }
        /* like NCCL outside a group: a send completes when the receiver has the data */
        if (t->pushed_last &&
            (int32_t)(atomic_load_explicit(&ch->tail, memory_order_acquire) - t->final_head) >= 0) {
          t->done = 1; progress = 1;
        }
      } else {
        struct sn_chan_ctrl *ch = sn_chan(c, t->peer, c->rank);
        for (;;) {
          uint32_t tail = atomic_load_explicit(&ch->tail, memory_order_relaxed);
          if (atomic_load_explicit(&ch->head, memory_order_acquire) == tail) break;
          struct sn_slot_hdr *s = sn_slot(ch, tail);
          size_t l = s->len;
          if (t->off + l > t->bytes) l = t->off < t->bytes ? t->bytes - t->off : 0;   /* truncate */
          if (l) memcpy(t->buf + t->off, s + 1, l);
          t->off += l;
          int last = (int)s->last;
          if (last && t->recv_op) sn_model_p2p_take(c, t->peer);   /* before the sender posts again */
          recv_release(c, t->peer);
          progress = 1;
          if (last) { t->done = 1; break; }
        }
      }
    }
    if (all) return 0;
    if (!progress) {
      if (aborted(c)) return -1;
      sn_bell_wait(c, b, SN_BELL_ANY, poll ? 20000 : 0);   /* poll: peers' shm traffic or set-up steps still wake us */
    }
  }
}

static int add_xfer(struct xfer **v, int *nv, int *cap, int send, int peer, const void *buf, size_t bytes,
                    struct sn_op *op, size_t elem_base, size_t es) {
  if (*nv == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    struct xfer *n = realloc(*v, (size_t)nc * sizeof *n);
    if (!n) return -1;
    *v = n; *cap = nc;
  }
  struct xfer *t = &(*v)[(*nv)++];
  memset(t, 0, sizeof *t);
  t->send = send; t->peer = peer; t->buf = (char *)buf; t->bytes = bytes;
  t->op = send ? op : NULL; t->elem_base = elem_base; t->es = es;
  t->recv_op = !send && op && op->coll == SN_RECV;
  return 0;
}

static int run_pairwise(struct ncclComm *c, struct sn_op *op, size_t es) {
  struct xfer *v = NULL;
  int nv = 0, cap = 0, r = 0, me = c->rank, n = c->nranks;
  size_t blk = op->count * es;
  const char *sb = op->sendbuff;
  char *rb = op->recvbuff;
  switch (op->coll) {
  case SN_ALLTOALL:
    memmove(rb + (size_t)me * blk, sb + (size_t)me * blk, blk);
    for (int k = 1; k < n; k++) {
      int to = (me + k) % n, from = (me - k + n) % n;
      r |= add_xfer(&v, &nv, &cap, 1, to, sb + (size_t)to * blk, blk, op, (size_t)to * op->count, es);
      r |= add_xfer(&v, &nv, &cap, 0, from, rb + (size_t)from * blk, blk, op, 0, es);
    }
    break;
  case SN_GATHER:
    if (me == op->root) {
      if (sb != rb + (size_t)me * blk) memmove(rb + (size_t)me * blk, sb, blk);
      for (int k = 0; k < n; k++) if (k != me) r |= add_xfer(&v, &nv, &cap, 0, k, rb + (size_t)k * blk, blk, op, 0, es);
    } else {
      r |= add_xfer(&v, &nv, &cap, 1, op->root, sb, blk, op, (size_t)me * op->count, es);
    }
    break;
  case SN_SCATTER:
    if (me == op->root) {
      if (rb != sb + (size_t)me * blk) memmove(rb, sb + (size_t)me * blk, blk);
      for (int k = 0; k < n; k++) if (k != me) r |= add_xfer(&v, &nv, &cap, 1, k, sb + (size_t)k * blk, blk, op, 0, es);
    } else {
      r |= add_xfer(&v, &nv, &cap, 0, op->root, rb, blk, op, 0, es);
    }
    break;
  }
  if (!r && nv) r = p2p_run(c, v, nv);
  free(v);
  return r;
}

static size_t out_count(struct ncclComm *c, struct sn_op *op) {
  size_t n = (size_t)c->nranks;
  switch (op->coll) {
  case SN_ALLGATHER: case SN_ALLTOALL: return op->count * n;
  case SN_GATHER: return c->rank == op->root ? op->count * n : 0;
  case SN_REDUCE: return c->rank == op->root ? op->count : 0;
  case SN_SEND: return 0;
  default: return op->count;
  }
}

static void set_scalar(struct x *x, struct sn_op *op) {
  memset(x->scalar, 0, 8);
  if (x->redop == SN_PREMULSUM) {
    if (op->scalar_ptr) sn_convert_scalar(op->scalar_dtype, op->scalar_ptr, x->t, x->scalar);
    else memcpy(x->scalar, op->scalar, 8);
  }
}

static void hang_until_abort(struct ncclComm *c) {
  for (;;) {
    uint32_t v = atomic_load(&c->shm->abort);
    if (v) return;
    sn_wait(&c->shm->abort, v);
  }
}

/* A NULL buffer that an op of this item would touch: on a GPU the kernel takes an illegal
 * address fault, the launch dies as a whole and the context is lost. Here: one WARN, the comm's
 * async error becomes ncclUnhandledCudaError (what NCCL returns for a failed CUDA call), the
 * device gets the sticky CUDA_ERROR_ILLEGAL_ADDRESS (its streams' synchronize/query return it
 * from now on), and neither this item nor any later one of the comm moves data on this rank
 * (peers wait for it, as for a dead GPU, until an abort). */
static int null_buffer_fault(struct ncclComm *c, struct sn_op *ops, int nops) {
  if (atomic_load(&c->faulted)) return 1;
  for (int i = 0; i < nops; i++) {
    struct sn_op *op = &ops[i];
    if (op->count == 0) continue;
    const char *which = NULL;
    if (sn_op_uses_send(op, c->rank) && !op->sendbuff) which = "sendbuff";
    else if (sn_op_uses_recv(op, c->rank) && !op->recvbuff) which = "recvbuff";
    if (!which) continue;
    atomic_store(&c->faulted, 1);
    int z = ncclSuccess;
    atomic_compare_exchange_strong(&c->async_err, &z, ncclUnhandledCudaError);
    sn_warn(c->dev, "Cuda failure 700 'an illegal memory access was encountered' (comm %p rank %d: "
            "%s of seq %llu is NULL, count %zu)", (void *)c, c->rank, which, (unsigned long long)op->seq,
            op->count);
    /* last: a synchronize it wakes already sees the WARN */
    simcuda_device_fault(c->dev, CUDA_ERROR_ILLEGAL_ADDRESS);
    return 1;
  }
  return 0;
}

void sn_exec_ops(struct ncclComm *c, struct sn_op *ops, int nops) {
  if (null_buffer_fault(c, ops, nops)) return;
  int failed = aborted(c);
  struct xfer *v = NULL;
  int nv = 0, cap = 0;
  for (int i = 0; i < nops && !failed; i++) {
    struct sn_op *op = &ops[i];
    if (op->hang) { hang_until_abort(c); failed = 1; break; }
    if (op->coll == SN_SEND || op->coll == SN_RECV) continue;
    struct x x = {0};
    x.c = c; x.op = op; x.t = op->dtype; x.redop = op->redop; x.n = c->nranks;
    x.p = c->pos[c->rank];
    x.next = c->ring[(x.p + 1) % x.n];
    x.prev = c->ring[(x.p - 1 + x.n) % x.n];
    x.es = sn_type_size(op->dtype);
    x.P = SN_SLOT_BYTES / x.es;
    int ring_op = x.n > 1 && op->coll <= SN_REDUCESCATTER;   /* AllReduce..ReduceScatter */
    if (ring_op) sn_net_setup(c);
    if (c->net) c->net->in_ring = ring_op;
    x.delay_next = x.n > 1 && !net_send(c, x.next) ? edge_delay(c, x.next, (long long)op->seq) : 0;
    set_scalar(&x, op);
    int r = 0;
    switch (op->coll) {
    case SN_ALLREDUCE: r = do_allreduce(&x); break;
    case SN_REDUCESCATTER: r = do_reducescatter(&x); break;
    case SN_ALLGATHER: r = do_allgather(&x); break;
    case SN_BROADCAST: r = do_broadcast(&x); break;
    case SN_REDUCE: r = do_reduce(&x); break;
    default: r = run_pairwise(c, op, x.es); break;
    }
    if (ring_op && c->net && sn_net_drain(c)) r = -1;
    if (c->net) c->net->in_ring = 0;
    if (r) { failed = 1; break; }
    if (op->flip_out) flip(op, x.es, op->recvbuff, 0, out_count(c, op));
  }
  if (!failed) {
    for (int i = 0; i < nops; i++) {
      struct sn_op *op = &ops[i];
      if (op->coll != SN_SEND && op->coll != SN_RECV) continue;
      size_t es = sn_type_size(op->dtype);
      if (add_xfer(&v, &nv, &cap, op->coll == SN_SEND, op->root,
                   op->coll == SN_SEND ? op->sendbuff : op->recvbuff, op->count * es, op, 0, es)) { failed = 1; break; }
      if (op->coll == SN_SEND) sn_model_p2p_post(c, op);   /* before any of its data */
    }
    if (!failed && nv && p2p_run(c, v, nv)) failed = 1;
    if (!failed)
      for (int i = 0; i < nops; i++)
        if (ops[i].coll == SN_RECV && ops[i].flip_out) flip(&ops[i], sn_type_size(ops[i].dtype), ops[i].recvbuff, 0, ops[i].count);
  }
  free(v);
  if (failed) {
    int z = ncclSuccess;
    atomic_compare_exchange_strong(&c->async_err, &z, ncclRemoteError);
    sn_warn(c->dev, "comm %p rank %d: operation aborted (communicator aborted by a peer or revoked)",
            (void *)c, c->rank);
  }
}
