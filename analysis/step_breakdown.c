/* analysis/step_breakdown.c: per rank and step, compute, communication not overlapped, waiting
 * for peers and pipeline bubble from the collective instances (definitions in
 * include/collscope/step_breakdown.h, docs/balance.md "Steps"). */
#include "collscope/step_breakdown.h"

#include <stdlib.h>
#include <string.h>

#include "collscope/uthash_nonfatal.h"

struct held {
  int64_t start, end, wait; /* wait -1: a Send/Recv not matched yet */
  uint64_t comm;
  int64_t seq;
  uint64_t serial; /* the slot's count when it came */
};
/* A slot holds its CS_STEPS_RING latest ops by start, whatever order the walk gives them in
 * (it gives each communicator's instances in its own order: one communicator's can come after
 * another's later ones): a min-heap by start over v, the earliest evicted first. v and heap grow
 * with the rank's ops up to CS_STEPS_RING: a rank of few ops costs few (100,000 ranks of 25 ops:
 * not 100,000 x 1,024 entries). */
struct slot {
  struct held *v;
  uint32_t *heap;   /* indices into v, the earliest start at the root */
  uint32_t n;       /* ops in v */
  uint32_t cap;     /* room in v and heap */
  uint64_t count;   /* timed ops seen (each one's serial) */
  int64_t lost_end; /* the latest end of an op evicted, or not held */
  size_t untimed, unmatched;
};
struct pend { /* an op waiting for its match */
  uint32_t slot;
  uint64_t serial; /* its serial in the slot; UINT64_MAX: untimed */
  uint32_t idx;    /* where it is held in the slot's v (valid while v[idx].serial == serial) */
  int64_t start;
};
struct fifo { /* grown on demand to at most CS_STEPS_PENDING: a pair costs what its ops need */
  struct pend *v;
  size_t head, len, cap;
};
struct pair_key {
  uint64_t comm;
  int from, to;
};
struct pair {
  struct pair_key k;
  struct fifo sends, recvs;
  UT_hash_handle hh;
};
struct cs_steps {
  struct slot **slots;
  size_t nslots;
  struct pair *pairs;
  bool oom;
};

struct cs_steps *cs_steps_new(void) {
  return calloc(1, sizeof(struct cs_steps));
}

void cs_steps_free(struct cs_steps *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nslots; i++)
    if (s->slots[i]) free(s->slots[i]->v), free(s->slots[i]->heap), free(s->slots[i]);
  free(s->slots);
  struct pair *p, *t;
  HASH_ITER(hh, s->pairs, p, t) {
    HASH_DEL(s->pairs, p);
    free(p->sends.v);
    free(p->recvs.v);
    free(p);
  }
  free(s);
}

static struct slot *slot_of(struct cs_steps *s, uint32_t i) {
  if (i >= CS_STEPS_SLOTS) return NULL;
  if (i >= s->nslots) {
    size_t n = s->nslots ? s->nslots : 16;
    while (n <= i) n *= 2;
    struct slot **v = realloc(s->slots, n * sizeof *v);
    if (!v) return NULL;
    memset(v + s->nslots, 0, (n - s->nslots) * sizeof *v);
    s->slots = v;
    s->nslots = n;
  }
  if (!s->slots[i]) {
    s->slots[i] = calloc(1, sizeof(struct slot));
    if (s->slots[i]) s->slots[i]->lost_end = INT64_MIN;
  }
  return s->slots[i];
}

static int64_t clamp_wait(int64_t peer_start, int64_t start, int64_t end) {
  if (peer_start <= start) return 0;
  /* both within [0, INT64_MAX]: the readers' times are positive */
  return peer_start - start < end - start ? peer_start - start : end - start;
}

/* the held op of slot with serial at idx, NULL when evicted (or never held) */
static struct held *held_at(struct cs_steps *s, uint32_t slot, uint64_t serial, uint32_t idx) {
  if (serial == UINT64_MAX || slot >= s->nslots || !s->slots[slot]) return NULL;
  struct slot *S = s->slots[slot];
  return idx < S->n && S->v[idx].serial == serial ? &S->v[idx] : NULL;
}

