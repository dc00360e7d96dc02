/* analysis/schedule.c: a pipeline's schedule from its collective instances: the Send/Recv chains,
 * each rank's stage, the kind of every communicator (pipeline, cross-stage, one stage) and the
 * stragglers of cross-stage communicators judged against their stage's peers (definitions in
 * include/collscope/schedule.h, docs/detection.md "Pipelines"). */
#include "collscope/schedule.h"

#include <stdlib.h>
#include <string.h>

#include "detect_internal.h" /* cs_det_median_mid */
#include "schedule_internal.h"

struct cs_sched *cs_sched_new(void) {
  return calloc(1, sizeof(struct cs_sched));
}

void cs_sched_free(struct cs_sched *s) {
  if (!s) return;
  struct smem *m, *mt;
  HASH_ITER(hh, s->mem, m, mt) {
    HASH_DEL(s->mem, m);
    free(m);
  }
  struct scomm *c, *ct;
  HASH_ITER(hh, s->comms, c, ct) {
    HASH_DEL(s->comms, c);
    free(c);
  }
  struct srank *r, *rt;
  HASH_ITER(hh, s->ranks, r, rt) {
    HASH_DEL(s->ranks, r);
    free(r);
  }
  free(s->v);
  free(s->scr);
  free(s);
}

static int peer_index(struct smem *e, int peer) {
  for (int i = 0; i < e->npeers; i++)
    if (e->peer[i] == peer) return i;
  if (e->npeers == 2) {
    e->peer_over = true;
    return -1;
  }
  e->peer[e->npeers] = peer;
  return e->npeers++;
}

static void member_add(struct smem *e, const struct cs_sched_op *o, int64_t seq) {
  if (!e->first_seen) e->first_seen = true, e->first_send = o->p2p && o->send;
  if (o->p2p) {
    int i = o->peer >= 0 ? peer_index(e, o->peer) : -1;
    if (o->send) {
      e->sends++;
      if (i >= 0 && !e->got[i]) e->before[i]++;
    } else {
      e->recvs++;
      if (i >= 0) e->got[i] = true;
    }
  } else if (o->gap_us >= 0 && o->gap_us < 1e15) {
    if (!e->gap_n) e->first_seq = seq, e->first_ns = o->end_ns > 0 ? o->end_ns : 0;
    e->last_seq = seq;
    e->last_ns = o->end_ns > 0 ? o->end_ns : 0;
    e->gap_sum += o->gap_us;
    e->gap_n++;
  }
}

int cs_sched_instance(struct cs_sched *s, uint64_t comm, int64_t seq, const struct cs_sched_op *m, size_t n) {
  if (!s || s->oom) return -1;
  struct scomm *c;
  HASH_FIND(hh, s->comms, &comm, sizeof comm, c);
  if (!c) {
    if (!(c = calloc(1, sizeof *c))) return s->oom = true, -1;
    c->comm = comm;
    c->all_p2p = true;
    HASH_ADD(hh, s->comms, comm, sizeof c->comm, c);
    if (!CS_HASH_ADDED()) return free(c), s->oom = true, -1;
  }
  if (seq > c->last_seq) c->last_seq = seq;
  if (n > s->capscr) {
    struct sgap *g = realloc(s->scr, n * sizeof *g);
    if (!g) return s->oom = true, -1;
    s->scr = g, s->capscr = n;
  }
  size_t ng = 0; /* the members with a compute gap here */
  for (size_t k = 0; k < n; k++) {
    if (m[k].comm_rank < 0) continue;
    c->all_p2p &= m[k].p2p;
    struct skey key;
    memset(&key, 0, sizeof key);
    key.comm = comm;
    key.comm_rank = m[k].comm_rank;
    struct smem *e;
    HASH_FIND(hh, s->mem, &key, sizeof key, e);
    if (!e) {
      if (!(e = calloc(1, sizeof *e))) return s->oom = true, -1;
      e->k = key;
      e->rank = m[k].rank;
      e->host = m[k].host;
      e->stage = -1;
      HASH_ADD(hh, s->mem, k, sizeof key, e);
      if (!CS_HASH_ADDED()) return free(e), s->oom = true, -1;
      c->nmem++;
    }
    member_add(e, &m[k], seq);
    if (!m[k].p2p && m[k].gap_us >= 0 && m[k].gap_us < 1e15) s->scr[ng++] = (struct sgap){m[k].gap_us, e};
  }
  if (ng >= 2) cs_sched_stage_instance(s->scr, ng);
  return 0;
}

