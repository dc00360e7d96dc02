/* analysis/sdc_compare.c: cross-rank comparison of SDC check results (include/collscope/sdc.h
 * has the rules). Shared by the CLI (report) and the shim. */
#include "collscope/sdc.h"
#include "collscope/schema.h"
#include <float.h>
#include <math.h>
#include <stdbool.h>

const char *cs_sdc_check_name(int check) { return check == CS_SDC_CHECK_SUM ? "sum" : "fingerprint"; }

bool cs_sdc_dtype_info(int dtype, struct cs_sdc_dtype_info *t) {
  switch (dtype) {
  case 0:
  case 1: *t = (struct cs_sdc_dtype_info){true, 8, 0, 0, 0}; return true;
  case 2:
  case 3: *t = (struct cs_sdc_dtype_info){true, 32, 0, 0, 0}; return true;
  case 4:
  case 5: *t = (struct cs_sdc_dtype_info){true, 52, 0, 0, 0}; return true; /* kept modulo 2^52 */
  case 6: *t = (struct cs_sdc_dtype_info){false, 16, 0x1p-11, 65504.0, 0x1p-25}; return true;
  case 7: *t = (struct cs_sdc_dtype_info){false, 32, 0x1p-24, FLT_MAX, 0x1p-150}; return true;
  case 8: *t = (struct cs_sdc_dtype_info){false, 64, 0x1p-53, DBL_MAX, 0}; return true;
  case 9: *t = (struct cs_sdc_dtype_info){false, 16, 0x1p-8, 0x1.fep127, 0x1p-134}; return true;
  case 10: *t = (struct cs_sdc_dtype_info){false, 8, 0x1p-4, 448.0, 0x1p-10}; return true;
  case 11: *t = (struct cs_sdc_dtype_info){false, 8, 0x1p-3, 57344.0, 0x1p-17}; return true;
  default: return false;
  }
}

static uint64_t imod(double v, unsigned bits) {
  uint64_t m = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  return (uint64_t)v & m; /* the writer stores values in [0, 2^bits) */
}

static void add(struct cs_sdc_finding *out, size_t max, size_t *n, int check, int suspect, double got,
                double want, double tol) {
  if (*n < max) out[*n] = (struct cs_sdc_finding){check, suspect, got, want, tol};
  (*n)++;
}

/* A sum verdict: 1 mismatch, 0 fine, -1 cannot tell (non-finite). */
static int sum_verdict(const struct cs_sdc_dtype_info *t, double got, double want, double tol, double S, int nred) {
  if (t->is_int) return imod(got, t->bits) != imod(want, t->bits);
  if (!isfinite(want) || !isfinite(S)) return -1;
  if (!isfinite(got)) return S * (1 + (nred + 1) * t->u) < t->max ? 1 : -1; /* overflow impossible */
  return fabs(got - want) > tol;
}

/* The fingerprints' majority vote: a finding for each member whose output differs from a
 * strict majority's (flagged[i] set for it), or one without a suspect when no value has a
 * majority. Returns the index of a member holding the reference output, -1 when none. */
static int vote_fingerprints(const struct cs_sdc_instance *in, struct cs_sdc_finding *out, size_t max, size_t *nf,
                             struct cs_sdc_outcome *oc, bool *flagged) {
  const int op = in->op;
  const struct cs_sdc_member *m = in->m;
  int ref = -1;
  size_t nfp = 0;
  bool fp_op = op == CS_OP_AllReduce || op == CS_OP_Broadcast || op == CS_OP_AllGather;
  for (size_t i = 0; i < in->n; i++) nfp += (m[i].checked & 1) != 0;
  if (fp_op && nfp >= 2) {
    oc->fp_checked = 1;
    size_t best = 0;
    for (size_t i = 0; i < in->n; i++) {
      if (!(m[i].checked & 1)) continue;
      size_t c = 0;
      for (size_t j = 0; j < in->n; j++) c += (m[j].checked & 1) && m[j].fp == m[i].fp;
      /* ties: prefer the root's value (Broadcast), else the lowest rank */
      if (c > best || (c == best && op == CS_OP_Broadcast && m[i].comm_rank == in->root)) best = c, ref = (int)i;
    }
    if (2 * best > nfp) {
      for (size_t i = 0; i < in->n; i++)
        if ((m[i].checked & 1) && m[i].fp != m[ref].fp) {
          add(out, max, nf, CS_SDC_CHECK_FINGERPRINT, m[i].comm_rank, 0, 0, 0);
          if (i < 4096) flagged[i] = true;
        }
    } else if (best < nfp) {
      add(out, max, nf, CS_SDC_CHECK_FINGERPRINT, -1, 0, 0, 0);
      ref = -1;
    }
  } else if (nfp >= 1) {
    for (size_t i = 0; i < in->n && ref < 0; i++)
      if (m[i].checked & 1) ref = (int)i;
  }
  return ref;
}

/* what the outputs' sums are checked against: the inputs' sum (modulo the type's ring for
 * integers), their magnitude S, and the rounding tolerance */
struct sum_want {
  double want, S, tol, out_elems;
  int nred; /* ranks whose values are reduced (0: Broadcast, AllGather) */
};

