/* tests/analysis/test_detect.c: analysis/detect.c on synthetic collective instances with a
 * known physics: every rank arrives at the collective at its own time (noise, plus a delay
 * for a slow rank); the collective ends for everyone when the last one arrived plus the
 * work, so a rank's GPU duration = work + (last arrival - its arrival). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/detect.h"

#define W 8
static const char *hosts[4] = {"h1", "h2", "h3", "h4"};

static uint64_t rng = 88172645463325252ull;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}
static double link_extra_us; /* a slow link: every transfer of every rank takes this longer */
static double expo(double mean) { return -mean * log(1 - urand()); }
static double noise_rel; /* arrival noise that scales with the collective (mean noise_rel * work) */
static size_t slow_from; /* the slow rank is delayed from this instance on */

/* n instances; rank `slow` arrives delay_frac * work late (its stream was busy, so its
 * compute gap grows). */
static struct cs_det_op *gen(size_t n, int slow, double delay_frac, double noise_us,
                             size_t *nout) {
  struct cs_det_op *v = calloc(n * W, sizeof *v);
  int64_t t = 1000000000;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    static const double works[] = {80, 300, 1500, 6000}; /* mixed sizes */
    double work = works[i % 4] * (0.9 + 0.2 * urand()) + link_extra_us;
    double arr[W], last = 0;
    for (int r = 0; r < W; r++) {
      arr[r] = expo(noise_us + noise_rel * work);
      if (r == slow && i >= slow_from) arr[r] += delay_frac * work;
      if (arr[r] > last) last = arr[r];
    }
    double base = (double)t;
    for (int r = 0; r < W; r++) {
      struct cs_det_op *o = &v[k++];
      o->comm = 0x1234;
      o->seq = (int64_t)i;
      o->comm_size = W;
      o->comm_rank = r;
      o->rank = r;
      o->host = hosts[r / 2];
      double start = base + arr[r] * 1e3;
      double end = base + (last + work) * 1e3;
      o->start_ns = (int64_t)start;
      o->end_ns = (int64_t)end;
      o->state = CS_DET_DONE;
      o->bytes = (uint64_t)1 << (10 + 4 * (i % 4));
    }
    t = (int64_t)(base + (last + works[3] * 1.2 + link_extra_us) * 1e3) + 50000;
  }
  *nout = k;
  return v;
}

static void test_slow_compute(void **st) {
  (void)st;
  size_t n;
  struct cs_det_op *v = gen(200, 5, 0.2, 5, &n);
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].rank, 5);
  assert_string_equal(r.stragglers[0].host, "h3");
  assert_int_equal(r.stragglers[0].kind, CS_DET_COMPUTE);
  /* 27: after its partner in 22 of 22 (a pair's sign test: a binomial tail within offset_z), then
   * persistence */
  assert_true(r.stragglers[0].first_flag_instance <= 27);
  assert_int_equal(r.nhangs, 0);
  print_message("20%% slow: flagged after %zu instances, share_last %.2f lateness %.1f us (median %.1f us)\n",
                r.stragglers[0].first_flag_instance, r.stragglers[0].share_last, r.stragglers[0].lateness_us,
                r.stragglers[0].median_dur_us);
  cs_det_result_free(&r);
  free(v);
  v = gen(300, 2, 0.05, 5, &n);
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].rank, 2);
  assert_true(r.stragglers[0].first_flag_instance <= 100);
  print_message("5%% slow: flagged after %zu instances, share_last %.2f lateness %.1f us\n",
                r.stragglers[0].first_flag_instance, r.stragglers[0].share_last, r.stragglers[0].lateness_us);
  cs_det_result_free(&r);
  free(v);
}

/* Arrival noise as large as the delay: the slowed rank is last in only a minority of the
 * instances, so the share-last rule cannot see it; the offset rule (every instance) does. */
static void test_offset_rule(void **st) {
  (void)st;
  size_t n;
  noise_rel = 0.05;
  struct cs_det_op *v = gen(300, 6, 0.05, 2, &n);
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  const struct cs_det_straggler *s = &r.stragglers[0];
  assert_int_equal(s->rank, 6);
  assert_string_equal(s->host, "h4");
  assert_int_equal(s->kind, CS_DET_COMPUTE);
  assert_true(s->share_last < 0.6);
  assert_true(s->later_share > 0.6);
  assert_true(s->offset_us > 0.02 * s->median_dur_us);
  assert_true(s->first_flag_instance <= 100);
  print_message("5%% slow, noise ~5%% of the work: flagged after %zu instances, share_last %.2f, later_share %.2f, "
                "offset %.1f us (median %.1f us)\n",
                s->first_flag_instance, s->share_last, s->later_share, s->offset_us, s->median_dur_us);
  /* per-rank figures: the slowed rank's offset is the largest */
  double best = -1e300;
  int bestr = -1;
  for (size_t i = 0; i < r.nranks; i++)
    if (r.ranks[i].offset_us > best) {
      best = r.ranks[i].offset_us;
      bestr = r.ranks[i].rank;
    }
  assert_int_equal(bestr, 6);
  cs_det_result_free(&r);
  free(v);
  /* the same noise, no slow rank, 100,000 instances: nothing flagged */
  v = gen(100000, -1, 0, 2, &n);
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 0);
  cs_det_result_free(&r);
  free(v);
  /* a steady 1% delay is below COLLSCOPE_STRAGGLER_FRAC (2%): not flagged */
  v = gen(20000, 1, 0.01, 2, &n);
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 0);
  cs_det_result_free(&r);
  free(v);
  noise_rel = 0;
}

