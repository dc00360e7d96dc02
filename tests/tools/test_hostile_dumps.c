/* tests/tools/test_hostile_dumps.c: the dump reader and `collscope report` / `trace` on
 * inputs that lie, collide or attack: a footer counting records the file lacks, a salvage
 * file next to its process's own dump, two jobs in one directory, NULL-communicator ops,
 * lines over the length cap, control characters in strings, a planted link at the trace's
 * temporary name, a file sized to blow up per-communicator state (peak memory of a child
 * process against the README's bound), `-j` on a set with salvage files, and a file that
 * grows while it is read. Fixtures are generated into a temp directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "dump/dumpfile.h"
#include "tools_fixture.h"

/* ---------- helpers ---------- */

static int setup(void **state) {
  *state = make_tmpdir();
  return 0;
}
static int teardown(void **state) {
  rm_tree(*state); /* frees it */
  return 0;
}

static json_t *hostile_report_json(const char *dir, const char *job, int want_rc) {
  char *argv[] = {"report", (char *)dir, "--json", job ? "--job" : NULL, (char *)job, NULL};
  char *out, *err;
  int rc = run_capture(cmd_report, argv, &out, &err);
  if (rc != want_rc) fprintf(stderr, "report rc %d, stderr: %s\n", rc, err);
  assert_int_equal(rc, want_rc);
  json_t *root = want_rc == 0 ? json_loads(out, 0, NULL) : NULL;
  if (want_rc == 0) assert_non_null(root);
  free(out);
  free(err);
  return root;
}

static long long jint(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  if (!json_is_integer(v)) fprintf(stderr, "no integer field %s\n", k);
  assert_true(json_is_integer(v));
  return json_integer_value(v);
}

static FILE *open_dump(const char *dir, const char *name) {
  char p[2048];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  return f;
}

static void put_header(FILE *f, const char *host, int rank, int pid, const char *job, bool salvaged) {
  fprintf(f,
          "{\"type\":\"header\",\"schema\":1,\"collscope\":\"0.1.0\",\"host\":\"%s\",\"pid\":%d,\"rank\":%d,"
          "\"local_rank\":0,\"world_size\":4,\"job\":\"%s\",\"device\":0,\"pci_bus_id\":\"\",\"nccl_version\":22809,"
          "\"cuda_driver_version\":13000,\"clock\":{\"realtime_ns\":1,\"monotonic_ns\":1},\"exe\":\"/bin/x\"%s}\n",
          host, pid, rank, job, salvaged ? ",\"salvaged_from\":\"/dev/shm/x\",\"lost\":0" : "");
}

static void put_op(FILE *f, unsigned long long comm, int comm_size, int comm_rank, int rank, long long seq,
                   const char *timing, int status) {
  bool timed = !strcmp(timing, "gpu_event");
  long long st = 1700000000000000000LL + (seq < 0 ? 0 : seq) * 1000000LL + rank * 1000LL;
  fprintf(f,
          "{\"type\":\"op\",\"comm\":\"%016llx\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,\"seq\":%lld,"
          "\"op\":\"AllReduce\",\"dtype\":\"float32\",\"count\":256,\"bytes\":1024,\"redop\":\"sum\",\"root\":-1,"
          "\"peer\":-1,\"stream\":\"0x1000\",\"group\":0,\"enqueue_ns\":%lld,\"start_ns\":%lld,\"end_ns\":%lld,"
          "\"dur_us\":%s,\"timing\":\"%s\",\"captured\":false,\"site\":\"train.c:42\",\"status\":%d}\n",
          comm, comm_size, comm_rank, rank, seq, st - 500 - (seq < 0 ? rank * 7 + status : 0), timed ? st : 0,
          timed ? st + 100000 : 0, timed ? "100.0" : "0", timing, status);
}

/* nodeA's dump of rank r (pid), its header and `nops` timed AllReduces on communicator 7
 * (comm_size ranks), left open for more records */
