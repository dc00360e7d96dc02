/* analysis/detect_judge.c: the straggler rules, the one implementation: for one rank at one
 * instance, over plain arrays of the window's instances as that rank saw them, the pre-checks
 * from its counts, the share-last, offset, recent and fresh rules, persistence, the kind and
 * the reported figures (include/collscope/detect.h states the rules). The report's window
 * (detect_window.c) and the online exchange's self-judgement (online_stragglers.c) decide
 * through these alone. */
#include "detect_internal.h"

#include <string.h>

static size_t fresh_len(const struct cs_det_params *p) { return p->persist > 2 ? p->persist : 2; }

unsigned cs_det_prechecks(const struct cs_det_params *p, const struct cs_det_counts *c) {
  unsigned pre = 0;
  /* offset rule: after the median rank in clearly more than half of its instances (sign
   * test, z >= 2) */
  if (c->n >= p->min_instances && (double)c->pos - 0.5 * (double)c->n >= cs_det_sqrt((double)c->n))
    pre |= CS_DET_PRE_OFFSET;
  /* recent rule: the same over the last `recent` instances only, stricter, so a slowdown that
   * starts mid-job is seen before it fills half the window */
  if (c->recent && c->recent_full && 4 * c->rn >= 3 * c->recent && (double)c->rpos >= p->recent_share * (double)c->rn)
    pre |= CS_DET_PRE_RECENT;
  /* fresh rule: after the median rank in each of the last `persist` instances (at least 2) */
  size_t kf = fresh_len(p);
  if (kf <= c->w && c->run >= kf) pre |= CS_DET_PRE_FRESH;
  return pre;
}

bool cs_det_draw_precheck(const struct cs_det_params *p, int csize, size_t nd, size_t npos) {
  return csize >= CS_DET_DRAW_MEMBERS && nd >= p->min_instances &&
         (double)npos - 0.5 * (double)nd >= cs_det_sqrt((double)nd);
}

double cs_det_threshold(const struct cs_det_params *p, double med, double gap, double noise) {
  /* frac of the median duration, or CS_DET_GAP_FLOOR of the rank's own compute gap where
   * that is less: a long collective (many ring steps) does not hide a GPU slower at its own
   * work, whose delay is a share of its compute, not of the collective */
  double rel = p->frac * med;
  if (gap >= 0 && CS_DET_GAP_FLOOR * gap < rel) rel = CS_DET_GAP_FLOOR * gap;
  /* and never under CS_DET_NOISE_Z standard errors of a median of the window's noise: a rank
   * whose own few offsets happen to be close together (a small MAD of its own) and above the
   * median, among thousands of ranks, is still within the noise every rank sees */
  if (noise >= 0 && CS_DET_NOISE_Z * noise > rel) rel = CS_DET_NOISE_Z * noise;
  return p->floor_us > rel ? p->floor_us : rel;
}

double cs_det_window_med(const struct cs_det_pt *pt, size_t w, double *scratch) {
  for (size_t j = 0; j < w; j++) scratch[j] = pt[j].med;
  return cs_det_median(scratch, w);
}

bool cs_det_last_significant(const struct cs_det_params *p, size_t w, size_t k, int csize) {
  if (w == 0 || csize < 1) return false;
  double p0 = 1.0 / (double)csize, need = p0 + p->z * cs_det_sqrt(p0 * (1 - p0) / (double)w);
  if (need < p->share) need = p->share;
  /* last that often by chance: the binomial tail itself, not its normal approximation, which
   * at 8 ranks and a short window is far too thin (a rank last in 9 of 13 instances has a
   * chance of 3e-6, not the 1e-9 of z = 6): data-following work (a hot MoE expert) then
   * reads as a straggler somewhere among thousands of communicators */
  return (double)k >= need * (double)w && cs_det_binom_tail(w, k, p0) <= cs_det_normal_tail(p->z);
}

