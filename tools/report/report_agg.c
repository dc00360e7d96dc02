/* tools/report/report_agg.c: the report's figures gathered while the dumps stream (report_agg.h). This
 * file owns the run, the merge of the reading threads' tables at the end and the free; the
 * per-record tables are in report_agg_record.c, the instance walk in report_agg_walk.c. */
#include "report_agg_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "collscope/schedule.h"
#include "collscope/schema.h"
#include "collscope/sdc.h"
#include "cli.h"
#include "dump/instwalk.h"
#include "report_balance.h"
#include "report_steps_internal.h"
#include "report_views.h"
#include "xalloc.h"
/* the files are listed: per-file state */
static void on_begin(void *ctx, size_t nf) {
  struct report_agg_priv *P = ctx;
  P->nf = nf;
  P->fs = xcalloc(nf, sizeof *P->fs);
  P->pdone = xcalloc(nf, sizeof *P->pdone);
  P->agg->files = xcalloc(nf, sizeof *P->agg->files);
  P->walk = cs_walk_new(nf, agg_on_instance, P);
  if (!P->walk) {
    fputs("collscope: out of memory\n", stderr);
    exit(1);
  }
}
/* ---------- the end: merge the threads' tables ---------- */

static int cmp_row(const void *pa, const void *pb) {
  const struct agg_row *a = pa, *b = pb;
  int ka = a->op >= 0 ? a->op : CS_OP_COUNT, kb = b->op >= 0 ? b->op : CS_OP_COUNT;
  if (ka != kb) return ka < kb ? -1 : 1;
  if (ka == CS_OP_COUNT) {
    int c = strcmp(a->op_name, b->op_name);
    if (c) return c;
  }
  if (a->group_ops != b->group_ops) return a->group_ops < b->group_ops ? -1 : 1; /* op rows, then groups */
  if (a->comm_size != b->comm_size) return a->comm_size < b->comm_size ? -1 : 1;
  if (a->bucket != b->bucket) return a->bucket < b->bucket ? -1 : 1;
  return a->model == b->model ? 0 : !a->model ? -1
                                : !b->model   ? 1
                                              : strcmp(a->model, b->model); /* --by-model */
}
static int cmp_comm(const void *pa, const void *pb) {
  const struct agg_comm *a = pa, *b = pb;
  return a->comm < b->comm ? -1 : a->comm > b->comm;
}

static void merge_row(struct report_agg_priv *P, struct agg_row *into, struct agg_row *from) {
  into->count += from->count;
  if (from->bytes_min < into->bytes_min) into->bytes_min = from->bytes_min;
  if (from->bytes_max > into->bytes_max) into->bytes_max = from->bytes_max;
  if (from->sizes_overflow) {
    if (!into->sizes_overflow) {
      into->sizes_overflow = true;
      for (size_t i = 0; i < into->nsizes; i++) cs_hist_add_n(&into->bytes_hist, (double)into->sizes[i].v, into->sizes[i].n);
      free(into->sizes);
      into->sizes = NULL;
      into->nsizes = into->capsizes = 0;
    }
    cs_hist_merge(&into->bytes_hist, &from->bytes_hist);
  } else {
    for (size_t i = 0; i < from->nsizes; i++) agg_row_size(into, from->sizes[i].v, from->sizes[i].n);
  }
  free(from->sizes);
  if (from->timed && (!into->timed || from->dur_max > into->dur_max)) into->dur_max = from->dur_max;
  if (!into->exact_lost && !from->exact_lost && into->nexact + from->nexact <= AGG_EXACT) {
    for (size_t i = 0; i < from->nexact; i++) {
      XGROW(into->exact, into->nexact, into->capexact);
      into->exact[into->nexact++] = from->exact[i];
    }
  } else {
    agg_row_pour(P, into);
    for (size_t i = 0; i < from->nexact && !from->exact_lost; i++)
      if (!cs_hist_add(&into->dur, from->exact[i])) P->oom = true;
    if (from->exact_lost && !cs_hist_merge(&into->dur, &from->dur)) P->oom = true;
  }
  into->timed += from->timed;
  into->dur_sum += from->dur_sum;
  into->grouped += from->grouped;
  into->fbytes += from->fbytes;
  into->gbytes += from->gbytes;
  free(from->exact);
  cs_hist_free(&from->dur);
  cs_hist_free(&from->bytes_hist);
}

