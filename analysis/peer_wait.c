/* analysis/peer_wait.c: each rank's wait inside its ops per peer waited for, and the link findings
 * such a wait explains (definitions in include/collscope/peer_wait.h, docs/detection.md
 * "Pipelines"). */
#include "collscope/peer_wait.h"

#include <stdlib.h>
#include <string.h>

#include "collscope/uthash_nonfatal.h"

struct mkey {
  uint64_t comm;
  int comm_rank;
};
struct member { /* one (communicator, member) */
  struct mkey k;
  int rank;
  uint64_t timed;               /* its timed spans there (a group's members: one) */
  int64_t last_start, last_end; /* the last timed span counted */
  int64_t busy;                 /* ns those spans took */
  int64_t wait;                 /* ns waited there */
  int64_t span_start, span_end; /* its last op's span, and the wait counted for it */
  int64_t span_wait;            /* (a group's members share one span: counted once) */
  int top[CS_PWAIT_TOP];        /* the peers waited for longest, by global rank */
  int64_t top_ns[CS_PWAIT_TOP]; /* 0: a free entry */
  UT_hash_handle hh;
};
struct pend { /* a Send or Recv waiting for its match */
  struct member *m;
  bool timed;
  int64_t start, end;
};
struct pkey {
  uint64_t comm;
  int from, to;
};
struct pair { /* one directed pair: its unmatched Sends or its unmatched Recvs (never both) */
  struct pkey k;
  struct pend q[CS_PWAIT_PENDING];
  size_t head, len;
  bool sends; /* what q holds */
  UT_hash_handle hh;
};
struct cs_pwait {
  struct member *mem;
  struct pair *pairs;
  bool oom;
  struct cs_pwait_moved *moved;
  size_t nmoved;
};

struct cs_pwait *cs_pwait_new(void) {
  return calloc(1, sizeof(struct cs_pwait));
}

void cs_pwait_free(struct cs_pwait *p) {
  if (!p) return;
  struct member *m, *mt;
  HASH_ITER(hh, p->mem, m, mt) {
    HASH_DEL(p->mem, m);
    free(m);
  }
  struct pair *q, *qt;
  HASH_ITER(hh, p->pairs, q, qt) {
    HASH_DEL(p->pairs, q);
    free(q);
  }
  free(p->moved);
  free(p);
}

static struct member *find_member(const struct cs_pwait *p, uint64_t comm, int comm_rank) {
  struct mkey k;
  memset(&k, 0, sizeof k);
  k.comm = comm;
  k.comm_rank = comm_rank;
  struct member *m;
  HASH_FIND(hh, p->mem, &k, sizeof k, m);
  return m;
}

/* the heavy-hitter table: a peer in it adds; else a free entry, else the smallest is replaced
 * and keeps its count (an over-estimate that a peer taking most of the wait outgrows) */
static void top_add(struct member *m, int peer, int64_t ns) {
  int small = 0;
  for (int i = 0; i < CS_PWAIT_TOP; i++) {
    if (m->top_ns[i] && m->top[i] == peer) {
      m->top_ns[i] += ns;
      return;
    }
    if (m->top_ns[i] < m->top_ns[small]) small = i;
  }
  m->top[small] = peer;
  m->top_ns[small] += ns;
}

static int64_t clamp_wait(int64_t peer_start, int64_t start, int64_t end) {
  if (peer_start <= start) return 0;
  return peer_start - start < end - start ? peer_start - start : end - start;
}

/* m waited w ns in its op [start, end] for peer (a global rank) */
static void waited(struct member *m, int64_t start, int64_t end, int64_t w, int peer) {
  if (start == m->span_start && end == m->span_end) { /* another member of its group: its largest */
    if (w <= m->span_wait) return;
    int64_t more = w - m->span_wait;
    m->span_wait = w;
    w = more;
  } else {
    m->span_start = start, m->span_end = end, m->span_wait = w;
  }
  if (w <= 0) return;
  m->wait += w;
  if (peer >= 0) top_add(m, peer, w);
}

