/* tests/stats/test_comm_table_race.c: the communicator table (stats/comm_table.c) written by
 * one thread (the job's: communicator init and destroy) while others read it (collscope's:
 * cs_comm_foreach on the harvest and exchange threads, cs_comm_lookup on the hot path). Every
 * field of an entry is a function of its key and round, so a reader checks that what it
 * sees is one whole entry, never a mix of an old and a new one or a half-written one. Under
 * TSan (meson test --suite stats in a -Db_sanitize=thread tree) a write that is not ordered
 * before the readers' accesses is reported and fails the test. Slots are reused (inserts land
 * on the tombstones of removed entries), and communicators are registered again without a
 * remove. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "stats/core.h"

#define NCOMMS 24
#define ROUNDS 3000
#define STABLE 4 /* communicators registered for the whole run: the lookup thread's */

static char comms[NCOMMS + STABLE];
static _Atomic int writer_done;
static _Atomic long bad, seen;

static int comm_index(const void *key) {
  const char *k = key;
  return k >= comms && k < comms + NCOMMS + STABLE ? (int)(k - comms) : -1;
}

/* the entry of communicator i in round r: each field derived from (i, r) */
static struct cs_comm entry_of(int i, uint64_t r) {
  struct cs_comm e;
  memset(&e, 0, sizeof e);
  e.id = (r << 16) | (uint64_t)i;
  e.parent_id = ~e.id;
  e.size = (int)(r % 1000) + i + 2;
  e.rank = e.size - 1;
  e.device = (int)((r + (uint64_t)i) % 8);
  e.nonblocking = (r + (uint64_t)i) & 1;
  return e;
}

static bool whole(const void *key, const struct cs_comm *c) {
  int i = comm_index(key);
  if (i < 0 || (int)(c->id & 0xffff) != i) return false;
  struct cs_comm want = entry_of(i, c->id >> 16);
  return c->parent_id == want.parent_id && c->size == want.size && c->rank == want.rank &&
         c->device == want.device && c->nonblocking == want.nonblocking;
}

static void check_one(void *comm, struct cs_comm *c, void *arg) {
  (void)arg;
  atomic_fetch_add(&seen, 1);
  if (!whole(comm, c)) {
    if (atomic_fetch_add(&bad, 1) == 0)
      fprintf(stderr, "torn entry: comm %d id %llx size %d rank %d device %d\n", comm_index(comm),
              (unsigned long long)c->id, c->size, c->rank, c->device);
  }
}

static void *foreach_reader(void *arg) {
  (void)arg;
  while (!atomic_load(&writer_done)) cs_comm_foreach(check_one, NULL);
  return NULL;
}

/* lookups of communicators that stay registered (using one being destroyed is the job's
 * error, as NCCL forbids it) */
static void *lookup_reader(void *arg) {
  (void)arg;
  while (!atomic_load(&writer_done))
    for (int i = NCOMMS; i < NCOMMS + STABLE; i++) {
      struct cs_comm *c = cs_comm_lookup(&comms[i]);
      if (!c || !whole(&comms[i], c)) atomic_fetch_add(&bad, 1);
    }
  return NULL;
}

static void register_vs_readers(void **state) {
  (void)state;
  for (int i = NCOMMS; i < NCOMMS + STABLE; i++) {
    struct cs_comm e = entry_of(i, 0);
    assert_non_null(cs_comm_insert(&comms[i], &e));
  }
  pthread_t rd[2];
  assert_int_equal(pthread_create(&rd[0], NULL, foreach_reader, NULL), 0);
  assert_int_equal(pthread_create(&rd[1], NULL, lookup_reader, NULL), 0);
  for (uint64_t r = 1; r <= ROUNDS; r++) {
    for (int i = 0; i < NCOMMS; i++) {
      struct cs_comm e = entry_of(i, r);
      struct cs_comm *c = cs_comm_insert(&comms[i], &e);
      assert_non_null(c);
      assert_ptr_equal(cs_comm_lookup(&comms[i]), c);
      assert_int_equal(atomic_load(&c->seq), 0);
    }
    if (r % 3) /* two rounds of three destroy everything; the third registers again on top */
      for (int i = 0; i < NCOMMS; i++) {
        cs_comm_remove(&comms[i]);
        assert_null(cs_comm_lookup(&comms[i]));
      }
  }
  atomic_store(&writer_done, 1);
  pthread_join(rd[0], NULL);
  pthread_join(rd[1], NULL);
  printf("comm table: %ld entries read by foreach, %ld torn\n", atomic_load(&seen), atomic_load(&bad));
  assert_int_equal(atomic_load(&bad), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(register_vs_readers)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
