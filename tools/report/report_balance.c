/* tools/report/report_balance.c: the report's `balance` section: compute time per rank and step,
 * the data-parallel shares and pipeline layer counts that equalise it, and whether a slow
 * rank is a node to fix or a slower GPU to balance (definitions in report_balance.h; the
 * model, its assumptions and the simulator's proof in docs/balance.md); its JSON and text
 * are tools/report/report_balance_json.c. */
#include "report_balance_internal.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uthash.h>

#include "collscope/detect.h"
#include "collscope/hash.h"
#include "collscope/schema.h"
#include "dump/dumpfile.h"
#include "report_health.h"
#include "xalloc.h"

#define SLOW_FRAC 1.05   /* a rank is slow when its compute is 5 % above the fastest rank's */
#define MIN_GAIN_PCT 3.0 /* below this the ranks are called balanced */

struct report_balance *report_balance_new(void) {
  struct report_balance *b = xcalloc(1, sizeof(struct report_balance));
  b->sched = cs_sched_new(); /* NULL: no schedule, the rest goes on */
  return b;
}

struct cs_sched *report_balance_schedule(struct report_balance *b) {
  /* a summary recording's: every member's, from its gaps lines (tools/report/balance_summary.c) */
  if (b && b->sum_sched && cs_sched_finish(b->sum_sched) == 0) return b->sum_sched;
  if (!b || !b->sched) return NULL;
  if (!b->sched_done) {
    b->sched_done = true;
    if (cs_sched_finish(b->sched) < 0) {
      fputs("collscope report: pipeline schedule out of memory: stages unknown\n", stderr);
      cs_sched_free(b->sched);
      b->sched = NULL;
    }
  }
  return b->sched;
}

int report_balance_microbatches(const struct report_balance *b) { return b ? b->microbatches : 0; }

bool report_balance_rank_step(const struct report_balance *b, int rank, uint64_t *comm, int *period) {
  const struct bal_view *v[2] = {b ? &b->dp : NULL, b ? &b->pp : NULL};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; v[k] && i < v[k]->n; i++)
      if (v[k]->r[i].rank == rank) {
        *comm = v[k]->comm;
        *period = v[k]->r[i].period > 0 ? v[k]->r[i].period : 1;
        return true;
      }
  for (int k = 0; k < 2; k++) {
    size_t steps = v[k] && v[k]->n ? v[k]->r[0].steps + 1 : 0; /* step 0 too */
    if (!steps) continue;
    struct bal_member *m, *mt;
    HASH_ITER(hh, b->members, m, mt) {
      if (m->rank != rank || !(k ? m->p2p : m->coll_reduce) || m->n % steps || m->n / steps > BAL_PMAX) continue;
      *comm = m->k.comm;
      *period = (int)(m->n / steps);
      return true;
    }
  }
  return false;
}

void report_balance_free(struct report_balance *b) {
  if (!b) return;
  struct bal_member *m, *mt;
  HASH_ITER(hh, b->members, m, mt) {
    HASH_DEL(b->members, m);
    free(m->long_gap);
    free(m->stall);
    free(m);
  }
  struct bal_comm *c, *ct;
  HASH_ITER(hh, b->comms, c, ct) {
    HASH_DEL(b->comms, c);
    free(c);
  }
  free(b->dp.r);
  free(b->pp.r);
  free(b->models);
  free(b->hosts);
  free(b->stages);
  cs_sched_free(b->sched);
  cs_sched_free(b->sum_sched);
  free(b->sop);
  free(b);
}

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}
/* what makes two ops of a rank "the same op of the next step": kind, size and (Send/Recv) peer */
static uint64_t op_sig(const struct cs_walk_rec *r) {
  uint64_t op = r->op >= 0 ? (uint64_t)r->op : str_hash(r->op_name) | 1ull << 63;
  return cs_op_sig(op, r->bytes, (int64_t)(r->p2p ? r->peer : r->root));
}
static bool reduce_op(int op) { return op == CS_OP_AllReduce || op == CS_OP_ReduceScatter; }

