/* tools/report_html.c: the report's HTML page (report_html.h; reference docs/html-report.md).
 *
 * Every figure comes from the report's JSON document: the notes from "summary", the bus
 * bandwidth lines from "ops" (p50) with the band of "busbw_pct" (p10-p90), the lateness grids
 * from "lateness" with "stragglers" marked, the link matrix from "links", where ranks got to
 * from "progress" and "hangs", the SDC timeline from "sdc_timeline" and "sdc". Every string
 * that came from a dump (host, op, dtype names) is escaped for HTML and SVG. Charts carry a
 * <title>, a <desc>, an aria-label and a table of the same figures; marks a test or a reader
 * can find carry data-* attributes (data-chart, data-flagged-rank, data-slow-pair). The size
 * is bounded by the JSON sections' own bounds (report_views.h) and the caps below. */
#include "report_html.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xalloc.h"

#define MAX_SERIES 8 /* bus bandwidth lines drawn (every row is in the table) */
#define MAX_HOSTS 32 /* hosts of the link matrix */
#define MAX_TABLE_ROWS 256
#define NLEVELS 16

/* viridis and cividis, 16 steps each: sequential, readable in grey and by colour-blind eyes */
static const char *const viridis[NLEVELS] = {"#440154", "#481a6c", "#472f7d", "#414487", "#39568c", "#31688e",
                                             "#2a788e", "#23888e", "#1f988b", "#22a884", "#35b779", "#54c568",
                                             "#7ad151", "#a5db36", "#d2e21b", "#fde725"};
static const char *const cividis[NLEVELS] = {"#00224e", "#0a2d67", "#28386d", "#3d446e", "#4f506f", "#5f5c70",
                                             "#6e6873", "#7c7478", "#8a8279", "#9a8e76", "#ab9b71", "#bca96a",
                                             "#cdb761", "#dfc656", "#f1d449", "#fee838"};
/* series colours (Okabe-Ito) */
static const char *const series[MAX_SERIES] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                               "#56b4e9", "#d55e00", "#f0e442", "#999999"};

/* ---------- small helpers ---------- */

/* s escaped for HTML text and attribute values; control characters become '?' */
static void esc_all(FILE *o, const char *s) {
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
static void esc_short(FILE *o, const char *s, size_t n) {
  size_t l = s ? strlen(s) : 0;
  if (l <= n) {
    esc_all(o, s);
    return;
  }
  while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
  char *t = xcalloc(n + 1, 1);
  memcpy(t, s, n);
  esc_all(o, t);
  fputs("...", o);
  free(t);
}
/* a name from a dump: escaped, at most MAX_NAME bytes of it (the page's size stays bounded
 * whatever the names' length); the matrix cells, drawn up to MAX_HOSTS^2 times, half that */
#define MAX_NAME 128
static void esc(FILE *o, const char *s) { esc_short(o, s, MAX_NAME); }
static const char *jstr(const json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}
static bool jhas(const json_t *o, const char *k) {
  const json_t *v = json_object_get(o, k);
  return json_is_number(v);
}
static double jnum(const json_t *o, const char *k) {
  const json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : 0;
}
static double jat(const json_t *a, size_t i, bool *ok) {
  const json_t *v = json_array_get(a, i);
  *ok = json_is_number(v);
  return *ok ? json_number_value(v) : 0;
}
static int level(double v, double max) {
  if (!(max > 0) || !(v > 0)) return 0;
  int k = (int)(v / max * (NLEVELS - 1) + 0.5);
  return k < 0 ? 0 : k >= NLEVELS ? NLEVELS - 1
                                  : k;
}
/* the same on a log scale (lateness: one late start must not flatten every other cell) */
static int level_log(double v, double max) {
  if (!(max > 0) || !(v > 0)) return 0;
  return level(log1p(v), log1p(max));
}
static void fmt_bytes(char *b, size_t n, double v) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int k = 0;
  while (v >= 1024 && k < 4) v /= 1024, k++;
  snprintf(b, n, "%g %s", round(v * 10) / 10, u[k]);
}
/* a colour legend: NLEVELS swatches from lo to hi */
static void legend(FILE *o, const char *const *scale, double x, double y, const char *lo, const char *hi,
                   const char *what) {
  fprintf(o, "<g class=\"legend\" aria-hidden=\"true\"><text x=\"%g\" y=\"%g\">", x, y - 4);
  esc(o, what);
  fputs("</text>", o);
  for (int k = 0; k < NLEVELS; k++)
    fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"10\" height=\"10\" fill=\"%s\"/>", x + 10 * k, y, scale[k]);
  fprintf(o, "<text x=\"%g\" y=\"%g\">%s</text><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text></g>", x, y + 22, lo,
          x + 10 * NLEVELS, y + 22, hi);
}
/* the opening of a chart: <svg> with its role, label, <title> and <desc> */
static void svg_open(FILE *o, const char *id, double w, double h, const char *title, const char *desc) {
  fprintf(o, "<svg id=\"%s\" role=\"img\" aria-labelledby=\"%s-t %s-d\" viewBox=\"0 0 %g %g\" width=\"%g\" height=\"%g\">",
          id, id, id, w, h, w, h);
  fprintf(o, "<title id=\"%s-t\">", id);
  esc(o, title);
  fprintf(o, "</title><desc id=\"%s-d\">", id);
  esc(o, desc);
  fputs("</desc>", o);
}