static FILE *start_rank_dump(const char *dir, int r, int pid, int comm_size, int nops) {
  char name[128];
  snprintf(name, sizeof name, "collscope-nodeA-r%d-p%d.jsonl", r, pid);
  FILE *f = open_dump(dir, name);
  put_header(f, "nodeA", r, pid, "j", false);
  for (int s = 0; s < nops; s++) put_op(f, 7, comm_size, r, r, s, "gpu_event", 0);
  return f;
}

static void put_footer(FILE *f, unsigned long long ops) {
  fprintf(f, "{\"type\":\"footer\",\"ops\":%llu,\"xfers\":0,\"drops\":0,\"timing_lost\":0,\"t_ns\":2}\n", ops);
}

static json_t *rank_entry(json_t *root, int rank) {
  json_t *ranks = json_object_get(root, "ranks"), *e;
  size_t i;
  json_array_foreach(ranks, i, e) if (jint(e, "rank") == rank) return e;
  fail_msg("rank %d not in the report", rank);
  return NULL;
}

/* ---------- footer counts vs records read ---------- */

/* A rank whose footer counts 1366 ops but whose file holds 100 well-formed ones (plus one
 * merged partial line, as a full disk leaves it) is reported with 1266 lost, never clean. */
static void test_footer_lost(void **state) {
  const char *dir = *state;
  FILE *f = open_dump(dir, "collscope-nodeA-r0-p300.jsonl");
  put_header(f, "nodeA", 0, 300, "j", false);
  for (int s = 0; s < 100; s++) put_op(f, 7, 2, 0, 0, s, "gpu_event", 0);
  fputs("{\"type\":\"op\",\"comm\":\"0000000000000007\",\"comm_size\":2,\"co{\"type\":\"op\"\n", f);
  put_footer(f, 1366);
  fclose(f);
  f = open_dump(dir, "collscope-nodeA-r1-p301.jsonl");
  put_header(f, "nodeA", 1, 301, "j", false);
  for (int s = 0; s < 100; s++) put_op(f, 7, 2, 1, 1, s, "gpu_event", 0);
  put_footer(f, 100);
  fclose(f);

  json_t *root = hostile_report_json(dir, NULL, 0);
  json_t *r0 = rank_entry(root, 0), *r1 = rank_entry(root, 1);
  assert_int_equal(jint(r0, "lost"), 1266);
  assert_false(json_is_true(json_object_get(r0, "clean_exit")));
  assert_true(json_is_true(json_object_get(r0, "footer")));
  assert_int_equal(jint(r1, "lost"), 0);
  assert_true(json_is_true(json_object_get(r1, "clean_exit")));
  json_t *s = json_object_get(root, "summary");
  assert_int_equal(jint(s, "lost"), 1266);
  assert_int_equal(jint(s, "lost_files"), 1);
  assert_int_equal(jint(s, "malformed_lines"), 1);
  json_decref(root);

  char *argv[] = {"report", (char *)dir, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  assert_non_null(strstr(out, "1266  lost\n"));
  assert_non_null(strstr(out, "lost records (footer count > read):      1266 on 1 rank(s)"));
  free(out);
  free(err);
}

/* ---------- salvage next to the dump ---------- */

/* Ranks killed mid-job: the dump holds seq 0..59, the salvaged ring seq 40..99, both in one
 * directory (`collscope salvage -o DIR` into the dump directory). Each op counts once. */
static void write_salvage_set(const char *dir, int nranks, bool salvage) {
  for (int r = 0; r < nranks; r++) {
    FILE *f = start_rank_dump(dir, r, 400 + r, nranks, 60);
    put_op(f, 0, -1, -1, r, -1, "error", 4); /* a failed NULL-comm call, in both files */
    fclose(f);
    if (!salvage) continue;
    char name[128];
    snprintf(name, sizeof name, "collscope-nodeA-r%d-p%d.salvage.jsonl", r, 400 + r);
    f = open_dump(dir, name);
    put_header(f, "nodeA", r, 400 + r, "j", true);
    put_op(f, 0, -1, -1, r, -1, "error", 4);
    for (int s = 40; s < 100; s++) put_op(f, 7, nranks, r, r, s, "gpu_event", 0);
    fclose(f);
  }
}

static void test_salvage_dedup(void **state) {
  const char *dir = *state;
  write_salvage_set(dir, 2, true);
  json_t *root = hostile_report_json(dir, NULL, 0);
  json_t *s = json_object_get(root, "summary");
  assert_int_equal(jint(s, "files"), 2);
  assert_int_equal(jint(s, "ranks"), 2);
  assert_int_equal(jint(s, "ops"), 2 * 101);
  assert_int_equal(jint(s, "instances"), 100);
  assert_int_equal(jint(s, "salvage_merged"), 2 * 40);
  assert_int_equal(jint(s, "salvage_duplicates"), 2 * 21);
  assert_int_equal(json_array_size(json_object_get(root, "ranks")), 2);
  size_t i, rows = 0;
  json_t *row;
  json_array_foreach(json_object_get(root, "ops"), i, row) {
    rows++;
    if (jint(row, "comm_size") == 2)
      assert_int_equal(jint(row, "count"), 2 * 100); /* the timed AllReduces */
    else
      assert_int_equal(jint(row, "count"), 2); /* the failed NULL-comm calls, once each */
  }
  assert_int_equal(rows, 2);
  json_decref(root);

  /* the trace shows each op once as well */
  char tp[1024];
  snprintf(tp, sizeof tp, "%s/out.trace", dir);
  char *argv[] = {"trace", (char *)dir, "-o", tp, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_trace, argv, &out, &err), 0);
  assert_non_null(strstr(err, "(2 processes, 202 events"));
  free(out);
  free(err);
}

