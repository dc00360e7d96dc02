/* tests/stats/test_dump.c: the JSONL dump writer (stats/dump_writer.c): every record
 * type becomes one parseable line with the documented fields, strings are escaped,
 * times and bytes are exact, the header comes first, and the file is 0600. Write errors
 * (injected through cs_dump_io): the file keeps only whole lines, every record that could
 * not be written is counted as dropped, writing resumes, and a lost header is rewritten. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>
#include "shim/cs_internal.h"
#include "stats/dump_writer.h"

#define MAX_LINES 32
static json_t *lines[MAX_LINES];
static int nlines;

static void read_back(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char buf[8192];
  nlines = 0;
  while (fgets(buf, sizeof(buf), f) && nlines < MAX_LINES) {
    json_error_t err;
    lines[nlines] = json_loads(buf, 0, &err);
    if (!lines[nlines]) fail_msg("line %d not JSON: %s: %s", nlines + 1, err.text, buf);
    nlines++;
  }
  fclose(f);
}

static void records_roundtrip(void **state) {
  (void)state;
  char dir[] = "/tmp/cs-dump-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_HOSTNAME", "node-1", 1);
  setenv("RANK", "5", 1);
  cs_config_load();
  /* config.c keeps the host name to [A-Za-z0-9._-]; the writer still escapes whatever it is
   * given: every kind of escape, a plain run between them, and one as the last character */
  snprintf(cs_cfg.host, sizeof cs_cfg.host, "%s", "node\"1\\x\001\tplain run\037\"");
  assert_true(cs_dump_open());

  struct cs_record r;
  memset(&r, 0, sizeof(r));
  r.type = CS_REC_COMM;
  r.event = CS_COMM_SPLIT;
  r.comm_id = 0xabcdef0123456789ULL;
  r.parent_id = 1;
  r.comm_size = 4;
  r.comm_rank = 2;
  r.device = 3;
  r.enqueue_ns = 1700000000123456789LL;
  cs_dump_record(&r);

  memset(&r, 0, sizeof(r));
  r.type = CS_REC_OP;
  r.op = CS_OP_AllGather;
  r.dtype = 9;
  r.redop = -1;
  r.root = -1;
  r.peer = -1;
  r.comm_id = 0xabcdef0123456789ULL;
  r.comm_size = 4;
  r.comm_rank = 2;
  r.seq = 41;
  r.count = 1000;
  r.bytes = cs_op_bytes(CS_OP_AllGather, 1000, 2, 4);
  r.group = 7;
  r.stream = 0x7f00dead;
  r.enqueue_ns = 1700000000000000000LL;
  r.start_ns = 1700000000000001500LL;
  r.end_ns = 1700000000000124956LL;
  r.timing = CS_TIMING_GPU_EVENT;
  r.site = (uint64_t)(uintptr_t)&records_roundtrip;
  cs_dump_record(&r);

  r.timing = CS_TIMING_CAPTURED;
  r.captured = 1;
  r.op = CS_OP_Recv;
  r.peer = 3;
  cs_dump_record(&r);

  /* decimal formatting at every digit-count boundary (seq) */
  static const uint64_t seqs[] = {0, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, 99999, 100000, 1234567890123456789ULL,
                                  9223372036854775807ULL};
  enum { NSEQ = sizeof seqs / sizeof seqs[0] };
  for (int i = 0; i < NSEQ; i++) {
    r.seq = seqs[i];
    cs_dump_record(&r);
  }

  memset(&r, 0, sizeof(r));
  r.type = CS_REC_XFER;
  r.op = CS_OP_Memcpy;
  r.event = CS_XFER_DTOH;
  r.bytes = 4096;
  r.async = 1;
  r.timing = CS_TIMING_HOST;
  r.status = 0;
  cs_dump_record(&r);
  cs_dump_drops(3);
  cs_dump_footer();
  cs_dump_close();

  struct stat st;
  assert_int_equal(stat(cs_dump_path(), &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  read_back(cs_dump_path());
  assert_int_equal(nlines, 7 + NSEQ);
  assert_string_equal(json_string_value(json_object_get(lines[0], "type")), "header");
  assert_string_equal(json_string_value(json_object_get(lines[0], "host")), "node\"1\\x\001\tplain run\037\"");
  assert_int_equal(json_integer_value(json_object_get(lines[0], "rank")), 5);

  json_t *c = lines[1];
  assert_string_equal(json_string_value(json_object_get(c, "event")), "split");
  assert_string_equal(json_string_value(json_object_get(c, "comm")), "abcdef0123456789");
  assert_int_equal(json_integer_value(json_object_get(c, "t_ns")), 1700000000123456789LL);

  json_t *o = lines[2];
  assert_string_equal(json_string_value(json_object_get(o, "op")), "AllGather");
  assert_string_equal(json_string_value(json_object_get(o, "dtype")), "bfloat16");
  assert_int_equal(json_integer_value(json_object_get(o, "bytes")), 8000);
  assert_int_equal(json_integer_value(json_object_get(o, "seq")), 41);
  assert_int_equal(json_integer_value(json_object_get(o, "group")), 7);
  assert_true(json_is_null(json_object_get(o, "redop")));
  assert_string_equal(json_string_value(json_object_get(o, "stream")), "0x7f00dead");
  assert_true(json_real_value(json_object_get(o, "dur_us")) > 123.455 &&
              json_real_value(json_object_get(o, "dur_us")) < 123.457);
  assert_string_equal(json_string_value(json_object_get(o, "timing")), "gpu_event");
  assert_non_null(strstr(json_string_value(json_object_get(o, "site")), "records_roundtrip"));

  json_t *cap = lines[3];
  assert_string_equal(json_string_value(json_object_get(cap, "timing")), "captured");
  assert_true(json_is_true(json_object_get(cap, "captured")));
  assert_int_equal(json_integer_value(json_object_get(cap, "start_ns")), 0);

  for (int i = 0; i < NSEQ; i++)
    assert_int_equal((uint64_t)json_integer_value(json_object_get(lines[4 + i], "seq")), seqs[i]);
  json_t *x = lines[4 + NSEQ];
  assert_string_equal(json_string_value(json_object_get(x, "type")), "xfer");
  assert_string_equal(json_string_value(json_object_get(x, "kind")), "DtoH");
  assert_true(json_is_true(json_object_get(x, "async")));
  assert_int_equal(json_integer_value(json_object_get(lines[5 + NSEQ], "count")), 3);
  assert_string_equal(json_string_value(json_object_get(lines[6 + NSEQ], "type")), "footer");
  assert_int_equal(json_integer_value(json_object_get(lines[6 + NSEQ], "ops")), 2 + NSEQ);
  for (int i = 0; i < nlines; i++) json_decref(lines[i]);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static void unwritable_dir_fails_cleanly(void **state) {
  (void)state;
  setenv("COLLSCOPE_DIR", "/proc/self/collscope-cannot-exist", 1);
  setenv("COLLSCOPE_LOG", "quiet", 1);
  cs_config_load();
  assert_false(cs_dump_open());
}

/* ---- injected write errors ---- */
static int fail_writes;      /* > 0: that many more write() calls fail */
static size_t partial_bytes; /* a failing call first writes this many bytes (a short write) */
static bool fail_truncate;
static ssize_t failing_write(int fd, const void *b, size_t n) {
  if (fail_writes <= 0) return write(fd, b, n);
  if (partial_bytes) { /* a short write, then the error on the next call */
    size_t k = partial_bytes < n ? partial_bytes : n - 1;
    partial_bytes = 0;
    return write(fd, b, k);
  }
  fail_writes--;
  errno = ENOSPC;
  return -1;
}
static int failing_truncate(int fd, off_t len) {
  if (fail_truncate) {
    errno = EIO;
    return -1;
  }
  return ftruncate(fd, len);
}

static void op_record(struct cs_record *r, uint64_t seq) {
  memset(r, 0, sizeof(*r));
  r->type = CS_REC_OP;
  r->op = CS_OP_AllReduce;
  r->dtype = 7;
  r->redop = 0;
  r->root = -1;
  r->peer = -1;
  r->comm_id = 0x1234;
  r->comm_size = 2;
  r->comm_rank = 0;
  r->seq = seq;
  r->count = 256;
  r->bytes = 1024;
  r->timing = CS_TIMING_HOST;
  r->enqueue_ns = 1700000000000000000LL + (int64_t)seq;
}

/* every line of every dump file in dir is JSON; returns the op count, footer, drops lines */
struct dump_summary {
  int files, ops, headers, first_is_header, footers, bad;
  json_int_t footer_drops, footer_ops,
      footer_write_drops, footer_recorded, drops_lines;
  uint64_t seen[64];
};
static void summarize(const char *dir, struct dump_summary *s) {
  memset(s, 0, sizeof(*s));
  char pat[256];
  snprintf(pat, sizeof pat, "%s/*.jsonl", dir);
  glob_t g;
  assert_int_equal(glob(pat, 0, NULL, &g), 0);
  s->files = (int)g.gl_pathc;
  s->first_is_header = 1;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    FILE *f = fopen(g.gl_pathv[i], "r");
    assert_non_null(f);
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
      json_t *j = json_loads(line, 0, NULL);
      if (!j || !strchr(line, '\n')) {
        s->bad++;
        json_decref(j);
        continue;
      }
      const char *t = json_string_value(json_object_get(j, "type"));
      if (n++ == 0 && strcmp(t, "header")) s->first_is_header = 0;
      if (!strcmp(t, "header")) s->headers++;
      if (!strcmp(t, "op")) {
        uint64_t q = (uint64_t)json_integer_value(json_object_get(j, "seq"));
        if (q < 64 * 64) s->seen[q / 64] |= 1ull << (q % 64);
        s->ops++;
      }
      if (!strcmp(t, "drops")) s->drops_lines += json_integer_value(json_object_get(j, "count"));
      if (!strcmp(t, "footer")) {
        s->footers++;
        s->footer_drops = json_integer_value(json_object_get(j, "drops"));
        s->footer_ops = json_integer_value(json_object_get(j, "ops"));
        s->footer_write_drops = json_integer_value(json_object_get(j, "write_drops"));
        s->footer_recorded = json_integer_value(json_object_get(j, "ops_recorded"));
      }
      json_decref(j);
    }
    fclose(f);
  }
  globfree(&g);
}

