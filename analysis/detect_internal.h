/* analysis/detect_internal.h: what the detector's files share (analysis/detect*.c): an instance's
 * figures, one communicator's sliding state, and the calls between the median helpers, the
 * straggler rules, the window bookkeeping and the final-window/hang analysis. */
#ifndef COLLSCOPE_DETECT_INTERNAL_H
#define COLLSCOPE_DETECT_INTERNAL_H

#include "collscope/detect.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "collscope/uthash_nonfatal.h"

struct inst {
  int last;   /* comm_rank that arrived last, -1 when several tie */
  bool fresh; /* last >= 0 right after an instance with none (the share-last rule's draw) */
  double lateness, med, gap_last, gap_peers;
  double noise; /* robust sigma of its members' arrival offsets (1.4826 x median |offset|) */
  int64_t seq;
  uint64_t bytes;
  size_t e0, ne; /* its entries in ents[] */
  int pg_rank;   /* the rank whose peers' median gap pg_val holds (-1: none yet); a flagged
                      * rank's figures reuse it as the window slides */
  double pg_val; /* that median, -1 when no peer has a gap */
};

/* one rank's timed op in an instance */
struct ent {
  int r;
  double dur_us; /* its duration */
  double off_us; /* its arrival offset, median(duration) - dur_us (> 0: it arrived after the
                  * median rank); set once the instance's durations are all in */
  double gap;    /* its compute gap */
  double u;      /* at a fresh draw, its arrival offset's mid-rank among the instance's members,
                  * in (0, 1): (members before it + half its ties + 1/2) / members; else 1/2 */
  double xb;     /* the bytes its rank's Send/Recv of the comm moved since its previous
                  * collective of the comm (detect_dataload.c) */
  int64_t t;     /* its op's end_ns */
};

struct okrank { /* a rank that meets a rule at the current instance, and its offset */
  double off;
  int r;
};

struct member { /* comm_rank -> identity */
  int rank;
  const char *host;
};

#define GROW(ptr, n, cap) \
  do { \
    if ((n) == (cap)) { \
      size_t nc_ = (cap) ? (cap)*2 : 16; \
      void *np_ = realloc((ptr), nc_ * sizeof *(ptr)); \
      if (!np_) goto oom; \
      (ptr) = np_; \
      (cap) = nc_; \
    } \
  } while (0)
/* Per-rank sliding state of one communicator. */
struct rstate {
  size_t n, pos;      /* instances in the window it has a timed op in; of those, off_us > 0 */
  size_t rn, rpos;    /* the same over the last `recent` instances */
  unsigned streak;    /* consecutive instances the flag conditions held, ending at `at` */
  size_t run, run_at; /* consecutive instances it arrived after the median rank, ending at run_at */
  size_t at;
  bool flagged_now;
  bool ok;          /* a rule held at the current instance (before persistence) */
  double off;       /* then its median offset (share-last rule: its median lateness) */
  bool grouped;     /* ... shared with ranks on other hosts alike: not flagged (detect_window.c) */
  size_t sidx;      /* its entry in out->stragglers + 1, 0 none */
  double p2p_idle;  /* its stream's idle time before its Send/Recv since its previous collective
                    * (their compute gaps summed), -1 when one has none (detect_window.c) */
  double p2p_bytes; /* the bytes of its Send/Recv since its previous collective (detect_dataload.c) */
};
/* The state of one communicator while its instances are fed in seq order. Only the last
 * window + 1 instances (and their entries) are kept: in[] is compacted when it reaches
 * 2 * (window + 1), so memory is bounded by comm size x window. `base` is the absolute
 * index (0-based count of the comm's instances) of in[0]. */
