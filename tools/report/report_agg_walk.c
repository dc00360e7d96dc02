/* tools/report/report_agg_walk.c: the report's per-instance work on the main side: the dense rank
 * numbering the detector sees, each instance into the detector and the SDC comparison, and
 * the walk of a round's records on a thread of its own while the next round is read. */
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
#include "report_balance.h"
#include "report_steps_internal.h"
#include "report_views.h"
#include "xalloc.h"

struct dense_comm *agg_dense_comm_of(struct report_agg_priv *P, uint64_t comm) {
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
int agg_dense_of(struct report_agg_priv *P, struct dense_comm *c, int real, int declared) {
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
int agg_real_of(struct report_agg_priv *P, uint64_t comm, int dense) {
  struct dense_comm *c;
  HASH_FIND(hh, P->dcomms, &comm, sizeof comm, c);
  return c && dense >= 0 && (size_t)dense < c->n ? c->real[dense] : dense;
}
int agg_declared_of(struct report_agg_priv *P, uint64_t comm, int size) {
  struct dense_comm *c;
  HASH_FIND(hh, P->dcomms, &comm, sizeof comm, c);
  return c && c->declared > size ? c->declared : size;
}
void report_agg_sdc_instance(struct agg_sdc *out, struct cs_sdc_member **mem, size_t *memcap, const char *op_filter,
                             uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
  bool mixed = false, any = false;
  for (size_t k = 0; k < n; k++) {
    mixed |= m[k].op_name != m[0].op_name; /* interned */
    any |= m[k].sdc_checked != 0;
  }
  if (!any || mixed || (op_filter && strcmp(m[0].op_name, op_filter) != 0)) return;
  if (n > *memcap) {
    *memcap = 2 * n;
    *mem = xrealloc(*mem, *memcap * sizeof **mem);
  }
  int csize = 0;
  size_t nm = 0;
  for (size_t k = 0; k < n; k++) {
    if (m[k].comm_size > csize) csize = m[k].comm_size;
    if (nm && (*mem)[nm - 1].comm_rank == m[k].comm_rank) continue; /* duplicate rank: keep the first */
    (*mem)[nm++] = (struct cs_sdc_member){m[k].comm_rank, m[k].status == 0 ? m[k].sdc_checked : 0, m[k].sdc_fp,
                                          m[k].sdc_in_sum, m[k].sdc_in_abs, m[k].sdc_out_sum};
  }
  const struct cs_walk_rec *o0 = &m[0];
  struct cs_sdc_instance si = {o0->op, cli_sdc_dtype(o0->dtype), cli_sdc_redop(o0->redop), o0->root, csize,
                               (uint64_t)(o0->count > 0 ? o0->count : 0), nm, *mem};
  struct cs_sdc_finding f[64];
  struct cs_sdc_outcome oc;
  size_t nf = cs_sdc_compare(&si, f, 64, &oc);
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

/* ---------- groups: a group's members on a communicator are one instance ---------- */

static int state_rank(int s) {
  return s == CS_DET_FAILED ? 4 : s == CS_DET_PENDING ? 3
                              : s == CS_DET_ENTERED   ? 2
                              : s == CS_DET_UNTIMED   ? 1
                                                      : 0;
}
static bool grouped(const struct cs_walk_rec *r) { return r->group != 0 && r->group_ops > 1; }

/* the gathered group fed to the detector: one member per rank, the group's span, the
 * all-to-all's Send bytes (a collective) or all members' bytes */
static void group_close(struct report_agg_priv *P, struct gpend *g) {
  if (!g->open) return;
  g->open = false;
  struct dense_comm *dc = agg_dense_comm_of(P, g->comm);
  if (g->cap > P->dmcap) {
    P->dmcap = 2 * g->cap;
    P->dm = xrealloc(P->dm, P->dmcap * sizeof *P->dm);
  }
  size_t n = 0;
  for (size_t i = 0; i < g->cap; i++) {
    struct gmem *x = &g->v[i];
    if (!x->in) continue;
    x->in = false;
    bool a2a = cs_det_a2a_collective(&x->a2a, x->comm_size, x->comm_rank);
    P->dm[n] = x->d;
    P->dm[n].comm_size = (int)dc->n;
    P->dm[n].bytes = a2a ? x->a2a.send_bytes : x->bytes;
    P->dm[n].p2p = x->p2p_all && !a2a;
    n++;
  }
  if (g->counted) {
    struct inst_ent *ie;
    HASH_FIND(hh, P->inst, &g->comm, sizeof g->comm, ie);
    if (!ie) {
      ie = xcalloc(1, sizeof *ie);
      ie->comm = g->comm;
      HASH_ADD(hh, P->inst, comm, sizeof g->comm, ie);
    }
    ie->n++;
  }
  if (n && P->det && cs_det_stream_instance(P->det, g->comm, g->seq, P->dm, n)) P->oom = true;
}

/* whether the instance (its first member) goes on the communicator's open group */
static bool group_continues(struct report_agg_priv *P, struct gpend *g, const struct cs_walk_rec *m0) {
  if (!g->open || !grouped(m0)) return false;
  int d = agg_dense_of(P, agg_dense_comm_of(P, g->comm), m0->comm_rank, m0->comm_size);
  return d >= 0 && (size_t)d < g->cap && g->v[d].in && g->v[d].group == m0->group;
}

static void group_add(struct report_agg_priv *P, struct gpend *g, int64_t seq, const struct cs_walk_rec *m, size_t n) {
  struct dense_comm *dc = agg_dense_comm_of(P, g->comm);
  if (!g->open) {
    g->open = true;
    g->counted = false;
    g->seq = seq; /* the first member's: the same on every rank of a well-formed program */
  }
  for (size_t k = 0; k < n; k++) {
    const struct cs_walk_rec *r = &m[k];
    int d = agg_dense_of(P, dc, r->comm_rank, r->comm_size);
    if (d < 0) continue;
    if ((size_t)d >= g->cap) {
      size_t cap = g->cap ? g->cap : 8;
      while (cap <= (size_t)d) cap *= 2;
      g->v = xreallocarray(g->v, cap, sizeof *g->v);
      memset(g->v + g->cap, 0, (cap - g->cap) * sizeof *g->v);
      g->cap = cap;
    }
    struct gmem *x = &g->v[d];
    g->counted |= r->counts;
    if (!x->in) {
      memset(x, 0, sizeof *x);
      x->in = true;
      x->group = r->group;
      x->comm_rank = r->comm_rank;
      x->comm_size = r->comm_size;
      x->p2p_all = true;
      x->d = r->det; /* bytes, p2p and the comm size: the group's, when it closes */
      x->d.comm_rank = d;
      x->d.last_seq = seq;
    } else if (x->group != r->group) {
      continue; /* a rank out of step with the others: not this group's */
    } else {
      if (r->start_ns && (!x->d.start_ns || r->start_ns < x->d.start_ns)) x->d.start_ns = r->start_ns;
      if (r->end_ns > x->d.end_ns) x->d.end_ns = r->end_ns;
      if (r->enqueue_ns && (!x->d.enqueue_ns || r->enqueue_ns < x->d.enqueue_ns)) x->d.enqueue_ns = r->enqueue_ns;
      if (state_rank(r->state) > state_rank(x->d.state)) x->d.state = r->state;
      if (seq > x->d.last_seq) x->d.last_seq = seq;
    }
    x->bytes += r->bytes;
    x->p2p_all &= r->p2p;
    cs_det_a2a_add(&x->a2a, r->p2p, r->recv, r->peer, r->comm_size, r->bytes);
  }
}

void agg_groups_flush(struct report_agg_priv *P) {
  struct gpend *g, *t;
  HASH_ITER(hh, P->gpend, g, t)
  group_close(P, g);
}
void agg_groups_free(struct report_agg_priv *P) {
  struct gpend *g, *t;
  HASH_ITER(hh, P->gpend, g, t) {
    HASH_DEL(P->gpend, g);
    free(g->v);
    free(g);
  }
}

void agg_on_instance(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
  struct report_agg_priv *P = ctx;
  /* a group's members (one span for all of them): gathered into one instance for the detector
   * and the instance counts; SDC, views and balance still see each member */
  struct gpend *g;
  HASH_FIND(hh, P->gpend, &comm, sizeof comm, g);
  bool grp = n > 0 && grouped(&m[0]);
  if (g && g->open && !(grp && group_continues(P, g, &m[0]))) group_close(P, g);
  if (grp) {
    if (!g) {
      g = xcalloc(1, sizeof *g);
      g->comm = comm;
      HASH_ADD(hh, P->gpend, comm, sizeof comm, g);
    }
    group_add(P, g, seq, m, n);
    size_t nfound = P->agg->sdc.nitems;
    report_agg_sdc_instance(&P->agg->sdc, &P->mem, &P->memcap, P->agg->op_filter, comm, seq, m, n);
    report_views_instance(P->agg->views, comm, seq, m, n, P->agg->sdc.nitems - nfound);
    report_balance_instance(P->agg->balance, comm, seq, m, n);
    report_steps_gather_instance(P->agg->steps, comm, seq, m, n);
    return;
  }
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
  struct dense_comm *dc = agg_dense_comm_of(P, comm);
  for (size_t k = 0; k < n; k++) { /* the record's detector part, in the detector's rank numbering */
    P->dm[k] = m[k].det;
    P->dm[k].comm_rank = agg_dense_of(P, dc, m[k].comm_rank, m[k].comm_size);
  }
  for (size_t k = 0; k < n; k++) P->dm[k].comm_size = (int)dc->n;
  for (size_t i = 1; i < n; i++) { /* in dense order, one rank's records together (stable) */
    struct cs_det_op t = P->dm[i];
    size_t j = i;
    while (j > 0 && P->dm[j - 1].comm_rank > t.comm_rank) {
      P->dm[j] = P->dm[j - 1];
      j--;
    }
    P->dm[j] = t;
  }
  if (P->det && cs_det_stream_instance(P->det, comm, seq, P->dm, n)) P->oom = true;
  size_t nfound = P->agg->sdc.nitems;
  report_agg_sdc_instance(&P->agg->sdc, &P->mem, &P->memcap, P->agg->op_filter, comm, seq, m, n);
  report_views_instance(P->agg->views, comm, seq, m, n, P->agg->sdc.nitems - nfound);
  report_balance_instance(P->agg->balance, comm, seq, m, n);
  report_steps_gather_instance(P->agg->steps, comm, seq, m, n);
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
void agg_walk_join(struct report_agg_priv *P) {
  if (!P->bg_on) return;
  pthread_join(P->bg, NULL);
  P->bg_on = false;
}

/* A round read: its records become the pending ones, walked on a thread of their own while
 * the reading threads go on with the next round (the walk is the serial part of the report:
 * a third of its CPU). The last round is walked before returning. */
void agg_on_round(void *ctx, const bool *done, size_t nfiles) {
  struct report_agg_priv *P = ctx;
  agg_walk_join(P);
  bool all = true;
  for (size_t i = 0; i < nfiles && i < P->nf; i++) {
    struct fstate *F = &P->fs[i];
    if (done[i]) agg_group_file_done(P, F); /* its groups left open: their rows */
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
