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

/* a fraction 0 < f < 1 from variable `name` into *f when set; -1 (kept) when malformed */
static int env_frac(const char *name, double *f) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  char *end;
  double x = strtod(v, &end);
  if (*end || !(x > 0 && x < 1)) return -1;
  *f = x;
  return 0;
}

int cs_link_params_env(struct cs_link_params *p) {
  int rc = env_frac("COLLSCOPE_LINK_SLOW_FRAC", &p->slow_frac) | env_frac("COLLSCOPE_LINK_NIC_FRAC", &p->nic_frac);
  const char *v = getenv("COLLSCOPE_LINK_MIN_BYTES");
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

/* observation index order: by pair (src, dst), then by side */
struct obs_ix {
  const struct cs_link_obs *v;
  size_t i;
};
static int cmp_obs_ix(const void *a, const void *b) {
  const struct obs_ix *x = a, *y = b;
  int c = cmp_host(x->v[x->i].src_host, y->v[y->i].src_host);
  if (!c) c = cmp_host(x->v[x->i].dst_host, y->v[y->i].dst_host);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Pairs by sorting the observations (O(n log n)); the slow-pair reference, the median of the
 * other eligible pairs, from one sorted list with the pair itself left out (O(P log P)). */
int cs_links_aggregate(const struct cs_link_obs *v, size_t n, const struct cs_link_params *p,
                       struct cs_link_pair **out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  size_t n1 = n ? n : 1;
  struct cs_link_pair *pairs = calloc(n1, sizeof *pairs);
  struct obs_ix *ix = malloc(n1 * sizeof *ix);
  struct wv *w50 = malloc(n1 * sizeof *w50), *w10 = malloc(n1 * sizeof *w10);
  double *ref = malloc(n1 * sizeof *ref);
  if (!pairs || !ix || !w50 || !w10 || !ref) {
    free(pairs), free(ix), free(w50), free(w10), free(ref);
    return -1;
  }
  for (size_t i = 0; i < n; i++) ix[i] = (struct obs_ix){v, i};
  qsort(ix, n, sizeof *ix, cmp_obs_ix);
  size_t np = 0;
  for (size_t a = 0; a < n;) {
    size_t b = a + 1;
    const struct cs_link_obs *o = &v[ix[a].i];
    while (b < n && !cmp_host(v[ix[b].i].src_host, o->src_host) && !cmp_host(v[ix[b].i].dst_host, o->dst_host)) b++;
    struct cs_link_pair *q = &pairs[np++];
    q->src_host = o->src_host;
    q->dst_host = o->dst_host;
    for (size_t j = a; j < b; j++) q->from_send |= v[ix[j].i].send;
    size_t m = 0;
    for (size_t j = a; j < b; j++) {
      const struct cs_link_obs *x = &v[ix[j].i];
      if (x->send != q->from_send) continue;
      q->nobs++;
      q->bytes += x->bytes;
      q->msgs += x->msgs;
      q->busy_us += x->busy_us;
      w50[m] = (struct wv){x->gbps_p50, x->bytes};
      w10[m] = (struct wv){x->gbps_p10, x->bytes};
      m++;
    }
    q->gbps_p50 = wmedian(w50, m);
    q->gbps_p10 = wmedian(w10, m);
    a = b;
  }
  /* slow pairs: far below the median of the other eligible pairs (the lower median) */
  size_t ne = 0;
  for (size_t k = 0; k < np; k++)
    if (pairs[k].src_host && pairs[k].dst_host && pairs[k].bytes >= p->min_bytes) ref[ne++] = pairs[k].gbps_p50;
  qsort(ref, ne, sizeof *ref, cmp_double);
  for (size_t k = 0; ne >= 2 && k < np; k++) {
    struct cs_link_pair *q = &pairs[k];
    if (!q->src_host || !q->dst_host || q->bytes < p->min_bytes) continue;
    /* the others' lower median: index (ne - 2) / 2 of the list without one copy of q's value */
    size_t t = (ne - 2) / 2, lo = 0, hi = ne;
    while (lo < hi) { /* the first element >= q's: the copy left out */
      size_t mid = lo + (hi - lo) / 2;
      if (ref[mid] < q->gbps_p50)
        lo = mid + 1;
      else
        hi = mid;
    }
    q->ref_gbps_p50 = ref[t < lo ? t : t + 1];
    q->slow = q->gbps_p50 < p->slow_frac * q->ref_gbps_p50;
  }
  free(ix), free(w50), free(w10), free(ref);
  *out = pairs;
  *nout = np;
  return 0;
}
