/* tools/exporter/exporter_metrics.h: the exporter's metric families and their exposition, in the
 * Prometheus text format (0.0.4) or OpenMetrics 1.0. */
#ifndef COLLSCOPE_TOOLS_EXPORTER_METRICS_H
#define COLLSCOPE_TOOLS_EXPORTER_METRICS_H
#include <stdbool.h>
#include <stdio.h>

#include "exporter_state.h"

#define EXP_CT_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define EXP_CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* The exposition of S (the caller holds s->mu) in a malloc'ed, NUL-terminated buffer of
 * *len bytes; NULL when out of memory. The histograms are per (op, size class): their
 * communicators are added up; the counters and the busbw gauge also carry comm. */
char *exp_render_buf(struct exp_state *s, bool openmetrics, size_t *len);

/* true when an Accept header asks for OpenMetrics */
bool exp_wants_openmetrics(const char *accept);

#endif
