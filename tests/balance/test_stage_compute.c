/* tests/balance/test_stage_compute.c: analysis/stage_compute.c (cs_sched_judge's comparison of a
 * stage's ranks by their compute gap at their stage's collective) on synthetic instances with
 * exact figures: two pipeline copies of two stages (chains {0, 1} and {2, 3}), the stages'
 * collectives {0, 2} and {1, 3}. A rank 10 % slower at every instance is named with its stage
 * and becomes a compute straggler (not twice when flagged already); one above and below by
 * turns with a mean 14.5 % above, one 1 % slower (significant, too small to matter) and one 10 % slower over too few
 * instances are not; summary-recording members (cs_sched_summed) are judged over the instances
 * cs_sched_summed_instance gives them, and not without. cs_sched_judge's rule for findings at a
 * pipeline's Send/Recv: late there without a longer gap of its own is the schedule's order. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collscope/schedule.h"

#define PIPE_A 11 /* ranks 0 -> 1 */
#define PIPE_B 12 /* ranks 2 -> 3 */
#define STAGE0 21 /* ranks 0, 2 */
#define STAGE1 22 /* ranks 1, 3 */

static void p2p(struct cs_sched *s, uint64_t comm, int64_t seq, int r0, int r1) {
  struct cs_sched_op m[2] = {{0, r0, "h", 1, true, true, -1, 0}, {1, r1, "h", 0, true, false, -1, 0}};
  assert_int_equal(cs_sched_instance(s, comm, seq, m, 2), 0);
}

static void coll(struct cs_sched *s, uint64_t comm, int64_t seq, int r0, double g0, int r1, double g1) {
  struct cs_sched_op m[2] = {{0, r0, "h", -1, false, false, g0, 0}, {1, r1, "h", -1, false, false, g1, 0}};
  assert_int_equal(cs_sched_instance(s, comm, seq, m, 2), 0);
}

/* n steps; rank 3's gap at STAGE1 in step k: gap3(k) */
static struct cs_sched *feed(int n, double (*gap3)(int)) {
  struct cs_sched *s = cs_sched_new();
  assert_non_null(s);
  for (int k = 0; k < n; k++) {
    p2p(s, PIPE_A, k, 0, 1);
    p2p(s, PIPE_B, k, 2, 3);
    coll(s, STAGE0, k, 0, 1000, 2, 1000);
    coll(s, STAGE1, k, 1, 1000, 3, gap3(k));
  }
  assert_int_equal(cs_sched_finish(s), 0);
  assert_int_equal(cs_sched_stages(s), 2);
  assert_int_equal(cs_sched_comm_kind(s, STAGE1), CS_SCHED_STAGE);
  return s;
}

static double slow10(int k) { return (void)k, 1100; }
static double tail(int k) { return k % 2 ? 990 : 1300; }
static double slow1(int k) { return (void)k, 1010; }

static size_t kept(const struct cs_sched *s, struct cs_sched_verdict *out) {
  size_t nv, n = 0;
  const struct cs_sched_verdict *v = cs_sched_verdicts(s, &nv);
  for (size_t i = 0; i < nv; i++)
    if (v[i].kept) out[n++] = v[i];
  return n;
}

static void test_slow_named(void **state) {
  (void)state;
  struct cs_sched *s = feed(20, slow10);
  struct cs_det_result r;
  memset(&r, 0, sizeof r);
  assert_int_equal(cs_sched_judge(s, &r), 0);
  struct cs_sched_verdict v[4];
  assert_int_equal(kept(s, v), 1);
  assert_true(v[0].by_compute);
  assert_int_equal(v[0].rank, 3);
  assert_int_equal(v[0].stage, 1);
  assert_int_equal(v[0].comm, STAGE1);
  assert_true(v[0].gap_us == 1100 && v[0].stage_gap_us == 1000);
  assert_int_equal(v[0].instances, 20);
  assert_int_equal(v[0].above, 20);
  /* T = 20 x 1000, sum w^2 = 20 x 1000^2: p = exp(-10), below 0.001 / 4 members */
  assert_true(fabs(v[0].p - exp(-10.0)) < 1e-12);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].rank, 3);
  assert_int_equal(r.stragglers[0].comm, STAGE1);
  assert_int_equal(r.stragglers[0].comm_rank, 1);
  assert_int_equal(r.stragglers[0].kind, CS_DET_COMPUTE);
  assert_int_equal(r.stragglers[0].rule, CS_DET_RULE_STAGE); /* over the whole job: no flag instance */
  assert_true(r.stragglers[0].gap_us == 1100 && r.stragglers[0].peer_gap_us == 1000);
  free(r.stragglers);
  cs_sched_free(s);
}

static void test_flagged_not_twice(void **state) {
  (void)state;
  struct cs_sched *s = feed(20, slow10);
  struct cs_det_result r;
  memset(&r, 0, sizeof r);
  r.stragglers = calloc(1, sizeof *r.stragglers);
  r.nstragglers = 1;
  r.stragglers[0] = (struct cs_det_straggler){.comm = PIPE_B, .comm_rank = 1, .rank = 3, .kind = CS_DET_COMPUTE};
  cs_sched_judge(s, &r);
  struct cs_sched_verdict v[4];
  assert_int_equal(kept(s, v), 1);
  assert_int_equal(v[0].rank, 3);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].comm, PIPE_B);
  free(r.stragglers);
  cs_sched_free(s);
}

static void judge_none(int n, double (*gap3)(int)) {
  struct cs_sched *s = feed(n, gap3);
  struct cs_det_result r;
  memset(&r, 0, sizeof r);
  cs_sched_judge(s, &r);
  struct cs_sched_verdict v[4];
  assert_int_equal(kept(s, v), 0);
  assert_int_equal(r.nstragglers, 0);
  free(r.stragglers);
  cs_sched_free(s);
}

