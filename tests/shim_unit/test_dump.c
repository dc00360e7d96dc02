/* tests/shim_unit/test_dump.c: the JSONL dump writer (stats/dump_writer.c): every record
 * type becomes one parseable line with the documented fields, strings are escaped,
 * times and bytes are exact, the header comes first, and the file is 0600. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
  r.type = CS_REC_COMM; r.event = CS_COMM_SPLIT; r.comm_id = 0xabcdef0123456789ULL; r.parent_id = 1;
  r.comm_size = 4; r.comm_rank = 2; r.device = 3; r.enqueue_ns = 1700000000123456789LL;
  cs_dump_record(&r);

  memset(&r, 0, sizeof(r));
  r.type = CS_REC_OP; r.op = CS_OP_AllGather; r.dtype = 9; r.redop = -1; r.root = -1; r.peer = -1;
  r.comm_id = 0xabcdef0123456789ULL; r.comm_size = 4; r.comm_rank = 2; r.seq = 41; r.count = 1000;
  r.bytes = cs_op_bytes(CS_OP_AllGather, 1000, 2, 4); r.group = 7; r.stream = 0x7f00dead;
  r.enqueue_ns = 1700000000000000000LL; r.start_ns = 1700000000000001500LL; r.end_ns = 1700000000000124956LL;
  r.timing = CS_TIMING_GPU_EVENT; r.site = (uint64_t)(uintptr_t)&records_roundtrip;
  cs_dump_record(&r);

  r.timing = CS_TIMING_CAPTURED; r.captured = 1; r.op = CS_OP_Recv; r.peer = 3;
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
  r.type = CS_REC_XFER; r.op = CS_OP_Memcpy; r.event = CS_XFER_DTOH; r.bytes = 4096; r.async = 1;
  r.timing = CS_TIMING_HOST; r.status = 0;
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

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(records_roundtrip),
                                     cmocka_unit_test(unwritable_dir_fails_cleanly)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
