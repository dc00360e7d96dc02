/* tests/balance/test_step_breakdown.c: analysis/step_breakdown.c on synthetic timelines with exact
 * figures: a collective's wait for its last member, a Recv's wait for its Send (matched in order
 * whichever arrives first) as bubble on a pipeline communicator, two ops overlapping on two
 * streams, and a rank whose older ops left the ring (its steps that overlap them left out,
 * counted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collscope/step_breakdown.h"

#define T0 1000000000LL /* the readers' times are positive */

static bool comm2_pipe(void *ctx, uint64_t comm) {
  (void)ctx;
  return comm == 2;
}

static struct cs_steps_op op(uint32_t slot, int cr, int peer, bool send, int64_t s, int64_t e) {
  return (struct cs_steps_op){slot, cr, peer, true, peer >= 0, send, T0 + s, T0 + e};
}

/* per step k (1000 ns): an AllReduce on comm 1 (slot 0 at +100, slot 1 at +300, both end at
 * +400), then slot 0 Sends to slot 1 on comm 2 ([+500, +600]) and slot 1 Recvs from it
 * ([+450, +600]); on odd k the Recv's instance comes first */
static struct cs_steps *feed_long(int steps, int64_t long_end) {
  struct cs_steps *s = cs_steps_new();
  assert_non_null(s);
  if (long_end > 0) { /* slot 0's first op: on comm 5 from 0 to long_end */
    struct cs_steps_op l = op(0, 0, -1, false, 0, long_end);
    assert_int_equal(cs_steps_instance(s, 5, 0, &l, 1), 0);
  }
  for (int k = 0; k < steps; k++) {
    int64_t b = 1000LL * k;
    struct cs_steps_op ar[2] = {op(0, 0, -1, false, b + 100, b + 400), op(1, 1, -1, false, b + 300, b + 400)};
    assert_int_equal(cs_steps_instance(s, 1, k, ar, 2), 0);
    struct cs_steps_op snd = op(0, 0, 1, true, b + 500, b + 600), rcv = op(1, 1, 0, false, b + 450, b + 600);
    if (k % 2) {
      assert_int_equal(cs_steps_instance(s, 2, k, &rcv, 1), 0);
      assert_int_equal(cs_steps_instance(s, 2, k, &snd, 1), 0);
    } else {
      struct cs_steps_op both[2] = {snd, rcv};
      assert_int_equal(cs_steps_instance(s, 2, k, both, 2), 0);
    }
  }
  return s;
}
static struct cs_steps *feed(int steps) { return feed_long(steps, 0); }

static void check(const struct cs_step_fig *f, int64_t step, int64_t compute, int64_t comm, int64_t wait,
                  int64_t bubble) {
  assert_int_equal(f->step_ns, step);
  assert_int_equal(f->compute_ns, compute);
  assert_int_equal(f->comm_ns, comm);
  assert_int_equal(f->wait_ns, wait);
  assert_int_equal(f->bubble_ns, bubble);
  assert_int_equal(f->compute_ns + f->comm_ns + f->wait_ns + f->bubble_ns, f->step_ns);
}

static void test_waits(void **state) {
  (void)state;
  struct cs_steps *s = feed(10);
  struct cs_step_fig f[CS_STEPS_MAX];
  struct cs_steps_counts c;
  /* slot 0: waits 200 ns at the AllReduce for slot 1; its Send's Recv is posted first */
  int n = cs_steps_slot(s, 0, 1, 1, comm2_pipe, NULL, f, &c);
  assert_int_equal(n, 8); /* steps 1..8: step 0 is the set-up, step 9 has no end */
  for (int i = 0; i < n; i++) {
    assert_int_equal(f[i].step, i + 1);
    assert_int_equal(f[i].start_ns, T0 + 1000LL * (i + 1) + 100);
    check(&f[i], 1000, 600, 200, 200, 0);
  }
  assert_int_equal(c.incomplete, 0);
  assert_int_equal(c.unmatched, 0);
  /* slot 1: no wait at the AllReduce; its Recv waits 50 ns for the Send: bubble (comm 2) */
  n = cs_steps_slot(s, 1, 1, 1, comm2_pipe, NULL, f, &c);
  assert_int_equal(n, 8);
  for (int i = 0; i < n; i++) check(&f[i], 1000, 750, 200, 0, 50);
  /* comm 2 not a pipeline: the same 50 ns are waiting for peers */
  n = cs_steps_slot(s, 1, 1, 1, NULL, NULL, f, &c);
  for (int i = 0; i < n; i++) check(&f[i], 1000, 750, 200, 50, 0);
  /* period 2: steps of 2000 ns from the even seqs */
  n = cs_steps_slot(s, 0, 1, 2, comm2_pipe, NULL, f, &c);
  assert_int_equal(n, 3); /* seqs 2, 4, 6, 8: steps 1..3 */
  for (int i = 0; i < n; i++) check(&f[i], 2000, 1200, 400, 400, 0);
  cs_steps_free(s);
}

