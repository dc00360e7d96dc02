/* tools/report/report_views.c: the report's figures for pictures, gathered per collective instance
 * (definitions in report_views.h; the contract of the busbw_pct, lateness, progress and
 * sdc_timeline sections of `report --json`, which the HTML page draws). */
#include "report_views.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uthash.h>

#include "collscope/detect.h"
#include "collscope/histogram.h"
#include "collscope/schema.h"
#include "dump/dumpfile.h"
#include "xalloc.h"

struct bw_key {
  const char *op_name;
  int comm_size, bucket;
}; /* op_name interned */
struct bw_ent {
  struct bw_key k;
  int op;
  struct cs_hist h;
  UT_hash_handle hh;
};

struct rank_key {
  uint64_t comm;
  int comm_rank;
};
struct rank_ent {
  struct rank_key k;
  int rank;
  int64_t entered, done; /* last seq with a record / with a completed record, -1 none */
  UT_hash_handle hh;
};

struct vcomm {
  uint64_t comm;
  int size, groups; /* comm_size of its first instance; min(size, VIEW_GROUPS) */
  size_t instances;
  int64_t seq0, width; /* column c holds seqs [seq0 + c*width, seq0 + (c+1)*width) */
  int ncols;           /* columns holding an instance so far (1 + the last one) */
  float *late;         /* groups x VIEW_COLS, < 0: no timed member */
  int *worst;          /* the rank of each cell's largest lateness */
  int64_t *col_t;      /* earliest start of each column, INT64_MAX none */
  UT_hash_handle hh;
};

struct sdc_point {
  int64_t t;
  size_t checked, findings;
};

struct report_views {
  const char *op_filter;
  struct bw_ent *bw;
  struct vcomm *comms;
  struct rank_ent *ranks;
  int64_t t0;            /* earliest timed start of any instance, INT64_MAX none */
  struct sdc_point *pts; /* grown up to VIEW_SDC_POINTS */
  size_t npts, ptscap;
  size_t sdc_untimed_checked, sdc_untimed_findings;
  double *scratch;
  size_t scap;
};

struct report_views *report_views_new(const char *op_filter) {
  struct report_views *v = xcalloc(1, sizeof *v);
  v->op_filter = op_filter;
  v->t0 = INT64_MAX;
  return v;
}

static int bucket_of(uint64_t bytes) { return bytes ? 63 - __builtin_clzll(bytes) : -1; }
static bool timed(const struct cs_walk_rec *r) {
  return r->state == CS_DET_DONE && r->end_ns > r->start_ns && r->start_ns > 0;
}
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* a communicator's grid has min(comm_size, VIEW_GROUPS, members of its first instance) rows,
 * so a made-up comm_size costs no more memory than the records behind it */
static struct vcomm *comm_of(struct report_views *v, uint64_t comm, int size, int64_t seq, size_t n) {
  struct vcomm *c;
  HASH_FIND(hh, v->comms, &comm, sizeof comm, c);
  if (c) return c;
  c = xcalloc(1, sizeof *c);
  c->comm = comm;
  c->size = size > 0 ? size : 1;
  c->groups = c->size < VIEW_GROUPS ? c->size : VIEW_GROUPS;
  if ((size_t)c->groups > n) c->groups = n ? (int)n : 1;
  c->seq0 = seq;
  c->width = 1;
  HASH_ADD(hh, v->comms, comm, sizeof c->comm, c);
  return c;
}

/* the grid, made at the communicator's first instance with a lateness to hold */
static void comm_grid(struct vcomm *c) {
  if (c->late) return;
  c->late = xcalloc((size_t)c->groups * VIEW_COLS, sizeof *c->late);
  c->worst = xcalloc((size_t)c->groups * VIEW_COLS, sizeof *c->worst);
  c->col_t = xcalloc(VIEW_COLS, sizeof *c->col_t);
  for (size_t i = 0; i < (size_t)c->groups * VIEW_COLS; i++) c->late[i] = -1, c->worst[i] = -1;
  for (int i = 0; i < VIEW_COLS; i++) c->col_t[i] = INT64_MAX;
}

