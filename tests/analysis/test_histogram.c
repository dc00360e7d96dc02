/* tests/analysis/test_histogram.c: the log-bucket histogram (analysis/histogram.c) against exact
 * nearest-rank percentiles of the same values: within CS_HIST_REL_ERR, exact count, min,
 * max and sum; merging halves gives the histogram of the whole; edges of the buckets and of
 * the range. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "collscope/histogram.h"

static uint64_t rng = 88172645463325252ull;
static double uniform(void) { /* xorshift64, deterministic */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double exact(const double *sorted, size_t n, double p) {
  size_t r = (size_t)ceil(p * (double)n / 100.0);
  if (r < 1) r = 1;
  return sorted[(r > n ? n : r) - 1];
}
static void assert_close(double got, double want) {
  double err = fabs(got - want) / fabs(want);
  if (err > CS_HIST_REL_ERR * (1 + 1e-9)) fail_msg("got %.9g, want %.9g: relative error %.5f", got, want, err);
}

/* durations spread over 7 decades (log-uniform, 0.01 us .. 100 s) */
static void percentiles_within_error(void **state) {
  (void)state;
  enum { N = 200000 };
  static double v[N];
  struct cs_hist h;
  cs_hist_init(&h);
  double sum = 0;
  for (size_t i = 0; i < N; i++) {
    v[i] = 0.01 * pow(10.0, 7.0 * uniform());
    sum += v[i];
    assert_true(cs_hist_add(&h, v[i]));
  }
  qsort(v, N, sizeof *v, cmp_double);
  assert_int_equal(h.n, N);
  assert_true(h.min == v[0] && h.max == v[N - 1]);
  assert_true(fabs(h.sum - sum) <= 1e-9 * sum);
  const double ps[] = {0.001, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99};
  for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) assert_close(cs_hist_percentile(&h, ps[k]), exact(v, N, ps[k]));
  assert_true(cs_hist_percentile(&h, 100) == v[N - 1]);
  cs_hist_free(&h);
}

/* a few distinct values (the usual row: one message size, tight durations) */
static void few_values(void **state) {
  (void)state;
  const double v[] = {90, 95, 100, 100, 100, 100, 120, 300}; /* sorted */
  struct cs_hist h;
  cs_hist_init(&h);
  for (size_t i = 0; i < 8; i++) cs_hist_add(&h, v[7 - i]);
  assert_close(cs_hist_percentile(&h, 50), 100);
  assert_true(cs_hist_percentile(&h, 99) == 300); /* the rank is n: the exact max */
  assert_close(cs_hist_percentile(&h, 12.5), 90);
  assert_close(cs_hist_percentile(&h, 12.6), 95);
  cs_hist_free(&h);
}

static void merge_equals_whole(void **state) {
  (void)state;
  struct cs_hist a, b, whole;
  cs_hist_init(&a), cs_hist_init(&b), cs_hist_init(&whole);
  for (int i = 0; i < 50000; i++) {
    double x = 1 + 1000 * uniform();
    cs_hist_add(i % 3 ? &a : &b, x);
    cs_hist_add(&whole, x);
  }
  cs_hist_add(&b, 0);
  cs_hist_add(&whole, 0);
  assert_true(cs_hist_merge(&a, &b));
  assert_int_equal(a.n, whole.n);
  assert_int_equal(a.nonpos, 1);
  assert_true(a.min == whole.min && a.max == whole.max);
  for (int i = 0; i < CS_HIST_NBUCKETS; i++) assert_int_equal(a.counts[i], whole.counts[i]);
  for (double p = 1; p <= 100; p += 7) assert_true(cs_hist_percentile(&a, p) == cs_hist_percentile(&whole, p));
  cs_hist_free(&a), cs_hist_free(&b), cs_hist_free(&whole);
}

/* bucket i holds (LO g^(i-1), LO g^i]: an edge value and the next double go to neighbours */
static void bucket_edges(void **state) {
  (void)state;
  const double g = (1 + CS_HIST_REL_ERR) / (1 - CS_HIST_REL_ERR);
  for (int i = 1; i < CS_HIST_NBUCKETS - 2; i += 97) {
    double edge = CS_HIST_LO * pow(g, i);
    int b = cs_hist_bucket(edge);
    assert_int_equal(cs_hist_bucket(nextafter(edge, INFINITY)), b + 1);
    assert_true(b == i || b == i + 1); /* pow() rounding decides which side the edge is */
  }
  assert_int_equal(cs_hist_bucket(CS_HIST_LO / 10), 0);
  assert_int_equal(cs_hist_bucket(CS_HIST_HI * 10), CS_HIST_NBUCKETS - 1);
  assert_true(CS_HIST_LO * pow(g, CS_HIST_NBUCKETS - 1) >= CS_HIST_HI); /* the range fits */
}

static void zeros_empty_and_out_of_range(void **state) {
  (void)state;
  struct cs_hist h;
  cs_hist_init(&h);
  assert_true(cs_hist_percentile(&h, 50) == 0);
  cs_hist_add(&h, 0);
  cs_hist_add(&h, 0);
  cs_hist_add(&h, NAN);
  assert_null(h.counts); /* nothing positive yet: no bucket array */
  cs_hist_add(&h, 5e10); /* above the range: highest bucket, max still exact */
  assert_true(cs_hist_percentile(&h, 50) == 0);
  assert_true(cs_hist_percentile(&h, 100) == 5e10);
  assert_int_equal(h.n, 4);
  assert_int_equal(h.nonpos, 3);
  assert_true(h.min == 0 && h.sum == 5e10);
  cs_hist_free(&h);
}

/* a value n times at once is the same histogram as n single adds */
static void add_n_equals_adds(void **state) {
  (void)state;
  struct cs_hist a, b;
  cs_hist_init(&a), cs_hist_init(&b);
  const double v[] = {0, 3.5, 1e-4, 250, 3.5};
  const uint64_t n[] = {2, 1000, 3, 7, 1};
  for (int i = 0; i < 5; i++) {
    cs_hist_add_n(&a, v[i], n[i]);
    for (uint64_t k = 0; k < n[i]; k++) cs_hist_add(&b, v[i]);
  }
  assert_int_equal(a.n, b.n);
  assert_int_equal(a.nonpos, b.nonpos);
  assert_true(a.min == b.min && a.max == b.max && fabs(a.sum - b.sum) <= 1e-9 * b.sum);
  for (int i = 0; i < CS_HIST_NBUCKETS; i++) assert_int_equal(a.counts[i], b.counts[i]);
  cs_hist_free(&a), cs_hist_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(percentiles_within_error),
      cmocka_unit_test(few_values),
      cmocka_unit_test(merge_equals_whole),
      cmocka_unit_test(bucket_edges),
      cmocka_unit_test(zeros_empty_and_out_of_range),
      cmocka_unit_test(add_n_equals_adds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