/* a rank that becomes slow mid-job, after a full window of clean instances: the window's
 * median offset moves only once the delayed instances are about half of the window; the
 * recent rule (last 16 instances) sees it first: 20% within the 20 instances of
 * the onset, 5% within its 100 */
static void test_onset_mid_job(void **st) {
  (void)st;
  size_t n;
  slow_from = 300;
  struct cs_det_op *v = gen(400, 3, 0.2, 5, &n);
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].rank, 3);
  assert_true(r.stragglers[0].first_flag_instance > 300);
  assert_true(r.stragglers[0].first_flag_instance <= 320); /* the 20 (recent rule) */
  print_message("20%% slow from instance 301: flagged after %zu instances\n", r.stragglers[0].first_flag_instance);
  cs_det_result_free(&r);
  free(v);
  v = gen(500, 3, 0.05, 5, &n);
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].rank, 3);
  assert_true(r.stragglers[0].first_flag_instance > 300);
  assert_true(r.stragglers[0].first_flag_instance <= 400);
  print_message("5%% slow from instance 301: flagged after %zu instances\n", r.stragglers[0].first_flag_instance);
  cs_det_result_free(&r);
  free(v);
  slow_from = 0;
}

/* a 2-rank communicator: the median of two durations is their mean, so the later rank has
 * a positive offset */
static void test_two_ranks(void **st) {
  (void)st;
  size_t n;
  struct cs_det_op *v = gen(200, 1, 0.2, 5, &n), *w = calloc(n, sizeof *w);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (v[i].comm_rank < 2) {
      w[k] = v[i];
      w[k].comm_size = 2;
      k++;
    }
  struct cs_det_result r;
  assert_int_equal(cs_detect(w, k, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].rank, 1);
  printf("2 ranks, 20%% slow: flagged at instance %zu\n", r.stragglers[0].first_flag_instance);
  /* 27: after its partner in 22 of 22 (a pair's sign test: a binomial tail within offset_z), then
   * persistence */
  assert_true(r.stragglers[0].first_flag_instance <= 27);
  cs_det_result_free(&r);
  free(w);
  free(v);
}

static void test_slow_link(void **st) {
  (void)st;
  size_t n;
  link_extra_us = 30000;
  struct cs_det_op *v = gen(100, -1, 0, 5, &n);
  link_extra_us = 0;
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].kind, CS_DET_LINK);
  assert_int_equal(r.stragglers[0].rank, -1);
  assert_null(r.stragglers[0].host);
  cs_det_result_free(&r);
  free(v);
}

/* A slow link between two hosts: every collective takes ~30 ms, and an endpoint of the slow
 * pair (rank 3 on h2) comes to each collective 4% of it late, its stream busy longer (the
 * transfer into the slow link): the comm's link entry, never a compute straggler on the
 * endpoint. */
static void test_slow_link_endpoint(void **st) {
  (void)st;
  size_t n;
  link_extra_us = 30000;
  struct cs_det_op *v = gen(100, 3, 0.04, 5, &n);
  link_extra_us = 0;
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  for (size_t i = 0; i < r.nstragglers; i++)
    printf("finding %zu: rank %d kind %s offset %.0f us of %.0f us\n", i, r.stragglers[i].rank,
           cs_det_kind_name(r.stragglers[i].kind), r.stragglers[i].offset_us, r.stragglers[i].median_dur_us);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].kind, CS_DET_LINK);
  assert_int_equal(r.stragglers[0].rank, -1);
  cs_det_result_free(&r);
  free(v);
}

static void test_no_false_positives(void **st) {
  (void)st;
  size_t n;
  /* 100,000 clean instances, noise up to a tenth of the smallest op */
  struct cs_det_op *v = gen(100000, -1, 0, 8, &n);
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.instances, 100000);
  assert_int_equal(r.nstragglers, 0);
  cs_det_result_free(&r);
  free(v);
}

