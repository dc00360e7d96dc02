/* analysis/online_pack.c: what one rank ships in the online exchange: its state (backlogs of
 * sampled instances and checked collectives, fed by the harvest thread through
 * hooks/online_exchange.c), the wire's identity and fold, and round 0 and detail-round packing.
 * Protocol: analysis/online_eval.c. */
#include "online_internal.h"

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

struct cs_online_rank *cs_online_rank_new(int rank, int nranks, const char *host, const struct cs_det_params *params) {
  if (nranks < 1 || rank < 0 || rank >= nranks) return NULL;
  struct cs_online_rank *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->rank = rank;
  st->n = nranks;
  st->stage = -1;
  if (host) strncpy(st->host, host, CS_ONLINE_HOST - 1);
  if (params)
    st->p = *params;
  else
    cs_det_params_default(&st->p);
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
  HASH_ITER(hh, st->opl, a, at) {
    HASH_DEL(st->opl, a);
    free(a);
  }
  struct sdc_local *b, *bt;
  HASH_ITER(hh, st->sdl, b, bt) {
    HASH_DEL(st->sdl, b);
    free(b);
  }
  struct op_agg *c, *ct;
  HASH_ITER(hh, st->opa, c, ct) {
    HASH_DEL(st->opa, c);
    free(c);
  }
  struct sdc_agg *d, *dt;
  HASH_ITER(hh, st->sda, d, dt) {
    HASH_DEL(st->sda, d);
    free(d);
  }
  struct self_win *w, *wt;
  HASH_ITER(hh, st->wins, w, wt) {
    HASH_DEL(st->wins, w);
    cs_det_cost_release(&w->cost);
    free(w->e);
    free(w);
  }
  free(st->sdcq);
  free(st->scratch);
  free(st->st);
  free(st->sf);
  free(st->out_st);
  free(st->out_sf);
  free(st);
}

void cs_online_rank_feed_op(struct cs_online_rank *st, const struct cs_online_op *o) {
  if (st->ops_n == OPS_BACKLOG) {
    st->ops_first = (st->ops_first + 1) % OPS_BACKLOG;
    st->ops_n--;
    st->lost++;
  }
  st->ops[(st->ops_first + st->ops_n++) % OPS_BACKLOG] = *o;
}

void cs_online_rank_feed_sdc(struct cs_online_rank *st, const struct cs_online_sdc *c) {
  if (st->sdc_n == SDC_BACKLOG) {
    st->sdc_first = (st->sdc_first + 1) % SDC_BACKLOG;
    st->sdc_n--;
    st->lost++;
  }
  st->sdcq[(st->sdc_first + st->sdc_n++) % SDC_BACKLOG] = *c;
}