static void member_add(struct bal_member *m, const struct cs_walk_rec *r) {
  uint64_t s = op_sig(r);
  size_t n = m->n;
  for (size_t q = 1; q <= BAL_PMAX && q <= n; q++)
    if (m->sig[(n - q) % BAL_PMAX] != s) m->periodic &= ~(1ull << (q - 1));
  m->sig[n % BAL_PMAX] = s;
  m->coll_reduce &= reduce_op(r->op);
  m->p2p &= r->p2p;
  bool timed = r->state == CS_DET_DONE && r->end_ns > 0;
  if (timed && r->gap_us >= 0 && isfinite(r->gap_us))
    m->cum_gap += r->gap_us;
  else
    m->untimed++;
  int64_t end = timed ? r->end_ns : -1;
  if (n < BAL_PMAX) m->head_gap[n] = m->cum_gap, m->head_end[n] = end;
  m->ring_gap[n % BAL_PMAX] = m->cum_gap;
  m->ring_end[n % BAL_PMAX] = end;
  if (!m->p2p && m->long_gap) { /* a collective member: its per-step figures are not used */
    free(m->long_gap);
    m->long_gap = NULL;
  } else if (m->p2p && n == 0) {
    m->long_gap = xcalloc(BAL_RING, sizeof *m->long_gap);
  }
  if (m->long_gap) m->long_gap[n % BAL_RING] = m->cum_gap;
  bal_host_add(m, r, timed);
  m->n = n + 1;
}

void report_balance_instance(struct report_balance *b, uint64_t comm, int64_t seq, const struct cs_walk_rec *m,
                             size_t n) {
  if (!b || !n) return;
  struct bal_comm *c;
  HASH_FIND(hh, b->comms, &comm, sizeof comm, c);
  if (!c) {
    c = xcalloc(1, sizeof *c);
    c->comm = comm;
    c->same_size = true;
    HASH_ADD(hh, b->comms, comm, sizeof c->comm, c);
  }
  c->instances++;
  if (b->sched) { /* the pipeline schedule sees every member's op */
    if (n > b->sopcap) {
      b->sopcap = 2 * n;
      b->sop = xrealloc(b->sop, b->sopcap * sizeof *b->sop);
    }
    for (size_t k = 0; k < n; k++)
      b->sop[k] = (struct cs_sched_op){m[k].comm_rank, m[k].rank, m[k].host, m[k].p2p ? m[k].peer : -1, m[k].p2p,
                                       m[k].p2p && m[k].op == CS_OP_Send,
                                       m[k].state == CS_DET_DONE && isfinite(m[k].gap_us) ? m[k].gap_us : -1,
                                       m[k].state == CS_DET_DONE && m[k].end_ns > 0 ? m[k].end_ns : 0};
    if (cs_sched_instance(b->sched, comm, seq, b->sop, n) < 0) {
      fputs("collscope report: pipeline schedule out of memory: stages unknown\n", stderr);
      cs_sched_free(b->sched);
      b->sched = NULL;
    }
  }
  for (size_t k = 0; k < n; k++) {
    if (k && m[k].comm_rank == m[k - 1].comm_rank) continue; /* a duplicate rank: the first counts */
    if (m[k].op != m[0].op || m[k].bytes != m[0].bytes) c->same_size = false;
    if (m[k].comm_rank < 0) continue;
    struct bal_key key;
    memset(&key, 0, sizeof key);
    key.comm = comm;
    key.comm_rank = m[k].comm_rank;
    struct bal_member *e;
    HASH_FIND(hh, b->members, &key, sizeof key, e);
    if (!e) {
      e = xcalloc(1, sizeof *e);
      e->k = key;
      e->rank = m[k].rank;
      e->host = m[k].host;
      e->file = m[k].file;
      e->coll_reduce = e->p2p = true;
      e->periodic = ~0ull;
      HASH_ADD(hh, b->members, k, sizeof key, e);
    }
    member_add(e, &m[k]);
  }
}

