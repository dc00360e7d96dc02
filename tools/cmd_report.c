/* tools/cmd_report.c: `collscope report DIR [--json] [--op NAME] [-o FILE]`.
 *
 * Reads a directory of dump files (tools/dumpfile.c) and prints nccl-tests style tables:
 * per (op, communicator size, message-size bucket), per rank, per communicator, and notes.
 * The report is a list of sections (`sections[]` below); each has a text printer and/or a
 * JSON builder, so later analyses (stragglers, hangs, sdc) are added as new entries.
 *
 * Definitions (also the contract of the --json output):
 *  - Size bucket: a record with bytes B > 0 falls in bucket k = floor(log2 B), covering
 *    [2^k, 2^(k+1)); bucket_lo = 2^k, bucket_hi = 2^(k+1) - 1. Records with B == 0 form
 *    their own bucket (bucket_lo = bucket_hi = 0).
 *  - Row key: (op, comm_size, bucket). Rows count per-rank records (an AllReduce on 4 ranks
 *    is 4 records), like each nccl-tests rank timing its own call.
 *  - Row `bytes` (the representative size): the nearest-rank median (p50, below) of the
 *    `bytes` of all records in the row; it is the exact message size whenever the row holds a
 *    single size (the usual case). `bytes_min`/`bytes_max` give the spread.
 *  - Times: `dur_us` of the row's records whose timing is "gpu_event" only (`timed`);
 *    captured / host / error records are counted (`count`) but carry no time.
 *  - Percentiles: nearest-rank. For N values sorted ascending v[1..N] and 0 < p <= 100,
 *    P_p = v[ceil(p * N / 100)], i.e. the smallest observed value with at least p% of the
 *    values <= it. p50 of {90,95,100,100,100,100,120,300} = v[4] = 100, p99 = v[8] = 300.
 *  - algbw (GB/s) = bytes / (p50 time in s) / 1e9 = bytes / (p50_us * 1000).
 *  - busbw (GB/s) = algbw * cs_busbw_factor(op, comm_size) (nccl-tests factors, schema.h).
 *  - Communicator `instances`: distinct seq >= 0 (DESIGN.md: seq counts P2P calls too).
 *  - gpu_time_ms: sum of dur_us of "gpu_event" op records / 1000 (summed over the records
 *    counted, i.e. over all ranks for the communicator table).
 *  - Drops per file: cs_dumpfile_drops() (max of footer and drops records).
 *  - --op NAME restricts every table to op records named NAME (case-insensitive for names
 *    of schema.h); xfer (Memcpy) records are only counted when no --op is given.
 *  - links / slow_links: NCCL_NET wrapper "link" records per host pair, definitions in
 *    include/collscope/links.h. Hosts: the writing file's header host for its own end; the
 *    other end from the record with the same `conn` token in another file, else (send side)
 *    the host of the peer rank. Straggler entries of kind "link" with rank -1 get
 *    "src_host"/"dst_host" of the slowest slow pair (null when there is none).
 *
 * Exit status: 0 report written (malformed lines only produce messages on stderr),
 * 1 unusable input (no dump files, unreadable, unsupported schema) or write error, 2 usage. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "collscope/detect.h"
#include "collscope/links.h"
#include "collscope/schema.h"
#include "collscope/sdc.h"
#include "dumpfile.h"
#include "readpool.h"
#include "report_agg.h"
#include "report_health.h"
#include "xalloc.h"

/* ---------- model ---------- */

struct op_row {
  const char *op_name;
  int op;                 /* enum cs_op or -1 */
  int comm_size;
  int bucket;             /* -1 for bytes == 0 */
  uint64_t bucket_lo, bucket_hi, bytes, bytes_min, bytes_max;
  size_t count, timed;
  double p50, p99, max;   /* us, valid when timed > 0 */
  double algbw, busbw;    /* GB/s, valid when timed > 0 and p50 > 0 */
};

struct rank_row {
  const struct cs_dumpfile *f;
  size_t ops, xfers;
  double gpu_ms;
  uint64_t bytes, drops, lost;
};

struct comm_row {
  uint64_t comm;
  int size;
  size_t ranks, ops, instances;
  uint64_t bytes;
  double gpu_ms;
};

struct summary {
  size_t files, ranks, hosts, ops, xfers, instances;
  size_t timed, captured, host_timed, errors, unknown_timing;
  size_t timed_profiler, timed_host_span; /* of `timed`: NCCL profiler stamps, host clock; the rest CUDA events */
  uint64_t drops, timing_lost;
  uint64_t lost;          /* footer op + xfer counts minus the records read, over all files */
  size_t lost_files;      /* files with lost > 0 */
  size_t salvage_merged, salvage_dups, salvage_files;   /* salvage files merged into their dumps */
  size_t truncated_lines, malformed_lines, unknown_types, files_without_footer;
  /* NCCL profiler plugin standing per rank (footers): trusted, rejected, mixed, probation,
   * not_loaded, forced, an unknown one counted as "other"; probes compared / agreed on the
   * ranks that rejected some op type, and the op types rejected anywhere (first rank's list) */
  size_t prof_ranks[7];
  uint64_t rejected_probes, rejected_agreed;
  const char *rejected_ops;
  /* SDC standing per rank (footers, hooks/sdc.h), an unknown one counted as "other"; checks
   * skipped for want of a result slot */
  size_t sdc_ranks[8];
  uint64_t sdc_no_slot;
  /* the files whose self-test failed: a wrong result on a fixed input, while other
   * ranks' GPUs passed, points at that GPU */
  const struct cs_dumpfile **selftest_failed;
  size_t nselftest_failed;
};
#define NPROF 7
static const char *const prof_standings[NPROF] = {"trusted", "rejected", "mixed", "probation", "not_loaded", "forced",
                                                  "other"};
#define NSDC 8
static const char *const sdc_standings[NSDC] = {"ready", "unused", "compiled_out", "no_driver", "setup_failed",
                                                "selftest_failed", "selftest_timeout", "other"};
/* the index of footer standing v in names[0..n-1], the last ("other") when unknown */
static int standing_index(const char *const *names, int n, const char *v) {
  int k = 0;
  while (k < n - 1 && strcmp(v, names[k])) k++;
  return k;
}
/* ranks whose checks were off: every standing but ready and unused (the first two) */
static size_t sdc_off_ranks(const struct summary *s) {
  size_t n = 0;
  for (int k = 2; k < NSDC; k++) n += s->sdc_ranks[k];
  return n;
}

struct report {
  const struct cs_dumpset *set;
  const char *op_filter;  /* canonical name or NULL */
  struct op_row *rows; size_t nrows;
  struct rank_row *ranks; size_t nranks;
  struct comm_row *comms; size_t ncomms;
  struct summary sum;
  struct cs_det_result det;   /* stragglers and hangs (stats/detect.c) */
  struct cs_det_params detp;
  struct cs_link_pair *links; size_t nlinks;   /* NCCL_NET wrapper pairs (stats/links.c) */
  struct cs_link_params linkp;
  size_t link_records;
  struct report_agg *agg;     /* streamed (cmd_report): the op figures, instead of set's ops */
  struct report_health *health;   /* GPU and IB health samples (tools/report_health.c) */
};

/* ---------- helpers ---------- */


static bool is_error(const struct cs_op_rec *o) {
  return o->timing == CSD_TIMING_ERROR || o->status != 0;
}

/* ---------- building ---------- */

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

