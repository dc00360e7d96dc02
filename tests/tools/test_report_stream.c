/* tests/tools/test_report_stream.c: `collscope report`'s streamed reading (tools/report/report_agg.c
 * over cs_dumpset_stream) against the whole set loaded at once, on dumps big enough to be read
 * in many rounds: the same stragglers and hangs as cs_detect over every record, the same
 * instance and rank counts per communicator, exact counts per row, percentiles within the
 * histogram's error, and the walker never holding more than a few rounds of records. And
 * `collscope trace`'s selection and size cap on the same dumps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "collscope/detect.h"
#include "collscope/histogram.h"
#include "dump/dumpfile.h"
#include "report/report_agg.h"

enum { RANKS = 8,
       OPS = 1200 };

/* one file per rank in the writer's layout; rank 3 arrives late on every other instance of
 * the world comm; rank 6 never completes the group comm's last instance (a hang record) */
static void write_set(const char *dir) {
  for (int r = 0; r < RANKS; r++) {
    char path[512];
    snprintf(path, sizeof path, "%s/collscope-h%d-r%d-p%d.jsonl", dir, r / 4, r, 100 + r);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"type\":\"header\",\"schema\":1,\"collscope\":\"0.1.0\",\"host\":\"h%d\",\"pid\":%d,\"rank\":%d,"
               "\"local_rank\":%d,\"world_size\":%d,\"job\":\"t\",\"device\":0,\"pci_bus_id\":\"\",\"nccl_version\":"
               "22809,\"cuda_driver_version\":13000,\"clock\":{\"realtime_ns\":1,\"monotonic_ns\":1},\"exe\":\"x\"}\n",
            r / 4, 100 + r, r, r % 4, RANKS);
    int64_t gseq = 0, wseq = 0;
    for (int i = 0; i < OPS; i++) {
      bool grp = i % 4 == 3;
      uint64_t comm = grp ? 0x200 + (uint64_t)(r / 4) : 0x100;
      int64_t seq = grp ? gseq++ : wseq++;
      int size = grp ? 4 : RANKS, crank = grp ? r % 4 : r;
      uint64_t bytes = 1024ull << (i % 7);
      int64_t t = 1000000000000ll + (int64_t)i * 1000000;
      int64_t jit = (int64_t)((uint64_t)(seq * 7919 + r * 104729 + (int64_t)comm) % 5000);
      bool late = !grp && r == 3 && seq % 2 == 0;
      int64_t start = t + jit + (late ? 200000 : 0), end = t + 5000 + (!grp && seq % 2 == 0 ? 200000 : 0) + 30000;
      if (grp && r == 6 && i >= OPS - 4) { /* the last group instance: in flight at exit */
        fprintf(f, "{\"type\":\"hang\",\"comm\":\"%016" PRIx64 "\",\"comm_size\":4,\"comm_rank\":%d,\"rank\":%d,"
                   "\"seq\":%" PRId64 ",\"op\":\"AllReduce\",\"enqueue_ns\":%" PRId64 ",\"age_ms\":5000,"
                   "\"started\":true,\"t_ns\":%" PRId64 "}\n",
                comm, crank, r, seq, start, start + (int64_t)5000000000);
        continue;
      }
      fprintf(f, "{\"type\":\"op\",\"comm\":\"%016" PRIx64 "\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,"
                 "\"seq\":%" PRId64 ",\"op\":\"%s\",\"dtype\":\"float32\",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"redop\":\"sum\",\"root\":-1,\"peer\":-1,\"stream\":\"0x7f00\",\"group\":0,\"enqueue_ns\":%" PRId64 ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"dur_us\":%" PRId64 ".%03d,\"timing\":\"gpu_event\","
                 "\"captured\":false,\"site\":\"a.out+0x10\",\"status\":0}\n",
              comm, size, crank, r, seq, grp ? "AllReduce" : i % 2 ? "AllGather"
                                                                   : "AllReduce",
              bytes / 4, bytes,
              start - 1000, start, end, (end - start) / 1000, (int)((end - start) % 1000));
    }
    fprintf(f, "{\"type\":\"footer\",\"ops\":%d,\"xfers\":0,\"drops\":0,\"timing_lost\":0,\"t_ns\":2}\n", OPS);
    fclose(f);
  }
}

