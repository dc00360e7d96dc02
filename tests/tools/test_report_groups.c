/* tests/tools/test_report_groups.c: the report on NCCL groups whose members share one GPU span
 * (group_ops): no member row is timed with the group's span, one group row per kind has the
 * group's bytes over the span (nccl-tests' -m aggregation and alltoall rules), and the
 * detector sees one instance per group under its first member's seq. The dumps are written
 * in the writer's own line layout, so the reader's fast path reads group_ops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "collscope/detect.h"
#include "dump/dumpfile.h"
#include "cli.h"
#include "tools_fixture.h"

#define GCOMM "0badc0ffee000001"
#define AGG 4
#define ITERS 10
#define SBYTES 1048576ULL /* one AllReduce of the group */
#define SPAN_NS 400000LL  /* the group's span: 400 us */
#define A2A_CALLS 40
#define A2A_COUNT 65536  /* floats to each peer */
#define LATE_NS 100000LL /* the all-to-all's late rank arrives 100 us after the others */

static FILE *open_rank(const char *dir, int r) {
  char p[512];
  fx_path(p, sizeof p, dir, r);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fprintf(f,
          "{\"type\":\"header\",\"schema\":1,\"collscope\":\"0.1.0\",\"host\":\"%s\",\"pid\":%d,"
          "\"rank\":%d,\"local_rank\":%d,\"world_size\":4,\"job\":\"jobg\",\"device\":%d,"
          "\"pci_bus_id\":\"0000:18:00.0\",\"nccl_version\":22809,\"cuda_driver_version\":13000,"
          "\"clock\":{\"realtime_ns\":%lld,\"monotonic_ns\":123456},\"exe\":\"/bin/train\"}\n",
          host_of(r), pid_of(r), r, r % 2, r % 2, T0 - 1000000000LL);
  fprintf(f,
          "{\"type\":\"comm\",\"event\":\"init\",\"comm\":\"%s\",\"size\":4,\"rank\":%d,"
          "\"device\":%d,\"parent\":null,\"t_ns\":%lld}\n",
          GCOMM, r, r % 2, T0 - 5000000LL);
  return f;
}

/* one op line in the writer's layout (stats/dump_writer_records.c), group_ops after status */
static void op_line(FILE *f, int r, long long seq, const char *op, long long count, int peer, long long group,
                    long long st, long long en, int group_ops) {
  char go[32] = "";
  if (group_ops > 1) snprintf(go, sizeof go, ",\"group_ops\":%d", group_ops);
  fprintf(f,
          "{\"type\":\"op\",\"comm\":\"%s\",\"comm_size\":4,\"comm_rank\":%d,\"rank\":%d,\"seq\":%lld,"
          "\"op\":\"%s\",\"dtype\":\"float32\",\"count\":%lld,\"bytes\":%lld,\"redop\":%s,\"root\":-1,"
          "\"peer\":%d,\"stream\":\"0x%llx\",\"group\":%lld,\"enqueue_ns\":%lld,\"start_ns\":%lld,"
          "\"end_ns\":%lld,\"dur_us\":%.3f,\"timing\":\"gpu_event\",\"captured\":false,\"site\":\"train.c:7\","
          "\"status\":0%s}\n",
          GCOMM, r, r, seq, op, count, count * 4, strcmp(op, "AllReduce") == 0 ? "\"sum\"" : "null", peer,
          stream_of(r, 0), group, st - 500, st, en, (double)(en - st) / 1e3, go);
}

static void footer(FILE *f, size_t ops) {
  fprintf(f, "{\"type\":\"footer\",\"ops\":%zu,\"xfers\":0,\"drops\":0}\n", ops);
  fclose(f);
}

/* nccl-tests -m 4: each iteration one group of 4 AllReduces of SBYTES, one span of SPAN_NS;
 * rank `cut` (-1: none) lost the last member of its last group (a crash before it was written) */
static void write_agg_cut(const char *dir, int group_ops, int cut) {
  for (int r = 0; r < NRANKS; r++) {
    FILE *f = open_rank(dir, r);
    for (int it = 0; it < ITERS; it++) {
      long long st = T0 + it * 1000000LL;
      for (int k = 0; k < AGG; k++)
        if (!(r == cut && it == ITERS - 1 && k == AGG - 1))
          op_line(f, r, it * AGG + k, "AllReduce", (long long)(SBYTES / 4), -1, it + 1, st, st + SPAN_NS, group_ops);
    }
    footer(f, ITERS * AGG - (r == cut));
  }
}
static void write_agg(const char *dir, int group_ops) { write_agg_cut(dir, group_ops, -1); }

