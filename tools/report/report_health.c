/* tools/report/report_health.c: the report's `health` section and its joins (report_health.h).
 * Per rank: GPU model, the share of samples each clock event (throttle) reason was active,
 * median SM clock, counter deltas summed over the job, XIDs with their time. Per host: the IB
 * port deltas (from the samples of its local rank 0). A straggler's causes come from its
 * rank's samples over the span it was flagged (a link straggler's from its hosts' ports); a
 * GPU or port with errors that no finding names is listed under "unexplained"
 * (tools/report/report_health_json.c writes the section). */
#include "report_health_internal.h"
#include "xalloc.h"
#include <math.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>

#define R_POWER 0x4ULL        /* NVML clock event reasons (nvml.h) */
#define R_HW_SLOWDOWN 0x88ULL /* hardware slowdown, power brake */
#define R_THERMAL 0x60ULL     /* software and hardware thermal slowdown */
#define REASON_SHARE 0.2      /* a reason active in >= this share of samples is a cause */
#define CLOCKS_LOW 0.85       /* median SM clock under this fraction of its model's peers */

const int rh_ib_error_counters[RH_IB_ERROR_COUNTERS] = {CS_IB_SYMBOL_ERROR, CS_IB_LINK_DOWNED, CS_IB_LINK_ERROR_RECOVERY,
                                                        CS_IB_PORT_RCV_ERRORS, CS_IB_PORT_XMIT_DISCARDS, CS_IB_LOCAL_LINK_INTEGRITY_ERRORS,
                                                        CS_IB_EXCESSIVE_BUFFER_OVERRUN_ERRORS, CS_IB_OUT_OF_SEQUENCE, CS_IB_PACKET_SEQ_ERR};
static const int ib_congestion_counters[] = {CS_IB_PORT_XMIT_WAIT, CS_IB_NP_CNP_SENT, CS_IB_RP_CNP_HANDLED};
#define NELEM(a) (sizeof a / sizeof *a)

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static void add(int64_t *acc, int64_t v) {
  if (v < 0) return;
  if (*acc < 0) *acc = 0;
  *acc = *acc > INT64_MAX - v ? INT64_MAX : *acc + v;
}

/* Which samples a rank's figures come from: the whole job, or the span a straggler was
 * flagged over ([t0, t1] of its own clock, the op end times of its first and last flagged
 * instances). A span takes the samples inside it plus the first one after it (a sample's
 * counters cover the time since the one before), or, when it holds none, the last one
 * before it; the state figures (throttle reasons, clocks, power, temperature) come from
 * those, the error counters from every sample up to the span's end (errors come before the
 * slowdown they cause). */
struct span {
  bool whole;
  int64_t t0, t1;
};
static const struct span whole_job = {true, 0, 0};

/* the index of the first sample after t1 (or of the last before t0 when none is inside
 * [t0, t1] and none is after): -1 none */
static void span_edges(const struct cs_dumpfile *f, const struct span *sp, ssize_t *after, ssize_t *before, bool *inside) {
  *after = *before = -1;
  *inside = false;
  for (size_t i = 0; i < f->nhealths; i++) {
    int64_t t = f->healths[i].t_ns;
    if (!f->healths[i].has_gpu) continue;
    if (t >= sp->t0 && t <= sp->t1) *inside = true;
    if (t > sp->t1 && (*after < 0 || t < f->healths[*after].t_ns)) *after = (ssize_t)i;
    if (t < sp->t0 && (*before < 0 || t > f->healths[*before].t_ns)) *before = (ssize_t)i;
  }
}

