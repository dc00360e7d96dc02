/* analysis/comm_elsewhere.c: the straggler findings a rank's longer communication elsewhere
 * explains, from the peer waits' time per (communicator, member) (definitions in
 * include/collscope/comm_elsewhere.h, docs/detection.md "Pipelines"). */
#include "collscope/comm_elsewhere.h"

#include <stdlib.h>
#include <string.h>

#include "collscope/uthash_nonfatal.h"

struct member { /* one (communicator, member): the peer waits' figures */
  uint64_t comm;
  int rank;
  uint64_t spans; /* its timed spans there */
  int64_t busy;   /* ns they took */
};
struct mlist { /* the members of one communicator, or one rank's memberships */
  int64_t key;
  struct member **v;
  size_t n, cap;
  UT_hash_handle hh;
};
struct gather { /* the figures while judging */
  struct member *mem;
  size_t n, cap;
  struct mlist *comms, *ranks;
  bool oom;
};
struct cs_celse {
  struct cs_celse_explained *ex;
  size_t nex;
};

struct cs_celse *cs_celse_new(void) {
  return calloc(1, sizeof(struct cs_celse));
}

void cs_celse_free(struct cs_celse *c) {
  if (!c) return;
  free(c->ex);
  free(c);
}

static void lists_free(struct mlist **t) {
  struct mlist *l, *lt;
  HASH_ITER(hh, *t, l, lt) {
    HASH_DEL(*t, l);
    free(l->v);
    free(l);
  }
}

static struct mlist *find_list(struct mlist *t, int64_t key) {
  struct mlist *l;
  HASH_FIND(hh, t, &key, sizeof key, l);
  return l;
}

static bool list_add(struct mlist **t, int64_t key, struct member *m) {
  struct mlist *l = find_list(*t, key);
  if (!l) {
    if (!(l = calloc(1, sizeof *l))) return false;
    l->key = key;
    HASH_ADD(hh, *t, key, sizeof l->key, l);
    if (!CS_HASH_ADDED()) return free(l), false;
  }
  if (l->n == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 4;
    struct member **v = realloc(l->v, nc * sizeof *v);
    if (!v) return false;
    l->v = v, l->cap = nc;
  }
  l->v[l->n++] = m;
  return true;
}

static void take(void *ctx, uint64_t comm, int rank, uint64_t spans, int64_t busy) {
  struct gather *g = ctx;
  if (g->oom || rank < 0) return;
  if (g->n == g->cap) {
    size_t nc = g->cap ? 2 * g->cap : 64;
    struct member *v = realloc(g->mem, nc * sizeof *v);
    if (!v) {
      g->oom = true;
      return;
    }
    g->mem = v, g->cap = nc;
  }
  g->mem[g->n++] = (struct member){comm, rank, spans, busy};
}

/* the communicators' members and the ranks' memberships (after every member is taken: the
 * array no longer moves); false out of memory */
static bool index_members(struct gather *g) {
  for (size_t i = 0; i < g->n; i++)
    if (!list_add(&g->comms, (int64_t)g->mem[i].comm, &g->mem[i]) || !list_add(&g->ranks, g->mem[i].rank, &g->mem[i]))
      return false;
  return true;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* a rank's time (us) at every communicator of its memberships l but comm */
static double time_elsewhere(const struct mlist *l, uint64_t comm) {
  int64_t ns = 0;
  for (size_t d = 0; d < l->n; d++)
    if (l->v[d]->comm != comm) ns += l->v[d]->busy;
  return (double)ns / 1e3;
}

/* finding x's rank's time at its other communicators per instance of x's, above the median of
 * x's other members' with as many communicators; 0 when none compares, -1 out of memory */
static double excess_elsewhere(const struct gather *c, const struct cs_det_straggler *x) {
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

size_t cs_celse_judge(struct cs_celse *c, const struct cs_pwait *p, struct cs_det_result *r, const struct cs_sched *s) {
  if (!c || !p || !r || !r->nstragglers) return 0;
  struct gather g = {0};
  cs_pwait_spans(p, take, &g);
  struct cs_celse_explained *ex = g.oom ? NULL : malloc(r->nstragglers * sizeof *ex);
  if (!ex || !index_members(&g)) {
    free(ex);
    lists_free(&g.comms), lists_free(&g.ranks), free(g.mem);
    return 0;
  }
  size_t out = 0, removed = 0;
  for (size_t i = 0; i < r->nstragglers; i++) {
    struct cs_det_straggler *x = &r->stragglers[i];
    double late = x->offset_us > x->lateness_us * x->share_last ? x->offset_us : x->lateness_us * x->share_last;
    bool cross = s && cs_sched_comm_kind(s, x->comm) == CS_SCHED_CROSS_STAGE;
    double excess = x->rank >= 0 && late > 0 && !cross ? excess_elsewhere(&g, x) : 0;
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
  lists_free(&g.comms), lists_free(&g.ranks), free(g.mem);
  return removed;
}

const struct cs_celse_explained *cs_celse_explained(const struct cs_celse *c, size_t *n) {
  *n = c ? c->nex : 0;
  return c ? c->ex : NULL;
}
