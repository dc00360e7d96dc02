/* tools/report/report_html_charts.c: the page's SVG charts of performance: bus bandwidth against
 * message size (one line per op, rank count and, with report --by-model, GPU model), and the
 * lateness grids per communicator with the stragglers marked. */
#include "report_html_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report_agg.h"
#include "xalloc.h"

static const char *const series[MAX_SERIES] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                               "#56b4e9", "#d55e00", "#f0e442", "#999999"};
/* viridis and cividis, 16 steps each: sequential, readable in grey and by colour-blind eyes */
static const char *const viridis[NLEVELS] = {"#440154", "#481a6c", "#472f7d", "#414487", "#39568c", "#31688e",
                                             "#2a788e", "#23888e", "#1f988b", "#22a884", "#35b779", "#54c568",
                                             "#7ad151", "#a5db36", "#d2e21b", "#fde725"};
/* ---- bus bandwidth against message size ---- */

static const json_t *pct_row(const json_t *pct, const char *op, double csize, double bucket_lo) {
  size_t i;
  if (!op) return NULL;
  const json_t *r;
  json_array_foreach((json_t *)pct, i, r) if (!strcmp(html_jstr(r, "op"), op) && html_jnum(r, "comm_size") == csize && html_jnum(r, "bucket_lo") == bucket_lo) return r;
  return NULL;
}

/* a series of the bus bandwidth chart: (op, comm_size), in the ops section's order */
struct ser {
  const char *op, *model; /* model: "" unless report --by-model split the rows */
  double csize;
};

/* the chart's plot area and axes' ranges (x: log2 of the bytes) */
struct busbw_geom {
  double xmin, xmax, ymax, L, T, PW, PH;
};
#define BXG(v) (g->L + ((v)-g->xmin) / (g->xmax - g->xmin) * g->PW)
#define BYG(v) (g->T + g->PH - (v) / g->ymax * g->PH)

/* one series: the p10-p90 band, the line of the ops section's busbw, its points and its
 * legend entry */
static void busbw_series(FILE *o, const json_t *ops, const json_t *pct, const struct ser *sv, size_t s, bool by_model,
                         const struct busbw_geom *g) {
  size_t i;
  const json_t *r;
  /* band: p90 left to right, p10 back; line: the ops section's busbw */
  double bx[128], lo[128], hi[128], ly[128];
  size_t nb = 0;
  json_array_foreach((json_t *)ops, i, r) {
    if (nb == 128 || !html_jhas(r, "busbw_gbs") || html_jnum(r, "bytes") <= 0 || html_jnum(r, "comm_size") != sv->csize ||
        strcmp(html_jstr(r, "op"), sv->op) || strcmp(html_jstr(r, "gpu_model"), sv->model))
      continue;
    const json_t *p = pct_row(pct, *sv->model ? NULL : sv->op, sv->csize, html_jnum(r, "bucket_lo"));
    bx[nb] = log2(html_jnum(r, "bytes"));
    ly[nb] = html_jnum(r, "busbw_gbs");
    lo[nb] = p ? html_jnum(p, "busbw_p10") : ly[nb];
    hi[nb] = p ? html_jnum(p, "busbw_p90") : ly[nb];
    nb++;
  }
  fprintf(o, "<g data-series=\"%zu\" data-op=\"", s);
  html_esc(o, sv->op);
  if (*sv->model) {
    fputs("\" data-gpu-model=\"", o);
    html_esc(o, sv->model);
  }
  fprintf(o, "\" data-comm-size=\"%.0f\"><polygon fill=\"%s\" fill-opacity=\"0.22\" points=\"", sv->csize, series[s]);
  for (size_t k = 0; k < nb; k++) fprintf(o, "%.1f,%.1f ", BXG(bx[k]), BYG(hi[k]));
  for (size_t k = nb; k-- > 0;) fprintf(o, "%.1f,%.1f ", BXG(bx[k]), BYG(lo[k]));
  fprintf(o, "\"/><polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", series[s]);
  for (size_t k = 0; k < nb; k++) fprintf(o, "%.1f,%.1f ", BXG(bx[k]), BYG(ly[k]));
  fputs("\"/>", o);
  for (size_t k = 0; k < nb; k++) {
    char b[32];
    html_fmt_bytes(b, sizeof b, exp2(bx[k]));
    fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", BXG(bx[k]), BYG(ly[k]), series[s]);
    html_esc(o, sv->op);
    if (*sv->model) {
      fputs(" ", o);
      html_esc(o, sv->model);
    }
    fprintf(o, " %.0f ranks, %s: busbw p50 %.3g GB/s (p10 %.3g, p90 %.3g)</title></circle>", sv->csize, b, ly[k],
            lo[k], hi[k]);
  }
  /* legend entry, with a dash pattern so the lines differ without colour */
  double ly0 = g->T + (by_model ? 30 : 18) * (double)s; /* a model's name goes on a second line */
  fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"14\" height=\"10\" fill=\"%s\"/><text x=\"%g\" y=\"%g\">", g->L + g->PW + 20,
          ly0 + 8, series[s], g->L + g->PW + 40, ly0 + 17);
  html_esc_short(o, sv->op, 24);
  fprintf(o, " (%.0f ranks)", sv->csize);
  if (*sv->model) {
    const char *m = sv->model;
    if (!strncmp(m, "NVIDIA ", 7)) m += 7;
    fprintf(o, "</text><text x=\"%g\" y=\"%g\">", g->L + g->PW + 40, ly0 + 29);
    html_esc_short(o, m, 24);
  }
  fputs("</text></g>", o);
}

