/* tests/topology/test_hostlist.c: Slurm hostlist expansion and compression (cmocka). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/hostlist.h"

/* Expand expr and compare with the space-separated expected list. */
static void expect_hosts(const char *expr, const char *expected) {
  char **h = NULL;
  size_t n = 99;
  char err[256];
  int rc = cs_hostlist_expand(expr, &h, &n, err, sizeof err);
  if (rc != 0) fail_msg("expand(\"%s\") failed: %s", expr, err);
  char *exp = strdup(expected), *save = NULL;
  size_t k = 0;
  for (char *t = strtok_r(exp, " ", &save); t; t = strtok_r(NULL, " ", &save), k++) {
    if (k >= n) fail_msg("expand(\"%s\"): only %zu hosts, expected more (%s)", expr, n, t);
    if (strcmp(h[k], t) != 0) fail_msg("expand(\"%s\")[%zu] = \"%s\", expected \"%s\"", expr, k, h[k], t);
  }
  if (k != n) fail_msg("expand(\"%s\"): %zu hosts, expected %zu", expr, n, k);
  free(exp);
  cs_hostlist_free(h, n);
}

/* Expect an error whose message contains `reason` and starts with "position POS:". */
static void expect_error(const char *expr, size_t pos, const char *reason) {
  char **h = (char **)1;
  size_t n = 7;
  char err[256] = "untouched";
  int rc = cs_hostlist_expand(expr, &h, &n, err, sizeof err);
  if (rc != -1) fail_msg("expand(\"%s\") succeeded, expected error '%s'", expr, reason);
  assert_null(h);
  assert_int_equal(n, 0);
  char want[64];
  snprintf(want, sizeof want, "position %zu:", pos);
  if (strncmp(err, want, strlen(want)) != 0)
    fail_msg("expand(\"%s\"): error \"%s\", expected position %zu", expr, err, pos);
  if (!strstr(err, reason))
    fail_msg("expand(\"%s\"): error \"%s\", expected reason containing \"%s\"", expr, err, reason);
}

static void test_plain(void **state) {
  (void)state;
  expect_hosts("tux", "tux");
  expect_hosts("a,b,c", "a b c");
  expect_hosts("a.example.com,b-1.x", "a.example.com b-1.x");
  expect_hosts("n1,n1", "n1 n1"); /* duplicates kept, order kept */
  expect_hosts("z,a", "z a");
}

static void test_ranges(void **state) {
  (void)state;
  expect_hosts("tux[0-3,12,18-20]", "tux0 tux1 tux2 tux3 tux12 tux18 tux19 tux20");
  expect_hosts("n[5]", "n5");
  expect_hosts("n[3-3]", "n3");
  expect_hosts("simhost[1-2]", "simhost1 simhost2");
  expect_hosts("[1-3]", "1 2 3");
  expect_hosts("n[3,1,2]", "n3 n1 n2");
}

static void test_padding(void **state) {
  (void)state;
  expect_hosts("node[01-04]", "node01 node02 node03 node04");
  expect_hosts("n[8-10]", "n8 n9 n10");
  expect_hosts("n[08-10]", "n08 n09 n10");
  expect_hosts("n[098-101]", "n098 n099 n100 n101");
  expect_hosts("n[1-010]", "n1 n2 n3 n4 n5 n6 n7 n8 n9 n10");
  expect_hosts("n[0-1]", "n0 n1");
  expect_hosts("n[00-01]", "n00 n01");
  expect_hosts("n[9-11,007]", "n9 n10 n11 n007");
}

static void test_product_and_suffix(void **state) {
  (void)state;
  expect_hosts("r[0-1]n[0-3]", "r0n0 r0n1 r0n2 r0n3 r1n0 r1n1 r1n2 r1n3");
  expect_hosts("n[1-3]-ib", "n1-ib n2-ib n3-ib");
  expect_hosts("r[1,3]x[7-8]y", "r1x7y r1x8y r3x7y r3x8y");
  expect_hosts("[0-1][0-1]", "00 01 10 11");
  expect_hosts("a[1-2]b[01-02]c[9-10]",
               "a1b01c9 a1b01c10 a1b02c9 a1b02c10 a2b01c9 a2b01c10 a2b02c9 a2b02c10");
}