static int cmp_size(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
double report_agg_row_pct(struct agg_row *r, double p) {
  if (!r->timed) return 0;
  if (p >= 100) return r->dur_max;
  if (r->exact_lost) return cs_hist_percentile(&r->dur, p);
  qsort(r->exact, r->nexact, sizeof *r->exact, cmp_double);
  size_t k = (size_t)ceil(p * (double)r->nexact / 100.0);
  if (k < 1) k = 1;
  if (k > r->nexact) k = r->nexact;
  return r->exact[k - 1];
}

uint64_t report_agg_row_bytes(const struct agg_row *r) {
  if (r->sizes_overflow) return (uint64_t)llround(cs_hist_percentile(&r->bytes_hist, 50));
  uint64_t v[AGG_SIZES][2];
  if (!r->nsizes) return r->bytes_max;
  for (size_t i = 0; i < r->nsizes; i++) v[i][0] = r->sizes[i].v, v[i][1] = r->sizes[i].n;
  qsort(v, r->nsizes, sizeof v[0], cmp_size);
  size_t want = (r->count + 1) / 2, seen = 0; /* ceil(50 * n / 100) */
  if (want < 1) want = 1;
  for (size_t i = 0; i < r->nsizes; i++) {
    seen += v[i][1];
    if (seen >= want) return v[i][0];
  }
  return r->bytes_max;
}

static void finish(struct report_agg_priv *P, const struct cs_dumpset *set) {
  struct report_agg *agg = P->agg;
  agg_groups_flush(P); /* the groups the walk left open: their instances */
  /* who created each communicator (its "comm" init/split records): members with no seq, so a
   * rank that has no op record on a comm (stuck in, or before, its first call) is still a
   * member, and the hangs section names it as missing; then the shim's hang records: pending
   * ops (their order does not matter to the detector) */
  for (size_t i = 0; i < set->nfiles && P->det; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t j = 0; j < f->ncomms; j++) {
      const struct cs_comm_rec *c = &f->comms[j];
      if (!c->event || (strcmp(c->event, "init") != 0 && strcmp(c->event, "split") != 0) || c->rank < 0) continue;
      struct dense_comm *dc = agg_dense_comm_of(P, c->comm);
      struct cs_det_op d = {.comm = c->comm, .seq = -1, .comm_rank = agg_dense_of(P, dc, c->rank, c->size), .rank = f->hdr.rank, .host = f->hdr.host, .state = CS_DET_UNTIMED, .gap_us = -1};
      d.comm_size = (int)dc->n;
      if (cs_det_stream_instance(P->det, c->comm, -1, &d, 1)) P->oom = true;
    }
  }
  for (size_t i = 0; i < set->nfiles && P->det; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t j = 0; j < f->nhangs; j++) {
      const struct cs_hang_rec *h = &f->hangs[j];
      struct dense_comm *dc = agg_dense_comm_of(P, h->comm);
      struct cs_det_op d = {.comm = h->comm, .seq = h->seq, .comm_rank = agg_dense_of(P, dc, h->comm_rank, h->comm_size), .rank = h->rank >= 0 ? h->rank : f->hdr.rank, .host = f->hdr.host, .enqueue_ns = h->enqueue_ns, .state = CS_DET_PENDING, .gap_us = -1, .gpu_start = cs_det_hang_start(h->started, h->start_known)};
      d.comm_size = (int)dc->n;
      if (h->seq >= 0 && cs_det_stream_instance(P->det, h->comm, h->seq, &d, 1)) P->oom = true;
    }
  }
  if (!P->det || cs_det_stream_finish(P->det, &agg->det) != 0) {
    fputs("collscope report: detection out of memory\n", stderr);
    memset(&agg->det, 0, sizeof agg->det);
  }
  struct cs_det_result *dr = &agg->det; /* back to the records' comm ranks and sizes */
  for (size_t i = 0; i < dr->nstragglers; i++) {
    struct cs_det_straggler *s = &dr->stragglers[i];
    if (s->comm_rank >= 0) s->comm_rank = agg_real_of(P, s->comm, s->comm_rank);
    s->comm_size = agg_declared_of(P, s->comm, s->comm_size);
  }
  for (size_t i = 0; i < dr->nranks; i++) dr->ranks[i].comm_rank = agg_real_of(P, dr->ranks[i].comm, dr->ranks[i].comm_rank);
  for (size_t i = 0; i < dr->nhangs; i++) dr->hangs[i].comm_size = agg_declared_of(P, dr->hangs[i].comm, dr->hangs[i].comm_size);
  /* COLLSCOPE_RECORD=summary: the balance section's members and the pipeline schedule from the
   * gaps lines, before the schedule judges */
  agg_balance_from_gaps(P, set);
  /* pipelines (analysis/schedule.c): a straggler at a cross-stage communicator is judged
   * against its own stage's peers; the lateness the stage order explains is no finding */
  agg->sched_explained = cs_sched_judge(report_balance_schedule(agg->balance), dr);
  /* a link finding whose lateness is its wait for a flagged peer moves to that peer */
  cs_pwait_attribute(report_steps_pwait(agg->steps), dr);
  agg->peer_moved = cs_pwait_moved(report_steps_pwait(agg->steps), &agg->peer_explained);
  /* a finding whose lateness is the rank's longer communication elsewhere is no finding */
  cs_celse_judge(report_steps_celse(agg->steps), report_steps_pwait(agg->steps), dr,
                 report_balance_schedule(agg->balance));
  agg->comm_moved = cs_celse_explained(report_steps_celse(agg->steps), &agg->comm_explained);
  agg->cost = report_steps_cost(agg->steps);
  agg->late_records = cs_walk_late(P->walk);

  agg_summaries(P, set);
  struct row_ent *rows = NULL;
  struct comm_ent *comms = NULL;
  struct crank_ent *cranks = NULL;
  for (unsigned w = 0; w < P->nw; w++) {
    struct worker *W = &P->w[w];
    agg->filter_matched |= W->matched;
    agg->window_ops += W->window_ops;
    struct agg_counts *c = &agg->counts, *d = &W->counts;
    c->ops += d->ops, c->errors += d->errors, c->timed += d->timed, c->timed_profiler += d->timed_profiler;
    c->timed_host_span += d->timed_host_span, c->captured += d->captured, c->host_timed += d->host_timed;
    c->unknown_timing += d->unknown_timing, c->sampled_out += d->sampled_out;
    struct row_ent *e, *t;
    HASH_ITER(hh, W->rows, e, t) {
      HASH_DEL(W->rows, e);
      struct row_ent *into;
      HASH_FIND(hh, rows, &e->k, sizeof e->k, into);
      if (into) {
        merge_row(P, &into->r, &e->r);
        free(e);
      } else {
        HASH_ADD(hh, rows, k, sizeof e->k, e);
      }
    }
    struct comm_ent *ce, *ct;
    HASH_ITER(hh, W->comms, ce, ct) {
      HASH_DEL(W->comms, ce);
      struct comm_ent *into;
      HASH_FIND(hh, comms, &ce->comm, sizeof ce->comm, into);
      if (into) {
        into->c.ops += ce->c.ops;
        into->c.bytes += ce->c.bytes;
        into->c.gpu_ms += ce->c.gpu_ms;
        if (ce->c.size > into->c.size) into->c.size = ce->c.size;
        free(ce);
      } else {
        HASH_ADD(hh, comms, comm, sizeof ce->comm, ce);
      }
    }
    struct crank_ent *re, *rt;
    HASH_ITER(hh, W->cranks, re, rt) {
      HASH_DEL(W->cranks, re);
      struct crank_ent *into;
      HASH_FIND(hh, cranks, &re->k, sizeof re->k, into);
      if (into)
        free(re);
      else
        HASH_ADD(hh, cranks, k, sizeof re->k, re);
    }
  }
  agg->nrows = HASH_COUNT(rows);
  agg->rows = xcalloc(agg->nrows, sizeof *agg->rows);
  size_t k = 0;
  struct row_ent *e, *t;
  HASH_ITER(hh, rows, e, t) {
    HASH_DEL(rows, e);
    agg->rows[k++] = e->r;
    free(e);
  }
  if (agg->nrows) qsort(agg->rows, agg->nrows, sizeof *agg->rows, cmp_row);
  agg->ncomms = HASH_COUNT(comms);
  agg->comms = xcalloc(agg->ncomms, sizeof *agg->comms);
  k = 0;
  struct comm_ent *ce, *ct;
  HASH_ITER(hh, comms, ce, ct) {
    HASH_DEL(comms, ce);
    agg->comms[k++] = ce->c;
    free(ce);
  }
  if (agg->ncomms) qsort(agg->comms, agg->ncomms, sizeof *agg->comms, cmp_comm);
  struct crank_ent *re, *rt;
  HASH_ITER(hh, cranks, re, rt) {
    HASH_DEL(cranks, re);
    struct agg_comm key = {.comm = re->k.comm};
    struct agg_comm *c = agg->ncomms ? bsearch(&key, agg->comms, agg->ncomms, sizeof key, cmp_comm) : NULL;
    if (c) c->ranks++;
    free(re);
  }
  struct inst_ent *ie, *it;
  HASH_ITER(hh, P->inst, ie, it) {
    HASH_DEL(P->inst, ie);
    struct agg_comm key = {.comm = ie->comm};
    struct agg_comm *c = agg->ncomms ? bsearch(&key, agg->comms, agg->ncomms, sizeof key, cmp_comm) : NULL;
    if (c) c->instances += ie->n;
    free(ie);
  }
}