/* the chart's figures as a table: every row of the ops section with a bus bandwidth */
static void busbw_table(FILE *o, const json_t *ops, const json_t *pct, bool by_model) {
  size_t i;
  const json_t *r;
  fprintf(o, "<details><summary>Table: bus bandwidth per op, ranks and size</summary><table><tr><th>op</th><th>ranks</th>%s",
          by_model ? "<th>GPU model</th>" : "");
  fputs("<th>size (B)</th><th>busbw p50 time (GB/s)</th><th>busbw mean time (GB/s)</th><th>p10</th><th>p50</th>"
        "<th>p90</th><th>timed</th></tr>",
        o);
  size_t rows = 0, few = 0;
  double grouped = 0;
  json_array_foreach((json_t *)ops, i, r) {
    if (html_jhas(r, "grouped")) grouped += html_jnum(r, "grouped");
    if (!html_jhas(r, "busbw_gbs") || rows++ == MAX_TABLE_ROWS) continue;
    /* a group row (group_ops): the group's bytes over its span; no percentile band of its own */
    bool grp = html_jhas(r, "group_ops");
    const json_t *p =
        grp ? NULL : pct_row(pct, by_model ? NULL : html_jstr(r, "op"), html_jnum(r, "comm_size"), html_jnum(r, "bucket_lo"));
    fputs(grp ? "<tr data-group=\"1\"><td class=\"l\">" : "<tr><td class=\"l\">", o);
    html_esc(o, html_jstr(r, "op"));
    if (grp) fprintf(o, " (group of %.0f)", html_jnum(r, "group_ops"));
    fprintf(o, "</td><td>%.0f</td>", html_jnum(r, "comm_size"));
    if (by_model) {
      fputs("<td class=\"l\">", o);
      html_esc(o, html_jstr(r, "gpu_model"));
      fputs("</td>", o);
    }
    fprintf(o, "<td>%.0f</td><td>%.3f</td>", html_jnum(r, "bytes"), html_jnum(r, "busbw_gbs"));
    if (html_jhas(r, "busbw_mean_gbs"))
      fprintf(o, "<td>%.3f</td>", html_jnum(r, "busbw_mean_gbs"));
    else
      fputs("<td>-</td>", o);
    if (p)
      fprintf(o, "<td>%.3f</td><td>%.3f</td><td>%.3f</td>", html_jnum(p, "busbw_p10"), html_jnum(p, "busbw_p50"), html_jnum(p, "busbw_p90"));
    else
      fputs("<td>-</td><td>-</td><td>-</td>", o);
    bool f = json_is_true(json_object_get(r, "few_timed"));
    few += f;
    fprintf(o, f ? "<td class=\"warn\" data-few-timed=\"1\">%.0f *</td></tr>" : "<td>%.0f</td></tr>", html_jnum(r, "timed"));
  }
  fputs("</table>", o);
  if (few)
    fprintf(o, "<p data-note=\"few_timed\">* %zu row%s timed on fewer than %d records: not a measurement to compare.</p>",
            few, few == 1 ? "" : "s", REPORT_FEW_TIMED);
  if (grouped > 0)
    fprintf(o,
            "<p data-note=\"grouped\">%.0f op records were members of NCCL groups that share one GPU span (one fused "
            "launch per stream): no time of their own; the group rows have the group's bytes over its span.</p>",
            grouped);
}

