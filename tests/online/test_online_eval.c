/* tests/online/test_online_eval.c: the online exchange's evaluator (stats/online_eval.c)
 * on hand-built gathered summaries: a straggler is flagged once and named with its host,
 * jittered clean data flags nobody, SDC fingerprint and sum mismatches name the right
 * suspect (world rank and host), incomplete instances wait for the next exchange and age
 * out, malformed summaries are counted and ignored, and two evaluators fed the same bytes
 * agree (what COLLSCOPE_SDC_ACTION=abort relies on). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collscope/online.h"
#include "collscope/schema.h"

#define N 4
static struct cs_online_summary g[N];

static void reset(unsigned exchange) {
  memset(g, 0, sizeof g);
  for (int r = 0; r < N; r++) {
    g[r].h.magic = CS_ONLINE_MAGIC;
    g[r].h.version = CS_ONLINE_VERSION;
    g[r].h.rank = r;
    g[r].h.exchange = exchange;
    snprintf(g[r].h.host, CS_ONLINE_HOST, "node%d", r / 2);
  }
}

static uint64_t lcg(uint64_t *s) { return *s = *s * 6364136223846793005ULL + 1442695040888963407ULL; }
static double jitter(uint64_t *s) { return (double)(lcg(s) >> 11) / 9007199254740992.0; } /* [0, 1) */

/* one exchange of `k` instances of comm 7 starting at seq0; rank `slow` (or -1) arrives
 * late by `late_us` (its duration is that much shorter) */
static void fill_ops(int64_t seq0, int k, int slow, double late_us, uint64_t *seed) {
  for (int r = 0; r < N; r++) g[r].h.nops = (uint8_t)k;
  for (int i = 0; i < k; i++)
    for (int r = 0; r < N; r++) {
      struct cs_online_op *o = &g[r].ops[i];
      o->comm = 7;
      o->seq = (uint64_t)(seq0 + i);
      o->dur_us = (float)(1000 + 20 * jitter(seed) - (r == slow ? late_us : 0));
      o->gap_us = (float)(r == slow ? 50 + late_us : 50 + 5 * jitter(seed));
      o->bytes = 1 << 20;
      o->comm_size = N;
      o->comm_rank = (uint16_t)r;
    }
}

static void test_straggler_flagged_once(void **st) {
  (void)st;
  struct cs_online_eval *e = cs_online_eval_new(N, NULL, true);
  assert_non_null(e);
  uint64_t seed = 1;
  size_t flagged = 0;
  for (int x = 0; x < 8; x++) {
    reset((unsigned)x + 1);
    fill_ops(x * 16, 16, 2, 400, &seed);
    struct cs_online_findings f;
    assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
    assert_int_equal(f.bad_summaries, 0);
    for (size_t i = 0; i < f.nstragglers; i++) {
      assert_int_equal(f.stragglers[i].rank, 2);
      assert_string_equal(f.stragglers[i].host, "node1");
      assert_int_equal(f.stragglers[i].kind, 0 /* compute: its gap is longer by the lateness */);
      assert_true(f.stragglers[i].lateness_us > 300);
      flagged++;
    }
  }
  assert_int_equal(flagged, 1); /* once, not at every exchange */
  cs_online_eval_free(e);
}

static void test_clean_flags_nobody(void **st) {
  (void)st;
  struct cs_online_eval *e = cs_online_eval_new(N, NULL, true);
  assert_non_null(e);
  uint64_t seed = 99;
  for (int x = 0; x < 40; x++) {
    reset((unsigned)x + 1);
    fill_ops(x * 16, 16, -1, 0, &seed);
    struct cs_online_findings f;
    assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
    assert_int_equal(f.nstragglers, 0);
  }
  cs_online_eval_free(e);
}

