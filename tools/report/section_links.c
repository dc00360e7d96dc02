/* tools/report/section_links.c: the report's "links", "slow_links" and "slow_nics" sections: the NCCL_NET
 * wrapper's "link" records per host pair (definitions in include/collscope/links.h, figures
 * by analysis/links.c). Hosts: the writing file's header host for its own end; the other end
 * from the record with the same `conn` token in another file, else (send side) the host of
 * the peer rank. */
#include <stdlib.h>

#include "report.h"
#include "report_health.h"
#include "xalloc.h"

struct conn_end {
  uint64_t conn;
  const char *host;
  int rank;
  bool send;
};
static int cmp_conn_end(const void *a, const void *b) {
  const struct conn_end *x = a, *y = b;
  if (x->conn != y->conn) return x->conn < y->conn ? -1 : 1;
  return (int)x->send - (int)y->send;
}
/* the other end of connection `conn` (send: the receiving end), or NULL */
static const struct conn_end *other_end(const struct conn_end *v, size_t n, uint64_t conn, bool send) {
  if (!conn) return NULL;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (v[m].conn < conn)
      lo = m + 1;
    else
      hi = m;
  }
  for (size_t i = lo; i < n && v[i].conn == conn; i++)
    if (v[i].send != send) return &v[i];
  return NULL;
}

/* the host of global rank r (the first file that names it), by binary search over the
 * files, which are sorted by rank: no table sized by a rank number read from a file */
static const char *host_of_rank(const struct cs_dumpset *set, int r) {
  size_t lo = 0, hi = set->nfiles;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if ((unsigned)set->files[m].hdr.rank < (unsigned)r)
      lo = m + 1; /* -1 sorts last */
    else
      hi = m;
  }
  return lo < set->nfiles && set->files[lo].hdr.rank == r ? set->files[lo].hdr.host : NULL;
}

static void build_links(struct report *r) {
  cs_link_params_default(&r->linkp);
  if (cs_link_params_env(&r->linkp))
    fprintf(stderr, "collscope report: ignoring a bad COLLSCOPE_LINK_SLOW_FRAC / _NIC_FRAC / _MIN_BYTES value\n");
  const struct cs_dumpset *set = r->set;
  size_t n = 0;
  for (size_t i = 0; i < set->nfiles; i++) n += set->files[i].nlinks;
  r->link_records = n;
  if (!n) return;
  struct conn_end *ends = xcalloc(n, sizeof *ends);
  struct cs_link_obs *obs = xcalloc(n, sizeof *obs);
  size_t k = 0;
  for (size_t i = 0; i < set->nfiles; i++)
    for (size_t j = 0; j < set->files[i].nlinks; j++) {
      const struct cs_link_rec *l = &set->files[i].links[j];
      ends[k++] = (struct conn_end){l->conn, set->files[i].hdr.host, l->rank >= 0 ? l->rank : set->files[i].hdr.rank, l->send};
    }
  qsort(ends, n, sizeof *ends, cmp_conn_end);
  k = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t j = 0; j < f->nlinks; j++) {
      const struct cs_link_rec *l = &f->links[j];
      struct cs_link_obs *o = &obs[k++];
      const struct conn_end *e = other_end(ends, n, l->conn, l->send);
      int me = l->rank >= 0 ? l->rank : f->hdr.rank;
      const char *ohost = e ? e->host : NULL;
      int orank = e ? e->rank : l->peer;
      if (!ohost && l->send && l->peer >= 0) ohost = host_of_rank(set, l->peer);
      o->send = l->send;
      o->src_host = l->send ? f->hdr.host : ohost;
      o->dst_host = l->send ? ohost : f->hdr.host;
      o->src_rank = l->send ? me : orank;
      o->dst_rank = l->send ? orank : me;
      o->bytes = l->bytes;
      o->msgs = l->msgs;
      o->busy_us = l->busy_us;
      o->gbps_p50 = l->gbps_p50;
      o->gbps_p10 = l->gbps_p10;
    }
  }
  if (cs_links_aggregate(obs, n, &r->linkp, &r->links, &r->nlinks) != 0)
    fputs("collscope report: links out of memory\n", stderr);
  else if (cs_links_slow_nics(r->links, r->nlinks, &r->linkp, &r->nics, &r->nnics) != 0)
    fputs("collscope report: slow NICs out of memory: none named\n", stderr);
  free(obs);
  free(ends);
}

const struct cs_link_pair *report_slowest_link(const struct report *r) {
  const struct cs_link_pair *best = NULL;
  for (size_t i = 0; i < r->nlinks; i++) {
    const struct cs_link_pair *q = &r->links[i];
    if (!q->slow) continue;
    double ratio = q->ref_gbps_p50 > 0 ? q->gbps_p50 / q->ref_gbps_p50 : 1;
    if (!best || ratio < best->gbps_p50 / best->ref_gbps_p50) best = q;
  }
  return best;
}

