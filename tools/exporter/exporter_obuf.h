/* tools/exporter/exporter_obuf.h: the growing buffer the exporter's exposition is built in
 * (tools/exporter/exporter_metrics.c), with hand-rolled number formatting: a scrape of 64 ranks is
 * tens of thousands of lines, and stdio's per-call cost dominated. A failed allocation sets
 * oom and makes every later put a no-op. */
#ifndef COLLSCOPE_TOOLS_EXPORTER_OBUF_H
#define COLLSCOPE_TOOLS_EXPORTER_OBUF_H
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct obuf {
  char *p;
  size_t n, cap;
  bool oom;
};

static inline void reserve(struct obuf *o, size_t more) {
  if (o->oom || o->n + more <= o->cap) return;
  size_t nc = o->cap ? o->cap : 1 << 16;
  while (nc < o->n + more) nc *= 2;
  char *np = realloc(o->p, nc);
  if (!np) {
    o->oom = true;
    return;
  }
  o->p = np;
  o->cap = nc;
}
static inline void putn(struct obuf *o, const char *s, size_t n) {
  reserve(o, n);
  if (o->oom) return;
  memcpy(o->p + o->n, s, n);
  o->n += n;
}
static inline void puts_(struct obuf *o, const char *s) { putn(o, s, strlen(s)); }
static inline void putc_(struct obuf *o, char c) { putn(o, &c, 1); }
static inline void putu(struct obuf *o, uint64_t v) {
  char b[24];
  int i = sizeof b;
  do {
    b[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  putn(o, b + i, sizeof b - (size_t)i);
}
static inline void putf(struct obuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void putf(struct obuf *o, const char *fmt, ...) {
  char b[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  if (n > 0) putn(o, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

#endif