static void build_summary(struct report *r, const struct cs_op_rec **v, size_t n) {
  const struct cs_dumpset *set = r->set;
  struct summary *s = &r->sum;
  s->files = set->nfiles;
  const char **hosts = xcalloc(set->nfiles, sizeof *hosts);
  int *ranks = xcalloc(set->nfiles, sizeof *ranks);
  size_t nr = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    bool seen = false;
    for (size_t k = 0; k < s->hosts; k++) seen |= hosts[k] == f->hdr.host;   /* interned */
    if (!seen) hosts[s->hosts++] = f->hdr.host;
    if (f->hdr.rank >= 0) ranks[nr++] = f->hdr.rank;
    s->xfers += r->op_filter ? 0 : f->nxfers;
    s->drops += cs_dumpfile_drops(f);
    s->timing_lost += f->footer_timing_lost;
    s->lost = s->lost + f->lost < s->lost ? UINT64_MAX : s->lost + f->lost;
    s->lost_files += f->lost > 0;
    s->salvage_merged += f->merged_salvage;
    s->salvage_dups += f->dup_salvage;
    s->salvage_files += f->merged_salvage + f->dup_salvage > 0;
    s->truncated_lines += f->truncated_lines;
    s->malformed_lines += f->malformed_lines;
    s->unknown_types += f->unknown_types;
    s->files_without_footer += !f->has_footer;
    if (f->footer_profiler) {
      int k = standing_index(prof_standings, NPROF, f->footer_profiler);
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
    s->sdc_ranks[standing_index(sdc_standings, NSDC, f->footer_sdc)]++;
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
  s->ops = n;
  if (r->agg) {   /* streamed: counted while reading */
    const struct agg_counts *c = &r->agg->counts;
    s->ops = c->ops, s->errors = c->errors, s->timed = c->timed, s->timed_profiler = c->timed_profiler;
    s->timed_host_span = c->timed_host_span, s->captured = c->captured, s->host_timed = c->host_timed;
    s->unknown_timing = c->unknown_timing;
  }
  for (size_t i = 0; i < n; i++) {
    if (is_error(v[i])) s->errors++;
    switch (v[i]->timing) {
    case CSD_TIMING_GPU_EVENT:
      s->timed++;
      if (v[i]->timing_name && !strcmp(v[i]->timing_name, "profiler")) s->timed_profiler++;
      else if (v[i]->timing_name && !strcmp(v[i]->timing_name, "host_span")) s->timed_host_span++;
      break;
    case CSD_TIMING_CAPTURED: s->captured++; break;
    case CSD_TIMING_HOST: s->host_timed++; break;
    case CSD_TIMING_ERROR: break;
    default: s->unknown_timing++; break;
    }
  }
  for (size_t i = 0; i < r->ncomms; i++) s->instances += r->comms[i].instances;
}

/* ---------- building from the stream (tools/report_agg.c) ---------- */

static void build_from_agg(struct report *r) {
  struct report_agg *a = r->agg;
  r->rows = xcalloc(a->nrows, sizeof *r->rows);
  for (size_t i = 0; i < a->nrows; i++) {
    struct agg_row *ar = &a->rows[i];
    struct op_row *row = &r->rows[r->nrows++];
    row->op_name = ar->op_name;
    row->op = ar->op;
    row->comm_size = ar->comm_size;
    row->bucket = ar->bucket;
    row->bucket_lo = row->bucket < 0 ? 0 : (uint64_t)1 << row->bucket;
    row->bucket_hi = row->bucket < 0 ? 0 : row->bucket == 63 ? UINT64_MAX
                                                             : ((uint64_t)1 << (row->bucket + 1)) - 1;
    row->count = ar->count;
    row->bytes_min = ar->bytes_min;
    row->bytes_max = ar->bytes_max;
    row->bytes = report_agg_row_bytes(ar);
    row->timed = ar->timed;
    if (row->timed) {
      row->p50 = report_agg_row_pct(ar, 50);
      row->p99 = report_agg_row_pct(ar, 99);
      row->max = ar->dur_max;
      if (row->p50 > 0) {
        row->algbw = (double)row->bytes / (row->p50 * 1e3);
        row->busbw = row->algbw * (row->op >= 0 ? cs_busbw_factor((enum cs_op)row->op, row->comm_size) : 1.0);
      }
    }
  }
  r->comms = xcalloc(a->ncomms, sizeof *r->comms);
  for (size_t i = 0; i < a->ncomms; i++)
    r->comms[r->ncomms++] = (struct comm_row){a->comms[i].comm, a->comms[i].size, a->comms[i].ranks, a->comms[i].ops,
                                              a->comms[i].instances, a->comms[i].bytes, a->comms[i].gpu_ms};
  const struct cs_dumpset *set = r->set;
  r->ranks = xcalloc(set->nfiles, sizeof *r->ranks);
  r->nranks = set->nfiles;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    const struct agg_file *af = &a->files[f->read_index];
    struct rank_row *rr = &r->ranks[i];
    rr->f = f;
    rr->ops = af->ops;
    rr->xfers = r->op_filter ? 0 : f->nxfers;
    rr->gpu_ms = af->gpu_ms;
    rr->bytes = af->bytes;
    rr->drops = cs_dumpfile_drops(f);
    rr->lost = f->lost;
  }
  build_summary(r, NULL, 0);
  r->det = a->det;   /* moved */
  memset(&a->det, 0, sizeof a->det);
}

/* ---------- text sections ---------- */

static void text_summary(const struct report *r, FILE *o) {
  const struct summary *s = &r->sum;
  char b1[512], b2[128], b3[256];
  fprintf(o, "# collscope report: %s%s%s%s%s\n", cs_text_safe(r->set->path, b1, sizeof b1),
          r->op_filter ? "  op " : "", r->op_filter ? cs_text_safe(r->op_filter, b2, sizeof b2) : "",
          *r->set->job ? "  job " : "", cs_text_safe(r->set->job, b3, sizeof b3));
  fprintf(o, "# files %zu  ranks %zu  hosts %zu  op records %zu  xfer records %zu  instances %zu\n",
          s->files, s->ranks, s->hosts, s->ops, s->xfers, s->instances);
}

static void text_ops(const struct report *r, FILE *o) {
  fprintf(o, "\n# Operations: per-rank records; time from GPU events (nearest-rank percentiles);\n"
             "# algbw = size / p50 time, busbw = algbw x nccl-tests factor for nranks\n");
  fprintf(o, "# %13s %6s %12s %12s %7s %7s %10s %10s %10s %11s %11s\n", "op", "nranks", "size(B)",
          "bucket_lo", "count", "timed", "p50(us)", "p99(us)", "max(us)", "algbw(GB/s)",
          "busbw(GB/s)");
  char b[128];
  for (size_t i = 0; i < r->nrows; i++) {
    const struct op_row *w = &r->rows[i];
    fprintf(o, "  %13s %6d %12llu %12llu %7zu %7zu", cs_text_safe(w->op_name, b, sizeof b), w->comm_size,
            (unsigned long long)w->bytes, (unsigned long long)w->bucket_lo, w->count, w->timed);
    if (w->timed)
      fprintf(o, " %10.2f %10.2f %10.2f", w->p50, w->p99, w->max);
    else
      fprintf(o, " %10s %10s %10s", "-", "-", "-");
    if (w->timed && w->p50 > 0)
      fprintf(o, " %11.2f %11.2f\n", w->algbw, w->busbw);
    else
      fprintf(o, " %11s %11s\n", "-", "-");
  }
  if (!r->nrows) fprintf(o, "  (no op records)\n");
}

static int host_width(const struct report *r) {
  int w = 4;
  char b[128];
  for (size_t i = 0; i < r->nranks; i++) {
    int l = (int)strlen(cs_text_safe(r->ranks[i].f->hdr.host, b, sizeof b));
    if (l > w) w = l;
  }
  return w > 40 ? 40 : w;
}

