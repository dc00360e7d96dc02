/* tools/exporter/exporter_otlp.c: the exporter's exposition as an OTLP metrics export request
 * (opentelemetry/proto/collector/metrics/v1 ExportMetricsServiceRequest, protobuf), for a push
 * to an OpenTelemetry collector over OTLP/HTTP (exporter_otlp_post.c).
 *
 * The input is the exporter's own Prometheus text exposition (exporter_metrics.c), so the two
 * carry the same families, labels and values: a gauge becomes a Gauge, a counter a cumulative
 * monotonic Sum (named without `_total`), a histogram a cumulative Histogram whose explicit
 * bounds are the finite `le` values. Every label becomes a string attribute of the point. The
 * field numbers are OTLP's (opentelemetry-proto, metrics/v1/metrics.proto, common/v1,
 * resource/v1), written with the protobuf wire format by hand. */
#include "exporter_otlp.h"
#include "exporter_obuf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the protobuf wire format */
enum { WT_VARINT = 0,
       WT_I64 = 1,
       WT_LEN = 2 };
static void pb_varint(struct obuf *o, uint64_t v) {
  char b[10];
  size_t n = 0;
  do {
    b[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  putn(o, b, n);
}
static void pb_tag(struct obuf *o, unsigned field, unsigned wt) { pb_varint(o, (uint64_t)field << 3 | wt); }
static void pb_fixed64(struct obuf *o, unsigned field, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; i++) b[i] = (char)(v >> (8 * i));
  pb_tag(o, field, WT_I64);
  putn(o, b, 8);
}
static void pb_double(struct obuf *o, unsigned field, double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  pb_fixed64(o, field, v);
}
static void pb_bytes(struct obuf *o, unsigned field, const char *p, size_t n) {
  pb_tag(o, field, WT_LEN);
  pb_varint(o, n);
  putn(o, p, n);
}
static void pb_str(struct obuf *o, unsigned field, const char *s) { pb_bytes(o, field, s, strlen(s)); }
/* a nested message: its encoding in sub, appended as field `field`, sub emptied */
static void pb_msg(struct obuf *o, unsigned field, struct obuf *sub) {
  if (sub->oom) o->oom = true;
  pb_bytes(o, field, sub->p ? sub->p : "", sub->n);
  sub->n = 0;
}
/* KeyValue { key = 1; AnyValue value = 2 { string_value = 1 } } as field `field` of o */
static void pb_attr(struct obuf *o, unsigned field, const char *k, size_t kn, const char *v, size_t vn) {
  struct obuf any = {0}, kv = {0};
  pb_bytes(&any, 1, v, vn);
  pb_bytes(&kv, 1, k, kn);
  pb_msg(&kv, 2, &any);
  pb_msg(o, field, &kv);
  free(any.p);
  free(kv.p);
}

/* ---- the text exposition */
enum kind { K_NONE,
            K_GAUGE,
            K_COUNTER,
            K_HIST };

/* a label set: the raw text between the braces, `le` left out for histograms */
struct labels {
  char k[32][128], v[32][512];
  size_t kn[32], vn[32];
  int n;
  double le;
  bool has_le;
};

/* parses `{k="v",...}` at *p (escapes \\ \" \n undone); false on anything else */
static bool parse_labels(const char **p, const char *end, struct labels *L) {
  const char *s = *p;
  L->n = 0;
  L->has_le = false;
  if (s >= end || *s != '{') return true;
  s++;
  while (s < end && *s != '}') {
    const char *k = s;
    while (s < end && *s != '=') s++;
    size_t kn = (size_t)(s - k);
    if (s + 1 >= end || s[1] != '"' || kn == 0 || kn >= sizeof L->k[0]) return false;
    s += 2;
    char val[512];
    size_t vn = 0;
    while (s < end && *s != '"') {
      char c = *s++;
      if (c == '\\' && s < end) {
        c = *s++;
        if (c == 'n') c = '\n';
      }
      if (vn + 1 >= sizeof val) return false;
      val[vn++] = c;
    }
    if (s >= end) return false;
    s++; /* the closing quote */
    if (s < end && *s == ',') s++;
    if (kn == 2 && !memcmp(k, "le", 2)) {
      val[vn] = 0;
      L->le = strcmp(val, "+Inf") == 0 ? 1.0 / 0.0 : strtod(val, NULL);
      L->has_le = true;
      continue;
    }
    if (L->n == 32) return false;
    memcpy(L->k[L->n], k, kn);
    L->kn[L->n] = kn;
    memcpy(L->v[L->n], val, vn);
    L->vn[L->n] = vn;
    L->n++;
  }
  if (s >= end) return false;
  *p = s + 1;
  return true;
}

static bool same_labels(const struct labels *a, const struct labels *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->kn[i] != b->kn[i] || a->vn[i] != b->vn[i] || memcmp(a->k[i], b->k[i], a->kn[i]) ||
        memcmp(a->v[i], b->v[i], a->vn[i]))
      return false;
  return true;
}

