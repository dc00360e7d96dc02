/* tests/analysis/test_detect_cost.c: the cost rule (analysis/detect_cost.c) on a synthetic
 * data-parallel job fed to the streaming detector: per step 3 collectives, each after 1.8 ms of
 * GPU compute (x (1 + j u), u uniform in [-1, 1), plus T x an exponential draw: the
 * simulator's jitter), 900, 300 and 100 us of transfer after the last rank arrives; one rank's
 * host stalls before some steps' first collective (its stream idles: a larger compute gap).
 * Each host has its own clock offset. A stall of 200 ms every 50 steps, 3 ms every other
 * step, 1 ms every step, at 8 and 64 ranks, must be named within 60 steps of its onset with
 * exact figures; clean jobs with tails must give no finding at all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/detect.h"

#define MAXR 64
#define STALLED 3
#define ONSET 20 /* the first stalled step */

static uint64_t rng;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}
static const char *hostname(int r, int n) {
  static char names[MAXR][16]; /* "h" and any int */
  int h = n > 8 ? r / 8 : r / 2;
  snprintf(names[h], sizeof names[h], "h%d", h);
  return names[h];
}

struct job {
  int n;            /* ranks */
  size_t steps;     /* 3 instances each */
  double jit, tail; /* compute noise: relative uniform half-width, exponential mean */
  double stall_us;  /* the stalled rank's host stall before the step's first collective ... */
  size_t every;     /* ... on steps ONSET, ONSET + every, ... (0: none) */
  bool hot;         /* each step a random rank computes 2-8 ms longer before collective 0 (the
                       data's work: a hot expert), so every rank's fair share of the others'
                       wait is about 5% of the time */
  struct cs_det_params p;
};

/* the job through cs_det_stream; the caller frees out */
static void run(const struct job *J, uint64_t seed, struct cs_det_result *out) {
  static const double work[3] = {900, 300, 100};
  rng = seed;
  struct cs_det_stream *s = cs_det_stream_new(&J->p, CS_DET_HANG_PENDING);
  assert_non_null(s);
  double end = 0; /* the previous collective's end, on the reference clock, us */
  struct cs_det_op m[MAXR];
  int64_t seq = 0;
  for (size_t step = 0; step < J->steps; step++) {
    int hot = J->hot ? (int)(urand() * J->n) : -1;
    double extra = J->hot ? 2000 + 6000 * urand() : 0;
    for (int k = 0; k < 3; k++, seq++) {
      double arr[MAXR], gap[MAXR], last = 0;
      for (int r = 0; r < J->n; r++) {
        gap[r] = 5;
        if (k == 0 && r == STALLED && J->every && step >= ONSET && (step - ONSET) % J->every == 0)
          gap[r] += J->stall_us;
        double c = 1800 * (1 + J->jit * (2 * urand() - 1)) + J->tail * 1800 * -log(1 - urand());
        if (r == hot && k == 0) c += extra;
        arr[r] = end + gap[r] + c;
        if (arr[r] > last) last = arr[r];
      }
      double fin = last + work[k];
      for (int r = 0; r < J->n; r++) {
        int64_t skew = (int64_t)(r / 8 + r % 2) * 1000000000; /* each host's clock */
        m[r] = (struct cs_det_op){.comm_rank = r,
                                  .comm_size = J->n,
                                  .rank = r,
                                  .host = hostname(r, J->n),
                                  .start_ns = skew + (int64_t)(arr[r] * 1e3),
                                  .end_ns = skew + (int64_t)(fin * 1e3),
                                  .enqueue_ns = skew + (int64_t)(arr[r] * 1e3) - 1000,
                                  .state = CS_DET_DONE,
                                  .bytes = (uint64_t)4 << 20 >> (3 * k),
                                  .gap_us = gap[r]};
      }
      assert_int_equal(cs_det_stream_instance(s, 0xc0de, seq, m, (size_t)J->n), 0);
      end = fin;
    }
  }
  assert_int_equal(cs_det_stream_finish(s, out), 0);
  cs_det_stream_free(s);
}

static void print(const char *tag, const struct cs_det_result *r) {
  for (size_t i = 0; i < r->nstragglers; i++) {
    const struct cs_det_straggler *x = &r->stragglers[i];
    printf("%s: rank %d rule %s kind %s first %zu share %.6f late %zu/%zu period %zu stall %.3f share_last %.6f "
           "lateness %.3f\n",
           tag, x->rank, cs_det_rule_name(x->rule), cs_det_kind_name(x->kind), x->first_flag_instance,
           x->cost_share, x->late_instances, x->cost_instances, x->period_instances, x->stall_us, x->share_last,
           x->lateness_us);
  }
}

struct want {
  int rule;
  size_t first; /* first_flag_instance */
  double share;
  size_t late, period;
  double stall_us; /* share-last: its lateness_us */
};

