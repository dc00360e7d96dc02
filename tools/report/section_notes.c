/* tools/report/section_notes.c: the report's "notes" section (text only; its counts are in
 * the JSON summary): how the ops were timed, the NCCL profiler plugin's and the SDC checks'
 * standing per rank, and everything the reading skipped, dropped or lost. */
#include "report.h"
#include "report_agg.h"

/* A notes line "<label> name n, name n" over the non-zero counts (no line when all are
 * zero, and then 0 is returned); the caller ends the line. Returns the total. */
static size_t note_counts(FILE *o, const char *label, const char *const *names, const size_t *n, int k_max) {
  size_t total = 0;
  for (int k = 0; k < k_max; k++) total += n[k];
  if (!total) return 0;
  fprintf(o, "#   %-41s", label);
  for (int k = 0, first = 1; k < k_max; k++)
    if (n[k]) fprintf(o, "%s%s %zu", first ? "" : ", ", names[k], n[k]), first = 0;
  return total;
}

static void text_notes(const struct report *r, FILE *o) {
  const struct summary *s = &r->sum;
  char b[256];
  fprintf(o, "\n# Notes\n");
  fprintf(o, "#   timed ops: %zu (CUDA events %zu, NCCL profiler kernel stamps %zu, host clock %zu)\n", s->timed,
          s->timed - s->timed_profiler - s->timed_host_span, s->timed_profiler, s->timed_host_span);
  if (note_counts(o, "NCCL profiler plugin, ranks:", report_prof_standings, s->prof_ranks, REPORT_NPROF)) {
    if (s->prof_ranks[1] || s->prof_ranks[2])
      fprintf(o, " (rejecting ranks: %llu of %llu probes agreed with CUDA events; rejected: %s)",
              (unsigned long long)s->rejected_agreed, (unsigned long long)s->rejected_probes,
              s->rejected_ops ? cs_text_safe(s->rejected_ops, b, sizeof b) : "?");
    fprintf(o, "\n");
  }
  if (note_counts(o, "SDC checks, ranks:", report_sdc_standings, s->sdc_ranks, REPORT_NSDC)) {
    if (report_sdc_off_ranks(s))
      fprintf(o, " -- checks off on %zu rank(s), whose collectives went unchecked (their logs say why)",
              report_sdc_off_ranks(s));
    if (s->sdc_no_slot)
      fprintf(o, "; %llu checks skipped, no free result slot", (unsigned long long)s->sdc_no_slot);
    fprintf(o, "\n");
    if (s->nselftest_failed) {
      fprintf(o, "#   SDC kernel self-test failed (a wrong result on a fixed input) on rank(s):");
      for (size_t i = 0; i < s->nselftest_failed; i++)
        fprintf(o, "%s %d (%s)", i ? "," : "", s->selftest_failed[i]->hdr.rank,
                cs_text_safe(s->selftest_failed[i]->hdr.host, b, sizeof b));
      fprintf(o, "%s\n", s->sdc_ranks[0] ? " -- other ranks passed: suspect these GPUs" : "");
    }
  }
  fprintf(o, "#   captured ops (graph capture, no timing): %zu\n", s->captured);
  fprintf(o, "#   host-timed ops (no GPU timing):          %zu\n", s->host_timed);
  if (s->sampled_out)
    fprintf(o, "#   sampled-out ops (counted, not timed):    %zu -- COLLSCOPE_EVENT_SAMPLE: durations, percentiles and "
               "busbw come from the timed ones\n",
            s->sampled_out);
  fprintf(o, "#   error ops (call failed):                 %zu\n", s->errors);
  if (r->agg && r->agg->summary_lines)
    fprintf(o, "#   ops read from summaries (RECORD=summary): %zu in %zu lines (timing kinds of those not split)\n",
            r->agg->summary_ops, r->agg->summary_lines);
  if (s->unknown_timing)
    fprintf(o, "#   ops with unknown timing kind:            %zu\n", s->unknown_timing);
  if (r->agg && r->agg->late_records)
    fprintf(o, "#   ops out of seq order (not in instances): %zu\n", r->agg->late_records);
  fprintf(o, "#   dropped records:                         %llu\n", (unsigned long long)s->drops);
  fprintf(o, "#   lost records (footer count > read):      %llu", (unsigned long long)s->lost);
  if (s->lost) fprintf(o, " on %zu rank(s) -- see the ranks' lost column", s->lost_files);
  fputc('\n', o);
  if (s->timing_lost)
    fprintf(o, "#   ops whose GPU timing was lost (footer):  %llu\n", (unsigned long long)s->timing_lost);
  fprintf(o, "#   truncated lines skipped:                 %zu\n", s->truncated_lines);
  if (s->budget_drops)
    fprintf(o, "#   %llu op/xfer records not written: budget of %llu bytes reached (COLLSCOPE_BUDGET, %zu rank(s))\n",
            (unsigned long long)s->budget_drops, (unsigned long long)s->budget, s->budget_files);
  if (s->windows_suppressed)
    fprintf(o, "#   flight windows refused (rate limit):     %llu\n", (unsigned long long)s->windows_suppressed);
  if (s->gaps_lost)
    fprintf(o, "#   ops without compute-gap figures (gaps table full; not in balance): %llu\n",
            (unsigned long long)s->gaps_lost);
  if (s->local_unkeyed)
    fprintf(o, "#   collectives the local trigger could not key (table full): %llu\n",
            (unsigned long long)s->local_unkeyed);
  if (s->torn_frames)
    fprintf(o, "#   zstd frames cut short, skipped:          %zu (%llu compressed bytes)\n", s->torn_frames,
            (unsigned long long)s->torn_bytes);
  if (s->bad_frames)
    fprintf(o, "#   zstd frames not decoded, skipped:        %zu (%llu bytes)\n", s->bad_frames,
            (unsigned long long)s->bad_bytes);
  fprintf(o, "#   malformed lines skipped:                 %zu\n", s->malformed_lines);
  fprintf(o, "#   unknown record types skipped:            %zu\n", s->unknown_types);
  fprintf(o, "#   files without footer (unclean exit):     %zu\n", s->files_without_footer);
  if (s->salvage_files)
    fprintf(o, "#   salvage files merged into their dumps:   %zu (%zu records added, %zu already in the dump)\n",
            s->salvage_files, s->salvage_merged, s->salvage_dups);
  if (r->set->other_job_files)
    fprintf(o, "#   files of other jobs left out:            %zu\n", r->set->other_job_files);
  if (r->set->errors_omitted)
    fprintf(o, "#   problems not listed on stderr:           %zu\n", r->set->errors_omitted);
}

const struct report_section report_section_notes = {"notes", NULL, text_notes, NULL, NULL};
