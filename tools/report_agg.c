/* tools/report_agg.c: the report's figures gathered while the dumps stream (report_agg.h). */
#include "report_agg.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "collscope/schema.h"
#include "collscope/sdc.h"
#include "cli.h"
#include "instwalk.h"
#include "report_views.h"
#include "xalloc.h"

#define XGROW(v, n, cap) \
  do { \
    if ((n) == (cap)) { \
      (cap) = (cap) ? 2 * (cap) : 16; \
      (v) = xrealloc((v), (cap) * sizeof *(v)); \
    } \
  } while (0)

struct row_key {
  const char *op_name;
  int comm_size, bucket;
};
struct row_ent {
  struct row_key k;
  struct agg_row r;
  UT_hash_handle hh;
};
struct comm_ent {
  uint64_t comm;
  struct agg_comm c;
  UT_hash_handle hh;
};
struct crank_key {
  uint64_t comm;
  int comm_rank;
};
struct crank_ent {
  struct crank_key k;
  UT_hash_handle hh;
};
struct inst_ent {
  uint64_t comm;
  size_t n;
  UT_hash_handle hh;
};
/* The detector sees a communicator's ranks renumbered 0..n-1 over the ranks that have records
 * (as cli_detect_dumpset does): its memory follows the ranks seen, never a comm_size or
 * comm_rank a record claims. Numbers are given in order of first appearance. */
struct dense_key {
  uint64_t comm;
  int real;
};
struct dense_ent {
  struct dense_key k;
  int dense;
  UT_hash_handle hh;
};
struct dense_comm {
  uint64_t comm;
  int declared;
  int *real;
  size_t n, cap;
  UT_hash_handle hh;
};

struct worker { /* one reading thread's tables */
  struct row_ent *rows;
  struct comm_ent *comms;
  struct crank_ent *cranks;
  struct agg_counts counts;
  bool matched;
};

struct fstate { /* one file's state across rounds */
  struct cs_walk_rec *buf;
  size_t n, cap; /* this round's records (seq >= 0) */
  struct cs_walk_rec *pbuf;
  size_t pn, pcap; /* the last round's, walked while this one is read */
  bool walked_done;
  /* the worker's table entries this file used last (most records repeat a few): valid while
   * the same worker reads the file (cw = worker + 1) */
  unsigned cw;
  struct comm_ent *cc[2];
  struct crank_ent *cr[2];
  bool has_prev;
  int64_t prev_end;
};

struct report_agg_priv {
  struct report_agg *agg;
  struct worker *w;
  unsigned nw;
  struct fstate *fs;
  size_t nf;
  struct cs_walk *walk;
  struct cs_det_stream *det;
  struct inst_ent *inst; /* instances per comm (with a member passing the filter) */
  struct cs_sdc_member *mem;
  size_t memcap;
  struct cs_det_member *dm;
  size_t dmcap;
  struct dense_ent *dense;
  struct dense_comm *dcomms;
  bool oom;
  /* the walk of the last round's records runs on its own thread while the next is read */
  pthread_t bg;
  bool bg_on;
  bool *pdone; /* per file: its last records are in pbuf */
};