/* one finding, rank STALLED, kind compute, flagged within 60 steps of the onset, these figures */
static void expect(const char *tag, const struct job *J, const struct want *w) {
  struct cs_det_result r;
  run(J, 0x9E3779B97F4A7C15ull, &r);
  print(tag, &r);
  assert_int_equal(r.nstragglers, 1);
  const struct cs_det_straggler *x = &r.stragglers[0];
  assert_int_equal(x->rank, STALLED);
  assert_int_equal(x->kind, CS_DET_COMPUTE);
  assert_int_equal(x->rule, w->rule);
  size_t onset = 3 * ONSET + 1; /* the first stalled instance, 1-based */
  assert_true(x->first_flag_instance >= onset && x->first_flag_instance - onset < 3 * 60);
  assert_int_equal(x->first_flag_instance, w->first);
  if (w->rule == CS_DET_RULE_COST) {
    assert_int_equal(x->late_instances, w->late);
    assert_int_equal(x->period_instances, w->period);
    assert_int_equal(x->cost_instances, J->p.cost_window ? J->p.cost_window : 300);
    assert_true(fabs(x->cost_share - w->share) < 5e-7);
    assert_true(fabs(x->stall_us - w->stall_us) < 5e-4);
  } else {
    assert_true(fabs(x->share_last - w->share) < 5e-7);
    assert_true(fabs(x->lateness_us - w->stall_us) < 5e-4);
  }
  cs_det_result_free(&r);
}

static struct job job(int n, double stall_us, size_t every, size_t steps) {
  struct job J = {.n = n, .steps = steps, .jit = 0.02, .stall_us = stall_us, .every = every};
  cs_det_params_default(&J.p);
  return J;
}

/* a data loader's 200 ms every 50 steps (36% of the time): named at the second stall */
static void test_loader_200ms_8(void **st) {
  (void)st;
  struct job J = job(8, 200000, 50, 200);
  expect("200ms/50 x8", &J, &(struct want){CS_DET_RULE_COST, 216, 0.370412, 2, 0, 199991.609});
}
static void test_loader_200ms_64(void **st) {
  (void)st;
  struct job J = job(64, 200000, 50, 200);
  expect("200ms/50 x64", &J, &(struct want){CS_DET_RULE_COST, 216, 0.369737, 2, 0, 200005.527});
}
/* 3 ms on every other step (18% of the time, 14x the 100 us AllReduce) */
static void test_flap_3ms_8(void **st) {
  (void)st;
  struct job J = job(8, 3000, 2, 200);
  expect("3ms/2 x8", &J, &(struct want){CS_DET_RULE_COST, 105, 0.180485, 50, 6, 2991.610});
}
static void test_flap_3ms_64(void **st) {
  (void)st;
  struct job J = job(64, 3000, 2, 200);
  expect("3ms/2 x64", &J, &(struct want){CS_DET_RULE_COST, 105, 0.180518, 50, 6, 2990.975});
}
/* 1 ms on every step (12% of the time): last in a third of the instances, the share-last rule
 * names it first */
static void test_step_1ms_8(void **st) {
  (void)st;
  struct job J = job(8, 1000, 1, 200);
  expect("1ms/1 x8", &J, &(struct want){CS_DET_RULE_LAST, 105, 0.42, 0, 0, 988.852});
}
static void test_step_1ms_64(void **st) {
  (void)st;
  struct job J = job(64, 1000, 1, 200);
  expect("1ms/1 x64", &J, &(struct want){CS_DET_RULE_LAST, 105, 0.33, 0, 0, 988.918});
}

/* clean: 100,002 instances at 2% and at 5% jitter, each with a 5% exponential tail; at 8 ranks
 * also with a random hot rank each step */
static void clean(int n, double jit, size_t steps, bool hot) {
  struct job J = job(n, 0, 0, steps);
  J.jit = jit;
  J.hot = hot;
  J.tail = 0.05;
  struct cs_det_result r;
  run(&J, 0xD1B54A32D192ED03ull, &r);
  char tag[64];
  snprintf(tag, sizeof tag, "clean x%d jitter %.0f%%%s", n, jit * 100, hot ? " hot rank" : "");
  print(tag, &r);
  printf("%s: %zu instances, %zu findings\n", tag, r.instances, r.nstragglers);
  assert_int_equal(r.instances, 3 * steps);
  assert_int_equal(r.nstragglers, 0);
  cs_det_result_free(&r);
}
static void test_clean_8(void **st) {
  (void)st;
  clean(8, 0.02, 33334, false);
  clean(8, 0.05, 33334, false);
  clean(8, 0.02, 33334, true);
}
static void test_clean_64(void **st) {
  (void)st;
  clean(64, 0.02, 33334, false);
  clean(64, 0.05, 33334, false);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loader_200ms_8),
      cmocka_unit_test(test_loader_200ms_64),
      cmocka_unit_test(test_flap_3ms_8),
      cmocka_unit_test(test_flap_3ms_64),
      cmocka_unit_test(test_step_1ms_8),
      cmocka_unit_test(test_step_1ms_64),
      cmocka_unit_test(test_clean_8),
      cmocka_unit_test(test_clean_64),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
