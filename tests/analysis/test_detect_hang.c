/* tests/analysis/test_detect_hang.c: the hangs' split (analysis/detect_hang.c). A GPU that
 * never reached the hung op while a peer's GPU is inside it is named (unstarted); with no start
 * known, or every GPU short of it, nobody is; a rank behind another communicator's hang is
 * stuck, not named. Through cs_detect() and the streaming detector alike. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/detect.h"

static const char *hosts[] = {"h0", "h1", "h2", "h3"};

/* comm `comm` over global ranks g[0..n): seqs 0..hung-1 done by everyone, seq `hung` pending on
 * every rank with start[k] (enum cs_det_gpu_start) */
static size_t add_comm(struct cs_det_op *v, size_t k, uint64_t comm, const int *g, int n, int64_t hung,
                       const int *start) {
  for (int64_t s = 0; s <= hung; s++)
    for (int r = 0; r < n; r++) {
      struct cs_det_op *o = &v[k++];
      memset(o, 0, sizeof *o);
      o->comm = comm;
      o->seq = s;
      o->comm_size = n;
      o->comm_rank = r;
      o->rank = g[r];
      o->host = hosts[g[r] / 2];
      o->enqueue_ns = 1000000000 + s * 1000000;
      o->start_ns = o->enqueue_ns + 1000 + r;
      o->end_ns = o->enqueue_ns + 500000;
      o->bytes = 4096;
      o->gap_us = -1;
      o->state = CS_DET_DONE;
      if (s == hung) {
        o->state = CS_DET_PENDING;
        o->start_ns = o->end_ns = 0;
        o->gpu_start = start[r];
      }
    }
  return k;
}

/* the same records through the streaming detector, one instance at a time per communicator */
static void stream_detect(const struct cs_det_op *v, size_t n, struct cs_det_result *r) {
  struct cs_det_stream *s = cs_det_stream_new(NULL, CS_DET_HANG_PENDING);
  assert_non_null(s);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && v[j].comm == v[i].comm && v[j].seq == v[i].seq) j++;
    assert_int_equal(cs_det_stream_instance(s, v[i].comm, v[i].seq, v + i, j - i), 0);
    i = j;
  }
  assert_int_equal(cs_det_stream_finish(s, r), 0);
  cs_det_stream_free(s);
}

/* way 0: cs_detect() over the whole set; 1: the streaming detector */
static void detect_way(int way, const struct cs_det_op *v, size_t n, struct cs_det_result *r) {
  if (way == 0)
    assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, r), 0);
  else
    stream_detect(v, n, r);
}

static const struct cs_det_hang *hang_of(const struct cs_det_result *r, uint64_t comm) {
  for (size_t i = 0; i < r->nhangs; i++)
    if (r->hangs[i].comm == comm) return &r->hangs[i];
  fail_msg("no hang on comm %llx", (unsigned long long)comm);
  return NULL;
}

static const int G8[] = {0, 1, 2, 3, 4, 5, 6, 7};
enum { R = CS_DET_START_REACHED,
       N = CS_DET_START_NOT_REACHED,
       U = CS_DET_START_UNKNOWN };

/* rank 5's GPU never reached seq 10, the others' are inside it */
static void test_gpu_not_started(void **st) {
  (void)st;
  struct cs_det_op v[88];
  const int start[8] = {R, R, R, R, R, N, R, R};
  size_t n = add_comm(v, 0, 0xa, G8, 8, 10, start);
  for (int way = 0; way < 2; way++) {
    struct cs_det_result r;
    detect_way(way, v, n, &r);
    assert_int_equal(r.nhangs, 1);
    const struct cs_det_hang *h = &r.hangs[0];
    assert_int_equal(h->reached, 9);
    assert_int_equal(h->seq, 10);
    assert_int_equal(h->nmissing, 0);
    assert_int_equal(h->nunstarted, 1);
    assert_int_equal(h->unstarted[0], 5);
    assert_string_equal(h->unstarted_hosts[0], "h2");
    assert_int_equal(h->nstuck, 7);
    for (size_t k = 0; k < h->nstuck; k++) assert_int_not_equal(h->stuck[k], 5);
    cs_det_result_free(&r);
  }
}

/* no peer known to be inside: a rank whose start is not reached is not named */
static void test_nothing_to_compare(void **st) {
  (void)st;
  struct cs_det_op v[88];
  const int unknown_peers[8] = {U, U, U, U, U, N, U, U}; /* the peers' starts sampled out */
  const int all_short[8] = {N, N, N, N, N, N, N, N};     /* every GPU behind an earlier hang */
  const int *cases[2] = {unknown_peers, all_short};
  for (int c = 0; c < 2; c++) {
    size_t n = add_comm(v, 0, 0xa, G8, 8, 10, cases[c]);
    struct cs_det_result r;
    assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
    assert_int_equal(r.nhangs, 1);
    assert_int_equal(r.hangs[0].nunstarted, 0);
    assert_int_equal(r.hangs[0].nstuck, 8);
    cs_det_result_free(&r);
  }
}

/* rank 0's GPU hangs: on tensor-parallel comm A {0, 1} rank 1 is inside seq 5 waiting for it;
 * on data-parallel comm B {1, 2, 3} rank 1's seq 5 is queued behind A's (never started) while
 * 2 and 3 are inside it. Rank 0 is named on A; rank 1 on B is behind A's hang: stuck. */
static void test_behind_another_hang(void **st) {
  (void)st;
  struct cs_det_op v[64];
  const int ga[2] = {0, 1}, gb[3] = {1, 2, 3};
  const int sa[2] = {N, R}, sb[3] = {N, R, R};
  size_t n = add_comm(v, 0, 0xa, ga, 2, 5, sa);
  n = add_comm(v, n, 0xb, gb, 3, 5, sb);
  for (int way = 0; way < 2; way++) {
    struct cs_det_result r;
    detect_way(way, v, n, &r);
    assert_int_equal(r.nhangs, 2);
    const struct cs_det_hang *a = hang_of(&r, 0xa), *b = hang_of(&r, 0xb);
    assert_int_equal(a->nunstarted, 1);
    assert_int_equal(a->unstarted[0], 0);
    assert_int_equal(a->nstuck, 1);
    assert_int_equal(a->stuck[0], 1);
    assert_int_equal(b->nunstarted, 0);
    assert_int_equal(b->nstuck, 3);
    cs_det_result_free(&r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_not_started),
      cmocka_unit_test(test_nothing_to_compare),
      cmocka_unit_test(test_behind_another_hang),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