static void test_commas_and_whitespace(void **state) {
  (void)state;
  expect_hosts("a[1-2],b[3,5],c", "a1 a2 b3 b5 c");
  expect_hosts("  a1  b2\tc3\n", "a1 b2 c3");
  expect_hosts("a, b ,c", "a b c");
  expect_hosts("a,,b,", "a b"); /* empty tokens skipped, like Slurm */
  expect_hosts("n[ 1 - 3 , 5 ]", "n1 n2 n3 n5");
  expect_hosts(",n[1-2],", "n1 n2");
}

static void test_errors(void **state) {
  (void)state;
  expect_error("", 0, "empty hostlist");
  expect_error(" , ,", 4, "empty hostlist");
  expect_error("n[1-3", 1, "unbalanced '['");
  expect_error("n[", 1, "unbalanced '['");
  expect_error("ab[1,2", 2, "unbalanced '['");
  expect_error("n1-3]", 4, "unbalanced ']'");
  expect_error("a,b]x", 3, "unbalanced ']'");
  expect_error("n[3-1]", 2, "reversed range");
  expect_error("n[1,10-2]", 4, "reversed range");
  expect_error("n[]", 1, "empty brackets");
  expect_error("n[ ]", 1, "empty brackets");
  expect_error("n[1,]", 4, "empty range item");
  expect_error("n[,1]", 2, "empty range item");
  expect_error("n[1-]", 4, "empty range bound");
  expect_error("n[1[2]]", 3, "nested");
  expect_error("n[[1]]", 2, "nested");
  expect_error("n[a]", 2, "invalid character 'a'");
  expect_error("n[1-3x]", 5, "invalid character 'x'");
  expect_error("n[1 2]", 4, "missing ','");
  expect_error("n[-1]", 2, "negative");
  expect_error("n\x01x", 1, "invalid byte 0x01");
  expect_error("n\xc3\xa9", 1, "invalid byte 0xc3");
  expect_error("n[1234567890123456789]", 2, "number too long");
}

static void test_limits(void **state) {
  (void)state;
  /* exactly the cap is fine */
  char **h = NULL;
  size_t n = 0;
  char err[256];
  assert_int_equal(cs_hostlist_expand("n[1-1000000]", &h, &n, err, sizeof err), 0);
  assert_int_equal(n, 1000000);
  assert_string_equal(h[0], "n1");
  assert_string_equal(h[999999], "n1000000");
  cs_hostlist_free(h, n);
  /* beyond: errors, without allocating the hosts first */
  expect_error("n[1-1000001]", 2, "more than 1000000 hosts");
  expect_error("n[0-999999999999999999]", 2, "more than 1000000 hosts");
  expect_error("n[1-600000,1-600000]", 11, "more than 1000000 hosts");
  expect_error("a[1-1000]b[1-1001]", 0, "more than 1000000 hosts");
  expect_error("a[0-999999999]b[0-999999999]c[0-999999999]", 2, "more than 1000000 hosts");
  expect_error("a[1-600000],b[1-600000]", 12, "more than 1000000 hosts");
  /* a smaller cap */
  assert_int_equal(cs_hostlist_expand_max("n[1-4],m[1-4]", 8, &h, &n, err, sizeof err), 0);
  assert_int_equal(n, 8);
  cs_hostlist_free(h, n);
  assert_int_equal(cs_hostlist_expand_max("n[1-4],m[1-5]", 8, &h, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "position 7: hostlist expands to more than 8 hosts"));
  assert_int_equal(cs_hostlist_expand_max("n[1-9]", 8, &h, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "position 2: range expands to more than 8 hosts"));
  assert_int_equal(cs_hostlist_expand_max("n[1-3]", 0, &h, &n, err, sizeof err), 0);
  cs_hostlist_free(h, n);
  /* host name length */
  char longname[400];
  memset(longname, 'x', 300);
  longname[300] = '\0';
  expect_error(longname, 0, "longer than 255");
  /* many bracket groups: rejected by length before anything is expanded */
  char groups[3 * 300 + 2];
  groups[0] = 'a';
  for (int k = 0; k < 300; k++) memcpy(groups + 1 + 3 * k, "[1]", 3);
  groups[1 + 3 * 300] = '\0';
  expect_error(groups, 0, "longer than 255");
  memset(longname, 'x', 255);
  longname[255] = '\0';
  expect_hosts(longname, longname);
}

