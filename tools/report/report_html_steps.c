/* tools/report/report_html_steps.c: the page's steps chart, drawn from the "steps" section of the
 * report's JSON document (tools/report/report_steps_json.c): one stacked bar per rank, its median
 * step split by the shares of compute, communication not overlapped, waiting for peers and
 * pipeline bubble, and a table of the same figures (medians and p90 per rank, then per stage). */
#include "report_html_internal.h"

#include <stdbool.h>
#include <string.h>

#include <jansson.h>

#define MAX_STEPS_ROWS 64 /* ranks drawn (the table holds up to MAX_TABLE_ROWS) */

static const char *const parts[4] = {"compute", "comm", "wait", "bubble"};
static const char *const fills[4] = {"#0072b2", "#e69f00", "#cc79a7", "#d55e00"}; /* colour-blind safe */

static double fig(const json_t *r, const char *obj, const char *k) { return html_jnum(json_object_get(r, obj), k); }

void html_chart_steps(FILE *o, const json_t *doc) {
  const json_t *s = json_object_get(doc, "steps"), *ranks = json_object_get(s, "per_rank");
  size_t nr = json_array_size(ranks), i;
  fputs("<section id=\"steps\" data-chart=\"steps\"><h2>Steps: where each rank's step goes</h2>"
        "<p>Per rank, the median step on its GPU split by the shares of compute (no op running), communication not "
        "overlapped, waiting for the last peer, and pipeline bubble (that wait in a pipeline's Send/Recv or a collective "
        "across its stages); the four sum to the step (docs/balance.md \"Steps\").</p>",
        o);
  if (!nr) {
    fputs("<p>No rank with two steps or more.</p></section>\n", o);
    return;
  }
  size_t nd = nr < MAX_STEPS_ROWS ? nr : MAX_STEPS_ROWS;
  double smax = 0;
  for (i = 0; i < nd; i++) {
    double v = fig(json_array_get(ranks, i), "median_us", "step");
    if (v > smax) smax = v;
  }
  if (smax <= 0) smax = 1;
  const double L = 90, T = 10, PW = 560, rh = nd <= 16 ? 18 : 8, PH = rh * (double)nd, W = L + PW + 40,
               H = T + PH + 44;
  char desc[200];
  snprintf(desc, sizeof desc, "%zu ranks; the longest median step is %.0f us. The table below lists the same figures.",
           nd, smax);
  html_svg_open(o, "steps-svg", W, H, "each rank's median step split into compute, communication, waiting and bubble",
                desc);
  for (i = 0; i < nd; i++) {
    const json_t *r = json_array_get(ranks, i);
    double step = fig(r, "median_us", "step"), x = L, y = T + rh * (double)i;
    fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">rank %.0f</text>", L - 6, y + rh * 0.7,
            html_jnum(r, "rank"));
    for (int k = 0; k < 4; k++) {
      double sh = fig(r, "share", parts[k]), w = PW * step / smax * (sh > 0 ? sh : 0);
      fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"%s\" data-rank=\"%.0f\" data-part=\"%s\" "
                 "data-share=\"%.4f\"><title>%s %.1f %%</title></rect>",
              x, y + 1, w, rh - 2, fills[k], html_jnum(r, "rank"), parts[k], sh, parts[k], 100.0 * sh);
      x += w;
    }
  }
  for (int k = 0; k < 4; k++)
    fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%g\" y=\"%g\">%s</text>",
            L + 110.0 * k, T + PH + 26, fills[k], L + 110.0 * k + 14, T + PH + 35, parts[k]);
  fprintf(o, "<text x=\"%g\" y=\"%g\">0</text><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.0f us</text></svg>\n", L,
          T + PH + 14, L + PW, T + PH + 14, smax);
  fputs("<details><summary>table</summary><table><tr><th>rank</th><th>stage</th><th>steps</th><th>step us</th>"
        "<th>compute us (p90)</th><th>comm us (p90)</th><th>wait us (p90)</th><th>bubble us (p90)</th></tr>",
        o);
  for (i = 0; i < nr && i < MAX_TABLE_ROWS; i++) {
    const json_t *r = json_array_get(ranks, i);
    fprintf(o, "<tr><td>%.0f</td>", html_jnum(r, "rank"));
    if (json_is_integer(json_object_get(r, "stage")))
      fprintf(o, "<td>%.0f</td>", html_jnum(r, "stage"));
    else
      fputs("<td>-</td>", o);
    fprintf(o, "<td>%.0f</td><td>%.1f</td>", html_jnum(r, "steps"), fig(r, "median_us", "step"));
    for (int k = 0; k < 4; k++)
      fprintf(o, "<td>%.1f (%.1f)</td>", fig(r, "median_us", parts[k]), fig(r, "p90_us", parts[k]));
    fputs("</tr>", o);
  }
  fputs("</table></details>", o);
  const json_t *st = json_object_get(s, "per_stage");
  if (json_array_size(st) > 1) {
    fputs("<table data-chart=\"steps-stages\"><tr><th>stage</th><th>ranks</th><th>step us</th><th>compute</th>"
          "<th>comm</th><th>wait</th><th>bubble</th></tr>",
          o);
    for (i = 0; i < json_array_size(st) && i < MAX_TABLE_ROWS; i++) {
      const json_t *g = json_array_get(st, i);
      if (json_is_integer(json_object_get(g, "stage")))
        fprintf(o, "<tr><td>%.0f</td>", html_jnum(g, "stage"));
      else
        fputs("<tr><td>-</td>", o);
      fprintf(o, "<td>%.0f</td><td>%.1f</td>", html_jnum(g, "ranks"), fig(g, "median_us", "step"));
      for (int k = 0; k < 4; k++) fprintf(o, "<td>%.1f %%</td>", 100.0 * fig(g, "share", parts[k]));
      fputs("</tr>", o);
    }
    fputs("</table>", o);
  }
  fputs("</section>\n", o);
}
