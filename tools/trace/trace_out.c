/* tools/trace/trace_out.c: the trace's per-thread output buffers and its JSON text (trace_out.h). */
#include "trace_out.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define FLUSH_AT ((size_t)1 << 20)

void tout_init(struct trace_out *t, FILE *o, unsigned threads) {
  memset(t, 0, sizeof *t);
  t->o = o;
  t->first = true;
  pthread_mutex_init(&t->lock, NULL);
  t->nw = threads ? threads : 1;
  t->w = xcalloc(t->nw, sizeof *t->w);
}

struct tbuf *tout_buf(struct trace_out *t, unsigned worker) {
  return &t->w[worker < t->nw ? worker : 0];
}

static void reserve(struct tbuf *b, size_t more) {
  if (b->n + more <= b->cap) return;
  size_t nc = b->cap ? b->cap : 4096;
  while (nc < b->n + more) nc *= 2;
  b->s = xrealloc(b->s, nc);
  b->cap = nc;
}

void tb_raw(struct tbuf *b, const char *s, size_t n) {
  reserve(b, n);
  memcpy(b->s + b->n, s, n);
  b->n += n;
}
void tb_lit(struct tbuf *b, const char *s) { tb_raw(b, s, strlen(s)); }

char *tb_room(struct tbuf *b, size_t n) {
  reserve(b, n);
  char *p = b->s + b->n;
  b->n += n;
  return p;
}

void tb_key(struct tbuf *b, bool comma, const char *k) {
  size_t n = strlen(k);
  reserve(b, n + 4);
  char *p = b->s + b->n;
  if (comma) *p++ = ',';
  *p++ = '"';
  memcpy(p, k, n);
  p += n;
  *p++ = '"';
  *p++ = ':';
  b->n = (size_t)(p - b->s);
}

size_t tout_utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4, cp = c & 0x07;
  else
    return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

void tb_str(struct tbuf *b, const char *s) {
  size_t n = strlen(s);
  reserve(b, 6 * n + 2); /* the worst case: every byte as \u00XX */
  char *p = b->s + b->n;
  *p++ = '"';
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    unsigned c = u[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      *p++ = (char)c;
      i++;
      continue;
    }
    if (c >= 0x80) {
      size_t l = tout_utf8_len(u + i, n - i);
      if (l) {
        memcpy(p, u + i, l);
        p += l;
        i += l;
        continue;
      }
    }
    *p++ = '\\';
    switch (c) {
    case '"': *p++ = '"'; break;
    case '\\': *p++ = '\\'; break;
    case '\b': *p++ = 'b'; break;
    case '\f': *p++ = 'f'; break;
    case '\n': *p++ = 'n'; break;
    case '\r': *p++ = 'r'; break;
    case '\t': *p++ = 't'; break;
    default: {
      static const char hx[] = "0123456789abcdef";
      *p++ = 'u';
      *p++ = '0';
      *p++ = '0';
      *p++ = hx[c >> 4];
      *p++ = hx[c & 15];
    }
    }
    i++;
  }
  *p++ = '"';
  b->n = (size_t)(p - b->s);
}

static char *put_u64(char *p, uint64_t v) {
  char t[20];
  int n = 0;
  do {
    t[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) *p++ = t[--n];
  return p;
}

void tb_u64(struct tbuf *b, uint64_t v) {
  reserve(b, 20);
  b->n = (size_t)(put_u64(b->s + b->n, v) - b->s);
}

void tb_int(struct tbuf *b, long long v) {
  reserve(b, 21);
  char *p = b->s + b->n;
  if (v < 0) *p++ = '-';
  p = put_u64(p, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
  b->n = (size_t)(p - b->s);
}

void tb_us(struct tbuf *b, int64_t ns) {
  reserve(b, 26);
  char *p = b->s + b->n;
  uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  if (ns < 0) *p++ = '-';
  p = put_u64(p, a / 1000);
  unsigned f = (unsigned)(a % 1000);
  *p++ = '.';
  *p++ = (char)('0' + f / 100);
  *p++ = (char)('0' + f / 10 % 10);
  *p++ = (char)('0' + f % 10);
  b->n = (size_t)(p - b->s);
}

void tb_fixed3(struct tbuf *b, double v) {
  char t[64];
  int n = snprintf(t, sizeof t, "%.3f", v);
  if (n > 0) tb_raw(b, t, (size_t)n < sizeof t ? (size_t)n : sizeof t - 1);
}

/* jansson's jsonp_dtostr() at its default precision */
void tb_real(struct tbuf *b, double v) {
  char t[40];
  int r = snprintf(t, sizeof t, "%.17g", v);
  if (r < 0 || (size_t)r >= sizeof t - 3) return;
  size_t len = (size_t)r;
  if (!strchr(t, '.') && !strchr(t, 'e')) {
    t[len++] = '.';
    t[len++] = '0';
    t[len] = 0;
  }
  char *e = strchr(t, 'e');
  if (e) { /* no '+' and no leading zeros in the exponent */
    char *start = e + 1, *end = start + 1;
    if (*start == '-') start++;
    while (*end == '0') end++;
    if (end != start) {
      memmove(start, end, len - (size_t)(end - t) + 1);
      len -= (size_t)(end - start);
    }
  }
  tb_raw(b, t, len);
}

void tb_hex(struct tbuf *b, uint64_t v, bool pad16) {
  static const char hx[] = "0123456789abcdef";
  reserve(b, 20);
  char *p = b->s + b->n;
  *p++ = '"';
  if (pad16) {
    for (int i = 15; i >= 0; i--) *p++ = hx[(v >> (4 * i)) & 15];
  } else {
    *p++ = '0';
    *p++ = 'x';
    int top = 15;
    while (top > 0 && !((v >> (4 * top)) & 15)) top--;
    for (int i = top; i >= 0; i--) *p++ = hx[(v >> (4 * i)) & 15];
  }
  *p++ = '"';
  b->n = (size_t)(p - b->s);
}

void tout_begin_event(struct tbuf *b) { tb_raw(b, ",\n{", 3); }

void tout_flush(struct trace_out *t, struct tbuf *b) {
  if (!b->n) return;
  pthread_mutex_lock(&t->lock);
  const char *s = b->s;
  size_t n = b->n;
  if (t->first) { /* the file's first event: no comma before it */
    s++;
    n--;
    t->first = false;
  }
  if (fwrite(s, 1, n, t->o) != n) t->failed = true;
  t->bytes += n;
  pthread_mutex_unlock(&t->lock);
  b->n = 0;
}

void tout_end_event(struct trace_out *t, struct tbuf *b) {
  tb_raw(b, "}", 1);
  if (b->n >= FLUSH_AT) tout_flush(t, b);
}

void tout_set_binary(struct trace_out *t) { t->first = false; }

void tout_end_record(struct trace_out *t, struct tbuf *b) {
  if (b->n >= FLUSH_AT) tout_flush(t, b);
}

void tout_flush_all(struct trace_out *t) {
  for (unsigned i = 0; i < t->nw; i++) tout_flush(t, &t->w[i]);
}

void tout_free(struct trace_out *t) {
  for (unsigned i = 0; i < t->nw; i++) free(t->w[i].s);
  free(t->w);
  pthread_mutex_destroy(&t->lock);
  memset(t, 0, sizeof *t);
}
