/* stats/online_eval.c: turns the summaries gathered by one online exchange into findings
 * (see include/collscope/online.h). Keeps a bounded history across exchanges: the sampled
 * collective instances (the detector's input, 64 instances' worth per rank; the oldest
 * half dropped when full) and the
 * checked collectives not yet reported by every member of their communicator (compared
 * once complete). An incomplete one is given up after SDC_MAX_AGE exchanges only when
 * every missing member has since reported a later checked collective of that communicator
 * (so it will not report this one: it skipped the check); a member that reported nothing
 * later is lagging (a busy harvest thread, a backlog) and is waited for, up to
 * SDC_MAX_AGE_HARD exchanges. Deterministic for identical input, so every rank reaches
 * the same SDC verdict. */
#include "collscope/online.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "collscope/schema.h"

/* sampled entries kept for the detector: 64 instances' worth per rank, within [64 Ki, 1 Mi]
 * entries (about 80 MiB at the top, on world rank 0 only) */
#define OPS_CAP_MIN (1u << 16)
#define OPS_CAP_MAX (1u << 20)
#define SDC_CAP 4096u        /* checked collectives waiting for their other members */
#define SDC_MAX_AGE 8u       /* exchanges an incomplete checked collective is kept at least */
#define SDC_MAX_AGE_HARD 1024u /* ... and at most, while a missing member has reported nothing later */
#define FLAG_CAP 4096u       /* (comm, rank) stragglers already reported */

struct sdc_inst {
  struct { uint64_t comm, seq; } key;
  int op, dtype, redop, root, comm_size;
  uint64_t count;
  unsigned born;                 /* exchange it first appeared in */
  int nseen;
  struct cs_sdc_member *m;       /* comm_size slots, comm_rank -1 = not yet seen */
  int *owner;                    /* world rank that sent member i */
  UT_hash_handle hh;
};

/* per communicator: the highest seq each member (comm rank) has reported, + 1 (0: none) */
struct sdc_mark {
  uint64_t comm;
  int comm_size;
  uint64_t *next;
  UT_hash_handle hh;
};

struct cs_online_eval {
  int n;
  bool stragglers;
  struct cs_det_params params;
  unsigned exchange;
  char (*host)[CS_ONLINE_HOST + 1];
  int64_t *clock;                /* per world rank: synthetic end of its previous sampled op */
  struct cs_det_op *ops;
  size_t nops, capops;
  struct sdc_inst *sdc;          /* uthash head */
  size_t nsdc;
  struct sdc_mark *marks;        /* uthash head, per communicator */
  struct { uint64_t comm; int rank; } *flagged;
  size_t nflagged;
  /* the last call's findings */
  struct cs_online_straggler *st; size_t nst, capst;
  struct cs_online_sdc_finding *sf; size_t nsf, capsf;
};

struct cs_online_eval *cs_online_eval_new(int world_size, const struct cs_det_params *params, bool stragglers) {
  if (world_size < 1) return NULL;
  struct cs_online_eval *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->n = world_size;
  e->stragglers = stragglers;
  if (params) e->params = *params;
  else cs_det_params_default(&e->params);
  e->host = calloc((size_t)world_size, sizeof *e->host);
  e->clock = calloc((size_t)world_size, sizeof *e->clock);
  size_t cap = (size_t)world_size * 64;
  e->capops = cap < OPS_CAP_MIN ? OPS_CAP_MIN : cap > OPS_CAP_MAX ? OPS_CAP_MAX : cap;
  e->ops = stragglers ? malloc(e->capops * sizeof *e->ops) : NULL;
  e->flagged = malloc(FLAG_CAP * sizeof *e->flagged);
  if (!e->host || !e->clock || (stragglers && !e->ops) || !e->flagged) {
    cs_online_eval_free(e);
    return NULL;
  }
  return e;
}

static void sdc_drop(struct cs_online_eval *e, struct sdc_inst *s) {
  HASH_DEL(e->sdc, s);
  free(s->m);
  free(s->owner);
  free(s);
  e->nsdc--;
}

