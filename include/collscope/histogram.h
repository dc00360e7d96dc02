/* include/collscope/histogram.h: a fixed-error histogram of positive values (durations in
 * microseconds) for percentiles in bounded memory: the streaming readers keep one per report
 * row instead of every value.
 *
 * Buckets are logarithmic (the DDSketch layout): bucket i holds the values in
 * (gamma^(i-1), gamma^i], gamma = (1 + a) / (1 - a), a = CS_HIST_REL_ERR = 0.005, over
 * [CS_HIST_LO, CS_HIST_HI]; a value below the range counts in the lowest bucket, one above in
 * the highest, and values <= 0 (or NaN) in their own zero bucket, which sorts first.
 *
 * Exact: the count, the minimum, the maximum and the sum. Percentiles use the nearest-rank
 * definition (the value v[ceil(p * n / 100)] of the n values sorted ascending) and return the
 * bucket's midpoint 2 gamma^i / (gamma + 1), clamped to [min, max]; so for every value in the
 * range the result is within a relative error of CS_HIST_REL_ERR (0.5 %) of the exact
 * nearest-rank percentile, p = 100 returns the exact maximum, and a rank landing in the zero
 * bucket returns the exact minimum (<= 0). Memory: one fixed array (CS_HIST_NBUCKETS counts)
 * per histogram, allocated on the first positive value. Not thread-safe; merge per-thread
 * histograms with cs_hist_merge(). */
#ifndef COLLSCOPE_HISTOGRAM_H
#define COLLSCOPE_HISTOGRAM_H
#include <stdbool.h>
#include <stdint.h>

#define CS_HIST_REL_ERR 0.005
#define CS_HIST_LO 1e-3       /* 1 ns, in microseconds */
#define CS_HIST_HI 1e10       /* ~2.8 hours, in microseconds */
#define CS_HIST_NBUCKETS 3000 /* covers ln(HI / LO) / ln(gamma) = 2993 buckets */

struct cs_hist {
  uint64_t n, nonpos;   /* all values; of those, the ones <= 0 or NaN */
  double min, max, sum; /* exact over every value but NaN (0 while there is none) */
  bool has_range;       /* min and max hold a value */
  uint64_t *counts;     /* CS_HIST_NBUCKETS, NULL until the first positive value */
};

void cs_hist_init(struct cs_hist *h);
/* Returns false only when the bucket array cannot be allocated (the value is then still
 * counted in n, min, max and sum, and percentiles fall back to min/max). */
bool cs_hist_add(struct cs_hist *h, double v);
/* the value v, n times (as n calls of cs_hist_add) */
bool cs_hist_add_n(struct cs_hist *h, double v, uint64_t n);
/* into += from; false when out of memory (into unchanged then) */
bool cs_hist_merge(struct cs_hist *into, const struct cs_hist *from);
/* Nearest-rank p-th percentile, 0 < p <= 100; 0 when the histogram is empty. */
double cs_hist_percentile(const struct cs_hist *h, double p);
void cs_hist_free(struct cs_hist *h);
/* The bucket index of a value > 0 (exposed for the tests). */
int cs_hist_bucket(double v);

#endif