static int group_of(const struct vcomm *c, int comm_rank) {
  if (comm_rank < 0) return 0;
  int64_t g = (int64_t)comm_rank * c->groups / c->size;
  return g >= c->groups ? c->groups - 1 : (int)g;
}

/* halve the columns' resolution: column c takes columns 2c and 2c+1 */
static void comm_merge_cols(struct vcomm *c) {
  for (int g = 0; g < c->groups; g++) {
    float *l = &c->late[(size_t)g * VIEW_COLS];
    int *w = &c->worst[(size_t)g * VIEW_COLS];
    for (int k = 0; k < VIEW_COLS / 2; k++) {
      int a = 2 * k, b = 2 * k + 1;
      int pick = l[b] > l[a] ? b : a;
      l[k] = l[pick], w[k] = w[pick];
    }
    for (int k = VIEW_COLS / 2; k < VIEW_COLS; k++) l[k] = -1, w[k] = -1;
  }
  for (int k = 0; k < VIEW_COLS / 2; k++)
    c->col_t[k] = c->col_t[2 * k] < c->col_t[2 * k + 1] ? c->col_t[2 * k] : c->col_t[2 * k + 1];
  for (int k = VIEW_COLS / 2; k < VIEW_COLS; k++) c->col_t[k] = INT64_MAX;
  c->width *= 2;
  c->ncols = (c->ncols + 1) / 2;
}

static void sdc_point(struct report_views *v, int64_t t, size_t findings) {
  if (t <= 0) {
    v->sdc_untimed_checked++;
    v->sdc_untimed_findings += findings;
    return;
  }
  if (v->npts && v->pts[v->npts - 1].t == t) {
    v->pts[v->npts - 1].checked++;
    v->pts[v->npts - 1].findings += findings;
    return;
  }
  if (v->npts == VIEW_SDC_POINTS) { /* full: neighbours in time merged, half the points */
    size_t n = 0;
    for (size_t i = 0; i + 1 < v->npts; i += 2)
      v->pts[n++] = (struct sdc_point){v->pts[i].t, v->pts[i].checked + v->pts[i + 1].checked,
                                       v->pts[i].findings + v->pts[i + 1].findings};
    v->npts = n;
  }
  if (v->npts == v->ptscap) {
    v->ptscap = v->ptscap ? 2 * v->ptscap : 64;
    if (v->ptscap > VIEW_SDC_POINTS) v->ptscap = VIEW_SDC_POINTS;
    v->pts = xreallocarray(v->pts, v->ptscap, sizeof *v->pts);
  }
  /* kept in time order (instances of different communicators arrive a little out of order) */
  size_t i = v->npts++;
  while (i > 0 && v->pts[i - 1].t > t) {
    v->pts[i] = v->pts[i - 1];
    i--;
  }
  v->pts[i] = (struct sdc_point){t, 1, findings};
}