int cs_sched_summed(struct cs_sched *s, uint64_t comm, const struct cs_sched_sum *m) {
  struct cs_sched_op none = {-1, -1, NULL, -1, false, false, -1, 0};
  if (!m || m->comm_rank < 0 || m->npeers < 0 || m->npeers > 2 || cs_sched_instance(s, comm, m->last_seq, &none, 1) < 0)
    return s && !s->oom ? 0 : -1;
  struct scomm *c;
  HASH_FIND(hh, s->comms, &comm, sizeof comm, c);
  c->all_p2p &= m->p2p;
  struct skey key;
  memset(&key, 0, sizeof key);
  key.comm = comm;
  key.comm_rank = m->comm_rank;
  struct smem *e;
  HASH_FIND(hh, s->mem, &key, sizeof key, e);
  if (e) return 0; /* a member's first figures count */
  if (!(e = calloc(1, sizeof *e))) return s->oom = true, -1;
  e->k = key;
  e->rank = m->rank;
  e->host = m->host;
  e->stage = -1;
  e->first_seen = true;
  e->first_send = m->first_send;
  e->peer_over = m->peer_over;
  e->npeers = m->npeers;
  for (int i = 0; i < m->npeers; i++) e->peer[i] = m->peer[i], e->before[i] = m->before[i], e->got[i] = m->got[i];
  e->sends = m->sends;
  e->recvs = m->recvs;
  e->gap_sum = m->gap_sum;
  e->gap_n = m->gap_n;
  e->first_seq = 0;
  e->last_seq = m->last_seq;
  e->first_ns = m->first_ns > 0 ? m->first_ns : 0;
  e->last_ns = m->last_ns > 0 ? m->last_ns : 0;
  HASH_ADD(hh, s->mem, k, sizeof key, e);
  if (!CS_HASH_ADDED()) return free(e), s->oom = true, -1;
  c->nmem++;
  return 0;
}

struct smem *cs_sched_find_mem(const struct cs_sched *s, uint64_t comm, int comm_rank) {
  struct skey key;
  memset(&key, 0, sizeof key);
  key.comm = comm;
  key.comm_rank = comm_rank;
  struct smem *e;
  HASH_FIND(hh, s->mem, &key, sizeof key, e);
  return e;
}

int cs_sched_rank_stage(const struct cs_sched *s, int rank) {
  struct srank *r;
  HASH_FIND_INT(s->ranks, &rank, r);
  return r ? r->stage : -1;
}

/* comm's members by comm rank: NCCL's ranks are 0 .. n-1, so a comm whose n members are not
 * exactly those is left unclassified. Each lookup is one hash find, so the classification
 * costs O(members) in all. */
static bool dense(const struct cs_sched *s, const struct scomm *c) {
  if (c->nmem > (size_t)1 << 24) return false;
  for (size_t r = 0; r < c->nmem; r++)
    if (!cs_sched_find_mem(s, c->comm, (int)r)) return false;
  return true;
}

static void unstage(const struct cs_sched *s, const struct scomm *c) {
  for (size_t r = 0; r < c->nmem; r++) cs_sched_find_mem(s, c->comm, (int)r)->stage = -1;
}

/* comm's members as a chain: stages assigned from the end that sent first. 0 not a chain,
 * 1 a chain, -1 out of memory */
