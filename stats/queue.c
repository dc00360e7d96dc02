/* stats/queue.c: the bounded lock-free queue (see queue.h). */
#include "queue.h"
#include <stdlib.h>
#include <string.h>

#define CELL_SEQ CS_QUEUE_CELL_SEQ
#define CELL_DATA CS_QUEUE_CELL_DATA

/* small items (the event pools' handle pairs) get a constant-size copy, not a call to memcpy */
static inline void item_copy(const struct cs_queue *q, void *dst, const void *src) {
  if (q->item_size == 16)
    memcpy(dst, src, 16);
  else if (q->item_size == 8)
    memcpy(dst, src, 8);
  else
    memcpy(dst, src, q->item_size);
}

bool cs_queue_init(struct cs_queue *q, size_t capacity, size_t item_size) {
  size_t cap = 2;
  while (cap < capacity) cap <<= 1;
  q->mask = cap - 1;
  q->item_size = item_size;
  q->cell_size = (sizeof(size_t) * 2 + item_size + 15) & ~(size_t)15;
  q->cells = aligned_alloc(64, (cap * q->cell_size + 63) & ~(size_t)63);
  if (!q->cells) return false;
  for (size_t i = 0; i < cap; i++) atomic_store_explicit(CELL_SEQ(q, i), i, memory_order_relaxed);
  atomic_store(&q->head, 0);
  atomic_store(&q->tail, 0);
  return true;
}

void cs_queue_destroy(struct cs_queue *q) {
  free(q->cells);
  q->cells = NULL;
}

bool cs_queue_push(struct cs_queue *q, const void *item) {
  /* small items (the event pools' handle pairs) get a constant-size copy */
  if (q->item_size == 16) return cs_queue_push_sized(q, item, 16);
  if (q->item_size == 8) return cs_queue_push_sized(q, item, 8);
  return cs_queue_push_sized(q, item, q->item_size);
}

bool cs_queue_pop(struct cs_queue *q, void *item) {
  size_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
  for (;;) {
    size_t i = pos & q->mask;
    size_t seq = atomic_load_explicit(CELL_SEQ(q, i), memory_order_acquire);
    intptr_t dif = (intptr_t)seq - (intptr_t)(pos + 1);
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        item_copy(q, item, CELL_DATA(q, i));
        atomic_store_explicit(CELL_SEQ(q, i), pos + q->mask + 1, memory_order_release);
        return true;
      }
    } else if (dif < 0) {
      return false; /* empty */
    } else {
      pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    }
  }
}

size_t cs_queue_size_approx(struct cs_queue *q) {
  size_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  return t >= h ? t - h : 0;
}
