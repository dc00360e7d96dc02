/* tests/stats/test_queue.c: the lock-free record queue (stats/queue.c): FIFO order,
 * full/empty edges, and several producers against one consumer with no loss and no
 * reordering per producer (run under ASan and TSan by scripts/test.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include "stats/queue.h"

static void fifo_and_edges(void **state) {
  (void)state;
  struct cs_queue q;
  assert_true(cs_queue_init(&q, 5, sizeof(uint64_t))); /* rounds up to 8 */
  uint64_t v;
  assert_false(cs_queue_pop(&q, &v));
  for (uint64_t i = 0; i < 8; i++) assert_true(cs_queue_push(&q, &i));
  uint64_t extra = 99;
  assert_false(cs_queue_push(&q, &extra));
  for (uint64_t i = 0; i < 8; i++) {
    assert_true(cs_queue_pop(&q, &v));
    assert_int_equal(v, i);
  }
  assert_false(cs_queue_pop(&q, &v));
  /* wrap around many times */
  for (uint64_t i = 0; i < 1000; i++) {
    assert_true(cs_queue_push(&q, &i));
    assert_true(cs_queue_pop(&q, &v));
    assert_int_equal(v, i);
  }
  cs_queue_destroy(&q);
}

#define PRODUCERS 4
#define PER 50000
static struct cs_queue mq;
struct item {
  uint32_t producer, n;
};

static void *producer(void *arg) {
  uint32_t id = (uint32_t)(uintptr_t)arg;
  for (uint32_t i = 0; i < PER; i++) {
    struct item it = {id, i};
    while (!cs_queue_push(&mq, &it)) sched_yield();
  }
  return NULL;
}

static void many_producers(void **state) {
  (void)state;
  assert_true(cs_queue_init(&mq, 1024, sizeof(struct item)));
  pthread_t th[PRODUCERS];
  for (uintptr_t i = 0; i < PRODUCERS; i++) pthread_create(&th[i], NULL, producer, (void *)i);
  uint32_t next[PRODUCERS] = {0};
  size_t got = 0;
  while (got < (size_t)PRODUCERS * PER) {
    struct item it;
    if (!cs_queue_pop(&mq, &it)) {
      sched_yield();
      continue;
    }
    assert_true(it.producer < PRODUCERS);
    assert_int_equal(it.n, next[it.producer]);
    next[it.producer]++;
    got++;
  }
  for (int i = 0; i < PRODUCERS; i++) pthread_join(th[i], NULL);
  struct item it;
  assert_false(cs_queue_pop(&mq, &it));
  cs_queue_destroy(&mq);
}

/* the inlined push of a large constant-size item (the record queue's path): whole items,
 * in each producer's order, under concurrent producers */
#define BIG_WORDS 28 /* 224 bytes, the size of a record */
#define BIG_PER 20000
static struct cs_queue bq;
struct big {
  uint64_t w[BIG_WORDS];
};

static void *big_producer(void *arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  for (uint64_t i = 0; i < BIG_PER; i++) {
    struct big b;
    for (int k = 0; k < BIG_WORDS; k++) b.w[k] = (id << 48) | (i << 8) | (uint64_t)k;
    while (!cs_queue_push_sized(&bq, &b, sizeof(b))) sched_yield();
  }
  return NULL;
}

static void many_producers_sized(void **state) {
  (void)state;
  assert_true(cs_queue_init(&bq, 256, sizeof(struct big)));
  pthread_t th[PRODUCERS];
  for (uintptr_t i = 0; i < PRODUCERS; i++) pthread_create(&th[i], NULL, big_producer, (void *)i);
  uint64_t next[PRODUCERS] = {0};
  for (size_t got = 0; got < (size_t)PRODUCERS * BIG_PER;) {
    struct big b;
    if (!cs_queue_pop(&bq, &b)) {
      sched_yield();
      continue;
    }
    uint64_t id = b.w[0] >> 48, n = (b.w[0] >> 8) & 0xffffffffffull;
    assert_true(id < PRODUCERS);
    assert_int_equal(n, next[id]);
    for (int k = 0; k < BIG_WORDS; k++) assert_int_equal(b.w[k], (id << 48) | (n << 8) | (uint64_t)k);
    next[id]++;
    got++;
  }
  for (int i = 0; i < PRODUCERS; i++) pthread_join(th[i], NULL);
  cs_queue_destroy(&bq);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(fifo_and_edges), cmocka_unit_test(many_producers),
                                     cmocka_unit_test(many_producers_sized)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
