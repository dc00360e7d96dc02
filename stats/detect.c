/* stats/detect.c: straggler and hang detection (include/collscope/detect.h). Shared by
 * the CLI (report, top, salvage) and the shim; no I/O, no globals. */
#include "collscope/detect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

void cs_det_params_default(struct cs_det_params *p) {
  p->window = 100;
  p->min_instances = 10;
  p->share = 0.25;
  p->z = 6.0;
  p->persist = 6;
  p->offset_z = 5.0;
  p->recent = 16;
  p->recent_z = 8.0;
  p->recent_share = 0.85;
  p->floor_us = 20.0;
  p->frac = 0.02;
  p->link_floor_us = 10000;
}

static int env_num(const char *name, double *out, double lo, double hi) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || *end || !(x >= lo && x <= hi)) return 1;
  *out = x;
  return 0;
}

int cs_det_params_env(struct cs_det_params *p) {
  double w = p->window, m = p->min_instances, ps = p->persist;
  int bad = 0;
  bad += env_num("COLLSCOPE_STRAGGLER_WINDOW", &w, 2, 1e6);
  bad += env_num("COLLSCOPE_STRAGGLER_MIN", &m, 2, 1e6);
  bad += env_num("COLLSCOPE_STRAGGLER_SHARE", &p->share, 0.0, 1.0);
  bad += env_num("COLLSCOPE_STRAGGLER_Z", &p->z, 0.0, 100.0);
  bad += env_num("COLLSCOPE_STRAGGLER_PERSIST", &ps, 1, 1e6);
  bad += env_num("COLLSCOPE_STRAGGLER_OFFSET_Z", &p->offset_z, 0.0, 1e6);
  double rc = p->recent;
  bad += env_num("COLLSCOPE_STRAGGLER_RECENT", &rc, 0, 1e6);
  bad += env_num("COLLSCOPE_STRAGGLER_RECENT_Z", &p->recent_z, 0.0, 1e6);
  bad += env_num("COLLSCOPE_STRAGGLER_RECENT_SHARE", &p->recent_share, 0.5, 1.0);
  p->recent = (unsigned)rc;
  p->persist = (unsigned)ps;
  bad += env_num("COLLSCOPE_STRAGGLER_FLOOR_US", &p->floor_us, 0.0, 1e9);
  bad += env_num("COLLSCOPE_STRAGGLER_FRAC", &p->frac, 0.0, 100.0);
  bad += env_num("COLLSCOPE_LINK_FLOOR_US", &p->link_floor_us, 0.0, 1e12);
  p->window = (unsigned)w;
  p->min_instances = (unsigned)m;
  if (p->min_instances > p->window) p->min_instances = p->window;
  return bad;
}

/* ---------------------------------------------------------------- helpers */

/* sqrt without libm (the shim links no libm): Newton from a power-of-two guess */
double cs_det_sqrt(double x) {
  if (!(x > 0)) return 0;
  double g = x > 1 ? x : 1;
  for (int i = 0; i < 64; i++) {
    double n = 0.5 * (g + x / g);
    if (n == g) break;
    g = n;
  }
  return g;
}

/* the k-th smallest of v[0..n) (0-based; reorders v): quickselect, median-of-three pivot */
static double select_k(double *v, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (hi > lo) {
    size_t mid = lo + (hi - lo) / 2;
    double a = v[lo], b = v[mid], c = v[hi];
    double pivot = a < b ? (b < c ? b : a < c ? c
                                              : a)
                         : (a < c ? a : b < c ? c
                                              : b);
    size_t i = lo, j = hi;
    while (i <= j) {
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i <= j) {
        double t = v[i];
        v[i] = v[j];
        v[j] = t;
        i++;
        if (j == 0) break;
        j--;
      }
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      return v[k];
  }
  return v[k];
}
/* median of v[0..n) (reorders v); lower middle for even n */
static double median(double *v, size_t n) {
  if (!n) return 0;
  return select_k(v, n, (n - 1) / 2);
}

/* the true median (mean of the two middle values for even n; reorders v) */
static double median_mid(double *v, size_t n) {
  if (!n) return 0;
  double lo = select_k(v, n, (n - 1) / 2);
  if (n % 2) return lo;
  /* after the select, v[n/2 ..] are all >= lo: the upper middle is their minimum */
  double hi = v[n / 2];
  for (size_t i = n / 2 + 1; i < n; i++)
    if (v[i] < hi) hi = v[i];
  return 0.5 * (lo + hi);
}

