/* topology/hostlist.c: Slurm hostlist expansion and compression.
 * See include/collscope/hostlist.h for the accepted syntax. The parser is written for
 * untrusted input (it is fuzzed): every count is bounded by CS_HOSTLIST_MAX before
 * anything is allocated, numbers are bounded to 18 digits, names to
 * CS_HOSTLIST_NAME_MAX bytes, and every error path frees what it allocated. */
#include "collscope/hostlist.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIGITS 18 /* 10^18 - 1 < 2^63: no overflow, any range count fits */

struct range {
  unsigned long long lo, hi;
  unsigned width; /* digits of the low bound as written: zero padding */
};

struct seg { /* one piece of a token: a literal or a bracket group */
  int is_group;
  size_t off, len; /* literal: bytes of expr */
  struct range *r; /* group: its ranges */
  size_t nr;
  size_t count;  /* group: number of values (<= CS_HOSTLIST_MAX) */
  unsigned maxw; /* group: widest value printed */
};

struct parser {
  const char *s;
  char *err;
  size_t errlen;
  struct seg *segs;
  size_t nsegs, capsegs;
  char **hosts;
  size_t nhosts, caphosts;
  size_t max; /* most hosts allowed (<= CS_HOSTLIST_MAX) */
  /* how names are delivered: into hosts (both NULL), to a callback, or only counted */
  int (*each)(const char *name, size_t len, void *arg);
  void *arg;
  int count_only;
};

