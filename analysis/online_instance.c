/* analysis/online_instance.c: what one complete sampled instance of the online exchange tells
 * the rank that judges itself (analysis/online_stragglers.c), from the instance's reduced
 * aggregates and its own op alone (at most ONL_EXACT members: every member's duration and
 * bytes, read as the report reads them, exact_instance; with more the sums below): the comm
 * rank that arrived last (none where two share the shortest duration), how long its peers
 * waited, its own arrival offset less what its P2P bytes explain (the data-load fit of
 * analysis/detect_dataload.c, read from reduced sums), and the cost rule's record of the
 * instance (analysis/detect_cost.c).
 *
 * The data-load fit: the report's Theil-Sen line needs every member's point, which no sum,
 * min or max reduces. The wire carries per instance the exact integer sums n, sum x, sum x^2,
 * sum d, sum x d (x: a member's P2P bytes, d: its duration in ns; the squares and products in
 * 32-bit limbs), from which a rank reads the least-squares line of its peers alone (its own
 * point taken out of the sums): the offset its peers had with its bytes. A rank slowed as well
 * cannot pull that line towards itself, as the robust fit's median slope cannot either. */
#include "online_internal.h"

typedef __int128 i128;

struct sums { /* the fit's sums over some members (offsets: ref - d; the ref cancels) */
  i128 n, x, x2, d, xd;
};

/* a limb sum over n members back into one value; false where it cannot be a sum of n values
 * below 2^(64 + top) (garbled: the fit is not read) */
static bool unlimb(const uint64_t l[3], uint64_t n, unsigned top, i128 *v) {
  if (l[0] > n * 0xffffffffull || l[1] > n * 0xffffffffull || l[2] > (n << top)) return false;
  *v = (i128)l[0] + ((i128)l[1] << 32) + ((i128)l[2] << 64);
  return true;
}

/* the least-squares slope of arrival offset over bytes (ns per byte), where there are four or
 * more members, their bytes differ and the line rises (detect_dataload.c's conditions) */
static bool slope(const struct sums *s, double *b) {
  if (s->n < 4 || s->x < 0 || s->x2 < 0 || s->d < 0 || s->xd < 0) return false;
  i128 den = s->n * s->x2 - s->x * s->x; /* each term < 2^121 (XB_MAX, DUR_MAX, 2^24 members) */
  if (den <= 0) return false;
  i128 num = s->x * s->d - s->n * s->xd; /* an earlier arrival is a longer duration */
  *b = (double)num / (double)den;
  return *b > 0;
}

/* The members' noise (the floor's noise term, detect_judge.c): the report's robust sigma of their
 * offsets (1.4826 x their median absolute offset) needs every member's offset, which no sum, min or
 * max reduces; the wire carries the exact sums n, sum d and sum d^2 (32-bit limbs) of the members'
 * durations (ns). This is the sample standard deviation of its peers' durations, its own d taken
 * out (as the data-load fit takes its own point out: a late rank would widen its own floor), in
 * us. For normal noise the two agree (the extremes are not cut: with 7 peers that biases it to
 * about 0.6 of sigma); a tail or a late peer widens this one (a higher floor: fewer flags, never
 * more; a peer late by L among n widens it to about sqrt(sigma^2 + L^2 / n)), so it is taken from
 * ONL_NOISE_MIN members: among 8 one late peer in half the instances (the test's `slow5`) put
 * the floor above a 100 us straggler for 22 instances more than the report's median. -1 where
 * there are fewer, or garbled. At most ONL_EXACT members the report's own figure replaces it
 * (exact_instance). */
#define ONL_NOISE_MIN 16
static double members_sigma_us(const struct op_agg *a, uint64_t d) {
  uint64_t n = a->count, mn = a->durmin >> RANK_BITS, mx = a->durmax;
  i128 d2;
  if (n < ONL_NOISE_MIN || n >= (1ull << RANK_BITS) || mn > mx || mx > DUR_MAX || d < mn || d > mx ||
      a->dursum > n * DUR_MAX || !unlimb(a->d2, n, 16, &d2))
    return -1;
  typedef unsigned __int128 u128;
  u128 s1 = a->dursum, s2 = (u128)d2;
  if (s1 < d || s2 < (u128)d * d) return -1;
  s1 -= d;
  s2 -= (u128)d * d;
  uint64_t m = n - 1;
  u128 sq = s1 * s1, q = sq / m; /* s1 < 2^64: exact; (sum d)^2 / m, its remainder below */
  if (s2 < q) return -1;         /* no sums of m values */
  double var = ((double)(s2 - q) - (double)(sq % m) / (double)m) / (double)(m - 1);
  return var > 0 ? cs_det_sqrt(var) / 1e3 : 0;
}

