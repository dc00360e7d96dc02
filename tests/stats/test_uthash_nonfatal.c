/* tests/stats/test_uthash_nonfatal.c: include/collscope/uthash_nonfatal.h, uthash as the job's
 * process uses it: an allocation failure while adding leaves the element out, sets the flag that
 * CS_HASH_ADDED() reads and clears, and never ends the process (uthash's default exits). The
 * table's allocations are made to fail here through uthash_malloc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

static int fail_allocs; /* the next this many table allocations fail */
static void *table_malloc(size_t n) {
  if (fail_allocs > 0) {
    fail_allocs--;
    return NULL;
  }
  return malloc(n);
}
#define uthash_malloc(sz) table_malloc(sz)
#include "collscope/uthash_nonfatal.h"

struct item {
  int key;
  UT_hash_handle hh;
};

static void test_add_fails_then_works(void **state) {
  (void)state;
  struct item *table = NULL, *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *f;
  assert_non_null(a);
  assert_non_null(b);
  a->key = 1, b->key = 2;
  fail_allocs = 1; /* the first add allocates the table: it fails */
  HASH_ADD_INT(table, key, a);
  assert_false(CS_HASH_ADDED());
  assert_null(table);           /* left out, the process alive */
  assert_true(CS_HASH_ADDED()); /* the flag was cleared */
  HASH_ADD_INT(table, key, a);
  assert_true(CS_HASH_ADDED());
  HASH_ADD_INT(table, key, b);
  assert_true(CS_HASH_ADDED());
  int k = 2;
  HASH_FIND_INT(table, &k, f);
  assert_ptr_equal(f, b);
  assert_int_equal(HASH_COUNT(table), 2);
  HASH_CLEAR(hh, table);
  free(a);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_add_fails_then_works)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
