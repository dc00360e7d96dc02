/* tests/analysis/test_detect_group.c: a group's members that share one GPU span are one detector
 * instance (analysis/detect_group.c): the fold of spans, states and bytes, the all-to-all rule
 * (include/collscope/detect.h cs_det_a2a), and cs_detect's instances and stragglers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "collscope/detect.h"

#define N 4

static struct cs_det_op member(int rank, int64_t seq, uint64_t group, uint32_t gops, bool p2p, bool recv, int peer,
                               int64_t st, int64_t en) {
  struct cs_det_op o;
  memset(&o, 0, sizeof o);
  o.comm = 0xabc;
  o.seq = seq;
  o.comm_size = N;
  o.comm_rank = rank;
  o.rank = rank;
  o.host = "h";
  o.start_ns = st;
  o.end_ns = en;
  o.enqueue_ns = st - 10;
  o.state = CS_DET_DONE;
  o.p2p = p2p;
  o.recv = recv;
  o.peer = peer;
  o.bytes = 1000;
  o.group = group;
  o.group_ops = gops;
  return o;
}

/* one rank's all-to-all: a Send and a Recv per peer, itself included */
static size_t a2a(struct cs_det_op *v, int rank, int64_t seq0, uint64_t group, int64_t st, int64_t en) {
  size_t k = 0;
  for (int p = 0; p < N; p++) {
    v[k++] = member(rank, seq0 + 2 * p, group, 2 * N, true, false, p, st, en);
    v[k++] = member(rank, seq0 + 2 * p + 1, group, 2 * N, true, true, p, st, en);
  }
  return k;
}

static void test_fold(void **st) {
  (void)st;
  struct cs_det_op v[2 * N + 3];
  size_t n = a2a(v, 1, 10, 7, 5000, 9000);
  v[3].state = CS_DET_PENDING;
  v[n] = member(1, 30, 8, 3, false, false, -1, 100, 400); /* AllReduce x3, not an all-to-all */
  v[n + 1] = member(1, 31, 8, 3, false, false, -1, 100, 400);
  v[n + 2] = member(1, 32, 8, 3, false, false, -1, 100, 400);
  assert_int_equal(cs_det_group_merge(v, n + 3), 2 * N - 1 + 2);
  assert_int_equal(v[0].seq, 10);
  for (size_t k = 1; k < 2 * N; k++) assert_int_equal(v[k].seq, -1);
  assert_int_equal(v[0].state, CS_DET_PENDING);
  assert_false(v[0].p2p);                 /* an all-to-all: a collective */
  assert_int_equal(v[0].bytes, N * 1000); /* its Send bytes (nccl-tests' alltoall size) */
  assert_int_equal(v[n].seq, 30);
  assert_int_equal(v[n].bytes, 3000);
  assert_int_equal(v[n + 1].seq, -1);
  /* an all-to-all of uneven splits (an expert-parallel dispatch) stays Send/Recv, all its bytes */
  struct cs_det_op u[2 * N];
  a2a(u, 0, 0, 5, 1, 2);
  u[2].bytes = 5000;
  cs_det_group_merge(u, 2 * N);
  assert_true(u[0].p2p);
  assert_int_equal(u[0].bytes, 2 * N * 1000 + 4000);
  /* Send/Recv to one peer only (a pipeline's batch_isend_irecv) stays P2P */
  struct cs_det_op w[2] = {member(0, 0, 9, 2, true, false, 1, 1, 2), member(0, 1, 9, 2, true, true, 3, 1, 2)};
  cs_det_group_merge(w, 2);
  assert_true(w[0].p2p);
  assert_int_equal(w[0].bytes, 2000);
}

/* 40 all-to-alls, rank 2 100 us late in each: 40 instances, rank 2 the straggler */
static void test_a2a_straggler(void **st) {
  (void)st;
  enum { CALLS = 40 };
  static struct cs_det_op v[CALLS * N * 2 * N];
  size_t n = 0;
  for (int c = 0; c < CALLS; c++)
    for (int r = 0; r < N; r++) {
      int64_t base = 1000000000LL + (int64_t)c * 1000000, s = base + (r == 2 ? 100000 : 0) + r * 10;
      n += a2a(v + n, r, (int64_t)c * 2 * N, (uint64_t)c + 1, s, base + 300000);
    }
  struct cs_det_params p;
  cs_det_params_default(&p);
  struct cs_det_result res;
  assert_int_equal(cs_detect(v, n, &p, CS_DET_HANG_PENDING, &res), 0);
  assert_int_equal(res.instances, CALLS);
  assert_int_equal(res.nstragglers, 1);
  assert_int_equal(res.stragglers[0].rank, 2);
  cs_det_result_free(&res);
  /* the input is left as it was */
  assert_int_equal(v[1].seq, 1);
}

/* two groups of 3 AllReduces (seq 0-2, 3-5) done on every rank, the third (seq 6-8) pending on
 * ranks 0-2 and never entered by rank 3: the job is stuck at seq 6, the third group's */
static void test_group_hang(void **st) {
  (void)st;
  struct cs_det_op v[3 * 3 * N];
  size_t n = 0;
  for (int g = 0; g < 3; g++)
    for (int r = 0; r < N; r++)
      for (int k = 0; k < 3; k++) {
        if (g == 2 && r == 3) continue;
        int64_t s0 = 1000000 * (g + 1);
        v[n] = member(r, 3 * g + k, (uint64_t)g + 1, 3, false, false, -1, s0, s0 + 1000);
        if (g == 2) v[n].state = CS_DET_PENDING, v[n].start_ns = v[n].end_ns = 0;
        n++;
      }
  struct cs_det_params p;
  cs_det_params_default(&p);
  struct cs_det_result res;
  assert_int_equal(cs_detect(v, n, &p, CS_DET_HANG_PENDING, &res), 0);
  assert_int_equal(res.nhangs, 1);
  assert_int_equal(res.hangs[0].reached, 5);
  assert_int_equal(res.hangs[0].seq, 6);
  assert_int_equal(res.hangs[0].nmissing, 1);
  assert_int_equal(res.hangs[0].missing[0], 3);
  assert_int_equal(res.hangs[0].nstuck, 3);
  cs_det_result_free(&res);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_fold), cmocka_unit_test(test_a2a_straggler),
                                 cmocka_unit_test(test_group_hang)};
  return cmocka_run_group_tests(t, NULL, NULL);
}
