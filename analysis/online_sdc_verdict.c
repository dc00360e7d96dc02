/* analysis/online_sdc_verdict.c: the online exchange's SDC verdicts from the reduced bytes:
 * fingerprint agreement, the sum rules (include/collscope/sdc.h) and the detail rounds'
 * majority bucket that names suspects. Every rank reaches the same verdict. Protocol:
 * analysis/online_eval.c. */
#include "online_internal.h"

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
  default: /* Broadcast, AllGather: the reference output against the inputs */
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
    struct f_sdc *f = cs_onl_sdc_finding(st, a, CS_SDC_CHECK_SUM);
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
  if (l) {
    HASH_DEL(st->sdl, l);
    free(l);
    st->nsdl--;
  }
}

void cs_onl_sdc_done(struct cs_online_rank *st, struct sdc_agg *a) {
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
  if (a->nfp >= 1 && a->out_nonfinite == a->nfp) {
    ref_ok = true;
    ref = a->out_sum;
  } /* all non-finite */
  sdc_sum_rule(st, a, ref_ok, ref);
  int op = (int)(a->meta & 0xff);
  if (ref_ok && a->outmax != a->outmin && (op == CS_OP_Broadcast || op == CS_OP_AllGather))
    sdc_sum_rule(st, a, true, dec_d(a->outmax));
  cs_onl_sdc_done(st, a);
}

static int cmp_agg(const void *x, const void *y) {
  const struct sdc_agg *a = *(const struct sdc_agg *const *)x, *b = *(const struct sdc_agg *const *)y;
  if (a->k.comm != b->k.comm) return a->k.comm < b->k.comm ? -1 : 1;
  return a->k.seq < b->k.seq ? -1 : a->k.seq > b->k.seq;
}

/* Complete instances in (comm, seq) order: the agreeing ones get their verdict now; the
 * first CS_ONLINE_DETAIL disagreeing ones go to a detail round. Incomplete ones age out. */
void cs_onl_sdc_evaluate(struct cs_online_rank *st, uint32_t exchange) {
  st->ndetail = 0;
  struct sdc_agg **v = malloc((st->nsda ? st->nsda : 1) * sizeof *v);
  if (!v) {
    st->oom = true;
    return;
  }
  size_t n = 0;
  struct sdc_agg *a, *t;
  HASH_ITER(hh, st->sda, a, t) {
    if (a->members == a->size)
      v[n++] = a;
    else if (exchange - a->born >= AGG_MAX_AGE) {
      local_drop_sdc(st, &a->k);
      HASH_DEL(st->sda, a);
      free(a);
      st->nsda--;
    }
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
int cs_onl_sdc_verdict_detail(struct cs_online_rank *st, struct sdc_agg *a, const struct bucket_min *bm,
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
    struct f_sdc *f = cs_onl_sdc_finding(st, a, CS_SDC_CHECK_FINGERPRINT);
    (void)f;
    sdc_sum_rule(st, a, false, 0);
    return 1;
  }
  for (int b = 0; b < CS_ONLINE_BUCKETS; b++) {
    if (b == maj || !bs[b].count) continue;
    struct f_sdc *f = cs_onl_sdc_finding(st, a, CS_SDC_CHECK_FINGERPRINT);
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