static void put_attrs(struct obuf *o, unsigned field, const struct labels *L) {
  for (int i = 0; i < L->n; i++) pb_attr(o, field, L->k[i], L->kn[i], L->v[i], L->vn[i]);
}

/* one histogram point being gathered: its buckets (cumulative in the text), sum and count */
struct hpoint {
  struct labels L;
  double bounds[64];
  uint64_t cum[64];
  int nb;
  double sum, count;
};

struct metric {
  char name[256], help[1024];
  enum kind kind;
  struct obuf points; /* the encoded data points of a gauge or sum */
  struct hpoint h;    /* the histogram point in progress */
  bool h_open;
};

struct enc {
  struct obuf metrics; /* the encoded Metric messages, each as field 2 of ScopeMetrics */
  struct metric m;
  uint64_t now, start;
  bool bad;
};

/* HistogramDataPoint: attributes 9, start 2, time 3, count 4, sum 5, bucket_counts 6 (packed
 * fixed64, per bucket), explicit_bounds 7 (packed double, the finite bounds) */
static void hist_flush(struct enc *E) {
  struct metric *M = &E->m;
  if (!M->h_open) return;
  struct hpoint *h = &M->h;
  struct obuf dp = {0}, packed = {0};
  pb_fixed64(&dp, 2, E->start);
  pb_fixed64(&dp, 3, E->now);
  pb_fixed64(&dp, 4, (uint64_t)h->count);
  pb_double(&dp, 5, h->sum);
  uint64_t prev = 0;
  for (int i = 0; i < h->nb; i++) {
    uint64_t c = h->cum[i] >= prev ? h->cum[i] - prev : 0;
    prev = h->cum[i] > prev ? h->cum[i] : prev;
    char b[8];
    for (int j = 0; j < 8; j++) b[j] = (char)(c >> (8 * j));
    putn(&packed, b, 8);
  }
  pb_msg(&dp, 6, &packed);
  for (int i = 0; i < h->nb; i++)
    if (h->bounds[i] < 1.0 / 0.0) {
      uint64_t v;
      memcpy(&v, &h->bounds[i], sizeof v);
      char b[8];
      for (int j = 0; j < 8; j++) b[j] = (char)(v >> (8 * j));
      putn(&packed, b, 8);
    }
  pb_msg(&dp, 7, &packed);
  put_attrs(&dp, 9, &h->L);
  pb_msg(&M->points, 1, &dp);
  free(dp.p);
  free(packed.p);
  M->h_open = false;
}

/* Metric: name 1, description 2, gauge 5 / sum 7 / histogram 9 */
static void metric_flush(struct enc *E) {
  struct metric *M = &E->m;
  if (M->kind == K_NONE) return;
  hist_flush(E);
  if (M->points.n) {
    struct obuf data = {0}, msg = {0};
    putn(&data, M->points.p, M->points.n);
    if (M->points.oom) data.oom = true;
    if (M->kind != K_GAUGE) {
      pb_tag(&data, 2, WT_VARINT); /* aggregation_temporality: CUMULATIVE */
      pb_varint(&data, 2);
    }
    if (M->kind == K_COUNTER) {
      pb_tag(&data, 3, WT_VARINT); /* is_monotonic */
      pb_varint(&data, 1);
    }
    pb_str(&msg, 1, M->name);
    pb_str(&msg, 2, M->help);
    pb_msg(&msg, M->kind == K_GAUGE ? 5 : M->kind == K_COUNTER ? 7
                                                               : 9,
           &data);
    pb_msg(&E->metrics, 2, &msg);
    free(data.p);
    free(msg.p);
  }
  free(M->points.p);
  memset(M, 0, sizeof *M);
}

static void on_type(struct enc *E, const char *name, size_t nn, const char *type, const char *help) {
  metric_flush(E);
  struct metric *M = &E->m;
  M->kind = !strncmp(type, "gauge", 5)       ? K_GAUGE
            : !strncmp(type, "counter", 7)   ? K_COUNTER
            : !strncmp(type, "histogram", 9) ? K_HIST
                                             : K_NONE;
  if (M->kind == K_COUNTER && nn > 6 && !memcmp(name + nn - 6, "_total", 6)) nn -= 6;
  if (nn >= sizeof M->name) nn = sizeof M->name - 1;
  memcpy(M->name, name, nn);
  M->name[nn] = 0;
  snprintf(M->help, sizeof M->help, "%s", help);
}