struct cstate {
  uint64_t comm;
  int csize;
  bool invalid; /* comm size out of range: the comm is ignored */
  struct member *mem;
  size_t *cnt;       /* per rank: the window's instances it arrived last in */
  size_t *fcnt;      /* ... of them, fresh draws (struct inst) */
  size_t nfresh;     /* the window's fresh draws */
  size_t *dn, *dpos; /* per rank: the fresh draws it is in; of those, arrival offset > 0 */
  struct rstate *rs;
  int64_t *done_max, *entered_max;
  int64_t *pend_seq; /* per rank: its lowest pending seq (INT64_MAX none) ... */
  int *pend_start;   /* ... and that op's gpu_start (enum cs_det_gpu_start) */
  double *durs, *gaps, *scratch;
  struct okrank *okv; /* per rank: the grouping of late ranks (detect_window.c) */
  size_t *okchg;
  struct dl_point *dlp;  /* per rank: the data-load fit's points (detect_dataload.c) */
  struct cs_det_pt *pts; /* window + 1: one rank's points for the rules (cs_det_fill_pts) */
  double *dl;            /* ... and its slopes, max(comm size, CS_DET_DL_PAIRS) */
  double *dlx, *dly;     /* ... and its bytes and offsets (comm size) */
  bool any_pending, any_flagged_now;
  int64_t oldest;
  struct inst *in;
  size_t nin, capin, base, total;
  size_t judged; /* instances the rules ran at (a window of >= min_instances) */
  struct ent *ents;
  size_t nents, capents;
  struct cs_det_straggler *str;
  size_t nstr, capstr;
  struct cost_state *cost; /* the cost rule's window (detect_cost.c), NULL until the first instance */
  UT_hash_handle hh;       /* the stream's table of communicators */
};

/* the data-load fit (detect_dataload.c): a rank's arrival offset against the P2P bytes it
 * moved since its previous collective of the comm, across an instance's members */
#define CS_DET_DL_PAIRS 4096 /* the most member pairs one instance's fit reads */
struct dl_point {
  double x, y; /* bytes, arrival offset */
};
double cs_det_p2p_bytes(struct cstate *C, const struct cs_det_op *o);
double cs_det_dataload(struct cstate *C, size_t e0, size_t n);
/* the fit itself over plain arrays, for any caller: n members' bytes and arrival offsets
 * (rewritten to residuals when it applies); v: n points, sl: max(n, CS_DET_DL_PAIRS) doubles */
double cs_det_dataload_fit(size_t n, const double *xb, double *off, struct dl_point *v, double *sl);

/* median helpers (detect_median.c); each reorders v */
double cs_det_median(double *v, size_t n);
double cs_det_median_mid(double *v, size_t n);
double cs_det_median_z(double *v, size_t k, double m);
/* the standard normal quantile of u in (0, 1) */
double cs_det_normal_score(double u);
/* An instance's offsets' reference, for the report (detect_window.c add_instance) and the online
 * exchange's instances whose members' durations travel one by one (online_instance.c): the
 * median (mid of two) of the members within CS_DET_OUTLIER_Z robust sigmas of the median
 * duration, from CS_DET_NOISE_MIN members and where they are a majority but not all; else that
 * median of all (*all). Each member's offset is then ref - its duration. Reorders dur; s: n. */
double cs_det_offset_ref(double *dur, size_t n, double *s, double *all);
/* the floor's noise of an instance (detect_judge.c): the robust sigma of its n members' offsets
 * about the median rank's 0, 1.4826 x median |offset|, from CS_DET_NOISE_MIN members, else
 * CS_DET_NOISE_FEW. Overwrites off. */
double cs_det_offset_noise(double *off, size_t n);

/* ---- the straggler rules, one implementation (detect_judge.c) ----
 * One rank at the instance just fed, over plain arrays: its counts over the window and one
 * point per instance of the window, oldest first. Every caller decides through these alone:
 * the report's window over every rank of a communicator (detect_window.c, for cs_detect and
 * cs_det_stream) and the online exchange's self-judgement over its own rank
 * (online_stragglers.c). A caller's adapter fills the arrays; no rule lives in an adapter. */
struct cs_det_pt { /* one instance of the window as one rank saw it */
  double med;      /* the instance's median duration */
  double late;     /* how long its peers waited for it, where it arrived last */
  double off;      /* its arrival offset (where in) */
  double gap;      /* its compute gap, -1 unknown */
  double pgap;     /* its peers' median compute gap, -1 unknown (where it arrived last, or all) */
  double noise;    /* the instance's robust sigma of its members' offsets, -1 unknown,
                    * CS_DET_NOISE_FEW: too few members to measure it */
  double gpeers;   /* the instance's median compute gap of the members but its last, -1 unknown */
  bool in;         /* it has a timed op there */
  bool last;       /* it arrived last, alone */
  bool draw;       /* a fresh draw (struct inst): its members started even */
  double u;        /* there, its offset's mid-rank among the members (struct ent) */
};
struct cs_det_counts { /* one rank's counts over the window (its pre-checks) */
  size_t w;            /* the window's instances */
  size_t n, pos;       /* those it has a timed op in; of those, arrival offset > 0 */
  size_t recent;       /* the recent window's instances (min(recent, window); 0: off) */
  bool recent_full;    /* the communicator has had that many */
  size_t rn, rpos;     /* n and pos over the recent window */
  size_t run;          /* consecutive instances, ending at this one, with arrival offset > 0 */
};
#define CS_DET_PRE_OFFSET 1u
#define CS_DET_PRE_RECENT 2u
#define CS_DET_PRE_FRESH 4u
/* which offset rules' pre-checks hold */
unsigned cs_det_prechecks(const struct cs_det_params *p, const struct cs_det_counts *c);
/* the smallest lateness or offset a rule accepts: max(floor_us, min(frac x the window's median
 * duration, CS_DET_GAP_FLOOR x the rank's median compute gap), CS_DET_NOISE_Z x noise_se, the
 * standard error of a median of the rank's instances under the window's median noise); gap or
 * noise_se < 0: unknown, that term left out */
