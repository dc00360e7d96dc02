/* tests/stats/test_ring_race.c: concurrent creation of stats rings (stats/ring_writer.c), the real
 * writer code in forked processes. A trial is NPROC processes of one job without a rank (so
 * they all want the same ring name); each round starts PAR trials (jobs) at the same instant.
 * While all of them are still alive, every process must have a ring that a reader finds
 * under a ring name with its own pid in the header; a trial where a reader finds fewer is a
 * lost ring. Prints the counts; passes only when no trial lost one. RING_RACE_ROUNDS=N runs
 * N rounds instead of ROUNDS (longer runs outside CI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stats/ring_writer.h"

#define ROUNDS 30
#define PAR 10 /* trials per round, run together */
#define NPROC 4

static char dir[256];

static void child(int go, int ready, int done, const char *job) {
  cs_cfg.log_level = CS_LOG_QUIET;
  cs_cfg.ring_cap = 16;
  cs_cfg.keep_shm = false;
  cs_cfg.rank = -1; /* no RANK in the environment: every process wants collscope-<uid>-<job>-rx.ring */
  cs_cfg.local_rank = -1;
  cs_cfg.world_size = -1;
  snprintf(cs_cfg.host, sizeof cs_cfg.host, "racehost");
  snprintf(cs_cfg.job, sizeof cs_cfg.job, "%.63s", job);
  char c;
  if (read(go, &c, 1) != 0) _exit(3); /* returns 0 when the parent closes it: everyone starts */
  char ok = cs_ring_open() ? 1 : 0;
  if (write(ready, &ok, 1) != 1) _exit(4);
  if (read(done, &c, 1) < 0) _exit(5); /* stay alive until the parent has looked */
  _exit(0);                            /* no clean close: the parent removes the rings */
}

/* Rings of JOB in dir whose header pid is one of pids[0..n): how many distinct ones. */
static int count_rings(const char *job, const pid_t *pids, int n) {
  char pre[300];
  snprintf(pre, sizeof pre, "collscope-%u-%.63s-r", (unsigned)geteuid(), job);
  bool seen[NPROC] = {false};
  DIR *d = opendir(dir);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, pre, strlen(pre)) != 0) continue;
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct cs_ring_reader rd;
    if (cs_ring_reader_open(&rd, p) != 0) continue;
    for (int i = 0; i < n; i++)
      if (rd.h->pid == pids[i]) seen[i] = true;
    cs_ring_reader_close(&rd);
  }
  closedir(d);
  int c = 0;
  for (int i = 0; i < n; i++) c += seen[i];
  return c;
}

static void remove_all(void) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' && (e->d_name[1] == 0 || (e->d_name[1] == '.' && e->d_name[2] == 0))) continue;
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
}

static void test_concurrent_creators(void **st) {
  (void)st;
  unsigned lost_trials = 0, lost_rings = 0, failed_opens = 0, rounds = ROUNDS;
  const char *env_rounds = getenv("RING_RACE_ROUNDS");
  if (env_rounds && atoi(env_rounds) > 0) rounds = (unsigned)atoi(env_rounds);
  for (unsigned round = 0; round < rounds; round++) {
    char job[PAR][32];
    int go[2], ready[2], done[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(done), 0);
    pid_t pids[PAR][NPROC];
    for (int j = 0; j < PAR; j++) {
      snprintf(job[j], sizeof job[j], "race%u_%d", round, j);
      for (int i = 0; i < NPROC; i++) {
        pids[j][i] = fork();
        assert_true(pids[j][i] >= 0);
        if (pids[j][i] == 0) {
          close(go[1]);
          close(ready[0]);
          close(done[1]);
          child(go[0], ready[1], done[0], job[j]);
        }
      }
    }
    close(go[0]);
    close(ready[1]);
    close(done[0]);
    close(go[1]); /* start */
    for (int i = 0; i < PAR * NPROC; i++) {
      char ok = 0;
      assert_int_equal(read(ready[0], &ok, 1), 1);
      failed_opens += !ok;
    }
    for (int j = 0; j < PAR; j++) {
      int found = count_rings(job[j], pids[j], NPROC);
      if (found < NPROC) {
        lost_trials++;
        lost_rings += (unsigned)(NPROC - found);
      }
    }
    close(done[1]); /* let them go */
    close(ready[0]);
    for (int j = 0; j < PAR; j++)
      for (int i = 0; i < NPROC; i++) waitpid(pids[j][i], NULL, 0);
    remove_all();
  }
  print_message("ring creation race: %u trials of %d processes: %u trials lost a ring (%u rings lost), "
                "%u creations failed\n",
                rounds * PAR, NPROC, lost_trials, lost_rings, failed_opens);
  assert_int_equal(failed_opens, 0);
  assert_int_equal(lost_trials, 0);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/collscope-ringrace-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  setenv("COLLSCOPE_SHM_DIR", dir, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_creators),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  remove_all();
  rmdir(dir);
  return rc;
}
