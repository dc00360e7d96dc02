/* hooks/sdc_internal.h: what the SDC checks' two files share: the per-CUDA-context state
 * (kernel, device scratch, pinned result slots), set up once per context by
 * hooks/sdc_context.c, and used on the hot path by hooks/sdc_check.c. */
#ifndef COLLSCOPE_HOOKS_SDC_INTERNAL_H
#define COLLSCOPE_HOOKS_SDC_INTERNAL_H
#include "sdc_check.h"
#include "cuda_driver.h"
#include "sdc_kernel_defs.h"
#include <stdbool.h>
#include <stdint.h>

#define SDC_MAX_CTX 32
#define SDC_NSLOTS 1024 /* checks in flight per context (32 MiB of device scratch) */

struct slot_meta {
  uint32_t tag[2]; /* [0] input launch, [1] output launch */
  uint8_t launched[2];
};

struct sdc_ctx {
  _Atomic(CUcontext) ctx;
  _Atomic int ready;
  bool ok;         /* false: this context cannot run checks (logged once) */
  const char *why; /* !ok: setup_failed, selftest_failed, selftest_timeout */
  CUfunction fn;
  unsigned sms;              /* the device's multiprocessors (0: unknown), for cs_sdc_grid */
  CUdeviceptr scratch;       /* SDC_NSLOTS * 2 * CS_SDC_MAX_BLOCKS parts */
  CUdeviceptr counters;      /* SDC_NSLOTS * 2 unsigned */
  struct cs_sdc_result *res; /* pinned, SDC_NSLOTS * 2 */
  CUdeviceptr res_dev;       /* the same memory as the device sees it */
  struct slot_meta meta[SDC_NSLOTS];
  _Atomic uint8_t state[SDC_NSLOTS]; /* 0 free, 1 in use */
  _Atomic uint32_t next;
};
/* the contexts set up so far (cs_sdc_nctx of them) */
extern struct sdc_ctx cs_sdc_ctxs[SDC_MAX_CTX];
extern _Atomic int cs_sdc_nctx;

/* The calling thread's current context, set up on first use (slow path, once per context);
 * NULL when it cannot run checks. *index: its index in cs_sdc_ctxs. */
struct sdc_ctx *cs_sdc_ctx_get(int *index);
/* One kernel launch into result slot k (its scratch, ticket counter and pinned result). */
CUresult cs_sdc_kernel_launch(const struct sdc_ctx *x, unsigned k, CUdeviceptr buf, uint64_t nbytes, int dtype,
                              unsigned grid, CUstream stream, uint32_t tag);
/* the driver was looked at and lacks the entry points the checks need */
bool cs_sdc_no_driver(void);

#endif
