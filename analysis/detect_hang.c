/* analysis/detect_hang.c: the hangs. Per communicator with a pending op: the seq every rank
 * completed, the ranks that never entered the next one (missing), those whose GPU never reached
 * it while a peer's GPU is inside it (unstarted: the GPU holds), and the rest that entered it
 * (stuck). Across communicators: a rank unstarted in one hang that is stuck or missing in another
 * waits behind that one (its stream is busy with the other hung op), so it is stuck here. */
#include "detect_internal.h"

#include <stdlib.h>
#include <string.h>

int cs_det_hang_entry(struct cstate *C, int hang_mode, struct cs_det_result *out, size_t *capH) {
  if (hang_mode == CS_DET_HANG_OFF || !C->any_pending) return 0;
  int csize = C->csize;
  int64_t reached = INT64_MAX;
  bool seen_only = hang_mode == CS_DET_HANG_SEEN;
  struct member *mem = C->mem;
  for (int r = 0; r < csize; r++)
    if (C->done_max[r] < reached && !(seen_only && mem[r].rank < 0 && !mem[r].host)) reached = C->done_max[r];
  GROW(out->hangs, out->nhangs, *capH);
  struct cs_det_hang *h = &out->hangs[out->nhangs++];
  memset(h, 0, sizeof *h);
  h->comm = C->comm;
  h->comm_size = csize;
  h->reached = reached;
  h->seq = reached + 1;
  h->oldest_enqueue_ns = C->oldest;
  size_t n = (size_t)csize;
  h->missing = calloc(n, sizeof *h->missing);
  h->stuck = calloc(n, sizeof *h->stuck);
  h->unstarted = calloc(n, sizeof *h->unstarted);
  h->missing_hosts = calloc(n, sizeof *h->missing_hosts);
  h->stuck_hosts = calloc(n, sizeof *h->stuck_hosts);
  h->unstarted_hosts = calloc(n, sizeof *h->unstarted_hosts);
  if (!h->missing || !h->stuck || !h->unstarted || !h->missing_hosts || !h->stuck_hosts || !h->unstarted_hosts)
    goto oom;
  /* a GPU that never reached seq is named only beside a member whose GPU is known to be inside
   * it: with no start event anywhere (sampled out, host timing) or with every GPU short of it
   * (all behind an earlier hang), nothing tells one from another */
  bool inside = false;
  for (int r = 0; r < csize && !inside; r++)
    inside = C->entered_max[r] >= h->seq && C->done_max[r] < h->seq && C->pend_seq[r] == h->seq &&
             C->pend_start[r] == CS_DET_START_REACHED;
  for (int r = 0; r < csize; r++) {
    if (seen_only && mem[r].rank < 0 && !mem[r].host) continue;
    const char *host = mem[r].host ? mem[r].host : "?";
    if (C->entered_max[r] < h->seq) {
      h->missing_hosts[h->nmissing] = host;
      h->missing[h->nmissing++] = mem[r].rank;
    } else if (C->done_max[r] < h->seq) {
      if (inside && C->pend_seq[r] == h->seq && C->pend_start[r] == CS_DET_START_NOT_REACHED) {
        h->unstarted_hosts[h->nunstarted] = host;
        h->unstarted[h->nunstarted++] = mem[r].rank;
      } else {
        h->stuck_hosts[h->nstuck] = host;
        h->stuck[h->nstuck++] = mem[r].rank;
      }
    }
  }
  return 0;
oom:
  return -1;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

int cs_det_hangs_resolve(struct cs_det_result *out) {
  bool any = false;
  size_t total = 0;
  for (size_t i = 0; i < out->nhangs; i++) {
    any |= out->hangs[i].nunstarted > 0;
    total += out->hangs[i].nstuck + out->hangs[i].nmissing;
  }
  if (!any || !total) return 0;
  int *elsewhere = malloc(total * sizeof *elsewhere);
  if (!elsewhere) return -1;
  size_t m = 0;
  for (size_t k = 0; k < out->nhangs; k++) {
    const struct cs_det_hang *h = &out->hangs[k];
    for (size_t j = 0; j < h->nstuck; j++)
      if (h->stuck[j] >= 0) elsewhere[m++] = h->stuck[j];
    for (size_t j = 0; j < h->nmissing; j++)
      if (h->missing[j] >= 0) elsewhere[m++] = h->missing[j];
  }
  qsort(elsewhere, m, sizeof *elsewhere, cmp_int);
  for (size_t i = 0; i < out->nhangs; i++) {
    struct cs_det_hang *h = &out->hangs[i];
    size_t keep = 0;
    for (size_t j = 0; j < h->nunstarted; j++) {
      int r = h->unstarted[j];
      if (r < 0 || bsearch(&r, elsewhere, m, sizeof *elsewhere, cmp_int)) { /* behind another hang */
        h->stuck_hosts[h->nstuck] = h->unstarted_hosts[j];
        h->stuck[h->nstuck++] = r;
      } else {
        h->unstarted_hosts[keep] = h->unstarted_hosts[j];
        h->unstarted[keep++] = r;
      }
    }
    h->nunstarted = keep;
  }
  free(elsewhere);
  return 0;
}
