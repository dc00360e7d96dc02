/* tools/report/report_agg.h: what `collscope report` needs from the op records, gathered while the
 * dumps stream by (tools/dump/dumpfile.c cs_dumpset_stream), in memory bounded by ranks x
 * communicators x the detector's window instead of by records (DESIGN.md "Reading dumps"):
 *  - per (op, comm size, size bucket) row: exact counts and byte range, durations in a
 *    fixed-error histogram (include/collscope/histogram.h; exact while the row has <= AGG_EXACT
 *    timed records), the row's median size exact
 *    while it has <= AGG_SIZES distinct sizes (else from a histogram of sizes, 0.5 %);
 *  - per file: ops, bytes, GPU time; per communicator: ops, bytes, GPU time, ranks seen,
 *    instances; the summary's timing counts;
 *  - stragglers and hangs: instances walked in seq order across files (tools/dump/instwalk.c)
 *    into the streaming detector (cs_det_stream_*);
 *  - SDC: each instance with a checked member compared as it completes; only findings kept.
 * Per-reading-thread tables are merged at the end; per-file state needs no lock (a file is
 * read by one thread per round, rounds do not overlap). */
#ifndef COLLSCOPE_TOOLS_REPORT_AGG_H
#define COLLSCOPE_TOOLS_REPORT_AGG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/comm_elsewhere.h"
#include "collscope/detect.h"
#include "collscope/finding_cost.h"
#include "collscope/histogram.h"
#include "collscope/peer_wait.h"
#include "dump/dumpfile.h"

#define AGG_SIZES 64
#define AGG_EXACT 1024 /* a row with at most this many timed records keeps them: exact percentiles */

/* An ops row whose figures rest on fewer timed records than this (but some) is marked
 * (text and HTML `*`, JSON "few_timed"), so that nobody reads a bandwidth built on two
 * samples. */
#define REPORT_FEW_TIMED 10
#define AGG_CRANK_BITS 1024 /* communicator ranks a file's bitmap tells apart (struct agg_file) */

struct agg_row {
  const char *op_name;
  const char *model; /* the ranks' GPU model (report --by-model), NULL when not split */
  int op, comm_size, bucket;
  size_t count;
  uint64_t bytes_min, bytes_max;
  struct agg_size {
    uint64_t v;
    size_t n;
  } * sizes; /* grown as needed, up to AGG_SIZES */
  size_t nsizes, capsizes;
  bool sizes_overflow; /* more distinct sizes: the median size comes from bytes_hist */
  struct cs_hist bytes_hist;
  /* durations of the "gpu_event" records: kept (exact, grown as needed) while there are at
   * most AGG_EXACT, then all of them in the histogram `dur` (its bucket array exists only
   * then, so a small row costs a few hundred bytes) */
  size_t timed;
  double dur_max;
  double dur_sum; /* for the mean (the statistic a host-timed benchmark loop reports) */
  double *exact;
  size_t nexact, capexact;
  bool exact_lost;
  struct cs_hist dur;
  /* groups (tools/report/report_agg_group.c): an op row counts its records that were group
   * members sharing their group's GPU span (`grouped`: counted, never timed); a group row
   * (group_ops > 0: the ops of the group, op_name its signature, op AlltoAll for an
   * all-to-all, else -1) has one record per rank and group, timed by the group's span, and
   * its bus factor is fbytes / gbytes (the members' bytes x their nccl-tests factor, over
   * their bytes) */
  size_t grouped;
  size_t group_ops;
  double fbytes, gbytes;
};
/* the row's nearest-rank percentiles: exact while it has <= AGG_EXACT timed records, else
 * from the histogram (within 0.5 %); and its nearest-rank median size */
double report_agg_row_pct(struct agg_row *r, double p);
uint64_t report_agg_row_bytes(const struct agg_row *r);

struct agg_comm {
  uint64_t comm;
  int size;
  size_t ops, ranks, instances;
  uint64_t bytes;
  double gpu_ms;
};

struct agg_file {
  size_t ops, errors;
  uint64_t bytes;
  double gpu_ms;
  /* the communicator ranks the file's process held in its largest communicator: how a
   * process without RANK (one process driving several GPUs) is named in the report */
  uint64_t rcomm;
  int rcomm_size, crank_lo, crank_hi;
  size_t ncrank; /* distinct ranks among the first AGG_CRANK_BITS */
  uint64_t crank_bits[AGG_CRANK_BITS / 64];
  size_t summary_xfers; /* COLLSCOPE_RECORD=summary: memcpys read from summary lines */
};
/* a file's memcpys: its xfer lines, or in summary mode (whose xfer lines are window detail)
 * those its summary lines count */
static inline size_t report_agg_file_xfers(const struct agg_file *af, const struct cs_dumpfile *f) {
  return f->nsummaries || f->nwindows ? af->summary_xfers : f->nxfers;
}

struct agg_counts {
  size_t ops, errors, timed, timed_profiler, timed_host_span, captured, host_timed, unknown_timing;
  size_t sampled_out; /* CUDA-event path, outside the event sample (COLLSCOPE_EVENT_SAMPLE) */
};

/* one SDC finding, as the report's sdc section prints it (tools/report/section_sdc.c) */
struct agg_sdc_item {
  uint64_t comm;
  int64_t seq;
  const char *op, *dtype, *host; /* host NULL when the suspect is unknown */
  uint64_t bytes;
  int check, suspect_comm_rank, suspect_rank; /* -1: unknown */
  double got, want, tol;
};
struct agg_sdc {
  size_t compared, fp_checked, sum_checked, skipped_nonfinite, skipped_incomplete;
  struct agg_sdc_item *items;
  size_t nitems, cap;
};

