/* hooks/sdc_kernels.cu: the silent-data-corruption check kernel, ONE source for two
 * compilers:
 *  - nvcc (meson custom_target, see shim/meson.build) builds it into a fatbin (sm_80,
 *    sm_90 + PTX) that hooks/sdc_check.c loads with cuModuleLoadData and launches on the
 *    collective's stream;
 *  - the C compiler builds it (through hooks/sdc_kernels_host.c) into the host twin
 *    collscope_simkernel_sdc_reduce(), which the simulator's cuLaunchKernel runs.
 * The kernel is written as phases over "all threads of a block" (CS_THREADS ... CS_SYNC):
 * on the GPU a phase is the body of every thread followed by __syncthreads(), on the host
 * a loop over the block's threads. The arithmetic (including the fp64 tree reductions and
 * the last block's sum over the block partials) is identical, so for the same grid and block the
 * GPU and the host produce the same bits (no FMA contraction: nvcc -fmad=false and
 * -ffp-contract=off on the host).
 *
 * One launch reads `nbytes` bytes at `buf` and produces, in the pinned host slot `res`:
 *  fp   = sum over 8-byte words w (little endian, the last one zero padded) of
 *         cs_sdc_mix(w, word index), wrapping: order independent, so any split agrees;
 *  sum  = fp64 sum of the elements decoded per datatype (NaN/Inf propagate), 0 for
 *         dtype -1 (the fingerprint only);
 *  abs  = fp64 sum of |elements|;
 *  isum = wrapping 64-bit sum of integer elements (sign-extended), 0 for floats;
 * then sets res->done = tag (after a system fence). Per-block partials go to `scratch`;
 * the last block to finish (atomic ticket in *counter) adds them (each thread a strided
 * share, then the block's tree) and resets *counter to 0 for the next launch.
 *
 * Memory access (the kernel is bandwidth-bound on the GPU): when buf is 8-byte aligned,
 * the body is read in 16-byte aligned chunks (two words each), four chunks in flight per
 * thread, grid-stride; the unaligned first word (buf % 16 == 8), the last whole word and
 * the zero-padded partial word are thread 0's. A buffer that is not 8-byte aligned is
 * read word by word with the widest aligned loads its address allows (4, 2 or 1 bytes).
 * Every thread accumulates in registers; integer datatypes of 1 and 4 bytes are summed
 * exactly in 64-bit integers (no fp64 conversion per element; 1-byte ones four at a time
 * with dp4a, which the host twin emulates). The host twin's loads trap on a misaligned
 * address, as the GPU's would fault, so the simulator catches one. hooks/sdc_check.c runs this
 * kernel against its host twin at set-up on every context (the self-test). */
#include "sdc_kernel_defs.h"

#ifdef __CUDACC__
#define CS_KDEV static __device__ __forceinline__
#define CS_KSHARED __shared__
#define CS_THREADS(t) { const unsigned t = threadIdx.x; {
#define CS_SYNC } } __syncthreads();
#define CS_FENCE() __threadfence()
#define CS_FENCE_SYSTEM() __threadfence_system()
#define CS_TICKET(p) atomicAdd((p), 1u)
#define CS_FABS(d) fabs(d)
#define CS_UNROLL _Pragma("unroll")
/* c + the four byte products of a and b (dp4a: signed bytes, or unsigned) */
#define CS_DP4A_S(a, b, c) __dp4a((int)(a), (int)(b), (int)(c))
#define CS_DP4A_U(a, b, c) ((uint32_t)__dp4a((unsigned)(a), (unsigned)(b), (unsigned)(c)))
#define CS_LOAD128(p, lo, hi)                                        \
  do {                                                               \
    ulonglong2 q_ = __ldg((const ulonglong2 *)(p));                  \
    (lo) = q_.x;                                                     \
    (hi) = q_.y;                                                     \
  } while (0)
#define CS_LOAD64(p) ((uint64_t)__ldg((const unsigned long long *)(p)))
#define CS_LOAD32(p) ((uint32_t)__ldg((const unsigned int *)(p)))
#define CS_LOAD16(p) ((uint32_t)__ldg((const unsigned short *)(p)))
/* fp16 -> fp32: exact (cvt.f32.f16) */
CS_KDEV float half_to_float(uint32_t h) {
  float f;
  unsigned short hs = (unsigned short)h;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(hs));
  return f;
}
/* both fp16 halves of x (low one first) -> fp32, exact; the halves are taken as the
 * conversion's operands (no shift or mask) */
