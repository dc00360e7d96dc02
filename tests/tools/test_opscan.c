/* tests/tools/test_opscan.c: the fast op-line scanner (tools/dump/opscan.c) against jansson.
 * Writer-layout lines must be accepted with the values jansson reads; and over many random
 * mutations of those lines, every line the scanner still accepts must be one jansson reads
 * as the same op record (the scanner may refuse more, never accept what jansson would not). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "dump/opscan.h"

static const char *const good[] = {
    "{\"type\":\"op\",\"comm\":\"c965d6348c188782\",\"comm_size\":16,\"comm_rank\":5,\"rank\":5,\"seq\":0,"
    "\"op\":\"AllReduce\",\"dtype\":\"float32\",\"count\":2097152,\"bytes\":8388608,\"redop\":\"sum\",\"root\":-1,"
    "\"peer\":-1,\"stream\":\"0x7f3a2c001020\",\"group\":0,\"enqueue_ns\":1764576000000398279,\"start_ns\":"
    "1764576000000417464,\"end_ns\":1764576000000637715,\"dur_us\":220.251,\"timing\":\"gpu_event\",\"captured\":"
    "false,\"site\":\"libtorch_cuda.so!c10d::ProcessGroupNCCL::collective+0x1a4\",\"status\":0,\"sdc\":{\"checked\":3,"
    "\"fp\":\"8a07c6c70f07c086\",\"in_sum\":3,\"in_abs\":4.5,\"out_sum\":68.000000000000014},\"algo\":\"Ring\","
    "\"proto\":\"Simple\",\"nchannels\":16}",
    "{\"type\":\"op\",\"comm\":\"0000000000000001\",\"comm_size\":2,\"comm_rank\":1,\"rank\":-1,\"seq\":-1,\"op\":"
    "\"Send\",\"dtype\":\"int8\",\"count\":0,\"bytes\":0,\"redop\":null,\"root\":-1,\"peer\":0,\"stream\":\"0x0\","
    "\"group\":7,\"enqueue_ns\":12,\"start_ns\":0,\"end_ns\":0,\"dur_us\":0.000,\"timing\":\"error\",\"captured\":true,"
    "\"site\":\"\",\"status\":5}",
    "{\"type\":\"op\",\"comm\":\"ffffffffffffffff\",\"comm_size\":8,\"comm_rank\":0,\"rank\":0,\"seq\":9,\"op\":"
    "\"Broadcast\",\"dtype\":\"bfloat16\",\"count\":1,\"bytes\":2,\"redop\":null,\"root\":0,\"peer\":-1,\"stream\":"
    "\"0x7f\",\"group\":0,\"enqueue_ns\":5,\"start_ns\":6,\"end_ns\":4,\"dur_us\":-0.002,\"timing\":\"profiler\","
    "\"captured\":false,\"site\":\"a.out+0x10\",\"status\":0,\"sdc\":{\"checked\":1,\"fp\":null,\"in_sum\":null,"
    "\"in_abs\":null,\"out_sum\":-1.5e-300},\"nchannels\":2}",
};

static json_t *get(json_t *o, const char *k) { return json_object_get(o, k); }
static long long ival(json_t *o, const char *k) { return json_integer_value(get(o, k)); }
static bool same_str(json_t *o, const char *k, struct cs_slice s) {
  json_t *v = get(o, k);
  return json_is_string(v) && strlen(json_string_value(v)) == s.n && memcmp(json_string_value(v), s.s, s.n) == 0;
}
static uint64_t hexval(json_t *o, const char *k) {
  const char *s = json_string_value(get(o, k));
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
  return strtoull(s, NULL, 16);
}
static bool same_num(double a, json_t *v) {
  if (!v || json_is_null(v)) return isnan(a);
  return json_is_number(v) && json_number_value(v) == a;
}

/* the line as jansson reads it must be an op record with exactly the scanner's values */
static void check_against_jansson(const char *line, size_t len, const struct cs_opscan *s) {
  json_error_t err;
  json_t *o = json_loadb(line, len, 0, &err);
  if (!o) fail_msg("scanner accepted a line jansson refuses (%s): %.*s", err.text, (int)len, line);
  assert_true(json_is_object(o));
  assert_true(json_is_string(get(o, "type")) && !strcmp(json_string_value(get(o, "type")), "op"));
  assert_true(hexval(o, "comm") == s->comm && hexval(o, "stream") == s->stream);
  const char *ik[] = {"comm_size", "comm_rank", "rank", "seq", "count", "root", "peer", "group", "enqueue_ns",
                      "start_ns", "end_ns", "status"};
  const long long iv[] = {s->comm_size, s->comm_rank, s->rank, s->seq, s->count, s->root, s->peer, s->group,
                          s->enqueue_ns, s->start_ns, s->end_ns, s->status};
  for (size_t i = 0; i < sizeof ik / sizeof ik[0]; i++) {
    if (!json_is_integer(get(o, ik[i])) || ival(o, ik[i]) != iv[i]) fail_msg("field %s: %.*s", ik[i], (int)len, line);
  }
  assert_true(json_is_integer(get(o, "bytes")) && (uint64_t)ival(o, "bytes") == s->bytes);
  assert_true(same_num(s->dur_us, get(o, "dur_us")));
  assert_true(same_str(o, "op", s->op_name) && same_str(o, "dtype", s->dtype) && same_str(o, "timing", s->timing_name) &&
              same_str(o, "site", s->site));
  assert_true(s->redop.s ? same_str(o, "redop", s->redop) : json_is_null(get(o, "redop")));
  assert_true(json_is_boolean(get(o, "captured")) && json_is_true(get(o, "captured")) == s->captured);
  json_t *sdc = get(o, "sdc");
  if (sdc) {
    long long ch = ival(sdc, "checked");
    unsigned want = ch > 0 && ch < 4 ? (unsigned)ch : 0;
    if (json_is_null(get(sdc, "fp")))
      want &= ~1u;
    else
      assert_true(hexval(sdc, "fp") == s->sdc_fp);
    assert_int_equal(want, s->sdc_checked);
    assert_true(same_num(s->sdc_in_sum, get(sdc, "in_sum")) && same_num(s->sdc_in_abs, get(sdc, "in_abs")) &&
                same_num(s->sdc_out_sum, get(sdc, "out_sum")));
  } else {
    assert_int_equal(s->sdc_checked, 0);
  }
  json_decref(o);
}