static struct dense_comm *dense_comm_of(struct report_agg_priv *P, uint64_t comm) {
  struct dense_comm *c;
  HASH_FIND(hh, P->dcomms, &comm, sizeof comm, c);
  if (!c) {
    c = xcalloc(1, sizeof *c);
    c->comm = comm;
    HASH_ADD(hh, P->dcomms, comm, sizeof comm, c);
  }
  return c;
}
/* the dense number of comm_rank `real` (-1 for a negative one), given one if new */
static int dense_of(struct report_agg_priv *P, struct dense_comm *c, int real, int declared) {
  if (declared > c->declared) c->declared = declared;
  if (real < 0) return -1;
  struct dense_key k;
  memset(&k, 0, sizeof k);
  k.comm = c->comm;
  k.real = real;
  struct dense_ent *e;
  HASH_FIND(hh, P->dense, &k, sizeof k, e);
  if (e) return e->dense;
  e = xcalloc(1, sizeof *e);
  e->k = k;
  XGROW(c->real, c->n, c->cap);
  c->real[c->n] = real;
  e->dense = (int)c->n++;
  HASH_ADD(hh, P->dense, k, sizeof k, e);
  return e->dense;
}
static int real_of(struct report_agg_priv *P, uint64_t comm, int dense) {
  struct dense_comm *c;
  HASH_FIND(hh, P->dcomms, &comm, sizeof comm, c);
  return c && dense >= 0 && (size_t)dense < c->n ? c->real[dense] : dense;
}
static int declared_of(struct report_agg_priv *P, uint64_t comm, int size) {
  struct dense_comm *c;
  HASH_FIND(hh, P->dcomms, &comm, sizeof comm, c);
  return c && c->declared > size ? c->declared : size;
}

static int bucket_of(uint64_t bytes) { return bytes ? 63 - __builtin_clzll(bytes) : -1; }
static bool is_error(const struct cs_op_rec *o) { return o->timing == CSD_TIMING_ERROR || o->status != 0; }

/* the row's kept durations into its histogram: from now on every one goes there */
static void row_pour(struct report_agg_priv *P, struct agg_row *r) {
  if (r->exact_lost) return;
  for (size_t i = 0; i < r->nexact; i++)
    if (!cs_hist_add(&r->dur, r->exact[i])) P->oom = true;
  free(r->exact);
  r->exact = NULL;
  r->nexact = r->capexact = 0;
  r->exact_lost = true;
}
/* one timed record's duration */
static void row_dur(struct report_agg_priv *P, struct agg_row *r, double v) {
  if (!r->timed || v > r->dur_max) r->dur_max = v;
  r->timed++;
  if (!r->exact_lost && r->nexact == AGG_EXACT) row_pour(P, r);
  if (r->exact_lost) {
    if (!cs_hist_add(&r->dur, v)) P->oom = true;
    return;
  }
  XGROW(r->exact, r->nexact, r->capexact);
  r->exact[r->nexact++] = v;
}

static void on_instance(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n);

/* the files are listed: per-file state */
static void on_begin(void *ctx, size_t nf) {
  struct report_agg_priv *P = ctx;
  P->nf = nf;
  P->fs = xcalloc(nf, sizeof *P->fs);
  P->pdone = xcalloc(nf, sizeof *P->pdone);
  P->agg->files = xcalloc(nf, sizeof *P->agg->files);
  P->walk = cs_walk_new(nf, on_instance, P);
  if (!P->walk) {
    fputs("collscope: out of memory\n", stderr);
    exit(1);
  }
}

/* ---------- per record (reading threads) ---------- */

