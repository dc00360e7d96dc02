/* tests/tools/test_tools.c: cmocka tests for the dump reader (tools/dumpfile.c) and the
 * `collscope report` / `collscope trace` subcommands (called in-process; stdout/stderr are
 * captured through temporary files).
 *
 * The fixture is a table of op records (fx_ops) written as a dump directory of 4 ranks on
 * 2 hosts. Expected report values are recomputed here from that table, independently of
 * tools/cmd_report.c, plus a few hand-checked constants (AllReduce 1 MiB, p50 100 us, 4 ranks:
 * algbw 10.48576 GB/s, busbw 15.72864 GB/s). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "dumpfile.h"

/* ---------- fixture ---------- */

#define NRANKS 4
#define COMM "a1b2c3d4e5f60718"
#define T0 1700000000000000000LL

struct fx_op {
  int rank, seq;
  const char *op, *dtype;
  long long count;
  unsigned long long bytes;
  double dur_us;
  const char *timing;
  int peer, status;
  int p2p_stream; /* 1: on the rank's second stream */
};

static const struct fx_op fx_ops[] = {
    /* seq 0, 1: AllReduce 1 MiB */
    {0, 0, "AllReduce", "float32", 262144, 1048576, 90, "gpu_event", -1, 0, 0},
    {1, 0, "AllReduce", "float32", 262144, 1048576, 100, "gpu_event", -1, 0, 0},
    {2, 0, "AllReduce", "float32", 262144, 1048576, 100, "gpu_event", -1, 0, 0},
    {3, 0, "AllReduce", "float32", 262144, 1048576, 95, "gpu_event", -1, 0, 0},
    {0, 1, "AllReduce", "float32", 262144, 1048576, 100, "gpu_event", -1, 0, 0},
    {1, 1, "AllReduce", "float32", 262144, 1048576, 120, "gpu_event", -1, 0, 0},
    {2, 1, "AllReduce", "float32", 262144, 1048576, 100, "gpu_event", -1, 0, 0},
    {3, 1, "AllReduce", "float32", 262144, 1048576, 300, "gpu_event", -1, 0, 0},
    /* seq 2: AllGather 65536 halfs per rank -> 524288 bytes (count x 2 x nranks) */
    {0, 2, "AllGather", "float16", 65536, 524288, 50, "gpu_event", -1, 0, 0},
    {1, 2, "AllGather", "float16", 65536, 524288, 60, "profiler", -1, 0, 0},
    {2, 2, "AllGather", "float16", 65536, 524288, 55, "gpu_event", -1, 0, 0},
    {3, 2, "AllGather", "float16", 65536, 524288, 52, "gpu_event", -1, 0, 0},
    /* seq 3: captured AllReduce 4 KiB (no timing) */
    {0, 3, "AllReduce", "float32", 1024, 4096, 0, "captured", -1, 0, 0},
    {1, 3, "AllReduce", "float32", 1024, 4096, 0, "captured", -1, 0, 0},
    {2, 3, "AllReduce", "float32", 1024, 4096, 0, "captured", -1, 0, 0},
    {3, 3, "AllReduce", "float32", 1024, 4096, 0, "captured", -1, 0, 0},
    /* seq 4: Send/Recv pairs 0->1, 2->3 on a second stream */
    {0, 4, "Send", "float32", 16384, 65536, 20, "gpu_event", 1, 0, 1},
    {1, 4, "Recv", "float32", 16384, 65536, 21, "gpu_event", 0, 0, 1},
    {2, 4, "Send", "float32", 16384, 65536, 22, "gpu_event", 3, 0, 1},
    {3, 4, "Recv", "float32", 16384, 65536, 23, "gpu_event", 2, 0, 1},
    /* seq 5: 1000 bytes, host timing on 0-2, failed call on 3 */
    {0, 5, "AllReduce", "float32", 250, 1000, 0, "host", -1, 0, 0},
    {1, 5, "AllReduce", "float32", 250, 1000, 0, "host", -1, 0, 0},
    {2, 5, "AllReduce", "float32", 250, 1000, 0, "host", -1, 0, 0},
    {3, 5, "AllReduce", "float32", 250, 1000, 0, "error", -1, 3, 0},
    /* seq 6: AllReduce 3000000 bytes (not a power of two) */
    {0, 6, "AllReduce", "float32", 750000, 3000000, 200, "gpu_event", -1, 0, 0},
    {1, 6, "AllReduce", "float32", 750000, 3000000, 210, "gpu_event", -1, 0, 0},
    {2, 6, "AllReduce", "float32", 750000, 3000000, 220, "gpu_event", -1, 0, 0},
    {3, 6, "AllReduce", "float32", 750000, 3000000, 230, "gpu_event", -1, 0, 0},
};
#define NFX (sizeof fx_ops / sizeof fx_ops[0])
/* timed records: CUDA events, NCCL profiler kernel stamps or the host clock */
static bool fx_timed(const char *timing) {
  return !strcmp(timing, "gpu_event") || !strcmp(timing, "profiler") || !strcmp(timing, "host_span");
}
#define NSEQ 7

