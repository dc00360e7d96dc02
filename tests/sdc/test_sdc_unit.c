/* tests/sdc/test_sdc_unit.c: the SDC kernel's host twin (hooks/sdc_kernels.cu compiled as
 * C, exactly what the simulator runs) and the comparison rules (analysis/sdc_compare.c).
 *  1. fingerprint = a plain serial loop, for any grid/block, alignment and length;
 *     integer sums exact; fp64 sums within rounding of a serial sum; the result does not
 *     depend on the grid for a fixed (grid, block) pair across runs (bitwise);
 *  2. datatype decoding of known encodings;
 *  3. comparison rules on hand-made instances;
 *  4. 100,000 clean randomised collectives (2..8 ranks, fp32/fp16/bf16/fp64/int32/int8/
 *     uint8, all five ops, sum/avg/max, random/wide/special data), reduced hop by hop in
 *     ring order with per-hop rounding to the datatype (as the simulator and NCCL do),
 *     checked with the kernel and compared: 0 findings allowed. */
#include "collscope/schema.h"
#include "collscope/sdc.h"
#include "sdc_kernel_defs.h"
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void collscope_simkernel_sdc_reduce(void **params, const unsigned grid[3], const unsigned block[3]);

static int failures;
#define CHECK(c, ...) \
  do { \
    if (!(c)) { \
      failures++; \
      if (failures < 20) { \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr); \
      } \
    } \
  } while (0)