/* ---------- page ---------- */

static const char *css =
    ":root{color-scheme:light dark;--bg:#fff;--fg:#1a1a1a;--muted:#666;--grid:#ddd;--empty:#eee;--warn:#b35900;"
    "--mark:#000}\n"
    "@media (prefers-color-scheme:dark){:root{--bg:#121212;--fg:#e8e8e8;--muted:#aaa;--grid:#444;--empty:#262626;"
    "--warn:#ffb366;--mark:#fff}}\n"
    "body{background:var(--bg);color:var(--fg);font:14px/1.4 system-ui,sans-serif;margin:1.5em;max-width:1100px}\n"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid var(--grid)}\n"
    "svg{display:block;max-width:100%;height:auto}svg text{fill:var(--fg);font-size:11px}\n"
    ".axis line,.axis path{stroke:var(--muted)}.gridl{stroke:var(--grid)}\n"
    ".hm rect{width:1px;height:1px}.hm .bg{fill:var(--empty)}\n"
    ".flag{fill:none;stroke:#000;stroke-width:4}.flag2{fill:none;stroke:#fff;stroke-width:1.5}\n"
    ".slow{fill:none;stroke:var(--mark);stroke-width:3}\n"
    ".bar{fill:#5f5c70}.barmax{fill:none;stroke:var(--muted)}.hangl{stroke:#d55e00;stroke-width:2;stroke-dasharray:4 3}\n"
    ".find{fill:#d55e00}.checked{fill:#6e6873}\n"
    ".warn{color:var(--warn);font-weight:600}.ok{color:var(--muted)}\n"
    "table{border-collapse:collapse;font-size:12px;margin:.5em 0}td,th{border:1px solid var(--grid);padding:2px 6px;"
    "text-align:right}th{text-align:center}td.l{text-align:left}\n"
    "details{margin:.3em 0 1em}summary{cursor:pointer;color:var(--muted)}\n";

static void notes(FILE *o, const json_t *doc) {
  const json_t *s = json_object_get(doc, "summary");
  fputs("<section id=\"notes\" data-chart=\"notes\" aria-label=\"notes on the data\"><h2>Notes: what the data is "
        "missing and where the times come from</h2><ul>",
        o);
  struct {
    const char *key, *what;
  } loss[] = {
      {"drops", "records dropped by the shim (ring full)"},
      {"lost", "records the footers count but the files do not hold"},
      {"lost_files", "files with lost records"},
      {"timing_lost", "records whose timing was lost"},
      {"truncated_lines", "truncated lines"},
      {"malformed_lines", "malformed lines"},
      {"unknown_types", "records of unknown type"},
      {"files_without_footer", "files without a footer (process killed?)"},
      {"other_job_files", "files of other jobs left out"},
      {"errors", "failed calls"},
  };
  size_t bad = 0;
  for (size_t i = 0; i < sizeof loss / sizeof loss[0]; i++) {
    double v = jnum(s, loss[i].key);
    if (v <= 0) continue;
    bad++;
    fprintf(o, "<li class=\"warn\" data-note=\"%s\">%.0f %s</li>", loss[i].key, v, loss[i].what);
  }
  if (!bad) fputs("<li class=\"ok\" data-note=\"complete\">no records dropped or lost</li>", o);
  fprintf(o, "<li data-note=\"timing\">timing sources: %.0f op records timed (%.0f CUDA events, %.0f NCCL profiler, %.0f "
             "host clock), %.0f captured in graphs, %.0f host-timed, %.0f unknown</li>",
          jnum(s, "timed"), jnum(s, "timed_gpu_event"), jnum(s, "timed_profiler"), jnum(s, "timed_host_span"),
          jnum(s, "captured"), jnum(s, "host_timed"), jnum(s, "unknown_timing"));
  const json_t *sr = json_object_get(s, "sdc_ranks");
  double off = 0;
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)sr, k, v) if (strcmp(k, "ready") && strcmp(k, "unused")) off += json_is_number(v) ? json_number_value(v) : 0;
  if (off > 0) fprintf(o, "<li class=\"warn\" data-note=\"sdc_off\">SDC checks were off on %.0f ranks</li>", off);
  const char *secs[] = {"lateness", "progress"};
  for (int i = 0; i < 2; i++) {
    double om = jnum(json_object_get(doc, secs[i]), "comms_omitted");
    if (om > 0)
      fprintf(o, "<li data-note=\"%s_omitted\">%s: %.0f more communicators not drawn (see report --json)</li>", secs[i],
              secs[i], om);
  }
  fputs("</ul></section>\n", o);
}

