/* tools/report/report.h: the report of a dump set as a table of sections.
 *
 * `collscope report` (tools/cmd_report.c) reads the dumps once (tools/report/report_agg.c) into the
 * shared inputs of struct report; then every section builds its own part of the model, and
 * prints it as text, as one key of the JSON document, or both. A section is one struct
 * report_section in its own file (section_*.c); the order of the report is the table in
 * sections.c. Adding a section: a file, a row in that table, a line in tools/meson.build
 * (CONTRIBUTING.md "Recipe 3: add a report section").
 *
 * The contract of the numbers (buckets, percentiles, bandwidths, links) is the header comment
 * of tools/cmd_report.c. */
#ifndef COLLSCOPE_TOOLS_REPORT_REPORT_H
#define COLLSCOPE_TOOLS_REPORT_REPORT_H
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "collscope/detect.h"
#include "collscope/links.h"
#include "dump/dumpfile.h"
#include "report_agg.h"

/* ---------- the models the sections build ---------- */

/* ops: one row per (op, communicator size, size bucket) */
struct op_row {
  const char *op_name;
  const char *model; /* --by-model: the ranks' GPU model, else NULL */
  int op;            /* enum cs_op or -1 */
  int comm_size;
  int bucket; /* -1 for bytes == 0 */
  uint64_t bucket_lo, bucket_hi, bytes, bytes_min, bytes_max;
  size_t count, timed;
  double p50, p99, max, mean; /* us, valid when timed > 0 */
  double algbw, busbw;        /* GB/s, valid when timed > 0 and p50 > 0 */
  double busbw_mean;          /* GB/s: size / mean x factor, valid when timed > 0 and mean > 0 */
  bool few;                   /* timed on fewer than REPORT_FEW_TIMED records (report_agg.h) */
  size_t grouped;             /* records that were group members sharing their group's span: untimed here */
  size_t group_ops;           /* a group row: the group's ops (its time is the group's span), 0 for an op row */
  double factor;              /* the bus factor: nccl-tests' for op, a group row's from its members */
};

struct report;
/* a file's rank for the tables: RANK, else its communicator ranks ("c0-7"), else "?" */
void report_rank_name(const struct report *r, const struct cs_dumpfile *f, char *out, size_t n);

/* ranks: one row per dump file */
struct rank_row {
  const struct cs_dumpfile *f;
  size_t ops, xfers, errors; /* errors: op records of calls that failed */
  double gpu_ms;
  uint64_t bytes, drops, lost;
};

/* comms: one row per communicator */
struct comm_row {
  uint64_t comm;
  int size;
  size_t ranks, ops, instances;
  uint64_t bytes;
  double gpu_ms;
};

/* summary: the whole set's counts (printed by the summary and notes sections) */
struct summary {
  size_t files, ranks, hosts, ops, xfers, instances;
  size_t judged; /* instances the straggler rules ran at (cs_det_result.judged) */
  size_t timed, captured, host_timed, errors, unknown_timing;
  /* sampled_out: outside the CUDA-event sample (COLLSCOPE_EVENT_SAMPLE), counted, not timed */
  size_t sampled_out;
  size_t timed_profiler, timed_host_span; /* of `timed`: NCCL profiler stamps, host clock; the rest CUDA events */
  uint64_t drops, timing_lost;
  uint64_t lost;                                      /* footer op + xfer counts minus the records read, over all files */
  size_t lost_files;                                  /* files with lost > 0 */
  size_t salvage_merged, salvage_dups, salvage_files; /* salvage files merged into their dumps */
  size_t truncated_lines, malformed_lines, unknown_types, files_without_footer;
  /* COLLSCOPE_BUDGET: op and xfer records not written (footers), the largest budget; zstd
   * files: last frames cut short and frames skipped, and their bytes */
  uint64_t budget_drops, budget, torn_bytes, bad_bytes;
  /* summary mode (footers): flight windows refused by the rate limit, ops without compute-gap
   * figures (left out of the balance section), collectives the local trigger could not key */
  uint64_t windows_suppressed, gaps_lost, local_unkeyed;
  size_t budget_files, torn_frames, bad_frames;
  /* NCCL profiler plugin standing per rank (footers): trusted, rejected, mixed, probation,
   * not_loaded, forced, an unknown one counted as "other"; probes compared / agreed on the
   * ranks that rejected some op type, and the op types rejected anywhere (first rank's list) */
  size_t prof_ranks[7];
  uint64_t rejected_probes, rejected_agreed;
  const char *rejected_ops;
  /* SDC standing per rank (footers, hooks/sdc_check.h), an unknown one counted as "other"; checks
   * skipped for want of a result slot */
  size_t sdc_ranks[8];
  uint64_t sdc_no_slot;
  /* the files whose self-test failed: a wrong result on a fixed input, while other
   * ranks' GPUs passed, points at that GPU */
  const struct cs_dumpfile **selftest_failed;
  size_t nselftest_failed;
};
#define REPORT_NPROF 7
#define REPORT_NSDC 8
extern const char *const report_prof_standings[REPORT_NPROF];
extern const char *const report_sdc_standings[REPORT_NSDC];
/* ranks whose SDC checks were off: every standing but ready and unused (section_summary.c) */
size_t report_sdc_off_ranks(const struct summary *s);

