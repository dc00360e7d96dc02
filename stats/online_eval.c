/* stats/online_eval.c: one rank's side of the online exchange (include/collscope/online.h):
 * builds its contribution to each round and turns the reduced round into findings.
 *
 * Round 0 carries, in slots hashed from (comm, seq, exchange), the sampled instances and
 * checked collectives this rank ships now (oldest first), plus a header and the straggler
 * reports. A slot agrees when MIN(key) == MAX(key) over its contributors (MAX is carried as
 * MIN of the complement); a slot two instances landed in is lost and its contributors ship
 * again. Agreeing slots are merged into partial aggregates keyed by (comm, seq) -- MIN, MAX
 * and SUM merge exactly across exchanges, so a rank whose harvest lags ships later and the
 * instance still completes -- and an instance is complete when its contributor count
 * reaches the communicator's size.
 *  - Stragglers: for a complete instance every rank knows the shortest duration and whose
 *    it is (the last arrival: MIN of duration << 24 | comm rank), the longest, and the sum
 *    (the median is estimated by the mean without the shortest and the longest), and its own
 *    duration. It runs detect.h's rules (share-last, offset, recent, persistence) for itself
 *    over a window of its communicator's instances; a rank that flags itself ships one
 *    report (figures and host) in a later exchange's report slot, and rank 0 logs it.
 *  - SDC: the fingerprints agree when MIN == MAX; the sum rules use the summed input sums,
 *    input magnitudes and output sums. A complete instance whose fingerprints disagree gets
 *    a detail round: each member adds 1 to the bucket of its fingerprint (hash with a
 *    per-round salt) with the bucket's MIN/MAX fingerprint, comm rank range, world rank and
 *    host; the bucket holding a strict majority of one value is the reference and every
 *    other bucket names its ranks. A majority bucket holding two values is retried with
 *    another salt; after CS_ONLINE_DETAIL_ROUNDS it counts as "no strict majority".
 * All shared state changes are functions of the reduced bytes, so every rank reaches the
 * same SDC verdict. Every table is bounded; what does not fit is dropped and counted. */
#include "collscope/online.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "collscope/schema.h"
#include "collscope/sdc.h"

#define OPS_BACKLOG 256u      /* sampled instances waiting to be shipped */
#define SDC_BACKLOG 4096u     /* checked collectives waiting to be shipped */
#define LOCAL_CAP 4096u       /* shipped items kept until their instance completes */
#define AGG_CAP 4096u         /* partial aggregates (shared) */
#define AGG_MAX_AGE 64u       /* exchanges an incomplete aggregate or a shipped item is kept */
#define WIN_COMMS 64u         /* communicators a rank judges itself on */
#define PENDING_REPORTS 8u
#define RANK_BITS 24          /* comm ranks packed under a duration */
#define DUR_MAX ((1ull << 40) - 1)

/* ---------------------------------------------------------------- wire layouts */
struct r0_min {
  uint64_t magic, nmagic, exch, nexch, nbacklog;
  struct { uint64_t comm, ncomm, seq, nseq, size, nsize, durmin, ndurmax; } op[CS_ONLINE_OP_SLOTS];
  struct {
    uint64_t comm, ncomm, seq, nseq, size, nsize, meta, nmeta, count, ncount, fp, nfp, out, nout;
  } sdc[CS_ONLINE_SDC_SLOTS];
  struct { uint64_t rank, nrank; } rep[CS_ONLINE_REPORT_SLOTS];
};
struct r0_sum {
  uint64_t ranks, drops;
  struct { uint64_t count, dursum, gapsum, gapcnt; } op[CS_ONLINE_OP_SLOTS];
  struct { uint64_t members, nfp, nin, int_in, int_out, root_out_ok, out_nonfinite; } sdc[CS_ONLINE_SDC_SLOTS];
  struct { uint64_t count, comm, comm_rank, instances, kind, host[CS_ONLINE_HOST / 8]; } rep[CS_ONLINE_REPORT_SLOTS];
};
struct r0_fsum {
  struct { double in_sum, in_abs, out_sum, root_out; } sdc[CS_ONLINE_SDC_SLOTS];
  struct { double share, lateness, median; } rep[CS_ONLINE_REPORT_SLOTS];
};
struct bucket_min { uint64_t fp, nfp, crank, ncrank, wrank, out; };
struct bucket_sum { uint64_t count, wrank, host[CS_ONLINE_HOST / 8]; };
struct rd_min { struct bucket_min b[CS_ONLINE_DETAIL][CS_ONLINE_BUCKETS]; };
struct rd_sum { struct bucket_sum b[CS_ONLINE_DETAIL][CS_ONLINE_BUCKETS]; };
_Static_assert(sizeof(struct r0_min) <= sizeof(((struct cs_online_wire *)0)->min), "round 0 MIN fits");
_Static_assert(sizeof(struct r0_sum) <= sizeof(((struct cs_online_wire *)0)->sum), "round 0 SUM fits");
_Static_assert(sizeof(struct r0_fsum) <= sizeof(((struct cs_online_wire *)0)->fsum), "round 0 FSUM fits");
_Static_assert(sizeof(struct rd_min) <= sizeof(((struct cs_online_wire *)0)->min), "detail MIN fits");
_Static_assert(sizeof(struct rd_sum) <= sizeof(((struct cs_online_wire *)0)->sum), "detail SUM fits");

void cs_online_wire_identity(struct cs_online_wire *acc) {
  memset(acc->min, 0xff, sizeof acc->min);
  memset(acc->sum, 0, sizeof acc->sum);
  for (size_t i = 0; i < CS_ONLINE_NFSUM; i++) acc->fsum[i] = 0;
}

void cs_online_wire_fold(struct cs_online_wire *acc, const struct cs_online_wire *w) {
  for (size_t i = 0; i < CS_ONLINE_NMIN; i++)
    if (w->min[i] < acc->min[i]) acc->min[i] = w->min[i];
  for (size_t i = 0; i < CS_ONLINE_NSUM; i++) acc->sum[i] += w->sum[i];
  for (size_t i = 0; i < CS_ONLINE_NFSUM; i++) acc->fsum[i] += w->fsum[i];
}

/* ---------------------------------------------------------------- state */
struct key { uint64_t comm, seq; };