bool cs_det_fresh_significant(const struct cs_det_params *p, size_t nf, size_t k, int csize) {
  /* The draws: instances that name a last rank right after one that named none. A tie (ranks
   * released together by the previous op on their streams: FSDP's AllGathers back to back, at
   * 300 us a ring step its ReduceScatters queued behind the first) names no rank; after it the
   * members start even, so which comes last is a draw of its own, one of csize at random with no
   * straggler. At the instances after a draw a rank late once stays late (one late backward
   * pass, its step's ReduceScatters): those are not draws. A GPU slow at its own work that only
   * one op a step exposes (FSDP from 64 ranks with 300 us a ring step: last in 1 instance of 8,
   * tied in the other 7) is last in every draw, which its share of all instances, 1/8, never
   * shows. */
  if (nf == 0 || csize < 2) return false;
  double p0 = 1.0 / (double)csize, need = p0 + p->z * cs_det_sqrt(p0 * (1 - p0) / (double)nf);
  if (need < p->share) need = p->share;
  return (double)k >= need * (double)nf && cs_det_binom_tail(nf, k, p0) <= cs_det_normal_tail(p->z);
}

int cs_det_kind(double gap, double pgap, double late) {
  return gap >= 0 && pgap >= 0 && gap - pgap < 0.5 * late ? CS_DET_LINK : CS_DET_COMPUTE;
}

/* the median over pt[0..w) of the double at byte offset `field`: only where the rank arrived
 * last (only_last), only values >= 0 (known: -1 when there is none; otherwise 0) */
static double median_of(const struct cs_det_pt *pt, size_t w, size_t field, bool only_last, bool known,
                        double *scratch) {
  size_t k = 0;
  for (size_t j = 0; j < w; j++) {
    if (only_last && !pt[j].last) continue;
    double v;
    memcpy(&v, (const char *)&pt[j] + field, sizeof v);
    if (known && !(v >= 0)) continue;
    scratch[k++] = v;
  }
  if (known && !k) return -1;
  return cs_det_median(scratch, k);
}

/* the standard error of a median of n of the window's offsets (n: the instances the rank is in,
 * or arrived last in), from the window's median noise: 1.2533 sigma / sqrt(n); -1 unknown */
static double noise_se(const struct cs_det_pt *pt, size_t w, bool only_last, double *scratch) {
  size_t n = 0;
  for (size_t j = 0; j < w; j++) n += only_last ? pt[j].last : pt[j].in;
  double sigma = median_of(pt, w, offsetof(struct cs_det_pt, noise), false, true, scratch);
  return n && sigma >= 0 ? 1.2533 * sigma / cs_det_sqrt((double)n) : -1;
}

/* most of the window's instances had too few members to measure their noise */
static bool few_members(const struct cs_det_pt *pt, size_t w) {
  size_t k = 0;
  for (size_t j = 0; j < w; j++) k += pt[j].noise == CS_DET_NOISE_FEW;
  return 2 * k > w;
}

/* the rank's least known compute gap over pt[0..w), -1 none */
static double min_gap(const struct cs_det_pt *pt, size_t w) {
  double m = -1;
  for (size_t j = 0; j < w; j++)
    if (pt[j].gap >= 0 && (m < 0 || pt[j].gap < m)) m = pt[j].gap;
  return m;
}

/* the rank's gap for the floor's gap bound: only where it exceeds its peers' by at least the
 * bound itself (its own GPU or host is the busier one: a slow link or a peer's schedule makes a
 * rank late with a gap like its peers'), else -1 (the duration's share alone) */
static double busy_gap(double gap, double pgap) {
  return gap >= 0 && pgap >= 0 && gap - pgap >= CS_DET_GAP_FLOOR * gap ? gap : -1;
}

