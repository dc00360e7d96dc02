/* hooks/sdc_kernel_defs.h: what the SDC kernel (hooks/sdc_kernels.cu, CUDA and host C)
 * and its launcher (hooks/sdc_check.c) share: result layout, datatype codes, the word mix. */
#ifndef COLLSCOPE_SDC_KERNEL_DEFS_H
#define COLLSCOPE_SDC_KERNEL_DEFS_H
#include <stdint.h>
#include <stddef.h>

#ifdef __CUDACC__
#define CS_SDC_HD static __host__ __device__ __forceinline__
#else
#define CS_SDC_HD static inline
#endif

#define CS_SDC_THREADS 256          /* threads per block (power of two) */
#define CS_SDC_MAX_BLOCKS 512       /* blocks per launch: the scratch holds one partial per block */
#define CS_SDC_BLOCKS_PER_SM 4      /* __launch_bounds__ minimum: 4 x 256 threads resident per SM */
#define CS_SDC_BYTES_PER_THREAD 256 /* bytes a thread reads before the grid grows by a block */

/* ncclDataType_t values */
enum {
  CS_SDC_INT8 = 0,
  CS_SDC_UINT8 = 1,
  CS_SDC_INT32 = 2,
  CS_SDC_UINT32 = 3,
  CS_SDC_INT64 = 4,
  CS_SDC_UINT64 = 5,
  CS_SDC_FLOAT16 = 6,
  CS_SDC_FLOAT32 = 7,
  CS_SDC_FLOAT64 = 8,
  CS_SDC_BFLOAT16 = 9,
  CS_SDC_FP8E4M3 = 10,
  CS_SDC_FP8E5M2 = 11,
};

CS_SDC_HD unsigned cs_sdc_dtype_size(int dt) {
  switch (dt) {
  case CS_SDC_INT8:
  case CS_SDC_UINT8:
  case CS_SDC_FP8E4M3:
  case CS_SDC_FP8E5M2: return 1;
  case CS_SDC_FLOAT16:
  case CS_SDC_BFLOAT16: return 2;
  case CS_SDC_INT32:
  case CS_SDC_UINT32:
  case CS_SDC_FLOAT32: return 4;
  case CS_SDC_INT64:
  case CS_SDC_UINT64:
  case CS_SDC_FLOAT64: return 8;
  default: return 0;
  }
}

/* The launch grid for a buffer of nbytes on a device with `sms` multiprocessors (0:
 * unknown): one block per 64 KiB (256 threads x 256 bytes), at most CS_SDC_BLOCKS_PER_SM
 * per SM (all resident at once: one wave) and CS_SDC_MAX_BLOCKS. hooks/sdc_check.c, the GPU
 * check and the kernel lab all use this rule. */
CS_SDC_HD unsigned cs_sdc_grid(uint64_t nbytes, unsigned sms) {
  uint64_t per_block = (uint64_t)CS_SDC_THREADS * CS_SDC_BYTES_PER_THREAD;
  uint64_t b = (nbytes + per_block - 1) / per_block;
  uint64_t cap = sms ? (uint64_t)sms * CS_SDC_BLOCKS_PER_SM : CS_SDC_MAX_BLOCKS;
  if (cap > CS_SDC_MAX_BLOCKS) cap = CS_SDC_MAX_BLOCKS;
  if (b > cap) b = cap;
  return b < 1 ? 1u : (unsigned)b;
}

/* Position-mixed word: MurmurHash3's 64-bit finalizer (fmix64) over word + index *
 * golden ratio. Every step is a bijection, so a flip of any bit of any word changes the
 * word's term, and so the (wrapping) total; several changed words cancel with
 * probability ~2^-64. cs_sdc_mix_key takes the index term (idx + 1) * golden
 * already computed, so a loop over consecutive words adds the constant instead of
 * multiplying (wrapping arithmetic: the same value). fmix64's shifts of 33 cost one
 * 32-bit shift and one xor on the GPU (the high half of z >> 33 is zero); the shifts of
 * 27-31 of splitmix64's finalizer, which this used before, cost two of each. */
#define CS_SDC_GOLDEN 0x9e3779b97f4a7c15ull
CS_SDC_HD uint64_t cs_sdc_mix_key(uint64_t w, uint64_t key) {
  uint64_t z = w + key;
  z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdull;
  z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ull;
  return z ^ (z >> 33);
}
CS_SDC_HD uint64_t cs_sdc_mix(uint64_t w, uint64_t idx) { return cs_sdc_mix_key(w, (idx + 1) * CS_SDC_GOLDEN); }

/* per-block partial (device scratch) */
struct cs_sdc_part {
  uint64_t fp;
  uint64_t isum;
  double sum;
  double abs;
};

/* one launch's result (pinned host memory, written by the last block) */
struct cs_sdc_result {
  uint64_t fp;
  uint64_t isum;
  double sum;
  double abs;
  uint32_t done; /* = the launch's tag once the fields above are valid */
  uint32_t pad_;
};

#endif