struct op_local {           /* this rank's shipped sampled instance */
  struct key k;
  struct cs_online_op o;
  unsigned shipped;
  UT_hash_handle hh;
};
struct sdc_local {          /* this rank's shipped checked collective */
  struct key k;
  struct cs_online_sdc c;
  unsigned shipped;
  UT_hash_handle hh;
};
struct op_agg {             /* shared: partial aggregate of a sampled instance */
  struct key k;
  uint64_t size, count, durmin, durmax, dursum, gapsum, gapcnt;
  unsigned born;
  UT_hash_handle hh;
};
struct sdc_agg {            /* shared: partial aggregate of a checked collective */
  struct key k;
  uint64_t size, meta, count, fpmin, fpmax, outmin, outmax;
  uint64_t members, nfp, nin, int_in, int_out, root_out_ok, out_nonfinite;
  double in_sum, in_abs, out_sum, root_out;
  unsigned born, detail;    /* detail rounds run on it */
  UT_hash_handle hh;
};
struct went { int last; double late, med, a, gap, pgap; };
struct self_win {           /* this rank's window of a communicator's complete instances */
  uint64_t comm;
  uint32_t size, crank;
  struct went *e;           /* ring of `window` entries */
  size_t n;                 /* instances pushed */
  unsigned streak;
  size_t at;
  bool flagged;
  UT_hash_handle hh;
};
struct report { uint64_t comm; uint32_t crank; size_t instances; int kind; double share, late, med; };

struct f_st { struct cs_online_straggler s; char host[CS_ONLINE_HOST + 1]; };
struct f_sdc { struct cs_online_sdc_finding f; char host[CS_ONLINE_HOST + 1]; };

struct cs_online_rank {
  int rank, n;
  char host[CS_ONLINE_HOST];
  struct cs_det_params p;
  uint64_t drops_ext, lost;
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
  int rep_slot;             /* report slot used this exchange, -1 none */
  /* local tables */
  struct op_local *opl; size_t nopl;
  struct sdc_local *sdl; size_t nsdl;
  /* shared tables */
  struct op_agg *opa; size_t nopa;
  struct sdc_agg *sda; size_t nsda;
  struct sdc_agg *detail[CS_ONLINE_DETAIL]; size_t ndetail;
  struct self_win *wins; size_t nwins;
  struct report pend[PENDING_REPORTS]; size_t npend;
  double *scratch;          /* 2 * window doubles */
  /* this exchange's findings */
  struct f_st *st; size_t nst, capst;
  struct f_sdc *sf; size_t nsf, capsf;
  struct cs_online_straggler *out_st;
  struct cs_online_sdc_finding *out_sf;
  size_t cap_out_st, cap_out_sf;
  struct cs_online_findings cur;
  bool oom;
};

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
static unsigned slot_of(uint64_t comm, uint64_t seq, uint32_t exchange, unsigned nslots) {
  return (unsigned)(mix64(comm ^ mix64(seq ^ ((uint64_t)exchange << 40))) % nslots);
}

struct cs_online_rank *cs_online_rank_new(int rank, int nranks, const char *host, const struct cs_det_params *params) {
  if (nranks < 1 || rank < 0 || rank >= nranks) return NULL;
  struct cs_online_rank *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->rank = rank;
  st->n = nranks;
  if (host) strncpy(st->host, host, CS_ONLINE_HOST - 1);
  if (params) st->p = *params;
  else cs_det_params_default(&st->p);
  if (st->p.window < 2) st->p.window = 2;
  if (st->p.min_instances < 2) st->p.min_instances = 2;
  if (st->p.persist < 1) st->p.persist = 1;
  st->rep_slot = -1;
  st->sdcq = malloc(SDC_BACKLOG * sizeof *st->sdcq);
  st->scratch = malloc(2 * (size_t)st->p.window * sizeof *st->scratch);
  if (!st->sdcq || !st->scratch) {
    cs_online_rank_free(st);
    return NULL;
  }
  return st;
}

void cs_online_rank_free(struct cs_online_rank *st) {
  if (!st) return;
  struct op_local *a, *at;
  HASH_ITER(hh, st->opl, a, at) { HASH_DEL(st->opl, a); free(a); }
  struct sdc_local *b, *bt;
  HASH_ITER(hh, st->sdl, b, bt) { HASH_DEL(st->sdl, b); free(b); }
  struct op_agg *c, *ct;
  HASH_ITER(hh, st->opa, c, ct) { HASH_DEL(st->opa, c); free(c); }
  struct sdc_agg *d, *dt;
  HASH_ITER(hh, st->sda, d, dt) { HASH_DEL(st->sda, d); free(d); }
  struct self_win *w, *wt;
  HASH_ITER(hh, st->wins, w, wt) { HASH_DEL(st->wins, w); free(w->e); free(w); }
  free(st->sdcq);
  free(st->scratch);
  free(st->st);
  free(st->sf);
  free(st->out_st);
  free(st->out_sf);
  free(st);
}

void cs_online_rank_feed_op(struct cs_online_rank *st, const struct cs_online_op *o) {
  if (st->ops_n == OPS_BACKLOG) { st->ops_first = (st->ops_first + 1) % OPS_BACKLOG; st->ops_n--; st->lost++; }
  st->ops[(st->ops_first + st->ops_n++) % OPS_BACKLOG] = *o;
}

void cs_online_rank_feed_sdc(struct cs_online_rank *st, const struct cs_online_sdc *c) {
  if (st->sdc_n == SDC_BACKLOG) { st->sdc_first = (st->sdc_first + 1) % SDC_BACKLOG; st->sdc_n--; st->lost++; }
  st->sdcq[(st->sdc_first + st->sdc_n++) % SDC_BACKLOG] = *c;
}

uint64_t cs_online_rank_lost(const struct cs_online_rank *st) { return st->lost; }
void cs_online_rank_set_drops(struct cs_online_rank *st, uint64_t drops) { st->drops_ext = drops; }

/* order-preserving encoding of a double for MIN/MAX (NaN: not encoded, counted apart) */
static uint64_t enc_d(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return (b >> 63) ? ~b : b | (1ull << 63);
}
static double dec_d(uint64_t e) {
  uint64_t b = (e >> 63) ? e & ~(1ull << 63) : ~e;
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}
static uint64_t sdc_meta(const struct cs_online_sdc *c) {
  return (uint64_t)c->op | (uint64_t)(uint8_t)c->dtype << 8 | (uint64_t)(uint8_t)c->redop << 16 |
         (uint64_t)(uint32_t)(c->root + 1) << 24;
}

/* integer sums are kept in [0, 2^bits) by the writer; anything else carries 0 */
static uint64_t as_u64(double x) { return x >= 0 && x < 18446744073709551616.0 ? (uint64_t)x : 0; }

/* ---------------------------------------------------------------- pack */
/* Linear probing from the hashed slot: ranks that ship the same items in the same order
 * pick the same slots; ranks out of step may not, and those slots are then lost and
 * shipped again (a slot's key must agree over its contributors). */
