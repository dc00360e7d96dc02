/* tests/analysis/test_detect_kind.c: a straggler's kind in an expert-parallel step, with exact
 * figures: per step one collective (the token counts' AlltoAll), then a dispatch and a combine
 * Send/Recv, each of which completes at its own rank's arrival. The experts' work (before the
 * combine) rotates: the hot expert computes 5,600 us, the others 700-1,300 us. A slowed GPU
 * stalls before every op (the collective and both Send/Recv): its lateness at the next
 * collective holds three stalls, and its compute gap since its previous collective holds them
 * too; a slow link lengthens its Send/Recv instead (no gap). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "collscope/detect.h"

#define W 8
#define STEPS 300
static const char *hosts[4] = {"h1", "h2", "h3", "h4"};

/* the expert work of rank r in step s (us): the hot one 5,600, the others 700 + 100 k */
static double expert_us(int r, int s) {
  int k = (r + s) % W;
  return k == 0 ? 5600 : 600 + 100 * k;
}

static struct cs_det_op op_of(int r, int64_t seq, bool p2p, double start_us, double end_us) {
  return (struct cs_det_op){.comm = 0xabc, .seq = seq, .comm_size = W, .comm_rank = r, .rank = r, .host = hosts[r / 2], .start_ns = (int64_t)(start_us * 1e3), .end_ns = (int64_t)(end_us * 1e3), .enqueue_ns = (int64_t)(start_us * 1e3) - 1000, .state = CS_DET_DONE, .p2p = p2p, .bytes = 4096, .stream = 0x10 + (uint64_t)r};
}

/* STEPS steps; rank `slow` stalls stall_us before each of its ops (a slowed GPU), or its
 * Send/Recv each take link_us longer (a slow link at its end) */
static struct cs_det_op *gen(int slow, double stall_us, double link_us, size_t *nout) {
  struct cs_det_op *v = calloc((size_t)STEPS * 3 * W, sizeof *v);
  double t_end = 1e6; /* the previous collective's end, the same on every rank */
  size_t k = 0;
  for (int s = 0; s < STEPS; s++) {
    double arr[W], last = 0;
    for (int r = 0; r < W; r++) {
      double st = r == slow ? stall_us : 0, ln = r == slow ? link_us : 0;
      /* dispatch: after the collective; combine: after the expert; both 200 us */
      double d0 = t_end + 10 + st, d1 = d0 + 200 + ln;
      double c0 = d1 + expert_us(r, s) + st, c1 = c0 + 200 + ln;
      arr[r] = c1 + 10 + st + r; /* the next collective (r: no two ranks arrive together) */
      if (arr[r] > last) last = arr[r];
      v[k++] = op_of(r, 3 * (int64_t)s + 1, true, d0, d1);
      v[k++] = op_of(r, 3 * (int64_t)s + 2, true, c0, c1);
    }
    for (int r = 0; r < W; r++) v[k++] = op_of(r, 3 * (int64_t)s + 3, false, arr[r], last + 300);
    t_end = last + 300;
  }
  *nout = k;
  return v;
}

static void print_s(const struct cs_det_straggler *s) {
  print_message("rank %d kind %s offset %.3f lateness %.3f gap %.3f peers %.3f at %zu\n", s->rank,
                cs_det_kind_name(s->kind), s->offset_us, s->lateness_us, s->gap_us, s->peer_gap_us,
                s->first_flag_instance);
}

/* the slowed GPU: kind compute. Its gap excess (~3 x 300 us over its peers') is its offset;
 * its lateness when last is the hot expert's too (5,403 us), which its median gap does not
 * hold. Without the Send/Recv's idle time in the gap, the excess is one stall (290 us). */
static void test_slow_gpu_compute(void **st) {
  (void)st;
  size_t n;
  struct cs_det_op *v = gen(5, 300, 0, &n);
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  const struct cs_det_straggler *s = &r.stragglers[0];
  print_s(s);
  assert_int_equal(s->rank, 5);
  assert_int_equal(s->kind, CS_DET_COMPUTE);
  /* its idle time since its previous collective: 20 + 5 us of host time, its median expert
   * (1,100 us) and 3 stalls; the others' median */
  assert_float_equal(s->gap_us, 2025, 1e-6);
  assert_float_equal(s->peer_gap_us, 1024, 1e-6);
  /* 1,001, not 900: the offsets are about the median of the members within 5 robust sigmas, and
   * the hot expert and the slowed GPU, thousands of sigmas out in this noiseless job, are not among
   * them (docs/detection.md) */
  assert_float_equal(s->offset_us, 1001, 1e-6);
  assert_float_equal(s->lateness_us, 5403, 1e-6);
  assert_int_equal(s->first_flag_instance, 15);
  cs_det_result_free(&r);
  free(v);
}

/* the same late arrivals from a slow link (its Send/Recv 450 us longer each): kind link */
static void test_slow_link_not_compute(void **st) {
  (void)st;
  size_t n;
  struct cs_det_op *v = gen(5, 0, 450, &n);
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  const struct cs_det_straggler *s = &r.stragglers[0];
  print_s(s);
  assert_int_equal(s->rank, 5);
  assert_int_equal(s->kind, CS_DET_LINK);
  assert_float_equal(s->gap_us, 1125, 1e-6); /* no stall: its gap excess is its median expert's */
  assert_float_equal(s->peer_gap_us, 1024, 1e-6);
  assert_float_equal(s->offset_us, 1001, 1e-6); /* about the members within 5 sigmas, as above */
  cs_det_result_free(&r);
  free(v);
}

/* no slow rank: the rotating hot expert is nobody's straggler */
static void test_rotating_skew_clean(void **st) {
  (void)st;
  size_t n;
  struct cs_det_op *v = gen(-1, 0, 0, &n);
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.instances, STEPS);
  assert_int_equal(r.nstragglers, 0);
  cs_det_result_free(&r);
  free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slow_gpu_compute),
      cmocka_unit_test(test_slow_link_not_compute),
      cmocka_unit_test(test_rotating_skew_clean),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