static int cmp_inst(const void *a, const void *b, void *ctx) {
  const struct cs_det_op *g_ops = ctx;
  const struct cs_det_op *x = &g_ops[*(const size_t *)a], *y = &g_ops[*(const size_t *)b];
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->comm_rank != y->comm_rank) return x->comm_rank < y->comm_rank ? -1 : 1;
  return 0;
}
static int cmp_proc(const void *a, const void *b, void *ctx) {
  const struct cs_det_op *g_ops = ctx;
  const struct cs_det_op *x = &g_ops[*(const size_t *)a], *y = &g_ops[*(const size_t *)b];
  int c = strcmp(x->host ? x->host : "", y->host ? y->host : "");
  if (c) return c;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  return 0;
}

struct inst {
  int last; /* comm_rank that arrived last */
  double lateness, med, gap_last, gap_peers;
  int64_t seq;
  uint64_t bytes;
  size_t e0, ne; /* its entries in ents[] */
  int pg_rank;   /* the rank whose peers' median gap pg_val holds (-1: none yet); a flagged
                      * rank's figures reuse it as the window slides */
  double pg_val; /* that median, -1 when no peer has a gap */
};

/* one rank's timed op in an instance: its arrival offset a = median(duration) - its
 * duration (> 0: it arrived after the median rank) and its compute gap */
struct ent {
  int r;
  double a, gap;
};

struct member { /* comm_rank -> identity */
  int rank;
  const char *host;
};

#define GROW(ptr, n, cap) \
  do { \
    if ((n) == (cap)) { \
      size_t nc_ = (cap) ? (cap)*2 : 16; \
      void *np_ = realloc((ptr), nc_ * sizeof *(ptr)); \
      if (!np_) goto oom; \
      (ptr) = np_; \
      (cap) = nc_; \
    } \
  } while (0)

/* Evaluate the window [lo, hi) of a comm's instances for comm_rank `cand`. */
static bool eval_cand(const struct inst *in, size_t lo, size_t hi, int cand, const struct cs_det_params *p,
                      double *scratch, struct cs_det_straggler *s) {
  size_t n = hi - lo, k = 0;
  for (size_t i = lo; i < hi; i++)
    if (in[i].last == cand) scratch[k++] = in[i].lateness;
  double late = median(scratch, k);
  for (size_t i = lo; i < hi; i++) scratch[i - lo] = in[i].med;
  double med = median(scratch, n);
  double thr = p->floor_us > p->frac * med ? p->floor_us : p->frac * med;
  if (late < thr) return false;
  size_t g = 0, h = 0;
  for (size_t i = lo; i < hi; i++)
    if (in[i].last == cand && in[i].gap_last >= 0) scratch[g++] = in[i].gap_last;
  double gap = g ? median(scratch, g) : -1;
  for (size_t i = lo; i < hi; i++)
    if (in[i].last == cand && in[i].gap_peers >= 0) scratch[h++] = in[i].gap_peers;
  double pgap = h ? median(scratch, h) : -1;
  s->window_instances = n;
  s->last = k;
  s->share_last = (double)k / (double)n;
  s->lateness_us = late;
  s->median_dur_us = med;
  s->gap_us = gap;
  s->peer_gap_us = pgap;
  s->kind = (gap >= 0 && pgap >= 0 && gap - pgap < 0.5 * late) ? CS_DET_LINK : CS_DET_COMPUTE;
  return true;
}

/* Per-rank sliding state of one communicator. */
struct rstate {
  size_t n, pos;   /* instances in the window it has a timed op in; of those, a > 0 */
  size_t rn, rpos; /* the same over the last `recent` instances */
  unsigned streak; /* consecutive instances the flag conditions held, ending at `at` */
  size_t at;
  bool flagged_now;
  size_t sidx; /* its entry in out->stragglers + 1, 0 none */
};

/* the entry of comm_rank r in an instance's entries [e0, e0 + ne) (sorted by r, one per rank:
 * the members come in comm_rank order), or NULL */
static const struct ent *find_ent(const struct ent *ents, size_t e0, size_t ne, int r) {
  size_t lo = e0, hi = e0 + ne;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ents[mid].r < r)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < e0 + ne && ents[lo].r == r ? &ents[lo] : NULL;
}

/* robust z of a median: m / (1.2533 * 1.4826 * MAD / sqrt(k)) (the sd of a median of k
 * draws ~ 1.2533 sigma; sigma ~ 1.4826 MAD). Overwrites v. Huge when the MAD is 0. */
static double median_z(double *v, size_t k, double m) {
  for (size_t j = 0; j < k; j++) v[j] = v[j] > m ? v[j] - m : m - v[j];
  double mad = median_mid(v, k);
  double se = 1.2533 * 1.4826 * mad / cs_det_sqrt((double)k);
  return se > 0 ? m / se : m > 0 ? 1e300
                                 : 0;
}

