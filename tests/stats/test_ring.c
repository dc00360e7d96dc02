/* tests/stats/test_ring.c: the shared-memory stats ring (stats/ring_writer.c, analysis/ring_reader.c,
 * include/collscope/ring.h): header/init ordering, overwrite detection by sequence
 * numbers, one-writer enforcement, 0600 + O_EXCL|O_NOFOLLOW, stale segment reclaim (writer
 * dead or its pid reused, logged at WARN; never a ring that only looks half-written),
 * removal at clean exit unless keep_shm, the reader's checks on hostile files (sizes,
 * owner, name, job, FIFO) and a writer/reader stress (run under TSan too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stats/ring_writer.h"

static char dir[256];

static void setup_cfg(size_t cap, const char *job) {
  cs_cfg.log_level = CS_LOG_QUIET;
  cs_cfg.ring_cap = cap;
  cs_cfg.keep_shm = false;
  cs_cfg.rank = 3;
  cs_cfg.local_rank = 1;
  cs_cfg.world_size = 8;
  snprintf(cs_cfg.host, sizeof cs_cfg.host, "testhost");
  snprintf(cs_cfg.job, sizeof cs_cfg.job, "%s", job);
}

static struct cs_record mkrec(uint64_t i) {
  struct cs_record r;
  memset(&r, 0, sizeof r);
  r.type = CS_REC_OP;
  r.op = CS_OP_AllReduce;
  r.comm_id = 0xabcdef;
  r.comm_size = 8;
  r.comm_rank = 3;
  r.seq = i;
  r.bytes = i * 3 + 1;
  r.enqueue_ns = (int64_t)i;
  r.start_ns = (int64_t)i + 10;
  r.end_ns = (int64_t)i + 20;
  return r;
}

static void test_basic(void **st) {
  (void)st;
  setup_cfg(64, "basic");
  assert_true(cs_ring_open());
  const char *path = cs_ring_path();
  struct stat sb;
  assert_int_equal(lstat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  /* comm table + records */
  struct cs_record c;
  memset(&c, 0, sizeof c);
  c.type = CS_REC_COMM;
  c.event = CS_COMM_INIT;
  c.comm_id = 0xabcdef;
  c.comm_size = 8;
  c.comm_rank = 3;
  c.device = 1;
  cs_ring_publish(&c);
  for (uint64_t i = 0; i < 10; i++) {
    struct cs_record r = mkrec(i);
    cs_ring_publish(&r);
  }
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, path), 0);
  assert_int_equal(rd.h->rank, 3);
  assert_int_equal(rd.h->pid, getpid());
  assert_string_equal(rd.h->host, "testhost");
  assert_int_equal(atomic_load(&((struct cs_ring_hdr *)(uintptr_t)rd.h)->ncomms), 1);
  assert_int_equal(rd.h->comms[0].id, 0xabcdef);
  assert_int_equal(rd.h->device, 1);
  struct cs_record out[64];
  size_t n = cs_ring_read(&rd, out, 64);
  assert_int_equal(n, 11);
  assert_int_equal(out[0].type, CS_REC_COMM);
  for (uint64_t i = 0; i < 10; i++) assert_int_equal(out[i + 1].seq, i);
  assert_int_equal(rd.lost, 0);
  /* overwrite: 200 more into 64 slots -> exactly 136 lost, the last 64 read */
  for (uint64_t i = 10; i < 210; i++) {
    struct cs_record r = mkrec(i);
    cs_ring_publish(&r);
  }
  n = cs_ring_read(&rd, out, 64);
  assert_int_equal(n, 64);
  assert_int_equal(rd.lost, 136);
  assert_int_equal(out[0].seq, 146);
  assert_int_equal(out[63].seq, 209);
  cs_ring_reader_close(&rd);
  /* a second creator of the same name: O_EXCL; our pid is alive, so it is not reclaimed */
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  assert_int_equal(fd, -1);
  assert_int_equal(errno, EEXIST);
  char saved[512];
  snprintf(saved, sizeof saved, "%s", path);
  cs_ring_close(true);
  assert_int_not_equal(access(saved, F_OK), 0); /* removed at clean exit */
}

