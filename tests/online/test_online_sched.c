/* tests/online/test_online_sched.c: the online exchange judged against a pipeline's schedule
 * (analysis/online_sched.c) on the in-process model of 8 ranks (online_model.h), exact:
 *  - a rank that is last at every instance by the schedule's order (its compute gap its
 *    peers', as the first stage's at a collective after 1F1B's drain) is not flagged when it
 *    is a pipeline's stage, and is flagged, with its figures, when it is not;
 *  - a pipeline's rank late by its own compute (its gap 40 % above its peers') is flagged;
 *    one whose gap is 2 % above them is not, one 4 % above is (CS_SCHED_STAGE_EXCESS 3 %);
 *  - what a rank's Send/Recv tell it: a communicator with Send/Recv to comm rank +-1 (modulo
 *    its size) only and no collective is a pipeline; a collective on it, a peer farther away
 *    or out of range, or only collectives are not; communicators past the table are counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collscope/detect.h"
#include "collscope/online.h"
#include "collscope/online_sched.h"
#include "online_model.h"

#define N 8
#define OPS 16

/* every exchange each rank finishes OPS instances of one communicator; rank `late` arrives
 * late_us late (its duration that much shorter) with a compute gap of 1000 us x (1 + excess),
 * the others' 1000 us (+ up to 5 us of jitter) */
struct sgen {
  int late;
  double late_us, excess;
};

static void sfeed(void *ctx, int rank, uint32_t exchange, bool sdc_only, struct cs_online_rank *st) {
  const struct sgen *g = ctx;
  if (sdc_only) return;
  for (int i = 0; i < OPS; i++) {
    uint64_t seq = (uint64_t)(exchange - 1) * OPS + (uint64_t)i;
    bool late = rank == g->late;
    struct cs_online_op o = {0x5c4ed, seq, (float)(2000 + 20 * model_jit(rank, seq, 1) - (late ? g->late_us : 0)),
                             (float)(late ? 1000 * (1 + g->excess) : 1000 + 5 * model_jit(rank, seq, 2)), N,
                             (uint32_t)rank};
    cs_online_rank_feed_op(st, &o);
  }
}

/* 8 exchanges; returns how many findings rank 0 received, the first in *first. stages: 0 every
 * rank in stage 2 of its pipeline (the communicator is a stage's), 1 rank r in stage r % 4 (it
 * crosses the stages), -1 no stage known */
static size_t run_staged(struct sgen *g, bool pipeline, int stages, struct cs_online_straggler *first) {
  struct model *m = model_new(N, NULL, sfeed, g);
  assert_non_null(m);
  for (int r = 0; r < N; r++) {
    cs_online_rank_set_pipeline(m->st[r], pipeline);
    cs_online_rank_set_stage(m->st[r], stages < 0 ? -1 : stages == 0 ? 2
                                                                     : r % 4);
  }
  size_t n = 0;
  for (uint32_t x = 1; x <= 8; x++) {
    assert_int_equal(model_exchange(m, x), 0);
    const struct cs_online_findings *f = &m->f[0];
    assert_int_equal(f->instances, OPS);
    for (size_t i = 0; i < f->nstragglers; i++) {
      if (!n++ && first) *first = f->stragglers[i];
      assert_int_equal(f->stragglers[i].rank, g->late);
    }
  }
  model_free(m);
  return n;
}
static size_t run(struct sgen *g, bool pipeline, struct cs_online_straggler *first) {
  return run_staged(g, pipeline, -1, first);
}

static void test_schedule_order_set_aside(void **state) {
  (void)state;
  struct sgen g = {0, 400, 0};
  assert_int_equal(run(&g, true, NULL), 0);
}

static void test_schedule_order_flagged_outside_pipeline(void **state) {
  (void)state;
  struct sgen g = {0, 400, 0};
  struct cs_online_straggler s;
  assert_int_equal(run(&g, false, &s), 1);
  assert_int_equal(s.comm_rank, 0);
  assert_int_equal(s.instances, 15);
  assert_true(s.share_last == 1.0);
  assert_float_equal(s.lateness_us, 399.063, 5e-7);
  assert_float_equal(s.median_dur_us, 2008.318, 5e-7);

  assert_int_equal(s.kind, CS_DET_LINK); /* its gap is its peers': late, not slow */
}

