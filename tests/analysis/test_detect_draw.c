/* tests/analysis/test_detect_draw.c: the offset rule over fresh draws (analysis/detect_judge.c
 * cs_det_draw_rule) on the draws of a window, with the figures the accuracy driver measured for
 * fsdp at 16,384 ranks, 300 us a ring step, 10% jitter with a 10% tail: each draw's offset, its
 * mid-rank among the draw's members, the draw's noise. A clean rank whose median offset is 5.9 of
 * the draws' standard errors (its tail draws) is not flagged among 16,384 members: its ranks' normal
 * scores sum to 3.6 standard deviations; a GPU 20% slower is; and the same draws of that GPU, at
 * 5.9 standard deviations, meet the rule among 64 members and not among 16,384 (the level
 * corrected for the members tested). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "collscope/detect.h"
#include "detect_internal.h"

#define WIN 100

struct draw {
  double off, u;
};

/* a window of WIN instances, every 7th from the newest a draw of the k given, the others tied
 * (every offset 0): the window's median duration med; the rank's gap 5,000 us at the draws, its
 * peers' 4,358 (fsdp's backward pass) */
static void fill(struct cs_det_pt *pt, const struct draw *d, size_t k) {
  memset(pt, 0, WIN * sizeof *pt);
  for (size_t j = 0; j < WIN; j++)
    pt[j] = (struct cs_det_pt){.med = 5.5e6, .gap = -1, .pgap = -1, .gpeers = -1, .in = true, .u = 0.5};
  for (size_t i = 0; i < k; i++) {
    struct cs_det_pt *q = &pt[WIN - 1 - 7 * (k - 1 - i)];
    q->draw = true;
    q->off = d[i].off;
    q->u = d[i].u;
    q->noise = 298;
    q->gap = 5000;
    q->gpeers = 4358;
  }
}

static bool judge(const struct draw *d, size_t k, int csize, double *off) {
  struct cs_det_params p;
  cs_det_params_default(&p);
  struct cs_det_pt pt[WIN];
  double scratch[2 * WIN];
  fill(pt, d, k);
  return cs_det_draw_rule(&p, pt, WIN, 5.5e6, csize, scratch, off);
}

/* a clean rank of fsdp at 16,384 ranks (seed 1): after the median rank in 10 of 11 draws, a median
 * of 662 us at 5.9 standard errors of the draws' noise (298 us), flagged at instance 90 before */
static const struct draw clean[] = {{1084, .991}, {-437, .038}, {45, .556}, {195, .723}, {730, .965}, {188, .720}, {1167, .994}, {113, .638}, {662, .951}, {755, .968}, {678, .955}};
/* the slowed GPU of the same job (seed 3), its last 13 draws: 6.5 standard deviations */
static const struct draw slow[] = {{416, .877}, {634, .948}, {631, .949}, {511, .913}, {869, .982}, {323, .826}, {778, .972}, {781, .972}, {1399, .998}, {1049, .990}, {390, .859}, {595, .939}, {1421, .999}};
/* its 13 draws before (one early, -64 us): 5.9 standard deviations */
static const struct draw slow_early[] = {{-64, .410}, {677, .958}, {825, .977}, {416, .877}, {634, .948}, {631, .949}, {511, .913}, {869, .982}, {323, .826}, {778, .972}, {781, .972}, {1399, .998}, {1049, .990}};

static void test_clean_rank_not_flagged(void **state) {
  (void)state;
  double off;
  assert_false(judge(clean, sizeof clean / sizeof *clean, 16384, &off));
  assert_true(fabs(off - 662) < 1e-9); /* its median offset is reported all the same */
}

static void test_slow_gpu_flagged(void **state) {
  (void)state;
  double off;
  assert_true(judge(slow, sizeof slow / sizeof *slow, 16384, &off));
  assert_true(fabs(off - 634) < 1e-9);
}

static void test_level_corrected_for_members(void **state) {
  (void)state;
  double off;
  size_t k = sizeof slow_early / sizeof *slow_early;
  assert_true(judge(slow_early, k, 64, &off));
  assert_false(judge(slow_early, k, 16384, &off));
}

static void test_normal_score(void **state) {
  (void)state;
  assert_true(fabs(cs_det_normal_score(0.975) - 1.95996) < 5e-4);
  assert_true(fabs(cs_det_normal_score(0.025) + 1.95996) < 5e-4);
  assert_true(fabs(cs_det_normal_score(0.5)) < 5e-4);
  assert_true(fabs(cs_det_normal_score(1e-9) + 5.99781) < 5e-4);
  assert_true(fabs(cs_det_normal_score(1 - 0.5 / 16384) - 4.00877) < 5e-4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clean_rank_not_flagged),
      cmocka_unit_test(test_slow_gpu_flagged),
      cmocka_unit_test(test_level_corrected_for_members),
      cmocka_unit_test(test_normal_score),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