void report_views_instance(struct report_views *v, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n,
                           size_t sdc_findings) {
  if (!v || !n) return;
  bool counted = false, checked = false;
  int size = 0;
  int64_t tmin = INT64_MAX, emin = INT64_MAX;
  size_t nt = 0;
  if (n > v->scap) {
    v->scap = 2 * n;
    v->scratch = xrealloc(v->scratch, v->scap * sizeof *v->scratch);
  }
  for (size_t k = 0; k < n; k++) {
    const struct cs_walk_rec *r = &m[k];
    if (r->comm_size > size) size = r->comm_size;
    if (!r->counts) continue;
    counted = true;
    checked |= r->sdc_checked != 0;
    if (r->enqueue_ns > 0 && r->enqueue_ns < emin) emin = r->enqueue_ns;
    if (!timed(r)) continue;
    if (r->start_ns < tmin) tmin = r->start_ns;
    double dur = (double)(r->end_ns - r->start_ns) / 1e3;
    v->scratch[nt++] = dur;
    /* bus bandwidth of this record, GB/s; a group member that shares its group's span has no
     * time of its own (the ops section's group rows have the group's) */
    if (r->bytes && !r->p2p && r->group_ops <= 1) {
      struct bw_key key;
      memset(&key, 0, sizeof key);
      key.op_name = r->op_name, key.comm_size = r->comm_size, key.bucket = bucket_of(r->bytes);
      struct bw_ent *e;
      HASH_FIND(hh, v->bw, &key, sizeof key, e);
      if (!e) {
        e = xcalloc(1, sizeof *e);
        e->k = key;
        e->op = r->op;
        cs_hist_init(&e->h);
        HASH_ADD(hh, v->bw, k, sizeof key, e);
      }
      double bw = (double)r->bytes / (dur * 1e3);
      if (r->op >= 0) bw *= cs_busbw_factor((enum cs_op)r->op, r->comm_size);
      cs_hist_add(&e->h, bw);
    }
  }
  if (!counted) return;
  if (tmin < v->t0) v->t0 = tmin;
  if (checked) sdc_point(v, tmin != INT64_MAX ? tmin : emin != INT64_MAX ? emin
                                                                         : 0,
                         sdc_findings);

  struct vcomm *c = comm_of(v, comm, size, seq, n);
  c->instances++;
  for (size_t k = 0; k < n; k++) { /* where each rank got to */
    const struct cs_walk_rec *r = &m[k];
    struct rank_key key;
    memset(&key, 0, sizeof key);
    key.comm = comm, key.comm_rank = r->comm_rank;
    struct rank_ent *e;
    HASH_FIND(hh, v->ranks, &key, sizeof key, e);
    if (!e) {
      e = xcalloc(1, sizeof *e);
      e->k = key;
      e->entered = e->done = -1;
      HASH_ADD(hh, v->ranks, k, sizeof key, e);
    }
    e->rank = r->rank;
    if (r->state != CS_DET_FAILED && seq > e->entered) e->entered = seq;
    if ((r->state == CS_DET_DONE || r->state == CS_DET_UNTIMED) && seq > e->done) e->done = seq;
  }
  if (nt < 2) return; /* lateness needs two timed members */
  comm_grid(c);
  int64_t col = seq >= c->seq0 ? (seq - c->seq0) / c->width : 0;
  while (col >= VIEW_COLS) {
    comm_merge_cols(c);
    col = (seq - c->seq0) / c->width;
  }
  if (col + 1 > c->ncols) c->ncols = (int)col + 1;
  if (tmin < c->col_t[col]) c->col_t[col] = tmin;
  qsort(v->scratch, nt, sizeof *v->scratch, cmp_double);
  double med = v->scratch[(nt + 1) / 2 - 1]; /* nearest-rank median */
  for (size_t k = 0; k < n; k++) {
    const struct cs_walk_rec *r = &m[k];
    if (!r->counts || !timed(r) || r->p2p) continue;
    double late = med - (double)(r->end_ns - r->start_ns) / 1e3;
    if (late < 0) late = 0;
    size_t cell = (size_t)group_of(c, r->comm_rank) * VIEW_COLS + (size_t)col;
    if ((float)late > c->late[cell]) c->late[cell] = (float)late, c->worst[cell] = r->rank;
  }
}

void report_views_free(struct report_views *v) {
  if (!v) return;
  struct bw_ent *b, *bt;
  HASH_ITER(hh, v->bw, b, bt) {
    HASH_DEL(v->bw, b);
    cs_hist_free(&b->h);
    free(b);
  }
  struct vcomm *c, *ct;
  HASH_ITER(hh, v->comms, c, ct) {
    HASH_DEL(v->comms, c);
    free(c->late);
    free(c->worst);
    free(c->col_t);
    free(c);
  }
  struct rank_ent *r, *rt;
  HASH_ITER(hh, v->ranks, r, rt) {
    HASH_DEL(v->ranks, r);
    free(r);
  }
  free(v->pts);
  free(v->scratch);
  free(v);
}

/* ---------- JSON ---------- */

static json_t *jround(double x, double q) { return json_real(round(x / q) * q); }
static double secs(const struct report_views *v, int64_t t) {
  return v->t0 == INT64_MAX || t == INT64_MAX ? 0 : (double)(t - v->t0) / 1e9;
}