CS_KDEV void half2_to_float2(uint32_t x, float *f0, float *f1) {
  asm("{ .reg .f16 l, h;\n\t mov.b32 {l, h}, %2;\n\t cvt.f32.f16 %0, l;\n\t cvt.f32.f16 %1, h; }"
      : "=f"(*f0), "=f"(*f1) : "r"(x));
}
#else
#define CS_KDEV static inline __attribute__((always_inline))
#define CS_KSHARED
#define CS_THREADS(t) for (unsigned t = 0; t < cs_nt; t++) {
#define CS_SYNC }
#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer does not model fences (gcc refuses them under -Werror): a seq_cst
 * read-modify-write is a full barrier too */
static int cs_fence_word;
#define CS_FENCE() ((void)__atomic_fetch_add(&cs_fence_word, 0, __ATOMIC_SEQ_CST))
#else
#define CS_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif
#define CS_FENCE_SYSTEM() CS_FENCE()
#define CS_TICKET(p) __atomic_fetch_add((p), 1u, __ATOMIC_ACQ_REL)
#include <string.h>
#define CS_FABS(d) __builtin_fabs(d)
#define CS_UNROLL _Pragma("GCC unroll 4")
/* dp4a's arithmetic: 32-bit, wrapping */
static inline int32_t cs_dp4a_s(uint32_t a, uint32_t b, int32_t c) {
  uint32_t r = (uint32_t)c;
  for (int i = 0; i < 32; i += 8) r += (uint32_t)((int32_t)(int8_t)(uint8_t)(a >> i) * (int32_t)(int8_t)(uint8_t)(b >> i));
  return (int32_t)r;
}
static inline uint32_t cs_dp4a_u(uint32_t a, uint32_t b, uint32_t c) {
  for (int i = 0; i < 32; i += 8) c += (a >> i & 0xffu) * (b >> i & 0xffu);
  return c;
}
#define CS_DP4A_S(a, b, c) cs_dp4a_s((a), (b), (c))
#define CS_DP4A_U(a, b, c) cs_dp4a_u((a), (b), (c))
/* the GPU faults on a misaligned load (and kills the job's context): so does the twin */
#define CS_HOST_LOAD(p, n, v)                            \
  do {                                                   \
    if ((uintptr_t)(p) & ((n) - 1)) __builtin_trap();    \
    memcpy(&(v), (p), (n));                              \
  } while (0)
#define CS_LOAD128(p, lo, hi)                            \
  do {                                                   \
    uint64_t q_[2];                                      \
    CS_HOST_LOAD(p, 16, q_);                             \
    (lo) = q_[0];                                        \
    (hi) = q_[1];                                        \
  } while (0)
static inline uint64_t cs_load64_host(const unsigned char *p) { uint64_t v; CS_HOST_LOAD(p, 8, v); return v; }
static inline uint32_t cs_load32_host(const unsigned char *p) { uint32_t v; CS_HOST_LOAD(p, 4, v); return v; }
static inline uint32_t cs_load16_host(const unsigned char *p) { uint16_t v; CS_HOST_LOAD(p, 2, v); return v; }
#define CS_LOAD64(p) cs_load64_host(p)
#define CS_LOAD32(p) cs_load32_host(p)
#define CS_LOAD16(p) cs_load16_host(p)
/* fp16 -> fp32, exact (every fp16 value is a float); NaN stays NaN */
static inline float half_to_float(uint32_t h) {
  uint32_t sign = (h & 0x8000u) << 16, e = h >> 10 & 0x1fu, m = h & 0x3ffu, bits;
  float f;
  if (e == 0) {
    f = (float)m * 0x1p-24f;   /* zero and subnormals: exact */
    memcpy(&bits, &f, 4);
    bits |= sign;
  } else if (e == 31) {
    bits = sign | 0x7f800000u | m << 13;
  } else {
    bits = sign | (e + 112) << 23 | m << 13;
  }
  memcpy(&f, &bits, 4);
  return f;
}
static inline void half2_to_float2(uint32_t x, float *f0, float *f1) {
  *f0 = half_to_float(x & 0xffffu);
  *f1 = half_to_float(x >> 16);
}
#endif