static bool earlier(const struct slot *S, uint32_t a, uint32_t b) { return S->v[a].start < S->v[b].start; }

static void sift_down(struct slot *S, uint32_t i) {
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < S->n && earlier(S, S->heap[l], S->heap[m])) m = l;
    if (r < S->n && earlier(S, S->heap[r], S->heap[m])) m = r;
    if (m == i) return;
    uint32_t t = S->heap[i];
    S->heap[i] = S->heap[m], S->heap[m] = t;
    i = m;
  }
}

#define HOLD_OOM (UINT32_MAX - 1)
/* h held in S (the earliest held evicted when full, or h itself not held when it is the
 * earliest); its index in v, UINT32_MAX when not held, HOLD_OOM out of memory */
static uint32_t hold(struct slot *S, const struct held *h) {
  if (S->n < CS_STEPS_RING && S->n == S->cap) {
    uint32_t cap = S->cap ? 2 * S->cap : 16;
    if (cap > CS_STEPS_RING) cap = CS_STEPS_RING;
    struct held *v = realloc(S->v, cap * sizeof *v);
    if (!v) return HOLD_OOM;
    S->v = v;
    uint32_t *hp = realloc(S->heap, cap * sizeof *hp);
    if (!hp) return HOLD_OOM;
    S->heap = hp;
    S->cap = cap;
  }
  if (S->n < CS_STEPS_RING) {
    uint32_t i = S->n++, at = i;
    S->v[i] = *h;
    S->heap[at] = i;
    while (at && earlier(S, S->heap[at], S->heap[(at - 1) / 2])) { /* sift up */
      uint32_t p = (at - 1) / 2, t = S->heap[at];
      S->heap[at] = S->heap[p], S->heap[p] = t;
      at = p;
    }
    return i;
  }
  uint32_t root = S->heap[0];
  if (h->start <= S->v[root].start) { /* older than all held: not held */
    if (h->end > S->lost_end) S->lost_end = h->end;
    return UINT32_MAX;
  }
  if (S->v[root].end > S->lost_end) S->lost_end = S->v[root].end;
  S->v[root] = *h;
  sift_down(S, 0);
  return root;
}

static void match(struct cs_steps *s, const struct pend *a, const struct pend *b) {
  struct held *ha = held_at(s, a->slot, a->serial, a->idx), *hb = held_at(s, b->slot, b->serial, b->idx);
  bool both = a->serial != UINT64_MAX && b->serial != UINT64_MAX;
  if (ha) ha->wait = both ? clamp_wait(b->start, ha->start, ha->end) : 0;
  if (hb) hb->wait = both ? clamp_wait(a->start, hb->start, hb->end) : 0;
  if (!both) {
    if (a->serial != UINT64_MAX && a->slot < s->nslots && s->slots[a->slot]) s->slots[a->slot]->unmatched++;
    if (b->serial != UINT64_MAX && b->slot < s->nslots && s->slots[b->slot]) s->slots[b->slot]->unmatched++;
  }
}

static struct pend fifo_pop(struct fifo *f) {
  struct pend q = f->v[f->head];
  f->head = (f->head + 1) % f->cap;
  f->len--;
  return q;
}
/* false out of memory (the fifo has room for one more) */
static bool fifo_room(struct fifo *f) {
  if (f->len < f->cap) return true;
  size_t cap = f->cap ? 2 * f->cap : 2;
  struct pend *v = malloc(cap * sizeof *v);
  if (!v) return false;
  for (size_t i = 0; i < f->len; i++) v[i] = f->v[(f->head + i) % f->cap];
  free(f->v);
  f->v = v;
  f->cap = cap;
  f->head = 0;
  return true;
}