/* ---- bus bandwidth against message size ---- */

static const json_t *pct_row(const json_t *pct, const char *op, double csize, double bucket_lo) {
  size_t i;
  const json_t *r;
  json_array_foreach((json_t *)pct, i, r) if (!strcmp(jstr(r, "op"), op) && jnum(r, "comm_size") == csize && jnum(r, "bucket_lo") == bucket_lo) return r;
  return NULL;
}

static void chart_busbw(FILE *o, const json_t *doc) {
  const json_t *ops = json_object_get(doc, "ops"), *pct = json_object_get(doc, "busbw_pct");
  fputs("<section id=\"busbw\" data-chart=\"busbw\"><h2>Bus bandwidth against message size</h2>", o);
  /* series: (op, comm_size) with a bus bandwidth, in the ops section's order */
  struct ser {
    const char *op;
    double csize;
  } sv[MAX_SERIES];
  size_t ns = 0, more = 0, i;
  double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
  const json_t *r;
  json_array_foreach((json_t *)ops, i, r) {
    if (!jhas(r, "busbw_gbs") || jnum(r, "bytes") <= 0) continue;
    const char *op = jstr(r, "op");
    double cs = jnum(r, "comm_size");
    size_t k = 0;
    while (k < ns && !(sv[k].csize == cs && !strcmp(sv[k].op, op))) k++;
    if (k == ns) {
      if (ns == MAX_SERIES) {
        more++;
        continue;
      }
      sv[ns++] = (struct ser){op, cs};
    }
    double x = log2(jnum(r, "bytes")), y = jnum(r, "busbw_gbs");
    const json_t *p = pct_row(pct, op, cs, jnum(r, "bucket_lo"));
    if (p && jnum(p, "busbw_p90") > y) y = jnum(p, "busbw_p90");
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
  ymax = ymax > 0 ? ymax * 1.08 : 1;
  const double W = 780, H = 360, L = 84, T = 16, PW = 520, PH = 280;
  svg_open(o, "busbw-svg", W, H, "Bus bandwidth (GB/s) against message size (bytes), one line per op and rank count",
           "Lines: the report's busbw at the p50 time of each size bucket; bands: p10 to p90 of the per-record bus "
           "bandwidth. The table below holds the same figures.");
#define BX(v) (L + ((v)-xmin) / (xmax - xmin) * PW)
#define BY(v) (T + PH - (v) / ymax * PH)
  fputs("<g class=\"axis\">", o);
  for (int k = 0; k <= 5; k++) {
    double yv = ymax * k / 5;
    fprintf(o, "<line class=\"gridl\" x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.3g</text>",
            L, L + PW, BY(yv), BY(yv), L - 6, BY(yv) + 4, yv);
  }
  int step = (int)ceil((xmax - xmin) / 10);
  for (double x = xmin; x <= xmax; x += step) {
    char b[32];
    fmt_bytes(b, sizeof b, exp2(x));
    fprintf(o, "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/><text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>",
            BX(x), BX(x), T + PH, T + PH + 5, BX(x), T + PH + 18, b);
  }
  fprintf(o, "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/><line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/>", L, L + PW,
          T + PH, T + PH, L, L, T, T + PH);
  fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">message size (bytes, log scale)</text>", L + PW / 2, H - 20);
  fprintf(o, "<text transform=\"translate(14 %g) rotate(-90)\" text-anchor=\"middle\">bus bandwidth (GB/s)</text></g>",
          T + PH / 2);
  for (size_t s = 0; s < ns; s++) {
    /* band: p90 left to right, p10 back; line: the ops section's busbw */
    double bx[128], lo[128], hi[128], ly[128];
    size_t nb = 0;
    json_array_foreach((json_t *)ops, i, r) {
      if (nb == 128 || !jhas(r, "busbw_gbs") || jnum(r, "bytes") <= 0 || jnum(r, "comm_size") != sv[s].csize ||
          strcmp(jstr(r, "op"), sv[s].op))
        continue;
      const json_t *p = pct_row(pct, sv[s].op, sv[s].csize, jnum(r, "bucket_lo"));
      bx[nb] = log2(jnum(r, "bytes"));
      ly[nb] = jnum(r, "busbw_gbs");
      lo[nb] = p ? jnum(p, "busbw_p10") : ly[nb];
      hi[nb] = p ? jnum(p, "busbw_p90") : ly[nb];
      nb++;
    }
    fprintf(o, "<g data-series=\"%zu\" data-op=\"", s);
    esc(o, sv[s].op);
    fprintf(o, "\" data-comm-size=\"%.0f\"><polygon fill=\"%s\" fill-opacity=\"0.22\" points=\"", sv[s].csize, series[s]);
    for (size_t k = 0; k < nb; k++) fprintf(o, "%.1f,%.1f ", BX(bx[k]), BY(hi[k]));
    for (size_t k = nb; k-- > 0;) fprintf(o, "%.1f,%.1f ", BX(bx[k]), BY(lo[k]));
    fprintf(o, "\"/><polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", series[s]);
    for (size_t k = 0; k < nb; k++) fprintf(o, "%.1f,%.1f ", BX(bx[k]), BY(ly[k]));
    fputs("\"/>", o);
    for (size_t k = 0; k < nb; k++) {
      char b[32];
      fmt_bytes(b, sizeof b, exp2(bx[k]));
      fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", BX(bx[k]), BY(ly[k]), series[s]);
      esc(o, sv[s].op);
      fprintf(o, " %.0f ranks, %s: busbw p50 %.3g GB/s (p10 %.3g, p90 %.3g)</title></circle>", sv[s].csize, b, ly[k],
              lo[k], hi[k]);
    }
    /* legend entry, with a dash pattern so the lines differ without colour */
    fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"14\" height=\"10\" fill=\"%s\"/><text x=\"%g\" y=\"%g\">", L + PW + 20,
            T + 8 + 18 * (double)s, series[s], L + PW + 40, T + 17 + 18 * (double)s);
    esc_short(o, sv[s].op, 24);
    fprintf(o, " (%.0f ranks)</text></g>", sv[s].csize);
  }