void cs_online_eval_free(struct cs_online_eval *e) {
  if (!e) return;
  struct sdc_inst *s, *t;
  HASH_ITER(hh, e->sdc, s, t) sdc_drop(e, s);
  struct sdc_mark *k, *kt;
  HASH_ITER(hh, e->marks, k, kt) {
    HASH_DEL(e->marks, k);
    free(k->next);
    free(k);
  }
  free(e->host);
  free(e->clock);
  free(e->ops);
  free(e->flagged);
  free(e->st);
  free(e->sf);
  free(e);
}

static bool summary_ok(const struct cs_online_summary *s, int expect_rank) {
  return s->h.magic == CS_ONLINE_MAGIC && s->h.version == CS_ONLINE_VERSION && s->h.rank == expect_rank &&
         s->h.nops <= CS_ONLINE_NOPS && s->h.nsdc <= CS_ONLINE_NSDC;
}

/* ---- stragglers ---- */
static void ops_add(struct cs_online_eval *e, int rank, const struct cs_online_op *o) {
  if (o->comm_size < 2 || o->comm_rank >= o->comm_size || !(o->dur_us >= 0) || o->dur_us > 1e9f) return;
  if (e->nops == e->capops) { /* keep the newer half */
    size_t half = e->capops / 2;
    memmove(e->ops, e->ops + (e->capops - half), half * sizeof *e->ops);
    e->nops = half;
  }
  /* A synthetic per-rank timeline that keeps the exchanged compute gap: the detector
   * computes gap = start - the rank's previous end, and only durations and gaps matter. */
  double gap = o->gap_us >= 0 && o->gap_us < 1e9f ? o->gap_us : 0;
  int64_t start = e->clock[rank] + (int64_t)(gap * 1e3);
  int64_t end = start + (int64_t)((double)o->dur_us * 1e3);
  e->clock[rank] = end;
  struct cs_det_op *d = &e->ops[e->nops++];
  memset(d, 0, sizeof *d);
  d->comm = o->comm;
  d->seq = (int64_t)(o->seq & INT64_MAX);
  d->comm_size = o->comm_size;
  d->comm_rank = o->comm_rank;
  d->rank = rank;
  d->host = e->host[rank];
  d->start_ns = start;
  d->end_ns = end;
  d->enqueue_ns = start;
  d->state = CS_DET_DONE;
  d->bytes = o->bytes;
}

static bool already_flagged(struct cs_online_eval *e, uint64_t comm, int rank) {
  for (size_t i = 0; i < e->nflagged; i++)
    if (e->flagged[i].comm == comm && e->flagged[i].rank == rank) return true;
  if (e->nflagged < FLAG_CAP) {
    e->flagged[e->nflagged].comm = comm;
    e->flagged[e->nflagged++].rank = rank;
  }
  return false;
}

static int run_detector(struct cs_online_eval *e, struct cs_online_findings *out) {
  struct cs_det_result r;
  if (cs_detect(e->ops, e->nops, &e->params, CS_DET_HANG_OFF, &r)) return -1;
  out->instances = r.instances;
  for (size_t i = 0; i < r.nstragglers; i++) {
    const struct cs_det_straggler *s = &r.stragglers[i];
    if (s->rank < 0 || s->rank >= e->n || already_flagged(e, s->comm, s->rank)) continue;
    if (e->nst == e->capst) {
      size_t cap = e->capst ? 2 * e->capst : 8;
      void *p = realloc(e->st, cap * sizeof *e->st);
      if (!p) { cs_det_result_free(&r); return -1; }
      e->st = p;
      e->capst = cap;
    }
    struct cs_online_straggler *o = &e->st[e->nst++];
    o->comm = s->comm;
    o->rank = s->rank;
    o->comm_rank = s->comm_rank;
    o->host = e->host[s->rank];
    o->share_last = s->share_last;
    o->lateness_us = s->lateness_us;
    o->median_dur_us = s->median_dur_us;
    o->instances = s->window_instances;
    o->kind = s->kind;
  }
  cs_det_result_free(&r);
  return 0;
}

