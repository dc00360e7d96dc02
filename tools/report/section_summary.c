/* tools/report/section_summary.c: the report's "summary" section: the set's files, ranks,
 * hosts and record counts, with the per-rank standings of the NCCL profiler plugin and of the
 * SDC checks from the footers (their text lines are in the notes section). */
#include <stdlib.h>
#include <string.h>

#include "collscope/schema.h"
#include "report.h"
#include "report_agg.h"
#include "xalloc.h"

const char *const report_prof_standings[REPORT_NPROF] = {"trusted", "rejected", "mixed", "probation",
                                                         "not_loaded", "forced", "other"};
const char *const report_sdc_standings[REPORT_NSDC] = {"ready", "unused", "compiled_out",
                                                       "no_driver", "setup_failed", "selftest_failed",
                                                       "selftest_timeout", "other"};

/* the index of footer standing v in names[0..n-1], the last ("other") when unknown */
static int standing_index(const char *const *names, int n, const char *v) {
  int k = 0;
  while (k < n - 1 && strcmp(v, names[k])) k++;
  return k;
}

size_t report_sdc_off_ranks(const struct summary *s) {
  size_t n = 0;
  for (int k = 2; k < REPORT_NSDC; k++) n += s->sdc_ranks[k];
  return n;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

static void build_summary(struct report *r) {
  const struct cs_dumpset *set = r->set;
  struct summary *s = &r->sum;
  s->files = set->nfiles;
  const char **hosts = xcalloc(set->nfiles, sizeof *hosts);
  int *ranks = xcalloc(set->nfiles, sizeof *ranks);
  size_t nr = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    bool seen = false;
    for (size_t k = 0; k < s->hosts; k++) seen |= hosts[k] == f->hdr.host; /* interned */
    if (!seen) hosts[s->hosts++] = f->hdr.host;
    if (f->hdr.rank >= 0) ranks[nr++] = f->hdr.rank;
    s->xfers += r->op_filter ? 0 : r->agg ? report_agg_file_xfers(&r->agg->files[f->read_index], f)
                                          : f->nxfers;
    s->drops += cs_dumpfile_drops(f);
    s->timing_lost += f->footer_timing_lost;
    s->lost = s->lost + f->lost < s->lost ? UINT64_MAX : s->lost + f->lost;
    s->lost_files += f->lost > 0;
    s->salvage_merged += f->merged_salvage;
    s->salvage_dups += f->dup_salvage;
    s->salvage_files += f->merged_salvage + f->dup_salvage > 0;
    s->truncated_lines += f->truncated_lines;
    s->budget_drops += f->footer_budget_drops;
    s->budget_files += f->footer_budget_drops > 0;
    s->windows_suppressed += f->footer_windows_suppressed;
    s->gaps_lost += f->footer_gaps_lost;
    s->local_unkeyed += f->footer_local_unkeyed;
    if (f->footer_budget > s->budget) s->budget = f->footer_budget;
    s->torn_frames += f->torn_frames;
    s->torn_bytes += f->torn_bytes;
    s->bad_frames += f->bad_frames;
    s->bad_bytes += f->bad_bytes;
    s->malformed_lines += f->malformed_lines;
    s->unknown_types += f->unknown_types;
    s->files_without_footer += !f->has_footer;
    if (f->footer_profiler) {
      int k = standing_index(report_prof_standings, REPORT_NPROF, f->footer_profiler);
      s->prof_ranks[k]++;
      if (k == 1 || k == 2) {
        s->rejected_probes += f->footer_prof_probes, s->rejected_agreed += f->footer_prof_agreed;
        if (!s->rejected_ops && f->footer_prof_rejected && *f->footer_prof_rejected) s->rejected_ops = f->footer_prof_rejected;
      }
    }
  }
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (!f->footer_sdc) continue;
    s->sdc_ranks[standing_index(report_sdc_standings, REPORT_NSDC, f->footer_sdc)]++;
    s->sdc_no_slot += f->footer_sdc_no_slot;
    if (!strcmp(f->footer_sdc, "selftest_failed")) {
      if (!s->selftest_failed) s->selftest_failed = xcalloc(set->nfiles, sizeof *s->selftest_failed);
      s->selftest_failed[s->nselftest_failed++] = f;
    }
  }
  if (nr) qsort(ranks, nr, sizeof *ranks, cmp_int);
  for (size_t k = 0; k < nr; k++)
    if (k == 0 || ranks[k] != ranks[k - 1]) s->ranks++;
  free(hosts);
  free(ranks);
  /* a file without RANK (one process driving several GPUs) counts the communicator ranks
   * it held */
  for (size_t i = 0; r->agg && i < set->nfiles; i++)
    if (set->files[i].hdr.rank < 0) s->ranks += r->agg->files[set->files[i].read_index].ncrank;
  if (r->agg) { /* the op records were counted while the dumps streamed */
    const struct agg_counts *c = &r->agg->counts;
    s->ops = c->ops, s->errors = c->errors, s->timed = c->timed, s->timed_profiler = c->timed_profiler;
    s->timed_host_span = c->timed_host_span, s->captured = c->captured, s->host_timed = c->host_timed;
    s->unknown_timing = c->unknown_timing, s->sampled_out = c->sampled_out;
    for (size_t i = 0; i < r->agg->ncomms; i++) s->instances += r->agg->comms[i].instances;
    s->judged = r->det.judged;
  }
}