#undef BX
#undef BY
  fputs("</svg>", o);
  if (more) fprintf(o, "<p>%zu more rows of other ops or rank counts are in the table only.</p>", more);
  fputs("<details><summary>Table: bus bandwidth per op, ranks and size</summary><table><tr><th>op</th><th>ranks</th>"
        "<th>size (B)</th><th>busbw p50 time (GB/s)</th><th>p10</th><th>p50</th><th>p90</th><th>timed</th></tr>",
        o);
  size_t rows = 0;
  json_array_foreach((json_t *)ops, i, r) {
    if (!jhas(r, "busbw_gbs") || rows++ == MAX_TABLE_ROWS) continue;
    const json_t *p = pct_row(pct, jstr(r, "op"), jnum(r, "comm_size"), jnum(r, "bucket_lo"));
    fputs("<tr><td class=\"l\">", o);
    esc(o, jstr(r, "op"));
    fprintf(o, "</td><td>%.0f</td><td>%.0f</td><td>%.3f</td>", jnum(r, "comm_size"), jnum(r, "bytes"),
            jnum(r, "busbw_gbs"));
    if (p)
      fprintf(o, "<td>%.3f</td><td>%.3f</td><td>%.3f</td>", jnum(p, "busbw_p10"), jnum(p, "busbw_p50"), jnum(p, "busbw_p90"));
    else
      fputs("<td>-</td><td>-</td><td>-</td>", o);
    fprintf(o, "<td>%.0f</td></tr>", jnum(r, "timed"));
  }
  fputs("</table></details></section>\n", o);
}

/* ---- lateness: rank groups x seq columns per communicator ---- */

