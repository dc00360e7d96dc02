/* analysis/comm_elsewhere.c: per (communicator, member) the time its ops took, and the straggler
 * findings a rank's longer communication elsewhere explains (definitions in
 * include/collscope/comm_elsewhere.h, docs/detection.md "Pipelines"). */
#include "collscope/comm_elsewhere.h"

#include <stdlib.h>
#include <string.h>

#include <uthash.h>

struct mkey {
  uint64_t comm;
  int comm_rank;
};
struct member { /* one (communicator, member) */
  struct mkey k;
  int rank;
  uint64_t spans;               /* its timed spans there (a group's members: one) */
  int64_t busy;                 /* ns its spans took */
  int64_t last_start, last_end; /* the last span counted */
  UT_hash_handle hh;
};
struct mlist { /* the members of one communicator, or one rank's memberships */
  int64_t key;
  struct member **v;
  size_t n, cap;
  UT_hash_handle hh;
};
struct cs_celse {
  struct member *mem;
  struct mlist *comms, *ranks;
  bool oom;
  struct cs_celse_explained *ex;
  size_t nex;
};

struct cs_celse *cs_celse_new(void) {
  return calloc(1, sizeof(struct cs_celse));
}

static void lists_free(struct mlist **t) {
  struct mlist *l, *lt;
  HASH_ITER(hh, *t, l, lt) {
    HASH_DEL(*t, l);
    free(l->v);
    free(l);
  }
}

void cs_celse_free(struct cs_celse *c) {
  if (!c) return;
  struct member *m, *mt;
  HASH_ITER(hh, c->mem, m, mt) {
    HASH_DEL(c->mem, m);
    free(m);
  }
  lists_free(&c->comms);
  lists_free(&c->ranks);
  free(c->ex);
  free(c);
}

static struct mlist *find_list(struct mlist *t, int64_t key) {
  struct mlist *l;
  HASH_FIND(hh, t, &key, sizeof key, l);
  return l;
}

static struct mlist *list_of(struct mlist **t, int64_t key) {
  struct mlist *l = find_list(*t, key);
  if (l) return l;
  l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->key = key;
  HASH_ADD(hh, *t, key, sizeof l->key, l);
  return l;
}

static bool list_add(struct mlist *l, struct member *m) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 4;
    struct member **v = realloc(l->v, nc * sizeof *v);
    if (!v) return false;
    l->v = v, l->cap = nc;
  }
  l->v[l->n++] = m;
  return true;
}

static struct member *member_of(struct cs_celse *c, uint64_t comm, const struct cs_celse_op *o) {
  struct mkey k;
  memset(&k, 0, sizeof k);
  k.comm = comm;
  k.comm_rank = o->comm_rank;
  struct member *m;
  HASH_FIND(hh, c->mem, &k, sizeof k, m);
  if (m) return m;
  struct mlist *lc = list_of(&c->comms, (int64_t)comm), *lr = list_of(&c->ranks, o->rank);
  if (!lc || !lr || !(m = calloc(1, sizeof *m))) return NULL;
  m->k = k;
  m->rank = o->rank;
  if (!list_add(lc, m) || !list_add(lr, m)) {
    free(m);
    return NULL;
  }
  HASH_ADD(hh, c->mem, k, sizeof m->k, m);
  return m;
}

int cs_celse_instance(struct cs_celse *c, uint64_t comm, const struct cs_celse_op *m, size_t n) {
  if (!c || c->oom) return -1;
  for (size_t i = 0; i < n; i++) {
    const struct cs_celse_op *o = &m[i];
    if (o->comm_rank < 0 || o->rank < 0 || !o->timed || o->end_ns < o->start_ns) continue;
    struct member *e = member_of(c, comm, o);
    if (!e) return c->oom = true, -1;
    if (e->spans && o->start_ns < e->last_end && o->end_ns > e->last_start) {
      /* a member of the span counted last (a group's ops share one GPU span): its union */
      int64_t s = o->start_ns < e->last_start ? o->start_ns : e->last_start;
      int64_t t = o->end_ns > e->last_end ? o->end_ns : e->last_end;
      e->busy += (t - s) - (e->last_end - e->last_start);
      e->last_start = s, e->last_end = t;
      continue;
    }
    e->busy += o->end_ns - o->start_ns;
    e->spans++;
    e->last_start = o->start_ns, e->last_end = o->end_ns;
  }
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* a rank's time (us) at every communicator of its memberships l but comm */
static double time_elsewhere(const struct mlist *l, uint64_t comm) {
  int64_t ns = 0;
  for (size_t d = 0; d < l->n; d++)
    if (l->v[d]->k.comm != comm) ns += l->v[d]->busy;
  return (double)ns / 1e3;
}

/* finding x's rank's time at its other communicators per instance of x's, above the median of
 * x's other members' with as many communicators; 0 when none compares, -1 out of memory */
static double excess_elsewhere(const struct cs_celse *c, const struct cs_det_straggler *x) {
  const struct mlist *lc = find_list(c->comms, (int64_t)x->comm);
  const struct mlist *lr = find_list(c->ranks, x->rank);
  if (!lc || !lr) return 0;
  double own = -1, *v = malloc((lc->n ? lc->n : 1) * sizeof *v);
  size_t k = 0;
  if (!v) return -1;
  for (size_t i = 0; i < lc->n; i++) {
    const struct member *m = lc->v[i];
    if (!m->spans) continue;
    if (m->rank == x->rank) {
      own = time_elsewhere(lr, x->comm) / (double)m->spans;
      continue;
    }
    const struct mlist *lm = find_list(c->ranks, m->rank);
    if (lm && lm->n == lr->n) v[k++] = time_elsewhere(lm, x->comm) / (double)m->spans;
  }
  double excess = 0;
  if (own >= 0 && k) {
    qsort(v, k, sizeof *v, cmp_double);
    excess = own - (k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]));
  }
  free(v);
  return excess;
}

size_t cs_celse_judge(struct cs_celse *c, struct cs_det_result *r, const struct cs_sched *s) {
  if (!c || c->oom || !r || !r->nstragglers) return 0;
  struct cs_celse_explained *ex = malloc(r->nstragglers * sizeof *ex);
  if (!ex) return 0;
  size_t out = 0, removed = 0;
  for (size_t i = 0; i < r->nstragglers; i++) {
    struct cs_det_straggler *x = &r->stragglers[i];
    double late = x->offset_us > x->lateness_us * x->share_last ? x->offset_us : x->lateness_us * x->share_last;
    bool cross = s && cs_sched_comm_kind(s, x->comm) == CS_SCHED_CROSS_STAGE;
    double excess = x->rank >= 0 && late > 0 && !cross ? excess_elsewhere(c, x) : 0;
    if (!(late > 0 && excess >= CS_CELSE_SHARE * late)) {
      r->stragglers[out++] = *x;
      continue;
    }
    ex[removed++] = (struct cs_celse_explained){x->comm, x->rank, excess, late};
    for (size_t k = 0; k < r->nranks; k++)
      if (r->ranks[k].comm == x->comm && r->ranks[k].rank == x->rank) r->ranks[k].straggler = false;
  }
  r->nstragglers = out;
  free(c->ex);
  c->ex = ex;
  c->nex = removed;
  return removed;
}

const struct cs_celse_explained *cs_celse_explained(const struct cs_celse *c, size_t *n) {
  *n = c ? c->nex : 0;
  return c ? c->ex : NULL;
}