static void text_ranks(const struct report *r, FILE *o) {
  int hw = host_width(r);
  fprintf(o, "\n# Ranks\n");
  fprintf(o, "# %5s  %-*s %8s %8s %6s %6s %13s %14s %6s %6s  %s\n", "rank", hw, "host", "pid", "records",
          "ops", "xfers", "gpu_time(ms)", "bytes", "drops", "lost", "exit");
  char b[128];
  for (size_t i = 0; i < r->nranks; i++) {
    const struct rank_row *w = &r->ranks[i];
    char rank[16];
    if (w->f->hdr.rank >= 0) snprintf(rank, sizeof rank, "%d", w->f->hdr.rank);
    else snprintf(rank, sizeof rank, "?");
    /* exit: no-footer (the process did not exit cleanly), lost (its footer counts records the
     * file does not hold), else clean */
    fprintf(o, "  %5s  %-*s %8lld %8zu %6zu %6zu %13.3f %14llu %6llu %6llu  %s\n", rank, hw,
            cs_text_safe(w->f->hdr.host, b, sizeof b), w->f->hdr.pid, w->ops + w->xfers, w->ops, w->xfers,
            w->gpu_ms, (unsigned long long)w->bytes, (unsigned long long)w->drops, (unsigned long long)w->lost,
            !w->f->has_footer ? "no-footer" : w->lost ? "lost" : "clean");
  }
}

static void text_comms(const struct report *r, FILE *o) {
  fprintf(o, "\n# Communicators\n");
  fprintf(o, "# %-16s %6s %6s %8s %10s %16s %13s\n", "comm", "size", "ranks", "ops", "instances",
          "bytes", "gpu_time(ms)");
  char hex[17];
  for (size_t i = 0; i < r->ncomms; i++) {
    const struct comm_row *c = &r->comms[i];
    fprintf(o, "  %-16s %6d %6zu %8zu %10zu %16llu %13.3f\n", cs_comm_hex(c->comm, hex), c->size,
            c->ranks, c->ops, c->instances, (unsigned long long)c->bytes, c->gpu_ms);
  }
  if (!r->ncomms) fprintf(o, "  (no communicators)\n");
}

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
  if (note_counts(o, "NCCL profiler plugin, ranks:", prof_standings, s->prof_ranks, NPROF)) {
    if (s->prof_ranks[1] || s->prof_ranks[2])
      fprintf(o, " (rejecting ranks: %llu of %llu probes agreed with CUDA events; rejected: %s)",
              (unsigned long long)s->rejected_agreed, (unsigned long long)s->rejected_probes,
              s->rejected_ops ? cs_text_safe(s->rejected_ops, b, sizeof b) : "?");
    fprintf(o, "\n");
  }
  if (note_counts(o, "SDC checks, ranks:", sdc_standings, s->sdc_ranks, NSDC)) {
    if (sdc_off_ranks(s))
      fprintf(o, " -- checks off on %zu rank(s), whose collectives went unchecked (their logs say why)",
              sdc_off_ranks(s));
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
  fprintf(o, "#   error ops (call failed):                 %zu\n", s->errors);
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

/* ---------- JSON sections ---------- */

static json_t *jnum_or_null(bool ok, double v) {
  return ok && isfinite(v) ? json_real(v) : json_null();
}
static json_t *jcount(size_t v) { return json_integer((json_int_t)v); }
static json_t *jbytes(uint64_t v) {
  return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
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
  json_object_set_new(o, "timed", jcount(s->timed));
  json_object_set_new(o, "timed_gpu_event", jcount(s->timed - s->timed_profiler - s->timed_host_span));
  json_object_set_new(o, "timed_profiler", jcount(s->timed_profiler));
  json_object_set_new(o, "timed_host_span", jcount(s->timed_host_span));
  json_object_set_new(o, "captured", jcount(s->captured));
  json_t *pj = json_object();
  for (int k = 0; k < NPROF; k++) json_object_set_new(pj, prof_standings[k], jcount(s->prof_ranks[k]));
  json_object_set_new(o, "profiler_ranks", pj);
  json_t *sj = json_object();
  for (int k = 0; k < NSDC; k++) json_object_set_new(sj, sdc_standings[k], jcount(s->sdc_ranks[k]));
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
  json_object_set_new(o, "malformed_lines", jcount(s->malformed_lines));
  json_object_set_new(o, "unknown_types", jcount(s->unknown_types));
  json_object_set_new(o, "files_without_footer", jcount(s->files_without_footer));
  json_object_set_new(o, "op_filter", r->op_filter ? json_string(r->op_filter) : json_null());
  return o;
}

static json_t *json_ops(const struct report *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->nrows; i++) {
    const struct op_row *w = &r->rows[i];
    json_t *o = json_object();
    json_object_set_new(o, "op", json_string(w->op_name));
    json_object_set_new(o, "comm_size", json_integer(w->comm_size));
    json_object_set_new(o, "bucket_lo", jbytes(w->bucket_lo));
    json_object_set_new(o, "bucket_hi", jbytes(w->bucket_hi));
    json_object_set_new(o, "bytes", jbytes(w->bytes));
    json_object_set_new(o, "bytes_min", jbytes(w->bytes_min));
    json_object_set_new(o, "bytes_max", jbytes(w->bytes_max));
    json_object_set_new(o, "count", jcount(w->count));
    json_object_set_new(o, "timed", jcount(w->timed));
    if (w->timed) {
      json_t *t = json_object();
      json_object_set_new(t, "p50", json_real(w->p50));
      json_object_set_new(t, "p99", json_real(w->p99));
      json_object_set_new(t, "max", json_real(w->max));
      json_object_set_new(o, "time_us", t);
    } else {
      json_object_set_new(o, "time_us", json_null());
    }
    bool bw = w->timed && w->p50 > 0;
    json_object_set_new(o, "algbw_gbs", jnum_or_null(bw, w->algbw));
    json_object_set_new(o, "busbw_gbs", jnum_or_null(bw, w->busbw));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *json_ranks(const struct report *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->nranks; i++) {
    const struct rank_row *w = &r->ranks[i];
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(w->f->hdr.rank));
    json_object_set_new(o, "host", json_string(w->f->hdr.host));
    json_object_set_new(o, "pid", json_integer(w->f->hdr.pid));
    json_object_set_new(o, "file", json_string(w->f->name));
    json_object_set_new(o, "records", jcount(w->ops + w->xfers));
    json_object_set_new(o, "ops", jcount(w->ops));
    json_object_set_new(o, "xfers", jcount(w->xfers));
    json_object_set_new(o, "gpu_time_ms", json_real(w->gpu_ms));
    json_object_set_new(o, "bytes", jbytes(w->bytes));
    json_object_set_new(o, "drops", jbytes(w->drops));
    json_object_set_new(o, "lost", jbytes(w->lost));
    json_object_set_new(o, "truncated_lines", jcount(w->f->truncated_lines));
    json_object_set_new(o, "malformed_lines", jcount(w->f->malformed_lines));
    json_object_set_new(o, "footer", json_boolean(w->f->has_footer));
    json_object_set_new(o, "clean_exit", json_boolean(w->f->has_footer && !w->lost));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *json_comms(const struct report *r) {
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < r->ncomms; i++) {
    const struct comm_row *c = &r->comms[i];
    json_t *o = json_object();
    json_object_set_new(o, "comm", json_string(cs_comm_hex(c->comm, hex)));
    json_object_set_new(o, "size", json_integer(c->size));
    json_object_set_new(o, "ranks", jcount(c->ranks));
    json_object_set_new(o, "ops", jcount(c->ops));
    json_object_set_new(o, "instances", jcount(c->instances));
    json_object_set_new(o, "bytes", jbytes(c->bytes));
    json_object_set_new(o, "gpu_time_ms", json_real(c->gpu_ms));
    json_array_append_new(a, o);
  }
  return a;
}

/* ---------- stragglers and hangs (include/collscope/detect.h) ---------- */

/* Per communicator, the comm_ranks its records name, ascending: the detector works on their
 * index (dense, 0..seen-1), so its per-communicator state is sized by the ranks actually seen,
 * never by a comm_size or comm_rank read from a file; results get the real ones back. */
struct comm_ranks {
  uint64_t comm;
  int declared;             /* the largest comm_size a record gives */
  size_t off, n;            /* its ranks: real[off .. off + n) */
};
struct rank_ids {
  struct comm_ranks *c; size_t nc;
  int *real;
};
struct comm_rank_pair { uint64_t comm; int rank, size; };
static int cmp_comm_rank(const void *a, const void *b) {
  const struct comm_rank_pair *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}
static int cmp_int(const void *a, const void *b);
static void rank_ids_build(struct rank_ids *m, const struct cs_det_op *v, size_t n) {
  struct comm_rank_pair *p = xcalloc(n, sizeof *p);
  for (size_t i = 0; i < n; i++) p[i] = (struct comm_rank_pair){v[i].comm, v[i].comm_rank, v[i].comm_size};
  if (n) qsort(p, n, sizeof *p, cmp_comm_rank);
  m->c = xcalloc(n, sizeof *m->c);
  m->real = xcalloc(n, sizeof *m->real);
  m->nc = 0;
  size_t nr = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || p[i].comm != p[i - 1].comm) m->c[m->nc++] = (struct comm_ranks){p[i].comm, p[i].size, nr, 0};
    struct comm_ranks *c = &m->c[m->nc - 1];
    if (p[i].size > c->declared) c->declared = p[i].size;
    if (p[i].rank < 0 || (c->n && m->real[nr - 1] == p[i].rank)) continue;
    m->real[nr++] = p[i].rank;
    c->n++;
  }
  free(p);
}
static const struct comm_ranks *rank_ids_comm(const struct rank_ids *m, uint64_t comm) {
  size_t lo = 0, hi = m->nc;
  while (lo < hi) {
    size_t k = (lo + hi) / 2;
    if (m->c[k].comm < comm) lo = k + 1;
    else hi = k;
  }
  return lo < m->nc && m->c[lo].comm == comm ? &m->c[lo] : NULL;
}
/* dense index of comm_rank r, -1 when negative */
static int rank_ids_dense(const struct rank_ids *m, const struct comm_ranks *c, int r) {
  if (r < 0 || !c) return -1;
  const int *p = bsearch(&r, m->real + c->off, c->n, sizeof *p, cmp_int);
  return p ? (int)(p - (m->real + c->off)) : -1;
}
static int rank_ids_real(const struct rank_ids *m, uint64_t comm, int dense) {
  const struct comm_ranks *c = rank_ids_comm(m, comm);
  return c && dense >= 0 && (size_t)dense < c->n ? m->real[c->off + (size_t)dense] : dense;
}
static int rank_ids_declared(const struct rank_ids *m, uint64_t comm, int dense_size) {
  const struct comm_ranks *c = rank_ids_comm(m, comm);
  return c && c->declared > dense_size ? c->declared : dense_size;
}

