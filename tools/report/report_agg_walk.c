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

void agg_on_instance(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
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
  struct dense_comm *dc = agg_dense_comm_of(P, comm);
  for (size_t k = 0; k < n; k++)
    P->dm[k] = (struct cs_det_member){.comm_rank = agg_dense_of(P, dc, m[k].comm_rank, m[k].comm_size),
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
  report_agg_sdc_instance(&P->agg->sdc, &P->mem, &P->memcap, P->agg->op_filter, comm, seq, m, n);
  report_views_instance(P->agg->views, comm, seq, m, n, P->agg->sdc.nitems - nfound);
  report_balance_instance(P->agg->balance, comm, seq, m, n);
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
