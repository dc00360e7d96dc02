/* analysis/detect_window.c: one communicator's sliding window: its per-rank arrays, the
 * instances fed in seq order (arrival offsets, gaps, the flag streaks) and their compaction. */
#include "detect_internal.h"

#include <stdlib.h>
#include <string.h>

void cs_det_cstate_free(struct cstate *C) {
  free(C->mem);
  free(C->cnt);
  free(C->rs);
  free(C->done_max);
  free(C->entered_max);
  free(C->durs);
  free(C->gaps);
  free(C->scratch);
  free(C->in);
  free(C->ents);
  free(C->str);
  memset(C, 0, sizeof *C);
}

/* grow the per-rank arrays to csize ranks; 0, or -1 out of memory */
int cs_det_cstate_size(struct cstate *C, int csize, const struct cs_det_params *p) {
  if (csize <= C->csize) return 0;
  size_t n = (size_t)csize, o = (size_t)C->csize;
#define RESIZE(ptr, cnt_) \
  do { \
    void *np_ = realloc((ptr), (cnt_) * sizeof *(ptr)); \
    if (!np_) return -1; \
    (ptr) = np_; \
  } while (0)
  RESIZE(C->mem, n);
  RESIZE(C->cnt, n);
  RESIZE(C->rs, n);
  RESIZE(C->done_max, n);
  RESIZE(C->entered_max, n);
  RESIZE(C->durs, n);
  RESIZE(C->gaps, n);
  RESIZE(C->scratch, 2 * (size_t)p->window + n + 1);
#undef RESIZE
  for (size_t r = o; r < n; r++) {
    C->mem[r].rank = -1;
    C->mem[r].host = NULL;
    C->done_max[r] = C->entered_max[r] = -1;
    C->cnt[r] = 0;
    memset(&C->rs[r], 0, sizeof C->rs[r]);
  }
  C->csize = csize;
  return 0;
}

/* drop the instances before the last window + 1 (the window loop reaches back one more) */
static void cstate_compact(struct cstate *C, const struct cs_det_params *p) {
  size_t keep = (size_t)p->window + 1;
  if (C->nin < 2 * keep) return;
  size_t drop = C->nin - keep, e0 = C->in[drop].e0;
  memmove(C->in, C->in + drop, keep * sizeof *C->in);
  memmove(C->ents, C->ents + e0, (C->nents - e0) * sizeof *C->ents);
  for (size_t i = 0; i < keep; i++) C->in[i].e0 -= e0;
  C->nents -= e0;
  C->nin = keep;
  C->base += drop;
}

/* the members' identities, and how far each got in instance seq (seq < 0: identities only) */
static void note_members(struct cstate *C, int64_t seq, const struct cs_det_member *m, size_t n) {
  for (size_t k = 0; k < n; k++) {
    const struct cs_det_member *o = &m[k];
    if (o->comm_rank < 0 || o->comm_rank >= C->csize) continue;
    struct member *mm = &C->mem[o->comm_rank];
    if (mm->rank < 0) mm->rank = o->rank;
    if (!mm->host) mm->host = o->host;
    if (seq < 0) continue;
    int64_t *done = &C->done_max[o->comm_rank], *entered = &C->entered_max[o->comm_rank];
    if (o->state == CS_DET_DONE || o->state == CS_DET_UNTIMED) {
      if (seq > *done) *done = seq;
      if (seq > *entered) *entered = seq;
    } else if (o->state == CS_DET_ENTERED) {
      if (seq > *entered) *entered = seq;
    } else if (o->state == CS_DET_PENDING) {
      C->any_pending = true;
      if (seq > *entered) *entered = seq;
      if (o->enqueue_ns && (!C->oldest || o->enqueue_ns < C->oldest)) C->oldest = o->enqueue_ns;
    }
  }
}

/* Instance seq's timed collective ops as entries (one per rank), and, when it has two or
 * more, the instance: its median duration, the last rank to arrive (the one with the
 * shortest op, which waited least) and by how much. 1 added, 0 not (too few), -1 out of
 * memory. */