/* A communicator of at most ONL_EXACT ranks: every member's duration (us) into du, P2P bytes into
 * xb, compute gap and whether they all sit in one pipeline stage into ox, its number of members
 * returned; 0 where the slot does not hold exactly one duration within the instance's min and max
 * and one byte count per member, summing to the instance's sums, the rank's own among them, or a
 * gap beyond 1,000 s (garbled: the sums are read instead). */
static size_t exact_members(const struct op_agg *a, const struct cs_online_op *own, double *du, double *xb,
                            struct onl_exact *ox) {
  uint64_t n = a->size, mn = a->durmin >> RANK_BITS, mx = a->durmax, ds = 0, xs = 0, lo = (1ull << ONL_XB_BITS) - 1;
  if (n < 2 || n > ONL_EXACT || a->count != n || own->comm_rank >= n || mn > mx || mx > DUR_MAX ||
      a->dm[own->comm_rank] != onl_dur_ns(own) + 1 || (a->xm[own->comm_rank] & lo) != onl_xb(own) + 1)
    return 0;
  uint64_t stage0 = a->xm[0] >> ONL_XB_BITS;
  ox->one_stage = stage0 != 0;
  for (uint64_t r = 0; r < ONL_EXACT; r++) {
    uint64_t v = a->dm[r], x = a->xm[r] & lo, g = a->gm[r];
    if (r >= n ? v != 0 || a->xm[r] != 0 || g != 0 : v < mn + 1 || v > mx + 1 || x < 1 || x > XB_MAX + 1 || g > 1000000000000ull)
      return 0;
    if (r >= n) continue;
    du[r] = (double)(v - 1) / 1e3;
    xb[r] = (double)(x - 1);
    ox->gap[r] = g ? (double)(g - 1) / 1e3 : -1;
    ox->one_stage &= a->xm[r] >> ONL_XB_BITS == stage0;
    ds += v - 1;
    xs += x - 1;
  }
  return ds == a->dursum && xs == a->xsum ? (size_t)n : 0;
}

/* The instance as the report reads it (detect_window.c add_instance) from every member's
 * duration and bytes: its median, the offsets' reference (cs_det_offset_ref), the data-load fit
 * (cs_det_dataload_fit: then the last is the member with the largest residual, none on a tie),
 * the wait for the last, this rank's offset, the noise (cs_det_offset_noise) and the rank's
 * mid-rank among the members' offsets (the draw rule's u, detect_window.c draw_ranks: the
 * members with smaller offsets and half those with its own). */
static void exact_instance(const double *du, const double *xb, size_t n, uint32_t me, struct went *e) {
  double s[ONL_EXACT], off[ONL_EXACT], all, mn = du[0];
  double sl[ONL_EXACT * (ONL_EXACT - 1) / 2]; /* the fit's pair slopes: every pair of n <= 16 */
  struct dl_point v[ONL_EXACT];
  _Static_assert(ONL_EXACT * (ONL_EXACT - 1) / 2 <= CS_DET_DL_PAIRS && ONL_EXACT * (ONL_EXACT - 1) / 2 >= ONL_EXACT,
                 "the fit reads every pair and writes n slopes");
  for (size_t r = 0; r < n; r++) {
    s[r] = du[r];
    if (du[r] < mn) mn = du[r];
  }
  e->med = cs_det_median(s, n);
  for (size_t r = 0; r < n; r++) s[r] = du[r];
  double ref = cs_det_offset_ref(s, n, off, &all);
  for (size_t r = 0; r < n; r++) off[r] = ref - du[r];
  e->late = n == 2 ? du[0] + du[1] - 2 * mn : e->med - mn;
  if (cs_det_dataload_fit(n, xb, off, v, sl) > 0) {
    size_t b = 0;
    bool tie = false;
    for (size_t r = 1; r < n; r++) {
      if (off[r] > off[b])
        b = r, tie = false;
      else if (off[r] == off[b])
        tie = true;
    }
    e->last = tie ? -1 : (int)b;
    e->named = !tie;
    e->late = e->med - all + off[b];
  }
  e->a = off[me];
  size_t less = 0, same = 0;
  for (size_t r = 0; r < n; r++) less += off[r] < off[me], same += off[r] == off[me];
  e->uex = (double)(2 * less + same) / (double)(2 * n);
  e->noise = cs_det_offset_noise(off, n);
}

