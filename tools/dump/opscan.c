/* tools/dump/opscan.c: fixed-layout scanner for the dump writer's "op" lines (contract in
 * opscan.h): a cursor walks the writer's keys in order; every value is checked against the
 * JSON grammar as it is converted, and any surprise hands the line back to jansson. */
#include "opscan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cur {
  const char *p, *e;
};

static bool lit(struct cur *c, const char *s, size_t n) {
  if ((size_t)(c->e - c->p) < n || memcmp(c->p, s, n) != 0) return false;
  c->p += n;
  return true;
}
#define LIT(c, s) lit(c, s, sizeof(s) - 1)
#define KEY(c, k) LIT(c, ",\"" k "\":")

static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* a JSON integer that fits a long long (jansson's json_int_t; it refuses a larger one) */
static bool integer(struct cur *c, long long *out) {
  const char *p = c->p;
  bool neg = p < c->e && *p == '-';
  if (neg) p++;
  const char *d = p;
  unsigned long long v = 0;
  while (p < c->e && is_digit(*p)) v = v * 10 + (unsigned)(*p++ - '0');
  size_t nd = (size_t)(p - d);
  if (nd == 0 || nd > 19 || (nd > 1 && *d == '0')) return false;       /* 19 digits < 2^64: no wrap */
  if (p < c->e && (*p == '.' || *p == 'e' || *p == 'E')) return false; /* a real: not for us */
  if (v > (unsigned long long)INT64_MAX + neg) return false;
  *out = neg ? (long long)(0 - v) : (long long)v;
  c->p = p;
  return true;
}

static bool uinteger(struct cur *c, uint64_t *out) {
  long long v;
  if (!integer(c, &v) || v < 0) return false;
  *out = (uint64_t)v;
  return true;
}

/* a JSON number; the common "-?D+.DDD" with <= 15 digits exactly (m / 10^k is correctly
 * rounded like strtod), anything else in the grammar through strtod */
static bool number(struct cur *c, double *out) {
  static const double pow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  const char *p = c->p, *s = p;
  bool neg = p < c->e && *p == '-';
  if (neg) p++;
  const char *d = p;
  unsigned long long m = 0;
  while (p < c->e && is_digit(*p)) m = m * 10 + (unsigned)(*p++ - '0');
  size_t ni = (size_t)(p - d), nf = 0;
  if (ni == 0 || (ni > 1 && *d == '0')) return false;
  if (p < c->e && *p == '.') {
    const char *f = ++p;
    while (p < c->e && is_digit(*p)) m = m * 10 + (unsigned)(*p++ - '0');
    nf = (size_t)(p - f);
    if (nf == 0) return false;
  }
  bool expo = p < c->e && (*p == 'e' || *p == 'E');
  if (!expo && ni + nf <= 15) {
    double v = (double)m / pow10[nf];
    *out = neg ? -v : v;
    c->p = p;
    return true;
  }
  if (expo) {
    p++;
    if (p < c->e && (*p == '+' || *p == '-')) p++;
    const char *x = p;
    while (p < c->e && is_digit(*p)) p++;
    if (p == x) return false;
  }
  /* the token is followed by ',' or '}' in the line, so strtod stops where the grammar did */
  char tmp[64];
  size_t n = (size_t)(p - s);
  if (n >= sizeof tmp) return false;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  double v = strtod(tmp, NULL);
  if (!isfinite(v)) return false; /* jansson refuses an overflowing real */
  *out = v;
  c->p = p;
  return true;
}

/* a string of printable ASCII without escapes */
static bool string(struct cur *c, struct cs_slice *out) {
  if (c->p >= c->e || *c->p != '"') return false;
  const char *s = ++c->p;
  while (c->p < c->e && (unsigned char)*c->p >= 0x20 && (unsigned char)*c->p < 0x80 && *c->p != '"' && *c->p != '\\')
    c->p++;
  if (c->p >= c->e || *c->p != '"') return false;
  out->s = s;
  out->n = (size_t)(c->p - s);
  c->p++;
  return true;
}

/* "HEX" with an optional 0x and 1..16 hex digits, as the loader's get_hex reads it */
static bool hexid(struct cur *c, uint64_t *out) {
  struct cs_slice t;
  if (!string(c, &t)) return false;
  if (t.n >= 2 && t.s[0] == '0' && (t.s[1] == 'x' || t.s[1] == 'X')) t.s += 2, t.n -= 2;
  if (t.n == 0 || t.n > 16) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < t.n; i++) {
    char ch = t.s[i];
    unsigned d = is_digit(ch) ? (unsigned)(ch - '0') : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'f' ? (unsigned)((ch | 0x20) - 'a' + 10)
                                                                                                : 99;
    if (d > 15) return false;
    v = v << 4 | d;
  }
  *out = v;
  return true;
}

