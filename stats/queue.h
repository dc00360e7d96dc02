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
bool cs_queue_pop(struct cs_queue *q, void *item);        /* false when empty */
size_t cs_queue_size_approx(struct cs_queue *q);

#endif