/* The offset rule for comm_rank r over the window [lo, hi): its median arrival offset m
 * must reach thr, and be offset_z robust standard errors above 0, either in us or relative
 * to each instance's median duration (with mixed sizes a fixed delay is steady in us, a
 * proportional one relative to the duration). Fills *off with m. */
static bool eval_offset(const struct inst *in, const struct ent *ents, size_t lo, size_t hi, int r,
                        double thr, double zmin, double *scratch, double *off) {
  size_t k = 0;
  double *rel = scratch + (hi - lo); /* scratch holds 2 * window + comm size doubles */
  for (size_t i = lo; i < hi; i++) {
    const struct ent *e = find_ent(ents, in[i].e0, in[i].ne, r);
    if (e) {
      rel[k] = in[i].med > 0 ? e->a / in[i].med : 0;
      scratch[k++] = e->a;
    }
  }
  double m = median_mid(scratch, k);
  *off = m;
  if (k < 2 || m < thr || !(m > 0)) return false;
  if (median_z(scratch, k, m) >= zmin) return true;
  double mr = median_mid(rel, k);
  return mr > 0 && median_z(rel, k, mr) >= zmin;
}

/* median arrival offset and compute gaps of comm_rank r over [lo, hi) */
static void rank_figures(struct inst *in, const struct ent *ents, size_t lo, size_t hi, int r, double *scratch,
                         double *off, double *gap, double *pgap) {
  size_t k = 0;
  for (size_t i = lo; i < hi; i++) {
    const struct ent *e = find_ent(ents, in[i].e0, in[i].ne, r);
    if (e) scratch[k++] = e->a;
  }
  *off = median_mid(scratch, k);
  k = 0;
  for (size_t i = lo; i < hi; i++) {
    const struct ent *e = find_ent(ents, in[i].e0, in[i].ne, r);
    if (e && e->gap >= 0) scratch[k++] = e->gap;
  }
  *gap = k ? median(scratch, k) : -1;
  /* peers: the median over instances of the instance's median peer gap */
  size_t g = 0;
  for (size_t i = lo; i < hi; i++) {
    if (in[i].pg_rank != r) { /* once per instance and rank, not once per window position */
      size_t h = 0;
      double *row = scratch + (hi - lo); /* scratch holds 2 * window + comm size doubles */
      for (size_t e = in[i].e0; e < in[i].e0 + in[i].ne; e++)
        if (ents[e].r != r && ents[e].gap >= 0) row[h++] = ents[e].gap;
      in[i].pg_rank = r;
      in[i].pg_val = h ? median(row, h) : -1;
    }
    if (in[i].pg_val >= 0) scratch[g++] = in[i].pg_val;
  }
  *pgap = g ? median(scratch, g) : -1;
}

/* ---------------------------------------------------------------- one communicator */

/* The state of one communicator while its instances are fed in seq order. Only the last
 * window + 1 instances (and their entries) are kept: in[] is compacted when it reaches
 * 2 * (window + 1), so memory is bounded by comm size x window. `base` is the absolute
 * index (0-based count of the comm's instances) of in[0]. */
struct cstate {
  uint64_t comm;
  int csize;
  bool invalid; /* comm size out of range: the comm is ignored */
  struct member *mem;
  size_t *cnt;
  struct rstate *rs;
  int64_t *done_max, *entered_max;
  double *durs, *gaps, *scratch;
  bool any_pending, any_flagged_now;
  int64_t oldest;
  struct inst *in;
  size_t nin, capin, base, total;
  struct ent *ents;
  size_t nents, capents;
  struct cs_det_straggler *str;
  size_t nstr, capstr;
  UT_hash_handle hh; /* the stream's table of communicators */
};

static void cstate_free(struct cstate *C) {
  free(C->mem);
  free(C->cnt);
  free(C->rs);
  free(C->done_max);
  free(C->entered_max);
  free(C->durs);
  free(C->gaps);
  free(C->scratch);
  free(C->in);
  free(C->ents);
  free(C->str);
  memset(C, 0, sizeof *C);
}

