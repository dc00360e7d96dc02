/* tools/report/report_agg_record.c: the report's per-record tables, filled on the reading threads:
 * rows per (op, comm size, size bucket) with their durations and sizes, communicators and
 * their ranks, the counts, and each file's records kept for the walk. */
#include "report_agg_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "collscope/schema.h"
#include "collscope/sdc.h"
#include "cli.h"
#include "dump/instwalk.h"
#include "report_views.h"
#include "xalloc.h"

static int bucket_of(uint64_t bytes) { return bytes ? 63 - __builtin_clzll(bytes) : -1; }

/* the row's kept durations into its histogram: from now on every one goes there */
void agg_row_pour(struct report_agg_priv *P, struct agg_row *r) {
  if (r->exact_lost) return;
  for (size_t i = 0; i < r->nexact; i++)
    if (!cs_hist_add(&r->dur, r->exact[i])) P->oom = true;
  free(r->exact);
  r->exact = NULL;
  r->nexact = r->capexact = 0;
  r->exact_lost = true;
}
/* one timed record's duration */
void agg_row_dur(struct report_agg_priv *P, struct agg_row *r, double v) {
  if (!r->timed || v > r->dur_max) r->dur_max = v;
  r->dur_sum += v;
  r->timed++;
  if (!r->exact_lost && r->nexact == AGG_EXACT) agg_row_pour(P, r);
  if (r->exact_lost) {
    if (!cs_hist_add(&r->dur, v)) P->oom = true;
    return;
  }
  XGROW(r->exact, r->nexact, r->capexact);
  r->exact[r->nexact++] = v;
}
void agg_row_size(struct agg_row *r, uint64_t v, size_t n) {
  if (!n) return;
  if (r->sizes_overflow) {
    cs_hist_add_n(&r->bytes_hist, (double)v, n);
    return;
  }
  for (size_t i = 0; i < r->nsizes; i++)
    if (r->sizes[i].v == v) {
      r->sizes[i].n += n;
      return;
    }
  if (r->nsizes < AGG_SIZES) {
    XGROW(r->sizes, r->nsizes, r->capsizes);
    r->sizes[r->nsizes].v = v;
    r->sizes[r->nsizes++].n = n;
    return;
  }
  r->sizes_overflow = true; /* too many sizes: every one into the histogram from now on */
  for (size_t i = 0; i < r->nsizes; i++) cs_hist_add_n(&r->bytes_hist, (double)r->sizes[i].v, r->sizes[i].n);
  free(r->sizes);
  r->sizes = NULL;
  r->nsizes = r->capsizes = 0;
  cs_hist_add_n(&r->bytes_hist, (double)v, n);
}

struct cs_walk_rec report_agg_walk_rec(const struct cs_dumpfile *f, const struct cs_op_rec *o, uint32_t file) {
  return (struct cs_walk_rec){
      .det = {.comm = o->comm,
              .seq = o->seq,
              .comm_size = o->comm_size,
              .comm_rank = o->comm_rank,
              .rank = o->rank >= 0 ? o->rank : f->hdr.rank,
              .host = f->hdr.host,
              .start_ns = o->start_ns,
              .end_ns = o->end_ns,
              .enqueue_ns = o->enqueue_ns,
              .p2p = o->op >= 0 && cs_op_table[o->op].cls == CS_CLASS_P2P,
              .bytes = o->bytes,
              .stream = o->stream,
              .group = (uint64_t)o->group,
              /* a count past 2^32 - 1 is held there: still a group that shares a span */
              .group_ops = o->group_ops > UINT32_MAX ? UINT32_MAX : (uint32_t)o->group_ops,
              .peer = o->peer,
              .recv = o->op == CS_OP_Recv},
      .op = o->op,
      .root = o->root,
      .status = o->status,
      .rec_rank = o->rank,
      .file = file,
      .op_name = o->op_name,
      .dtype = o->dtype,
      .redop = o->redop,
      .count = o->count,
      .sdc_checked = o->sdc_checked,
      .sdc_fp = o->sdc_fp,
      .sdc_in_sum = o->sdc_in_sum,
      .sdc_in_abs = o->sdc_in_abs,
      .sdc_out_sum = o->sdc_out_sum};
}

