/* analysis/link_nics.c: the slow-NIC finder over the NCCL_NET wrapper's host pairs: a host whose
 * pairs, in and out, are all slower than the pairs without it (definitions and the rule in
 * include/collscope/links.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/links.h"

struct hp { /* one end of an eligible pair: its host and the pair's index */
  const char *host;
  size_t pair;
};
static int cmp_hp(const void *a, const void *b) {
  const struct hp *x = a, *y = b;
  int c = strcmp(x->host, y->host);
  return c ? c : (x->pair > y->pair) - (x->pair < y->pair);
}
struct xr { /* a pair's ln(Gbit/s) and its index */
  double x;
  size_t pair;
};
static int cmp_xr(const void *a, const void *b) {
  const struct xr *p = a, *q = b;
  if (p->x != q->x) return p->x < q->x ? -1 : 1;
  return (p->pair > q->pair) - (p->pair < q->pair);
}
static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median_mid(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* the element at index t of the sorted order with the ranks removed[0..k) (ascending) left out */
static double without_at(const struct xr *sorted, const size_t *removed, size_t k, size_t t) {
  size_t idx = t;
  for (size_t j = 0; j < k && removed[j] <= idx; j++) idx++;
  return sorted[idx].x;
}

int cs_links_slow_nics(const struct cs_link_pair *pairs, size_t np, const struct cs_link_params *p,
                       struct cs_link_nic **out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  size_t n1 = np ? np : 1;
  double *x = malloc(n1 * sizeof *x), *tmp = malloc(n1 * sizeof *tmp), *dh = malloc(2 * n1 * sizeof *dh);
  size_t *rank = malloc(n1 * sizeof *rank), *rem = malloc(n1 * sizeof *rem);
  struct xr *sorted = malloc(n1 * sizeof *sorted);
  struct hp *ends = malloc(2 * n1 * sizeof *ends);
  bool *cand_pair = calloc(n1, sizeof *cand_pair);
  struct cs_link_nic *res = calloc(2 * n1, sizeof *res);
  int rc = -1;
  if (!x || !tmp || !dh || !rank || !rem || !sorted || !ends || !cand_pair || !res) goto done;
  /* the eligible pairs: both hosts known and distinct, send side, enough bytes, time measured */
  size_t ne = 0, P = 0;
  for (size_t i = 0; i < np; i++) {
    const struct cs_link_pair *q = &pairs[i];
    x[i] = NAN;
    if (!q->src_host || !q->dst_host || !strcmp(q->src_host, q->dst_host) || !q->from_send ||
        q->bytes < p->min_bytes || !(q->busy_us > 0))
      continue;
    x[i] = log((double)q->bytes * 8.0 / (q->busy_us * 1e3));
    if (!isfinite(x[i])) continue;
    sorted[P++] = (struct xr){x[i], i};
    ends[ne++] = (struct hp){q->src_host, i};
    ends[ne++] = (struct hp){q->dst_host, i};
  }
  qsort(sorted, P, sizeof *sorted, cmp_xr);
  for (size_t k = 0; k < P; k++) rank[sorted[k].pair] = k;
  qsort(ends, ne, sizeof *ends, cmp_hp);
  double floor_ln = log(1.0 + p->nic_frac);
  /* per host: its pairs' median against the median of the pairs without it */
  size_t nres = 0;
  for (size_t a = 0; a < ne;) {
    size_t b = a + 1;
    while (b < ne && !strcmp(ends[b].host, ends[a].host)) b++;
    size_t k = b - a, m = P - k;
    if (k >= 2 && m >= 2) {
      double hi = -INFINITY;
      for (size_t j = 0; j < k; j++) {
        tmp[j] = x[ends[a + j].pair];
        rem[j] = rank[ends[a + j].pair];
        if (tmp[j] > hi) hi = tmp[j];
      }
      double own = median_mid(tmp, k);
      qsort(rem, k, sizeof *rem, cmp_size);
      double rest = m % 2 ? without_at(sorted, rem, k, m / 2)
                          : 0.5 * (without_at(sorted, rem, k, m / 2 - 1) + without_at(sorted, rem, k, m / 2));
      /* a candidate: its fastest pair below the rest by the floor (a NIC slows every pair with an
       * end on it; a slow pair alone leaves its ends' other pairs healthy) */
      if (rest - hi >= floor_ln) {
        res[nres] = (struct cs_link_nic){.host = ends[a].host,
                                         .pairs = k,
                                         .others = m,
                                         .gbps = exp(own),
                                         .others_gbps = exp(rest),
                                         .deficit = rest - hi};
        dh[nres++] = rest - hi;
        for (size_t j = 0; j < k; j++) cand_pair[ends[a + j].pair] = true;
      }
    }
    a = b;
  }
  /* the pairs' spread without the candidates: a sigma of ln(Gbit/s) from the mean absolute
   * deviation around their median (x 1.2533 for a normal; the median absolute deviation reads 0
   * whenever most pairs are alike, as few routes' pairs are) */
  size_t ns = 0;
  for (size_t k = 0; k < P; k++)
    if (!cand_pair[sorted[k].pair]) tmp[ns++] = sorted[k].x;
  double sigma = -1;
  if (ns >= 2) {
    double med = median_mid(tmp, ns), sum = 0;
    for (size_t k = 0; k < ns; k++) sum += fabs(tmp[k] - med);
    sigma = 1.2533 * sum / (double)ns;
  }
  size_t kept = 0;
  for (size_t i = 0; i < nres; i++) {
    if (sigma < 0 || dh[i] < CS_LINK_NIC_Z * sigma) continue;
    res[i].sigma = sigma;
    res[kept++] = res[i];
  }
  *out = res;
  *nout = kept;
  res = NULL;
  rc = 0;
done:
  free(x), free(tmp), free(dh), free(rank), free(rem), free(sorted), free(ends), free(cand_pair), free(res);
  return rc;
}
