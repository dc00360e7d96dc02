/* tools/report/section_stragglers.c: the report's "stragglers" section (analysis/detect.c's
 * findings; definitions in include/collscope/detect.h), also printed by `collscope top`
 * (cli_text_stragglers, cli_json_stragglers). Link entries with no rank name the slowest
 * slow host pair of the links section. The report adds each finding's cost
 * (include/collscope/finding_cost.h): a column, and cost_us and cost_pct in JSON. */
#include "cli.h"
#include "collscope/finding_cost.h"
#include "report.h"
#include "report_agg.h"
#include "report_health.h"
#include "xalloc.h"

static void text_stragglers(const struct report *r, FILE *o) {
  const struct cs_link_pair *q = report_slowest_link(r);
  /* the cause column: what the health samples say (tools/report/report_health.c) */
  char **causes = xcalloc(r->det.nstragglers + 1, sizeof *causes);
  char **costs = xcalloc(r->det.nstragglers + 1, sizeof *costs);
  for (size_t i = 0; i < r->det.nstragglers; i++) {
    causes[i] = xstrdup(report_health_cause_text(r->health, &r->det.stragglers[i], q ? q->src_host : NULL,
                                                 q ? q->dst_host : NULL, (char[256]){0}, 256));
    double us, pct;
    char c[64] = "-";
    if (cs_cost_of(r->agg ? r->agg->cost : NULL, &r->det.stragglers[i], &us, &pct)) {
      if (pct >= 0)
        snprintf(c, sizeof c, "%.1f ms %.2f%%", us / 1e3, pct);
      else
        snprintf(c, sizeof c, "%.1f ms", us / 1e3);
    }
    costs[i] = xstrdup(c);
  }
  cli_text_stragglers_causes(&r->det, &r->detp, o, (const char *const *)costs, (const char *const *)causes);
  for (size_t i = 0; i < r->det.nstragglers; i++) free(causes[i]), free(costs[i]);
  free(causes);
  free(costs);
  char b1[128], b2[128];
  for (size_t i = 0; i < r->det.nstragglers; i++)
    if (r->det.stragglers[i].kind == CS_DET_LINK && r->det.stragglers[i].rank < 0) {
      if (q)
        fprintf(o, "  link entries: slow host pair %s -> %s (%.3g Gbit/s p50 vs %.3g for the other pairs; see links)\n",
                cs_text_safe(q->src_host, b1, sizeof b1), cs_text_safe(q->dst_host, b2, sizeof b2),
                q->gbps_p50, q->ref_gbps_p50);
      else
        fprintf(o, "  link entries: no NCCL_NET link records name a slow host pair\n");
      break;
    }
}

static json_t *json_stragglers(const struct report *r) {
  json_t *a = cli_json_stragglers(&r->det);
  const struct cs_link_pair *q = report_slowest_link(r);
  for (size_t i = 0; i < r->det.nstragglers && i < json_array_size(a); i++) {
    if (r->det.stragglers[i].kind != CS_DET_LINK || r->det.stragglers[i].rank >= 0) continue;
    json_t *o = json_array_get(a, i);
    json_object_set_new(o, "src_host", q ? json_string(q->src_host) : json_null());
    json_object_set_new(o, "dst_host", q ? json_string(q->dst_host) : json_null());
  }
  for (size_t i = 0; i < r->det.nstragglers && i < json_array_size(a); i++) /* tools/report/report_health.c */
    json_object_set_new(json_array_get(a, i), "causes", report_health_causes(r->health, &r->det.stragglers[i], q ? q->src_host : NULL, q ? q->dst_host : NULL));
  for (size_t i = 0; i < r->det.nstragglers && i < json_array_size(a); i++) { /* finding_cost.h */
    double us, pct;
    bool known = cs_cost_of(r->agg ? r->agg->cost : NULL, &r->det.stragglers[i], &us, &pct);
    json_object_set_new(json_array_get(a, i), "cost_us", known ? json_real(us) : json_null());
    json_object_set_new(json_array_get(a, i), "cost_pct", known && pct >= 0 ? json_real(pct) : json_null());
  }
  return a;
}

void cli_text_stragglers(const struct cs_det_result *det, const struct cs_det_params *p, FILE *o) {
  cli_text_stragglers_causes(det, p, o, NULL, NULL);
}

