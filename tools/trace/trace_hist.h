/* tools/trace/trace_hist.h: counts of record times in a fixed number of buckets whose width (a power
 * of two nanoseconds) doubles whenever the times seen no longer fit, so the trace's selection
 * can be sized before anything is written without keeping the records: counts are exact per
 * bucket, and a bucket spans at most 2 x (the times' span / TH_BUCKETS). */
#ifndef COLLSCOPE_TOOLS_TRACE_HIST_H
#define COLLSCOPE_TOOLS_TRACE_HIST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TH_BUCKETS 16384

struct thist {
  uint64_t *b; /* TH_BUCKETS counts; NULL until the first time */
  int64_t lo;  /* absolute index (t >> shift) of b[0] */
  int shift;
  uint64_t total;
};

/* t > 0 (nanoseconds); n records at t */
void th_add(struct thist *h, int64_t t, uint64_t n);
/* adds every count of src into dst */
void th_merge(struct thist *dst, const struct thist *src);
/* records in the buckets that hold [from, to] (an upper bound on the records in [from, to],
 * exact when from and to lie on bucket edges) */
uint64_t th_count(const struct thist *h, int64_t from, int64_t to);
/* the largest end of a bucket e >= from such that th_count(from, e) <= max; from - 1 when
 * even the first bucket holds more */
int64_t th_fit(const struct thist *h, int64_t from, uint64_t max);
void th_free(struct thist *h);

#endif
