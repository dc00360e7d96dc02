/* tools/report/report_html.c: the report's HTML page (report_html.h; reference docs/html-report.md).
 *
 * Every figure comes from the report's JSON document: the notes from "summary", the bus
 * bandwidth lines from "ops" (p50) with the band of "busbw_pct" (p10-p90), the lateness grids
 * from "lateness" with "stragglers" marked, the link matrix from "links", where ranks got to
 * from "progress" and "hangs", the SDC timeline from "sdc_timeline" and "sdc", the GPU health
 * rows from "health" (report_html_health.c). Every string
 * that came from a dump (host, op, dtype names) is escaped for HTML and SVG. Charts carry a
 * <title>, a <desc>, an aria-label and a table of the same figures; marks a test or a reader
 * can find carry data-* attributes (data-chart, data-flagged-rank, data-slow-pair). The size
 * is bounded by the JSON sections' own bounds (report_views.h) and the caps in
 * report_html_internal.h. This file owns the page, its style and the notes; the charts are in
 * report_html_charts.c and report_html_status.c, the helpers in report_html_util.c. */
#include "report_html_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xalloc.h"

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
      {"windows_suppressed", "flight-recorder windows refused by the rate limit"},
      {"gaps_lost", "ops without compute-gap figures (left out of the balance section)"},
      {"local_unkeyed", "collectives the local trigger could not key"},
      {"truncated_lines", "truncated lines"},
      {"malformed_lines", "malformed lines"},
      {"unknown_types", "records of unknown type"},
      {"files_without_footer", "files without a footer (process killed?)"},
      {"other_job_files", "files of other jobs left out"},
      {"errors", "failed calls"},
  };
  size_t bad = 0;
  for (size_t i = 0; i < sizeof loss / sizeof loss[0]; i++) {
    double v = html_jnum(s, loss[i].key);
    if (v <= 0) continue;
    bad++;
    fprintf(o, "<li class=\"warn\" data-note=\"%s\">%.0f %s</li>", loss[i].key, v, loss[i].what);
  }
  if (!bad) fputs("<li class=\"ok\" data-note=\"complete\">no records dropped or lost</li>", o);
  fprintf(o, "<li data-note=\"timing\">timing sources: %.0f op records timed (%.0f CUDA events, %.0f NCCL profiler, %.0f "
             "host clock), %.0f captured in graphs, %.0f host-timed, %.0f sampled out (counted, not timed), %.0f "
             "unknown</li>",
          html_jnum(s, "timed"), html_jnum(s, "timed_gpu_event"), html_jnum(s, "timed_profiler"), html_jnum(s, "timed_host_span"),
          html_jnum(s, "captured"), html_jnum(s, "host_timed"), html_jnum(s, "sampled_out"),
          html_jnum(s, "unknown_timing"));
  const json_t *sr = json_object_get(s, "sdc_ranks");
  double off = 0;
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)sr, k, v) if (strcmp(k, "ready") && strcmp(k, "unused")) off += json_is_number(v) ? json_number_value(v) : 0;
  if (off > 0) fprintf(o, "<li class=\"warn\" data-note=\"sdc_off\">SDC checks were off on %.0f ranks</li>", off);
  const char *secs[] = {"lateness", "progress"};
  for (int i = 0; i < 2; i++) {
    double om = html_jnum(json_object_get(doc, secs[i]), "comms_omitted");
    if (om > 0)
      fprintf(o, "<li data-note=\"%s_omitted\">%s: %.0f more communicators not drawn (see report --json)</li>", secs[i],
              secs[i], om);
  }
  fputs("</ul></section>\n", o);
}
int report_html_write(const json_t *doc, FILE *o) {
  const json_t *s = json_object_get(doc, "summary");
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>collscope report: ",
        o);
  html_esc_all(o, html_jstr(doc, "dir"));
  fprintf(o, "</title>\n<style>\n%s</style></head>\n<body data-collscope-report=\"%.0f\">\n<header><h1>collscope "
             "report: ",
          css, html_jnum(doc, "schema"));
  html_esc_all(o, html_jstr(doc, "dir"));
  fputs("</h1><p>", o);
  if (*html_jstr(s, "job")) {
    fputs("job ", o);
    html_esc(o, html_jstr(s, "job"));
    fputs(" &middot; ", o);
  }
  if (*html_jstr(s, "op_filter")) {
    fputs("op ", o);
    html_esc(o, html_jstr(s, "op_filter"));
    fputs(" &middot; ", o);
  }
  fprintf(o, "%.0f ranks on %.0f hosts &middot; %.0f op records &middot; %.0f collective instances</p></header>\n",
          html_jnum(s, "ranks"), html_jnum(s, "hosts"), html_jnum(s, "ops"), html_jnum(s, "instances"));
  notes(o, doc);
  html_chart_busbw(o, doc);
  html_chart_lateness(o, doc);
  html_chart_links(o, doc);
  html_chart_progress(o, doc);
  html_chart_sdc(o, doc);
  html_chart_health(o, doc);
  html_chart_balance(o, doc);
  html_chart_steps(o, doc);
  fputs("<footer><p>Drawn by collscope from the document <code>collscope report --json</code> prints; figures and "
        "definitions: docs/html-report.md.</p></footer>\n</body></html>\n",
        o);
  return ferror(o) ? 1 : 0;
}
