/* tests/online/test_online_eval.c: the online exchange's protocol (analysis/online_eval.c) on
 * the in-process model of 8 ranks (online_model.h): a straggler flags itself once and
 * rank 0 learns it with its host; jittered clean data flags nobody; a fingerprint flip is
 * resolved by a detail round that names the rank and its host; a wrong sum on every rank
 * is a sum finding without a suspect; several ranks with the same wrong bytes are one
 * finding, half of them no strict majority; a rank whose records come one exchange late still
 * completes the instances, and a straggler's figures do not depend on it; contributions that disagree on the exchange are not used; and
 * every rank reaches the same SDC verdict (what COLLSCOPE_SDC_ACTION=abort relies on); data-load
 * sums on the reduced wire that no members could have given are not read; an instance of at most
 * 16 members is read as the report reads it, the sums' data-load line not beside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collscope/online.h"
#include "collscope/record.h"
#include "collscope/schema.h"
#include "online_model.h"
#include "../../analysis/online_internal.h" /* the round-0 layout, to garble a reduced wire */

#define N 8

static struct model_gen gen(void) {
  struct model_gen g = {N, 16, 8, 0x77, -1, 0, -1, 0, false, -1, 0};
  return g;
}

static void same_verdict_everywhere(const struct model *m) {
  char a[512], b[512];
  model_sdc_verdict(m, 0, a, sizeof a);
  for (int r = 1; r < m->n; r++) {
    model_sdc_verdict(m, r, b, sizeof b);
    assert_string_equal(a, b);
  }
  assert_false(m->disagree);
}

static void test_straggler_flagged_once(void **state) {
  (void)state;
  struct model_gen g = gen();
  g.slow = 5;
  g.late_us = 400;
  struct model *m = model_new(N, NULL, model_gen_feed, &g);
  assert_non_null(m);
  /* what each rank's own health samples show: the straggler's travels with its report */
  cs_online_rank_set_cause(m->st[5], CS_HEALTH_F_POWER | CS_HEALTH_F_NVLINK);
  cs_online_rank_set_cause(m->st[2], CS_HEALTH_F_THERMAL);
  size_t flagged = 0;
  for (uint32_t x = 1; x <= 8; x++) {
    assert_int_equal(model_exchange(m, x), 0);
    const struct cs_online_findings *f = &m->f[0];
    assert_int_equal(f->bad_summaries, 0);
    assert_int_equal(f->instances, 16);
    for (size_t i = 0; i < f->nstragglers; i++) {
      assert_int_equal(f->stragglers[i].rank, 5);
      assert_int_equal(f->stragglers[i].comm_rank, 5);
      assert_string_equal(f->stragglers[i].host, "node2");
      assert_int_equal(f->stragglers[i].kind, CS_DET_COMPUTE); /* its gap is longer by the lateness */
      assert_true(f->stragglers[i].lateness_us > 300 && f->stragglers[i].lateness_us < 500);
      assert_true(f->stragglers[i].share_last > 0.9);
      assert_int_equal(f->stragglers[i].cause, CS_HEALTH_F_POWER | CS_HEALTH_F_NVLINK);
      flagged++;
    }
  }
  assert_int_equal(flagged, 1); /* once, not at every exchange */
  model_free(m);
}

static void test_clean_flags_nobody(void **state) {
  (void)state;
  struct model_gen g = gen();
  struct model *m = model_new(N, NULL, model_gen_feed, &g);
  assert_non_null(m);
  for (uint32_t x = 1; x <= 8; x++) {
    assert_int_equal(model_exchange(m, x), 0);
    for (int r = 0; r < N; r++) {
      assert_int_equal(m->f[r].nstragglers, 0);
      assert_int_equal(m->f[r].nsdc, 0);
    }
    assert_int_equal(m->f[0].sdc_compared, 8);
    assert_int_equal(m->rounds, 1); /* fingerprints agree: no detail round */
  }
  model_free(m);
}