void cli_text_stragglers_causes(const struct cs_det_result *det, const struct cs_det_params *p, FILE *o,
                                const char *const *costs, const char *const *causes) {
  fprintf(o, "\n# Stragglers: last arrival = shortest GPU duration of a collective instance;\n"
             "# offset = median(duration) - own duration (> 0: arrived after the median rank);\n"
             "# flagged over the last %u instances of a comm (at least %u), on %u consecutive instances,\n"
             "# when its median offset is %.1f robust sigma above 0 (or, over the last %u instances only,\n"
             "# %.1f sigma and after the median rank in >= %.0f%% of them),\n"
             "# or when it is last more often than max(%.0f%%, chance + %.1f sigma) with median lateness when\n"
             "# last; either figure >= max(%.0f us, %.1f%% of the median duration); `after`: instances until\n"
             "# flagged; `flagged`: the seqs it was first and last flagged at, and `ongoing` when the detector\n"
             "# still flags it at the comm's last instance, else `cleared`;%s %zu evaluated\n",
          p->window, p->min_instances, p->persist, p->offset_z, p->recent, p->recent_z, p->recent_share * 100,
          p->share * 100, p->z, p->floor_us, p->frac * 100,
          costs ? "\n# `cost`: the lateness its peers waited for it over that span, and its share of the span's time;"
                : "",
          det->instances);
  fprintf(o, "# %5s  %-16s %-16s %10s %12s %12s %10s %12s %8s  %-7s %-25s%s%s\n", "rank", "host", "comm",
          "share_last", "lateness_us", "median_us", "gap_us", "peer_gap_us", "after", "kind", "flagged",
          costs ? " cost                " : "", causes ? " cause" : "");
  char hex[17], b[128];
  for (size_t i = 0; i < det->nstragglers; i++) {
    const struct cs_det_straggler *s = &det->stragglers[i];
    char span[64];
    snprintf(span, sizeof span, "%lld-%lld %s", (long long)s->first_flag_seq, (long long)s->last_flag_seq,
             cs_det_straggler_ongoing(s) ? "ongoing" : "cleared");
    char cost[40] = "";
    if (costs) snprintf(cost, sizeof cost, " %-20s", costs[i]);
    fprintf(o, "  %5d  %-16s %-16s %10.2f %12.1f %12.1f %10.1f %12.1f %8zu  %-7s %-25s%s%s%s\n", s->rank,
            s->host ? cs_text_safe(s->host, b, sizeof b) : s->kind == CS_DET_LINK ? "(network)"
                                                                                  : "?",
            cs_comm_hex(s->comm, hex), s->share_last, s->lateness_us, s->median_dur_us, s->gap_us,
            s->peer_gap_us, s->first_flag_instance, cs_det_kind_name(s->kind), span, cost, causes ? " " : "",
            causes ? causes[i] : "");
  }
  if (!det->nstragglers) fprintf(o, "  (none)\n");
  /* the cost rule's findings: how much of the time the others waited, how often, how long */
  for (size_t i = 0; i < det->nstragglers; i++) {
    const struct cs_det_straggler *s = &det->stragglers[i];
    if (s->rule != CS_DET_RULE_COST) continue;
    char per[48] = "";
    if (s->period_instances) snprintf(per, sizeof per, ", every %zu", s->period_instances);
    fprintf(o, "  cost rule: rank %d comm %s: its peers waited for it %.1f%% of the last %zu instances' time; late in %zu of them%s, median %.1f us\n",
            s->rank, cs_comm_hex(s->comm, hex), s->cost_share * 100, s->cost_instances, s->late_instances, per,
            s->stall_us);
  }
}

json_t *cli_json_stragglers(const struct cs_det_result *det) {
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < det->nstragglers; i++) {
    const struct cs_det_straggler *s = &det->stragglers[i];
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(s->rank));
    json_object_set_new(o, "host", s->host ? json_string(s->host) : json_null());
    json_object_set_new(o, "comm", json_string(cs_comm_hex(s->comm, hex)));
    json_object_set_new(o, "comm_rank", json_integer(s->comm_rank));
    json_object_set_new(o, "share_last", json_real(s->share_last));
    json_object_set_new(o, "lateness_us", json_real(s->lateness_us));
    json_object_set_new(o, "offset_us", json_real(s->offset_us));
    json_object_set_new(o, "later_share", json_real(s->later_share));
    json_object_set_new(o, "median_dur_us", json_real(s->median_dur_us));
    json_object_set_new(o, "gap_us", json_real(s->gap_us));
    json_object_set_new(o, "peer_gap_us", json_real(s->peer_gap_us));
    json_object_set_new(o, "window_instances", jcount(s->window_instances));
    json_object_set_new(o, "first_flag_instance", jcount(s->first_flag_instance));
    json_object_set_new(o, "first_flag_seq", json_integer(s->first_flag_seq));
    json_object_set_new(o, "last_flag_seq", json_integer(s->last_flag_seq));
    json_object_set_new(o, "comm_last_seq", json_integer(s->comm_last_seq));
    json_object_set_new(o, "ongoing", json_boolean(cs_det_straggler_ongoing(s)));
    json_object_set_new(o, "kind", json_string(cs_det_kind_name(s->kind)));
    /* which rule named it (a link entry with no rank: none), and the cost rule's figures */
    json_object_set_new(o, "rule", s->rank < 0 ? json_null() : json_string(cs_det_rule_name(s->rule)));
    if (s->rule == CS_DET_RULE_COST) {
      json_object_set_new(o, "cost_share", json_real(s->cost_share));
      json_object_set_new(o, "late_instances", jcount(s->late_instances));
      json_object_set_new(o, "cost_instances", jcount(s->cost_instances));
      json_object_set_new(o, "period_instances", s->period_instances ? jcount(s->period_instances) : json_null());
      json_object_set_new(o, "stall_us", json_real(s->stall_us));
    }
    json_array_append_new(a, o);
  }
  return a;
}

const struct report_section report_section_stragglers = {"stragglers", NULL, text_stragglers, json_stragglers, NULL};
