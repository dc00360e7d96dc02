/* tests/stats/test_harvest.c: the record path end to end inside one process, with
 * the null CUDA driver (bench/null): several threads issue timed ops, grouped ops and
 * memcpy-like transfers through hooks/timing.c while the harvest thread completes and
 * writes them. Checks that every record reaches the file exactly once, that grouped
 * ops share one group id per group, and that per-comm sequence numbers are unique.
 * Order (in a child process): one op whose work stays pending while the N ops enqueued after
 * it on its communicator finish (sampled-out ops behind a timed one) is still written before
 * them; past the bound (stats/harvest.c HOLD_MAX) it stops holding them and is counted.
 * Termination signals (in child processes): SIGTERM, SIGINT, SIGHUP or abort() after N ops leaves N
 * op records and a footer and still kills the process with that signal; a handler the job had installed runs
 * after the flush; an ignored SIGTERM stays ignored.
 * Run under TSan by scripts/test.sh. argv[1] = path of the null libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "hooks/timing.h"
#include "shim/cs_internal.h"
#include "stats/dump_writer.h"
#include "stats/harvest.h"
#include <stdatomic.h>

#define THREADS 4
#define OPS 5000
static const char *null_cuda;
static int comm_a, comm_b; /* addresses used as ncclComm_t keys */
/* Two threads per communicator, taking turns as NCCL requires ("only one thread operates the
 * communicator at a time", user guide, Thread Safety): the shim takes a communicator's seq
 * with a load and a store, which relies on that rule. */
static pthread_mutex_t comm_lock[2] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

static void *worker(void *arg) {
  int t = (int)(intptr_t)arg;
  void *comm = (t % 2) ? (void *)&comm_a : (void *)&comm_b;
  void *stream = (void *)(uintptr_t)(0x1000 + t);
  for (int i = 0; i < OPS; i++) {
    struct cs_record r;
    pthread_mutex_lock(&comm_lock[t % 2]);
    if (i % 10 == 0) { /* a group of two ops */
      cs_group_started();
      struct cs_comm *c = cs_op_begin(&r, CS_OP_Send, comm, 16, 7, -1, -1, 1, stream, NULL);
      cs_op_returned(&r, c, 0, 7);
      cs_op_end(&r);
      c = cs_op_begin(&r, CS_OP_Recv, comm, 16, 7, -1, -1, 1, stream, NULL);
      cs_op_returned(&r, c, 0, 7);
      cs_op_end(&r);
      cs_group_launch_begin();
      cs_tls.group_depth--;
      cs_group_launch_returned(0, 7);
      cs_group_launch_end(0, 7);
    } else {
      struct cs_comm *c = cs_op_begin(&r, CS_OP_AllReduce, comm, 1024, 7, 0, -1, -1, stream, NULL);
      cs_op_returned(&r, c, 0, 7);
      cs_op_end(&r);
    }
    pthread_mutex_unlock(&comm_lock[t % 2]);
  }
  return NULL;
}

static void many_threads(void **state) {
  (void)state;
  char dir[] = "/tmp/cs-harvest-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_LIBCUDA", null_cuda, 1);
  setenv("COLLSCOPE_QUEUE", "262144", 1);
  setenv("COLLSCOPE_EVENT_SAMPLE", "1", 1); /* every op wants events: the pool runs dry */
  cs_config_load();
  cs_ensure_init();
  assert_int_equal(atomic_load(&cs_st.ready), 1);
  struct cs_comm ia = {.id = 0xaaaa, .size = 2, .rank = 0, .device = -1},
                 ib = {.id = 0xbbbb, .size = 2, .rank = 1, .device = -1};
  struct cs_comm *a = cs_comm_insert(&comm_a, &ia), *b = cs_comm_insert(&comm_b, &ib);
  assert_non_null(a);
  assert_non_null(b);
  pthread_t th[THREADS];
  for (intptr_t t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  cs_harvest_stop(2000);

  FILE *f = fopen(cs_dump_path(), "r");
  assert_non_null(f);
  char line[4096];
  long ops = 0, gpu = 0, host = 0, drops = 0, timing_lost = -1;
  static unsigned char seen[2][THREADS * OPS * 2];
  long groups_sr = 0;
  while (fgets(line, sizeof(line), f)) {
    json_error_t err;
    json_t *j = json_loads(line, 0, &err);
    assert_non_null(j);
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!strcmp(type, "op")) {
      ops++;
      const char *timing = json_string_value(json_object_get(j, "timing"));
      if (!strcmp(timing, "gpu_event"))
        gpu++;
      else if (!strcmp(timing, "host"))
        host++;
      int which = !strcmp(json_string_value(json_object_get(j, "comm")), "000000000000aaaa") ? 0 : 1;
      json_int_t seq = json_integer_value(json_object_get(j, "seq"));
      assert_true(seq >= 0 && seq < THREADS * OPS * 2);
      assert_int_equal(seen[which][seq], 0); /* each (comm, seq) exactly once */
      seen[which][seq] = 1;
      if (json_integer_value(json_object_get(j, "group"))) groups_sr++;
    } else if (!strcmp(type, "footer")) {
      timing_lost = json_integer_value(json_object_get(j, "timing_lost"));
    } else if (!strcmp(type, "drops")) {
      drops += json_integer_value(json_object_get(j, "count"));
    }
    json_decref(j);
  }
  fclose(f);
  long want = THREADS * (OPS - OPS / 10) + THREADS * (OPS / 10) * 2;
  assert_int_equal(drops, 0);
  assert_int_equal(ops, want);
  /* ops issued faster than the harvest thread can recycle events get host timing, and
   * each one is counted in the footer's timing_lost: nothing is silent */
  assert_int_equal(gpu + host, want);
  assert_true(gpu > 0);
  /* a lost event pair costs one op, or every op of a group on that stream */
  assert_true(timing_lost >= 0 && timing_lost <= host);
  assert_true((host == 0) == (timing_lost == 0));
  assert_int_equal(groups_sr, THREADS * (OPS / 10) * 2);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* ---- termination signals, each in a child (this program again: argv "term-child DIR H SIG N")
 * that runs "a job" of n ops ---- */
