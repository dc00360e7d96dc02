/* stats/ring_stats.c: the summary block's writer (stats/ring_stats.h). Every update of a
 * series is one seqlock write: gen odd, release fence, the words, gen even (release). */
#include "stats/ring_stats.h"

#include <stddef.h>
#include <string.h>

static unsigned comm_row(struct cs_ring_stats *b, struct cs_ring_stats_writer *w, uint64_t comm) {
  for (unsigned i = 0; i < w->ncomms; i++)
    if (w->comms[i] == comm) return i;
  if (w->ncomms < CS_RING_STAT_COMMS && comm != 0) {
    w->comms[w->ncomms] = comm;
    atomic_store_explicit(&b->comm_ids[w->ncomms], comm, memory_order_release);
    return w->ncomms++;
  }
  return CS_RING_STAT_COMMS; /* the shared row */
}

static void add(_Atomic uint64_t *x, uint64_t v) {
  uint64_t cur = atomic_load_explicit(x, memory_order_relaxed), sum;
  if (__builtin_add_overflow(cur, v, &sum)) sum = UINT64_MAX;
  atomic_store_explicit(x, sum, CS_SEQ_STORE);
}

static void add_op(struct cs_ring_stats *b, struct cs_ring_stats_writer *w, const struct cs_record *r) {
  if (r->op >= CS_OP_COUNT) return;
  unsigned row = comm_row(b, w, r->comm_id);
  struct cs_ring_series *s = &b->series[row][r->op][cs_ring_size_class(r->bytes)];
  bool timed = (r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_PROFILER ||
                r->timing == CS_TIMING_HOST_SPAN) &&
               r->status == 0 && r->start_ns > 0 && r->end_ns >= r->start_ns &&
               r->end_ns - r->start_ns < 1000000000000000LL;
  uint64_t g = atomic_load_explicit(&s->gen, memory_order_relaxed);
  atomic_store_explicit(&s->gen, g + 1, memory_order_relaxed);
  CS_SEQ_FENCE(memory_order_release);
  add(&s->w[offsetof(struct cs_ring_series_vals, count) / 8], 1);
  if (r->status != 0 || r->timing == CS_TIMING_ERROR) add(&s->w[offsetof(struct cs_ring_series_vals, errors) / 8], 1);
  add(&s->w[offsetof(struct cs_ring_series_vals, bytes) / 8], r->bytes);
  if (timed) {
    /* a group's members that share one span each count its share: their series' bus bytes
     * over their time is the group's busbw, never a member timed with the whole span */
    uint64_t d = (uint64_t)(r->end_ns - r->start_ns) / (r->group_ops > 1 ? r->group_ops : 1);
    unsigned k = 0;
    while (k < CS_RING_BUCKETS && d > cs_ring_bucket_ns(k)) k++;
    if (k < CS_RING_BUCKETS) add(&s->w[offsetof(struct cs_ring_series_vals, bucket) / 8 + k], 1);
    add(&s->w[offsetof(struct cs_ring_series_vals, timed) / 8], 1);
    add(&s->w[offsetof(struct cs_ring_series_vals, dur_ns) / 8], d);
    double bus = (double)r->bytes * cs_busbw_factor((enum cs_op)r->op, r->comm_size) + 0.5;
    add(&s->w[offsetof(struct cs_ring_series_vals, bus_bytes) / 8], bus < 1.8e19 ? (uint64_t)bus : UINT64_MAX);
  }
  atomic_store_explicit(&s->gen, g + 2, memory_order_release);
}

void cs_ring_slot_store(struct cs_ring_slot *s, uint64_t n, const struct cs_record *r) {
  uint64_t words[CS_RING_WORDS] = {0};
  memcpy(words, r, sizeof *r);
  atomic_store_explicit(&s->seq, 2 * n + 1, memory_order_relaxed);
  CS_SEQ_FENCE(memory_order_release);
  for (size_t i = 0; i < CS_RING_WORDS; i++) atomic_store_explicit(&s->w[i], words[i], CS_SEQ_STORE);
  atomic_store_explicit(&s->seq, 2 * n + 2, memory_order_release);
}

static void add_side(struct cs_ring_stats *b, const struct cs_record *r) {
  uint64_t n = atomic_load_explicit(&b->side_head, memory_order_relaxed);
  cs_ring_slot_store(&b->side[n & (CS_RING_SIDE_CAP - 1)], n, r);
  atomic_store_explicit(&b->side_head, n + 1, memory_order_release);
}

void cs_ring_stats_add(struct cs_ring_stats *b, struct cs_ring_stats_writer *w, const struct cs_record *r) {
  if (r->type == CS_REC_OP) {
    add_op(b, w, r);
    if ((r->sdc_checked & 1) && r->seq != UINT64_MAX && r->status == 0) add_side(b, r);
  } else if (r->type == CS_REC_LINK || r->type == CS_REC_HANG) {
    add_side(b, r);
  }
}

void cs_ring_stats_health(struct cs_ring_stats *b, const struct cs_ring_health_vals *v) {
  uint64_t words[CS_RING_HEALTH_WORDS] = {0};
  memcpy(words, v, sizeof *v);
  uint64_t g = atomic_load_explicit(&b->health_gen, memory_order_relaxed);
  atomic_store_explicit(&b->health_gen, g + 1, memory_order_relaxed);
  CS_SEQ_FENCE(memory_order_release);
  for (size_t i = 0; i < CS_RING_HEALTH_WORDS; i++) atomic_store_explicit(&b->health_w[i], words[i], CS_SEQ_STORE);
  atomic_store_explicit(&b->health_gen, g + 2, memory_order_release);
}

void cs_ring_stats_ident(struct cs_ring_hdr *h, const char *uuid, const char *bus_id) {
  if (atomic_load_explicit(&h->gpu_ident, memory_order_relaxed) != 0) return;
  strncpy(h->gpu_uuid, uuid ? uuid : "", sizeof h->gpu_uuid - 1);
  strncpy(h->gpu_bus_id, bus_id ? bus_id : "", sizeof h->gpu_bus_id - 1);
  atomic_store_explicit(&h->gpu_ident, 1, memory_order_release);
}
