/* tests/sdc/sdc_gpu_check.c: on a real GPU, the embedded fatbin's sdc_reduce against its
 * host twin (the same source compiled as C), and the kernel's bandwidth.
 *
 *   sdc_gpu_check [--quick]
 *
 * 1. For every datatype (and -1, fingerprint only), several lengths and misalignments, and the grid hooks/sdc_check.c
 *    uses (cs_sdc_grid): GPU result == host twin result, bit for bit (fingerprint,
 *    integer sum, fp64 sum and |sum|), done tag written, counter reset.
 * 2. Bandwidth: the kernel over 1 GiB (fp32 and bf16) at several grid sizes, against
 *    cuMemcpyDtoD (2 x bytes / time) and a read-only reference (the same kernel's loads,
 *    measured as bytes / time of a plain 64-bit sum kernel is not available here, so D2D
 *    is the HBM reference). Exit 1 on any mismatch. Not built into CI (needs a GPU). */
#include "hooks/sdc_kernel_defs.h"
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char cs_sdc_fatbin[];
void collscope_simkernel_sdc_reduce(void **params, const unsigned grid[3], const unsigned block[3]);

#define CK(x) \
  do { \
    CUresult e_ = (x); \
    if (e_ != CUDA_SUCCESS) { \
      const char *s_ = "?"; \
      cuGetErrorName(e_, &s_); \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_); \
      exit(2); \
    } \
  } while (0)