static int add_instance(struct cstate *C, int64_t seq, const struct cs_det_member *m, size_t n) {
  int csize = C->csize;
  size_t ntimed = 0;
  uint64_t bytes = 0;
  int last_rank = -1;
  double min_dur = 0, last_gap = -1;
  for (size_t k = 0; k < n; k++) {
    const struct cs_det_member *o = &m[k];
    if (o->p2p || o->state != CS_DET_DONE || o->end_ns < o->start_ns) continue;
    if (o->comm_rank < 0 || o->comm_rank >= csize || ntimed >= (size_t)csize) continue;
    if (ntimed && C->ents[C->nents - 1].r == o->comm_rank) continue; /* one op per rank and instance */
    if (o->bytes > bytes) bytes = o->bytes;
    double d = (double)(o->end_ns - o->start_ns) / 1e3;
    if (ntimed == 0 || d < min_dur) {
      min_dur = d;
      last_rank = o->comm_rank;
      last_gap = o->gap_us;
    }
    C->durs[ntimed++] = d;
    GROW(C->ents, C->nents, C->capents);
    C->ents[C->nents++] = (struct ent){.r = o->comm_rank, .dur = d, .gap = o->gap_us, .t = o->end_ns};
  }
  if (!(ntimed >= 2 && last_rank >= 0 && last_rank < csize)) {
    C->nents -= ntimed;
    return 0;
  }
  size_t e0 = C->nents - ntimed, ngaps = 0;
  for (size_t e = e0; e < C->nents; e++) /* peers' gaps */
    if (C->ents[e].r != last_rank && C->ents[e].gap >= 0) C->gaps[ngaps++] = C->ents[e].gap;
  GROW(C->in, C->nin, C->capin);
  struct inst *I = &C->in[C->nin++];
  I->med = cs_det_median(C->durs, ntimed);
  I->last = last_rank;
  I->lateness = I->med - min_dur;
  I->gap_last = last_gap;
  I->gap_peers = ngaps ? cs_det_median(C->gaps, ngaps) : -1;
  I->seq = seq;
  I->bytes = bytes;
  I->e0 = e0;
  I->ne = ntimed;
  I->pg_rank = -1;
  double mid = cs_det_median_mid(C->durs, ntimed);
  for (size_t e = e0; e < C->nents; e++) C->ents[e].offset = mid - C->ents[e].dur;
  return 1;
oom:
  return -1;
}

/* The window's per-rank counts after instance i (absolute index ai) came in and those
 * before [alo, ...) (and, for the recent rule, before arlo) left it. */
static void slide_counts(struct cstate *C, size_t i, size_t alo, size_t arlo, bool recent) {
  struct inst *in = C->in;
  const struct ent *ents = C->ents;
  struct rstate *rs = C->rs;
  C->cnt[in[i].last]++;
  for (size_t e = in[i].e0; e < in[i].e0 + in[i].ne; e++) {
    rs[ents[e].r].n++;
    rs[ents[e].r].pos += ents[e].offset > 0;
    rs[ents[e].r].rn++;
    rs[ents[e].r].rpos += ents[e].offset > 0;
  }
  if (recent && arlo > 0) {
    const struct inst *O = &in[arlo - 1 - C->base];
    for (size_t e = O->e0; e < O->e0 + O->ne; e++) {
      rs[ents[e].r].rn--;
      rs[ents[e].r].rpos -= ents[e].offset > 0;
    }
  }
  if (alo > 0) {
    const struct inst *O = &in[alo - 1 - C->base];
    C->cnt[O->last]--;
    for (size_t e = O->e0; e < O->e0 + O->ne; e++) {
      rs[ents[e].r].n--;
      rs[ents[e].r].pos -= ents[e].offset > 0;
    }
  }
}

/* the window [lo, i]: its instances' median duration, computed once on demand */
struct window {
  const struct inst *in;
  size_t lo, i, w;
  double *scratch;
  double med; /* -1: not yet */
};
static double window_median(struct window *W) {
  if (W->med < 0) {
    for (size_t j = W->lo; j <= W->i; j++) W->scratch[j - W->lo] = W->in[j].med;
    W->med = cs_det_median(W->scratch, W->w);
  }
  return W->med;
}

/* Rank r flagged at instance ai: its straggler entry (s_last: the share-last rule's, when
 * that rule flagged it), kept in C->str from its first flag on. -1 out of memory. */
static int record_straggler(struct cstate *C, struct window *W, int r, size_t ai, const struct cs_det_straggler *s_last) {
  const struct inst *in = C->in;
  size_t lo = W->lo, i = W->i, w = W->w;
  struct rstate *R = &C->rs[r];
  struct cs_det_straggler s;
  if (s_last) {
    s = *s_last;
  } else {
    memset(&s, 0, sizeof s);
    s.window_instances = w;
    s.last = C->cnt[r];
    s.share_last = (double)C->cnt[r] / (double)w;
    size_t k = 0;
    for (size_t j = lo; j <= i; j++)
      if (in[j].last == r) W->scratch[k++] = in[j].lateness;
    s.lateness_us = cs_det_median(W->scratch, k);
    s.median_dur_us = window_median(W);
  }
  double o2, g2, pg2;
  cs_det_rank_figures(C->in, C->ents, lo, i + 1, r, W->scratch, &o2, &g2, &pg2);
  s.offset_us = o2;
  s.later_share = R->n ? (double)R->pos / (double)R->n : 0;
  /* offset rule: gaps over the whole window (a share-last flag keeps eval_cand's,
   * over its last-arrivals) */
  if (!s_last) {
    double late = o2 > s.lateness_us ? o2 : s.lateness_us;
    s.gap_us = g2;
    s.peer_gap_us = pg2;
    s.kind = (g2 >= 0 && pg2 >= 0 && g2 - pg2 < 0.5 * late) ? CS_DET_LINK : CS_DET_COMPUTE;
  }
  s.comm = C->comm;
  s.comm_size = C->csize;
  s.comm_rank = r;
  s.rank = C->mem[r].rank;
  s.host = C->mem[r].host;
  const struct ent *own = cs_det_find_ent(C->ents, in[i].e0, in[i].ne, r);
  if (!R->sidx) {
    GROW(C->str, C->nstr, C->capstr);
    R->sidx = ++C->nstr;
    s.first_flag_instance = ai + 1;
    s.first_flag_seq = in[i].seq;
    s.first_flag_ns = own ? own->t : 0;
  } else {
    s.first_flag_instance = C->str[R->sidx - 1].first_flag_instance;
    s.first_flag_seq = C->str[R->sidx - 1].first_flag_seq;
    s.first_flag_ns = C->str[R->sidx - 1].first_flag_ns;
  }
  s.last_flag_seq = in[i].seq;
  s.last_flag_ns = own ? own->t : 0;
  C->str[R->sidx - 1] = s;
  return 0;
oom:
  return -1;
}