static void test_uninitialised_and_symlink(void **st) {
  (void)st;
  char p[600];
  snprintf(p, sizeof p, "%s/collscope-%u-x-r0.ring", dir, (unsigned)geteuid());
  int fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)cs_ring_bytes(16)), 0);
  close(fd);
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, p), -1); /* init flag not set: ignored */
  assert_int_equal(errno, EAGAIN);
  unlink(p);
  /* a symlink planted at the ring's name is not followed */
  setup_cfg(16, "sym");
  char target[600], link_[600];
  snprintf(target, sizeof target, "%s/target", dir);
  snprintf(link_, sizeof link_, "%s/collscope-%u-sym-r3.ring", dir, (unsigned)geteuid());
  assert_int_equal(symlink(target, link_), 0);
  assert_true(cs_ring_open()); /* the name is taken (not ours): a -p<pid> name is used */
  assert_int_not_equal(strcmp(cs_ring_path(), link_), 0);
  assert_int_not_equal(access(target, F_OK), 0); /* nothing created through the link */
  cs_ring_close(true);
  unlink(link_);
}

static void test_stale_reclaim_and_keep(void **st) {
  (void)st;
  setup_cfg(16, "stale");
  /* a child creates the ring and dies by SIGKILL without closing it */
  pid_t pid = fork();
  if (pid == 0) {
    if (!cs_ring_open()) _exit(1);
    struct cs_record r = mkrec(7);
    cs_ring_publish(&r);
    raise(SIGKILL);
    _exit(2);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFSIGNALED(status));
  char p[600];
  snprintf(p, sizeof p, "%s/collscope-%u-stale-r3.ring", dir, (unsigned)geteuid());
  /* the dead writer's records are still readable (salvage) */
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, p), 0);
  assert_true(cs_ring_writer_dead(rd.h));
  struct cs_record out[4];
  assert_int_equal(cs_ring_read(&rd, out, 4), 1);
  assert_int_equal(out[0].seq, 7);
  cs_ring_reader_close(&rd);
  /* a new process of the same rank reclaims the stale segment under the same name */
  assert_true(cs_ring_open());
  assert_string_equal(cs_ring_path(), p);
  assert_int_equal(cs_ring_reader_open(&rd, p), 0);
  assert_int_equal(rd.h->pid, getpid());
  assert_int_equal(atomic_load(&((struct cs_ring_hdr *)(uintptr_t)rd.h)->head), 0);
  cs_ring_reader_close(&rd);
  cs_cfg.keep_shm = true; /* COLLSCOPE_KEEP_SHM=1 */
  cs_ring_close(true);
  assert_int_equal(access(p, F_OK), 0);
  unlink(p);
}

static void *foreign_publisher(void *arg) {
  struct cs_record r = mkrec(99);
  cs_ring_publish(&r);
  (void)arg;
  return NULL;
}

/* The writer's summary block: every published op counted in its series (also those the ring
 * overwrote), rare records on the side ring, the health sample and the GPU identity (once),
 * nothing from a thread that is not the writer. */
static void *foreign_health(void *arg) {
  (void)arg;
  struct cs_ring_health_vals v;
  memset(&v, 0, sizeof v);
  v.t_ns = 99;
  cs_ring_health(&v);
  cs_ring_gpu_identity("GPU-foreign", "0000:99:00.0");
  return NULL;
}