static void build_rank(struct rank_h *r, const struct cs_dumpfile *f, const struct span *sp) {
  memset(r, 0, sizeof *r);
  r->f = f;
  r->rank = f->hdr.rank;
  r->host = f->hdr.host;
  r->gpu_name = f->hdr.gpu_name && *f->hdr.gpu_name ? f->hdr.gpu_name : NULL;
  r->gpu_uuid = f->hdr.gpu_uuid;
  r->arch = f->hdr.gpu_arch;
  r->bus = f->hdr.gpu_pci_bus_id && *f->hdr.gpu_pci_bus_id ? f->hdr.gpu_pci_bus_id : f->hdr.pci_bus_id;
  r->ecc_c = r->ecc_u = r->pcie = -1;
  r->power_max = r->temp_max = -1;
  r->sm_med = -1;
  ssize_t after = -1, before = -1;
  bool inside = false;
  int64_t t_end = INT64_MAX;
  if (!sp->whole) {
    span_edges(f, sp, &after, &before, &inside);
    t_end = after >= 0 ? f->healths[after].t_ns : sp->t1;
  }
  double *sm = xrealloc(NULL, (f->nhealths ? f->nhealths : 1) * sizeof *sm);
  size_t nsm = 0;
  for (size_t i = 0; i < f->nhealths; i++) {
    const struct cs_health_rec *h = &f->healths[i];
    if (!h->has_gpu || h->t_ns > t_end) continue;
    bool state = sp->whole || (h->t_ns >= sp->t0 && h->t_ns <= sp->t1) || (ssize_t)i == after ||
                 (!inside && after < 0 && (ssize_t)i == before);
    if (state) {
      r->samples++;
      if (h->reasons >= 0) {
        r->reason_samples++;
        r->n_power += (h->reasons & R_POWER) != 0;
        r->n_thermal += (h->reasons & R_THERMAL) != 0;
        r->n_hw += (h->reasons & R_HW_SLOWDOWN) != 0;
      }
      if (h->sm_mhz >= 0) sm[nsm++] = (double)h->sm_mhz;
      if (h->power_mw > r->power_max) r->power_max = h->power_mw;
      if (h->temp_c > r->temp_max) r->temp_max = h->temp_c;
    }
    add(&r->ecc_c, h->ecc_corrected);
    add(&r->ecc_u, h->ecc_uncorrected);
    add(&r->pcie, h->pcie_replay);
    if (h->remap_pending >= 0 || h->remap_failure >= 0) r->have_remap = true;
    r->remap_pending |= h->remap_pending > 0;
    r->remap_failure |= h->remap_failure > 0;
    for (int k = 0; k < h->nnvl; k++) {
      int l = h->nvl[k].link;
      if (l < 0 || l >= NVL_MAX) continue;
      int64_t v[3] = {h->nvl[k].crc, h->nvl[k].replay, h->nvl[k].recovery};
      for (int j = 0; j < 3; j++) {
        if (v[j] > 0) r->nvl_any = true;
        if (v[j] > 0) add(&r->nvl[l][j], v[j]);
      }
    }
    for (int k = 0; k < h->nxid && r->nxid < XID_MAX; k++) {
      r->xid[r->nxid][0] = h->xid[k];
      r->xid[r->nxid][1] = h->t_ns;
      r->nxid++;
    }
  }
  if (nsm) {
    qsort(sm, nsm, sizeof *sm, cmp_dbl);
    r->sm_med = sm[(nsm - 1) / 2];
  }
  free(sm);
}

static struct port_h *port_of(struct report_health *h, const char *host, const char *dev, int port) {
  for (size_t i = 0; i < h->nports; i++)
    if (!strcmp(h->ports[i].host, host) && !strcmp(h->ports[i].dev, dev) && h->ports[i].port == port) return &h->ports[i];
  return NULL;
}