static int cmp_bw(const void *pa, const void *pb) {
  const struct bw_ent *a = *(const struct bw_ent *const *)pa, *b = *(const struct bw_ent *const *)pb;
  int ka = a->op >= 0 ? a->op : CS_OP_COUNT, kb = b->op >= 0 ? b->op : CS_OP_COUNT;
  if (ka != kb) return ka < kb ? -1 : 1;
  int s = strcmp(a->k.op_name, b->k.op_name);
  if (s) return s;
  if (a->k.comm_size != b->k.comm_size) return a->k.comm_size < b->k.comm_size ? -1 : 1;
  return (a->k.bucket > b->k.bucket) - (a->k.bucket < b->k.bucket);
}

json_t *report_views_json_busbw(const struct report_views *v) {
  size_t n = HASH_COUNT(v->bw), i = 0;
  struct bw_ent **e = xcalloc(n, sizeof *e), *b, *bt;
  HASH_ITER(hh, v->bw, b, bt)
  e[i++] = b;
  qsort(e, n, sizeof *e, cmp_bw);
  json_t *a = json_array();
  for (i = 0; i < n; i++) {
    json_t *o = json_object();
    json_object_set_new(o, "op", json_string(e[i]->k.op_name));
    json_object_set_new(o, "comm_size", json_integer(e[i]->k.comm_size));
    json_object_set_new(o, "bucket_lo", json_integer(e[i]->k.bucket < 0 ? 0 : (json_int_t)1 << e[i]->k.bucket));
    json_object_set_new(o, "timed", json_integer((json_int_t)e[i]->h.n));
    json_object_set_new(o, "busbw_p10", jround(cs_hist_percentile(&e[i]->h, 10), 1e-4));
    json_object_set_new(o, "busbw_p50", jround(cs_hist_percentile(&e[i]->h, 50), 1e-4));
    json_object_set_new(o, "busbw_p90", jround(cs_hist_percentile(&e[i]->h, 90), 1e-4));
    json_array_append_new(a, o);
  }
  free(e);
  return a;
}

/* communicators to show: those `det` names first (stragglers or hangs), then (lateness) those
 * with a grid, then the largest, then the busiest; at most VIEW_MAX_COMMS, *omitted the rest */
static bool det_names(const struct cs_det_result *det, uint64_t comm, bool hangs) {
  if (!det) return false;
  if (hangs) {
    for (size_t i = 0; i < det->nhangs; i++)
      if (det->hangs[i].comm == comm) return true;
  } else {
    for (size_t i = 0; i < det->nstragglers; i++)
      if (det->stragglers[i].comm == comm && det->stragglers[i].comm_rank >= 0) return true;
  }
  return false;
}
struct pick {
  const struct vcomm *c;
  bool named, drawable;
};
static int cmp_pick(const void *pa, const void *pb) {
  const struct pick *a = pa, *b = pb;
  if (a->named != b->named) return a->named ? -1 : 1;
  if (a->drawable != b->drawable) return a->drawable ? -1 : 1;
  if (a->c->size != b->c->size) return a->c->size > b->c->size ? -1 : 1;
  if (a->c->instances != b->c->instances) return a->c->instances > b->c->instances ? -1 : 1;
  return (a->c->comm > b->c->comm) - (a->c->comm < b->c->comm);
}
static struct pick *pick_comms(const struct report_views *v, const struct cs_det_result *det, bool hangs, size_t *n,
                               size_t *omitted) {
  size_t all = HASH_COUNT(v->comms), i = 0;
  struct pick *p = xcalloc(all, sizeof *p);
  for (const struct vcomm *c = v->comms; c; c = c->hh.next) /* lateness: those with a grid first */
    p[i++] = (struct pick){c, det_names(det, c->comm, hangs), hangs || c->late};
  qsort(p, all, sizeof *p, cmp_pick);
  *n = all < VIEW_MAX_COMMS ? all : VIEW_MAX_COMMS;
  *omitted = all - *n;
  return p;
}