bool cs_det_draw_rule(const struct cs_det_params *p, const struct cs_det_pt *pt, size_t w, double med, int csize,
                      double *scratch, double *off) {
  /* Where the members' ops queue behind one another (FSDP's AllGathers back to back, at 300 us a
   * ring step its ReduceScatters behind the first) every member starts each when the one before
   * it ends: the instance ties, every offset 0, and measures no arrival order. Only its fresh
   * draws do (the members start even there), and only there is a GPU slow at its own work late
   * (FSDP from 64 ranks with 300 us a ring step: at a step's first ReduceScatter, 500-1,600 us
   * with 10% jitter and a tail). Whether it is also the last of n draws is a race against the
   * tails of n - 1 peers (last in 7 of 13 at 64 ranks); its offset there is not: after the
   * median rank in every draw. So the offset rule runs over the draws alone: the sign test
   * (z >= 2) and the floor, its noise term (CS_DET_NOISE_Z standard errors of a median of its k
   * draws) from the draws' own noise (the tied instances' is 0). Not its own robust errors: how
   * much of its delay a step exposes varies (89-2,218 us in one seed at 64 ranks, a median of
   * 703 us at 4.4 of them), while a clean rank's offsets there are draws from the members' spread,
   * which the noise term measures over every member at every draw. */
  size_t k = 0, pos = 0;
  double *v = scratch + w;
  *off = 0;
  for (size_t j = 0; j < w; j++)
    if (pt[j].draw && pt[j].in) {
      scratch[k++] = pt[j].off;
      pos += pt[j].off > 0;
    }
  if (k < p->min_instances || (double)pos - 0.5 * (double)k < cs_det_sqrt((double)k)) return false;
  double m = cs_det_median_mid(scratch, k);
  *off = m;
  size_t kn = 0;
  for (size_t j = 0; j < w; j++)
    if (pt[j].draw && pt[j].in && pt[j].noise >= 0) v[kn++] = pt[j].noise;
  double sigma = kn ? cs_det_median(v, kn) : -1, gm[2];
  for (int f = 0; f < 2; f++) { /* its median gap over the draws, and its peers' */
    size_t kg = 0;
    for (size_t j = 0; j < w; j++) {
      double x = f ? pt[j].gpeers : pt[j].gap;
      if (pt[j].draw && pt[j].in && x >= 0) v[kg++] = x;
    }
    gm[f] = kg ? cs_det_median(v, kg) : -1;
  }
  double gap = gm[0], pgap = gm[1];
  double se = sigma >= 0 ? 1.2533 * sigma / cs_det_sqrt((double)k) : -1;
  if (!(m > 0 && se >= 0 && m >= cs_det_threshold(p, med, busy_gap(gap, pgap), se))) return false;
  /* and the rank test over the draws, its level corrected for the members tested: each draw's
   * mid-rank u of its offset among the draw's members is uniform for a clean rank whatever the
   * noise's shape, so the sum of their normal scores over sqrt(k) is a standard normal z; with
   * csize members judged, a window of w instances whose nd draws change about once per w / nd
   * instances, it must be as unlikely as a normal tail of CS_DET_DRAW_Z per judged instance over
   * all members: tail(z) <= tail(CS_DET_DRAW_Z) x w / (nd x csize) */
  double zs = 0;
  size_t nd = 0;
  for (size_t j = 0; j < w; j++) {
    nd += pt[j].draw;
    if (pt[j].draw && pt[j].in) zs += cs_det_normal_score(pt[j].u);
  }
  zs /= cs_det_sqrt((double)k);
  return cs_det_normal_tail(zs) * (double)csize * (double)nd <= cs_det_normal_tail(CS_DET_DRAW_Z) * (double)w;
}

bool cs_det_last_rule(const struct cs_det_params *p, const struct cs_det_pt *pt, size_t w, double *scratch,
                      struct cs_det_straggler *s) {
  size_t k = 0;
  for (size_t j = 0; j < w; j++) k += pt[j].last;
  double late = median_of(pt, w, offsetof(struct cs_det_pt, late), true, false, scratch);
  double med = cs_det_window_med(pt, w, scratch);
  /* the gaps over its last-arrivals, against the lateness there */
  double gap = median_of(pt, w, offsetof(struct cs_det_pt, gap), true, true, scratch);
  double pgap = median_of(pt, w, offsetof(struct cs_det_pt, pgap), true, true, scratch);
  if (late < cs_det_threshold(p, med, busy_gap(gap, pgap), noise_se(pt, w, true, scratch))) return false;
  s->window_instances = w;
  s->last = k;
  s->share_last = (double)k / (double)w;
  s->lateness_us = late;
  s->median_dur_us = med;
  s->gap_us = gap;
  s->peer_gap_us = pgap;
  s->kind = cs_det_kind(gap, pgap, late);
  return true;
}

/* The offset test over pt[lo, w): its median arrival offset m must reach thr, and be zmin
 * robust standard errors above 0, either in us or relative to each instance's median duration
 * (with mixed sizes a fixed delay is steady in us, a proportional one relative to the
 * duration). *off: m. */
