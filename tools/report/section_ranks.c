/* tools/report/section_ranks.c: the report's "ranks" section: one row per dump file (rank,
 * host, pid, records, GPU time, bytes, drops, lost records and how the process exited); with
 * --by-model grouped by the GPU model of the dump header, each group with its GPU time. */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_agg.h"
#include "xalloc.h"

static const char *model_of(const struct cs_dumpfile *f) {
  return f->hdr.gpu_name && *f->hdr.gpu_name ? f->hdr.gpu_name : "unknown";
}
/* --by-model: rows grouped by model (name order), the dump set's order within a model */
static int cmp_by_model(const void *pa, const void *pb) {
  const struct rank_row *a = pa, *b = pb;
  int c = strcmp(model_of(a->f), model_of(b->f));
  return c ? c : a->f < b->f ? -1
                             : a->f > b->f;
}
static int cmp_dbl(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return a < b ? -1 : a > b;
}
/* the median GPU time of the ranks of rows [i, j) */
static double median_gpu_ms(const struct rank_row *rows, size_t i, size_t j) {
  double *v = xcalloc(j - i + 1, sizeof *v);
  for (size_t k = i; k < j; k++) v[k - i] = rows[k].gpu_ms;
  qsort(v, j - i, sizeof *v, cmp_dbl);
  double m = j > i ? v[(j - i - 1) / 2] : 0;
  free(v);
  return m;
}

static void build_ranks(struct report *r) {
  struct report_agg *a = r->agg;
  if (!a) return;
  const struct cs_dumpset *set = r->set;
  r->ranks = xcalloc(set->nfiles, sizeof *r->ranks);
  r->nranks = set->nfiles;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    const struct agg_file *af = &a->files[f->read_index];
    struct rank_row *rr = &r->ranks[i];
    rr->f = f;
    rr->ops = af->ops;
    rr->errors = af->errors;
    rr->xfers = r->op_filter ? 0 : report_agg_file_xfers(af, f);
    rr->gpu_ms = af->gpu_ms;
    rr->bytes = af->bytes;
    rr->drops = cs_dumpfile_drops(f);
    rr->lost = f->lost;
  }
  if (r->by_model && r->nranks) qsort(r->ranks, r->nranks, sizeof *r->ranks, cmp_by_model);
}

/* A file's rank as the tables print it: RANK from its header; without one (a process
 * driving several GPUs, RANK unset), the communicator ranks it held in its largest
 * communicator, "c0-7" (or "c0..6/4" when they are not contiguous: first..last/count). */
void report_rank_name(const struct report *r, const struct cs_dumpfile *f, char *out, size_t n) {
  const struct agg_file *af = r->agg ? &r->agg->files[f->read_index] : NULL;
  if (f->hdr.rank >= 0)
    snprintf(out, n, "%d", f->hdr.rank);
  else if (!af || !af->ncrank)
    snprintf(out, n, "?");
  else if (af->crank_lo == af->crank_hi)
    snprintf(out, n, "c%d", af->crank_lo);
  else if ((size_t)(af->crank_hi - af->crank_lo) + 1 == af->ncrank)
    snprintf(out, n, "c%d-%d", af->crank_lo, af->crank_hi);
  else
    snprintf(out, n, "c%d..%d/%zu", af->crank_lo, af->crank_hi, af->ncrank);
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
  /* a step column when the dumps name Slurm job steps (the sruns of one batch job) */
  bool steps = false;
  for (size_t i = 0; i < r->nranks; i++) steps |= r->ranks[i].f->hdr.step >= 0;
  fprintf(o, "\n# Ranks\n");
  if (steps) fprintf(o, "# %4s", "step");
  fprintf(o, "%s %5s  %-*s %8s %8s %6s %6s %13s %14s %6s %6s  %s\n", steps ? "" : "#", "rank", hw, "host", "pid", "records",
          "ops", "xfers", "gpu_time(ms)", "bytes", "drops", "lost", "exit");
  char b[128];
  for (size_t i = 0; i < r->nranks; i++) {
    const struct rank_row *w = &r->ranks[i];
    if (r->by_model && (i == 0 || strcmp(model_of(w->f), model_of(r->ranks[i - 1].f)))) {
      size_t j = i;
      while (j < r->nranks && !strcmp(model_of(r->ranks[j].f), model_of(w->f))) j++;
      fprintf(o, "# gpu %s: %zu rank%s, median gpu_time %.3f ms\n", cs_text_safe(model_of(w->f), b, sizeof b), j - i,
              j - i == 1 ? "" : "s", median_gpu_ms(r->ranks, i, j));
    }
    char rank[32];
    report_rank_name(r, w->f, rank, sizeof rank);
    /* exit: no-footer (the process did not exit cleanly), lost (its footer counts records the
     * file does not hold), else clean */
    if (steps && w->f->hdr.step >= 0)
      fprintf(o, "  %4d", w->f->hdr.step);
    else if (steps)
      fprintf(o, "  %4s", "-");
    fprintf(o, "  %5s  %-*s %8lld %8zu %6zu %6zu %13.3f %14llu %6llu %6llu  %s\n", rank, hw,
            cs_text_safe(w->f->hdr.host, b, sizeof b), w->f->hdr.pid, w->ops + w->xfers, w->ops, w->xfers,
            w->gpu_ms, (unsigned long long)w->bytes, (unsigned long long)w->drops, (unsigned long long)w->lost,
            !w->f->has_footer ? "no-footer" : w->lost ? "lost"
                                                      : "clean");
  }
}

static json_t *json_ranks(const struct report *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->nranks; i++) {
    const struct rank_row *w = &r->ranks[i];
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(w->f->hdr.rank));
    const struct agg_file *af = r->agg ? &r->agg->files[w->f->read_index] : NULL;
    if (w->f->hdr.rank < 0 && af && af->ncrank) { /* no RANK: the communicator ranks it held */
      json_t *cr = json_object();
      json_object_set_new(cr, "comm_size", json_integer(af->rcomm_size));
      json_object_set_new(cr, "first", json_integer(af->crank_lo));
      json_object_set_new(cr, "last", json_integer(af->crank_hi));
      json_object_set_new(cr, "count", jcount(af->ncrank));
      json_object_set_new(o, "comm_ranks", cr);
    }
    json_object_set_new(o, "step", w->f->hdr.step >= 0 ? json_integer(w->f->hdr.step) : json_null());
    json_object_set_new(o, "host", json_string(w->f->hdr.host));
    if (r->by_model) json_object_set_new(o, "gpu_model", json_string(model_of(w->f)));
    json_object_set_new(o, "pid", json_integer(w->f->hdr.pid));
    json_object_set_new(o, "file", json_string(w->f->name));
    json_object_set_new(o, "records", jcount(w->ops + w->xfers));
    json_object_set_new(o, "ops", jcount(w->ops));
    json_object_set_new(o, "errors", jcount(w->errors));
    json_object_set_new(o, "device", json_integer(w->f->hdr.device));
    json_object_set_new(o, "pci_bus_id", json_string(w->f->hdr.pci_bus_id));
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

static void free_ranks(struct report *r) { free(r->ranks); }

const struct report_section report_section_ranks = {"ranks", build_ranks, text_ranks, json_ranks, free_ranks};
