/* stats/queue.h: bounded lock-free multi-producer queue of fixed-size items (Vyukov's
 * array queue: one sequence number per cell, no ABA, no locks, no syscalls). Used for
 * the record queue (wrappers -> harvest thread) and the per-context event pools. */
#ifndef COLLSCOPE_QUEUE_H
#define COLLSCOPE_QUEUE_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

struct cs_queue {
  size_t mask;
  size_t item_size;
  size_t cell_size;
  unsigned char *cells;             /* [seq (size_t)][item] per cell */
  _Alignas(64) _Atomic size_t head; /* next to dequeue */
  _Alignas(64) _Atomic size_t tail; /* next to enqueue */
};

/* capacity is rounded up to a power of two. Returns false on allocation failure. */
bool cs_queue_init(struct cs_queue *q, size_t capacity, size_t item_size);
void cs_queue_destroy(struct cs_queue *q);
bool cs_queue_push(struct cs_queue *q, const void *item); /* false when full */
/* cs_queue_push inlined for a caller that knows the item size at compile time (size must
 * be q->item_size): the copy into the cell is a few vector moves, not a call. */
static inline __attribute__((always_inline)) bool cs_queue_push_sized(struct cs_queue *q, const void *item,
                                                                      size_t size);
bool cs_queue_pop(struct cs_queue *q, void *item); /* false when empty */
size_t cs_queue_size_approx(struct cs_queue *q);

/* A cell: [sequence number][pad][item], cell_size bytes. */
#define CS_QUEUE_CELL_SEQ(q, i) ((_Atomic size_t *)((q)->cells + (i) * (q)->cell_size))
#define CS_QUEUE_CELL_DATA(q, i) ((q)->cells + (i) * (q)->cell_size + sizeof(size_t) * 2)

static inline __attribute__((always_inline)) bool cs_queue_push_sized(struct cs_queue *q, const void *item,
                                                                      size_t size) {
  size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
  for (;;) {
    size_t i = pos & q->mask;
    size_t seq = atomic_load_explicit(CS_QUEUE_CELL_SEQ(q, i), memory_order_acquire);
    intptr_t dif = (intptr_t)seq - (intptr_t)pos;
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&q->tail, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        __builtin_memcpy(CS_QUEUE_CELL_DATA(q, i), item, size);
        atomic_store_explicit(CS_QUEUE_CELL_SEQ(q, i), pos + 1, memory_order_release);
        return true;
      }
    } else if (dif < 0) {
      return false; /* full */
    } else {
      pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    }
  }
}

#endif
