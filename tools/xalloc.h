/* tools/xalloc.h: allocation for the CLI's readers, which have no way to go on without the
 * memory: out of memory is one line on stderr and exit status 1 (a zero size asks for one
 * byte, so a NULL result always means failure). */
#ifndef COLLSCOPE_TOOLS_XALLOC_H
#define COLLSCOPE_TOOLS_XALLOC_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline __attribute__((noreturn)) void oom(void) {
  fputs("collscope: out of memory\n", stderr);
  exit(1);
}
static inline void *xcalloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz);
  if (!p) oom();
  return p;
}
static inline void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) oom();
  return q;
}
/* realloc of n elements of sz bytes, with the product checked for overflow */
static inline void *xreallocarray(void *p, size_t n, size_t sz) {
  if (sz && n > SIZE_MAX / sz) oom();
  return xrealloc(p, n * sz);
}
/* room for one more element in the array v (n used of cap), doubling from 16 */
#define XGROW(v, n, cap) \
  do { \
    if ((n) == (cap)) { \
      if ((cap) > SIZE_MAX / 2) oom(); \
      (cap) = (cap) ? 2 * (cap) : 16; \
      (v) = xreallocarray((v), (cap), sizeof *(v)); \
    } \
  } while (0)
static inline char *xstrdup(const char *s) {
  char *d = strdup(s);
  if (!d) oom();
  return d;
}
#endif