struct report_health *report_health_build(const struct cs_dumpset *set) {
  struct report_health *h = xcalloc(1, sizeof *h);
  h->ranks = xcalloc(set->nfiles ? set->nfiles : 1, sizeof *h->ranks);
  size_t cap = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (!f->nhealths && !(f->hdr.gpu_name && *f->hdr.gpu_name)) continue;
    build_rank(&h->ranks[h->nranks++], f, &whole_job);
    /* IB ports: one sampler per host; a second process of the same host sampling the same
     * port (two local rank 0s) is not added twice */
    bool host_taken = false;
    for (size_t k = 0; k < h->nports; k++)
      if (!strcmp(h->ports[k].host, f->hdr.host)) host_taken = true;
    if (host_taken) continue;
    for (size_t k = 0; k < f->nhports; k++) {
      const struct cs_health_port *p = &f->hports[k];
      struct port_h *q = port_of(h, f->hdr.host, p->dev, p->port);
      if (!q) {
        if (h->nports == cap) {
          cap = cap ? cap * 2 : 8;
          h->ports = xrealloc(h->ports, cap * sizeof *h->ports);
        }
        q = &h->ports[h->nports++];
        memset(q, 0, sizeof *q);
        q->host = f->hdr.host;
        q->dev = p->dev;
        q->port = p->port;
        for (int c = 0; c < CS_IB_NCOUNTERS; c++) q->c[c] = -1;
      }
      if (p->state && *p->state) q->state = p->state;
      if (p->rate_gbps >= 0) q->rate = p->rate_gbps;
      for (int c = 0; c < CS_IB_NCOUNTERS; c++) add(&q->c[c], p->c[c]);
    }
  }
  /* the newest architecture, and the majority GPU model */
  h->max_arch = -1;
  for (size_t i = 0; i < h->nranks; i++)
    if (h->ranks[i].gpu_name && h->ranks[i].arch > h->max_arch) {
      h->max_arch = h->ranks[i].arch;
      h->max_arch_model = h->ranks[i].gpu_name;
    }
  /* the models and how many ranks run each; the majority model: the one more ranks run than
   * any other; a tie at the top (2:2) has none, and no rank is "the odd model out" */
  h->models = xcalloc(h->nranks ? h->nranks : 1, sizeof *h->models);
  for (size_t i = 0; i < h->nranks; i++) {
    if (!h->ranks[i].gpu_name) continue;
    h->model_ranks++;
    size_t k = 0;
    while (k < h->nmodels && strcmp(h->models[k].name, h->ranks[i].gpu_name)) k++;
    if (k == h->nmodels) h->models[h->nmodels++].name = h->ranks[i].gpu_name;
    h->models[k].ranks++;
  }
  size_t runner_up = 0;
  for (size_t k = 0; k < h->nmodels; k++)
    if (h->models[k].ranks > h->major_count) {
      runner_up = h->major_count;
      h->major_count = h->models[k].ranks;
      h->major_model = h->models[k].name;
    } else if (h->models[k].ranks > runner_up)
      runner_up = h->models[k].ranks;
  if (runner_up == h->major_count) h->major_model = NULL;
  /* how many ranks run the newest architecture's model named in the causes */
  for (size_t k = 0; h->max_arch_model && k < h->nmodels; k++)
    if (!strcmp(h->models[k].name, h->max_arch_model)) h->max_arch_count = h->models[k].ranks;
  return h;
}

void report_health_free(struct report_health *h) {
  if (!h) return;
  free(h->ranks);
  free(h->models);
  free(h->ports);
  free(h);
}

const struct rank_h *rh_rank_of(const struct report_health *h, int rank) {
  for (size_t i = 0; i < h->nranks; i++)
    if (h->ranks[i].rank == rank) return &h->ranks[i];
  return NULL;
}

/* the median SM clock of the other ranks with the same model (-1 none) */
static double peer_sm(const struct report_health *h, const struct rank_h *r) {
  double *v = xrealloc(NULL, (h->nranks ? h->nranks : 1) * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < h->nranks; i++) {
    const struct rank_h *q = &h->ranks[i];
    if (q->f == r->f || q->sm_med < 0 || !q->gpu_name || !r->gpu_name || strcmp(q->gpu_name, r->gpu_name)) continue;
    v[n++] = q->sm_med;
  }
  double m = -1;
  if (n) {
    qsort(v, n, sizeof *v, cmp_dbl);
    m = v[(n - 1) / 2];
  }
  free(v);
  return m;
}

static int64_t port_sum(const struct port_h *p, const int *which, size_t n) {
  int64_t s = 0;
  for (size_t k = 0; k < n; k++)
    if (p->c[which[k]] > 0) s += p->c[which[k]];
  return s;
}
int64_t rh_host_sum(const struct report_health *h, const char *host, const int *which, size_t n) {
  int64_t s = 0;
  for (size_t i = 0; i < h->nports; i++)
    if (!strcmp(h->ports[i].host, host)) s += port_sum(&h->ports[i], which, n);
  return s;
}
/* congestion beyond the other hosts': more than twice their median, and > 0 */
static bool host_congested(const struct report_health *h, const char *host) {
  int64_t mine = rh_host_sum(h, host, ib_congestion_counters, NELEM(ib_congestion_counters));
  if (mine <= 0) return false;
  double *v = xrealloc(NULL, (h->nports ? h->nports : 1) * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < h->nports; i++) {
    if (!strcmp(h->ports[i].host, host)) continue;
    bool seen = false;
    for (size_t j = 0; j < i; j++) seen |= !strcmp(h->ports[j].host, h->ports[i].host);
    if (!seen) v[n++] = (double)rh_host_sum(h, h->ports[i].host, ib_congestion_counters, NELEM(ib_congestion_counters));
  }
  double med = 0;
  if (n) {
    qsort(v, n, sizeof *v, cmp_dbl);
    med = v[(n - 1) / 2];
  }
  free(v);
  return (double)mine > 2 * med;
}
void rh_ports_detail(const struct report_health *h, const char *host, const int *which, size_t n, char *b, size_t cap) {
  size_t len = 0;
  b[0] = 0;
  for (size_t i = 0; i < h->nports && len < cap; i++) {
    const struct port_h *p = &h->ports[i];
    if (strcmp(p->host, host) || port_sum(p, which, n) <= 0) continue;
    len += (size_t)snprintf(b + len, cap - len, "%s%s %s/%d:", len ? ";" : "", host, p->dev, p->port);
    for (size_t k = 0; k < n && len < cap; k++)
      if (p->c[which[k]] > 0)
        len += (size_t)snprintf(b + len, cap - len, " %s %lld", cs_ib_counter_names[which[k]], (long long)p->c[which[k]]);
  }
}

