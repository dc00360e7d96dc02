/* tests/analysis/test_detect_recent.c: the recent rule's noise term (analysis/detect_judge.c
 * offset_test) on the figures of a clean 64-rank dp_train job as processes, 2% jitter, no ring
 * step (the accuracy page's `flapping` clean row, shape bare, seed 6): the members' offsets have a
 * robust sigma of 28.5 us at every instance, the median duration is 1,827 us, and one rank is
 * after the median rank in 14 of the last 16 instances by a steady 28-31 us. The window's noise
 * term over 100 instances (17.9 us) and the duration's 1.5 % (27.4 us) let it pass; a median of
 * 16 instances is 2.5 times as loose, 44.7 us, and it must not. A rank 60 us late over the same
 * 16 instances is a straggler; so is the clean rank's pattern with a quiet fabric (sigma 5 us). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "collscope/detect.h"
#include "detect_internal.h"

#define WIN 100
#define RECENT 16
#define MED 1826.7

/* the window: the first WIN - RECENT instances alternate 12 us either side of the median rank
 * (after it in half), the last RECENT are `late` us plus a 1.5 us saw, but two at -10 us */
static void fill(struct cs_det_pt *pt, double late, double sigma, struct cs_det_counts *c) {
  memset(pt, 0, WIN * sizeof *pt);
  memset(c, 0, sizeof *c);
  for (size_t j = 0; j < WIN; j++) {
    double off = j % 2 ? 12.0 : -12.0;
    if (j >= WIN - RECENT) off = (j == WIN - 9 || j == WIN - 3) ? -10.0 : late + 1.5 * (double)(j % 3);
    pt[j] = (struct cs_det_pt){.med = MED, .off = off, .gap = 2026, .pgap = -1, .gpeers = 2012, .noise = sigma, .in = true, .u = 0.5};
    c->n++;
    c->pos += off > 0;
    if (j >= WIN - RECENT) {
      c->rn++;
      c->rpos += off > 0;
    }
  }
  c->w = WIN;
  c->recent = RECENT;
  c->recent_full = true;
  c->run = 2;
}

static bool judge(double late, double sigma, double *off) {
  struct cs_det_params p;
  cs_det_params_default(&p);
  struct cs_det_pt pt[WIN];
  struct cs_det_counts c;
  double scratch[2 * WIN], lat;
  fill(pt, late, sigma, &c);
  unsigned pre = cs_det_prechecks(&p, &c);
  assert_true(pre & CS_DET_PRE_RECENT); /* 14 of 16: the recent rule's pre-check holds */
  assert_false(pre & CS_DET_PRE_OFFSET);
  double thr = cs_det_rank_threshold(&p, pt, WIN, MED, scratch, NULL);
  assert_true(thr > 27.3 && thr < 27.5); /* 1.5 % of the duration: the window's noise term is less */
  return cs_det_offset_rules(&p, pre, &c, thr, pt, WIN, scratch, off, &lat);
}

static void test_clean_rank(void **st) {
  (void)st;
  double off = 0;
  assert_false(judge(28.4, 28.5, &off));
}

static void test_late_rank(void **st) {
  (void)st;
  double off = 0;
  assert_true(judge(60.0, 28.5, &off));
  assert_true(off >= 60.0 && off <= 61.5);
}

static void test_quiet_fabric(void **st) {
  (void)st;
  double off = 0;
  assert_true(judge(28.4, 5.0, &off));
  assert_true(off >= 28.4 && off <= 29.9);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_clean_rank), cmocka_unit_test(test_late_rank),
                                 cmocka_unit_test(test_quiet_fabric)};
  return cmocka_run_group_tests(t, NULL, NULL);
}
