/* tools/report/section_sdc.c: the report's "sdc" and "sdc_checks" sections: the cross-rank
 * comparison of the SDC checks' per-rank figures (include/collscope/sdc.h, analysis/sdc_compare.c),
 * one finding per (collective, check, suspect), and the counts behind them. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "collscope/sdc.h"
#include "report.h"
#include "report_health.h"
#include "dump/instwalk.h"
#include "report_agg.h"
#include "xalloc.h"

/* A set loaded whole (collscope demo, no streamed figures): its instances through the same
 * per-instance comparison as the streamed walk, each record in the walk's form. */
static void sdc_compare_loaded(const struct cs_dumpset *set, const char *op_filter, struct agg_sdc *out) {
  struct cs_instances inst;
  cs_group_instances(set, &inst);
  struct cs_walk_rec *m = NULL;
  struct cs_sdc_member *mem = NULL;
  size_t mcap = 0, memcap = 0;
  for (size_t i = 0; i < inst.n; i++) {
    const struct cs_instance *in = &inst.v[i];
    if (in->n > mcap) {
      mcap = 2 * in->n;
      m = xrealloc(m, mcap * sizeof *m);
    }
    for (size_t k = 0; k < in->n; k++) {
      const struct cs_op_rec *o = in->ops[k];
      m[k] = report_agg_walk_rec(&set->files[o->file], o, o->file);
    }
    report_agg_sdc_instance(out, &mem, &memcap, op_filter, in->comm, in->seq, m, in->n);
  }
  free(mem);
  free(m);
  cs_instances_free(&inst);
}

/* streamed: compared as the instances completed (tools/report/report_agg_walk.c), the results moved
 * here; else over the set loaded whole */
static void build_sdc(struct report *r) {
  memset(&r->sdc, 0, sizeof r->sdc);
  if (r->agg) {
    r->sdc = r->agg->sdc;
    memset(&r->agg->sdc, 0, sizeof r->agg->sdc);
  } else {
    sdc_compare_loaded(r->set, r->op_filter, &r->sdc);
  }
}

static void text_sdc(const struct report *r, FILE *o) {
  const struct agg_sdc *s = &r->sdc;
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
    const struct agg_sdc_item *it = &s->items[i];
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
  const struct agg_sdc *s = &r->sdc;
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < s->nitems; i++) {
    const struct agg_sdc_item *it = &s->items[i];
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
  const struct agg_sdc *s = &r->sdc;
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