static void text_summary(const struct report *r, FILE *o) {
  const struct summary *s = &r->sum;
  char b1[512], b2[128], b3[256];
  fprintf(o, "# collscope report: %s%s%s%s%s\n", cs_text_safe(r->set->path, b1, sizeof b1),
          r->op_filter ? "  op " : "", r->op_filter ? cs_text_safe(r->op_filter, b2, sizeof b2) : "",
          *r->set->job ? "  job " : "", cs_text_safe(r->set->job, b3, sizeof b3));
  fprintf(o, "# files %zu  ranks %zu  hosts %zu  op records %zu  xfer records %zu  instances %zu\n",
          s->files, s->ranks, s->hosts, s->ops, s->xfers, s->instances);
}

static json_t *json_summary(const struct report *r) {
  const struct summary *s = &r->sum;
  json_t *o = json_object();
  json_object_set_new(o, "files", jcount(s->files));
  json_object_set_new(o, "ranks", jcount(s->ranks));
  json_object_set_new(o, "hosts", jcount(s->hosts));
  json_object_set_new(o, "records", jcount(s->ops + s->xfers));
  json_object_set_new(o, "ops", jcount(s->ops));
  json_object_set_new(o, "xfers", jcount(s->xfers));
  json_object_set_new(o, "instances", jcount(s->instances));
  json_object_set_new(o, "judged_instances", jcount(s->judged));
  json_object_set_new(o, "timed", jcount(s->timed));
  json_object_set_new(o, "timed_gpu_event", jcount(s->timed - s->timed_profiler - s->timed_host_span));
  json_object_set_new(o, "timed_profiler", jcount(s->timed_profiler));
  json_object_set_new(o, "timed_host_span", jcount(s->timed_host_span));
  json_object_set_new(o, "captured", jcount(s->captured));
  json_t *pj = json_object();
  for (int k = 0; k < REPORT_NPROF; k++) json_object_set_new(pj, report_prof_standings[k], jcount(s->prof_ranks[k]));
  json_object_set_new(o, "profiler_ranks", pj);
  json_t *sj = json_object();
  for (int k = 0; k < REPORT_NSDC; k++) json_object_set_new(sj, report_sdc_standings[k], jcount(s->sdc_ranks[k]));
  json_object_set_new(o, "sdc_ranks", sj);
  json_object_set_new(o, "sdc_no_slot", jbytes(s->sdc_no_slot));
  json_t *stf = json_array();
  for (size_t i = 0; i < s->nselftest_failed; i++) {
    json_t *e = json_object();
    json_object_set_new(e, "rank", json_integer(s->selftest_failed[i]->hdr.rank));
    json_object_set_new(e, "host", json_string(s->selftest_failed[i]->hdr.host));
    json_array_append_new(stf, e);
  }
  json_object_set_new(o, "sdc_selftest_failed", stf);
  json_object_set_new(o, "host_timed", jcount(s->host_timed));
  json_object_set_new(o, "sampled_out", jcount(s->sampled_out));
  json_object_set_new(o, "errors", jcount(s->errors));
  json_object_set_new(o, "unknown_timing", jcount(s->unknown_timing));
  json_object_set_new(o, "drops", jbytes(s->drops));
  json_object_set_new(o, "lost", jbytes(s->lost));
  json_object_set_new(o, "lost_files", jcount(s->lost_files));
  json_object_set_new(o, "salvage_merged", jcount(s->salvage_merged));
  json_object_set_new(o, "salvage_duplicates", jcount(s->salvage_dups));
  json_object_set_new(o, "job", json_string(r->set->job));
  json_object_set_new(o, "other_job_files", jcount(r->set->other_job_files));
  json_object_set_new(o, "timing_lost", jbytes(s->timing_lost));
  json_object_set_new(o, "truncated_lines", jcount(s->truncated_lines));
  json_object_set_new(o, "budget_drops", jbytes(s->budget_drops));
  json_object_set_new(o, "budget", jbytes(s->budget));
  json_object_set_new(o, "windows_suppressed", jbytes(s->windows_suppressed));
  json_object_set_new(o, "gaps_lost", jbytes(s->gaps_lost));
  json_object_set_new(o, "local_unkeyed", jbytes(s->local_unkeyed));
  json_object_set_new(o, "torn_frames", jcount(s->torn_frames));
  json_object_set_new(o, "torn_frame_bytes", jbytes(s->torn_bytes));
  json_object_set_new(o, "bad_frames", jcount(s->bad_frames));
  json_object_set_new(o, "malformed_lines", jcount(s->malformed_lines));
  json_object_set_new(o, "unknown_types", jcount(s->unknown_types));
  json_object_set_new(o, "files_without_footer", jcount(s->files_without_footer));
  json_object_set_new(o, "op_filter", r->op_filter ? json_string(r->op_filter) : json_null());
  return o;
}

static void free_summary(struct report *r) { free(r->sum.selftest_failed); }

const struct report_section report_section_summary = {"summary", build_summary, text_summary, json_summary,
                                                      free_summary};