static void p2p_add(struct cs_pwait *p, uint64_t comm, const struct cs_pwait_op *o, struct member *m) {
  struct pkey k;
  memset(&k, 0, sizeof k);
  k.comm = comm;
  k.from = o->send ? o->comm_rank : o->peer;
  k.to = o->send ? o->peer : o->comm_rank;
  struct pair *q;
  HASH_FIND(hh, p->pairs, &k, sizeof k, q);
  if (!q) {
    if (!(q = calloc(1, sizeof *q))) {
      p->oom = true;
      return;
    }
    q->k = k;
    HASH_ADD(hh, p->pairs, k, sizeof k, q);
    if (!CS_HASH_ADDED()) {
      free(q);
      p->oom = true;
      return;
    }
  }
  struct pend me = {m, o->timed, o->start_ns, o->end_ns};
  if (q->len && q->sends != o->send) { /* the oldest of the other side is its match */
    struct pend *x = &q->q[q->head];
    q->head = (q->head + 1) % CS_PWAIT_PENDING;
    q->len--;
    if (me.timed && x->timed) {
      waited(m, me.start, me.end, clamp_wait(x->start, me.start, me.end), x->m->rank);
      waited(x->m, x->start, x->end, clamp_wait(me.start, x->start, x->end), m->rank);
    }
    return;
  }
  q->sends = o->send;
  if (q->len == CS_PWAIT_PENDING) { /* the oldest is given up: unmatched, no wait */
    q->head = (q->head + 1) % CS_PWAIT_PENDING;
    q->len--;
  }
  q->q[(q->head + q->len++) % CS_PWAIT_PENDING] = me;
}

int cs_pwait_instance(struct cs_pwait *p, uint64_t comm, const struct cs_pwait_op *m, size_t n) {
  if (!p || p->oom) return -1;
  int64_t latest = INT64_MIN;
  int last = -1;
  for (size_t i = 0; i < n; i++)
    if (m[i].comm_rank >= 0 && m[i].timed && !m[i].p2p && m[i].start_ns > latest) latest = m[i].start_ns, last = m[i].rank;
  for (size_t i = 0; i < n; i++) {
    const struct cs_pwait_op *o = &m[i];
    if (o->comm_rank < 0) continue;
    struct member *e = find_member(p, comm, o->comm_rank);
    if (!e) {
      if (!(e = calloc(1, sizeof *e))) return p->oom = true, -1;
      e->k.comm = comm;
      e->k.comm_rank = o->comm_rank;
      e->rank = o->rank;
      HASH_ADD(hh, p->mem, k, sizeof e->k, e);
      if (!CS_HASH_ADDED()) return free(e), p->oom = true, -1;
    }
    bool timed = o->timed && o->start_ns > 0 && o->end_ns >= o->start_ns;
    if (timed && (o->start_ns != e->last_start || o->end_ns != e->last_end)) {
      e->timed++;
      e->busy += o->end_ns - o->start_ns;
      e->last_start = o->start_ns, e->last_end = o->end_ns;
    }
    if (o->p2p) {
      if (o->peer >= 0) p2p_add(p, comm, o, e);
      if (p->oom) return -1;
    } else if (timed && o->rank != last) {
      waited(e, o->start_ns, o->end_ns, clamp_wait(latest, o->start_ns, o->end_ns), last);
    }
  }
  return 0;
}

void cs_pwait_spans(const struct cs_pwait *p, cs_pwait_span_fn fn, void *ctx) {
  for (const struct member *m = p && !p->oom ? p->mem : NULL; m; m = m->hh.next)
    if (m->timed) fn(ctx, m->k.comm, m->rank, m->timed, m->busy);
}

bool cs_pwait_member(const struct cs_pwait *p, uint64_t comm, int rank, bool elsewhere, double *wait_us,
                     uint64_t *instances) {
  *wait_us = 0;
  *instances = 0;
  bool found = false;
  int64_t other = 0;
  for (const struct member *m = p ? p->mem : NULL; m; m = m->hh.next) {
    if (m->rank != rank) continue;
    if (m->k.comm == comm) {
      found = true;
      *instances = m->timed;
      if (!elsewhere) *wait_us = (double)m->wait / 1e3;
    } else {
      other += m->wait;
    }
  }
  if (found && elsewhere) *wait_us = (double)other / 1e3;
  return found;
}

/* the peers rank waited for longest at communicators other than comm (up to CS_PWAIT_TOP, the
 * longest first) into out, with their waits (ns); returns how many */