/* `report -j N` reads with N threads, also when salvage files make it load the set whole:
 * cs_pool_run is wrapped (-Wl,--wrap, tests/tools/meson.build) and every reading round's
 * thread count recorded */
void __real_cs_pool_run(unsigned jobs, size_t n, void (*fn)(void *ctx, size_t i, unsigned worker), void *ctx);
void __wrap_cs_pool_run(unsigned jobs, size_t n, void (*fn)(void *ctx, size_t i, unsigned worker), void *ctx);
static unsigned pool_jobs_min = ~0u, pool_jobs_max, pool_runs;
void __wrap_cs_pool_run(unsigned jobs, size_t n, void (*fn)(void *ctx, size_t i, unsigned worker), void *ctx) {
  if (jobs < pool_jobs_min) pool_jobs_min = jobs;
  if (jobs > pool_jobs_max) pool_jobs_max = jobs;
  pool_runs++;
  __real_cs_pool_run(jobs, n, fn, ctx);
}
static void report_pools(const char *dir, const char *jobs, unsigned want) {
  char *argv[] = {"report", (char *)dir, "--json", "-j", (char *)jobs, NULL};
  char *out, *err;
  pool_jobs_min = ~0u, pool_jobs_max = pool_runs = 0;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  assert_non_null(strstr(out, "\"salvage_merged\": 160")); /* the whole load ran */
  free(out);
  free(err);
  fprintf(stderr, "-j %s: %u reading rounds, %u-%u threads\n", jobs, pool_runs, pool_jobs_min, pool_jobs_max);
  assert_true(pool_runs >= 2); /* the stream's header round, then the whole load */
  assert_int_equal(pool_jobs_min, want);
  assert_int_equal(pool_jobs_max, want);
}
static void test_salvage_reading_threads(void **state) {
  const char *dir = *state;
  write_salvage_set(dir, 4, true);
  report_pools(dir, "1", 1);
  report_pools(dir, "3", 3);
}

/* ---------- a file that grows while it is read ---------- */

/* The read pieces are sized by the largest file at discovery (here ~1 KiB, so 4 KiB pieces);
 * a live job's file that grew since is still read whole, lines cut at every piece boundary. */