static void test_fingerprint_flip_named(void **state) {
  (void)state;
  struct model_gen g = gen();
  g.flip_rank = 2;
  g.flip_seq = MODEL_SDC_SEQ0 + 8 + 3; /* exchange 2 */
  struct model *m = model_new(N, NULL, model_gen_feed, &g);
  assert_non_null(m);
  assert_int_equal(model_exchange(m, 1), 0);
  assert_int_equal(m->f[0].nsdc, 0);
  assert_int_equal(model_exchange(m, 2), 0);
  assert_int_equal(m->rounds, 2);
  const struct cs_online_findings *f = &m->f[0];
  assert_int_equal(f->nsdc, 1);
  assert_int_equal(f->sdc[0].check, CS_SDC_CHECK_FINGERPRINT);
  assert_int_equal(f->sdc[0].seq, g.flip_seq);
  assert_int_equal(f->sdc[0].suspect_rank, 2);
  assert_int_equal(f->sdc[0].suspect_comm_rank, 2);
  assert_int_equal(f->sdc[0].suspects, 1);
  assert_string_equal(f->sdc[0].suspect_host, "node1");
  assert_int_equal(f->sdc[0].bytes, 16384);
  assert_int_equal(f->sdc_compared, 8);
  same_verdict_everywhere(m);
  assert_int_equal(model_exchange(m, 3), 0);
  assert_int_equal(m->f[0].nsdc, 0); /* reported once */
  model_free(m);
}

/* three ranks with the same wrong bytes: one finding naming the lowest and counting them;
 * four of eight: no strict majority, no suspect */
static void test_flip_groups(void **state) {
  (void)state;
  for (int k = 3; k <= 4; k++) {
    struct model_gen g = gen();
    g.flip_rank = 2;
    g.flip_count = k;
    g.flip_seq = MODEL_SDC_SEQ0 + 6;
    struct model *m = model_new(N, NULL, model_gen_feed, &g);
    assert_non_null(m);
    assert_int_equal(model_exchange(m, 1), 0);
    const struct cs_online_findings *f = &m->f[0];
    assert_int_equal(f->nsdc, 1);
    assert_int_equal(f->sdc[0].check, CS_SDC_CHECK_FINGERPRINT);
    if (k == 3) {
      assert_int_equal(f->sdc[0].suspect_rank, 2);
      assert_int_equal(f->sdc[0].suspects, 3);
    } else {
      assert_int_equal(f->sdc[0].suspect_rank, -1);
    }
    same_verdict_everywhere(m);
    model_free(m);
  }
}

static void test_wrong_sum_everywhere(void **state) {
  (void)state;
  struct model_gen g = gen();
  g.wrong_sum = true;
  g.flip_seq = MODEL_SDC_SEQ0 + 5;
  struct model *m = model_new(N, NULL, model_gen_feed, &g);
  assert_non_null(m);
  assert_int_equal(model_exchange(m, 1), 0);
  const struct cs_online_findings *f = &m->f[0];
  assert_int_equal(f->nsdc, 1);
  assert_int_equal(f->sdc[0].check, CS_SDC_CHECK_SUM);
  assert_int_equal(f->sdc[0].suspect_rank, -1);
  assert_true(f->sdc[0].got - f->sdc[0].want > 4000);
  same_verdict_everywhere(m);
  model_free(m);
}