/* Every op record of the set (all comms, no --op filter) plus the shim's "hang" records
 * as detector input. */
int cli_detect_dumpset(const struct cs_dumpset *set, const struct cs_det_params *p, struct cs_det_result *out) {
  size_t n = 0;
  for (size_t i = 0; i < set->nfiles; i++) n += set->files[i].nops + set->files[i].nhangs;
  struct cs_det_op *v = xcalloc(n, sizeof *v);
  size_t k = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t j = 0; j < f->nops; j++) {
      const struct cs_op_rec *o = &f->ops[j];
      if (o->seq < 0) continue;
      struct cs_det_op *d = &v[k++];
      d->comm = o->comm;
      d->seq = o->seq;
      d->comm_size = o->comm_size;
      d->comm_rank = o->comm_rank;
      d->rank = o->rank >= 0 ? o->rank : f->hdr.rank;
      d->host = f->hdr.host;
      d->start_ns = o->start_ns;
      d->end_ns = o->end_ns;
      d->enqueue_ns = o->enqueue_ns;
      d->state = is_error(o) ? CS_DET_FAILED : o->timing == CSD_TIMING_GPU_EVENT ? CS_DET_DONE : CS_DET_UNTIMED;
      d->p2p = o->op >= 0 && cs_op_table[o->op].cls == CS_CLASS_P2P;
      d->bytes = o->bytes;
    }
    for (size_t j = 0; j < f->nhangs; j++) {
      const struct cs_hang_rec *h = &f->hangs[j];
      struct cs_det_op *d = &v[k++];
      d->comm = h->comm;
      d->seq = h->seq;
      d->comm_size = h->comm_size;
      d->comm_rank = h->comm_rank;
      d->rank = h->rank >= 0 ? h->rank : f->hdr.rank;
      d->host = f->hdr.host;
      d->enqueue_ns = h->enqueue_ns;
      d->state = CS_DET_PENDING;
    }
  }
  struct rank_ids ids;
  rank_ids_build(&ids, v, k);
  for (size_t i = 0; i < k; i++) {
    const struct comm_ranks *c = rank_ids_comm(&ids, v[i].comm);
    v[i].comm_rank = rank_ids_dense(&ids, c, v[i].comm_rank);
    v[i].comm_size = c ? (int)c->n : 0;
  }
  int rc = cs_detect(v, k, p, CS_DET_HANG_PENDING, out);
  if (rc == 0) {
    for (size_t i = 0; i < out->nstragglers; i++) {
      struct cs_det_straggler *s = &out->stragglers[i];
      if (s->comm_rank >= 0) s->comm_rank = rank_ids_real(&ids, s->comm, s->comm_rank);
      s->comm_size = rank_ids_declared(&ids, s->comm, s->comm_size);
    }
    for (size_t i = 0; i < out->nranks; i++)
      out->ranks[i].comm_rank = rank_ids_real(&ids, out->ranks[i].comm, out->ranks[i].comm_rank);
    for (size_t i = 0; i < out->nhangs; i++)
      out->hangs[i].comm_size = rank_ids_declared(&ids, out->hangs[i].comm, out->hangs[i].comm_size);
  }
  free(ids.c);
  free(ids.real);
  free(v);
  return rc;
}

static const struct cs_link_pair *slowest_pair(const struct report *r);
static void text_stragglers(const struct report *r, FILE *o) {
  const struct cs_link_pair *q0 = slowest_pair(r);
  char **causes = xcalloc(r->det.nstragglers + 1, sizeof *causes);   /* the cause column */
  for (size_t i = 0; i < r->det.nstragglers; i++)
    causes[i] = xstrdup(report_health_cause_text(r->health, &r->det.stragglers[i], q0 ? q0->src_host : NULL,
                                                 q0 ? q0->dst_host : NULL, (char[256]){0}, 256));
  cli_text_stragglers_causes(&r->det, &r->detp, o, (const char *const *)causes);
  for (size_t i = 0; i < r->det.nstragglers; i++) free(causes[i]);
  free(causes);
  const struct cs_link_pair *q = slowest_pair(r);
  char b1[128], b2[128];
  for (size_t i = 0; i < r->det.nstragglers; i++)
    if (r->det.stragglers[i].kind == CS_DET_LINK && r->det.stragglers[i].rank < 0) {
      if (q) fprintf(o, "  link entries: slow host pair %s -> %s (%.3g Gbit/s p50 vs %.3g for the other pairs; see links)\n",
                     cs_text_safe(q->src_host, b1, sizeof b1), cs_text_safe(q->dst_host, b2, sizeof b2),
                     q->gbps_p50, q->ref_gbps_p50);
      else fprintf(o, "  link entries: no NCCL_NET link records name a slow host pair\n");
      break;
    }
}
static void text_hangs(const struct report *r, FILE *o) { cli_text_hangs(&r->det, o); }
static json_t *json_stragglers(const struct report *r) {
  json_t *a = cli_json_stragglers(&r->det);
  const struct cs_link_pair *q = slowest_pair(r);
  for (size_t i = 0; i < r->det.nstragglers && i < json_array_size(a); i++) {
    if (r->det.stragglers[i].kind != CS_DET_LINK || r->det.stragglers[i].rank >= 0) continue;
    json_t *o = json_array_get(a, i);
    json_object_set_new(o, "src_host", q ? json_string(q->src_host) : json_null());
    json_object_set_new(o, "dst_host", q ? json_string(q->dst_host) : json_null());
  }
  for (size_t i = 0; i < r->det.nstragglers && i < json_array_size(a); i++)   /* tools/report_health.c */
    json_object_set_new(json_array_get(a, i), "causes", report_health_causes(r->health, &r->det.stragglers[i],
                        q ? q->src_host : NULL, q ? q->dst_host : NULL));
  return a;
}
static json_t *json_hangs(const struct report *r) { return cli_json_hangs(&r->det); }

