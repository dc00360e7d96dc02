/* analysis/histogram.c: log-bucket histogram with a fixed relative error (see
 * include/collscope/histogram.h for the layout and the error bound). */
#include "collscope/histogram.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define GAMMA ((1.0 + CS_HIST_REL_ERR) / (1.0 - CS_HIST_REL_ERR))

/* the buckets' upper edges, LO gamma^i, computed once (pow per value was most of an add) */
static double edge[CS_HIST_NBUCKETS];
static double log_gamma;
static pthread_once_t edges_once = PTHREAD_ONCE_INIT;
static void edges_init(void) {
  log_gamma = log(GAMMA);
  for (int i = 0; i < CS_HIST_NBUCKETS; i++) edge[i] = CS_HIST_LO * pow(GAMMA, i);
}

/* bucket 0 holds (.., LO]; bucket i holds (LO gamma^(i-1), LO gamma^i] */
int cs_hist_bucket(double v) {
  if (!(v > CS_HIST_LO)) return 0;
  pthread_once(&edges_once, edges_init);
  double k = ceil(log(v / CS_HIST_LO) / log_gamma);
  if (k >= CS_HIST_NBUCKETS - 1) return CS_HIST_NBUCKETS - 1;
  int i = (int)k;
  /* ceil(log()) can be off by one at a bucket edge: settle it against the edges */
  while (i > 0 && v <= edge[i - 1]) i--;
  while (i < CS_HIST_NBUCKETS - 1 && v > edge[i]) i++;
  return i;
}

static double bucket_mid(int i) {
  return 2.0 * CS_HIST_LO * pow(GAMMA, i) / (GAMMA + 1.0);
}

void cs_hist_init(struct cs_hist *h) {
  memset(h, 0, sizeof *h);
}

static bool ensure_counts(struct cs_hist *h) {
  if (!h->counts) h->counts = calloc(CS_HIST_NBUCKETS, sizeof *h->counts);
  return h->counts != NULL;
}

static void add_extremes(struct cs_hist *h, double v) {
  if (isnan(v)) return;
  if (!h->has_range || v < h->min) h->min = v;
  if (!h->has_range || v > h->max) h->max = v;
  h->has_range = true;
  h->sum += v;
}

bool cs_hist_add(struct cs_hist *h, double v) {
  h->n++;
  if (!(v > 0)) {
    h->nonpos++;
    add_extremes(h, v);
    return true;
  }
  add_extremes(h, v);
  if (!ensure_counts(h)) return false;
  h->counts[cs_hist_bucket(v)]++;
  return true;
}

bool cs_hist_add_n(struct cs_hist *h, double v, uint64_t n) {
  if (!n) return true;
  bool ok = cs_hist_add(h, v); /* the first sets the extremes and the bucket */
  uint64_t more = n - 1;
  h->n += more;
  if (!(v > 0))
    h->nonpos += more;
  else if (h->counts)
    h->counts[cs_hist_bucket(v)] += more;
  if (!isnan(v)) h->sum += v * (double)more;
  return ok;
}

bool cs_hist_merge(struct cs_hist *into, const struct cs_hist *from) {
  if (!from->n) return true;
  if (from->counts && !ensure_counts(into)) return false;
  if (from->counts)
    for (int i = 0; i < CS_HIST_NBUCKETS; i++) into->counts[i] += from->counts[i];
  if (from->has_range) {
    if (!into->has_range || from->min < into->min) into->min = from->min;
    if (!into->has_range || from->max > into->max) into->max = from->max;
    into->has_range = true;
  }
  into->sum += from->sum;
  into->n += from->n;
  into->nonpos += from->nonpos;
  return true;
}

double cs_hist_percentile(const struct cs_hist *h, double p) {
  if (!h->n) return 0;
  if (p > 100) p = 100;
  uint64_t rank = (uint64_t)ceil(p * (double)h->n / 100.0);
  if (rank < 1) rank = 1;
  if (rank >= h->n) return h->max;
  if (rank <= h->nonpos || !h->counts) return h->min;
  uint64_t seen = h->nonpos;
  for (int i = 0; i < CS_HIST_NBUCKETS; i++) {
    seen += h->counts[i];
    if (seen >= rank) {
      double v = bucket_mid(i);
      return v < h->min ? h->min : v > h->max ? h->max
                                              : v;
    }
  }
  return h->max;
}

void cs_hist_free(struct cs_hist *h) {
  free(h->counts);
  h->counts = NULL;
}
