/* tools/ring/ring_sched.c: the pipeline schedule and the peers' waits over rings' ops, applied to
 * the detector's result (ring_sched.h). */
#include "ring_sched.h"

#include <stdlib.h>
#include <string.h>

#include "collscope/comm_elsewhere.h"
#include "collscope/compute_gap.h"
#include "collscope/peer_wait.h"
#include "collscope/schedule.h"

struct ent {
  const struct cs_det_op *o; /* NULL: a kept collective (h) */
  const struct ring_sched_gap *h;
  uint64_t comm;
  int64_t seq;
  int comm_rank;
  double gap_us;
};

static int cmp_instance(const void *pa, const void *pb) {
  const struct ent *a = pa, *b = pb;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  if (a->comm_rank != b->comm_rank) return a->comm_rank < b->comm_rank ? -1 : 1;
  return (a->o == NULL) - (b->o == NULL); /* the window's op first: it counts */
}

/* every op's compute gap, one tracker per process, in its ring's order (the order the
 * harvest thread finished them, as a dump's lines: an untimed op breaks the sum where it ran;
 * ordered by start, an untimed op's missing start would move it) */
static void gaps(struct ent *e, size_t n, struct cs_gap_tracker *t) {
  for (size_t i = 0; i < n; i++) {
    if (!i || e[i].o->rank != e[i - 1].o->rank) cs_gap_reset(t);
    const struct cs_det_op *o = e[i].o;
    e[i].gap_us = -1;
    if (o->state == CS_DET_DONE && o->end_ns >= o->start_ns && o->start_ns > 0)
      e[i].gap_us = cs_gap_timed(t, o->comm, o->stream, o->start_ns, o->end_ns);
    else
      cs_gap_untimed(t, o->stream);
  }
}

int ring_sched_judge(const struct cs_det_op *ops, size_t n, struct cs_det_result *det, struct ring_sched_counts *c) {
  return ring_sched_judge_hist(ops, n, NULL, 0, det, c);
}

int ring_sched_judge_hist(const struct cs_det_op *ops, size_t n, const struct ring_sched_gap *hist, size_t nhist,
                          struct cs_det_result *det, struct ring_sched_counts *c) {
  memset(c, 0, sizeof *c);
  size_t k = 0, all = n + nhist;
  struct ent *e = malloc((all ? all : 1) * sizeof *e);
  struct cs_sched_op *so = malloc((all ? all : 1) * sizeof *so);
  struct cs_pwait_op *po = malloc((n ? n : 1) * sizeof *po);
  struct cs_gap_tracker *t = malloc(sizeof *t);
  struct cs_sched *s = cs_sched_new();
  struct cs_pwait *pw = cs_pwait_new();
  struct cs_celse *ce = cs_celse_new();
  int rc = -1;
  if (!e || !so || !po || !t || !s || !pw || !ce) goto out;
  for (size_t i = 0; i < n; i++)
    if (ops[i].seq >= 0 && ops[i].comm_rank >= 0 && ops[i].state != CS_DET_FAILED)
      e[k++] = (struct ent){&ops[i], NULL, ops[i].comm, ops[i].seq, ops[i].comm_rank, -1};
  gaps(e, k, t);
  for (size_t i = 0; i < nhist; i++)
    if (hist[i].seq >= 0 && hist[i].comm_rank >= 0)
      e[k++] = (struct ent){NULL, &hist[i], hist[i].comm, hist[i].seq, hist[i].comm_rank, hist[i].gap_us};
  qsort(e, k, sizeof *e, cmp_instance);
  for (size_t lo = 0, hi; lo < k; lo = hi) {
    for (hi = lo + 1; hi < k && e[hi].comm == e[lo].comm && e[hi].seq == e[lo].seq;) hi++;
    size_t m = 0, mp = 0;
    for (size_t i = lo; i < hi; i++) {
      if (m && e[i].comm_rank == so[m - 1].comm_rank) continue; /* a duplicate rank: the first counts */
      const struct cs_det_op *o = e[i].o;
      if (!o) { /* kept from before the window: a collective, its gap only */
        so[m++] = (struct cs_sched_op){e[i].comm_rank, e[i].h->rank, e[i].h->host, -1, false, false, e[i].gap_us};
        continue;
      }
      bool timed = o->state == CS_DET_DONE && o->start_ns > 0 && o->end_ns >= o->start_ns;
      int peer = o->p2p && o->peer < o->comm_size ? o->peer : -1;
      so[m++] = (struct cs_sched_op){o->comm_rank, o->rank, o->host, peer, o->p2p, o->p2p && !o->recv, timed ? e[i].gap_us : -1};
      po[mp++] = (struct cs_pwait_op){o->comm_rank, o->rank, peer, o->p2p, o->p2p && !o->recv, timed, o->start_ns, o->end_ns};
    }
    if (cs_sched_instance(s, e[lo].comm, e[lo].seq, so, m) < 0 || (mp && cs_pwait_instance(pw, e[lo].comm, po, mp) < 0))
      goto out;
  }
  if (cs_sched_finish(s) < 0) goto out;
  c->explained_by_schedule = cs_sched_judge(s, det);
  c->explained_by_peer_wait = cs_pwait_attribute(pw, det);
  c->explained_by_comm_elsewhere = cs_celse_judge(ce, pw, det, s);
  rc = 0;
out:
  free(e), free(so), free(po), free(t);
  cs_sched_free(s);
  cs_pwait_free(pw);
  cs_celse_free(ce);
  return rc;
}
