/* tools/report/report_health_json.c: the report's `health` section as JSON and text from the
 * figures tools/report/report_health.c builds: per rank, per host port, the GPUs and ports with
 * errors no finding names ("unexplained"), and the "timeline" for the HTML page (every
 * rank's samples in columns of the job's span). */
#include "report_health_internal.h"
#include "xalloc.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NELEM(a) (sizeof a / sizeof *a)

json_t *report_health_gpu_context(const struct report_health *h, int rank) {
  const struct rank_h *r = h ? rh_rank_of(h, rank) : NULL;
  if (!r || !r->samples) return json_null();
  json_t *o = json_object(), *x = json_array();
  json_object_set_new(o, "gpu_uuid", json_string(r->gpu_uuid ? r->gpu_uuid : ""));
  json_object_set_new(o, "ecc_corrected", r->ecc_c >= 0 ? json_integer(r->ecc_c) : json_null());
  json_object_set_new(o, "ecc_uncorrected", r->ecc_u >= 0 ? json_integer(r->ecc_u) : json_null());
  json_object_set_new(o, "remap_pending", r->have_remap ? json_boolean(r->remap_pending) : json_null());
  json_object_set_new(o, "remap_failure", r->have_remap ? json_boolean(r->remap_failure) : json_null());
  for (size_t k = 0; k < r->nxid; k++) {
    json_t *e = json_object();
    json_object_set_new(e, "code", json_integer(r->xid[k][0]));
    json_object_set_new(e, "t_ns", json_integer(r->xid[k][1]));
    json_array_append_new(x, e);
  }
  json_object_set_new(o, "xid", x);
  return o;
}

static json_t *port_json(const struct port_h *p) {
  json_t *o = json_object();
  json_object_set_new(o, "dev", json_string(p->dev));
  json_object_set_new(o, "port", json_integer(p->port));
  json_object_set_new(o, "state", p->state ? json_string(p->state) : json_null());
  json_object_set_new(o, "rate_gbps", json_real(p->rate));
  for (int c = 0; c < CS_IB_NCOUNTERS; c++)
    if (p->c[c] >= 0) json_object_set_new(o, cs_ib_counter_names[c], json_integer(p->c[c]));
  return o;
}
json_t *report_health_host_ports(const struct report_health *h, const char *host) {
  json_t *a = json_array();
  for (size_t i = 0; h && host && i < h->nports; i++)
    if (!strcmp(h->ports[i].host, host)) json_array_append_new(a, port_json(&h->ports[i]));
  return a;
}

static bool rank_has_errors(const struct rank_h *r) {
  return r->ecc_c > 0 || r->ecc_u > 0 || r->nxid || r->remap_pending || r->remap_failure || r->nvl_any || r->pcie > 0;
}
static bool rank_named(const struct cs_det_result *det, const struct rank_h *r) {
  for (size_t i = 0; det && i < det->nstragglers; i++)
    if (det->stragglers[i].rank == r->rank) return true;
  return false;
}
static bool host_named(const struct cs_det_result *det, const char *host) {
  for (size_t i = 0; det && i < det->nstragglers; i++)
    if (det->stragglers[i].kind == CS_DET_LINK || (det->stragglers[i].host && !strcmp(det->stragglers[i].host, host)))
      return true;
  return false;
}

