/* tools/report/section_steps.c: the report's "steps" section: per rank and step, the step time on
 * its GPU and its split into compute, communication not overlapped, waiting for peers and
 * pipeline bubble (include/collscope/step_breakdown.h, docs/balance.md "Steps"): the gathering
 * during the walk, the model (medians, p90 and shares per rank, medians per stage) and the
 * text; the JSON is report_steps_json.c. Built after the balance section, whose steps it uses. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/schedule.h"
#include "collscope/schema.h"
#include "dump/dumpfile.h"
#include "report.h"
#include "report_agg.h"
#include "report_balance.h"
#include "report_steps_internal.h"
#include "xalloc.h"

#define TEXT_ALL_RANKS 16 /* up to this many ranks the text lists each; else stages and extremes */
#define TEXT_EXTREMES 4   /* the ranks of most and of least compute listed */

const char *const steps_fig_names[STEPS_NFIG] = {"step", "compute", "comm", "wait", "bubble"};

/* ---------- the walk's side ---------- */

struct report_steps_gather {
  struct cs_steps *s;
  struct cs_steps_op *buf;
  size_t cap;
  bool failed;
  struct cs_pwait *pw; /* NULL: out of memory, no finding moved to a peer */
  struct cs_pwait_op *pbuf;
  struct cs_cost *cost; /* NULL: out of memory, findings without a cost */
  struct cs_cost_op *cbuf;
  struct cs_celse *celse; /* NULL: out of memory, no finding explained by time elsewhere */
};

struct report_steps_gather *report_steps_gather_new(void) {
  struct report_steps_gather *g = xcalloc(1, sizeof *g);
  g->s = cs_steps_new();
  g->failed = !g->s;
  g->pw = cs_pwait_new();
  g->cost = cs_cost_new();
  g->celse = cs_celse_new();
  return g;
}

void report_steps_gather_instance(struct report_steps_gather *g, uint64_t comm, int64_t seq, const struct cs_walk_rec *m,
                                  size_t n) {
  if (!g || !n) return;
  if (n > g->cap) {
    g->cap = 2 * n;
    g->buf = xrealloc(g->buf, g->cap * sizeof *g->buf);
    g->pbuf = xrealloc(g->pbuf, g->cap * sizeof *g->pbuf);
    g->cbuf = xrealloc(g->cbuf, g->cap * sizeof *g->cbuf);
  }
  for (size_t k = 0; k < n; k++)
    g->buf[k] = (struct cs_steps_op){.slot = m[k].file,
                                     .comm_rank = m[k].comm_rank,
                                     /* a peer outside the communicator: matched with nothing */
                                     .peer = m[k].p2p && m[k].peer < m[k].comm_size ? m[k].peer : -1,
                                     .timed = m[k].state == CS_DET_DONE && m[k].start_ns > 0 &&
                                              m[k].end_ns >= m[k].start_ns,
                                     .p2p = m[k].p2p,
                                     .send = m[k].p2p && m[k].op == CS_OP_Send,
                                     .start_ns = m[k].start_ns,
                                     .end_ns = m[k].end_ns};
  for (size_t k = 0; g->pw && k < n; k++)
    g->pbuf[k] = (struct cs_pwait_op){.comm_rank = m[k].comm_rank,
                                      .rank = m[k].rank,
                                      .peer = g->buf[k].peer,
                                      .p2p = g->buf[k].p2p,
                                      .send = g->buf[k].send,
                                      .timed = g->buf[k].timed,
                                      .start_ns = m[k].start_ns,
                                      .end_ns = m[k].end_ns};
  for (size_t k = 0; g->cost && k < n; k++)
    g->cbuf[k] = (struct cs_cost_op){m[k].comm_rank, g->buf[k].timed, m[k].p2p, m[k].start_ns, m[k].end_ns};
  if (g->cost && cs_cost_instance(g->cost, comm, seq, g->cbuf, n) < 0) {
    fputs("collscope report: finding costs out of memory: the stragglers have no cost\n", stderr);
    cs_cost_free(g->cost);
    g->cost = NULL;
  }
  if (g->pw && cs_pwait_instance(g->pw, comm, g->pbuf, n) < 0) {
    fputs("collscope report: peer waits out of memory: no finding is moved to the peer it waited for\n", stderr);
    cs_pwait_free(g->pw);
    g->pw = NULL;
  }
  if (!g->failed && cs_steps_instance(g->s, comm, seq, g->buf, n) < 0) {
    fputs("collscope report: step breakdown out of memory: the steps section is empty\n", stderr);
    g->failed = true;
  }
}

struct cs_pwait *report_steps_pwait(struct report_steps_gather *g) {
  return g ? g->pw : NULL;
}
const struct cs_cost *report_steps_cost(const struct report_steps_gather *g) { return g ? g->cost : NULL; }
struct cs_celse *report_steps_celse(struct report_steps_gather *g) {
  return g ? g->celse : NULL;
}

