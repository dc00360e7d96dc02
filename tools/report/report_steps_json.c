/* tools/report/report_steps_json.c: the "steps" section's JSON value (keys in the header comment of
 * tools/cmd_report.c; the model in tools/report/report_steps_internal.h): per stage the medians
 * and shares, per rank its medians, p90, shares, counts and every step it holds in
 * nanoseconds, whose four parts sum to the step exactly. */
#include <stdlib.h>

#include <jansson.h>

#include "dump/dumpfile.h"
#include "report.h"
#include "report_steps_internal.h"

static json_t *figs(const double *v, int from) {
  json_t *o = json_object();
  for (int k = from; k < STEPS_NFIG; k++) json_object_set_new(o, steps_fig_names[k], json_real(v[k]));
  return o;
}

json_t *report_steps_json(const struct report *r) {
  (void)r;
  const struct steps_model *M = steps_model();
  json_t *o = json_object();
  json_object_set_new(o, "ranks", json_integer((json_int_t)M->n));
  json_object_set_new(o, "ranks_without_steps", json_integer((json_int_t)M->without));
  json_object_set_new(o, "out_of_memory", json_boolean(M->oom));
  json_t *st = json_array();
  for (size_t i = 0; i < M->ng; i++) {
    const struct steps_group *G = &M->g[i];
    json_t *e = json_object();
    json_object_set_new(e, "stage", G->stage >= 0 ? json_integer(G->stage) : json_null());
    json_object_set_new(e, "ranks", json_integer((json_int_t)G->ranks));
    json_object_set_new(e, "median_us", figs(G->med_us, STEPS_STEP));
    json_object_set_new(e, "share", figs(G->share, STEPS_COMPUTE));
    json_array_append_new(st, e);
  }
  json_object_set_new(o, "per_stage", st);
  json_t *ranks = json_array();
  char hex[17];
  for (size_t i = 0; i < M->n; i++) {
    const struct steps_rank *R = &M->r[i];
    json_t *e = json_object();
    json_object_set_new(e, "rank", json_integer(R->rank));
    json_object_set_new(e, "stage", R->stage >= 0 ? json_integer(R->stage) : json_null());
    json_object_set_new(e, "host", json_string(R->host ? R->host : ""));
    json_object_set_new(e, "step_comm", json_string(cs_comm_hex(R->comm, hex)));
    json_object_set_new(e, "ops_per_step", json_integer(R->period));
    json_object_set_new(e, "steps", json_integer((json_int_t)R->nfig));
    json_object_set_new(e, "steps_found", json_integer((json_int_t)R->counts.steps));
    json_object_set_new(e, "steps_incomplete", json_integer((json_int_t)R->counts.incomplete));
    json_object_set_new(e, "untimed_ops", json_integer((json_int_t)R->counts.untimed));
    json_object_set_new(e, "unmatched_p2p", json_integer((json_int_t)R->counts.unmatched));
    json_object_set_new(e, "median_us", figs(R->med_us, STEPS_STEP));
    json_object_set_new(e, "p90_us", figs(R->p90_us, STEPS_STEP));
    json_object_set_new(e, "share", figs(R->share, STEPS_COMPUTE));
    json_t *a = json_array();
    for (size_t k = 0; k < R->nfig; k++) {
      const struct cs_step_fig *f = &R->fig[k];
      json_t *s = json_object();
      json_object_set_new(s, "step", json_integer(f->step));
      json_object_set_new(s, "start_ns", json_integer(f->start_ns));
      json_object_set_new(s, "step_ns", json_integer(f->step_ns));
      json_object_set_new(s, "compute_ns", json_integer(f->compute_ns));
      json_object_set_new(s, "comm_ns", json_integer(f->comm_ns));
      json_object_set_new(s, "wait_ns", json_integer(f->wait_ns));
      json_object_set_new(s, "bubble_ns", json_integer(f->bubble_ns));
      json_array_append_new(a, s);
    }
    json_object_set_new(e, "per_step", a);
    json_array_append_new(ranks, e);
  }
  json_object_set_new(o, "per_rank", ranks);
  return o;
}