static bool offset_test(const struct cs_det_pt *pt, size_t lo, size_t w, double thr, double zmin, double *scratch,
                        double *off) {
  size_t k = 0;
  double *rel = scratch + (w - lo);
  for (size_t j = lo; j < w; j++) {
    if (!pt[j].in) continue;
    rel[k] = pt[j].med > 0 ? pt[j].off / pt[j].med : 0;
    scratch[k++] = pt[j].off;
  }
  double m = cs_det_median_mid(scratch, k);
  *off = m;
  if (k < 2 || m < thr || !(m > 0)) return false;
  if (cs_det_median_z(scratch, k, m) >= zmin) return true;
  double mr = cs_det_median_mid(rel, k);
  return mr > 0 && cs_det_median_z(rel, k, mr) >= zmin;
}

/* the fresh rule's shape (cs_det_steady, detect.h) over pt[lo, w): in every one */
static bool steady(const struct cs_det_pt *pt, size_t lo, size_t w, double thr) {
  struct cs_det_steady s = {0};
  for (size_t j = lo; j < w; j++) {
    if (!pt[j].in) return false;
    cs_det_steady_add(&s, pt[j].off, thr);
  }
  return cs_det_steady_ok(&s);
}

bool cs_det_offset_rules(const struct cs_det_params *p, unsigned pre, const struct cs_det_counts *c, double thr,
                         const struct cs_det_pt *pt, size_t w, double *scratch, double *off, double *late) {
  bool ok = false;
  double m = 0;
  *late = 0;
  *off = 0;
  /* too few members to measure the noise (a tensor-parallel pair): after the median rank is last
   * of two, and a sign test of z >= 2 over instances it is in with every rank of thousands of pairs
   * is passed by chance (after its partner in 17 of 22 by a steady 40-60 us, 1 in 350,000 judged
   * instances at 1,024 ranks with tails): the count itself must be as unlikely as the offset
   * rule asks of the offset, a binomial tail of 1/2 a draw within a normal tail of offset_z */
  if (few_members(pt, w)) {
    double zt = cs_det_normal_tail(p->offset_z);
    if (cs_det_binom_tail(c->n, c->pos, 0.5) > zt) pre &= ~CS_DET_PRE_OFFSET;
    if (cs_det_binom_tail(c->rn, c->rpos, 0.5) > zt) pre &= ~CS_DET_PRE_RECENT;
  }
  if (pre & CS_DET_PRE_OFFSET) {
    ok = offset_test(pt, 0, w, thr, p->offset_z, scratch, &m);
    if (m > *late) *late = m;
  }
  /* recent rule: thr carries the noise term of the whole window's median; the recent rule's
   * median of 16 instances is 2.5 times as loose as the window's of 100, so its own instances'
   * term is its floor too (clean ranks at 64 ranks with 2% jitter and no ring step were named
   * by it, after the median rank in 14 of 16 by 28-31 us where the members' offsets had a
   * robust sigma of 28.5 us: the window's term 17.9 us, the duration's 1.5 % 27.4 us, this term
   * 44.7 us). The fresh rule's steadiness (6 offsets within 1.25x) bounds its effect instead. */
  if (!ok && (pre & CS_DET_PRE_RECENT) && c->recent <= w) {
    double se = noise_se(pt + (w - c->recent), c->recent, false, scratch), rthr = thr;
    if (se >= 0 && CS_DET_NOISE_Z * se > rthr) rthr = CS_DET_NOISE_Z * se;
    ok = offset_test(pt, w - c->recent, w, rthr, p->recent_z, scratch, &m);
    if (m > *late) *late = m;
  }
  /* fresh rule: after the median rank in each of the last `persist` instances by at least
   * the floor, steadily (within 1.25x) and by 2 x recent_z robust standard errors: a big
   * slowdown that starts now is flagged `persist` instances later, however few instances
   * came before it, rather than when its share of the window passes the sign test */
  size_t kf = fresh_len(p);
  if (!ok && (pre & CS_DET_PRE_FRESH) && kf <= w && steady(pt, w - kf, w, thr)) {
    ok = offset_test(pt, w - kf, w, thr, 2 * p->recent_z, scratch, &m);
    if (m > *late) *late = m;
  }
  if (ok) *off = m;
  return ok;
}

