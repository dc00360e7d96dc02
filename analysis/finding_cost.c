/* analysis/finding_cost.c: each straggler finding's cost, the lateness its peers waited for it
 * over its flagged span (definitions in include/collscope/finding_cost.h). */
#include "collscope/finding_cost.h"

#include <stdlib.h>
#include <string.h>

#include "collscope/uthash_nonfatal.h"

struct ckey {
  uint64_t comm;
  int comm_rank;
};
struct cmem { /* one (communicator, member): its running lateness at checkpoints */
  struct ckey k;
  double run;     /* its lateness summed so far (us) */
  uint64_t count; /* the instances seen */
  bool measured;  /* in an instance of >= 2 timed collective members (else no cost known) */
  uint64_t width; /* a checkpoint every `width` instances */
  size_t n;       /* checkpoints held */
  size_t cap;     /* room for them (grown to CS_COST_POINTS: a short communicator holds few) */
  int64_t *seq;   /* [CS_COST_POINTS]: the instance's seq ... */
  double *sum;    /* ... and the running sum after it */
  UT_hash_handle hh;
};
struct cs_cost {
  struct cmem *mem;
  double *dur; /* the instance's durations, grown */
  size_t cap;
  bool oom;
};

struct cs_cost *cs_cost_new(void) {
  return calloc(1, sizeof(struct cs_cost));
}

void cs_cost_free(struct cs_cost *c) {
  if (!c) return;
  struct cmem *m, *t;
  HASH_ITER(hh, c->mem, m, t) {
    HASH_DEL(c->mem, m);
    free(m->seq);
    free(m->sum);
    free(m);
  }
  free(c->dur);
  free(c);
}

static struct cmem *find_mem(const struct cs_cost *c, uint64_t comm, int comm_rank) {
  struct ckey k;
  memset(&k, 0, sizeof k);
  k.comm = comm;
  k.comm_rank = comm_rank;
  struct cmem *m;
  HASH_FIND(hh, c->mem, &k, sizeof k, m);
  return m;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* one instance of m: its lateness added, a checkpoint taken when due. 0, or -1 out of memory */
static int step(struct cmem *m, int64_t seq, double late) {
  m->run += late;
  if (++m->count % m->width) return 0;
  if (m->n == CS_COST_POINTS) { /* keep every second: a checkpoint every 2 x width instances */
    for (size_t j = 0; j < CS_COST_POINTS / 2; j++) m->seq[j] = m->seq[2 * j + 1], m->sum[j] = m->sum[2 * j + 1];
    m->n = CS_COST_POINTS / 2;
    m->width *= 2;
    if (m->count % m->width) return 0;
  }
  if (m->n == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 16;
    if (cap > CS_COST_POINTS) cap = CS_COST_POINTS;
    int64_t *s = realloc(m->seq, cap * sizeof *s);
    if (!s) return -1;
    m->seq = s;
    double *u = realloc(m->sum, cap * sizeof *u);
    if (!u) return -1;
    m->sum = u;
    m->cap = cap;
  }
  m->seq[m->n] = seq;
  m->sum[m->n++] = m->run;
  return 0;
}

int cs_cost_instance(struct cs_cost *c, uint64_t comm, int64_t seq, const struct cs_cost_op *m, size_t n) {
  if (!c || c->oom) return -1;
  if (seq < 0) return 0;
  if (n > c->cap) {
    double *d = realloc(c->dur, 2 * n * sizeof *d);
    if (!d) return c->oom = true, -1;
    c->dur = d;
    c->cap = 2 * n;
  }
  size_t nt = 0, last = n;
  for (size_t i = 0; i < n; i++) {
    if (m[i].comm_rank < 0 || !m[i].timed || m[i].p2p || m[i].end_ns < m[i].start_ns) continue;
    c->dur[nt++] = (double)(m[i].end_ns - m[i].start_ns) / 1e3;
    if (last == n || m[i].end_ns - m[i].start_ns < m[last].end_ns - m[last].start_ns) last = i;
  }
  double late = 0;
  if (nt >= 2) {
    double shortest = (double)(m[last].end_ns - m[last].start_ns) / 1e3;
    qsort(c->dur, nt, sizeof *c->dur, cmp_double);
    double med = nt % 2 ? c->dur[nt / 2] : 0.5 * (c->dur[nt / 2 - 1] + c->dur[nt / 2]);
    late = med - shortest;
  }
  for (size_t i = 0; i < n; i++) {
    if (m[i].comm_rank < 0 || (i && m[i].comm_rank == m[i - 1].comm_rank)) continue; /* a duplicate: the first */
    struct cmem *e = find_mem(c, comm, m[i].comm_rank);
    if (!e) {
      e = calloc(1, sizeof *e);
      if (!e) return c->oom = true, -1;
      e->k.comm = comm;
      e->k.comm_rank = m[i].comm_rank;
      e->width = 1;
      HASH_ADD(hh, c->mem, k, sizeof e->k, e);
      if (!CS_HASH_ADDED()) return free(e), c->oom = true, -1;
    }
    e->measured |= nt >= 2 && m[i].timed && !m[i].p2p;
    if (step(e, seq, nt >= 2 && i == last && late > 0 ? late : 0) < 0) return c->oom = true, -1;
  }
  return 0;
}

/* the running sum at the last checkpoint at or before seq (0 before the first) */
static double sum_at(const struct cmem *m, int64_t seq) {
  size_t lo = 0, hi = m->n; /* the first checkpoint after seq */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->seq[mid] <= seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo ? m->sum[lo - 1] : 0;
}

bool cs_cost_of(const struct cs_cost *c, const struct cs_det_straggler *s, double *cost_us, double *pct) {
  *cost_us = 0;
  *pct = -1;
  if (!c || c->oom || !s || s->rank < 0 || s->comm_rank < 0) return false;
  const struct cmem *m = find_mem(c, s->comm, s->comm_rank);
  if (!m || !m->measured || s->last_flag_seq < s->first_flag_seq) return false;
  *cost_us = sum_at(m, s->last_flag_seq) - sum_at(m, s->first_flag_seq);
  if (*cost_us < 0) *cost_us = 0;
  double elapsed = (double)(s->last_flag_ns - s->first_flag_ns) / 1e3;
  if (elapsed > 0) *pct = 100.0 * *cost_us / elapsed;
  return true;
}