static void text_links(const struct report *r, FILE *o) {
  if (!r->link_records) return; /* no NCCL_NET wrapper in this job */
  fprintf(o, "\n# Links (NCCL_NET wrapper): per host pair, Gbit/s = byte-weighted per-message throughput\n"
             "# (post to done) p50 / p10; side = which end measured it; slow: p50 < %.2f x the median of\n"
             "# the other pairs (pairs with >= %llu bytes)\n",
          r->linkp.slow_frac, (unsigned long long)r->linkp.min_bytes);
  fprintf(o, "# %-16s %-16s %14s %10s %12s %12s %5s  %s\n", "src_host", "dst_host", "bytes", "msgs", "gbps_p50",
          "gbps_p10", "side", "slow");
  char b1[128], b2[128];
  for (size_t i = 0; i < r->nlinks; i++) {
    const struct cs_link_pair *q = &r->links[i];
    fprintf(o, "  %-16s %-16s %14llu %10llu %12.3f %12.3f %5s  %s\n",
            q->src_host ? cs_text_safe(q->src_host, b1, sizeof b1) : "?",
            q->dst_host ? cs_text_safe(q->dst_host, b2, sizeof b2) : "?", (unsigned long long)q->bytes, (unsigned long long)q->msgs, q->gbps_p50,
            q->gbps_p10, q->from_send ? "send" : "recv", q->slow ? "SLOW" : "");
  }
  size_t nslow = 0;
  for (size_t i = 0; i < r->nlinks; i++)
    if (r->links[i].slow) {
      const struct cs_link_pair *q = &r->links[i];
      fprintf(o, "  slow link: %s -> %s at %.3g Gbit/s p50, %.3g x the other pairs' median (%.3g)\n",
              cs_text_safe(q->src_host, b1, sizeof b1), cs_text_safe(q->dst_host, b2, sizeof b2), q->gbps_p50, q->ref_gbps_p50 > 0 ? q->gbps_p50 / q->ref_gbps_p50 : 0, q->ref_gbps_p50);
      nslow++;
    }
  if (!nslow) fprintf(o, "  no slow link\n");
  for (size_t i = 0; i < r->nnics; i++) {
    const struct cs_link_nic *c = &r->nics[i];
    fprintf(o,
            "  slow NIC: %s: its %zu pairs (in and out) at %.4g Gbit/s (mean over their messages' time), the %zu "
            "pairs without it %.4g (%.3g x)\n",
            cs_text_safe(c->host, b1, sizeof b1), c->pairs, c->gbps, c->others, c->others_gbps,
            c->others_gbps > 0 ? c->gbps / c->others_gbps : 0);
  }
  if (!r->nnics) fprintf(o, "  no slow NIC (a host whose pairs are all >= %.0f %% below the others)\n", 100 * r->linkp.nic_frac);
}

static json_t *json_links(const struct report *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->nlinks; i++) {
    const struct cs_link_pair *q = &r->links[i];
    json_t *o = json_object();
    json_object_set_new(o, "src_host", q->src_host ? json_string(q->src_host) : json_null());
    json_object_set_new(o, "dst_host", q->dst_host ? json_string(q->dst_host) : json_null());
    json_object_set_new(o, "bytes", jbytes(q->bytes));
    json_object_set_new(o, "msgs", jbytes(q->msgs));
    json_object_set_new(o, "busy_us", json_real(q->busy_us));
    json_object_set_new(o, "gbps_p50", json_real(q->gbps_p50));
    json_object_set_new(o, "gbps_p10", json_real(q->gbps_p10));
    json_object_set_new(o, "side", json_string(q->from_send ? "send" : "recv"));
    json_object_set_new(o, "observations", jcount(q->nobs));
    json_object_set_new(o, "slow", json_boolean(q->slow));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *json_slow_links(const struct report *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->nlinks; i++) {
    const struct cs_link_pair *q = &r->links[i];
    if (!q->slow) continue;
    json_t *o = json_object();
    json_object_set_new(o, "src_host", json_string(q->src_host));
    json_object_set_new(o, "dst_host", json_string(q->dst_host));
    json_object_set_new(o, "gbps_p50", json_real(q->gbps_p50));
    json_object_set_new(o, "ref_gbps_p50", json_real(q->ref_gbps_p50));
    json_object_set_new(o, "ratio", json_real(q->ref_gbps_p50 > 0 ? q->gbps_p50 / q->ref_gbps_p50 : 0));
    json_object_set_new(o, "src_ib", report_health_host_ports(r->health, q->src_host)); /* both ends' IB deltas */
    json_object_set_new(o, "dst_ib", report_health_host_ports(r->health, q->dst_host));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *json_slow_nics(const struct report *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->nnics; i++) {
    const struct cs_link_nic *c = &r->nics[i];
    json_t *o = json_object();
    json_object_set_new(o, "host", json_string(c->host));
    json_object_set_new(o, "pairs", jcount(c->pairs));
    json_object_set_new(o, "gbps", json_real(c->gbps));
    json_object_set_new(o, "other_pairs", jcount(c->others));
    json_object_set_new(o, "others_gbps", json_real(c->others_gbps));
    json_object_set_new(o, "ratio", json_real(c->others_gbps > 0 ? c->gbps / c->others_gbps : 0));
    json_object_set_new(o, "deficit_ln", json_real(c->deficit)); /* its fastest pair's, in logs */
    json_object_set_new(o, "sigma_ln", json_real(c->sigma));
    json_object_set_new(o, "ib", report_health_host_ports(r->health, c->host));
    json_array_append_new(a, o);
  }
  return a;
}

static void free_links(struct report *r) {
  free(r->links);
  free(r->nics);
}

const struct report_section report_section_links = {"links", build_links, text_links, json_links, free_links};
const struct report_section report_section_slow_links = {"slow_links", NULL, NULL, json_slow_links, NULL};
const struct report_section report_section_slow_nics = {"slow_nics", NULL, NULL, json_slow_nics, NULL};
