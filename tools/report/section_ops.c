/* tools/report/section_ops.c: the report's "ops" section, nccl-tests style: one row per
 * (op, communicator size, message-size bucket) with nearest-rank percentiles and the mean of
 * the GPU time, algbw and busbw (definitions: tools/cmd_report.c), busbw of the mean, and a
 * `*` on a row timed on fewer than REPORT_FEW_TIMED records. Then one row per group kind
 * (its ops, communicator size, total bytes: tools/report/report_agg_group.c) timed by the
 * group's span; an op row's records that were members of such a group are counted, never
 * timed with the group's span, and marked `g`. Rows come from the figures gathered while the
 * dumps streamed (tools/report/report_agg.c). */
#include <stdio.h>
#include <stdlib.h>

#include "collscope/schema.h"
#include "report.h"
#include "report_agg.h"
#include "xalloc.h"

static void build_ops(struct report *r) {
  struct report_agg *a = r->agg;
  if (!a) return;
  r->rows = xcalloc(a->nrows, sizeof *r->rows);
  for (size_t i = 0; i < a->nrows; i++) {
    struct agg_row *ar = &a->rows[i];
    struct op_row *row = &r->rows[r->nrows++];
    row->op_name = ar->op_name;
    row->model = ar->model;
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
    row->grouped = ar->grouped;
    row->group_ops = ar->group_ops;
    row->factor = ar->group_ops  ? (ar->gbytes > 0 ? ar->fbytes / ar->gbytes : 1.0)
                  : row->op >= 0 ? cs_busbw_factor((enum cs_op)row->op, row->comm_size)
                                 : 1.0;
    if (row->timed) {
      row->p50 = report_agg_row_pct(ar, 50);
      row->p99 = report_agg_row_pct(ar, 99);
      row->max = ar->dur_max;
      if (row->p50 > 0) {
        row->algbw = (double)row->bytes / (row->p50 * 1e3);
        row->busbw = row->algbw * row->factor;
      }
      row->mean = ar->dur_sum / (double)row->timed;
      if (row->mean > 0)
        row->busbw_mean = (double)row->bytes / (row->mean * 1e3) * row->factor;
    }
    row->few = row->timed > 0 && row->timed < REPORT_FEW_TIMED; /* (an untimed row shows no figures) */
  }
}

static void text_ops(const struct report *r, FILE *o) {
  fprintf(o, "\n# Operations: per-rank records; time from GPU events (nearest-rank percentiles, mean);\n"
             "# algbw = size / p50 time, busbw = algbw x nccl-tests factor for nranks;\n"
             "# busbw(mean) = size / mean time x factor (a host-timed benchmark loop's statistic)\n");
  fprintf(o, "# %13s %6s %12s %12s %7s %8s %10s %10s %10s %10s %11s %11s %11s%s\n", "op", "nranks", "size(B)",
          "bucket_lo", "count", "timed", "p50(us)", "p99(us)", "max(us)", "mean(us)", "algbw(GB/s)",
          "busbw(GB/s)", "busbw(mean)", r->by_model ? "  gpu (the records of its ranks)" : "");
  char b[128], g[128];
  size_t nfew = 0, ngrouped = 0, ngroups = 0;
  for (size_t i = 0; i < r->nrows; i++) {
    const struct op_row *w = &r->rows[i];
    nfew += w->few;
    ngrouped += w->grouped;
    ngroups += w->group_ops > 0;
    fprintf(o, "  %13s %6d %12llu %12llu %7zu %7zu%s", cs_text_safe(w->op_name, b, sizeof b), w->comm_size,
            (unsigned long long)w->bytes, (unsigned long long)w->bucket_lo, w->count, w->timed,
            w->few ? "*" : w->grouped ? "g"
                                      : " ");
    char gb[128];
    g[0] = 0;
    if (r->by_model) snprintf(g, sizeof g, "  %s", cs_text_safe(w->model ? w->model : "unknown", gb, sizeof gb));
    if (w->timed)
      fprintf(o, " %10.2f %10.2f %10.2f %10.2f", w->p50, w->p99, w->max, w->mean);
    else
      fprintf(o, " %10s %10s %10s %10s", "-", "-", "-", "-");
    if (w->timed && w->p50 > 0)
      fprintf(o, " %11.2f %11.2f", w->algbw, w->busbw);
    else
      fprintf(o, " %11s %11s", "-", "-");
    if (w->timed && w->mean > 0)
      fprintf(o, " %11.2f%s\n", w->busbw_mean, g);
    else
      fprintf(o, " %11s%s\n", "-", g);
  }
  if (!r->nrows) fprintf(o, "  (no op records)\n");
  if (nfew)
    fprintf(o, "  * %zu row%s timed on fewer than %d records (count `timed`): %s figures are not a measurement "
               "to compare\n",
            nfew, nfew == 1 ? "" : "s", REPORT_FEW_TIMED, nfew == 1 ? "its" : "their");
  if (ngrouped)
    fprintf(o, "  g %zu record%s of the rows marked g %s members of NCCL groups that share one GPU span (one\n"
               "    fused launch per stream): no time of %s own, counted but not timed; the group rows\n"
               "    (`OP xN`, or AlltoAll for a Send/Recv all-to-all) have the group's bytes over its span\n",
            ngrouped, ngrouped == 1 ? "" : "s", ngrouped == 1 ? "was one of the" : "were", ngrouped == 1 ? "its" : "their");
  else if (ngroups)
    fprintf(o, "  group rows (`OP xN`, or AlltoAll for a Send/Recv all-to-all): the group's bytes over its span\n");
}

static json_t *json_ops(const struct report *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->nrows; i++) {
    const struct op_row *w = &r->rows[i];
    json_t *o = json_object();
    json_object_set_new(o, "op", json_string(w->op_name));
    json_object_set_new(o, "comm_size", json_integer(w->comm_size));
    if (r->by_model) json_object_set_new(o, "gpu_model", json_string(w->model ? w->model : "unknown"));
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
      json_object_set_new(t, "mean", json_real(w->mean));
      json_object_set_new(o, "time_us", t);
    } else {
      json_object_set_new(o, "time_us", json_null());
    }
    bool bw = w->timed && w->p50 > 0;
    json_object_set_new(o, "algbw_gbs", jnum_or_null(bw, w->algbw));
    json_object_set_new(o, "busbw_gbs", jnum_or_null(bw, w->busbw));
    json_object_set_new(o, "busbw_mean_gbs", jnum_or_null(w->timed && w->mean > 0, w->busbw_mean));
    json_object_set_new(o, "few_timed", json_boolean(w->few));
    if (w->grouped) json_object_set_new(o, "grouped", jcount(w->grouped));
    if (w->group_ops) json_object_set_new(o, "group_ops", jcount(w->group_ops));
    json_array_append_new(a, o);
  }
  return a;
}

static void free_ops(struct report *r) { free(r->rows); }

const struct report_section report_section_ops = {"ops", build_ops, text_ops, json_ops, free_ops};