void cli_text_stragglers(const struct cs_det_result *det, const struct cs_det_params *p, FILE *o) {
  cli_text_stragglers_causes(det, p, o, NULL);
}
void cli_text_stragglers_causes(const struct cs_det_result *det, const struct cs_det_params *p, FILE *o,
                                const char *const *causes) {
  fprintf(o, "\n# Stragglers: last arrival = shortest GPU duration of a collective instance;\n"
             "# offset = median(duration) - own duration (> 0: arrived after the median rank);\n"
             "# flagged over the last %u instances of a comm (at least %u), on %u consecutive instances,\n"
             "# when its median offset is %.1f robust sigma above 0 (or, over the last %u instances only,\n"
             "# %.1f sigma and after the median rank in >= %.0f%% of them),\n"
             "# or when it is last more often than max(%.0f%%, chance + %.1f sigma) with median lateness when\n"
             "# last; either figure >= max(%.0f us, %.1f%% of the median duration); `after`: instances until\n"
             "# flagged; %zu evaluated\n",
          p->window, p->min_instances, p->persist, p->offset_z, p->recent, p->recent_z, p->recent_share * 100,
          p->share * 100, p->z, p->floor_us, p->frac * 100, det->instances);
  fprintf(o, "# %5s  %-16s %-16s %10s %12s %12s %10s %12s %8s  %-7s%s\n", "rank", "host", "comm", "share_last",
          "lateness_us", "median_us", "gap_us", "peer_gap_us", "after", "kind", causes ? " cause" : "");
  char hex[17], b[128];
  for (size_t i = 0; i < det->nstragglers; i++) {
    const struct cs_det_straggler *s = &det->stragglers[i];
    fprintf(o, "  %5d  %-16s %-16s %10.2f %12.1f %12.1f %10.1f %12.1f %8zu  %-7s%s%s\n", s->rank,
            s->host ? cs_text_safe(s->host, b, sizeof b) : s->kind == CS_DET_LINK ? "(network)" : "?", cs_comm_hex(s->comm, hex), s->share_last, s->lateness_us,
            s->median_dur_us, s->gap_us, s->peer_gap_us, s->first_flag_instance, cs_det_kind_name(s->kind),
            causes ? " " : "", causes ? causes[i] : "");
  }
  if (!det->nstragglers) fprintf(o, "  (none)\n");
}

void cli_text_hangs(const struct cs_det_result *det, FILE *o) {
  fprintf(o, "\n# Hangs: ops the shim reported not complete after COLLSCOPE_HANG_TIMEOUT;\n"
             "# reached = highest seq every rank completed; missing = ranks that have not entered the\n"
             "# next seq; stuck = ranks inside it\n");
  char hex[17];
  for (size_t i = 0; i < det->nhangs; i++) {
    const struct cs_det_hang *h = &det->hangs[i];
    fprintf(o, "  comm %s size %d: reached seq %lld, stuck at seq %lld\n", cs_comm_hex(h->comm, hex),
            h->comm_size, (long long)h->reached, (long long)h->seq);
    char b[128];
    fprintf(o, "    missing (not entered):");
    for (size_t k = 0; k < h->nmissing; k++)
      fprintf(o, " %d@%s", h->missing[k], cs_text_safe(h->missing_hosts[k], b, sizeof b));
    fprintf(o, "%s\n    stuck (entered, not complete):", h->nmissing ? "" : " none");
    for (size_t k = 0; k < h->nstuck; k++) fprintf(o, " %d@%s", h->stuck[k], cs_text_safe(h->stuck_hosts[k], b, sizeof b));
    fprintf(o, "%s\n", h->nstuck ? "" : " none");
  }
  if (!det->nhangs) fprintf(o, "  (none)\n");
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
    json_object_set_new(o, "kind", json_string(cs_det_kind_name(s->kind)));
    json_array_append_new(a, o);
  }
  return a;
}

json_t *cli_json_hangs(const struct cs_det_result *det) {
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < det->nhangs; i++) {
    const struct cs_det_hang *h = &det->hangs[i];
    json_t *o = json_object(), *mr = json_array(), *mh = json_array(), *sr = json_array(), *sh = json_array();
    json_object_set_new(o, "comm", json_string(cs_comm_hex(h->comm, hex)));
    json_object_set_new(o, "comm_size", json_integer(h->comm_size));
    json_object_set_new(o, "reached", json_integer(h->reached));
    json_object_set_new(o, "seq", json_integer(h->seq));
    for (size_t k = 0; k < h->nmissing; k++) {
      json_array_append_new(mr, json_integer(h->missing[k]));
      json_array_append_new(mh, json_string(h->missing_hosts[k]));
    }
    for (size_t k = 0; k < h->nstuck; k++) {
      json_array_append_new(sr, json_integer(h->stuck[k]));
      json_array_append_new(sh, json_string(h->stuck_hosts[k]));
    }
    json_object_set_new(o, "missing_ranks", mr);
    json_object_set_new(o, "hosts", mh);
    json_object_set_new(o, "stuck_ranks", sr);
    json_object_set_new(o, "stuck_hosts", sh);
    json_array_append_new(a, o);
  }
  return a;
}

/* ---------- links: NCCL_NET wrapper link records per host pair (include/collscope/links.h) ---------- */

struct conn_end { uint64_t conn; const char *host; int rank; bool send; };
static int cmp_conn_end(const void *a, const void *b) {
  const struct conn_end *x = a, *y = b;
  if (x->conn != y->conn) return x->conn < y->conn ? -1 : 1;
  return (int)x->send - (int)y->send;
}
/* the other end of connection `conn` (send: the receiving end), or NULL */
static const struct conn_end *other_end(const struct conn_end *v, size_t n, uint64_t conn, bool send) {
  if (!conn) return NULL;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (v[m].conn < conn) lo = m + 1;
    else hi = m;
  }
  for (size_t i = lo; i < n && v[i].conn == conn; i++)
    if (v[i].send != send) return &v[i];
  return NULL;
}

/* the host of global rank r (the first file that names it), by binary search over the
 * files, which are sorted by rank: no table sized by a rank number read from a file */
static const char *host_of_rank(const struct cs_dumpset *set, int r) {
  size_t lo = 0, hi = set->nfiles;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if ((unsigned)set->files[m].hdr.rank < (unsigned)r) lo = m + 1;   /* -1 sorts last */
    else hi = m;
  }
  return lo < set->nfiles && set->files[lo].hdr.rank == r ? set->files[lo].hdr.host : NULL;
}