static void test_summary_block(void **st) {
  (void)st;
  setup_cfg(64, "summary");
  assert_true(cs_ring_open());
  for (uint64_t i = 0; i < 210; i++) {
    struct cs_record r = mkrec(i);
    if (i == 7) r.sdc_checked = 1;
    if (i == 8) r.status = 5;  /* an error: counted, not timed */
    if (i >= 200 && i < 204) { /* a group of 4 sharing one 40 ns span: 10 ns each in the series */
      r.group_ops = 4;
      r.end_ns = r.start_ns + 40;
    }
    cs_ring_publish(&r);
  }
  struct cs_record link;
  memset(&link, 0, sizeof link);
  link.type = CS_REC_LINK;
  cs_ring_publish(&link);
  pthread_t t;
  pthread_create(&t, NULL, foreign_health, NULL);
  pthread_join(t, NULL);
  struct cs_ring_health_vals hv;
  memset(&hv, 0, sizeof hv);
  hv.t_ns = 42;
  hv.power_mw = 300000;
  cs_ring_health(&hv);
  cs_ring_gpu_identity("GPU-abc", "0000:0a:00.0");
  cs_ring_gpu_identity("GPU-later", "0000:0b:00.0");

  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, cs_ring_path()), 0);
  const struct cs_ring_stats *b = cs_ring_stats_of(rd.h);
  assert_int_equal(atomic_load(&((struct cs_ring_stats *)(uintptr_t)b)->comm_ids[0]), 0xabcdef);
  struct cs_ring_series_vals v;
  uint64_t gen = 0;
  assert_int_equal(cs_ring_read_series(&b->series[0][CS_OP_AllReduce][0], &v, &gen), 1);
  assert_int_equal(v.count, 210);
  assert_int_equal(v.errors, 1);
  assert_int_equal(v.timed, 209);
  assert_int_equal(v.bucket[0], 209);                                                    /* 10 ns each */
  assert_int_equal(v.dur_ns, 209 * 10);                                                  /* the group's members: a share of their span each */
  assert_int_equal(cs_ring_read_series(&b->series[0][CS_OP_AllReduce][0], &v, &gen), 0); /* unchanged */
  struct cs_record side[8];
  size_t n = cs_ring_read_side(&rd, side, 8);
  assert_int_equal(n, 2);
  assert_int_equal(side[0].seq, 7);
  assert_int_equal(side[1].type, CS_REC_LINK);
  struct cs_ring_health_vals got;
  gen = 0;
  assert_int_equal(cs_ring_read_health(&rd, &got, &gen), 1);
  assert_int_equal(got.t_ns, 42);
  assert_int_equal(got.power_mw, 300000);
  char uuid[96], bus[32];
  assert_true(cs_ring_gpu_ident(&rd, uuid, sizeof uuid, bus, sizeof bus));
  assert_string_equal(uuid, "GPU-abc");
  assert_string_equal(bus, "0000:0a:00.0");
  struct cs_record latest[8];
  n = cs_ring_read_latest(&rd, latest, 8);
  assert_int_equal(n, 8);
  assert_int_equal(latest[7].type, CS_REC_LINK);
  assert_int_equal(latest[0].seq, 203);
  cs_ring_reader_close(&rd);
  cs_ring_close(true);
}

static void test_one_writer(void **st) {
  (void)st;
  setup_cfg(16, "onewriter");
  assert_true(cs_ring_open());
  pthread_t t;
  pthread_create(&t, NULL, foreign_publisher, NULL);
  pthread_join(t, NULL);
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, cs_ring_path()), 0);
  assert_int_equal(atomic_load(&((struct cs_ring_hdr *)(uintptr_t)rd.h)->head), 0);
  cs_ring_reader_close(&rd);
  cs_ring_close(true);
}

/* A ring of this process whose header names another start time: the pid was reused, the
 * writer is gone. The same header with the right start time is alive. */
static void test_pid_reuse(void **st) {
  (void)st;
  setup_cfg(16, "reuse");
  assert_true(cs_ring_open());
  char p[600];
  snprintf(p, sizeof p, "%s", cs_ring_path());
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, p), 0);
  assert_false(cs_ring_writer_dead(rd.h));
  uint64_t born = rd.h->start_time;
  assert_true(born != 0);
  int fd = open(p, O_RDWR);
  uint64_t other = born + 12345;
  assert_int_equal(pwrite(fd, &other, sizeof other, offsetof(struct cs_ring_hdr, start_time)), sizeof other);
  assert_true(cs_ring_writer_dead(rd.h));
  assert_int_equal(pwrite(fd, &born, sizeof born, offsetof(struct cs_ring_hdr, start_time)), sizeof born);
  close(fd);
  assert_false(cs_ring_writer_dead(rd.h));
  cs_ring_reader_close(&rd);
  cs_ring_close(true);
}

/* The reclaim of a dead writer's ring is logged at WARN; a ring a live process is still
 * creating (smaller than a header, no magic yet) is never reclaimed. */
static void test_reclaim_logged_and_half_written_kept(void **st) {
  (void)st;
  setup_cfg(16, "warn");
  pid_t pid = fork();
  if (pid == 0) {
    if (!cs_ring_open()) _exit(1);
    raise(SIGKILL);
    _exit(2);
  }
  waitpid(pid, NULL, 0);
  char logpath[600];
  snprintf(logpath, sizeof logpath, "%s/log", dir);
  int lfd = open(logpath, O_RDWR | O_CREAT | O_TRUNC, 0600), saved = dup(2);
  dup2(lfd, 2);
  cs_cfg.log_level = CS_LOG_WARN;
  bool ok = cs_ring_open();
  cs_cfg.log_level = CS_LOG_QUIET;
  dup2(saved, 2);
  close(saved);
  assert_true(ok);
  char buf[2048] = {0};
  assert_true(pread(lfd, buf, sizeof buf - 1, 0) > 0);
  close(lfd);
  assert_non_null(strstr(buf, "reclaimed stale stats ring"));
  char name[600];
  snprintf(name, sizeof name, "%s/collscope-%u-warn-r3.ring", dir, (unsigned)geteuid());
  assert_string_equal(cs_ring_path(), name);
  cs_ring_close(true);
  /* a segment under the rank's name that is not (yet) a ring: left alone, -p<pid> used */
  int fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  close(fd);
  assert_true(cs_ring_open());
  assert_string_not_equal(cs_ring_path(), name);
  struct stat sb;
  assert_int_equal(stat(name, &sb), 0);
  assert_int_equal(sb.st_size, 0);
  cs_ring_close(true);
  unlink(name);
}