static uint64_t rs = 12345;
static uint64_t rng(void) {
  uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double urand(void) { return (double)(rng() >> 11) * 0x1p-53; }

static struct cs_sdc_part scratch[1024];
static unsigned counter;

static struct cs_sdc_result kernel(const void *buf, uint64_t nbytes, int dtype, unsigned grid, unsigned block) {
  struct cs_sdc_result res;
  memset(&res, 0, sizeof res);
  const void *b = buf;
  void *sp = scratch, *cp = &counter, *rp = &res;
  uint32_t tag = 77;
  void *params[] = {&b, &nbytes, &dtype, &sp, &cp, &rp, &tag};
  unsigned g[3] = {grid, 1, 1}, bl[3] = {block, 1, 1};
  collscope_simkernel_sdc_reduce(params, g, bl);
  CHECK(res.done == 77, "done tag not written");
  CHECK(counter == 0, "counter not reset");
  return res;
}

static uint64_t ref_fp(const unsigned char *p, uint64_t n) {
  uint64_t fp = 0;
  for (uint64_t w = 0; w * 8 < n; w++) {
    uint64_t v = 0;
    for (uint64_t i = 0; i < 8 && w * 8 + i < n; i++) v |= (uint64_t)p[w * 8 + i] << (8 * i);
    fp += cs_sdc_mix(v, w);
  }
  return fp;
}

/* The word mix must not be (close to) linear: a linear term would miss two words swapped,
 * and a bit set in one word and cleared in another. Over random words, every single-bit
 * change of the input flips about half the output bits, each output bit about half the
 * time (a weak mix, e.g. a bare multiply, leaves the low bits untouched). */
static void test_mix(void) {
  for (int i = 0; i < 20000; i++) {
    uint64_t a = rng(), b = rng(), w = rng() % 100000, u = w + 1 + rng() % 1000;
    unsigned bit = (unsigned)(rng() % 64);
    uint64_t m = 1ull << bit;
    CHECK(cs_sdc_mix(a, w) + cs_sdc_mix(b, u) != cs_sdc_mix(b, w) + cs_sdc_mix(a, u) || a == b,
          "words %llu and %llu swapped: same total", (unsigned long long)w, (unsigned long long)u);
    a |= m, b &= ~m;
    CHECK(cs_sdc_mix(a, w) + cs_sdc_mix(b, u) != cs_sdc_mix(a ^ m, w) + cs_sdc_mix(b ^ m, u),
          "bit %u moved between words: same total", bit);
  }
  enum { N = 4000 };
  static unsigned out_flips[64];
  double total = 0;
  for (int i = 0; i < N; i++) {
    uint64_t v = rng(), w = rng() % 1000000, h = cs_sdc_mix(v, w);
    unsigned bit = (unsigned)(i % 64);
    uint64_t d = h ^ cs_sdc_mix(v ^ 1ull << bit, w);
    total += __builtin_popcountll(d);
    for (int k = 0; k < 64; k++) out_flips[k] += d >> k & 1;
  }
  double mean = total / N;
  CHECK(mean > 31 && mean < 33, "mix: a one-bit input change flips %.2f output bits on average (want ~32)", mean);
  for (int k = 0; k < 64; k++) /* binomial(4000, 1/2): sd ~32 */
    CHECK(out_flips[k] > N / 2 - 200 && out_flips[k] < N / 2 + 200, "mix: output bit %d flipped %u of %d times", k,
          out_flips[k], N);
}

static void test_fingerprint(void) {
  static unsigned char buf[70000];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)rng();
  static const unsigned grids[] = {1, 2, 7, 64, 512}, blocks[] = {1, 32, 256};
  static const uint64_t lens[] = {1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 100, 4096, 65536 + 13};
  /* every address residue mod 16: 16-byte chunks with and without an unaligned first
   * word, and the 4-, 2- and 1-byte load paths of unaligned buffers */
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (unsigned off = 0; off < 16; off++) {
      uint64_t want = ref_fp(buf + off, lens[li]);
      uint64_t isum = 0;
      for (uint64_t i = 0; i < lens[li]; i++) isum += (uint64_t)(int64_t)(int8_t)buf[off + i];
      for (size_t g = 0; g < 5; g++)
        for (size_t b = 0; b < 3; b++) {
          struct cs_sdc_result r = kernel(buf + off, lens[li], CS_SDC_INT8, grids[g], blocks[b]);
          CHECK(r.fp == want, "fp len %llu off %u grid %u block %u", (unsigned long long)lens[li], off, grids[g],
                blocks[b]);
          CHECK(r.isum == isum, "isum len %llu", (unsigned long long)lens[li]);
        }
    }
  /* every single-bit flip changes the fingerprint */
  uint64_t base = kernel(buf, 4096, CS_SDC_FLOAT32, 4, 256).fp;
  for (unsigned bit = 0; bit < 4096 * 8; bit += 7) {
    buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    CHECK(kernel(buf, 4096, CS_SDC_FLOAT32, 4, 256).fp != base, "flip of bit %u not seen", bit);
    buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
  /* fp64 sums: close to a serial sum; bitwise stable for one (grid, block) */
  double *d = (double *)(void *)buf;
  for (int i = 0; i < 8000; i++) d[i] = 2 * urand() - 1;
  double s = 0, a = 0;
  for (int i = 0; i < 8000; i++) s += d[i], a += fabs(d[i]);
  struct cs_sdc_result r1 = kernel(d, 64000, CS_SDC_FLOAT64, 8, 256), r2 = kernel(d, 64000, CS_SDC_FLOAT64, 8, 256);
  CHECK(fabs(r1.sum - s) < 1e-12 * a && fabs(r1.abs - a) < 1e-12 * a, "fp64 sum %g vs %g", r1.sum, s);
  CHECK(memcmp(&r1, &r2, sizeof r1) == 0, "not deterministic");
}

/* Integer datatypes of 1 and 4 bytes are summed exactly in 64-bit integers (int8 a word
 * at a time): isum, sum and |sum| against a serial loop, for every residue and grid. */
static void test_int_sums(void) {
  static unsigned char buf[20000];
  static const int dts[] = {CS_SDC_INT8, CS_SDC_UINT8, CS_SDC_INT32, CS_SDC_UINT32};
  static const unsigned grids[] = {1, 3, 64};
  static const uint64_t nel[] = {1, 2, 3, 5, 7, 8, 9, 17, 31, 33, 1001, 4096}; /* elements */
  for (size_t di = 0; di < 4; di++) {
    int dt = dts[di];
    unsigned es = cs_sdc_dtype_size(dt);
    for (int fill = 0; fill < 3; fill++) {
      /* random bytes, all-negative extremes (0x80 / INT32_MIN), all 0xff */
      for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = fill == 0 ? (unsigned char)rng() : fill == 1 ? (i % es == es - 1 ? 0x80 : 0)
                                                              : 0xff;
      for (unsigned off = 0; off < 16; off += es)
        for (size_t ni = 0; ni < sizeof nel / sizeof nel[0]; ni++) {
          uint64_t len = nel[ni] * es;
          uint64_t isum = 0;
          double sum = 0, abs = 0;
          for (uint64_t i = 0; i < len; i += es) {
            const unsigned char *q = buf + off + i;
            int64_t v = es == 1 ? (dt == CS_SDC_INT8 ? (int8_t)q[0] : q[0])
                                : (dt == CS_SDC_INT32 ? (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 |
                                                                  (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24)
                                                      : (int64_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 |
                                                                  (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24));
            isum += (uint64_t)v;
            sum += (double)v; /* exact: every partial sum is far below 2^53 */
            abs += (double)(v < 0 ? -v : v);
          }
          for (size_t g = 0; g < 3; g++) {
            struct cs_sdc_result r = kernel(buf + off, len, dt, grids[g], 256);
            CHECK(r.isum == isum && r.sum == sum && r.abs == abs,
                  "dt %d fill %d off %u len %llu grid %u: isum %llu/%llu sum %.17g/%.17g abs %.17g/%.17g", dt, fill,
                  off, (unsigned long long)len, grids[g], (unsigned long long)r.isum, (unsigned long long)isum, r.sum,
                  sum, r.abs, abs);
          }
        }
    }
  }
}

static double fp16_value(uint32_t h) {
  uint32_t e = h >> 10 & 31, m = h & 1023;
  double v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, (int)e - 25)
                                                : ldexp(m, -24);
  return h & 0x8000 ? -v : v;
}
static double bf2d(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* every fp16 and bf16 encoding decodes exactly (NaN to NaN): alone (the partial-word
 * path) and four to a word (the whole-word path, which takes the halves differently),
 * each word's sum and |sum| against a serial fp64 sum in element order */
static void test_halves_all(void) {
  for (uint32_t h = 0; h < 0x10000; h++) {
    uint64_t w = h;
    struct cs_sdc_result r = kernel(&w, 2, CS_SDC_FLOAT16, 1, 1);
    double want = fp16_value(h);
    CHECK(isnan(want) ? isnan(r.sum) && isnan(r.abs) : r.sum == want && r.abs == fabs(want),
          "fp16 %04x: %.17g want %.17g", h, r.sum, want);
  }
  for (int bf = 0; bf < 2; bf++)
    for (uint32_t h = 0; h < 0x10000; h += 4) {
      /* a stride that spreads each word's four encodings over the whole range */
      uint32_t e[4] = {h & 0xffffu, (h * 7u + 1u) & 0xffffu, (h * 13u + 2u) & 0xffffu, (h * 31u + 3u) & 0xffffu};
      uint64_t w = 0;
      double sum = 0, abs = 0;
      for (int j = 0; j < 4; j++) {
        w |= (uint64_t)e[j] << (16 * j);
        double v = bf ? bf2d((uint16_t)e[j]) : fp16_value(e[j]);
        sum += v;
        abs += fabs(v);
      }
      struct cs_sdc_result r = kernel(&w, 8, bf ? CS_SDC_BFLOAT16 : CS_SDC_FLOAT16, 1, 1);
      CHECK((isnan(sum) ? isnan(r.sum) : r.sum == sum) && (isnan(abs) ? isnan(r.abs) : r.abs == abs),
            "%s word %016llx: sum %.17g want %.17g, abs %.17g want %.17g", bf ? "bf16" : "fp16",
            (unsigned long long)w, r.sum, sum, r.abs, abs);
    }
}

static void test_decode(void) {
  struct {
    int dt;
    uint64_t bits;
    double want;
  } v[] = {
      {CS_SDC_FLOAT16, 0x3c00, 1.0},
      {CS_SDC_FLOAT16, 0x7bff, 65504.0},
      {CS_SDC_FLOAT16, 0x0001, 0x1p-24},
      {CS_SDC_FLOAT16, 0xc000, -2.0},
      {CS_SDC_BFLOAT16, 0x3f80, 1.0},
      {CS_SDC_BFLOAT16, 0xc040, -3.0},
      {CS_SDC_INT8, 0xff, -1.0},
      {CS_SDC_UINT8, 0xff, 255.0},
      {CS_SDC_INT32, 0xfffffffe, -2.0},
      {CS_SDC_FLOAT32, 0x40490fdb, 3.1415927410125732},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    uint64_t w = v[i].bits;
    struct cs_sdc_result r = kernel(&w, cs_sdc_dtype_size(v[i].dt), v[i].dt, 1, 32);
    CHECK(r.sum == v[i].want, "decode dt %d bits %llx: %g want %g", v[i].dt, (unsigned long long)w, r.sum, v[i].want);
  }
  uint64_t inf = 0x7c00, nan = 0x7e00;
  CHECK(isinf(kernel(&inf, 2, CS_SDC_FLOAT16, 1, 1).sum), "fp16 inf");
  CHECK(isnan(kernel(&nan, 2, CS_SDC_FLOAT16, 1, 1).sum), "fp16 nan");
  /* fp8 has no sum rule (hooks/sdc_check.c launches it as -1): the kernel takes its words for
   * the fingerprint alone, as any datatype it does not decode */
  uint64_t w8[3] = {0x3c387e7f01fe80ffull, 0x0102030405060708ull, 0xfcfdfeff7b7c7d7eull};
  struct cs_sdc_result fo = kernel(w8, sizeof w8, -1, 2, 32);
  CHECK(fo.fp != 0 && fo.sum == 0 && fo.abs == 0 && fo.isum == 0, "fingerprint only: sums not 0");
  for (int dt = CS_SDC_FP8E4M3; dt <= CS_SDC_FP8E5M2 + 1; dt++) {
    struct cs_sdc_result r = kernel(w8, sizeof w8, dt, 2, 32);
    CHECK(r.fp == fo.fp && r.sum == 0 && r.abs == 0 && r.isum == 0, "dt %d: not the fingerprint alone", dt);
  }
}

static void test_rules(void) {
  struct cs_sdc_member m[4];
  struct cs_sdc_finding f[8];
  struct cs_sdc_outcome oc;
  for (int i = 0; i < 4; i++) m[i] = (struct cs_sdc_member){i, 3, 0xabc, 1.0, 1.0, 4.0};
  struct cs_sdc_instance in = {CS_OP_AllReduce, 7, 0, -1, 4, 100, 4, m};
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 0 && oc.fp_checked && oc.sum_checked, "clean");
  m[2].fp = 0xdef;
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 1 && f[0].check == CS_SDC_CHECK_FINGERPRINT && f[0].suspect == 2, "fp suspect");
  m[2].fp = 0xabc;
  for (int i = 0; i < 4; i++) m[i].out_sum = 4.5;
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 1 && f[0].check == CS_SDC_CHECK_SUM && f[0].suspect == -1, "sum");
  for (int i = 0; i < 4; i++) m[i].out_sum = INFINITY;
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 1, "inf out with small inputs is a finding");
  for (int i = 0; i < 4; i++) m[i].in_abs = 1e39;
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 0 && oc.sum_skipped_nonfinite, "possible overflow: skipped");
  for (int i = 0; i < 4; i++) m[i] = (struct cs_sdc_member){i, 3, 0xabc, NAN, NAN, 4.0};
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 0 && oc.sum_skipped_nonfinite, "nan inputs: skipped");
  /* integers: modular (int8: mod 256) */
  for (int i = 0; i < 4; i++) m[i] = (struct cs_sdc_member){i, 3, 1, 200.0, 0, 32.0}; /* 800 mod 256 = 32 */
  in.dtype = 0;
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 0, "int8 modular");
  m[0].out_sum = m[1].out_sum = m[2].out_sum = m[3].out_sum = 33.0;
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 1, "int8 off by one");
  /* two ranks disagreeing: no majority */
  in.n = in.comm_size = 2;
  m[1].fp = 2;
  m[0].out_sum = m[1].out_sum = 144.0; /* 400 mod 256 */
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 1 && f[0].suspect == -1, "no majority");
  /* ReduceScatter: sum of outputs */
  in.op = CS_OP_ReduceScatter;
  in.dtype = 8;
  in.n = in.comm_size = 2;
  m[0] = (struct cs_sdc_member){0, 3, 1, 3.0, 3.0, 2.0};
  m[1] = (struct cs_sdc_member){1, 3, 2, 1.0, 1.0, 2.0};
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 0 && oc.sum_checked, "rs clean");
  m[1].out_sum = 2.5;
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 1, "rs mismatch");
  /* a missing rank: the sum rule cannot run */
  in.n = 1;
  CHECK(cs_sdc_compare(&in, f, 8, &oc) == 0 && oc.sum_skipped_incomplete, "incomplete");
}

