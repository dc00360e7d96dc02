/* analysis/online_stragglers.c: the online exchange's self-judgement: a rank keeps a window
 * of each communicator's complete instances as it saw them (analysis/online_instance.c reads
 * each from the aggregates), judges itself after each with every rule of the detector
 * (analysis/detect_judge.c and detect_cost.c, the one implementation the report uses too)
 * and queues a report for a later exchange. Protocol: analysis/online_eval.c. */
#include "detect_internal.h"
#include "online_internal.h"

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static const struct went *wat(const struct self_win *w, size_t window, size_t i) { return &w->e[i % window]; }

/* The draw rule's mid-rank u of the rank's offset among the draw's members (detect_judge.c
 * cs_det_draw_rule): the report counts the members with smaller offsets, which no sum, min or
 * max carries. Here it is the normal law's: u = Phi(a / sigma), sigma the instance's noise
 * (from 16 members: online_instance.c), a / sigma held within the normal scores of the most
 * extreme mid-ranks among n members, 0.5 / n and 1 - 0.5 / n, as the report's are (one wild
 * offset weighs no more than being last). A clean rank's u is then uniform where the arrivals
 * scatter normally; a tail widens sigma and draws u towards 1/2 (a smaller z: fewer flags).
 * Where the noise is unknown u is 1/2: the test passes nothing there. A communicator of at most
 * ONL_EXACT ranks has the report's own mid-rank instead (online_instance.c exact_instance). */
static double draw_u(const struct went *e, uint32_t n) {
  if (!(e->noise >= 0) || n < 2) return 0.5;
  double lo = 0.5 / (double)n, zmax = cs_det_normal_score(1 - lo);
  double z = e->noise > 0 ? e->a / e->noise : e->a > 0 ? zmax
                                          : e->a < 0   ? -zmax
                                                       : 0;
  if (z > zmax) z = zmax;
  if (z < -zmax) z = -zmax;
  return z >= 0 ? 1 - cs_det_normal_tail(z) : cs_det_normal_tail(-z);
}

/* After instance i (0-based) of the window was pushed: does this rank flag itself? The
 * adapter to the rules: its counts and points over the window, then detect_judge.c and
 * detect_cost.c decide, in the report's order (detect_window.c rules_pass). */
static void judge_self(struct cs_online_rank *st, struct self_win *w) {
  const struct cs_det_params *p = &st->p;
  size_t W = p->window, i = w->n - 1, dpos = 0;
  size_t lo = w->n > W ? w->n - W : 0, nw = w->n - lo;
  if (nw < p->min_instances) return;
  double *sc = st->scratch;
  struct cs_det_pt *pt = w->pts;
  struct cs_det_counts c = {.w = nw, .recent = p->recent < W ? p->recent : W};
  c.recent_full = c.recent && w->n >= c.recent;
  size_t nfresh = 0;
  for (size_t j = lo; j <= i; j++) {
    const struct went *e = wat(w, W, j);
    pt[j - lo] = (struct cs_det_pt){.med = e->med,
                                    .late = e->late,
                                    .off = e->a,
                                    .gap = e->gap,
                                    .pgap = e->pgap,
                                    .noise = e->noise,
                                    .gpeers = e->pgap,
                                    .in = true,
                                    .last = e->last == (int)w->crank,
                                    .draw = e->draw,
                                    .u = e->u};
    c.n++;
    c.pos += e->a > 0;
    if (c.recent_full && j + c.recent > i) c.rn++, c.rpos += e->a > 0;
    c.run = e->a > 0 ? c.run + 1 : 0;
    nfresh += e->draw;
    dpos += e->draw && e->a > 0;
  }
  /* share-last: the comm rank last most often (ties: the lowest), is it this rank? and the
   * rank last in the most fresh draws (ties: the lowest) */
  size_t k = 0, kf = 0;
  for (size_t j = lo; j <= i; j++) {
    const struct went *e = wat(w, W, j);
    if (e->last >= 0) sc[k++] = (double)e->last;
    if (e->draw && e->last >= 0) sc[W + kf++] = (double)e->last;
  }
  size_t best = 0, fbest = 0;
  double cand = -1, fcand = -1;
  for (int pass = 0; pass < 2; pass++) {
    double *v = sc + (pass ? W : 0);
    size_t nv = pass ? kf : k, run = 0, *bp = pass ? &fbest : &best;
    double *cp = pass ? &fcand : &cand;
    qsort(v, nv, sizeof *v, cmp_d);
    for (size_t j = 0; j < nv; j++) {
      run = j && v[j] == v[j - 1] ? run + 1 : 1;
      if (run > *bp) {
        *bp = run;
        *cp = v[j];
      }
    }
  }
  struct cs_det_straggler s;
  memset(&s, 0, sizeof s);
  bool sig = cs_det_last_significant(p, nw, best, (int)w->size);
  bool by_last = sig && cand == (double)w->crank && cs_det_last_rule(p, pt, nw, sc, &s);
  bool fresh = !sig && fcand == (double)w->crank && cs_det_fresh_significant(p, nfresh, fbest, (int)w->size);
  bool ok = by_last;
  unsigned pre = cs_det_prechecks(p, &c);
  double med = cs_det_window_med(pt, nw, sc), off, late;
  if (!ok && pre) ok = cs_det_offset_rules(p, pre, &c, cs_det_rank_threshold(p, pt, nw, med, sc, NULL), pt, nw, sc, &off, &late);
  if (!ok) ok = cs_det_cost_judge(w->cost, p, w->size, (int)w->crank, &off);
  if (!ok && fresh && cs_det_last_rule(p, pt, nw, sc, &s)) ok = by_last = true;
  /* the offset rule over fresh draws, as the report's window runs it (detect_window.c): its rank
   * test's mid-ranks are draw_u's */
  if (!ok && cs_det_draw_precheck(p, (int)w->size, nfresh, dpos)) ok = cs_det_draw_rule(p, pt, nw, med, (int)w->size, sc, &off);
  if (!ok || !cs_det_persist(&w->streak, &w->at, i, p->persist) || w->flagged) return;
  w->flagged = true;
  cs_det_figures(pt, nw, by_last, med, sc, &s);
  cs_det_cost_fill(w->cost, (int)w->crank, by_last, &s);
  struct report r = {w->comm, w->crank, nw, s.kind, s.share_last, s.lateness_us, s.median_dur_us};
  /* a rank the stage comparison named already is reported once (online_sched.c) */
  if (st->npend < PENDING_REPORTS && !st->stage_named) st->pend[st->npend++] = r;
}