/* PyTorch's all_to_all_single: one group of a Send and a Recv per peer (itself included); rank
 * 2 arrives LATE_NS after the others, which wait for it: its span is the shortest */
static void write_a2a(const char *dir) {
  for (int r = 0; r < NRANKS; r++) {
    FILE *f = open_rank(dir, r);
    for (int c = 0; c < A2A_CALLS; c++) {
      long long base = T0 + c * 1000000LL, en = base + LATE_NS + 200000LL;
      long long st = base + (r == 2 ? LATE_NS : 0) + r * 10;
      for (int p = 0; p < NRANKS; p++) {
        op_line(f, r, c * 2 * NRANKS + 2 * p, "Send", A2A_COUNT, p, c + 1, st, en, 2 * NRANKS);
        op_line(f, r, c * 2 * NRANKS + 2 * p + 1, "Recv", A2A_COUNT, p, c + 1, st, en, 2 * NRANKS);
      }
    }
    footer(f, A2A_CALLS * 2 * NRANKS);
  }
}

static json_t *row_named(json_t *ops, const char *op, bool group) {
  size_t i;
  json_t *r;
  json_array_foreach(ops, i, r) {
    if (strcmp(jstr(r, "op"), op) == 0 && (json_object_get(r, "group_ops") != NULL) == group) return r;
  }
  return NULL;
}

static json_t *comm_of(json_t *doc, const char *comm) {
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(doc, "comms"), i, c) {
    if (strcmp(jstr(c, "comm"), comm) == 0) return c;
  }
  return NULL;
}

