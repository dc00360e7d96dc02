/* tools/report/report_html_status.c: the page's SVG charts of where the job stands: the host x host
 * link matrix, the last seq each rank group reached (with the hangs), and the SDC timeline. */
#include "report_html_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xalloc.h"

static const char *const cividis[NLEVELS] = {"#00224e", "#0a2d67", "#28386d", "#3d446e", "#4f506f", "#5f5c70",
                                             "#6e6873", "#7c7478", "#8a8279", "#9a8e76", "#ab9b71", "#bca96a",
                                             "#cdb761", "#dfc656", "#f1d449", "#fee838"};
/* series colours (Okabe-Ito) */
/* ---- links: host x host matrix ---- */

static int host_index(const char **hosts, size_t n, const char *h) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(hosts[i], h)) return (int)i;
  return -1;
}

void html_chart_links(FILE *o, const json_t *doc) {
  const json_t *links = json_object_get(doc, "links");
  fputs("<section id=\"links\" data-chart=\"links\"><h2>Link throughput between hosts (NCCL_NET)</h2>", o);
  const char *hosts[MAX_HOSTS];
  size_t nh = 0, omitted = 0, i;
  const json_t *r;
  double max = 0;
  for (int pass = 0; pass < 2; pass++) /* hosts of slow pairs first */
    json_array_foreach((json_t *)links, i, r) {
      if (json_is_true(json_object_get(r, "slow")) != (pass == 0)) continue;
      const char *ends[2] = {html_jstr(r, "src_host"), html_jstr(r, "dst_host")};
      for (int e = 0; e < 2; e++) {
        if (!*ends[e] || host_index(hosts, nh, ends[e]) >= 0) continue;
        if (nh < MAX_HOSTS)
          hosts[nh++] = ends[e];
        else
          omitted++;
      }
      if (html_jnum(r, "gbps_p50") > max) max = html_jnum(r, "gbps_p50");
    }
  if (!nh) {
    fputs("<p>No link records (the NCCL_NET wrapper was not loaded, or the job had one host).</p></section>\n", o);
    return;
  }
  const double L = 130, T = 20, cell = nh <= 8 ? 48 : nh <= 16 ? 28
                                                               : 16;
  double PW = cell * (double)nh, W = L + PW + 200, H = T + PW + 120;
  char desc[256];
  snprintf(desc, sizeof desc, "%zu hosts; cell colour: median throughput of the link from the row's host to the "
                              "column's host; outlined with a cross: slow pairs. The table below lists every pair.",
           nh);
  html_svg_open(o, "links-svg", W, H, "Link throughput (Gbit/s) from host (row) to host (column)", desc);
  fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" style=\"fill:var(--empty)\"/>", L, T, PW, PW);
  json_array_foreach((json_t *)links, i, r) {
    int a = host_index(hosts, nh, html_jstr(r, "src_host")), b = host_index(hosts, nh, html_jstr(r, "dst_host"));
    if (a < 0 || b < 0) continue;
    bool slow = json_is_true(json_object_get(r, "slow"));
    double x = L + cell * b, y = T + cell * a;
    fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"%s\" data-src-host=\"", x, y, cell, cell,
            cividis[html_level(html_jnum(r, "gbps_p50"), max)]);
    html_esc_short(o, html_jstr(r, "src_host"), MAX_NAME / 2);
    fputs("\" data-dst-host=\"", o);
    html_esc_short(o, html_jstr(r, "dst_host"), MAX_NAME / 2);
    fprintf(o, "\"%s><title>", slow ? " data-slow-pair=\"1\"" : "");
    html_esc_short(o, html_jstr(r, "src_host"), MAX_NAME / 2);
    fputs(" to ", o);
    html_esc_short(o, html_jstr(r, "dst_host"), MAX_NAME / 2);
    fprintf(o, ": %.3g Gbit/s median%s</title></rect>", html_jnum(r, "gbps_p50"), slow ? ", SLOW" : "");
    if (slow)
      fprintf(o, "<rect class=\"slow\" x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\"/><path class=\"slow\" "
                 "d=\"M%g %gL%g %gM%g %gL%g %g\"/>",
              x + 1.5, y + 1.5, cell - 3, cell - 3, x + 4, y + 4, x + cell - 4, y + cell - 4, x + cell - 4, y + 4, x + 4,
              y + cell - 4);
  }
  fputs("<g class=\"axis\">", o);
  for (size_t h = 0; h < nh; h++) {
    fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">", L - 6, T + cell * ((double)h + 0.5) + 4);
    html_esc_short(o, hosts[h], 18);
    fprintf(o, "</text><text transform=\"translate(%g %g) rotate(45)\">", L + cell * ((double)h + 0.5), T + PW + 8);
    html_esc_short(o, hosts[h], 18);
    fputs("</text>", o);
  }
  fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">receiving host</text>", L + PW / 2, H - 8);
  fprintf(o, "<text transform=\"translate(12 %g) rotate(-90)\" text-anchor=\"middle\">sending host</text></g>",
          T + PW / 2);
  char hi[32];
  snprintf(hi, sizeof hi, "%.3g Gbit/s", max);
  html_legend(o, cividis, L + PW + 20, T + 20, "0", hi, "median throughput");
  fprintf(o, "<g><rect class=\"slow\" x=\"%g\" y=\"%g\" width=\"16\" height=\"16\"/><text x=\"%g\" y=\"%g\">slow pair</text></g>",
          L + PW + 20, T + 70, L + PW + 42, T + 82);
  fputs("</svg>", o);
  if (omitted) fprintf(o, "<p>%zu more hosts are in the table only.</p>", omitted);
  fputs("<details><summary>Table: every host pair</summary><table data-table=\"links\"><tr><th>from</th><th>to</th>"
        "<th>median (Gbit/s)</th><th>p10 (Gbit/s)</th><th>bytes</th><th>slow</th></tr>",
        o);
  size_t rows = 0;
  for (int pass = 0; pass < 2; pass++)
    json_array_foreach((json_t *)links, i, r) {
      if (json_is_true(json_object_get(r, "slow")) != (pass == 0) || rows++ >= MAX_TABLE_ROWS) continue;
      fputs("<tr><td class=\"l\">", o);
      html_esc(o, html_jstr(r, "src_host"));
      fputs("</td><td class=\"l\">", o);
      html_esc(o, html_jstr(r, "dst_host"));
      fprintf(o, "</td><td>%.3f</td><td>%.3f</td><td>%.0f</td><td>%s</td></tr>", html_jnum(r, "gbps_p50"),
              html_jnum(r, "gbps_p10"), html_jnum(r, "bytes"), pass == 0 ? "SLOW" : "");
    }
  fputs("</table></details></section>\n", o);
}

