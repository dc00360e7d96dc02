/* analysis/detect_cost.c: the cost rule: per rank of a communicator, the time its peers spent
 * waiting for it over the last cost_window instances, as a share of those instances' elapsed
 * time. It names a rank that is late in a minority of instances, by a lot (a data loader that
 * stalls every 50 steps, a host stall on every other step), which the windowed rules, built on
 * how often a rank is late, never see (include/collscope/detect.h states the rule).
 *
 * The wait an instance charges: the lateness of its last rank (detect_window.c), where it is
 * beyond max(the floor, 3 x the median lateness of the last `window` instances): in a clean
 * job every rank is last by chance, by about the noise, and charges nothing. An instance whose
 * members moved different Send/Recv bytes before it charges nothing either (its lateness
 * follows the data).
 * The elapsed time: per instance, the median over its ranks of the time from the end of their
 * op in the previous instance to the end of their op in this one, each on its own clock (no
 * clock sync needed; the median is robust to one rank's clock or a missing op), summed over
 * the window. Every instance ends at about the same time on every rank (the last arrival
 * releases them all), so the sum is the window's wall time, stalls, compute and gaps included.
 * Memory: cost_window slots per communicator and a few figures per charged rank (at most
 * cost_window of them, whatever the communicator's size). The rule's core works
 * on one plain record per instance (cs_det_cost_push, cs_det_cost_judge, cs_det_cost_fill): the
 * report's adapter (cs_det_cost_feed, from its window) and the online exchange's self-judgement
 * (analysis/online_stragglers.c) both call it. */
#include "detect_internal.h"

#include <stdlib.h>
#include <string.h>
#include "collscope/uthash_nonfatal.h"

struct cost_slot {
  int last;          /* the rank charged, -1 none */
  int64_t charge_ns; /* its lateness, 0 when not charged */
  int64_t dt_ns;     /* the elapsed time since the previous instance */
  double gap, pgap;  /* the last rank's compute gap and its peers' median (-1 unknown) */
};

struct cost_rank { /* a rank with charges in the window */
  int rank;
  int64_t cost_ns; /* the charges to it over the window */
  size_t k;        /* how many */
  size_t ok_ai;    /* the rule held for it at instance ok_ai (K->ai), with these figures */
  double share, stall_us, gap, pgap;
  size_t period;
  int kind;
  UT_hash_handle hh;
};

struct cost_prev { /* the report's adapter: a rank's op end in its previous instance */
  int64_t prev_t;  /* its op's end_ns in instance prev_ai */
  size_t prev_ai;
  bool has_prev;
};

/* Memory: the slots and at most cap charged ranks (a hash: a rank joins at its first charge and
 * leaves when its last leaves the window), flat in the comm size; the report's adapter adds one
 * cost_prev per rank. */
struct cost_state {
  struct cost_slot *slot; /* a ring of cap slots, the oldest at head */
  size_t cap, head, n, ai;
  int64_t elapsed_ns;     /* the slots' dt_ns summed */
  struct cost_rank *r;    /* the charged ranks, by rank */
  struct cost_prev *prev; /* the report's adapter: per comm rank, nprev of them */
  size_t nprev;
  double *scr; /* max(2 cap + 4, comm size for the adapter, window + 1) doubles */
  size_t nscr;
};

static size_t cost_cap(const struct cs_det_params *p) { return p->cost_window ? p->cost_window : 300; }
static double cost_share(const struct cs_det_params *p) { return p->cost_share > 0 ? p->cost_share : 0.05; }
static size_t cost_min(const struct cs_det_params *p) { return p->cost_min ? p->cost_min : 2; }
static double cost_z(const struct cs_det_params *p) { return p->cost_z > 0 ? p->cost_z : 3; }
static const double cost_ratio = 4; /* its cost over the median of its peers' */

void cs_det_cost_release(struct cost_state **pk) {
  struct cost_state *K = *pk;
  if (!K) return;
  free(K->slot);
  struct cost_rank *q, *t;
  HASH_ITER(hh, K->r, q, t) {
    HASH_DEL(K->r, q);
    free(q);
  }
  free(K->prev);
  free(K->scr);
  free(K);
  *pk = NULL;
}

void cs_det_cost_free(struct cstate *C) { cs_det_cost_release(&C->cost); }