void html_chart_busbw(FILE *o, const json_t *doc) {
  const json_t *ops = json_object_get(doc, "ops"), *pct = json_object_get(doc, "busbw_pct");
  fputs("<section id=\"busbw\" data-chart=\"busbw\"><h2>Bus bandwidth against message size</h2>", o);
  /* series: (op, comm_size) with a bus bandwidth, in the ops section's order */
  struct ser sv[MAX_SERIES];
  size_t ns = 0, more = 0, i;
  bool by_model = false; /* report --by-model: rows split by GPU model */
  double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
  const json_t *r;
  json_array_foreach((json_t *)ops, i, r) {
    by_model |= json_is_string(json_object_get(r, "gpu_model"));
    if (!html_jhas(r, "busbw_gbs") || html_jnum(r, "bytes") <= 0) continue;
    const char *op = html_jstr(r, "op"), *model = html_jstr(r, "gpu_model");
    double cs = html_jnum(r, "comm_size");
    size_t k = 0;
    while (k < ns && !(sv[k].csize == cs && !strcmp(sv[k].op, op) && !strcmp(sv[k].model, model))) k++;
    if (k == ns) {
      if (ns == MAX_SERIES) {
        more++;
        continue;
      }
      sv[ns++] = (struct ser){op, model, cs};
    }
    double x = log2(html_jnum(r, "bytes")), y = html_jnum(r, "busbw_gbs");
    /* the p10-p90 band is over every rank's records: not drawn for one model's rows */
    const json_t *p = pct_row(pct, *model ? NULL : op, cs, html_jnum(r, "bucket_lo"));
    if (p && html_jnum(p, "busbw_p90") > y) y = html_jnum(p, "busbw_p90");
    if (x < xmin) xmin = x;
    if (x > xmax) xmax = x;
    if (y > ymax) ymax = y;
  }
  if (!ns) {
    fputs("<p>No timed collectives with a size: nothing to draw.</p></section>\n", o);
    return;
  }
  xmin = floor(xmin), xmax = ceil(xmax);
  if (xmax <= xmin) xmax = xmin + 1;
  /* y axis: 0 to the first 1-2-5 tick at or above the highest point, at most 6 ticks */
  double ystep = html_nice_step(ymax > 0 ? ymax : 1, 5);
  ymax = ystep * ceil((ymax > 0 ? ymax : 1) / ystep - 1e-9);
  const double W = 780, H = 360, L = 84, T = 16, PW = 520, PH = 280;
  const struct busbw_geom geom = {xmin, xmax, ymax, L, T, PW, PH}, *g = &geom;
  html_svg_open(o, "busbw-svg", W, H, "Bus bandwidth (GB/s) against message size (bytes), one line per op and rank count",
                "Lines: the report's busbw at the p50 time of each size bucket; bands: p10 to p90 of the per-record bus "
                "bandwidth. The table below holds the same figures.");
  fputs("<g class=\"axis\">", o);
  for (int k = 0; k <= 10 && k * ystep <= ymax * (1 + 1e-9); k++) { /* bounded: hostile figures */
    double yv = k * ystep;
    char tb[32];
    html_fmt_tick(tb, sizeof tb, yv, ystep);
    fprintf(o, "<line class=\"gridl\" x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/><text class=\"ytick\" x=\"%g\" y=\"%g\" "
               "text-anchor=\"end\">%s</text>",
            L, L + PW, BYG(yv), BYG(yv), L - 6, BYG(yv) + 4, tb);
  }
  int step = (int)ceil((xmax - xmin) / 10);
  for (double x = xmin; x <= xmax; x += step) {
    char b[32];
    html_fmt_bytes(b, sizeof b, exp2(x));
    fprintf(o, "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/><text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>",
            BXG(x), BXG(x), T + PH, T + PH + 5, BXG(x), T + PH + 18, b);
  }
  fprintf(o, "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/><line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/>", L, L + PW,
          T + PH, T + PH, L, L, T, T + PH);
  fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">message size (bytes, log scale)</text>", L + PW / 2, H - 20);
  fprintf(o, "<text transform=\"translate(14 %g) rotate(-90)\" text-anchor=\"middle\">bus bandwidth (GB/s)</text></g>",
          T + PH / 2);
  for (size_t s = 0; s < ns; s++) busbw_series(o, ops, pct, &sv[s], s, by_model, g);
  fputs("</svg>", o);
  if (more) fprintf(o, "<p>%zu more rows of other ops or rank counts are in the table only.</p>", more);
  busbw_table(o, ops, pct, by_model);
  fputs("</details></section>\n", o);
}