typedef void (*cause_fn)(void *arg, const char *kind, const char *detail);

static void host_causes(const struct report_health *h, const char *host, cause_fn fn, void *arg) {
  char d[512];
  if (!host) return;
  if (rh_host_sum(h, host, rh_ib_error_counters, NELEM(rh_ib_error_counters)) > 0) {
    rh_ports_detail(h, host, rh_ib_error_counters, NELEM(rh_ib_error_counters), d, sizeof d);
    fn(arg, "ib_errors", d);
  }
  if (host_congested(h, host)) {
    rh_ports_detail(h, host, ib_congestion_counters, NELEM(ib_congestion_counters), d, sizeof d);
    fn(arg, "ib_congestion", d);
  }
}

/* the model most ranks run other than name (the first seen on a tie), its count in *other_n
 * and name's own in *mine; NULL when every rank with a model runs name */
static const char *most_run_other(const struct report_health *h, const char *name, size_t *mine, size_t *other_n) {
  const char *best = NULL;
  *mine = *other_n = 0;
  for (size_t k = 0; k < h->nmodels; k++)
    if (!strcmp(h->models[k].name, name))
      *mine = h->models[k].ranks;
    else if (h->models[k].ranks > *other_n)
      *other_n = h->models[k].ranks, best = h->models[k].name;
  return best;
}

static void rank_causes(const struct report_health *h, const struct rank_h *r, cause_fn fn, void *arg) {
  char d[512];
  if (r->reason_samples) {
    double n = (double)r->reason_samples;
    if (r->n_power / n >= REASON_SHARE) {
      snprintf(d, sizeof d, "power cap active in %.0f%% of samples (up to %.0f W)", 100 * r->n_power / n,
               r->power_max >= 0 ? (double)r->power_max / 1000 : 0);
      fn(arg, "power_cap", d);
    }
    if (r->n_thermal / n >= REASON_SHARE) {
      snprintf(d, sizeof d, "thermal slowdown in %.0f%% of samples (up to %lld C)", 100 * r->n_thermal / n, (long long)r->temp_max);
      fn(arg, "thermal", d);
    }
    if (r->n_hw / n >= REASON_SHARE) {
      snprintf(d, sizeof d, "hardware slowdown in %.0f%% of samples", 100 * r->n_hw / n);
      fn(arg, "hw_slowdown", d);
    }
  }
  bool throttled = r->reason_samples && (r->n_power + r->n_thermal + r->n_hw) / (double)r->reason_samples >= REASON_SHARE;
  double peers = peer_sm(h, r);
  if (!throttled && r->sm_med >= 0 && peers > 0 && r->sm_med < CLOCKS_LOW * peers) {
    snprintf(d, sizeof d, "median SM clock %.0f MHz, its model's other ranks %.0f MHz", r->sm_med, peers);
    fn(arg, "clocks_low", d);
  }
  if (r->gpu_name && r->arch >= 0 && r->arch < h->max_arch) { /* an older generation than its peers' */
    /* "the job's" only for the model most ranks run: in a 2:2 split neither is */
    if (h->major_model && !strcmp(h->major_model, h->max_arch_model))
      snprintf(d, sizeof d, "%s, an older architecture than the job's %s (%zu of %zu ranks)", r->gpu_name, h->max_arch_model,
               h->max_arch_count, h->model_ranks);
    else
      snprintf(d, sizeof d, "%s, an older architecture than %s, which %zu of %zu ranks run", r->gpu_name, h->max_arch_model,
               h->max_arch_count, h->model_ranks);
    fn(arg, "gpu_model", d);
  } else if (r->gpu_name && h->major_model && strcmp(r->gpu_name, h->major_model) &&
             (r->arch < 0 || r->arch == h->max_arch)) { /* same or unknown generation: the odd model out */
    snprintf(d, sizeof d, "%s; %zu of %zu ranks run %s", r->gpu_name, h->major_count, h->model_ranks, h->major_model);
    fn(arg, "gpu_model", d);
  } else if (r->gpu_name && !h->major_model && (r->arch < 0 || r->arch == h->max_arch)) {
    /* a tie at the top (2:2): no model is the job's; the split itself is the cause */
    size_t mine = 0, other_n = 0;
    const char *other = most_run_other(h, r->gpu_name, &mine, &other_n);
    if (other) {
      snprintf(d, sizeof d, "%s (%zu of %zu ranks); no model is the job's: %zu run %s", r->gpu_name, mine, h->model_ranks,
               other_n, other);
      fn(arg, "gpu_model", d);
    }
  }
  if (r->nvl_any) {
    size_t len = 0;
    d[0] = 0;
    for (int l = 0; l < NVL_MAX && len < sizeof d; l++)
      if (r->nvl[l][0] > 0 || r->nvl[l][1] > 0 || r->nvl[l][2] > 0)
        len += (size_t)snprintf(d + len, sizeof d - len, "%slink %d: crc %lld, replay %lld, recovery %lld", len ? "; " : "",
                                l, (long long)(r->nvl[l][0] > 0 ? r->nvl[l][0] : 0), (long long)(r->nvl[l][1] > 0 ? r->nvl[l][1] : 0),
                                (long long)(r->nvl[l][2] > 0 ? r->nvl[l][2] : 0));
    fn(arg, "nvlink_errors", d);
  }
  if (r->pcie > 0) {
    snprintf(d, sizeof d, "%lld PCIe replays", (long long)r->pcie);
    fn(arg, "pcie_replay", d);
  }
}

