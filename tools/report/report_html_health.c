/* tools/report/report_html_health.c: the page's GPU health chart, drawn from the "health" section of
 * the report's JSON document (tools/report/report_health.c): one row per rank, one column per slice
 * of the job's sample span; a cell is coloured by the clock event (throttle) reason active in
 * it (power cap, thermal, hardware slowdown), else by its lowest SM clock. A table beside it
 * lists each rank's GPU, throttle shares, errors, and the causes of its straggler entries. */
#include "report_html_internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#define MAX_HEALTH_ROWS 64 /* ranks drawn (every one is in the table) */

/* cividis, 16 steps: the SM clock of cells with no throttle reason */
static const char *const cividis[NLEVELS] = {"#00224e", "#0a2b64", "#27366d", "#3b416e", "#4b4c6f", "#5a5870",
                                             "#686372", "#766f74", "#857b76", "#948878", "#a49478", "#b4a276",
                                             "#c4af71", "#d5bd6a", "#e7cc5f", "#fde737"};
static const struct {
  unsigned long long mask;
  const char *name, *colour, *what;
} reasons[] = {{0x4ULL, "power_cap", "#e69f00", "power cap"},
               {0x60ULL, "thermal", "#d55e00", "thermal slowdown"},
               {0x88ULL, "hw_slowdown", "#cc79a7", "hardware slowdown"}};
#define NREASONS (sizeof reasons / sizeof *reasons)

