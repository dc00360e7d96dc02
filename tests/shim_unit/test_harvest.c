/* tests/shim_unit/test_harvest.c: the record path end to end inside one process, with
 * the null CUDA driver (bench/null): several threads issue timed ops, grouped ops and
 * memcpy-like transfers through hooks/timing.c while the harvest thread completes and
 * writes them. Checks that every record reaches the file exactly once, that grouped
 * ops share one group id per group, and that per-comm sequence numbers are unique.
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
#include "hooks/timing.h"
#include "shim/cs_internal.h"
#include "stats/dump_writer.h"

#define THREADS 4
#define OPS 5000
static const char *null_cuda;
static int comm_a, comm_b; /* addresses used as ncclComm_t keys */

static void *worker(void *arg) {
  int t = (int)(intptr_t)arg;
  void *comm = (t % 2) ? (void *)&comm_a : (void *)&comm_b;
  void *stream = (void *)(uintptr_t)(0x1000 + t);
  for (int i = 0; i < OPS; i++) {
    struct cs_record r;
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
  cs_config_load();
  cs_ensure_init();
  assert_int_equal(atomic_load(&cs_st.ready), 1);
  struct cs_comm *a = cs_comm_insert(&comm_a), *b = cs_comm_insert(&comm_b);
  assert_non_null(a);
  assert_non_null(b);
  a->id = 0xaaaa; a->size = 2; a->rank = 0;
  b->id = 0xbbbb; b->size = 2; b->rank = 1;
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
      if (!strcmp(timing, "gpu_event")) gpu++;
      else if (!strcmp(timing, "host")) host++;
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

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  null_cuda = argv[1];
  const struct CMUnitTest tests[] = {cmocka_unit_test(many_threads)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