double cs_det_rank_threshold(const struct cs_det_params *p, const struct cs_det_pt *pt, size_t w, double med,
                             double *scratch, double *base) {
  double gap = median_of(pt, w, offsetof(struct cs_det_pt, gap), false, true, scratch);
  double pgap = median_of(pt, w, offsetof(struct cs_det_pt, gpeers), false, true, scratch);
  double noise = noise_se(pt, w, false, scratch), bg = busy_gap(gap, pgap);
  /* its gap excess over its peers' accounts for its lateness (at least half its median offset,
   * the kind rule's test) though its gap is not CS_DET_GAP_FLOOR above theirs: the stream's
   * idle time that every rank shares (the host waiting for the job's other streams) swells the
   * gap, not the work. That idle time comes and goes from instance to instance (its own stream is
   * now and then the host's last), while its work is in every gap: the gap bound is taken on its
   * least gap over the window */
  if (bg < 0 && gap >= 0 && pgap >= 0) {
    double off = cs_det_rank_offset(pt, w, scratch);
    if (off > 0 && gap - pgap >= 0.5 * off) bg = min_gap(pt, w);
  }
  if (base) *base = cs_det_threshold(p, med, bg, -1);
  return cs_det_threshold(p, med, bg, noise);
}

double cs_det_rank_offset(const struct cs_det_pt *pt, size_t w, double *scratch) {
  size_t k = 0;
  for (size_t j = 0; j < w; j++)
    if (pt[j].in) scratch[k++] = pt[j].off;
  return cs_det_median_mid(scratch, k);
}

bool cs_det_persist(unsigned *streak, size_t *at, size_t ai, unsigned persist) {
  /* a burst of scheduling noise on a busy host is not a straggler */
  *streak = *streak && *at + 1 == ai ? *streak + 1 : 1;
  *at = ai;
  return *streak >= persist;
}

void cs_det_figures(const struct cs_det_pt *pt, size_t w, bool by_last, double med, double *scratch,
                    struct cs_det_straggler *s) {
  size_t n = 0, pos = 0;
  for (size_t j = 0; j < w; j++)
    if (pt[j].in) n++, pos += pt[j].off > 0;
  if (!by_last) {
    memset(s, 0, sizeof *s);
    size_t k = 0;
    for (size_t j = 0; j < w; j++) k += pt[j].last;
    s->window_instances = w;
    s->last = k;
    s->share_last = (double)k / (double)w;
    s->lateness_us = median_of(pt, w, offsetof(struct cs_det_pt, late), true, false, scratch);
    s->median_dur_us = med;
  }
  s->offset_us = cs_det_rank_offset(pt, w, scratch);
  s->later_share = n ? (double)pos / (double)n : 0;
  /* offset rules: gaps over the whole window against its median offset over the same
   * instances (a share-last flag keeps cs_det_last_rule's: gaps and lateness over its
   * last-arrivals). Not the lateness of its last-arrivals: where the data moves the work,
   * those are the instances it also carried the most work in, which its gap need not hold. */
  if (!by_last) {
    s->gap_us = median_of(pt, w, offsetof(struct cs_det_pt, gap), false, true, scratch);
    s->peer_gap_us = median_of(pt, w, offsetof(struct cs_det_pt, pgap), false, true, scratch);
    s->kind = cs_det_kind(s->gap_us, s->peer_gap_us, s->offset_us);
    /* the kind's gap excess paired per instance: the median over the instances of its gap less
     * its peers' there. Where the work between a communicator's instances alternates (an
     * expert-parallel step: 1 ms of attention before dispatch, 2 ms x the expert's load before
     * combine) the window's gaps are two heaps, and the difference of their two medians, each
     * falling between the heaps, is no difference of work (moe at 64 ranks, a GPU 20% slower:
     * 89 us against a median offset of 208 us, kind `link` in 2 of 10 seeds with 10% jitter and
     * a tail); the paired excess keeps each instance's work on both sides. */
    size_t k = 0;
    for (size_t j = 0; j < w; j++)
      if (pt[j].in && pt[j].gap >= 0 && pt[j].pgap >= 0) scratch[k++] = pt[j].gap - pt[j].pgap;
    if (k) s->kind = cs_det_median(scratch, k) < 0.5 * s->offset_us ? CS_DET_LINK : CS_DET_COMPUTE;
  }
}