struct cs_dumpset *report_agg_run(const char *path, const char *job, const char *op_filter, unsigned jobs, size_t budget,
                                  const struct cs_det_params *detp, struct report_agg *agg) {
  return report_agg_run_split(path, job, op_filter, jobs, budget, detp, false, agg);
}
struct cs_dumpset *report_agg_run_split(const char *path, const char *job, const char *op_filter, unsigned jobs,
                                        size_t budget, const struct cs_det_params *detp, bool by_model,
                                        struct report_agg *agg) {
  memset(agg, 0, sizeof *agg);
  agg->op_filter = op_filter;
  agg->by_model = by_model;
  struct report_agg_priv *P = xcalloc(1, sizeof *P);
  agg->priv = P;
  P->agg = agg;
  P->nw = jobs ? jobs : 1;
  P->w = xcalloc(P->nw, sizeof *P->w);
  P->det = cs_det_stream_new(detp, CS_DET_HANG_PENDING);
  agg->views = report_views_new(op_filter);
  agg->balance = report_balance_new();
  agg->steps = report_steps_gather_new();
  struct cs_stream_ops ops = {.ctx = P, .jobs = P->nw, .budget = budget, .begin = on_begin, .op = agg_on_op, .round = agg_on_round};
  struct cs_dumpset *set = cs_dumpset_stream(path, job, &ops);
  agg_walk_join(P);
  if (set->whole) { /* salvage to merge: the whole set, then the same callbacks */
    cs_dumpset_free(set);
    set = cs_dumpset_load_jobs(path, job, P->nw); /* -j holds here too */
    if (!set->fatal) {
      size_t nf = 0;
      for (size_t i = 0; i < set->nfiles; i++)
        if (set->files[i].read_index + 1 > nf) nf = set->files[i].read_index + 1;
      on_begin(P, nf);
      bool *done = xcalloc(nf, sizeof *done);
      for (size_t i = 0; i < set->nfiles; i++) {
        const struct cs_dumpfile *f = &set->files[i];
        for (size_t k = 0; k < f->nops; k++) agg_on_op(P, 0, f->read_index, f, &f->ops[k]);
      }
      for (size_t i = 0; i < nf; i++) done[i] = true;
      agg_on_round(P, done, nf);
      free(done);
    }
  }
  cs_dumpset_print_errors(set, stderr);
  if (set->fatal) {
    cs_dumpset_free(set);
    return NULL;
  }
  finish(P, set);
  if (P->oom) fputs("collscope report: out of memory in an analysis; its section may be incomplete\n", stderr);
  return set;
}