/* the op's timing source in the worker's counts */
static void count_timing(struct agg_counts *c, const struct cs_op_rec *o, bool err) {
  c->ops++;
  if (err) c->errors++;
  switch (o->timing) {
  case CSD_TIMING_GPU_EVENT:
    c->timed++;
    if (o->timing_name && !strcmp(o->timing_name, "profiler"))
      c->timed_profiler++;
    else if (o->timing_name && !strcmp(o->timing_name, "host_span"))
      c->timed_host_span++;
    break;
  case CSD_TIMING_CAPTURED: c->captured++; break;
  case CSD_TIMING_HOST: c->host_timed++; break;
  case CSD_TIMING_SAMPLED_OUT: c->sampled_out++; break;
  case CSD_TIMING_ERROR: break;
  default: c->unknown_timing++; break;
  }
}

/* the row of key k in the worker's table, made when new */
struct row_ent *agg_row_find(struct worker *W, const struct row_key *k, const char *op_name, int op, uint64_t bytes) {
  struct row_ent *re;
  HASH_FIND(hh, W->rows, k, sizeof *k, re);
  if (!re) {
    re = xcalloc(1, sizeof *re);
    re->k = *k;
    re->r.op_name = op_name;
    re->r.op = op;
    re->r.comm_size = k->comm_size;
    re->r.bucket = k->bucket;
    re->r.model = k->model;
    re->r.group_ops = k->group_ops;
    re->r.bytes_min = re->r.bytes_max = bytes;
    HASH_ADD(hh, W->rows, k, sizeof *k, re);
  }
  return re;
}

/* the op table's row of (op, comm size, size bucket[, GPU model]) in the worker's table */
static void add_to_row(struct report_agg_priv *P, struct worker *W, const struct cs_dumpfile *f, const struct cs_op_rec *o,
                       bool timed, bool grouped) {
  struct row_key k;
  memset(&k, 0, sizeof k);
  k.op_name = o->op_name;
  k.comm_size = o->comm_size;
  k.bucket = bucket_of(o->bytes);
  if (P->agg->by_model) k.model = f->hdr.gpu_name && *f->hdr.gpu_name ? f->hdr.gpu_name : "unknown";
  struct agg_row *r = &agg_row_find(W, &k, o->op_name, o->op, o->bytes)->r;
  r->grouped += grouped;
  r->count++;
  if (o->bytes < r->bytes_min) r->bytes_min = o->bytes;
  if (o->bytes > r->bytes_max) r->bytes_max = o->bytes;
  agg_row_size(r, o->bytes, 1);
  if (timed) agg_row_dur(P, r, o->dur_us);
}

/* the communicator's and the (communicator, comm rank)'s entries in the worker's tables,
 * through the file's cache of its last two of each */
static void add_to_comm(struct fstate *F, struct worker *W, unsigned worker, const struct cs_op_rec *o, bool timed,
                        double dur_us) {
  if (F->cw != worker + 1) {
    memset(F->cc, 0, sizeof F->cc);
    memset(F->cr, 0, sizeof F->cr);
    F->cw = worker + 1;
  }
  struct comm_ent *ce = F->cc[0] && F->cc[0]->comm == o->comm   ? F->cc[0]
                        : F->cc[1] && F->cc[1]->comm == o->comm ? F->cc[1]
                                                                : NULL;
  if (!ce) {
    HASH_FIND(hh, W->comms, &o->comm, sizeof o->comm, ce);
    if (!ce) {
      ce = xcalloc(1, sizeof *ce);
      ce->comm = ce->c.comm = o->comm;
      HASH_ADD(hh, W->comms, comm, sizeof ce->comm, ce);
    }
    F->cc[1] = F->cc[0];
    F->cc[0] = ce;
  }
  ce->c.ops++;
  if (o->comm_size > ce->c.size) ce->c.size = o->comm_size;
  ce->c.bytes += o->bytes;
  if (timed) ce->c.gpu_ms += dur_us / 1e3;
  struct crank_ent *cr = F->cr[0] && F->cr[0]->k.comm == o->comm && F->cr[0]->k.comm_rank == o->comm_rank   ? F->cr[0]
                         : F->cr[1] && F->cr[1]->k.comm == o->comm && F->cr[1]->k.comm_rank == o->comm_rank ? F->cr[1]
                                                                                                            : NULL;
  if (!cr) {
    struct crank_key ck;
    memset(&ck, 0, sizeof ck);
    ck.comm = o->comm;
    ck.comm_rank = o->comm_rank;
    HASH_FIND(hh, W->cranks, &ck, sizeof ck, cr);
    if (!cr) {
      cr = xcalloc(1, sizeof *cr);
      cr->k = ck;
      HASH_ADD(hh, W->cranks, k, sizeof ck, cr);
    }
    F->cr[1] = F->cr[0];
    F->cr[0] = cr;
  }
}