static void row_size(struct agg_row *r, uint64_t v, size_t n) {
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

static void on_op(void *ctx, unsigned worker, size_t file, const struct cs_dumpfile *f, const struct cs_op_rec *o) {
  struct report_agg_priv *P = ctx;
  struct worker *W = &P->w[worker < P->nw ? worker : 0];
  struct fstate *F = &P->fs[file];
  const char *filter = P->agg->op_filter;
  bool counts = !filter || strcmp(o->op_name, filter) == 0;
  W->matched |= filter && counts;
  bool err = is_error(o);
  int state = err ? CS_DET_FAILED : o->timing == CSD_TIMING_GPU_EVENT ? CS_DET_DONE
                                                                      : CS_DET_UNTIMED;
  double gap = -1; /* this process's compute gap: start - its previous timed op's end */
  if (state == CS_DET_DONE) {
    if (F->has_prev) {
      int64_t g = o->start_ns - F->prev_end;
      gap = g > 0 ? (double)g / 1e3 : 0;
    }
    F->has_prev = true;
    F->prev_end = o->end_ns;
  }
  int rank = o->rank >= 0 ? o->rank : f->hdr.rank;
  if (o->seq >= 0) {
    XGROW(F->buf, F->n, F->cap);
    F->buf[F->n++] = (struct cs_walk_rec){
        .comm = o->comm, .seq = o->seq, .comm_rank = o->comm_rank, .comm_size = o->comm_size, .rank = rank, .op = o->op, .root = o->root, .status = o->status, .det_state = state, .file = (uint32_t)file, .counts = counts, .p2p = o->op >= 0 && cs_op_table[o->op].cls == CS_CLASS_P2P, .op_name = o->op_name, .dtype = o->dtype, .redop = o->redop, .host = f->hdr.host, .count = o->count, .bytes = o->bytes, .start_ns = o->start_ns, .end_ns = o->end_ns, .enqueue_ns = o->enqueue_ns, .gap_us = gap, .sdc_checked = o->sdc_checked, .rec_rank = o->rank, .sdc_fp = o->sdc_fp, .sdc_in_sum = o->sdc_in_sum, .sdc_in_abs = o->sdc_in_abs, .sdc_out_sum = o->sdc_out_sum};
  } /* seq < 0: no instance; the detector does not see it (as cli_detect_dumpset) */
  if (!counts) return;

  struct agg_counts *c = &W->counts;
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
  case CSD_TIMING_ERROR: break;
  default: c->unknown_timing++; break;
  }
  bool timed = o->timing == CSD_TIMING_GPU_EVENT;

  struct row_key k;
  memset(&k, 0, sizeof k);
  k.op_name = o->op_name;
  k.comm_size = o->comm_size;
  k.bucket = bucket_of(o->bytes);
  struct row_ent *re;
  HASH_FIND(hh, W->rows, &k, sizeof k, re);
  if (!re) {
    re = xcalloc(1, sizeof *re);
    re->k = k;
    re->r.op_name = o->op_name;
    re->r.op = o->op;
    re->r.comm_size = o->comm_size;
    re->r.bucket = k.bucket;
    re->r.bytes_min = re->r.bytes_max = o->bytes;
    HASH_ADD(hh, W->rows, k, sizeof k, re);
  }
  struct agg_row *r = &re->r;
  r->count++;
  if (o->bytes < r->bytes_min) r->bytes_min = o->bytes;
  if (o->bytes > r->bytes_max) r->bytes_max = o->bytes;
  row_size(r, o->bytes, 1);
  if (timed) row_dur(P, r, o->dur_us);

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
  if (timed) ce->c.gpu_ms += o->dur_us / 1e3;
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

  struct agg_file *af = &P->agg->files[file];
  af->ops++;
  af->errors += err;
  af->bytes += o->bytes;
  if (timed) af->gpu_ms += o->dur_us / 1e3;
}

/* ---------- per instance (main thread, after each round) ---------- */