static void rank_errors_text(const struct rank_h *r, char *d, size_t cap) {
  size_t len = 0;
  d[0] = 0;
  if (r->ecc_c > 0 || r->ecc_u > 0) len += (size_t)snprintf(d + len, cap - len, "ECC %lld corrected, %lld uncorrected; ",
                                                            (long long)(r->ecc_c > 0 ? r->ecc_c : 0), (long long)(r->ecc_u > 0 ? r->ecc_u : 0));
  for (size_t k = 0; k < r->nxid && len < cap; k++) len += (size_t)snprintf(d + len, cap - len, "XID %lld; ", (long long)r->xid[k][0]);
  if (r->remap_pending && len < cap) len += (size_t)snprintf(d + len, cap - len, "row remap pending; ");
  if (r->remap_failure && len < cap) len += (size_t)snprintf(d + len, cap - len, "row remap failure; ");
  for (int l = 0; l < NVL_MAX && len < cap; l++)
    if (r->nvl[l][0] > 0 || r->nvl[l][1] > 0 || r->nvl[l][2] > 0)
      len += (size_t)snprintf(d + len, cap - len, "NVLink %d crc %lld replay %lld recovery %lld; ", l, (long long)(r->nvl[l][0] > 0 ? r->nvl[l][0] : 0),
                              (long long)(r->nvl[l][1] > 0 ? r->nvl[l][1] : 0), (long long)(r->nvl[l][2] > 0 ? r->nvl[l][2] : 0));
  if (r->pcie > 0 && len < cap) len += (size_t)snprintf(d + len, cap - len, "PCIe replays %lld; ", (long long)r->pcie);
  if (len >= 2 && len < cap) d[len - 2] = 0;
}

/* "timeline": every rank's GPU samples in TL_BINS columns over the job's sample span (for
 * pictures): per column the reasons active in any of its samples (OR of the bitmasks) and the
 * lowest SM clock; null where a rank has no sample in a column. At most TL_RANKS ranks. */
#define TL_BINS 100
#define TL_RANKS 256
static json_t *timeline_json(const struct report_health *h) {
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  size_t most = 0;
  for (size_t i = 0; h && i < h->nranks; i++) {
    const struct cs_dumpfile *f = h->ranks[i].f;
    size_t n = 0;
    for (size_t k = 0; k < f->nhealths; k++) {
      if (!f->healths[k].has_gpu) continue;
      n++;
      if (f->healths[k].t_ns < t0) t0 = f->healths[k].t_ns;
      if (f->healths[k].t_ns > t1) t1 = f->healths[k].t_ns;
    }
    if (n > most) most = n;
  }
  json_t *o = json_object(), *ranks = json_array();
  size_t bins = most < TL_BINS ? most : TL_BINS, omitted = 0;
  json_object_set_new(o, "t0_ns", most ? json_integer(t0) : json_null());
  json_object_set_new(o, "t1_ns", most ? json_integer(t1) : json_null());
  json_object_set_new(o, "columns", json_integer((json_int_t)bins));
  double span = most && t1 > t0 ? (double)(t1 - t0) : 1;
  int64_t *rs = xcalloc(bins ? bins : 1, sizeof *rs), *sm = xcalloc(bins ? bins : 1, sizeof *sm);
  for (size_t i = 0; bins && h && i < h->nranks; i++) {
    const struct rank_h *r = &h->ranks[i];
    if (!r->samples) continue;
    if (json_array_size(ranks) == TL_RANKS) {
      omitted++;
      continue;
    }
    for (size_t b = 0; b < bins; b++) rs[b] = sm[b] = -1;
    for (size_t k = 0; k < r->f->nhealths; k++) {
      const struct cs_health_rec *s = &r->f->healths[k];
      if (!s->has_gpu) continue;
      size_t b = (size_t)((double)(s->t_ns - t0) / span * (double)(bins - 1) + 0.5);
      if (b >= bins) b = bins - 1;
      if (s->reasons >= 0) rs[b] = (rs[b] < 0 ? 0 : rs[b]) | s->reasons;
      if (s->sm_mhz >= 0 && (sm[b] < 0 || s->sm_mhz < sm[b])) sm[b] = s->sm_mhz;
    }
    json_t *e = json_object(), *ja = json_array(), *jb = json_array();
    for (size_t b = 0; b < bins; b++) {
      json_array_append_new(ja, rs[b] >= 0 ? json_integer(rs[b]) : json_null());
      json_array_append_new(jb, sm[b] >= 0 ? json_integer(sm[b]) : json_null());
    }
    json_object_set_new(e, "rank", json_integer(r->rank));
    json_object_set_new(e, "host", json_string(r->host));
    json_object_set_new(e, "gpu_name", r->gpu_name ? json_string(r->gpu_name) : json_null());
    json_object_set_new(e, "reasons", ja);
    json_object_set_new(e, "sm_mhz", jb);
    json_array_append_new(ranks, e);
  }
  free(rs);
  free(sm);
  json_object_set_new(o, "ranks", ranks);
  json_object_set_new(o, "ranks_omitted", json_integer((json_int_t)omitted));
  return o;
}

