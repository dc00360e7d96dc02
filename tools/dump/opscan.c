/* tools/dump/opscan.c: fixed-layout scanner for the dump writer's "op" lines (contract in
 * opscan.h): a cursor walks the op list's keys (include/collscope/dump_schema.h) in order;
 * every value is checked against the JSON grammar as it is converted, and any surprise hands
 * the line back to jansson. */
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

/* the separator *sep (',' between keys, '{' before an object's first) and "key": */
static bool key(struct cur *c, char *sep, const char *k, size_t n) {
  if (c->p >= c->e || *c->p != *sep || (size_t)(c->e - c->p - 1) < n || memcmp(c->p + 1, k, n) != 0) return false;
  c->p += n + 1;
  *sep = ',';
  return true;
}
#define KEY(c, k) key(c, &sep, "\"" k "\":", sizeof(k) + 2)

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

static bool hexid_or_null(struct cur *c, uint64_t *out, bool *set) {
  *set = false;
  if (LIT(c, "null")) return true;
  return *set = hexid(c, out);
}

static bool name_or_null(struct cur *c, struct cs_slice *out) {
  if (LIT(c, "null")) {
    out->s = NULL;
    out->n = 0;
    return true;
  }
  return string(c, out);
}

/* ---- the op list's rows (include/collscope/dump_schema.h) as scanner code ---- */
#define SCAN_I32(c, o, m) integer(c, &(o)->m)
#define SCAN_I64(c, o, m) integer(c, &(o)->m)
#define SCAN_U64(c, o, m) uinteger(c, &(o)->m)
#define SCAN_US(c, o, m) number(c, &(o)->m)
#define SCAN_F64(c, o, m) num_or_null(c, &(o)->m)
#define SCAN_STR(c, o, m) string(c, &(o)->m)
#define SCAN_SITE(c, o, m) string(c, &(o)->m)
#define SCAN_NAME(c, o, m) string(c, &(o)->m)
#define SCAN_NAME0(c, o, m) name_or_null(c, &(o)->m)
#define SCAN_ID(c, o, m) hexid(c, &(o)->m)
#define SCAN_ID0(c, o, m) hexid_or_null(c, &(o)->m, &(o)->has_##m)
#define SCAN_HEX(c, o, m) hexid(c, &(o)->m)
#define SCAN_BOOL(c, o, m) boolean(c, &(o)->m)
#define SCAN_OBJ(c, o, m) obj_##m(c, o)

#define SCAN_ROW(m, key, jt, wr, rd, def) SCAN_##wr(m, key, jt, m)
#define SCAN_SDC_ROW(m, key, jt, wr, rd, def) SCAN_##wr(m, key, jt, sdc_##m)
#define SCAN_ALWAYS(m, key, jt, dst) \
  if (!KEY(c, key) || !SCAN_##jt(c, o, dst)) return false;
#define SCAN_IFSET(m, key, jt, dst) \
  if (KEY(c, key) && !SCAN_##jt(c, o, dst)) return false;

static bool obj_sdc(struct cur *c, struct cs_opscan *o) {
  char sep = '{';
  CS_DUMP_SDC_FIELDS(SCAN_SDC_ROW)
  if (!LIT(c, "}")) return false;
  o->sdc_checked = o->sdc_checked > 0 && o->sdc_checked < 4 ? o->sdc_checked : 0;
  if ((o->sdc_checked & 1) && !o->has_sdc_fp) o->sdc_checked &= ~1;
  return true;
}

static bool op_rows(struct cur *c, struct cs_opscan *o) {
  char sep = ',';
  CS_DUMP_OP_FIELDS(SCAN_ROW)
  return true;
}

bool cs_opscan(const char *line, size_t len, struct cs_opscan *o) {
  struct cur c = {line, line + len};
  memset(o, 0, sizeof *o);
  o->sdc_in_sum = o->sdc_in_abs = o->sdc_out_sum = NAN;
  if (!LIT(&c, "{\"type\":\"op\"") || !op_rows(&c, o)) return false;
  if (!LIT(&c, "}") || c.p != c.e) return false;
  return o->comm_size >= 1;
}