/* ---- lateness: rank groups x seq columns per communicator ---- */

/* a 1-2-5 value of microseconds in the unit that keeps it short: "200 us", "5 ms", "1 s" */
static void fmt_us(char *b, size_t n, double us, const char *tail) {
  if (us >= 1e6)
    snprintf(b, n, "%g s%s", us / 1e6, tail);
  else if (us >= 1e3)
    snprintf(b, n, "%g ms%s", us / 1e3, tail);
  else
    snprintf(b, n, "%g us%s", us, tail);
}

/* the lateness heatmap's x axis: seqs on 1-2-5 steps at their place in the columns; below
 * them the job's time, also on 1-2-5 steps, placed between the starts of the columns it
 * falls in */
static void lateness_x_axis(FILE *o, const json_t *c, size_t nc, double L, double T, double PH, double cw) {
  const json_t *ct = json_object_get(c, "column_t_s");
  bool ok;
  double seq0 = html_jnum(c, "seq_first"), spc = html_jnum(c, "seq_per_column"), nseq;
  if (!(spc >= 1)) spc = 1;
  nseq = spc * (double)nc;
  double sstep = html_nice_step(nseq, 8);
  if (sstep < 1) sstep = 1;
#define SX(q) (L + cw * (((q)-seq0) / spc + 0.5 / spc))
  for (int i = 0; i <= 10; i++) { /* bounded: seqs so large that a step is lost in rounding */
    double q = (ceil(seq0 / sstep) + i) * sstep;
    if (!(q < seq0 + nseq)) break;
    char tb[32];
    html_fmt_tick(tb, sizeof tb, q, sstep);
    fprintf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%g\" y2=\"%g\"/><text class=\"seqtick\" x=\"%.1f\" y=\"%g\" "
               "text-anchor=\"middle\">%s</text>",
            SX(q), SX(q), T + PH, T + PH + 3, SX(q), T + PH + 14, tb);
  }
#undef SX
  double t_lo = INFINITY, t_hi = -INFINITY;
  for (size_t k = 0; k < nc; k++) {
    double t = html_jat(ct, k, &ok);
    if (!ok) continue;
    if (t < t_lo) t_lo = t;
    if (t > t_hi) t_hi = t;
  }
  if (t_hi > t_lo) {
    double tstep = html_nice_step(t_hi - t_lo, 6);
    for (int i = 0; i <= 10; i++) {
      double t = (ceil(t_lo / tstep - 1e-9) + i) * tstep;
      if (!(t <= t_hi)) break;
      /* the columns whose starts hold t: the tick goes between their centres */
      for (size_t k = 0; k + 1 < nc; k++) {
        bool ok2;
        double a = html_jat(ct, k, &ok), b = html_jat(ct, k + 1, &ok2);
        if (!ok || !ok2 || !(a <= t && t <= b) || !(b > a)) continue;
        double x = L + cw * ((double)k + 0.5 + (t - a) / (b - a));
        char tb[32];
        html_fmt_tick(tb, sizeof tb, t, tstep);
        fprintf(o, "<text class=\"timetick\" x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%s s</text>", x, T + PH + 28, tb);
        break;
      }
    }
  }
}

/* one communicator's heatmap: rank groups by instance columns, the flagged stragglers
 * outlined, and the table of each group's latest rank */