static uint64_t rs = 99;
static uint64_t rng(void) {
  uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static CUfunction fn;
static CUdeviceptr dscratch, dcounter;
static struct cs_sdc_result *hres;
static CUdeviceptr dres;

static struct cs_sdc_result gpu(CUdeviceptr buf, uint64_t nbytes, int dtype, unsigned grid, CUstream s) {
  static uint32_t tag = 0;
  tag++;
  void *args[] = {&buf, &nbytes, &dtype, &dscratch, &dcounter, &dres, &tag};
  CK(cuLaunchKernel(fn, grid, 1, 1, CS_SDC_THREADS, 1, 1, 0, s, args, NULL));
  CK(cuStreamSynchronize(s));
  if (hres->done != tag) {
    fprintf(stderr, "done tag not written\n");
    exit(1);
  }
  return *hres;
}

static struct cs_sdc_result host(const void *buf, uint64_t nbytes, int dtype, unsigned grid) {
  static struct cs_sdc_part scratch[4096];
  static unsigned counter;
  struct cs_sdc_result r;
  memset(&r, 0, sizeof r);
  void *sp = scratch, *cp = &counter, *rp = &r;
  uint32_t tag = 1;
  void *params[] = {&buf, &nbytes, &dtype, &sp, &cp, &rp, &tag};
  unsigned g[3] = {grid, 1, 1}, b[3] = {CS_SDC_THREADS, 1, 1};
  collscope_simkernel_sdc_reduce(params, g, b);
  return r;
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  CK(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  char name[256];
  CK(cuDeviceGetName(name, sizeof name, dev));
  int sms = 0;
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  printf("device: %s, %d SMs\n", name, sms);
  CUmodule mod;
  CK(cuModuleLoadData(&mod, cs_sdc_fatbin));
  CK(cuModuleGetFunction(&fn, mod, "sdc_reduce"));
  CK(cuMemAlloc(&dscratch, 4096 * sizeof(struct cs_sdc_part)));
  CK(cuMemAlloc(&dcounter, 64));
  CK(cuMemsetD8(dcounter, 0, 64));
  CK(cuMemAllocHost((void **)&hres, sizeof *hres));
  CK(cuMemHostGetDevicePointer(&dres, hres, 0));
  CUstream s;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  /* 1. agreement */
  size_t maxb = 8u << 20;
  unsigned char *hb = malloc(maxb + 64);
  CUdeviceptr db;
  CK(cuMemAlloc(&db, maxb + 64));
  static const uint64_t lens[] = {1, 7, 8, 24, 100, 4099, 65536, 1000003, 8u << 20};
  /* offsets from the 256-byte aligned allocation: 16-byte aligned, 8 (an unaligned first
   * word), 4 and 2 (narrower loads), 1 (byte loads) */
  static const unsigned offs[] = {0, 8, 24, 4, 2, 1};
  int mism = 0, cases = 0;
  for (int dt = -1; dt < 12; dt++) /* -1: the fingerprint alone (fp8's launches) */
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
      for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
        unsigned off = offs[oi];
        uint64_t n = lens[li] > maxb ? maxb : lens[li];
        for (uint64_t i = 0; i < n + 32; i++) hb[i] = (unsigned char)rng();
        if (dt == CS_SDC_FLOAT32)
          for (uint64_t i = 0; i + 4 <= n + 32; i += 4) {
            float f = (float)((double)(rng() >> 11) * 0x1p-53 - 0.5);
            memcpy(hb + i, &f, 4);
          }
        if (dt == CS_SDC_FLOAT64)
          for (uint64_t i = 0; i + 8 <= n + 32; i += 8) {
            double f = (double)(rng() >> 11) * 0x1p-53 - 0.5;
            memcpy(hb + i, &f, 8);
          }
        CK(cuMemcpyHtoD(db, hb, n + 32));
        CK(cuCtxSynchronize()); /* a pageable HtoD may return before its DMA is done */
        unsigned g = cs_sdc_grid(n, (unsigned)sms);
        struct cs_sdc_result a = gpu(db + off, n, dt, g, s), b = host(hb + off, n, dt, g);
        cases++;
        /* NaN results: the sign/payload of a propagated NaN is not portable (the dump
         * writes every non-finite sum as null), so NaN == NaN counts as agreement */
        int same = a.fp == b.fp && a.isum == b.isum && (!memcmp(&a.sum, &b.sum, 8) || (isnan(a.sum) && isnan(b.sum))) &&
                   (!memcmp(&a.abs, &b.abs, 8) || (isnan(a.abs) && isnan(b.abs)));
        if (!same) {
          mism++;
          if (mism < 10)
            printf("MISMATCH dt %d len %llu off %u grid %u: fp %016llx/%016llx sum %.17g/%.17g abs %.17g/%.17g\n", dt,
                   (unsigned long long)n, off, g, (unsigned long long)a.fp, (unsigned long long)b.fp, a.sum, b.sum,
                   a.abs, b.abs);
        }
      }
  printf("agreement GPU kernel vs host twin: %d/%d cases bit-identical\n", cases - mism, cases);

  /* 2. bandwidth */
  size_t big = quick ? (256u << 20) : (1u << 30);
  CUdeviceptr d1, d2;
  CK(cuMemAlloc(&d1, big));
  CK(cuMemAlloc(&d2, big));
  CK(cuMemsetD32(d1, 0x3f800000u, big / 4));
  CUevent e0, e1;
  CK(cuEventCreate(&e0, 0));
  CK(cuEventCreate(&e1, 0));
  float ms;
  int reps = 10;
  CK(cuMemcpyDtoDAsync(d2, d1, big, s));
  CK(cuEventRecord(e0, s));
  for (int r = 0; r < reps; r++) CK(cuMemcpyDtoDAsync(d2, d1, big, s));
  CK(cuEventRecord(e1, s));
  CK(cuEventSynchronize(e1));
  CK(cuEventElapsedTime(&ms, e0, e1));
  double d2d = 2.0 * (double)big * reps / (ms / 1e3) / 1e9;
  printf("cuMemcpyDtoD %zu MiB: %.0f GB/s (read+write)\n", big >> 20, d2d);
  /* the production grid first, then others (the scratch holds 4096 partials) */
  const unsigned grids[] = {cs_sdc_grid(big, (unsigned)sms), 132, 264, 396, 528, 792, 1056};
  for (int dt = CS_SDC_FLOAT32; dt <= CS_SDC_BFLOAT16; dt += CS_SDC_BFLOAT16 - CS_SDC_FLOAT32)
    for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++) {
      unsigned g = grids[gi];
      uint32_t tag = 1000;
      uint64_t nb = big;
      int d = dt;
      void *args[] = {&d1, &nb, &d, &dscratch, &dcounter, &dres, &tag};
      CK(cuLaunchKernel(fn, g, 1, 1, CS_SDC_THREADS, 1, 1, 0, s, args, NULL));
      CK(cuEventRecord(e0, s));
      for (int r = 0; r < reps; r++) CK(cuLaunchKernel(fn, g, 1, 1, CS_SDC_THREADS, 1, 1, 0, s, args, NULL));
      CK(cuEventRecord(e1, s));
      CK(cuEventSynchronize(e1));
      CK(cuEventElapsedTime(&ms, e0, e1));
      double bw = (double)big * reps / (ms / 1e3) / 1e9;
      printf("sdc_reduce %s %zu MiB grid %4u x %d: %.0f GB/s (%.0f%% of D2D read+write)\n",
             dt == CS_SDC_FLOAT32 ? "fp32" : "bf16", big >> 20, g, CS_SDC_THREADS, bw, 100 * bw / d2d);
    }
  return mism ? 1 : 0;
}