json_t *report_health_json(const struct report_health *h, const struct cs_det_result *det) {
  json_t *root = json_object(), *ranks = json_array(), *hosts = json_array(), *un = json_array();
  char d[1024];
  for (size_t i = 0; h && i < h->nranks; i++) {
    const struct rank_h *r = &h->ranks[i];
    json_t *o = json_object(), *thr = json_object(), *nvl = json_array();
    json_object_set_new(o, "rank", json_integer(r->rank));
    json_object_set_new(o, "host", json_string(r->host));
    json_object_set_new(o, "gpu_name", r->gpu_name ? json_string(r->gpu_name) : json_null());
    json_object_set_new(o, "gpu_uuid", json_string(r->gpu_uuid ? r->gpu_uuid : ""));
    json_object_set_new(o, "pci_bus_id", json_string(r->bus ? r->bus : ""));
    json_object_set_new(o, "samples", json_integer((json_int_t)r->samples));
    double n = r->reason_samples ? (double)r->reason_samples : 1;
    json_object_set_new(thr, "power_cap", r->reason_samples ? json_real(r->n_power / n) : json_null());
    json_object_set_new(thr, "thermal", r->reason_samples ? json_real(r->n_thermal / n) : json_null());
    json_object_set_new(thr, "hw_slowdown", r->reason_samples ? json_real(r->n_hw / n) : json_null());
    json_object_set_new(o, "throttle_share", thr);
    json_object_set_new(o, "sm_mhz_median", r->sm_med >= 0 ? json_real(r->sm_med) : json_null());
    json_object_set_new(o, "ecc_corrected", r->ecc_c >= 0 ? json_integer(r->ecc_c) : json_null());
    json_object_set_new(o, "ecc_uncorrected", r->ecc_u >= 0 ? json_integer(r->ecc_u) : json_null());
    json_object_set_new(o, "pcie_replay", r->pcie >= 0 ? json_integer(r->pcie) : json_null());
    json_object_set_new(o, "remap_pending", json_boolean(r->remap_pending));
    for (int l = 0; l < NVL_MAX; l++)
      if (r->nvl[l][0] > 0 || r->nvl[l][1] > 0 || r->nvl[l][2] > 0) {
        json_t *e = json_object();
        json_object_set_new(e, "link", json_integer(l));
        json_object_set_new(e, "crc", json_integer(r->nvl[l][0] > 0 ? r->nvl[l][0] : 0));
        json_object_set_new(e, "replay", json_integer(r->nvl[l][1] > 0 ? r->nvl[l][1] : 0));
        json_object_set_new(e, "recovery", json_integer(r->nvl[l][2] > 0 ? r->nvl[l][2] : 0));
        json_array_append_new(nvl, e);
      }
    json_object_set_new(o, "nvlink", nvl);
    json_t *ctx = report_health_gpu_context(h, r->rank);
    json_object_set_new(o, "xid", json_is_object(ctx) ? json_incref(json_object_get(ctx, "xid")) : json_array());
    json_decref(ctx);
    json_array_append_new(ranks, o);
    if (rank_has_errors(r) && !rank_named(det, r)) {
      json_t *e = json_object();
      rank_errors_text(r, d, sizeof d);
      json_object_set_new(e, "rank", json_integer(r->rank));
      json_object_set_new(e, "host", json_string(r->host));
      json_object_set_new(e, "errors", json_string(d));
      json_array_append_new(un, e);
    }
  }
  for (size_t i = 0; h && i < h->nports; i++) {
    bool seen = false;
    for (size_t j = 0; j < i; j++) seen |= !strcmp(h->ports[j].host, h->ports[i].host);
    if (seen) continue;
    const char *host = h->ports[i].host;
    json_t *o = json_object();
    json_object_set_new(o, "host", json_string(host));
    json_object_set_new(o, "ports", report_health_host_ports(h, host));
    json_array_append_new(hosts, o);
    if (rh_host_sum(h, host, rh_ib_error_counters, NELEM(rh_ib_error_counters)) > 0 && !host_named(det, host)) {
      json_t *e = json_object();
      rh_ports_detail(h, host, rh_ib_error_counters, NELEM(rh_ib_error_counters), d, sizeof d);
      json_object_set_new(e, "rank", json_integer(-1));
      json_object_set_new(e, "host", json_string(host));
      json_object_set_new(e, "errors", json_string(d));
      json_array_append_new(un, e);
    }
  }
  json_object_set_new(root, "ranks", ranks);
  json_object_set_new(root, "hosts", hosts);
  json_object_set_new(root, "unexplained", un);
  json_object_set_new(root, "timeline", timeline_json(h));
  return root;
}

