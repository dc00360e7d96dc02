/* tests/analysis/test_detect_dataload.c: load that follows the data is not a straggler
 * (analysis/detect_dataload.c), with exact figures on a synthetic clock. An expert-parallel
 * step of 64 ranks: the token counts' AlltoAll, then dispatch (a Send of the rank's 128 tokens,
 * a Recv of its expert's load), the expert's work (8 us a token), and combine (a Send of the
 * load, a Recv of the 128 tokens), 256 B a token. The load follows a Zipf-like popularity that
 * moves one rank a step, as tests/apps/moe.c's routing: a rank spends tens of consecutive steps
 * with more tokens than the median rank and arrives late at the next AlltoAlls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "collscope/detect.h"

#define W 64
#define STEPS 200
#define TOK 128 /* tokens each rank routes a step */
static const char *hosts[W / 8] = {"h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"};

/* the tokens rank r's expert receives in step s: 100 + 600 / (popularity + 1), the hot one
 * 700 (5.9x the median rank's 118); `fixed` >= 0 is a rank that is always the hot one */
static int load_of(int r, int s, int fixed) {
  if (fixed >= 0) return r == fixed ? 700 : TOK;
  return 100 + 600 / ((r + s) % W + 1);
}

static struct cs_det_op op_of(int r, int64_t seq, bool p2p, double start_us, double end_us, uint64_t bytes) {
  return (struct cs_det_op){.comm = 0xd1, .seq = seq, .comm_size = W, .comm_rank = r, .rank = r, .host = hosts[r / 8], .start_ns = (int64_t)(start_us * 1e3), .end_ns = (int64_t)(end_us * 1e3), .enqueue_ns = (int64_t)(start_us * 1e3) - 1000, .state = CS_DET_DONE, .p2p = p2p, .bytes = bytes, .stream = 0x10 + (uint64_t)r};
}

/* STEPS steps; rank `slow` stalls stall_us before the AlltoAll and before both Send/Recv
 * groups (a slowed GPU). Every rank's arrival has its own 0-40 us of host jitter. */
static struct cs_det_op *gen(int slow, double stall_us, int fixed, size_t *nout) {
  struct cs_det_op *v = calloc((size_t)STEPS * 5 * W, sizeof *v);
  double t_end = 1e6; /* the previous AlltoAll's end, the same on every rank */
  size_t k = 0;
  for (int s = 0; s < STEPS; s++) {
    double arr[W], last = 0;
    for (int r = 0; r < W; r++) {
      double st = r == slow ? stall_us : 0;
      int load = load_of(r, s, fixed);
      uint64_t own = TOK * 256, got = (uint64_t)load * 256;
      double d0 = t_end + 10 + st, c0 = d0 + 200 + 8.0 * load + st;
      v[k++] = op_of(r, 5 * (int64_t)s + 1, true, d0, d0 + 100, own);       /* dispatch Send */
      v[k++] = op_of(r, 5 * (int64_t)s + 2, true, d0 + 100, d0 + 200, got); /* dispatch Recv */
      v[k++] = op_of(r, 5 * (int64_t)s + 3, true, c0, c0 + 100, got);       /* combine Send */
      v[k++] = op_of(r, 5 * (int64_t)s + 4, true, c0 + 100, c0 + 200, own); /* combine Recv */
      arr[r] = c0 + 200 + 10 + st + (double)((r * 131 + s * 71) % 41);
      if (arr[r] > last) last = arr[r];
    }
    for (int r = 0; r < W; r++) v[k++] = op_of(r, 5 * (int64_t)s + 5, false, arr[r], last + 300, 256);
    t_end = last + 300;
  }
  *nout = k;
  return v;
}

static void print_s(const struct cs_det_straggler *s) {
  print_message("rank %d kind %s offset %.6f lateness %.6f gap %.3f peers %.3f at %zu share %.3f\n", s->rank,
                cs_det_kind_name(s->kind), s->offset_us, s->lateness_us, s->gap_us, s->peer_gap_us,
                s->first_flag_instance, s->share_last);
}

static struct cs_det_result detect(int slow, double stall_us, int fixed) {
  size_t n;
  struct cs_det_op *v = gen(slow, stall_us, fixed, &n);
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  free(v);
  assert_int_equal(r.instances, STEPS);
  for (size_t i = 0; i < r.nstragglers; i++) print_s(&r.stragglers[i]);
  return r;
}

/* no slow GPU: the ranks the rotating data makes late are nobody's stragglers (without the
 * fit the offset and recent rules flag them) */
static void test_rotating_load_clean(void **st) {
  (void)st;
  struct cs_det_result r = detect(-1, 0, -1);
  assert_int_equal(r.nstragglers, 0);
  cs_det_result_free(&r);
}

/* a slowed GPU in the same job, moving the bytes its popularity gives it like any rank: its
 * three stalls (300 us) are what the bytes do not explain */
static void test_slow_gpu_rotating_load(void **st) {
  (void)st;
  struct cs_det_result r = detect(37, 100, -1);
  assert_int_equal(r.nstragglers, 1);
  const struct cs_det_straggler *s = &r.stragglers[0];
  assert_int_equal(s->rank, 37);
  assert_int_equal(s->kind, CS_DET_COMPUTE);
  assert_int_equal(s->first_flag_instance, 15); /* the share-last rule's first window */
  assert_float_equal(s->share_last, 1, 1e-9);   /* last by its residual in every instance */
  assert_float_equal(s->offset_us, 299.551414, 1e-5);
  assert_float_equal(s->lateness_us, 296.732, 1e-6);
  assert_float_equal(s->gap_us, 1295, 1e-6); /* its median expert's work and 3 stalls */
  assert_float_equal(s->peer_gap_us, 985, 1e-6);
  cs_det_result_free(&r);
}

/* a slowed GPU that is also the one data-hot rank, every step: the bytes of one rank alone
 * cannot tell its load from its GPU (a line through one point explains it whole), so no line
 * is read and its raw lateness is judged */
static void test_slow_gpu_alone_hot(void **st) {
  (void)st;
  struct cs_det_result r = detect(21, 100, 21);
  assert_int_equal(r.nstragglers, 1);
  const struct cs_det_straggler *s = &r.stragglers[0];
  assert_int_equal(s->rank, 21);
  assert_int_equal(s->kind, CS_DET_COMPUTE);
  assert_int_equal(s->first_flag_instance, 15);
  /* its load's 4,576 us, its stalls, jitter; about the median of the members within 5 robust
   * sigmas, which it is not among (4,874.5 about every member's median) */
  assert_float_equal(s->offset_us, 4875, 1e-6);
  assert_float_equal(s->lateness_us, 4874, 1e-6);
  assert_float_equal(s->gap_us, 5940, 1e-6);
  assert_float_equal(s->peer_gap_us, 1064, 1e-6);
  cs_det_result_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rotating_load_clean),
      cmocka_unit_test(test_slow_gpu_rotating_load),
      cmocka_unit_test(test_slow_gpu_alone_hot),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