/* xfers: rank 0 a timed HtoD copy, rank 2 a host-timed DtoH copy. Rank 1 has 3 drops;
 * rank 3 has no footer (crashed). */
static const char *host_of(int r) { return r < 2 ? "nodeA" : "nodeB"; }
static int pid_of(int r) { return 1000 + r; }
static unsigned long long stream_of(int r, int p2p) { return 0x7f0000001000ULL + r * 0x10 + (p2p ? 0x100 : 0); }
static long long start_of(int r, int seq) { return T0 + seq * 1000000LL + r * 1000LL; }

static void fx_path(char *buf, size_t n, const char *dir, int r) {
  snprintf(buf, n, "%s/collscope-%s-r%d-p%d.jsonl", dir, host_of(r), r, pid_of(r));
}

static void write_op_line(FILE *f, const struct fx_op *o) {
  bool timed = fx_timed(o->timing);
  long long enq = start_of(o->rank, o->seq) - 500;
  long long st = timed ? start_of(o->rank, o->seq) : 0;
  long long en = timed ? st + (long long)(o->dur_us * 1000) : 0;
  fprintf(f,
          "{\"type\":\"op\",\"comm\":\"%s\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,\"seq\":%d,"
          "\"op\":\"%s\",\"dtype\":\"%s\",\"count\":%lld,\"bytes\":%llu,\"redop\":%s,\"root\":-1,"
          "\"peer\":%d,\"stream\":\"0x%llx\",\"group\":%d,\"enqueue_ns\":%lld,\"start_ns\":%lld,"
          "\"end_ns\":%lld,\"dur_us\":%.3f,\"timing\":\"%s\",\"captured\":%s,\"site\":\"train.c:42\","
          "\"status\":%d}\n",
          COMM, NRANKS, o->rank, o->rank, o->seq, o->op, o->dtype, o->count, o->bytes,
          strcmp(o->op, "AllReduce") == 0 ? "\"sum\"" : "null", o->peer,
          stream_of(o->rank, o->p2p_stream), o->p2p_stream ? 1 : 0, enq, st, en, o->dur_us,
          o->timing, strcmp(o->timing, "captured") == 0 ? "true" : "false", o->status);
}