static void build_links(struct report *r) {
  const struct cs_dumpset *set = r->set;
  size_t n = 0;
  for (size_t i = 0; i < set->nfiles; i++) n += set->files[i].nlinks;
  r->link_records = n;
  if (!n) return;
  struct conn_end *ends = xcalloc(n, sizeof *ends);
  struct cs_link_obs *obs = xcalloc(n, sizeof *obs);
  size_t k = 0;
  for (size_t i = 0; i < set->nfiles; i++)
    for (size_t j = 0; j < set->files[i].nlinks; j++) {
      const struct cs_link_rec *l = &set->files[i].links[j];
      ends[k++] = (struct conn_end){l->conn, set->files[i].hdr.host, l->rank >= 0 ? l->rank : set->files[i].hdr.rank, l->send};
    }
  qsort(ends, n, sizeof *ends, cmp_conn_end);
  k = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t j = 0; j < f->nlinks; j++) {
      const struct cs_link_rec *l = &f->links[j];
      struct cs_link_obs *o = &obs[k++];
      const struct conn_end *e = other_end(ends, n, l->conn, l->send);
      int me = l->rank >= 0 ? l->rank : f->hdr.rank;
      const char *ohost = e ? e->host : NULL;
      int orank = e ? e->rank : l->peer;
      if (!ohost && l->send && l->peer >= 0) ohost = host_of_rank(set, l->peer);
      o->send = l->send;
      o->src_host = l->send ? f->hdr.host : ohost;
      o->dst_host = l->send ? ohost : f->hdr.host;
      o->src_rank = l->send ? me : orank;
      o->dst_rank = l->send ? orank : me;
      o->bytes = l->bytes;
      o->msgs = l->msgs;
      o->busy_us = l->busy_us;
      o->gbps_p50 = l->gbps_p50;
      o->gbps_p10 = l->gbps_p10;
    }
  }
  if (cs_links_aggregate(obs, n, &r->linkp, &r->links, &r->nlinks) != 0)
    fputs("collscope report: links out of memory\n", stderr);
  free(obs);
  free(ends);
}

static const struct cs_link_pair *slowest_pair(const struct report *r) {
  const struct cs_link_pair *best = NULL;
  for (size_t i = 0; i < r->nlinks; i++) {
    const struct cs_link_pair *q = &r->links[i];
    if (!q->slow) continue;
    double ratio = q->ref_gbps_p50 > 0 ? q->gbps_p50 / q->ref_gbps_p50 : 1;
    if (!best || ratio < best->gbps_p50 / best->ref_gbps_p50) best = q;
  }
  return best;
}

static void text_links(const struct report *r, FILE *o) {
  if (!r->link_records) return;   /* no NCCL_NET wrapper in this job */
  fprintf(o, "\n# Links (NCCL_NET wrapper): per host pair, Gbit/s = byte-weighted per-message throughput\n"
             "# (post to done) p50 / p10; side = which end measured it; slow: p50 < %.2f x the median of\n"
             "# the other pairs (pairs with >= %llu bytes)\n",
          r->linkp.slow_frac, (unsigned long long)r->linkp.min_bytes);
  fprintf(o, "# %-16s %-16s %14s %10s %12s %12s %5s  %s\n", "src_host", "dst_host", "bytes", "msgs", "gbps_p50",
          "gbps_p10", "side", "slow");
  char b1[128], b2[128];
  for (size_t i = 0; i < r->nlinks; i++) {
    const struct cs_link_pair *q = &r->links[i];
    fprintf(o, "  %-16s %-16s %14llu %10llu %12.3f %12.3f %5s  %s\n",
            q->src_host ? cs_text_safe(q->src_host, b1, sizeof b1) : "?",
            q->dst_host ? cs_text_safe(q->dst_host, b2, sizeof b2) : "?", (unsigned long long)q->bytes, (unsigned long long)q->msgs, q->gbps_p50,
            q->gbps_p10, q->from_send ? "send" : "recv", q->slow ? "SLOW" : "");
  }
  size_t nslow = 0;
  for (size_t i = 0; i < r->nlinks; i++)
    if (r->links[i].slow) {
      const struct cs_link_pair *q = &r->links[i];
      fprintf(o, "  slow link: %s -> %s at %.3g Gbit/s p50, %.3g x the other pairs' median (%.3g)\n",
              cs_text_safe(q->src_host, b1, sizeof b1), cs_text_safe(q->dst_host, b2, sizeof b2), q->gbps_p50, q->ref_gbps_p50 > 0 ? q->gbps_p50 / q->ref_gbps_p50 : 0, q->ref_gbps_p50);
      nslow++;
    }
  if (!nslow) fprintf(o, "  no slow link\n");
}

static json_t *json_links(const struct report *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->nlinks; i++) {
    const struct cs_link_pair *q = &r->links[i];
    json_t *o = json_object();
    json_object_set_new(o, "src_host", q->src_host ? json_string(q->src_host) : json_null());
    json_object_set_new(o, "dst_host", q->dst_host ? json_string(q->dst_host) : json_null());
    json_object_set_new(o, "bytes", jbytes(q->bytes));
    json_object_set_new(o, "msgs", jbytes(q->msgs));
    json_object_set_new(o, "busy_us", json_real(q->busy_us));
    json_object_set_new(o, "gbps_p50", json_real(q->gbps_p50));
    json_object_set_new(o, "gbps_p10", json_real(q->gbps_p10));
    json_object_set_new(o, "side", json_string(q->from_send ? "send" : "recv"));
    json_object_set_new(o, "observations", jcount(q->nobs));
    json_object_set_new(o, "slow", json_boolean(q->slow));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *json_slow_links(const struct report *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->nlinks; i++) {
    const struct cs_link_pair *q = &r->links[i];
    if (!q->slow) continue;
    json_t *o = json_object();
    json_object_set_new(o, "src_host", json_string(q->src_host));
    json_object_set_new(o, "dst_host", json_string(q->dst_host));
    json_object_set_new(o, "gbps_p50", json_real(q->gbps_p50));
    json_object_set_new(o, "ref_gbps_p50", json_real(q->ref_gbps_p50));
    json_object_set_new(o, "ratio", json_real(q->ref_gbps_p50 > 0 ? q->gbps_p50 / q->ref_gbps_p50 : 0));
    json_object_set_new(o, "src_ib", report_health_host_ports(r->health, q->src_host));   /* both ends' IB deltas */
    json_object_set_new(o, "dst_ib", report_health_host_ports(r->health, q->dst_host));
    json_array_append_new(a, o);
  }
  return a;
}

/* ---------- sdc: cross-rank SDC check comparison (include/collscope/sdc.h) ---------- */

struct sdc_item {
  uint64_t comm;
  int64_t seq;
  const char *op, *dtype, *host;   /* host NULL when the suspect is unknown */
  uint64_t bytes;
  int check, suspect_comm_rank, suspect_rank;   /* -1: unknown */
  double got, want, tol;
};
struct sdc_report {
  size_t compared, fp_checked, sum_checked, skipped_nonfinite, skipped_incomplete;
  struct sdc_item *items;
  size_t nitems, cap;
};


