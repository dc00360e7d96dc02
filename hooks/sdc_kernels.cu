/* hooks/sdc_kernels.cu: the silent-data-corruption check kernel, ONE source for two
 * compilers:
 *  - nvcc (meson custom_target, see shim/meson.build) builds it into a fatbin (sm_80,
 *    sm_90 + PTX) that hooks/sdc.c loads with cuModuleLoadData and launches on the
 *    collective's stream;
 *  - the C compiler builds it (through hooks/sdc_kernels_host.c) into the host twin
 *    collscope_simkernel_sdc_reduce(), which the simulator's cuLaunchKernel runs.
 * The kernel is written as phases over "all threads of a block" (CS_THREADS ... CS_SYNC):
 * on the GPU a phase is the body of every thread followed by __syncthreads(), on the host
 * a loop over the block's threads. The arithmetic (including the fp64 tree reduction and
 * the final in-order sum over blocks) is identical, so for the same grid and block the
 * GPU and the host produce the same bits (no FMA contraction: nvcc -fmad=false and
 * -ffp-contract=off on the host).
 *
 * One launch reads `nbytes` bytes at `buf` and produces, in the pinned host slot `res`:
 *  fp   = sum over 8-byte words w (little endian, the last one zero padded) of
 *         cs_sdc_mix(w, word index), wrapping: order independent, so any split agrees;
 *  sum  = fp64 sum of the elements decoded per datatype (NaN/Inf propagate);
 *  abs  = fp64 sum of |elements|;
 *  isum = wrapping 64-bit sum of integer elements (sign-extended), 0 for floats;
 * then sets res->done = tag (after a system fence). Per-block partials go to `scratch`;
 * the last block to finish (atomic ticket in *counter) adds them in block order and
 * resets *counter to 0 for the next launch. */
#include "sdc_kernel_defs.h"

