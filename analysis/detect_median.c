/* analysis/detect_median.c: the detector's robust statistics without libm: sqrt, k-th smallest,
 * medians and the robust z of a median. */
#include "detect_internal.h"

#include <stdlib.h>
#include <string.h>

/* sqrt without libm (the shim links no libm): Newton from a power-of-two guess */
double cs_det_sqrt(double x) {
  if (!(x > 0)) return 0;
  double g = x > 1 ? x : 1;
  for (int i = 0; i < 64; i++) {
    double n = 0.5 * (g + x / g);
    if (n == g) break;
    g = n;
  }
  return g;
}

/* exp(x) for x <= 0 without libm: x / 2^k into [-0.5, 0], 16 Taylor terms, k squarings */
static double exp_neg(double x) {
  if (!(x < 0)) return 1;
  if (x < -745) return 0;
  int k = 0;
  while (x < -0.5) x *= 0.5, k++;
  double t = 1, s = 1;
  for (int i = 1; i <= 16; i++) s += t *= x / i;
  while (k--) s *= s;
  return s;
}

/* P(Z >= z) of a standard normal, z >= 0 (Zelen & Severo 26.2.17, |error| < 7.5e-8 x the
 * density's scale; the tail beyond z = 6 within 1%) */
double cs_det_normal_tail(double z) {
  if (!(z > 0)) return 0.5;
  double t = 1 / (1 + 0.2316419 * z);
  double poly = t * (0.319381530 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  return 0.3989422804014327 * exp_neg(-0.5 * z * z) * poly;
}

/* ln(x) for x > 0 without libm: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
 * s = (m - 1)/(m + 1), |s| <= 0.172: 12 odd terms reach double precision */
static double ln_pos(double x) {
  if (!(x > 0)) return -1e300;
  int e = 0;
  while (x >= 2) x *= 0.5, e++;
  while (x < 1) x *= 2, e--;
  if (x > 1.4142135623730951) x *= 0.5, e++;
  double s = (x - 1) / (x + 1), s2 = s * s, t = s, sum = 0;
  for (int i = 1; i <= 23; i += 2) sum += t / i, t *= s2;
  return 2 * sum + e * 0.6931471805599453;
}

/* the standard normal quantile of u in (0, 1), its normal score (Abramowitz & Stegun 26.2.23 on
 * the nearer tail, |error| < 4.5e-4) */
double cs_det_normal_score(double u) {
  if (!(u > 0)) u = 1e-300;
  if (!(u < 1)) u = 1 - 1e-16;
  double q = u > 0.5 ? 1 - u : u, t = cs_det_sqrt(-2 * ln_pos(q));
  double x = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308)));
  return u > 0.5 ? x : -x;
}

/* P(X >= k) for X ~ Binomial(n, p): the terms from P(X = 0) = (1-p)^n by their ratio */
double cs_det_binom_tail(size_t n, size_t k, double p) {
  if (k == 0) return 1;
  if (k > n || !(p > 0)) return 0;
  if (!(p < 1)) return 1;
  double q = 1 - p, t = 1, s = 0;
  for (size_t i = 0; i < n; i++) t *= q;
  if (t == 0) { /* (1-p)^n underflowed: the normal tail with a continuity correction */
    double sd = cs_det_sqrt((double)n * p * q);
    return cs_det_normal_tail(((double)k - 0.5 - (double)n * p) / sd);
  }
  for (size_t i = 0; i < n; i++) {
    if (i >= k) s += t;
    t *= (double)(n - i) / (double)(i + 1) * p / q;
  }
  return s + t;
}

/* the k-th smallest of v[0..n) (0-based; reorders v): quickselect, median-of-three pivot */
double select_k(double *v, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (hi > lo) {
    size_t mid = lo + (hi - lo) / 2;
    double a = v[lo], b = v[mid], c = v[hi];
    double pivot = a < b ? (b < c ? b : a < c ? c
                                              : a)
                         : (a < c ? a : b < c ? c
                                              : b);
    size_t i = lo, j = hi;
    while (i <= j) {
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i <= j) {
        double t = v[i];
        v[i] = v[j];
        v[j] = t;
        i++;
        if (j == 0) break;
        j--;
      }
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      return v[k];
  }
  return v[k];
}
/* median of v[0..n) (reorders v); lower middle for even n */
double cs_det_median(double *v, size_t n) {
  if (!n) return 0;
  return select_k(v, n, (n - 1) / 2);
}

/* the true median (mean of the two middle values for even n; reorders v) */
double cs_det_median_mid(double *v, size_t n) {
  if (!n) return 0;
  double lo = select_k(v, n, (n - 1) / 2);
  if (n % 2) return lo;
  /* after the select, v[n/2 ..] are all >= lo: the upper middle is their minimum */
  double hi = v[n / 2];
  for (size_t i = n / 2 + 1; i < n; i++)
    if (v[i] < hi) hi = v[i];
  return 0.5 * (lo + hi);
}

/* robust z of a median: m / (1.2533 * 1.4826 * MAD / sqrt(k)) (the sd of a median of k
 * draws ~ 1.2533 sigma; sigma ~ 1.4826 MAD). Overwrites v. Huge when the MAD is 0. */
double cs_det_median_z(double *v, size_t k, double m) {
  for (size_t j = 0; j < k; j++) v[j] = v[j] > m ? v[j] - m : m - v[j];
  double mad = cs_det_median_mid(v, k);
  double se = 1.2533 * 1.4826 * mad / cs_det_sqrt((double)k);
  return se > 0 ? m / se : m > 0 ? 1e300
                                 : 0;
}

double cs_det_offset_ref(double *dur, size_t n, double *s, double *all) {
  double mid = cs_det_median_mid(dur, n);
  *all = mid;
  if (n < CS_DET_NOISE_MIN) return mid;
  for (size_t i = 0; i < n; i++) s[i] = dur[i] > mid ? dur[i] - mid : mid - dur[i];
  double lim = CS_DET_OUTLIER_Z * 1.4826 * cs_det_median(s, n);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    double d = dur[i] - mid;
    if (d <= lim && -d <= lim) s[k++] = dur[i];
  }
  return 2 * k > n && k < n ? cs_det_median_mid(s, k) : mid;
}

double cs_det_offset_noise(double *off, size_t n) {
  if (n < CS_DET_NOISE_MIN) return CS_DET_NOISE_FEW;
  for (size_t i = 0; i < n; i++) off[i] = off[i] < 0 ? -off[i] : off[i];
  return 1.4826 * cs_det_median(off, n);
}
