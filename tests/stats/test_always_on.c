/* tests/stats/test_always_on.c: COLLSCOPE_RECORD=summary's writer in process
 * (stats/summary.c, stats/flight.c): records over three summary intervals become one summary
 * line per interval and key with exact counts, byte sums and duration sums, and a histogram
 * holding every timed op; a failed op opens a window (the ring's records, then the next
 * COLLSCOPE_FLIGHT_AFTER), no record is written twice, and failed ops past the bound (8 at
 * once, then one an hour of record time) open no window; the trigger file asks for one; a
 * table with more keys than it holds writes its lines early and loses nothing, and the footer
 * counts the ops the gaps and local-trigger tables had no room for; the local
 * trigger (stats/flight_local.c) opens one window where a collective's durations grow past
 * the margins and again where they fall, none for jitter within them, none when off, and
 * one at the first block past 4 times the margins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "shim/cs_internal.h"
#include "stats/dump_writer.h"
#include "stats/flight.h"

#define MAXL 8192
static json_t *lines[MAXL];
static int nlines;

static void read_back(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char buf[65536];
  for (int i = 0; i < nlines; i++) json_decref(lines[i]);
  nlines = 0;
  while (fgets(buf, sizeof buf, f) && nlines < MAXL) {
    json_error_t err;
    lines[nlines] = json_loads(buf, 0, &err);
    if (!lines[nlines]) fail_msg("line %d not JSON: %s", nlines + 1, err.text);
    nlines++;
  }
  fclose(f);
}

static const char *type_of(int i) { return json_string_value(json_object_get(lines[i], "type")); }
static long long int_of(int i, const char *k) { return json_integer_value(json_object_get(lines[i], k)); }

static char dir[64];
static void start(const char *after) {
  snprintf(dir, sizeof dir, "/tmp/cs-always-XXXXXX");
  assert_non_null(mkdtemp(dir));
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_LOG", "quiet", 1);
  setenv("COLLSCOPE_RECORD", "summary", 1);
  setenv("COLLSCOPE_COMPRESS", "off", 1); /* the lines are read back as plain text */
  setenv("COLLSCOPE_SUMMARY_S", "10", 1);
  setenv("COLLSCOPE_FLIGHT_OPS", "16", 1);
  setenv("COLLSCOPE_FLIGHT_AFTER", after, 1);
  setenv("RANK", "1", 1);
  cs_config_load();
  assert_true(cs_cfg.record_summary);
  assert_true(cs_dump_open());
  assert_true(cs_flight_init(cs_cfg.flight_ops, cs_cfg.flight_after, cs_cfg.summary_s));
}
static void finish(void) {
  cs_dump_footer();
  cs_dump_close();
  read_back(cs_dump_path());
  cs_flight_free();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static struct cs_record op(int64_t t_ns, uint64_t bytes, int64_t dur_ns, int status) {
  struct cs_record r;
  memset(&r, 0, sizeof r);
  r.type = CS_REC_OP;
  r.op = CS_OP_AllReduce;
  r.dtype = 7;
  r.redop = 0;
  r.root = r.peer = -1;
  r.comm_id = 0x42;
  r.comm_size = 4;
  r.comm_rank = 1;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.timing = status ? CS_TIMING_ERROR : CS_TIMING_GPU_EVENT;
  r.status = (int16_t)status;
  r.enqueue_ns = t_ns;
  r.start_ns = t_ns + 1000;
  r.end_ns = r.start_ns + dur_ns;
  return r;
}

static void summaries(void **state) {
  (void)state;
  start("4");
  const int64_t t0 = 1764000000000000000LL; /* a multiple of 10 s */
  /* interval k (k = 0, 1, 2): 10 + k ops of 4 KiB lasting 100 + i us, 3 of 1 MiB lasting 1 ms */
  int64_t sum_small[3] = {0}, seq = 0;
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < 10 + k; i++) {
      struct cs_record r = op(t0 + k * 10000000000LL + i * 1000000, 4096, 100000 + i * 1000, 0);
      r.seq = (uint64_t)seq++;
      sum_small[k] += 100000 + i * 1000;
      cs_dump_record(&r);
    }
    for (int i = 0; i < 3; i++) {
      struct cs_record r = op(t0 + k * 10000000000LL + 500000000 + i, 1 << 20, 1000000, 0);
      r.seq = (uint64_t)seq++;
      cs_dump_record(&r);
    }
  }
  finish();
  int nsum = 0;
  for (int i = 0; i < nlines; i++) {
    if (strcmp(type_of(i), "summary") == 0) {
      int k = (int)((int_of(i, "t0_ns") - t0) / 10000000000LL);
      assert_true(k >= 0 && k < 3);
      assert_int_equal(int_of(i, "t1_ns") - int_of(i, "t0_ns"), 10000000000LL);
      long long n = int_of(i, "count");
      long long hist_n = 0;
      const char *h = json_string_value(json_object_get(lines[i], "hist"));
      for (const char *p = h; p && *p;) {
        const char *c = strchr(p, ':');
        assert_non_null(c);
        hist_n += atoll(c + 1);
        p = strchr(c, ',');
        p = p ? p + 1 : c + strlen(c);
      }
      assert_int_equal(hist_n, n);
      assert_int_equal(int_of(i, "timed"), n);
      double dsum = json_number_value(json_object_get(lines[i], "dur_sum_us"));
      if (int_of(i, "bucket") == 12) {
        assert_int_equal(n, 10 + k);
        assert_int_equal(int_of(i, "bytes"), 4096LL * (10 + k));
        assert_float_equal(dsum, (double)sum_small[k] / 1e3, 1e-6);
      } else {
        assert_int_equal(int_of(i, "bucket"), 20);
        assert_int_equal(n, 3);
        assert_float_equal(dsum, 3000.0, 1e-6);
        assert_string_equal(json_string_value(json_object_get(lines[i], "sizes")), "1048576:3");
      }
      nsum++;
    }
    assert_true(strcmp(type_of(i), "op") != 0); /* no window: no op line */
  }
  assert_int_equal(nsum, 6);
}

