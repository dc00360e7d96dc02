/* tools/xalloc.h: allocation for the CLI's readers, which have no way to go on without the
 * memory: out of memory is one line on stderr and exit status 1 (a zero size asks for one
 * byte, so a NULL result always means failure). */
#ifndef COLLSCOPE_TOOLS_XALLOC_H
#define COLLSCOPE_TOOLS_XALLOC_H
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
static inline char *xstrdup(const char *s) {
  char *d = strdup(s);
  if (!d) oom();
  return d;
}
#endif