static void streamed_equals_loaded(void **state) {
  (void)state;
  char dir[] = "/tmp/collscope-stream-XXXXXX";
  assert_non_null(mkdtemp(dir));
  write_set(dir);

  struct cs_det_params p;
  cs_det_params_default(&p);
  struct report_agg agg;
  struct cs_dumpset *s = report_agg_run(dir, NULL, NULL, 2, RANKS * (16 << 10), &p, &agg); /* 16 KiB a file a round */
  assert_non_null(s);
  struct cs_dumpset *all = cs_dumpset_load(dir);
  assert_false(all->fatal);
  struct cs_det_result want;
  assert_int_equal(cli_detect_dumpset(all, &p, &want), 0);

  /* files of ~250 KiB are read 16 KiB at a time: many rounds */
  assert_true(agg.max_held < (size_t)RANKS * 200);
  assert_int_equal(agg.late_records, 0);

  /* stragglers, per-rank figures and hangs: as cs_detect over every record */
  const struct cs_det_result *got = &agg.det;
  assert_true(want.nstragglers >= 1);
  assert_int_equal(got->instances, want.instances);
  assert_int_equal(got->nstragglers, want.nstragglers);
  for (size_t i = 0; i < want.nstragglers; i++) {
    struct cs_det_straggler a = got->stragglers[i], b = want.stragglers[i];
    assert_string_equal(a.host ? a.host : "-", b.host ? b.host : "-");
    assert_true(a.comm == b.comm && a.comm_size == b.comm_size && a.comm_rank == b.comm_rank && a.rank == b.rank &&
                a.kind == b.kind && a.window_instances == b.window_instances && a.last == b.last);
    assert_true(a.share_last == b.share_last && a.lateness_us == b.lateness_us && a.offset_us == b.offset_us &&
                a.later_share == b.later_share && a.median_dur_us == b.median_dur_us);
    assert_true(a.gap_us == b.gap_us && a.peer_gap_us == b.peer_gap_us);
    assert_true(a.first_flag_instance == b.first_flag_instance && a.first_flag_seq == b.first_flag_seq);
  }
  assert_int_equal(got->nranks, want.nranks);
  for (size_t i = 0; i < want.nranks; i++) {
    assert_true(got->ranks[i].comm == want.ranks[i].comm && got->ranks[i].rank == want.ranks[i].rank);
    assert_true(got->ranks[i].last == want.ranks[i].last && got->ranks[i].offset_us == want.ranks[i].offset_us);
  }
  assert_int_equal(got->nhangs, 1);
  assert_int_equal(want.nhangs, 1);
  assert_true(got->hangs[0].comm == want.hangs[0].comm && got->hangs[0].seq == want.hangs[0].seq);
  assert_int_equal(got->hangs[0].nstuck, want.hangs[0].nstuck);

  /* communicators: instances (distinct seq) and ranks, exact */
  assert_int_equal(agg.ncomms, 3);
  size_t ops = 0;
  for (size_t i = 0; i < agg.ncomms; i++) {
    const struct agg_comm *c = &agg.comms[i];
    ops += c->ops;
    assert_int_equal(c->ranks, c->comm == 0x100 ? RANKS : 4);
    assert_int_equal(c->instances, c->comm == 0x100 ? OPS - OPS / 4 : OPS / 4);
  }
  size_t total = 0;
  for (size_t i = 0; i < all->nfiles; i++) total += all->files[i].nops;
  assert_int_equal(ops, total);
  assert_int_equal(agg.counts.ops, total);

  /* rows: exact counts; percentiles within the histogram's error of the exact ones */
  for (size_t i = 0; i < agg.nrows; i++) {
    struct agg_row *r = &agg.rows[i];
    double *v = calloc(r->count, sizeof *v);
    size_t n = 0;
    for (size_t f = 0; f < all->nfiles; f++)
      for (size_t k = 0; k < all->files[f].nops; k++) {
        const struct cs_op_rec *o = &all->files[f].ops[k];
        if (strcmp(o->op_name, r->op_name) || o->comm_size != r->comm_size ||
            (o->bytes ? 63 - __builtin_clzll(o->bytes) : -1) != r->bucket)
          continue;
        v[n++] = o->dur_us;
      }
    assert_int_equal(n, r->count);
    assert_int_equal(r->timed, n);
    for (size_t a = 1; a < n; a++) /* sort */
      for (size_t b = a; b > 0 && v[b - 1] > v[b]; b--) {
        double t = v[b];
        v[b] = v[b - 1];
        v[b - 1] = t;
      }
    double p50 = v[(n + 1) / 2 - 1], p99 = v[(99 * n + 99) / 100 - 1];
    assert_true(fabs(report_agg_row_pct(r, 50) - p50) <= CS_HIST_REL_ERR * p50 * (1 + 1e-9));
    assert_true(fabs(report_agg_row_pct(r, 99) - p99) <= CS_HIST_REL_ERR * p99 * (1 + 1e-9));
    free(v);
  }

  /* the default pieces (1 MiB a file here): the header round leaves most of a piece unread,
   * which is no overlong line */
  struct report_agg big;
  struct cs_dumpset *s2 = report_agg_run(dir, NULL, NULL, 2, 0, &p, &big);
  assert_non_null(s2);
  assert_int_equal(s2->nerrors, 0);
  assert_int_equal(big.counts.ops, total);
  assert_int_equal(big.det.nstragglers, want.nstragglers);
  report_agg_free(&big);
  cs_dumpset_free(s2);

  cs_det_result_free(&want);
  report_agg_free(&agg);
  cs_dumpset_free(s);
  cs_dumpset_free(all);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static long file_size(const char *p) {
  FILE *f = fopen(p, "r");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}
static size_t count_in(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = 0, len = strlen(needle);
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0)
    for (char *p = line; (p = strstr(p, needle)); p += len) n++;
  free(line);
  fclose(f);
  return n;
}

