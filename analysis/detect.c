/* analysis/detect.c: straggler and hang detection (include/collscope/detect.h). Shared by
 * the CLI (report, top, salvage) and the shim; no I/O, no globals. This file owns the
 * parameters, the whole-set entry point and the stream; the rules, window and final
 * analysis are in analysis/detect_*.c. */
#include "detect_internal.h"

#include "collscope/compute_gap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collscope/uthash_nonfatal.h"

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
  p->frac = 0.015;
  p->link_floor_us = 10000;
  p->cost_window = 300; /* the cost rule (detect_cost.c) */
  p->cost_share = 0.05;
  p->cost_min = 2;
  p->cost_z = 3;
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

static int cmp_inst(const void *a, const void *b, void *ctx) {
  const struct cs_det_op *g_ops = ctx;
  const struct cs_det_op *x = &g_ops[*(const size_t *)a], *y = &g_ops[*(const size_t *)b];
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->comm_rank != y->comm_rank) return x->comm_rank < y->comm_rank ? -1 : 1;
  return 0;
}
/* (process: host, rank; its stream; then a time t) order of two ops */
static int proc_order(const struct cs_det_op *x, int64_t tx, const struct cs_det_op *y, int64_t ty) {
  int c = strcmp(x->host ? x->host : "", y->host ? y->host : "");
  if (c) return c;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return tx < ty ? -1 : tx > ty;
}
/* the timed ops of a process's stream by GPU start */
static int cmp_proc(const void *a, const void *b, void *ctx) {
  const struct cs_det_op *g_ops = ctx;
  const struct cs_det_op *x = &g_ops[*(const size_t *)a], *y = &g_ops[*(const size_t *)b];
  return proc_order(x, x->start_ns, y, y->start_ns);
}
/* the ops of a process's stream that ran untimed, by enqueue time */
static int cmp_proc_enq(const void *a, const void *b, void *ctx) {
  const struct cs_det_op *g_ops = ctx;
  const struct cs_det_op *x = &g_ops[*(const size_t *)a], *y = &g_ops[*(const size_t *)b];
  return proc_order(x, x->enqueue_ns, y, y->enqueue_ns);
}
/* Whether an op of a's process and stream that ran untimed (u: sorted by cmp_proc_enq) was
 * enqueued between a and b: then b's start - a's end spans it, no compute gap. */