struct cs_walk_rec;
struct cs_sdc_member;
/* The SDC comparison of one collective instance (include/collscope/sdc.h), the one both the
 * streamed walk and the sdc section over a set loaded whole (collscope demo) use. m[0..n): the
 * instance's records sorted by comm_rank, then file, then file order, as the walk gives them
 * (of a duplicate comm_rank the first is compared). Nothing happens unless some record was
 * checked, all name the same op and it passes op_filter (NULL: any op); then the outcome is
 * counted in out and each finding appended, naming the suspect's own rank and host from its
 * record. It reads comm_rank, comm_size, status, op, op_name, dtype, redop, root, count,
 * bytes, rec_rank, host and the sdc_ fields. *mem, *memcap: scratch kept between calls. */
/* op record o of file f (index `file` in the walk) in the instance walk's form: every field the
 * record and its file give; state, counts and gap_us are the walk's and left zero */
struct cs_walk_rec report_agg_walk_rec(const struct cs_dumpfile *f, const struct cs_op_rec *o, uint32_t file);
void report_agg_sdc_instance(struct agg_sdc *out, struct cs_sdc_member **mem, size_t *memcap, const char *op_filter,
                             uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n);

struct report_agg {
  const char *op_filter; /* as given: a schema.h name, or any other name records may use */
  bool by_model;         /* rows split by the GPU model of the file's header (report --by-model) */
  bool filter_matched;   /* some record has that name */
  /* results, valid after report_agg_finish() */
  struct agg_row *rows;
  size_t nrows; /* sorted: op (schema order, then name), size, bucket */
  struct agg_comm *comms;
  size_t ncomms;          /* sorted by comm id */
  struct agg_file *files; /* by the file's read_index */
  struct agg_counts counts;
  struct cs_det_result det;
  struct agg_sdc sdc;
  size_t late_records;                         /* op records out of seq order, left out of the per-instance analyses */
  size_t sched_explained;                      /* cross-stage stragglers the pipeline schedule explains (analysis/schedule.c) */
  size_t peer_explained;                       /* link stragglers a flagged peer's wait explains (analysis/peer_wait.c), */
  const struct cs_pwait_moved *peer_moved;     /* each with the peer it moved to (owned by `steps`) */
  const struct cs_cost *cost;                  /* each finding's cost (finding_cost.h; owned by `steps`) */
  size_t comm_explained;                       /* stragglers the rank's longer time elsewhere explains */
  const struct cs_celse_explained *comm_moved; /* (analysis/comm_elsewhere.c; owned by `steps`) */
  size_t max_held;                             /* the most op records held at once (the walker's queues) */
  /* COLLSCOPE_RECORD=summary (docs/always-on.md): ops read from summary lines, those lines,
   * flight-recorder windows and their op lines (walked, not counted again) */
  size_t summary_ops, summary_lines, windows, window_ops;
  size_t summary_xfers;              /* CUDA memcpys read from summary lines */
  size_t gaps_refused;               /* gaps lines not taken: malformed, or more ops than their file counts */
  size_t gaps_sched_refused;         /* gaps lines whose schedule figures were not taken (malformed peers, last ops' seqs or gaps) */
  struct report_views *views;        /* the figures for pictures, per instance (tools/report/report_views.h) */
  struct report_balance *balance;    /* compute per rank and step, per instance (tools/report/report_balance.h) */
  struct report_steps_gather *steps; /* each rank's recent ops and their waits (tools/report/report_steps_internal.h) */
  struct report_agg_priv *priv;
};

/* A report over PATH (job: as cs_dumpset_load_job), streamed. Returns the set (NULL when
 * unusable, errors printed) and fills agg; jobs 0 = one per core; budget: bytes read per
 * round over all files (0: the default, see cs_stream_ops). A salvage file next to its
 * process's own dump needs the set loaded whole (cs_dumpset_stream); its records then go
 * through the same tables from memory. */
struct cs_dumpset *report_agg_run(const char *path, const char *job, const char *op_filter, unsigned jobs, size_t budget,
                                  const struct cs_det_params *detp, struct report_agg *agg);
/* The same with the rows split by GPU model (by_model). */
struct cs_dumpset *report_agg_run_split(const char *path, const char *job, const char *op_filter, unsigned jobs,
                                        size_t budget, const struct cs_det_params *detp, bool by_model,
                                        struct report_agg *agg);
void report_agg_free(struct report_agg *agg);

/* A dump op record as the detector sees it: failed (timing "error" or a non-zero status),
 * done (timed by GPU events), entered (its events sampled out: completion not observed),
 * untimed otherwise. (The report's walk and its detector input, tools/report/detect_input.c.) */
static inline bool report_op_is_error(const struct cs_op_rec *o) {
  return o->timing == CSD_TIMING_ERROR || o->status != 0;
}
static inline int report_op_det_state(const struct cs_op_rec *o) {
  return report_op_is_error(o)                 ? CS_DET_FAILED
         : o->timing == CSD_TIMING_GPU_EVENT   ? CS_DET_DONE
         : o->timing == CSD_TIMING_SAMPLED_OUT ? CS_DET_ENTERED
                                               : CS_DET_UNTIMED;
}

#endif