static int top_peers_elsewhere(const struct cs_pwait *p, uint64_t comm, int rank, int *out, int64_t *out_ns) {
  int peer[64];
  int64_t ns[64];
  int n = 0;
  for (const struct member *m = p->mem; m; m = m->hh.next) {
    if (m->rank != rank || m->k.comm == comm) continue;
    for (int i = 0; i < CS_PWAIT_TOP; i++) {
      if (!m->top_ns[i] || m->top[i] == rank) continue;
      int j = 0;
      while (j < n && peer[j] != m->top[i]) j++;
      if (j == n) {
        if (n == 64) continue;
        peer[n] = m->top[i], ns[n++] = 0;
      }
      ns[j] += m->top_ns[i];
    }
  }
  int k = 0;
  for (; k < CS_PWAIT_TOP && k < n; k++) { /* selection: the k-th longest (the first seen on a tie) */
    int b = k;
    for (int j = k + 1; j < n; j++)
      if (ns[j] > ns[b]) b = j;
    int tp = peer[b];
    int64_t tn = ns[b];
    for (int j = b; j > k; j--) peer[j] = peer[j - 1], ns[j] = ns[j - 1];
    out[k] = peer[k] = tp, out_ns[k] = ns[k] = tn;
  }
  return k;
}

/* rank's timed spans at comm, 0 none */
static uint64_t instances_at(const struct cs_pwait *p, uint64_t comm, int rank) {
  for (const struct member *m = p->mem; m; m = m->hh.next)
    if (m->k.comm == comm && m->rank == rank) return m->timed;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* a rank's wait at every communicator (ns) */
struct total {
  int rank;
  int64_t wait;
};
static int cmp_total(const void *a, const void *b) {
  int x = ((const struct total *)a)->rank, y = ((const struct total *)b)->rank;
  return x < y ? -1 : x > y;
}
/* the ranks' totals, sorted by rank, merged: *n of them; NULL out of memory */
static struct total *totals(const struct cs_pwait *p, size_t *n) {
  size_t k = 0, all = HASH_COUNT(p->mem);
  struct total *t = malloc((all ? all : 1) * sizeof *t);
  if (!t) return NULL;
  for (const struct member *m = p->mem; m; m = m->hh.next) t[k++] = (struct total){m->rank, m->wait};
  qsort(t, k, sizeof *t, cmp_total);
  *n = 0;
  for (size_t i = 0; i < k; i++)
    if (*n && t[*n - 1].rank == t[i].rank)
      t[*n - 1].wait += t[i].wait;
    else
      t[(*n)++] = t[i];
  return t;
}

/* finding x's rank's wait elsewhere per instance of its communicator above the median of the
 * other members' (us); -1 unknown (or out of memory). t: the ranks' totals (nt) */
static double excess_wait(const struct cs_pwait *p, const struct cs_det_straggler *x, const struct total *t,
                          size_t nt) {
  double own = -1, *v = NULL;
  size_t n = 0, cap = 0;
  for (const struct member *m = p->mem; m; m = m->hh.next) {
    if (m->k.comm != x->comm || !m->timed) continue;
    struct total key = {m->rank, 0};
    const struct total *r = bsearch(&key, t, nt, sizeof *t, cmp_total);
    double w = r ? (double)(r->wait - m->wait) / 1e3 : 0;
    uint64_t inst = m->timed;
    if (m->rank == x->rank) {
      own = w / (double)inst;
      continue;
    }
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 16;
      double *nv = realloc(v, nc * sizeof *v);
      if (!nv) {
        free(v);
        return -1;
      }
      v = nv, cap = nc;
    }
    v[n++] = w / (double)inst;
  }
  double out = -1;
  if (own >= 0 && n) {
    qsort(v, n, sizeof *v, cmp_double);
    out = own - (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
  }
  free(v);
  return out;
}

/* the rank of findings[i]'s index among the ranks, -1 none */
static long rank_index(const int *ranks, size_t n, int rank) {
  for (size_t i = 0; i < n; i++)
    if (ranks[i] == rank) return (long)i;
  return -1;
}

size_t cs_pwait_attribute(struct cs_pwait *p, struct cs_det_result *r) {
  if (!p || p->oom || !r || !r->nstragglers) return 0;
  size_t n = r->nstragglers;
  int *peer = malloc(n * sizeof *peer), *ranks = malloc(n * sizeof *ranks);
  int(*cand)[CS_PWAIT_TOP] = malloc(n * sizeof *cand); /* the peers it may defer to, longest wait first */
  bool *grounded = calloc(n, sizeof *grounded), *settled = calloc(n, sizeof *settled);
  double *excess = malloc(n * sizeof *excess), *late = malloc(n * sizeof *late);
  struct cs_pwait_moved *mv = malloc(n * sizeof *mv);
  size_t nr = 0, removed = 0, ntot = 0;
  struct total *tot = totals(p, &ntot);
  if (!peer || !ranks || !cand || !grounded || !settled || !excess || !late || !mv || !tot) goto out;
  /* per finding: the peer it defers to (-1: its own) */
  for (size_t i = 0; i < n; i++) {
    const struct cs_det_straggler *x = &r->stragglers[i];
    peer[i] = -1;
    excess[i] = late[i] = 0;
    if (x->rank >= 0 && rank_index(ranks, nr, x->rank) < 0) ranks[nr++] = x->rank;
    if (x->kind != CS_DET_LINK || x->rank < 0) continue;
    late[i] = x->offset_us > x->lateness_us * x->share_last ? x->offset_us : x->lateness_us * x->share_last;
    excess[i] = excess_wait(p, x, tot, ntot);
    for (int c = 0; c < CS_PWAIT_TOP; c++) cand[i][c] = -1;
    if (!(late[i] > 0 && excess[i] >= CS_PWAIT_SHARE * late[i])) continue;
    int tp[CS_PWAIT_TOP];
    int64_t tns[CS_PWAIT_TOP];
    int k = top_peers_elsewhere(p, x->comm, x->rank, tp, tns);
    uint64_t inst = instances_at(p, x->comm, x->rank);
    peer[i] = k ? tp[0] : -1;
    /* the longest wait's peer; after it those it waited for at least CS_PWAIT_SHARE of its
     * lateness an instance (a wait that explains the lateness as well) */
    for (int c = 0; c < k; c++)
      if (c == 0 || (inst && (double)tns[c] / 1e3 / (double)inst >= CS_PWAIT_SHARE * late[i])) cand[i][c] = tp[c];
  }
  /* grounded ranks: a finding of their own, or deferring to a grounded rank (a fixpoint: at
   * most one pass per rank) */
  for (size_t i = 0; i < n; i++)
    if (peer[i] < 0 && r->stragglers[i].rank >= 0) grounded[rank_index(ranks, nr, r->stragglers[i].rank)] = true;
  for (bool more = true; more;) {
    more = false;
    for (size_t i = 0; i < n; i++) {
      long a = r->stragglers[i].rank >= 0 ? rank_index(ranks, nr, r->stragglers[i].rank) : -1;
      /* the first candidate grounded when it is found: kept (so no two findings defer to each
       * other) */
      for (int c = 0; c < CS_PWAIT_TOP && a >= 0 && peer[i] >= 0 && !settled[i]; c++) {
        long b = cand[i][c] >= 0 ? rank_index(ranks, nr, cand[i][c]) : -1;
        if (b < 0 || !grounded[b]) continue;
        peer[i] = cand[i][c];
        settled[i] = more = true;
        grounded[a] = true;
      }
    }
  }
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    struct cs_det_straggler *x = &r->stragglers[i];
    long b = peer[i] >= 0 ? rank_index(ranks, nr, peer[i]) : -1;
    if (b < 0 || !grounded[b]) {
      r->stragglers[out++] = *x;
      continue;
    }
    mv[removed++] = (struct cs_pwait_moved){x->comm, x->rank, peer[i], excess[i], late[i]};
    for (size_t k = 0; k < r->nranks; k++)
      if (r->ranks[k].comm == x->comm && r->ranks[k].rank == x->rank) r->ranks[k].straggler = false;
  }
  r->nstragglers = out;
  free(p->moved);
  p->moved = mv;
  p->nmoved = removed;
  mv = NULL;
out:
  free(peer), free(ranks), free(cand), free(grounded), free(settled), free(excess), free(late), free(mv), free(tot);
  return removed;
}

const struct cs_pwait_moved *cs_pwait_moved(const struct cs_pwait *p, size_t *n) {
  *n = p ? p->nmoved : 0;
  return p ? p->moved : NULL;
}