/* the state, its scratch at least nscr doubles; NULL out of memory */
static struct cost_state *cost_state(struct cost_state **pk, const struct cs_det_params *p, size_t nscr) {
  struct cost_state *K = *pk;
  if (!K) {
    K = calloc(1, sizeof *K);
    if (!K) return NULL;
    K->cap = cost_cap(p);
    K->slot = calloc(K->cap, sizeof *K->slot);
    *pk = K;
    if (!K->slot) return NULL;
  }
  size_t need = 2 * K->cap + 4;
  if (need < nscr) need = nscr;
  if (need < (size_t)p->window + 1) need = (size_t)p->window + 1;
  if (K->nscr < need) {
    double *v = realloc(K->scr, need * sizeof *v);
    if (!v) return NULL;
    K->scr = v;
    K->nscr = need;
  }
  return K;
}

/* comm rank r's entry, NULL when it has no charge in the window */
static struct cost_rank *rank_of(const struct cost_state *K, int r) {
  struct cost_rank *q;
  HASH_FIND_INT(K->r, &r, q);
  return q;
}

/* a charge of c ns to rank r joins (sign 1) or leaves (sign -1) the window; -1 out of memory */
static int charge(struct cost_state *K, int r, int64_t c, int sign) {
  struct cost_rank *q = rank_of(K, r);
  if (!q) {
    if (sign < 0) return 0;
    if (!(q = calloc(1, sizeof *q))) return -1;
    q->rank = r;
    HASH_ADD_INT(K->r, rank, q);
    if (!CS_HASH_ADDED()) {
      free(q);
      return -1;
    }
  }
  q->cost_ns += sign * c;
  q->k = sign > 0 ? q->k + 1 : q->k - 1;
  if (!q->k) {
    HASH_DEL(K->r, q);
    free(q);
  }
  return 0;
}

static int64_t to_ns(double us) { return us > 0 ? (int64_t)(us * 1e3 + 0.5) : 0; }

/* The core over plain records, for any caller: instance I (P: the one before it, NULL none)
 * into the window of csize ranks, late_med the median lateness of the last `window` instances
 * (I's included). */
int cs_det_cost_push(struct cost_state **pk, const struct cs_det_params *p, size_t csize, const struct cs_det_cost_in *I,
                     const struct cs_det_cost_in *P, double late_med) {
  struct cost_state *K = cost_state(pk, p, 0);
  if (!K || !K->slot) return -1;
  double cut = 3 * late_med, thr = cs_det_threshold(p, I->med, -1, -1);
  if (cut < thr) cut = thr;
  if (K->n == K->cap) { /* the oldest leaves */
    const struct cost_slot *o = &K->slot[K->head];
    if (o->charge_ns) charge(K, o->last, o->charge_ns, -1); /* a leave allocates nothing */
    K->elapsed_ns -= o->dt_ns;
    K->head = (K->head + 1) % K->cap;
    K->n--;
  }
  /* the same rank last in the previous instance, beyond the noise there, and its peers idle for
   * less than they waited for it there since: their op was ready before it, so the rank's lateness here is the delay
   * they already waited for, carried through ops that queue behind one another (one late
   * backward pass, then its step's ReduceScatters: at 8 ranks with 10% jitter and a tail, last
   * at 4 in a row by 1,553, 1,649, 1,826 and 1,308 us, peers idle 687, 181 and 369 us between;
   * the step lost ~1.8 ms, not 6.3). It is charged the lateness beyond that delay: the wait it
   * added. Where the peers computed longer than that wait between the instances (dp: 2 ms
   * between AllReduces) each lateness is a wait of its own. */
  double late = I->lateness;
  if (P && I->last >= 0 && P->last == I->last && P->lateness > cut && I->gap_peers >= 0 && I->gap_peers < P->lateness)
    late -= P->lateness;
  struct cost_slot *s = &K->slot[(K->head + K->n++) % K->cap];
  /* members that moved different Send/Recv bytes since their previous collective (an expert-
   * parallel dispatch and combine): who arrives last follows the data (detect_dataload.c), and
   * the data gives one rank the most work in a run of instances now and then, by chance */
  bool charged = !I->data && I->last >= 0 && (size_t)I->last < csize && late > cut;
  s->last = charged ? I->last : -1;
  s->charge_ns = charged ? to_ns(late) : 0;
  s->dt_ns = I->dt_ns;
  s->gap = I->gap_last;
  s->pgap = I->gap_peers;
  K->elapsed_ns += I->dt_ns;
  K->ai++;
  if (s->charge_ns && charge(K, s->last, s->charge_ns, 1) < 0) {
    s->last = -1; /* out of memory: the slot charges nothing, and the caller is told */
    s->charge_ns = 0;
    return -1;
  }
  return 0;
}