/* A job id longer than the header's field: the name carries what the header holds, so the
 * reader's name/job check accepts the ring. */
static void test_long_job(void **st) {
  (void)st;
  char job[201];
  memset(job, 'j', 200);
  job[200] = 0;
  setup_cfg(16, job);
  assert_true(cs_ring_open());
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, cs_ring_path()), 0);
  cs_ring_reader_close(&rd);
  cs_ring_close(true);
}

/* A hand-made ring file: the header as a writer of uid `uid` and job `job` would make it. */
static void hand_ring(const char *path, const char *job, uint64_t cap, uint64_t slots_in_file, uint64_t head) {
  size_t len = cs_ring_bytes(slots_in_file);
  struct cs_ring_hdr *h = calloc(1, len);
  h->magic = CS_RING_MAGIC;
  h->version = CS_RING_VERSION;
  h->stats_size = sizeof(struct cs_ring_stats);
  h->rec_size = sizeof(struct cs_record);
  h->capacity = cap;
  h->pid = getpid();
  h->uid = (uint32_t)geteuid();
  snprintf(h->job, sizeof h->job, "%s", job);
  atomic_store(&h->init, CS_RING_INIT_MAGIC);
  for (uint64_t n = 0; n < slots_in_file; n++) atomic_store(&cs_ring_slots(h)[n].seq, 2 * n + 2);
  atomic_store(&h->head, head);
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, h, len), (ssize_t)len);
  close(fd);
  free(h);
}

static void expect_rejected(const char *path, int err, const char *why) {
  struct cs_ring_reader rd;
  int rc = cs_ring_reader_open(&rd, path);
  int e = errno;
  if (rc == 0) cs_ring_reader_close(&rd);
  assert_int_equal(rc, -1);
  assert_int_equal(e, err);
  assert_non_null(rd.why);
  if (!strstr(rd.why, why)) print_message("why: %s\n", rd.why);
  assert_non_null(strstr(rd.why, why));
}

static void test_reader_checks(void **st) {
  (void)st;
  unsigned me = (unsigned)geteuid();
  char p[600];
  snprintf(p, sizeof p, "%s/collscope-%u-hostile-r0.ring", dir, me);
  /* 2^61 slots: the size wraps to the header's */
  hand_ring(p, "hostile", 1ull << 61, 8, 8);
  expect_rejected(p, EPROTO, "capacity");
  /* the same with no slots at all: the wrapped size is exactly the file's */
  hand_ring(p, "hostile", 1ull << 61, 0, (1ull << 61) + (1ull << 24));
  expect_rejected(p, EPROTO, "capacity");
  /* a valid capacity that the file is too small for */
  hand_ring(p, "hostile", 1024, 8, 8);
  expect_rejected(p, EPROTO, "file size");
  hand_ring(p, "hostile", 6, 6, 6);
  expect_rejected(p, EPROTO, "power of two");
  /* the header's job is not the name's */
  hand_ring(p, "other", 8, 8, 8);
  expect_rejected(p, EPERM, "job");
  /* sound */
  hand_ring(p, "hostile", 8, 8, 8);
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, p), 0);
  cs_ring_reader_close(&rd);
  if (me == 0) {
    /* owned by another user (65534) under our name; then our file under 65534's name */
    assert_int_equal(chown(p, 65534, 65534), 0);
    expect_rejected(p, EPERM, "owner");
    char q[600];
    snprintf(q, sizeof q, "%s/collscope-65534-hostile-r0.ring", dir);
    hand_ring(q, "hostile", 8, 8, 8);
    expect_rejected(q, EPERM, "owner");
    /* a reader that is not root does not read 65534's ring owned by 65534 if it is not 65534 */
    assert_int_equal(chown(q, 65534, 65534), 0);
    chmod(q, 0644);
    chmod(dir, 0755);
    pid_t c = fork();
    if (c == 0) {
      if (setresuid(65533, 65533, 65533) != 0) _exit(9);
      struct cs_ring_reader r2;
      _exit(cs_ring_reader_open(&r2, q) == 0 ? 1 : errno == EPERM ? 0
                                                                  : 2);
    }
    int status;
    waitpid(c, &status, 0);
    chmod(dir, 0700);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    unlink(q);
  }
  unlink(p);
  /* a FIFO under a ring name: rejected at once, the reader never blocks on it */
  assert_int_equal(mkfifo(p, 0600), 0);
  pid_t c = fork();
  if (c == 0) {
    alarm(5);
    struct cs_ring_reader r3;
    _exit(cs_ring_reader_open(&r3, p) == 0 ? 1 : 0);
  }
  int status;
  waitpid(c, &status, 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  unlink(p);
}

