/* tests/tools/test_report_sdc_paths.c: the report's SDC findings are the same whether the
 * instances come from the streamed walk (`collscope report`, tools/report/report_agg_walk.c) or from
 * the set loaded whole (`collscope demo`'s sdc section, agg NULL), and they are the ones the
 * dumps were written to produce: each finding's check, suspect comm rank, that rank's own
 * rank and host, on communicators whose comm ranks are not the global ranks, a record that
 * names no rank, an instance missing a rank (incomplete) and one whose ranks disagree on the
 * op (not compared). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "collscope/sdc.h"
#include "dump/dumpfile.h"
#include "report/report.h"
#include "report/report_agg.h"
#include "tools_fixture.h"

enum { RANKS = 4 };
#define COMM_W 0x100ull /* the world: comm rank = rank */
#define COMM_G 0x200ull /* three ranks, numbered in another order */
#define FP_GOOD "00000000000000aa"
#define FP_BAD "00000000000000bb"

static const char *host_of_rank(int r) { return r < 2 ? "hostA" : "hostB"; }
static const int g_rank_of_crank[3] = {3, 0, 2}; /* COMM_G's comm rank -> rank */

/* one collective record of rank r; rec_rank: the "rank" field written (-1: none known) */
struct rec {
  uint64_t comm;
  int seq, comm_size, comm_rank, rank, rec_rank, root;
  const char *op, *redop;
  const char *fp;
  double in_sum, out_sum;
};

static void write_rec(FILE *f, const struct rec *x) {
  char redop[32];
  if (x->redop)
    snprintf(redop, sizeof redop, "\"%s\"", x->redop);
  else
    snprintf(redop, sizeof redop, "null");
  int64_t t = 1000000000000ll + (int64_t)x->seq * 1000000 + (int64_t)(x->comm >> 8) * 100000000;
  fprintf(f,
          "{\"type\":\"op\",\"comm\":\"%016" PRIx64 "\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,\"seq\":%d,"
          "\"op\":\"%s\",\"dtype\":\"float32\",\"count\":256,\"bytes\":1024,\"redop\":%s,\"root\":%d,\"peer\":-1,"
          "\"stream\":\"0x7f00\",\"group\":0,\"enqueue_ns\":%" PRId64 ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64
          ",\"dur_us\":20.000,\"timing\":\"gpu_event\",\"captured\":false,\"site\":\"a.out+0x10\",\"status\":0,"
          "\"sdc\":{\"checked\":3,\"fp\":\"%s\",\"in_sum\":%.17g,\"in_abs\":%.17g,\"out_sum\":%.17g}}\n",
          x->comm, x->comm_size, x->comm_rank, x->rec_rank, x->seq, x->op, redop, x->root, t - 1000, t, t + 20000, x->fp,
          x->in_sum, x->in_sum < 0 ? -x->in_sum : x->in_sum, x->out_sum);
}

/* What the dumps are written to produce, one row per finding. */
struct want {
  uint64_t comm;
  int seq, check, crank;
  int rank;         /* the suspect's own rank, -1 when its record names none */
  const char *host; /* NULL when the check names no suspect */
};
static struct want wants[16];
static size_t nwants;
static size_t want_compared;
static void expect(uint64_t comm, int seq, int check, int crank, int rank) {
  wants[nwants++] = (struct want){comm, seq, check, crank, rank,
                                  crank < 0        ? NULL
                                  : comm == COMM_W ? host_of_rank(crank)
                                                   : host_of_rank(g_rank_of_crank[crank])};
}

/* World (AllReduce, sum; every rank's input sum r + 1, so the output sum is 10):
 *   seq 1: rank 3's output fingerprint differs;  seq 3: every output sum is off by 500 (the
 *   sum check, no suspect);  seq 4: rank 2's fingerprint differs and its record names no
 *   rank;  seq 5: rank 1 has no record (sum incomplete);  seq 6: rank 0 calls AllGather, a
 *   different fingerprint (ranks disagree on the op: not compared).
 * G (comm ranks 0, 1, 2 = ranks 3, 0, 2): seq 0 Broadcast from comm rank 0, clean; seq 1 the
 *   same with comm rank 1's output fingerprint differing and comm rank 2's output sum wrong
 *   (its fingerprint agrees); seq 2 Reduce (sum) to comm rank 2 whose output sum is wrong. */