static char *fresh_dump(void) {
  static char dir[64];
  snprintf(dir, sizeof dir, "/tmp/cs-dump-fail-XXXXXX");
  assert_non_null(mkdtemp(dir));
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_HOSTNAME", "h", 1);
  setenv("COLLSCOPE_LOG", "quiet", 1);
  setenv("RANK", "0", 1);
  cs_config_load();
  atomic_store(&cs_st.drops, 0);
  cs_dump_io.write = failing_write;
  cs_dump_io.ftruncate = failing_truncate;
  fail_writes = 0;
  partial_bytes = 0;
  fail_truncate = false;
  assert_true(cs_dump_open());
  return dir;
}
static void cleanup(const char *dir) {
  cs_dump_io.write = write;
  cs_dump_io.ftruncate = ftruncate;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* Ten ops per flush; the second and third flush fail (the second after a short write that
 * ends inside a line), the fourth works: 20 ops lost and counted, 20 on the file. */
static void write_errors_counted_and_recovered(void **state) {
  (void)state;
  char *dir = fresh_dump();
  struct cs_record r;
  uint64_t seq = 0;
  for (int flush = 0; flush < 4; flush++) {
    for (int i = 0; i < 10; i++) {
      op_record(&r, seq++);
      cs_dump_record(&r);
    }
    if (flush == 1) {
      fail_writes = 2;
      partial_bytes = 700;
    }
    cs_dump_flush();
    cs_dump_drops_sync();
  }
  cs_dump_footer();
  cs_dump_close();
  struct dump_summary s;
  summarize(dir, &s);
  assert_int_equal(s.files, 1);
  assert_int_equal(s.bad, 0); /* no partial or merged line */
  assert_true(s.first_is_header);
  assert_int_equal(s.headers, 1);
  assert_int_equal(s.ops, 20);
  assert_int_equal(s.seen[0], 0x3ff | (0x3ffull << 30)); /* ops 0-9 and 30-39 */
  assert_int_equal(s.footers, 1);
  assert_int_equal(s.footer_drops, 20); /* = ops issued - ops on the file */
  assert_int_equal(s.footer_write_drops, 20);
  assert_int_equal(s.drops_lines, 20); /* the drops lines add up to it */
  assert_int_equal(s.footer_ops, 20);  /* ops on the file */
  assert_int_equal(s.footer_recorded, 40);
  cleanup(dir);
}

/* The disk is full from the start: the header is lost with the first records and written
 * again, first, once writing works. */
static void lost_header_rewritten(void **state) {
  (void)state;
  char *dir = fresh_dump();
  struct cs_record r;
  fail_writes = 1;
  for (int i = 0; i < 5; i++) {
    op_record(&r, (uint64_t)i);
    cs_dump_record(&r);
  }
  cs_dump_flush();
  for (int i = 5; i < 8; i++) {
    op_record(&r, (uint64_t)i);
    cs_dump_record(&r);
  }
  cs_dump_footer();
  cs_dump_close();
  struct dump_summary s;
  summarize(dir, &s);
  assert_int_equal(s.bad, 0);
  assert_true(s.first_is_header);
  assert_int_equal(s.headers, 1);
  assert_int_equal(s.ops, 3);
  assert_int_equal(s.footer_drops, 5);
  assert_int_equal(s.drops_lines, 5);
  cleanup(dir);
}

/* A short write that cannot be cut back: the writer continues in a new file that starts
 * with a header; the damaged file's partial line is its last. */
static void uncuttable_file_continues(void **state) {
  (void)state;
  char *dir = fresh_dump();
  struct cs_record r;
  for (int i = 0; i < 4; i++) {
    op_record(&r, (uint64_t)i);
    cs_dump_record(&r);
  }
  cs_dump_flush();
  for (int i = 4; i < 8; i++) {
    op_record(&r, (uint64_t)i);
    cs_dump_record(&r);
  }
  fail_writes = 1;
  partial_bytes = 100;
  fail_truncate = true;
  cs_dump_flush();
  for (int i = 8; i < 12; i++) {
    op_record(&r, (uint64_t)i);
    cs_dump_record(&r);
  }
  cs_dump_footer();
  cs_dump_close();
  struct dump_summary s;
  summarize(dir, &s);
  assert_int_equal(s.files, 2);
  assert_int_equal(s.bad, 1); /* the first file's cut-off last line */
  assert_true(s.first_is_header);
  assert_int_equal(s.ops, 8);
  assert_int_equal(s.footer_drops, 4);
  cleanup(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(records_roundtrip),
                                     cmocka_unit_test(unwritable_dir_fails_cleanly),
                                     cmocka_unit_test(write_errors_counted_and_recovered),
                                     cmocka_unit_test(lost_header_rewritten),
                                     cmocka_unit_test(uncuttable_file_continues)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
