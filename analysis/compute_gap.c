/* analysis/compute_gap.c: a process's compute gap per (communicator, stream)
 * (include/collscope/compute_gap.h). Open addressing over fixed tables: no allocation, no I/O. */
#include "collscope/compute_gap.h"

#include <string.h>

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

void cs_gap_reset(struct cs_gap_tracker *t) { memset(t, 0, sizeof *t); }

static struct cs_gap_stream *stream_slot(struct cs_gap_tracker *t, uint64_t stream, bool add) {
  for (size_t i = 0, h = (size_t)mix(stream); i < CS_GAP_STREAMS; i++) {
    struct cs_gap_stream *s = &t->s[(h + i) & (CS_GAP_STREAMS - 1)];
    if (s->used && s->stream == stream) return s;
    if (!s->used) {
      if (!add) return NULL;
      s->used = true;
      s->stream = stream;
      return s;
    }
  }
  return NULL;
}

static struct cs_gap_pair *pair_slot(struct cs_gap_tracker *t, uint64_t comm, uint64_t stream, bool *fresh) {
  *fresh = false;
  for (size_t i = 0, h = (size_t)mix(comm ^ mix(stream)); i < CS_GAP_PAIRS; i++) {
    struct cs_gap_pair *p = &t->p[(h + i) & (CS_GAP_PAIRS - 1)];
    if (p->used && p->comm == comm && p->stream == stream) return p;
    if (!p->used) {
      p->used = *fresh = true;
      p->comm = comm;
      p->stream = stream;
      return p;
    }
  }
  return NULL;
}

double cs_gap_timed(struct cs_gap_tracker *t, uint64_t comm, uint64_t stream, int64_t start_ns, int64_t end_ns) {
  struct cs_gap_stream *s = stream_slot(t, stream, true);
  if (!s) return -1;
  if (s->has_prev) {
    if (start_ns > s->last_end) s->sum_ns += (uint64_t)start_ns - (uint64_t)s->last_end; /* no signed overflow */
  } else {
    s->epoch++;
  }
  s->has_prev = true;
  s->last_end = end_ns;
  bool fresh;
  struct cs_gap_pair *p = pair_slot(t, comm, stream, &fresh);
  if (!p) return -1;
  double gap = !fresh && p->epoch == s->epoch ? (double)(s->sum_ns - p->sum_ns) / 1e3 : -1;
  p->sum_ns = s->sum_ns;
  p->epoch = s->epoch;
  return gap;
}

void cs_gap_untimed(struct cs_gap_tracker *t, uint64_t stream) {
  struct cs_gap_stream *s = stream_slot(t, stream, false);
  if (s) s->has_prev = false;
}
