/* tools/report/report_balance_host.c: the balance section's host waits: the part of a rank's
 * compute gaps in which its GPU waited for its own host (the op enqueued after the previous
 * op had ended: a data loader, a host stall before the step), kept apart from the GPU's
 * compute because a share of the batch does not move it; the ranks whose host waits cost the
 * step (verdict data_loader) and the advice that names them (docs/balance.md "Host waits"). */
#include "report_balance_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* the smallest period the sequence so far repeats with (one step seen before op n), shorter
 * than the ring; 0 none */
static size_t period_now(const struct bal_member *m, size_t n) {
  for (size_t q = 1; q < BAL_PMAX && q <= n; q++)
    if (m->periodic >> (q - 1) & 1) return q;
  return 0;
}

/* op j's host wait, once op n = j + q (the same op of the next step) is in: how much later the
 * host enqueued it after the previous op's end than at the same op of the step before and of
 * the step after (the least; either one when the other is unknown), no more than its lead plus
 * the clocks' bound (the host was late only when lead + slack > 0), nor its gap. Against both
 * neighbours, a change of the clocks' offset between two steps (a new anchor) is no stall. */
static void judge(struct bal_member *m, size_t j, size_t q, size_t n) {
  double lj = m->ring_lead[j % BAL_PMAX], gj = m->ring_opgap[j % BAL_PMAX];
  if (!isfinite(lj) || !isfinite(gj)) return;
  double prev = j >= q ? m->ring_lead[(j - q) % BAL_PMAX] : NAN, next = m->ring_lead[n % BAL_PMAX];
  double w = INFINITY;
  if (isfinite(prev)) w = fmin(w, lj - prev);
  if (isfinite(next)) w = fmin(w, lj - next);
  if (!isfinite(w)) return;
  w = fmin(fmin(w, lj + m->slack), gj);
  if (!(w > 0)) return;
  for (size_t k = j; k <= n; k++) { /* the running sums from op j on */
    m->ring_host[k % BAL_PMAX] += w;
    if (k < BAL_PMAX) m->head_host[k] += w;
  }
  m->cum_host += w;
  if (w < BAL_STALL_US) return;
  if (m->nstall < BAL_STALLS) {
    if (!m->stall) m->stall = xcalloc(BAL_STALLS, sizeof *m->stall);
    m->stall[m->nstall++] = (struct bal_stall){j, w};
  } else {
    m->stall_more++;
    m->stall_more_us += w;
    m->stall_more_last = j;
  }
}

void bal_host_add(struct bal_member *m, const struct cs_walk_rec *r, bool timed) {
  size_t n = m->n;
  double lead = NAN;
  bool gap = timed && r->gap_us >= 0 && isfinite(r->gap_us);
  if (gap && r->enqueue_ns > 0 && r->start_ns > 0)
    lead = ((double)(r->enqueue_ns - r->start_ns) + r->gap_us * 1e3) / 1e3; /* ns apart: exact in a double */
  m->ring_lead[n % BAL_PMAX] = lead;
  m->ring_opgap[n % BAL_PMAX] = gap ? r->gap_us : NAN;
  /* the host clock and the GPU's are joined through an anchor, up to a constant c: an op
   * starts after its enqueue, so c <= gap - lead for every op (the least so far: slack) */
  if (isfinite(lead) && (!m->has_slack || r->gap_us - lead < m->slack)) {
    m->slack = r->gap_us - lead;
    m->has_slack = true;
  }
  if (n < BAL_PMAX) m->head_host[n] = m->cum_host; /* its own wait comes with the next step */
  m->ring_host[n % BAL_PMAX] = m->cum_host;
  size_t q = period_now(m, n);
  if (q) judge(m, n - q, q, n);
}

void bal_host_figures(const struct bal_member *m, size_t p, size_t steps, struct bal_rank *r) {
  r->host_us = r->stall_us = r->stall_every = r->host_cost_pct = 0;
  r->stalls = 0;
  if (m->long_gap || steps < 2) return; /* a pipeline member: its host waits are not split off */
  size_t a = p - 1, z = steps * p - 1;
  r->host_us = (m->ring_host[z % BAL_PMAX] - m->head_host[a]) / (double)(steps - 1);
  /* the same steps as member_figures' step_c, newest first, then turned */
  size_t k2 = 0;
  for (size_t k = steps - 1; k >= 1 && k2 < r->nstep; k--) {
    size_t lo = k * p - 1, hi = (k + 1) * p - 1;
    bool in_ring = lo + BAL_PMAX > m->n;
    double h0 = in_ring ? m->ring_host[lo % BAL_PMAX] : m->head_host[lo];
    r->step_h[k2++] = m->ring_host[hi % BAL_PMAX] - h0;
  }
  for (size_t i = 0; i < k2 / 2; i++) {
    double t = r->step_h[i];
    r->step_h[i] = r->step_h[k2 - 1 - i];
    r->step_h[k2 - 1 - i] = t;
  }
  /* the stalls in the measured steps (ops p .. steps x p - 1) and their spacing */
  double sum = 0;
  size_t first = 0, last = 0, dmin = SIZE_MAX, dmax = 0;
  for (size_t i = 0; i < m->nstall; i++) {
    size_t op = m->stall[i].op;
    if (op < p || op > z) continue;
    if (r->stalls) {
      size_t d = op - last;
      if (d < dmin) dmin = d;
      if (d > dmax) dmax = d;
    } else {
      first = op;
    }
    last = op;
    r->stalls++;
    sum += m->stall[i].us;
  }
  if (m->stall_more && m->stall_more_last <= z) { /* past the cap: counted, spacing unknown */
    r->stalls += m->stall_more;
    sum += m->stall_more_us;
    dmin = 0;
    dmax = SIZE_MAX;
  }
  if (!r->stalls) return;
  r->stall_us = sum / (double)r->stalls;
  if (r->stalls >= 2 && dmax != SIZE_MAX && dmax - dmin <= p) /* regular, within one step */
    r->stall_every = (double)(last - first) / (double)(r->stalls - 1) / (double)p;
  (void)first;
}