#define NO_SLOT (~0u)
static unsigned probe(const bool *used, unsigned nslots, unsigned s) {
  for (unsigned i = 0; i < nslots; i++, s = (s + 1) % nslots)
    if (!used[s]) return s;
  return NO_SLOT;
}

static void pack_round0(struct cs_online_rank *st, uint32_t exchange, struct cs_online_wire *w) {
  struct r0_min *mn = (struct r0_min *)w->min;
  struct r0_sum *sm = (struct r0_sum *)w->sum;
  struct r0_fsum *fs = (struct r0_fsum *)w->fsum;
  mn->magic = CS_ONLINE_MAGIC | (uint64_t)CS_ONLINE_VERSION << 32;
  mn->nmagic = ~mn->magic;
  mn->exch = exchange;
  mn->nexch = ~(uint64_t)exchange;
  sm->ranks = 1;
  sm->drops = st->drops_ext + st->lost;
  /* sampled instances, oldest first; one that hashes onto a slot already taken waits */
  memset(st->op_used, 0, sizeof st->op_used);
  struct cs_online_op keep[CS_ONLINE_SHIP_OPS];
  unsigned shipped = 0, kept = 0;
  while (shipped + kept < CS_ONLINE_SHIP_OPS && st->ops_n) {
    struct cs_online_op o = st->ops[st->ops_first];
    st->ops_first = (st->ops_first + 1) % OPS_BACKLOG;
    st->ops_n--;
    if (o.comm_size < 2 || o.comm_rank >= o.comm_size || o.comm_size >= (1u << RANK_BITS) || !(o.dur_us >= 0))
      continue;
    unsigned s = probe(st->op_used, CS_ONLINE_OP_SLOTS, slot_of(o.comm, o.seq, exchange, CS_ONLINE_OP_SLOTS));
    if (s == NO_SLOT) { keep[kept++] = o; continue; }
    st->op_used[s] = true;
    st->op_slot[s] = o;
    shipped++;
    uint64_t d = (uint64_t)((double)o.dur_us * 1e3);
    if (d > DUR_MAX) d = DUR_MAX;
    mn->op[s].comm = o.comm; mn->op[s].ncomm = ~o.comm;
    mn->op[s].seq = o.seq; mn->op[s].nseq = ~o.seq;
    mn->op[s].size = o.comm_size; mn->op[s].nsize = ~(uint64_t)o.comm_size;
    mn->op[s].durmin = d << RANK_BITS | o.comm_rank;
    mn->op[s].ndurmax = ~d;
    sm->op[s].count = 1;
    sm->op[s].dursum = d;
    if (o.gap_us >= 0 && o.gap_us < 1e9f) {
      sm->op[s].gapsum = (uint64_t)((double)o.gap_us * 1e3);
      sm->op[s].gapcnt = 1;
    }
  }
  while (kept) { /* back to the front, in order */
    st->ops_first = (st->ops_first + OPS_BACKLOG - 1) % OPS_BACKLOG;
    st->ops[st->ops_first] = keep[--kept];
    st->ops_n++;
  }
  /* checked collectives */
  memset(st->sdc_used, 0, sizeof st->sdc_used);
  struct cs_online_sdc skeep[CS_ONLINE_SHIP_SDC];
  shipped = kept = 0;
  while (shipped + kept < CS_ONLINE_SHIP_SDC && st->sdc_n) {
    struct cs_online_sdc c = st->sdcq[st->sdc_first];
    st->sdc_first = (st->sdc_first + 1) % SDC_BACKLOG;
    st->sdc_n--;
    if (c.comm_size < 1 || c.comm_rank >= c.comm_size) continue;
    unsigned s = probe(st->sdc_used, CS_ONLINE_SDC_SLOTS, slot_of(c.comm, c.seq, exchange, CS_ONLINE_SDC_SLOTS));
    if (s == NO_SLOT) { skeep[kept++] = c; continue; }
    st->sdc_used[s] = true;
    st->sdc_slot[s] = c;
    shipped++;
    bool is_bcast = c.op == CS_OP_Broadcast;
    bool has_in = (c.checked & 2) && (!is_bcast || (int)c.comm_rank == c.root);
    mn->sdc[s].comm = c.comm; mn->sdc[s].ncomm = ~c.comm;
    mn->sdc[s].seq = c.seq; mn->sdc[s].nseq = ~c.seq;
    mn->sdc[s].size = c.comm_size; mn->sdc[s].nsize = ~(uint64_t)c.comm_size;
    mn->sdc[s].meta = sdc_meta(&c); mn->sdc[s].nmeta = ~mn->sdc[s].meta;
    mn->sdc[s].count = c.count; mn->sdc[s].ncount = ~c.count;
    sm->sdc[s].members = 1;
    if (c.checked & 1) {
      mn->sdc[s].fp = c.fp; mn->sdc[s].nfp = ~c.fp;
      sm->sdc[s].nfp = 1;
      if (isfinite(c.out_sum)) { mn->sdc[s].out = enc_d(c.out_sum); mn->sdc[s].nout = ~enc_d(c.out_sum); }
      else sm->sdc[s].out_nonfinite = 1;
      fs->sdc[s].out_sum = c.out_sum;
      sm->sdc[s].int_out = as_u64(c.out_sum);
      if ((int)c.comm_rank == c.root) { sm->sdc[s].root_out_ok = 1; fs->sdc[s].root_out = c.out_sum; }
    }
    if (has_in) {
      sm->sdc[s].nin = 1;
      sm->sdc[s].int_in = as_u64(c.in_sum);
      fs->sdc[s].in_sum = c.in_sum;
      fs->sdc[s].in_abs = c.in_abs;
    }
  }
  while (kept) {
    st->sdc_first = (st->sdc_first + SDC_BACKLOG - 1) % SDC_BACKLOG;
    st->sdcq[st->sdc_first] = skeep[--kept];
    st->sdc_n++;
  }
  uint64_t backlog = (uint64_t)st->ops_n + st->sdc_n + st->npend;
  mn->nbacklog = ~backlog;
  /* one straggler report */
  st->rep_slot = -1;
  if (st->npend) {
    unsigned s = (unsigned)(mix64((uint64_t)st->rank ^ ((uint64_t)exchange << 32)) % CS_ONLINE_REPORT_SLOTS);
    const struct report *r = &st->pend[0];
    st->rep_slot = (int)s;
    mn->rep[s].rank = (uint64_t)st->rank;
    mn->rep[s].nrank = ~(uint64_t)st->rank;
    sm->rep[s].count = 1;
    sm->rep[s].comm = r->comm;
    sm->rep[s].comm_rank = r->crank;
    sm->rep[s].instances = r->instances;
    sm->rep[s].kind = (uint64_t)r->kind;
    memcpy(sm->rep[s].host, st->host, CS_ONLINE_HOST);
    fs->rep[s].share = r->share;
    fs->rep[s].lateness = r->late;
    fs->rep[s].median = r->med;
  }
}