/* grow the per-rank arrays to csize ranks; 0, or -1 out of memory */
static int cstate_size(struct cstate *C, int csize, const struct cs_det_params *p) {
  if (csize <= C->csize) return 0;
  size_t n = (size_t)csize, o = (size_t)C->csize;
#define RESIZE(ptr, cnt_) \
  do { \
    void *np_ = realloc((ptr), (cnt_) * sizeof *(ptr)); \
    if (!np_) return -1; \
    (ptr) = np_; \
  } while (0)
  RESIZE(C->mem, n);
  RESIZE(C->cnt, n);
  RESIZE(C->rs, n);
  RESIZE(C->done_max, n);
  RESIZE(C->entered_max, n);
  RESIZE(C->durs, n);
  RESIZE(C->gaps, n);
  RESIZE(C->scratch, 2 * (size_t)p->window + n + 1);
#undef RESIZE
  for (size_t r = o; r < n; r++) {
    C->mem[r].rank = -1;
    C->mem[r].host = NULL;
    C->done_max[r] = C->entered_max[r] = -1;
    C->cnt[r] = 0;
    memset(&C->rs[r], 0, sizeof C->rs[r]);
  }
  C->csize = csize;
  return 0;
}

/* drop the instances before the last window + 1 (the window loop reaches back one more) */
static void cstate_compact(struct cstate *C, const struct cs_det_params *p) {
  size_t keep = (size_t)p->window + 1;
  if (C->nin < 2 * keep) return;
  size_t drop = C->nin - keep, e0 = C->in[drop].e0;
  memmove(C->in, C->in + drop, keep * sizeof *C->in);
  memmove(C->ents, C->ents + e0, (C->nents - e0) * sizeof *C->ents);
  for (size_t i = 0; i < keep; i++) C->in[i].e0 -= e0;
  C->nents -= e0;
  C->nin = keep;
  C->base += drop;
}

/* One instance (seq) of the comm: its members sorted by comm_rank. seq < 0 only records
 * the members' identities. 0, or -1 out of memory. */