struct grow_ctx {
  const char *dir;
  size_t ops[2];
  long long last_seq[2];
  bool ordered;
};
static void grow_begin(void *ctx, size_t nfiles) {
  struct grow_ctx *g = ctx;
  assert_int_equal(nfiles, 2);
  char p[2048];
  snprintf(p, sizeof p, "%s/collscope-nodeA-r0-p400.jsonl", g->dir);
  FILE *f = fopen(p, "a");
  assert_non_null(f);
  for (int s = 2; s < 3000; s++) put_op(f, 7, 2, 0, 0, s, "gpu_event", 0); /* ~1.5 MB */
  fclose(f);
}
static void grow_op(void *ctx, unsigned worker, size_t file, const struct cs_dumpfile *f, const struct cs_op_rec *r) {
  (void)worker;
  (void)f;
  struct grow_ctx *g = ctx;
  assert_true(file < 2);
  if (r->seq != g->last_seq[file] + 1) g->ordered = false;
  g->last_seq[file] = r->seq;
  g->ops[file]++;
}
static void test_file_grows_while_streamed(void **state) {
  const char *dir = *state;
  for (int r = 0; r < 2; r++) fclose(start_rank_dump(dir, r, 400 + r, 2, 2));
  struct grow_ctx g = {.dir = dir, .last_seq = {-1, -1}, .ordered = true};
  struct cs_stream_ops ops = {.ctx = &g, .jobs = 1, .begin = grow_begin, .op = grow_op};
  struct cs_dumpset *set = cs_dumpset_stream(dir, NULL, &ops);
  assert_false(set->fatal);
  assert_false(set->whole);
  for (size_t i = 0; i < set->nerrors; i++) fprintf(stderr, "reader: %s\n", set->errors[i]);
  assert_int_equal(set->nerrors, 0);
  fprintf(stderr, "grown file: %zu ops read (of 3000), its peer %zu (of 2)\n", g.ops[0], g.ops[1]);
  assert_int_equal(g.ops[0], 3000);
  assert_int_equal(g.ops[1], 2);
  assert_true(g.ordered);
  cs_dumpset_free(set);
}

/* ---------- one job per report ---------- */

static void write_two_jobs(const char *dir) {
  for (int j = 0; j < 2; j++)
    for (int r = 0; r < 4; r++) {
      char name[128];
      int pid = 500 + r + 10 * j;
      snprintf(name, sizeof name, "collscope-nodeA-r%d-p%d.jsonl", r, pid);
      FILE *f = open_dump(dir, name);
      put_header(f, "nodeA", r, pid, j ? "jobB" : "jobA", false);
      for (int s = 0; s < 10 + j; s++) put_op(f, 7 + (unsigned)j, 4, r, r, s, "gpu_event", 0);
      put_footer(f, 10 + (unsigned)j);
      fclose(f);
    }
}

static void test_two_jobs_refused(void **state) {
  const char *dir = *state;
  write_two_jobs(dir);
  char *out, *err;
  char *argv[] = {"report", (char *)dir, NULL};
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 1);
  assert_string_equal(out, "");
  assert_non_null(strstr(err, "dumps of 2 jobs, not mixed: jobA (4 files), jobB (4 files); pick one with --job ID"));
  free(out);
  free(err);
  char *targv[] = {"trace", (char *)dir, NULL};
  assert_int_equal(run_capture(cmd_trace, targv, &out, &err), 1);
  assert_non_null(strstr(err, "jobA (4 files), jobB (4 files)"));
  free(out);
  free(err);

  json_t *root = hostile_report_json(dir, "jobB", 0);
  json_t *s = json_object_get(root, "summary");
  assert_int_equal(jint(s, "files"), 4);
  assert_int_equal(jint(s, "ranks"), 4);
  assert_int_equal(jint(s, "ops"), 4 * 11);
  assert_int_equal(jint(s, "other_job_files"), 4);
  assert_string_equal(json_string_value(json_object_get(s, "job")), "jobB");
  json_decref(root);
  json_decref(hostile_report_json(dir, "jobC", 1)); /* no such job */

  char *targv2[] = {"trace", (char *)dir, "--job", "jobA", NULL};
  assert_int_equal(run_capture(cmd_trace, targv2, &out, &err), 0);
  json_t *t = json_loads(out, 0, NULL);
  assert_non_null(t);
  size_t n = 0, i;
  json_t *e;
  json_array_foreach(json_object_get(t, "traceEvents"), i, e) n += !strcmp(json_string_value(json_object_get(e, "ph")), "X");
  assert_int_equal(n, 4 * 10);
  json_decref(t);
  free(out);
  free(err);
}