static bool boolean(struct cur *c, bool *out) {
  if (LIT(c, "true")) {
    *out = true;
    return true;
  }
  if (LIT(c, "false")) {
    *out = false;
    return true;
  }
  return false;
}

static bool num_or_null(struct cur *c, double *out) {
  if (LIT(c, "null")) {
    *out = NAN;
    return true;
  }
  return number(c, out);
}

static bool sdc(struct cur *c, struct cs_opscan *o) {
  long long checked;
  if (!LIT(c, "{\"checked\":") || !integer(c, &checked) || !LIT(c, ",\"fp\":")) return false;
  bool has_fp = false;
  if (!LIT(c, "null")) {
    if (!hexid(c, &o->sdc_fp)) return false;
    has_fp = true;
  }
  if (!LIT(c, ",\"in_sum\":") || !num_or_null(c, &o->sdc_in_sum) || !LIT(c, ",\"in_abs\":") ||
      !num_or_null(c, &o->sdc_in_abs) || !LIT(c, ",\"out_sum\":") || !num_or_null(c, &o->sdc_out_sum) || !LIT(c, "}"))
    return false;
  o->sdc_checked = checked > 0 && checked < 4 ? (unsigned)checked : 0;
  if ((o->sdc_checked & 1) && !has_fp) o->sdc_checked &= ~1u;
  return true;
}

bool cs_opscan(const char *line, size_t len, struct cs_opscan *o) {
  struct cur c = {line, line + len};
  struct cs_slice t;
  long long ll;
  memset(o, 0, sizeof *o);
  o->sdc_in_sum = o->sdc_in_abs = o->sdc_out_sum = NAN;
  if (!LIT(&c, "{\"type\":\"op\",\"comm\":") || !hexid(&c, &o->comm)) return false;
  if (!KEY(&c, "comm_size") || !integer(&c, &o->comm_size)) return false;
  if (!KEY(&c, "comm_rank") || !integer(&c, &o->comm_rank)) return false;
  if (!KEY(&c, "rank") || !integer(&c, &o->rank)) return false;
  if (!KEY(&c, "seq") || !integer(&c, &o->seq)) return false;
  if (!KEY(&c, "op") || !string(&c, &o->op)) return false;
  if (!KEY(&c, "dtype") || !string(&c, &o->dtype)) return false;
  if (!KEY(&c, "count") || !integer(&c, &o->count)) return false;
  if (!KEY(&c, "bytes") || !uinteger(&c, &o->bytes)) return false;
  if (!KEY(&c, "redop")) return false;
  if (!LIT(&c, "null") && !string(&c, &o->redop)) return false;
  if (!KEY(&c, "root") || !integer(&c, &o->root)) return false;
  if (!KEY(&c, "peer") || !integer(&c, &o->peer)) return false;
  if (!KEY(&c, "stream") || !hexid(&c, &o->stream)) return false;
  if (!KEY(&c, "group") || !integer(&c, &o->group)) return false;
  if (!KEY(&c, "enqueue_ns") || !integer(&c, &o->enqueue_ns)) return false;
  if (!KEY(&c, "start_ns") || !integer(&c, &o->start_ns)) return false;
  if (!KEY(&c, "end_ns") || !integer(&c, &o->end_ns)) return false;
  if (!KEY(&c, "dur_us") || !number(&c, &o->dur_us)) return false;
  if (!KEY(&c, "timing") || !string(&c, &o->timing)) return false;
  if (!KEY(&c, "captured") || !boolean(&c, &o->captured)) return false;
  if (!KEY(&c, "site") || !string(&c, &o->site)) return false;
  if (!KEY(&c, "status") || !integer(&c, &o->status)) return false;
  if (KEY(&c, "sdc") && !sdc(&c, o)) return false;
  if (KEY(&c, "algo") && !string(&c, &t)) return false;
  if (KEY(&c, "proto") && !string(&c, &t)) return false;
  if (KEY(&c, "nchannels") && !integer(&c, &ll)) return false;
  if (!LIT(&c, "}") || c.p != c.e) return false;
  return o->comm_size >= 1;
}
