/* tools/report/section_views.c: the figures the HTML page draws (tools/report/report_views.c), as
 * JSON-only sections so that --json carries them too and the page can never disagree with
 * it: bus bandwidth percentiles per op and size, lateness per rank group over time, each
 * rank's last seq per communicator, and SDC checks over time. */
#include "report.h"
#include "report_agg.h"
#include "report_views.h"

static json_t *json_busbw_pct(const struct report *r) { return report_views_json_busbw(r->agg->views); }
static json_t *json_lateness(const struct report *r) { return report_views_json_lateness(r->agg->views, &r->det); }
static json_t *json_progress(const struct report *r) { return report_views_json_progress(r->agg->views, &r->det); }
static json_t *json_sdc_timeline(const struct report *r) { return report_views_json_sdc_timeline(r->agg->views); }

const struct report_section report_section_busbw_pct = {"busbw_pct", NULL, NULL, json_busbw_pct, NULL};
const struct report_section report_section_lateness = {"lateness", NULL, NULL, json_lateness, NULL};
const struct report_section report_section_progress = {"progress", NULL, NULL, json_progress, NULL};
const struct report_section report_section_sdc_timeline = {"sdc_timeline", NULL, NULL, json_sdc_timeline, NULL};