static void test_own_compute_kept(void **state) {
  (void)state;
  struct sgen g = {3, 400, 0.4};
  struct cs_online_straggler s;
  assert_int_equal(run(&g, true, &s), 1);
  assert_int_equal(s.comm_rank, 3);
  assert_int_equal(s.kind, CS_DET_COMPUTE);
  assert_int_equal(s.instances, 15);
  assert_true(s.share_last == 1.0);
  assert_float_equal(s.lateness_us, 400.045, 5e-7);
  assert_float_equal(s.median_dur_us, 2007.861, 5e-7);
}

/* a stage's rank 10 % slower at its own compute and never late (its whole pipeline copy waits for
 * it, so it reaches its stage's collective with its peers): named by the stage comparison, kind
 * compute, once the weighted sign test clears 0.001 / 8 (every instance above its peers, equal
 * weights: exp(-18 / 2) = 1.23e-4 < 1.25e-4, its 18th instance); not where the communicator
 * crosses the stages or no stage is known, and not 2 % slower (the 3 % excess) */
static void test_stage_slower(void **state) {
  (void)state;
  struct sgen g = {3, 0, 0.10};
  struct cs_online_straggler s;
  assert_int_equal(run_staged(&g, true, 0, &s), 1);
  assert_int_equal(s.comm_rank, 3);
  assert_int_equal(s.kind, CS_DET_COMPUTE);
  assert_int_equal(s.instances, 18);
  assert_true(s.share_last == 0 && s.lateness_us == 0);
  assert_int_equal(run_staged(&g, true, 1, NULL), 0);
  assert_int_equal(run_staged(&g, true, -1, NULL), 0);
  struct sgen g2 = {3, 0, 0.02};
  assert_int_equal(run_staged(&g2, true, 0, NULL), 0);
}

static void test_excess_bound(void **state) {
  (void)state;
  struct sgen g = {3, 400, 0.02};
  assert_int_equal(run(&g, true, NULL), 0);
  g.excess = 0.04;
  assert_int_equal(run(&g, true, NULL), 1);
}

static void test_pipe_note(void **state) {
  (void)state;
  struct cs_online_pipe p;
  memset(&p, 0, sizeof p);
  cs_online_pipe_note(&p, 1, 4, 0, false, -1); /* a collective communicator */
  assert_false(cs_online_pipe_member(&p));
  cs_online_pipe_note(&p, 2, 4, 1, true, 2); /* Send/Recv to the next stage */
  cs_online_pipe_note(&p, 2, 4, 1, true, 0); /* ... and the previous */
  assert_true(cs_online_pipe_member(&p));
  cs_online_pipe_note(&p, 1, 4, 0, false, -1);
  assert_true(cs_online_pipe_member(&p));
  cs_online_pipe_note(&p, 2, 4, 1, false, -1); /* a collective on it: not a pipeline */
  assert_false(cs_online_pipe_member(&p));
  memset(&p, 0, sizeof p);
  cs_online_pipe_note(&p, 3, 8, 1, true, 2);
  assert_true(cs_online_pipe_member(&p));
  cs_online_pipe_note(&p, 3, 8, 1, true, 5); /* a peer off the chain (an expert exchange) */
  assert_false(cs_online_pipe_member(&p));
  cs_online_pipe_note(&p, 4, 4, 0, true, -1); /* a peer not known */
  assert_false(cs_online_pipe_member(&p));
  memset(&p, 0, sizeof p);
  cs_online_pipe_note(&p, 5, 4, 3, true, 0); /* the last stage's next: the first (interleaved) */
  cs_online_pipe_note(&p, 5, 4, 3, true, 2);
  assert_true(cs_online_pipe_member(&p));
  cs_online_pipe_note(&p, 5, 4, 3, true, 4); /* out of the communicator */
  assert_false(cs_online_pipe_member(&p));
  memset(&p, 0, sizeof p);
  for (uint64_t c = 0; c < CS_ONLINE_PIPE_COMMS + 3; c++) cs_online_pipe_note(&p, 100 + c, 4, 1, true, 0);
  assert_int_equal(p.untracked, 3);
  assert_true(cs_online_pipe_member(&p));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schedule_order_set_aside),
      cmocka_unit_test(test_schedule_order_flagged_outside_pipeline),
      cmocka_unit_test(test_own_compute_kept),
      cmocka_unit_test(test_stage_slower),
      cmocka_unit_test(test_excess_bound),
      cmocka_unit_test(test_pipe_note),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