/* ---------- the report: shared inputs, then each section's model ---------- */

struct report {
  /* shared inputs, set before any section builds */
  const struct cs_dumpset *set;
  const char *op_filter;        /* canonical name or NULL */
  bool by_model;                /* --by-model: the ranks and ops tables split by GPU model */
  struct report_agg *agg;       /* the op figures gathered while the dumps streamed; NULL: read set's ops */
  struct report_health *health; /* GPU and IB health samples (section_health.c, tools/report/report_health.c) */
  struct cs_det_result det;     /* stragglers and hangs (analysis/detect.c) */
  struct cs_det_params detp;
  /* built by the sections */
  struct op_row *rows;
  size_t nrows; /* ops */
  struct rank_row *ranks;
  size_t nranks; /* ranks */
  struct comm_row *comms;
  size_t ncomms;      /* comms */
  struct summary sum; /* summary */
  struct cs_link_pair *links;
  size_t nlinks; /* links: NCCL_NET wrapper pairs (analysis/links.c) */
  struct cs_link_nic *nics;
  size_t nnics; /* slow_nics: hosts whose NIC slows all their pairs (analysis/link_nics.c) */
  struct cs_link_params linkp;
  size_t link_records;
  struct agg_sdc sdc; /* sdc: the cross-rank SDC comparison's counts and findings (report_agg.h) */
  /* balance (report --layers, --shares): today's layer count per pipeline stage and work
   * share per data-parallel rank; NULL when not given */
  const double *layers, *shares;
  size_t nlayers, nshares;
};

/* ---------- a section ---------- */

/* Every build runs (in table order) before any text or JSON is written, and reads only the
 * shared inputs; text and json may read what any section built. A NULL member: nothing to do
 * (e.g. a section with JSON only, or one that prints what another built). */
struct report_section {
  const char *name; /* the JSON key; the text follows the table's order */
  void (*build)(struct report *r);
  void (*text)(const struct report *r, FILE *o);
  json_t *(*json)(const struct report *r);
  void (*free)(struct report *r);
};

/* the table (sections.c) */
extern const struct report_section *const report_sections[];
extern const size_t report_nsections;

/* the sections, one struct each */
extern const struct report_section report_section_summary;      /* section_summary.c */
extern const struct report_section report_section_ops;          /* section_ops.c */
extern const struct report_section report_section_ranks;        /* section_ranks.c */
extern const struct report_section report_section_comms;        /* section_comms.c */
extern const struct report_section report_section_stragglers;   /* section_stragglers.c */
extern const struct report_section report_section_hangs;        /* section_hangs.c */
extern const struct report_section report_section_links;        /* section_links.c */
extern const struct report_section report_section_slow_links;   /* section_links.c */
extern const struct report_section report_section_slow_nics;    /* section_links.c */
extern const struct report_section report_section_sdc;          /* section_sdc.c */
extern const struct report_section report_section_sdc_checks;   /* section_sdc.c */
extern const struct report_section report_section_health;       /* section_health.c */
extern const struct report_section report_section_balance;      /* section_balance.c */
extern const struct report_section report_section_pipeline;     /* report_steps.c */
extern const struct report_section report_section_steps;        /* section_steps.c */
extern const struct report_section report_section_flight;       /* section_flight.c */
extern const struct report_section report_section_notes;        /* section_notes.c */
extern const struct report_section report_section_busbw_pct;    /* section_views.c: for pictures */
extern const struct report_section report_section_lateness;     /* section_views.c */
extern const struct report_section report_section_progress;     /* section_views.c */
extern const struct report_section report_section_sdc_timeline; /* section_views.c */

/* the slowest slow link pair (lowest ratio to the other pairs), or NULL (section_links.c) */
const struct cs_link_pair *report_slowest_link(const struct report *r);

/* ---------- shared by the sections' writers ---------- */

static inline json_t *jnum_or_null(bool ok, double v) {
  return ok && isfinite(v) ? json_real(v) : json_null();
}
static inline json_t *jcount(size_t v) { return json_integer((json_int_t)v); }
static inline json_t *jbytes(uint64_t v) {
  return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

#endif