/* above and below by turns, each weighing the peer's 1000: T = 0, though its mean gap (1145) is
 * 14.5 % above (a tail, not a slower GPU) */
/* a summary recording's members (cs_sched_summed): the pipelines' peers and counts, the stages'
 * collectives' gaps summed over 100 instances (rank 3: 1100 us each), then the last 20 instances
 * given one by one (cs_sched_summed_instance) */
static void summed(struct cs_sched *s, uint64_t comm, int cr, int rank, bool p2p, int peer, double gap) {
  struct cs_sched_sum o;
  memset(&o, 0, sizeof o);
  o.comm_rank = cr, o.rank = rank, o.host = "h", o.p2p = p2p, o.last_seq = 99;
  if (p2p) {
    o.first_send = cr == 0, o.npeers = 1, o.peer[0] = peer, o.sends = cr == 0 ? 100 : 0, o.recvs = 100 - o.sends;
    o.before[0] = o.sends, o.got[0] = cr == 1;
  } else {
    o.gap_n = 100, o.gap_sum = 100 * gap;
  }
  assert_int_equal(cs_sched_summed(s, comm, &o), 0);
}

static void test_summed_named(void **state) {
  (void)state;
  for (int given = 0; given < 2; given++) {
    struct cs_sched *s = cs_sched_new();
    assert_non_null(s);
    summed(s, PIPE_A, 0, 0, true, 1, 0), summed(s, PIPE_A, 1, 1, true, 0, 0);
    summed(s, PIPE_B, 0, 2, true, 1, 0), summed(s, PIPE_B, 1, 3, true, 0, 0);
    summed(s, STAGE0, 0, 0, false, -1, 1000), summed(s, STAGE0, 1, 2, false, -1, 1000);
    summed(s, STAGE1, 0, 1, false, -1, 1000), summed(s, STAGE1, 1, 3, false, -1, 1100);
    for (int k = 0; given && k < 20; k++) {
      struct cs_sched_op a[2] = {{0, 0, "h", -1, false, false, 1000, 0}, {1, 2, "h", -1, false, false, 1000, 0}};
      struct cs_sched_op b[2] = {{0, 1, "h", -1, false, false, 1000, 0}, {1, 3, "h", -1, false, false, 1100, 0}};
      assert_int_equal(cs_sched_summed_instance(s, STAGE0, a, 2), 0);
      assert_int_equal(cs_sched_summed_instance(s, STAGE1, b, 2), 0);
    }
    assert_int_equal(cs_sched_finish(s), 0);
    assert_int_equal(cs_sched_comm_kind(s, STAGE1), CS_SCHED_STAGE);
    struct cs_det_result r;
    memset(&r, 0, sizeof r);
    cs_sched_judge(s, &r);
    struct cs_sched_verdict v[4];
    /* summed only: not judged; with the instances: as test_slow_named, the mean gaps the sums' */
    assert_int_equal(kept(s, v), given);
    if (given) {
      assert_true(v[0].by_compute && v[0].rank == 3 && v[0].stage == 1 && v[0].comm == STAGE1);
      assert_true(v[0].gap_us == 1100 && v[0].stage_gap_us == 1000);
      assert_int_equal(v[0].instances, 20);
      assert_int_equal(v[0].above, 20);
      assert_true(fabs(v[0].p - exp(-10.0)) < 1e-12);
      assert_int_equal(r.nstragglers, 1);
    }
    free(r.stragglers);
    cs_sched_free(s);
  }
}

static void test_tail(void **state) { (void)state, judge_none(20, tail); }
/* 1 % slower every instance: p = exp(-10) too, but under CS_SCHED_STAGE_EXCESS */
static void test_small(void **state) { (void)state, judge_none(20, slow1); }
/* 10 % slower over 5 instances: p = exp(-2.5) = 0.08 */
static void test_few(void **state) { (void)state, judge_none(5, slow10); }

static double even(int k) { return (void)k, 1000; }

/* late at its pipeline's Send/Recv without a longer gap (kind link: a slow GPU's tensor partner
 * or data-parallel peer, waiting for it elsewhere): the schedule's order, removed and counted;
 * kind compute there stays (its own gap is longer) */
static void test_pipeline_late(void **state) {
  (void)state;
  struct cs_sched *s = feed(20, even);
  assert_int_equal(cs_sched_comm_kind(s, PIPE_B), CS_SCHED_PIPELINE);
  struct cs_det_result r;
  memset(&r, 0, sizeof r);
  r.stragglers = calloc(2, sizeof *r.stragglers);
  assert_non_null(r.stragglers);
  r.stragglers[0] = (struct cs_det_straggler){.comm = PIPE_B, .comm_rank = 1, .rank = 3, .kind = CS_DET_LINK};
  r.stragglers[1] = (struct cs_det_straggler){.comm = PIPE_B, .comm_rank = 0, .rank = 2, .kind = CS_DET_COMPUTE};
  r.nstragglers = 2;
  assert_int_equal(cs_sched_judge(s, &r), 1);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].rank, 2);
  struct cs_sched_verdict v[4];
  assert_int_equal(kept(s, v), 0);
  free(r.stragglers);
  cs_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slow_named),
      cmocka_unit_test(test_flagged_not_twice),
      cmocka_unit_test(test_tail),
      cmocka_unit_test(test_small),
      cmocka_unit_test(test_few),
      cmocka_unit_test(test_summed_named),
      cmocka_unit_test(test_pipeline_late),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