#define CS_DET_GAP_FLOOR 0.1
#define CS_DET_NOISE_Z 5.0
#define CS_DET_OUTLIER_Z 5.0    /* an instance's offsets: the median of its members within this many
                                 * robust sigmas (detect_window.c add_instance) */
#define CS_DET_NOISE_MIN 8      /* members an instance's noise needs */
#define CS_DET_NOISE_FEW (-2.0) /* cs_det_pt.noise of an instance with fewer members (-1: not measured) */
double cs_det_threshold(const struct cs_det_params *p, double med, double gap, double noise_se);
/* the median over pt[0..w) of the instances' median durations (scratch: w doubles) */
double cs_det_window_med(const struct cs_det_pt *pt, size_t w, double *scratch);
/* the floor of a rank's offset rules (*base, unless NULL: the same without the noise term, the
 * grouping's bar for a late candidate): cs_det_threshold with its median known compute gap (where
 * it exceeds the instances' peers' median gap by the bound) and the instances' noise over
 * pt[0..w) (scratch: w doubles) */
double cs_det_rank_threshold(const struct cs_det_params *p, const struct cs_det_pt *pt, size_t w, double med,
                             double *scratch, double *base);
/* share-last: last k of w instances in a communicator of csize ranks is beyond chance */
bool cs_det_last_significant(const struct cs_det_params *p, size_t w, size_t k, int csize);
/* share-last over fresh draws: last in k of the window's nf fresh draws (instances that name a
 * last rank right after one that named none) is beyond chance */
bool cs_det_fresh_significant(const struct cs_det_params *p, size_t nf, size_t k, int csize);
/* the offset rule over the window's fresh draws alone (where the members started even: the only
 * instances that measure an arrival order in a job whose other instances tie), in communicators
 * of CS_DET_DRAW_MEMBERS or more (csize members): its median offset there above the floor with
 * the draws' own noise, and the normal scores of its mid-ranks among the draws' members (struct
 * ent u) as unlikely as a normal tail of CS_DET_DRAW_Z per judged instance over all the members;
 * *off its median offset there (scratch: 2w doubles) */
#define CS_DET_DRAW_MEMBERS CS_DET_NOISE_MIN /* the fewest members the draw rule runs in */
#define CS_DET_DRAW_Z 4.5                    /* its rank test's level: per judged instance, over all members */
bool cs_det_draw_rule(const struct cs_det_params *p, const struct cs_det_pt *pt, size_t w, double med, int csize,
                      double *scratch, double *off);
/* whether the draw rule runs for a rank: csize >= CS_DET_DRAW_MEMBERS, in >= min_instances of the
 * window's draws (nd), after the median rank in clearly more than half of them (npos: the offset
 * rule's sign test, z >= 2) */
bool cs_det_draw_precheck(const struct cs_det_params *p, int csize, size_t nd, size_t npos);
/* share-last: its median lateness over its last-arrivals reaches the threshold; fills s's
 * window_instances, last, share_last, lateness_us, median_dur_us, gap_us, peer_gap_us, kind
 * (scratch: w doubles) */
bool cs_det_last_rule(const struct cs_det_params *p, const struct cs_det_pt *pt, size_t w, double *scratch,
                      struct cs_det_straggler *s);
/* the offset, recent and fresh rules whose pre-checks hold, in that order, until one holds:
 * *off its median offset, *late the largest median offset measured (scratch: 2w doubles) */