CS_KDEV void part_zero(struct cs_sdc_part *p) {
  p->fp = 0;
  p->isum = 0;
  p->sum = 0.0;
  p->abs = 0.0;
}

CS_KDEV void part_add(struct cs_sdc_part *a, const struct cs_sdc_part *b) {
  a->fp += b->fp;
  a->isum += b->isum;
  a->sum = a->sum + b->sum;
  a->abs = a->abs + b->abs;
}

CS_KDEV double bits_to_f64(uint64_t v) {
  union { uint64_t u; double d; } x;
  x.u = v;
  return x.d;
}
CS_KDEV double bits_to_f32(uint32_t v) {
  union { uint32_t u; float f; } x;
  x.u = v;
  return (double)x.f;
}
/* One thread's running totals, in registers. Integer datatypes of 1 and 4 bytes keep
 * exact 64-bit sums (isum, iabs) and convert once at the end; the other datatypes add
 * each element to the fp64 sums. */
struct cs_sdc_acc {
  uint64_t fp, isum, iabs;   /* iabs: signed integer datatypes only (unsigned: = isum) */
  uint32_t ineg;             /* int32: negative elements, added zero-extended to isum */
  double sum, abs;
};

CS_KDEV int int_exact(int dt) {
  return dt == CS_SDC_INT8 || dt == CS_SDC_UINT8 || dt == CS_SDC_INT32 || dt == CS_SDC_UINT32;
}

/* fabs, not (d < 0 ? -d : d): the GPU folds it into the add as an operand modifier, and
 * the two differ only for -0.0 (which adds nothing) and a NaN's sign */
CS_KDEV void acc_double(struct cs_sdc_acc *a, double d) {
  a->sum = a->sum + d;
  a->abs = a->abs + CS_FABS(d);
}

/* one element (its bits in the low es bytes of v) */
CS_KDEV void acc_elem(struct cs_sdc_acc *a, int dtype, uint64_t v) {
  switch (dtype) {
  case CS_SDC_INT8: { int64_t s = (int8_t)(uint8_t)v; a->isum += (uint64_t)s; a->iabs += (uint64_t)(s < 0 ? -s : s); break; }
  case CS_SDC_UINT8: a->isum += v & 0xff; break;
  case CS_SDC_INT32: {
    /* zero-extended, the negative ones counted: a sign-extended sum is the zero-extended
     * one - 2^32 x that count, mod 2^64 (thread_share subtracts it); |x| in 32 bits
     * (|INT32_MIN| = 2^31 fits unsigned) */
    uint32_t x = (uint32_t)v;
    a->isum += x;
    a->ineg += x >> 31;
    a->iabs += x >> 31 ? 0u - x : x;
    break;
  }
  case CS_SDC_UINT32: a->isum += v & 0xffffffffu; break;
  case CS_SDC_INT64: a->isum += v; acc_double(a, (double)(int64_t)v); break;
  case CS_SDC_UINT64: a->isum += v; acc_double(a, (double)v); break;
  case CS_SDC_FLOAT16: acc_double(a, (double)half_to_float((uint32_t)v & 0xffffu)); break;
  case CS_SDC_FLOAT32: acc_double(a, bits_to_f32((uint32_t)v)); break;
  case CS_SDC_FLOAT64: acc_double(a, bits_to_f64(v)); break;
  case CS_SDC_BFLOAT16: acc_double(a, bits_to_f32(((uint32_t)v & 0xffffu) << 16)); break;
  default: break;
  }
}

/* the elements in the first `bytes` (<= 8) bytes of word v, in order */
CS_KDEV void acc_elems(struct cs_sdc_acc *a, int dtype, uint64_t v, uint64_t bytes) {
  unsigned es = cs_sdc_dtype_size(dtype);
  if (!es) return;
  for (unsigned j = 0; j < 8 / es && (uint64_t)j * es < bytes; j++)
    acc_elem(a, dtype, es == 8 ? v : v >> (j * es * 8) & ((1ull << (es * 8)) - 1));
}

/* |b| of each signed byte of x as a dp4a multiplier: 1, or -1 (0xff) where b < 0 */
CS_KDEV uint32_t byte_signs(uint32_t x) { return 0x01010101u | (x >> 7 & 0x01010101u) * 0xfeu; }