enum job_handler { JOB_DEFAULT,
                   JOB_HANDLER,
                   JOB_IGNORE };
static void job_on_term(int sig) {
  (void)sig;
  _exit(7);
}

/* the child: set up, n ops on two streams, sig to itself, n ops more */
static __attribute__((noreturn)) void term_child(const char *dir, enum job_handler h, int sig, int n) {
  if (h == JOB_HANDLER) signal(sig, job_on_term);
  if (h == JOB_IGNORE) signal(sig, SIG_IGN);
  if (h == JOB_DEFAULT) signal(sig, SIG_DFL); /* a harness run under nohup ignores SIGHUP */
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_LIBCUDA", null_cuda, 1);
  setenv("COLLSCOPE_FLUSH_MS", "1000", 1);
  cs_config_load();
  cs_ensure_init();
  if (!atomic_load(&cs_st.ready)) _exit(3);
  struct cs_comm ic = {.id = 0xaaaa, .size = 2, .rank = 0, .device = -1};
  if (!cs_comm_insert(&comm_a, &ic)) _exit(4);
  for (int i = 0; i < n; i++) {
    struct cs_record r;
    struct cs_comm *cc = cs_op_begin(&r, CS_OP_AllReduce, &comm_a, 1024, 7, 0, -1, -1, (void *)(uintptr_t)(0x1000 + i % 2), NULL);
    cs_op_returned(&r, cc, 0, 7);
    cs_op_end(&r);
  }
  if (sig == SIGABRT) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    abort(); /* the job's own abort(): glibc raises SIGABRT, collscope's handler runs first */
  }
  raise(sig);
  /* only an ignored signal gets here: recording goes on, exit writes the footer */
  for (int i = 0; i < n; i++) {
    struct cs_record r;
    struct cs_comm *cc = cs_op_begin(&r, CS_OP_AllReduce, &comm_a, 1024, 7, 0, -1, -1, (void *)(uintptr_t)0x1000, NULL);
    cs_op_returned(&r, cc, 0, 7);
    cs_op_end(&r);
  }
  exit(0);
}

/* ---- the order of a communicator's records (argv "order-child DIR N") ---- */
static _Atomic int gate_open;
static bool gate_complete(struct cs_record *r, bool final) {
  return final || atomic_load(&gate_open) || r->type != CS_REC_OP || r->seq != 0;
}
static const struct cs_harvest_client gate = {.name = "gate", .complete = gate_complete};

/* the child: seq 0 stays pending until n later ops of its communicator were harvested; exits
 * with the number of pending ops that stopped holding (at most 100) */
static __attribute__((noreturn)) void order_child(const char *dir, int n) {
  setenv("COLLSCOPE_DIR", dir, 1);
  setenv("COLLSCOPE_LIBCUDA", null_cuda, 1);
  setenv("COLLSCOPE_QUEUE", "65536", 1);
  setenv("COLLSCOPE_TIMING", "off", 1); /* host timing: every op but the gated one finishes at once */
  if (!cs_harvest_register(&gate)) _exit(101);
  cs_config_load();
  cs_ensure_init();
  if (!atomic_load(&cs_st.ready)) _exit(102);
  struct cs_comm ic = {.id = 0xaaaa, .size = 2, .rank = 0, .device = -1};
  if (!cs_comm_insert(&comm_a, &ic)) _exit(103);
  for (int i = 0; i <= n; i++) {
    struct cs_record r;
    struct cs_comm *cc = cs_op_begin(&r, CS_OP_AllReduce, &comm_a, 1024, 7, 0, -1, -1, (void *)(uintptr_t)0x1000, NULL);
    cs_op_returned(&r, cc, 0, 7);
    cs_op_end(&r);
  }
  cs_flush(10000); /* a pass after every op was queued: all but seq 0 are finished */
  cs_flush(10000);
  atomic_store(&gate_open, 1);
  cs_harvest_stop(5000);
  uint64_t breaks = cs_harvest_order_breaks();
  _exit(breaks > 100 ? 100 : (int)breaks);
}

