/* tools/report/report_views.h: the report's figures made for pictures (the HTML page, also in --json),
 * gathered from the collective instances as the dumps stream by (tools/report/report_agg.c calls
 * report_views_instance() for each instance the walker gives out), in memory bounded by the
 * input (ranks x communicators, a fixed number of cells each), never by a number inside it:
 *  - busbw_pct: per (op, comm size, size bucket) row of the ops section, p10/p50/p90 of the
 *    per-record bus bandwidth (bytes / duration x nccl-tests factor) of the timed records;
 *  - lateness: per communicator a grid of at most VIEW_GROUPS rank groups (and no more than
 *    the members of its first instance, so memory follows the records) x VIEW_COLS seq
 *    columns holding the largest arrival lateness (median duration of the instance minus the
 *    rank's duration, as the straggler detector measures it) and the rank it belongs to;
 *  - progress: per communicator and rank group, the lowest and highest last seq its ranks
 *    entered (a rank the hangs section calls stuck entered the hang's seq) and completed;
 *  - sdc_timeline: checked collectives and SDC findings per time bucket.
 * The JSON builders choose what a page shows (communicators with stragglers or hangs first,
 * then the largest), VIEW_MAX_COMMS at most, and count what they leave out. */
#ifndef COLLSCOPE_TOOLS_REPORT_VIEWS_H
#define COLLSCOPE_TOOLS_REPORT_VIEWS_H
#include <stddef.h>
#include <stdint.h>

#include "dump/instwalk.h"

#define VIEW_GROUPS 64   /* rank groups (rows) of a communicator's grid */
#define VIEW_COLS 64     /* seq columns of a communicator's grid */
#define VIEW_MAX_COMMS 8 /* communicators in the lateness and progress sections */
#define VIEW_TIME_BUCKETS 48
#define VIEW_SDC_POINTS 4096 /* checked instances kept before neighbours are merged */

struct report_views;
struct cs_det_result;
struct json_t;

struct report_views *report_views_new(const char *op_filter);
/* one instance (members sorted by comm_rank); sdc_findings: the findings the SDC comparison
 * made of it */
void report_views_instance(struct report_views *v, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n,
                           size_t sdc_findings);
void report_views_free(struct report_views *v);

struct json_t *report_views_json_busbw(const struct report_views *v);
struct json_t *report_views_json_lateness(const struct report_views *v, const struct cs_det_result *det);
struct json_t *report_views_json_progress(const struct report_views *v, const struct cs_det_result *det);
struct json_t *report_views_json_sdc_timeline(const struct report_views *v);

#endif
