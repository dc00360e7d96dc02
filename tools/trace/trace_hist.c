/* tools/trace/trace_hist.c: the trace's collapsing time histogram (trace_hist.h). */
#include "trace_hist.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* b re-laid at shift `shift` from index `lo` (both >= the current ones' reach) */
static void relay(struct thist *h, int shift, int64_t lo) {
  uint64_t *nb = xcalloc(TH_BUCKETS, sizeof *nb);
  int d = shift - h->shift;
  for (size_t i = 0; i < TH_BUCKETS; i++)
    if (h->b[i]) nb[((h->lo + (int64_t)i) >> d) - lo] += h->b[i];
  free(h->b);
  h->b = nb;
  h->shift = shift;
  h->lo = lo;
}

/* makes absolute index k (at shift `shift`) fit; returns its index in b */
static size_t fit(struct thist *h, int64_t t) {
  if (!h->b) {
    h->b = xcalloc(TH_BUCKETS, sizeof *h->b);
    h->shift = 0;
    h->lo = t - TH_BUCKETS / 2 > 0 ? t - TH_BUCKETS / 2 : 0;
  }
  int64_t k = t >> h->shift;
  if (k >= h->lo && k < h->lo + TH_BUCKETS) return (size_t)(k - h->lo);
  /* the smallest wider shift that holds both the current reach and t */
  int64_t first = h->lo, last = h->lo + TH_BUCKETS - 1;
  for (size_t i = 0; i < TH_BUCKETS && !h->b[i]; i++) first++;
  for (size_t i = TH_BUCKETS; i > 0 && !h->b[i - 1]; i--) last--;
  if (first > last) first = last = k; /* empty */
  int64_t a = (k < first ? k : first) << h->shift, z = ((k > last ? k : last) << h->shift) | ((1ll << h->shift) - 1);
  int s = h->shift;
  while (s < 62 && (z >> s) - (a >> s) >= TH_BUCKETS) s++;
  /* centre a little: room on both sides for times still to come */
  int64_t lo = a >> s, span = (z >> s) - lo + 1, slack = (TH_BUCKETS - span) / 2;
  lo = lo - slack > 0 ? lo - slack : 0;
  relay(h, s, lo);
  return (size_t)((t >> h->shift) - h->lo);
}

void th_add(struct thist *h, int64_t t, uint64_t n) {
  if (t <= 0 || !n) return;
  size_t j = fit(h, t); /* may move b */
  h->b[j] += n;
  h->total += n;
}

void th_merge(struct thist *dst, const struct thist *src) {
  if (!src->b) return;
  if (!dst->b) {
    dst->b = xcalloc(TH_BUCKETS, sizeof *dst->b);
    dst->shift = src->shift;
    dst->lo = src->lo;
  } else if (dst->shift < src->shift) { /* at least as wide: a bucket of src lands in one of dst */
    relay(dst, src->shift, dst->lo >> (src->shift - dst->shift));
  }
  for (size_t i = 0; i < TH_BUCKETS; i++)
    if (src->b[i]) {
      size_t j = fit(dst, (src->lo + (int64_t)i) << src->shift);
      dst->b[j] += src->b[i];
      dst->total += src->b[i];
    }
}

uint64_t th_count(const struct thist *h, int64_t from, int64_t to) {
  if (!h->b || to < from) return 0;
  int64_t a = from >> h->shift, z = to >> h->shift;
  if (from <= 0) a = h->lo;
  uint64_t n = 0;
  for (int64_t k = a > h->lo ? a : h->lo; k <= z && k < h->lo + TH_BUCKETS; k++) n += h->b[k - h->lo];
  return n;
}

int64_t th_fit(const struct thist *h, int64_t from, uint64_t max) {
  if (!h->b) return INT64_MAX;
  int64_t a = from >> h->shift;
  if (a < h->lo) a = h->lo;
  uint64_t n = 0;
  int64_t end = from - 1;
  for (int64_t k = a; k < h->lo + TH_BUCKETS; k++) {
    n += h->b[k - h->lo];
    if (n > max) return end;
    end = ((k + 1) << h->shift) - 1;
  }
  return INT64_MAX; /* everything from `from` on fits */
}

void th_free(struct thist *h) {
  free(h->b);
  memset(h, 0, sizeof *h);
}
