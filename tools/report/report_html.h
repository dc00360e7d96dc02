/* tools/report/report_html.h: `collscope report --html`: one self-contained HTML page (inline SVG and
 * CSS, no script, a Content-Security-Policy that forbids every fetch) drawn from the very JSON
 * document `report --json` prints, so the page can never disagree with the text and JSON
 * reports (reference: docs/html-report.md). */
#ifndef COLLSCOPE_TOOLS_REPORT_HTML_H
#define COLLSCOPE_TOOLS_REPORT_HTML_H
#include <stdio.h>

struct json_t;
/* Writes the page of report document doc to o. Returns 0, 1 on a write error. */
int report_html_write(const struct json_t *doc, FILE *o);

#endif
