/* analysis/detect_window.c: one communicator's sliding window: its per-rank arrays, and each
 * instance fed in seq order: its arrivals (durations, then arrival offsets and gaps), the
 * per-rank window counts, the rules pass, the grouping of late ranks, the flags with their
 * streaks, and the compaction of old instances. */
#include "detect_internal.h"

#include <stdlib.h>
#include <string.h>

void cs_det_cstate_free(struct cstate *C) {
  free(C->mem);
  free(C->cnt);
  free(C->fcnt);
  free(C->dn);
  free(C->dpos);
  free(C->rs);
  free(C->done_max);
  free(C->entered_max);
  free(C->pend_seq);
  free(C->pend_start);
  free(C->durs);
  free(C->gaps);
  free(C->scratch);
  free(C->okv);
  free(C->okchg);
  free(C->dlp);
  free(C->dl);
  free(C->dlx);
  free(C->dly);
  free(C->pts);
  free(C->in);
  free(C->ents);
  free(C->str);
  cs_det_cost_free(C);
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
  RESIZE(C->fcnt, n);
  RESIZE(C->dn, n);
  RESIZE(C->dpos, n);
  RESIZE(C->rs, n);
  RESIZE(C->done_max, n);
  RESIZE(C->entered_max, n);
  RESIZE(C->pend_seq, n);
  RESIZE(C->pend_start, n);
  RESIZE(C->durs, n);
  RESIZE(C->gaps, n);
  RESIZE(C->okv, n);
  RESIZE(C->okchg, n);
  RESIZE(C->scratch, 2 * (size_t)p->window + n + 1);
  RESIZE(C->dlp, n);
  RESIZE(C->dl, n > CS_DET_DL_PAIRS ? n : CS_DET_DL_PAIRS);
  RESIZE(C->dlx, n);
  RESIZE(C->dly, n);
  if (!C->pts) RESIZE(C->pts, (size_t)p->window + 1);
#undef RESIZE
  for (size_t r = o; r < n; r++) {
    C->mem[r].rank = -1;
    C->mem[r].host = NULL;
    C->done_max[r] = C->entered_max[r] = -1;
    C->pend_seq[r] = INT64_MAX;
    C->pend_start[r] = CS_DET_START_UNKNOWN;
    C->cnt[r] = C->fcnt[r] = C->dn[r] = C->dpos[r] = 0;
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

static bool same_host(const char *a, const char *b) { return a && b ? strcmp(a, b) == 0 : a == b; }

static int cmp_okrank(const void *a, const void *b) {
  const struct okrank *x = a, *y = b;
  if (x->off != y->off) return x->off < y->off ? -1 : 1;
  return x->r < y->r ? -1 : x->r > y->r;
}
/* the first index in v[0..n) (sorted by off) with off >= x */
static size_t lower_off(const struct okrank *v, size_t n, double x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t m = lo + (hi - lo) / 2;
    if (v[m].off < x)
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}
/* Of the n late candidates in C->okv: mark `grouped` those with at least three others whose
 * offset is within a factor of 1.25 of theirs, on two or more hosts in all.
 * O(n log n): sorted by offset, a rank's peers are a range, and whether a range holds two
 * hosts is a prefix count of host changes along the order. */
static void mark_groups(struct cstate *C, size_t n) {
  struct okrank *v = C->okv;
  qsort(v, n, sizeof *v, cmp_okrank);
  size_t *chg = C->okchg; /* chg[i]: host changes between neighbours in v[0..i] */
  chg[0] = 0;
  for (size_t i = 1; i < n; i++)
    chg[i] = chg[i - 1] + !same_host(C->mem[v[i - 1].r].host, C->mem[v[i].r].host);
  for (size_t i = 0; i < n; i++) {
    double o = v[i].off;
    if (!(o > 0)) continue;
    size_t lo = lower_off(v, n, o / 1.25), hi = lower_off(v, n, 1.25 * o * (1 + 1e-12));
    if (hi - lo >= 4 && chg[hi - 1] > chg[lo]) C->rs[v[i].r].grouped = true;
  }
}

/* an instance's timed ops as they are appended to ents[] */
struct arrivals {
  size_t ntimed;      /* ranks with a timed op (their entries end ents[]) */
  uint64_t bytes;     /* the largest op's size */
  int last_rank;      /* the rank with the shortest duration: it arrived last */
  bool tie;           /* two ranks share the shortest duration: they arrived together */
  double min_dur_us;  /* that shortest duration */
  double last_gap_us; /* the last rank's compute gap */
};

/* member o's identity, and the seqs it finished and entered (seq < 0: identity only) */
static void note_member(struct cstate *C, int64_t seq, const struct cs_det_op *o) {
  if (o->comm_rank < 0 || o->comm_rank >= C->csize) return;
  struct member *mm = &C->mem[o->comm_rank];
  if (mm->rank < 0) mm->rank = o->rank;
  if (!mm->host) mm->host = o->host;
  if (seq < 0) return;
  if (o->state == CS_DET_DONE || o->state == CS_DET_UNTIMED) {
    int64_t hi = o->last_seq > seq ? o->last_seq : seq; /* a group: through its last member */
    if (hi > C->done_max[o->comm_rank]) C->done_max[o->comm_rank] = hi;
    if (hi > C->entered_max[o->comm_rank]) C->entered_max[o->comm_rank] = hi;
  } else if (o->state == CS_DET_ENTERED) {
    if (seq > C->entered_max[o->comm_rank]) C->entered_max[o->comm_rank] = seq;
  } else if (o->state == CS_DET_PENDING) {
    C->any_pending = true;
    if (seq > C->entered_max[o->comm_rank]) C->entered_max[o->comm_rank] = seq;
    if (seq < C->pend_seq[o->comm_rank]) {
      C->pend_seq[o->comm_rank] = seq;
      C->pend_start[o->comm_rank] = o->gpu_start >= CS_DET_START_UNKNOWN && o->gpu_start <= CS_DET_START_NOT_REACHED
                                        ? o->gpu_start
                                        : CS_DET_START_UNKNOWN;
    }
    if (o->enqueue_ns && (!C->oldest || o->enqueue_ns < C->oldest)) C->oldest = o->enqueue_ns;
  }
}

/* A collective's compute gap: its stream's idle time since the rank's previous collective of
 * the communicator, the idle time before the Send/Recv in between included (a Send/Recv
 * waits for its peer alone, so a stall before it is still the rank's lateness at the next
 * collective: in an expert-parallel step the dispatch and combine). A Send/Recv member adds
 * its own gap to its rank's sum and gets -1; a collective member gets its gap plus the sum
 * (-1 when either is unknown), and the sum starts over. */
static double collective_gap(struct cstate *C, const struct cs_det_op *o) {
  if (o->comm_rank < 0 || o->comm_rank >= C->csize) return -1;
  struct rstate *R = &C->rs[o->comm_rank];
  if (o->p2p) {
    bool known = o->state == CS_DET_DONE && o->gap_us >= 0 && R->p2p_idle >= 0;
    R->p2p_idle = known ? R->p2p_idle + o->gap_us : -1;
    return -1;
  }
  double gap = o->gap_us >= 0 && R->p2p_idle >= 0 ? o->gap_us + R->p2p_idle : -1;
  R->p2p_idle = 0;
  return gap;
}

/* the members of one instance: their identities, and one entry per rank with a timed
 * collective (its duration in dur_us and C->durs) appended to ents[]. 0, or -1 out of memory */
static int add_arrivals(struct cstate *C, int64_t seq, const struct cs_det_op *m, size_t n, struct arrivals *A) {
  int csize = C->csize;
  memset(A, 0, sizeof *A);
  A->last_rank = -1;
  A->last_gap_us = -1;
  for (size_t k = 0; k < n; k++) {
    const struct cs_det_op *o = &m[k];
    note_member(C, seq, o);
    double gap = seq >= 0 ? collective_gap(C, o) : -1;
    double xb = seq >= 0 ? cs_det_p2p_bytes(C, o) : 0;
    if (seq < 0 || o->p2p || o->state != CS_DET_DONE || o->end_ns < o->start_ns) continue;
    if (o->comm_rank < 0 || o->comm_rank >= csize || A->ntimed >= (size_t)csize) continue;
    if (A->ntimed && C->ents[C->nents - 1].r == o->comm_rank) continue; /* one op per rank and instance */
    if (o->bytes > A->bytes) A->bytes = o->bytes;
    double dur = (double)(o->end_ns - o->start_ns) / 1e3;
    if (A->ntimed == 0 || dur < A->min_dur_us) {
      A->min_dur_us = dur;
      A->last_rank = o->comm_rank;
      A->last_gap_us = gap;
      A->tie = false;
    } else if (dur == A->min_dur_us) {
      A->tie = true;
    }
    C->durs[A->ntimed++] = dur;
    GROW(C->ents, C->nents, C->capents);
    C->ents[C->nents++] = (struct ent){.r = o->comm_rank, .dur_us = dur, .gap = gap, .xb = xb, .t = o->end_ns};
  }
  return 0;
oom:
  return -1;
}

/* each entry's mid-rank u among the instance's n entries from e0 (struct ent) at a fresh draw,
 * where the draw rule reads them (detect_judge.c); 1/2 elsewhere */
static void draw_ranks(struct cstate *C, size_t e0, size_t n, bool fresh) {
  struct ent *ents = C->ents + e0;
  if (!fresh) {
    for (size_t k = 0; k < n; k++) ents[k].u = 0.5;
    return;
  }
  struct okrank *v = C->okv; /* comm size entries, free until the rules pass */
  for (size_t k = 0; k < n; k++) v[k] = (struct okrank){ents[k].off_us, (int)k};
  qsort(v, n, sizeof *v, cmp_okrank);
  for (size_t a = 0, b; a < n; a = b) {
    for (b = a + 1; b < n && v[b].off == v[a].off;) b++;
    double u = (0.5 * (double)(a + b)) / (double)n; /* (a + (b - a - 1) / 2 + 1/2) / n */
    for (size_t k = a; k < b; k++) ents[v[k].r].u = u;
  }
}

/* the instance whose entries add_arrivals appended: its figures in in[], each entry's arrival
 * offset (off_us) from its duration, less the share its P2P bytes explain (detect_dataload.c:
 * then the last rank is the one with the largest residual, and its lateness that residual
 * over the median rank's). 0, or -1 out of memory */
static int add_instance(struct cstate *C, int64_t seq, const struct arrivals *A) {
  size_t e0 = C->nents - A->ntimed, ngaps = 0;
  GROW(C->in, C->nin, C->capin);
  struct inst *I = &C->in[C->nin++];
  I->med = cs_det_median(C->durs, A->ntimed);
  /* the offsets' reference: the median of the members within CS_DET_OUTLIER_Z robust sigmas of
   * the median duration. Members far outside the instance's spread (a slow GPU model's ranks, a
   * straggler under low noise) are no measure of where the regular members arrived, and among a
   * few members they pull the median rank late: at 8 ranks with simhost2's two half-speed GPUs
   * ~2 ms late, a GPU 20% slower (400 us) sat ~180 us after the median rank, at the floor, and was
   * missed in 1 of 10 seeds with 10% jitter and a tail. A clean member of 1,024 lies beyond 5
   * sigmas about once in 2,000 (the tail), which moves the median by nothing. With a majority
   * left only; the noise below is still measured over every member. */
  double mid_all, mid = cs_det_offset_ref(C->durs, A->ntimed, C->gaps, &mid_all);
  for (size_t e = e0; e < C->nents; e++) C->ents[e].off_us = mid - C->ents[e].dur_us;
  /* ranks that arrived at the same moment (released together by an earlier collective of
   * another communicator: a group, a host) have no last one among them: the instance counts
   * for no rank's share-last (it would always go to the lowest comm rank of the group) */
  int last = A->last_rank;
  bool tie = A->tie;
  /* how long the others waited for the last: the median rank's duration over the last's; with
   * two ranks the median is the last's own, and the wait is its peer's duration */
  I->lateness = A->ntimed == 2 ? C->durs[0] + C->durs[1] - 2 * A->min_dur_us : I->med - A->min_dur_us;
  I->gap_last = A->last_gap_us;
  if (cs_det_dataload(C, e0, A->ntimed) > 0) {
    size_t b = e0;
    tie = false;
    for (size_t e = e0 + 1; e < C->nents; e++) {
      if (C->ents[e].off_us > C->ents[b].off_us) {
        b = e;
        tie = false;
      } else if (C->ents[e].off_us == C->ents[b].off_us) {
        tie = true;
      }
    }
    last = C->ents[b].r;
    I->lateness = I->med - mid_all + C->ents[b].off_us; /* the fit's residuals are about every member's median */
    I->gap_last = C->ents[b].gap;
  }
  for (size_t e = e0; e < C->nents; e++) /* peers' gaps */
    if (C->ents[e].r != last && C->ents[e].gap >= 0) C->gaps[ngaps++] = C->ents[e].gap;
  I->last = tie ? -1 : last;
  /* a fresh draw: it names a last rank right after an instance that named none (its members
   * released together: they start even, so which comes last is a draw of its own; at the
   * instances after it a rank late once stays late through the ops queued behind it) */
  I->fresh = I->last >= 0 && C->nin >= 2 && C->in[C->nin - 2].last < 0;
  draw_ranks(C, e0, A->ntimed, I->fresh);
  I->gap_peers = ngaps ? cs_det_median(C->gaps, ngaps) : -1;
  /* the floor's noise (detect_judge.c): the members' offsets' robust sigma, about the median
   * rank's 0; with fewer than CS_DET_NOISE_MIN members a straggler's own offset would be half of
   * it: unknown */
  for (size_t e = e0; e < C->nents; e++) C->gaps[e - e0] = C->ents[e].off_us;
  I->noise = cs_det_offset_noise(C->gaps, A->ntimed);
  I->seq = seq;
  I->bytes = A->bytes;
  I->e0 = e0;
  I->ne = A->ntimed;
  I->pg_rank = -1;
  return 0;
oom:
  return -1;
}

/* the sliding window ending at the instance just fed, and what the share-last rule found */
struct window {
  size_t i, ai;                   /* that instance: buffer index, absolute index */
  size_t lo, w;                   /* the window's first buffer index, and its instances */
  size_t recent;                  /* the recent rule's instances, at most the window */
  size_t arlo;                    /* the recent window's first absolute index */
  size_t rlo;                     /* ... and its buffer index */
  double med;                     /* median duration over the window, -1 until computed */
  int cand;                       /* the rank last most often */
  int fresh;                      /* the rank last in more fresh draws than chance, -1 none */
  bool last_ok;                   /* cand meets the share-last rule ... */
  struct cs_det_straggler s_last; /* ... with these figures */
};

/* the median of the instances' median durations over the window */
static double window_median(struct cstate *C, const struct window *W) {
  for (size_t j = W->lo; j <= W->i; j++) C->scratch[j - W->lo] = C->in[j].med;
  return cs_det_median(C->scratch, W->w);
}

/* slide the window onto the instance just fed: add its entries to the ranks' counts, drop
 * those of the instances that left the window and the recent window; fills W's bounds */
static void slide_window(struct cstate *C, const struct cs_det_params *p, struct window *W) {
  struct inst *in = C->in;
  const struct ent *ents = C->ents;
  struct rstate *rs = C->rs;
  size_t i = C->nin - 1, ai = C->base + i;
  W->i = i;
  W->ai = ai;
  C->total = ai + 1;
  W->recent = p->recent < p->window ? p->recent : p->window;
  if (in[i].last >= 0) C->cnt[in[i].last]++;
  if (in[i].fresh) C->fcnt[in[i].last]++, C->nfresh++;
  for (size_t e = in[i].e0; e < in[i].e0 + in[i].ne; e++) {
    struct rstate *Q = &rs[ents[e].r];
    bool after = ents[e].off_us > 0; /* it arrived after the median rank */
    Q->run = after ? (Q->run && Q->run_at + 1 == ai ? Q->run + 1 : 1) : 0;
    Q->run_at = ai;
    Q->n++;
    Q->pos += after;
    Q->rn++;
    Q->rpos += after;
    if (in[i].fresh) C->dn[ents[e].r]++, C->dpos[ents[e].r] += after;
  }
  W->arlo = W->recent && ai + 1 > W->recent ? ai + 1 - W->recent : 0;
  if (W->recent && W->arlo > 0) {
    const struct inst *O = &in[W->arlo - 1 - C->base];
    for (size_t e = O->e0; e < O->e0 + O->ne; e++) {
      rs[ents[e].r].rn--;
      rs[ents[e].r].rpos -= ents[e].off_us > 0;
    }
  }
  size_t alo = ai + 1 > p->window ? ai + 1 - p->window : 0;
  if (alo > 0) {
    const struct inst *O = &in[alo - 1 - C->base];
    if (O->last >= 0) C->cnt[O->last]--;
    if (O->fresh) C->fcnt[O->last]--, C->nfresh--;
    for (size_t e = O->e0; e < O->e0 + O->ne; e++) {
      rs[ents[e].r].n--;
      rs[ents[e].r].pos -= ents[e].off_us > 0;
      if (O->fresh) C->dn[ents[e].r]--, C->dpos[ents[e].r] -= ents[e].off_us > 0;
    }
  }
  W->lo = alo - C->base;
  W->rlo = W->arlo > C->base ? W->arlo - C->base : 0;
  W->w = i + 1 - W->lo;
  W->med = -1;
}

/* share-last rule: the rank last most often, if it is last that often by chance only with
 * the rule's small probability (detect_judge.c) */
static void share_last_rule(struct cstate *C, const struct cs_det_params *p, struct window *W) {
  const size_t *cnt = C->cnt, *fcnt = C->fcnt;
  int csize = C->csize, cand = 0, fcand = 0;
  for (int r = 1; r < csize; r++) {
    if (cnt[r] > cnt[cand]) cand = r;
    if (fcnt[r] > fcnt[fcand]) fcand = r;
  }
  memset(&W->s_last, 0, sizeof W->s_last);
  W->last_ok = cs_det_last_significant(p, W->w, cnt[cand], csize);
  /* or last in more of the window's fresh draws than chance allows (detect_judge.c), judged
   * after the other rules (rules_pass) */
  W->fresh = !W->last_ok && cs_det_fresh_significant(p, C->nfresh, fcnt[fcand], csize) ? fcand : -1;
  W->cand = cand;
  if (W->last_ok) {
    cs_det_fill_pts(C, W->lo, W->i + 1, cand, false);
    W->last_ok = cs_det_last_rule(p, C->pts, W->w, C->scratch, &W->s_last);
  }
}

/* pass 1: which ranks meet a rule at this instance (rs[].ok, .off); every rank whose median
 * offset was measured above the floor (it passed a rule's pre-check) is a late candidate,
 * listed in C->okv for the grouping. Returns how many. */
static size_t rules_pass(struct cstate *C, const struct cs_det_params *p, struct window *W) {
  size_t nok = 0;
  int held = W->last_ok ? W->cand : -1; /* whose points C->pts holds (share_last_rule filled them) */
  for (int r = 0; r < C->csize; r++) {
    struct rstate *R = &C->rs[r];
    bool by_last = W->last_ok && r == W->cand;
    bool ok = by_last;
    double off = 0, late = 0; /* late: the largest median offset measured for it here */
    struct cs_det_counts c = {.w = W->w,
                              .n = R->n,
                              .pos = R->pos,
                              .recent = W->recent,
                              .recent_full = W->recent && W->ai + 1 - W->arlo == W->recent,
                              .rn = R->rn,
                              .rpos = R->rpos,
                              .run = R->run_at == W->ai ? R->run : 0};
    unsigned pre = cs_det_prechecks(p, &c);
    if (pre && W->med < 0) W->med = window_median(C, W);
    if ((pre || by_last) && held != r) {
      cs_det_fill_pts(C, W->lo, W->i + 1, r, false);
      held = r;
    }
    double base = -1, thr = pre ? cs_det_rank_threshold(p, C->pts, W->w, W->med, C->scratch, &base) : -1;
    if (!ok && pre) ok = cs_det_offset_rules(p, pre, &c, thr, C->pts, W->w, C->scratch, &off, &late);
    if (!ok) ok = cs_det_cost_rule(C, p, r, &off); /* detect_cost.c */
    /* the share-last rule over fresh draws, last: a rank late at the one op a step exposes
     * (its other instances ties); where its stalls cost its peers enough for the cost rule,
     * that rule's figures (its period, its stall) describe it */
    if (!ok && r == W->fresh) {
      cs_det_fill_pts(C, W->lo, W->i + 1, r, false);
      held = r;
      if (cs_det_last_rule(p, C->pts, W->w, C->scratch, &W->s_last)) {
        ok = by_last = W->last_ok = true;
        W->cand = r;
      }
    }
    /* the offset rule over the fresh draws alone (detect_judge.c), where its sign count there
     * passes the offset rule's pre-check: there the peers' tails beat a slow rank in the share-last
     * rule's draws. Its rank test's level is corrected for the members judged, so it runs in a
     * communicator of any size whose draws' noise is measured (CS_DET_DRAW_MEMBERS) */
    if (!ok && cs_det_draw_precheck(p, C->csize, C->dn[r], C->dpos[r])) {
      if (W->med < 0) W->med = window_median(C, W);
      if (held != r) cs_det_fill_pts(C, W->lo, W->i + 1, r, false);
      held = r;
      ok = cs_det_draw_rule(p, C->pts, W->w, W->med, C->csize, C->scratch, &off);
      if (!ok && off > late) late = off;
    }
    R->ok = ok;
    R->grouped = false;
    R->off = !ok ? 0 : by_last ? W->s_last.lateness_us
                               : off;
    if (ok && by_last) /* group it by its median offset, as the others */
      C->okv[nok++] = (struct okrank){cs_det_rank_offset(C->pts, W->w, C->scratch), r};
    else if (ok)
      C->okv[nok++] = (struct okrank){R->off, r};
    else if (base >= 0 && late >= base) /* the grouping's candidates: the floor but the noise */
      C->okv[nok++] = (struct okrank){late, r};
  }
  return nok;
}

/* comm_rank r's straggler entry at this instance: the share-last rule's figures, or the
 * window's for the offset rules (cs_det_figures); its first flag kept from the entry it
 * already has. 0, or -1 out of memory */
static int record_flag(struct cstate *C, struct window *W, int r) {
  struct inst *in = C->in;
  const struct ent *ents = C->ents;
  struct rstate *R = &C->rs[r];
  size_t i = W->i;
  bool by_last = W->last_ok && r == W->cand;
  struct cs_det_straggler s = W->s_last;
  if (W->med < 0) W->med = window_median(C, W);
  cs_det_fill_pts(C, W->lo, i + 1, r, !by_last);
  cs_det_figures(C->pts, W->w, by_last, W->med, C->scratch, &s);
  cs_det_cost_figures(C, r, by_last, &s);
  s.comm = C->comm;
  s.comm_size = C->csize;
  s.comm_rank = r;
  s.rank = C->mem[r].rank;
  s.host = C->mem[r].host;
  const struct ent *own = cs_det_find_ent(ents, in[i].e0, in[i].ne, r);
  if (!R->sidx) {
    GROW(C->str, C->nstr, C->capstr);
    R->sidx = ++C->nstr;
    s.first_flag_instance = W->ai + 1;
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

/* pass 2: persistence and the flags. 0, or -1 out of memory */
static int flags_pass(struct cstate *C, const struct cs_det_params *p, struct window *W) {
  bool link_bound = false, link_bound_known = false;
  for (int r = 0; r < C->csize; r++) {
    struct rstate *R = &C->rs[r];
    if (!R->ok || R->grouped) continue;
    if (!cs_det_persist(&R->streak, &R->at, W->ai, p->persist)) continue;
    /* a comm bound by a slow link: every rank waits for the network, and the endpoints of
     * the slow pair (the stream that sends into it, the one that receives from it) come to
     * the next collective a little late; lateness under 5% of the duration there is the
     * link's, reported as the comm's link entry (detect_finish.c), never as a compute
     * straggler on an endpoint */
    if (!link_bound_known) {
      double small, rel;
      link_bound = cs_det_link_bound(C, p, W->lo, W->i + 1, &small, &rel);
      link_bound_known = true;
      if (W->med < 0) W->med = window_median(C, W);
    }
    if (link_bound && R->off < 0.05 * W->med) continue;
    R->flagged_now = C->any_flagged_now = true;
    if (record_flag(C, W, r) < 0) return -1;
  }
  return 0;
}

/* One instance (seq) of the comm: its members sorted by comm_rank. seq < 0 only records
 * the members' identities. 0, or -1 out of memory. */
int cs_det_cstate_feed(struct cstate *C, const struct cs_det_params *p, int64_t seq, const struct cs_det_op *m,
                       size_t n) {
  struct arrivals A;
  if (add_arrivals(C, seq, m, n, &A) < 0) return -1;
  if (!(A.ntimed >= 2 && A.last_rank >= 0 && A.last_rank < C->csize)) {
    C->nents -= A.ntimed;
    return 0;
  }
  if (add_instance(C, seq, &A) < 0) return -1;
  struct window W;
  slide_window(C, p, &W);
  if (cs_det_cost_feed(C, p) < 0) return -1;
  C->any_flagged_now = false;
  for (int r = 0; r < C->csize; r++) C->rs[r].flagged_now = false;
  if (W.w >= p->min_instances) {
    C->judged++;
    share_last_rule(C, p, &W);
    size_t nok = rules_pass(C, p, &W);
    /* A hardware straggler is one GPU, or the GPUs of one host (and now and then one or two
     * more): lateness of about the same size (within a factor of 1.25) that four or more late
     * candidates on several hosts share at once is where the schedule puts them (a pipeline
     * stage's place in 1F1B at a world collective) or the work the data gives them, not a
     * slow GPU: none of those ranks is flagged (docs/detection.md). */
    if (nok >= 4) mark_groups(C, nok);
    if (flags_pass(C, p, &W) < 0) return -1;
  }
  cstate_compact(C, p);
  return 0;
}