/* a Send or Recv: matched with the oldest unmatched op of the other side, else queued */
static int p2p_add(struct cs_steps *s, uint64_t comm, const struct cs_steps_op *o, struct pend pe) {
  struct pair_key k;
  memset(&k, 0, sizeof k);
  k.comm = comm;
  k.from = o->send ? o->comm_rank : o->peer;
  k.to = o->send ? o->peer : o->comm_rank;
  struct pair *p;
  HASH_FIND(hh, s->pairs, &k, sizeof k, p);
  if (!p) {
    p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->k = k;
    HASH_ADD(hh, s->pairs, k, sizeof k, p);
    if (!CS_HASH_ADDED()) return free(p), -1;
  }
  struct fifo *other = o->send ? &p->recvs : &p->sends, *mine = o->send ? &p->sends : &p->recvs;
  if (other->len) {
    struct pend q = fifo_pop(other);
    match(s, &pe, &q);
    return 0;
  }
  if (mine->len == CS_STEPS_PENDING) { /* the oldest is given up: unmatched, no wait */
    struct pend old = fifo_pop(mine);
    struct held *h = held_at(s, old.slot, old.serial, old.idx);
    if (h) h->wait = 0;
    if (old.serial != UINT64_MAX && old.slot < s->nslots && s->slots[old.slot]) s->slots[old.slot]->unmatched++;
  }
  if (!fifo_room(mine)) return -1;
  mine->v[(mine->head + mine->len) % mine->cap] = pe;
  mine->len++;
  return 0;
}

int cs_steps_instance(struct cs_steps *s, uint64_t comm, int64_t seq, const struct cs_steps_op *m, size_t n) {
  if (!s || s->oom) return -1;
  int64_t latest = INT64_MIN;
  for (size_t k = 0; k < n; k++)
    if (m[k].comm_rank >= 0 && m[k].timed && !m[k].p2p && m[k].start_ns > latest) latest = m[k].start_ns;
  for (size_t k = 0; k < n; k++) {
    const struct cs_steps_op *o = &m[k];
    if (o->comm_rank < 0) continue;
    struct slot *S = slot_of(s, o->slot);
    if (!S) {
      if (o->slot >= CS_STEPS_SLOTS) continue; /* no such rank: not held */
      s->oom = true;
      return -1;
    }
    uint64_t serial = UINT64_MAX;
    uint32_t idx = UINT32_MAX;
    if (o->timed && o->end_ns >= o->start_ns && o->start_ns > 0) {
      serial = S->count++;
      struct held h = {o->start_ns, o->end_ns, o->p2p ? -1 : clamp_wait(latest, o->start_ns, o->end_ns), comm, seq, serial};
      idx = hold(S, &h);
      if (idx == HOLD_OOM) {
        s->oom = true;
        return -1;
      }
    } else {
      S->untimed++;
    }
    if (o->p2p && o->peer >= 0 && p2p_add(s, comm, o, (struct pend){o->slot, serial, idx, o->start_ns}) < 0) {
      s->oom = true;
      return -1;
    }
  }
  return 0;
}

/* ---------- one slot's steps ---------- */

struct ev {
  int64_t t;
  int cover, wait, pipe; /* deltas */
};
static int cmp_ev(const void *pa, const void *pb) {
  const struct ev *a = pa, *b = pb;
  return a->t < b->t ? -1 : a->t > b->t;
}
struct bound {
  int64_t k, t;
};
static int cmp_bound(const void *pa, const void *pb) {
  const struct bound *a = pa, *b = pb;
  return a->k < b->k ? -1 : a->k > b->k;
}

/* the segment [x, y) of one kind added to the steps it overlaps (steps sorted, disjoint) */
static void spread(struct cs_step_fig *f, size_t nf, size_t *from, int64_t x, int64_t y, int kind) {
  while (*from < nf && f[*from].start_ns + f[*from].step_ns <= x) (*from)++;
  for (size_t i = *from; i < nf && f[i].start_ns < y; i++) {
    int64_t a = x > f[i].start_ns ? x : f[i].start_ns, e = f[i].start_ns + f[i].step_ns, b = y < e ? y : e;
    if (b <= a) continue;
    int64_t *dst = kind == 0 ? &f[i].compute_ns : kind == 1 ? &f[i].comm_ns
                                              : kind == 2   ? &f[i].wait_ns
                                                            : &f[i].bubble_ns;
    *dst += b - a;
  }
}

