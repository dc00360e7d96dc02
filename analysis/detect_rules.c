/* analysis/detect_rules.c: the report's adapter to the straggler rules (detect_judge.c): one
 * rank's points over a window of a communicator's kept instances, from their entries. */
#include "detect_internal.h"

#include <stdlib.h>
#include <string.h>

/* the entry of comm_rank r in an instance's entries [e0, e0 + ne) (sorted by r, one per rank:
 * the members come in comm_rank order), or NULL */
const struct ent *cs_det_find_ent(const struct ent *ents, size_t e0, size_t ne, int r) {
  /* every rank timed: its entry is at its own place */
  if (r >= 0 && (size_t)r < ne && ents[e0 + (size_t)r].r == r) return &ents[e0 + (size_t)r];
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

/* the median compute gap of instance i's members other than comm_rank r, -1 when none has one;
 * kept in the instance for the next call for the same rank (a flagged rank's figures as the
 * window slides: once per instance and rank, not once per window position) */
static double peer_gap(struct cstate *C, size_t i, int r) {
  struct inst *I = &C->in[i];
  if (I->pg_rank == r) return I->pg_val;
  if (I->last == r) return I->gap_peers; /* the same median, made when the instance came */
  size_t h = 0;
  double *row = C->scratch; /* holds 2 * window + comm size doubles */
  for (size_t e = I->e0; e < I->e0 + I->ne; e++)
    if (C->ents[e].r != r && C->ents[e].gap >= 0) row[h++] = C->ents[e].gap;
  I->pg_rank = r;
  I->pg_val = h ? cs_det_median(row, h) : -1;
  return I->pg_val;
}

void cs_det_fill_pts(struct cstate *C, size_t lo, size_t hi, int r, bool peers) {
  const struct inst *in = C->in;
  for (size_t i = lo; i < hi; i++) {
    struct cs_det_pt *q = &C->pts[i - lo];
    const struct ent *e = cs_det_find_ent(C->ents, in[i].e0, in[i].ne, r);
    q->med = in[i].med;
    q->late = in[i].lateness;
    q->in = e != NULL;
    q->off = e ? e->off_us : 0;
    q->gap = e ? e->gap : -1;
    q->noise = in[i].noise;
    q->gpeers = in[i].gap_peers;
    q->last = in[i].last == r;
    q->draw = in[i].fresh;
    q->u = e ? e->u : 0.5;
    q->pgap = q->last ? in[i].gap_peers : peers ? peer_gap(C, i, r)
                                                : -1;
  }
}
