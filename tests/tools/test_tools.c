/* tests/tools/test_tools.c: cmocka tests for the dump reader (tools/dump/dumpfile.c) and the
 * `collscope report` / `collscope trace` subcommands (called in-process; stdout/stderr are
 * captured through temporary files).
 *
 * The fixture is a table of op records (fx_ops) written as a dump directory of 4 ranks on
 * 2 hosts. Expected report values are recomputed here from that table, independently of
 * tools/cmd_report.c, plus a few hand-checked constants (AllReduce 1 MiB, p50 100 us, 4 ranks:
 * algbw 10.48576 GB/s, busbw 15.72864 GB/s). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "dump/dumpfile.h"
#include "tools_fixture.h"
static void test_load_fixture(void **state) {
  struct cs_dumpset *set = cs_dumpset_load(*state);
  cs_dumpset_print_errors(set, stderr);
  assert_false(set->fatal);
  assert_int_equal(set->nerrors, 0);
  assert_int_equal(set->nfiles, NRANKS);
  for (int r = 0; r < NRANKS; r++) {
    const struct cs_dumpfile *f = &set->files[r];
    assert_true(f->hdr.valid);
    assert_int_equal(f->hdr.rank, r);
    assert_string_equal(f->hdr.host, host_of(r));
    assert_int_equal(f->hdr.pid, pid_of(r));
    assert_int_equal(f->hdr.schema, 1);
    assert_int_equal(f->hdr.clock_monotonic_ns, 123456);
    assert_int_equal(f->nops, NSEQ);
    assert_int_equal(f->ncomms, 1);
    assert_int_equal(f->has_footer, r != 3);
    if (r == 0) assert_true(f->footer_profiler && !strcmp(f->footer_profiler, "trusted") && f->footer_prof_agreed == 64);
    if (r == 1) assert_true(f->footer_profiler && !strcmp(f->footer_profiler, "rejected") &&
                            f->footer_prof_probes == 64 && f->footer_prof_agreed == 3 &&
                            !strcmp(f->footer_prof_rejected, "AllReduce") && !strcmp(f->footer_prof_trusted, ""));
    if (r == 2) assert_true(f->footer_profiler && !strcmp(f->footer_profiler, "a_later_standing"));
    if (r == 3) assert_null(f->footer_profiler);
    assert_int_equal(cs_dumpfile_drops(f), r == 1 ? 3 : 0);
    assert_int_equal(f->truncated_lines + f->malformed_lines + f->unknown_types, 0);
  }
  const struct cs_op_rec *o = &set->files[1].ops[1];
  assert_string_equal(o->op_name, "AllReduce");
  assert_int_equal(o->seq, 1);
  assert_int_equal(o->comm, 0xa1b2c3d4e5f60718ULL);
  assert_int_equal(o->stream, stream_of(1, 0));
  assert_int_equal(o->timing, CSD_TIMING_GPU_EVENT);
  assert_true(fabs(o->dur_us - 120.0) < 1e-9);
  assert_int_equal(o->start_ns, start_of(1, 1));
  assert_string_equal(o->redop, "sum");
  assert_int_equal(set->files[0].nxfers, 1);
  assert_string_equal(set->files[0].xfers[0].kind, "HtoD");

  struct cs_instances in;
  assert_int_equal(cs_group_instances(set, &in), 0);
  assert_int_equal(in.n, NSEQ);
  for (size_t i = 0; i < in.n; i++) {
    assert_int_equal(in.v[i].seq, (int64_t)i);
    assert_int_equal(in.v[i].n, NRANKS);
    assert_int_equal(in.v[i].comm_size, NRANKS);
    for (size_t k = 0; k < in.v[i].n; k++) assert_int_equal(in.v[i].ops[k]->comm_rank, (int)k);
  }
  assert_true(in.v[4].mixed_ops); /* Send/Recv */
  assert_false(in.v[0].mixed_ops);
  cs_instances_free(&in);
  cs_dumpset_free(set);
}

/* -o naming a FIFO (or a device such as /dev/null): written where it is, not replaced by a
 * regular file through the temporary-and-rename that protects regular outputs */
static void test_output_to_fifo(void **state) {
  char fifo[512];
  snprintf(fifo, sizeof fifo, "%s/out.fifo", (const char *)*state);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* the reader: count what arrives */
    FILE *f = fopen(fifo, "r");
    size_t n = 0;
    int c;
    while (f && (c = fgetc(f)) != EOF) n++;
    _exit(n > 100 ? 0 : 1);
  }
  char *argv[] = {"report", *state, "-o", fifo, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  struct stat st;
  assert_int_equal(lstat(fifo, &st), 0);
  bool still_fifo = S_ISFIFO(st.st_mode);
  if (!still_fifo) kill(pid, SIGKILL); /* replaced: the reader waits for a writer forever */
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(still_fifo);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* the report came through the FIFO */
  free(out);
  free(err);
}

