/* tools/report/report_html_internal.h: what the HTML page's files share (report_html*.c): the
 * page's caps, the escaping and JSON helpers, the colour scales' levels, and the charts. */
#ifndef COLLSCOPE_REPORT_HTML_INTERNAL_H
#define COLLSCOPE_REPORT_HTML_INTERNAL_H

#include "report_html.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define MAX_SERIES 8 /* bus bandwidth lines drawn (every row is in the table) */
#define MAX_HOSTS 32 /* hosts of the link matrix */
#define MAX_TABLE_ROWS 256
#define NLEVELS 16
/* a name from a dump: escaped, at most MAX_NAME bytes of it (the page's size stays bounded
 * whatever the names' length); the matrix cells, drawn up to MAX_HOSTS^2 times, half that */
#define MAX_NAME 128

/* small helpers (report_html_util.c) */
void html_esc_all(FILE *o, const char *s);             /* escaped for HTML text and attributes */
void html_esc_short(FILE *o, const char *s, size_t n); /* at most n bytes, cut at a character */
void html_esc(FILE *o, const char *s);                 /* at most MAX_NAME bytes */
const char *html_jstr(const json_t *o, const char *k);
bool html_jhas(const json_t *o, const char *k);
double html_jnum(const json_t *o, const char *k);
double html_jat(const json_t *a, size_t i, bool *ok);
int html_level(double v, double max);                         /* 0..NLEVELS-1 */
int html_level_log(double v, double lo, double hi);           /* log scale from lo (and under) to hi */
double html_nice_step(double span, int n);                    /* 1, 2 or 5 x 10^k: [0, span] in at most n steps */
double html_nice_floor(double v);                             /* the largest 1, 2 or 5 x 10^k <= v (v > 0) */
double html_nice_ceil(double v);                              /* the smallest 1, 2 or 5 x 10^k >= v (v > 0) */
void html_fmt_tick(char *b, size_t n, double v, double step); /* v with the decimals step needs */
void html_fmt_bytes(char *b, size_t n, double v);
void html_legend(FILE *o, const char *const *scale, double x, double y, const char *lo, const char *hi,
                 const char *what);
void html_svg_open(FILE *o, const char *id, double w, double h, const char *title, const char *desc);

/* the charts: bus bandwidth and lateness (report_html_charts.c); links, progress and SDC
 * (report_html_status.c) */
void html_chart_busbw(FILE *o, const json_t *doc);
void html_chart_lateness(FILE *o, const json_t *doc);
void html_chart_links(FILE *o, const json_t *doc);
void html_chart_progress(FILE *o, const json_t *doc);
void html_chart_sdc(FILE *o, const json_t *doc);
void html_chart_health(FILE *o, const json_t *doc);  /* GPU health (report_html_health.c) */
void html_chart_balance(FILE *o, const json_t *doc); /* compute per rank, shares (report_html_balance.c) */
void html_chart_steps(FILE *o, const json_t *doc);   /* each rank's step split (report_html_steps.c) */

#endif
