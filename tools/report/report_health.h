/* tools/report/report_health.h: the report's `health` section (docs/health.md) and its joins: the
 * causes of each straggler, the GPU context of SDC suspects, both ends' IB port deltas of a
 * slow host pair. Pure readers of a loaded dump set and the detector's result. */
#ifndef COLLSCOPE_TOOLS_REPORT_HEALTH_H
#define COLLSCOPE_TOOLS_REPORT_HEALTH_H
#include <jansson.h>
#include <stdio.h>
#include "collscope/detect.h"
#include "dump/dumpfile.h"

struct report_health; /* per rank and per host figures, built once */
struct report_health *report_health_build(const struct cs_dumpset *set);
void report_health_free(struct report_health *h);

/* `causes` of one straggler: [{kind, detail}], kinds power_cap, thermal, hw_slowdown,
 * clocks_low, gpu_model, nvlink_errors, pcie_replay, ib_errors, ib_congestion. A link
 * straggler (rank -1) is judged by the IB ports of src_host and dst_host (NULL: unknown). */
json_t *report_health_causes(const struct report_health *h, const struct cs_det_straggler *s,
                             const char *src_host, const char *dst_host);
/* the kinds, comma separated, into buf ("-" when none) */
const char *report_health_cause_text(const struct report_health *h, const struct cs_det_straggler *s,
                                     const char *src_host, const char *dst_host, char *buf, size_t cap);
/* a GPU's ECC/XID/row-remap context (SDC suspects), null when the rank has no samples */
json_t *report_health_gpu_context(const struct report_health *h, int rank);
/* a host's IB port deltas: [{dev, port, counters...}] */
json_t *report_health_host_ports(const struct report_health *h, const char *host);

/* The section: "health": {ranks, hosts, unexplained}; named: the ranks and hosts a finding
 * names (stragglers, SDC suspects, slow pairs), for "errors with no finding". */
json_t *report_health_json(const struct report_health *h, const struct cs_det_result *det);
void report_health_text(const struct report_health *h, const struct cs_det_result *det, FILE *o);
#endif