static int cstate_feed(struct cstate *C, const struct cs_det_params *p, int64_t seq, const struct cs_det_member *m,
                       size_t n) {
  int csize = C->csize;
  size_t nd = 0;
  uint64_t ibytes = 0;
  int lastr = -1;
  double mind = 0, gl = -1;
  for (size_t k = 0; k < n; k++) {
    const struct cs_det_member *o = &m[k];
    if (o->comm_rank >= 0 && o->comm_rank < csize) {
      struct member *mm = &C->mem[o->comm_rank];
      if (mm->rank < 0) mm->rank = o->rank;
      if (!mm->host) mm->host = o->host;
      if (seq >= 0) {
        if (o->state == CS_DET_DONE || o->state == CS_DET_UNTIMED) {
          if (seq > C->done_max[o->comm_rank]) C->done_max[o->comm_rank] = seq;
          if (seq > C->entered_max[o->comm_rank]) C->entered_max[o->comm_rank] = seq;
        } else if (o->state == CS_DET_PENDING) {
          C->any_pending = true;
          if (seq > C->entered_max[o->comm_rank]) C->entered_max[o->comm_rank] = seq;
          if (o->enqueue_ns && (!C->oldest || o->enqueue_ns < C->oldest)) C->oldest = o->enqueue_ns;
        }
      }
    }
    if (seq < 0 || o->p2p || o->state != CS_DET_DONE || o->end_ns < o->start_ns) continue;
    if (o->comm_rank < 0 || o->comm_rank >= csize || nd >= (size_t)csize) continue;
    if (nd && C->ents[C->nents - 1].r == o->comm_rank) continue; /* one op per rank and instance */
    if (o->bytes > ibytes) ibytes = o->bytes;
    double d = (double)(o->end_ns - o->start_ns) / 1e3;
    if (nd == 0 || d < mind) {
      mind = d;
      lastr = o->comm_rank;
      gl = o->gap_us;
    }
    C->durs[nd++] = d;
    GROW(C->ents, C->nents, C->capents);
    C->ents[C->nents++] = (struct ent){o->comm_rank, d, o->gap_us};
  }
  if (!(nd >= 2 && lastr >= 0 && lastr < csize)) {
    C->nents -= nd;
    return 0;
  }
  size_t e0 = C->nents - nd, ng = 0;
  for (size_t e = e0; e < C->nents; e++) /* peers' gaps */
    if (C->ents[e].r != lastr && C->ents[e].gap >= 0) C->gaps[ng++] = C->ents[e].gap;
  GROW(C->in, C->nin, C->capin);
  struct inst *I = &C->in[C->nin++];
  I->med = median(C->durs, nd);
  I->last = lastr;
  I->lateness = I->med - mind;
  I->gap_last = gl;
  I->gap_peers = ng ? median(C->gaps, ng) : -1;
  I->seq = seq;
  I->bytes = ibytes;
  I->e0 = e0;
  I->ne = nd;
  I->pg_rank = -1;
  double mid = median_mid(C->durs, nd);
  for (size_t e = e0; e < C->nents; e++) C->ents[e].a = mid - C->ents[e].a;

  /* the sliding window, ending at this instance: absolute index ai, buffer index i */
  struct inst *in = C->in;
  struct ent *ents = C->ents;
  struct rstate *rs = C->rs;
  size_t *cnt = C->cnt;
  double *scratch = C->scratch;
  size_t i = C->nin - 1, ai = C->base + i;
  C->total = ai + 1;
  size_t recent = p->recent < p->window ? p->recent : p->window;
  cnt[in[i].last]++;
  for (size_t e = in[i].e0; e < in[i].e0 + in[i].ne; e++) {
    rs[ents[e].r].n++;
    rs[ents[e].r].pos += ents[e].a > 0;
    rs[ents[e].r].rn++;
    rs[ents[e].r].rpos += ents[e].a > 0;
  }
  size_t arlo = recent && ai + 1 > recent ? ai + 1 - recent : 0;
  if (recent && arlo > 0) {
    const struct inst *O = &in[arlo - 1 - C->base];
    for (size_t e = O->e0; e < O->e0 + O->ne; e++) {
      rs[ents[e].r].rn--;
      rs[ents[e].r].rpos -= ents[e].a > 0;
    }
  }
  size_t alo = ai + 1 > p->window ? ai + 1 - p->window : 0;
  if (alo > 0) {
    const struct inst *O = &in[alo - 1 - C->base];
    cnt[O->last]--;
    for (size_t e = O->e0; e < O->e0 + O->ne; e++) {
      rs[ents[e].r].n--;
      rs[ents[e].r].pos -= ents[e].a > 0;
    }
  }
  size_t lo = alo - C->base, rlo = arlo > C->base ? arlo - C->base : 0;
  size_t w = i + 1 - lo;
  C->any_flagged_now = false;
  for (int r = 0; r < csize; r++) rs[r].flagged_now = false;
  if (w < p->min_instances) goto done;
  double med = -1; /* median duration over the window, computed on demand */
  /* share-last rule: the rank last most often */
  int cand = 0;
  for (int r = 1; r < csize; r++)
    if (cnt[r] > cnt[cand]) cand = r;
  double p0 = 1.0 / (double)csize, need = p0 + p->z * cs_det_sqrt(p0 * (1 - p0) / (double)w);
  if (need < p->share) need = p->share;
  struct cs_det_straggler s_last = {0};
  bool last_ok = (double)cnt[cand] >= need * (double)w && eval_cand(in, lo, i + 1, cand, p, scratch, &s_last);
  for (int r = 0; r < csize; r++) {
    struct rstate *R = &rs[r];
    bool ok = last_ok && r == cand;
    double off = 0;
    /* offset rule; cheap pre-check first: after the median in clearly more than half
     * of its instances (sign test, z >= 2) */
    if (!ok && R->n >= p->min_instances && (double)R->pos - 0.5 * (double)R->n >= cs_det_sqrt((double)R->n)) {
      if (med < 0) {
        for (size_t j = lo; j <= i; j++) scratch[j - lo] = in[j].med;
        med = median(scratch, w);
      }
      double thr = p->floor_us > p->frac * med ? p->floor_us : p->frac * med;
      ok = eval_offset(in, ents, lo, i + 1, r, thr, p->offset_z, scratch, &off);
    }
    /* recent rule: the same over the last `recent` instances only, stricter, so a
     * slowdown that starts mid-job is seen before it fills half the window */
    if (!ok && recent && ai + 1 - arlo == recent && 4 * R->rn >= 3 * recent &&
        (double)R->rpos >= p->recent_share * (double)R->rn) {
      if (med < 0) {
        for (size_t j = lo; j <= i; j++) scratch[j - lo] = in[j].med;
        med = median(scratch, w);
      }
      double thr = p->floor_us > p->frac * med ? p->floor_us : p->frac * med;
      ok = eval_offset(in, ents, rlo, i + 1, r, thr, p->recent_z, scratch, &off);
    }
    if (!ok) continue;
    /* persistence: a burst of scheduling noise on a busy host is not a straggler */
    R->streak = R->streak && R->at + 1 == ai ? R->streak + 1 : 1;
    R->at = ai;
    if (R->streak < p->persist) continue;
    R->flagged_now = C->any_flagged_now = true;
    struct cs_det_straggler s;
    if (last_ok && r == cand) {
      s = s_last;
    } else {
      memset(&s, 0, sizeof s);
      s.window_instances = w;
      s.last = cnt[r];
      s.share_last = (double)cnt[r] / (double)w;
      size_t k = 0;
      for (size_t j = lo; j <= i; j++)
        if (in[j].last == r) scratch[k++] = in[j].lateness;
      s.lateness_us = median(scratch, k);
      if (med < 0) {
        for (size_t j = lo; j <= i; j++) scratch[j - lo] = in[j].med;
        med = median(scratch, w);
      }
      s.median_dur_us = med;
    }
    double o2, g2, pg2;
    rank_figures(in, ents, lo, i + 1, r, scratch, &o2, &g2, &pg2);
    s.offset_us = o2;
    s.later_share = R->n ? (double)R->pos / (double)R->n : 0;
    /* offset rule: gaps over the whole window (a share-last flag keeps eval_cand's,
     * over its last-arrivals) */
    if (!(last_ok && r == cand)) {
      double late = o2 > s.lateness_us ? o2 : s.lateness_us;
      s.gap_us = g2;
      s.peer_gap_us = pg2;
      s.kind = (g2 >= 0 && pg2 >= 0 && g2 - pg2 < 0.5 * late) ? CS_DET_LINK : CS_DET_COMPUTE;
    }
    s.comm = C->comm;
    s.comm_size = csize;
    s.comm_rank = r;
    s.rank = C->mem[r].rank;
    s.host = C->mem[r].host;
    if (!R->sidx) {
      GROW(C->str, C->nstr, C->capstr);
      R->sidx = ++C->nstr;
      s.first_flag_instance = ai + 1;
      s.first_flag_seq = in[i].seq;
    } else {
      s.first_flag_instance = C->str[R->sidx - 1].first_flag_instance;
      s.first_flag_seq = C->str[R->sidx - 1].first_flag_seq;
    }
    C->str[R->sidx - 1] = s;
  }
done:
  cstate_compact(C, p);
  return 0;
oom:
  return -1;
}

