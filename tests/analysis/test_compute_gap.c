/* tests/analysis/test_compute_gap.c: the compute gap per (communicator, stream)
 * (include/collscope/compute_gap.h): spans summed on a stream since the communicator's previous
 * op there, other streams apart, an untimed op breaking the sum, hostile times, full tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>

#include "collscope/compute_gap.h"

/* two communicators on stream 1 (A, B alternating), one on stream 2 (C), interleaved in time */
static void sums_per_comm_and_stream(void **state) {
  (void)state;
  struct cs_gap_tracker t;
  cs_gap_reset(&t);
  assert_true(cs_gap_timed(&t, 0xa, 1, 1000, 2000) < 0);     /* A's first op */
  assert_true(cs_gap_timed(&t, 0xc, 2, 1500, 9000) < 0);     /* C's first op, another stream */
  assert_true(cs_gap_timed(&t, 0xb, 1, 5000, 6000) < 0);     /* B's first op: span 3 us */
  assert_true(cs_gap_timed(&t, 0xa, 1, 8000, 9000) == 5.0);  /* A: 3 us + 2 us since A's last */
  assert_true(cs_gap_timed(&t, 0xb, 1, 9500, 10000) == 2.5); /* B: 2 us + 0.5 us */
  assert_true(cs_gap_timed(&t, 0xc, 2, 9100, 9200) == 0.1);  /* C: its own stream only */
  assert_true(cs_gap_timed(&t, 0xc, 2, 9000, 9300) == 0.0);  /* starts before the last end: 0 */
}

static void untimed_breaks_the_stream(void **state) {
  (void)state;
  struct cs_gap_tracker t;
  cs_gap_reset(&t);
  cs_gap_timed(&t, 0xa, 1, 0, 1000);
  cs_gap_timed(&t, 0xc, 2, 0, 1000);
  cs_gap_untimed(&t, 1);
  assert_true(cs_gap_timed(&t, 0xa, 1, 3000, 4000) < 0);    /* spans the untimed op */
  assert_true(cs_gap_timed(&t, 0xc, 2, 3000, 4000) == 2.0); /* stream 2 untouched */
  assert_true(cs_gap_timed(&t, 0xa, 1, 5000, 6000) == 1.0); /* the sum starts again */
  cs_gap_untimed(&t, 7);                                    /* a stream never seen: nothing to break */
  assert_true(cs_gap_timed(&t, 0xa, 1, 6000, 6500) == 0.0);
}

static void hostile_times_and_full_tables(void **state) {
  (void)state;
  struct cs_gap_tracker t;
  cs_gap_reset(&t);
  cs_gap_timed(&t, 1, 1, INT64_MIN, INT64_MIN);
  double g = cs_gap_timed(&t, 1, 1, INT64_MAX, INT64_MAX); /* no signed overflow (UBSan) */
  assert_true(g > 1.8e16);
  for (uint64_t s = 0; s < 3 * CS_GAP_STREAMS; s++) cs_gap_timed(&t, 1, 100 + s, 0, 1);
  assert_true(cs_gap_timed(&t, 1, 999, 5, 6) < 0); /* no room: no gap */
  cs_gap_reset(&t);
  for (uint64_t c = 0; c < 2 * CS_GAP_PAIRS; c++) cs_gap_timed(&t, c, 1, (int64_t)c * 10, (int64_t)c * 10 + 5);
  assert_true(cs_gap_timed(&t, 3, 1, 10000, 10001) > 0);                /* an early pair is kept */
  assert_true(cs_gap_timed(&t, 5 * CS_GAP_PAIRS, 1, 20000, 20001) < 0); /* a new one finds none */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sums_per_comm_and_stream),
      cmocka_unit_test(untimed_breaks_the_stream),
      cmocka_unit_test(hostile_times_and_full_tables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
