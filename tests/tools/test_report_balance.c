/* tests/tools/test_report_balance.c: the report's balance section (tools/report/report_balance.c) on
 * synthetic dumps whose timelines are computed here: every rank computes for its own time
 * before each collective, a collective starts at the rank's arrival and ends on every rank at
 * the last arrival plus its cost (a synchronising ring), so the expected compute per step,
 * shares, step time and prediction are exact arithmetic.
 *  - mixed: 2 H100 ranks (1000 us per op) and 2 A100 ranks (2000 us), 3 AllReduce sizes per
 *    step: step = 3 ops, compute 3000 / 6000 us, shares 1/3 and 1/6, predicted step time and
 *    gain, verdict slower_model, action balance; the same dumps with --shares 1,1,2,2 (the
 *    A100s given twice the work today) move the shares the other way;
 *  - throttled: 4 H100s, rank 3 slow and at its power cap in the health samples: verdict
 *    throttled, action fix;
 *  - balanced: equal compute: action none; one step of 3 different ops: per op;
 *  - pipeline: 4 stages of Send/Recv with 24 layers each, layer times 100, 100, 200, 200 us:
 *    --layers 24,24,24,24 gives 32, 32, 16, 16 and the gain; a wrong count is a note, a bad
 *    list a usage error; one op per stage (fewer than two steps): kind none, no figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli.h"
#include "tools_fixture.h"

#define BAL_COMM "00000000000000b1"
#define H100 "NVIDIA H100 80GB HBM3"
#define A100 "NVIDIA A100-SXM4-80GB"
#define COST_US 100.0 /* every collective's own cost */

static void header(FILE *f, int r, const char *gpu, int arch) {
  fprintf(f,
          "{\"type\":\"header\",\"schema\":1,\"collscope\":\"0.1.0\",\"host\":\"node%d\",\"pid\":%d,"
          "\"rank\":%d,\"local_rank\":%d,\"world_size\":4,\"job\":\"job7\",\"device\":%d,"
          "\"pci_bus_id\":\"0000:18:00.0\",\"nccl_version\":22809,\"cuda_driver_version\":13000,"
          "\"clock\":{\"realtime_ns\":%lld,\"monotonic_ns\":1},\"exe\":\"/bin/train\",\"gpu_name\":\"%s\","
          "\"gpu_arch\":%d}\n",
          r / 2, 100 + r, r, r % 2, r % 2, T0, gpu, arch);
  fprintf(f, "{\"type\":\"comm\",\"event\":\"init\",\"comm\":\"%s\",\"size\":4,\"rank\":%d,\"device\":%d,"
             "\"parent\":null,\"t_ns\":%lld}\n",
          BAL_COMM, r, r % 2, T0);
}

static void op_line(FILE *f, int r, int seq, const char *op, unsigned long long bytes, int peer, double start_us,
                    double end_us) {
  long long st = T0 + (long long)(start_us * 1000), en = T0 + (long long)(end_us * 1000);
  fprintf(f,
          "{\"type\":\"op\",\"comm\":\"%s\",\"comm_size\":4,\"comm_rank\":%d,\"rank\":%d,\"seq\":%d,"
          "\"op\":\"%s\",\"dtype\":\"float32\",\"count\":%llu,\"bytes\":%llu,\"redop\":null,\"root\":-1,"
          "\"peer\":%d,\"stream\":\"0x10\",\"group\":0,\"enqueue_ns\":%lld,\"start_ns\":%lld,"
          "\"end_ns\":%lld,\"dur_us\":%.3f,\"timing\":\"gpu_event\",\"captured\":false,\"site\":\"t.c:1\","
          "\"status\":0}\n",
          BAL_COMM, r, r, seq, op, bytes / 4, bytes, peer, st - 1000, st, en, end_us - start_us);
}

/* 4 ranks of data parallel: per step 3 AllReduces (1 MiB, 128 KiB, 16 KiB); rank r computes
 * op_us[r] before each. A rank listed in power_cap gets health samples at its power cap. */
static void write_dp(const char *dir, const double op_us[4], const char *const gpu[4], const int arch[4], int steps,
                     int power_cap_rank) {
  static const unsigned long long sizes[3] = {1 << 20, 1 << 17, 1 << 14};
  FILE *f[4];
  for (int r = 0; r < 4; r++) {
    char p[512];
    snprintf(p, sizeof p, "%s/collscope-node%d-r%d-p%d.jsonl", dir, r / 2, r, 100 + r);
    f[r] = fopen(p, "w");
    assert_non_null(f[r]);
    header(f[r], r, gpu[r], arch[r]);
  }
  double t[4] = {0, 0, 0, 0};
  for (int s = 0, seq = 0; s < steps; s++)
    for (int k = 0; k < 3; k++, seq++) {
      double last = 0;
      for (int r = 0; r < 4; r++)
        if (t[r] + op_us[r] > last) last = t[r] + op_us[r];
      for (int r = 0; r < 4; r++) {
        op_line(f[r], r, seq, "AllReduce", sizes[k], -1, t[r] + op_us[r], last + COST_US);
        t[r] = last + COST_US;
      }
    }
  for (int r = 0; r < 4; r++) {
    if (r == power_cap_rank) /* NVML's software power cap reason (0x4) in every sample */
      for (int i = 0; i < 5; i++)
        fprintf(f[r], "{\"type\":\"health\",\"rank\":%d,\"t_ns\":%lld,\"gpu\":{\"bus\":\"0000:18:00.0\",\"reasons\":4,"
                      "\"sm_mhz\":1200,\"power_mw\":700000,\"temp_c\":60}}\n",
                r, T0 + (long long)i * 1000000);
    fclose(f[r]);
  }
}