/* the inputs' side of the sum rule; false (oc says why) when a member lacks its input sums */
static bool input_sums(const struct cs_sdc_instance *in, const struct cs_sdc_dtype_info *t, int n,
                       struct cs_sdc_outcome *oc, struct sum_want *w) {
  const int op = in->op;
  const struct cs_sdc_member *m = in->m;
  double want = 0, S = 0;
  uint64_t iwant = 0;
  double per_in = (double)in->count * (op == CS_OP_ReduceScatter ? n : 1);
  double N = 0;
  for (size_t i = 0; i < in->n; i++) {
    if (op == CS_OP_Broadcast && m[i].comm_rank != in->root) continue;
    if (!(m[i].checked & 2)) {
      oc->sum_skipped_incomplete = 1;
      return false;
    }
    want += m[i].in_sum;
    S += m[i].in_abs;
    N += per_in;
    if (t->is_int) iwant += imod(m[i].in_sum, t->bits);
  }
  if (N == 0) {
    oc->sum_skipped_incomplete = 1;
    return false;
  }
  if (t->is_int) want = (double)(iwant & ((1ull << t->bits) - 1));
  w->nred = (op == CS_OP_Broadcast || op == CS_OP_AllGather) ? 0 : n;
  w->out_elems = (double)in->count * (op == CS_OP_AllGather ? n : 1);
  /* rigorous: each of the n-1 hops of an element rounds once, by at most u |partial| <=
   * u sum_r |x_r| (plus d absolute near subnormals); the fp64 sums themselves add at most
   * (N + 64) 2^-53 S; 1/16 of margin on top */
  int hops = w->nred ? w->nred - 1 : 0;
  w->tol = 1.0625 * ((hops * t->u + (N + 64) * 0x1p-53) * S + hops * w->out_elems * t->d);
  w->want = want;
  w->S = S;
  return true;
}

size_t cs_sdc_compare(const struct cs_sdc_instance *in, struct cs_sdc_finding *out, size_t max,
                      struct cs_sdc_outcome *oc) {
  struct cs_sdc_outcome dummy;
  if (!oc) oc = &dummy;
  *oc = (struct cs_sdc_outcome){0, 0, 0, 0};
  size_t nf = 0;
  struct cs_sdc_dtype_info t;
  if (!cs_sdc_dtype_info(in->dtype, &t) || in->n == 0) return 0;
  const int op = in->op, n = in->comm_size > 0 ? in->comm_size : (int)in->n;
  const struct cs_sdc_member *m = in->m;

  bool flagged[4096] = {false};
  int ref = vote_fingerprints(in, out, max, &nf, oc, flagged);

  /* ---- sum ---- */
  bool sum_red = in->redop == 0 || in->redop == 4; /* sum, avg */
  bool avg = in->redop == 4;
  if (avg && t.is_int) sum_red = false;
  bool rule = op == CS_OP_Broadcast || op == CS_OP_AllGather ||
              (sum_red && (op == CS_OP_AllReduce || op == CS_OP_Reduce || op == CS_OP_ReduceScatter));
  /* fp8: reductions saturate (satfinite) instead of overflowing, so a finite output
   * sum can legitimately miss the input sum by any amount: fingerprint only */
  if (in->dtype == 10 || in->dtype == 11) rule = false;
  if (!rule) return nf;
  if ((int)in->n != n) {
    oc->sum_skipped_incomplete = 1;
    return nf;
  }
  struct sum_want w;
  if (!input_sums(in, &t, n, oc, &w)) return nf;
  double want = w.want, S = w.S, tol = w.tol, out_elems = w.out_elems;
  int nred = w.nred;
  oc->sum_checked = 1;
  int v;
  switch (op) {
  case CS_OP_AllReduce:
  case CS_OP_Reduce: {
    int k = -1;
    if (op == CS_OP_Reduce) {
      for (size_t i = 0; i < in->n; i++)
        if (m[i].comm_rank == in->root) k = (int)i;
    } else {
      k = ref;
    }
    if (k < 0 || !(m[k].checked & 1)) {
      oc->sum_checked = 0;
      oc->sum_skipped_incomplete = 1;
      return nf;
    }
    double got = m[k].out_sum * (avg ? n : 1);
    v = sum_verdict(&t, got, want, tol + (avg ? 2 * t.u * (S + fabs(got)) + n * out_elems * t.d : 0), S, nred);
    if (v < 0) {
      oc->sum_checked = 0;
      oc->sum_skipped_nonfinite = 1;
    } else if (v)
      add(out, max, &nf, CS_SDC_CHECK_SUM, op == CS_OP_Reduce ? in->root : -1, got, want, tol);
    break;
  }
  case CS_OP_ReduceScatter: {
    double got = 0;
    uint64_t igot = 0;
    for (size_t i = 0; i < in->n; i++) {
      if (!(m[i].checked & 1)) {
        oc->sum_checked = 0;
        oc->sum_skipped_incomplete = 1;
        return nf;
      }
      got += m[i].out_sum;
      if (t.is_int) igot += imod(m[i].out_sum, t.bits);
    }
    if (t.is_int) got = (double)(igot & ((1ull << t.bits) - 1));
    got *= avg ? n : 1;
    v = sum_verdict(&t, got, want, tol + (avg ? 2 * t.u * (S + fabs(got)) + n * out_elems * t.d : 0), S, nred);
    if (v < 0) {
      oc->sum_checked = 0;
      oc->sum_skipped_nonfinite = 1;
    } else if (v)
      add(out, max, &nf, CS_SDC_CHECK_SUM, -1, got, want, tol);
    break;
  }
  default: /* Broadcast, AllGather: every rank's output against the inputs */
    for (size_t i = 0; i < in->n; i++) {
      if (!(m[i].checked & 1) || (i < 4096 && flagged[i])) continue;
      v = sum_verdict(&t, m[i].out_sum, want, tol, S, 0);
      if (v < 0)
        oc->sum_skipped_nonfinite = 1;
      else if (v)
        add(out, max, &nf, CS_SDC_CHECK_SUM, m[i].comm_rank, m[i].out_sum, want, tol);
    }
    break;
  }
  return nf;
}