/* runs the order child; returns its exit status, the op seqs in the file's order in seqs */
static int run_order_child(int n, long *seqs, long *nseqs) {
  char dir[] = "/tmp/cs-harvest-order-XXXXXX";
  assert_non_null(mkdtemp(dir));
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char ns[16];
    snprintf(ns, sizeof ns, "%d", n);
    execl("/proc/self/exe", "test_shim_harvest", null_cuda, "order-child", dir, ns, (char *)NULL);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  char cmd[256];
  snprintf(cmd, sizeof cmd, "cat %s/*.jsonl", dir);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  char line[4096];
  *nseqs = 0;
  while (fgets(line, sizeof line, f)) {
    json_t *j = json_loads(line, 0, NULL);
    assert_non_null(j);
    if (!strcmp(json_string_value(json_object_get(j, "type")), "op") && *nseqs <= n)
      seqs[(*nseqs)++] = (long)json_integer_value(json_object_get(j, "seq"));
    json_decref(j);
  }
  pclose(f);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
  return WEXITSTATUS(st);
}

static void ops_behind_a_pending_op_keep_seq_order(void **state) {
  (void)state;
  static long seqs[2001];
  long n;
  assert_int_equal(run_order_child(500, seqs, &n), 0); /* 500 held: nothing out of order */
  assert_int_equal(n, 501);
  for (long i = 0; i < n; i++) assert_int_equal(seqs[i], i);
  /* 2000 behind it: past the bound the pending op stops holding them, once, and comes last */
  assert_int_equal(run_order_child(2000, seqs, &n), 1);
  assert_int_equal(n, 2001);
  for (long i = 0; i < 2000; i++) assert_int_equal(seqs[i], i + 1);
  assert_int_equal(seqs[2000], 0);
}

/* runs the child; returns its wait status and the op records and footer of its dump */
static int run_term_child(enum job_handler h, int sig, int n, long *ops, long *drops, int *footer) {
  char dir[] = "/tmp/cs-harvest-term-XXXXXX";
  assert_non_null(mkdtemp(dir));
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char hs[8], ss[8], ns[16];
    snprintf(hs, sizeof hs, "%d", (int)h);
    snprintf(ss, sizeof ss, "%d", sig);
    snprintf(ns, sizeof ns, "%d", n);
    execl("/proc/self/exe", "test_shim_harvest", null_cuda, "term-child", dir, hs, ss, ns, (char *)NULL);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "cat %s/*.jsonl", dir);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  char line[4096];
  *ops = *drops = 0;
  *footer = 0;
  while (fgets(line, sizeof line, f)) {
    json_t *j = json_loads(line, 0, NULL);
    assert_non_null(j);
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!strcmp(type, "op")) (*ops)++;
    if (!strcmp(type, "footer")) {
      (*footer)++;
      *drops = json_integer_value(json_object_get(j, "drops"));
    }
    json_decref(j);
  }
  pclose(f);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
  return st;
}

static void sigterm_writes_footer_and_still_kills(void **state) {
  (void)state;
  static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGABRT};
  for (int k = 0; k < 4; k++) {
    long ops, drops;
    int footer;
    int st = run_term_child(JOB_DEFAULT, sigs[k], 3000, &ops, &drops, &footer);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), sigs[k]); /* the job's fate is unchanged */
    assert_int_equal(footer, 1);
    assert_int_equal(ops + drops, 3000);
  }
}

static void sigterm_reaches_the_jobs_handler(void **state) {
  (void)state;
  long ops, drops;
  int footer;
  int st = run_term_child(JOB_HANDLER, SIGTERM, 3000, &ops, &drops, &footer);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 7); /* its handler ran, after the flush */
  assert_int_equal(footer, 1);
  assert_int_equal(ops + drops, 3000);
}

static void ignored_sigterm_stays_ignored(void **state) {
  (void)state;
  long ops, drops;
  int footer;
  int st = run_term_child(JOB_IGNORE, SIGTERM, 3000, &ops, &drops, &footer);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(footer, 1);
  assert_int_equal(ops + drops, 6000);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  null_cuda = argv[1];
  if (argc == 7 && !strcmp(argv[2], "term-child"))
    term_child(argv[3], (enum job_handler)atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
  if (argc == 5 && !strcmp(argv[2], "order-child")) order_child(argv[3], atoi(argv[4]));
  const struct CMUnitTest tests[] = {cmocka_unit_test(sigterm_writes_footer_and_still_kills),
                                     cmocka_unit_test(sigterm_reaches_the_jobs_handler),
                                     cmocka_unit_test(ignored_sigterm_stays_ignored),
                                     cmocka_unit_test(ops_behind_a_pending_op_keep_seq_order),
                                     cmocka_unit_test(many_threads)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
