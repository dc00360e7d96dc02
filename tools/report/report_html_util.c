/* tools/report/report_html_util.c: the HTML page's small helpers: escaping of dump strings for HTML
 * and SVG, reading the JSON document, colour levels, legends and the opening of a chart. */
#include "report_html_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xalloc.h"

/* s escaped for HTML text and attribute values; control characters become '?' */
void html_esc_all(FILE *o, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '&': fputs("&amp;", o); break;
    case '<': fputs("&lt;", o); break;
    case '>': fputs("&gt;", o); break;
    case '"': fputs("&quot;", o); break;
    case '\'': fputs("&#39;", o); break;
    default: fputc(c < 0x20 || c == 0x7f ? '?' : c, o);
    }
  }
}
/* at most n bytes of s, cut at a UTF-8 character boundary, escaped; "..." when cut */
void html_esc_short(FILE *o, const char *s, size_t n) {
  size_t l = s ? strlen(s) : 0;
  if (l <= n) {
    html_esc_all(o, s);
    return;
  }
  while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
  char *t = xcalloc(n + 1, 1);
  memcpy(t, s, n);
  html_esc_all(o, t);
  fputs("...", o);
  free(t);
}
void html_esc(FILE *o, const char *s) { html_esc_short(o, s, MAX_NAME); }
const char *html_jstr(const json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}
bool html_jhas(const json_t *o, const char *k) {
  const json_t *v = json_object_get(o, k);
  return json_is_number(v);
}
double html_jnum(const json_t *o, const char *k) {
  const json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : 0;
}
double html_jat(const json_t *a, size_t i, bool *ok) {
  const json_t *v = json_array_get(a, i);
  *ok = json_is_number(v);
  return *ok ? json_number_value(v) : 0;
}
int html_level(double v, double max) {
  if (!(max > 0) || !(v > 0)) return 0;
  int k = (int)(v / max * (NLEVELS - 1) + 0.5);
  return k < 0 ? 0 : k >= NLEVELS ? NLEVELS - 1
                                  : k;
}
/* on a log scale from lo to hi: lo and under (0 included) the first level, hi the last (lateness:
 * one late start must not flatten every other cell) */
int html_level_log(double v, double lo, double hi) {
  if (!(lo > 0) || !(hi > lo) || !(v > lo)) return 0;
  return html_level(log(v / lo), log(hi / lo));
}
/* 1, 2 or 5 x 10^k around v: the largest <= v (up = false) or the smallest >= v (up = true) */
static double nice_round(double v, bool up) {
  if (!(v > 0) || !isfinite(v)) return 1;
  double mag = pow(10, floor(log10(v))), f = v / mag;
  static const double m[] = {1, 2, 5, 10};
  if (up) {
    for (int k = 0; k < 4; k++)
      if (f <= m[k] * (1 + 1e-9)) return m[k] * mag;
    return 10 * mag;
  }
  for (int k = 3; k >= 0; k--)
    if (f >= m[k] * (1 - 1e-9)) return m[k] * mag;
  return mag;
}
double html_nice_floor(double v) { return nice_round(v, false); }
double html_nice_ceil(double v) { return nice_round(v, true); }
double html_nice_step(double span, int n) { return nice_round(span / (n > 0 ? n : 1), true); }
void html_fmt_tick(char *b, size_t n, double v, double step) {
  int dec = step > 0 && step < 1 ? (int)ceil(-log10(step) - 1e-9) : 0;
  if (dec > 12) dec = 12;
  if (fabs(v) < step * 1e-6) v = 0; /* not "-0" */
  snprintf(b, n, "%.*f", dec, v);
}
void html_fmt_bytes(char *b, size_t n, double v) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int k = 0;
  while (v >= 1024 && k < 4) v /= 1024, k++;
  snprintf(b, n, "%g %s", round(v * 10) / 10, u[k]);
}
/* a colour legend: NLEVELS swatches from lo to hi */
void html_legend(FILE *o, const char *const *scale, double x, double y, const char *lo, const char *hi,
                 const char *what) {
  fprintf(o, "<g class=\"legend\" aria-hidden=\"true\"><text x=\"%g\" y=\"%g\">", x, y - 4);
  html_esc(o, what);
  fputs("</text>", o);
  for (int k = 0; k < NLEVELS; k++)
    fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"10\" height=\"10\" fill=\"%s\"/>", x + 10 * k, y, scale[k]);
  fprintf(o, "<text x=\"%g\" y=\"%g\">%s</text><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text></g>", x, y + 22, lo,
          x + 10 * NLEVELS, y + 22, hi);
}
/* the opening of a chart: <svg> with its role, label, <title> and <desc> */
void html_svg_open(FILE *o, const char *id, double w, double h, const char *title, const char *desc) {
  fprintf(o, "<svg id=\"%s\" role=\"img\" aria-labelledby=\"%s-t %s-d\" viewBox=\"0 0 %g %g\" width=\"%g\" height=\"%g\">",
          id, id, id, w, h, w, h);
  fprintf(o, "<title id=\"%s-t\">", id);
  html_esc(o, title);
  fprintf(o, "</title><desc id=\"%s-d\">", id);
  html_esc(o, desc);
  fputs("</desc>", o);
}