/* The writer may change the header after the reader checked it: reads keep to the checked
 * capacity. */
static void test_capacity_changed_after_open(void **st) {
  (void)st;
  char p[600];
  snprintf(p, sizeof p, "%s/collscope-%u-toctou-r0.ring", dir, (unsigned)geteuid());
  hand_ring(p, "toctou", 8, 8, 8);
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, p), 0);
  int fd = open(p, O_RDWR);
  uint64_t huge = 1ull << 61, head = (1ull << 61) + (1ull << 30);
  assert_int_equal(pwrite(fd, &huge, sizeof huge, offsetof(struct cs_ring_hdr, capacity)), sizeof huge);
  assert_int_equal(pwrite(fd, &head, sizeof head, offsetof(struct cs_ring_hdr, head)), sizeof head);
  close(fd);
  struct cs_record out[8];
  size_t n = cs_ring_read(&rd, out, 8);
  assert_true(n <= 8);
  cs_ring_reader_close(&rd);
  unlink(p);
}

#define STRESS_N 400000ull
static _Atomic int writer_done;
static void *stress_writer(void *arg) {
  (void)arg;
  cs_ring_adopt();
  for (uint64_t i = 0; i < STRESS_N; i++) {
    struct cs_record r = mkrec(i);
    cs_ring_publish(&r);
  }
  atomic_store(&writer_done, 1);
  return NULL;
}

static void test_stress(void **st) {
  (void)st;
  setup_cfg(1024, "stress");
  assert_true(cs_ring_open());
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, cs_ring_path()), 0);
  atomic_store(&writer_done, 0);
  pthread_t t;
  pthread_create(&t, NULL, stress_writer, NULL);
  static struct cs_record out[256];
  uint64_t got = 0, expect = 0;
  for (;;) {
    int done = atomic_load(&writer_done);
    size_t n = cs_ring_read(&rd, out, 256);
    for (size_t i = 0; i < n; i++) {
      /* every record is intact, in order; a gap is exactly what the reader reported lost */
      assert_true(out[i].seq >= expect);
      assert_int_equal(out[i].bytes, out[i].seq * 3 + 1);
      assert_int_equal(out[i].end_ns, (int64_t)out[i].seq + 20);
      expect = out[i].seq + 1;
      got++;
    }
    assert_int_equal(got + rd.lost, expect);
    if (done && n == 0) break;
    if (n == 0) sched_yield();
  }
  pthread_join(t, NULL);
  assert_int_equal(got + rd.lost, STRESS_N);
  print_message("stress: %llu records, %llu read, %llu reported overwritten\n", (unsigned long long)STRESS_N,
                (unsigned long long)got, (unsigned long long)rd.lost);
  cs_ring_reader_close(&rd);
  cs_ring_adopt();
  cs_ring_close(true);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/collscope-ringtest-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  setenv("COLLSCOPE_SHM_DIR", dir, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic),
      cmocka_unit_test(test_uninitialised_and_symlink),
      cmocka_unit_test(test_stale_reclaim_and_keep),
      cmocka_unit_test(test_one_writer),
      cmocka_unit_test(test_pid_reuse),
      cmocka_unit_test(test_reclaim_logged_and_half_written_kept),
      cmocka_unit_test(test_reader_checks),
      cmocka_unit_test(test_long_job),
      cmocka_unit_test(test_capacity_changed_after_open),
      cmocka_unit_test(test_stress),
      cmocka_unit_test(test_summary_block),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) rc = rc ? rc : 0;
  return rc;
}