static void test_error_buffer(void **state) {
  (void)state;
  char **h = NULL;
  size_t n = 0;
  char tiny[8];
  assert_int_equal(cs_hostlist_expand("n[", &h, &n, tiny, sizeof tiny), -1);
  assert_int_equal(strlen(tiny), sizeof tiny - 1); /* truncated, terminated */
  assert_int_equal(cs_hostlist_expand("n[", &h, &n, NULL, 0), -1);
  assert_int_equal(cs_hostlist_expand(NULL, &h, &n, NULL, 0), -1);
  assert_int_equal(errno, EINVAL);
  cs_hostlist_free(NULL, 0);
}

static int cmp_strp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* compress(hosts) must equal want, and expanding it must give the sorted unique set. */
static void expect_compress(const char *expr_in, const char *want) {
  char **h = NULL;
  size_t n = 0;
  char err[256];
  if (cs_hostlist_expand(expr_in, &h, &n, err, sizeof err)) fail_msg("%s: %s", expr_in, err);
  char *c = cs_hostlist_compress((const char *const *)h, n);
  assert_non_null(c);
  if (strcmp(c, want) != 0) fail_msg("compress(%s) = \"%s\", expected \"%s\"", expr_in, c, want);
  char **h2 = NULL;
  size_t n2 = 0;
  if (cs_hostlist_expand(c, &h2, &n2, err, sizeof err)) fail_msg("re-expand %s: %s", c, err);
  /* same set: sort both, drop duplicates of the input, compare; output has none */
  qsort(h, n, sizeof *h, cmp_strp);
  qsort(h2, n2, sizeof *h2, cmp_strp);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || strcmp(h[i], h[u - 1]) != 0) {
      char *t = h[u];
      h[u] = h[i];
      h[i] = t; /* keep every pointer for the free */
      u++;
    }
  if (u != n2) fail_msg("compress(%s) = %s: %zu unique hosts in, %zu out", expr_in, c, u, n2);
  for (size_t i = 0; i < u; i++)
    if (strcmp(h[i], h2[i]) != 0) fail_msg("compress(%s) = %s: host %s vs %s", expr_in, c, h[i], h2[i]);
  free(c);
  cs_hostlist_free(h, n);
  cs_hostlist_free(h2, n2);
}

static void test_compress(void **state) {
  (void)state;
  expect_compress("n1,n2,n3,n5,n10", "n[1-3,5,10]");
  expect_compress("n10,n3,n1,n2,n5", "n[1-3,5,10]");
  expect_compress("node01,node02,node03", "node[01-03]");
  expect_compress("n8,n9,n10", "n[8-10]");
  expect_compress("n08,n09,n10", "n[08-10]");
  expect_compress("n1", "n1");
  expect_compress("n1,n1,n1", "n1");
  expect_compress("a,b,a", "a,b");
  expect_compress("n1-ib,n2-ib,n4-ib", "n[1-2,4]-ib");
  expect_compress("r0n0,r0n1,r1n0,r1n1", "r0n[0-1],r1n[0-1]");
  expect_compress("simhost2,simhost1", "simhost[1-2]");
  expect_compress("x,n2,n1,m7", "m7,n[1-2],x");
  expect_compress("n8,n08,n9,n09", "n[8-9,08-09]");
  expect_compress("tux[0-3,12,18-20]", "tux[0-3,12,18-20]");
  expect_compress("n[1-100000]", "n[1-100000]");
  char *c = cs_hostlist_compress(NULL, 0);
  assert_non_null(c);
  assert_string_equal(c, "");
  free(c);
  const char *bad1[] = {"ok", "has,comma"};
  errno = 0;
  assert_null(cs_hostlist_compress(bad1, 2));
  assert_int_equal(errno, EINVAL);
  const char *bad2[] = {""};
  assert_null(cs_hostlist_compress(bad2, 1));
  const char *bad3[] = {"a[1]"};
  assert_null(cs_hostlist_compress(bad3, 1));
}