static void test_truncated_last_line(void **state) {
  char p[512];
  fx_path(p, sizeof p, *state, 3); /* rank 3: no footer, last line is op seq 6 */
  FILE *f = fopen(p, "r+");
  assert_non_null(f);
  char *s = slurp(f);
  fclose(f);
  size_t n = strlen(s);
  assert_true(n > 2 && s[n - 1] == '\n');
  char *last = s + n - 2;
  while (last > s && last[-1] != '\n') last--;
  size_t cut = (size_t)(last - s) + (n - (size_t)(last - s)) / 2; /* mid last line */
  assert_int_equal(truncate(p, (off_t)cut), 0);
  free(s);

  struct cs_dumpset *set = cs_dumpset_load(*state);
  assert_false(set->fatal);
  assert_int_equal(set->nerrors, 0);
  assert_int_equal(set->files[3].truncated_lines, 1);
  assert_int_equal(set->files[3].malformed_lines, 0);
  assert_int_equal(set->files[3].nops, NSEQ - 1); /* everything up to the cut line */
  assert_int_equal(set->files[3].ops[NSEQ - 2].seq, NSEQ - 2);
  cs_dumpset_free(set);

  char *argv[] = {"report", *state, "--json", NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  assert_string_equal(err, "");
  json_t *root = json_loads(out, 0, NULL);
  assert_non_null(root);
  json_t *sum = json_object_get(root, "summary");
  assert_int_equal(jnum(sum, "truncated_lines"), 1);
  assert_int_equal(jnum(sum, "ops"), NFX - 1);
  json_decref(root);
  free(out);
  free(err);
}

static void test_malformed_lines(void **state) {
  char p[512];
  fx_path(p, sizeof p, *state, 1);
  FILE *f = fopen(p, "r");
  assert_non_null(f);
  char *s = slurp(f);
  fclose(f);
  /* Insert after line 3: a cut JSON line (line 4), an op with a string seq (line 5), an
   * unknown record type (line 6, skipped silently) and a JSON array (line 7). */
  char *l3 = s;
  for (int i = 0; i < 3; i++) l3 = strchr(l3, '\n') + 1;
  f = fopen(p, "w");
  fwrite(s, 1, (size_t)(l3 - s), f);
  fputs("{\"type\":\"op\",\"comm\":\n", f);
  fputs("{\"type\":\"op\",\"comm\":\"" COMM "\",\"comm_size\":4,\"comm_rank\":1,\"seq\":\"x\","
        "\"op\":\"AllReduce\",\"bytes\":8,\"timing\":\"gpu_event\"}\n",
        f);
  fputs("{\"type\":\"future_record\",\"x\":1}\n", f);
  fputs("[1,2]\n", f);
  fputs(l3, f);
  fclose(f);
  free(s);

  struct cs_dumpset *set = cs_dumpset_load(*state);
  assert_false(set->fatal);
  assert_int_equal(set->nerrors, 3);
  char want[600];
  const char *name = strrchr(p, '/') + 1;
  snprintf(want, sizeof want, "%s:4: invalid JSON", name);
  assert_non_null(strstr(set->errors[0], want));
  snprintf(want, sizeof want, "%s:5: op record: field \"seq\" is not an integer", name);
  assert_non_null(strstr(set->errors[1], want));
  snprintf(want, sizeof want, "%s:7: line is an array", name);
  assert_non_null(strstr(set->errors[2], want));
  assert_int_equal(set->files[1].malformed_lines, 3);
  assert_int_equal(set->files[1].unknown_types, 1);
  assert_int_equal(set->files[1].nops, NSEQ); /* nothing else lost */
  assert_true(set->files[1].has_footer);
  assert_int_equal(set->files[1].ops[0].line, 3);
  assert_int_equal(set->files[1].ops[1].line, 8);
  cs_dumpset_free(set);

  char *argv[] = {"report", *state, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  snprintf(want, sizeof want, "%s:4: invalid JSON", name);
  assert_non_null(strstr(err, want));
  char *sq = squeeze(out);
  assert_non_null(strstr(sq, "# malformed lines skipped: 3"));
  assert_non_null(strstr(sq, "# unknown record types skipped: 1"));
  free(sq);
  free(out);
  free(err);
}

static void test_schema_too_new(void **state) {
  char *d = make_tmpdir();
  write_fixture(d, 2);
  struct cs_dumpset *set = cs_dumpset_load(d);
  assert_true(set->fatal);
  cs_dumpset_free(set);
  char *argv[] = {"report", d, "--json", NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 1);
  assert_string_equal(out, "");
  assert_non_null(strstr(err, "schema version 2 is not supported"));
  assert_non_null(strstr(err, ":1:"));
  free(out);
  free(err);
  char *targv[] = {"trace", d, NULL};
  assert_int_equal(run_capture(cmd_trace, targv, &out, &err), 1);
  free(out);
  free(err);
  rm_tree(d);
  (void)state;
}

static void test_missing_header_uses_name(void **state) {
  char p[512];
  fx_path(p, sizeof p, *state, 2);
  FILE *f = fopen(p, "r");
  char *s = slurp(f);
  fclose(f);
  f = fopen(p, "w");
  fputs(strchr(s, '\n') + 1, f); /* drop the header line */
  fclose(f);
  free(s);
  struct cs_dumpset *set = cs_dumpset_load(*state);
  assert_false(set->fatal);
  assert_int_equal(set->nerrors, 1);
  assert_non_null(strstr(set->errors[0], ":1: first line is a \"comm\" record, not the header"));
  const struct cs_dumpfile *fl = &set->files[2];
  assert_false(fl->hdr.valid);
  assert_int_equal(fl->hdr.rank, 2);
  assert_string_equal(fl->hdr.host, "nodeB");
  assert_int_equal(fl->hdr.pid, pid_of(2));
  assert_int_equal(fl->nops, NSEQ);
  assert_int_equal(fl->ncomms, 1);
  cs_dumpset_free(set);
}

/* What the real writer also produces: seq -1 (a call that failed before it was numbered)
 * and a name with an attempt suffix (collscope-H-rR-pP.N.jsonl). */
static void test_writer_quirks(void **state) {
  char p[512], q[512];
  fx_path(p, sizeof p, *state, 2);
  FILE *f = fopen(p, "a");
  assert_non_null(f);
  struct fx_op bad = {2, -1, "AllReduce", "float32", 250, 1000, 0, "error", -1, 5, 0};
  write_op_line(f, &bad);
  fclose(f);
  fx_path(p, sizeof p, *state, 3);
  snprintf(q, sizeof q, "%s/collscope-nodeB-r3-p1003.1.jsonl", (char *)*state);
  f = fopen(p, "r");
  char *s = slurp(f);
  fclose(f);
  unlink(p);
  f = fopen(q, "w");
  fputs(strchr(s, '\n') + 1, f); /* no header: identity from the name */
  fclose(f);
  free(s);

  struct cs_dumpset *set = cs_dumpset_load(*state);
  assert_false(set->fatal);
  assert_int_equal(set->nerrors, 1); /* the missing header */
  assert_int_equal(set->files[3].hdr.rank, 3);
  assert_int_equal(set->files[3].hdr.pid, 1003);
  assert_string_equal(set->files[3].hdr.host, "nodeB");
  assert_int_equal(set->files[2].nops, NSEQ + 1);
  struct cs_instances in;
  cs_group_instances(set, &in);
  assert_int_equal(in.n, NSEQ);
  for (size_t i = 0; i < in.n; i++) assert_int_equal(in.v[i].n, NRANKS);
  cs_instances_free(&in);
  cs_dumpset_free(set);

  json_t *root = report_json(*state, NULL, NULL);
  json_t *sum = json_object_get(root, "summary");
  assert_int_equal(jnum(sum, "ops"), NFX + 1);
  assert_int_equal(jnum(sum, "errors"), 2);
  assert_int_equal(jnum(sum, "instances"), NSEQ);
  assert_int_equal(jnum(json_array_get(json_object_get(root, "comms"), 0), "instances"), NSEQ);
  assert_int_equal(jnum(find_row(json_object_get(root, "ops"), "AllReduce", 512), "count"), 5);
  json_decref(root);
}

static void test_empty_and_missing_dir(void **state) {
  char *d = make_tmpdir();
  char *argv[] = {"report", d, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 1);
  assert_non_null(strstr(err, "no dump files"));
  free(out);
  free(err);
  char *argv2[] = {"report", "/nonexistent/collscope-dir", NULL};
  assert_int_equal(run_capture(cmd_report, argv2, &out, &err), 1);
  free(out);
  free(err);
  char *argv3[] = {"report", NULL};
  assert_int_equal(run_capture(cmd_report, argv3, &out, &err), 2);
  assert_non_null(strstr(err, "usage: collscope report"));
  free(out);
  free(err);
  char *argv4[] = {"report", *state, "--op", "NoSuchOp", NULL};
  assert_int_equal(run_capture(cmd_report, argv4, &out, &err), 2);
  assert_non_null(strstr(err, "unknown op"));
  free(out);
  free(err);
  char *argv5[] = {"trace", *state, "--bogus", NULL};
  assert_int_equal(run_capture(cmd_trace, argv5, &out, &err), 2);
  free(out);
  free(err);
  rm_tree(d);
}

/* ---------- report ---------- */

/* test_tools_report.c */
void test_report_json(void **state);
void test_report_op_filter(void **state);
void test_report_text(void **state);
void test_trace(void **state);

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_load_fixture, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_truncated_last_line, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_output_to_fifo, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_malformed_lines, setup_dir, teardown_dir),
      cmocka_unit_test(test_schema_too_new),
      cmocka_unit_test_setup_teardown(test_missing_header_uses_name, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_writer_quirks, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_empty_and_missing_dir, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_report_json, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_report_op_filter, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_report_text, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_trace, setup_dir, teardown_dir),
  };
  return cmocka_run_group_tests_name("tools", tests, NULL, NULL);
}
