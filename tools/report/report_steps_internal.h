/* tools/report/report_steps_internal.h: the report's "steps" section (docs/balance.md "Steps"):
 * the gathering during the instance walk (tools/report/section_steps.c feeds
 * include/collscope/step_breakdown.h), and the model its text, JSON (report_steps_json.c) and
 * the HTML page (report_html_steps.c, from the JSON) share. */
#ifndef COLLSCOPE_TOOLS_REPORT_STEPS_INTERNAL_H
#define COLLSCOPE_TOOLS_REPORT_STEPS_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/comm_elsewhere.h"
#include "collscope/finding_cost.h"
#include "collscope/peer_wait.h"
#include "collscope/step_breakdown.h"
#include "dump/instwalk.h"

/* the walk's side: one per report (struct report_agg's `steps`) */
struct report_steps_gather;
struct report_steps_gather *report_steps_gather_new(void);
void report_steps_gather_instance(struct report_steps_gather *g, uint64_t comm, int64_t seq, const struct cs_walk_rec *m,
                                  size_t n);
void report_steps_gather_free(struct report_steps_gather *g);
/* each rank's waits per peer gathered from the same instances (include/collscope/peer_wait.h);
 * NULL when out of memory */
struct cs_pwait *report_steps_pwait(struct report_steps_gather *g);
/* each finding's cost gathered from the same instances (include/collscope/finding_cost.h); NULL
 * when out of memory */
const struct cs_cost *report_steps_cost(const struct report_steps_gather *g);
/* the findings a rank's time elsewhere explains, judged from the peer waits' figures
 * (include/collscope/comm_elsewhere.h); NULL when out of memory */
struct cs_celse *report_steps_celse(struct report_steps_gather *g);

/* the figures of a step, in this order: the step, then its four parts */
enum { STEPS_STEP,
       STEPS_COMPUTE,
       STEPS_COMM,
       STEPS_WAIT,
       STEPS_BUBBLE,
       STEPS_NFIG };
extern const char *const steps_fig_names[STEPS_NFIG]; /* "step", "compute", "comm", "wait", "bubble" */

struct steps_rank {
  int rank, stage; /* stage -1: in no pipeline */
  const char *host;
  uint64_t comm; /* the communicator whose ops delimit its steps */
  int period;    /* its ops per step */
  struct cs_step_fig *fig;
  size_t nfig;
  struct cs_steps_counts counts;
  double med_us[STEPS_NFIG], p90_us[STEPS_NFIG]; /* over its steps, nearest rank */
  double share[STEPS_NFIG];                      /* of its summed step time (share[STEPS_STEP] = 1) */
};
struct steps_group { /* a stage's ranks, or all ranks when there is no pipeline */
  int stage;
  size_t ranks;
  double med_us[STEPS_NFIG]; /* the median over its ranks of their medians */
  double share[STEPS_NFIG];  /* of its ranks' summed step time */
};
struct steps_model {
  bool oom;
  struct steps_rank *r; /* ranks with steps, in the files' order */
  size_t n, without;    /* and the files without steps */
  struct steps_group *g;
  size_t ng;
};
const struct steps_model *steps_model(void);

/* the section's JSON value (report_steps_json.c) */
struct report;
struct json_t *report_steps_json(const struct report *r);

/* the nearest-rank percentile q (0 < q <= 1) of v[0..n) (sorted here); 0 when n == 0 */
double steps_pct(double *v, size_t n, double q);

#endif