static void lateness_comm(FILE *o, size_t ci, const json_t *c) {
  const json_t *late = json_object_get(c, "lateness_us"), *worst = json_object_get(c, "worst_rank");
  const json_t *cseq = json_object_get(c, "column_seq");
  size_t ng = json_array_size(late), nc = json_array_size(cseq);
  double rpg = html_jnum(c, "ranks_per_group"), csize = html_jnum(c, "comm_size"), max = 0;
  bool ok;
  for (size_t g = 0; g < ng; g++)
    for (size_t k = 0; k < nc; k++) {
      double v = html_jat(json_array_get(late, g), k, &ok);
      if (ok && v > max) max = v;
    }
  if (!nc || !ng) return;
  /* the colour scale: log from a 1-2-5 value three decades under the largest lateness
   * (and everything below it, 0 included) to the 1-2-5 value at or above it; a log scale
   * has no 0 to start from */
  double lmax = html_nice_ceil(max > 0 ? max : 1), lmin = html_nice_floor(lmax / 1000);
  const double L = 90, T = 10, PW = 600;
  double cw = PW / (double)nc, rh = ng <= 16 ? 16 : ng <= 32 ? 8
                                                             : 5,
         PH = rh * (double)ng;
  double W = L + PW + 170, H = T + PH + 80;
  char id[64], title[160], desc[400];
  snprintf(id, sizeof id, "late-%zu", ci);
  snprintf(title, sizeof title, "Arrival lateness (microseconds) per rank group and instance, communicator %s (%.0f ranks)",
           html_jstr(c, "comm"), csize);
  snprintf(desc, sizeof desc, "%zu rank groups of %.0f ranks by %zu columns of %.0f instances from seq %.0f; largest "
                              "lateness %.1f us; %zu flagged stragglers outlined. The table below lists each group's worst rank.",
           ng, rpg, nc, html_jnum(c, "seq_per_column"), html_jnum(c, "seq_first"), max,
           json_array_size(json_object_get(c, "flagged")));
  fprintf(o, "<figure data-comm=\"%s\">", html_jstr(c, "comm"));
  html_svg_open(o, id, W, H, title, desc);
  fprintf(o, "<g class=\"hm\" transform=\"translate(%g %g) scale(%g %g)\"><rect class=\"bg\" x=\"0\" y=\"0\" "
             "style=\"width:%zupx;height:%zupx\"/>",
          L, T, cw, rh, nc, ng);
  for (size_t g = 0; g < ng; g++)
    for (size_t k = 0; k < nc; k++) {
      double v = html_jat(json_array_get(late, g), k, &ok);
      if (ok) fprintf(o, "<rect x=\"%zu\" y=\"%zu\" fill=\"%s\"/>", k, g, viridis[html_level_log(v, lmin, lmax)]);
    }
  size_t fi;
  const json_t *f;
  json_array_foreach(json_object_get(c, "flagged"), fi, f) {
    fprintf(o, "<rect class=\"flag\" vector-effect=\"non-scaling-stroke\" x=\"%.0f\" y=\"%.0f\" "
               "data-flagged-rank=\"%.0f\" data-comm=\"%s\" data-seq=\"%.0f\" data-kind=\"",
            html_jnum(f, "column"), html_jnum(f, "group"), html_jnum(f, "rank"), html_jstr(c, "comm"), html_jnum(f, "seq"));
    html_esc(o, html_jstr(f, "kind"));
    fprintf(o, "\"><title>rank %.0f flagged as a straggler at seq %.0f</title></rect>", html_jnum(f, "rank"),
            html_jnum(f, "seq"));
    fprintf(o, "<rect class=\"flag2\" vector-effect=\"non-scaling-stroke\" x=\"%.0f\" y=\"%.0f\"/>", html_jnum(f, "column"),
            html_jnum(f, "group"));
  }
  fputs("</g><g class=\"axis\">", o);
  json_array_foreach(json_object_get(c, "flagged"), fi, f)
      fprintf(o, "<text x=\"%g\" y=\"%g\" class=\"flagtext\">&#9664; rank %.0f flagged (seq %.0f)</text>", L + PW + 6,
              T + rh * (html_jnum(f, "group") + 0.5) + 4, html_jnum(f, "rank"), html_jnum(f, "seq"));
  size_t gstep = ng <= 16 ? 1 : ng / 8;
  for (size_t g = 0; g < ng; g += gstep) {
    double lo = (double)g * rpg, hi = lo + rpg - 1;
    if (hi > csize - 1) hi = csize - 1;
    fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">", L - 6, T + rh * ((double)g + 0.5) + 4);
    if (rpg > 1)
      fprintf(o, "%.0f-%.0f", lo, hi);
    else
      fprintf(o, "%.0f", lo);
    fputs("</text>", o);
  }
  lateness_x_axis(o, c, nc, L, T, PH, cw);
  fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">instance (seq) and its start (s since the job's first "
             "collective)</text>",
          L + PW / 2, T + PH + 46);
  fprintf(o, "<text transform=\"translate(12 %g) rotate(-90)\" text-anchor=\"middle\">comm rank</text></g>",
          T + PH / 2);
  char lo_s[48], hi_s[48];
  fmt_us(lo_s, sizeof lo_s, lmin, " or less");
  fmt_us(hi_s, sizeof hi_s, lmax, "");
  html_legend(o, viridis, L + PW + 6, T + PH + 40 > H - 30 ? H - 30 : T + PH + 40, lo_s, hi_s, "lateness (log scale)");
  fputs("</svg><figcaption>communicator ", o);
  html_esc(o, html_jstr(c, "comm"));
  fprintf(o, ", %.0f ranks, %.0f instances</figcaption>", csize, html_jnum(c, "instances"));
  fputs("<details><summary>Table: the latest rank of each group</summary><table><tr><th>comm ranks</th>"
        "<th>largest lateness (us)</th><th>rank</th><th>in column from seq</th></tr>",
        o);
  for (size_t g = 0; g < ng; g++) {
    double best = -1, br = -1, bs = 0;
    for (size_t k = 0; k < nc; k++) {
      double v = html_jat(json_array_get(late, g), k, &ok);
      if (ok && v > best) best = v, br = html_jat(json_array_get(worst, g), k, &ok), bs = html_jat(cseq, k, &ok);
    }
    double lo = (double)g * rpg;
    if (best < 0)
      fprintf(o, "<tr><td>%.0f+</td><td>-</td><td>-</td><td>-</td></tr>", lo);
    else
      fprintf(o, "<tr><td>%.0f+</td><td>%.1f</td><td>%.0f</td><td>%.0f</td></tr>", lo, best, br, bs);
  }
  fputs("</table></details></figure>", o);
}