static void chart_lateness(FILE *o, const json_t *doc) {
  const json_t *comms = json_object_get(json_object_get(doc, "lateness"), "comms");
  fputs("<section id=\"lateness\" data-chart=\"lateness\"><h2>Arrival lateness per rank over time</h2>"
        "<p>Each cell: the largest lateness (the instance's median duration minus the rank's own: how long the others "
        "waited for it) of the ranks in that row group over the instances in that column. Outlined: a straggler, at "
        "the instance where it was first flagged.</p>",
        o);
  size_t ci;
  const json_t *c;
  if (!json_array_size(comms)) fputs("<p>No collective instances with two timed ranks: nothing to draw.</p>", o);
  json_array_foreach((json_t *)comms, ci, c) {
    const json_t *late = json_object_get(c, "lateness_us"), *worst = json_object_get(c, "worst_rank");
    const json_t *cseq = json_object_get(c, "column_seq"), *ct = json_object_get(c, "column_t_s");
    size_t ng = json_array_size(late), nc = json_array_size(cseq);
    double rpg = jnum(c, "ranks_per_group"), csize = jnum(c, "comm_size"), max = 0;
    bool ok;
    for (size_t g = 0; g < ng; g++)
      for (size_t k = 0; k < nc; k++) {
        double v = jat(json_array_get(late, g), k, &ok);
        if (ok && v > max) max = v;
      }
    if (!nc || !ng) continue;
    const double L = 90, T = 10, PW = 600;
    double cw = PW / (double)nc, rh = ng <= 16 ? 16 : ng <= 32 ? 8
                                                               : 5,
           PH = rh * (double)ng;
    double W = L + PW + 170, H = T + PH + 80;
    char id[64], title[160], desc[400];
    snprintf(id, sizeof id, "late-%zu", ci);
    snprintf(title, sizeof title, "Arrival lateness (microseconds) per rank group and instance, communicator %s (%.0f ranks)",
             jstr(c, "comm"), csize);
    snprintf(desc, sizeof desc, "%zu rank groups of %.0f ranks by %zu columns of %.0f instances from seq %.0f; largest "
                                "lateness %.1f us; %zu flagged stragglers outlined. The table below lists each group's worst rank.",
             ng, rpg, nc, jnum(c, "seq_per_column"), jnum(c, "seq_first"), max,
             json_array_size(json_object_get(c, "flagged")));
    fprintf(o, "<figure data-comm=\"%s\">", jstr(c, "comm"));
    svg_open(o, id, W, H, title, desc);
    fprintf(o, "<g class=\"hm\" transform=\"translate(%g %g) scale(%g %g)\"><rect class=\"bg\" x=\"0\" y=\"0\" "
               "style=\"width:%zupx;height:%zupx\"/>",
            L, T, cw, rh, nc, ng);
    for (size_t g = 0; g < ng; g++)
      for (size_t k = 0; k < nc; k++) {
        double v = jat(json_array_get(late, g), k, &ok);
        if (ok) fprintf(o, "<rect x=\"%zu\" y=\"%zu\" fill=\"%s\"/>", k, g, viridis[level_log(v, max)]);
      }
    size_t fi;
    const json_t *f;
    json_array_foreach(json_object_get(c, "flagged"), fi, f) {
      fprintf(o, "<rect class=\"flag\" vector-effect=\"non-scaling-stroke\" x=\"%.0f\" y=\"%.0f\" "
                 "data-flagged-rank=\"%.0f\" data-comm=\"%s\" data-seq=\"%.0f\" data-kind=\"",
              jnum(f, "column"), jnum(f, "group"), jnum(f, "rank"), jstr(c, "comm"), jnum(f, "seq"));
      esc(o, jstr(f, "kind"));
      fprintf(o, "\"><title>rank %.0f flagged as a straggler at seq %.0f</title></rect>", jnum(f, "rank"),
              jnum(f, "seq"));
      fprintf(o, "<rect class=\"flag2\" vector-effect=\"non-scaling-stroke\" x=\"%.0f\" y=\"%.0f\"/>", jnum(f, "column"),
              jnum(f, "group"));
    }
    fputs("</g><g class=\"axis\">", o);
    json_array_foreach(json_object_get(c, "flagged"), fi, f)
        fprintf(o, "<text x=\"%g\" y=\"%g\" class=\"flagtext\">&#9664; rank %.0f flagged (seq %.0f)</text>", L + PW + 6,
                T + rh * (jnum(f, "group") + 0.5) + 4, jnum(f, "rank"), jnum(f, "seq"));
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
    size_t kstep = nc <= 8 ? 1 : nc / 8;
    for (size_t k = 0; k < nc; k += kstep) {
      double t = jat(ct, k, &ok);
      fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%.0f</text>", L + cw * ((double)k + 0.5), T + PH + 14,
              jat(cseq, k, &ok));
      if (json_is_number(json_array_get(ct, k)))
        fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%.3g s</text>", L + cw * ((double)k + 0.5),
                T + PH + 28, t);
    }
    fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">instance (seq, first of column) and its start (s since "
               "the job's first collective)</text>",
            L + PW / 2, T + PH + 46);
    fprintf(o, "<text transform=\"translate(12 %g) rotate(-90)\" text-anchor=\"middle\">comm rank</text></g>",
            T + PH / 2);
    char hi[32];
    snprintf(hi, sizeof hi, "%.1f us", max);
    legend(o, viridis, L + PW + 6, T + PH + 40 > H - 30 ? H - 30 : T + PH + 40, "0", hi, "lateness (log scale)");
    fputs("</svg><figcaption>communicator ", o);
    esc(o, jstr(c, "comm"));
    fprintf(o, ", %.0f ranks, %.0f instances</figcaption>", csize, jnum(c, "instances"));
    fputs("<details><summary>Table: the latest rank of each group</summary><table><tr><th>comm ranks</th>"
          "<th>largest lateness (us)</th><th>rank</th><th>in column from seq</th></tr>",
          o);
    for (size_t g = 0; g < ng; g++) {
      double best = -1, br = -1, bs = 0;
      for (size_t k = 0; k < nc; k++) {
        double v = jat(json_array_get(late, g), k, &ok);
        if (ok && v > best) best = v, br = jat(json_array_get(worst, g), k, &ok), bs = jat(cseq, k, &ok);
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
  const json_t *st = json_object_get(doc, "stragglers");
  fprintf(o, "<h3>Stragglers flagged: %zu</h3>", json_array_size(st));
  if (json_array_size(st)) {
    fputs("<table data-table=\"stragglers\"><tr><th>rank</th><th>host</th><th>comm</th><th>kind</th><th>first flagged "
          "at seq</th><th>share last</th><th>lateness (us)</th></tr>",
          o);
    json_array_foreach((json_t *)st, ci, c) {
      if (ci == MAX_TABLE_ROWS) break;
      fprintf(o, "<tr><td>%.0f</td><td class=\"l\">", jnum(c, "rank"));
      esc(o, jstr(c, "host"));
      fprintf(o, "</td><td class=\"l\">%s</td><td class=\"l\">", jstr(c, "comm"));
      esc(o, jstr(c, "kind"));
      fprintf(o, "</td><td>%.0f</td><td>%.2f</td><td>%.1f</td></tr>", jnum(c, "first_flag_seq"), jnum(c, "share_last"),
              jnum(c, "lateness_us"));
    }
    fputs("</table>", o);
  }
  fputs("</section>\n", o);
}

/* ---- links: host x host matrix ---- */

static int host_index(const char **hosts, size_t n, const char *h) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(hosts[i], h)) return (int)i;
  return -1;
}

