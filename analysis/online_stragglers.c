/* analysis/online_stragglers.c: the online exchange's straggler rules: a rank judges itself
 * over a window of its communicator's complete instances with detect.h's rules
 * (share-last, offset, recent, persistence) and queues a report for a later exchange.
 * Protocol: analysis/online_eval.c. */
#include "online_internal.h"

/* ---------------------------------------------------------------- stragglers */
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, size_t n) { /* lower middle */
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_d);
  return v[(n - 1) / 2];
}
static double median_mid(double *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
static double median_z(double *v, size_t k, double m) {
  for (size_t j = 0; j < k; j++) v[j] = v[j] > m ? v[j] - m : m - v[j];
  double mad = median_mid(v, k);
  double se = 1.2533 * 1.4826 * mad / cs_det_sqrt((double)k);
  return se > 0 ? m / se : m > 0 ? 1e300
                                 : 0;
}

static const struct went *wat(const struct self_win *w, size_t window, size_t i) { return &w->e[i % window]; }

/* detect.h's offset rule for this rank over instances [lo, hi) */
static bool eval_offset(struct cs_online_rank *st, const struct self_win *w, size_t lo, size_t hi, double thr,
                        double zmin, double *off) {
  size_t k = 0, W = st->p.window;
  double *v = st->scratch, *rel = st->scratch + W;
  for (size_t i = lo; i < hi; i++) {
    const struct went *e = wat(w, W, i);
    rel[k] = e->med > 0 ? e->a / e->med : 0;
    v[k++] = e->a;
  }
  double m = median_mid(v, k);
  *off = m;
  if (k < 2 || m < thr || !(m > 0)) return false;
  if (median_z(v, k, m) >= zmin) return true;
  double mr = median_mid(rel, k);
  return mr > 0 && median_z(rel, k, mr) >= zmin;
}

/* After instance i (0-based) of the window was pushed: does this rank flag itself? */
static void judge_self(struct cs_online_rank *st, struct self_win *w) {
  const struct cs_det_params *p = &st->p;
  size_t W = p->window, i = w->n - 1;
  size_t lo = w->n > W ? w->n - W : 0, nw = w->n - lo;
  if (nw < p->min_instances) return;
  double *sc = st->scratch;
  /* share-last: the comm rank last most often (ties: the lowest), is it this rank? */
  size_t k = 0;
  for (size_t j = lo; j <= i; j++) sc[k++] = (double)wat(w, W, j)->last;
  qsort(sc, k, sizeof *sc, cmp_d);
  size_t best = 0, run = 0, mine = 0;
  double cand = -1;
  for (size_t j = 0; j < k; j++) {
    run = j && sc[j] == sc[j - 1] ? run + 1 : 1;
    if (run > best) {
      best = run;
      cand = sc[j];
    }
    if (sc[j] == (double)w->crank) mine++;
  }
  for (size_t j = lo; j <= i; j++) sc[j - lo] = wat(w, W, j)->med;
  double med = median(sc, nw);
  double thr = p->floor_us > p->frac * med ? p->floor_us : p->frac * med;
  double p0 = 1.0 / (double)w->size, need = p0 + p->z * cs_det_sqrt(p0 * (1 - p0) / (double)nw);
  if (need < p->share) need = p->share;
  double late = 0;
  if (mine) {
    size_t m = 0;
    for (size_t j = lo; j <= i; j++)
      if (wat(w, W, j)->last == (int)w->crank) sc[m++] = wat(w, W, j)->late;
    late = median(sc, m);
  }
  bool last_ok = cand == (double)w->crank && (double)best >= need * (double)nw && late >= thr &&
                 cs_det_binom_tail(nw, best, p0) <= cs_det_normal_tail(p->z); /* analysis/detect_window.c */
  bool ok = last_ok;
  double off = 0;
  if (!ok) {
    size_t pos = 0;
    for (size_t j = lo; j <= i; j++) pos += wat(w, W, j)->a > 0;
    if (nw >= p->min_instances && (double)pos - 0.5 * (double)nw >= cs_det_sqrt((double)nw))
      ok = eval_offset(st, w, lo, i + 1, thr, p->offset_z, &off);
  }
  size_t recent = p->recent < W ? p->recent : W;
  if (!ok && recent && w->n >= recent) {
    size_t rlo = w->n - recent, rpos = 0;
    for (size_t j = rlo; j <= i; j++) rpos += wat(w, W, j)->a > 0;
    if ((double)rpos >= p->recent_share * (double)recent) ok = eval_offset(st, w, rlo, i + 1, thr, p->recent_z, &off);
  }
  /* fresh rule (analysis/detect_window.c): after the median rank in each of the last `persist`
   * instances by at least thr, steadily (within 1.25x), at 2 x recent_z */
  size_t kf = p->persist > 2 ? p->persist : 2;
  if (!ok && nw >= kf) {
    size_t flo = w->n - kf;
    struct cs_det_steady s = {0};
    for (size_t j = flo; j <= i; j++) cs_det_steady_add(&s, wat(w, W, j)->a, thr);
    if (cs_det_steady_ok(&s)) ok = eval_offset(st, w, flo, i + 1, thr, 2 * p->recent_z, &off);
  }
  if (!ok) return;
  w->streak = w->streak && w->at + 1 == i ? w->streak + 1 : 1;
  w->at = i;
  if (w->streak < p->persist || w->flagged) return;
  w->flagged = true;
  /* figures and kind (detect.h): the compute gaps over its last-arrivals (share-last) or
   * over the window (offset rules) */
  size_t g = 0, h = 0;
  double *gv = sc, *hv = sc + W;
  for (size_t j = lo; j <= i; j++) {
    const struct went *e = wat(w, W, j);
    if (last_ok && e->last != (int)w->crank) continue;
    if (e->gap >= 0) gv[g++] = e->gap;
    if (e->pgap >= 0) hv[h++] = e->pgap;
  }
  double gap = g ? median(gv, g) : -1, pgap = h ? median(hv, h) : -1;
  if (!last_ok) {
    size_t m = 0;
    for (size_t j = lo; j <= i; j++) sc[m++] = wat(w, W, j)->a;
    off = median_mid(sc, m);
  }
  /* the gap excess against the lateness the rule saw: its median lateness when last
   * (share-last), else its median offset over the same instances -- not its lateness in the
   * instances it was last, where the data gave it the most work (analysis/detect_window.c) */
  double lk = last_ok ? late : off;
  struct report r = {w->comm, w->crank, nw, (gap >= 0 && pgap >= 0 && gap - pgap < 0.5 * lk) ? CS_DET_LINK : CS_DET_COMPUTE,
                     (double)mine / (double)nw, late, med};
  if (st->npend < PENDING_REPORTS) st->pend[st->npend++] = r;
}

static struct self_win *win_of(struct cs_online_rank *st, uint64_t comm, uint32_t size, uint32_t crank) {
  struct self_win *w;
  HASH_FIND(hh, st->wins, &comm, sizeof comm, w);
  if (w) return w->size == size && w->crank == crank ? w : NULL;
  if (st->nwins >= WIN_COMMS) return NULL;
  w = calloc(1, sizeof *w);
  if (!w || !(w->e = calloc(st->p.window, sizeof *w->e))) {
    free(w);
    st->oom = true;
    return NULL;
  }
  w->comm = comm;
  w->size = size;
  w->crank = crank;
  HASH_ADD(hh, st->wins, comm, sizeof w->comm, w);
  st->nwins++;
  return w;
}

static int cmp_opagg(const void *x, const void *y) {
  const struct op_agg *a = *(const struct op_agg *const *)x, *b = *(const struct op_agg *const *)y;
  if (a->k.comm != b->k.comm) return a->k.comm < b->k.comm ? -1 : 1;
  return a->k.seq < b->k.seq ? -1 : a->k.seq > b->k.seq;
}

static int cmp_key(const void *x, const void *y) {
  const struct key *a = x, *b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* What a complete instance waits for: the instances this rank shipped that have not
 * completed, first shipped fewer than ORDER_HOLD exchanges ago (in the backlog again after
 * a slot collision, or waiting for other ranks), sorted by (comm, seq). */
static size_t order_blockers(struct cs_online_rank *st, uint32_t exchange, struct key *b) {
  size_t n = 0;
  for (uint32_t i = 0; i < st->ops_n; i++) {
    const struct cs_online_op *o = &st->ops[(st->ops_first + i) % OPS_BACKLOG];
    if (o->first_shipped && exchange - o->first_shipped < ORDER_HOLD) b[n++] = (struct key){o->comm, o->seq};
  }
  struct op_local *l, *lt;
  HASH_ITER(hh, st->opl, l, lt) {
    if (exchange - l->o.first_shipped >= ORDER_HOLD) continue;
    struct op_agg *a;
    HASH_FIND(hh, st->opa, &l->k, sizeof l->k, a);
    if (!a || a->count != a->size) b[n++] = l->k;
  }
  qsort(b, n, sizeof *b, cmp_key);
  return n;
}

/* Is there a blocker of a's communicator before it? (b sorted; its first entry of the
 * communicator is that communicator's earliest) */
static bool held_back(const struct key *b, size_t nb, const struct op_agg *a) {
  size_t lo = 0, hi = nb;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (b[mid].comm < a->k.comm)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < nb && b[lo].comm == a->k.comm && b[lo].seq < a->k.seq;
}

/* Complete sampled instances, in (comm, seq) order, into this rank's windows. An instance
 * that completed before an earlier one of its communicator (slot collisions make which
 * exchange completes what depend on each rank's pace) waits for it, at most ORDER_HOLD
 * exchanges: a window's instances, and so its findings, do not depend on that pace. */
void cs_onl_ops_evaluate(struct cs_online_rank *st, uint32_t exchange) {
  struct op_agg **v = malloc((st->nopa ? st->nopa : 1) * sizeof *v);
  struct key *b = malloc(((size_t)st->ops_n + st->nopl + 1) * sizeof *b);
  if (!v || !b) {
    free(v);
    free(b);
    st->oom = true;
    return;
  }
  size_t nb = order_blockers(st, exchange, b);
  size_t n = 0;
  struct op_agg *a, *t;
  HASH_ITER(hh, st->opa, a, t) {
    if (a->count == a->size) {
      if (!held_back(b, nb, a)) v[n++] = a;
    } else if (exchange - a->born >= AGG_MAX_AGE) {
      HASH_DEL(st->opa, a);
      free(a);
      st->nopa--;
    }
  }
  free(b);
  qsort(v, n, sizeof *v, cmp_opagg);
  for (size_t i = 0; i < n; i++) {
    a = v[i];
    st->cur.instances++;
    struct op_local *l;
    HASH_FIND(hh, st->opl, &a->k, sizeof a->k, l);
    if (l) {
      double cnt = (double)a->count;
      double mn = (double)(a->durmin >> RANK_BITS) / 1e3, mx = (double)a->durmax / 1e3, sum = (double)a->dursum / 1e3;
      double ref = a->count >= 3 ? (sum - mn - mx) / (cnt - 2) : sum / cnt;
      double own = (double)(uint64_t)((double)l->o.dur_us * 1e3) / 1e3;
      struct self_win *w = win_of(st, a->k.comm, (uint32_t)a->size, l->o.comm_rank);
      if (w) {
        struct went *e = &w->e[w->n % st->p.window];
        e->last = (int)(a->durmin & ((1u << RANK_BITS) - 1));
        e->late = a->count == 2 ? mx - mn : ref - mn; /* two ranks: the wait is the peer's */
        e->med = ref;
        e->a = ref - own;
        bool own_gap = l->o.gap_us >= 0 && l->o.gap_us < 1e9f;
        double og = own_gap ? (double)(uint64_t)((double)l->o.gap_us * 1e3) / 1e3 : -1;
        e->gap = og;
        uint64_t pc = a->gapcnt - (own_gap ? 1 : 0);
        e->pgap = pc ? ((double)a->gapsum / 1e3 - (own_gap ? og : 0)) / (double)pc : -1;
        w->n++;
        judge_self(st, w);
      }
      HASH_DEL(st->opl, l);
      free(l);
      st->nopl--;
    }
    HASH_DEL(st->opa, a);
    free(a);
    st->nopa--;
  }
  free(v);
  /* shipped instances whose aggregate never completed */
  struct op_local *l, *lt;
  HASH_ITER(hh, st->opl, l, lt)
  if (exchange - l->shipped >= AGG_MAX_AGE) {
    HASH_DEL(st->opl, l);
    free(l);
    st->nopl--;
  }
  struct sdc_local *s, *stt;
  HASH_ITER(hh, st->sdl, s, stt)
  if (exchange - s->shipped >= 2 * AGG_MAX_AGE) {
    HASH_DEL(st->sdl, s);
    free(s);
    st->nsdl--;
  }
}