/* the report's adapter: the instance just fed (C->in's last) */
int cs_det_cost_feed(struct cstate *C, const struct cs_det_params *p) {
  struct cost_state *K = cost_state(&C->cost, p, (size_t)C->csize);
  if (!K || !K->slot) return -1;
  size_t n = (size_t)C->csize;
  if (K->nprev < n) {
    struct cost_prev *v = realloc(K->prev, n * sizeof *v);
    if (!v) return -1;
    memset(v + K->nprev, 0, (n - K->nprev) * sizeof *v);
    K->prev = v;
    K->nprev = n;
  }
  const struct inst *I = &C->in[C->nin - 1];
  size_t ai = C->base + C->nin - 1, nd = 0;
  /* the elapsed time since the previous instance, on each rank's own clock */
  for (size_t e = I->e0; e < I->e0 + I->ne; e++) {
    const struct ent *x = &C->ents[e];
    struct cost_prev *q = &K->prev[x->r];
    if (q->has_prev && q->prev_ai + 1 == ai && x->t >= q->prev_t) K->scr[nd++] = (double)(x->t - q->prev_t);
    q->prev_t = x->t;
    q->prev_ai = ai;
    q->has_prev = true;
  }
  int64_t dt = nd ? (int64_t)cs_det_median(K->scr, nd) : to_ns(I->med);
  /* the noise: the median lateness of the last `window` instances */
  size_t lo = C->nin > p->window ? C->nin - p->window : 0, nl = 0;
  for (size_t i = lo; i < C->nin; i++) K->scr[nl++] = C->in[i].lateness;
  double late_med = cs_det_median(K->scr, nl);
  bool data = false;
  for (size_t e = I->e0 + 1; e < I->e0 + I->ne && !data; e++) data = C->ents[e].xb != C->ents[I->e0].xb;
  struct cs_det_cost_in cur = {I->last, I->lateness, I->med, I->gap_last, I->gap_peers, dt, data}, prev;
  if (C->nin >= 2) {
    const struct inst *Q = &C->in[C->nin - 2];
    prev = (struct cs_det_cost_in){Q->last, Q->lateness, Q->med, Q->gap_last, Q->gap_peers, 0, false};
  }
  return cs_det_cost_push(&C->cost, p, (size_t)C->csize, &cur, C->nin >= 2 ? &prev : NULL, late_med);
}

/* the median of v[0..n) of the values >= 0, -1 when none */
static double median_known(double *v, size_t n) {
  size_t k = 0;
  for (size_t j = 0; j < n; j++)
    if (v[j] >= 0) v[k++] = v[j];
  return k ? cs_det_median(v, k) : -1;
}

/* rank r's figures over the window: its median charge, the kind from the gaps of those
 * instances, the period between its stalls (its charges of at least half the median: a chance
 * last arrival beyond the noise between two stalls is no stall) when regular (at least three,
 * every interval within 10% (at least 1) of their median) */
static void cost_fig(struct cost_state *K, int r, struct cost_rank *q) {
  double *v = K->scr;
  size_t k = 0;
  for (size_t j = 0; j < K->n; j++) {
    const struct cost_slot *s = &K->slot[(K->head + j) % K->cap];
    if (s->last == r && s->charge_ns) v[k++] = (double)s->charge_ns / 1e3;
  }
  q->stall_us = cs_det_median(v, k);
  double gap = 0, pgap = 0;
  for (int pass = 0; pass < 2; pass++) {
    k = 0;
    for (size_t j = 0; j < K->n; j++) {
      const struct cost_slot *s = &K->slot[(K->head + j) % K->cap];
      if (s->last == r && s->charge_ns) v[k++] = pass ? s->pgap : s->gap;
    }
    *(pass ? &pgap : &gap) = median_known(v, k);
  }
  q->gap = gap;
  q->pgap = pgap;
  q->kind = cs_det_kind(gap, pgap, q->stall_us);
  size_t prev = 0, ni = 0;
  bool seen = false;
  for (size_t j = 0; j < K->n; j++) {
    const struct cost_slot *s = &K->slot[(K->head + j) % K->cap];
    if (s->last != r || !s->charge_ns || (double)s->charge_ns < 500 * q->stall_us) continue;
    if (seen) v[ni++] = (double)(j - prev);
    prev = j;
    seen = true;
  }
  q->period = 0;
  if (ni < 2) return;
  for (size_t j = 0; j < ni; j++) v[ni + j] = v[j];
  double m = cs_det_median(v + ni, ni), tol = m / 10 > 1 ? m / 10 : 1;
  for (size_t j = 0; j < ni; j++)
    if (v[j] > m + tol || v[j] < m - tol) return;
  q->period = (size_t)(m + 0.5);
}