/* the stragglers section as a list */
static void stragglers_table(FILE *o, const json_t *doc) {
  size_t ci;
  const json_t *c;
  const json_t *st = json_object_get(doc, "stragglers");
  fprintf(o, "<h3>Stragglers flagged: %zu</h3>", json_array_size(st));
  if (json_array_size(st)) {
    fputs("<table data-table=\"stragglers\"><tr><th>rank</th><th>host</th><th>comm</th><th>kind</th><th>first flagged "
          "at seq</th><th>share last</th><th>lateness (us)</th></tr>",
          o);
    json_array_foreach((json_t *)st, ci, c) {
      if (ci == MAX_TABLE_ROWS) break;
      fprintf(o, "<tr><td>%.0f</td><td class=\"l\">", html_jnum(c, "rank"));
      html_esc(o, html_jstr(c, "host"));
      fprintf(o, "</td><td class=\"l\">%s</td><td class=\"l\">", html_jstr(c, "comm"));
      html_esc(o, html_jstr(c, "kind"));
      fprintf(o, "</td><td>%.0f</td><td>%.2f</td><td>%.1f</td></tr>", html_jnum(c, "first_flag_seq"), html_jnum(c, "share_last"),
              html_jnum(c, "lateness_us"));
    }
    fputs("</table>", o);
  }
}

void html_chart_lateness(FILE *o, const json_t *doc) {
  const json_t *comms = json_object_get(json_object_get(doc, "lateness"), "comms");
  fputs("<section id=\"lateness\" data-chart=\"lateness\"><h2>Arrival lateness per rank over time</h2>"
        "<p>Each cell: the largest lateness (the instance's median duration minus the rank's own: how long the others "
        "waited for it) of the ranks in that row group over the instances in that column. Outlined: a straggler, at "
        "the instance where it was first flagged.</p>",
        o);
  size_t ci;
  const json_t *c;
  if (!json_array_size(comms)) fputs("<p>No collective instances with two timed ranks: nothing to draw.</p>", o);
  json_array_foreach((json_t *)comms, ci, c) lateness_comm(o, ci, c);
  stragglers_table(o, doc);
  fputs("</section>\n", o);
}