/* the reading threads' tables and the instance counts finish() did not merge: a set found
 * fatal (a newer schema, several jobs) after its first files were streamed */
static void free_unmerged(struct report_agg_priv *P) {
  for (unsigned w = 0; w < P->nw; w++) {
    struct worker *W = &P->w[w];
    struct row_ent *e, *t;
    HASH_ITER(hh, W->rows, e, t) {
      HASH_DEL(W->rows, e);
      cs_hist_free(&e->r.dur);
      cs_hist_free(&e->r.bytes_hist);
      free(e->r.exact);
      free(e->r.sizes);
      free(e);
    }
    struct comm_ent *ce, *ct;
    HASH_ITER(hh, W->comms, ce, ct) {
      HASH_DEL(W->comms, ce);
      free(ce);
    }
    struct crank_ent *re, *rt;
    HASH_ITER(hh, W->cranks, re, rt) {
      HASH_DEL(W->cranks, re);
      free(re);
    }
  }
  struct inst_ent *ie, *it;
  HASH_ITER(hh, P->inst, ie, it) {
    HASH_DEL(P->inst, ie);
    free(ie);
  }
}

void report_agg_free(struct report_agg *agg) {
  struct report_agg_priv *P = agg->priv;
  for (size_t i = 0; i < agg->nrows; i++) {
    cs_hist_free(&agg->rows[i].dur);
    cs_hist_free(&agg->rows[i].bytes_hist);
    free(agg->rows[i].exact);
    free(agg->rows[i].sizes);
  }
  free(agg->rows);
  free(agg->comms);
  free(agg->files);
  free(agg->sdc.items);
  cs_det_result_free(&agg->det);
  report_views_free(agg->views);
  report_balance_free(agg->balance);
  report_steps_gather_free(agg->steps);
  if (P) {
    for (size_t i = 0; i < P->nf; i++) {
      free(P->fs[i].buf);
      free(P->fs[i].pbuf);
    }
    free(P->pdone);
    free(P->fs);
    free_unmerged(P);
    free(P->w);
    cs_walk_free(P->walk);
    cs_det_stream_free(P->det);
    agg_groups_free(P);
    free(P->mem);
    free(P->dm);
    struct dense_ent *e, *t;
    HASH_ITER(hh, P->dense, e, t) {
      HASH_DEL(P->dense, e);
      free(e);
    }
    struct dense_comm *c, *ct;
    HASH_ITER(hh, P->dcomms, c, ct) {
      HASH_DEL(P->dcomms, c);
      free(c->real);
      free(c);
    }
    free(P);
  }
  memset(agg, 0, sizeof *agg);
}