/* ---- progress: the last seq each rank group reached ---- */

/* a communicator's lowest and highest last seq entered over its groups; false when none */
static bool progress_span(const json_t *c, double *lo, double *hi) {
  const json_t *emin = json_object_get(c, "entered_min"), *emax = json_object_get(c, "entered_max");
  bool ok;
  *lo = INFINITY, *hi = -INFINITY;
  for (size_t g = 0; g < json_array_size(emin); g++) {
    double a = html_jat(emin, g, &ok);
    if (ok && a < *lo) *lo = a;
    double b = html_jat(emax, g, &ok);
    if (ok && b > *hi) *hi = b;
  }
  return *lo <= *hi;
}
/* a chart tells something: the communicator hangs, or its ranks got further than a seq apart
 * (without a hang, ranks a seq apart are a job that ended, or was cut, while some had enqueued
 * their next collective) */
static bool progress_drawn(const json_t *c) {
  double lo, hi;
  return progress_span(c, &lo, &hi) && (html_jhas(c, "hang_seq") || hi - lo > 1);
}

void html_chart_progress(FILE *o, const json_t *doc) {
  const json_t *comms = json_object_get(json_object_get(doc, "progress"), "comms");
  const json_t *hangs = json_object_get(doc, "hangs");
  size_t ci, drawn = 0;
  const json_t *c;
  json_array_foreach((json_t *)comms, ci, c) drawn += progress_drawn(c);
  fprintf(o, "<section id=\"hangs\" data-chart=\"hangs\" data-hangs=\"%zu\"><h2>Where the ranks got to: last seq per "
             "rank, per communicator</h2><p>%zu hung communicator%s.",
          json_array_size(hangs), json_array_size(hangs), json_array_size(hangs) == 1 ? "" : "s");
  if (drawn)
    fputs(" Bars: the lowest last seq a rank of the group entered; the thin mark: the highest; dashed: the seq the job "
          "is stuck at.",
          o);
  fputs("</p>", o);
  json_array_foreach((json_t *)comms, ci, c) {
    const json_t *emin = json_object_get(c, "entered_min"), *emax = json_object_get(c, "entered_max");
    const json_t *er = json_object_get(c, "entered_min_rank"), *dmin = json_object_get(c, "done_min");
    size_t ng = json_array_size(emin);
    double rpg = html_jnum(c, "ranks_per_group"), lo, hi;
    bool ok, hung = html_jhas(c, "hang_seq");
    if (!progress_span(c, &lo, &hi)) continue;
    if (!progress_drawn(c)) { /* nothing to see: one line instead of a chart */
      fprintf(o, "<p data-comm=\"%s\">communicator %s (%.0f ranks): every rank entered seq %.0f", html_jstr(c, "comm"),
              html_jstr(c, "comm"), html_jnum(c, "comm_size"), lo);
      if (hi > lo) fprintf(o, " or %.0f", hi);
      fputs(" last.</p>", o);
      continue;
    }
    if (hung && html_jnum(c, "hang_seq") > hi) hi = html_jnum(c, "hang_seq");
    double base = lo > 0 ? lo - 1 : 0, span = hi - base > 0 ? hi - base : 1;
    const double L = 70, T = 10, PH = 160, PW = 600;
    double bw = PW / (double)ng, W = L + PW + 20, H = T + PH + 60;
    char id[64], title[160], desc[300];
    snprintf(id, sizeof id, "prog-%zu", ci);
    snprintf(title, sizeof title, "Last seq entered per rank group, communicator %s (%.0f ranks)", html_jstr(c, "comm"),
             html_jnum(c, "comm_size"));
    snprintf(desc, sizeof desc, "%zu groups of %.0f ranks; seqs from %.0f to %.0f%s. The table below lists each "
                                "group's lowest rank.",
             ng, rpg, lo, hi, hung ? "; the communicator hangs" : "");
    fprintf(o, "<figure data-comm=\"%s\"%s>", html_jstr(c, "comm"), hung ? " data-hung=\"1\"" : "");
    html_svg_open(o, id, W, H, title, desc);
#define PY(v) (T + PH - ((v)-base) / span * PH)
    for (size_t g = 0; g < ng; g++) {
      double a = html_jat(emin, g, &ok);
      if (!ok) continue;
      double b = html_jat(emax, g, &ok), rk = html_jat(er, g, &ok);
      fprintf(o, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" data-group=\"%zu\" "
                 "data-last-seq=\"%.0f\"><title>ranks from %.0f: lowest last seq %.0f (rank %.0f), highest %.0f</title></rect>",
              L + bw * (double)g + 1, PY(a), bw > 3 ? bw - 2 : bw, T + PH - PY(a), g, a, (double)g * rpg, a, rk, b);
      if (b > a)
        fprintf(o, "<line class=\"barmax\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", L + bw * (double)g + 1,
                L + bw * (double)(g + 1) - 1, PY(b), PY(b));
    }
    if (hung)
      fprintf(o, "<line class=\"hangl\" x1=\"%g\" x2=\"%g\" y1=\"%.1f\" y2=\"%.1f\" data-hang-seq=\"%.0f\"><title>stuck at "
                 "seq %.0f</title></line>",
              L, L + PW, PY(html_jnum(c, "hang_seq")), PY(html_jnum(c, "hang_seq")), html_jnum(c, "hang_seq"), html_jnum(c, "hang_seq"));
    fprintf(o, "<g class=\"axis\"><line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/><line x1=\"%g\" x2=\"%g\" y1=\"%g\" "
               "y2=\"%g\"/>",
            L, L + PW, T + PH, T + PH, L, L, T, T + PH);
    fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.0f</text><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.0f</text>",
            L - 4, PY(hi) + 4, hi, L - 4, T + PH, base);
    fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">rank group (%.0f ranks each, from rank 0)</text>",
            L + PW / 2, T + PH + 20, rpg);
    fprintf(o, "<text transform=\"translate(14 %g) rotate(-90)\" text-anchor=\"middle\">last seq</text></g>",
            T + PH / 2);