/* the true median of the costs of the csize - 1 ranks other than r: the ranks without an entry
 * cost 0 (every cost is >= 0, so they sort first); more than half of them zeros: 0, else the
 * values (at most 2 cap + 1) in the scratch */
static double others_median(struct cost_state *K, size_t csize, int r) {
  size_t m = csize - 1, nz = 0;
  const struct cost_rank *q, *t;
  HASH_ITER(hh, K->r, q, t)
  if (q->rank != r && q->cost_ns) nz++;
  size_t zeros = m - nz;
  if (zeros > m / 2) return 0;
  size_t k = 0;
  for (size_t j = 0; j < zeros; j++) K->scr[k++] = 0;
  HASH_ITER(hh, K->r, q, t)
  if (q->rank != r && q->cost_ns) K->scr[k++] = (double)q->cost_ns;
  return cs_det_median_mid(K->scr, k);
}

bool cs_det_cost_judge(struct cost_state *K, const struct cs_det_params *p, size_t csize, int r, double *off) {
  struct cost_rank *q = K && r >= 0 && (size_t)r < csize && csize >= 2 ? rank_of(K, r) : NULL;
  if (!q) return false; /* no charge in the window */
  double share = cost_share(p);
  /* the pre-checks, from the running sums: enough instances (at least the other rules' window:
   * over a few dozen instances a rank that the data gives more work in three of them has a
   * share well above chance by chance), enough charges, enough time */
  if (K->n < p->window || q->k < cost_min(p) || !(K->elapsed_ns > 0) ||
      (double)q->cost_ns < share * (double)K->elapsed_ns)
    return false;
  /* above its fair share: with the last rank of each charged instance drawn at random, its
   * cost has mean p0 x the total and variance p0 (1 - p0) x the sum of the squared charges */
  double tot = 0, sq = 0, p0 = 1.0 / (double)csize;
  for (size_t j = 0; j < K->n; j++) {
    double c = (double)K->slot[(K->head + j) % K->cap].charge_ns;
    tot += c;
    sq += c * c;
  }
  double sd = cs_det_sqrt(p0 * (1 - p0) * sq), excess = (double)q->cost_ns - p0 * tot;
  if (!(sd > 0) || excess < cost_z(p) * sd) return false;
  /* and its cost beyond that fair share alone is cost_share of the time: where the work itself
   * makes ranks wait (the data gives a random rank the hot expert every step), every rank's
   * fair share can pass the floor */
  if (excess < share * (double)K->elapsed_ns) return false;
  /* and at least cost_ratio x the median of the other ranks' costs: where the work makes a
   * random rank late by a lot each step, one of 8 ranks draws 2-3 times the median's share
   * over some window of a long job (the z above, over one window, cannot see how many windows
   * a job has), 4 times hardly ever; a stalled rank's peers cost about nothing */
  if ((double)q->cost_ns < cost_ratio * others_median(K, csize, r)) return false;
  q->share = (double)q->cost_ns / (double)K->elapsed_ns;
  cost_fig(K, r, q);
  q->ok_ai = K->ai;
  *off = q->stall_us;
  return true;
}

bool cs_det_cost_rule(struct cstate *C, const struct cs_det_params *p, int r, double *off) {
  return cs_det_cost_judge(C->cost, p, (size_t)C->csize, r, off);
}

void cs_det_cost_fill(const struct cost_state *K, int r, bool by_last, struct cs_det_straggler *s) {
  s->rule = by_last ? CS_DET_RULE_LAST : CS_DET_RULE_OFFSET;
  const struct cost_rank *q = by_last || !K ? NULL : rank_of(K, r);
  if (!q || q->ok_ai != K->ai) return;
  s->rule = CS_DET_RULE_COST;
  s->kind = q->kind;
  s->gap_us = q->gap; /* over the instances it cost its peers, as the kind */
  s->peer_gap_us = q->pgap;
  s->cost_share = q->share;
  s->late_instances = q->k;
  s->cost_instances = K->n;
  s->period_instances = q->period;
  s->stall_us = q->stall_us;
}

void cs_det_cost_figures(const struct cstate *C, int r, bool by_last, struct cs_det_straggler *s) {
  cs_det_cost_fill(C->cost, r, by_last, s);
}
