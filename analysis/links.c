/* analysis/links.c: per host pair aggregation of NCCL_NET link observations and the slow-pair
 * finder (definitions in include/collscope/links.h). */
#include "collscope/links.h"
#include <stdlib.h>
#include <string.h>

void cs_link_params_default(struct cs_link_params *p) {
  p->slow_frac = 0.5;
  p->min_bytes = 65536;
  p->nic_frac = 0.1;
}

int cs_link_params_env(struct cs_link_params *p) {
  int rc = 0;
  const char *v = getenv("COLLSCOPE_LINK_SLOW_FRAC");
  if (v && *v) {
    char *end;
    double f = strtod(v, &end);
    if (*end || !(f > 0 && f < 1))
      rc = -1;
    else
      p->slow_frac = f;
  }
  v = getenv("COLLSCOPE_LINK_NIC_FRAC");
  if (v && *v) {
    char *end;
    double f = strtod(v, &end);
    if (*end || !(f > 0 && f < 1))
      rc = -1;
    else
      p->nic_frac = f;
  }
  v = getenv("COLLSCOPE_LINK_MIN_BYTES");
  if (v && *v) {
    char *end;
    unsigned long long b = strtoull(v, &end, 10);
    if (*end || v[0] == '-')
      rc = -1;
    else
      p->min_bytes = b;
  }
  return rc;
}

static int cmp_host(const char *a, const char *b) {
  if (!a || !b) return (a == NULL) - (b == NULL); /* unknown last */
  return strcmp(a, b);
}
static int cmp_pair(const struct cs_link_pair *a, const struct cs_link_pair *b) {
  int c = cmp_host(a->src_host, b->src_host);
  return c ? c : cmp_host(a->dst_host, b->dst_host);
}
static int cmp_pair_q(const void *a, const void *b) { return cmp_pair(a, b); }

struct wv {
  double v;
  uint64_t w;
};
static int cmp_wv(const void *a, const void *b) {
  double x = ((const struct wv *)a)->v, y = ((const struct wv *)b)->v;
  return (x > y) - (x < y);
}
/* byte-weighted median: the smallest value with at least half the weight at or below it
 * (unweighted when all weights are 0) */
static double wmedian(struct wv *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_wv);
  uint64_t tot = 0;
  for (size_t i = 0; i < n; i++) tot += v[i].w;
  if (!tot) return v[(n - 1) / 2].v;
  uint64_t acc = 0;
  for (size_t i = 0; i < n; i++) {
    acc += v[i].w;
    if (2 * acc >= tot) return v[i].v;
  }
  return v[n - 1].v;
}
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int cs_links_aggregate(const struct cs_link_obs *v, size_t n, const struct cs_link_params *p,
                       struct cs_link_pair **out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  struct cs_link_pair *pairs = calloc(n ? n : 1, sizeof *pairs);
  size_t *of = calloc(n ? n : 1, sizeof *of); /* observation -> pair */
  struct wv *w50 = calloc(n ? n : 1, sizeof *w50), *w10 = calloc(n ? n : 1, sizeof *w10);
  double *ref = calloc(n ? n : 1, sizeof *ref);
  if (!pairs || !of || !w50 || !w10 || !ref) {
    free(pairs), free(of), free(w50), free(w10), free(ref);
    return -1;
  }
  size_t np = 0;
  for (size_t i = 0; i < n; i++) {
    struct cs_link_pair key = {.src_host = v[i].src_host, .dst_host = v[i].dst_host};
    size_t k = 0;
    while (k < np && cmp_pair(&pairs[k], &key) != 0) k++; /* pairs are few (hosts^2 at most) */
    if (k == np) pairs[np++] = key;
    of[i] = k;
    if (v[i].send) pairs[k].from_send = true;
  }
  for (size_t k = 0; k < np; k++) {
    struct cs_link_pair *q = &pairs[k];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
      if (of[i] != k || v[i].send != q->from_send) continue;
      q->nobs++;
      q->bytes += v[i].bytes;
      q->msgs += v[i].msgs;
      q->busy_us += v[i].busy_us;
      w50[m] = (struct wv){v[i].gbps_p50, v[i].bytes};
      w10[m] = (struct wv){v[i].gbps_p10, v[i].bytes};
      m++;
    }
    q->gbps_p50 = wmedian(w50, m);
    q->gbps_p10 = wmedian(w10, m);
  }
  /* slow pairs: far below the median of the other eligible pairs */
  for (size_t k = 0; k < np; k++) {
    struct cs_link_pair *q = &pairs[k];
    if (!q->src_host || !q->dst_host || q->bytes < p->min_bytes) continue;
    size_t m = 0;
    for (size_t j = 0; j < np; j++)
      if (j != k && pairs[j].src_host && pairs[j].dst_host && pairs[j].bytes >= p->min_bytes) ref[m++] = pairs[j].gbps_p50;
    if (!m) continue;
    qsort(ref, m, sizeof *ref, cmp_double);
    q->ref_gbps_p50 = ref[(m - 1) / 2];
    q->slow = q->gbps_p50 < p->slow_frac * q->ref_gbps_p50;
  }
  qsort(pairs, np, sizeof *pairs, cmp_pair_q);
  free(of), free(w50), free(w10), free(ref);
  *out = pairs;
  *nout = np;
  return 0;
}
