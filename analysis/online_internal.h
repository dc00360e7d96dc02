/* analysis/online_internal.h: what the files of one rank's online-exchange evaluator share
 * (analysis/online_eval.c has the protocol): the layouts of round 0 and the detail rounds
 * inside struct cs_online_wire, the rank's state (backlogs, shipped items, aggregates,
 * self-judging windows, findings), and the encodings both directions use. Not an
 * interface: only analysis/online_*.c include it. */
#ifndef COLLSCOPE_STATS_ONLINE_INTERNAL_H
#define COLLSCOPE_STATS_ONLINE_INTERNAL_H
#include "collscope/online.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "collscope/uthash_nonfatal.h"

#include "collscope/hash.h"
#include "collscope/schema.h"
#include "collscope/sdc.h"
#include "detect_internal.h"

#define OPS_BACKLOG 256u  /* sampled instances waiting to be shipped */
#define SDC_BACKLOG 4096u /* checked collectives waiting to be shipped */
#define LOCAL_CAP 4096u   /* shipped items kept until their instance completes */
#define AGG_CAP 4096u     /* partial aggregates (shared) */
#define AGG_MAX_AGE 64u   /* exchanges an incomplete aggregate or a shipped item is kept */
/* exchanges a complete instance waits for an earlier instance of its communicator that this
 * rank shipped and that has not completed (lost in a slot collision, shipped again), so
 * that the windows take instances in seq order whatever exchange each completed in */
#define ORDER_HOLD 4u
#define WIN_COMMS 64u /* communicators a rank judges itself on */
#define PENDING_REPORTS 8u
#define RANK_BITS 24 /* comm ranks packed under a duration */
#define DUR_MAX ((1ull << 40) - 1)
#define RANK_MASK ((1ull << RANK_BITS) - 1)
/* the data-load fit's bytes per rank and instance, at most (clamped): with DUR_MAX and 2^24
 * ranks every sum and product of the fit fits 125 bits (online_instance.c) */
#define XB_MAX ((1ull << 36) - 1)
/* communicators of at most this many ranks also carry each member's duration and P2P bytes on
 * their own (a member adds duration + 1 ns and bytes + 1 at its comm rank; the others add 0):
 * the exchange reads their instances as the report does (online_instance.c exact_members) */
#define ONL_EXACT 16
#define ONL_XB_BITS 40 /* a member's word of bytes: bytes + 1 below, its pipeline stage + 1 above */

/* ---------------------------------------------------------------- wire layouts */
struct r0_min {
  uint64_t magic, nmagic, exch, nexch, nbacklog;
  struct {
    uint64_t comm, ncomm, seq, nseq, size, nsize, durmin, ndurmax;
    uint64_t durmin_hi; /* duration << RANK_BITS | (RANK_MASK - comm rank): a tie for the last */
  } op[CS_ONLINE_OP_SLOTS];
  struct {
    uint64_t comm, ncomm, seq, nseq, size, nsize, meta, nmeta, count, ncount, fp, nfp, out, nout;
  } sdc[CS_ONLINE_SDC_SLOTS];
  struct {
    uint64_t rank, nrank;
  } rep[CS_ONLINE_REPORT_SLOTS];
};
struct r0_sum {
  uint64_t ranks, drops;
  struct {
    uint64_t count, dursum, gapsum, gapcnt;
    uint64_t xsum, x2[3], xd[3]; /* P2P bytes x, x^2, x * duration (ns), the last two in 32-bit limbs */
    uint64_t d2[3];              /* duration (ns) squared, in 32-bit limbs: the members' noise */
    uint64_t dm[ONL_EXACT];      /* at most ONL_EXACT members: member r's duration (ns) + 1 at r */
    uint64_t xm[ONL_EXACT];      /* ... its P2P bytes (onl_xb) + 1, its stage + 1 << ONL_XB_BITS */
    uint64_t gm[ONL_EXACT];      /* ... its compute gap (ns) + 1, 0 unknown */
  } op[CS_ONLINE_OP_SLOTS];
  struct {
    uint64_t members, nfp, nin, int_in, int_out, root_out_ok, out_nonfinite;
  } sdc[CS_ONLINE_SDC_SLOTS];
  struct {
    uint64_t count, comm, comm_rank, instances, kind, host[CS_ONLINE_HOST / 8];
  } rep[CS_ONLINE_REPORT_SLOTS];
};
struct r0_fsum {
  struct {
    double in_sum, in_abs, out_sum, root_out;
  } sdc[CS_ONLINE_SDC_SLOTS];
  struct {
    double share, lateness, median;
  } rep[CS_ONLINE_REPORT_SLOTS];
};
struct bucket_min {
  uint64_t fp, nfp, crank, ncrank, wrank, out;
};
struct bucket_sum {
  uint64_t count, wrank, host[CS_ONLINE_HOST / 8];
};
struct rd_min {
  struct bucket_min b[CS_ONLINE_DETAIL][CS_ONLINE_BUCKETS];
};
struct rd_sum {
  struct bucket_sum b[CS_ONLINE_DETAIL][CS_ONLINE_BUCKETS];
};
_Static_assert(sizeof(struct r0_min) <= sizeof(((struct cs_online_wire *)0)->min), "round 0 MIN fits");
_Static_assert(sizeof(struct r0_sum) <= sizeof(((struct cs_online_wire *)0)->sum), "round 0 SUM fits");
_Static_assert(sizeof(struct r0_fsum) <= sizeof(((struct cs_online_wire *)0)->fsum), "round 0 FSUM fits");
_Static_assert(sizeof(struct rd_min) <= sizeof(((struct cs_online_wire *)0)->min), "detail MIN fits");
_Static_assert(sizeof(struct rd_sum) <= sizeof(((struct cs_online_wire *)0)->sum), "detail SUM fits");