void cs_onl_instance(const struct op_agg *a, const struct cs_online_op *own, struct went *e, struct cs_det_cost_in *ci,
                     struct onl_exact *ox) {
  double cnt = (double)a->count;
  double mn = (double)(a->durmin >> RANK_BITS) / 1e3, mx = (double)a->durmax / 1e3, sum = (double)a->dursum / 1e3;
  double ref = a->count >= 3 ? (sum - mn - mx) / (cnt - 2) : sum / cnt;
  double own_us = (double)(uint64_t)((double)own->dur_us * 1e3) / 1e3;
  int last = (int)(a->durmin & RANK_MASK);
  /* the highest comm rank with the shortest duration: another than the lowest is a tie (the
   * members arrived together: no last one, detect_window.c add_instance) */
  bool tie = a->durmin_hi >> RANK_BITS == a->durmin >> RANK_BITS && (int)(RANK_MASK - (a->durmin_hi & RANK_MASK)) != last;
  e->named = !tie;
  e->last = tie ? -1 : last;
  e->late = a->count == 2 ? mx - mn : ref - mn; /* two ranks: the wait is the peer's */
  e->med = ref;
  e->a = ref - own_us;
  bool own_gap = own->gap_us >= 0 && own->gap_us < 1e9f;
  double og = own_gap ? (double)(uint64_t)((double)own->gap_us * 1e3) / 1e3 : -1;
  e->gap = og;
  uint64_t pc = a->gapcnt - (own_gap ? 1 : 0);
  e->pgap = pc ? ((double)a->gapsum / 1e3 - (own_gap ? og : 0)) / (double)pc : -1;

  uint64_t n = a->count;
  double du[ONL_EXACT], xb[ONL_EXACT];
  ox->n = exact_members(a, own, du, xb, ox);
  /* whether the members' bytes differ (the cost rule's record), from the fit's sums */
  struct sums s = {(i128)n, (i128)a->xsum, 0, (i128)a->dursum, 0};
  bool sane = n >= 2 && n < (1ull << RANK_BITS) && a->xsum <= n * XB_MAX && a->dursum <= n * DUR_MAX &&
              unlimb(a->x2, n, 8, &s.x2) && unlimb(a->xd, n, 12, &s.xd);
  bool data = sane && s.n * s.x2 - s.x * s.x > 0;
  if (ox->n) { /* at most ONL_EXACT members: the instance exactly as the report reads it */
    exact_instance(du, xb, ox->n, own->comm_rank, e);
  } else {
    e->uex = -1;
    /* the floor's noise (detect_judge.c): with fewer than CS_DET_NOISE_MIN members the report's
     * is CS_DET_NOISE_FEW (the pair's sign bar follows from it), as here; with more, the standard
     * deviation of its peers' durations (members_sigma_us, docs/online.md) */
    e->noise = n < CS_DET_NOISE_MIN ? CS_DET_NOISE_FEW : members_sigma_us(a, onl_dur_ns(own));
    /* the data-load fit */
    double b;
    if (data && slope(&s, &b)) {
      /* the report names the member with the largest residual last; that needs every member's
       * residual, which no reduction of this round carries: online the instance names none */
      e->last = -1;
      uint64_t x = onl_xb(own), d = onl_dur_ns(own);
      struct sums o = {s.n - 1, s.x - (i128)x, s.x2 - (i128)x * x, s.d - (i128)d, s.xd - (i128)x * d};
      if (slope(&o, &b)) {
        double m = (double)o.n;
        e->a = ((double)o.d / m - (double)d - b * ((double)x - (double)o.x / m)) / 1e3;
      }
    }
  }

  /* the cost rule's record: the elapsed time since the previous instance is the members' mean
   * duration (trimmed) and compute gap (the report's median of each member's time from op end
   * to op end needs every member's figure) */
  double gmean = a->gapcnt ? (double)a->gapsum / (double)a->gapcnt : 0;
  *ci = (struct cs_det_cost_in){.last = e->last,
                                .lateness = e->late,
                                .med = e->med,
                                .gap_last = e->last >= 0 && (uint32_t)e->last == own->comm_rank ? og : -1,
                                .gap_peers = e->pgap,
                                .dt_ns = (int64_t)(ref * 1e3 + gmean + 0.5),
                                .data = data};
}