static void test_hang_missing(void **st) {
  (void)st;
  size_t n;
  struct cs_det_op *v = gen(30, -1, 0, 5, &n);
  /* seq 29: rank 5 never entered, the others are stuck in it */
  for (size_t i = 0; i < n; i++)
    if (v[i].seq == 29) v[i].state = v[i].rank == 5 ? CS_DET_FAILED : CS_DET_PENDING;
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nhangs, 1);
  assert_int_equal(r.hangs[0].reached, 28);
  assert_int_equal(r.hangs[0].seq, 29);
  assert_int_equal(r.hangs[0].nmissing, 1);
  assert_int_equal(r.hangs[0].missing[0], 5);
  assert_string_equal(r.hangs[0].missing_hosts[0], "h3");
  assert_int_equal(r.hangs[0].nstuck, 7);
  cs_det_result_free(&r);
  /* rank 3 has no record of seq 29 at all (killed before it) */
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!(v[i].seq == 29 && v[i].rank == 3)) v[k++] = v[i];
  assert_int_equal(cs_detect(v, k, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.hangs[0].nmissing, 2);
  assert_int_equal(r.hangs[0].missing[0], 3);
  cs_det_result_free(&r);
  free(v);
}

/* Sampled-out records (CS_DET_ENTERED): entered, completed only once a later instance of the
 * rank completed. Seqs 20-31 are sampled out on every rank except the timed 24; the stream
 * stops at 25, so every rank's timed 32 stays pending (the shim's hang record): the hang is at
 * 25, the first instance no later completion covers, not at 32. */
static void test_hang_sampled_out(void **st) {
  (void)st;
  size_t n;
  struct cs_det_op *v = gen(33, -1, 0, 5, &n);
  for (size_t i = 0; i < n; i++) {
    struct cs_det_op *o = &v[i];
    if (o->seq >= 20 && o->seq != 24 && o->seq < 32) o->state = CS_DET_ENTERED, o->start_ns = o->end_ns = 0;
    if (o->seq == 32) o->state = CS_DET_PENDING;
  }
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.instances, 21); /* the timed ones: 0-19 and 24 */
  assert_int_equal(r.nhangs, 1);
  assert_int_equal(r.hangs[0].reached, 24); /* 24 completed everywhere, so 20-23 did too */
  assert_int_equal(r.hangs[0].seq, 25);
  assert_int_equal(r.hangs[0].nmissing, 0);
  assert_int_equal(r.hangs[0].nstuck, W);
  cs_det_result_free(&r);
  free(v);
}

/* 1 in 2 instances sampled out (the CUDA-event path's sample): every timed op of a rank
 * follows an untimed one, so no compute gap is measured (a span over the untimed op would
 * hold its wait for the straggler on every rank); the straggler is still found */
static void test_gap_over_sampled_out(void **st) {
  (void)st;
  size_t n;
  struct cs_det_op *v = gen(400, 5, 0.2, 5, &n);
  for (size_t i = 0; i < n; i++) {
    struct cs_det_op *o = &v[i];
    o->enqueue_ns = o->start_ns - 1000;
    if (o->seq % 2) o->state = CS_DET_ENTERED, o->start_ns = o->end_ns = 0;
  }
  struct cs_det_result r;
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  assert_int_equal(r.stragglers[0].rank, 5);
  assert_true(r.stragglers[0].gap_us == -1 && r.stragglers[0].peer_gap_us == -1);
  assert_int_equal(r.stragglers[0].kind, CS_DET_COMPUTE);
  cs_det_result_free(&r);
  free(v); /* all timed: the gaps are there */
  v = gen(400, 5, 0.2, 5, &n);
  assert_int_equal(cs_detect(v, n, NULL, CS_DET_HANG_PENDING, &r), 0);
  assert_int_equal(r.nstragglers, 1);
  assert_true(r.stragglers[0].gap_us >= 0 && r.stragglers[0].peer_gap_us >= 0);
  cs_det_result_free(&r);
  free(v);
}

static void test_params_env(void **st) {
  (void)st;
  struct cs_det_params p;
  cs_det_params_default(&p);
  assert_int_equal(p.persist, 6);
  assert_true(p.offset_z == 5.0);
  setenv("COLLSCOPE_STRAGGLER_SHARE", "0.8", 1);
  setenv("COLLSCOPE_STRAGGLER_WINDOW", "bad", 1);
  setenv("COLLSCOPE_STRAGGLER_OFFSET_Z", "7.5", 1);
  assert_int_equal(cs_det_params_env(&p), 1);
  assert_true(p.share == 0.8);
  assert_true(p.offset_z == 7.5);
  unsetenv("COLLSCOPE_STRAGGLER_OFFSET_Z");
  assert_int_equal(p.window, 100);
  unsetenv("COLLSCOPE_STRAGGLER_SHARE");
  unsetenv("COLLSCOPE_STRAGGLER_WINDOW");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slow_compute),
      cmocka_unit_test(test_offset_rule),
      cmocka_unit_test(test_two_ranks),
      cmocka_unit_test(test_onset_mid_job),
      cmocka_unit_test(test_slow_link),
      cmocka_unit_test(test_slow_link_endpoint),
      cmocka_unit_test(test_no_false_positives),
      cmocka_unit_test(test_hang_missing),
      cmocka_unit_test(test_hang_sampled_out),
      cmocka_unit_test(test_gap_over_sampled_out),
      cmocka_unit_test(test_params_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