void report_steps_gather_free(struct report_steps_gather *g) {
  if (!g) return;
  cs_steps_free(g->s);
  cs_pwait_free(g->pw);
  cs_cost_free(g->cost);
  cs_celse_free(g->celse);
  free(g->buf);
  free(g->pbuf);
  free(g->cbuf);
  free(g);
}

/* ---------- the model ---------- */

static struct steps_model SM; /* one report per process: the section's model */
const struct steps_model *steps_model(void) { return &SM; }

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return a < b ? -1 : a > b;
}
double steps_pct(double *v, size_t n, double q) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  size_t k = (size_t)ceil(q * (double)n);
  return v[k ? k - 1 : 0];
}

/* a wait there is the pipeline's bubble: its Send/Recv chain, and the collectives across its
 * stages, where the stages arrive in the drain's order (include/collscope/schedule.h) */
static bool is_pipeline(void *ctx, uint64_t comm) {
  enum cs_sched_kind k = cs_sched_comm_kind(ctx, comm);
  return k == CS_SCHED_PIPELINE || k == CS_SCHED_CROSS_STAGE;
}

static int64_t fig_of(const struct cs_step_fig *f, int k) {
  return k == STEPS_STEP      ? f->step_ns
         : k == STEPS_COMPUTE ? f->compute_ns
         : k == STEPS_COMM    ? f->comm_ns
         : k == STEPS_WAIT    ? f->wait_ns
                              : f->bubble_ns;
}

static void rank_stats(struct steps_rank *R, double *tmp) {
  int64_t tot[STEPS_NFIG] = {0};
  for (int k = 0; k < STEPS_NFIG; k++) {
    for (size_t i = 0; i < R->nfig; i++) {
      tmp[i] = (double)fig_of(&R->fig[i], k) / 1e3;
      tot[k] += fig_of(&R->fig[i], k);
    }
    R->med_us[k] = steps_pct(tmp, R->nfig, 0.5);
    R->p90_us[k] = steps_pct(tmp, R->nfig, 0.9);
  }
  for (int k = 0; k < STEPS_NFIG; k++) R->share[k] = tot[STEPS_STEP] > 0 ? (double)tot[k] / (double)tot[STEPS_STEP] : 0;
}

static void groups_build(double *tmp) {
  int smax = -1;
  for (size_t i = 0; i < SM.n; i++)
    if (SM.r[i].stage > smax) smax = SM.r[i].stage;
  SM.g = xcalloc((size_t)(smax + 2), sizeof *SM.g);
  for (int s = -1; s <= smax; s++) {
    struct steps_group *G = &SM.g[SM.ng];
    G->stage = s;
    double tot[STEPS_NFIG] = {0};
    for (int k = 0; k < STEPS_NFIG; k++) {
      size_t n = 0;
      for (size_t i = 0; i < SM.n; i++)
        if (SM.r[i].stage == s) {
          tmp[n++] = SM.r[i].med_us[k];
          for (size_t j = 0; j < SM.r[i].nfig; j++) tot[k] += (double)fig_of(&SM.r[i].fig[j], k);
        }
      G->ranks = n;
      G->med_us[k] = steps_pct(tmp, n, 0.5);
    }
    for (int k = 0; k < STEPS_NFIG; k++) G->share[k] = tot[STEPS_STEP] > 0 ? tot[k] / tot[STEPS_STEP] : 0;
    if (G->ranks) SM.ng++;
  }
}

static void build_steps(struct report *r) {
  memset(&SM, 0, sizeof SM);
  struct report_steps_gather *g = r->agg ? r->agg->steps : NULL;
  if (!g || !r->set) return;
  if (g->failed) {
    SM.oom = true;
    return;
  }
  struct report_balance *b = r->agg->balance;
  struct cs_sched *sched = report_balance_schedule(b);
  size_t nf = r->set->nfiles;
  SM.r = xcalloc(nf ? nf : 1, sizeof *SM.r);
  double *tmp = xcalloc(nf > CS_STEPS_MAX ? nf : CS_STEPS_MAX, sizeof *tmp);
  struct cs_step_fig fig[CS_STEPS_MAX];
  for (size_t f = 0; f < nf; f++) {
    const struct cs_dumpfile *F = &r->set->files[f];
    struct steps_rank R = {.rank = F->hdr.rank, .stage = cs_sched_stage(sched, F->hdr.rank), .host = F->hdr.host};
    int n = report_balance_rank_step(b, R.rank, &R.comm, &R.period)
                ? cs_steps_slot(g->s, (uint32_t)F->read_index, R.comm, R.period, is_pipeline, sched, fig, &R.counts)
                : 0;
    if (n < 0) {
      fputs("collscope report: step breakdown out of memory: the steps section is empty\n", stderr);
      SM.oom = true;
      break;
    }
    if (n == 0) {
      SM.without++;
      continue;
    }
    R.nfig = (size_t)n;
    R.fig = xcalloc(R.nfig, sizeof *R.fig);
    memcpy(R.fig, fig, R.nfig * sizeof *R.fig);
    rank_stats(&R, tmp);
    SM.r[SM.n++] = R;
  }
  groups_build(tmp);
  free(tmp);
}