void html_chart_health(FILE *o, const json_t *doc) {
  const json_t *health = json_object_get(doc, "health"), *tl = json_object_get(health, "timeline");
  const json_t *rows = json_object_get(tl, "ranks");
  size_t nr = json_array_size(rows), nc = (size_t)html_jnum(tl, "columns");
  fputs("<section id=\"health\" data-chart=\"health\"><h2>GPU health over time</h2>"
        "<p>One row per rank, one column per slice of the job: coloured by the clock event (throttle) reason its "
        "GPU reported in that slice, else by its lowest SM clock (dark: low). Empty: no sample.</p>",
        o);
  if (!nr || !nc) {
    fputs("<p>No GPU health samples: nothing to draw (COLLSCOPE_HEALTH_MS, NVML; docs/health.md).</p></section>\n", o);
    return;
  }
  size_t nd = nr < MAX_HEALTH_ROWS ? nr : MAX_HEALTH_ROWS, i, k;
  double smax = 0;
  bool ok;
  for (i = 0; i < nd; i++)
    for (k = 0; k < nc; k++) {
      double v = html_jat(json_object_get(json_array_get(rows, i), "sm_mhz"), k, &ok);
      if (ok && v > smax) smax = v;
    }
  const double L = 190, T = 10, PW = 560;
  double cw = PW / (double)nc, rh = nd <= 16 ? 16 : nd <= 32 ? 10
                                                             : 6,
         PH = rh * (double)nd;
  double W = L + PW + 190, H = T + PH + 60;
  char desc[300];
  snprintf(desc, sizeof desc,
           "%zu ranks by %zu time slices over %.1f s of samples; highest SM clock %.0f MHz. The table below lists each "
           "rank's throttle shares, errors and causes.",
           nd, nc, (html_jnum(tl, "t1_ns") - html_jnum(tl, "t0_ns")) / 1e9, smax);
  html_svg_open(o, "health-svg", W, H, "GPU clock event reasons and SM clock per rank over time", desc);
  for (i = 0; i < nd; i++) {
    const json_t *r = json_array_get(rows, i), *rs = json_object_get(r, "reasons"), *sm = json_object_get(r, "sm_mhz");
    size_t count[NREASONS] = {0};
    for (k = 0; k < nc; k++) {
      double v = html_jat(rs, k, &ok);
      if (!ok) continue;
      for (size_t j = 0; j < NREASONS; j++)
        if ((unsigned long long)v & reasons[j].mask) {
          count[j]++;
          break;
        }
    }
    fprintf(o, "<g data-rank=\"%.0f\"", html_jnum(r, "rank"));
    for (size_t j = 0; j < NREASONS; j++) fprintf(o, " data-%s=\"%zu\"", reasons[j].name, count[j]);
    double y = T + rh * (double)i;
    fprintf(o, "><text x=\"%g\" y=\"%g\" text-anchor=\"end\">rank %.0f ", L - 6, y + rh - 3, html_jnum(r, "rank"));
    html_esc_short(o, html_jstr(r, "host"), 24);
    fputs("</text>", o);
    for (k = 0; k < nc; k++) {
      double v = html_jat(rs, k, &ok), s;
      const char *fill = NULL;
      for (size_t j = 0; ok && j < NREASONS && !fill; j++)
        if ((unsigned long long)v & reasons[j].mask) fill = reasons[j].colour;
      if (!fill) {
        s = html_jat(sm, k, &ok);
        if (!ok) continue;
        fill = cividis[html_level(s, smax)];
      }
      fprintf(o, "<rect x=\"%.2f\" y=\"%g\" width=\"%.2f\" height=\"%g\" fill=\"%s\"/>", L + cw * (double)k, y, cw, rh, fill);
    }
    fputs("</g>", o);
  }
  for (size_t j = 0; j < NREASONS; j++)
    fprintf(o, "<g aria-hidden=\"true\"><rect x=\"%g\" y=\"%g\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"%g\" "
               "y=\"%g\">%s</text></g>",
            L + PW + 16, T + 2 + 16 * (double)j, reasons[j].colour, L + PW + 34, T + 11 + 16 * (double)j, reasons[j].what);
  char hi[32];
  snprintf(hi, sizeof hi, "%.0f", smax);
  html_legend(o, cividis, L + PW + 16, T + 70, "0", hi, "SM clock (MHz)");
  fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">time (slices of the job's samples)</text></svg>", L + PW / 2,
          T + PH + 24);
  if (nr > nd) fprintf(o, "<p>%zu more ranks are in the table only.</p>", nr - nd);
  if (html_jnum(tl, "ranks_omitted") > 0)
    fprintf(o, "<p>%.0f more ranks with samples are left out (see report --json).</p>", html_jnum(tl, "ranks_omitted"));
  /* the table: every rank of the health section, with its straggler causes */
  fputs("<details><summary>Table: GPU, throttle shares, errors and causes per rank</summary><table><tr><th>rank</th>"
        "<th>host</th><th>GPU</th><th>power cap</th><th>thermal</th><th>hw slowdown</th><th>SM MHz (median)</th>"
        "<th>ECC corrected</th><th>ECC uncorrected</th><th>causes (stragglers)</th></tr>",
        o);
  size_t n = 0;
  const json_t *r;
  json_array_foreach(json_object_get(health, "ranks"), i, r) {
    if (n++ == MAX_TABLE_ROWS) break;
    const json_t *thr = json_object_get(r, "throttle_share");
    fprintf(o, "<tr data-rank=\"%.0f\"><td>%.0f</td><td class=\"l\">", html_jnum(r, "rank"), html_jnum(r, "rank"));
    html_esc(o, html_jstr(r, "host"));
    fputs("</td><td class=\"l\">", o);
    html_esc(o, html_jstr(r, "gpu_name"));
    fprintf(o, "</td><td>%.0f%%</td><td>%.0f%%</td><td>%.0f%%</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td class=\"l\">",
            100 * html_jnum(thr, "power_cap"), 100 * html_jnum(thr, "thermal"), 100 * html_jnum(thr, "hw_slowdown"),
            html_jnum(r, "sm_mhz_median"), html_jnum(r, "ecc_corrected"), html_jnum(r, "ecc_uncorrected"));
    size_t si, ci, nc2 = 0;
    const json_t *s, *c;
    json_array_foreach(json_object_get(doc, "stragglers"), si, s) {
      if (html_jnum(s, "rank") != html_jnum(r, "rank") || !html_jhas(s, "rank")) continue;
      json_array_foreach(json_object_get(s, "causes"), ci, c) {
        fputs(nc2++ ? "; " : "", o);
        html_esc(o, html_jstr(c, "kind"));
        fputs(": ", o);
        html_esc(o, html_jstr(c, "detail"));
      }
    }
    fputs(nc2 ? "</td></tr>" : "-</td></tr>", o);
  }
  fputs("</table></details></section>\n", o);
}
