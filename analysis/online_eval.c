/* analysis/online_eval.c: one rank's side of the online exchange (include/collscope/online.h):
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
#include "online_internal.h"

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

struct f_sdc *cs_onl_sdc_finding(struct cs_online_rank *st, const struct sdc_agg *a, int check) {
  if (!grow((void **)&st->sf, &st->capsf, st->nsf + 1, sizeof *st->sf)) {
    st->oom = true;
    return NULL;
  }
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
/* ---------------------------------------------------------------- unpack */
static void keep_local_op(struct cs_online_rank *st, const struct cs_online_op *o, uint32_t exchange) {
  if (st->nopl >= LOCAL_CAP) {
    st->lost++;
    return;
  }
  struct op_local *l = calloc(1, sizeof *l);
  if (!l) {
    st->oom = true;
    return;
  }
  l->k.comm = o->comm;
  l->k.seq = o->seq;
  struct op_local *old;
  HASH_FIND(hh, st->opl, &l->k, sizeof l->k, old);
  if (old) {
    free(l);
    return;
  }
  l->o = *o;
  l->shipped = exchange;
  HASH_ADD(hh, st->opl, k, sizeof l->k, l);
  if (!CS_HASH_ADDED()) {
    free(l);
    st->oom = true;
    return;
  }
  st->nopl++;
}

static void keep_local_sdc(struct cs_online_rank *st, const struct cs_online_sdc *c, uint32_t exchange) {
  if (st->nsdl >= LOCAL_CAP) {
    st->lost++;
    return;
  }
  struct sdc_local *l = calloc(1, sizeof *l);
  if (!l) {
    st->oom = true;
    return;
  }
  l->k.comm = c->comm;
  l->k.seq = c->seq;
  struct sdc_local *old;
  HASH_FIND(hh, st->sdl, &l->k, sizeof l->k, old);
  if (old) {
    free(l);
    return;
  }
  l->c = *c;
  l->shipped = exchange;
  HASH_ADD(hh, st->sdl, k, sizeof l->k, l);
  if (!CS_HASH_ADDED()) {
    free(l);
    st->oom = true;
    return;
  }
  st->nsdl++;
}

/* back to the front of the backlog (a full backlog drops its newest) */
static void requeue_op(struct cs_online_rank *st, const struct cs_online_op *o) {
  if (st->ops_n == OPS_BACKLOG) {
    st->ops_n--;
    st->lost++;
  }
  st->ops_first = (st->ops_first + OPS_BACKLOG - 1) % OPS_BACKLOG;
  st->ops[st->ops_first] = *o;
  st->ops_n++;
}
static void requeue_sdc(struct cs_online_rank *st, const struct cs_online_sdc *c) {
  if (st->sdc_n == SDC_BACKLOG) {
    st->sdc_n--;
    st->lost++;
  }
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
      if (!(a = calloc(1, sizeof *a))) {
        st->oom = true;
        continue;
      }
      a->k = k;
      a->size = mn->op[s].size;
      a->durmin = a->durmin_hi = UINT64_MAX;
      a->born = exchange;
      HASH_ADD(hh, st->opa, k, sizeof a->k, a);
      if (!CS_HASH_ADDED()) {
        free(a);
        st->oom = true;
        continue;
      }
      st->nopa++;
    }
    if (a->size != mn->op[s].size) continue;
    a->count += cnt;
    if (mn->op[s].durmin < a->durmin) a->durmin = mn->op[s].durmin;
    if (~mn->op[s].ndurmax > a->durmax) a->durmax = ~mn->op[s].ndurmax;
    a->dursum += sm->op[s].dursum;
    a->gapsum += sm->op[s].gapsum;
    a->gapcnt += sm->op[s].gapcnt;
    if (mn->op[s].durmin_hi < a->durmin_hi) a->durmin_hi = mn->op[s].durmin_hi;
    a->xsum += sm->op[s].xsum;
    for (int j = 0; j < 3; j++) {
      a->x2[j] += sm->op[s].x2[j];
      a->xd[j] += sm->op[s].xd[j];
      a->d2[j] += sm->op[s].d2[j];
    }
    for (int j = 0; j < ONL_EXACT; j++) {
      a->dm[j] += sm->op[s].dm[j];
      a->xm[j] += sm->op[s].xm[j];
      a->gm[j] += sm->op[s].gm[j];
    }
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
      if (!(a = calloc(1, sizeof *a))) {
        st->oom = true;
        continue;
      }
      a->k = k;
      a->size = mn->sdc[s].size;
      a->meta = mn->sdc[s].meta;
      a->count = mn->sdc[s].count;
      a->fpmin = a->outmin = UINT64_MAX;
      a->born = exchange;
      HASH_ADD(hh, st->sda, k, sizeof a->k, a);
      if (!CS_HASH_ADDED()) {
        free(a);
        st->oom = true;
        continue;
      }
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
    if (!grow((void **)&st->st, &st->capst, st->nst + 1, sizeof *st->st)) {
      st->oom = true;
      return;
    }
    struct f_st *f = &st->st[st->nst++];
    memset(f, 0, sizeof *f);
    f->s.comm = sm->rep[s].comm;
    f->s.rank = (int)mn->rep[s].rank;
    f->s.comm_rank = (int)sm->rep[s].comm_rank;
    f->s.instances = sm->rep[s].instances;
    f->s.kind = (int)(sm->rep[s].kind & 0xff);
    f->s.cause = (unsigned)(sm->rep[s].kind >> 8 & 0xff);
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
    cs_onl_ops_evaluate(st, exchange);
    cs_onl_sdc_evaluate(st, exchange);
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
    if (cs_onl_sdc_verdict_detail(st, a, mn->b[i], sm->b[i], last_try))
      cs_onl_sdc_done(st, a);
    else
      st->detail[again++] = a;
  }
  st->ndetail = again;
  if (again) return 1;
  return publish(st, out);
}