void bal_host_split(struct bal_view *v) {
  for (size_t i = 0; i < v->n; i++) {
    struct bal_rank *r = &v->r[i];
    r->compute_us -= r->host_us;
    if (r->compute_us < 0) r->compute_us = 0;
    r->judge_us = r->compute_us;
    for (size_t k = 0; k < r->nstep; k++) r->step_c[k] -= r->step_h[k];
  }
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void bal_host_judge(struct report_balance *b, double min_gain_pct) {
  struct bal_view *v = &b->dp;
  b->host_fixed_step = -1;
  if (!v->ok || !v->n || !(v->step_now > 0)) return;
  double *h = xcalloc(v->n, sizeof *h);
  for (size_t i = 0; i < v->n; i++) h[i] = v->r[i].host_us;
  qsort(h, v->n, sizeof *h, cmp_d);
  double med = v->n % 2 ? h[v->n / 2] : (h[v->n / 2 - 1] + h[v->n / 2]) / 2;
  free(h);
  double saved = 0;
  for (size_t i = 0; i < v->n; i++) {
    struct bal_rank *r = &v->r[i];
    double excess = r->host_us - med;
    r->host_cost_pct = excess > 0 ? 100.0 * excess / v->step_now : 0;
    if (r->verdict != VERDICT_OK || !(r->host_cost_pct >= min_gain_pct)) continue;
    r->verdict = VERDICT_LOADER;
    if (r->stalls >= 2)
      snprintf(r->cause, sizeof r->cause, "its GPU waited for its host: %zu stalls of %.1f ms, %.1f us per step",
               r->stalls, r->stall_us / 1e3, r->host_us);
    else
      snprintf(r->cause, sizeof r->cause, "its GPU waited for its host %.1f us per step", r->host_us);
    saved += excess; /* stalls of several ranks at the same step count once: an upper bound */
  }
  if (saved > 0) b->host_fixed_step = v->step_now - saved;
}

void bal_host_advise(struct report_balance *b) {
  const struct bal_view *v = &b->dp;
  if (!v->ok || !(b->host_fixed_step > 0)) return;
  char text[640];
  size_t len = 0;
  for (size_t i = 0; i < v->n && len < sizeof text; i++) {
    const struct bal_rank *r = &v->r[i];
    if (r->verdict != VERDICT_LOADER) continue;
    len += (size_t)snprintf(text + len, sizeof text - len, "%sdata loader on rank %d (host %s): ", len ? "; " : "",
                            r->rank, r->host ? r->host : "?");
    if (len >= sizeof text) break;
    if (r->stall_every > 0)
      len += (size_t)snprintf(text + len, sizeof text - len, "stalls of %.0f ms every %.0f steps", r->stall_us / 1e3,
                              r->stall_every);
    else if (r->stalls >= 2)
      len += (size_t)snprintf(text + len, sizeof text - len, "%zu stalls of %.0f ms in %zu steps", r->stalls,
                              r->stall_us / 1e3, v->steps);
    else
      len += (size_t)snprintf(text + len, sizeof text - len, "its GPU waits %.0f us per step for the host",
                              r->host_us);
    if (len < sizeof text)
      len += (size_t)snprintf(text + len, sizeof text - len, " cost %.1f %% of the job", r->host_cost_pct);
  }
  if (len >= sizeof text) len = sizeof text - 1;
  text[len] = 0;
  if (!strcmp(b->action ? b->action : "none", "none")) {
    b->action = "fix_loader";
    snprintf(b->advice, sizeof b->advice,
             "%s; its GPU waits for its host before the step, which no share of the batch moves: no share change",
             text);
  } else {
    size_t al = strlen(b->advice);
    snprintf(b->advice + al, sizeof b->advice - al, ". Also %s", text);
  }
}