/* a whole word: its fingerprint term (key = (index + 1) * golden) and its elements */
CS_KDEV void acc_word(struct cs_sdc_acc *a, int dtype, uint64_t v, uint64_t key) {
  a->fp += cs_sdc_mix_key(v, key);
  if (dtype == CS_SDC_UINT8 || dtype == CS_SDC_INT8) {
    /* the word's 8 bytes by two dp4a each: sum (x . 1) and, signed, |sum| (x . sign(x));
     * at most 8 x 255 in magnitude, so 32 bits are exact */
    uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    if (dtype == CS_SDC_UINT8) {
      a->isum += CS_DP4A_U(hi, 0x01010101u, CS_DP4A_U(lo, 0x01010101u, 0u));
    } else {
      int32_t s = CS_DP4A_S(hi, 0x01010101u, CS_DP4A_S(lo, 0x01010101u, 0));
      int32_t m = CS_DP4A_S(hi, byte_signs(hi), CS_DP4A_S(lo, byte_signs(lo), 0));
      a->isum += (uint64_t)(int64_t)s;
      a->iabs += (uint64_t)m;
    }
  } else if (dtype == CS_SDC_BFLOAT16 || dtype == CS_SDC_FLOAT16) {
    /* the four halves from the word's two 32-bit halves (one operation each, in element
     * order, so the sums are those of the element loop) */
    uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    if (dtype == CS_SDC_BFLOAT16) {
      acc_double(a, bits_to_f32(lo << 16));
      acc_double(a, bits_to_f32(lo & 0xffff0000u));
      acc_double(a, bits_to_f32(hi << 16));
      acc_double(a, bits_to_f32(hi & 0xffff0000u));
    } else {
      float f0, f1, f2, f3;
      half2_to_float2(lo, &f0, &f1);
      half2_to_float2(hi, &f2, &f3);
      acc_double(a, (double)f0);
      acc_double(a, (double)f1);
      acc_double(a, (double)f2);
      acc_double(a, (double)f3);
    }
  } else {
    acc_elems(a, dtype, v, 8);
  }
}

/* the last, partial word: `left` (< 8) bytes, zero padded; whole elements only */
CS_KDEV void acc_partial_word(struct cs_sdc_acc *a, int dtype, uint64_t v, uint64_t key, uint64_t left) {
  a->fp += cs_sdc_mix_key(v, key);
  acc_elems(a, dtype, v, left);
}

/* word w of the buffer (little endian, zero padded past nbytes) with loads of `grain` =
 * 4, 2 or 1 bytes: the words of a buffer that is not 8-byte aligned (the widest loads
 * its address allows), and any buffer's partial last word (grain 1) */
CS_KDEV uint64_t load_word_narrow(const unsigned char *buf, uint64_t nbytes, unsigned grain, uint64_t w) {
  const unsigned char *q = buf + w * 8;
  uint64_t n = nbytes - w * 8 < 8 ? nbytes - w * 8 : 8, v = 0;
  if (n == 8 && grain == 4) return (uint64_t)CS_LOAD32(q) | (uint64_t)CS_LOAD32(q + 4) << 32;
  if (n == 8 && grain == 2)
    return (uint64_t)CS_LOAD16(q) | (uint64_t)CS_LOAD16(q + 2) << 16 | (uint64_t)CS_LOAD16(q + 4) << 32 |
           (uint64_t)CS_LOAD16(q + 6) << 48;
  for (uint64_t i = 0; i < n; i++) v |= (uint64_t)q[i] << (8 * i);
  return v;
}