static void sdc_analyse(const struct report *r, struct sdc_report *out) {
  memset(out, 0, sizeof *out);
  if (r->agg) {   /* streamed: compared as the instances completed */
    const struct agg_sdc *a = &r->agg->sdc;
    out->compared = a->compared, out->fp_checked = a->fp_checked, out->sum_checked = a->sum_checked;
    out->skipped_nonfinite = a->skipped_nonfinite, out->skipped_incomplete = a->skipped_incomplete;
    out->items = xcalloc(a->nitems, sizeof *out->items);
    out->nitems = out->cap = a->nitems;
    for (size_t i = 0; i < a->nitems; i++) {
      const struct agg_sdc_item *it = &a->items[i];
      out->items[i] = (struct sdc_item){it->comm, it->seq, it->op, it->dtype, it->host, it->bytes, it->check,
                                        it->suspect_comm_rank, it->suspect_rank, it->got, it->want, it->tol};
    }
    return;
  }
  struct cs_instances inst;
  cs_group_instances(r->set, &inst);
  struct cs_sdc_member *mem = NULL;
  size_t memcap = 0;
  for (size_t i = 0; i < inst.n; i++) {
    const struct cs_instance *in = &inst.v[i];
    if (in->mixed_ops || (r->op_filter && strcmp(in->op_name, r->op_filter) != 0)) continue;
    bool any = false;
    for (size_t k = 0; k < in->n && !any; k++) any = in->ops[k]->sdc_checked != 0;
    if (!any) continue;
    if (in->n > memcap) {
      memcap = in->n * 2;
      mem = realloc(mem, memcap * sizeof *mem);
      if (!mem) { fprintf(stderr, "collscope: out of memory\n"); exit(1); }
    }
    const struct cs_op_rec *o0 = in->ops[0];
    size_t n = 0;
    for (size_t k = 0; k < in->n; k++) {
      const struct cs_op_rec *o = in->ops[k];
      if (n && mem[n - 1].comm_rank == o->comm_rank) continue;   /* duplicate rank: keep the first */
      mem[n++] = (struct cs_sdc_member){o->comm_rank, o->status == 0 ? o->sdc_checked : 0, o->sdc_fp,
                                        o->sdc_in_sum, o->sdc_in_abs, o->sdc_out_sum};
    }
    struct cs_sdc_instance si = {o0->op, cli_sdc_dtype(o0->dtype), cli_sdc_redop(o0->redop), o0->root, in->comm_size,
                                 (uint64_t)(o0->count > 0 ? o0->count : 0), n, mem};
    struct cs_sdc_finding f[64];
    struct cs_sdc_outcome oc;
    size_t nf = cs_sdc_compare(&si, f, 64, &oc);
    out->compared++;
    out->fp_checked += (size_t)oc.fp_checked;
    out->sum_checked += (size_t)oc.sum_checked;
    out->skipped_nonfinite += (size_t)oc.sum_skipped_nonfinite;
    out->skipped_incomplete += (size_t)oc.sum_skipped_incomplete;
    for (size_t k = 0; k < nf && k < 64; k++) {
      if (out->nitems == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 16;
        out->items = realloc(out->items, out->cap * sizeof *out->items);
        if (!out->items) { fprintf(stderr, "collscope: out of memory\n"); exit(1); }
      }
      struct sdc_item *it = &out->items[out->nitems++];
      *it = (struct sdc_item){in->comm, in->seq, in->op_name, o0->dtype, NULL, o0->bytes, f[k].check,
                              f[k].suspect, -1, f[k].got, f[k].want, f[k].tol};
      for (size_t j = 0; j < in->n && f[k].suspect >= 0; j++)
        if (in->ops[j]->comm_rank == f[k].suspect) {
          it->suspect_rank = in->ops[j]->rank;
          it->host = r->set->files[in->ops[j]->file].hdr.host;
          break;
        }
    }
  }
  free(mem);
  cs_instances_free(&inst);
}

static void text_sdc(const struct report *r, FILE *o) {
  struct sdc_report s;
  sdc_analyse(r, &s);
  if (!s.compared) {
    size_t off = sdc_off_ranks(&r->sum), on = r->sum.sdc_ranks[0] + r->sum.sdc_ranks[1];
    if (off && !on)
      fprintf(o, "\nSDC checks: none in these dumps -- the checks were off on every rank (see the notes)\n");
    else
      fprintf(o, "\nSDC checks: none in these dumps (COLLSCOPE_SDC=off, sampled out, below "
                 "COLLSCOPE_SDC_MIN_BYTES%s)\n", off ? ", or the checks were off on some ranks: see the notes" : "");
    free(s.items);
    return;
  }
  fprintf(o, "\nSDC checks: %zu collectives compared (fingerprint %zu, sum %zu; sum skipped: %zu non-finite, "
             "%zu incomplete): %zu finding%s\n",
          s.compared, s.fp_checked, s.sum_checked, s.skipped_nonfinite, s.skipped_incomplete, s.nitems,
          s.nitems == 1 ? "" : "s");
  if (s.nitems)
    fprintf(o, "  %-16s %8s %-14s %-10s %12s %-12s %-8s %s\n", "comm", "seq", "op", "dtype", "bytes", "check",
            "suspect", "host");
  char hex[17], rk[24], b1[128], b2[128], b3[128];
  for (size_t i = 0; i < s.nitems; i++) {
    const struct sdc_item *it = &s.items[i];
    if (it->suspect_rank >= 0) snprintf(rk, sizeof rk, "rank %d", it->suspect_rank);
    else if (it->suspect_comm_rank >= 0) snprintf(rk, sizeof rk, "crank %d", it->suspect_comm_rank);
    else snprintf(rk, sizeof rk, "-");
    fprintf(o, "  %-16s %8lld %-14s %-10s %12llu %-12s %-8s %s", cs_comm_hex(it->comm, hex), (long long)it->seq,
            cs_text_safe(it->op, b1, sizeof b1), cs_text_safe(it->dtype ? it->dtype : "", b2, sizeof b2),
            (unsigned long long)it->bytes, cs_sdc_check_name(it->check), rk,
            it->host ? cs_text_safe(it->host, b3, sizeof b3) : "-");
    if (it->check == CS_SDC_CHECK_SUM) fprintf(o, "  (got %.17g, want %.17g, tol %.3g)", it->got, it->want, it->tol);
    fputc('\n', o);
  }
  free(s.items);
}

/* The sdc section of DIR alone (collscope demo). Returns 1 if any finding, 0 none, -1 error. */
int cli_report_sdc_text(const char *dir, FILE *o);
int cli_report_sdc_text(const char *dir, FILE *o) {
  struct cs_dumpset *set = cs_dumpset_load(dir);
  if (set->fatal) {
    cs_dumpset_free(set);
    return -1;
  }
  struct report r = {.set = set};
  struct sdc_report s;
  sdc_analyse(&r, &s);
  text_sdc(&r, o);
  int rc = s.nitems > 0;
  free(s.items);
  cs_dumpset_free(set);
  return rc;
}

/* "sdc": the findings, one per (collective, check, suspect); "sdc_checks": the counts */
static json_t *json_sdc(const struct report *r) {
  struct sdc_report s;
  sdc_analyse(r, &s);
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < s.nitems; i++) {
    const struct sdc_item *it = &s.items[i];
    json_t *o = json_object();
    json_object_set_new(o, "comm", json_string(cs_comm_hex(it->comm, hex)));
    json_object_set_new(o, "seq", json_integer(it->seq));
    json_object_set_new(o, "op", json_string(it->op));
    json_object_set_new(o, "datatype", json_string(it->dtype ? it->dtype : ""));
    json_object_set_new(o, "bytes", jbytes(it->bytes));
    json_object_set_new(o, "check", json_string(cs_sdc_check_name(it->check)));
    json_object_set_new(o, "suspect_rank", it->suspect_rank >= 0 ? json_integer(it->suspect_rank) : json_null());
    json_object_set_new(o, "gpu_health", report_health_gpu_context(r->health, it->suspect_rank));   /* ECC/XID/remap */
    json_object_set_new(o, "suspect_comm_rank",
                        it->suspect_comm_rank >= 0 ? json_integer(it->suspect_comm_rank) : json_null());
    json_object_set_new(o, "host", it->host ? json_string(it->host) : json_null());
    if (it->check == CS_SDC_CHECK_SUM) {
      json_object_set_new(o, "got", jnum_or_null(true, it->got));
      json_object_set_new(o, "want", jnum_or_null(true, it->want));
      json_object_set_new(o, "tol", jnum_or_null(true, it->tol));
    }
    json_array_append_new(a, o);
  }
  free(s.items);
  return a;
}
static json_t *json_sdc_checks(const struct report *r) {
  struct sdc_report s;
  sdc_analyse(r, &s);
  json_t *o = json_object();
  json_object_set_new(o, "compared", jcount(s.compared));
  json_object_set_new(o, "fingerprint_checked", jcount(s.fp_checked));
  json_object_set_new(o, "sum_checked", jcount(s.sum_checked));
  json_object_set_new(o, "sum_skipped_nonfinite", jcount(s.skipped_nonfinite));
  json_object_set_new(o, "sum_skipped_incomplete", jcount(s.skipped_incomplete));
  json_object_set_new(o, "findings", jcount(s.nitems));
  free(s.items);
  return o;
}

