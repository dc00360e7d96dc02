/* tools/report/section_health.c: the report's "health" section: the GPU and IB health
 * samples of every rank (hooks/health.c), per rank and host, and the errors no finding
 * explains. The model and the joins to stragglers, SDC suspects and slow links are
 * tools/report/report_health.c; the sections that join read r->health (built here first: every
 * section's build runs before any output). */
#include "report.h"
#include "report_health.h"

static void build_health(struct report *r) { r->health = report_health_build(r->set); }
static void text_health(const struct report *r, FILE *o) { report_health_text(r->health, &r->det, o); }
static json_t *json_health(const struct report *r) { return report_health_json(r->health, &r->det); }
static void free_health(struct report *r) {
  report_health_free(r->health);
  r->health = NULL;
}

const struct report_section report_section_health = {"health", build_health, text_health, json_health, free_health};
