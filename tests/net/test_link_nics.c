/* tests/net/test_link_nics.c: the slow-NIC finder (analysis/link_nics.c) over plain host pairs:
 * a host whose in and out pairs are all slower is named with its exact ratio; a single slow
 * pair names no NIC (its ends' other pairs are healthy); the pairs' own spread bounds what is
 * named; too few pairs judge nothing. Pairs are built as cs_links_aggregate leaves them: send
 * side, bytes and busy time (mean Gbit/s = bytes x 8 / busy ns). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "collscope/links.h"

#define BYTES 100000000ull /* 100 MB a pair */
static const char *const HOSTS[] = {"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"};

/* a pair at gbps mean throughput */
static struct cs_link_pair pair(int a, int b, double gbps) {
  return (struct cs_link_pair){.src_host = HOSTS[a],
                               .dst_host = HOSTS[b],
                               .from_send = true,
                               .nobs = 1,
                               .bytes = BYTES,
                               .msgs = 100,
                               .busy_us = (double)BYTES * 8.0 / gbps / 1e3};
}

/* the ring over n hosts: pair i is i -> i+1, at 100 Gbit/s x (1 + spread x (+1, -1, +1, ...)) */
static size_t ring(struct cs_link_pair *v, int n, double spread) {
  for (int i = 0; i < n; i++) v[i] = pair(i, (i + 1) % n, 100.0 * (1.0 + spread * (i % 2 ? -1 : 1)));
  return (size_t)n;
}

static struct cs_link_nic *judge(const struct cs_link_pair *v, size_t n, size_t *nn) {
  struct cs_link_params p;
  cs_link_params_default(&p);
  struct cs_link_nic *out = NULL;
  assert_int_equal(cs_links_slow_nics(v, n, &p, &out, nn), 0);
  return out;
}

/* host 5's NIC 20 % slow: its in pair (4 -> 5) and out pair (5 -> 6) at 1/1.2 */
static void test_slow_nic_named(void **state) {
  (void)state;
  struct cs_link_pair v[8];
  size_t n = ring(v, 8, 0.01), nn = 0;
  v[4].busy_us *= 1.2, v[5].busy_us *= 1.2;
  struct cs_link_nic *c = judge(v, n, &nn);
  assert_int_equal(nn, 1);
  assert_string_equal(c[0].host, "h5");
  assert_int_equal(c[0].pairs, 2);
  assert_int_equal(c[0].others, 6);
  /* its pairs at 101 and 99 / 1.2 (median 100 / 1.2 in logs: sqrt(101 x 99) / 1.2), the others'
   * median between 99 and 101 */
  assert_true(fabs(c[0].gbps - sqrt(101.0 * 99.0) / 1.2) < 1e-9);
  assert_true(fabs(c[0].others_gbps - sqrt(101.0 * 99.0)) < 1e-9);
  free(c);
}

/* one slow pair (2 -> 3 at half speed): a slow link, not a NIC: each end's other pair is healthy */
static void test_slow_link_no_nic(void **state) {
  (void)state;
  struct cs_link_pair v[8];
  size_t n = ring(v, 8, 0.0), nn = 0;
  v[2].busy_us *= 2.0;
  struct cs_link_nic *c = judge(v, n, &nn);
  assert_int_equal(nn, 0);
  free(c);
}

/* the pairs' own spread: +-10 % alternating (a robust sigma of ~0.1 in logs) hides a 20 % NIC
 * (a deficit of ln 1.2 = 0.18 < 4 sigmas) */
static void test_spread_bounds(void **state) {
  (void)state;
  struct cs_link_pair v[8];
  size_t n = ring(v, 8, 0.10), nn = 0;
  v[4].busy_us *= 1.2, v[5].busy_us *= 1.2;
  struct cs_link_nic *c = judge(v, n, &nn);
  assert_int_equal(nn, 0);
  free(c);
  /* the same NIC at half speed stands out of that spread */
  n = ring(v, 8, 0.10);
  v[4].busy_us *= 2.0, v[5].busy_us *= 2.0;
  c = judge(v, n, &nn);
  assert_int_equal(nn, 1);
  assert_string_equal(c[0].host, "h5");
  free(c);
}

/* clean: none; two hosts (every pair has both): none, the NIC at fault cannot be told */
static void test_clean_and_too_few(void **state) {
  (void)state;
  struct cs_link_pair v[8];
  size_t n = ring(v, 8, 0.02), nn = 5;
  struct cs_link_nic *c = judge(v, n, &nn);
  assert_int_equal(nn, 0);
  free(c);
  v[0] = pair(0, 1, 80.0), v[1] = pair(1, 0, 80.0);
  c = judge(v, 2, &nn);
  assert_int_equal(nn, 0);
  free(c);
  /* unknown hosts and receive-side pairs are not judged */
  n = ring(v, 8, 0.0);
  v[4].busy_us *= 1.5, v[5].busy_us *= 1.5;
  v[4].from_send = false;
  c = judge(v, n, &nn);
  assert_int_equal(nn, 0);
  free(c);
}

/* at scale, through the aggregation: 12,500 hosts (100,000 GPUs at 8 a host) in a ring, each
 * pair seen in 8 observations (4 intervals x both ends), host 6,001's NIC 20 % slow: named alone,
 * every pair judged once (the aggregation sorts: no pass per pair over the others) */
static void test_scale(void **state) {
  (void)state;
  enum { H = 12500,
         OBS = 8 };
  char(*names)[16] = malloc(H * sizeof *names);
  struct cs_link_obs *v = malloc((size_t)H * OBS * sizeof *v);
  assert_non_null(names);
  assert_non_null(v);
  for (int h = 0; h < H; h++) snprintf(names[h], sizeof names[h], "n%05d", h);
  size_t n = 0;
  for (int h = 0; h < H; h++)
    for (int k = 0; k < OBS; k++) {
      int b = (h + 1) % H;
      double slow = h == 6000 || h == 6001 ? 1.2 : 1.0, gbps = (100.0 + (double)((h * 7 + k) % 5) * 0.2) / slow;
      v[n++] = (struct cs_link_obs){.src_host = names[h],
                                    .dst_host = names[b],
                                    .src_rank = 8 * h,
                                    .dst_rank = 8 * b,
                                    .send = k % 2 == 0,
                                    .bytes = 1000000,
                                    .msgs = 10,
                                    .busy_us = 8e6 / gbps / 1e3,
                                    .gbps_p50 = gbps,
                                    .gbps_p10 = gbps};
    }
  struct cs_link_params p;
  cs_link_params_default(&p);
  struct cs_link_pair *pairs = NULL;
  size_t np = 0, nn = 0;
  assert_int_equal(cs_links_aggregate(v, n, &p, &pairs, &np), 0);
  assert_int_equal(np, H);
  for (size_t k = 0; k < np; k++) assert_true(pairs[k].from_send && pairs[k].nobs == OBS / 2 && !pairs[k].slow);
  struct cs_link_nic *c = NULL;
  assert_int_equal(cs_links_slow_nics(pairs, np, &p, &c, &nn), 0);
  assert_int_equal(nn, 1);
  assert_string_equal(c[0].host, "n06001");
  assert_int_equal(c[0].others, H - 2);
  free(c);
  free(pairs);
  free(v);
  free(names);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slow_nic_named),
      cmocka_unit_test(test_slow_link_no_nic),
      cmocka_unit_test(test_spread_bounds),
      cmocka_unit_test(test_clean_and_too_few),
      cmocka_unit_test(test_scale),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