static void text_health(const struct report *r, FILE *o) { report_health_text(r->health, &r->det, o); }
static json_t *json_health(const struct report *r) { return report_health_json(r->health, &r->det); }

/* The report = this list. Text prints every section with a text printer in order; --json
 * emits one top-level key per section with a JSON builder, plus "sections" (their names).
 * Later analyses (stragglers, hangs, sdc) append entries here. */
struct report_section {
  const char *name;
  void (*text)(const struct report *r, FILE *o);
  json_t *(*json)(const struct report *r);
};
static const struct report_section sections[] = {
  {"summary", text_summary, json_summary},
  {"ops", text_ops, json_ops},
  {"ranks", text_ranks, json_ranks},
  {"comms", text_comms, json_comms},
  {"stragglers", text_stragglers, json_stragglers},
  {"hangs", text_hangs, json_hangs},
  {"links", text_links, json_links},         /* NCCL_NET wrapper (include/collscope/links.h) */
  {"slow_links", NULL, json_slow_links},     /* printed by the links text section */
  {"sdc", text_sdc, json_sdc},
  {"sdc_checks", NULL, json_sdc_checks},   /* counts behind the sdc section */
  {"health", text_health, json_health},     /* GPU and IB health (tools/report_health.c) */
  {"notes", text_notes, NULL},   /* its counts are in the JSON summary */
};
#define NSECTIONS (sizeof sections / sizeof sections[0])

/* The whole report as one JSON object: what --json prints, and what other commands (suspects,
 * the HTML page) read through cli_report_json(), so they can never disagree with it. */
static json_t *report_json_doc(const struct report *r) {
  json_t *root = json_object();
  json_object_set_new(root, "schema", json_integer(COLLSCOPE_SCHEMA_VERSION));
  json_object_set_new(root, "dir", json_string(r->set->path));
  json_t *names = json_array();
  for (size_t i = 0; i < NSECTIONS; i++)
    if (sections[i].json) json_array_append_new(names, json_string(sections[i].name));
  json_object_set_new(root, "sections", names);
  for (size_t i = 0; i < NSECTIONS; i++)
    if (sections[i].json) json_object_set_new(root, sections[i].name, sections[i].json(r));
  return root;
}

static int write_json(const struct report *r, FILE *o) {
  json_t *root = report_json_doc(r);
  int rc = json_dumpf(root, o, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
  fputc('\n', o);
  json_decref(root);
  return rc;
}

/* ---------- command ---------- */

static void usage(FILE *o) {
  fputs("usage: collscope report DIR [--json] [--op NAME] [--job ID] [-o FILE] [-j N]\n"
        "  DIR         directory of collscope dump files (*.jsonl), or one dump file\n"
        "  --job ID    only the dumps of job ID (needed when DIR holds several jobs)\n"
        "  --json      print one JSON object instead of tables\n"
        "  --op NAME   only op records named NAME (AllReduce, AllGather, Send, ...)\n"
        "  -o FILE     write to FILE instead of standard output\n"
        "  -j N        read the files with N threads (default: one per core)\n",
        o);
}

/* The schema.h name for --op (any case), or NULL: then records must use NAME exactly. */
static const char *canonical_op(const char *name) {
  for (int i = 0; i < CS_OP_COUNT; i++)
    if (strcasecmp(cs_op_table[i].name, name) == 0) return cs_op_table[i].name;
  return NULL;
}

/* Reads DIR and builds every section's model into *r (with *agg behind it). Returns 0, or the
 * command's exit status (1 unusable input, 2 unknown op) with a message on stderr. */
static int report_build(struct report *r, struct report_agg *agg, const char *dir, const char *job, const char *op,
                        unsigned jobs) {
  memset(r, 0, sizeof *r);
  cs_det_params_default(&r->detp);
  if (cs_det_params_env(&r->detp))
    fprintf(stderr, "collscope report: ignoring a bad COLLSCOPE_STRAGGLER_* value (collscope help)\n");
  /* streamed: the op records are read into tables, instances and findings as they go by
   * (tools/report_agg.c), never held all at once */
  const char *canon = op ? canonical_op(op) : NULL;
  struct cs_dumpset *set =
      report_agg_run(dir, job, canon ? canon : op, jobs ? jobs : cs_pool_default_jobs(), 0, &r->detp, agg);
  if (!set) {
    report_agg_free(agg);
    return 1;
  }
  r->set = set;
  r->agg = agg;
  if (op) {
    r->op_filter = canon ? canon : agg->filter_matched ? op : NULL;
    if (!r->op_filter) {
      fprintf(stderr, "collscope report: unknown op \"%s\" (known:", op);
      for (int i = 0; i < CS_OP_COUNT; i++) fprintf(stderr, " %s", cs_op_table[i].name);
      fprintf(stderr, ")\n");
      report_agg_free(agg);
      cs_dumpset_free(set);
      r->set = NULL;
      return 2;
    }
  }
  build_from_agg(r);
  cs_link_params_default(&r->linkp);
  if (cs_link_params_env(&r->linkp))
    fprintf(stderr, "collscope report: ignoring a bad COLLSCOPE_LINK_SLOW_FRAC / COLLSCOPE_LINK_MIN_BYTES value\n");
  build_links(r);
  r->health = report_health_build(set);
  return 0;
}

static void report_free(struct report *r) {
  free(r->rows);
  free(r->ranks);
  free(r->comms);
  free(r->sum.selftest_failed);
  cs_det_result_free(&r->det);
  free(r->links);
  report_health_free(r->health);
  report_agg_free(r->agg);
  cs_dumpset_free((struct cs_dumpset *)r->set);
}

struct json_t *cli_report_json(const char *dir, const char *job, const char *op, unsigned jobs, int *status) {
  struct report r;
  struct report_agg agg;
  int st = report_build(&r, &agg, dir, job, op, jobs);
  if (status) *status = st;
  if (st != 0) return NULL;
  json_t *doc = report_json_doc(&r);
  report_free(&r);
  return doc;
}

int cmd_report(int argc, char **argv) {
  struct cli_dump_args args;
  int st = cli_dump_args_parse("report", argc, argv, CLI_DUMP_ARGS_OP | CLI_DUMP_ARGS_JSON, usage, &args);
  if (st >= 0) return st;
  struct report r;
  struct report_agg agg;
  st = report_build(&r, &agg, args.dir, args.job, args.op, args.jobs);
  if (st != 0) return st;

  char *tmp = NULL;
  FILE *o = cli_out_open("report", args.outpath, &tmp);
  int rc = 1;
  if (o) {
    rc = 0;
    if (args.json) {
      if (write_json(&r, o) != 0) rc = 1;
    } else {
      for (size_t i = 0; i < NSECTIONS; i++)
        if (sections[i].text) sections[i].text(&r, o);
    }
    rc = cli_out_close("report", o, tmp, args.outpath, rc);
  }
  report_free(&r);
  return rc;
}