static void test_lagging_rank_completes_later(void **state) {
  (void)state;
  struct model_gen g = gen();
  g.lag_rank = 3;
  g.flip_rank = 2;
  g.flip_seq = MODEL_SDC_SEQ0 + 3; /* exchange 1's records */
  struct model *m = model_new(N, NULL, model_gen_feed, &g);
  assert_non_null(m);
  assert_int_equal(model_exchange(m, 1), 0);
  assert_int_equal(m->f[0].sdc_compared, 0); /* rank 3 has not reported yet */
  assert_int_equal(m->f[0].instances, 0);
  assert_int_equal(m->f[0].max_backlog, 0);
  /* rank 3 ships each exchange's records one exchange late, into slots the others use for
   * newer ones: some slots collide and are shipped again; everything completes */
  size_t compared = 0, instances = 0, found = 0;
  for (uint32_t x = 2; x <= 6; x++) {
    assert_int_equal(model_exchange(m, x), 0);
    compared += m->f[0].sdc_compared;
    instances += m->f[0].instances;
    for (size_t i = 0; i < m->f[0].nsdc; i++) {
      assert_int_equal(m->f[0].sdc[i].suspect_rank, 2);
      found++;
    }
    same_verdict_everywhere(m);
  }
  assert_int_equal(found, 1);
  assert_true(compared >= 8 * 4 && compared <= 8 * 5);
  /* sampled instances go into the windows in seq order: one that completed before an earlier
   * one shipped again waits for it, up to 4 exchanges (ORDER_HOLD, analysis/online_internal.h);
   * by exchange 12 everything of exchanges 1..7 is in */
  for (uint32_t x = 7; x <= 12; x++) {
    assert_int_equal(model_exchange(m, x), 0);
    instances += m->f[0].instances;
  }
  assert_true(instances >= 16 * 7 && instances <= 16 * 11);
  model_free(m);
}

static void test_disagreeing_exchange_not_used(void **state) {
  (void)state;
  struct model_gen g = gen();
  g.n = 2;
  struct cs_online_rank *a = cs_online_rank_new(0, 2, "h0", NULL), *b = cs_online_rank_new(1, 2, "h1", NULL);
  assert_non_null(a);
  assert_non_null(b);
  model_gen_feed(&g, 0, 1, false, a);
  model_gen_feed(&g, 1, 1, false, b);
  static struct cs_online_wire acc, w;
  cs_online_wire_identity(&acc);
  cs_online_pack(a, 1, 0, &w);
  cs_online_wire_fold(&acc, &w);
  cs_online_pack(b, 2, 0, &w); /* rank 1 thinks this is exchange 2 */
  cs_online_wire_fold(&acc, &w);
  struct cs_online_findings f;
  assert_int_equal(cs_online_unpack(b, 2, 0, &acc, &f), 0);
  assert_int_equal(f.bad_summaries, 1);
  assert_int_equal(cs_online_unpack(a, 1, 0, &acc, &f), 0);
  assert_int_equal(f.bad_summaries, 1);
  assert_int_equal(f.sdc_compared, 0);
  /* what it shipped went back to its backlog: the next agreeing exchange carries it */
  cs_online_wire_identity(&acc);
  cs_online_pack(a, 2, 0, &w);
  cs_online_wire_fold(&acc, &w);
  cs_online_pack(b, 2, 0, &w);
  cs_online_wire_fold(&acc, &w);
  assert_int_equal(cs_online_unpack(b, 2, 0, &acc, &f), 0);
  assert_int_equal(cs_online_unpack(a, 2, 0, &acc, &f), 0);
  assert_int_equal(f.bad_summaries, 0);
  assert_int_equal(f.sdc_compared, 8);
  cs_online_rank_free(a);
  cs_online_rank_free(b);
}

/* The straggler's finding is a function of the instances, not of when each completed: a
 * rank whose records come one exchange late makes slots collide and instances complete out
 * of seq order, yet rank 5 flags itself with the same figures, one exchange later. */
static void straggler_figures(int lag_rank, struct cs_online_straggler *out, uint32_t *at) {
  struct model_gen g = gen();
  g.slow = 5;
  g.late_us = 400;
  g.lag_rank = lag_rank;
  struct model *m = model_new(N, NULL, model_gen_feed, &g);
  assert_non_null(m);
  *at = 0;
  for (uint32_t x = 1; x <= 10 && !*at; x++) {
    assert_int_equal(model_exchange(m, x), 0);
    if (m->f[0].nstragglers) {
      *out = m->f[0].stragglers[0];
      *at = x;
    }
  }
  model_free(m);
}

