/* include/collscope/sdc.h: cross-rank comparison of the SDC check results of one
 * collective instance (analysis/sdc_compare.c). Used by `collscope report` and, later, by the
 * shim's online exchange. Pure functions: no I/O, no allocation.
 *
 * Rules (DESIGN.md "SDC checks"):
 *  - fingerprint (AllReduce, Broadcast, AllGather: every rank's output is the same bytes):
 *    the value a strict majority of the checked ranks has is the reference; each rank
 *    with another value is a finding naming that rank. No strict majority: one finding
 *    with suspect -1.
 *  - sum (needs every rank's results): AllReduce (sum/avg): the reference output sum
 *    (majority fingerprint's) vs the sum of the input sums (avg: x nranks); Reduce
 *    (sum/avg): the root's output; ReduceScatter (sum/avg): the sum of the output sums;
 *    Broadcast: each output sum vs the root's input sum; AllGather: each output sum vs the
 *    sum of the input sums. Suspect of a sum finding: the rank whose output was compared
 *    for Broadcast/AllGather, the root for Reduce (the only output), else -1 (a reduction
 *    that every rank received identically, or a ReduceScatter whose chunk is not known).
 *    Floats: |got - want| <= tol, tol = 1.0625 (((n-1) u + (N+64) 2^-53) S
 *    + (n-1) N_out d) (u: the type's unit roundoff, S: sum of |input| over all ranks, N:
 *    input elements over all ranks, d: half the smallest subnormal; avg adds the final
 *    division's rounding); each of an element's n-1 ring hops rounds at most once; a non-finite output sum is
 *    a finding only when overflow was impossible (S (1 + n u) < the type's max); other
 *    non-finite sums skip the check. Integers: exact, modulo 2^min(bits,52) (the writer
 *    keeps integer sums in that ring, matching wrapping reductions). prod/max/min and
 *    premulsum (scalar unknown to readers) get the fingerprint check only, and so do fp8
 *    types (their reductions saturate instead of overflowing). */
#ifndef COLLSCOPE_SDC_H
#define COLLSCOPE_SDC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cs_sdc_member {
  int comm_rank;
  unsigned checked; /* bit 0: fp + out_sum valid, bit 1: in_sum + in_abs valid */
  uint64_t fp;
  double in_sum, in_abs, out_sum; /* NAN when non-finite */
};

struct cs_sdc_instance {
  int op;    /* enum cs_op */
  int dtype; /* ncclDataType_t */
  int redop; /* ncclRedOp_t (0 sum .. 4 avg), -1 none, >= 5 premulsum */
  int root;
  int comm_size;
  uint64_t count; /* the count argument */
  size_t n;
  const struct cs_sdc_member *m;
};

enum cs_sdc_check { CS_SDC_CHECK_FINGERPRINT = 0,
                    CS_SDC_CHECK_SUM = 1 };

struct cs_sdc_finding {
  int check;             /* enum cs_sdc_check */
  int suspect;           /* comm rank of the suspect, -1 when the check cannot tell */
  double got, want, tol; /* sum check: the values compared (fingerprint: 0) */
};

/* What the comparison did (for the report's counts). */
struct cs_sdc_outcome {
  int fp_checked;             /* the fingerprint rule ran (>= 2 ranks with fingerprints) */
  int sum_checked;            /* the sum rule ran */
  int sum_skipped_nonfinite;  /* the sum rule was skipped: NaN/Inf in the data */
  int sum_skipped_incomplete; /* some rank's record is missing or unchecked */
};

/* Compare; writes at most max findings, returns how many. */
size_t cs_sdc_compare(const struct cs_sdc_instance *in, struct cs_sdc_finding *out, size_t max,
                      struct cs_sdc_outcome *oc);
const char *cs_sdc_check_name(int check);
/* An element type's figures for the sum rule: an integer type (sums kept modulo 2^bits), or a
 * float type's unit roundoff u, largest finite value and smallest subnormal d. false: a type
 * without a sum rule (fp8 has fingerprints only). Shared by the comparison here and the online
 * exchange's evaluator (analysis/online_eval.c). */
struct cs_sdc_dtype_info {
  bool is_int;
  unsigned bits;
  double u, max, d;
};
bool cs_sdc_dtype_info(int dtype, struct cs_sdc_dtype_info *t);

#endif