/* ---------------------------------------------------------------- state */
struct key {
  uint64_t comm, seq;
};

struct op_local { /* this rank's shipped sampled instance */
  struct key k;
  struct cs_online_op o;
  unsigned shipped;
  UT_hash_handle hh;
};
struct sdc_local { /* this rank's shipped checked collective */
  struct key k;
  struct cs_online_sdc c;
  unsigned shipped;
  UT_hash_handle hh;
};
struct op_agg { /* shared: partial aggregate of a sampled instance */
  struct key k;
  uint64_t size, count, durmin, durmax, dursum, gapsum, gapcnt;
  uint64_t durmin_hi, xsum, x2[3], xd[3], d2[3];
  uint64_t dm[ONL_EXACT], xm[ONL_EXACT], gm[ONL_EXACT];
  unsigned born;
  UT_hash_handle hh;
};
struct sdc_agg { /* shared: partial aggregate of a checked collective */
  struct key k;
  uint64_t size, meta, count, fpmin, fpmax, outmin, outmax;
  uint64_t members, nfp, nin, int_in, int_out, root_out_ok, out_nonfinite;
  double in_sum, in_abs, out_sum, root_out;
  unsigned born, detail; /* detail rounds run on it */
  UT_hash_handle hh;
};
struct went {
  int last;   /* the comm rank last alone, -1 none (a tie, or the data-load fit read a line) */
  bool named; /* no two members share the shortest duration */
  bool draw;  /* a fresh draw: named, right after one that was not */
  double late, med, a, gap, pgap;
  double noise; /* cs_det_pt.noise: CS_DET_NOISE_FEW under CS_DET_NOISE_MIN members, else the
                 * peers' spread (online_instance.c), -1 unknown */
  double u;     /* at a draw, its offset's mid-rank (online_stragglers.c draw_u), else 1/2 */
  double uex;   /* its offset's mid-rank among the members' exact offsets (online_instance.c), -1 none */
};
/* A pipeline stage's rank against its stage peers (the report's analysis/stage_compute.c), over
 * every instance of a communicator whose members all sit in its stage: the weighted sign test's
 * sums and its own and each peer's compute gaps */
struct onl_stage {
  size_t above, below;
  double wsum, w2sum, gap_sum, peer_sum[ONL_EXACT];
  size_t gap_n, peer_n[ONL_EXACT];
  bool named;
};
/* what the members' own words of an instance of at most ONL_EXACT ranks said: n members (0: not
 * carried or garbled), whether they all sit in one pipeline stage, and their gaps (us, -1) */
struct onl_exact {
  size_t n;
  bool one_stage;
  double gap[ONL_EXACT];
};
struct self_win { /* this rank's window of a communicator's complete instances */
  uint64_t comm;
  uint32_t size, crank;
  struct went *e; /* ring of `window` entries */
  size_t n;       /* instances pushed */
  unsigned streak;
  size_t at;
  bool flagged;
  struct cost_state *cost;       /* the cost rule's window (detect_cost.c), NULL until the first */
  struct cs_det_cost_in prev_ci; /* ... and its record of the window's last instance */
  struct onl_stage stg;          /* the stage comparison over the run (analysis/online_sched.c) */
  UT_hash_handle hh;
  struct cs_det_pt pts[]; /* `window`: its points for the rules (online_stragglers.c) */
};
struct report {
  uint64_t comm;
  uint32_t crank;
  size_t instances;
  int kind;
  double share, late, med;
};

struct f_st {
  struct cs_online_straggler s;
  char host[CS_ONLINE_HOST + 1];
};
struct f_sdc {
  struct cs_online_sdc_finding f;
  char host[CS_ONLINE_HOST + 1];
};