static void windows(void **state) {
  (void)state;
  start("4");
  const int64_t t0 = 1764000000000000000LL;
  /* 40 ops, the 20th failed: a window of the ring's 16 records, then the next 4 */
  for (int i = 0; i < 40; i++) {
    struct cs_record r = op(t0 + i * 1000000, 4096, 100000, i == 19 ? 5 : 0);
    r.seq = (uint64_t)i;
    cs_dump_record(&r);
  }
  /* then 12 failed ops a second apart, each followed by 5 good ones (its window closes before
   * the next): the bound lets 7 more windows through, each writing only records not written
   * yet; the last 5 open none */
  for (int i = 0; i < 12; i++)
    for (int j = 0; j < 6; j++) {
      struct cs_record r = op(t0 + 100000000000LL + i * 1000000000LL + j * 1000000, 4096, 100000, j == 0 ? 5 : 0);
      r.seq = (uint64_t)(40 + 6 * i + j);
      cs_dump_record(&r);
    }
  uint64_t supp = cs_flight_suppressed();
  finish();
  int nwin = 0, first_ops = -1;
  long long seen[128] = {0};
  for (int i = 0; i < nlines; i++) {
    if (strcmp(type_of(i), "window") == 0) {
      nwin++;
      assert_string_equal(json_string_value(json_object_get(lines[i], "reason")), "failed");
      if (first_ops < 0) first_ops = (int)int_of(i, "ring_ops");
    }
    if (strcmp(type_of(i), "op") == 0) {
      long long s = int_of(i, "seq");
      assert_true(s >= 0 && s < 128);
      seen[s]++;
      assert_int_equal(seen[s], 1); /* never written twice */
    }
  }
  assert_int_equal(first_ops, 16);
  for (int s = 0; s < 4; s++) assert_int_equal(seen[s], 0);   /* out of the ring before the first */
  for (int s = 4; s < 24; s++) assert_int_equal(seen[s], 1);  /* 16 before it (4..19), 4 after */
  assert_int_equal(seen[24], 0);                              /* out of the ring before the second */
  for (int s = 25; s < 41; s++) assert_int_equal(seen[s], 1); /* the second window's ring (25..40) */
  assert_int_equal(nwin, 8);
  assert_int_equal(supp, 5);
}

/* the trigger file: there before the first look is no request; a new modification time is one
 * window (the file is looked at once a second at most) */