int report_balance_parse_list(const char *s, bool integers, double *out, size_t cap, char *err, size_t errcap) {
  size_t n = 0;
  double total = 0;
  const char *p = s ? s : "";
  for (;;) {
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || errno || !isfinite(v) || v <= 0 || (integers && (v != floor(v) || v > BAL_MAX_LAYERS))) {
      snprintf(err, errcap, "entry %zu is not a positive %s", n + 1, integers ? "integer" : "number");
      return -1;
    }
    if (n == cap) {
      snprintf(err, errcap, "more than %zu entries", cap);
      return -1;
    }
    out[n++] = v;
    total += v;
    if (integers && total > BAL_MAX_LAYERS) {
      snprintf(err, errcap, "more than %d in all", BAL_MAX_LAYERS);
      return -1;
    }
    if (*end == 0) break;
    if (*end != ',') {
      snprintf(err, errcap, "entries are separated by commas");
      return -1;
    }
    p = end + 1;
  }
  return (int)n;
}

/* ---------- the model ---------- */

/* the smallest period the whole sequence repeats with, at least twice; 0 none */
static int member_period(const struct bal_member *m) {
  for (size_t q = 1; q <= BAL_PMAX; q++)
    if ((m->periodic >> (q - 1) & 1) && m->n >= 2 * q) return (int)q;
  return 0;
}
/* compute and step time per step over steps 1 .. S-1 (step 0 holds the set-up); false when
 * fewer than 2 steps */
static bool member_figures(const struct bal_member *m, int period, struct bal_rank *r) {
  size_t p = period > 0 ? (size_t)period : 1, steps = m->n / p;
  if (steps < 2) return false;
  size_t a = p - 1, z = steps * p - 1;
  r->period = period;
  r->steps = steps - 1;
  r->untimed = m->untimed;
  r->compute_us = (m->ring_gap[z % BAL_PMAX] - m->head_gap[a]) / (double)(steps - 1);
  r->judge_us = r->compute_us;
  /* the last steps' own figures (at most BAL_STEPS, those whose ends the ring still holds) */
  r->nstep = 0;
  for (size_t k = steps - 1; k >= 1 && r->nstep < BAL_STEPS; k--) {
    size_t lo = k * p - 1, hi = (k + 1) * p - 1;
    size_t held = m->long_gap ? BAL_RING : BAL_PMAX; /* the last ops whose running compute is kept */
    const double *ring = m->long_gap ? m->long_gap : m->ring_gap;
    bool in_ring = lo + held > m->n;
    if ((!in_ring && lo >= BAL_PMAX) || hi + held <= m->n) break; /* older ends are no longer held */
    double g0 = in_ring ? ring[lo % held] : m->head_gap[lo];
    r->step_c[r->nstep++] = ring[hi % held] - g0;
  }
  for (size_t i = 0; i < r->nstep / 2; i++) { /* oldest first */
    double t = r->step_c[i];
    r->step_c[i] = r->step_c[r->nstep - 1 - i];
    r->step_c[r->nstep - 1 - i] = t;
  }
  int64_t e0 = m->head_end[a], e1 = m->ring_end[z % BAL_PMAX];
  r->step_us = e0 > 0 && e1 > e0 ? (double)(e1 - e0) / 1e3 / (double)(steps - 1) : -1;
  bal_host_figures(m, p, steps, r);
  return true;
}

static int cmp_member(const void *pa, const void *pb) {
  const struct bal_member *a = *(const struct bal_member *const *)pa, *b = *(const struct bal_member *const *)pb;
  return a->k.comm_rank < b->k.comm_rank ? -1 : a->k.comm_rank > b->k.comm_rank;
}

/* the members of comm, in comm_rank order, into v->r (their figures); false when a member has
 * fewer than two steps */