int cs_steps_slot(const struct cs_steps *s, uint32_t slot, uint64_t step_comm, int period, cs_steps_pipeline_fn pipe,
                  void *ctx, struct cs_step_fig *out, struct cs_steps_counts *c) {
  memset(c, 0, sizeof *c);
  if (!s || slot >= s->nslots || !s->slots[slot] || period <= 0) return 0;
  const struct slot *S = s->slots[slot];
  c->untimed = S->untimed;
  c->unmatched = S->unmatched;
  size_t nh = S->n;
  struct ev *ev = calloc(4 * nh + 1, sizeof *ev);
  struct bound *bd = calloc(nh + 1, sizeof *bd);
  struct cs_step_fig *f = calloc(nh + 1, sizeof *f);
  if (!ev || !bd || !f) {
    free(ev), free(bd), free(f);
    return -1;
  }
  size_t ne = 0, nb = 0;
  for (size_t k = 0; k < nh; k++) {
    const struct held *h = &S->v[k];
    if (h->comm == step_comm && h->seq >= 0 && h->seq % period == 0) bd[nb++] = (struct bound){h->seq / period, h->start};
    int64_t w = h->wait;
    if (w < 0) { /* never matched */
      c->unmatched++;
      w = 0;
    }
    int p = pipe && pipe(ctx, h->comm) ? 1 : 0;
    ev[ne++] = (struct ev){h->start, 1, 0, 0};
    ev[ne++] = (struct ev){h->end, -1, 0, 0};
    if (w > 0) {
      ev[ne++] = (struct ev){h->start, 0, 1, p};
      ev[ne++] = (struct ev){h->start + w, 0, -1, -p};
    }
  }
  qsort(bd, nb, sizeof *bd, cmp_bound);
  /* the steps: consecutive boundaries k, k + 1 (k >= 1), wholly after every evicted op */
  size_t nf = 0;
  for (size_t i = 0; i + 1 < nb; i++) {
    if (bd[i].k < 1 || bd[i + 1].k == bd[i].k) continue;
    c->steps++;
    if (bd[i + 1].k != bd[i].k + 1 || bd[i + 1].t <= bd[i].t || bd[i].t < S->lost_end ||
        (nf && bd[i].t < f[nf - 1].start_ns + f[nf - 1].step_ns)) {
      c->incomplete++;
      continue;
    }
    f[nf++] = (struct cs_step_fig){.step = bd[i].k, .start_ns = bd[i].t, .step_ns = bd[i + 1].t - bd[i].t};
  }
  /* the timeline's segments in time order: per segment how many ops run, how many of them
   * wait, and how many of those are pipeline ops */
  qsort(ev, ne, sizeof *ev, cmp_ev);
  int cover = 0, wait = 0, pw = 0;
  size_t from = 0;
  int64_t lo = nf ? f[0].start_ns : 0, x = lo;
  for (size_t i = 0; i < ne && nf; i++) {
    if (ev[i].t > x) {
      int kind = cover <= 0 ? 0 : wait < cover ? 1
                              : pw > 0         ? 3
                                               : 2;
      spread(f, nf, &from, x, ev[i].t, kind);
      x = ev[i].t;
    }
    cover += ev[i].cover;
    wait += ev[i].wait;
    pw += ev[i].pipe;
  }
  if (nf) { /* after the last op: compute to the last step's end */
    int64_t end = f[nf - 1].start_ns + f[nf - 1].step_ns;
    if (x < end) spread(f, nf, &from, x > lo ? x : lo, end, 0);
  }
  size_t skip = nf > CS_STEPS_MAX ? nf - CS_STEPS_MAX : 0;
  memcpy(out, f + skip, (nf - skip) * sizeof *out);
  free(ev), free(bd), free(f);
  return (int)(nf - skip);
}