static void test_straggler_independent_of_completion_order(void **state) {
  (void)state;
  struct cs_online_straggler a, b;
  uint32_t at_a, at_b;
  straggler_figures(-1, &a, &at_a);
  straggler_figures(3, &b, &at_b);
  assert_int_not_equal(at_a, 0);
  assert_int_not_equal(at_b, 0);
  assert_int_equal(b.rank, 5);
  assert_int_equal(a.instances, b.instances);
  assert_true(a.share_last == b.share_last);
  assert_true(a.lateness_us == b.lateness_us);
  assert_true(a.median_dur_us == b.median_dur_us);
  print_message("flagged at exchange %u (in step) and %u (rank 3 one exchange late): %zu instances, share %.4f, "
                "lateness %.3f us\n",
                at_a, at_b, a.instances, a.share_last, a.lateness_us);
}

/* Work that follows the data: rank 5 is 900 us late in every instance (a slow GPU, its
 * compute gap 1,000 us longer than its peers'), and once in 8 it also carries a hot expert
 * and arrives 9,000 us late, as other ranks do in turn. It is last in only 1 of 8 (no
 * share-last flag): the offset rule flags it, and its kind compares the gap excess with
 * its median offset (900), not with its lateness in the instances it was last (9,000): compute. */
static void skew_feed(void *ctx, int rank, uint32_t exchange, bool sdc_only, struct cs_online_rank *st) {
  (void)ctx;
  for (int i = 0; i < 16 && !sdc_only; i++) {
    uint64_t seq = (uint64_t)(exchange - 1) * 16u + (uint64_t)i;
    int hot = seq % 8 == 3 ? 5 : (int[]){0, 1, 2, 3, 4, 6, 7}[seq % 7];
    double dur = 20000 + (double)((seq * 31 + (uint64_t)rank * 17) % 41) - 20;
    double gap = 2000 + (double)((seq * 13 + (uint64_t)rank * 7) % 21) - 10;
    if (rank == 5) {
      dur -= 900;
      gap += 1000;
    }
    if (rank == hot) dur -= rank == 5 ? 8100 : 5000;
    struct cs_online_op o = {0x77, seq, (float)dur, (float)gap, N, (uint32_t)rank, 0};
    cs_online_rank_feed_op(st, &o);
  }
}

static void test_skewed_straggler_kind_compute(void **state) {
  (void)state;
  struct model *m = model_new(N, NULL, skew_feed, NULL);
  assert_non_null(m);
  size_t flagged = 0;
  for (uint32_t x = 1; x <= 6; x++) {
    assert_int_equal(model_exchange(m, x), 0);
    for (size_t i = 0; i < m->f[0].nstragglers; i++) {
      const struct cs_online_straggler *s = &m->f[0].stragglers[i];
      assert_int_equal(s->rank, 5);
      assert_true(s->share_last < 0.2);
      assert_int_equal(s->kind, CS_DET_COMPUTE);
      flagged++;
    }
  }
  assert_int_equal(flagged, 1);
  model_free(m);
}

/* A reduced wire whose data-load sums no 8 members could give (a limb of the bytes squared
 * over its bound, the bytes' sum within its own): the fit is not read, and the slow rank 5 alone
 * flags itself. Read, those sums make a rising line that puts every other rank some 300 us late. */
/* 4 members, rank 3 last (1,500 us against 2,000 us) and alone with bytes: a least-squares line
 * over the sums rises, but the report's Theil-Sen line reads none (3 of the 6 member pairs have
 * equal bytes, detect_dataload.c), so the report names rank 3 last. At most 16 members the
 * exchange reads the instance as the report does: rank 3 last, named, no line applied (the sums'
 * fit must not run beside the exact reading: it would name no last arrival). */
