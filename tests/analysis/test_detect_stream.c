/* tests/analysis/test_detect_stream.c: the streaming detector (cs_det_stream_*, the dump
 * readers' form) against cs_detect() over the same records: two communicators fed
 * interleaved, one instance at a time, long enough that the stream drops old instances many
 * times over; a slow rank, a rank with an error, a pending (hung) op. Every result field
 * must be equal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/compute_gap.h"
#include "collscope/detect.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}
static const char *hosts[] = {"a", "b", "c", "d"};

/* comm A: 8 ranks, comm B: ranks 0..3; rank 3 is late on A from instance 300 on, rank 6 has
 * one failed op, rank 2 never completes B's last instance */
static struct cs_det_op *gen(size_t ninst, size_t *nout) {
  struct cs_det_op *v = calloc(ninst * 12, sizeof *v);
  size_t k = 0;
  int64_t t = 1000000000;
  for (size_t i = 0; i < ninst; i++) {
    for (int c = 0; c < 2; c++) {
      int size = c ? 4 : 8;
      double work = (i % 3 ? 200 : 3000) * (0.9 + 0.2 * urand()), arr[8], last = 0;
      for (int r = 0; r < size; r++) {
        arr[r] = 5 * urand() + (c == 0 && r == 3 && i >= 300 ? 0.3 * work : 0);
        if (arr[r] > last) last = arr[r];
      }
      for (int r = 0; r < size; r++) {
        struct cs_det_op *o = &v[k++];
        o->comm = c ? 0xb : 0xa;
        o->seq = (int64_t)i;
        o->comm_size = size;
        o->comm_rank = r;
        o->rank = r;
        o->host = hosts[r / 2];
        o->start_ns = t + (int64_t)(arr[r] * 1e3);
        o->end_ns = t + (int64_t)((last + work) * 1e3);
        o->enqueue_ns = t - 1000;
        o->state = CS_DET_DONE;
        o->bytes = i % 3 ? 4096 : 1 << 24;
        if (c == 0 && r == 6 && i == 77) o->state = CS_DET_FAILED;
        if (c == 1 && r == 2 && i == ninst - 1) o->state = CS_DET_PENDING;
      }
      t += (int64_t)((last + work) * 1e3) + 20000;
    }
  }
  *nout = k;
  return v;
}

static int cmp_proc(const void *a, const void *b, void *ctx) {
  const struct cs_det_op *v = ctx, *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];
  int c = strcmp(x->host, y->host);
  if (c) return c;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static void stream_equals_batch(void **state) {
  (void)state;
  size_t n;
  struct cs_det_op *v = gen(1500, &n);
  struct cs_det_params p;
  cs_det_params_default(&p);
  struct cs_det_result batch, str;
  assert_int_equal(cs_detect(v, n, &p, CS_DET_HANG_PENDING, &batch), 0);

  /* the gaps as cs_detect computes them: per process and stream (one here), the idle time since
   * the previous timed op of the same comm (collscope/compute_gap.h) */
  double *gap = malloc(n * sizeof *gap);
  size_t *idx = malloc(n * sizeof *idx), m = 0;
  for (size_t i = 0; i < n; i++) {
    gap[i] = -1;
    if (v[i].state == CS_DET_DONE) idx[m++] = i;
  }
  qsort_r(idx, m, sizeof *idx, cmp_proc, v);
  struct cs_gap_tracker gt;
  for (size_t k = 0; k < m; k++) {
    const struct cs_det_op *a = k ? &v[idx[k - 1]] : NULL, *b = &v[idx[k]];
    if (!a || a->rank != b->rank || strcmp(a->host, b->host)) cs_gap_reset(&gt);
    gap[idx[k]] = cs_gap_timed(&gt, b->comm, b->stream, b->start_ns, b->end_ns);
  }
  /* v is in (instance, comm, comm_rank) order: each run of one (comm, seq) is an instance */
  struct cs_det_stream *s = cs_det_stream_new(&p, CS_DET_HANG_PENDING);
  assert_non_null(s);
  struct cs_det_op mb[8];
  for (size_t i = 0; i < n;) {
    size_t j = i, k = 0;
    for (; j < n && v[j].comm == v[i].comm && v[j].seq == v[i].seq; j++, k++)
      mb[k] = (struct cs_det_op){.comm_rank = v[j].comm_rank, .comm_size = v[j].comm_size, .rank = v[j].rank, .host = v[j].host, .start_ns = v[j].start_ns, .end_ns = v[j].end_ns, .enqueue_ns = v[j].enqueue_ns, .state = v[j].state, .bytes = v[j].bytes, .gap_us = gap[j]};
    assert_int_equal(cs_det_stream_instance(s, v[i].comm, v[i].seq, mb, k), 0);
    i = j;
  }
  assert_int_equal(cs_det_stream_finish(s, &str), 0);
  cs_det_stream_free(s);

  assert_true(batch.nstragglers >= 1); /* rank 3 on comm A */
  assert_int_equal(batch.nhangs, 1);
  assert_int_equal(str.instances, batch.instances);
  assert_int_equal(str.nstragglers, batch.nstragglers);
  for (size_t i = 0; i < batch.nstragglers; i++) {
    const struct cs_det_straggler *a = &str.stragglers[i], *b = &batch.stragglers[i];
    assert_true(a->comm == b->comm && a->comm_size == b->comm_size && a->comm_rank == b->comm_rank &&
                a->rank == b->rank && a->host == b->host && a->kind == b->kind &&
                a->window_instances == b->window_instances && a->last == b->last);
    assert_true(a->share_last == b->share_last && a->lateness_us == b->lateness_us && a->offset_us == b->offset_us &&
                a->later_share == b->later_share && a->median_dur_us == b->median_dur_us && a->gap_us == b->gap_us &&
                a->peer_gap_us == b->peer_gap_us && a->first_flag_instance == b->first_flag_instance &&
                a->first_flag_seq == b->first_flag_seq && a->last_flag_seq == b->last_flag_seq &&
                a->first_flag_ns == b->first_flag_ns && a->last_flag_ns == b->last_flag_ns);
  }
  assert_int_equal(str.nranks, batch.nranks);
  for (size_t i = 0; i < batch.nranks; i++) {
    const struct cs_det_rankstat *a = &str.ranks[i], *b = &batch.ranks[i];
    assert_true(a->comm == b->comm && a->comm_rank == b->comm_rank && a->rank == b->rank && a->host == b->host &&
                a->instances == b->instances && a->last == b->last && a->lateness_us == b->lateness_us &&
                a->offset_us == b->offset_us && a->straggler == b->straggler);
  }
  assert_int_equal(str.nhangs, batch.nhangs);
  const struct cs_det_hang *a = &str.hangs[0], *b = &batch.hangs[0];
  assert_true(a->comm == b->comm && a->reached == b->reached && a->seq == b->seq && a->nstuck == b->nstuck &&
              a->nmissing == b->nmissing && a->nunstarted == b->nunstarted &&
              a->oldest_enqueue_ns == b->oldest_enqueue_ns);
  assert_int_equal(a->nstuck, 1);
  assert_int_equal(a->stuck[0], b->stuck[0]);
  cs_det_result_free(&batch);
  cs_det_result_free(&str);
  free(gap);
  free(idx);
  free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(stream_equals_batch)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