static void put_sdc(int r, int slot, uint64_t seq, uint64_t fp, double in_sum, double out_sum) {
  struct cs_online_sdc *s = &g[r].sdc[slot];
  s->comm = 9;
  s->seq = seq;
  s->fp = fp;
  s->in_sum = in_sum;
  s->in_abs = 100;
  s->out_sum = out_sum;
  s->count = 1024;
  s->root = -1;
  s->comm_size = N;
  s->comm_rank = (uint16_t)r;
  s->op = CS_OP_AllReduce;
  s->checked = 3;
  s->dtype = 2;  /* ncclInt32: exact sums */
  s->redop = 0;  /* sum */
  if (g[r].h.nsdc < slot + 1) g[r].h.nsdc = (uint8_t)(slot + 1);
}

static void test_sdc_fingerprint_and_sum(void **st) {
  (void)st;
  struct cs_online_eval *e = cs_online_eval_new(N, NULL, false);
  assert_non_null(e);
  reset(1);
  /* seq 5: rank 3's output differs (delivered-data flip) */
  for (int r = 0; r < N; r++) put_sdc(r, 0, 5, r == 3 ? 0xbad : 0x600d, 10, 40);
  /* seq 6: every rank got the same wrong reduction: 4 x 10 in, 41 out */
  for (int r = 0; r < N; r++) put_sdc(r, 1, 6, 0x1234, 10, 41);
  /* seq 7: clean */
  for (int r = 0; r < N; r++) put_sdc(r, 2, 7, 0x77, 10, 40);
  struct cs_online_findings f;
  assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  assert_int_equal(f.sdc_compared, 3);
  assert_int_equal(f.nsdc, 2);
  assert_int_equal(f.sdc[0].seq, 5);
  assert_int_equal(f.sdc[0].check, CS_SDC_CHECK_FINGERPRINT);
  assert_int_equal(f.sdc[0].suspect_rank, 3);
  assert_string_equal(f.sdc[0].suspect_host, "node1");
  assert_int_equal(f.sdc[0].bytes, 4096);
  assert_int_equal(f.sdc[1].seq, 6);
  assert_int_equal(f.sdc[1].check, CS_SDC_CHECK_SUM);
  assert_int_equal(f.sdc[1].suspect_rank, -1);
  assert_true(f.sdc[1].got == 41 && f.sdc[1].want == 40);
  cs_online_eval_free(e);
}

static void test_sdc_waits_for_members_then_ages_out(void **st) {
  (void)st;
  struct cs_online_eval *e = cs_online_eval_new(N, NULL, false);
  assert_non_null(e);
  struct cs_online_findings f;
  /* exchange 1: ranks 0-2 report seq 1 (rank 1 corrupted) and seq 2; rank 3 reports nothing */
  reset(1);
  for (int r = 0; r < 3; r++) {
    put_sdc(r, 0, 1, r == 1 ? 0xbad : 0x600d, 10, 40);
    put_sdc(r, 1, 2, 0x22, 10, 40);
  }
  assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  assert_int_equal(f.sdc_compared, 0);
  /* exchange 2: rank 3 catches up on seq 1 only */
  reset(2);
  put_sdc(3, 0, 1, 0x600d, 10, 40);
  assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  assert_int_equal(f.sdc_compared, 1);
  assert_int_equal(f.nsdc, 1);
  assert_int_equal(f.sdc[0].suspect_rank, 1);
  /* seq 2: rank 3 reported nothing later, so it is lagging (a busy harvest thread, a
   * backlog), not skipping: seq 2 is kept past the age limit and compared when it comes */
  for (unsigned x = 3; x < 12; x++) {
    reset(x);
    assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
    assert_int_equal(f.nsdc, 0);
    assert_int_equal(f.sdc_compared, 0);
  }
  reset(12);
  put_sdc(3, 0, 2, 0x22, 10, 40);
  assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  assert_int_equal(f.sdc_compared, 1);
  assert_int_equal(f.nsdc, 0);
  /* seq 5: rank 3 skips it (reports seq 6 instead): given up after the age limit, and a
   * late report of it starts over */
  reset(13);
  for (int r = 0; r < 3; r++) put_sdc(r, 0, 5, 0x55, 10, 40);
  for (int r = 0; r < N; r++) put_sdc(r, 1, 6, 0x66, 10, 40);
  assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  assert_int_equal(f.sdc_compared, 1); /* seq 6 */
  for (unsigned x = 14; x < 22; x++) {
    reset(x);
    assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
    assert_int_equal(f.sdc_compared, 0);
  }
  reset(22);
  put_sdc(3, 0, 5, 0x55, 10, 40);
  assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  assert_int_equal(f.sdc_compared, 0); /* seq 5 was given up: rank 3's entry alone */
  /* a member that never reports anything again is waited for at most SDC_MAX_AGE_HARD
   * (1024) exchanges: seq 7 from ranks 0-2 only, then 1100 empty exchanges, then rank 3 */
  reset(23);
  for (int r = 0; r < 3; r++) put_sdc(r, 0, 7, 0x77, 10, 40);
  assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  for (unsigned x = 24; x < 24 + 1100; x++) {
    reset(x);
    assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  }
  reset(24 + 1100);
  put_sdc(3, 0, 7, 0x77, 10, 40);
  assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  assert_int_equal(f.sdc_compared, 0);
  cs_online_eval_free(e);
}

