/* tools/report/detect_input.c: a loaded dump set as the detector's input (analysis/detect.c):
 * every op record (all comms, no --op filter) plus the shim's "hang" records. The report
 * itself feeds the streaming detector while it reads (tools/report/report_agg.c); this whole-set
 * path serves `collscope demo` and the tests that check the two agree. */
#include <stdlib.h>

#include "cli.h"
#include "collscope/schema.h"
#include "report.h"
#include "report_agg.h"
#include "xalloc.h"

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

/* Per communicator, the comm_ranks its records name, ascending: the detector works on their
 * index (dense, 0..seen-1), so its per-communicator state is sized by the ranks actually seen,
 * never by a comm_size or comm_rank read from a file; results get the real ones back. */
struct comm_ranks {
  uint64_t comm;
  int declared;  /* the largest comm_size a record gives */
  size_t off, n; /* its ranks: real[off .. off + n) */
};
struct rank_ids {
  struct comm_ranks *c;
  size_t nc;
  int *real;
};
struct comm_rank_pair {
  uint64_t comm;
  int rank, size;
};
static int cmp_comm_rank(const void *a, const void *b) {
  const struct comm_rank_pair *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}
static void rank_ids_build(struct rank_ids *m, const struct cs_det_op *v, size_t n) {
  struct comm_rank_pair *p = xcalloc(n, sizeof *p);
  for (size_t i = 0; i < n; i++) p[i] = (struct comm_rank_pair){v[i].comm, v[i].comm_rank, v[i].comm_size};
  if (n) qsort(p, n, sizeof *p, cmp_comm_rank);
  m->c = xcalloc(n, sizeof *m->c);
  m->real = xcalloc(n, sizeof *m->real);
  m->nc = 0;
  size_t nr = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || p[i].comm != p[i - 1].comm) m->c[m->nc++] = (struct comm_ranks){p[i].comm, p[i].size, nr, 0};
    struct comm_ranks *c = &m->c[m->nc - 1];
    if (p[i].size > c->declared) c->declared = p[i].size;
    if (p[i].rank < 0 || (c->n && m->real[nr - 1] == p[i].rank)) continue;
    m->real[nr++] = p[i].rank;
    c->n++;
  }
  free(p);
}
static const struct comm_ranks *rank_ids_comm(const struct rank_ids *m, uint64_t comm) {
  size_t lo = 0, hi = m->nc;
  while (lo < hi) {
    size_t k = (lo + hi) / 2;
    if (m->c[k].comm < comm)
      lo = k + 1;
    else
      hi = k;
  }
  return lo < m->nc && m->c[lo].comm == comm ? &m->c[lo] : NULL;
}
/* dense index of comm_rank r, -1 when negative */
static int rank_ids_dense(const struct rank_ids *m, const struct comm_ranks *c, int r) {
  if (r < 0 || !c) return -1;
  const int *p = bsearch(&r, m->real + c->off, c->n, sizeof *p, cmp_int);
  return p ? (int)(p - (m->real + c->off)) : -1;
}
static int rank_ids_real(const struct rank_ids *m, uint64_t comm, int dense) {
  const struct comm_ranks *c = rank_ids_comm(m, comm);
  return c && dense >= 0 && (size_t)dense < c->n ? m->real[c->off + (size_t)dense] : dense;
}
static int rank_ids_declared(const struct rank_ids *m, uint64_t comm, int dense_size) {
  const struct comm_ranks *c = rank_ids_comm(m, comm);
  return c && c->declared > dense_size ? c->declared : dense_size;
}

int cli_detect_dumpset(const struct cs_dumpset *set, const struct cs_det_params *p, struct cs_det_result *out) {
  size_t n = 0;
  for (size_t i = 0; i < set->nfiles; i++) n += set->files[i].nops + set->files[i].nhangs;
  struct cs_det_op *v = xcalloc(n, sizeof *v);
  size_t k = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t j = 0; j < f->nops; j++) {
      const struct cs_op_rec *o = &f->ops[j];
      if (o->seq < 0) continue;
      struct cs_det_op *d = &v[k++];
      d->comm = o->comm;
      d->seq = o->seq;
      d->comm_size = o->comm_size;
      d->comm_rank = o->comm_rank;
      d->rank = o->rank >= 0 ? o->rank : f->hdr.rank;
      d->host = f->hdr.host;
      d->start_ns = o->start_ns;
      d->end_ns = o->end_ns;
      d->enqueue_ns = o->enqueue_ns;
      d->state = report_op_det_state(o);
      d->p2p = o->op >= 0 && cs_op_table[o->op].cls == CS_CLASS_P2P;
      d->bytes = o->bytes;
      d->stream = o->stream;
      d->group = o->group > 0 ? (uint64_t)o->group : 0;
      d->group_ops = o->group_ops > UINT32_MAX ? UINT32_MAX : (uint32_t)o->group_ops;
      d->peer = o->peer;
      d->recv = o->op == CS_OP_Recv;
    }
    for (size_t j = 0; j < f->nhangs; j++) {
      const struct cs_hang_rec *h = &f->hangs[j];
      struct cs_det_op *d = &v[k++];
      d->comm = h->comm;
      d->seq = h->seq;
      d->comm_size = h->comm_size;
      d->comm_rank = h->comm_rank;
      d->rank = h->rank >= 0 ? h->rank : f->hdr.rank;
      d->host = f->hdr.host;
      d->enqueue_ns = h->enqueue_ns;
      d->state = CS_DET_PENDING;
      d->gpu_start = cs_det_hang_start(h->started, h->start_known);
    }
  }
  struct rank_ids ids;
  rank_ids_build(&ids, v, k);
  for (size_t i = 0; i < k; i++) {
    const struct comm_ranks *c = rank_ids_comm(&ids, v[i].comm);
    v[i].comm_rank = rank_ids_dense(&ids, c, v[i].comm_rank);
    v[i].comm_size = c ? (int)c->n : 0;
  }
  int rc = cs_detect(v, k, p, CS_DET_HANG_PENDING, out);
  if (rc == 0) {
    for (size_t i = 0; i < out->nstragglers; i++) {
      struct cs_det_straggler *s = &out->stragglers[i];
      if (s->comm_rank >= 0) s->comm_rank = rank_ids_real(&ids, s->comm, s->comm_rank);
      s->comm_size = rank_ids_declared(&ids, s->comm, s->comm_size);
    }
    for (size_t i = 0; i < out->nranks; i++)
      out->ranks[i].comm_rank = rank_ids_real(&ids, out->ranks[i].comm, out->ranks[i].comm_rank);
    for (size_t i = 0; i < out->nhangs; i++)
      out->hangs[i].comm_size = rank_ids_declared(&ids, out->hangs[i].comm, out->hangs[i].comm_size);
  }
  free(ids.c);
  free(ids.real);
  free(v);
  return rc;
}