/* the file's figures: ops, errors, bytes, GPU time, and the comm ranks of its largest
 * communicator */
static void add_to_file(struct agg_file *af, const struct cs_op_rec *o, bool err, bool timed, double dur_us) {
  if (o->comm_rank >= 0 && o->comm_size > 0 && o->comm_rank < o->comm_size &&
      (o->comm_size > af->rcomm_size || (o->comm_size == af->rcomm_size && o->comm == af->rcomm))) {
    if (o->comm_size > af->rcomm_size || o->comm != af->rcomm) { /* a larger communicator: start again */
      memset(af->crank_bits, 0, sizeof af->crank_bits);
      af->rcomm = o->comm, af->rcomm_size = o->comm_size, af->ncrank = 0;
      af->crank_lo = af->crank_hi = o->comm_rank;
    }
    if (o->comm_rank < af->crank_lo) af->crank_lo = o->comm_rank;
    if (o->comm_rank > af->crank_hi) af->crank_hi = o->comm_rank;
    if (o->comm_rank < AGG_CRANK_BITS) {
      uint64_t bit = (uint64_t)1 << (o->comm_rank % 64);
      if (!(af->crank_bits[o->comm_rank / 64] & bit)) af->crank_bits[o->comm_rank / 64] |= bit, af->ncrank++;
    }
  }
  af->ops++;
  af->errors += err;
  af->bytes += o->bytes;
  if (timed) af->gpu_ms += dur_us / 1e3;
}

/* the op's rows and counts in the worker's tables, the communicator's and the file's */
static void add_to_tables(struct report_agg_priv *P, struct worker *W, struct fstate *F, unsigned worker, size_t file,
                          const struct cs_dumpfile *f, const struct cs_op_rec *o) {
  if (o->in_window) { /* a flight-recorder window's detail: its op is in a summary line */
    W->window_ops++;
    return;
  }
  bool err = report_op_is_error(o);
  count_timing(&W->counts, o, err);
  bool timed = o->timing == CSD_TIMING_GPU_EVENT;
  /* a member of a group that shares its group's span has no time of its own: counted in its
   * op's row, timed in its group's row; the communicator's and the file's GPU time get its
   * share of the span */
  bool grouped = o->group != 0 && o->group_ops > 1;
  double dur = grouped ? o->dur_us / (double)o->group_ops : o->dur_us;
  if (grouped) agg_group_member(P, W, F, f, o);

  add_to_row(P, W, f, o, timed && !grouped, grouped);
  add_to_comm(F, W, worker, o, timed, dur);
  add_to_file(&P->agg->files[file], o, err, timed, dur);
}

/* one record: kept for the walk, counted in the tables, then its compute gap */
void agg_on_op(void *ctx, unsigned worker, size_t file, const struct cs_dumpfile *f, const struct cs_op_rec *o) {
  struct report_agg_priv *P = ctx;
  struct worker *W = &P->w[worker < P->nw ? worker : 0];
  struct fstate *F = &P->fs[file];
  const char *filter = P->agg->op_filter;
  bool counts = !filter || strcmp(o->op_name, filter) == 0;
  W->matched |= filter && counts;
  int state = report_op_det_state(o);
  struct cs_walk_rec *w = NULL;
  if (o->seq >= 0) {
    XGROW(F->buf, F->n, F->cap);
    w = &F->buf[F->n++];
    *w = report_agg_walk_rec(f, o, (uint32_t)file);
    w->state = state;
    w->counts = counts;
  } /* seq < 0: no instance; the detector does not see it (as cli_detect_dumpset) */
  if (counts) add_to_tables(P, W, F, worker, file, f, o);
  /* this process's compute gap: the idle time of the op's stream since the process's previous
   * op of the same communicator there (include/collscope/compute_gap.h). An op that ran untimed
   * in between (sampled out of the CUDA-event path, host-timed) makes the span no compute gap:
   * with 1 in 64 small collectives timed it would hold 63 collectives, the waits for the
   * straggler included, on every rank alike (docs/detection.md). */
  double gap = -1;
  if (state == CS_DET_DONE)
    gap = cs_gap_timed(&F->gaps, o->comm, o->stream, o->start_ns, o->end_ns);
  else if (state == CS_DET_ENTERED || state == CS_DET_UNTIMED)
    cs_gap_untimed(&F->gaps, o->stream);
  if (w) w->gap_us = gap;
}