/* ---------- every documented record kind ---------- */

/* Failed calls on a NULL communicator (comm_size -1, seq -1) are op records like any other. */
static void test_null_comm_ops(void **state) {
  const char *dir = *state;
  for (int r = 0; r < 2; r++) {
    FILE *f = start_rank_dump(dir, r, 200 + r, 2, 40);
    for (int k = 0; k < 2 - r; k++) put_op(f, 0, -1, -1, r, -1, "error", 4 + k);
    put_footer(f, 42 - (unsigned)r);
    fclose(f);
  }
  char *argv[] = {"report", (char *)dir, "--json", NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  assert_string_equal(err, "");
  json_t *root = json_loads(out, 0, NULL);
  assert_non_null(root);
  json_t *s = json_object_get(root, "summary");
  assert_int_equal(jint(s, "ops"), 83);
  assert_int_equal(jint(s, "errors"), 3);
  assert_int_equal(jint(s, "malformed_lines"), 0);
  assert_int_equal(jint(s, "lost"), 0);
  json_decref(root);
  free(out);
  free(err);
}

/* ---------- line length cap ---------- */

static void test_long_line_skipped(void **state) {
  const char *dir = *state;
  FILE *f = open_dump(dir, "collscope-nodeA-r0-p100.jsonl");
  put_header(f, "nodeA", 0, 100, "j", false);
  put_op(f, 7, 1, 0, 0, 0, "gpu_event", 0);
  /* a well-formed op whose site makes the line one byte over the cap */
  const char *head = "{\"type\":\"op\",\"comm\":\"7\",\"comm_size\":1,\"comm_rank\":0,\"seq\":1,\"op\":\"AllReduce\","
                     "\"bytes\":8,\"timing\":\"host\",\"site\":\"";
  size_t pad = CS_DUMP_LINE_MAX + 1 - strlen(head) - 2;
  fputs(head, f);
  for (size_t i = 0; i < pad; i++) fputc('x', f);
  fputs("\"}\n", f);
  /* the same at exactly the cap is read */
  fputs(head, f);
  for (size_t i = 0; i < pad - 1; i++) fputc('y', f);
  fputs("\"}\n", f);
  put_op(f, 7, 1, 0, 0, 2, "gpu_event", 0);
  put_footer(f, 4);
  fclose(f);
  struct cs_dumpset *set = cs_dumpset_load(dir);
  assert_false(set->fatal);
  assert_int_equal(set->nfiles, 1);
  assert_int_equal(set->files[0].nops, 3);
  assert_int_equal(set->files[0].malformed_lines, 1);
  assert_int_equal(set->files[0].lost, 1);
  assert_int_equal(set->nerrors, 1);
  assert_non_null(strstr(set->errors[0], ":3: line longer than 65536 bytes, skipped"));
  cs_dumpset_free(set);
}

/* ---------- control characters ---------- */

static void test_control_chars_escaped(void **state) {
  const char *dir = *state;
  FILE *f = open_dump(dir, "collscope-evil-r0-p600.jsonl");
  put_header(f, "evil\\u001b]0;pwned\\u0007\\u001b[2J\\u009b", 0, 600, "j", false);
  put_op(f, 7, 1, 0, 0, 0, "gpu_event", 0);
  fputs("{\"type\":\"op\",\"comm\":\"7\",\"comm_size\":1,\"comm_rank\":0,\"seq\":1,\"op\":\"Bad\\u001b[31mOp\","
        "\"bytes\":8,\"timing\":\"host\"}\n",
        f);
  fputs("{\"type\":\x1b[2J\"op\"}\n", f); /* invalid JSON whose message quotes the escape */
  put_footer(f, 2);
  fclose(f);
  char *argv[] = {"report", (char *)dir, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  assert_null(strchr(out, '\x1b'));
  assert_null(strchr(out, '\a'));
  assert_null(strstr(out, "\xc2\x9b"));
  assert_null(strchr(err, '\x1b'));
  assert_non_null(strstr(out, "evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b"));
  assert_non_null(strstr(out, "Bad\\x1b[31mOp"));
  free(out);
  free(err);
}

/* ---------- outputs never follow a planted name ---------- */

static void test_output_planted_link(void **state) {
  const char *dir = *state;
  FILE *f = open_dump(dir, "collscope-nodeA-r0-p100.jsonl");
  put_header(f, "nodeA", 0, 100, "j", false);
  put_op(f, 7, 1, 0, 0, 0, "gpu_event", 0);
  put_footer(f, 1);
  fclose(f);
  char victim[1024], out_path[1024], tmp_path[1100];
  snprintf(victim, sizeof victim, "%s/victim", dir);
  snprintf(out_path, sizeof out_path, "%s/out.json", dir);
  f = fopen(victim, "w");
  assert_non_null(f);
  fputs("precious\n", f);
  fclose(f);
  for (int cmd = 0; cmd < 2; cmd++) {
    /* the names a writer might use for its temporary: FILE.tmp and FILE.tmp.N */
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", out_path);
    unlink(tmp_path);
    assert_int_equal(symlink(victim, tmp_path), 0);
    char *argv[] = {cmd ? "report" : "trace", (char *)dir, "-o", out_path, NULL};
    char *out, *err;
    assert_int_equal(run_capture(cmd ? cmd_report : cmd_trace, argv, &out, &err), 0);
    free(out);
    free(err);
    f = fopen(victim, "r");
    char buf[64] = {0};
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "precious\n");
    struct stat st;
    assert_int_equal(lstat(out_path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_true(st.st_size > 20);
    unlink(out_path);
  }
}

/* ---------- the detector on sparse, oversized communicators ---------- */

/* Four ranks hold comm_ranks 0, 2, 4, 6 of a communicator claiming 2^20 ranks; comm_rank 6
 * (global rank 3) arrives 3 ms late every time, so its GPU span is the shortest. The detector
 * numbers the ranks it sees, and the report gives the real comm_rank and size back. */
static void test_sparse_comm_straggler(void **state) {
  const char *dir = *state;
  for (int r = 0; r < 4; r++) {
    char name[128];
    snprintf(name, sizeof name, "collscope-nodeA-r%d-p%d.jsonl", r, 700 + r);
    FILE *f = open_dump(dir, name);
    put_header(f, "nodeA", r, 700 + r, "j", false);
    for (int s = 0; s < 60; s++) {
      long long t0 = 1700000000000000000LL + s * 100000000LL, st = t0 + (r == 3 ? 3000000 : r * 1000);
      long long en = t0 + 5000000 + (s % 3) * 1000;
      fprintf(f,
              "{\"type\":\"op\",\"comm\":\"00000000000000c5\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,"
              "\"seq\":%d,\"op\":\"AllReduce\",\"bytes\":1048576,\"enqueue_ns\":%lld,\"start_ns\":%lld,"
              "\"end_ns\":%lld,\"dur_us\":%.3f,\"timing\":\"gpu_event\"}\n",
              1 << 20, 2 * r, r, s, st - 100, st, en, (double)(en - st) / 1e3);
    }
    put_footer(f, 60);
    fclose(f);
  }
  json_t *root = hostile_report_json(dir, NULL, 0);
  json_t *st = json_object_get(root, "stragglers");
  assert_int_equal(json_array_size(st), 1);
  json_t *s0 = json_array_get(st, 0);
  assert_int_equal(jint(s0, "rank"), 3);
  assert_int_equal(jint(s0, "comm_rank"), 6);
  json_t *comms = json_object_get(root, "comms");
  assert_int_equal(jint(json_array_get(comms, 0), "size"), 1 << 20);
  assert_int_equal(jint(json_array_get(comms, 0), "ranks"), 4);
  json_decref(root);
}

/* ---------- memory bound ---------- */

/* Peak RSS (KiB) of a child that runs `collscope report DIR` with its output discarded. */
static long report_peak_kib(const char *dir) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int dn = open("/dev/null", O_WRONLY);
    dup2(dn, 1);
    dup2(dn, 2);
    alarm(60);
    char *argv[] = {"report", (char *)dir, NULL};
    _exit(cmd_report(2, argv));
  }
  int st;
  struct rusage ru;
  assert_int_equal(wait4(pid, &st, 0, &ru), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  return ru.ru_maxrss;
}

static long long dir_bytes(const char *dir) {
  long long n = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while ((e = readdir(d))) {
    char p[2048];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (e->d_name[0] != '.' && stat(p, &st) == 0 && S_ISREG(st.st_mode)) n += st.st_size;
  }
  closedir(d);
  return n;
}

/* docs/dump-format.md: peak memory <= 64 x input bytes + 4 KiB per
 * file + 16 MiB (one file here) over the command's own start-up, measured as the peak of a run on a one-op dump. The hostile input: 20 ops on 20
 * communicators claiming 2^20 ranks and ranks up to 2^30, hang records naming the same, a
 * link record naming peer 2^31-1, 50000 one-byte bad lines and a line 8 times the cap. */
static void test_memory_bound(void **state) {
  char small[1024], big[1024];
  snprintf(small, sizeof small, "%s/small", (char *)*state);
  snprintf(big, sizeof big, "%s/big", (char *)*state);
  assert_int_equal(mkdir(small, 0700), 0);
  assert_int_equal(mkdir(big, 0700), 0);
  FILE *f = open_dump(small, "collscope-nodeA-r0-p1.jsonl");
  put_header(f, "nodeA", 0, 1, "j", false);
  put_op(f, 7, 1, 0, 0, 0, "gpu_event", 0);
  put_footer(f, 1);
  fclose(f);

  f = open_dump(big, "collscope-nodeA-r2147483646-p1.jsonl");
  put_header(f, "nodeA", 2147483646, 1, "j", false);
  for (int c = 0; c < 20; c++) {
    put_op(f, 0xabc000 + (unsigned)c, 1 << 20, c == 0 ? 1 << 30 : 0, 0, 0, "gpu_event", 0);
    fprintf(f, "{\"type\":\"hang\",\"comm\":\"%016x\",\"comm_size\":%d,\"comm_rank\":%d,\"seq\":1,\"op\":\"AllReduce\"}\n",
            0xabc000 + c, 1 << 20, (1 << 20) - 1);
  }
  fputs("{\"type\":\"link\",\"dir\":\"send\",\"rank\":0,\"peer\":2147483647,\"conn\":\"1\",\"bytes\":1}\n", f);
  for (int i = 0; i < 50000; i++) fputs("x\n", f);
  fputc('[', f);
  for (int i = 0; i < 4 * CS_DUMP_LINE_MAX; i++) fputs("0,", f);
  fputs("0]\n", f);
  put_footer(f, 20);
  fclose(f);

  long base = report_peak_kib(small), peak = report_peak_kib(big);
  long long n = dir_bytes(big);
  long long bound = base + (64 * n) / 1024 + 16 * 1024;
  fprintf(stderr, "memory bound: input %lld bytes, peak %ld KiB (one-op dump %ld KiB), bound %lld KiB\n", n, peak,
          base, bound);
  assert_true(peak <= bound);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_footer_lost, setup, teardown),
      cmocka_unit_test_setup_teardown(test_salvage_dedup, setup, teardown),
      cmocka_unit_test_setup_teardown(test_salvage_reading_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_grows_while_streamed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_two_jobs_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_null_comm_ops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_long_line_skipped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_control_chars_escaped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_output_planted_link, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sparse_comm_straggler, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memory_bound, setup, teardown),
  };
  return cmocka_run_group_tests_name("tools-hostile", tests, NULL, NULL);
}