static void chart_links(FILE *o, const json_t *doc) {
  const json_t *links = json_object_get(doc, "links");
  fputs("<section id=\"links\" data-chart=\"links\"><h2>Link throughput between hosts (NCCL_NET)</h2>", o);
  const char *hosts[MAX_HOSTS];
  size_t nh = 0, omitted = 0, i;
  const json_t *r;
  double max = 0;
  for (int pass = 0; pass < 2; pass++) /* hosts of slow pairs first */
    json_array_foreach((json_t *)links, i, r) {
      if (json_is_true(json_object_get(r, "slow")) != (pass == 0)) continue;
      const char *ends[2] = {jstr(r, "src_host"), jstr(r, "dst_host")};
      for (int e = 0; e < 2; e++) {
        if (!*ends[e] || host_index(hosts, nh, ends[e]) >= 0) continue;
        if (nh < MAX_HOSTS)
          hosts[nh++] = ends[e];
        else
          omitted++;
      }
      if (jnum(r, "gbps_p50") > max) max = jnum(r, "gbps_p50");
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
  svg_open(o, "links-svg", W, H, "Link throughput (Gbit/s) from host (row) to host (column)", desc);
  fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" style=\"fill:var(--empty)\"/>", L, T, PW, PW);
  json_array_foreach((json_t *)links, i, r) {
    int a = host_index(hosts, nh, jstr(r, "src_host")), b = host_index(hosts, nh, jstr(r, "dst_host"));
    if (a < 0 || b < 0) continue;
    bool slow = json_is_true(json_object_get(r, "slow"));
    double x = L + cell * b, y = T + cell * a;
    fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"%s\" data-src-host=\"", x, y, cell, cell,
            cividis[level(jnum(r, "gbps_p50"), max)]);
    esc_short(o, jstr(r, "src_host"), MAX_NAME / 2);
    fputs("\" data-dst-host=\"", o);
    esc_short(o, jstr(r, "dst_host"), MAX_NAME / 2);
    fprintf(o, "\"%s><title>", slow ? " data-slow-pair=\"1\"" : "");
    esc_short(o, jstr(r, "src_host"), MAX_NAME / 2);
    fputs(" to ", o);
    esc_short(o, jstr(r, "dst_host"), MAX_NAME / 2);
    fprintf(o, ": %.3g Gbit/s median%s</title></rect>", jnum(r, "gbps_p50"), slow ? ", SLOW" : "");
    if (slow)
      fprintf(o, "<rect class=\"slow\" x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\"/><path class=\"slow\" "
                 "d=\"M%g %gL%g %gM%g %gL%g %g\"/>",
              x + 1.5, y + 1.5, cell - 3, cell - 3, x + 4, y + 4, x + cell - 4, y + cell - 4, x + cell - 4, y + 4, x + 4,
              y + cell - 4);
  }
  fputs("<g class=\"axis\">", o);
  for (size_t h = 0; h < nh; h++) {
    fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">", L - 6, T + cell * ((double)h + 0.5) + 4);
    esc_short(o, hosts[h], 18);
    fprintf(o, "</text><text transform=\"translate(%g %g) rotate(45)\">", L + cell * ((double)h + 0.5), T + PW + 8);
    esc_short(o, hosts[h], 18);
    fputs("</text>", o);
  }
  fprintf(o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">receiving host</text>", L + PW / 2, H - 8);
  fprintf(o, "<text transform=\"translate(12 %g) rotate(-90)\" text-anchor=\"middle\">sending host</text></g>",
          T + PW / 2);
  char hi[32];
  snprintf(hi, sizeof hi, "%.3g Gbit/s", max);
  legend(o, cividis, L + PW + 20, T + 20, "0", hi, "median throughput");
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
      esc(o, jstr(r, "src_host"));
      fputs("</td><td class=\"l\">", o);
      esc(o, jstr(r, "dst_host"));
      fprintf(o, "</td><td>%.3f</td><td>%.3f</td><td>%.0f</td><td>%s</td></tr>", jnum(r, "gbps_p50"),
              jnum(r, "gbps_p10"), jnum(r, "bytes"), pass == 0 ? "SLOW" : "");
    }
  fputs("</table></details></section>\n", o);
}