void report_health_text(const struct report_health *h, const struct cs_det_result *det, FILE *o) {
  fprintf(o, "\n# Health: GPU model, share of samples each throttle reason was active, median SM clock,\n"
             "# counter deltas over the job (docs/health.md)\n");
  if (!h || (!h->nranks && !h->nports)) {
    fprintf(o, "  (no health samples)\n");
    return;
  }
  fprintf(o, "# %5s  %-16s %-26s %6s %6s %6s %7s %6s %6s %6s  %s\n", "rank", "host", "gpu", "power", "therm", "hwslow",
          "sm_mhz", "ecc_c", "ecc_u", "pcie", "nvlink/xid");
  char b[128], g[128], d[1024];
  for (size_t i = 0; i < h->nranks; i++) {
    const struct rank_h *r = &h->ranks[i];
    double n = r->reason_samples ? (double)r->reason_samples : 1;
    rank_errors_text(r, d, sizeof d);
    fprintf(o, "  %5d  %-16s %-26s %5.0f%% %5.0f%% %5.0f%% %7.0f %6lld %6lld %6lld  %s\n", r->rank,
            cs_text_safe(r->host, b, sizeof b), r->gpu_name ? cs_text_safe(r->gpu_name, g, sizeof g) : "?",
            100 * r->n_power / n, 100 * r->n_thermal / n, 100 * r->n_hw / n, r->sm_med, (long long)r->ecc_c,
            (long long)r->ecc_u, (long long)r->pcie, d[0] ? d : "-");
  }
  for (size_t i = 0; i < h->nports; i++) {
    const struct port_h *p = &h->ports[i];
    fprintf(o, "  ib %-16s %s/%d %s %.0f Gb/s:", cs_text_safe(p->host, b, sizeof b), cs_text_safe(p->dev, g, sizeof g), p->port,
            p->state ? p->state : "?", p->rate);
    for (int c = 0; c < CS_IB_NCOUNTERS; c++)
      if (p->c[c] > 0 && c != CS_IB_PORT_XMIT_DATA && c != CS_IB_PORT_RCV_DATA)
        fprintf(o, " %s %lld", cs_ib_counter_names[c], (long long)p->c[c]);
    fprintf(o, "\n");
  }
  json_t *j = report_health_json(h, det), *un = json_object_get(j, "unexplained");
  fprintf(o, "# errors with no finding:%s\n", json_array_size(un) ? "" : " none");
  size_t k;
  json_t *e;
  json_array_foreach(un, k, e)
      fprintf(o, "  rank %lld %s: %s\n", (long long)json_integer_value(json_object_get(e, "rank")),
              cs_text_safe(json_string_value(json_object_get(e, "host")), b, sizeof b),
              cs_text_safe(json_string_value(json_object_get(e, "errors")), d, sizeof d));
  json_decref(j);
}