#undef PY
    fputs("</svg><details><summary>Table: last seq per rank group</summary><table><tr><th>comm ranks from</th>"
          "<th>lowest last seq entered</th><th>its rank</th><th>lowest completed</th><th>highest entered</th></tr>",
          o);
    for (size_t g = 0; g < ng; g++) {
      double a = html_jat(emin, g, &ok);
      if (!ok) continue;
      fprintf(o, "<tr><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%.0f</td></tr>", (double)g * rpg, a,
              html_jat(er, g, &ok), html_jat(dmin, g, &ok), html_jat(emax, g, &ok));
    }
    fputs("</table></details></figure>", o);
  }
  fputs("</section>\n", o);
}

/* ---- SDC: checks and findings over time ---- */

void html_chart_sdc(FILE *o, const json_t *doc) {
  const json_t *tl = json_object_get(doc, "sdc_timeline"), *b = json_object_get(tl, "buckets");
  const json_t *items = json_object_get(doc, "sdc"), *cnt = json_object_get(doc, "sdc_checks");
  fprintf(o, "<section id=\"sdc\" data-chart=\"sdc\" data-findings=\"%zu\"><h2>Silent data corruption checks over "
             "time</h2><p>%.0f collectives compared, %zu finding%s.</p>",
          json_array_size(items), html_jnum(cnt, "compared"), json_array_size(items), json_array_size(items) == 1 ? "" : "s");
  size_t nb = json_array_size(b), i;
  double cmax = 0, bs = html_jnum(tl, "bucket_s");
  const json_t *e;
  json_array_foreach((json_t *)b, i, e) if (html_jnum(e, "checked") > cmax) cmax = html_jnum(e, "checked");
  if (nb) {
    const double L = 64, T = 16, PW = 600, PH = 160;
    double bw = PW / (double)nb;
    html_svg_open(o, "sdc-svg", L + PW + 20, T + PH + 60, "SDC checks (collectives compared) and findings per time bucket",
                  "Grey bars: collectives compared in each time bucket; orange triangles with a count: buckets with findings. "
                  "The table below lists every finding.");
    json_array_foreach((json_t *)b, i, e) {
      double h = html_jnum(e, "checked") / (cmax > 0 ? cmax : 1) * PH, x = L + bw * (double)i;
      fprintf(o, "<rect class=\"checked\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>from %.3g s: %.0f "
                 "compared, %.0f findings</title></rect>",
              x + 0.5, T + PH - h, bw - 1, h, html_jnum(e, "t_s"), html_jnum(e, "checked"), html_jnum(e, "findings"));
      if (html_jnum(e, "findings") > 0)
        fprintf(o, "<path class=\"find\" data-findings=\"%.0f\" d=\"M%.1f %.1fl6 -10h-12z\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">%.0f</text>",
                html_jnum(e, "findings"), x + bw / 2, T + PH - h - 2, x + bw / 2, T + PH - h - 15, html_jnum(e, "findings"));
    }
    fprintf(o, "<g class=\"axis\"><line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/><line x1=\"%g\" x2=\"%g\" y1=\"%g\" "
               "y2=\"%g\"/><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.0f</text><text x=\"%g\" y=\"%g\" "
               "text-anchor=\"end\">0</text>",
            L, L + PW, T + PH, T + PH, L, L, T, T + PH, L - 4, T + 4, cmax, L - 4, T + PH);
    /* time ticks on 1-2-5 steps: the buckets are bs wide from the first one's start */
    double t0 = html_jnum(json_array_get(b, 0), "t_s");
    if (bs > 0) {
      double tstep = html_nice_step(bs * (double)nb, 6);
      for (int k = 0; k <= 10; k++) { /* bounded: a step lost in rounding */
        double t = (ceil(t0 / tstep - 1e-9) + k) * tstep, x = L + bw * (t - t0) / bs;
        if (!(x <= L + PW + 0.5)) break;
        char tb[32];
        html_fmt_tick(tb, sizeof tb, t, tstep);
        fprintf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%g\" y2=\"%g\"/><text class=\"timetick\" x=\"%.1f\" y=\"%g\" "
                   "text-anchor=\"middle\">%s</text>",
                x, x, T + PH, T + PH + 3, x, T + PH + 14, tb);
      }
    }
    fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">time since the job's first collective (s; buckets of "
               "%.3g s)</text><text transform=\"translate(14 %g) rotate(-90)\" text-anchor=\"middle\">collectives "
               "compared</text></g></svg>",
            L + PW / 2, T + PH + 32, bs, T + PH / 2);
  } else {
    fputs("<p>No SDC checks in these dumps.</p>", o);
  }
  if (json_array_size(items)) {
    fputs("<table data-table=\"sdc\"><tr><th>comm</th><th>seq</th><th>op</th><th>dtype</th><th>check</th>"
          "<th>suspect rank</th><th>host</th></tr>",
          o);
    json_array_foreach((json_t *)items, i, e) {
      if (i == MAX_TABLE_ROWS) break;
      fprintf(o, "<tr><td class=\"l\">%s</td><td>%.0f</td><td class=\"l\">", html_jstr(e, "comm"), html_jnum(e, "seq"));
      html_esc(o, html_jstr(e, "op"));
      fputs("</td><td class=\"l\">", o);
      html_esc(o, html_jstr(e, "datatype"));
      fputs("</td><td class=\"l\">", o);
      html_esc(o, html_jstr(e, "check"));
      fputs("</td><td>", o);
      if (html_jhas(e, "suspect_rank"))
        fprintf(o, "%.0f", html_jnum(e, "suspect_rank"));
      else
        fputs("-", o);
      fputs("</td><td class=\"l\">", o);
      html_esc(o, html_jstr(e, "host"));
      fputs("</td></tr>", o);
    }
    fputs("</table>", o);
  }
  fputs("</section>\n", o);
}