/* The comm's results after its last instance: stragglers, a slow-link entry, per-rank
 * figures over the final window, the hang. 0, or -1 out of memory. */
static int cstate_finish(struct cstate *C, const struct cs_det_params *p, int hang_mode, struct cs_det_result *out,
                         size_t *capS, size_t *capH, size_t *capR) {
  int csize = C->csize;
  struct inst *in = C->in;
  struct ent *ents = C->ents;
  double *scratch = C->scratch;
  size_t nin = C->nin;
  out->instances += C->total;
  for (size_t k = 0; k < C->nstr; k++) {
    GROW(out->stragglers, out->nstragglers, *capS);
    out->stragglers[out->nstragglers++] = C->str[k];
  }
  /* the final window, in buffer indices */
  size_t lo = nin > p->window ? nin - p->window : 0;
  /* slow link: no rank flagged now, everyone equally slow on small messages */
  if (!C->any_flagged_now && nin - lo >= p->min_instances) {
    size_t ns = 0, nl = 0;
    for (size_t i = lo; i < nin; i++)
      if (in[i].bytes <= 65536) scratch[ns++] = in[i].med;
    double small = median(scratch, ns);
    for (size_t i = lo; i < nin; i++) scratch[nl++] = in[i].med > 0 ? in[i].lateness / in[i].med : 0;
    double rel = median(scratch, nl);
    if (ns >= 2 && small >= p->link_floor_us && rel < 0.1) {
      GROW(out->stragglers, out->nstragglers, *capS);
      struct cs_det_straggler *s = &out->stragglers[out->nstragglers++];
      memset(s, 0, sizeof *s);
      s->comm = C->comm;
      s->comm_size = csize;
      s->comm_rank = s->rank = -1;
      s->kind = CS_DET_LINK;
      s->window_instances = nin - lo;
      size_t mx = 0;
      for (int r = 0; r < csize; r++) {
        size_t c = 0;
        for (size_t i = lo; i < nin; i++) c += in[i].last == r;
        if (c > mx) mx = c;
      }
      s->last = mx;
      s->share_last = (double)mx / (double)(nin - lo);
      s->lateness_us = rel * small;
      s->median_dur_us = small;
      s->gap_us = s->peer_gap_us = -1;
      s->first_flag_instance = C->total;
      s->first_flag_seq = in[nin - 1].seq;
    }
  }
  for (int r = 0; r < csize; r++) {
    GROW(out->ranks, out->nranks, *capR);
    struct cs_det_rankstat *st = &out->ranks[out->nranks++];
    memset(st, 0, sizeof *st);
    st->comm = C->comm;
    st->comm_rank = r;
    st->rank = C->mem[r].rank;
    st->host = C->mem[r].host;
    st->instances = nin - lo;
    size_t k = 0;
    for (size_t i = lo; i < nin; i++)
      if (in[i].last == r) scratch[k++] = in[i].lateness;
    st->last = k;
    st->lateness_us = median(scratch, k);
    k = 0;
    for (size_t i = lo; i < nin; i++) {
      const struct ent *e = find_ent(ents, in[i].e0, in[i].ne, r);
      if (e) scratch[k++] = e->a;
    }
    st->offset_us = median_mid(scratch, k);
    st->straggler = C->rs[r].flagged_now;
  }

  /* hang */
  if (hang_mode != CS_DET_HANG_OFF && C->any_pending) {
    int64_t reached = INT64_MAX;
    bool seen_only = hang_mode == CS_DET_HANG_SEEN;
    struct member *mem = C->mem;
    for (int r = 0; r < csize; r++)
      if (C->done_max[r] < reached && !(seen_only && mem[r].rank < 0 && !mem[r].host)) reached = C->done_max[r];
    GROW(out->hangs, out->nhangs, *capH);
    struct cs_det_hang *h = &out->hangs[out->nhangs++];
    memset(h, 0, sizeof *h);
    h->comm = C->comm;
    h->comm_size = csize;
    h->reached = reached;
    h->seq = reached + 1;
    h->oldest_enqueue_ns = C->oldest;
    h->missing = calloc((size_t)csize, sizeof *h->missing);
    h->stuck = calloc((size_t)csize, sizeof *h->stuck);
    h->missing_hosts = calloc((size_t)csize, sizeof *h->missing_hosts);
    h->stuck_hosts = calloc((size_t)csize, sizeof *h->stuck_hosts);
    if (!h->missing || !h->stuck || !h->missing_hosts || !h->stuck_hosts) goto oom;
    for (int r = 0; r < csize; r++) {
      if (seen_only && mem[r].rank < 0 && !mem[r].host) continue;
      if (C->entered_max[r] < h->seq) {
        h->missing_hosts[h->nmissing] = mem[r].host ? mem[r].host : "?";
        h->missing[h->nmissing++] = mem[r].rank;
      } else if (C->done_max[r] < h->seq) {
        h->stuck_hosts[h->nstuck] = mem[r].host ? mem[r].host : "?";
        h->stuck[h->nstuck++] = mem[r].rank;
      }
    }
  }
  return 0;
oom:
  return -1;
}

