/* tools/report/balance_summary_stage.c: a COLLSCOPE_RECORD=summary recording's instances of its
 * collectives for the stage comparison (analysis/stage_compute.c, include/collscope/schedule.h
 * cs_sched_summed_instance): each collective member's "gaps" line holds the running compute, the
 * GPU end, the seq and whether it has a gap of its last 64 ops; an op's compute gap is what its
 * running compute grew by,
 * and the members' ops of one seq are one instance. Only the seqs every member's line still
 * holds are judged (an older one fell off some member's list, not out of the job). */
#include "report_agg_internal.h"
#include "report_balance_internal.h"

#include <stdint.h>
#include <stdlib.h>

#include "collscope/schedule.h"
#include "dump/dumpfile.h"

struct sinst { /* one member's op of an instance */
  uint64_t comm;
  int64_t seq;
  const struct bal_member *m;
  double gap_us;
  int64_t end_ns;
};
struct swin { /* the seqs one member's line holds */
  uint64_t comm;
  int64_t lo, hi;
};

static int cmp_inst(const void *pa, const void *pb) {
  const struct sinst *a = pa, *b = pb;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  return a->m->k.comm_rank < b->m->k.comm_rank ? -1 : a->m->k.comm_rank > b->m->k.comm_rank;
}

static int cmp_win(const void *pa, const void *pb) {
  const struct swin *a = pa, *b = pb;
  return a->comm < b->comm ? -1 : a->comm > b->comm;
}

/* e's last ops with a compute gap into out (at most BAL_PMAX) and the seqs its line holds into w:
 * how many, or -1 when the lists are malformed (seqs not rising, a running compute that falls) */
static int member_ops(const struct bal_member *e, const struct cs_gaps_rec *g, struct sinst *out, struct swin *w) {
  size_t k = e->n < BAL_PMAX ? e->n : BAL_PMAX;
  int64_t seq[BAL_PMAX], cum[BAL_PMAX], end[BAL_PMAX], head[BAL_PMAX];
  if (cs_gaps_list(g->ring_seq, seq, BAL_PMAX) != (int)k || cs_gaps_list(g->ring_gap, cum, BAL_PMAX) != (int)k ||
      cs_gaps_list(g->ring_end, end, BAL_PMAX) != (int)k || !k)
    return -1;
  /* the running compute before the list's first op: 0 at the member's first op, else the
   * first ops' list when it reaches that far */
  size_t before = e->n - k;
  bool have = before == 0;
  int64_t prev = 0;
  if (!have && before <= BAL_PMAX && cs_gaps_list(g->head_gap, head, BAL_PMAX) == (int)k)
    prev = head[before - 1], have = true;
  int n = 0;
  for (size_t i = 0; i < k; i++) {
    if (seq[i] < 0 || (i && seq[i] <= seq[i - 1]) || (have && cum[i] < prev)) return -1;
    /* an op counted untimed (no end, or a timed one after a break) adds nothing and has no gap */
    if (have && end[i] >= 0 && !(g->ring_nogap >> i & 1))
      out[n++] = (struct sinst){e->k.comm, seq[i], e, (double)(cum[i] - prev) / 1e3, end[i]};
    prev = cum[i], have = true;
  }
  *w = (struct swin){e->k.comm, seq[0], seq[k - 1]};
  return n;
}

long bal_summary_stage(struct cs_sched *s, const struct bal_gaps_ref *v, size_t n) {
  if (!s || !n) return 0;
  if (n > SIZE_MAX / (BAL_PMAX * sizeof(struct sinst))) return -1;
  long refused = 0;
  struct sinst *in = malloc(n * BAL_PMAX * sizeof *in);
  struct swin *w = malloc(n * sizeof *w);
  struct cs_sched_op *ops = malloc(n * sizeof *ops);
  if (!in || !w || !ops) {
    free(in), free(w), free(ops);
    return -1;
  }
  size_t ni = 0, nw = 0;
  for (size_t i = 0; i < n; i++) {
    if (!v[i].g->ring_seq || !*v[i].g->ring_seq) continue; /* written without seqs: summed only */
    int k = member_ops(v[i].m, v[i].g, in + ni, w + nw);
    if (k < 0) {
      refused++;
      continue;
    }
    ni += (size_t)k, nw++;
  }
  qsort(in, ni, sizeof *in, cmp_inst);
  qsort(w, nw, sizeof *w, cmp_win);
  int rc = 0;
  int64_t from = INT64_MIN, to = INT64_MAX; /* the seqs every member's line holds, per communicator */
  for (size_t lo = 0, hi, wi = 0; lo < ni && !rc; lo = hi) {
    for (hi = lo + 1; hi < ni && in[hi].comm == in[lo].comm && in[hi].seq == in[lo].seq;) hi++;
    if (!lo || in[lo].comm != in[lo - 1].comm) { /* a communicator's first instance: its range, once */
      while (wi < nw && w[wi].comm < in[lo].comm) wi++;
      from = INT64_MIN, to = INT64_MAX;
      for (size_t j = wi; j < nw && w[j].comm == in[lo].comm; j++) {
        if (w[j].lo > from) from = w[j].lo;
        if (w[j].hi < to) to = w[j].hi;
      }
    }
    if (in[lo].seq < from || in[lo].seq > to) continue;
    size_t no = 0;
    for (size_t j = lo; j < hi; j++)
      if (!no || in[j].m->k.comm_rank != ops[no - 1].comm_rank)
        ops[no++] = (struct cs_sched_op){in[j].m->k.comm_rank, in[j].m->rank, in[j].m->host, -1, false, false,
                                         in[j].gap_us, in[j].end_ns > 0 ? in[j].end_ns : 0};
    rc = cs_sched_summed_instance(s, in[lo].comm, ops, no);
  }
  free(in), free(w), free(ops);
  return rc < 0 ? -1 : refused;
}