/* ---- progress: the last seq each rank group reached ---- */

static void chart_progress(FILE *o, const json_t *doc) {
  const json_t *comms = json_object_get(json_object_get(doc, "progress"), "comms");
  const json_t *hangs = json_object_get(doc, "hangs");
  fprintf(o, "<section id=\"hangs\" data-chart=\"hangs\" data-hangs=\"%zu\"><h2>Where the ranks got to: last seq per "
             "rank, per communicator</h2><p>%zu hung communicator%s. Bars: the lowest last seq a rank of the group "
             "entered; the thin mark: the highest; dashed: the seq the job is stuck at.</p>",
          json_array_size(hangs), json_array_size(hangs), json_array_size(hangs) == 1 ? "" : "s");
  size_t ci;
  const json_t *c;
  json_array_foreach((json_t *)comms, ci, c) {
    const json_t *emin = json_object_get(c, "entered_min"), *emax = json_object_get(c, "entered_max");
    const json_t *er = json_object_get(c, "entered_min_rank"), *dmin = json_object_get(c, "done_min");
    size_t ng = json_array_size(emin);
    double rpg = jnum(c, "ranks_per_group"), lo = INFINITY, hi = -INFINITY;
    bool ok, hung = jhas(c, "hang_seq");
    for (size_t g = 0; g < ng; g++) {
      double a = jat(emin, g, &ok);
      if (ok && a < lo) lo = a;
      double b = jat(emax, g, &ok);
      if (ok && b > hi) hi = b;
    }
    if (!ng || lo > hi) continue;
    if (ci > 0 && !hung && lo == hi) { /* nothing to see: one line instead of a chart */
      fprintf(o, "<p data-comm=\"%s\">communicator %s (%.0f ranks): every rank entered seq %.0f last.</p>",
              jstr(c, "comm"), jstr(c, "comm"), jnum(c, "comm_size"), hi);
      continue;
    }
    if (hung && jnum(c, "hang_seq") > hi) hi = jnum(c, "hang_seq");
    double base = lo > 0 ? lo - 1 : 0, span = hi - base > 0 ? hi - base : 1;
    const double L = 70, T = 10, PH = 160, PW = 600;
    double bw = PW / (double)ng, W = L + PW + 20, H = T + PH + 60;
    char id[64], title[160], desc[300];
    snprintf(id, sizeof id, "prog-%zu", ci);
    snprintf(title, sizeof title, "Last seq entered per rank group, communicator %s (%.0f ranks)", jstr(c, "comm"),
             jnum(c, "comm_size"));
    snprintf(desc, sizeof desc, "%zu groups of %.0f ranks; seqs from %.0f to %.0f%s. The table below lists each "
                                "group's lowest rank.",
             ng, rpg, lo, hi, hung ? "; the communicator hangs" : "");
    fprintf(o, "<figure data-comm=\"%s\"%s>", jstr(c, "comm"), hung ? " data-hung=\"1\"" : "");
    svg_open(o, id, W, H, title, desc);
#define PY(v) (T + PH - ((v)-base) / span * PH)
    for (size_t g = 0; g < ng; g++) {
      double a = jat(emin, g, &ok);
      if (!ok) continue;
      double b = jat(emax, g, &ok), rk = jat(er, g, &ok);
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
              L, L + PW, PY(jnum(c, "hang_seq")), PY(jnum(c, "hang_seq")), jnum(c, "hang_seq"), jnum(c, "hang_seq"));
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
      double a = jat(emin, g, &ok);
      if (!ok) continue;
      fprintf(o, "<tr><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%.0f</td></tr>", (double)g * rpg, a,
              jat(er, g, &ok), jat(dmin, g, &ok), jat(emax, g, &ok));
    }
    fputs("</table></details></figure>", o);
  }
  fputs("</section>\n", o);
}

/* ---- SDC: checks and findings over time ---- */

