/* tests/tools/tools_fixture.c: the fixture and helpers of tools_fixture.h. */
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
#include "dump/dumpfile.h"
#include "tools_fixture.h"

/* ---------- fixture ---------- */

const struct fx_op fx_ops[] = {
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
const size_t fx_nops = sizeof fx_ops / sizeof fx_ops[0];
/* timed records: CUDA events, NCCL profiler kernel stamps or the host clock */
bool fx_timed(const char *timing) {
  return !strcmp(timing, "gpu_event") || !strcmp(timing, "profiler") || !strcmp(timing, "host_span");
}

/* xfers: rank 0 a timed HtoD copy, rank 2 a host-timed DtoH copy. Rank 1 has 3 drops;
 * rank 3 has no footer (crashed). */
const char *host_of(int r) { return r < 2 ? "nodeA" : "nodeB"; }
int pid_of(int r) { return 1000 + r; }
unsigned long long stream_of(int r, int p2p) { return 0x7f0000001000ULL + r * 0x10 + (p2p ? 0x100 : 0); }
long long start_of(int r, int seq) { return T0 + seq * 1000000LL + r * 1000LL; }

void fx_path(char *buf, size_t n, const char *dir, int r) {
  snprintf(buf, n, "%s/collscope-%s-r%d-p%d.jsonl", dir, host_of(r), r, pid_of(r));
}

void write_op_line(FILE *f, const struct fx_op *o) {
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
void write_fixture(const char *dir, int schema) {
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

char *make_tmpdir(void) {
  const char *base = getenv("TMPDIR");
  char *d = NULL;
  assert_true(asprintf(&d, "%s/cstools-XXXXXX", base && *base ? base : "/tmp") > 0);
  assert_non_null(mkdtemp(d));
  return d;
}

/* Remove a directory tree without following links. */
static void rm_tree_at(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[2048];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      struct stat st;
      if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
        rm_tree_at(p);
      else
        unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

void rm_tree(char *dir) {
  rm_tree_at(dir);
  free(dir);
}

char *slurp(FILE *f) {
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

int run_capture(int (*fn)(int, char **), char **argv, char **out, char **err) {
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
char *squeeze(const char *s) {
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

json_t *report_json(const char *dir, const char *extra1, const char *extra2) {
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

int bucket_lo_of(unsigned long long b, unsigned long long *lo) {
  if (!b) {
    *lo = 0;
    return -1;
  }
  int k = 0;
  while ((b >> 1) >= (1ULL << k)) k++; /* largest k with 2^k <= b */
  *lo = 1ULL << k;
  return k;
}

int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Independent nearest-rank: the ceil(p/100 * n)-th smallest value (1-based). */
double nr_pct(double *v, size_t n, double p) {
  qsort(v, n, sizeof *v, cmp_d);
  size_t r = (size_t)ceil(p / 100.0 * (double)n - 1e-9);
  if (r < 1) r = 1;
  return v[r - 1];
}

double busbw_factor(const char *op, int n) {
  if (!strcmp(op, "AllReduce")) return 2.0 * (n - 1) / n;
  if (!strcmp(op, "AllGather") || !strcmp(op, "ReduceScatter") || !strcmp(op, "AlltoAll"))
    return (double)(n - 1) / n;
  return 1.0;
}

json_t *find_row(json_t *ops, const char *op, unsigned long long bucket_lo) {
  size_t i;
  json_t *row;
  json_array_foreach(ops, i, row) {
    if (!strcmp(json_string_value(json_object_get(row, "op")), op) &&
        (unsigned long long)json_integer_value(json_object_get(row, "bucket_lo")) == bucket_lo)
      return row;
  }
  return NULL;
}

double jnum(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  assert_non_null(v);
  assert_true(json_is_number(v));
  return json_number_value(v);
}

int setup_dir(void **state) {
  char *d = make_tmpdir();
  write_fixture(d, 1);
  *state = d;
  return 0;
}
int teardown_dir(void **state) {
  rm_tree(*state);
  return 0;
}

/* ---------- dumpfile ---------- */

const char *jstr(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : "";
}
