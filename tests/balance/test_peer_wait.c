/* tests/balance/test_peer_wait.c: analysis/peer_wait.c and analysis/finding_cost.c on synthetic
 * instances with exact figures: a link finding explained by a wait for a peer with a finding
 * of its own (moved), not by a wait below half its lateness, not by a cycle of ranks waiting
 * for each other unless one of them also waited at least that long for a rank with a finding
 * of its own; a Recv's wait for its Send matched in order; a finding's cost over its span,
 * exact below CS_COST_POINTS instances and on the checkpoints beyond. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collscope/finding_cost.h"
#include "collscope/peer_wait.h"

#define T0 1000000000LL /* the readers' times are positive */
#define N 20            /* instances of each communicator */

static struct cs_pwait_op coll(int cr, int rank, int64_t s, int64_t e) {
  return (struct cs_pwait_op){cr, rank, -1, false, false, true, T0 + s, T0 + e};
}

/* comm 1 {rank 0, rank 2}: no waits. comm 2 {rank 0, rank 1}: rank 0 waits w_ns for rank 1 at
 * each instance. With cycle, comm 4 {rank 1, rank 0}: rank 1 waits w_ns for rank 0. comm 3
 * {rank 1, rank 3}: no waits. */
static struct cs_pwait *feed(int64_t w_ns, bool cycle) {
  struct cs_pwait *p = cs_pwait_new();
  assert_non_null(p);
  for (int k = 0; k < N; k++) {
    int64_t b = 1000000LL * k;
    struct cs_pwait_op a[2] = {coll(0, 0, b, b + 1000), coll(1, 2, b, b + 1000)};
    assert_int_equal(cs_pwait_instance(p, 1, a, 2), 0);
    struct cs_pwait_op c[2] = {coll(0, 1, b, b + 1000), coll(1, 3, b, b + 1000)};
    assert_int_equal(cs_pwait_instance(p, 3, c, 2), 0);
    struct cs_pwait_op x[2] = {coll(0, 0, b + 2000, b + 2000 + w_ns + 500), coll(1, 1, b + 2000 + w_ns, b + 2000 + w_ns + 500)};
    assert_int_equal(cs_pwait_instance(p, 2, x, 2), 0);
    if (cycle) {
      struct cs_pwait_op y[2] = {coll(0, 1, b + 9000, b + 9000 + w_ns + 500), coll(1, 0, b + 9000 + w_ns, b + 9000 + w_ns + 500)};
      assert_int_equal(cs_pwait_instance(p, 4, y, 2), 0);
    }
  }
  return p;
}

static struct cs_det_straggler finding(uint64_t comm, int rank, int kind) {
  return (struct cs_det_straggler){.comm = comm, .comm_size = 2, .rank = rank, .kind = kind, .offset_us = 100, .lateness_us = 100, .share_last = 1, .last_flag_seq = N - 1};
}

static size_t attribute(struct cs_pwait *p, struct cs_det_straggler *v, size_t n) {
  struct cs_det_result r;
  memset(&r, 0, sizeof r);
  r.stragglers = malloc(n * sizeof *v);
  assert_non_null(r.stragglers);
  memcpy(r.stragglers, v, n * sizeof *v);
  r.nstragglers = n;
  size_t removed = cs_pwait_attribute(p, &r);
  assert_int_equal(r.nstragglers + removed, n);
  memcpy(v, r.stragglers, r.nstragglers * sizeof *v);
  free(r.stragglers);
  return removed;
}

/* rank 0 late 100 us at comm 1, waiting 60 us an instance at comm 2 for rank 1, which has a
 * compute finding: moved to rank 1 */
static void test_moved(void **state) {
  (void)state;
  struct cs_pwait *p = feed(60000, false);
  double w;
  uint64_t n;
  assert_true(cs_pwait_member(p, 1, 0, true, &w, &n));
  assert_int_equal(n, N);
  assert_true(w == 60.0 * N);
  struct cs_det_straggler v[2] = {finding(1, 0, CS_DET_LINK), finding(3, 1, CS_DET_COMPUTE)};
  assert_int_equal(attribute(p, v, 2), 1);
  assert_int_equal(v[0].rank, 1);
  size_t nm;
  const struct cs_pwait_moved *m = cs_pwait_moved(p, &nm);
  assert_int_equal(nm, 1);
  assert_int_equal(m[0].rank, 0);
  assert_int_equal(m[0].peer, 1);
  assert_true(m[0].comm == 1 && m[0].excess_us == 60.0 && m[0].late_us == 100.0);
  cs_pwait_free(p);
}

/* 40 us an instance is under half its lateness: kept */
static void test_below_share(void **state) {
  (void)state;
  struct cs_pwait *p = feed(40000, false);
  struct cs_det_straggler v[2] = {finding(1, 0, CS_DET_LINK), finding(3, 1, CS_DET_COMPUTE)};
  assert_int_equal(attribute(p, v, 2), 0);
  cs_pwait_free(p);
}