static void chart_sdc(FILE *o, const json_t *doc) {
  const json_t *tl = json_object_get(doc, "sdc_timeline"), *b = json_object_get(tl, "buckets");
  const json_t *items = json_object_get(doc, "sdc"), *cnt = json_object_get(doc, "sdc_checks");
  fprintf(o, "<section id=\"sdc\" data-chart=\"sdc\" data-findings=\"%zu\"><h2>Silent data corruption checks over "
             "time</h2><p>%.0f collectives compared, %zu finding%s.</p>",
          json_array_size(items), jnum(cnt, "compared"), json_array_size(items), json_array_size(items) == 1 ? "" : "s");
  size_t nb = json_array_size(b), i;
  double cmax = 0, bs = jnum(tl, "bucket_s");
  const json_t *e;
  json_array_foreach((json_t *)b, i, e) if (jnum(e, "checked") > cmax) cmax = jnum(e, "checked");
  if (nb) {
    const double L = 64, T = 16, PW = 600, PH = 160;
    double bw = PW / (double)nb;
    svg_open(o, "sdc-svg", L + PW + 20, T + PH + 60, "SDC checks (collectives compared) and findings per time bucket",
             "Grey bars: collectives compared in each time bucket; orange triangles with a count: buckets with findings. "
             "The table below lists every finding.");
    json_array_foreach((json_t *)b, i, e) {
      double h = jnum(e, "checked") / (cmax > 0 ? cmax : 1) * PH, x = L + bw * (double)i;
      fprintf(o, "<rect class=\"checked\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>from %.3g s: %.0f "
                 "compared, %.0f findings</title></rect>",
              x + 0.5, T + PH - h, bw - 1, h, jnum(e, "t_s"), jnum(e, "checked"), jnum(e, "findings"));
      if (jnum(e, "findings") > 0)
        fprintf(o, "<path class=\"find\" data-findings=\"%.0f\" d=\"M%.1f %.1fl6 -10h-12z\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">%.0f</text>",
                jnum(e, "findings"), x + bw / 2, T + PH - h - 2, x + bw / 2, T + PH - h - 15, jnum(e, "findings"));
    }
    fprintf(o, "<g class=\"axis\"><line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\"/><line x1=\"%g\" x2=\"%g\" y1=\"%g\" "
               "y2=\"%g\"/><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.0f</text><text x=\"%g\" y=\"%g\" "
               "text-anchor=\"end\">0</text>",
            L, L + PW, T + PH, T + PH, L, L, T, T + PH, L - 4, T + 4, cmax, L - 4, T + PH);
    for (size_t k = 0; k < nb; k += nb / 6 ? nb / 6 : 1)
      fprintf(o, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%.3g</text>", L + bw * (double)k, T + PH + 14,
              jnum(json_array_get(b, k), "t_s"));
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
      fprintf(o, "<tr><td class=\"l\">%s</td><td>%.0f</td><td class=\"l\">", jstr(e, "comm"), jnum(e, "seq"));
      esc(o, jstr(e, "op"));
      fputs("</td><td class=\"l\">", o);
      esc(o, jstr(e, "datatype"));
      fputs("</td><td class=\"l\">", o);
      esc(o, jstr(e, "check"));
      fputs("</td><td>", o);
      if (jhas(e, "suspect_rank"))
        fprintf(o, "%.0f", jnum(e, "suspect_rank"));
      else
        fputs("-", o);
      fputs("</td><td class=\"l\">", o);
      esc(o, jstr(e, "host"));
      fputs("</td></tr>", o);
    }
    fputs("</table>", o);
  }
  fputs("</section>\n", o);
}

int report_html_write(const json_t *doc, FILE *o) {
  const json_t *s = json_object_get(doc, "summary");
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>collscope report: ",
        o);
  esc_all(o, jstr(doc, "dir"));
  fprintf(o, "</title>\n<style>\n%s</style></head>\n<body data-collscope-report=\"%.0f\">\n<header><h1>collscope "
             "report: ",
          css, jnum(doc, "schema"));
  esc_all(o, jstr(doc, "dir"));
  fputs("</h1><p>", o);
  if (*jstr(s, "job")) {
    fputs("job ", o);
    esc(o, jstr(s, "job"));
    fputs(" &middot; ", o);
  }
  if (*jstr(s, "op_filter")) {
    fputs("op ", o);
    esc(o, jstr(s, "op_filter"));
    fputs(" &middot; ", o);
  }
  fprintf(o, "%.0f ranks on %.0f hosts &middot; %.0f op records &middot; %.0f collective instances</p></header>\n",
          jnum(s, "ranks"), jnum(s, "hosts"), jnum(s, "ops"), jnum(s, "instances"));
  notes(o, doc);
  chart_busbw(o, doc);
  chart_lateness(o, doc);
  chart_links(o, doc);
  chart_progress(o, doc);
  chart_sdc(o, doc);
  fputs("<footer><p>Drawn by collscope from the document <code>collscope report --json</code> prints; figures and "
        "definitions: docs/html-report.md.</p></footer>\n</body></html>\n",
        o);
  return ferror(o) ? 1 : 0;
}