json_t *report_views_json_lateness(const struct report_views *v, const struct cs_det_result *det) {
  size_t n, omitted;
  struct pick *p = pick_comms(v, det, false, &n, &omitted);
  json_t *root = json_object(), *comms = json_array();
  char hex[17];
  for (size_t i = 0; i < n; i++) {
    const struct vcomm *c = p[i].c;
    json_t *o = json_object(), *cs = json_array(), *ct = json_array(), *late = json_array(), *worst = json_array();
    json_object_set_new(o, "comm", json_string(cs_comm_hex(c->comm, hex)));
    json_object_set_new(o, "comm_size", json_integer(c->size));
    json_object_set_new(o, "instances", json_integer((json_int_t)c->instances));
    json_object_set_new(o, "groups", json_integer(c->groups));
    json_object_set_new(o, "ranks_per_group", json_integer((c->size + c->groups - 1) / c->groups));
    json_object_set_new(o, "seq_first", json_integer(c->seq0));
    json_object_set_new(o, "seq_per_column", json_integer(c->width));
    for (int k = 0; k < c->ncols; k++) {
      json_array_append_new(cs, json_integer(c->seq0 + k * c->width));
      json_array_append_new(ct, c->col_t[k] == INT64_MAX ? json_null() : jround(secs(v, c->col_t[k]), 1e-6));
    }
    json_object_set_new(o, "column_seq", cs);
    json_object_set_new(o, "column_t_s", ct);
    for (int g = 0; g < c->groups; g++) {
      json_t *lr = json_array(), *wr = json_array();
      for (int k = 0; k < c->ncols; k++) {
        size_t cell = (size_t)g * VIEW_COLS + (size_t)k;
        json_array_append_new(lr, c->late[cell] < 0 ? json_null() : jround(c->late[cell], 0.1));
        json_array_append_new(wr, c->worst[cell] < 0 ? json_null() : json_integer(c->worst[cell]));
      }
      json_array_append_new(late, lr);
      json_array_append_new(worst, wr);
    }
    json_object_set_new(o, "lateness_us", late);
    json_object_set_new(o, "worst_rank", worst);
    json_t *flags = json_array(); /* the stragglers flagged here, at the cell of their first flag */
    for (size_t s = 0; det && s < det->nstragglers; s++) {
      const struct cs_det_straggler *st = &det->stragglers[s];
      if (st->comm != c->comm || st->comm_rank < 0) continue;
      int64_t col = st->first_flag_seq >= c->seq0 ? (st->first_flag_seq - c->seq0) / c->width : 0;
      if (col >= c->ncols) col = c->ncols ? c->ncols - 1 : 0;
      json_t *f = json_object();
      json_object_set_new(f, "rank", json_integer(st->rank));
      json_object_set_new(f, "comm_rank", json_integer(st->comm_rank));
      json_object_set_new(f, "group", json_integer(group_of(c, st->comm_rank)));
      json_object_set_new(f, "seq", json_integer(st->first_flag_seq));
      json_object_set_new(f, "column", json_integer(col));
      json_object_set_new(f, "kind", json_string(cs_det_kind_name(st->kind)));
      json_array_append_new(flags, f);
    }
    json_object_set_new(o, "flagged", flags);
    json_array_append_new(comms, o);
  }
  json_object_set_new(root, "comms", comms);
  json_object_set_new(root, "comms_omitted", json_integer((json_int_t)omitted));
  free(p);
  return root;
}