uint64_t cs_online_rank_lost(const struct cs_online_rank *st) { return st->lost; }
void cs_online_rank_set_drops(struct cs_online_rank *st, uint64_t drops) { st->drops_ext = drops; }
void cs_online_rank_set_cause(struct cs_online_rank *st, unsigned cause) { st->cause = cause & 0xffu; }

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
    if (s == NO_SLOT) {
      keep[kept++] = o;
      continue;
    }
    if (!o.first_shipped) o.first_shipped = exchange;
    st->op_used[s] = true;
    st->op_slot[s] = o;
    shipped++;
    uint64_t d = onl_dur_ns(&o), x = onl_xb(&o);
    mn->op[s].comm = o.comm;
    mn->op[s].ncomm = ~o.comm;
    mn->op[s].seq = o.seq;
    mn->op[s].nseq = ~o.seq;
    mn->op[s].size = o.comm_size;
    mn->op[s].nsize = ~(uint64_t)o.comm_size;
    mn->op[s].durmin = d << RANK_BITS | o.comm_rank;
    mn->op[s].ndurmax = ~d;
    mn->op[s].durmin_hi = d << RANK_BITS | (RANK_MASK - o.comm_rank);
    sm->op[s].count = 1;
    sm->op[s].dursum = d;
    sm->op[s].xsum = x;
    onl_limbs_add(sm->op[s].x2, (unsigned __int128)x * x);
    onl_limbs_add(sm->op[s].xd, (unsigned __int128)x * d);
    onl_limbs_add(sm->op[s].d2, (unsigned __int128)d * d);
    if (o.comm_size <= ONL_EXACT) {
      uint64_t stage = st->pipeline && st->stage >= 0 && st->stage < (1 << 23) ? (uint64_t)st->stage + 1 : 0;
      sm->op[s].dm[o.comm_rank] = d + 1;
      sm->op[s].xm[o.comm_rank] = stage << ONL_XB_BITS | (x + 1);
      if (o.gap_us >= 0 && o.gap_us < 1e9f) sm->op[s].gm[o.comm_rank] = (uint64_t)((double)o.gap_us * 1e3) + 1;
    }
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
    if (s == NO_SLOT) {
      skeep[kept++] = c;
      continue;
    }
    st->sdc_used[s] = true;
    st->sdc_slot[s] = c;
    shipped++;
    bool is_bcast = c.op == CS_OP_Broadcast;
    bool has_in = (c.checked & 2) && (!is_bcast || (int)c.comm_rank == c.root);
    mn->sdc[s].comm = c.comm;
    mn->sdc[s].ncomm = ~c.comm;
    mn->sdc[s].seq = c.seq;
    mn->sdc[s].nseq = ~c.seq;
    mn->sdc[s].size = c.comm_size;
    mn->sdc[s].nsize = ~(uint64_t)c.comm_size;
    mn->sdc[s].meta = sdc_meta(&c);
    mn->sdc[s].nmeta = ~mn->sdc[s].meta;
    mn->sdc[s].count = c.count;
    mn->sdc[s].ncount = ~c.count;
    sm->sdc[s].members = 1;
    if (c.checked & 1) {
      mn->sdc[s].fp = c.fp;
      mn->sdc[s].nfp = ~c.fp;
      sm->sdc[s].nfp = 1;
      if (isfinite(c.out_sum)) {
        mn->sdc[s].out = enc_d(c.out_sum);
        mn->sdc[s].nout = ~enc_d(c.out_sum);
      } else
        sm->sdc[s].out_nonfinite = 1;
      fs->sdc[s].out_sum = c.out_sum;
      sm->sdc[s].int_out = as_u64(c.out_sum);
      if ((int)c.comm_rank == c.root) {
        sm->sdc[s].root_out_ok = 1;
        fs->sdc[s].root_out = c.out_sum;
      }
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
    unsigned s = (unsigned)(cs_hash_fin((uint64_t)st->rank ^ ((uint64_t)exchange << 32)) % CS_ONLINE_REPORT_SLOTS);
    const struct report *r = &st->pend[0];
    st->rep_slot = (int)s;
    mn->rep[s].rank = (uint64_t)st->rank;
    mn->rep[s].nrank = ~(uint64_t)st->rank;
    sm->rep[s].count = 1;
    sm->rep[s].comm = r->comm;
    sm->rep[s].comm_rank = r->crank;
    sm->rep[s].instances = r->instances;
    sm->rep[s].kind = (uint64_t)(r->kind & 0xff) | (uint64_t)st->cause << 8; /* bits 8..15: its health cause */
    memcpy(sm->rep[s].host, st->host, CS_ONLINE_HOST);
    fs->rep[s].share = r->share;
    fs->rep[s].lateness = r->late;
    fs->rep[s].median = r->med;
  }
}

static unsigned bucket_of(uint64_t fp, unsigned salt) {
  return (unsigned)(cs_hash_fin(fp ^ (0x9e3779b97f4a7c15ULL * salt)) % CS_ONLINE_BUCKETS);
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
    m->fp = l->c.fp;
    m->nfp = ~l->c.fp;
    m->crank = l->c.comm_rank;
    m->ncrank = ~(uint64_t)l->c.comm_rank;
    m->wrank = (uint64_t)st->rank;
    if (isfinite(l->c.out_sum)) m->out = enc_d(l->c.out_sum);
    s->count = 1;
    s->wrank = (uint64_t)st->rank;
    memcpy(s->host, st->host, CS_ONLINE_HOST);
  }
}

void cs_online_pack(struct cs_online_rank *st, uint32_t exchange, unsigned round, struct cs_online_wire *w) {
  cs_online_wire_identity(w);
  if (round == 0)
    pack_round0(st, exchange, w);
  else
    pack_detail(st, round, w);
}
