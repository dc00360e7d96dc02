/* tools/report/section_sdc.c: the report's "sdc" and "sdc_checks" sections: the cross-rank
 * comparison of the SDC checks' per-rank figures (include/collscope/sdc.h, stats/sdc_compare.c),
 * one finding per (collective, check, suspect), and the counts behind them. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "collscope/sdc.h"
#include "report.h"
#include "../report_health.h"
#include "report_agg.h"
#include "xalloc.h"

static void sdc_analyse(const struct report *r, struct sdc_report *out) {
  memset(out, 0, sizeof *out);
  if (r->agg) { /* streamed: compared as the instances completed */
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
      if (!mem) {
        fprintf(stderr, "collscope: out of memory\n");
        exit(1);
      }
    }
    const struct cs_op_rec *o0 = in->ops[0];
    size_t n = 0;
    for (size_t k = 0; k < in->n; k++) {
      const struct cs_op_rec *o = in->ops[k];
      if (n && mem[n - 1].comm_rank == o->comm_rank) continue; /* duplicate rank: keep the first */
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
        if (!out->items) {
          fprintf(stderr, "collscope: out of memory\n");
          exit(1);
        }
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

static void build_sdc(struct report *r) { sdc_analyse(r, &r->sdc); }

static void text_sdc(const struct report *r, FILE *o) {
  const struct sdc_report *s = &r->sdc;
  if (!s->compared) {
    size_t off = report_sdc_off_ranks(&r->sum), on = r->sum.sdc_ranks[0] + r->sum.sdc_ranks[1];
    if (off && !on)
      fprintf(o, "\nSDC checks: none in these dumps -- the checks were off on every rank (see the notes)\n");
    else
      fprintf(o, "\nSDC checks: none in these dumps (COLLSCOPE_SDC=off, sampled out, below "
                 "COLLSCOPE_SDC_MIN_BYTES%s)\n",
              off ? ", or the checks were off on some ranks: see the notes" : "");
    return;
  }
  fprintf(o, "\nSDC checks: %zu collectives compared (fingerprint %zu, sum %zu; sum skipped: %zu non-finite, "
             "%zu incomplete): %zu finding%s\n",
          s->compared, s->fp_checked, s->sum_checked, s->skipped_nonfinite, s->skipped_incomplete, s->nitems,
          s->nitems == 1 ? "" : "s");
  if (s->nitems)
    fprintf(o, "  %-16s %8s %-14s %-10s %12s %-12s %-8s %s\n", "comm", "seq", "op", "dtype", "bytes", "check",
            "suspect", "host");
  char hex[17], rk[24], b1[128], b2[128], b3[128];
  for (size_t i = 0; i < s->nitems; i++) {
    const struct sdc_item *it = &s->items[i];
    if (it->suspect_rank >= 0)
      snprintf(rk, sizeof rk, "rank %d", it->suspect_rank);
    else if (it->suspect_comm_rank >= 0)
      snprintf(rk, sizeof rk, "crank %d", it->suspect_comm_rank);
    else
      snprintf(rk, sizeof rk, "-");
    fprintf(o, "  %-16s %8lld %-14s %-10s %12llu %-12s %-8s %s", cs_comm_hex(it->comm, hex), (long long)it->seq,
            cs_text_safe(it->op, b1, sizeof b1), cs_text_safe(it->dtype ? it->dtype : "", b2, sizeof b2),
            (unsigned long long)it->bytes, cs_sdc_check_name(it->check), rk,
            it->host ? cs_text_safe(it->host, b3, sizeof b3) : "-");
    if (it->check == CS_SDC_CHECK_SUM) fprintf(o, "  (got %.17g, want %.17g, tol %.3g)", it->got, it->want, it->tol);
    fputc('\n', o);
  }
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
  build_sdc(&r);
  text_sdc(&r, o);
  int rc = r.sdc.nitems > 0;
  free(r.sdc.items);
  cs_dumpset_free(set);
  return rc;
}

/* "sdc": the findings, one per (collective, check, suspect); "sdc_checks": the counts */
static json_t *json_sdc(const struct report *r) {
  const struct sdc_report *s = &r->sdc;
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < s->nitems; i++) {
    const struct sdc_item *it = &s->items[i];
    json_t *o = json_object();
    json_object_set_new(o, "comm", json_string(cs_comm_hex(it->comm, hex)));
    json_object_set_new(o, "seq", json_integer(it->seq));
    json_object_set_new(o, "op", json_string(it->op));
    json_object_set_new(o, "datatype", json_string(it->dtype ? it->dtype : ""));
    json_object_set_new(o, "bytes", jbytes(it->bytes));
    json_object_set_new(o, "check", json_string(cs_sdc_check_name(it->check)));
    json_object_set_new(o, "suspect_rank", it->suspect_rank >= 0 ? json_integer(it->suspect_rank) : json_null());
    json_object_set_new(o, "gpu_health", report_health_gpu_context(r->health, it->suspect_rank)); /* ECC/XID/remap */
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
  return a;
}
static json_t *json_sdc_checks(const struct report *r) {
  const struct sdc_report *s = &r->sdc;
  json_t *o = json_object();
  json_object_set_new(o, "compared", jcount(s->compared));
  json_object_set_new(o, "fingerprint_checked", jcount(s->fp_checked));
  json_object_set_new(o, "sum_checked", jcount(s->sum_checked));
  json_object_set_new(o, "sum_skipped_nonfinite", jcount(s->skipped_nonfinite));
  json_object_set_new(o, "sum_skipped_incomplete", jcount(s->skipped_incomplete));
  json_object_set_new(o, "findings", jcount(s->nitems));
  return o;
}

static void free_sdc(struct report *r) { free(r->sdc.items); }

const struct report_section report_section_sdc = {"sdc", build_sdc, text_sdc, json_sdc, free_sdc};
const struct report_section report_section_sdc_checks = {"sdc_checks", NULL, NULL, json_sdc_checks, NULL};
