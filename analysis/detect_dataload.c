/* analysis/detect_dataload.c: load that follows the data is not a straggler. A rank given more
 * work by the data (an expert-parallel step's hot expert) arrives late at the communicator's
 * next collective, and moves more bytes in its Send/Recv of the comm before it (dispatch and
 * combine carry its tokens). Per instance, a robust line of arrival offset against those bytes
 * across the members (Theil-Sen: the median slope over member pairs with different bytes, at
 * most CS_DET_DL_PAIRS pairs, clamped >= 0) gives each rank the offset its peers had with its
 * bytes; the rules judge what is left (its residual). A slowed GPU moves the bytes its peers
 * do and keeps its lateness. No Send/Recv, or equal bytes: the offsets stay as they are. The
 * fit works on plain arrays (cs_det_dataload_fit), for any caller; cs_det_dataload is the
 * report's adapter. */
#include "detect_internal.h"

#include <stdlib.h>

/* The P2P bytes before a collective: a Send/Recv member adds its bytes to its rank's sum and
 * gets -1; a collective member gets the sum, which starts over. */
double cs_det_p2p_bytes(struct cstate *C, const struct cs_det_op *o) {
  if (o->comm_rank < 0 || o->comm_rank >= C->csize) return 0;
  struct rstate *R = &C->rs[o->comm_rank];
  if (o->p2p) {
    R->p2p_bytes += (double)o->bytes;
    return -1;
  }
  double b = R->p2p_bytes;
  R->p2p_bytes = 0;
  return b;
}

static int cmp_point(const void *a, const void *b) {
  const struct dl_point *x = a, *y = b;
  if (x->x != y->x) return x->x < y->x ? -1 : 1;
  return x->y < y->y ? -1 : x->y > y->y;
}

/* the Theil-Sen slope over the points v[0..n) sorted by x: every pair when there are at most
 * CS_DET_DL_PAIRS, else the pairs (k, k + n/2) of the order (the widest apart in bytes), every
 * s-th of them. Pairs with equal x give no slope; when they are half the pairs or more, no
 * line is read (a few ranks with other bytes alone would set it, and a slowed one among them
 * would explain itself away). Returns the slope, 0 when none. */
static double theil_sen(const struct dl_point *v, size_t n, double *sl) {
  size_t np = 0, nd = 0;
  if (n * (n - 1) / 2 <= CS_DET_DL_PAIRS) {
    for (size_t i = 0; i < n; i++)
      for (size_t j = i + 1; j < n; j++, np++)
        if (v[j].x > v[i].x) sl[nd++] = (v[j].y - v[i].y) / (v[j].x - v[i].x);
  } else {
    size_t h = n / 2, s = (h + CS_DET_DL_PAIRS - 1) / CS_DET_DL_PAIRS;
    for (size_t k = 0; k < h; k += s, np++)
      if (v[k + h].x > v[k].x) sl[nd++] = (v[k + h].y - v[k].y) / (v[k + h].x - v[k].x);
  }
  if (2 * nd <= np) return 0;
  return cs_det_median_mid(sl, nd);
}

/* The data-load fit over plain arrays: when there are four or more members, whose bytes
 * differ, and the line rises, each off[k] becomes its residual, off - slope x bytes less the
 * members' median of that (so the median rank stays at 0). Returns the slope, 0 when the
 * offsets were left as they are. */
double cs_det_dataload_fit(size_t n, const double *xb, double *off, struct dl_point *v, double *sl) {
  if (n < 4) return 0; /* a pair's line passes through both: no rank could be late */
  bool differ = false;
  for (size_t k = 1; k < n && !differ; k++) differ = xb[k] != xb[0];
  if (!differ) return 0;
  for (size_t k = 0; k < n; k++) v[k] = (struct dl_point){xb[k], off[k]};
  qsort(v, n, sizeof *v, cmp_point);
  double slope = theil_sen(v, n, sl);
  if (!(slope > 0)) return 0; /* more bytes never make a rank early */
  for (size_t k = 0; k < n; k++) sl[k] = off[k] - slope * xb[k];
  double icpt = cs_det_median_mid(sl, n);
  for (size_t k = 0; k < n; k++) off[k] = off[k] - slope * xb[k] - icpt;
  return slope;
}

/* The report's adapter: the fit of the instance whose n entries start at ents[e0] (offsets
 * set), their off_us rewritten when it applies. */
double cs_det_dataload(struct cstate *C, size_t e0, size_t n) {
  struct ent *e = C->ents + e0;
  for (size_t k = 0; k < n; k++) C->dlx[k] = e[k].xb, C->dly[k] = e[k].off_us;
  double slope = cs_det_dataload_fit(n, C->dlx, C->dly, C->dlp, C->dl);
  if (slope > 0)
    for (size_t k = 0; k < n; k++) e[k].off_us = C->dly[k];
  return slope;
}
