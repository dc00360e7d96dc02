/* tools/report/sections.c: the report's table of sections, in the order `collscope report`
 * prints them. Text prints every section with a text printer; --json emits one top-level key
 * per section with a JSON builder, plus "sections" (their names, in this order). A new
 * section is a file of its own (section_*.c, one struct report_section) and a row here. */
#include "report.h"

const struct report_section *const report_sections[] = {
    &report_section_summary,
    &report_section_ops,
    &report_section_ranks,
    &report_section_comms,
    &report_section_stragglers,
    &report_section_hangs,
    &report_section_links,      /* NCCL_NET wrapper (include/collscope/links.h) */
    &report_section_slow_links, /* JSON only: printed by the links text section */
    &report_section_slow_nics,  /* JSON only: printed by the links text section */
    &report_section_sdc,
    &report_section_sdc_checks, /* JSON only: the counts behind the sdc section */
    &report_section_health,     /* GPU and IB health, and what it explains */
    &report_section_balance,    /* how to split the work across GPUs of different speed (reads health) */
    &report_section_pipeline,   /* the pipeline schedule: stages, microbatches (reads balance) */
    &report_section_steps,      /* per rank and step: compute, comm, wait, bubble (reads balance) */
    &report_section_flight,     /* COLLSCOPE_RECORD=summary: windows, ops from summaries */
    &report_section_notes,      /* text only: its counts are in the JSON summary */
    &report_section_busbw_pct,  /* JSON only, for pictures (section_views.c) */
    &report_section_lateness,
    &report_section_progress,
    &report_section_sdc_timeline,
};
const size_t report_nsections = sizeof report_sections / sizeof report_sections[0];