static json_t *balance_of(const char *dir, const char *a1, const char *a2) {
  json_t *root = report_json(dir, a1, a2);
  json_t *b = json_incref(json_object_get(root, "balance"));
  json_decref(root);
  assert_non_null(b);
  return b;
}
static json_t *rank_of(json_t *b, int i) { return json_array_get(json_object_get(b, "ranks"), (size_t)i); }
static void near(double got, double want, double tol) {
  if (!(got > want - tol && got < want + tol)) fprintf(stderr, "got %.6f, want %.6f\n", got, want);
  assert_true(got > want - tol && got < want + tol);
}

static const char *const mixed_gpu[4] = {H100, H100, A100, A100};
static const int mixed_arch[4] = {9, 9, 8, 8};

static void test_mixed(void **state) {
  (void)state;
  char *dir = make_tmpdir();
  const double op_us[4] = {1000, 1000, 2000, 2000};
  write_dp(dir, op_us, mixed_gpu, mixed_arch, 6, -1);
  json_t *b = balance_of(dir, NULL, NULL);
  assert_string_equal(jstr(b, "kind"), "data_parallel");
  assert_int_equal((int)jnum(b, "ops_per_step"), 3);
  assert_int_equal((int)jnum(b, "steps"), 5);
  /* step = 3 x (2000 + 100); compute 3000 / 6000; balanced compute 1 / (2 x 0.25/3000 + 2 x
   * 0.25/6000) = 4000; predicted 6300 - (6000 - 4000) = 4300 */
  near(jnum(rank_of(b, 0), "compute_us"), 3000, 1e-3);
  near(jnum(rank_of(b, 2), "compute_us"), 6000, 1e-3);
  near(jnum(rank_of(b, 0), "share"), 1.0 / 3, 1e-9);
  near(jnum(rank_of(b, 3), "share"), 1.0 / 6, 1e-9);
  near(jnum(b, "step_us_now"), 6300, 1e-3);
  near(jnum(b, "step_us_balanced"), 4300, 1e-3);
  near(jnum(b, "gain_pct"), 100.0 * 2000 / 6300, 1e-6);
  assert_string_equal(jstr(rank_of(b, 2), "gpu"), A100);
  assert_string_equal(jstr(rank_of(b, 2), "host"), "node1");
  assert_string_equal(jstr(rank_of(b, 0), "verdict"), "ok");
  assert_string_equal(jstr(rank_of(b, 2), "verdict"), "slower_model");
  assert_string_equal(jstr(b, "action"), "balance");
  json_t *m = json_array_get(json_object_get(b, "by_model"), 1);
  assert_string_equal(jstr(m, "gpu"), A100);
  near(jnum(m, "share"), 1.0 / 3, 1e-9);
  json_decref(b);
  /* today the A100s already get twice the work: speed = share / compute, so the H100s (1/6
   * of the work in 3000 us) and the A100s (1/3 in 6000 us) are equally fast: equal shares */
  b = balance_of(dir, "--shares", "1,1,2,2");
  near(jnum(rank_of(b, 0), "share_now"), 1.0 / 6, 1e-9);
  near(jnum(rank_of(b, 0), "share"), 0.25, 1e-9);
  near(jnum(rank_of(b, 2), "share"), 0.25, 1e-9);
  json_decref(b);
  /* the text section */
  char *argv[] = {"report", dir, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  assert_non_null(strstr(out, "# Balance"));
  assert_non_null(strstr(out, "predicted: 31.7 % faster"));
  assert_non_null(strstr(out, "# action: balance"));
  free(out);
  free(err);
  rm_tree(dir);
}

static void test_throttled(void **state) {
  (void)state;
  char *dir = make_tmpdir();
  const double op_us[4] = {1000, 1000, 1000, 1500};
  const char *const gpu[4] = {H100, H100, H100, H100};
  const int arch[4] = {9, 9, 9, 9};
  write_dp(dir, op_us, gpu, arch, 6, 3);
  json_t *b = balance_of(dir, NULL, NULL);
  assert_string_equal(jstr(rank_of(b, 3), "verdict"), "throttled");
  assert_non_null(strstr(jstr(rank_of(b, 3), "cause"), "power_cap"));
  assert_string_equal(jstr(rank_of(b, 2), "verdict"), "ok");
  assert_string_equal(jstr(b, "action"), "fix");
  assert_non_null(strstr(jstr(b, "advice"), "rank 3 on node1"));
  json_decref(b);
  rm_tree(dir);
}

static void test_balanced(void **state) {
  (void)state;
  char *dir = make_tmpdir();
  const double op_us[4] = {1000, 1000, 1000, 1000};
  write_dp(dir, op_us, mixed_gpu, mixed_arch, 4, -1);
  json_t *b = balance_of(dir, NULL, NULL);
  near(jnum(b, "gain_pct"), 0, 1e-9);
  near(jnum(rank_of(b, 3), "share"), 0.25, 1e-9);
  assert_string_equal(jstr(b, "action"), "none");
  json_decref(b);
  rm_tree(dir);
  /* one step of 3 different ops: no repeating step, so per op (the first left out) */
  dir = make_tmpdir();
  write_dp(dir, op_us, mixed_gpu, mixed_arch, 1, -1);
  b = balance_of(dir, NULL, NULL);
  assert_string_equal(jstr(b, "kind"), "data_parallel");
  assert_true(json_is_null(json_object_get(b, "ops_per_step")));
  assert_int_equal((int)jnum(b, "steps"), 2);
  near(jnum(rank_of(b, 0), "compute_us"), 1000, 1e-3);
  json_decref(b);
  rm_tree(dir);
}

/* 4 stages, each per step: its compute (layers x layer time), then one Send downstream (the
 * last stage: one Recv from upstream) of 10 us */
static void write_pipeline(const char *dir, int steps) {
  static const double layer_us[4] = {100, 100, 200, 200};
  for (int r = 0; r < 4; r++) {
    char p[512];
    snprintf(p, sizeof p, "%s/collscope-node%d-r%d-p%d.jsonl", dir, r / 2, r, 100 + r);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    header(f, r, r < 2 ? H100 : A100, r < 2 ? 9 : 8);
    double t = 0;
    for (int s = 0; s < steps; s++) {
      t += 24 * layer_us[r];
      op_line(f, r, s, r < 3 ? "Send" : "Recv", 1 << 20, r < 3 ? r + 1 : 2, t, t + 10);
      t += 10;
    }
    fclose(f);
  }
}

static void test_pipeline(void **state) {
  (void)state;
  char *dir = make_tmpdir();
  /* one Send or Recv per stage: fewer than two steps, nothing measured */
  write_pipeline(dir, 1);
  json_t *one = balance_of(dir, "--layers", "24,24,24,24");
  assert_string_equal(jstr(one, "kind"), "none");
  assert_int_equal(json_array_size(json_object_get(one, "ranks")), 0);
  assert_null(json_object_get(one, "stages"));
  assert_non_null(strstr(json_string_value(json_array_get(json_object_get(one, "notes"), 0)), "no Send/Recv pipeline"));
  json_decref(one);
  char *argv1[] = {"report", dir, NULL};
  char *out1, *err1;
  assert_int_equal(run_capture(cmd_report, argv1, &out1, &err1), 0);
  assert_non_null(strstr(out1, "# no data-parallel or pipeline communicator with two steps or more"));
  free(out1);
  free(err1);
  rm_tree(dir);
  dir = make_tmpdir();
  write_pipeline(dir, 5);
  json_t *b = balance_of(dir, "--layers", "24,24,24,24");
  assert_string_equal(jstr(b, "kind"), "pipeline");
  json_t *st = json_object_get(b, "stages");
  assert_int_equal(json_array_size(st), 4);
  static const int want[4] = {32, 32, 16, 16};
  for (int i = 0; i < 4; i++) {
    json_t *s = json_array_get(st, (size_t)i);
    assert_int_equal((int)jnum(s, "stage"), i);
    assert_int_equal((int)jnum(s, "layers_now"), 24);
    assert_int_equal((int)jnum(s, "layers"), want[i]);
  }
  near(jnum(json_array_get(st, 2), "compute_us"), 4800, 1e-3);
  /* step now 4810 (the slowest stage), balanced 4810 - (4800 - 3200) = 3210 */
  near(jnum(b, "pipeline_step_us_now"), 4810, 1e-3);
  near(jnum(b, "pipeline_step_us_balanced"), 3210, 1e-3);
  near(jnum(b, "gain_pct"), 100.0 * 1600 / 4810, 1e-6);
  json_decref(b);
  /* a count per stage that does not match: a note, no counts */
  b = balance_of(dir, "--layers", "24,24,48");
  assert_true(json_is_null(json_object_get(json_array_get(json_object_get(b, "stages"), 0), "layers")));
  assert_non_null(strstr(json_string_value(json_array_get(json_object_get(b, "notes"), 0)), "3 stages"));
  json_decref(b);
  /* not a list of positive integers: a usage error */
  const char *bad[] = {"24,x", "24,,24", "0,24", "2.5,3", "", "-1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *argv[] = {"report", dir, "--json", "--layers", (char *)bad[i], NULL};
    char *out, *err;
    assert_int_equal(run_capture(cmd_report, argv, &out, &err), CLI_EXIT_USAGE);
    assert_non_null(strstr(err, "--layers"));
    free(out);
    free(err);
  }
  rm_tree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mixed),
      cmocka_unit_test(test_throttled),
      cmocka_unit_test(test_balanced),
      cmocka_unit_test(test_pipeline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