static int chain(struct cs_sched *s, struct scomm *c) {
  if (c->nmem < 2 || !dense(s, c)) return 0;
  struct smem *start = NULL;
  size_t ends = 0;
  for (size_t r = 0; r < c->nmem; r++) {
    struct smem *m = cs_sched_find_mem(s, c->comm, (int)r);
    if (m->peer_over || m->npeers == 0) return 0;
    for (int i = 0; i < m->npeers; i++)
      if (m->peer[i] == m->k.comm_rank || !cs_sched_find_mem(s, c->comm, m->peer[i])) return 0;
    if (m->npeers == 1) {
      ends++;
      /* the end whose first op was a Send starts the forward direction; else the lower rank */
      if (!start || (m->first_send && !start->first_send)) start = m;
    }
  }
  if (ends != 2 || !start) return 0;
  size_t pos = 0;
  struct smem *prev = NULL, *cur = start;
  while (cur && pos < c->nmem) {
    if (cur->stage >= 0) break; /* a loop: not one path */
    cur->stage = (int)pos++;
    struct smem *next = NULL;
    for (int i = 0; i < cur->npeers; i++) {
      struct smem *p = cs_sched_find_mem(s, c->comm, cur->peer[i]);
      if (p != prev) next = p;
    }
    prev = cur;
    cur = cur->npeers == 1 && pos > 1 ? NULL : next;
  }
  if (pos != c->nmem) {
    unstage(s, c);
    return 0;
  }
  for (size_t r = 0; r < c->nmem; r++) {
    struct smem *m = cs_sched_find_mem(s, c->comm, (int)r);
    if (m->rank < 0 || cs_sched_rank_stage(s, m->rank) >= 0) continue; /* a rank's first chain counts */
    struct srank *e = calloc(1, sizeof *e);
    if (!e) return -1;
    e->rank = m->rank;
    e->stage = m->stage;
    HASH_ADD_INT(s->ranks, rank, e);
    if (!CS_HASH_ADDED()) return free(e), -1;
  }
  if ((int)c->nmem > s->nstages) s->nstages = (int)c->nmem;
  return 1;
}

int cs_sched_finish(struct cs_sched *s) {
  if (!s || s->oom) return -1;
  if (s->finished) return 0;
  s->finished = true;
  struct scomm *c, *ct;
  HASH_ITER(hh, s->comms, c, ct) {
    if (!c->all_p2p) continue;
    int k = chain(s, c);
    if (k < 0) return s->oom = true, -1;
    if (k) c->kind = CS_SCHED_PIPELINE;
  }
  HASH_ITER(hh, s->comms, c, ct) {
    if (c->all_p2p || !s->nstages || c->nmem < 2 || !dense(s, c)) continue;
    int first = cs_sched_rank_stage(s, cs_sched_find_mem(s, c->comm, 0)->rank);
    bool several = false, unknown = first < 0;
    for (size_t r = 1; r < c->nmem && !unknown; r++) {
      int st = cs_sched_rank_stage(s, cs_sched_find_mem(s, c->comm, (int)r)->rank);
      unknown = st < 0;
      several |= st != first;
    }
    c->kind = unknown ? CS_SCHED_OTHER : several ? CS_SCHED_CROSS_STAGE
                                                 : CS_SCHED_STAGE;
  }
  return 0;
}

int cs_sched_stages(const struct cs_sched *s) { return s && s->finished && !s->oom ? s->nstages : 0; }

int cs_sched_stage(const struct cs_sched *s, int rank) { return s && s->finished && !s->oom ? cs_sched_rank_stage(s, rank) : -1; }

enum cs_sched_kind cs_sched_comm_kind(const struct cs_sched *s, uint64_t comm) {
  if (!s || !s->finished || s->oom) return CS_SCHED_OTHER;
  struct scomm *c;
  HASH_FIND(hh, s->comms, &comm, sizeof comm, c);
  return c ? c->kind : CS_SCHED_OTHER;
}

bool cs_sched_stage_counts(const struct cs_sched *s, int stage, size_t *ranks, uint64_t *sends, uint64_t *recvs,
                           uint64_t *fwd_before_bwd) {
  *ranks = 0;
  *sends = *recvs = *fwd_before_bwd = 0;
  if (stage < 0 || stage >= cs_sched_stages(s)) return false;
  struct smem *m, *mt;
  HASH_ITER(hh, s->mem, m, mt) {
    if (m->stage != stage) continue;
    (*ranks)++;
    *sends += m->sends;
    *recvs += m->recvs;
    for (int i = 0; i < m->npeers; i++) { /* the next stage's peer: the forwards before its first gradient */
      struct smem *p = cs_sched_find_mem(s, m->k.comm, m->peer[i]);
      if (p && p->stage == stage + 1) *fwd_before_bwd += m->before[i];
    }
  }
  return true;
}