/* ---- 100,000 clean collectives ---- */

static uint16_t f2h(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  if (isnan(f)) return (uint16_t)(sign | 0x7e00u);
  float a = fabsf(f);
  if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00u);
  if (a < 0x1p-14f) return (uint16_t)(sign | (uint32_t)lrintf(a * 0x1p24f));
  int e;
  float m = frexpf(a, &e);
  uint32_t mant = (uint32_t)lrintf(m * 2048.0f);
  if (mant == 2048) {
    mant = 1024;
    e++;
  }
  if (e - 1 + 15 >= 31) return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | (uint32_t)(e - 1 + 15) << 10 | (mant & 0x3ffu));
}
static double h2d(uint16_t h) {
  uint64_t w = h;
  return kernel(&w, 2, CS_SDC_FLOAT16, 1, 1).sum;
}
static uint16_t f2bf(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
/* element value as double / store with rounding to the type */
static double ld(int dt, const void *p, size_t i) {
  switch (dt) {
  case 0: return ((const int8_t *)p)[i];
  case 1: return ((const uint8_t *)p)[i];
  case 2: return ((const int32_t *)p)[i];
  case 6: return h2d(((const uint16_t *)p)[i]);
  case 7: return ((const float *)p)[i];
  case 8: return ((const double *)p)[i];
  default: return bf2d(((const uint16_t *)p)[i]);
  }
}
static void st(int dt, void *p, size_t i, double v) {
  switch (dt) {
  case 0:
  case 1: ((uint8_t *)p)[i] = (uint8_t)(int64_t)v; break; /* wrapping */
  case 2: ((uint32_t *)p)[i] = (uint32_t)(int64_t)v; break;
  case 6: ((uint16_t *)p)[i] = f2h(v); break;
  case 7: ((float *)p)[i] = (float)v; break;
  case 8: ((double *)p)[i] = v; break;
  default: ((uint16_t *)p)[i] = f2bf(v); break;
  }
}
/* a OP b in the type's precision (ints: wrapping) */
static double red1(int dt, int redop, double a, double b) {
  double r = redop == 2 ? (a > b ? a : b) : a + b;
  if (dt == 7) return (float)r;
  if (dt == 6) return h2d(f2h(r));
  if (dt == 9) return bf2d(f2bf(r));
  return r;
}

static void random_fill(int dt, void *p, size_t n, int data) {
  for (size_t i = 0; i < n; i++) {
    double v = 2 * urand() - 1;
    if (data == 1) {
      double big = dt == 6 ? 16000.0 : dt == 9 || dt == 7 ? 8e37
                                   : dt == 8              ? 4e307
                                                          : 1;
      v = (v < 0 ? -1 : 1) * big * (0.5 + 0.5 * fabs(v));
    }
    if (data == 2 && dt >= 6 && rng() % 32 == 0) {
      static const double sp[] = {-0.0, NAN, INFINITY, -INFINITY, 1e-40, 5e-8};
      v = sp[rng() % 6];
    }
    if (dt <= 2) v = (double)(int64_t)(dt == 2 ? (int32_t)rng() : (int8_t)rng());
    if (dt == 1) v = (double)(uint8_t)rng();
    st(dt, p, i, v);
  }
}

static void test_clean(long total) {
  static const int dts[] = {7, 6, 9, 8, 2, 0, 1};
  size_t es_of[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  long findings = 0, sum_checked = 0, fp_checked = 0, nonfinite = 0;
  enum { MAXN = 8,
         MAXC = 512 };
  static unsigned char in[MAXN][MAXN * MAXC * 8], out[MAXN][MAXN * MAXC * 8];
  static double acc[MAXN * MAXC];
  for (long it = 0; it < total; it++) {
    int n = 2 + (int)(rng() % 7), dt = dts[rng() % 7], op = (int)(rng() % 5);
    int redop = (int)(rng() % 3); /* 0 sum, 1 avg -> 4, 2 max */
    redop = redop == 1 ? 4 : redop;
    if (dt <= 2 && redop == 4) redop = 0;
    int data = (int)(rng() % 3), root = (int)(rng() % (unsigned)n);
    size_t count = 1 + rng() % MAXC, es = es_of[dt];
    size_t in_count = op == CS_OP_ReduceScatter ? count * (size_t)n : count;
    for (int r = 0; r < n; r++) random_fill(dt, in[r], in_count, data);
    /* reduce: ring order starting at a rotating rank, rounding per hop */
    if (op == CS_OP_AllReduce || op == CS_OP_Reduce || op == CS_OP_ReduceScatter) {
      for (size_t e = 0; e < in_count; e++) {
        int start = (int)((e / 64) % (size_t)n);
        double a = ld(dt, in[start], e);
        for (int k = 1; k < n; k++) {
          double b = ld(dt, in[(start + k) % n], e);
          a = dt <= 2 ? a + b : red1(dt, redop == 2 ? 2 : 0, a, b);
          if (dt <= 2) { /* wrap like the integer type */
            unsigned char tmp[8];
            st(dt, tmp, 0, a);
            a = ld(dt, tmp, 0);
          }
        }
        if (redop == 4) a = red1(dt, 0, a / n, 0);
        acc[e] = a;
      }
    }
    for (int r = 0; r < n; r++) {
      switch (op) {
      case CS_OP_AllReduce:
        for (size_t e = 0; e < count; e++) st(dt, out[r], e, acc[e]);
        break;
      case CS_OP_Reduce:
        if (r == root)
          for (size_t e = 0; e < count; e++) st(dt, out[r], e, acc[e]);
        break;
      case CS_OP_ReduceScatter:
        for (size_t e = 0; e < count; e++) st(dt, out[r], e, acc[(size_t)r * count + e]);
        break;
      case CS_OP_Broadcast: memcpy(out[r], in[root], count * es); break;
      default:
        for (int q = 0; q < n; q++) memcpy(out[r] + (size_t)q * count * es, in[q], count * es);
        break;
      }
    }
    struct cs_sdc_member m[MAXN];
    size_t out_bytes = (op == CS_OP_AllGather ? count * (size_t)n : count) * es;
    for (int r = 0; r < n; r++) {
      m[r] = (struct cs_sdc_member){r, 0, 0, NAN, NAN, NAN};
      bool has_in = op != CS_OP_Broadcast || r == root, has_out = op != CS_OP_Reduce || r == root;
      unsigned g = 1 + (unsigned)(rng() % 4);
      if (has_in) {
        struct cs_sdc_result x = kernel(in[r], in_count * es, dt, g, 256);
        m[r].in_sum = dt <= 2 ? (double)(x.isum & (dt == 2 ? 0xffffffffull : 0xffull)) : x.sum;
        m[r].in_abs = x.abs;
        m[r].checked |= 2;
      }
      if (has_out) {
        struct cs_sdc_result x = kernel(out[r], out_bytes, dt, g, 256);
        m[r].fp = x.fp;
        m[r].out_sum = dt <= 2 ? (double)(x.isum & (dt == 2 ? 0xffffffffull : 0xffull)) : x.sum;
        m[r].checked |= 1;
      }
      /* the writer prints non-finite sums as null, which readers load as NAN */
      if (!isfinite(m[r].in_sum)) m[r].in_sum = NAN;
      if (!isfinite(m[r].in_abs)) m[r].in_abs = NAN;
      if (!isfinite(m[r].out_sum)) m[r].out_sum = NAN;
    }
    struct cs_sdc_instance si = {op, dt, redop, root, n, count, (size_t)n, m};
    struct cs_sdc_finding f[16];
    struct cs_sdc_outcome oc;
    size_t nf = cs_sdc_compare(&si, f, 16, &oc);
    if (nf) {
      findings++;
      if (findings < 5)
        fprintf(stderr, "false positive: it %ld op %d dt %d redop %d n %d count %zu data %d: check %d got %.17g want %.17g tol %g\n",
                it, op, dt, redop, n, count, data, f[0].check, f[0].got, f[0].want, f[0].tol);
    }
    sum_checked += oc.sum_checked;
    fp_checked += oc.fp_checked;
    nonfinite += oc.sum_skipped_nonfinite;
  }
  printf("clean randomised collectives: %ld, fingerprint rule ran %ld, sum rule ran %ld, sum skipped (NaN/Inf or "
         "possible overflow) %ld, findings %ld\n",
         total, fp_checked, sum_checked, nonfinite, findings);
  CHECK(findings == 0, "%ld false positives", findings);
}

int main(int argc, char **argv) {
  long total = argc > 1 ? atol(argv[1]) : 100000;
  test_mix();
  test_fingerprint();
  test_int_sums();
  test_halves_all();
  test_decode();
  test_rules();
  test_clean(total);
  printf("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