static void params_fix(struct cs_det_params *p, const struct cs_det_params *pp) {
  if (pp)
    *p = *pp;
  else
    cs_det_params_default(p);
  if (p->window < 2) p->window = 2;
  if (p->min_instances < 2) p->min_instances = 2;
  if (p->persist < 1) p->persist = 1;
}

/* ---------------------------------------------------------------- whole set */

int cs_detect(const struct cs_det_op *ops, size_t n, const struct cs_det_params *pp, int hang_mode,
              struct cs_det_result *out) {
  memset(out, 0, sizeof *out);
  struct cs_det_params p;
  params_fix(&p, pp);
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  double *gap = malloc((n ? n : 1) * sizeof *gap);
  struct cs_det_member *mb = NULL;
  size_t capmb = 0, capS = 0, capH = 0, capR = 0;
  struct cstate C = {0};
  if (!idx || !gap) goto oom;

  /* compute gaps: per process, this op's start - the previous op's end */
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    gap[i] = -1;
    if (ops[i].state == CS_DET_DONE) idx[m++] = i;
  }
  qsort_r(idx, m, sizeof *idx, cmp_proc, (void *)ops);
  for (size_t k = 1; k < m; k++) {
    const struct cs_det_op *a = &ops[idx[k - 1]], *b = &ops[idx[k]];
    if (a->rank != b->rank || strcmp(a->host ? a->host : "", b->host ? b->host : "")) continue;
    int64_t g = b->start_ns - a->end_ns;
    gap[idx[k]] = g > 0 ? (double)g / 1e3 : 0;
  }

  for (size_t i = 0; i < n; i++) idx[i] = i;
  qsort_r(idx, n, sizeof *idx, cmp_inst, (void *)ops);

  for (size_t c0 = 0; c0 < n;) {
    size_t c1 = c0;
    uint64_t comm = ops[idx[c0]].comm;
    int csize = 0;
    while (c1 < n && ops[idx[c1]].comm == comm) {
      const struct cs_det_op *o = &ops[idx[c1]];
      if (o->comm_size > csize) csize = o->comm_size;
      if (o->comm_rank + 1 > csize) csize = o->comm_rank + 1;
      c1++;
    }
    if (csize <= 0 || csize > (1 << 20)) {
      c0 = c1;
      continue;
    }
    cstate_free(&C);
    C.comm = comm;
    if (cstate_size(&C, csize, &p)) goto oom;
    for (size_t s0 = c0; s0 < c1;) {
      size_t s1 = s0;
      int64_t seq = ops[idx[s0]].seq;
      while (s1 < c1 && ops[idx[s1]].seq == seq) s1++;
      size_t k = 0;
      for (size_t j = s0; j < s1; j++, k++) {
        GROW(mb, k, capmb);
        const struct cs_det_op *o = &ops[idx[j]];
        mb[k] = (struct cs_det_member){.comm_rank = o->comm_rank, .comm_size = o->comm_size, .rank = o->rank, .host = o->host, .start_ns = o->start_ns, .end_ns = o->end_ns, .enqueue_ns = o->enqueue_ns, .state = o->state, .p2p = o->p2p, .bytes = o->bytes, .gap_us = gap[idx[j]]};
      }
      if (cstate_feed(&C, &p, seq, mb, k)) goto oom;
      s0 = s1;
    }
    if (cstate_finish(&C, &p, hang_mode, out, &capS, &capH, &capR)) goto oom;
    c0 = c1;
  }
  free(idx);
  free(gap);
  free(mb);
  cstate_free(&C);
  return 0;
