/* tests/dump/test_zstd_stream.c: the zstd dump in process, writer (stats/dump_writer.c) to
 * reader (tools/dump/dump_zstd.c): 20,000 op records written as frames are read back whole
 * and streamed in pieces much smaller than a frame (every seq once, in order, the header once);
 * a frame corrupted in the middle of the file is skipped with a message and reading goes on
 * after it; the byte budget keeps the file within it with every op counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump/dumpfile.h"
#include "shim/cs_internal.h"
#include "stats/dump_writer.h"

#define NOPS 20000

/* a dump of NOPS op records (seq 0..NOPS-1) in dir, flushed every 400 records; its path */
static void write_dump(const char *dir, const char *budget, char *path, size_t cap) {
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_HOSTNAME", "zhost", 1);
  setenv("RANK", "0", 1);
  setenv("COLLSCOPE_COMPRESS", "zstd", 1);
  if (budget)
    setenv("COLLSCOPE_BUDGET", budget, 1);
  else
    unsetenv("COLLSCOPE_BUDGET");
  cs_config_load();
  assert_true(cs_dump_open());
  struct cs_record r;
  for (int i = 0; i < NOPS; i++) {
    memset(&r, 0, sizeof r);
    r.type = CS_REC_OP;
    r.op = CS_OP_AllReduce;
    r.dtype = 7;
    r.redop = 0;
    r.root = r.peer = -1;
    r.comm_id = 0x1234;
    r.comm_size = 1;
    r.seq = (uint64_t)i;
    r.count = 1024;
    r.bytes = 4096;
    r.enqueue_ns = 1700000000000000000LL + i * 1000LL;
    r.start_ns = r.enqueue_ns + 10;
    r.end_ns = r.start_ns + 500 + i % 7;
    r.timing = CS_TIMING_GPU_EVENT;
    cs_dump_record(&r);
    if (i % 400 == 399) cs_dump_flush();
  }
  cs_dump_footer();
  cs_dump_close();
  snprintf(path, cap, "%s", cs_dump_path());
  size_t n = strlen(path);
  assert_true(n > 10 && strcmp(path + n - 10, ".jsonl.zst") == 0);
}

struct seen {
  int64_t next, bad;
};
static void on_op(void *ctx, unsigned worker, size_t file, const struct cs_dumpfile *f, const struct cs_op_rec *r) {
  (void)worker, (void)file, (void)f;
  struct seen *s = ctx;
  if (r->seq != s->next) s->bad++;
  s->next = r->seq + 1;
}

static void whole_and_streamed(void **state) {
  (void)state;
  char dir[] = "/tmp/cs-zstd-test-XXXXXX", path[8192];
  assert_non_null(mkdtemp(dir));
  write_dump(dir, NULL, path, sizeof path);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  printf("%d op records: %lld bytes zstd (%.1f per op line)\n", NOPS, (long long)st.st_size,
         (double)st.st_size / NOPS);

  struct cs_dumpset *set = cs_dumpset_load_jobs(dir, NULL, 1);
  assert_false(set->fatal);
  assert_int_equal(set->nfiles, 1);
  const struct cs_dumpfile *f = &set->files[0];
  assert_true(f->compressed && f->hdr.valid && f->has_footer);
  assert_int_equal(f->nops, NOPS);
  assert_int_equal(f->footer_ops, NOPS);
  assert_int_equal(f->lost + f->torn_frames + f->bad_frames + f->malformed_lines + f->truncated_lines, 0);
  for (size_t i = 0; i < f->nops; i++) assert_int_equal(f->ops[i].seq, (int64_t)i);
  cs_dumpset_free(set);

  /* streamed a few KiB a round: every piece ends inside some frame's text */
  struct seen s = {0, 0};
  struct cs_stream_ops ops = {.ctx = &s, .jobs = 1, .budget = 1, .op = on_op};
  set = cs_dumpset_stream(dir, NULL, &ops);
  assert_false(set->fatal || set->whole);
  f = &set->files[0];
  assert_true(f->hdr.valid && f->has_footer);
  assert_int_equal(s.next, NOPS);
  assert_int_equal(s.bad, 0);
  assert_int_equal(f->lost + f->torn_frames + f->bad_frames + f->malformed_lines + f->truncated_lines, 0);
  assert_int_equal(set->nerrors, 0);
  cs_dumpset_free(set);

  /* a byte of a frame in the middle changed: that frame is skipped with a message */
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  long mid = (long)(st.st_size / 2);
  fseek(fp, mid, SEEK_SET);
  int c = fgetc(fp);
  fseek(fp, mid, SEEK_SET);
  fputc(c ^ 0x5a, fp);
  fclose(fp);
  set = cs_dumpset_load_jobs(dir, NULL, 1);
  f = &set->files[0];
  printf("one byte changed at %ld: %zu op records read, bad frames %llu (%llu bytes), lost %llu\n", mid, f->nops,
         (unsigned long long)f->bad_frames, (unsigned long long)f->bad_bytes, (unsigned long long)f->lost);
  assert_int_equal(f->bad_frames, 1);
  assert_true(f->bad_bytes > 0 && f->bad_bytes < (uint64_t)st.st_size / 4);
  assert_true(f->has_footer && f->nops > NOPS / 2 && f->nops < NOPS);
  assert_int_equal(f->ops[f->nops - 1].seq, NOPS - 1); /* the frames after it were read */
  assert_true(set->nerrors >= 1 && strstr(set->errors[0], "zstd frame at byte"));
  cs_dumpset_free(set);
  unlink(path);
  rmdir(dir);
}

static void budget(void **state) {
  (void)state;
  char dir[] = "/tmp/cs-zstd-test-XXXXXX", path[8192];
  assert_non_null(mkdtemp(dir));
  write_dump(dir, "64K", path, sizeof path);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  struct cs_dumpset *set = cs_dumpset_load_jobs(dir, NULL, 1);
  const struct cs_dumpfile *f = &set->files[0];
  printf("budget 64K: %lld bytes, %zu op records, budget_drops %llu\n", (long long)st.st_size, f->nops,
         (unsigned long long)f->footer_budget_drops);
  assert_true(st.st_size <= 65536 && st.st_size > 40000);
  assert_true(f->has_footer);
  assert_int_equal(f->footer_budget, 65536);
  assert_int_equal(f->nops + f->footer_budget_drops, NOPS);
  assert_int_equal(f->footer_ops, f->nops);
  for (size_t i = 0; i < f->nops; i++) assert_int_equal(f->ops[i].seq, (int64_t)i); /* the first ones kept */
  cs_dumpset_free(set);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(whole_and_streamed),
      cmocka_unit_test(budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