/* trace: --ranks, --comm with a seq range, the size cap refusing a selection, and the
 * window picked for an unselected set over the cap */
static void trace_selection(void **state) {
  (void)state;
  char dir[] = "/tmp/collscope-trsel-XXXXXX";
  assert_non_null(mkdtemp(dir));
  write_set(dir);
  char out[600];
  snprintf(out, sizeof out, "%s/t.json", dir);

  char *a1[] = {"trace", dir, "-o", out, "--ranks", "2,5-6", NULL};
  assert_int_equal(cmd_trace(6, a1), 0);
  assert_int_equal(count_in(out, "\"process_name\""), 3);
  assert_int_equal(count_in(out, "\"ph\":\"X\""), 3 * OPS - 1); /* rank 6 has one hang record instead */

  char *a2[] = {"trace", dir, "-o", out, "--comm", "0000000000000100", "--from", "seq:10", "--to", "seq:19", NULL};
  assert_int_equal(cmd_trace(10, a2), 0);
  assert_int_equal(count_in(out, "\"ph\":\"X\""), 10 * RANKS); /* 10 instances of the world comm */
  assert_int_equal(count_in(out, "\"comm\":\"0000000000000200\""), 0);

  /* all ranks, all records: ~9,600 records x 800 B > 1 MB */
  unlink(out);
  char *a3[] = {"trace", dir, "-o", out, "--ranks", "0-7", "--max-size", "1M", NULL};
  assert_int_equal(cmd_trace(8, a3), 1);
  assert_int_equal(file_size(out), -1); /* refused: nothing written */

  char *a4[] = {"trace", dir, "-o", out, "--max-size", "1M", NULL};
  assert_int_equal(cmd_trace(6, a4), 0);
  long n = file_size(out);
  assert_true(n > 512 * 1024 && n < 1024 * 1024 * 11 / 10); /* a window that fits, not a sliver */

  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(streamed_equals_loaded), cmocka_unit_test(trace_selection)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