size_t cs_sched_comms(const struct cs_sched *s, enum cs_sched_kind kind, uint64_t *out, size_t cap) {
  size_t n = 0;
  if (!s || !s->finished || s->oom) return 0;
  for (const struct scomm *c = s->comms; c; c = c->hh.next)
    if (c->kind == kind) {
      if (n < cap) out[n] = c->comm;
      n++;
    }
  return n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* rank's mean gap at comm (its member comm_rank when that is it), -1 unknown */
static double mean_gap(const struct cs_sched *s, uint64_t comm, int comm_rank, int rank) {
  struct smem *m = comm_rank >= 0 ? cs_sched_find_mem(s, comm, comm_rank) : NULL, *mt;
  if (!m || m->rank != rank) {
    m = NULL;
    struct smem *e;
    HASH_ITER(hh, s->mem, e, mt)
    if (e->k.comm == comm && e->rank == rank) m = e;
  }
  return m && m->gap_n ? m->gap_sum / (double)m->gap_n : -1;
}

/* the median of the mean gaps, at cross-stage communicators of nmem members (the same
 * collective of the other replicas), of stage's ranks other than rank; -1 none (or out of
 * memory) */
static double stage_peer_gap(const struct cs_sched *s, int stage, int rank, size_t nmem) {
  size_t n = 0, cap = 0;
  double *v = NULL;
  struct smem *m, *mt;
  HASH_ITER(hh, s->mem, m, mt) {
    if (m->rank == rank || !m->gap_n || cs_sched_rank_stage(s, m->rank) != stage) continue;
    struct scomm *c;
    HASH_FIND(hh, s->comms, &m->k.comm, sizeof m->k.comm, c);
    if (!c || c->kind != CS_SCHED_CROSS_STAGE || c->nmem != nmem) continue;
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 16;
      double *nv = realloc(v, nc * sizeof *v);
      if (!nv) {
        free(v);
        return -1;
      }
      v = nv;
      cap = nc;
    }
    v[n++] = m->gap_sum / (double)m->gap_n;
  }
  double med = -1;
  if (n) {
    qsort(v, n, sizeof *v, cmp_double);
    med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  free(v);
  return med;
}

void cs_sched_verdict_add(struct cs_sched *s, const struct cs_sched_verdict *v) {
  if (s->nv == s->capv) {
    size_t nc = s->capv ? 2 * s->capv : 16;
    struct cs_sched_verdict *nv = realloc(s->v, nc * sizeof *nv);
    if (nv) s->v = nv, s->capv = nc;
  }
  if (s->nv < s->capv) s->v[s->nv++] = *v;
}

/* a member of a cross-stage communicator with its stage and mean compute gap there */
struct sentry {
  int stage;
  size_t nmem;
  double gap;
  struct smem *m;
};

static int cmp_sentry(const void *pa, const void *pb) {
  const struct sentry *a = pa, *b = pb;
  if (a->stage != b->stage) return a->stage < b->stage ? -1 : 1;
  if (a->nmem != b->nmem) return a->nmem < b->nmem ? -1 : 1;
  if (a->gap != b->gap) return a->gap < b->gap ? -1 : 1;
  if (a->m->k.comm != b->m->k.comm) return a->m->k.comm < b->m->k.comm ? -1 : 1;
  return a->m->k.comm_rank < b->m->k.comm_rank ? -1 : a->m->k.comm_rank > b->m->k.comm_rank;
}

/* the median of the sorted v[0..k-1] without v[skip]; k >= 2 */
static double median_without(const struct sentry *v, size_t k, size_t skip) {
  size_t n = k - 1, a = (n - 1) / 2, b = n / 2;
  double x = v[a < skip ? a : a + 1].gap, y = v[b < skip ? b : b + 1].gap;
  return 0.5 * (x + y);
}

/* the z a member's mean gap must clear its stage's spread by: the normal tail beyond it
 * (cs_det_normal_tail) at most CS_SCHED_STEPS_ALPHA / n (Bonferroni over the n members
 * judged), by bisection */
static double spread_z(size_t n) {
  double want = CS_SCHED_STEPS_ALPHA / (double)(n ? n : 1), lo = 0, hi = 40;
  for (int i = 0; i < 60; i++) {
    double mid = 0.5 * (lo + hi);
    if (cs_det_normal_tail(mid) > want)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

/* 1.4826 x the median absolute deviation of the group's mean gaps g[0..n-1] (sorted by gap)
 * from their median (cs_det_median_mid): a clean member's mean gap scatters this much,
 * whatever the noise's shape and however many instances it averages; dev: room for n */
static double robust_sigma(const struct sentry *g, size_t n, double *dev) {
  double med = n % 2 ? g[n / 2].gap : 0.5 * (g[n / 2 - 1].gap + g[n / 2].gap);
  for (size_t i = 0; i < n; i++) dev[i] = g[i].gap > med ? g[i].gap - med : med - g[i].gap;
  return 1.4826 * cs_det_median_mid(dev, n);
}

/* A rank slower than its stage's peers at a cross-stage communicator that the detector did
 * not flag: in a pipeline that flushes every step the last arrivals there are the drain's
 * (the first stage, whose backward ends last), so a slow middle stage's GPU delays the whole
 * replica without arriving last. Its compute gap there (the stream's time outside NCCL
 * since that communicator's previous instance: its own compute, a Recv's wait for its Send
 * being the Recv's duration, not a gap) against the median of the other members of its stage
 * at cross-stage communicators of as many members (the same collective of the other
 * replicas) names it when it is CS_SCHED_STAGE_EXCESS above it and, in a group of at least
 * CS_SCHED_SPREAD_MIN members, above it by more than the group's spread allows a clean member
 * by chance (spread_z, robust_sigma). Sorted once: O(m log m) for m such members. Returns how
 * many were added; out of memory adds none. */
static size_t surface(struct cs_sched *s, struct cs_det_result *r) {
  size_t n = 0, added = 0;
  struct smem *m, *mt;
  HASH_ITER(hh, s->mem, m, mt) {
    m->flagged = m->slow = false;
    struct scomm *c;
    HASH_FIND(hh, s->comms, &m->k.comm, sizeof m->k.comm, c);
    n += c && c->kind == CS_SCHED_CROSS_STAGE && m->gap_n && m->rank >= 0 && cs_sched_rank_stage(s, m->rank) >= 0;
  }
  for (size_t i = 0; i < r->nstragglers; i++) {
    m = r->stragglers[i].comm_rank >= 0 ? cs_sched_find_mem(s, r->stragglers[i].comm, r->stragglers[i].comm_rank) : NULL;
    if (m && m->rank == r->stragglers[i].rank) m->flagged = true;
  }
  struct sentry *e = n ? malloc(n * sizeof *e) : NULL;
  if (!e) return 0;
  size_t k = 0;
  HASH_ITER(hh, s->mem, m, mt) {
    struct scomm *c;
    HASH_FIND(hh, s->comms, &m->k.comm, sizeof m->k.comm, c);
    int stage = m->rank >= 0 ? cs_sched_rank_stage(s, m->rank) : -1;
    if (c && c->kind == CS_SCHED_CROSS_STAGE && m->gap_n && stage >= 0 && k < n)
      e[k++] = (struct sentry){stage, c->nmem, m->gap_sum / (double)m->gap_n, m};
  }
  qsort(e, k, sizeof *e, cmp_sentry);
  double *dev = malloc(k * sizeof *dev), z = spread_z(k);
  if (!dev) {
    free(e);
    return 0;
  }
  for (size_t lo = 0, hi; lo < k; lo = hi) {
    for (hi = lo + 1; hi < k && e[hi].stage == e[lo].stage && e[hi].nmem == e[lo].nmem;) hi++;
    double sigma = hi - lo >= CS_SCHED_SPREAD_MIN ? robust_sigma(e + lo, hi - lo, dev) : 0;
    for (size_t i = lo; hi - lo >= 2 && i < hi; i++) {
      m = e[i].m;
      m->peers = median_without(e + lo, hi - lo, i - lo);
      m->slow = !m->flagged && m->gap_n >= 2 && m->peers > 0 && e[i].gap > (1 + CS_SCHED_STAGE_EXCESS) * m->peers &&
                e[i].gap - m->peers > z * sigma;
      added += m->slow;
    }
  }
  free(dev);
  struct cs_det_straggler *ns = added ? realloc(r->stragglers, (r->nstragglers + added) * sizeof *ns) : NULL;
  if (!ns) {
    free(e);
    return 0;
  }
  r->stragglers = ns;
  for (size_t i = 0; i < k; i++) {
    if (!(m = e[i].m)->slow) continue;
    struct scomm *c;
    HASH_FIND(hh, s->comms, &m->k.comm, sizeof m->k.comm, c);
    ns[r->nstragglers++] = (struct cs_det_straggler){.comm = m->k.comm,
                                                     .comm_size = (int)e[i].nmem,
                                                     .comm_rank = m->k.comm_rank,
                                                     .rank = m->rank,
                                                     .host = m->host,
                                                     .kind = CS_DET_COMPUTE,
                                                     .rule = CS_DET_RULE_STAGE,
                                                     .window_instances = m->gap_n,
                                                     .median_dur_us = -1,
                                                     .gap_us = e[i].gap,
                                                     .peer_gap_us = m->peers,
                                                     .first_flag_instance = 1,
                                                     .first_flag_seq = m->first_seq,
                                                     .last_flag_seq = m->last_seq,
                                                     .first_flag_ns = m->first_ns,
                                                     .last_flag_ns = m->last_ns,
                                                     .comm_last_seq = c ? c->last_seq : m->last_seq};
    cs_sched_verdict_add(s, &(struct cs_sched_verdict){.comm = m->k.comm,
                                                       .rank = m->rank,
                                                       .stage = e[i].stage,
                                                       .gap_us = e[i].gap,
                                                       .stage_gap_us = m->peers,
                                                       .kept = true});
  }
  free(e);
  return added;
}

/* x's window figures in r no longer say straggler (the schedule explains it) */
static void unflag(struct cs_det_result *r, const struct cs_det_straggler *x) {
  for (size_t k = 0; k < r->nranks; k++)
    if (r->ranks[k].comm == x->comm && r->ranks[k].rank == x->rank) r->ranks[k].straggler = false;
}

size_t cs_sched_judge(struct cs_sched *s, struct cs_det_result *r) {
  if (!r || cs_sched_stages(s) == 0) return 0;
  size_t out = 0, removed = 0;
  for (size_t i = 0; i < r->nstragglers; i++) {
    struct cs_det_straggler *x = &r->stragglers[i];
    int stage = x->rank >= 0 ? cs_sched_rank_stage(s, x->rank) : -1;
    enum cs_sched_kind kind = cs_sched_comm_kind(s, x->comm);
    if (stage >= 0 && kind == CS_SCHED_PIPELINE && x->kind != CS_DET_COMPUTE) {
      /* late at its pipeline's Send/Recv without a longer compute gap of its own: the order
       * in which a chain's ranks post is the schedule's, each waiting for its neighbours and
       * for its stage's collectives (a slow GPU's tensor partner and data-parallel peers
       * arrive late here by their waits for it); a slow GPU is judged at its stage's
       * collectives (cs_sched_stage_compute), a slow link by its pairs */
      cs_sched_verdict_add(s, &(struct cs_sched_verdict){.comm = x->comm, .rank = x->rank, .stage = stage, .gap_us = -1, .stage_gap_us = -1, .kept = false});
      removed++;
      unflag(r, x);
      continue;
    }
    if (stage < 0 || kind != CS_SCHED_CROSS_STAGE) {
      r->stragglers[out++] = *x;
      continue;
    }
    struct cs_sched_verdict v = {
        .comm = x->comm, .rank = x->rank, .stage = stage, .gap_us = mean_gap(s, x->comm, x->comm_rank, x->rank), .stage_gap_us = -1};
    struct scomm *c;
    HASH_FIND(hh, s->comms, &x->comm, sizeof x->comm, c);
    v.stage_gap_us = stage_peer_gap(s, stage, x->rank, c ? c->nmem : 0);
    v.kept = v.gap_us >= 0 && v.stage_gap_us >= 0 && v.gap_us > (1 + CS_SCHED_STAGE_EXCESS) * v.stage_gap_us;
    cs_sched_verdict_add(s, &v);
    if (v.kept) {
      x->kind = CS_DET_COMPUTE; /* slower than its stage's own replicas: its GPU's work */
      r->stragglers[out++] = *x;
    } else {
      removed++;
      unflag(r, x);
    }
  }
  r->nstragglers = out;
  surface(s, r);
  cs_sched_stage_compute(s, r);
  return removed;
}

const struct cs_sched_verdict *cs_sched_verdicts(const struct cs_sched *s, size_t *n) {
  *n = s ? s->nv : 0;
  return s ? s->v : NULL;
}
