/* hooks/sdc_kernel_defs.h: what the SDC kernel (hooks/sdc_kernels.cu, CUDA and host C)
 * and its launcher (hooks/sdc.c) share: result layout, datatype codes, the word mix. */
#ifndef COLLSCOPE_SDC_KERNEL_DEFS_H
#define COLLSCOPE_SDC_KERNEL_DEFS_H
#include <stdint.h>
#include <stddef.h>

#ifdef __CUDACC__
#define CS_SDC_HD static __host__ __device__ __forceinline__
#else
#define CS_SDC_HD static inline
#endif

#define CS_SDC_THREADS 256   /* threads per block (power of two) */
#define CS_SDC_MAX_BLOCKS 64 /* blocks per launch: scratch per slot = 64 partials */

/* ncclDataType_t values */
enum {
  CS_SDC_INT8 = 0, CS_SDC_UINT8 = 1, CS_SDC_INT32 = 2, CS_SDC_UINT32 = 3, CS_SDC_INT64 = 4,
  CS_SDC_UINT64 = 5, CS_SDC_FLOAT16 = 6, CS_SDC_FLOAT32 = 7, CS_SDC_FLOAT64 = 8,
  CS_SDC_BFLOAT16 = 9, CS_SDC_FP8E4M3 = 10, CS_SDC_FP8E5M2 = 11,
};

CS_SDC_HD unsigned cs_sdc_dtype_size(int dt) {
  switch (dt) {
  case CS_SDC_INT8: case CS_SDC_UINT8: case CS_SDC_FP8E4M3: case CS_SDC_FP8E5M2: return 1;
  case CS_SDC_FLOAT16: case CS_SDC_BFLOAT16: return 2;
  case CS_SDC_INT32: case CS_SDC_UINT32: case CS_SDC_FLOAT32: return 4;
  case CS_SDC_INT64: case CS_SDC_UINT64: case CS_SDC_FLOAT64: return 8;
  default: return 0;
  }
}

/* Position-mixed word: splitmix64's finalizer over word + index * golden ratio. A flip
 * of any bit of any word changes the word's term, and so the (wrapping) total, except
 * with probability ~2^-64. */
CS_SDC_HD uint64_t cs_sdc_mix(uint64_t w, uint64_t idx) {
  uint64_t z = w + (idx + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

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
  uint32_t done;   /* = the launch's tag once the fields above are valid */
  uint32_t pad_;
};

#endif