#ifdef __CUDACC__
#define CS_KDEV static __device__ __forceinline__
#define CS_KSHARED __shared__
#define CS_THREADS(t) { const unsigned t = threadIdx.x; {
#define CS_SYNC } } __syncthreads();
#define CS_FENCE() __threadfence()
#define CS_FENCE_SYSTEM() __threadfence_system()
#define CS_TICKET(p) atomicAdd((p), 1u)
#define CS_LOAD64(p) (*(const volatile uint64_t *)(p))
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
#define CS_LOAD64(p) cs_load64_host(p)
#include <string.h>
static inline uint64_t cs_load64_host(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
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
/* A small float (sign, E exponent bits, M mantissa bits, IEEE-like) -> double. e4m3 has
 * no infinity and only S.1111.111 as NaN (handled by the caller). */
CS_KDEV double small_float(uint32_t v, int ebits, int mbits, int bias) {
  uint32_t sign = v >> (ebits + mbits) & 1u;
  uint32_t e = v >> mbits & ((1u << ebits) - 1u);
  uint32_t m = v & ((1u << mbits) - 1u);
  double r;
  if (e == 0) {
    r = (double)m * bits_to_f64((uint64_t)(1023 + 1 - bias - mbits) << 52); /* m * 2^(1-bias-mbits) */
  } else {
    /* (1 + m/2^mbits) * 2^(e-bias), built directly as a double */
    r = bits_to_f64((uint64_t)(1023 + (int)e - bias) << 52 | (uint64_t)m << (52 - mbits));
  }
  return sign ? -r : r;
}

CS_KDEV void add_elem(struct cs_sdc_part *p, int dtype, uint64_t v) {
  double d;
  switch (dtype) {
  case CS_SDC_INT8: { int64_t s = (int8_t)(uint8_t)v; p->isum += (uint64_t)s; d = (double)s; break; }
  case CS_SDC_UINT8: p->isum += v & 0xff; d = (double)(v & 0xff); break;
  case CS_SDC_INT32: { int64_t s = (int32_t)(uint32_t)v; p->isum += (uint64_t)s; d = (double)s; break; }
  case CS_SDC_UINT32: p->isum += v & 0xffffffffu; d = (double)(v & 0xffffffffu); break;
  case CS_SDC_INT64: p->isum += v; d = (double)(int64_t)v; break;
  case CS_SDC_UINT64: p->isum += v; d = (double)v; break;
  case CS_SDC_FLOAT16: {
    uint32_t h = (uint32_t)v & 0xffffu;
    if ((h & 0x7c00u) == 0x7c00u) d = (h & 0x3ffu) ? bits_to_f64(0x7ff8000000000000ull)
                                                 : ((h & 0x8000u) ? -1.0 / 0.0 : 1.0 / 0.0);
    else d = small_float(h, 5, 10, 15);
    break;
  }
  case CS_SDC_FLOAT32: d = bits_to_f32((uint32_t)v); break;
  case CS_SDC_FLOAT64: d = bits_to_f64(v); break;
  case CS_SDC_BFLOAT16: d = bits_to_f32(((uint32_t)v & 0xffffu) << 16); break;
  case CS_SDC_FP8E4M3: {
    uint32_t b = (uint32_t)v & 0xffu;
    d = ((b & 0x7fu) == 0x7fu) ? bits_to_f64(0x7ff8000000000000ull) : small_float(b, 4, 3, 7);
    break;
  }
  case CS_SDC_FP8E5M2: {
    uint32_t b = (uint32_t)v & 0xffu;
    if ((b & 0x7cu) == 0x7cu) d = (b & 3u) ? bits_to_f64(0x7ff8000000000000ull)
                                          : ((b & 0x80u) ? -1.0 / 0.0 : 1.0 / 0.0);
    else d = small_float(b, 5, 2, 15);
    break;
  }
  default: d = 0.0; break;
  }
  p->sum = p->sum + d;
  p->abs = p->abs + (d < 0 ? -d : d);
}

/* word w of the buffer, little endian, zero padded past nbytes */
CS_KDEV uint64_t load_word(const unsigned char *buf, uint64_t nbytes, int aligned, uint64_t w) {
  const unsigned char *q = buf + w * 8;
  if (aligned && w * 8 + 8 <= nbytes) return CS_LOAD64(q);
  uint64_t v = 0, n = nbytes - w * 8 < 8 ? nbytes - w * 8 : 8;
  for (uint64_t i = 0; i < n; i++) v |= (uint64_t)q[i] << (8 * i);
  return v;
}

CS_KDEV void add_word(struct cs_sdc_part *p, uint64_t v, uint64_t w, uint64_t nbytes, int dtype, unsigned es) {
  p->fp += cs_sdc_mix(v, w);
  if (!es) return;
  uint64_t left = nbytes - w * 8;
  unsigned per = 8 / es;
  for (unsigned j = 0; j < per && (uint64_t)j * es < left; j++)
    add_elem(p, dtype, es == 8 ? v : (v >> (j * es * 8)) & ((1ull << (es * 8)) - 1));
}

/* One thread's share: words gtid, gtid + stride, ... in this order. Four loads are
 * issued before their words are used, so enough bytes are in flight to cover the
 * memory latency (the order of the additions is unchanged). */
CS_KDEV void partial_loop(struct cs_sdc_part *p, const unsigned char *buf, uint64_t nbytes, int dtype,
                          uint64_t gtid, uint64_t stride) {
  uint64_t nwords = (nbytes + 7) / 8;
  unsigned es = cs_sdc_dtype_size(dtype);
  int aligned = ((uintptr_t)buf & 7u) == 0;
  uint64_t w = gtid;
  for (; w + 3 * stride < nwords; w += 4 * stride) {
    uint64_t v0 = load_word(buf, nbytes, aligned, w), v1 = load_word(buf, nbytes, aligned, w + stride);
    uint64_t v2 = load_word(buf, nbytes, aligned, w + 2 * stride), v3 = load_word(buf, nbytes, aligned, w + 3 * stride);
    add_word(p, v0, w, nbytes, dtype, es);
    add_word(p, v1, w + stride, nbytes, dtype, es);
    add_word(p, v2, w + 2 * stride, nbytes, dtype, es);
    add_word(p, v3, w + 3 * stride, nbytes, dtype, es);
  }
  for (; w < nwords; w += stride) add_word(p, load_word(buf, nbytes, aligned, w), w, nbytes, dtype, es);
}

/* one copy of the loop per datatype, so the decoding is resolved at compile time */
#define CS_SDC_CASE(dt) case dt: partial_loop(p, buf, nbytes, dt, gtid, stride); break;
static
#ifdef __CUDACC__
__device__ __noinline__
#endif
void thread_partial(struct cs_sdc_part *p, const unsigned char *buf, uint64_t nbytes, int dtype, uint64_t gtid,
                    uint64_t stride) {
  part_zero(p);
  switch (dtype) {
    CS_SDC_CASE(CS_SDC_INT8) CS_SDC_CASE(CS_SDC_UINT8) CS_SDC_CASE(CS_SDC_INT32) CS_SDC_CASE(CS_SDC_UINT32)
    CS_SDC_CASE(CS_SDC_INT64) CS_SDC_CASE(CS_SDC_UINT64) CS_SDC_CASE(CS_SDC_FLOAT16) CS_SDC_CASE(CS_SDC_FLOAT32)
    CS_SDC_CASE(CS_SDC_FLOAT64) CS_SDC_CASE(CS_SDC_BFLOAT16) CS_SDC_CASE(CS_SDC_FP8E4M3)
    CS_SDC_CASE(CS_SDC_FP8E5M2)
  default: partial_loop(p, buf, nbytes, -1, gtid, stride); break;   /* fingerprint only */
  }
}

/* The body of one block. */
CS_KDEV void sdc_reduce_block(unsigned cs_b, unsigned cs_nb, unsigned cs_nt, const unsigned char *buf,
                              uint64_t nbytes, int dtype, struct cs_sdc_part *scratch, unsigned *counter,
                              struct cs_sdc_result *res, uint32_t tag) {
  CS_KSHARED struct cs_sdc_part sh[CS_SDC_THREADS];
  CS_KSHARED unsigned last;
  CS_THREADS(t)
    thread_partial(&sh[t], buf, nbytes, dtype, (uint64_t)cs_b * cs_nt + t, (uint64_t)cs_nb * cs_nt);
  CS_SYNC
  for (unsigned s = cs_nt / 2; s > 0; s >>= 1) {
    CS_THREADS(t)
      if (t < s) part_add(&sh[t], &sh[t + s]);
    CS_SYNC
  }
  CS_THREADS(t)
    if (t == 0) {
      scratch[cs_b] = sh[0];
      CS_FENCE();
      last = CS_TICKET(counter) == cs_nb - 1;
    }
  CS_SYNC
  CS_THREADS(t)
    if (t == 0 && last) {
      CS_FENCE();
      struct cs_sdc_part tot;
      part_zero(&tot);
      for (unsigned i = 0; i < cs_nb; i++) {
        struct cs_sdc_part x;
        const volatile struct cs_sdc_part *src = &scratch[i];
        x.fp = src->fp;
        x.isum = src->isum;
        x.sum = src->sum;
        x.abs = src->abs;
        part_add(&tot, &x);
      }
      res->fp = tot.fp;
      res->isum = tot.isum;
      res->sum = tot.sum;
      res->abs = tot.abs;
      *counter = 0;
      CS_FENCE_SYSTEM();
      *(volatile uint32_t *)&res->done = tag;
    }
  CS_SYNC
}

#ifdef __CUDACC__
extern "C" __global__ void __launch_bounds__(CS_SDC_THREADS)
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