struct cs_online_rank {
  int rank, n;
  char host[CS_ONLINE_HOST];
  struct cs_det_params p;
  uint64_t drops_ext, lost;
  unsigned cause;   /* cs_online_rank_set_cause */
  bool pipeline;    /* cs_online_rank_set_pipeline (analysis/online_sched.c) */
  int stage;        /* its stage: its comm rank on a pipeline (cs_online_rank_set_stage), -1 none */
  bool stage_named; /* the stage comparison named it (then the rules report it nowhere else) */
  /* backlogs */
  struct cs_online_op ops[OPS_BACKLOG];
  uint32_t ops_first, ops_n;
  struct cs_online_sdc *sdcq;
  uint32_t sdc_first, sdc_n;
  /* what this round shipped: slot -> item */
  struct cs_online_op op_slot[CS_ONLINE_OP_SLOTS];
  bool op_used[CS_ONLINE_OP_SLOTS];
  struct cs_online_sdc sdc_slot[CS_ONLINE_SDC_SLOTS];
  bool sdc_used[CS_ONLINE_SDC_SLOTS];
  int rep_slot; /* report slot used this exchange, -1 none */
  /* local tables */
  struct op_local *opl;
  size_t nopl;
  struct sdc_local *sdl;
  size_t nsdl;
  /* shared tables */
  struct op_agg *opa;
  size_t nopa;
  struct sdc_agg *sda;
  size_t nsda;
  struct sdc_agg *detail[CS_ONLINE_DETAIL];
  size_t ndetail;
  struct self_win *wins;
  size_t nwins;
  struct report pend[PENDING_REPORTS];
  size_t npend;
  double *scratch; /* 2 * window doubles */
  /* this exchange's findings */
  struct f_st *st;
  size_t nst, capst;
  struct f_sdc *sf;
  size_t nsf, capsf;
  struct cs_online_straggler *out_st;
  struct cs_online_sdc_finding *out_sf;
  size_t cap_out_st, cap_out_sf;
  struct cs_online_findings cur;
  bool oom;
};

static inline unsigned slot_of(uint64_t comm, uint64_t seq, uint32_t exchange, unsigned nslots) {
  return (unsigned)(cs_hash_fin(comm ^ cs_hash_fin(seq ^ ((uint64_t)exchange << 40))) % nslots);
}

/* order-preserving encoding of a double for MIN/MAX (NaN: not encoded, counted apart) */
static inline uint64_t enc_d(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return (b >> 63) ? ~b : b | (1ull << 63);
}
static inline double dec_d(uint64_t e) {
  uint64_t b = (e >> 63) ? e & ~(1ull << 63) : ~e;
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}
static inline uint64_t sdc_meta(const struct cs_online_sdc *c) {
  return (uint64_t)c->op | (uint64_t)(uint8_t)c->dtype << 8 | (uint64_t)(uint8_t)c->redop << 16 |
         (uint64_t)(uint32_t)(c->root + 1) << 24;
}

/* integer sums are kept in [0, 2^bits) by the writer; anything else carries 0 */
static inline uint64_t as_u64(double x) { return x >= 0 && x < 18446744073709551616.0 ? (uint64_t)x : 0; }

/* ---------------------------------------------------------------- across the files */
/* analysis/online_eval.c: a finding for a checked collective (NULL: out of memory, counted) */
struct f_sdc *cs_onl_sdc_finding(struct cs_online_rank *st, const struct sdc_agg *a, int check);
/* analysis/online_sdc_verdict.c: verdicts of the complete checked collectives of round 0
 * (those whose fingerprints disagree wait for detail rounds), a detail round's verdict
 * on one of them (1: decided), and the end of one */
void cs_onl_sdc_evaluate(struct cs_online_rank *st, uint32_t exchange);
int cs_onl_sdc_verdict_detail(struct cs_online_rank *st, struct sdc_agg *a, const struct bucket_min *bm,
                              const struct bucket_sum *bs, bool last_try);
void cs_onl_sdc_done(struct cs_online_rank *st, struct sdc_agg *a);
/* analysis/online_instance.c: what one complete instance tells this rank (its entry: last rank, ties,
 * lateness, its arrival offset less what its P2P bytes explain) and the cost rule's record of it */
void cs_onl_instance(const struct op_agg *a, const struct cs_online_op *own, struct went *e, struct cs_det_cost_in *ci,
                     struct onl_exact *x);
/* the encodings of one rank's own figures, as pack ships them */
static inline uint64_t onl_dur_ns(const struct cs_online_op *o) {
  uint64_t d = (uint64_t)((double)o->dur_us * 1e3);
  return d > DUR_MAX ? DUR_MAX : d;
}
static inline uint64_t onl_xb(const struct cs_online_op *o) { return o->p2p_bytes > XB_MAX ? XB_MAX : o->p2p_bytes; }
/* v (< 2^96) into three 32-bit limbs, added to l */
static inline void onl_limbs_add(uint64_t l[3], unsigned __int128 v) {
  l[0] += (uint64_t)(v & 0xffffffffu);
  l[1] += (uint64_t)((v >> 32) & 0xffffffffu);
  l[2] += (uint64_t)(v >> 64);
}
/* analysis/online_stragglers.c: the complete sampled instances of this exchange, judged */
void cs_onl_ops_evaluate(struct cs_online_rank *st, uint32_t exchange);
/* analysis/online_sched.c: an instance of w as this rank saw it, cleared of the lateness its
 * pipeline's schedule explains, before it judges itself */
void cs_onl_sched_adjust(const struct cs_online_rank *st, const struct self_win *w, struct went *e);
/* a pipeline's rank at an instance of a communicator of its own stage (x->one_stage): its gap
 * against its stage peers' (the report's stage comparison); true when it names itself now */
bool cs_onl_stage_instance(struct cs_online_rank *st, struct self_win *w, const struct onl_exact *x);

#endif