/* Writes the fixture into dir; schema is the header's schema version. */
static void write_fixture(const char *dir, int schema) {
  for (int r = 0; r < NRANKS; r++) {
    char p[512];
    fx_path(p, sizeof p, dir, r);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"type\":\"header\",\"schema\":%d,\"collscope\":\"0.1.0\",\"host\":\"%s\",\"pid\":%d,"
            "\"rank\":%d,\"local_rank\":%d,\"world_size\":4,\"job\":\"job42\",\"device\":%d,"
            "\"pci_bus_id\":\"0000:18:00.0\",\"nccl_version\":22703,\"cuda_driver_version\":13000,"
            "\"clock\":{\"realtime_ns\":%lld,\"monotonic_ns\":123456},\"exe\":\"/bin/train\"}\n",
            schema, host_of(r), pid_of(r), r, r % 2, r % 2, T0 - 1000000000LL);
    fprintf(f,
            "{\"type\":\"comm\",\"event\":\"init\",\"comm\":\"%s\",\"size\":4,\"rank\":%d,"
            "\"device\":%d,\"parent\":null,\"t_ns\":%lld}\n",
            COMM, r, r % 2, T0 - 5000000LL);
    for (size_t i = 0; i < NFX; i++)
      if (fx_ops[i].rank == r) write_op_line(f, &fx_ops[i]);
    if (r == 0)
      fprintf(f,
              "{\"type\":\"xfer\",\"op\":\"Memcpy\",\"api\":\"cudaMemcpyAsync\",\"kind\":\"HtoD\","
              "\"bytes\":4096,\"stream\":\"0x%llx\",\"async\":true,\"enqueue_ns\":%lld,"
              "\"start_ns\":%lld,\"end_ns\":%lld,\"dur_us\":5.0,\"timing\":\"gpu_event\","
              "\"site\":\"train.c:10\",\"status\":0}\n",
              stream_of(0, 0), T0 + 9000000LL, T0 + 9000100LL, T0 + 9005100LL);
    if (r == 2)
      fprintf(f,
              "{\"type\":\"xfer\",\"op\":\"Memcpy\",\"api\":\"cudaMemcpy\",\"kind\":\"DtoH\","
              "\"bytes\":8192,\"stream\":\"0x%llx\",\"async\":false,\"enqueue_ns\":%lld,"
              "\"start_ns\":0,\"end_ns\":0,\"dur_us\":0,\"timing\":\"host\","
              "\"site\":\"train.c:11\",\"status\":0}\n",
              stream_of(2, 0), T0 + 9000000LL);
    if (r == 1) fprintf(f, "{\"type\":\"drops\",\"count\":3,\"t_ns\":%lld}\n", T0 + 9500000LL);
    if (r != 3)
      fprintf(f,
              "{\"type\":\"footer\",\"ops\":7,\"xfers\":%d,\"drops\":%d,\"timing_lost\":%d,%s"
              "\"t_ns\":%lld}\n",
              r == 0 || r == 2, r == 1 ? 3 : 0, r == 0 ? 2 : 0,
              r == 0   ? "\"profiler\":\"trusted\",\"prof_probes\":64,\"prof_agreed\":64,"
              : r == 1 ? "\"profiler\":\"rejected\",\"prof_probes\":64,\"prof_agreed\":3,\"prof_rejected\":\"AllReduce\","
              : r == 2 ? "\"profiler\":\"a_later_standing\"," /* from a newer shim: counted as other */
                       : "",
              T0 + 10000000LL);
    fclose(f);
  }
}

/* ---------- helpers ---------- */

static char *make_tmpdir(void) {
  const char *base = getenv("TMPDIR");
  char *d = NULL;
  assert_true(asprintf(&d, "%s/cstools-XXXXXX", base && *base ? base : "/tmp") > 0);
  assert_non_null(mkdtemp(d));
  return d;
}

static void rm_tree(char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
  free(dir);
}

static char *slurp(FILE *f) {
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  assert_non_null(s);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  return s;
}

/* Run a subcommand with stdout/stderr captured. argv is NULL-terminated. */
/* Under ASan/UBSan, send their reports to the real stderr while a command's output is
 * captured (otherwise a sanitizer halt shows up only as "exit status 1"). */
extern void __sanitizer_set_report_fd(void *fd) __attribute__((weak));

static int run_capture(int (*fn)(int, char **), char **argv, char **out, char **err) {
  fflush(stdout);
  fflush(stderr);
  FILE *to = tmpfile(), *te = tmpfile();
  assert_non_null(to);
  assert_non_null(te);
  int so = dup(1), se = dup(2);
  if (__sanitizer_set_report_fd) __sanitizer_set_report_fd((void *)(intptr_t)se);
  dup2(fileno(to), 1);
  dup2(fileno(te), 2);
  int argc = 0;
  while (argv[argc]) argc++;
  int rc = fn(argc, argv);
  fflush(stdout);
  fflush(stderr);
  dup2(so, 1);
  dup2(se, 2);
  if (__sanitizer_set_report_fd) __sanitizer_set_report_fd((void *)(intptr_t)2);
  close(so);
  close(se);
  *out = slurp(to);
  *err = slurp(te);
  fclose(to);
  fclose(te);
  return rc;
}

