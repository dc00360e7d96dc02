/* tools/report/report_balance_data.c: the balance section's uneven data: a data-parallel rank
 * that computes longer than its peers on a GPU its health samples find nothing wrong with, and
 * whose process copies more bytes to its GPU per step (its input batch; in summary mode its
 * CUDA memcpys' summary lines, both directions, the windows holding only a part) than the
 * median of the ranks that are not slow,
 * has more samples than they do: its shard is larger, the node is not at fault (verdict
 * uneven_data; docs/balance.md "Uneven data"). */
#include "report_balance_internal.h"

#include <stdlib.h>
#include <string.h>

#include "dump/dumpfile.h"
#include "xalloc.h"

#define DATA_FRAC 1.01 /* 1 % more bytes to the GPU per step than the ranks that are not slow: more data */

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool bal_data_judge(struct report_balance *b, const struct cs_dumpfile **by_index, size_t nindex,
                    double *shares_now) {
  struct bal_view *v = &b->dp;
  if (!v->ok || v->n < 2) return false;
  double *tmp = xcalloc(v->n, sizeof *tmp);
  for (size_t i = 0; i < v->n; i++) {
    struct bal_rank *r = &v->r[i];
    const struct cs_dumpfile *f = r->file < nindex ? by_index[r->file] : NULL;
    double bytes = 0;
    if (f && f->nsummaries) { /* summary mode: the windows hold a part of the copies; the summary
                               * lines count them all, both directions together */
      for (size_t k = 0; k < f->nsummaries; k++)
        if (f->summaries[k].op_name && !strcmp(f->summaries[k].op_name, "Memcpy"))
          bytes += (double)f->summaries[k].bytes;
    } else {
      for (size_t k = 0; f && k < f->nxfers; k++)
        if (f->xfers[k].kind && !strcmp(f->xfers[k].kind, "HtoD")) bytes += (double)f->xfers[k].bytes;
    }
    r->h2d_bytes = bytes / (double)(r->steps + 1); /* its steps, step 0 with them */
  }
  size_t nok = 0; /* the bytes of the ranks whose compute is not slow */
  for (size_t i = 0; i < v->n; i++)
    if (v->r[i].verdict == VERDICT_OK) tmp[nok++] = v->r[i].h2d_bytes;
  double med = nok ? median(tmp, nok) : 0;
  free(tmp);
  size_t ndata = 0, nslow = 0;
  for (size_t i = 0; i < v->n; i++) {
    struct bal_rank *r = &v->r[i];
    if (r->verdict == VERDICT_UNEXPLAINED && med > 0 && r->h2d_bytes >= DATA_FRAC * med) {
      r->verdict = VERDICT_DATA;
      snprintf(r->cause, sizeof r->cause, "its process copies %.1f %% more bytes to its GPU per step than the ranks that are not slow",
               100.0 * (r->h2d_bytes / med - 1));
    }
    ndata += r->verdict == VERDICT_DATA;
    nslow += r->verdict == VERDICT_THROTTLED || r->verdict == VERDICT_MODEL || r->verdict == VERDICT_UNEXPLAINED;
  }
  if (!ndata || nslow) return false;
  /* one GPU speed: today's shares follow the compute */
  for (size_t i = 0; i < v->n; i++) shares_now[i] = v->r[i].compute_us;
  return true;
}

void bal_data_advise(struct report_balance *b) {
  struct bal_view *v = &b->dp;
  if (!v->ok) return;
  bool act = b->action && !strcmp(b->action, "balance");
  double *even = xcalloc(v->n, sizeof *even);
  size_t ne = 0, nd = 0;
  for (size_t i = 0; i < v->n; i++) {
    if (v->r[i].verdict == VERDICT_OK) even[ne++] = v->r[i].compute_us;
    nd += v->r[i].verdict == VERDICT_DATA;
  }
  double base = ne ? median(even, ne) : 0;
  free(even);
  if (!nd) return;
  if (!(base > 0) || (!act && strcmp(b->action ? b->action : "", "none"))) {
    /* nothing to compare with, or a fault to fix first: no data verdict stands alone */
    for (size_t i = 0; i < v->n; i++)
      if (v->r[i].verdict == VERDICT_DATA) v->r[i].verdict = VERDICT_OK, v->r[i].cause[0] = 0;
    return;
  }
  char ranks[256];
  size_t len = 0;
  double more = 0;
  for (size_t i = 0; i < v->n && len < sizeof ranks; i++)
    if (v->r[i].verdict == VERDICT_DATA) {
      len += (size_t)snprintf(ranks + len, sizeof ranks - len, "%s%d", len ? "," : "", v->r[i].rank);
      more += v->r[i].compute_us / base - 1;
    }
  more /= (double)nd;
  char text[512];
  /* under the gain that asks for a change, the ranks are still the data's, not the nodes': a
   * straggler finding on them is no node's (collscope suspects) */
  snprintf(text, sizeof text,
           "uneven data: rank%s %s get%s %.0f %% more samples than the others (their compute and their copies to "
           "the GPU per step are larger; the GPUs are alike): %s",
           nd == 1 ? "" : "s", ranks, nd == 1 ? "s" : "", 100.0 * more, act ? "even the shards" : "");
  if (!act) {
    size_t tl = strlen(text);
    snprintf(text + tl, sizeof text - tl, "evening the shards would gain %.1f %% of the step: too little to advise a change",
             v->gain_pct);
  }
  /* with the other slow ranks' advice, when there is one, this one follows it */
  if (!act || !strncmp(b->advice, "the work is split unevenly", 26))
    snprintf(b->advice, sizeof b->advice, "%s", text);
  else {
    size_t al = strlen(b->advice);
    snprintf(b->advice + al, sizeof b->advice - al, ". Also %s", text);
  }
}