/* ranks 0 and 1 each late where they wait for the other, no finding of their own: kept */
static void test_cycle(void **state) {
  (void)state;
  struct cs_pwait *p = feed(60000, true);
  struct cs_det_straggler v[2] = {finding(1, 0, CS_DET_LINK), finding(3, 1, CS_DET_LINK)};
  assert_int_equal(attribute(p, v, 2), 0);
  cs_pwait_free(p);
}

/* the cycle of test_cycle, and rank 0 also waits 55 us an instance at comm 5 for rank 5, which
 * has a compute finding: 55 us is at least half rank 0's lateness, so rank 0 moves to rank 5
 * (its longest wait's peer, rank 1, leads nowhere), and rank 1 to rank 0 */
static void test_cycle_second_peer(void **state) {
  (void)state;
  struct cs_pwait *p = feed(60000, true);
  for (int k = 0; k < N; k++) {
    int64_t b = 1000000LL * k + 200000;
    struct cs_pwait_op x[2] = {coll(0, 0, b, b + 55000 + 500), coll(1, 5, b + 55000, b + 55000 + 500)};
    assert_int_equal(cs_pwait_instance(p, 5, x, 2), 0);
  }
  struct cs_det_straggler v[3] = {finding(1, 0, CS_DET_LINK), finding(3, 1, CS_DET_LINK), finding(6, 5, CS_DET_COMPUTE)};
  assert_int_equal(attribute(p, v, 3), 2);
  assert_int_equal(v[0].rank, 5);
  size_t nm;
  const struct cs_pwait_moved *m = cs_pwait_moved(p, &nm);
  assert_int_equal(nm, 2);
  assert_true(m[0].rank == 0 && m[0].peer == 5 && m[1].rank == 1 && m[1].peer == 0);
  cs_pwait_free(p);
}

/* comm 7: rank 0 (cr 0) Sends to rank 1 (cr 1) at +5000 ns, rank 1's Recv posted at +1000: it
 * waits 4 us for its Send, whichever instance comes first */
static void test_recv_waits(void **state) {
  (void)state;
  struct cs_pwait *p = cs_pwait_new();
  assert_non_null(p);
  for (int k = 0; k < 4; k++) {
    int64_t b = 100000LL * k;
    struct cs_pwait_op s = {0, 0, 1, true, true, true, T0 + b + 5000, T0 + b + 6000};
    struct cs_pwait_op r = {1, 1, 0, true, false, true, T0 + b + 1000, T0 + b + 6000};
    assert_int_equal(cs_pwait_instance(p, 7, k % 2 ? &r : &s, 1), 0);
    assert_int_equal(cs_pwait_instance(p, 7, k % 2 ? &s : &r, 1), 0);
  }
  double w;
  uint64_t n;
  assert_true(cs_pwait_member(p, 7, 1, false, &w, &n));
  assert_true(w == 16.0 && n == 4);
  assert_true(cs_pwait_member(p, 7, 0, false, &w, &n));
  assert_true(w == 0.0 && n == 4);
  cs_pwait_free(p);
}

/* comm 9 {cr 0 (3 us), cr 1 (1 us)}: cr 1 last by 1 us (the median 2 us less its 1) in every
 * instance; seq k's ops end at k ms */
static struct cs_cost *feed_cost(int instances) {
  struct cs_cost *c = cs_cost_new();
  assert_non_null(c);
  for (int k = 0; k < instances; k++) {
    int64_t e = T0 + 1000000LL * k;
    struct cs_cost_op m[2] = {{0, true, false, e - 3000, e}, {1, true, false, e - 1000, e}};
    assert_int_equal(cs_cost_instance(c, 9, k, m, 2), 0);
  }
  return c;
}

static void test_cost(void **state) {
  (void)state;
  struct cs_cost *c = feed_cost(300);
  struct cs_det_straggler s = {.comm = 9, .comm_rank = 1, .rank = 1, .first_flag_seq = 40, .last_flag_seq = 182, .first_flag_ns = T0 + 40000000LL, .last_flag_ns = T0 + 182000000LL};
  double us, pct;
  assert_true(cs_cost_of(c, &s, &us, &pct));
  assert_true(us == 142.0);                     /* seqs 41-182 */
  assert_true(pct == 100.0 * 142.0 / 142000.0); /* over 142 ms */
  s.comm_rank = 0;                              /* never last: no cost */
  assert_true(cs_cost_of(c, &s, &us, &pct) && us == 0);
  cs_cost_free(c);
  /* 3000 instances: checkpoints every 4 from count 2048 on (every 2 before): seq 2003 is a
   * checkpoint (count 2004), seq 101 falls on seq 99's (count 100) */
  c = feed_cost(3000);
  s = (struct cs_det_straggler){.comm = 9, .comm_rank = 1, .rank = 1, .first_flag_seq = 101, .last_flag_seq = 2003};
  assert_true(cs_cost_of(c, &s, &us, &pct));
  assert_true(us == 1904.0 && pct == -1);
  cs_cost_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_moved),
      cmocka_unit_test(test_below_share),
      cmocka_unit_test(test_cycle),
      cmocka_unit_test(test_cycle_second_peer),
      cmocka_unit_test(test_recv_waits),
      cmocka_unit_test(test_cost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