static void write_set(const char *dir) {
  nwants = 0;
  for (int r = 0; r < RANKS; r++) {
    char path[512];
    snprintf(path, sizeof path, "%s/collscope-%s-r%d-p%d.jsonl", dir, host_of_rank(r), r, 100 + r);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"type\":\"header\",\"schema\":1,\"collscope\":\"0.1.0\",\"host\":\"%s\",\"pid\":%d,\"rank\":%d,"
            "\"local_rank\":%d,\"world_size\":%d,\"job\":\"t\",\"device\":0,\"pci_bus_id\":\"\",\"nccl_version\":"
            "22809,\"cuda_driver_version\":13000,\"clock\":{\"realtime_ns\":1,\"monotonic_ns\":1},\"exe\":\"x\"}\n",
            host_of_rank(r), 100 + r, r, r % 2, RANKS);
    int nops = 0;
    for (int seq = 0; seq <= 6; seq++) {
      if (seq == 5 && r == 1) continue;
      struct rec x = {COMM_W, seq, RANKS, r, r, r, -1, "AllReduce", "sum", FP_GOOD, r + 1, 10};
      if (seq == 1 && r == 3) x.fp = FP_BAD;
      if (seq == 3) x.out_sum = 510;
      if (seq == 4 && r == 2) x.fp = FP_BAD, x.rec_rank = -1;
      if (seq == 6 && r == 0) x.op = "AllGather", x.fp = FP_BAD;
      write_rec(f, &x);
      nops++;
    }
    for (int c = 0; c < 3; c++) {
      if (g_rank_of_crank[c] != r) continue;
      for (int seq = 0; seq <= 2; seq++) {
        struct rec x = {COMM_G, seq, 3, c, r, r, 0, "Broadcast", NULL, FP_GOOD, 7, 7};
        if (seq == 1 && c == 1) x.fp = FP_BAD;
        if (seq == 1 && c == 2) x.out_sum = 70;
        if (seq == 2) {
          x.op = "Reduce", x.redop = "sum", x.root = 2, x.in_sum = c + 1;
          x.out_sum = c == 2 ? 600 : 0;
        }
        write_rec(f, &x);
        nops++;
      }
    }
    fprintf(f, "{\"type\":\"footer\",\"ops\":%d,\"xfers\":0,\"drops\":0,\"timing_lost\":0,\"t_ns\":2}\n", nops);
    fclose(f);
  }
  expect(COMM_W, 1, CS_SDC_CHECK_FINGERPRINT, 3, 3);
  expect(COMM_W, 3, CS_SDC_CHECK_SUM, -1, -1);
  expect(COMM_W, 4, CS_SDC_CHECK_FINGERPRINT, 2, -1);
  expect(COMM_G, 1, CS_SDC_CHECK_FINGERPRINT, 1, g_rank_of_crank[1]);
  expect(COMM_G, 1, CS_SDC_CHECK_SUM, 2, g_rank_of_crank[2]);
  expect(COMM_G, 2, CS_SDC_CHECK_SUM, 2, g_rank_of_crank[2]);
  want_compared = 6 + 3; /* world seqs 0..5, G's 3 */
}

static int cmp_item(const void *a, const void *b) {
  const struct agg_sdc_item *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->check != y->check) return x->check - y->check;
  return x->suspect_comm_rank - y->suspect_comm_rank;
}

/* the sdc section's findings, sorted, against what the dumps were written to produce */
static void check_wanted(struct agg_sdc *s) {
  qsort(s->items, s->nitems, sizeof *s->items, cmp_item);
  assert_int_equal(s->nitems, nwants);
  assert_int_equal(s->compared, want_compared);
  assert_int_equal(s->skipped_incomplete, 1);
  for (size_t i = 0; i < nwants; i++) {
    const struct agg_sdc_item *it = &s->items[i];
    const struct want *w = &wants[i];
    assert_true(it->comm == w->comm);
    assert_int_equal(it->seq, w->seq);
    assert_int_equal(it->check, w->check);
    assert_int_equal(it->suspect_comm_rank, w->crank);
    assert_int_equal(it->suspect_rank, w->rank);
    if (w->host)
      assert_string_equal(it->host ? it->host : "(null)", w->host);
    else
      assert_null(it->host);
    assert_string_equal(it->dtype, "float32");
  }
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static void streamed_and_loaded_agree(void **state) {
  (void)state;
  char *dir = make_tmpdir();
  write_set(dir);

  /* the set loaded whole: the sdc section with no streamed figures (collscope demo) */
  struct cs_dumpset *all = cs_dumpset_load(dir);
  assert_false(all->fatal);
  struct report whole = {.set = all};
  report_section_sdc.build(&whole);

  /* streamed, a few hundred bytes a file a round: instances complete across rounds */
  struct cs_det_params p;
  cs_det_params_default(&p);
  struct report_agg agg;
  struct cs_dumpset *s = report_agg_run(dir, NULL, NULL, 2, RANKS * 512, &p, &agg);
  assert_non_null(s);
  struct report streamed = {.set = s, .agg = &agg};
  report_section_sdc.build(&streamed);

  check_wanted(&whole.sdc);
  check_wanted(&streamed.sdc);
  const struct agg_sdc *a = &whole.sdc, *b = &streamed.sdc;
  assert_true(a->compared == b->compared && a->fp_checked == b->fp_checked && a->sum_checked == b->sum_checked &&
              a->skipped_nonfinite == b->skipped_nonfinite && a->skipped_incomplete == b->skipped_incomplete);
  for (size_t i = 0; i < a->nitems; i++) {
    const struct agg_sdc_item *x = &a->items[i], *y = &b->items[i];
    assert_true(x->comm == y->comm && x->seq == y->seq && x->bytes == y->bytes && x->check == y->check);
    assert_true(x->suspect_comm_rank == y->suspect_comm_rank && x->suspect_rank == y->suspect_rank);
    assert_true(same_str(x->host, y->host) && same_str(x->op, y->op) && same_str(x->dtype, y->dtype));
    assert_true(x->got == y->got && x->want == y->want && x->tol == y->tol);
  }

  /* the demo's entry prints the loaded set's section: a finding, the suspect's host */
  char *text = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&text, &len);
  assert_non_null(o);
  assert_int_equal(cli_report_sdc_text(dir, o), 1);
  fclose(o);
  assert_non_null(strstr(text, "9 collectives compared"));
  assert_non_null(strstr(text, "crank 2  hostB"));
  free(text);

  report_section_sdc.free(&whole);
  report_section_sdc.free(&streamed);
  report_agg_free(&agg);
  cs_dumpset_free(s);
  cs_dumpset_free(all);
  rm_tree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(streamed_and_loaded_agree)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