/* Collapse runs of blanks so table rows can be matched independently of column widths. */
static char *squeeze(const char *s) {
  char *d = malloc(strlen(s) + 1), *p = d;
  assert_non_null(d);
  bool sp = false;
  for (; *s; s++) {
    if (*s == ' ' || *s == '\t') {
      sp = true;
      continue;
    }
    if (sp && p > d && p[-1] != '\n' && *s != '\n') *p++ = ' ';
    sp = false;
    *p++ = *s;
  }
  *p = 0;
  return d;
}

static json_t *report_json(const char *dir, const char *extra1, const char *extra2) {
  char *argv[] = {"report", (char *)dir, "--json", (char *)extra1, (char *)extra2, NULL};
  char *out, *err;
  int rc = run_capture(cmd_report, argv, &out, &err);
  if (rc != 0) fprintf(stderr, "report stderr: %s\n", err);
  assert_int_equal(rc, 0);
  json_error_t je;
  json_t *root = json_loads(out, 0, &je);
  if (!root) fprintf(stderr, "bad json (%s): %s\n", je.text, out);
  assert_non_null(root);
  free(out);
  free(err);
  return root;
}

static int bucket_lo_of(unsigned long long b, unsigned long long *lo) {
  if (!b) {
    *lo = 0;
    return -1;
  }
  int k = 0;
  while ((b >> 1) >= (1ULL << k)) k++; /* largest k with 2^k <= b */
  *lo = 1ULL << k;
  return k;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Independent nearest-rank: the ceil(p/100 * n)-th smallest value (1-based). */
static double nr_pct(double *v, size_t n, double p) {
  qsort(v, n, sizeof *v, cmp_d);
  size_t r = (size_t)ceil(p / 100.0 * (double)n - 1e-9);
  if (r < 1) r = 1;
  return v[r - 1];
}

static double busbw_factor(const char *op, int n) {
  if (!strcmp(op, "AllReduce")) return 2.0 * (n - 1) / n;
  if (!strcmp(op, "AllGather") || !strcmp(op, "ReduceScatter") || !strcmp(op, "AlltoAll"))
    return (double)(n - 1) / n;
  return 1.0;
}

static json_t *find_row(json_t *ops, const char *op, unsigned long long bucket_lo) {
  size_t i;
  json_t *row;
  json_array_foreach(ops, i, row) {
    if (!strcmp(json_string_value(json_object_get(row, "op")), op) &&
        (unsigned long long)json_integer_value(json_object_get(row, "bucket_lo")) == bucket_lo)
      return row;
  }
  return NULL;
}

static double jnum(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  assert_non_null(v);
  assert_true(json_is_number(v));
  return json_number_value(v);
}

static int setup_dir(void **state) {
  char *d = make_tmpdir();
  write_fixture(d, 1);
  *state = d;
  return 0;
}
static int teardown_dir(void **state) {
  rm_tree(*state);
  return 0;
}

/* ---------- dumpfile ---------- */

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

static void test_report_json(void **state) {
  json_t *root = report_json(*state, NULL, NULL);
  json_t *ops = json_object_get(root, "ops");
  assert_true(json_is_array(ops));

  /* Recompute every (op, bucket) row from the fixture table (all comm_size 4). */
  size_t nrows = 0;
  bool done[NFX] = {false};
  for (size_t i = 0; i < NFX; i++) {
    if (done[i]) continue;
    unsigned long long lo;
    int k = bucket_lo_of(fx_ops[i].bytes, &lo);
    double d[NFX];
    unsigned long long b[NFX];
    size_t n = 0, nd = 0;
    for (size_t j = i; j < NFX; j++) {
      unsigned long long lo2;
      if (strcmp(fx_ops[j].op, fx_ops[i].op) || bucket_lo_of(fx_ops[j].bytes, &lo2) != k) continue;
      done[j] = true;
      b[n++] = fx_ops[j].bytes;
      if (fx_timed(fx_ops[j].timing)) d[nd++] = fx_ops[j].dur_us;
    }
    nrows++;
    json_t *row = find_row(ops, fx_ops[i].op, lo);
    assert_non_null(row);
    assert_int_equal(jnum(row, "count"), n);
    assert_int_equal(jnum(row, "timed"), nd);
    assert_int_equal(jnum(row, "comm_size"), NRANKS);
    double bd[NFX];
    for (size_t m = 0; m < n; m++) bd[m] = (double)b[m];
    double bytes = nr_pct(bd, n, 50);
    assert_int_equal(jnum(row, "bytes"), (long long)bytes);
    if (!nd) {
      assert_true(json_is_null(json_object_get(row, "time_us")));
      assert_true(json_is_null(json_object_get(row, "busbw_gbs")));
      continue;
    }
    double max = 0;
    for (size_t m = 0; m < nd; m++) max = d[m] > max ? d[m] : max;
    double p99 = nr_pct(d, nd, 99), p50 = nr_pct(d, nd, 50);
    json_t *t = json_object_get(row, "time_us");
    assert_true(fabs(jnum(t, "p50") - p50) < 1e-6);
    assert_true(fabs(jnum(t, "p99") - p99) < 1e-6);
    assert_true(fabs(jnum(t, "max") - max) < 1e-6);
    double algbw = bytes / (p50 * 1e-6) / 1e9;
    assert_true(fabs(jnum(row, "algbw_gbs") - algbw) < 1e-6);
    assert_true(fabs(jnum(row, "busbw_gbs") - algbw * busbw_factor(fx_ops[i].op, NRANKS)) < 1e-6);
  }
  assert_int_equal(json_array_size(ops), nrows);

  /* Hand-checked constants. */
  json_t *ar = find_row(ops, "AllReduce", 1048576);
  assert_non_null(ar);
  assert_int_equal(jnum(ar, "count"), 8);
  assert_int_equal(jnum(ar, "bytes"), 1048576);
  assert_true(fabs(jnum(json_object_get(ar, "time_us"), "p50") - 100.0) < 1e-9);
  assert_true(fabs(jnum(json_object_get(ar, "time_us"), "p99") - 300.0) < 1e-9);
  assert_true(fabs(jnum(ar, "algbw_gbs") - 10.48576) < 1e-9);
  assert_true(fabs(jnum(ar, "busbw_gbs") - 15.72864) < 1e-9);
  json_t *big = find_row(ops, "AllReduce", 2097152);
  assert_non_null(big);
  assert_int_equal(jnum(big, "bytes"), 3000000);
  assert_int_equal(jnum(big, "bucket_hi"), 4194303);
  assert_true(fabs(jnum(json_object_get(big, "time_us"), "p50") - 210.0) < 1e-9);
  json_t *ag = find_row(ops, "AllGather", 524288);
  assert_true(fabs(jnum(ag, "busbw_gbs") - 524288.0 / 52e3 * 0.75) < 1e-9);
  /* Row order: schema.h op order (AllReduce first), then size. */
  assert_string_equal(json_string_value(json_object_get(json_array_get(ops, 0), "op")), "AllReduce");
  assert_int_equal(jnum(json_array_get(ops, 0), "bucket_lo"), 512);

  /* ranks */
  json_t *ranks = json_object_get(root, "ranks");
  assert_int_equal(json_array_size(ranks), NRANKS);
  for (int r = 0; r < NRANKS; r++) {
    json_t *o = json_array_get(ranks, (size_t)r);
    assert_int_equal(jnum(o, "rank"), r);
    assert_string_equal(json_string_value(json_object_get(o, "host")), host_of(r));
    int xf = r == 0 || r == 2;
    assert_int_equal(jnum(o, "records"), NSEQ + xf);
    assert_int_equal(jnum(o, "ops"), NSEQ);
    double ms = 0;
    unsigned long long bytes = 0;
    for (size_t i = 0; i < NFX; i++)
      if (fx_ops[i].rank == r) {
        bytes += fx_ops[i].bytes;
        if (fx_timed(fx_ops[i].timing)) ms += fx_ops[i].dur_us / 1000.0;
      }
    assert_true(fabs(jnum(o, "gpu_time_ms") - ms) < 1e-9);
    assert_int_equal(jnum(o, "bytes"), bytes);
    assert_int_equal(jnum(o, "drops"), r == 1 ? 3 : 0);
    assert_int_equal(json_is_true(json_object_get(o, "clean_exit")), r != 3);
  }
  assert_true(fabs(jnum(json_array_get(ranks, 0), "gpu_time_ms") - 0.46) < 1e-9);

  /* comms */
  json_t *comms = json_object_get(root, "comms");
  assert_int_equal(json_array_size(comms), 1);
  json_t *c = json_array_get(comms, 0);
  assert_string_equal(json_string_value(json_object_get(c, "comm")), COMM);
  assert_int_equal(jnum(c, "size"), NRANKS);
  assert_int_equal(jnum(c, "ranks"), NRANKS);
  assert_int_equal(jnum(c, "ops"), NFX);
  assert_int_equal(jnum(c, "instances"), NSEQ);

  /* summary / notes */
  json_t *s = json_object_get(root, "summary");
  assert_int_equal(jnum(s, "files"), 4);
  assert_int_equal(jnum(s, "ranks"), 4);
  assert_int_equal(jnum(s, "hosts"), 2);
  assert_int_equal(jnum(s, "ops"), NFX);
  assert_int_equal(jnum(s, "xfers"), 2);
  assert_int_equal(jnum(s, "captured"), 4);
  assert_int_equal(jnum(s, "host_timed"), 3);
  { /* timed ops by source: the fixture's timing strings */
    size_t ev = 0, pr = 0, hs = 0;
    for (size_t i = 0; i < NFX; i++) {
      ev += !strcmp(fx_ops[i].timing, "gpu_event");
      pr += !strcmp(fx_ops[i].timing, "profiler");
      hs += !strcmp(fx_ops[i].timing, "host_span");
    }
    assert_true(ev > 0 && pr == 1);
    assert_int_equal(jnum(s, "timed_gpu_event"), ev);
    assert_int_equal(jnum(s, "timed_profiler"), pr);
    assert_int_equal(jnum(s, "timed_host_span"), hs);
    assert_int_equal(jnum(s, "timed"), ev + pr + hs);
  }
  assert_int_equal(jnum(s, "errors"), 1);
  assert_int_equal(jnum(s, "drops"), 3);
  assert_int_equal(jnum(s, "truncated_lines"), 0);
  assert_int_equal(jnum(s, "files_without_footer"), 1);
  json_t *pr = json_object_get(s, "profiler_ranks");
  assert_int_equal(jnum(pr, "trusted"), 1);
  assert_int_equal(jnum(pr, "rejected"), 1);
  assert_int_equal(jnum(pr, "mixed") + jnum(pr, "probation") + jnum(pr, "not_loaded") + jnum(pr, "forced"), 0);
  assert_int_equal(jnum(pr, "other"), 1);
  assert_int_equal(jnum(s, "timing_lost"), 2);
  json_t *sec = json_object_get(root, "sections");
  assert_true(json_is_array(sec));
  assert_string_equal(json_string_value(json_array_get(sec, 0)), "summary");
  json_decref(root);
}

static void test_report_op_filter(void **state) {
  json_t *root = report_json(*state, "--op", "allgather");
  json_t *ops = json_object_get(root, "ops");
  assert_int_equal(json_array_size(ops), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(ops, 0), "op")), "AllGather");
  assert_int_equal(jnum(json_object_get(root, "summary"), "ops"), 4);
  assert_int_equal(jnum(json_array_get(json_object_get(root, "ranks"), 0), "records"), 1);
  json_decref(root);
}

