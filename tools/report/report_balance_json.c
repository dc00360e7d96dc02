/* tools/report/report_balance_json.c: the report's `balance` section as JSON and text, from the
 * model tools/report/report_balance.c builds (fields in report_balance.h, docs/balance.md). */
#include "report_balance_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static json_t *jnum(bool ok, double v) { return ok && isfinite(v) ? json_real(v) : json_null(); }
static json_t *jstr_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static const struct bal_view *main_view(const struct report_balance *b) {
  return b->dp.ok ? &b->dp : b->pp.found && b->pp.n ? &b->pp
                         : b->dp.found              ? &b->dp
                                                    : NULL;
}

json_t *report_balance_json(const struct report_balance *b) {
  json_t *o = json_object();
  const struct bal_view *v = b ? main_view(b) : NULL;
  const char *kind = !v ? "none" : v == &b->dp ? "data_parallel"
                                               : "pipeline";
  json_object_set_new(o, "kind", json_string(kind));
  json_object_set_new(o, "comm", v ? json_sprintf("0x%016llx", (unsigned long long)v->comm) : json_null());
  json_object_set_new(o, "ops_per_step", v && v->period > 0 ? json_integer(v->period) : json_null());
  json_object_set_new(o, "steps", json_integer(v ? (json_int_t)v->steps : 0));
  json_t *ranks = json_array();
  for (size_t i = 0; v && i < v->n; i++) {
    const struct bal_rank *r = &v->r[i];
    json_t *e = json_object();
    json_object_set_new(e, "rank", json_integer(r->rank));
    json_object_set_new(e, "host", jstr_or_null(r->host));
    json_object_set_new(e, "gpu", json_string(r->gpu));
    json_object_set_new(e, "compute_us", jnum(true, r->compute_us));
    json_object_set_new(e, "step_us", jnum(r->step_us > 0, r->step_us));
    json_object_set_new(e, "share_now", jnum(v == &b->dp && v->ok, r->share_now));
    json_object_set_new(e, "share", jnum(v == &b->dp && v->ok, r->share));
    json_object_set_new(e, "verdict", json_string(verdict_names[r->verdict]));
    json_object_set_new(e, "cause", r->cause[0] ? json_string(r->cause) : json_null());
    json_object_set_new(e, "untimed_ops", json_integer((json_int_t)r->untimed));
    bool dph = v == &b->dp;
    json_object_set_new(e, "host_wait_us", jnum(dph, r->host_us));
    json_object_set_new(e, "host_cost_pct", jnum(dph && v->ok, r->host_cost_pct));
    json_object_set_new(e, "stalls", dph ? json_integer((json_int_t)r->stalls) : json_null());
    json_object_set_new(e, "stall_us", jnum(dph && r->stalls, r->stall_us));
    json_object_set_new(e, "stall_every_steps", jnum(dph && r->stall_every > 0, r->stall_every));
    json_object_set_new(e, "h2d_bytes_per_step", jnum(dph && v->ok, r->h2d_bytes));
    json_array_append_new(ranks, e);
  }
  json_object_set_new(o, "ranks", ranks);
  json_t *models = json_array(), *hosts = json_array();
  for (size_t g = 0; b && g < b->nmodels; g++) {
    json_t *e = json_object();
    json_object_set_new(e, "gpu", json_string(b->models[g].name));
    json_object_set_new(e, "ranks", json_integer((json_int_t)b->models[g].ranks));
    json_object_set_new(e, "compute_us", jnum(true, b->models[g].compute_us));
    json_object_set_new(e, "share", jnum(b->dp.ok, b->models[g].share));
    json_array_append_new(models, e);
  }
  for (size_t g = 0; b && g < b->nhosts; g++) {
    json_t *e = json_object();
    json_object_set_new(e, "host", json_string(b->hosts[g].name));
    json_object_set_new(e, "gpu", json_string(b->hosts[g].gpu));
    json_object_set_new(e, "ranks", json_integer((json_int_t)b->hosts[g].ranks));
    json_object_set_new(e, "compute_us", jnum(true, b->hosts[g].compute_us));
    json_object_set_new(e, "share", jnum(b->dp.ok, b->hosts[g].share));
    json_array_append_new(hosts, e);
  }
  json_object_set_new(o, "by_model", models);
  json_object_set_new(o, "by_host", hosts);
  bool pred = v && v->ok && (v == &b->dp || b->layers_ok);
  json_object_set_new(o, "step_us_now", jnum(v && v->ok, v ? v->step_now : 0));
  json_object_set_new(o, "step_us_balanced", jnum(pred, pred ? v->step_bal : 0));
  json_object_set_new(o, "gain_pct", jnum(pred, pred ? v->gain_pct : 0));
  if (b && b->pp.found && b->nstages) {
    json_t *st = json_array();
    for (size_t i = 0; i < b->nstages; i++) {
      const struct bal_stage *s = &b->stages[i];
      json_t *e = json_object();
      json_object_set_new(e, "stage", json_integer(s->stage));
      json_object_set_new(e, "rank", json_integer(s->rank));
      json_object_set_new(e, "host", jstr_or_null(s->host));
      json_object_set_new(e, "gpu", json_string(s->gpu));
      json_object_set_new(e, "compute_us", jnum(true, s->compute_us));
      json_object_set_new(e, "layers_now", s->layers_now ? json_integer(s->layers_now) : json_null());
      json_object_set_new(e, "layers", b->layers_ok ? json_integer(s->layers) : json_null());
      json_object_set_new(e, "layer_us", jnum(s->per_layer_us > 0, s->per_layer_us));
      json_array_append_new(st, e);
    }
    json_object_set_new(o, "stages", st);
    json_object_set_new(o, "pipeline_comm", json_sprintf("0x%016llx", (unsigned long long)b->pp.comm));
    json_object_set_new(o, "pipeline_step_us_now", jnum(b->pp.ok, b->pp.step_now));
    json_object_set_new(o, "pipeline_step_us_balanced", jnum(b->layers_ok, b->pp_step_bal));
    json_object_set_new(o, "pipeline_gain_pct", jnum(b->layers_ok, b->pp_gain_pct));
    json_object_set_new(o, "microbatches", b->microbatches > 0 ? json_integer(b->microbatches) : json_null());
    json_object_set_new(o, "pipeline_flushed", json_boolean(b->flushed));
    bool ci = b->layers_ok && isfinite(b->pp_gain_lo);
    json_object_set_new(o, "pipeline_gain_us_ci",
                        ci ? json_pack("[f,f]", b->pp_gain_lo, b->pp_gain_hi) : json_null());
    json_object_set_new(o, "pipeline_gain_steps", json_integer((json_int_t)b->pp_gain_steps));
  }
  if (b && b->dp.ok)
    json_object_set_new(o, "step_us_loader_fixed", jnum(b->host_fixed_step > 0, b->host_fixed_step));
  if (b && b->dp.ok)
    json_object_set_new(o, "gain_us_ci",
                        isfinite(b->dp_gain_lo) ? json_pack("[f,f]", b->dp_gain_lo, b->dp_gain_hi) : json_null());
  json_object_set_new(o, "action", json_string(b && b->action ? b->action : "none"));
  json_object_set_new(o, "advice", json_string(b ? b->advice : ""));
  json_t *notes = json_array();
  if (b && b->shares_note[0]) json_array_append_new(notes, json_string(b->shares_note));
  if (b && b->layers_note[0]) json_array_append_new(notes, json_string(b->layers_note));
  json_object_set_new(o, "notes", notes);
  return o;
}