/* Pseudo-random junk must never crash, leak or return inconsistent results. */
static void test_junk(void **state) {
  (void)state;
  const char alphabet[] = "ab01-9[],[ ]-,\t0x";
  unsigned seed = 12345;
  char buf[40];
  for (int it = 0; it < 20000; it++) {
    size_t len = (size_t)(seed % (sizeof buf - 1));
    for (size_t k = 0; k < len; k++) {
      seed = seed * 1103515245u + 12345u;
      buf[k] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
    }
    buf[len] = '\0';
    seed = seed * 1103515245u + 12345u;
    char **h = NULL;
    size_t n = 0;
    char err[128];
    int rc = cs_hostlist_expand(buf, &h, &n, err, sizeof err);
    if (rc == 0) {
      assert_true(n >= 1 && n <= CS_HOSTLIST_MAX);
      cs_hostlist_free(h, n);
    } else {
      assert_null(h);
      assert_true(strncmp(err, "position ", 9) == 0);
    }
  }
}

/* cs_hostlist_each: the same names in the same order as expand, delivered one by one
 * (NUL terminated, len given), or only counted; a callback can stop the walk. */
struct collect {
  char buf[512];
  size_t len, calls, stop_at;
};

static int collect_host(const char *name, size_t len, void *arg) {
  struct collect *c = arg;
  if (strlen(name) != len) return -1;
  if (++c->calls == c->stop_at) return -1;
  c->len += (size_t)snprintf(c->buf + c->len, sizeof c->buf - c->len, "%s%s", c->len ? " " : "", name);
  return 0;
}

static void test_each(void **state) {
  (void)state;
  struct collect c = {0};
  size_t n = 99;
  char err[256];
  assert_int_equal(cs_hostlist_each("r[0-1]n[08-10]x,solo", 0, collect_host, &c, &n, err, sizeof err), 0);
  assert_int_equal(n, 7);
  assert_string_equal(c.buf, "r0n08x r0n09x r0n10x r1n08x r1n09x r1n10x solo");
  /* counting expands nothing: a million names cost the expression's length */
  assert_int_equal(cs_hostlist_each("n[0-999999]", 0, NULL, NULL, &n, err, sizeof err), 0);
  assert_int_equal(n, 1000000);
  assert_int_equal(cs_hostlist_each("a[1-600000],b[1-600000]", 0, NULL, NULL, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "position 12: hostlist expands to more than 1000000 hosts"));
  assert_int_equal(n, 0);
  assert_int_equal(cs_hostlist_each("n[1-3", 0, NULL, NULL, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "unbalanced '['"));
  /* the callback stops the walk: an error, no more calls */
  struct collect s = {.stop_at = 3};
  assert_int_equal(cs_hostlist_each("n[1-9]", 0, collect_host, &s, &n, err, sizeof err), -1);
  assert_int_equal(s.calls, 3);
  assert_string_equal(s.buf, "n1 n2");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain),
      cmocka_unit_test(test_ranges),
      cmocka_unit_test(test_padding),
      cmocka_unit_test(test_product_and_suffix),
      cmocka_unit_test(test_commas_and_whitespace),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_error_buffer),
      cmocka_unit_test(test_compress),
      cmocka_unit_test(test_junk),
      cmocka_unit_test(test_each),
  };
  return cmocka_run_group_tests_name("hostlist", tests, NULL, NULL);
}