static bool view_build(struct report_balance *b, uint64_t comm, const struct cs_dumpfile **by_index, size_t nindex,
                       struct bal_view *v) {
  size_t n = 0;
  struct bal_member *m, *mt;
  HASH_ITER(hh, b->members, m, mt)
  n += m->k.comm == comm;
  struct bal_member **list = xcalloc(n ? n : 1, sizeof *list);
  n = 0;
  HASH_ITER(hh, b->members, m, mt)
  if (m->k.comm == comm) list[n++] = m;
  qsort(list, n, sizeof *list, cmp_member);
  /* one step for all: the period most members show (they agree in a synchronous job) */
  int period = n ? member_period(list[0]) : 0;
  v->found = true;
  v->comm = comm;
  v->r = xcalloc(n ? n : 1, sizeof *v->r);
  v->n = n;
  v->period = period;
  v->steps = SIZE_MAX;
  bool ok = n >= 2;
  /* a pipeline's stages run different op sequences, and a stage whose ops repeat within a
   * step (the last stage's Recv, Send per microbatch) shows a shorter period than the step:
   * the step is the one every stage has, the fewest repeats among them */
  size_t psteps = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    int p = list[i]->p2p ? member_period(list[i]) : 0;
    if (p > 0 && list[i]->n / (size_t)p < psteps) psteps = list[i]->n / (size_t)p;
  }
  for (size_t i = 0; i < n && ok; i++) {
    struct bal_rank *r = &v->r[i];
    r->rank = list[i]->rank;
    r->comm_rank = list[i]->k.comm_rank;
    r->file = list[i]->file;
    r->host = list[i]->host;
    const struct cs_dumpfile *f = list[i]->file < nindex ? by_index[list[i]->file] : NULL;
    r->gpu = f && f->hdr.gpu_name && *f->hdr.gpu_name ? f->hdr.gpu_name : "unknown";
    /* a pipeline's stages run different op sequences: each its own period */
    int p = v->period;
    if (list[i]->p2p) {
      p = member_period(list[i]);
      size_t q = psteps != SIZE_MAX && psteps >= 2 ? list[i]->n / psteps : 0;
      if (p > 0 && q && list[i]->n % psteps == 0 && q % (size_t)p == 0 && q <= BAL_PMAX) p = (int)q;
    }
    ok = member_figures(list[i], p, r);
    if (ok && r->steps < v->steps) v->steps = r->steps;
  }
  free(list);
  if (!ok) { /* fewer than two steps somewhere: nothing to say about this communicator */
    free(v->r);
    memset(v, 0, sizeof *v);
  }
  return ok;
}

static void judge_ranks(struct bal_view *v, const struct report_health *h) {
  double cmin = INFINITY;
  const char *fast_gpu = NULL;
  for (size_t i = 0; i < v->n; i++)
    if (v->r[i].judge_us < cmin) cmin = v->r[i].judge_us, fast_gpu = v->r[i].gpu;
  for (size_t i = 0; i < v->n; i++) {
    struct bal_rank *r = &v->r[i];
    r->verdict = VERDICT_OK;
    r->cause[0] = 0;
    if (!(r->judge_us > SLOW_FRAC * cmin)) continue;
    bool throttled = false, model = false;
    size_t len = 0;
    if (h) {
      struct cs_det_straggler s;
      memset(&s, 0, sizeof s);
      s.rank = r->rank;
      s.comm_rank = r->comm_rank;
      s.host = r->host;
      json_t *causes = report_health_causes(h, &s, NULL, NULL);
      size_t k;
      json_t *c;
      json_array_foreach(causes, k, c) {
        const char *kind = json_string_value(json_object_get(c, "kind"));
        const char *detail = json_string_value(json_object_get(c, "detail"));
        if (!kind) continue;
        bool t = !strcmp(kind, "power_cap") || !strcmp(kind, "thermal") || !strcmp(kind, "hw_slowdown") ||
                 !strcmp(kind, "clocks_low");
        bool g = !strcmp(kind, "gpu_model");
        if (!t && !g) continue;
        throttled |= t;
        model |= g;
        if (len < sizeof r->cause)
          len += (size_t)snprintf(r->cause + len, sizeof r->cause - len, "%s%s: %s", len ? "; " : "", kind,
                                  detail ? detail : "");
      }
      json_decref(causes);
    }
    if (!model && fast_gpu && strcmp(r->gpu, fast_gpu) != 0) { /* no health samples: the headers' models */
      model = true;
      if (len < sizeof r->cause)
        len += (size_t)snprintf(r->cause + len, sizeof r->cause - len, "%sgpu_model: %s, the fastest rank's %s",
                                len ? "; " : "", r->gpu, fast_gpu);
    }
    r->verdict = throttled ? VERDICT_THROTTLED : model ? VERDICT_MODEL
                                                       : VERDICT_UNEXPLAINED;
  }
}