/* NumberDataPoint: start 2, time 3, as_double 4, attributes 7 */
static void on_sample(struct enc *E, const char *name, size_t nn, const struct labels *L, double v) {
  struct metric *M = &E->m;
  size_t mn = strlen(M->name);
  if (M->kind == K_NONE || nn < mn || memcmp(name, M->name, mn)) {
    E->bad = true; /* a sample outside its family: the exposition is not ours */
    return;
  }
  const char *suf = name + mn;
  size_t sn = nn - mn;
  if (M->kind != K_HIST) {
    struct obuf dp = {0};
    if (M->kind == K_COUNTER) pb_fixed64(&dp, 2, E->start);
    pb_fixed64(&dp, 3, E->now);
    pb_double(&dp, 4, v);
    put_attrs(&dp, 7, L);
    pb_msg(&M->points, 1, &dp);
    free(dp.p);
    return;
  }
  struct hpoint *h = &M->h;
  if (M->h_open && !same_labels(&h->L, L)) hist_flush(E);
  if (!M->h_open) {
    memset(h, 0, sizeof *h);
    h->L = *L;
    h->L.has_le = false;
    M->h_open = true;
  }
  if (sn == 7 && !memcmp(suf, "_bucket", 7) && L->has_le && h->nb < 64) {
    h->bounds[h->nb] = L->le;
    h->cum[h->nb++] = v > 0 ? (uint64_t)v : 0;
  } else if (sn == 4 && !memcmp(suf, "_sum", 4))
    h->sum = v;
  else if (sn == 6 && !memcmp(suf, "_count", 6))
    h->count = v;
  else
    E->bad = true;
}

char *exp_otlp_encode(const char *text, size_t len, uint64_t now_ns, uint64_t start_ns, const char *host,
                      size_t *out_len) {
  struct enc *E = calloc(1, sizeof *E);
  if (!E) return NULL;
  E->now = now_ns;
  E->start = start_ns;
  struct labels *L = malloc(sizeof *L);
  char help[1024] = "";
  const char *p = text, *end = text + len;
  while (L && p < end && !E->bad) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    if (!strncmp(p, "# HELP ", 7)) {
      const char *s = p + 7, *sp = memchr(s, ' ', (size_t)(eol - s));
      snprintf(help, sizeof help, "%.*s", sp ? (int)(eol - sp - 1) : 0, sp ? sp + 1 : "");
    } else if (!strncmp(p, "# TYPE ", 7)) {
      const char *s = p + 7, *sp = memchr(s, ' ', (size_t)(eol - s));
      if (sp) on_type(E, s, (size_t)(sp - s), sp + 1, help);
      help[0] = 0;
    } else if (p < eol && *p != '#') {
      const char *s = p;
      while (s < eol && *s != '{' && *s != ' ') s++;
      size_t nn = (size_t)(s - p);
      if (!parse_labels(&s, eol, L) || s >= eol || *s != ' ') {
        E->bad = true;
        break;
      }
      char num[64];
      snprintf(num, sizeof num, "%.*s", (int)(eol - s - 1), s + 1);
      double v = !strcmp(num, "+Inf") ? 1.0 / 0.0 : !strcmp(num, "-Inf") ? -1.0 / 0.0
                                                                         : strtod(num, NULL);
      on_sample(E, p, nn, L, v);
    }
    p = eol + 1;
  }
  metric_flush(E);
  free(L);
  /* ResourceMetrics { resource 1 { attributes 1 }, scope_metrics 2 { scope 1 { name 1 }, metrics 2 } } */
  struct obuf res = {0}, scope = {0}, sm = {0}, rm = {0}, req = {0};
  pb_attr(&res, 1, "service.name", 12, "collscope", 9);
  if (host && *host) pb_attr(&res, 1, "host.name", 9, host, strlen(host));
  pb_str(&scope, 1, "collscope");
  pb_msg(&sm, 1, &scope);
  putn(&sm, E->metrics.p ? E->metrics.p : "", E->metrics.n);
  pb_msg(&rm, 1, &res);
  pb_msg(&rm, 2, &sm);
  pb_msg(&req, 1, &rm);
  bool bad = E->bad || E->metrics.oom || req.oom;
  free(res.p);
  free(scope.p);
  free(sm.p);
  free(rm.p);
  free(E->metrics.p);
  free(E);
  if (bad) {
    free(req.p);
    return NULL;
  }
  *out_len = req.n;
  return req.p;
}