/* two ops on two streams: A [0, 100) waits to 80 for its peer, B [50, 150) waits for none:
 * the time both run is communication (B moves data), only [0, 50) is waiting */
static void test_overlap(void **state) {
  (void)state;
  struct cs_steps *s = cs_steps_new();
  for (int k = 0; k < 4; k++) {
    int64_t b = 1000LL * k;
    struct cs_steps_op a[2] = {op(0, 0, -1, false, b, b + 100), op(1, 1, -1, false, b + 80, b + 100)};
    struct cs_steps_op bb = op(0, 0, -1, false, b + 50, b + 150);
    assert_int_equal(cs_steps_instance(s, 3, k, a, 2), 0);
    assert_int_equal(cs_steps_instance(s, 4, k, &bb, 1), 0);
  }
  struct cs_step_fig f[CS_STEPS_MAX];
  struct cs_steps_counts c;
  int n = cs_steps_slot(s, 0, 3, 1, NULL, NULL, f, &c);
  assert_int_equal(n, 2);
  for (int i = 0; i < n; i++) check(&f[i], 1000, 850, 100, 50, 0);
  cs_steps_free(s);
}

/* two Sends queued before their Recvs: matched in order (the first Send with the first Recv) */
static void test_order(void **state) {
  (void)state;
  struct cs_steps *s = cs_steps_new();
  for (int k = 0; k < 4; k++) {
    int64_t b = 1000LL * k;
    struct cs_steps_op s0 = op(0, 0, 1, true, b + 100, b + 200), s1 = op(0, 0, 1, true, b + 300, b + 400);
    struct cs_steps_op r0 = op(1, 1, 0, false, b + 50, b + 200), r1 = op(1, 1, 0, false, b + 350, b + 400);
    assert_int_equal(cs_steps_instance(s, 2, 2 * k, &s0, 1), 0);
    assert_int_equal(cs_steps_instance(s, 2, 2 * k + 1, &s1, 1), 0);
    assert_int_equal(cs_steps_instance(s, 2, 2 * k, &r0, 1), 0);
    assert_int_equal(cs_steps_instance(s, 2, 2 * k + 1, &r1, 1), 0);
  }
  struct cs_step_fig f[CS_STEPS_MAX];
  struct cs_steps_counts c;
  int n = cs_steps_slot(s, 1, 2, 2, comm2_pipe, NULL, f, &c);
  assert_int_equal(n, 2);
  for (int i = 0; i < n; i++) check(&f[i], 1000, 800, 150, 0, 50); /* Recv 0 waits 50 ns, Recv 1 none */
  assert_int_equal(c.unmatched, 0);
  cs_steps_free(s);
}

/* more ops than the ring holds: the last CS_STEPS_MAX steps are given, all whole; the step
 * that overlaps an evicted op is counted incomplete */
static void test_ring(void **state) {
  (void)state;
  int steps = CS_STEPS_RING; /* 2 ops of slot 0 per step: the ring holds the last half */
  struct cs_steps *s = feed(steps);
  struct cs_step_fig f[CS_STEPS_MAX];
  struct cs_steps_counts c;
  int n = cs_steps_slot(s, 0, 1, 1, comm2_pipe, NULL, f, &c);
  assert_int_equal(n, CS_STEPS_MAX);
  assert_int_equal(f[n - 1].step, steps - 2);
  for (int i = 0; i < n; i++) check(&f[i], 1000, 600, 200, 200, 0);
  /* held: the ops of steps 512..1023; step 512's first op is held, the Send of 511 is not
   * (it ended before 512 began): every step from 512 on is whole */
  assert_int_equal(c.incomplete, 0);
  assert_int_equal(c.steps, (size_t)(steps / 2 - 1));
  cs_steps_free(s);
  /* the same after an evicted op that ran to 513.5 us: steps 512 and 513 began before it
   * ended, and the ring no longer holds it: left out, counted */
  s = feed_long(steps, 513500);
  n = cs_steps_slot(s, 0, 1, 1, comm2_pipe, NULL, f, &c);
  assert_int_equal(n, CS_STEPS_MAX);
  for (int i = 0; i < n; i++) check(&f[i], 1000, 600, 200, 200, 0);
  assert_int_equal(c.incomplete, 2);
  assert_int_equal(c.steps, (size_t)(steps / 2 - 1));
  cs_steps_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_waits), cmocka_unit_test(test_overlap), cmocka_unit_test(test_order),
                                     cmocka_unit_test(test_ring)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
