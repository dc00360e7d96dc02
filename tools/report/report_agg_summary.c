/* tools/report/report_agg_summary.c: COLLSCOPE_RECORD=summary files in the report
 * (docs/always-on.md): each "summary" line's counts, sizes and GPU-duration histogram go into
 * the ops row, the communicator, the file and the counts as its ops would have, once the
 * files are read; the flight-recorder windows' op lines feed the walk only (their ops are in a
 * summary already). */
#include "report_agg_internal.h"

#include <stdlib.h>
#include <string.h>

static int bucket_ok(int b) { return b >= -1 && b < 64; }

static void size_pair(void *ctx, uint64_t v, uint64_t n) { agg_row_size(ctx, v, (size_t)n); }

struct hist_ctx {
  struct agg_row *r;
  uint64_t n; /* counts handed over */
};
static void hist_pair(void *ctx, uint64_t idx, uint64_t n) {
  struct hist_ctx *h = ctx;
  if (idx >= CS_HIST_NBUCKETS || n > UINT64_MAX - h->n) return; /* hostile: left out */
  h->r->dur.counts[idx] += n;
  h->n += n;
}

/* the summary's timed durations into the row: its histogram from now on */
static void add_durations(struct report_agg_priv *P, struct agg_row *r, const struct cs_summary_rec *s) {
  agg_row_pour(P, r);
  if (!r->dur.counts) r->dur.counts = calloc(CS_HIST_NBUCKETS, sizeof *r->dur.counts);
  if (!r->dur.counts) {
    P->oom = true;
    return;
  }
  struct hist_ctx h = {.r = r};
  cs_summary_pairs(s->hist, hist_pair, &h);
  if (!h.n) return;
  struct cs_hist *d = &r->dur;
  if (!d->has_range || s->dur_min_us < d->min) d->min = s->dur_min_us;
  if (!d->has_range || s->dur_max_us > d->max) d->max = s->dur_max_us;
  d->has_range = true;
  d->sum += s->dur_sum_us;
  d->n += h.n;
  if (!r->timed || s->dur_max_us > r->dur_max) r->dur_max = s->dur_max_us;
  r->timed += (size_t)h.n;
  r->dur_sum += s->dur_sum_us;
}

static void add_summary(struct report_agg_priv *P, struct worker *W, const struct cs_dumpfile *f,
                        const struct cs_summary_rec *s) {
  if (!strcmp(s->op_name, "Memcpy")) { /* CUDA memcpys: counted, as their lines are */
    P->agg->summary_xfers += (size_t)s->count;
    P->agg->files[f->read_index].summary_xfers += (size_t)s->count;
    return;
  }
  const char *filter = P->agg->op_filter;
  if (filter && strcmp(s->op_name, filter) != 0) return;
  W->matched |= filter != NULL;
  if (!bucket_ok(s->bucket) || !s->count) return;
  struct row_key k;
  memset(&k, 0, sizeof k);
  k.op_name = s->op_name;
  k.comm_size = s->comm_size;
  k.bucket = s->bucket;
  if (P->agg->by_model) k.model = f->hdr.gpu_name && *f->hdr.gpu_name ? f->hdr.gpu_name : "unknown";
  struct agg_row *r = &agg_row_find(W, &k, s->op_name, s->op, s->bytes_min)->r;
  r->count += (size_t)s->count;
  r->grouped += (size_t)s->grouped;
  if (s->bytes_min < r->bytes_min) r->bytes_min = s->bytes_min;
  if (s->bytes_max > r->bytes_max) r->bytes_max = s->bytes_max;
  if (!s->sizes || !*s->sizes || !cs_summary_pairs(s->sizes, size_pair, r))
    agg_row_size(r, s->bytes / s->count, (size_t)s->count); /* more sizes than listed: their mean */
  if (s->timed) add_durations(P, r, s);

  struct comm_ent *ce;
  HASH_FIND(hh, W->comms, &s->comm, sizeof s->comm, ce);
  if (!ce) {
    ce = xcalloc(1, sizeof *ce);
    ce->comm = ce->c.comm = s->comm;
    HASH_ADD(hh, W->comms, comm, sizeof ce->comm, ce);
  }
  ce->c.ops += (size_t)s->count;
  if (s->comm_size > ce->c.size) ce->c.size = s->comm_size;
  ce->c.bytes += s->bytes;
  ce->c.gpu_ms += s->dur_sum_us / 1e3;
  struct crank_key ck;
  memset(&ck, 0, sizeof ck);
  ck.comm = s->comm;
  ck.comm_rank = s->comm_rank;
  struct crank_ent *cr;
  HASH_FIND(hh, W->cranks, &ck, sizeof ck, cr);
  if (!cr) {
    cr = xcalloc(1, sizeof *cr);
    cr->k = ck;
    HASH_ADD(hh, W->cranks, k, sizeof ck, cr);
  }

  struct agg_file *af = &P->agg->files[f->read_index];
  af->ops += (size_t)s->count;
  af->errors += (size_t)s->errors;
  af->bytes += s->bytes;
  af->gpu_ms += s->dur_sum_us / 1e3;
  W->counts.ops += (size_t)s->count;
  W->counts.errors += (size_t)s->errors;
  W->counts.timed += (size_t)s->timed;
  P->agg->summary_ops += (size_t)s->count;
  P->agg->summary_lines++;
}

void agg_summaries(struct report_agg_priv *P, const struct cs_dumpset *set) {
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t j = 0; j < f->nsummaries; j++) add_summary(P, &P->w[0], f, &f->summaries[j]);
    P->agg->windows += f->nwindows;
  }
}
