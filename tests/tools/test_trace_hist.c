/* tests/tools/test_trace_hist.c: the trace's collapsing time histogram (tools/trace/trace_hist.h)
 * against the exact counts of the same times: totals, upper bounds on any range, exact
 * counts on bucket edges, th_fit's window, and a merge of per-thread histograms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "trace/trace_hist.h"

#define N 200000

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static uint64_t exact(const int64_t *t, size_t n, int64_t a, int64_t b) {
  uint64_t c = 0;
  for (size_t i = 0; i < n; i++) c += t[i] >= a && t[i] <= b;
  return c;
}

static void against_exact(void **state) {
  (void)state;
  int64_t *t = malloc(N * sizeof *t);
  assert_non_null(t);
  const int64_t t0 = 1764576000000000000ll;
  struct thist h = {0}, w[2] = {{0}, {0}}, m = {0};
  int64_t lo = INT64_MAX, hi = 0;
  for (size_t i = 0; i < N; i++) { /* a job of ~40 s, times out of order (files interleave) */
    t[i] = t0 + (int64_t)(next() % 40000000000ull);
    if (i % 1000 == 0) t[i] = t0 - 5000000000ll; /* comm init records well before */
    th_add(&h, t[i], 1);
    th_add(&w[i % 2], t[i], 1);
    if (t[i] < lo) lo = t[i];
    if (t[i] > hi) hi = t[i];
  }
  th_merge(&m, &w[0]);
  th_merge(&m, &w[1]);
  assert_int_equal(h.total, N);
  assert_int_equal(m.total, N);
  assert_int_equal(th_count(&h, lo, hi), N);
  /* a bucket spans at most 2 x span / buckets */
  assert_true((1ll << h.shift) <= 2 * (hi - lo) / TH_BUCKETS + 1);
  for (int k = 0; k < 200; k++) {
    int64_t a = lo + (int64_t)(next() % (uint64_t)(hi - lo)), b = a + (int64_t)(next() % 10000000000ull);
    uint64_t e = exact(t, N, a, b);
    assert_true(th_count(&h, a, b) >= e); /* an upper bound */
    assert_true(th_count(&m, a, b) >= e);
    /* on bucket edges: exact */
    int64_t w0 = 1ll << h.shift, ea = a / w0 * w0, eb = (b / w0 + 1) * w0 - 1;
    assert_int_equal(th_count(&h, ea, eb), exact(t, N, ea, eb));
    /* th_fit: the window holds at most max, one more bucket would hold more */
    uint64_t max = e;
    int64_t end = th_fit(&h, ea, max);
    assert_true(exact(t, N, ea, end) <= max);
    if (end < hi) assert_true(exact(t, N, ea, end + w0) > max || end + w0 > hi);
  }
  th_free(&h);
  th_free(&w[0]);
  th_free(&w[1]);
  th_free(&m);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(against_exact)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
