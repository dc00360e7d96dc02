/* stats/detect.c: straggler and hang detection (include/collscope/detect.h). Shared by
 * the CLI (report, top, salvage) and the shim; no I/O, no globals. */
#include "collscope/detect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cs_det_params_default(struct cs_det_params *p) {
  p->window = 100;
  p->min_instances = 10;
  p->share = 0.25;
  p->z = 6.0;
  p->persist = 10;
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
static double det_sqrt(double x) {
  if (!(x > 0)) return 0;
  double g = x > 1 ? x : 1;
  for (int i = 0; i < 64; i++) {
    double n = 0.5 * (g + x / g);
    if (n == g) break;
    g = n;
  }
  return g;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
/* median of v[0..n) (sorts v); lower middle for even n */
static double median(double *v, size_t n) {
  if (!n) return 0;
  if (n) qsort(v, n, sizeof *v, cmp_d);
  return v[(n - 1) / 2];
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
  int last;          /* comm_rank that arrived last */
  double lateness, med, gap_last, gap_peers;
  int64_t seq;
  uint64_t bytes;
};

struct member {      /* comm_rank -> identity */
  int rank;
  const char *host;
};

#define GROW(ptr, n, cap)                                                      \
  do {                                                                         \
    if ((n) == (cap)) {                                                        \
      size_t nc_ = (cap) ? (cap) * 2 : 16;                                     \
      void *np_ = realloc((ptr), nc_ * sizeof *(ptr));                         \
      if (!np_) goto oom;                                                      \
      (ptr) = np_;                                                             \
      (cap) = nc_;                                                             \
    }                                                                          \
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

int cs_detect(const struct cs_det_op *ops, size_t n, const struct cs_det_params *pp, int hang_mode,
              struct cs_det_result *out) {
  memset(out, 0, sizeof *out);
  struct cs_det_params p;
  if (pp) p = *pp;
  else cs_det_params_default(&p);
  if (p.window < 2) p.window = 2;
  if (p.min_instances < 2) p.min_instances = 2;
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  double *gap = malloc((n ? n : 1) * sizeof *gap);
  double *scratch = NULL, *durs = NULL, *gaps = NULL;
  struct inst *in = NULL;
  size_t nin = 0, capin = 0, capS = 0, capH = 0, capR = 0;
  struct member *mem = NULL;
  size_t *cnt = NULL;
  int64_t *done_max = NULL, *entered_max = NULL;
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
  scratch = malloc((p.window + 1) * sizeof *scratch);
  if (!scratch) goto oom;

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
    if (csize <= 0 || csize > (1 << 20)) { c0 = c1; continue; }
    free(mem); free(cnt); free(done_max); free(entered_max); free(durs); free(gaps);
    mem = calloc((size_t)csize, sizeof *mem);
    cnt = calloc((size_t)csize, sizeof *cnt);
    done_max = malloc((size_t)csize * sizeof *done_max);
    entered_max = malloc((size_t)csize * sizeof *entered_max);
    durs = malloc((size_t)csize * sizeof *durs);
    gaps = malloc((size_t)csize * sizeof *gaps);
    if (!mem || !cnt || !done_max || !entered_max || !durs || !gaps) goto oom;
    for (int r = 0; r < csize; r++) { mem[r].rank = -1; mem[r].host = NULL; done_max[r] = entered_max[r] = -1; }
    bool any_pending = false;
    int64_t oldest = 0;

    /* instances of this comm */
    nin = 0;
    for (size_t s0 = c0; s0 < c1;) {
      size_t s1 = s0;
      int64_t seq = ops[idx[s0]].seq;
      while (s1 < c1 && ops[idx[s1]].seq == seq) s1++;
      size_t nd = 0;
      uint64_t ibytes = 0;
      int lastr = -1;
      double mind = 0, gl = -1;
      for (size_t k = s0; k < s1; k++) {
        const struct cs_det_op *o = &ops[idx[k]];
        if (o->comm_rank >= 0 && o->comm_rank < csize) {
          struct member *mm = &mem[o->comm_rank];
          if (mm->rank < 0) mm->rank = o->rank;
          if (!mm->host) mm->host = o->host;
          if (seq >= 0) {
            if (o->state == CS_DET_DONE || o->state == CS_DET_UNTIMED) {
              if (seq > done_max[o->comm_rank]) done_max[o->comm_rank] = seq;
              if (seq > entered_max[o->comm_rank]) entered_max[o->comm_rank] = seq;
            } else if (o->state == CS_DET_PENDING) {
              any_pending = true;
              if (seq > entered_max[o->comm_rank]) entered_max[o->comm_rank] = seq;
              if (o->enqueue_ns && (!oldest || o->enqueue_ns < oldest)) oldest = o->enqueue_ns;
            }
          }
        }
        if (seq < 0 || o->p2p || o->state != CS_DET_DONE || o->end_ns < o->start_ns) continue;
        if (o->bytes > ibytes) ibytes = o->bytes;
        double d = (double)(o->end_ns - o->start_ns) / 1e3;
        if (nd == 0 || d < mind) { mind = d; lastr = o->comm_rank; gl = gap[idx[k]]; }
        durs[nd++] = d;
      }
      if (nd >= 2 && lastr >= 0 && lastr < csize) {
        /* peers' gaps */
        size_t ng = 0;
        for (size_t k = s0; k < s1; k++) {
          const struct cs_det_op *o = &ops[idx[k]];
          if (o->comm_rank != lastr && o->state == CS_DET_DONE && gap[idx[k]] >= 0 && ng < (size_t)csize)
            gaps[ng++] = gap[idx[k]];
        }
        GROW(in, nin, capin);
        struct inst *I = &in[nin++];
        I->med = median(durs, nd);
        I->last = lastr;
        I->lateness = I->med - mind;
        I->gap_last = gl;
        I->gap_peers = ng ? median(gaps, ng) : -1;
        I->seq = seq;
        I->bytes = ibytes;
      }
      s0 = s1;
    }
    out->instances += nin;

    /* sliding window */
    int flagged_now = -1, streak_rank = -1;
    unsigned streak = 0;
    size_t streak_at = 0, first_s = out->nstragglers;
    for (size_t i = 0; i < nin; i++) {
      cnt[in[i].last]++;
      size_t lo = i + 1 > p.window ? i + 1 - p.window : 0;
      if (lo > 0) cnt[in[lo - 1].last]--;
      size_t w = i + 1 - lo;
      flagged_now = -1;
      if (w < p.min_instances) continue;
      int cand = 0;
      for (int r = 1; r < csize; r++)
        if (cnt[r] > cnt[cand]) cand = r;
      double p0 = 1.0 / (double)csize, need = p0 + p.z * det_sqrt(p0 * (1 - p0) / (double)w);
      if (need < p.share) need = p.share;
      if ((double)cnt[cand] < need * (double)w) continue;
      struct cs_det_straggler s = {0};
      if (!eval_cand(in, lo, i + 1, cand, &p, scratch, &s)) continue;
      /* persistence: a burst of scheduling noise on a busy host is not a straggler */
      streak = streak_rank == cand && streak_at + 1 == i ? streak + 1 : 1;
      streak_rank = cand;
      streak_at = i;
      if (streak < p.persist) continue;
      flagged_now = cand;
      size_t j;
      for (j = first_s; j < out->nstragglers; j++)
        if (out->stragglers[j].comm_rank == cand) break;
      if (j == out->nstragglers) {
        GROW(out->stragglers, out->nstragglers, capS);
        out->nstragglers++;
        s.first_flag_instance = i + 1;
        s.first_flag_seq = in[i].seq;
      } else {
        s.first_flag_instance = out->stragglers[j].first_flag_instance;
        s.first_flag_seq = out->stragglers[j].first_flag_seq;
      }
      s.comm = comm;
      s.comm_size = csize;
      s.comm_rank = cand;
      s.rank = mem[cand].rank;
      s.host = mem[cand].host;
      out->stragglers[j] = s;
    }
    /* per-rank figures over the final window */
    size_t lo = nin > p.window ? nin - p.window : 0;
    /* slow link: no rank flagged now, everyone equally slow on small messages */
    if (flagged_now < 0 && nin - lo >= p.min_instances) {
      size_t ns = 0, nl = 0;
      for (size_t i = lo; i < nin; i++)
        if (in[i].bytes <= 65536) scratch[ns++] = in[i].med;
      double small = median(scratch, ns);
      for (size_t i = lo; i < nin; i++) scratch[nl++] = in[i].med > 0 ? in[i].lateness / in[i].med : 0;
      double rel = median(scratch, nl);
      if (ns >= 2 && small >= p.link_floor_us && rel < 0.1) {
        GROW(out->stragglers, out->nstragglers, capS);
        struct cs_det_straggler *s = &out->stragglers[out->nstragglers++];
        memset(s, 0, sizeof *s);
        s->comm = comm;
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
        s->first_flag_instance = nin;
        s->first_flag_seq = in[nin - 1].seq;
      }
    }
    for (int r = 0; r < csize; r++) {
      GROW(out->ranks, out->nranks, capR);
      struct cs_det_rankstat *rs = &out->ranks[out->nranks++];
      memset(rs, 0, sizeof *rs);
      rs->comm = comm;
      rs->comm_rank = r;
      rs->rank = mem[r].rank;
      rs->host = mem[r].host;
      rs->instances = nin - lo;
      size_t k = 0;
      for (size_t i = lo; i < nin; i++)
        if (in[i].last == r) scratch[k++] = in[i].lateness;
      rs->last = k;
      rs->lateness_us = median(scratch, k);
      rs->straggler = flagged_now == r;
    }

    /* hang */
    if (hang_mode != CS_DET_HANG_OFF && any_pending) {
      int64_t reached = INT64_MAX;
      bool seen_only = hang_mode == CS_DET_HANG_SEEN;
      for (int r = 0; r < csize; r++)
        if (done_max[r] < reached && !(seen_only && mem[r].rank < 0 && !mem[r].host)) reached = done_max[r];
      GROW(out->hangs, out->nhangs, capH);
      struct cs_det_hang *h = &out->hangs[out->nhangs++];
      memset(h, 0, sizeof *h);
      h->comm = comm;
      h->comm_size = csize;
      h->reached = reached;
      h->seq = reached + 1;
      h->oldest_enqueue_ns = oldest;
      h->missing = calloc((size_t)csize, sizeof *h->missing);
      h->stuck = calloc((size_t)csize, sizeof *h->stuck);
      h->missing_hosts = calloc((size_t)csize, sizeof *h->missing_hosts);
      h->stuck_hosts = calloc((size_t)csize, sizeof *h->stuck_hosts);
      if (!h->missing || !h->stuck || !h->missing_hosts || !h->stuck_hosts) goto oom;
      for (int r = 0; r < csize; r++) {
        if (seen_only && mem[r].rank < 0 && !mem[r].host) continue;
        if (entered_max[r] < h->seq) {
          h->missing_hosts[h->nmissing] = mem[r].host ? mem[r].host : "?";
          h->missing[h->nmissing++] = mem[r].rank;
        } else if (done_max[r] < h->seq) {
          h->stuck_hosts[h->nstuck] = mem[r].host ? mem[r].host : "?";
          h->stuck[h->nstuck++] = mem[r].rank;
        }
      }
    }
    c0 = c1;
  }
  free(idx); free(gap); free(scratch); free(in); free(mem); free(cnt);
  free(done_max); free(entered_max); free(durs); free(gaps);
  return 0;
oom:
  free(idx); free(gap); free(scratch); free(in); free(mem); free(cnt);
  free(done_max); free(entered_max); free(durs); free(gaps);
  cs_det_result_free(out);
  return -1;
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