/* One instance (seq) of the comm: its members sorted by comm_rank. seq < 0 only records
 * the members' identities. 0, or -1 out of memory. */
int cs_det_cstate_feed(struct cstate *C, const struct cs_det_params *p, int64_t seq, const struct cs_det_member *m,
                       size_t n) {
  int csize = C->csize;
  note_members(C, seq, m, n);
  if (seq < 0) return 0;
  int added = add_instance(C, seq, m, n);
  if (added <= 0) return added;

  /* the sliding window, ending at this instance: absolute index ai, buffer index i */
  const struct inst *in = C->in;
  size_t i = C->nin - 1, ai = C->base + i;
  C->total = ai + 1;
  size_t recent = p->recent < p->window ? p->recent : p->window;
  size_t arlo = recent && ai + 1 > recent ? ai + 1 - recent : 0;
  size_t alo = ai + 1 > p->window ? ai + 1 - p->window : 0;
  slide_counts(C, i, alo, arlo, recent != 0);
  size_t lo = alo - C->base, rlo = arlo > C->base ? arlo - C->base : 0;
  struct window W = {in, lo, i, i + 1 - lo, C->scratch, -1};
  C->any_flagged_now = false;
  for (int r = 0; r < csize; r++) C->rs[r].flagged_now = false;
  if (W.w < p->min_instances) goto done;
  /* share-last rule: the rank last most often */
  int cand = 0;
  for (int r = 1; r < csize; r++)
    if (C->cnt[r] > C->cnt[cand]) cand = r;
  double p0 = 1.0 / (double)csize, need = p0 + p->z * cs_det_sqrt(p0 * (1 - p0) / (double)W.w);
  if (need < p->share) need = p->share;
  struct cs_det_straggler s_last = {0};
  bool last_ok = (double)C->cnt[cand] >= need * (double)W.w &&
                 cs_det_eval_cand(in, lo, i + 1, cand, p, C->scratch, &s_last);
  for (int r = 0; r < csize; r++) {
    struct rstate *R = &C->rs[r];
    bool ok = last_ok && r == cand;
    double off = 0;
    /* offset rule; cheap pre-check first: after the median in clearly more than half
     * of its instances (sign test, z >= 2) */
    if (!ok && R->n >= p->min_instances && (double)R->pos - 0.5 * (double)R->n >= cs_det_sqrt((double)R->n)) {
      double med = window_median(&W);
      double thr = p->floor_us > p->frac * med ? p->floor_us : p->frac * med;
      ok = cs_det_eval_offset(in, C->ents, lo, i + 1, r, thr, p->offset_z, C->scratch, &off);
    }
    /* recent rule: the same over the last `recent` instances only, stricter, so a
     * slowdown that starts mid-job is seen before it fills half the window */
    if (!ok && recent && ai + 1 - arlo == recent && 4 * R->rn >= 3 * recent &&
        (double)R->rpos >= p->recent_share * (double)R->rn) {
      double med = window_median(&W);
      double thr = p->floor_us > p->frac * med ? p->floor_us : p->frac * med;
      ok = cs_det_eval_offset(in, C->ents, rlo, i + 1, r, thr, p->recent_z, C->scratch, &off);
    }
    if (!ok) continue;
    /* persistence: a burst of scheduling noise on a busy host is not a straggler */
    R->streak = R->streak && R->at + 1 == ai ? R->streak + 1 : 1;
    R->at = ai;
    if (R->streak < p->persist) continue;
    R->flagged_now = C->any_flagged_now = true;
    if (record_straggler(C, &W, r, ai, last_ok && r == cand ? &s_last : NULL)) return -1;
  }
done:
  cstate_compact(C, p);
  return 0;
}