static void writer_lines_accepted(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    struct cs_opscan s;
    assert_true(cs_opscan(good[i], strlen(good[i]), &s));
    check_against_jansson(good[i], strlen(good[i]), &s);
  }
}

static void refused_lines(void **state) {
  (void)state;
  const char *bad[] = {
      "{\"type\":\"op\", \"comm\":\"c965d6348c188782\"}",                 /* whitespace */
      "{\"type\":\"op\",\"comm\":\"c965d6348c1887820\",\"comm_size\":1}", /* 17 hex digits */
  };
  struct cs_opscan s;
  for (size_t i = 0; i < 2; i++) assert_false(cs_opscan(bad[i], strlen(bad[i]), &s));
  /* comm_size 0: jansson reads it; the loader refuses it, so the scanner must not accept */
  char line[2048];
  snprintf(line, sizeof line, "%s", good[1]);
  char *p = strstr(line, "\"comm_size\":2");
  p[12] = '0';
  assert_false(cs_opscan(line, strlen(line), &s));
  /* an integer past a long long: jansson refuses it */
  snprintf(line, sizeof line, "%s", good[1]);
  p = strstr(line, "\"enqueue_ns\":12");
  memmove(p + 32, p + 15, strlen(p + 15) + 1);
  memcpy(p + 13, "9223372036854775808", 19);
  assert_false(cs_opscan(line, strlen(line), &s));
  p[31] = '7';
  assert_true(cs_opscan(line, strlen(line), &s));
  assert_true(s.enqueue_ns == INT64_MAX);
  /* a trailing byte after the object, or the object cut short */
  snprintf(line, sizeof line, "%sx", good[1]);
  assert_false(cs_opscan(line, strlen(line), &s));
  assert_false(cs_opscan(good[1], strlen(good[1]) - 1, &s));
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void mutations_never_disagree(void **state) {
  (void)state;
  static const char alphabet[] = "0123456789-+.eE\"\\,:{}[] xXnulltrue\x01\x80\xc3\xa9";
  size_t accepted = 0;
  for (int iter = 0; iter < 200000; iter++) {
    const char *g = good[next() % 3];
    char line[2048];
    size_t n = strlen(g);
    memcpy(line, g, n);
    int edits = 1 + (int)(next() % 3);
    for (int k = 0; k < edits && n > 2; k++) {
      size_t at = next() % n;
      switch (next() % 3) {
      case 0: line[at] = alphabet[next() % (sizeof alphabet - 1)]; break; /* replace */
      case 1:
        memmove(line + at, line + at + 1, n - at - 1);
        n--;
        break; /* delete */
      default: /* insert */
        if (n + 1 < sizeof line) {
          memmove(line + at + 1, line + at, n - at);
          line[at] = alphabet[next() % (sizeof alphabet - 1)];
          n++;
        }
      }
    }
    struct cs_opscan s;
    if (cs_opscan(line, n, &s)) {
      accepted++;
      check_against_jansson(line, n, &s);
    }
  }
  assert_true(accepted > 1000); /* the property was exercised on accepted lines too */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(writer_lines_accepted),
      cmocka_unit_test(refused_lines),
      cmocka_unit_test(mutations_never_disagree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