static void test_report_text(void **state) {
  char *argv[] = {"report", *state, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  assert_string_equal(err, "");
  char *sq = squeeze(out);
  /* op nranks size bucket_lo count timed p50 p99 max algbw busbw */
  const char *rows[] = {
      "AllReduce 4 1048576 1048576 8 8 100.00 300.00 300.00 10.49 15.73",
      "AllReduce 4 3000000 2097152 4 4 210.00 230.00 230.00 14.29 21.43",
      "AllReduce 4 4096 4096 4 0 - - - - -",
      "AllReduce 4 1000 512 4 0 - - - - -",
      "AllGather 4 524288 524288 4 4 52.00 60.00 60.00 10.08 7.56",
      "Send 4 65536 65536 2 2 20.00 22.00 22.00 3.28 3.28",
      "Recv 4 65536 65536 2 2 21.00 23.00 23.00 3.12 3.12",
      /* rank host pid records ops xfers gpu_time(ms) bytes drops lost exit */
      "0 nodeA 1000 8 7 1 0.460 5692072 0 0 clean",
      "3 nodeB 1003 7 7 0 0.700 5692072 0 0 no-footer",
      "1 nodeA 1001 7 7 0 0.511 5692072 3 0 clean",
      /* comm size ranks ops instances bytes gpu_time(ms) */
      COMM " 4 4 28 7 22768288 2.168",
      "# captured ops (graph capture, no timing): 4",
      "# error ops (call failed): 1",
      "# dropped records: 3",
      "# truncated lines skipped: 0",
      "# files without footer (unclean exit): 1",
      "# ops whose GPU timing was lost (footer): 2",
      ("# NCCL profiler plugin, ranks: trusted 1, rejected 1, other 1 (rejecting ranks: 3 of 64 probes agreed with CUDA events; "
       "rejected: AllReduce)"),
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (!strstr(sq, rows[i])) fprintf(stderr, "missing row: %s\nin:\n%s\n", rows[i], out);
    assert_non_null(strstr(sq, rows[i]));
  }
  free(sq);
  free(out);
  free(err);
}

/* ---------- trace ---------- */

static const char *jstr(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : "";
}

static void test_trace(void **state) {
  char tp[600];
  snprintf(tp, sizeof tp, "%s/trace.json", (char *)*state);
  char *argv[] = {"trace", *state, "-o", tp, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_trace, argv, &out, &err), 0);
  assert_string_equal(out, "");
  free(out);
  free(err);

  json_error_t je;
  json_t *root = json_load_file(tp, 0, &je);
  if (!root) fprintf(stderr, "trace is not JSON: %s line %d\n", je.text, je.line);
  assert_non_null(root);
  assert_string_equal(jstr(root, "displayTimeUnit"), "ns");
  json_t *evs = json_object_get(root, "traceEvents");
  assert_true(json_is_array(evs));
  size_t nevents = json_array_size(evs);

  size_t want_x = 0, want_i = 0, want_flows = 0;
  for (size_t i = 0; i < NFX; i++) {
    if (fx_timed(fx_ops[i].timing))
      want_x++;
    else
      want_i++;
  }
  want_x += 1;          /* rank 0 timed HtoD */
  want_i += 1 + NRANKS; /* rank 2 host DtoH, comm init per rank */
  for (int s = 0; s < NSEQ; s++) {
    size_t t = 0;
    for (size_t i = 0; i < NFX; i++) t += fx_ops[i].seq == s && fx_timed(fx_ops[i].timing);
    if (t >= 2) want_flows += t - 1;
  }
  assert_int_equal(want_flows, 15);

  size_t nx = 0, ni = 0, ns = 0, nf = 0, pname = 0, tname = 0, psort = 0;
  size_t i;
  json_t *e;
  json_array_foreach(evs, i, e) {
    const char *ph = jstr(e, "ph"), *name = jstr(e, "name");
    assert_true(json_is_integer(json_object_get(e, "pid")));
    assert_true(json_is_integer(json_object_get(e, "tid")));
    if (!strcmp(ph, "X")) {
      nx++;
      json_t *a = json_object_get(e, "args");
      assert_true(json_is_object(a));
      if (!strcmp(name, "AllReduce") && json_integer_value(json_object_get(a, "seq")) == 1 &&
          json_integer_value(json_object_get(a, "rank")) == 3) {
        assert_int_equal(json_integer_value(json_object_get(e, "pid")), 3);
        assert_true(fabs(jnum(e, "ts") - (double)start_of(3, 1) / 1000.0) < 1.0);
        assert_true(fabs(jnum(e, "dur") - 300.0) < 1e-9);
        assert_string_equal(jstr(a, "comm"), COMM);
        assert_string_equal(jstr(a, "timing"), "gpu_event");
        assert_int_equal(json_integer_value(json_object_get(a, "bytes")), 1048576);
        assert_string_equal(jstr(e, "cat"), "coll");
      }
    } else if (!strcmp(ph, "i")) {
      ni++;
    } else if (!strcmp(ph, "s")) {
      ns++;
      assert_string_equal(jstr(e, "cat"), "coll");
    } else if (!strcmp(ph, "f")) {
      nf++;
      assert_string_equal(jstr(e, "cat"), "coll");
      assert_string_equal(jstr(e, "bp"), "e");
    } else if (!strcmp(ph, "M")) {
      json_t *a = json_object_get(e, "args");
      if (!strcmp(name, "process_name")) {
        pname++;
        int pid = (int)json_integer_value(json_object_get(e, "pid"));
        char want[64];
        snprintf(want, sizeof want, "rank %d (%s)", pid, host_of(pid));
        assert_string_equal(jstr(a, "name"), want);
      } else if (!strcmp(name, "thread_name")) {
        tname++;
        const char *tn = jstr(a, "name");
        assert_true(!strncmp(tn, "stream 0x", 9) || !strcmp(tn, "host"));
      } else if (!strcmp(name, "process_sort_index")) {
        psort++;
      }
    } else {
      fail_msg("unexpected ph %s", ph);
    }
  }
  assert_int_equal(nx, want_x);
  assert_int_equal(ni, want_i);
  assert_int_equal(ns, want_flows);
  assert_int_equal(nf, want_flows);
  assert_int_equal(pname, NRANKS);
  assert_int_equal(psort, NRANKS);
  /* streams: ranks 0-3 main stream + p2p stream, plus a "host" track each */
  assert_int_equal(tname, NRANKS * 2 + NRANKS);

  /* Every flow endpoint lies inside an X slice on its own pid/tid, and ids pair up. */
  json_array_foreach(evs, i, e) {
    const char *ph = jstr(e, "ph");
    if (strcmp(ph, "s") && strcmp(ph, "f")) continue;
    json_int_t pid = json_integer_value(json_object_get(e, "pid"));
    json_int_t tid = json_integer_value(json_object_get(e, "tid"));
    double ts = jnum(e, "ts");
    bool inside = false, paired = false;
    size_t k;
    json_t *x;
    json_array_foreach(evs, k, x) {
      const char *xph = jstr(x, "ph");
      if (!strcmp(xph, "X") && json_integer_value(json_object_get(x, "pid")) == pid &&
          json_integer_value(json_object_get(x, "tid")) == tid && jnum(x, "ts") <= ts &&
          ts <= jnum(x, "ts") + jnum(x, "dur"))
        inside = true;
      if (k != i && strcmp(xph, ph) && (!strcmp(xph, "s") || !strcmp(xph, "f")) &&
          json_integer_value(json_object_get(x, "id")) == json_integer_value(json_object_get(e, "id")))
        paired = true;
    }
    assert_true(inside);
    assert_true(paired);
  }
  json_decref(root);

  /* Standard output form parses too. */
  char *argv2[] = {"trace", *state, NULL};
  assert_int_equal(run_capture(cmd_trace, argv2, &out, &err), 0);
  json_t *r2 = json_loads(out, 0, &je);
  assert_non_null(r2);
  assert_int_equal(json_array_size(json_object_get(r2, "traceEvents")), nevents);
  json_decref(r2);
  free(out);
  free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_load_fixture, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_truncated_last_line, setup_dir, teardown_dir),
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