/* ---------- text ---------- */

static void row(FILE *o, const char *label, const double *med, const double *p90, const double *share) {
  fprintf(o, "  %-18s %10.1f", label, med[STEPS_STEP]);
  for (int k = STEPS_COMPUTE; k < STEPS_NFIG; k++) {
    if (p90)
      fprintf(o, " %10.1f %8.1f %5.1f%%", med[k], p90[k], 100.0 * share[k]);
    else
      fprintf(o, " %10.1f %8s %5.1f%%", med[k], "", 100.0 * share[k]);
  }
  fputc('\n', o);
}

static size_t *by_compute; /* the ranks' indices, most compute first (text only) */
static int cmp_compute(const void *pa, const void *pb) {
  const struct steps_rank *a = &SM.r[*(const size_t *)pa], *b = &SM.r[*(const size_t *)pb];
  double x = a->med_us[STEPS_COMPUTE], y = b->med_us[STEPS_COMPUTE];
  return x > y ? -1 : x < y ? 1
                            : a->rank - b->rank;
}

static void text_steps(const struct report *r, FILE *o) {
  (void)r;
  if (!SM.n) return;
  size_t steps = 0;
  for (size_t i = 0; i < SM.n; i++) steps += SM.r[i].nfig;
  fprintf(o, "\n# Steps: %zu ranks, %zu steps in all (up to the last %d per rank); medians over steps (us), p90 "
             "and share of the step\n",
          SM.n, steps, CS_STEPS_MAX);
  fprintf(o, "  %-18s %10s", "", "step");
  for (int k = STEPS_COMPUTE; k < STEPS_NFIG; k++) fprintf(o, " %10s %8s %6s", steps_fig_names[k], "p90", "share");
  fputc('\n', o);
  char label[64];
  if (SM.n > TEXT_ALL_RANKS || SM.ng > 1)
    for (size_t i = 0; i < SM.ng; i++) {
      if (SM.g[i].stage >= 0)
        snprintf(label, sizeof label, "stage %d (%zu)", SM.g[i].stage, SM.g[i].ranks);
      else
        snprintf(label, sizeof label, "%s (%zu)", SM.ng > 1 ? "no stage" : "all ranks", SM.g[i].ranks);
      row(o, label, SM.g[i].med_us, NULL, SM.g[i].share);
    }
  by_compute = xcalloc(SM.n, sizeof *by_compute);
  for (size_t i = 0; i < SM.n; i++) by_compute[i] = i;
  if (SM.n > TEXT_ALL_RANKS) qsort(by_compute, SM.n, sizeof *by_compute, cmp_compute);
  for (size_t j = 0; j < SM.n; j++) {
    if (SM.n > TEXT_ALL_RANKS && j == TEXT_EXTREMES) {
      fprintf(o, "  ... %zu ranks between (report --json lists every rank and step)\n", SM.n - 2 * TEXT_EXTREMES);
      j = SM.n - TEXT_EXTREMES;
    }
    const struct steps_rank *R = &SM.r[by_compute[j]];
    snprintf(label, sizeof label, "rank %d", R->rank);
    row(o, label, R->med_us, R->p90_us, R->share);
  }
  free(by_compute);
  by_compute = NULL;
  size_t untimed = 0, unmatched = 0, incomplete = 0;
  for (size_t i = 0; i < SM.n; i++) {
    untimed += SM.r[i].counts.untimed;
    unmatched += SM.r[i].counts.unmatched;
    incomplete += SM.r[i].counts.incomplete;
  }
  fprintf(o, "# compute: GPU time in no op; comm: in ops, not waiting; wait: every running op waiting for its last "
             "peer; bubble: that wait in a pipeline's Send/Recv or a collective across its stages. The four sum to the "
             "step (ns)\n");
  if (untimed || unmatched || incomplete || SM.without)
    fprintf(o, "# left out: %zu untimed ops (their time counts as compute), %zu Send/Recv unmatched (no wait), %zu "
               "steps incomplete, %zu ranks without steps\n",
            untimed, unmatched, incomplete, SM.without);
}

static void free_steps(struct report *r) {
  (void)r;
  for (size_t i = 0; i < SM.n; i++) free(SM.r[i].fig);
  free(SM.r);
  free(SM.g);
  memset(&SM, 0, sizeof SM);
}

const struct report_section report_section_steps = {"steps", build_steps, text_steps, report_steps_json, free_steps};