/* instance e (just pushed as the window's w->n - 1) into the cost rule's window: the median
 * lateness of the last `window` instances, the instance before it */
static int cost_push(struct cs_online_rank *st, struct self_win *w, const struct cs_det_cost_in *ci,
                     const struct cs_det_cost_in *prev) {
  size_t W = st->p.window, lo = w->n > W ? w->n - W : 0, k = 0;
  for (size_t j = lo; j < w->n; j++) st->scratch[k++] = wat(w, W, j)->late;
  double late_med = cs_det_median(st->scratch, k);
  return cs_det_cost_push(&w->cost, &st->p, w->size, ci, w->n >= 2 ? prev : NULL, late_med);
}

static struct self_win *win_of(struct cs_online_rank *st, uint64_t comm, uint32_t size, uint32_t crank) {
  struct self_win *w;
  HASH_FIND(hh, st->wins, &comm, sizeof comm, w);
  if (w) return w->size == size && w->crank == crank ? w : NULL;
  if (st->nwins >= WIN_COMMS) return NULL;
  w = calloc(1, sizeof *w + st->p.window * sizeof w->pts[0]);
  if (!w || !(w->e = calloc(st->p.window, sizeof *w->e))) {
    free(w);
    st->oom = true;
    return NULL;
  }
  w->comm = comm;
  w->size = size;
  w->crank = crank;
  HASH_ADD(hh, st->wins, comm, sizeof w->comm, w);
  if (!CS_HASH_ADDED()) {
    free(w->e);
    free(w);
    st->oom = true;
    return NULL;
  }
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
      struct self_win *w = win_of(st, a->k.comm, (uint32_t)a->size, l->o.comm_rank);
      if (w) {
        struct went *e = &w->e[w->n % st->p.window];
        struct cs_det_cost_in ci;
        struct onl_exact ox;
        cs_onl_instance(a, &l->o, e, &ci, &ox);
        cs_onl_sched_adjust(st, w, e); /* a pipeline's schedule: analysis/online_sched.c */
        const struct went *pe = w->n ? wat(w, st->p.window, w->n - 1) : NULL;
        e->draw = e->named && pe && !pe->named;
        e->u = !e->draw ? 0.5 : e->uex >= 0 ? e->uex
                                            : draw_u(e, w->size);
        w->n++;
        if (cost_push(st, w, &ci, &w->prev_ci) < 0)
          st->oom = true;
        else
          judge_self(st, w);
        /* a pipeline stage's rank against its stage peers (analysis/online_sched.c): named
         * once, unless the rules above named it on this communicator */
        if (cs_onl_stage_instance(st, w, &ox) && !w->flagged && st->npend < PENDING_REPORTS) {
          w->flagged = st->stage_named = true;
          st->pend[st->npend++] =
              (struct report){w->comm, w->crank, w->stg.above + w->stg.below, CS_DET_COMPUTE, 0, 0, e->med};
        }
        w->prev_ci = ci;
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