oom:
  free(idx);
  free(gap);
  free(mb);
  cstate_free(&C);
  cs_det_result_free(out);
  return -1;
}

/* ---------------------------------------------------------------- streaming */

struct cs_det_stream {
  struct cs_det_params p;
  int hang_mode;
  struct cstate *c;   /* hash by comm; each allocated alone */
  struct cstate *hit; /* the last comm looked up */
  bool oom;
};

struct cs_det_stream *cs_det_stream_new(const struct cs_det_params *p, int hang_mode) {
  struct cs_det_stream *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  params_fix(&s->p, p);
  s->hang_mode = hang_mode;
  return s;
}

static struct cstate *stream_comm(struct cs_det_stream *s, uint64_t comm) {
  if (s->hit && s->hit->comm == comm) return s->hit;
  struct cstate *C;
  HASH_FIND(hh, s->c, &comm, sizeof comm, C);
  if (!C) {
    if (!(C = calloc(1, sizeof *C))) return NULL;
    C->comm = comm;
    HASH_ADD(hh, s->c, comm, sizeof comm, C);
  }
  s->hit = C;
  return C;
}

int cs_det_stream_instance(struct cs_det_stream *s, uint64_t comm, int64_t seq, const struct cs_det_member *m,
                           size_t n) {
  if (s->oom) return -1;
  struct cstate *C = stream_comm(s, comm);
  if (!C) return s->oom = true, -1;
  if (C->invalid) return 0;
  int csize = C->csize;
  for (size_t k = 0; k < n; k++) {
    if (m[k].comm_size > csize) csize = m[k].comm_size;
    if (m[k].comm_rank + 1 > csize) csize = m[k].comm_rank + 1;
  }
  if (csize > (1 << 20)) {
    C->invalid = true;
    return 0;
  }
  if (csize <= 0) return 0;
  if (cstate_size(C, csize, &s->p) || cstate_feed(C, &s->p, seq, m, n)) return s->oom = true, -1;
  return 0;
}

static int cmp_cstate(const void *a, const void *b) {
  const struct cstate *x = *(const struct cstate *const *)a, *y = *(const struct cstate *const *)b;
  return x->comm < y->comm ? -1 : x->comm > y->comm;
}

int cs_det_stream_finish(struct cs_det_stream *s, struct cs_det_result *out) {
  memset(out, 0, sizeof *out);
  size_t capS = 0, capH = 0, capR = 0, n = HASH_COUNT(s->c), k = 0;
  int rc = s->oom ? -1 : 0;
  struct cstate **v = malloc((n ? n : 1) * sizeof *v);
  if (!v) rc = -1;
  for (struct cstate *C = s->c; C && v; C = C->hh.next) v[k++] = C;
  if (v && n) qsort(v, n, sizeof *v, cmp_cstate); /* results in communicator order */
  for (size_t i = 0; i < n && !rc; i++)
    if (!v[i]->invalid && v[i]->csize > 0 && cstate_finish(v[i], &s->p, s->hang_mode, out, &capS, &capH, &capR))
      rc = -1;
  free(v);
  if (rc) cs_det_result_free(out);
  return rc;
}

void cs_det_stream_free(struct cs_det_stream *s) {
  if (!s) return;
  struct cstate *C, *t;
  HASH_ITER(hh, s->c, C, t) {
    HASH_DEL(s->c, C);
    cstate_free(C);
    free(C);
  }
  free(s);
}

void cs_det_result_free(struct cs_det_result *r) {
  for (size_t i = 0; i < r->nhangs; i++) {
    free(r->hangs[i].missing);
    free(r->hangs[i].stuck);
    free(r->hangs[i].missing_hosts);
    free(r->hangs[i].stuck_hosts);
  }
  free(r->hangs);
  free(r->stragglers);
  free(r->ranks);
  memset(r, 0, sizeof *r);
}