/* the new shares' gain step by step (each rank's compute of that step scaled by share /
 * share_now; the step's slowest before less the slowest after): its 95 % interval over the
 * last steps every rank holds; NaN with fewer than two. Noise between steps (a wall clock's, a
 * data loader's) widens it: advice only when the gain stands out of it (advise()). */
static void dp_gain_interval(struct report_balance *b) {
  const struct bal_view *v = &b->dp;
  size_t K = BAL_STEPS;
  for (size_t i = 0; i < v->n; i++)
    if (v->r[i].nstep < K) K = v->r[i].nstep;
  b->dp_gain_steps = K;
  b->dp_gain_lo = b->dp_gain_hi = NAN;
  if (K < 2) return;
  double sum = 0, sq = 0;
  for (size_t k = 0; k < K; k++) {
    double before = 0, after = 0;
    for (size_t i = 0; i < v->n; i++) {
      const struct bal_rank *r = &v->r[i];
      double c = r->step_c[r->nstep - K + k], c2 = r->share_now > 0 ? c * r->share / r->share_now : c;
      if (c > before) before = c;
      if (c2 > after) after = c2;
    }
    sum += before - after;
    sq += (before - after) * (before - after);
  }
  double mean = sum / (double)K, var = (sq - (double)K * mean * mean) / (double)(K - 1);
  double half = bal_t975(K - 1) * sqrt(var > 0 ? var / (double)K : 0);
  b->dp_gain_lo = mean - half;
  b->dp_gain_hi = mean + half;
}

/* data parallel: shares proportional to speed (today's share / compute), summing to 1 */
static void dp_model(struct report_balance *b, const double *shares, size_t nshares) {
  struct bal_view *v = &b->dp;
  if (shares && nshares != v->n) {
    snprintf(b->shares_note, sizeof b->shares_note, "--shares gives %zu entries for %zu ranks: equal shares assumed",
             nshares, v->n);
    shares = NULL;
  }
  double wsum = 0;
  for (size_t i = 0; i < v->n; i++) wsum += shares ? shares[i] : 1.0;
  double speed_sum = 0, cmax = 0, step_max = -1;
  bool ok = true;
  for (size_t i = 0; i < v->n; i++) {
    struct bal_rank *r = &v->r[i];
    r->share_now = (shares ? shares[i] : 1.0) / wsum;
    if (!(r->compute_us > 0)) ok = false;
    r->speed = ok ? r->share_now / r->compute_us : 0;
    speed_sum += r->speed;
    if (r->compute_us > cmax) cmax = r->compute_us;
    if (r->step_us > step_max) step_max = r->step_us;
  }
  v->ok = ok && speed_sum > 0 && step_max > 0;
  if (!v->ok) return;
  v->compute_bal = 1.0 / speed_sum; /* every rank's compute with the new shares */
  for (size_t i = 0; i < v->n; i++) v->r[i].share = v->r[i].speed * v->compute_bal;
  v->step_now = step_max;
  v->step_bal = step_max - (cmax - v->compute_bal);
  if (v->step_bal < v->compute_bal) v->step_bal = v->compute_bal;
  v->gain_pct = 100.0 * (v->step_now - v->step_bal) / v->step_now;
  dp_gain_interval(b);
}