static void trigger_file(void **state) {
  (void)state;
  start("0");
  char path[128];
  snprintf(path, sizeof path, "%s/collscope-flight", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
  for (int i = 0; i < 3; i++) {
    struct cs_record r = op(1764000000000000000LL + i, 4096, 100000, 0);
    r.seq = (uint64_t)i;
    cs_dump_record(&r);
  }
  cs_flight_tick(); /* the first look */
  assert_int_equal(cs_flight_windows(), 0);
  struct timespec ts[2] = {{.tv_sec = 1000000000, .tv_nsec = 0}, {.tv_sec = 1000000000, .tv_nsec = 0}};
  assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
  usleep(1100000);
  cs_flight_tick();
  assert_int_equal(cs_flight_windows(), 1);
  usleep(1100000);
  cs_flight_tick(); /* unchanged: no other */
  assert_int_equal(cs_flight_windows(), 1);
  finish();
  int nwin = 0, nops = 0;
  for (int i = 0; i < nlines; i++) {
    if (strcmp(type_of(i), "window") == 0) {
      assert_string_equal(json_string_value(json_object_get(lines[i], "reason")), "request");
      nwin++;
    }
    nops += strcmp(type_of(i), "op") == 0;
  }
  assert_int_equal(nwin, 1);
  assert_int_equal(nops, 3);
}

/* more keys than the table holds in one interval: its lines go out early, nothing is lost */
static void full_table(void **state) {
  (void)state;
  start("0");
  const int64_t t0 = 1764000000000000000LL;
  for (int c = 0; c < 600; c++) { /* 600 communicators, 2 ops each, in one interval */
    for (int i = 0; i < 2; i++) {
      struct cs_record r = op(t0 + c * 1000 + i, 4096u << i, 100000, 0);
      r.comm_id = 0x1000 + (uint64_t)c;
      r.seq = (uint64_t)i;
      cs_dump_record(&r);
    }
  }
  finish();
  long long count = 0, footers = 0;
  for (int i = 0; i < nlines; i++) {
    assert_true(strcmp(type_of(i), "op") != 0);
    if (strcmp(type_of(i), "summary") == 0) count += int_of(i, "count");
    if (strcmp(type_of(i), "footer") == 0) {
      footers++;
      /* the local trigger keys (communicator, op, bytes): 64 of 1200 keyed; the gaps table
       * (communicator, rank): 64 of 600 pairs kept, 2 ops each of the other 536 counted */
      assert_int_equal(int_of(i, "local_unkeyed"), 1200 - 64);
      assert_int_equal(int_of(i, "gaps_lost"), (600 - 64) * 2);
    }
  }
  assert_int_equal(count, 1200);
  assert_int_equal(footers, 1);
}

/* 400 instances of 4 KiB at base_ns +- 4 us (deterministic), then 200 instances grow_ns
 * longer, then 200 at base_ns again: the local windows and their seqs */
static int local_windows(const char *mode, int64_t base_ns, int64_t grow_ns, long long *seqs) {
  setenv("COLLSCOPE_FLIGHT_LOCAL", mode, 1);
  start("4");
  const int64_t t0 = 1764000000000000000LL;
  for (int i = 0; i < 800; i++) {
    int64_t d = base_ns + (i * 7919 % 9 - 4) * 1000;
    if (i >= 400 && i < 600) d += grow_ns;
    struct cs_record r = op(t0 + i * 1000000LL, 4096, d, 0);
    r.seq = (uint64_t)i;
    cs_dump_record(&r);
  }
  finish();
  unsetenv("COLLSCOPE_FLIGHT_LOCAL");
  int n = 0;
  for (int i = 0; i < nlines; i++)
    if (strcmp(type_of(i), "window") == 0) {
      assert_string_equal(json_string_value(json_object_get(lines[i], "reason")), "local");
      seqs[n++] = int_of(i, "seq");
    }
  return n;
}

static void local_trigger(void **state) {
  (void)state;
  long long seqs[16];
  /* the blocks of seqs 400-407, 408-415 and 416-423 are at 160 us: their least is ~60 us
   * (60 %) over the floor of 96 us, the third in a row fires; the key re-arms once its 8
   * blocks before are all slow, and the third block back at 100 us (616-623) fires again:
   * its median ~60 us under the least of their medians */
  assert_int_equal(local_windows("rank", 100000, 60000, seqs), 2);
  assert_int_equal(seqs[0], 423);
  assert_int_equal(seqs[1], 623);
  assert_int_equal(local_windows("rank", 100000, 0, seqs), 0); /* jitter within the margins */
  assert_int_equal(local_windows("off", 100000, 60000, seqs), 0);
  /* a peer of train3d's straggler at 64 ranks: 1.8 ms, 7 % (126 us) longer: past the 5 %
   * margin, three blocks in a row fire at 423 */
  assert_int_equal(local_windows("rank", 1800000, 126000, seqs), 2);
  assert_int_equal(seqs[0], 423);
  /* moe's AlltoAll, a block 8 steps: 250 us (250 %) longer is past 4 times both margins
   * (200 us, 20 %), so its first block fires alone at 407; the fall back is a mean under the
   * baseline's (not a jump): three blocks, 623 */
  assert_int_equal(local_windows("rank", 100000, 250000, seqs), 2);
  assert_int_equal(seqs[0], 407);
  assert_int_equal(seqs[1], 623);
  /* 150 us (150 %) longer is past 20 % but not 200 us: three blocks, 423 */
  assert_int_equal(local_windows("rank", 100000, 150000, seqs), 2);
  assert_int_equal(seqs[0], 423);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(summaries), cmocka_unit_test(windows),
                                     cmocka_unit_test(trigger_file), cmocka_unit_test(full_table),
                                     cmocka_unit_test(local_trigger)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