static void sdc_instance(struct report_agg_priv *P, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
  const char *filter = P->agg->op_filter;
  bool mixed = false, any = false;
  for (size_t k = 0; k < n; k++) {
    mixed |= m[k].op_name != m[0].op_name; /* interned */
    any |= m[k].sdc_checked != 0;
  }
  if (!any || mixed || (filter && strcmp(m[0].op_name, filter) != 0)) return;
  if (n > P->memcap) {
    P->memcap = 2 * n;
    P->mem = xrealloc(P->mem, P->memcap * sizeof *P->mem);
  }
  int csize = 0;
  size_t nm = 0;
  for (size_t k = 0; k < n; k++) {
    if (m[k].comm_size > csize) csize = m[k].comm_size;
    if (nm && P->mem[nm - 1].comm_rank == m[k].comm_rank) continue; /* duplicate rank: keep the first */
    P->mem[nm++] = (struct cs_sdc_member){m[k].comm_rank, m[k].status == 0 ? m[k].sdc_checked : 0, m[k].sdc_fp, m[k].sdc_in_sum,
                                          m[k].sdc_in_abs, m[k].sdc_out_sum};
  }
  const struct cs_walk_rec *o0 = &m[0];
  struct cs_sdc_instance si = {o0->op, cli_sdc_dtype(o0->dtype), cli_sdc_redop(o0->redop), o0->root, csize,
                               (uint64_t)(o0->count > 0 ? o0->count : 0), nm, P->mem};
  struct cs_sdc_finding f[64];
  struct cs_sdc_outcome oc;
  size_t nf = cs_sdc_compare(&si, f, 64, &oc);
  struct agg_sdc *out = &P->agg->sdc;
  out->compared++;
  out->fp_checked += (size_t)oc.fp_checked;
  out->sum_checked += (size_t)oc.sum_checked;
  out->skipped_nonfinite += (size_t)oc.sum_skipped_nonfinite;
  out->skipped_incomplete += (size_t)oc.sum_skipped_incomplete;
  for (size_t k = 0; k < nf && k < 64; k++) {
    XGROW(out->items, out->nitems, out->cap);
    struct agg_sdc_item *it = &out->items[out->nitems++];
    *it = (struct agg_sdc_item){comm, seq, o0->op_name, o0->dtype, NULL, o0->bytes, f[k].check,
                                f[k].suspect, -1, f[k].got, f[k].want, f[k].tol};
    for (size_t j = 0; j < n && f[k].suspect >= 0; j++)
      if (m[j].comm_rank == f[k].suspect) {
        it->suspect_rank = m[j].rec_rank;
        it->host = m[j].host;
        break;
      }
  }
}

static void on_instance(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
  struct report_agg_priv *P = ctx;
  bool counted = false;
  for (size_t k = 0; k < n && !counted; k++) counted = m[k].counts;
  if (counted) {
    struct inst_ent *ie;
    HASH_FIND(hh, P->inst, &comm, sizeof comm, ie);
    if (!ie) {
      ie = xcalloc(1, sizeof *ie);
      ie->comm = comm;
      HASH_ADD(hh, P->inst, comm, sizeof comm, ie);
    }
    ie->n++;
  }
  if (n > P->dmcap) {
    P->dmcap = 2 * n;
    P->dm = xrealloc(P->dm, P->dmcap * sizeof *P->dm);
  }
  struct dense_comm *dc = dense_comm_of(P, comm);
  for (size_t k = 0; k < n; k++)
    P->dm[k] = (struct cs_det_member){.comm_rank = dense_of(P, dc, m[k].comm_rank, m[k].comm_size),
                                      .rank = m[k].rank,
                                      .host = m[k].host,
                                      .start_ns = m[k].start_ns,
                                      .end_ns = m[k].end_ns,
                                      .enqueue_ns = m[k].enqueue_ns,
                                      .state = m[k].det_state,
                                      .p2p = m[k].p2p,
                                      .bytes = m[k].bytes,
                                      .gap_us = m[k].gap_us};
  for (size_t k = 0; k < n; k++) P->dm[k].comm_size = (int)dc->n;
  for (size_t i = 1; i < n; i++) { /* in dense order, one rank's records together (stable) */
    struct cs_det_member t = P->dm[i];
    size_t j = i;
    while (j > 0 && P->dm[j - 1].comm_rank > t.comm_rank) {
      P->dm[j] = P->dm[j - 1];
      j--;
    }
    P->dm[j] = t;
  }
  if (P->det && cs_det_stream_instance(P->det, comm, seq, P->dm, n)) P->oom = true;
  size_t nfound = P->agg->sdc.nitems;
  sdc_instance(P, comm, seq, m, n);
  report_views_instance(P->agg->views, comm, seq, m, n, P->agg->sdc.nitems - nfound);
}