/* one thread's share, for a datatype known at compile time (the caller's switch) */
CS_KDEV struct cs_sdc_part thread_share(const unsigned char *buf, uint64_t nbytes, int dtype, uint64_t gtid,
                                        uint64_t stride) {
  struct cs_sdc_acc a = {0, 0, 0, 0, 0.0, 0.0};
  uint64_t nfull = nbytes / 8, left = nbytes % 8;
  if ((uintptr_t)buf & 7u) {
    /* not 8-byte aligned: word by word, grid-stride */
    unsigned grain = ((uintptr_t)buf & 3u) == 0 ? 4u : ((uintptr_t)buf & 1u) == 0 ? 2u : 1u;
    for (uint64_t w = gtid; w < nfull; w += stride)
      acc_word(&a, dtype, load_word_narrow(buf, nbytes, grain, w), (w + 1) * CS_SDC_GOLDEN);
  } else {
    /* words [head, head + 2 * nchunks) in 16-byte aligned chunks; chunk c holds words
     * head + 2c and head + 2c + 1 */
    uint64_t head = ((uintptr_t)buf & 15u) && nfull ? 1 : 0;
    uint64_t nchunks = (nfull - head) / 2;
    const unsigned char *body = buf + 8 * head;
    uint64_t c = gtid;
    /* key of word head + 2c: (head + 2c + 1) * golden; the loop adds 2 * stride * golden
     * per step instead of multiplying */
    uint64_t key = (head + 2 * c + 1) * CS_SDC_GOLDEN, kstep = 2 * stride * CS_SDC_GOLDEN;
    for (; c + 3 * stride < nchunks; c += 4 * stride) {
      uint64_t x[4], y[4];   /* all four loads issued before their words are used */
      CS_UNROLL for (int k = 0; k < 4; k++) CS_LOAD128(body + 16 * (c + k * stride), x[k], y[k]);
      CS_UNROLL for (int k = 0; k < 4; k++) {
        acc_word(&a, dtype, x[k], key);
        acc_word(&a, dtype, y[k], key + CS_SDC_GOLDEN);
        key += kstep;
      }
    }
    for (; c < nchunks; c += stride) {
      uint64_t x, y;
      CS_LOAD128(body + 16 * c, x, y);
      acc_word(&a, dtype, x, key);
      acc_word(&a, dtype, y, key + CS_SDC_GOLDEN);
      key += kstep;
    }
    if (gtid == 0) {
      /* the whole words outside the chunks: the first (unaligned), the last one */
      if (head) acc_word(&a, dtype, CS_LOAD64(buf), CS_SDC_GOLDEN);
      for (uint64_t w = head + 2 * nchunks; w < nfull; w++)
        acc_word(&a, dtype, CS_LOAD64(buf + 8 * w), (w + 1) * CS_SDC_GOLDEN);
    }
  }
  if (gtid == 0 && left)   /* the zero-padded partial word */
    acc_partial_word(&a, dtype, load_word_narrow(buf, nbytes, 1, nfull), (nfull + 1) * CS_SDC_GOLDEN, left);
  struct cs_sdc_part p;
  p.fp = a.fp;
  p.isum = a.isum - ((uint64_t)a.ineg << 32);   /* mod 2^64: a wrapped ineg is the same */
  if (int_exact(dtype)) {
    int sgn = dtype == CS_SDC_INT8 || dtype == CS_SDC_INT32;
    p.sum = sgn ? (double)(int64_t)p.isum : (double)p.isum;
    p.abs = sgn ? (double)a.iabs : p.sum;
  } else {
    p.sum = a.sum;
    p.abs = a.abs;
  }
  return p;
}

/* one copy of the loop per datatype, so the decoding is resolved at compile time */
#define CS_SDC_CASE(dt) case dt: return thread_share(buf, nbytes, dt, gtid, stride);
CS_KDEV struct cs_sdc_part thread_partial(const unsigned char *buf, uint64_t nbytes, int dtype, uint64_t gtid,
                                          uint64_t stride) {
  switch (dtype) {
    CS_SDC_CASE(CS_SDC_INT8) CS_SDC_CASE(CS_SDC_UINT8) CS_SDC_CASE(CS_SDC_INT32) CS_SDC_CASE(CS_SDC_UINT32)
    CS_SDC_CASE(CS_SDC_INT64) CS_SDC_CASE(CS_SDC_UINT64) CS_SDC_CASE(CS_SDC_FLOAT16) CS_SDC_CASE(CS_SDC_FLOAT32)
    CS_SDC_CASE(CS_SDC_FLOAT64) CS_SDC_CASE(CS_SDC_BFLOAT16)
  default:   /* -1: what hooks/sdc_check.c launches for fp8, which has no sum rule */
    return thread_share(buf, nbytes, -1, gtid, stride);
  }
}