bool cs_det_offset_rules(const struct cs_det_params *p, unsigned pre, const struct cs_det_counts *c, double thr,
                         const struct cs_det_pt *pt, size_t w, double *scratch, double *off, double *late);
/* its median arrival offset over the window */
double cs_det_rank_offset(const struct cs_det_pt *pt, size_t w, double *scratch);
/* compute (the gap excess explains at least half the lateness) or link */
int cs_det_kind(double gap, double pgap, double late);
/* persistence: the streak of consecutive instances ai a rule held at reaches persist */
bool cs_det_persist(unsigned *streak, size_t *at, size_t ai, unsigned persist);
/* a flagged rank's figures (by_last: s holds cs_det_last_rule's; otherwise s is filled over
 * the window); offset_us and later_share always over the window (scratch: w doubles) */
void cs_det_figures(const struct cs_det_pt *pt, size_t w, bool by_last, double med, double *scratch,
                    struct cs_det_straggler *s);

/* the report's adapter (detect_rules.c): comm_rank r's points over the buffer's instances
 * [lo, hi); peers: every instance's peer gap (else only where r arrived last) */
const struct ent *cs_det_find_ent(const struct ent *ents, size_t e0, size_t ne, int r);
void cs_det_fill_pts(struct cstate *C, size_t lo, size_t hi, int r, bool peers);

/* the cost rule (detect_cost.c): the instance just fed into its window (0, or -1 out of memory);
 * whether comm_rank r meets it now (*off: its median lateness where it cost its peers; call
 * once per rank and instance, when no other rule held); a flagged rank's rule and cost figures */
int cs_det_cost_feed(struct cstate *C, const struct cs_det_params *p);
/* ... its core over plain records, for any caller (the report's adapter above, the online
 * exchange's self-judgement): one instance as the rule sees it */
struct cs_det_cost_in {
  int last;                   /* the comm rank that arrived last, alone; -1 none */
  double lateness;            /* how long its peers waited for it (us) */
  double med;                 /* the instance's median duration (us): the floor's scale */
  double gap_last, gap_peers; /* the last rank's compute gap and its peers' (us, -1 unknown) */
  int64_t dt_ns;              /* the elapsed time since the previous instance */
  bool data;                  /* its members moved different Send/Recv bytes before it */
};
/* I (P: the instance before it, NULL none) into the window of csize ranks (*pk created on the
 * first; 0, or -1 out of memory), late_med: the median lateness of the last `window`
 * instances, I's included; whether comm_rank r meets the rule now; r's figures; the state freed */
int cs_det_cost_push(struct cost_state **pk, const struct cs_det_params *p, size_t csize, const struct cs_det_cost_in *I,
                     const struct cs_det_cost_in *P, double late_med);
bool cs_det_cost_judge(struct cost_state *K, const struct cs_det_params *p, size_t csize, int r, double *off);
void cs_det_cost_fill(const struct cost_state *K, int r, bool by_last, struct cs_det_straggler *s);
void cs_det_cost_release(struct cost_state **pk);
bool cs_det_cost_rule(struct cstate *C, const struct cs_det_params *p, int r, double *off);
void cs_det_cost_figures(const struct cstate *C, int r, bool by_last, struct cs_det_straggler *s);
void cs_det_cost_free(struct cstate *C);

/* one communicator's window (detect_window.c) and its final analysis (detect_finish.c) */
void cs_det_cstate_free(struct cstate *C);
int cs_det_cstate_size(struct cstate *C, int csize, const struct cs_det_params *p);
int cs_det_cstate_feed(struct cstate *C, const struct cs_det_params *p, int64_t seq, const struct cs_det_op *m,
                       size_t n);
bool cs_det_link_bound(struct cstate *C, const struct cs_det_params *p, size_t lo, size_t hi, double *small,
                       double *rel);
/* detect_hang.c: the comm's hang entry (hang_mode, struct cs_det_hang), and across the
 * communicators' entries, a rank behind another hang is not one whose GPU holds. 0, or -1 out of
 * memory. */
int cs_det_hang_entry(struct cstate *C, int hang_mode, struct cs_det_result *out, size_t *capH);
int cs_det_hangs_resolve(struct cs_det_result *out);
int cs_det_cstate_finish(struct cstate *C, const struct cs_det_params *p, int hang_mode, struct cs_det_result *out,
                         size_t *capS, size_t *capH, size_t *capR);

#endif