static bool untimed_between(const struct cs_det_op *ops, const size_t *u, size_t nu, const struct cs_det_op *a,
                            const struct cs_det_op *b) {
  int64_t lo = a->enqueue_ns < b->enqueue_ns ? a->enqueue_ns : b->enqueue_ns;
  int64_t hi = a->enqueue_ns < b->enqueue_ns ? b->enqueue_ns : a->enqueue_ns;
  size_t l = 0, h = nu; /* the first untimed op after (a's process, lo) */
  while (l < h) {
    size_t mid = l + (h - l) / 2;
    const struct cs_det_op *x = &ops[u[mid]];
    if (proc_order(x, x->enqueue_ns, a, lo) <= 0)
      l = mid + 1;
    else
      h = mid;
  }
  if (l == nu) return false;
  const struct cs_det_op *x = &ops[u[l]];
  return proc_order(x, x->enqueue_ns, a, hi) < 0; /* a's process and stream, before hi */
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

static int detect_run(const struct cs_det_op *ops, size_t n, const struct cs_det_params *pp, int hang_mode,
                      struct cs_det_result *out) {
  memset(out, 0, sizeof *out);
  struct cs_det_params p;
  params_fix(&p, pp);
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  size_t *uidx = malloc((n ? n : 1) * sizeof *uidx);
  double *gap = malloc((n ? n : 1) * sizeof *gap);
  struct cs_det_op *mb = NULL;
  size_t capmb = 0, capS = 0, capH = 0, capR = 0;
  struct cstate C = {0};
  if (!idx || !uidx || !gap) goto oom;

  /* compute gaps: per process and stream, its idle time since the process's previous op of the
   * same communicator there (collscope/compute_gap.h); a span over an op of the stream that ran
   * untimed (sampled out, host-timed) is none: it holds that op's wait for a straggler on every
   * rank alike (as the report's streamed walk, which feeds the same tracker in file order) */
  size_t m = 0, nu = 0;
  for (size_t i = 0; i < n; i++) {
    gap[i] = -1;
    if (ops[i].state == CS_DET_DONE)
      idx[m++] = i;
    else if (ops[i].state == CS_DET_ENTERED || ops[i].state == CS_DET_UNTIMED)
      uidx[nu++] = i;
  }
  qsort_r(idx, m, sizeof *idx, cmp_proc, (void *)ops);
  qsort_r(uidx, nu, sizeof *uidx, cmp_proc_enq, (void *)ops);
  struct cs_gap_tracker gt;
  for (size_t k = 0; k < m; k++) {
    const struct cs_det_op *a = k ? &ops[idx[k - 1]] : NULL, *b = &ops[idx[k]];
    if (!a || a->rank != b->rank || a->stream != b->stream || strcmp(a->host ? a->host : "", b->host ? b->host : ""))
      cs_gap_reset(&gt); /* a new process or stream */
    else if (nu && untimed_between(ops, uidx, nu, a, b))
      cs_gap_untimed(&gt, b->stream);
    gap[idx[k]] = cs_gap_timed(&gt, b->comm, b->stream, b->start_ns, b->end_ns);
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
    cs_det_cstate_free(&C);
    C.comm = comm;
    if (cs_det_cstate_size(&C, csize, &p)) goto oom;
    for (size_t s0 = c0; s0 < c1;) {
      size_t s1 = s0;
      int64_t seq = ops[idx[s0]].seq;
      while (s1 < c1 && ops[idx[s1]].seq == seq) s1++;
      size_t k = 0;
      for (size_t j = s0; j < s1; j++, k++) {
        GROW(mb, k, capmb);
        const struct cs_det_op *o = &ops[idx[j]];
        mb[k] = *o; /* the same type: the stream's input, with the gap computed here */
        mb[k].gap_us = gap[idx[j]];
      }
      if (cs_det_cstate_feed(&C, &p, seq, mb, k)) goto oom;
      s0 = s1;
    }
    if (cs_det_cstate_finish(&C, &p, hang_mode, out, &capS, &capH, &capR)) goto oom;
    c0 = c1;
  }
  if (cs_det_hangs_resolve(out)) goto oom;
  free(idx);
  free(uidx);
  free(gap);
  free(mb);
  cs_det_cstate_free(&C);
  return 0;
oom:
  free(idx);
  free(uidx);
  free(gap);
  free(mb);
  cs_det_cstate_free(&C);
  cs_det_result_free(out);
  return -1;
}

/* a group's members are one instance (detect_group.c): merged on a copy, `ops` stays as given */
int cs_detect(const struct cs_det_op *ops, size_t n, const struct cs_det_params *pp, int hang_mode,
              struct cs_det_result *out) {
  bool grouped = false;
  for (size_t i = 0; i < n && !grouped; i++) grouped = ops[i].group && ops[i].group_ops > 1;
  if (!grouped) return detect_run(ops, n, pp, hang_mode, out);
  struct cs_det_op *g = malloc(n * sizeof *g);
  if (!g) {
    memset(out, 0, sizeof *out);
    return -1;
  }
  memcpy(g, ops, n * sizeof *g);
  cs_det_group_merge(g, n);
  int rc = detect_run(g, n, pp, hang_mode, out);
  free(g);
  return rc;
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
    if (!CS_HASH_ADDED()) return free(C), NULL;
  }
  s->hit = C;
  return C;
}

int cs_det_stream_instance(struct cs_det_stream *s, uint64_t comm, int64_t seq, const struct cs_det_op *m,
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
  if (cs_det_cstate_size(C, csize, &s->p) || cs_det_cstate_feed(C, &s->p, seq, m, n)) return s->oom = true, -1;
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
    if (!v[i]->invalid && v[i]->csize > 0 && cs_det_cstate_finish(v[i], &s->p, s->hang_mode, out, &capS, &capH, &capR))
      rc = -1;
  free(v);
  if (!rc && cs_det_hangs_resolve(out)) rc = -1;
  if (rc) cs_det_result_free(out);
  return rc;
}

void cs_det_stream_free(struct cs_det_stream *s) {
  if (!s) return;
  struct cstate *C, *t;
  HASH_ITER(hh, s->c, C, t) {
    HASH_DEL(s->c, C);
    cs_det_cstate_free(C);
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
    free(r->hangs[i].unstarted);
    free(r->hangs[i].unstarted_hosts);
  }
  free(r->hangs);
  free(r->stragglers);
  free(r->ranks);
  memset(r, 0, sizeof *r);
}