/* sh[0] = sh[0] + ... + sh[nt - 1], as a tree (nt a power of two) */
#define CS_BLOCK_TREE(sh)                                  \
  for (unsigned s_ = cs_nt / 2; s_ > 0; s_ >>= 1) {        \
    CS_THREADS(t)                                          \
      if (t < s_) part_add(&(sh)[t], &(sh)[t + s_]);       \
    CS_SYNC                                                \
  }

/* The body of one block. */
CS_KDEV void sdc_reduce_block(unsigned cs_b, unsigned cs_nb, unsigned cs_nt, const unsigned char *buf,
                              uint64_t nbytes, int dtype, struct cs_sdc_part *scratch, unsigned *counter,
                              struct cs_sdc_result *res, uint32_t tag) {
  CS_KSHARED struct cs_sdc_part sh[CS_SDC_THREADS];
  CS_KSHARED unsigned last;
  CS_THREADS(t)
    sh[t] = thread_partial(buf, nbytes, dtype, (uint64_t)cs_b * cs_nt + t, (uint64_t)cs_nb * cs_nt);
  CS_SYNC
  CS_BLOCK_TREE(sh)
  CS_THREADS(t)
    if (t == 0) {
      scratch[cs_b] = sh[0];
      CS_FENCE();
      last = CS_TICKET(counter) == cs_nb - 1;
    }
  CS_SYNC
  if (!last) return;   /* block-uniform (shared) */
  /* the last block: every thread adds partials t, t + nt, ... (in that order), then the tree */
  CS_THREADS(t)
    CS_FENCE();
    struct cs_sdc_part x;
    part_zero(&x);
    for (unsigned i = t; i < cs_nb; i += cs_nt) {
      struct cs_sdc_part y;
      const volatile struct cs_sdc_part *src = &scratch[i];
      y.fp = src->fp;
      y.isum = src->isum;
      y.sum = src->sum;
      y.abs = src->abs;
      part_add(&x, &y);
    }
    sh[t] = x;
  CS_SYNC
  CS_BLOCK_TREE(sh)
  CS_THREADS(t)
    if (t == 0) {
      res->fp = sh[0].fp;
      res->isum = sh[0].isum;
      res->sum = sh[0].sum;
      res->abs = sh[0].abs;
      *counter = 0;
      CS_FENCE_SYSTEM();
      *(volatile uint32_t *)&res->done = tag;
    }
  CS_SYNC
}

#ifdef __CUDACC__
extern "C" __global__ void __launch_bounds__(CS_SDC_THREADS, CS_SDC_BLOCKS_PER_SM)
sdc_reduce(const unsigned char *buf, uint64_t nbytes, int dtype, struct cs_sdc_part *scratch,
           unsigned *counter, struct cs_sdc_result *res, uint32_t tag) {
  sdc_reduce_block(blockIdx.x, gridDim.x, blockDim.x, buf, nbytes, dtype, scratch, counter, res, tag);
}
#else
/* Host twin, run by the simulator's cuLaunchKernel (params: one pointer per argument). */
__attribute__((visibility("default"))) void collscope_simkernel_sdc_reduce(void **params, const unsigned grid[3],
                                                                          const unsigned block[3]);
__attribute__((visibility("default"))) extern const size_t collscope_simkernel_sdc_reduce_argsizes[];
const size_t collscope_simkernel_sdc_reduce_argsizes[] = {
    sizeof(void *), sizeof(uint64_t), sizeof(int), sizeof(void *), sizeof(void *), sizeof(void *),
    sizeof(uint32_t), 0};
void collscope_simkernel_sdc_reduce(void **params, const unsigned grid[3], const unsigned block[3]) {
  const unsigned char *buf = *(const unsigned char *const *)params[0];
  uint64_t nbytes = *(const uint64_t *)params[1];
  int dtype = *(const int *)params[2];
  struct cs_sdc_part *scratch = *(struct cs_sdc_part *const *)params[3];
  unsigned *counter = *(unsigned *const *)params[4];
  struct cs_sdc_result *res = *(struct cs_sdc_result *const *)params[5];
  uint32_t tag = *(const uint32_t *)params[6];
  unsigned nt = block[0] > CS_SDC_THREADS ? CS_SDC_THREADS : block[0];
  for (unsigned b = 0; b < grid[0]; b++)
    sdc_reduce_block(b, grid[0], nt, buf, nbytes, dtype, scratch, counter, res, tag);
}
#endif
