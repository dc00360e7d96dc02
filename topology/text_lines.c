/* topology/text_lines.c: a topology file's text into logical lines (comments removed,
 * continuation lines joined, CR and tabs made spaces, blank lines dropped), each with its
 * first physical line number for FILE:LINE: errors. One pass, one buffer of the text's
 * size for all lines: time and memory are linear in the text whatever its shape. */
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

int blank(const char *s) {
  while (*s == ' ') s++;
  return *s == '\0';
}

void free_lines(struct lines *l) {
  free(l->v);
  free(l->text);
  memset(l, 0, sizeof *l);
}

static int push_line(struct lines *l, size_t *cap, char *s, int no) {
  if (l->n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    struct line *nv = realloc(l->v, nc * sizeof *nv);
    if (!nv) return -1;
    l->v = nv;
    *cap = nc;
  }
  l->v[l->n++] = (struct line){s, no};
  return 0;
}

int split_lines(struct ctx *c, const char *text, size_t len, int quotes, int cont, struct lines *out) {
  memset(out, 0, sizeof *out);
  /* every logical line is at most its physical lines' bytes (a '\n' or the end becomes
   * its NUL, a continuation's '\' a space): len + 1 bytes hold them all */
  out->text = malloc(len + 1);
  if (!out->text) return ferr(c, 0, "out of memory");
  char *w = out->text, *cur = w;
  size_t cap = 0, i = 0;
  int no = 0, curno = 0;
  while (i < len) {
    const char *nl = memchr(text + i, '\n', len - i);
    size_t e = nl ? (size_t)(nl - text) : len;
    no++;
    if (cur == w) curno = no;
    /* copy up to a comment */
    size_t end = i;
    int inq = 0;
    for (size_t k = i; k < e; k++) {
      char ch = text[k];
      if (ch == '\0') {
        free_lines(out);
        return ferr(c, no, "NUL byte in the file (expected text)");
      }
      if (quotes && ch == '"') inq = !inq;
      if (ch == '#' && !inq) break;
      end = k + 1;
    }
    while (end > i && (text[end - 1] == '\r' || text[end - 1] == ' ' || text[end - 1] == '\t')) end--;
    int more = 0;
    if (cont && end > i && text[end - 1] == '\\') {
      more = 1;
      end--;
    }
    for (size_t k = i; k < end; k++) *w++ = (text[k] == '\r' || text[k] == '\t') ? ' ' : text[k];
    if (more) *w++ = ' ';
    i = e < len ? e + 1 : e;
    if (more && i < len) continue;
    *w++ = '\0';
    if (!blank(cur) && push_line(out, &cap, cur, curno)) {
      free_lines(out);
      return ferr(c, no, "out of memory");
    }
    cur = w;
  }
  return 0;
}