static unsigned bucket_of(uint64_t fp, unsigned salt) {
  return (unsigned)(mix64(fp ^ (0x9e3779b97f4a7c15ULL * salt)) % CS_ONLINE_BUCKETS);
}

static void pack_detail(struct cs_online_rank *st, unsigned round, struct cs_online_wire *w) {
  struct rd_min *mn = (struct rd_min *)w->min;
  struct rd_sum *sm = (struct rd_sum *)w->sum;
  for (size_t i = 0; i < st->ndetail; i++) {
    struct sdc_local *l;
    HASH_FIND(hh, st->sdl, &st->detail[i]->k, sizeof(struct key), l);
    if (!l || !(l->c.checked & 1)) continue;
    unsigned b = bucket_of(l->c.fp, round);
    struct bucket_min *m = &mn->b[i][b];
    struct bucket_sum *s = &sm->b[i][b];
    m->fp = l->c.fp; m->nfp = ~l->c.fp;
    m->crank = l->c.comm_rank; m->ncrank = ~(uint64_t)l->c.comm_rank;
    m->wrank = (uint64_t)st->rank;
    if (isfinite(l->c.out_sum)) m->out = enc_d(l->c.out_sum);
    s->count = 1;
    s->wrank = (uint64_t)st->rank;
    memcpy(s->host, st->host, CS_ONLINE_HOST);
  }
}

void cs_online_pack(struct cs_online_rank *st, uint32_t exchange, unsigned round, struct cs_online_wire *w) {
  cs_online_wire_identity(w);
  if (round == 0) pack_round0(st, exchange, w);
  else pack_detail(st, round, w);
}

/* ---------------------------------------------------------------- findings */
static bool grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t c = *cap ? 2 * *cap : 8;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * size);
  if (!q) return false;
  *p = q;
  *cap = c;
  return true;
}

static struct f_sdc *sdc_finding(struct cs_online_rank *st, const struct sdc_agg *a, int check) {
  if (!grow((void **)&st->sf, &st->capsf, st->nsf + 1, sizeof *st->sf)) { st->oom = true; return NULL; }
  struct f_sdc *f = &st->sf[st->nsf++];
  memset(f, 0, sizeof *f);
  int op = (int)(a->meta & 0xff), dtype = (int)(int8_t)(a->meta >> 8 & 0xff);
  f->f.comm = a->k.comm;
  f->f.seq = a->k.seq;
  f->f.op = op;
  f->f.dtype = dtype;
  f->f.bytes = op < CS_OP_COUNT ? cs_op_bytes((enum cs_op)op, a->count, cs_dtype_size(dtype), (int)a->size) : 0;
  f->f.check = check;
  f->f.suspect_comm_rank = f->f.suspect_rank = -1;
  return f;
}