static int fail(struct parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, size_t pos, const char *fmt, ...) {
  if (p->err && p->errlen > 0) {
    int k = snprintf(p->err, p->errlen, "position %zu: ", pos);
    if (k >= 0 && (size_t)k < p->errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(p->err + k, p->errlen - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  return -1;
}

static int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_literal(unsigned char c) { return c > 0x20 && c < 0x7f && c != ',' && c != '[' && c != ']'; }

static unsigned ndigits(unsigned long long v) {
  unsigned d = 1;
  while (v >= 10) {
    v /= 10;
    d++;
  }
  return d;
}

static void free_segs(struct parser *p) {
  for (size_t i = 0; i < p->nsegs; i++) free(p->segs[i].r);
  p->nsegs = 0;
}

static struct seg *new_seg(struct parser *p) {
  if (p->nsegs == p->capsegs) {
    size_t nc = p->capsegs ? p->capsegs * 2 : 8;
    struct seg *ns = realloc(p->segs, nc * sizeof *ns);
    if (!ns) return NULL;
    p->segs = ns;
    p->capsegs = nc;
  }
  struct seg *sg = &p->segs[p->nsegs++];
  memset(sg, 0, sizeof *sg);
  return sg;
}

/* Parse a number at *i (leading whitespace skipped). */
static int parse_num(struct parser *p, size_t *i, unsigned long long *v, unsigned *width,
                     const char *what) {
  const char *s = p->s;
  while (is_ws((unsigned char)s[*i])) (*i)++;
  size_t start = *i;
  if (!is_digit((unsigned char)s[*i])) {
    unsigned char c = (unsigned char)s[*i];
    if (c == '\0') return fail(p, start, "unbalanced '[': missing ']'");
    if (c == ',' || c == ']') return fail(p, start, "empty %s in brackets", what);
    if (c == '[') return fail(p, start, "nested '[' is not allowed");
    if (c == '-') return fail(p, start, "negative or missing number in range");
    return fail(p, start, "invalid character '%c' in brackets (expected a digit)",
                (c > 0x20 && c < 0x7f) ? c : '?');
  }
  unsigned long long x = 0;
  unsigned n = 0;
  while (is_digit((unsigned char)s[*i])) {
    if (++n > MAX_DIGITS) return fail(p, start, "number too long (more than %d digits)", MAX_DIGITS);
    x = x * 10 + (unsigned)(s[*i] - '0');
    (*i)++;
  }
  *v = x;
  *width = n;
  return 0;
}

/* Parse "[ ... ]" starting at s[*i] == '['; *i ends after ']'. */
static int parse_group(struct parser *p, size_t *i, struct seg *sg) {
  const char *s = p->s;
  size_t open = *i;
  size_t cap = 0;
  (*i)++;
  {
    size_t j = *i;
    while (is_ws((unsigned char)s[j])) j++;
    if (s[j] == ']') return fail(p, open, "empty brackets '[]'");
  }
  for (;;) {
    struct range r;
    size_t item = *i;
    unsigned hw;
    if (parse_num(p, i, &r.lo, &r.width, "range item")) {
      if (s[*i] == '\0') return fail(p, open, "unbalanced '[': missing ']'");
      return -1;
    }
    r.hi = r.lo;
    while (is_ws((unsigned char)s[*i])) (*i)++;
    if (s[*i] == '-') {
      (*i)++;
      if (parse_num(p, i, &r.hi, &hw, "range bound")) {
        if (s[*i] == '\0') return fail(p, open, "unbalanced '[': missing ']'");
        return -1;
      }
      if (r.hi < r.lo)
        return fail(p, item, "reversed range %llu-%llu (low bound greater than high bound)",
                    r.lo, r.hi);
      while (is_ws((unsigned char)s[*i])) (*i)++;
    }
    unsigned long long cnt = r.hi - r.lo + 1;
    if (cnt > p->max || sg->count + cnt > p->max)
      return fail(p, item, "range expands to more than %zu hosts", p->max);
    if (sg->nr == cap) {
      size_t nc = cap ? cap * 2 : 4;
      struct range *nrr = realloc(sg->r, nc * sizeof *nrr);
      if (!nrr) return fail(p, item, "out of memory");
      sg->r = nrr;
      cap = nc;
    }
    sg->r[sg->nr++] = r;
    sg->count += (size_t)cnt;
    unsigned w = ndigits(r.hi);
    if (r.width > w) w = r.width;
    if (w > sg->maxw) sg->maxw = w;

    unsigned char c = (unsigned char)s[*i];
    if (c == ',') {
      (*i)++;
      continue;
    }
    if (c == ']') {
      (*i)++;
      return 0;
    }
    if (c == '\0') return fail(p, open, "unbalanced '[': missing ']'");
    if (c == '[') return fail(p, *i, "nested '[' is not allowed");
    if (is_digit(c)) return fail(p, *i, "missing ',' or '-' between numbers");
    return fail(p, *i, "invalid character '%c' in brackets", (c > 0x20 && c < 0x7f) ? c : '?');
  }
}

static int push_host(struct parser *p, const char *name, size_t len) {
  if (p->each) {
    if (p->each(name, len, p->arg)) return -1;
    p->nhosts++;
    return 0;
  }
  if (p->nhosts == p->caphosts) {
    size_t nc = p->caphosts ? p->caphosts * 2 : 16;
    char **nh = realloc(p->hosts, nc * sizeof *nh);
    if (!nh) return -1;
    p->hosts = nh;
    p->caphosts = nc;
  }
  char *h = malloc(len + 1);
  if (!h) return -1;
  memcpy(h, name, len);
  h[len] = '\0';
  p->hosts[p->nhosts++] = h;
  return 0;
}

/* Expand the segments of the token starting at tok into hosts. */
static int expand_token(struct parser *p, size_t tok) {
  size_t total = 1, maxlen = 0;
  for (size_t k = 0; k < p->nsegs; k++) {
    struct seg *sg = &p->segs[k];
    if (sg->is_group) {
      if (total > p->max / sg->count)
        return fail(p, tok, "host expression expands to more than %zu hosts", p->max);
      total *= sg->count;
      maxlen += sg->maxw;
    } else {
      maxlen += sg->len;
    }
  }
  if (total > p->max - p->nhosts)
    return fail(p, tok, "hostlist expands to more than %zu hosts", p->max);
  if (maxlen > CS_HOSTLIST_NAME_MAX)
    return fail(p, tok, "host name longer than %u bytes", CS_HOSTLIST_NAME_MAX);
  if (p->count_only) { /* the count is all the caller wants: O(expression length) */
    p->nhosts += total;
    return 0;
  }

  /* Odometer over the groups: per group the current range and value. Every segment
   * adds at least one byte to a name, so nsegs <= maxlen <= CS_HOSTLIST_NAME_MAX. */
  size_t ri[CS_HOSTLIST_NAME_MAX + 1];
  unsigned long long val[CS_HOSTLIST_NAME_MAX + 1];
  for (size_t k = 0; k < p->nsegs; k++) {
    ri[k] = 0;
    val[k] = p->segs[k].is_group ? p->segs[k].r[0].lo : 0;
  }
  char name[CS_HOSTLIST_NAME_MAX + 1];
  for (size_t h = 0; h < total; h++) {
    size_t len = 0;
    for (size_t k = 0; k < p->nsegs; k++) {
      struct seg *sg = &p->segs[k];
      if (sg->is_group) {
        int w = snprintf(name + len, sizeof name - len, "%0*llu", (int)sg->r[ri[k]].width, val[k]);
        if (w < 0 || (size_t)w >= sizeof name - len) return fail(p, tok, "host name too long");
        len += (size_t)w;
      } else {
        memcpy(name + len, p->s + sg->off, sg->len);
        len += sg->len;
      }
    }
    name[len] = '\0';
    if (push_host(p, name, len)) return fail(p, tok, p->each ? "stopped by the caller" : "out of memory");
    /* advance: the last group varies fastest */
    for (size_t k = p->nsegs; k-- > 0;) {
      struct seg *sg = &p->segs[k];
      if (!sg->is_group) continue;
      if (val[k] < sg->r[ri[k]].hi) {
        val[k]++;
        break;
      }
      if (ri[k] + 1 < sg->nr) {
        ri[k]++;
        val[k] = sg->r[ri[k]].lo;
        break;
      }
      ri[k] = 0;
      val[k] = sg->r[0].lo; /* wrap, carry into the previous group */
    }
  }
  return 0;
}

void cs_hostlist_free(char **hosts, size_t n) {
  if (!hosts) return;
  for (size_t i = 0; i < n; i++) free(hosts[i]);
  free(hosts);
}

int cs_hostlist_expand(const char *expr, char ***hosts, size_t *n, char *err, size_t errlen) {
  return cs_hostlist_expand_max(expr, CS_HOSTLIST_MAX, hosts, n, err, errlen);
}

/* The parser proper: the tokens of p->s, each expanded by expand_token(). */
static int run_parser(struct parser *p) {
  const char *s = p->s;
  size_t i = 0;
  int rc = 0;
  for (;;) {
    while (s[i] == ',' || is_ws((unsigned char)s[i])) i++;
    if (s[i] == '\0') break;
    size_t tok = i;
    p->nsegs = 0;
    while (s[i] != '\0' && s[i] != ',' && !is_ws((unsigned char)s[i])) {
      unsigned char c = (unsigned char)s[i];
      struct seg *sg;
      if (p->nsegs >= CS_HOSTLIST_NAME_MAX) { /* each segment adds >= 1 byte to a name */
        rc = fail(p, tok, "host name longer than %u bytes", CS_HOSTLIST_NAME_MAX);
        break;
      }
      if (c == '[') {
        if (!(sg = new_seg(p))) {
          rc = fail(p, i, "out of memory");
          break;
        }
        sg->is_group = 1;
        if ((rc = parse_group(p, &i, sg))) break;
      } else if (c == ']') {
        rc = fail(p, i, "unbalanced ']' without '['");
        break;
      } else if (is_literal(c)) {
        size_t start = i;
        while (is_literal((unsigned char)s[i])) i++;
        if (!(sg = new_seg(p))) {
          rc = fail(p, start, "out of memory");
          break;
        }
        sg->off = start;
        sg->len = i - start;
      } else {
        if (c >= 0x20 && c < 0x7f)
          rc = fail(p, i, "invalid character '%c' in host name", c);
        else
          rc = fail(p, i, "invalid byte 0x%02x in host name", c);
        break;
      }
    }
    if (rc == 0) rc = expand_token(p, tok);
    free_segs(p);
    if (rc) break;
  }
  free(p->segs);
  p->segs = NULL;
  if (rc == 0 && p->nhosts == 0) rc = fail(p, i, "empty hostlist");
  return rc;
}

static size_t clamp_max(size_t max_hosts) {
  return (max_hosts == 0 || max_hosts > CS_HOSTLIST_MAX) ? CS_HOSTLIST_MAX : max_hosts;
}

int cs_hostlist_expand_max(const char *expr, size_t max_hosts, char ***hosts, size_t *n, char *err,
                           size_t errlen) {
  struct parser p = {.s = expr, .err = err, .errlen = errlen, .max = clamp_max(max_hosts)};
  if (hosts) *hosts = NULL;
  if (n) *n = 0;
  if (err && errlen) err[0] = '\0';
  if (!expr || !hosts || !n) {
    fail(&p, 0, "invalid argument");
    errno = EINVAL;
    return -1;
  }
  if (run_parser(&p)) {
    cs_hostlist_free(p.hosts, p.nhosts);
    errno = EINVAL;
    return -1;
  }
  /* shrink to fit; failure to shrink is harmless */
  char **fit = realloc(p.hosts, p.nhosts * sizeof *fit);
  *hosts = fit ? fit : p.hosts;
  *n = p.nhosts;
  return 0;
}

int cs_hostlist_each(const char *expr, size_t max_hosts,
                     int (*each)(const char *name, size_t len, void *arg), void *arg, size_t *n,
                     char *err, size_t errlen) {
  struct parser p = {.s = expr, .err = err, .errlen = errlen, .max = clamp_max(max_hosts), .each = each, .arg = arg, .count_only = each == NULL};
  if (n) *n = 0;
  if (err && errlen) err[0] = '\0';
  if (!expr || !n) {
    fail(&p, 0, "invalid argument");
    errno = EINVAL;
    return -1;
  }
  if (run_parser(&p)) {
    errno = EINVAL;
    return -1;
  }
  *n = p.nhosts;
  return 0;
}

/* ---------------------------------------------------------------- compression */

struct centry {
  const char *name;
  size_t plen;    /* prefix: name[0, plen) */
  size_t soff;    /* suffix: name + soff */
  unsigned width; /* digits of the number (0: no number) */
  unsigned long long v;
  int used;
};

static int cmp_prefix_suffix(const struct centry *a, const struct centry *b) {
  size_t m = a->plen < b->plen ? a->plen : b->plen;
  int c = memcmp(a->name, b->name, m);
  if (c) return c;
  if (a->plen != b->plen) return a->plen < b->plen ? -1 : 1;
  if ((a->width == 0) != (b->width == 0)) return a->width == 0 ? -1 : 1;
  return strcmp(a->name + a->soff, b->name + b->soff);
}

static int cmp_centry(const void *x, const void *y) {
  const struct centry *a = x, *b = y;
  int c = cmp_prefix_suffix(a, b);
  if (c) return c;
  if (a->v != b->v) return a->v < b->v ? -1 : 1;
  if (a->width != b->width) return a->width < b->width ? -1 : 1;
  return 0;
}

struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 64;
    while (nc < b->len + n + 1) nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sb_num(struct sbuf *b, unsigned long long v, unsigned width) {
  char t[32];
  int k = snprintf(t, sizeof t, "%0*llu", (int)width, v);
  if (k > 0) sb_add(b, t, (size_t)k);
}

char *cs_hostlist_compress(const char *const *hosts, size_t n) {
  if (n > 0 && !hosts) {
    errno = EINVAL;
    return NULL;
  }
  struct centry *e = calloc(n ? n : 1, sizeof *e);
  if (!e) {
    errno = ENOMEM;
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    const char *h = hosts[i];
    if (!h || !*h) {
      free(e);
      errno = EINVAL;
      return NULL;
    }
    size_t len = strlen(h);
    for (size_t j = 0; j < len; j++)
      if (!is_literal((unsigned char)h[j])) {
        free(e);
        errno = EINVAL;
        return NULL;
      }
    e[i].name = h;
    size_t end = len;
    while (end > 0 && !is_digit((unsigned char)h[end - 1])) end--;
    size_t start = end;
    while (start > 0 && is_digit((unsigned char)h[start - 1])) start--;
    if (end > start && end - start <= MAX_DIGITS) {
      e[i].plen = start;
      e[i].soff = end;
      e[i].width = (unsigned)(end - start);
      e[i].v = strtoull(h + start, NULL, 10);
    } else { /* no number (or one too long to range over): a plain literal */
      e[i].plen = len;
      e[i].soff = len;
      e[i].width = 0;
    }
  }
  if (n) qsort(e, n, sizeof *e, cmp_centry);

  struct sbuf b = {0};
  sb_add(&b, "", 0);
  size_t i = 0;
  while (i < n) {
    size_t g = i + 1; /* [i, g): one (prefix, suffix) group */
    while (g < n && cmp_prefix_suffix(&e[i], &e[g]) == 0) g++;
    if (b.len) sb_add(&b, ",", 1);
    if (e[i].width == 0) { /* literal names: all identical in this group */
      sb_add(&b, e[i].name, strlen(e[i].name));
      i = g;
      continue;
    }
    /* drop duplicates (same value and width = same string) */
    for (size_t k = i + 1; k < g; k++)
      if (e[k].v == e[k - 1].v && e[k].width == e[k - 1].width) e[k].used = 1;
    struct sbuf body = {0};
    sb_add(&body, "", 0);
    size_t nitems = 0, nvalues = 0;
    for (size_t k = i; k < g; k++) {
      if (e[k].used) continue;
      /* start a run at e[k]; extend by v+1 values printed with e[k]'s padding */
      e[k].used = 1;
      unsigned w = e[k].width;
      unsigned long long lo = e[k].v, hi = lo;
      size_t scan = k + 1;
      for (;;) {
        if (hi == ULLONG_MAX) break;
        unsigned long long want = hi + 1;
        unsigned need = ndigits(want) > w ? ndigits(want) : w;
        while (scan < g && e[scan].v < want) scan++;
        size_t m = scan, found = g;
        for (; m < g && e[m].v == want; m++)
          if (!e[m].used && e[m].width == need) {
            found = m;
            break;
          }
        if (found == g) break;
        e[found].used = 1;
        hi = want;
      }
      if (nitems++) sb_add(&body, ",", 1);
      sb_num(&body, lo, w);
      if (hi > lo) {
        sb_add(&body, "-", 1);
        sb_num(&body, hi, w);
      }
      nvalues += (size_t)(hi - lo + 1);
    }
    sb_add(&b, e[i].name, e[i].plen);
    if (nvalues > 1) sb_add(&b, "[", 1);
    if (!body.oom && body.p)
      sb_add(&b, body.p, body.len);
    else
      b.oom = 1;
    if (nvalues > 1) sb_add(&b, "]", 1);
    sb_add(&b, e[i].name + e[i].soff, strlen(e[i].name + e[i].soff));
    free(body.p);
    i = g;
  }
  free(e);
  if (b.oom) {
    free(b.p);
    errno = ENOMEM;
    return NULL;
  }
  return b.p;
}