static void straggler_causes(const struct report_health *h, const struct cs_det_straggler *s, const char *src,
                             const char *dst, cause_fn fn, void *arg) {
  if (!h) return;
  if (s->rank >= 0) {
    const struct rank_h *r = rh_rank_of(h, s->rank);
    if (r && s->first_flag_ns > 0 && s->last_flag_ns >= s->first_flag_ns) { /* the flagged span */
      struct rank_h w;
      struct span sp = {false, s->first_flag_ns, s->last_flag_ns};
      build_rank(&w, r->f, &sp);
      rank_causes(h, &w, fn, arg);
    } else if (r)
      rank_causes(h, r, fn, arg);
    host_causes(h, s->host ? s->host : r ? r->host
                                         : NULL,
                fn, arg);
  } else if (src || dst) {
    host_causes(h, src, fn, arg);
    if (dst && (!src || strcmp(src, dst))) host_causes(h, dst, fn, arg);
  } else { /* a slow link whose hosts are not known (no NCCL_NET records): every host's ports */
    for (size_t i = 0; i < h->nports; i++) {
      bool seen = false;
      for (size_t j = 0; j < i; j++) seen |= !strcmp(h->ports[j].host, h->ports[i].host);
      if (!seen) host_causes(h, h->ports[i].host, fn, arg);
    }
  }
}

static void cause_json(void *arg, const char *kind, const char *detail) {
  json_t *o = json_object();
  json_object_set_new(o, "kind", json_string(kind));
  json_object_set_new(o, "detail", json_string(detail));
  json_array_append_new((json_t *)arg, o);
}
json_t *report_health_causes(const struct report_health *h, const struct cs_det_straggler *s, const char *src_host,
                             const char *dst_host) {
  json_t *a = json_array();
  straggler_causes(h, s, src_host, dst_host, cause_json, a);
  return a;
}

struct text_acc {
  char *b;
  size_t len, cap;
};
static void cause_text(void *arg, const char *kind, const char *detail) {
  (void)detail;
  struct text_acc *t = arg;
  if (t->len >= t->cap) return;
  if (strstr(t->b, kind)) return; /* ib_errors of both hosts: once */
  t->len += (size_t)snprintf(t->b + t->len, t->cap - t->len, "%s%s", t->len ? "," : "", kind);
}
const char *report_health_cause_text(const struct report_health *h, const struct cs_det_straggler *s, const char *src_host,
                                     const char *dst_host, char *buf, size_t cap) {
  struct text_acc t = {buf, 0, cap};
  buf[0] = 0;
  straggler_causes(h, s, src_host, dst_host, cause_text, &t);
  if (!buf[0]) snprintf(buf, cap, "-");
  return buf;
}