/* groups of the data-parallel ranks by GPU model and by host: mean compute, summed share */
static void groups(struct bal_group **out, size_t *nout, const struct bal_view *v, bool by_host) {
  *out = xcalloc(v->n ? v->n : 1, sizeof **out);
  *nout = 0;
  for (size_t i = 0; i < v->n; i++) {
    const char *name = by_host ? v->r[i].host : v->r[i].gpu;
    if (!name) name = "unknown";
    size_t g = 0;
    while (g < *nout && strcmp((*out)[g].name, name)) g++;
    if (g == *nout) (*out)[(*nout)++] = (struct bal_group){name, v->r[i].gpu, 0, 0, 0};
    struct bal_group *G = &(*out)[g];
    G->ranks++;
    G->compute_us += v->r[i].compute_us;
    G->share += v->r[i].share;
  }
  for (size_t g = 0; g < *nout; g++) (*out)[g].compute_us /= (double)(*out)[g].ranks;
}

static void advise(struct report_balance *b) {
  struct bal_view *v = b->dp.ok ? &b->dp : b->pp.found && b->pp.ok ? &b->pp
                                                                   : NULL;
  if (!v) {
    b->action = "none";
    snprintf(b->advice, sizeof b->advice, "no data-parallel or pipeline communicator with two steps or more");
    return;
  }
  size_t nthr = 0, nmod = 0, nunx = 0;
  size_t len = 0;
  for (size_t i = 0; i < v->n; i++) {
    nthr += v->r[i].verdict == VERDICT_THROTTLED;
    nmod += v->r[i].verdict == VERDICT_MODEL;
    nunx += v->r[i].verdict == VERDICT_UNEXPLAINED;
  }
  double gain = v == &b->pp && !b->layers_ok ? -1 : v->gain_pct;
  /* a pipeline's gain must stand out of its spread across steps: an interval that reaches
   * zero (or none, under two steps) is no gain to act on */
  if (v == &b->pp && b->layers_ok && !(b->pp_gain_lo > 0)) gain = 0;
  bool dp_unsure = v == &b->dp && !(b->dp_gain_lo > 0);
  if (dp_unsure) gain = 0;
  if (nthr) {
    b->action = nmod ? "fix_then_balance" : "fix";
    len += (size_t)snprintf(b->advice + len, sizeof b->advice - len, "fix the node first: a throttled GPU is a fault (");
    for (size_t i = 0, k = 0; i < v->n && len < sizeof b->advice; i++)
      if (v->r[i].verdict == VERDICT_THROTTLED)
        len += (size_t)snprintf(b->advice + len, sizeof b->advice - len, "%srank %d on %s", k++ ? ", " : "",
                                v->r[i].rank, v->r[i].host ? v->r[i].host : "?");
    if (len < sizeof b->advice)
      len += (size_t)snprintf(b->advice + len, sizeof b->advice - len,
                              "); shares fitted to it would waste the GPU once repaired%s",
                              nmod ? ". Then balance the slower GPU models" : "");
  } else if (gain < 0 && !nmod && !nunx) { /* a pipeline without --layers, no stage slow */
    b->action = "none";
    snprintf(b->advice, sizeof b->advice, "balanced: no stage's compute is %.0f %% above the fastest's",
             100.0 * (SLOW_FRAC - 1));
  } else if (gain >= 0 && gain < MIN_GAIN_PCT) {
    b->action = "none";
    if ((v == &b->pp && !(b->pp_gain_lo > 0)) || dp_unsure)
      snprintf(b->advice, sizeof b->advice,
               "balanced: the predicted gain (%.1f %% of the step) is not above zero at 95 %% across %zu steps",
               v->gain_pct, v == &b->pp ? b->pp_gain_steps : b->dp_gain_steps);
    else
      snprintf(b->advice, sizeof b->advice, "balanced: rebalancing would gain %.1f %% of the step", gain);
    /* then no rank is slow for no cause either: what it costs the step is under the mark
     * (its model, a fact, stays said) */
    for (size_t i = 0; i < v->n; i++)
      if (v->r[i].verdict == VERDICT_UNEXPLAINED) {
        v->r[i].verdict = VERDICT_OK;
        v->r[i].cause[0] = 0;
      }
  } else if (!nmod && !nunx) { /* every GPU as fast: the work is split unevenly */
    b->action = "balance";
    snprintf(b->advice, sizeof b->advice,
             "the work is split unevenly on GPUs of one speed: %s", v == &b->pp ? "move layers as listed" : "even the shares");
  } else if (nmod && !nunx) {
    b->action = "balance";
    snprintf(b->advice, sizeof b->advice,
             "the slow ranks run a slower GPU model: a fact to balance, not a fault to fix");
  } else {
    b->action = "balance";
    snprintf(b->advice, sizeof b->advice,
             "rebalance, and look at the node: %zu slow rank%s with no cause in the health samples (same model, not "
             "throttled)",
             nunx, nunx == 1 ? "" : "s");
  }
}