static void test_bad_summaries_ignored(void **st) {
  (void)st;
  struct cs_online_eval *e = cs_online_eval_new(N, NULL, false);
  assert_non_null(e);
  reset(1);
  for (int r = 0; r < N; r++) put_sdc(r, 0, 3, r == 2 ? 0xbad : 0x600d, 10, 40);
  g[1].h.magic = 0;          /* never filled (a rank that sent garbage) */
  g[3].h.rank = 0;           /* out of place */
  g[0].h.nsdc = CS_ONLINE_NSDC + 1;
  g[1].h.sdc_backlog = 500;  /* a rejected summary's backlog does not count */
  g[2].h.sdc_backlog = 5;
  g[2].h.op_backlog = 2;
  struct cs_online_findings f;
  assert_int_equal(cs_online_eval_exchange(e, g, &f), 0);
  assert_int_equal(f.bad_summaries, 3);
  assert_int_equal(f.sdc_compared, 0);
  assert_int_equal(f.max_backlog, 7);
  cs_online_eval_free(e);
}

static void test_same_input_same_verdict(void **st) {
  (void)st;
  struct cs_online_eval *a = cs_online_eval_new(N, NULL, false), *b = cs_online_eval_new(N, NULL, false);
  assert_non_null(a);
  assert_non_null(b);
  uint64_t seed = 5;
  for (unsigned x = 1; x <= 20; x++) {
    reset(x);
    for (int k = 0; k < CS_ONLINE_NSDC; k++) {
      uint64_t seq = x * 100 + (uint64_t)k;
      int bad = (lcg(&seed) >> 33) % 7 == 0 ? (int)((lcg(&seed) >> 33) % N) : -1;
      for (int r = 0; r < N; r++) put_sdc(r, k, seq, r == bad ? seq ^ 1 : seq, 10, 40);
    }
    struct cs_online_findings fa, fb;
    assert_int_equal(cs_online_eval_exchange(a, g, &fa), 0);
    assert_int_equal(cs_online_eval_exchange(b, g, &fb), 0);
    assert_int_equal(fa.nsdc, fb.nsdc);
    for (size_t i = 0; i < fa.nsdc; i++) {
      assert_int_equal(fa.sdc[i].seq, fb.sdc[i].seq);
      assert_int_equal(fa.sdc[i].suspect_rank, fb.sdc[i].suspect_rank);
    }
  }
  cs_online_eval_free(a);
  cs_online_eval_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_straggler_flagged_once),
    cmocka_unit_test(test_clean_flags_nobody),
    cmocka_unit_test(test_sdc_fingerprint_and_sum),
    cmocka_unit_test(test_sdc_waits_for_members_then_ages_out),
    cmocka_unit_test(test_bad_summaries_ignored),
    cmocka_unit_test(test_same_input_same_verdict),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