static void test_exact_instance_without_line(void **state) {
  (void)state;
  const uint64_t d[4] = {2000000, 2000000, 2000000, 1500000}, x[4] = {0, 0, 0, 65536};
  struct op_agg a;
  memset(&a, 0, sizeof a);
  a.size = a.count = 4;
  a.durmin = d[3] << RANK_BITS | 3;
  a.durmin_hi = d[3] << RANK_BITS | (RANK_MASK - 3);
  a.durmax = d[0];
  for (int r = 0; r < 4; r++) {
    a.dursum += d[r];
    a.xsum += x[r];
    onl_limbs_add(a.x2, (unsigned __int128)x[r] * x[r]);
    onl_limbs_add(a.xd, (unsigned __int128)x[r] * d[r]);
    onl_limbs_add(a.d2, (unsigned __int128)d[r] * d[r]);
    a.dm[r] = d[r] + 1;
    a.xm[r] = x[r] + 1;
    a.gm[r] = 100000 + 1;
  }
  struct cs_online_op own = {0x77, 5, 2000.0f, 100.0f, 4, 0, 0, 0};
  struct went e;
  struct cs_det_cost_in ci;
  struct onl_exact ox;
  memset(&e, 0, sizeof e);
  cs_onl_instance(&a, &own, &e, &ci, &ox);
  assert_int_equal(ox.n, 4);
  assert_int_equal(e.last, 3);
  assert_true(e.named);
  assert_true(e.late == 500.0 && e.med == 2000.0 && e.a == 0.0);
  assert_true(ci.data); /* the bytes differ: the cost rule charges no such instance, as the report */
}

static void test_garbled_dataload_sums_not_read(void **state) {
  (void)state;
  struct cs_online_rank *st[N];
  for (int r = 0; r < N; r++) assert_non_null(st[r] = cs_online_rank_new(r, N, "h", NULL));
  static struct cs_online_wire red, w;
  size_t flagged = 0;
  for (uint32_t x = 1; x <= 8; x++) {
    for (int r = 0; r < N; r++)
      for (int k = 0; k < 16; k++) {
        struct cs_online_op o = {.comm = 0x5a,
                                 .seq = (uint64_t)((x - 1) * 16 + (uint32_t)k),
                                 .dur_us = r == 5 ? 1600.0f : 2000.0f + (float)r,
                                 .gap_us = r == 5 ? 500.0f : 100.0f,
                                 .comm_size = N,
                                 .comm_rank = (uint32_t)r};
        cs_online_rank_feed_op(st[r], &o);
      }
    cs_online_wire_identity(&red);
    for (int r = 0; r < N; r++) {
      cs_online_pack(st[r], x, 0, &w);
      cs_online_wire_fold(&red, &w);
    }
    struct r0_sum *sm = (struct r0_sum *)red.sum;
    for (unsigned s = 0; s < CS_ONLINE_OP_SLOTS; s++)
      if (sm->op[s].count) {
        sm->op[s].xsum = 200000000000ull;
        sm->op[s].x2[2] = (sm->op[s].count << 8) + 1;
      }
    struct cs_online_findings f;
    for (int r = 0; r < N; r++) assert_int_equal(cs_online_unpack(st[r], x, 0, &red, &f), 0);
    for (size_t i = 0; i < f.nstragglers; i++, flagged++) assert_int_equal(f.stragglers[i].rank, 5);
  }
  assert_int_equal(flagged, 1);
  for (int r = 0; r < N; r++) cs_online_rank_free(st[r]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_straggler_flagged_once),
      cmocka_unit_test(test_clean_flags_nobody),
      cmocka_unit_test(test_fingerprint_flip_named),
      cmocka_unit_test(test_flip_groups),
      cmocka_unit_test(test_wrong_sum_everywhere),
      cmocka_unit_test(test_lagging_rank_completes_later),
      cmocka_unit_test(test_disagreeing_exchange_not_used),
      cmocka_unit_test(test_straggler_independent_of_completion_order),
      cmocka_unit_test(test_skewed_straggler_kind_compute),
      cmocka_unit_test(test_garbled_dataload_sums_not_read),
      cmocka_unit_test(test_exact_instance_without_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
