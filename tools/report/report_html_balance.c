/* tools/report/report_html_balance.c: the page's balance chart, drawn from the "balance" section of
 * the report's JSON document (tools/report/report_balance.c): one bar per rank, its compute time per
 * step today, a tick at the compute every rank would have with the proposed shares, and a
 * table of the same figures (GPU, share today and proposed, verdict); then the pipeline's
 * stages with today's and the proposed layer counts, and the advice. */
#include "report_html_internal.h"

#include <stdbool.h>
#include <string.h>

#include <jansson.h>

#define MAX_BALANCE_ROWS 64 /* ranks drawn (the table holds up to MAX_TABLE_ROWS) */

static void cell_num(FILE *o, const json_t *r, const char *k, const char *fmt) {
  const json_t *v = json_object_get(r, k);
  fputs("<td>", o);
  if (json_is_number(v))
    fprintf(o, fmt, json_number_value(v));
  else
    fputs("-", o);
  fputs("</td>", o);
}

void html_chart_balance(FILE *o, const json_t *doc) {
  const json_t *b = json_object_get(doc, "balance"), *ranks = json_object_get(b, "ranks");
  size_t nr = json_array_size(ranks), i;
  fputs("<section id=\"balance\" data-chart=\"balance\"><h2>Balance: compute per rank and step</h2>"
        "<p>GPU time between each rank's collectives, summed per step (docs/balance.md). The tick: every rank's "
        "compute with the proposed work shares (proportional to speed).</p>",
        o);
  if (!nr) {
    fputs("<p>No data-parallel or pipeline communicator with two steps or more.</p></section>\n", o);
    return;
  }
  size_t nd = nr < MAX_BALANCE_ROWS ? nr : MAX_BALANCE_ROWS;
  double cmax = 0, step_now = html_jnum(b, "step_us_now"), step_bal = html_jnum(b, "step_us_balanced");
  for (i = 0; i < nd; i++) {
    double c = html_jnum(json_array_get(ranks, i), "compute_us");
    if (c > cmax) cmax = c;
  }
  if (cmax <= 0) cmax = 1;
  double cbal = step_bal > 0 && step_now > 0 ? cmax - (step_now - step_bal) : -1;
  const double L = 190, T = 10, PW = 520, rh = nd <= 16 ? 18 : 8, PH = rh * (double)nd, W = L + PW + 40,
               H = T + PH + 40;
  char desc[300];
  snprintf(desc, sizeof desc,
           "%zu ranks; the slowest computes %.0f us per step; with the proposed shares each would compute %.0f us. "
           "The table below lists the same figures.",
           nd, cmax, cbal);
  html_svg_open(o, "balance-svg", W, H, "compute time per rank and step, and with the proposed shares", desc);
  for (i = 0; i < nd; i++) {
    const json_t *r = json_array_get(ranks, i);
    double c = html_jnum(r, "compute_us"), y = T + rh * (double)i;
    bool slow = strcmp(html_jstr(r, "verdict"), "ok") != 0;
    fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">rank %.0f ", L - 6, y + rh * 0.7, html_jnum(r, "rank"));
    html_esc_short(o, html_jstr(r, "gpu"), 24);
    fprintf(o, "</text><rect class=\"bar\" x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" data-rank=\"%.0f\" "
               "data-verdict=\"",
            L, y + 1, PW * c / cmax, rh - 2, html_jnum(r, "rank"));
    html_esc(o, html_jstr(r, "verdict"));
    fprintf(o, "\"%s><title>%.1f us</title></rect>", slow ? " style=\"opacity:.7\"" : "", c);
  }
  if (cbal > 0)
    fprintf(o, "<line class=\"hangl\" x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" data-balanced-us=\"%.1f\"/>",
            L + PW * cbal / cmax, L + PW * cbal / cmax, T, T + PH, cbal);
  fprintf(o, "<text x=\"%g\" y=\"%g\">0</text><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.0f us</text></svg>\n", L,
          T + PH + 16, L + PW, T + PH + 16, cmax);
  if (step_now > 0 && step_bal > 0)
    fprintf(o, "<p data-gain-pct=\"%.2f\">Step time now %.0f us; with the proposed split %.0f us predicted: %.1f %% "
               "faster.</p>",
            html_jnum(b, "gain_pct"), step_now, step_bal, html_jnum(b, "gain_pct"));
  fputs("<p class=\"warn\">", o);
  html_esc_short(o, html_jstr(b, "action"), 32);
  fputs(": ", o);
  html_esc_short(o, html_jstr(b, "advice"), 1024);
  fputs("</p><details><summary>table</summary><table><tr><th>rank</th><th>host</th><th>gpu</th><th>compute "
        "us/step</th><th>share now</th><th>share</th><th>verdict</th></tr>",
        o);
  for (i = 0; i < nr && i < MAX_TABLE_ROWS; i++) {
    const json_t *r = json_array_get(ranks, i);
    fprintf(o, "<tr><td>%.0f</td><td class=\"l\">", html_jnum(r, "rank"));
    html_esc(o, html_jstr(r, "host"));
    fputs("</td><td class=\"l\">", o);
    html_esc(o, html_jstr(r, "gpu"));
    fputs("</td>", o);
    cell_num(o, r, "compute_us", "%.1f");
    cell_num(o, r, "share_now", "%.4f");
    cell_num(o, r, "share", "%.4f");
    fputs("<td class=\"l\">", o);
    html_esc(o, html_jstr(r, "verdict"));
    fputs("</td></tr>", o);
  }
  fputs("</table></details>", o);
  const json_t *st = json_object_get(b, "stages");
  if (json_array_size(st)) {
    fputs("<table data-chart=\"stages\"><tr><th>stage</th><th>rank</th><th>gpu</th><th>compute us/step</th><th>layers "
          "now</th><th>layers</th></tr>",
          o);
    for (i = 0; i < json_array_size(st) && i < MAX_TABLE_ROWS; i++) {
      const json_t *s = json_array_get(st, i);
      fprintf(o, "<tr><td>%.0f</td><td>%.0f</td><td class=\"l\">", html_jnum(s, "stage"), html_jnum(s, "rank"));
      html_esc(o, html_jstr(s, "gpu"));
      fputs("</td>", o);
      cell_num(o, s, "compute_us", "%.1f");
      cell_num(o, s, "layers_now", "%.0f");
      cell_num(o, s, "layers", "%.0f");
      fputs("</tr>", o);
    }
    fputs("</table>", o);
  }
  fputs("</section>\n", o);
}