/* ---- SDC ---- */
static double finite_or_nan(double x) { return isfinite(x) ? x : NAN; }

/* the communicator's member marks (created at its first entry); NULL if out of memory */
static struct sdc_mark *sdc_mark_of(struct cs_online_eval *e, uint64_t comm, int comm_size) {
  struct sdc_mark *k;
  HASH_FIND(hh, e->marks, &comm, sizeof comm, k);
  if (k) return k->comm_size == comm_size ? k : NULL;
  k = calloc(1, sizeof *k);
  if (!k || !(k->next = calloc((size_t)comm_size, sizeof *k->next))) { free(k); return NULL; }
  k->comm = comm;
  k->comm_size = comm_size;
  HASH_ADD(hh, e->marks, comm, sizeof k->comm, k);
  return k;
}

/* May the incomplete instance be given up? Every missing member reported a later seq. */
static bool sdc_abandoned(struct cs_online_eval *e, const struct sdc_inst *s) {
  unsigned age = e->exchange - s->born;
  if (age >= SDC_MAX_AGE_HARD) return true;
  if (age < SDC_MAX_AGE) return false;
  struct sdc_mark *k;
  HASH_FIND(hh, e->marks, &s->key.comm, sizeof s->key.comm, k);
  if (!k || k->comm_size != s->comm_size) return true;
  for (int i = 0; i < s->comm_size; i++)
    if (s->m[i].comm_rank < 0 && k->next[i] <= s->key.seq + 1) return false; /* lagging: wait */
  return true;
}

static int sdc_add(struct cs_online_eval *e, int rank, const struct cs_online_sdc *c) {
  if (c->comm_size < 1 || c->comm_rank >= c->comm_size) return 0;
  struct sdc_mark *k = sdc_mark_of(e, c->comm, c->comm_size);
  if (k && c->seq + 1 > k->next[c->comm_rank]) k->next[c->comm_rank] = c->seq + 1;
  struct sdc_inst *s;
  struct { uint64_t comm, seq; } key = {c->comm, c->seq};
  HASH_FIND(hh, e->sdc, &key, sizeof key, s);
  if (!s) {
    if (e->nsdc >= SDC_CAP) return 0;
    s = calloc(1, sizeof *s);
    if (!s) return -1;
    s->m = malloc((size_t)c->comm_size * sizeof *s->m);
    s->owner = malloc((size_t)c->comm_size * sizeof *s->owner);
    if (!s->m || !s->owner) { free(s->m); free(s->owner); free(s); return -1; }
    for (int i = 0; i < c->comm_size; i++) s->m[i].comm_rank = -1;
    s->key.comm = c->comm;
    s->key.seq = c->seq;
    s->op = c->op;
    s->dtype = c->dtype;
    s->redop = c->redop;
    s->root = c->root;
    s->comm_size = c->comm_size;
    s->count = c->count;
    s->born = e->exchange;
    HASH_ADD(hh, e->sdc, key, sizeof s->key, s);
    e->nsdc++;
  }
  if (c->comm_size != s->comm_size || s->m[c->comm_rank].comm_rank >= 0) return 0; /* inconsistent or repeated */
  struct cs_sdc_member *m = &s->m[c->comm_rank];
  m->comm_rank = c->comm_rank;
  m->checked = c->checked;
  m->fp = c->fp;
  m->in_sum = finite_or_nan(c->in_sum);
  m->in_abs = finite_or_nan(c->in_abs);
  m->out_sum = finite_or_nan(c->out_sum);
  s->owner[c->comm_rank] = rank;
  s->nseen++;
  return 0;
}