/* the last round's records through the walker (and so the detector and the SDC comparison) */
static void walk_pending(struct report_agg_priv *P) {
  for (size_t i = 0; i < P->nf; i++) {
    struct fstate *F = &P->fs[i];
    for (size_t k = 0; k < F->pn; k++)
      if (!cs_walk_push(P->walk, &F->pbuf[k])) P->oom = true;
    F->pn = 0;
    if (P->pdone[i] && !F->walked_done) {
      F->walked_done = true;
      cs_walk_file_done(P->walk, (uint32_t)i);
      free(F->pbuf);
      F->pbuf = NULL;
      F->pcap = 0;
    }
  }
  size_t held = cs_walk_held(P->walk);
  if (held > P->agg->max_held) P->agg->max_held = held;
  if (!cs_walk_advance(P->walk)) P->oom = true;
}
static void *walk_main(void *arg) {
  walk_pending(arg);
  return NULL;
}
static void walk_join(struct report_agg_priv *P) {
  if (!P->bg_on) return;
  pthread_join(P->bg, NULL);
  P->bg_on = false;
}

/* A round read: its records become the pending ones, walked on a thread of their own while
 * the reading threads go on with the next round (the walk is the serial part of the report:
 * a third of its CPU). The last round is walked before returning. */
static void on_round(void *ctx, const bool *done, size_t nfiles) {
  struct report_agg_priv *P = ctx;
  walk_join(P);
  bool all = true;
  for (size_t i = 0; i < nfiles && i < P->nf; i++) {
    struct fstate *F = &P->fs[i];
    struct cs_walk_rec *b = F->pbuf;
    size_t c = F->pcap;
    F->pbuf = F->buf;
    F->pn = F->n;
    F->pcap = F->cap;
    F->buf = b;
    F->n = 0;
    F->cap = c;
    P->pdone[i] = done[i];
    all &= done[i];
  }
  if (all || pthread_create(&P->bg, NULL, walk_main, P) != 0)
    walk_pending(P);
  else
    P->bg_on = true;
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
  if (a->comm_size != b->comm_size) return a->comm_size < b->comm_size ? -1 : 1;
  return a->bucket < b->bucket ? -1 : a->bucket > b->bucket;
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
    for (size_t i = 0; i < from->nsizes; i++) row_size(into, from->sizes[i].v, from->sizes[i].n);
  }
  free(from->sizes);
  if (from->timed && (!into->timed || from->dur_max > into->dur_max)) into->dur_max = from->dur_max;
  if (!into->exact_lost && !from->exact_lost && into->nexact + from->nexact <= AGG_EXACT) {
    for (size_t i = 0; i < from->nexact; i++) {
      XGROW(into->exact, into->nexact, into->capexact);
      into->exact[into->nexact++] = from->exact[i];
    }
  } else {
    row_pour(P, into);
    for (size_t i = 0; i < from->nexact && !from->exact_lost; i++)
      if (!cs_hist_add(&into->dur, from->exact[i])) P->oom = true;
    if (from->exact_lost && !cs_hist_merge(&into->dur, &from->dur)) P->oom = true;
  }
  into->timed += from->timed;
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
  /* who created each communicator (its "comm" init/split records): members with no seq, so a
   * rank that has no op record on a comm (stuck in, or before, its first call) is still a
   * member, and the hangs section names it as missing; then the shim's hang records: pending
   * ops (their order does not matter to the detector) */
  for (size_t i = 0; i < set->nfiles && P->det; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t j = 0; j < f->ncomms; j++) {
      const struct cs_comm_rec *c = &f->comms[j];
      if (!c->event || (strcmp(c->event, "init") != 0 && strcmp(c->event, "split") != 0) || c->rank < 0) continue;
      struct dense_comm *dc = dense_comm_of(P, c->comm);
      struct cs_det_member d = {.comm_rank = dense_of(P, dc, c->rank, c->size), .rank = f->hdr.rank, .host = f->hdr.host, .state = CS_DET_UNTIMED, .gap_us = -1};
      d.comm_size = (int)dc->n;
      if (cs_det_stream_instance(P->det, c->comm, -1, &d, 1)) P->oom = true;
    }
  }
  for (size_t i = 0; i < set->nfiles && P->det; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t j = 0; j < f->nhangs; j++) {
      const struct cs_hang_rec *h = &f->hangs[j];
      struct dense_comm *dc = dense_comm_of(P, h->comm);
      struct cs_det_member d = {.comm_rank = dense_of(P, dc, h->comm_rank, h->comm_size),
                                .rank = h->rank >= 0 ? h->rank : f->hdr.rank,
                                .host = f->hdr.host,
                                .enqueue_ns = h->enqueue_ns,
                                .state = CS_DET_PENDING,
                                .gap_us = -1};
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
    if (s->comm_rank >= 0) s->comm_rank = real_of(P, s->comm, s->comm_rank);
    s->comm_size = declared_of(P, s->comm, s->comm_size);
  }
  for (size_t i = 0; i < dr->nranks; i++) dr->ranks[i].comm_rank = real_of(P, dr->ranks[i].comm, dr->ranks[i].comm_rank);
  for (size_t i = 0; i < dr->nhangs; i++) dr->hangs[i].comm_size = declared_of(P, dr->hangs[i].comm, dr->hangs[i].comm_size);
  agg->late_records = cs_walk_late(P->walk);

  struct row_ent *rows = NULL;
  struct comm_ent *comms = NULL;
  struct crank_ent *cranks = NULL;
  for (unsigned w = 0; w < P->nw; w++) {
    struct worker *W = &P->w[w];
    agg->filter_matched |= W->matched;
    struct agg_counts *c = &agg->counts, *d = &W->counts;
    c->ops += d->ops, c->errors += d->errors, c->timed += d->timed, c->timed_profiler += d->timed_profiler;
    c->timed_host_span += d->timed_host_span, c->captured += d->captured, c->host_timed += d->host_timed;
    c->unknown_timing += d->unknown_timing;
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
  memset(agg, 0, sizeof *agg);
  agg->op_filter = op_filter;
  struct report_agg_priv *P = xcalloc(1, sizeof *P);
  agg->priv = P;
  P->agg = agg;
  P->nw = jobs ? jobs : 1;
  P->w = xcalloc(P->nw, sizeof *P->w);
  P->det = cs_det_stream_new(detp, CS_DET_HANG_PENDING);
  agg->views = report_views_new(op_filter);
  struct cs_stream_ops ops = {.ctx = P, .jobs = P->nw, .budget = budget, .begin = on_begin, .op = on_op, .round = on_round};
  struct cs_dumpset *set = cs_dumpset_stream(path, job, &ops);
  walk_join(P);
  if (set->whole) { /* salvage to merge: the whole set, then the same callbacks */
    cs_dumpset_free(set);
    set = cs_dumpset_load_job(path, job);
    if (!set->fatal) {
      size_t nf = 0;
      for (size_t i = 0; i < set->nfiles; i++)
        if (set->files[i].read_index + 1 > nf) nf = set->files[i].read_index + 1;
      on_begin(P, nf);
      bool *done = xcalloc(nf, sizeof *done);
      for (size_t i = 0; i < set->nfiles; i++) {
        const struct cs_dumpfile *f = &set->files[i];
        for (size_t k = 0; k < f->nops; k++) on_op(P, 0, f->read_index, f, &f->ops[k]);
      }
      for (size_t i = 0; i < nf; i++) done[i] = true;
      on_round(P, done, nf);
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
  if (P) {
    for (size_t i = 0; i < P->nf; i++) {
      free(P->fs[i].buf);
      free(P->fs[i].pbuf);
    }
    free(P->pdone);
    free(P->fs);
    free(P->w);
    cs_walk_free(P->walk);
    cs_det_stream_free(P->det);
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
