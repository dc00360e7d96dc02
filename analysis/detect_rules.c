/* analysis/detect_rules.c: the straggler rules over one window of a communicator's instances:
 * the last-arrival rule, the arrival-offset rule and a rank's reported figures. */
#include "detect_internal.h"

#include <stdlib.h>
#include <string.h>

/* Evaluate the window [lo, hi) of a comm's instances for comm_rank `cand`. */
bool cs_det_eval_cand(const struct inst *in, size_t lo, size_t hi, int cand, const struct cs_det_params *p,
                      double *scratch, struct cs_det_straggler *s) {
  size_t n = hi - lo, k = 0;
  for (size_t i = lo; i < hi; i++)
    if (in[i].last == cand) scratch[k++] = in[i].lateness;
  double late = cs_det_median(scratch, k);
  for (size_t i = lo; i < hi; i++) scratch[i - lo] = in[i].med;
  double med = cs_det_median(scratch, n);
  double thr = p->floor_us > p->frac * med ? p->floor_us : p->frac * med;
  if (late < thr) return false;
  size_t g = 0, h = 0;
  for (size_t i = lo; i < hi; i++)
    if (in[i].last == cand && in[i].gap_last >= 0) scratch[g++] = in[i].gap_last;
  double gap = g ? cs_det_median(scratch, g) : -1;
  for (size_t i = lo; i < hi; i++)
    if (in[i].last == cand && in[i].gap_peers >= 0) scratch[h++] = in[i].gap_peers;
  double pgap = h ? cs_det_median(scratch, h) : -1;
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
/* the entry of comm_rank r in an instance's entries [e0, e0 + ne) (sorted by r, one per rank:
 * the members come in comm_rank order), or NULL */
const struct ent *cs_det_find_ent(const struct ent *ents, size_t e0, size_t ne, int r) {
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
/* The offset rule for comm_rank r over the window [lo, hi): its median arrival offset m
 * must reach thr, and be offset_z robust standard errors above 0, either in us or relative
 * to each instance's median duration (with mixed sizes a fixed delay is steady in us, a
 * proportional one relative to the duration). Fills *off with m. */
bool cs_det_eval_offset(const struct inst *in, const struct ent *ents, size_t lo, size_t hi, int r,
                        double thr, double zmin, double *scratch, double *off) {
  size_t k = 0;
  double *rel = scratch + (hi - lo); /* scratch holds 2 * window + comm size doubles */
  for (size_t i = lo; i < hi; i++) {
    const struct ent *e = cs_det_find_ent(ents, in[i].e0, in[i].ne, r);
    if (e) {
      rel[k] = in[i].med > 0 ? e->off_us / in[i].med : 0;
      scratch[k++] = e->off_us;
    }
  }
  double m = cs_det_median_mid(scratch, k);
  *off = m;
  if (k < 2 || m < thr || !(m > 0)) return false;
  if (cs_det_median_z(scratch, k, m) >= zmin) return true;
  double mr = cs_det_median_mid(rel, k);
  return mr > 0 && cs_det_median_z(rel, k, mr) >= zmin;
}

/* median arrival offset and compute gaps of comm_rank r over [lo, hi) */
void cs_det_rank_figures(struct inst *in, const struct ent *ents, size_t lo, size_t hi, int r, double *scratch,
                         double *off, double *gap, double *pgap) {
  size_t k = 0;
  for (size_t i = lo; i < hi; i++) {
    const struct ent *e = cs_det_find_ent(ents, in[i].e0, in[i].ne, r);
    if (e) scratch[k++] = e->off_us;
  }
  *off = cs_det_median_mid(scratch, k);
  k = 0;
  for (size_t i = lo; i < hi; i++) {
    const struct ent *e = cs_det_find_ent(ents, in[i].e0, in[i].ne, r);
    if (e && e->gap >= 0) scratch[k++] = e->gap;
  }
  *gap = k ? cs_det_median(scratch, k) : -1;
  /* peers: the median over instances of the instance's median peer gap */
  size_t g = 0;
  for (size_t i = lo; i < hi; i++) {
    if (in[i].pg_rank != r) { /* once per instance and rank, not once per window position */
      size_t h = 0;
      double *row = scratch + (hi - lo); /* scratch holds 2 * window + comm size doubles */
      for (size_t e = in[i].e0; e < in[i].e0 + in[i].ne; e++)
        if (ents[e].r != r && ents[e].gap >= 0) row[h++] = ents[e].gap;
      in[i].pg_rank = r;
      in[i].pg_val = h ? cs_det_median(row, h) : -1;
    }
    if (in[i].pg_val >= 0) scratch[g++] = in[i].pg_val;
  }
  *pgap = g ? cs_det_median(scratch, g) : -1;
}