/* ---------------------------------------------------------------- SDC verdicts */
static uint64_t imask(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

/* 1 mismatch, 0 fine, -1 cannot tell (sdc.h's rule) */
static int sum_verdict(const struct cs_sdc_dtype_info *t, double got, double want, double tol, double S, int nred) {
  if (t->is_int) return (as_u64(got) & imask(t->bits)) != (as_u64(want) & imask(t->bits));
  if (!isfinite(want) || !isfinite(S)) return -1;
  if (!isfinite(got)) return S * (1 + (nred + 1) * t->u) < t->max ? 1 : -1;
  return fabs(got - want) > tol;
}

/* The sum rule of sdc.h over the aggregates; ref_out: the reference output sum (the
 * majority's), ref_ok false when there is none. */
static void sdc_sum_rule(struct cs_online_rank *st, const struct sdc_agg *a, bool ref_ok, double ref_out) {
  struct cs_sdc_dtype_info t;
  int op = (int)(a->meta & 0xff), dtype = (int)(int8_t)(a->meta >> 8 & 0xff), redop = (int)(int8_t)(a->meta >> 16 & 0xff);
  int root = (int)(uint32_t)(a->meta >> 24) - 1;
  if (!cs_sdc_dtype_info(dtype, &t)) return;
  bool sum_red = redop == 0 || redop == 4, avg = redop == 4;
  if (avg && t.is_int) sum_red = false;
  bool rule = op == CS_OP_Broadcast || op == CS_OP_AllGather ||
              (sum_red && (op == CS_OP_AllReduce || op == CS_OP_Reduce || op == CS_OP_ReduceScatter));
  if (dtype == 10 || dtype == 11 || !rule) return;
  int n = (int)a->size;
  uint64_t need_in = op == CS_OP_Broadcast ? 1 : a->size;
  if (a->nin != need_in) return;
  double want = a->in_sum, S = a->in_abs;
  double per_in = (double)a->count * (op == CS_OP_ReduceScatter ? n : 1);
  double N = per_in * (double)need_in;
  if (N == 0) return;
  if (t.is_int) want = (double)(a->int_in & imask(t.bits));
  int nred = (op == CS_OP_Broadcast || op == CS_OP_AllGather) ? 0 : n;
  double out_elems = (double)a->count * (op == CS_OP_AllGather ? n : 1);
  int hops = nred ? nred - 1 : 0;
  double tol = 1.0625 * ((hops * t.u + (N + 64) * 0x1p-53) * S + hops * out_elems * t.d);
  double got;
  int suspect = -1;
  switch (op) {
  case CS_OP_AllReduce:
    if (!ref_ok) return;
    got = ref_out;
    break;
  case CS_OP_Reduce:
    if (!a->root_out_ok) return;
    got = a->root_out;
    suspect = root;
    break;
  case CS_OP_ReduceScatter:
    if (a->nfp != a->size) return;
    got = t.is_int ? (double)(a->int_out & imask(t.bits)) : a->out_sum;
    break;
  default:  /* Broadcast, AllGather: the reference output against the inputs */
    if (!ref_ok) return;
    got = ref_out;
    break;
  }
  double extra = 0;
  if (avg && (op == CS_OP_AllReduce || op == CS_OP_Reduce || op == CS_OP_ReduceScatter)) {
    got *= n;
    extra = 2 * t.u * (S + fabs(got)) + n * out_elems * t.d;
  }
  if (sum_verdict(&t, got, want, tol + extra, S, nred) == 1) {
    struct f_sdc *f = sdc_finding(st, a, CS_SDC_CHECK_SUM);
    if (!f) return;
    f->f.suspect_comm_rank = suspect;
    f->f.got = got;
    f->f.want = want;
    f->f.tol = tol;
  }
}

static bool fp_rule(const struct sdc_agg *a) {
  int op = (int)(a->meta & 0xff);
  return (op == CS_OP_AllReduce || op == CS_OP_Broadcast || op == CS_OP_AllGather) && a->nfp >= 2;
}

static void local_drop_sdc(struct cs_online_rank *st, const struct key *k) {
  struct sdc_local *l;
  HASH_FIND(hh, st->sdl, k, sizeof *k, l);
  if (l) { HASH_DEL(st->sdl, l); free(l); st->nsdl--; }
}

static void sdc_done(struct cs_online_rank *st, struct sdc_agg *a) {
  st->cur.sdc_compared++;
  local_drop_sdc(st, &a->k);
  HASH_DEL(st->sda, a);
  free(a);
  st->nsda--;
}

/* a complete instance whose fingerprints agree (or that has no fingerprint rule) */
static void sdc_verdict_agreeing(struct cs_online_rank *st, struct sdc_agg *a) {
  bool ref_ok = a->nfp >= 1 && !a->out_nonfinite && a->outmin != UINT64_MAX;
  double ref = ref_ok ? dec_d(a->outmin) : NAN;
  if (a->nfp >= 1 && a->out_nonfinite == a->nfp) { ref_ok = true; ref = a->out_sum; } /* all non-finite */
  sdc_sum_rule(st, a, ref_ok, ref);
  int op = (int)(a->meta & 0xff);
  if (ref_ok && a->outmax != a->outmin && (op == CS_OP_Broadcast || op == CS_OP_AllGather))
    sdc_sum_rule(st, a, true, dec_d(a->outmax));
  sdc_done(st, a);
}

static int cmp_agg(const void *x, const void *y) {
  const struct sdc_agg *a = *(const struct sdc_agg *const *)x, *b = *(const struct sdc_agg *const *)y;
  if (a->k.comm != b->k.comm) return a->k.comm < b->k.comm ? -1 : 1;
  return a->k.seq < b->k.seq ? -1 : a->k.seq > b->k.seq;
}

/* Complete instances in (comm, seq) order: the agreeing ones get their verdict now; the
 * first CS_ONLINE_DETAIL disagreeing ones go to a detail round. Incomplete ones age out. */
static void sdc_evaluate(struct cs_online_rank *st, uint32_t exchange) {
  st->ndetail = 0;
  struct sdc_agg **v = malloc((st->nsda ? st->nsda : 1) * sizeof *v);
  if (!v) { st->oom = true; return; }
  size_t n = 0;
  struct sdc_agg *a, *t;
  HASH_ITER(hh, st->sda, a, t) {
    if (a->members == a->size) v[n++] = a;
    else if (exchange - a->born >= AGG_MAX_AGE) { local_drop_sdc(st, &a->k); HASH_DEL(st->sda, a); free(a); st->nsda--; }
  }
  qsort(v, n, sizeof *v, cmp_agg);
  for (size_t i = 0; i < n; i++) {
    a = v[i];
    if (fp_rule(a) && a->fpmin != a->fpmax) {
      if (st->ndetail < CS_ONLINE_DETAIL) st->detail[st->ndetail++] = a;
    } else {
      sdc_verdict_agreeing(st, a);
    }
  }
  free(v);
}

/* A detail round's buckets for one disagreeing instance: 1 decided (findings added), 0 the
 * majority bucket holds two values (retry with another salt). */
static int sdc_verdict_detail(struct cs_online_rank *st, struct sdc_agg *a, const struct bucket_min *bm,
                              const struct bucket_sum *bs, bool last_try) {
  uint64_t total = 0;
  for (int b = 0; b < CS_ONLINE_BUCKETS; b++) total += bs[b].count;
  int maj = -1;
  for (int b = 0; b < CS_ONLINE_BUCKETS; b++)
    if (2 * bs[b].count > total) maj = b;
  if (maj >= 0 && bm[maj].fp != ~bm[maj].nfp) {
    if (!last_try) return 0;
    maj = -1; /* still two values in the majority's bucket: no verdict on a majority */
  }
  if (maj < 0) {
    struct f_sdc *f = sdc_finding(st, a, CS_SDC_CHECK_FINGERPRINT);
    (void)f;
    sdc_sum_rule(st, a, false, 0);
    return 1;
  }
  for (int b = 0; b < CS_ONLINE_BUCKETS; b++) {
    if (b == maj || !bs[b].count) continue;
    struct f_sdc *f = sdc_finding(st, a, CS_SDC_CHECK_FINGERPRINT);
    if (!f) return 1;
    f->f.suspect_comm_rank = (int)bm[b].crank;
    f->f.suspect_rank = (int)bm[b].wrank;
    f->f.suspects = bs[b].count;
    if (bs[b].count == 1) {
      memcpy(f->host, bs[b].host, CS_ONLINE_HOST);
      f->host[CS_ONLINE_HOST] = 0;
    }
  }
  bool ref_ok = bm[maj].out != UINT64_MAX;
  sdc_sum_rule(st, a, ref_ok, ref_ok ? dec_d(bm[maj].out) : NAN);
  return 1;
}

/* ---------------------------------------------------------------- stragglers */
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, size_t n) { /* lower middle */
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_d);
  return v[(n - 1) / 2];
}
static double median_mid(double *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
static double median_z(double *v, size_t k, double m) {
  for (size_t j = 0; j < k; j++) v[j] = v[j] > m ? v[j] - m : m - v[j];
  double mad = median_mid(v, k);
  double se = 1.2533 * 1.4826 * mad / cs_det_sqrt((double)k);
  return se > 0 ? m / se : m > 0 ? 1e300 : 0;
}

static const struct went *wat(const struct self_win *w, size_t window, size_t i) { return &w->e[i % window]; }

/* detect.h's offset rule for this rank over instances [lo, hi) */
static bool eval_offset(struct cs_online_rank *st, const struct self_win *w, size_t lo, size_t hi, double thr,
                        double zmin, double *off) {
  size_t k = 0, W = st->p.window;
  double *v = st->scratch, *rel = st->scratch + W;
  for (size_t i = lo; i < hi; i++) {
    const struct went *e = wat(w, W, i);
    rel[k] = e->med > 0 ? e->a / e->med : 0;
    v[k++] = e->a;
  }
  double m = median_mid(v, k);
  *off = m;
  if (k < 2 || m < thr || !(m > 0)) return false;
  if (median_z(v, k, m) >= zmin) return true;
  double mr = median_mid(rel, k);
  return mr > 0 && median_z(rel, k, mr) >= zmin;
}

/* After instance i (0-based) of the window was pushed: does this rank flag itself? */
static void judge_self(struct cs_online_rank *st, struct self_win *w) {
  const struct cs_det_params *p = &st->p;
  size_t W = p->window, i = w->n - 1;
  size_t lo = w->n > W ? w->n - W : 0, nw = w->n - lo;
  if (nw < p->min_instances) return;
  double *sc = st->scratch;
  /* share-last: the comm rank last most often (ties: the lowest), is it this rank? */
  size_t k = 0;
  for (size_t j = lo; j <= i; j++) sc[k++] = (double)wat(w, W, j)->last;
  qsort(sc, k, sizeof *sc, cmp_d);
  size_t best = 0, run = 0, mine = 0;
  double cand = -1;
  for (size_t j = 0; j < k; j++) {
    run = j && sc[j] == sc[j - 1] ? run + 1 : 1;
    if (run > best) { best = run; cand = sc[j]; }
    if (sc[j] == (double)w->crank) mine++;
  }
  for (size_t j = lo; j <= i; j++) sc[j - lo] = wat(w, W, j)->med;
  double med = median(sc, nw);
  double thr = p->floor_us > p->frac * med ? p->floor_us : p->frac * med;
  double p0 = 1.0 / (double)w->size, need = p0 + p->z * cs_det_sqrt(p0 * (1 - p0) / (double)nw);
  if (need < p->share) need = p->share;
  double late = 0;
  if (mine) {
    size_t m = 0;
    for (size_t j = lo; j <= i; j++)
      if (wat(w, W, j)->last == (int)w->crank) sc[m++] = wat(w, W, j)->late;
    late = median(sc, m);
  }
  bool last_ok = cand == (double)w->crank && (double)best >= need * (double)nw && late >= thr;
  bool ok = last_ok;
  double off = 0;
  if (!ok) {
    size_t pos = 0;
    for (size_t j = lo; j <= i; j++) pos += wat(w, W, j)->a > 0;
    if (nw >= p->min_instances && (double)pos - 0.5 * (double)nw >= cs_det_sqrt((double)nw))
      ok = eval_offset(st, w, lo, i + 1, thr, p->offset_z, &off);
  }
  size_t recent = p->recent < W ? p->recent : W;
  if (!ok && recent && w->n >= recent) {
    size_t rlo = w->n - recent, rpos = 0;
    for (size_t j = rlo; j <= i; j++) rpos += wat(w, W, j)->a > 0;
    if ((double)rpos >= p->recent_share * (double)recent) ok = eval_offset(st, w, rlo, i + 1, thr, p->recent_z, &off);
  }
  if (!ok) return;
  w->streak = w->streak && w->at + 1 == i ? w->streak + 1 : 1;
  w->at = i;
  if (w->streak < p->persist || w->flagged) return;
  w->flagged = true;
  /* figures and kind (detect.h): the compute gaps over its last-arrivals (share-last) or
   * over the window (offset rules) */
  size_t g = 0, h = 0;
  double *gv = sc, *hv = sc + W;
  for (size_t j = lo; j <= i; j++) {
    const struct went *e = wat(w, W, j);
    if (last_ok && e->last != (int)w->crank) continue;
    if (e->gap >= 0) gv[g++] = e->gap;
    if (e->pgap >= 0) hv[h++] = e->pgap;
  }
  double gap = g ? median(gv, g) : -1, pgap = h ? median(hv, h) : -1;
  if (!last_ok) {
    size_t m = 0;
    for (size_t j = lo; j <= i; j++) sc[m++] = wat(w, W, j)->a;
    off = median_mid(sc, m);
  }
  double lk = last_ok ? late : (off > late ? off : late);
  struct report r = {w->comm, w->crank, nw, (gap >= 0 && pgap >= 0 && gap - pgap < 0.5 * lk) ? CS_DET_LINK : CS_DET_COMPUTE,
                     (double)mine / (double)nw, late, med};
  if (st->npend < PENDING_REPORTS) st->pend[st->npend++] = r;
}

static struct self_win *win_of(struct cs_online_rank *st, uint64_t comm, uint32_t size, uint32_t crank) {
  struct self_win *w;
  HASH_FIND(hh, st->wins, &comm, sizeof comm, w);
  if (w) return w->size == size && w->crank == crank ? w : NULL;
  if (st->nwins >= WIN_COMMS) return NULL;
  w = calloc(1, sizeof *w);
  if (!w || !(w->e = calloc(st->p.window, sizeof *w->e))) { free(w); st->oom = true; return NULL; }
  w->comm = comm;
  w->size = size;
  w->crank = crank;
  HASH_ADD(hh, st->wins, comm, sizeof w->comm, w);
  st->nwins++;
  return w;
}

static int cmp_opagg(const void *x, const void *y) {
  const struct op_agg *a = *(const struct op_agg *const *)x, *b = *(const struct op_agg *const *)y;
  if (a->k.comm != b->k.comm) return a->k.comm < b->k.comm ? -1 : 1;
  return a->k.seq < b->k.seq ? -1 : a->k.seq > b->k.seq;
}

/* Complete sampled instances, in (comm, seq) order, into this rank's windows. */
static void ops_evaluate(struct cs_online_rank *st, uint32_t exchange) {
  struct op_agg **v = malloc((st->nopa ? st->nopa : 1) * sizeof *v);
  if (!v) { st->oom = true; return; }
  size_t n = 0;
  struct op_agg *a, *t;
  HASH_ITER(hh, st->opa, a, t) {
    if (a->count == a->size) v[n++] = a;
    else if (exchange - a->born >= AGG_MAX_AGE) { HASH_DEL(st->opa, a); free(a); st->nopa--; }
  }
  qsort(v, n, sizeof *v, cmp_opagg);
  for (size_t i = 0; i < n; i++) {
    a = v[i];
    st->cur.instances++;
    struct op_local *l;
    HASH_FIND(hh, st->opl, &a->k, sizeof a->k, l);
    if (l) {
      double cnt = (double)a->count;
      double mn = (double)(a->durmin >> RANK_BITS) / 1e3, mx = (double)a->durmax / 1e3, sum = (double)a->dursum / 1e3;
      double ref = a->count >= 3 ? (sum - mn - mx) / (cnt - 2) : sum / cnt;
      double own = (double)(uint64_t)((double)l->o.dur_us * 1e3) / 1e3;
      struct self_win *w = win_of(st, a->k.comm, (uint32_t)a->size, l->o.comm_rank);
      if (w) {
        struct went *e = &w->e[w->n % st->p.window];
        e->last = (int)(a->durmin & ((1u << RANK_BITS) - 1));
        e->late = ref - mn;
        e->med = ref;
        e->a = ref - own;
        bool own_gap = l->o.gap_us >= 0 && l->o.gap_us < 1e9f;
        double og = own_gap ? (double)(uint64_t)((double)l->o.gap_us * 1e3) / 1e3 : -1;
        e->gap = og;
        uint64_t pc = a->gapcnt - (own_gap ? 1 : 0);
        e->pgap = pc ? ((double)a->gapsum / 1e3 - (own_gap ? og : 0)) / (double)pc : -1;
        w->n++;
        judge_self(st, w);
      }
      HASH_DEL(st->opl, l);
      free(l);
      st->nopl--;
    }
    HASH_DEL(st->opa, a);
    free(a);
    st->nopa--;
  }
  free(v);
  /* shipped instances whose aggregate never completed */
  struct op_local *l, *lt;
  HASH_ITER(hh, st->opl, l, lt)
    if (exchange - l->shipped >= AGG_MAX_AGE) { HASH_DEL(st->opl, l); free(l); st->nopl--; }
  struct sdc_local *s, *stt;
  HASH_ITER(hh, st->sdl, s, stt)
    if (exchange - s->shipped >= 2 * AGG_MAX_AGE) { HASH_DEL(st->sdl, s); free(s); st->nsdl--; }
}

/* ---------------------------------------------------------------- unpack */
static void keep_local_op(struct cs_online_rank *st, const struct cs_online_op *o, uint32_t exchange) {
  if (st->nopl >= LOCAL_CAP) { st->lost++; return; }
  struct op_local *l = calloc(1, sizeof *l);
  if (!l) { st->oom = true; return; }
  l->k.comm = o->comm;
  l->k.seq = o->seq;
  struct op_local *old;
  HASH_FIND(hh, st->opl, &l->k, sizeof l->k, old);
  if (old) { free(l); return; }
  l->o = *o;
  l->shipped = exchange;
  HASH_ADD(hh, st->opl, k, sizeof l->k, l);
  st->nopl++;
}

static void keep_local_sdc(struct cs_online_rank *st, const struct cs_online_sdc *c, uint32_t exchange) {
  if (st->nsdl >= LOCAL_CAP) { st->lost++; return; }
  struct sdc_local *l = calloc(1, sizeof *l);
  if (!l) { st->oom = true; return; }
  l->k.comm = c->comm;
  l->k.seq = c->seq;
  struct sdc_local *old;
  HASH_FIND(hh, st->sdl, &l->k, sizeof l->k, old);
  if (old) { free(l); return; }
  l->c = *c;
  l->shipped = exchange;
  HASH_ADD(hh, st->sdl, k, sizeof l->k, l);
  st->nsdl++;
}

/* back to the front of the backlog (a full backlog drops its newest) */
static void requeue_op(struct cs_online_rank *st, const struct cs_online_op *o) {
  if (st->ops_n == OPS_BACKLOG) { st->ops_n--; st->lost++; }
  st->ops_first = (st->ops_first + OPS_BACKLOG - 1) % OPS_BACKLOG;
  st->ops[st->ops_first] = *o;
  st->ops_n++;
}
static void requeue_sdc(struct cs_online_rank *st, const struct cs_online_sdc *c) {
  if (st->sdc_n == SDC_BACKLOG) { st->sdc_n--; st->lost++; }
  st->sdc_first = (st->sdc_first + SDC_BACKLOG - 1) % SDC_BACKLOG;
  st->sdcq[st->sdc_first] = *c;
  st->sdc_n++;
}

static void merge_ops(struct cs_online_rank *st, uint32_t exchange, const struct r0_min *mn, const struct r0_sum *sm) {
  for (unsigned s = 0; s < CS_ONLINE_OP_SLOTS; s++) {
    uint64_t cnt = sm->op[s].count;
    if (!cnt) continue;
    bool agree = mn->op[s].comm == ~mn->op[s].ncomm && mn->op[s].seq == ~mn->op[s].nseq &&
                 mn->op[s].size == ~mn->op[s].nsize;
    if (!agree) { /* two instances in one slot: lost; its contributors ship it again, first */
      st->cur.lost_slots++;
      if (st->op_used[s]) requeue_op(st, &st->op_slot[s]);
      continue;
    }
    if (st->op_used[s]) keep_local_op(st, &st->op_slot[s], exchange);
    struct key k = {mn->op[s].comm, mn->op[s].seq};
    struct op_agg *a;
    HASH_FIND(hh, st->opa, &k, sizeof k, a);
    if (!a) {
      if (st->nopa >= AGG_CAP) continue;
      if (!(a = calloc(1, sizeof *a))) { st->oom = true; continue; }
      a->k = k;
      a->size = mn->op[s].size;
      a->durmin = UINT64_MAX;
      a->born = exchange;
      HASH_ADD(hh, st->opa, k, sizeof a->k, a);
      st->nopa++;
    }
    if (a->size != mn->op[s].size) continue;
    a->count += cnt;
    if (mn->op[s].durmin < a->durmin) a->durmin = mn->op[s].durmin;
    if (~mn->op[s].ndurmax > a->durmax) a->durmax = ~mn->op[s].ndurmax;
    a->dursum += sm->op[s].dursum;
    a->gapsum += sm->op[s].gapsum;
    a->gapcnt += sm->op[s].gapcnt;
  }
}

static void merge_sdc(struct cs_online_rank *st, uint32_t exchange, const struct r0_min *mn, const struct r0_sum *sm,
                      const struct r0_fsum *fs) {
  for (unsigned s = 0; s < CS_ONLINE_SDC_SLOTS; s++) {
    if (!sm->sdc[s].members) continue;
    bool agree = mn->sdc[s].comm == ~mn->sdc[s].ncomm && mn->sdc[s].seq == ~mn->sdc[s].nseq &&
                 mn->sdc[s].size == ~mn->sdc[s].nsize && mn->sdc[s].meta == ~mn->sdc[s].nmeta &&
                 mn->sdc[s].count == ~mn->sdc[s].ncount;
    if (!agree) {
      st->cur.lost_slots++;
      if (st->sdc_used[s]) requeue_sdc(st, &st->sdc_slot[s]);
      continue;
    }
    if (st->sdc_used[s]) keep_local_sdc(st, &st->sdc_slot[s], exchange);
    struct key k = {mn->sdc[s].comm, mn->sdc[s].seq};
    struct sdc_agg *a;
    HASH_FIND(hh, st->sda, &k, sizeof k, a);
    if (!a) {
      if (st->nsda >= AGG_CAP) continue;
      if (!(a = calloc(1, sizeof *a))) { st->oom = true; continue; }
      a->k = k;
      a->size = mn->sdc[s].size;
      a->meta = mn->sdc[s].meta;
      a->count = mn->sdc[s].count;
      a->fpmin = a->outmin = UINT64_MAX;
      a->born = exchange;
      HASH_ADD(hh, st->sda, k, sizeof a->k, a);
      st->nsda++;
    }
    if (a->size != mn->sdc[s].size || a->meta != mn->sdc[s].meta || a->count != mn->sdc[s].count) continue;
    if (mn->sdc[s].fp < a->fpmin) a->fpmin = mn->sdc[s].fp;
    if (~mn->sdc[s].nfp > a->fpmax) a->fpmax = ~mn->sdc[s].nfp;
    if (mn->sdc[s].out < a->outmin) a->outmin = mn->sdc[s].out;
    if (~mn->sdc[s].nout > a->outmax) a->outmax = ~mn->sdc[s].nout;
    a->members += sm->sdc[s].members;
    a->nfp += sm->sdc[s].nfp;
    a->nin += sm->sdc[s].nin;
    a->int_in += sm->sdc[s].int_in;
    a->int_out += sm->sdc[s].int_out;
    a->root_out_ok += sm->sdc[s].root_out_ok;
    a->out_nonfinite += sm->sdc[s].out_nonfinite;
    a->in_sum += fs->sdc[s].in_sum;
    a->in_abs += fs->sdc[s].in_abs;
    a->out_sum += fs->sdc[s].out_sum;
    a->root_out += fs->sdc[s].root_out;
  }
}

static void read_reports(struct cs_online_rank *st, const struct r0_min *mn, const struct r0_sum *sm,
                         const struct r0_fsum *fs) {
  for (unsigned s = 0; s < CS_ONLINE_REPORT_SLOTS; s++) {
    if (sm->rep[s].count != 1 || mn->rep[s].rank != ~mn->rep[s].nrank || mn->rep[s].rank >= (uint64_t)st->n) continue;
    if (st->rep_slot == (int)s) { /* ours went through */
      memmove(st->pend, st->pend + 1, (st->npend - 1) * sizeof *st->pend);
      st->npend--;
    }
    if (!grow((void **)&st->st, &st->capst, st->nst + 1, sizeof *st->st)) { st->oom = true; return; }
    struct f_st *f = &st->st[st->nst++];
    memset(f, 0, sizeof *f);
    f->s.comm = sm->rep[s].comm;
    f->s.rank = (int)mn->rep[s].rank;
    f->s.comm_rank = (int)sm->rep[s].comm_rank;
    f->s.instances = sm->rep[s].instances;
    f->s.kind = (int)sm->rep[s].kind;
    f->s.share_last = fs->rep[s].share;
    f->s.lateness_us = fs->rep[s].lateness;
    f->s.median_dur_us = fs->rep[s].median;
    memcpy(f->host, sm->rep[s].host, CS_ONLINE_HOST);
    f->host[CS_ONLINE_HOST] = 0;
  }
}

/* the findings as the caller sees them (pointers into this state) */
static int publish(struct cs_online_rank *st, struct cs_online_findings *out) {
  *out = st->cur;
  out->stragglers = NULL;
  out->sdc = NULL;
  if (st->oom) return -1;
  if (!grow((void **)&st->out_st, &st->cap_out_st, st->nst, sizeof *st->out_st) ||
      !grow((void **)&st->out_sf, &st->cap_out_sf, st->nsf, sizeof *st->out_sf))
    return -1;
  for (size_t i = 0; i < st->nst; i++) {
    st->out_st[i] = st->st[i].s;
    st->out_st[i].host = st->st[i].host;
  }
  for (size_t i = 0; i < st->nsf; i++) {
    st->out_sf[i] = st->sf[i].f;
    st->out_sf[i].suspect_host = st->sf[i].host[0] ? st->sf[i].host : NULL;
  }
  out->stragglers = st->out_st;
  out->nstragglers = st->nst;
  out->sdc = st->out_sf;
  out->nsdc = st->nsf;
  return 0;
}

int cs_online_unpack(struct cs_online_rank *st, uint32_t exchange, unsigned round, const struct cs_online_wire *w,
                     struct cs_online_findings *out) {
  if (round == 0) {
    memset(&st->cur, 0, sizeof st->cur);
    st->nst = st->nsf = 0;
    st->oom = false;
    const struct r0_min *mn = (const struct r0_min *)w->min;
    const struct r0_sum *sm = (const struct r0_sum *)w->sum;
    const struct r0_fsum *fs = (const struct r0_fsum *)w->fsum;
    st->cur.rounds = 1;
    uint64_t magic = CS_ONLINE_MAGIC | (uint64_t)CS_ONLINE_VERSION << 32;
    if (mn->magic != magic || mn->nmagic != ~magic || mn->exch != exchange || mn->nexch != ~(uint64_t)exchange ||
        sm->ranks != (uint64_t)st->n) {
      /* not every rank contributed this exchange's round: nothing of it is used, and
       * what this rank shipped goes back to its backlogs */
      st->cur.bad_summaries = 1;
      for (unsigned s = CS_ONLINE_OP_SLOTS; s-- > 0;)
        if (st->op_used[s]) requeue_op(st, &st->op_slot[s]);
      for (unsigned s = CS_ONLINE_SDC_SLOTS; s-- > 0;)
        if (st->sdc_used[s]) requeue_sdc(st, &st->sdc_slot[s]);
      publish(st, out);
      return 0;
    }
    st->cur.max_backlog = ~mn->nbacklog > UINT32_MAX ? UINT32_MAX : (uint32_t)~mn->nbacklog;
    merge_ops(st, exchange, mn, sm);
    merge_sdc(st, exchange, mn, sm, fs);
    read_reports(st, mn, sm, fs);
    ops_evaluate(st, exchange);
    sdc_evaluate(st, exchange);
    if (st->ndetail) return 1;
    return publish(st, out);
  }
  st->cur.rounds = round + 1;
  const struct rd_min *mn = (const struct rd_min *)w->min;
  const struct rd_sum *sm = (const struct rd_sum *)w->sum;
  bool last_try = round >= CS_ONLINE_DETAIL_ROUNDS;
  size_t again = 0;
  for (size_t i = 0; i < st->ndetail; i++) {
    struct sdc_agg *a = st->detail[i];
    if (sdc_verdict_detail(st, a, mn->b[i], sm->b[i], last_try)) sdc_done(st, a);
    else st->detail[again++] = a;
  }
  st->ndetail = again;
  if (again) return 1;
  return publish(st, out);
}