json_t *report_views_json_progress(const struct report_views *v, const struct cs_det_result *det) {
  size_t n, omitted;
  struct pick *p = pick_comms(v, det, true, &n, &omitted);
  json_t *root = json_object(), *comms = json_array();
  char hex[17];
  struct cell {
    int64_t emin, emax, dmin;
    int emin_rank, dmin_rank;
    bool any;
  } *cells =
      xcalloc(VIEW_GROUPS, sizeof *cells);
  for (size_t i = 0; i < n; i++) {
    const struct vcomm *c = p[i].c;
    memset(cells, 0, VIEW_GROUPS * sizeof *cells);
    const struct cs_det_hang *hang = NULL; /* its stuck ranks entered the hang's seq (a hang record) */
    for (size_t h = 0; det && h < det->nhangs; h++)
      if (det->hangs[h].comm == c->comm) hang = &det->hangs[h];
    for (const struct rank_ent *e = v->ranks; e; e = e->hh.next) {
      if (e->k.comm != c->comm) continue;
      struct cell *x = &cells[group_of(c, e->k.comm_rank)];
      int64_t entered = e->entered;
      for (size_t k = 0; hang && k < hang->nstuck; k++)
        if (hang->stuck[k] == e->rank && hang->seq > entered) entered = hang->seq;
      if (!x->any || entered < x->emin) x->emin = entered, x->emin_rank = e->rank;
      if (!x->any || entered > x->emax) x->emax = entered;
      if (!x->any || e->done < x->dmin) x->dmin = e->done, x->dmin_rank = e->rank;
      x->any = true;
    }
    json_t *o = json_object(), *emin = json_array(), *emax = json_array(), *dmin = json_array(), *er = json_array(),
           *dr = json_array();
    json_object_set_new(o, "comm", json_string(cs_comm_hex(c->comm, hex)));
    json_object_set_new(o, "comm_size", json_integer(c->size));
    json_object_set_new(o, "groups", json_integer(c->groups));
    json_object_set_new(o, "ranks_per_group", json_integer((c->size + c->groups - 1) / c->groups));
    json_object_set_new(o, "hang_seq", hang ? json_integer(hang->seq) : json_null());
    for (int g = 0; g < c->groups; g++) {
      const struct cell *x = &cells[g];
      json_array_append_new(emin, x->any ? json_integer(x->emin) : json_null());
      json_array_append_new(er, x->any ? json_integer(x->emin_rank) : json_null());
      json_array_append_new(emax, x->any ? json_integer(x->emax) : json_null());
      json_array_append_new(dmin, x->any ? json_integer(x->dmin) : json_null());
      json_array_append_new(dr, x->any ? json_integer(x->dmin_rank) : json_null());
    }
    json_object_set_new(o, "entered_min", emin);
    json_object_set_new(o, "entered_min_rank", er);
    json_object_set_new(o, "entered_max", emax);
    json_object_set_new(o, "done_min", dmin);
    json_object_set_new(o, "done_min_rank", dr);
    json_array_append_new(comms, o);
  }
  free(cells);
  json_object_set_new(root, "comms", comms);
  json_object_set_new(root, "comms_omitted", json_integer((json_int_t)omitted));
  free(p);
  return root;
}

json_t *report_views_json_sdc_timeline(const struct report_views *v) {
  json_t *o = json_object(), *b = json_array();
  int64_t lo = v->npts ? v->pts[0].t : 0, hi = v->npts ? v->pts[v->npts - 1].t : 0;
  int64_t w = (hi - lo) / VIEW_TIME_BUCKETS + 1;
  size_t checked[VIEW_TIME_BUCKETS] = {0}, found[VIEW_TIME_BUCKETS] = {0};
  for (size_t i = 0; i < v->npts; i++) {
    int64_t k = (v->pts[i].t - lo) / w;
    if (k >= VIEW_TIME_BUCKETS) k = VIEW_TIME_BUCKETS - 1;
    checked[k] += v->pts[i].checked;
    found[k] += v->pts[i].findings;
  }
  json_object_set_new(o, "bucket_s", jround((double)w / 1e9, 1e-9));
  for (int k = 0; v->npts && k < VIEW_TIME_BUCKETS; k++) {
    json_t *e = json_object();
    json_object_set_new(e, "t_s", jround(secs(v, lo + k * w), 1e-6));
    json_object_set_new(e, "checked", json_integer((json_int_t)checked[k]));
    json_object_set_new(e, "findings", json_integer((json_int_t)found[k]));
    json_array_append_new(b, e);
  }
  json_object_set_new(o, "buckets", b);
  json_object_set_new(o, "untimed_checked", json_integer((json_int_t)v->sdc_untimed_checked));
  json_object_set_new(o, "untimed_findings", json_integer((json_int_t)v->sdc_untimed_findings));
  return o;
}