static int sdc_finding_add(struct cs_online_eval *e, const struct sdc_inst *s, const struct cs_sdc_finding *f) {
  if (e->nsf == e->capsf) {
    size_t cap = e->capsf ? 2 * e->capsf : 8;
    void *p = realloc(e->sf, cap * sizeof *e->sf);
    if (!p) return -1;
    e->sf = p;
    e->capsf = cap;
  }
  struct cs_online_sdc_finding *o = &e->sf[e->nsf++];
  o->comm = s->key.comm;
  o->seq = s->key.seq;
  o->op = s->op;
  o->dtype = s->dtype;
  o->bytes = s->op < CS_OP_COUNT ? cs_op_bytes((enum cs_op)s->op, s->count, cs_dtype_size(s->dtype), s->comm_size) : 0;
  o->check = f->check;
  o->suspect_comm_rank = f->suspect;
  o->suspect_rank = (f->suspect >= 0 && f->suspect < s->comm_size) ? s->owner[f->suspect] : -1;
  o->suspect_host = o->suspect_rank >= 0 ? e->host[o->suspect_rank] : NULL;
  o->got = f->got;
  o->want = f->want;
  o->tol = f->tol;
  return 0;
}

/* Compare the complete instances in (comm, seq) order, so all ranks report alike. */
static int cmp_inst(const void *a, const void *b) {
  const struct sdc_inst *x = *(const struct sdc_inst *const *)a, *y = *(const struct sdc_inst *const *)b;
  if (x->key.comm != y->key.comm) return x->key.comm < y->key.comm ? -1 : 1;
  return x->key.seq < y->key.seq ? -1 : x->key.seq > y->key.seq;
}

static int sdc_evaluate(struct cs_online_eval *e, struct cs_online_findings *out) {
  size_t n = 0;
  struct sdc_inst **done = malloc((e->nsdc ? e->nsdc : 1) * sizeof *done);
  if (!done) return -1;
  struct sdc_inst *s, *t;
  HASH_ITER(hh, e->sdc, s, t) {
    if (s->nseen == s->comm_size) done[n++] = s;
    else if (sdc_abandoned(e, s)) sdc_drop(e, s);
  }
  qsort(done, n, sizeof *done, cmp_inst);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    s = done[i];
    struct cs_sdc_instance in = {s->op, s->dtype, s->redop, s->root, s->comm_size, s->count, (size_t)s->comm_size, s->m};
    struct cs_sdc_finding f[8];
    struct cs_sdc_outcome oc;
    size_t nf = cs_sdc_compare(&in, f, 8, &oc);
    out->sdc_compared++;
    for (size_t k = 0; k < nf && rc == 0; k++) rc = sdc_finding_add(e, s, &f[k]);
    sdc_drop(e, s);
  }
  free(done);
  return rc;
}

int cs_online_eval_exchange(struct cs_online_eval *e, const void *gathered, struct cs_online_findings *out) {
  memset(out, 0, sizeof *out);
  e->nst = e->nsf = 0;
  e->exchange++;
  const struct cs_online_summary *sum = gathered;
  int rc = 0;
  for (int r = 0; r < e->n; r++) {
    const struct cs_online_summary *s = &sum[r];
    if (!summary_ok(s, r)) {
      out->bad_summaries++;
      continue;
    }
    uint32_t backlog = s->h.sdc_backlog + s->h.op_backlog;
    if (backlog > out->max_backlog) out->max_backlog = backlog;
    memcpy(e->host[r], s->h.host, CS_ONLINE_HOST);
    e->host[r][CS_ONLINE_HOST] = 0;
    if (e->stragglers)
      for (unsigned i = 0; i < s->h.nops; i++) ops_add(e, r, &s->ops[i]);
    for (unsigned i = 0; i < s->h.nsdc && rc == 0; i++) rc = sdc_add(e, r, &s->sdc[i]);
  }
  if (rc == 0) rc = sdc_evaluate(e, out);
  if (rc == 0 && e->stragglers) rc = run_detector(e, out);
  out->stragglers = e->st;
  out->nstragglers = e->nst;
  out->sdc = e->sf;
  out->nsdc = e->nsf;
  return rc;
}