static void agg_group_row(void **state) {
  const char *dir = *state;
  write_agg(dir, AGG);
  json_t *doc = report_json(dir, NULL, NULL);
  json_t *ops = json_object_get(doc, "ops");
  /* the members: counted, never timed with the group's span */
  json_t *m = row_named(ops, "AllReduce", false);
  assert_non_null(m);
  assert_int_equal((int)jnum(m, "count"), NRANKS * ITERS * AGG);
  assert_int_equal((int)jnum(m, "timed"), 0);
  assert_int_equal((int)jnum(m, "grouped"), NRANKS * ITERS * AGG);
  assert_true(json_is_null(json_object_get(m, "busbw_gbs")));
  /* the group: 4 x SBYTES over the span, nccl-tests' -m 4 figure for size SBYTES:
   * busbw = SBYTES / (span / 4) x 2(n-1)/n */
  json_t *g = row_named(ops, "AllReduce x4", true);
  assert_non_null(g);
  assert_int_equal((int)jnum(g, "group_ops"), AGG);
  assert_int_equal((int)jnum(g, "count"), NRANKS * ITERS);
  assert_int_equal((int)jnum(g, "timed"), NRANKS * ITERS);
  assert_int_equal((long long)jnum(g, "bytes"), (long long)(AGG * SBYTES));
  double want = (double)SBYTES / ((double)SPAN_NS / AGG) * 1.5;
  assert_float_equal(jnum(g, "busbw_gbs"), want, 1e-9);
  assert_float_equal(jnum(g, "busbw_mean_gbs"), want, 1e-9);
  assert_float_equal(jnum(json_object_get(g, "time_us"), "p50"), SPAN_NS / 1e3, 1e-9);
  /* one instance per group, not per member */
  json_t *c = comm_of(doc, GCOMM);
  assert_non_null(c);
  assert_int_equal((int)jnum(c, "instances"), ITERS);
  assert_int_equal((int)jnum(c, "ops"), NRANKS * ITERS * AGG);
  /* the communicator's GPU time: each group's span once per rank */
  assert_float_equal(jnum(c, "gpu_time_ms"), NRANKS * ITERS * SPAN_NS / 1e6, 1e-6);
  json_decref(doc);
  /* the text marks the member row and says why */
  char *argv[] = {"report", (char *)dir, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  assert_non_null(strstr(out, "AllReduce x4"));
  assert_non_null(strstr(out, "members of NCCL groups that share one GPU span"));
  free(out);
  free(err);
}

/* a group whose members have their own spans (no group_ops) stays per op */
static void own_spans_stay(void **state) {
  const char *dir = *state;
  write_agg(dir, 0);
  json_t *doc = report_json(dir, NULL, NULL);
  json_t *ops = json_object_get(doc, "ops");
  json_t *m = row_named(ops, "AllReduce", false);
  assert_non_null(m);
  assert_int_equal((int)jnum(m, "timed"), NRANKS * ITERS * AGG);
  assert_null(json_object_get(m, "grouped"));
  assert_null(row_named(ops, "AllReduce x4", true));
  assert_int_equal((int)jnum(comm_of(doc, GCOMM), "instances"), ITERS * AGG);
  json_decref(doc);
}

/* a group whose file ends before all its members: a row of what is there, untimed */
static void cut_group_untimed(void **state) {
  const char *dir = *state;
  write_agg_cut(dir, AGG, 3);
  json_t *doc = report_json(dir, NULL, NULL);
  json_t *ops = json_object_get(doc, "ops");
  json_t *g = row_named(ops, "AllReduce x4", true), *c = row_named(ops, "AllReduce x3", true);
  assert_non_null(g);
  assert_non_null(c);
  assert_int_equal((int)jnum(g, "timed"), NRANKS * ITERS - 1);
  assert_int_equal((int)jnum(c, "count"), 1);
  assert_int_equal((int)jnum(c, "timed"), 0);
  assert_int_equal((int)jnum(comm_of(doc, GCOMM), "instances"), ITERS);
  json_decref(doc);
}

static void a2a_is_one_alltoall(void **state) {
  const char *dir = *state;
  write_a2a(dir);
  json_t *doc = report_json(dir, NULL, NULL);
  json_t *ops = json_object_get(doc, "ops");
  json_t *g = row_named(ops, "AlltoAll", true);
  assert_non_null(g);
  assert_int_equal((int)jnum(g, "group_ops"), 2 * NRANKS);
  assert_int_equal((int)jnum(g, "count"), NRANKS * A2A_CALLS);
  /* nccl-tests src/alltoall.cu: bytes = count x nranks x size, busbw = bytes / time x (n-1)/n */
  unsigned long long bytes = (unsigned long long)A2A_COUNT * 4 * NRANKS;
  assert_int_equal((long long)jnum(g, "bytes"), (long long)bytes);
  /* p50 (nearest rank, 160 spans) of the ranks' spans: 40 of the late rank's 199.98 us, then
   * 40 of rank 3's 299.97 us (st = base + 30) */
  double p50 = (LATE_NS + 200000LL - 30) / 1e3;
  assert_float_equal(jnum(json_object_get(g, "time_us"), "p50"), p50, 1e-6);
  assert_float_equal(jnum(g, "busbw_gbs"), (double)bytes / (p50 * 1e3) * 0.75, 1e-9);
  json_t *s = row_named(ops, "Send", false);
  assert_non_null(s);
  assert_int_equal((int)jnum(s, "timed"), 0);
  assert_int_equal((int)jnum(s, "grouped"), NRANKS * NRANKS * A2A_CALLS);
  /* one instance per call; the late rank is a straggler of the AlltoAll */
  assert_int_equal((int)jnum(comm_of(doc, GCOMM), "instances"), A2A_CALLS);
  json_t *st = json_object_get(doc, "stragglers");
  assert_true(json_array_size(st) >= 1);
  bool found = false;
  size_t i;
  json_t *x;
  json_array_foreach(st, i, x) found |= jnum(x, "rank") == 2;
  assert_true(found);
  json_decref(doc);
}

/* the detector over a loaded set (demo, top and the exporter through cs_detect): the same
 * instances and straggler */
static void a2a_batch_detector(void **state) {
  const char *dir = *state;
  write_a2a(dir);
  struct cs_dumpset *set = cs_dumpset_load_cli(dir, NULL);
  assert_non_null(set);
  struct cs_det_params p;
  cs_det_params_default(&p);
  struct cs_det_result det;
  assert_int_equal(cli_detect_dumpset(set, &p, &det), 0);
  assert_int_equal((int)det.instances, A2A_CALLS);
  bool found = false;
  for (size_t i = 0; i < det.nstragglers; i++) found |= det.stragglers[i].rank == 2;
  assert_true(found);
  cs_det_result_free(&det);
  cs_dumpset_free(set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(agg_group_row, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(own_spans_stay, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(cut_group_untimed, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(a2a_is_one_alltoall, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(a2a_batch_detector, setup_dir, teardown_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
