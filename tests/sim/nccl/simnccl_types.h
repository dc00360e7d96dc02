/* tests/sim/nccl/simnccl_types.h: datatype conversion and element-wise reduction
 * kernels of the simulated libnccl.so.2. Header-only so the tests compute their host
 * reference with exactly the documented arithmetic (see README.md "Arithmetic").
 * Small floats (fp16, bf16, fp8) are widened to float, combined in float, and rounded
 * back to nearest-even like the GPU's __hadd/__hmul; fp8 conversion saturates to the
 * largest finite value (NCCL uses __NV_SATFINITE). */
#ifndef SIMNCCL_TYPES_H
#define SIMNCCL_TYPES_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stddef.h>

enum { SN_INT8, SN_UINT8, SN_INT32, SN_UINT32, SN_INT64, SN_UINT64, SN_F16, SN_F32, SN_F64,
       SN_BF16, SN_F8E4M3, SN_F8E5M2, SN_NTYPES };
/* reduction kinds after mapping NCCL ops: avg of floats = premulsum(1/n); avg of ints = sum
 * then divide by n at the owner (NCCL's SumPostDiv) */
enum { SN_SUM, SN_PROD, SN_MAX, SN_MIN, SN_PREMULSUM, SN_SUMPOSTDIV };

static inline size_t sn_type_size(int t) {
  static const unsigned char sz[SN_NTYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return (t >= 0 && t < SN_NTYPES) ? sz[t] : 0;
}
static inline int sn_is_float(int t) { return t >= SN_F16; }

/* ---- small float <-> float ------------------------------------------------------ */
struct sn_minifloat { int ebits, mbits, bias, has_inf; float maxfinite; };
static const struct sn_minifloat SN_FMT_F16 = {5, 10, 15, 1, 65504.0f};
static const struct sn_minifloat SN_FMT_BF16 = {8, 7, 127, 1, 3.38953139e38f};
static const struct sn_minifloat SN_FMT_E4M3 = {4, 3, 7, 0, 448.0f};
static const struct sn_minifloat SN_FMT_E5M2 = {5, 2, 15, 1, 57344.0f};

static inline float sn_mini_to_float(uint32_t bits, const struct sn_minifloat *f) {
  uint32_t sign = (bits >> (f->ebits + f->mbits)) & 1u;
  uint32_t e = (bits >> f->mbits) & ((1u << f->ebits) - 1);
  uint32_t m = bits & ((1u << f->mbits) - 1);
  float v;
  uint32_t emax = (1u << f->ebits) - 1;
  if (f->has_inf && e == emax) v = m ? NAN : INFINITY;
  else if (!f->has_inf && e == emax && m == (1u << f->mbits) - 1) v = NAN;   /* e4m3 S.1111.111 */
  else if (e == 0) v = ldexpf((float)m, 1 - f->bias - f->mbits);
  else v = ldexpf((float)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
  return sign ? -v : v;
}

/* round-to-nearest-even, saturating to the largest finite for formats without inf
 * (and for fp8 e5m2, __NV_SATFINITE), overflow to inf for fp16/bf16 */
static inline uint32_t sn_float_to_mini(float x, const struct sn_minifloat *f, int satfinite) {
  uint32_t sign = signbit(x) ? 1u : 0u, out;
  uint32_t emax = (1u << f->ebits) - 1;
  float a = fabsf(x);
  if (isnan(x)) {
    out = f->has_inf ? ((emax << f->mbits) | (1u << (f->mbits - 1))) : ((emax << f->mbits) | ((1u << f->mbits) - 1));
    return out | (sign << (f->ebits + f->mbits));
  }
  int emin = 1 - f->bias;
  int e;
  if (a == 0.0f) return sign << (f->ebits + f->mbits);
  (void)frexpf(a, &e); e -= 1;                 /* a in [2^e, 2^(e+1)) */
  if (e < emin) e = emin;
  float q = ldexpf(1.0f, e - f->mbits);
  float r = rintf(a / q) * q;                  /* a/q exact: q is a power of two */
  if (isinf(a) || r > f->maxfinite) {
    if (satfinite || !f->has_inf) r = f->maxfinite;
    else return (sign << (f->ebits + f->mbits)) | (emax << f->mbits);
  }
  if (r == 0.0f) return sign << (f->ebits + f->mbits);
  (void)frexpf(r, &e); e -= 1;
  if (e < emin) out = (uint32_t)ldexpf(r, -(emin - f->mbits));           /* subnormal */
  else out = ((uint32_t)(e + f->bias) << f->mbits) |
             ((uint32_t)ldexpf(r, -(e - f->mbits)) & ((1u << f->mbits) - 1));
  return out | (sign << (f->ebits + f->mbits));
}

static inline float sn_h2f(uint16_t h) { return sn_mini_to_float(h, &SN_FMT_F16); }
static inline uint16_t sn_f2h(float f) { return (uint16_t)sn_float_to_mini(f, &SN_FMT_F16, 0); }
static inline float sn_bf2f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }
static inline uint16_t sn_f2bf(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline float sn_e4m3_to_f(uint8_t b) { return sn_mini_to_float(b, &SN_FMT_E4M3); }
static inline uint8_t sn_f_to_e4m3(float f) { return (uint8_t)sn_float_to_mini(f, &SN_FMT_E4M3, 1); }
static inline float sn_e5m2_to_f(uint8_t b) { return sn_mini_to_float(b, &SN_FMT_E5M2); }
static inline uint8_t sn_f_to_e5m2(float f) { return (uint8_t)sn_float_to_mini(f, &SN_FMT_E5M2, 1); }

/* element i of buffer p of type t, as double (exact for everything but u/int64 > 2^53) */
static inline double sn_load(int t, const void *p, size_t i) {
  switch (t) {
  case SN_INT8: return ((const int8_t *)p)[i];
  case SN_UINT8: return ((const uint8_t *)p)[i];
  case SN_INT32: return ((const int32_t *)p)[i];
  case SN_UINT32: return ((const uint32_t *)p)[i];
  case SN_INT64: return (double)((const int64_t *)p)[i];
  case SN_UINT64: return (double)((const uint64_t *)p)[i];
  case SN_F16: return sn_h2f(((const uint16_t *)p)[i]);
  case SN_F32: return ((const float *)p)[i];
  case SN_F64: return ((const double *)p)[i];
  case SN_BF16: return sn_bf2f(((const uint16_t *)p)[i]);
  case SN_F8E4M3: return sn_e4m3_to_f(((const uint8_t *)p)[i]);
  case SN_F8E5M2: return sn_e5m2_to_f(((const uint8_t *)p)[i]);
  }
  return 0;
}

/* ---- the kernels ------------------------------------------------------------------
 * sn_pre:    dst[i] = pre(src[i])             (pre = x*scalar for PREMULSUM, else x)
 * sn_reduce: dst[i] = a[i] OP pre(b[i])       (a = partial received from the previous
 *                                              rank, b = this rank's own input)
 * sn_post:   dst[i] = dst[i] / nranks          (SUMPOSTDIV only: integer average)
 * scalar: the premul scalar, already in type t (8 bytes, little-endian, raw bits). */
#define SN_INT_KERNELS(T, UT)                                                              \
  static inline T sn_pre_##T(T x, int op, T s) { return op == SN_PREMULSUM ? (T)((UT)x * (UT)s) : x; } \
  static inline T sn_op_##T(T a, T b, int op) {                                            \
    switch (op) {                                                                           \
    case SN_PROD: return (T)((UT)a * (UT)b);                                                \
    case SN_MAX: return a > b ? a : b;                                                      \
    case SN_MIN: return a < b ? a : b;                                                      \
    default: return (T)((UT)a + (UT)b);                                                     \
    }                                                                                       \
  }
SN_INT_KERNELS(int8_t, uint8_t)
SN_INT_KERNELS(uint8_t, uint8_t)
SN_INT_KERNELS(int32_t, uint32_t)
SN_INT_KERNELS(uint32_t, uint32_t)
SN_INT_KERNELS(int64_t, uint64_t)
SN_INT_KERNELS(uint64_t, uint64_t)

static inline float sn_fop(float a, float b, int op) {
  switch (op) {
  case SN_PROD: return a * b;
  case SN_MAX: return a > b ? a : b;   /* fmaxf semantics differ only for NaN */
  case SN_MIN: return a < b ? a : b;
  default: return a + b;
  }
}
static inline double sn_dop(double a, double b, int op) {
  switch (op) {
  case SN_PROD: return a * b;
  case SN_MAX: return a > b ? a : b;
  case SN_MIN: return a < b ? a : b;
  default: return a + b;
  }
}

#define SN_LOOP_INT(T)                                                                     \
  do {                                                                                      \
    T s_; memcpy(&s_, scalar, sizeof(T));                                                   \
    T *d_ = (T *)dst; const T *a_ = (const T *)a; const T *b_ = (const T *)b;               \
    if (a_) for (size_t i = 0; i < n; i++) d_[i] = sn_op_##T(a_[i], sn_pre_##T(b_[i], op, s_), op); \
    else for (size_t i = 0; i < n; i++) d_[i] = sn_pre_##T(b_[i], op, s_);                  \
  } while (0)
#define SN_LOOP_SMALL(TO_F, FROM_F)                                                        \
  do {                                                                                      \
    uint16_t s16_ = 0; uint8_t s8_ = 0; float s_;                                           \
    if (sizeof(*d_) == 2) { memcpy(&s16_, scalar, 2); s_ = TO_F(s16_); }                   \
    else { memcpy(&s8_, scalar, 1); s_ = TO_F(s8_); }                                       \
    for (size_t i = 0; i < n; i++) {                                                        \
      float own = TO_F(b_[i]);                                                              \
      if (op == SN_PREMULSUM) own = TO_F(FROM_F(own * s_));                                 \
      d_[i] = a_ ? FROM_F(sn_fop(TO_F(a_[i]), own, op == SN_PREMULSUM ? SN_SUM : op))      \
                 : FROM_F(own);                                                             \
    }                                                                                       \
  } while (0)

/* a may be NULL: then dst = pre(b) */
static inline void sn_reduce(int t, int op, const void *scalar, void *dst, const void *a,
                             const void *b, size_t n) {
  int fop = op == SN_PREMULSUM || op == SN_SUMPOSTDIV ? SN_SUM : op;
  switch (t) {
  case SN_INT8: SN_LOOP_INT(int8_t); break;
  case SN_UINT8: SN_LOOP_INT(uint8_t); break;
  case SN_INT32: SN_LOOP_INT(int32_t); break;
  case SN_UINT32: SN_LOOP_INT(uint32_t); break;
  case SN_INT64: SN_LOOP_INT(int64_t); break;
  case SN_UINT64: SN_LOOP_INT(uint64_t); break;
  case SN_F32: {
    float s; memcpy(&s, scalar, 4);
    float *d = dst; const float *x = a, *y = b;
    for (size_t i = 0; i < n; i++) {
      float own = op == SN_PREMULSUM ? y[i] * s : y[i];
      d[i] = x ? sn_fop(x[i], own, fop) : own;
    }
    break;
  }
  case SN_F64: {
    double s; memcpy(&s, scalar, 8);
    double *d = dst; const double *x = a, *y = b;
    for (size_t i = 0; i < n; i++) {
      double own = op == SN_PREMULSUM ? y[i] * s : y[i];
      d[i] = x ? sn_dop(x[i], own, fop) : own;
    }
    break;
  }
  case SN_F16: { uint16_t *d_ = dst; const uint16_t *a_ = a, *b_ = b; SN_LOOP_SMALL(sn_h2f, sn_f2h); break; }
  case SN_BF16: { uint16_t *d_ = dst; const uint16_t *a_ = a, *b_ = b; SN_LOOP_SMALL(sn_bf2f, sn_f2bf); break; }
  case SN_F8E4M3: { uint8_t *d_ = dst; const uint8_t *a_ = a, *b_ = b; SN_LOOP_SMALL(sn_e4m3_to_f, sn_f_to_e4m3); break; }
  case SN_F8E5M2: { uint8_t *d_ = dst; const uint8_t *a_ = a, *b_ = b; SN_LOOP_SMALL(sn_e5m2_to_f, sn_f_to_e5m2); break; }
  }
}

/* integer average: the owner divides the finished sum by nranks (C truncation) */
static inline void sn_post(int t, int op, void *dst, size_t n, int nranks) {
  if (op != SN_SUMPOSTDIV) return;
  switch (t) {
#define SN_DIV(T) { T *d = dst; for (size_t i = 0; i < n; i++) d[i] = (T)(d[i] / (T)nranks); } break;
  case SN_INT8: SN_DIV(int8_t)
  case SN_UINT8: SN_DIV(uint8_t)
  case SN_INT32: SN_DIV(int32_t)
  case SN_UINT32: SN_DIV(uint32_t)
  case SN_INT64: SN_DIV(int64_t)
  case SN_UINT64: SN_DIV(uint64_t)
#undef SN_DIV
  default: break;
  }
}

/* the premul scalar 1/n for float averages, rounded into type t */
static inline void sn_avg_scalar(int t, int nranks, void *out8) {
  memset(out8, 0, 8);
  float f = 1.0f / (float)nranks;
  switch (t) {
  case SN_F32: memcpy(out8, &f, 4); break;
  case SN_F64: { double d = 1.0 / nranks; memcpy(out8, &d, 8); break; }
  case SN_F16: { uint16_t h = sn_f2h(f); memcpy(out8, &h, 2); break; }
  case SN_BF16: { uint16_t h = sn_f2bf(f); memcpy(out8, &h, 2); break; }
  case SN_F8E4M3: { uint8_t h = sn_f_to_e4m3(f); memcpy(out8, &h, 1); break; }
  case SN_F8E5M2: { uint8_t h = sn_f_to_e5m2(f); memcpy(out8, &h, 1); break; }
  default: break;
  }
}

/* convert a scalar of type from (raw bytes) into type to (raw bytes) */
static inline void sn_convert_scalar(int from, const void *in, int to, void *out8) {
  memset(out8, 0, 8);
  if (from == to) { memcpy(out8, in, sn_type_size(to)); return; }
  double v = sn_load(from, in, 0);
  switch (to) {
  case SN_INT8: { int8_t x = (int8_t)v; memcpy(out8, &x, 1); break; }
  case SN_UINT8: { uint8_t x = (uint8_t)v; memcpy(out8, &x, 1); break; }
  case SN_INT32: { int32_t x = (int32_t)v; memcpy(out8, &x, 4); break; }
  case SN_UINT32: { uint32_t x = (uint32_t)v; memcpy(out8, &x, 4); break; }
  case SN_INT64: { int64_t x = (int64_t)v; memcpy(out8, &x, 8); break; }
  case SN_UINT64: { uint64_t x = (uint64_t)v; memcpy(out8, &x, 8); break; }
  case SN_F16: { uint16_t x = sn_f2h((float)v); memcpy(out8, &x, 2); break; }
  case SN_F32: { float x = (float)v; memcpy(out8, &x, 4); break; }
  case SN_F64: memcpy(out8, &v, 8); break;
  case SN_BF16: { uint16_t x = sn_f2bf((float)v); memcpy(out8, &x, 2); break; }
  case SN_F8E4M3: { uint8_t x = sn_f_to_e4m3((float)v); memcpy(out8, &x, 1); break; }
  case SN_F8E5M2: { uint8_t x = sn_f_to_e5m2((float)v); memcpy(out8, &x, 1); break; }
  }
}
#endif