static const char *nz(const char *s) { return s ? s : "?"; }

void report_balance_text(const struct report_balance *b, FILE *o) {
  const struct bal_view *v = b ? main_view(b) : NULL;
  fputs("\n# Balance: compute per rank and step (GPU time between its collectives, docs/balance.md);\n"
        "# shares proportional to speed equalise it (data parallel; communication assumed unchanged)\n",
        o);
  if (!v || !v->n) {
    fprintf(o, "# %s\n", b && b->advice[0] ? b->advice : "no data-parallel or pipeline communicator");
    return;
  }
  bool dp = v == &b->dp;
  fprintf(o, "# %s comm %016llx, %zu ranks, ", dp ? "data-parallel" : "pipeline", (unsigned long long)v->comm, v->n);
  if (v->period > 0)
    fprintf(o, "a step = %d ops %s, %zu steps measured (the first left out)\n", v->period,
            dp ? "per rank" : "on the first stage", v->steps);
  else
    fprintf(o, "no repeating step: per op, %zu measured\n", v->steps);
  fprintf(o, "# %5s  %-16s %-28s %15s %9s %9s  %s\n", "rank", "host", "gpu", "compute_us/step", "share_now", "share",
          "verdict");
  for (size_t i = 0; i < v->n; i++) {
    const struct bal_rank *r = &v->r[i];
    fprintf(o, "  %5d  %-16.16s %-28.28s %15.1f ", r->rank, nz(r->host), r->gpu, r->compute_us);
    if (dp && v->ok)
      fprintf(o, "%9.4f %9.4f", r->share_now, r->share);
    else
      fprintf(o, "%9s %9s", "-", "-");
    fprintf(o, "  %s%s%s%s\n", verdict_names[r->verdict], r->cause[0] ? " (" : "", r->cause, r->cause[0] ? ")" : "");
  }
  for (int k = 0; k < 2; k++)
    for (size_t g = 0; g < (k ? b->nhosts : b->nmodels); g++) {
      const struct bal_group *G = k ? &b->hosts[g] : &b->models[g];
      fprintf(o, "# by %s %-28.28s %zu rank%s, %.1f us/step each", k ? "host: " : "model:", G->name, G->ranks,
              G->ranks == 1 ? "" : "s", G->compute_us);
      if (dp && v->ok) fprintf(o, ", share %.4f in all", G->share);
      fputc('\n', o);
    }
  if (dp && v->ok)
    fprintf(o, "# step time now %.1f us; with these shares %.1f us predicted: %.1f %% faster\n", v->step_now,
            v->step_bal, v->gain_pct);
  if (dp && v->ok && b->host_fixed_step > 0)
    fprintf(o, "# without the data_loader ranks' host waits %.1f us predicted: %.1f %% faster\n", b->host_fixed_step,
            100.0 * (v->step_now - b->host_fixed_step) / v->step_now);
  if (b->pp.found && b->nstages) {
    fprintf(o, "# pipeline comm %016llx, stages in rank order\n", (unsigned long long)b->pp.comm);
    fprintf(o, "# %5s  %5s  %-16s %-28s %15s %s\n", "stage", "rank", "host", "gpu", "compute_us/step",
            b->layers_ok ? "  layers now -> balanced" : "");
    for (size_t i = 0; i < b->nstages; i++) {
      const struct bal_stage *s = &b->stages[i];
      fprintf(o, "  %5d  %5d  %-16.16s %-28.28s %15.1f", s->stage, s->rank, nz(s->host), s->gpu, s->compute_us);
      if (b->layers_ok) fprintf(o, "  %10ld -> %ld", s->layers_now, s->layers);
      fputc('\n', o);
    }
    if (b->layers_ok)
      fprintf(o, "# pipeline step now %.1f us; with these layers %.1f us predicted: %.1f %% faster\n", b->pp.step_now,
              b->pp_step_bal, b->pp_gain_pct);
    else if (!b->layers_given)
      fprintf(o, "# give today's layer counts (report --layers 24,24,...) for the counts that balance the stages\n");
  }
  fprintf(o, "# action: %s: %s\n", b->action ? b->action : "none", b->advice);
  if (b->shares_note[0]) fprintf(o, "# note: %s\n", b->shares_note);
  if (b->layers_note[0]) fprintf(o, "# note: %s\n", b->layers_note);
}