void report_balance_finish(struct report_balance *b, const struct cs_dumpset *set, const struct report_health *h,
                           const double *layers, size_t nlayers, const double *shares, size_t nshares) {
  if (!b || b->finished) return;
  b->finished = true;
  /* which communicators: the data-parallel one with the most ranks (then instances), the
   * pipeline one likewise */
  struct cs_sched *sched = report_balance_schedule(b);
  uint64_t dp = 0, pp = 0;
  size_t dp_n = 0, dp_i = 0, pp_n = 0, pp_i = 0;
  struct bal_comm *c, *ct;
  HASH_ITER(hh, b->comms, c, ct)
  c->nmem = 0,
  c->all_reduce = c->all_p2p = true;
  struct bal_member *m, *mt;
  HASH_ITER(hh, b->members, m, mt) { /* one pass over the members: O(members), not comms x members */
    HASH_FIND(hh, b->comms, &m->k.comm, sizeof m->k.comm, c);
    if (!c) continue;
    c->nmem++;
    c->all_reduce &= m->coll_reduce;
    c->all_p2p &= m->p2p;
  }
  HASH_ITER(hh, b->comms, c, ct) {
    size_t n = c->nmem;
    bool reduce = c->all_reduce, p2p = c->all_p2p;
    if (n < 2) continue;
    /* a collective over several pipeline stages (the grad-norm, the tied embedding) is no
     * data-parallel group: its members do different work */
    if (cs_sched_comm_kind(sched, c->comm) == CS_SCHED_CROSS_STAGE) continue;
    if (reduce && c->same_size && (n > dp_n || (n == dp_n && c->instances > dp_i)))
      dp = c->comm, dp_n = n, dp_i = c->instances;
    if (p2p && (n > pp_n || (n == pp_n && c->instances > pp_i))) pp = c->comm, pp_n = n, pp_i = c->instances;
  }
  /* the files by read_index (the walk's file numbers) */
  size_t nindex = 0;
  for (size_t f = 0; set && f < set->nfiles; f++)
    if (set->files[f].read_index + 1 > nindex) nindex = set->files[f].read_index + 1;
  const struct cs_dumpfile **by_index = xcalloc(nindex ? nindex : 1, sizeof *by_index);
  for (size_t f = 0; set && f < set->nfiles; f++) by_index[set->files[f].read_index] = &set->files[f];
  if (dp_n && view_build(b, dp, by_index, nindex, &b->dp)) {
    bal_host_split(&b->dp);
    dp_model(b, shares, nshares);
    judge_ranks(&b->dp, h);
    bal_host_judge(b, MIN_GAIN_PCT);
    double *inferred = xcalloc(b->dp.n ? b->dp.n : 1, sizeof *inferred);
    if (bal_data_judge(b, by_index, nindex, inferred) && !shares) dp_model(b, inferred, b->dp.n);
    free(inferred);
    groups(&b->models, &b->nmodels, &b->dp, false);
    groups(&b->hosts, &b->nhosts, &b->dp, true);
  }
  if (pp_n && view_build(b, pp, by_index, nindex, &b->pp)) {
    bal_pipeline_model(b, sched, layers, nlayers);
    judge_ranks(&b->pp, h);
    if (!b->dp.ok) {
      groups(&b->models, &b->nmodels, &b->pp, false);
      groups(&b->hosts, &b->nhosts, &b->pp, true);
    }
  } else if (layers) {
    snprintf(b->layers_note, sizeof b->layers_note, "--layers given, but no Send/Recv pipeline with two steps");
  }
  free(by_index);
  advise(b);
  bal_data_advise(b);
  bal_host_advise(b);
}
