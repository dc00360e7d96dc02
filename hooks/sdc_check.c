/* hooks/sdc_check.c: launches the SDC check kernel (hooks/sdc_kernels.cu) around eligible
 * collectives and hands its results to the harvest thread (see sdc_check.h, DESIGN.md "SDC checks").
 *
 * Hot path (caller's thread, no syscall, no lock, no sync): policy decision, a slot taken
 * from a per-context ring with one CAS, and one cuLaunchKernel before the collective
 * (input sums) and one after it (output fingerprint + sums), both on the collective's
 * stream. The slow path, once per CUDA context, is hooks/sdc_context.c. */
#include "sdc_internal.h"
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SDC_COMM_TABLE 1024
#define NCCL_IN_PROGRESS 7

/* grouped ops whose output check waits for the group launch (per thread) */
#define SDC_GROUP_MAX 64
struct grp_out {
  struct sdc_ctx *x;
  unsigned slot;
  const void *p;
  uint64_t nb;
  int dtype;
  void *stream;
};
/* The thread's deferred output checks, allocated at its first grouped check (the library's
 * TLS stays small: see cs_tls in hooks/thread_state.h); freed when the thread exits. */
struct sdc_grp {
  uint64_t group;
  size_t n;
  struct grp_out v[SDC_GROUP_MAX];
};
static __thread struct sdc_grp *grp_p;
#define grp (*grp_p)
static pthread_key_t grp_key;
static pthread_once_t grp_key_once = PTHREAD_ONCE_INIT;
static void grp_key_create(void) { pthread_key_create(&grp_key, free); }
static bool grp_ready(void) {
  if (CS_LIKELY(grp_p != NULL)) return true;
  struct sdc_grp *g = calloc(1, sizeof(*g));
  if (!g) return false;
  pthread_once(&grp_key_once, grp_key_create);
  pthread_setspecific(grp_key, g);
  grp_p = g;
  return true;
}

static _Atomic uint32_t tags;
static _Atomic uint64_t n_launched, n_no_slot, n_captured;

/* per-communicator counters of eligible collectives (sample:N), keyed by comm id */
static struct {
  _Atomic uint64_t key;
  _Atomic uint64_t n;
} comm_ctr[SDC_COMM_TABLE];

static bool eligible_op(int op) { return op >= 0 && op < 32 && ((CS_SDC_OP_MASK >> op) & 1u); }

/* sample:N -- the k-th eligible collective of a communicator is checked when k % N == 0;
 * every rank sees the same eligible sequence, so all check the same ones. The counter is
 * advanced before the call; a call NCCL rejects gives its count back (sample_give_back),
 * as it gives back its seq: it is no collective instance, its peers never made it. */
static bool sampled(struct cs_call *c, uint64_t comm_id) {
  if (cs_cfg.sdc_mode == CS_SDC_ALL || cs_cfg.sdc_sample <= 1) return true;
  uint64_t key = comm_id ? comm_id : 1;
  for (unsigned i = 0; i < SDC_COMM_TABLE; i++) {
    unsigned h = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 54) + i;
    h %= SDC_COMM_TABLE;
    uint64_t k = atomic_load_explicit(&comm_ctr[h].key, memory_order_acquire);
    if (k == 0) {
      uint64_t z = 0;
      if (!atomic_compare_exchange_strong(&comm_ctr[h].key, &z, key) && z != key) continue;
      k = key;
    }
    if (k != key) continue;
    uint64_t n = atomic_fetch_add_explicit(&comm_ctr[h].n, 1, memory_order_relaxed);
    c->sdc_ctr = h + 1;
    c->sdc_ctr_at = n;
    return n % cs_cfg.sdc_sample == 0;
  }
  return false;
}

/* The call failed: undo its advance of the sample:N counter, unless another thread
 * advanced it since (then the counters of this rank drift by one, as its seq would). */
static void sample_give_back(struct cs_call *c) {
  if (!c->sdc_ctr) return;
  uint64_t next = c->sdc_ctr_at + 1;
  atomic_compare_exchange_strong_explicit(&comm_ctr[c->sdc_ctr - 1].n, &next, c->sdc_ctr_at, memory_order_relaxed,
                                          memory_order_relaxed);
  c->sdc_ctr = 0;
}

/* The buffer each launch reads: which = 0 input (before), 1 output (after). */
static bool op_buffer(const struct cs_call *c, int which, const void **p, uint64_t *nbytes) {
  const struct cs_record *r = c->rec;
  uint64_t es = cs_dtype_size(c->dtype), n = (uint64_t)(r->comm_size > 0 ? r->comm_size : 1);
  uint64_t b = (uint64_t)c->count * es;
  bool at_root = r->comm_rank == r->root;
  switch (c->op) {
  case CS_OP_AllReduce: break;
  case CS_OP_Broadcast:
    if (which == 0 && !at_root) return false;
    break;
  case CS_OP_Reduce:
    if (which == 1 && !at_root) return false;
    break;
  case CS_OP_AllGather:
    if (which == 1) b *= n;
    break;
  case CS_OP_ReduceScatter:
    if (which == 0) b *= n;
    break;
  default: return false;
  }
  *p = which ? (const void *)c->recvbuff : c->sendbuff;
  *nbytes = b;
  return *p && b;
}

/* fp8 collectives get the fingerprint check only (analysis/sdc_compare.c: their reductions
 * saturate, so no sum rule holds): the kernel then computes the fingerprint alone, and the
 * record's sums are NaN (null in the dump) */
static bool fp8(int dtype) { return dtype == CS_SDC_FP8E4M3 || dtype == CS_SDC_FP8E5M2; }

static bool launch(struct sdc_ctx *x, unsigned slot, int which, const void *buf, uint64_t nbytes, int dtype,
                   void *stream) {
  unsigned k = slot * 2 + (unsigned)which;
  uint32_t tag = atomic_fetch_add_explicit(&tags, 1, memory_order_relaxed) + 1;
  if (!tag) tag = atomic_fetch_add_explicit(&tags, 1, memory_order_relaxed) + 1;
  int kdtype = fp8(dtype) ? -1 : dtype; /* fp8: the fingerprint is all that is compared */
  x->meta[slot].launched[which] = 0;
  if (cs_sdc_kernel_launch(x, k, (CUdeviceptr)(uintptr_t)buf, nbytes, kdtype, cs_sdc_grid(nbytes, x->sms), (CUstream)stream,
                           tag) != CUDA_SUCCESS) {
    cs_log_once(CS_LOG_WARN, "cuLaunchKernel of the SDC check failed: that collective is not checked");
    return false;
  }
  x->meta[slot].tag[which] = tag;
  x->meta[slot].launched[which] = 1;
  atomic_fetch_add_explicit(&n_launched, 1, memory_order_relaxed);
  return true;
}

void cs_sdc_before_op(struct cs_call *c) {
  struct cs_record *r = c->rec;
  r->sdc_slot = 0;
  r->sdc_ctx = 0;
  if (CS_LIKELY(cs_cfg.sdc_mode == CS_SDC_OFF) || !eligible_op((int)c->op)) return;
#ifndef COLLSCOPE_SDC_FATBIN
  cs_log_once(CS_LOG_INFO, "SDC checks were compiled out (no nvcc when libcollscope was built)");
  return;
#endif
  /* a grouped op's output check waits for the group launch (cs_sdc_group_launched; without
   * that call the record gets its input sums only) */
  if (r->seq == UINT64_MAX || r->comm_size < 1) return;
  if (!c->count || !cs_dtype_size(c->dtype) || r->bytes < cs_cfg.sdc_min_bytes) return;
  if (!sampled(c, r->comm_id)) return;
  /* Graph capture is not checked, and nothing collscope does may touch a capture: the
   * stream is asked before anything else (the context's set-up allocates, which a global
   * or thread-local capture forbids; a kernel launched now would become part of the
   * graph). r->captured is not enough: a grouped op's is decided at the launch, and a
   * sampled-out or profiler-timed op never asks. The skip is counted (footer
   * sdc_captured). */
  CUstreamCaptureStatus cst = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!r->captured) {
    /* with COLLSCOPE_TIMING=off the shim has not loaded the driver: the checks do (once) */
    if (CS_UNLIKELY(!cs_drv.loaded) && !cs_driver_load()) return;
    if (cs_drv.cuStreamIsCapturing((CUstream)c->stream, &cst) != CUDA_SUCCESS) return;
  }
  if (r->captured || cst != CU_STREAM_CAPTURE_STATUS_NONE) {
    atomic_fetch_add_explicit(&n_captured, 1, memory_order_relaxed);
    return;
  }
  int xi;
  struct sdc_ctx *x = cs_sdc_ctx_get(&xi);
  if (!x) return;
  if (cs_tls.group_depth > 0) {
    if (!grp_ready()) return;                                   /* no memory to defer its output check */
    if (grp.group != r->group) grp.n = 0, grp.group = r->group; /* a new group */
    if (grp.n == SDC_GROUP_MAX) return;                         /* no room to defer its output check */
  }
  uint32_t start = atomic_fetch_add_explicit(&x->next, 1, memory_order_relaxed);
  unsigned slot = SDC_NSLOTS;
  for (unsigned i = 0; i < 8 && slot == SDC_NSLOTS; i++) {
    unsigned s = (start + i) % SDC_NSLOTS;
    uint8_t z = 0;
    if (atomic_compare_exchange_strong_explicit(&x->state[s], &z, 1, memory_order_acquire, memory_order_relaxed))
      slot = s;
  }
  if (slot == SDC_NSLOTS) {
    atomic_fetch_add_explicit(&n_no_slot, 1, memory_order_relaxed);
    cs_log_once(CS_LOG_WARN, "SDC: all %d result slots busy; some collectives are not checked", SDC_NSLOTS);
    return;
  }
  x->meta[slot].launched[0] = x->meta[slot].launched[1] = 0;
  const void *p;
  uint64_t nb;
  if (op_buffer(c, 0, &p, &nb)) launch(x, slot, 0, p, nb, c->dtype, c->stream);
  r->sdc_ctx = (uint8_t)(xi + 1);
  r->sdc_slot = slot + 1;
}

void cs_sdc_after_op(struct cs_call *c, int status) {
  struct cs_record *r = c->rec;
  if (status != 0 && status != NCCL_IN_PROGRESS) sample_give_back(c);
  if (!r->sdc_slot) return;
  struct sdc_ctx *x = &cs_sdc_ctxs[r->sdc_ctx - 1];
  unsigned slot = r->sdc_slot - 1;
  const void *p;
  uint64_t nb;
  if (cs_tls.group_depth > 0) {
    /* NCCL launches a group's work at the outermost ncclGroupEnd: the output check waits
     * for cs_sdc_group_launched; the record (pushed after that) keeps the slot */
    if (status == 0 && op_buffer(c, 1, &p, &nb) && grp.n < SDC_GROUP_MAX)
      grp.v[grp.n++] = (struct grp_out){x, slot, p, nb, c->dtype, c->stream};
    else if (!x->meta[slot].launched[0]) {
      atomic_store_explicit(&x->state[slot], 0, memory_order_release);
      r->sdc_slot = 0;
      r->sdc_ctx = 0;
    }
    return;
  }
  /* ncclInProgress (non-blocking communicator): the work may not be on the stream yet, so
   * a kernel enqueued now could run before it -- no output check then */
  if (status == 0 && op_buffer(c, 1, &p, &nb))
    launch(x, slot, 1, p, nb, c->dtype, c->stream);
  if (!x->meta[slot].launched[0] && !x->meta[slot].launched[1]) {
    atomic_store_explicit(&x->state[slot], 0, memory_order_release);
    r->sdc_slot = 0;
    r->sdc_ctx = 0;
  }
}

/* The outermost ncclGroupEnd returned (status): launch the deferred output checks on
 * their streams, before the group's records are pushed to the harvest thread. */
void cs_sdc_group_launched(int status) {
  if (!grp_p) return;
  for (size_t i = 0; i < grp.n; i++)
    if (status == 0) launch(grp.v[i].x, grp.v[i].slot, 1, grp.v[i].p, grp.v[i].nb, grp.v[i].dtype, grp.v[i].stream);
  /* slots with no launch at all are released by cs_sdc_collect (nothing to wait for) */
  grp.n = 0;
}

/* The group was only simulated (ncclGroupSimulateEnd): no output check follows, and the
 * record is dropped. A slot no kernel was launched into is free again; one whose input check
 * was launched stays taken (the kernel may still write it) and is counted as busy. */
void cs_sdc_group_simulated(struct cs_record *r) {
  if (grp_p) grp.n = 0;
  if (!r->sdc_slot) return;
  struct sdc_ctx *x = &cs_sdc_ctxs[r->sdc_ctx - 1];
  unsigned slot = r->sdc_slot - 1;
  if (!x->meta[slot].launched[0] && !x->meta[slot].launched[1])
    atomic_store_explicit(&x->state[slot], 0, memory_order_release);
  else
    atomic_fetch_add_explicit(&n_no_slot, 1, memory_order_relaxed);
  r->sdc_slot = 0;
  r->sdc_ctx = 0;
}

/* Integer sums are kept modulo 2^min(8*size, 52): exact in a double, and consistent with
 * the wrapping arithmetic of an integer reduction (readers compare modulo the same). */
static double int_sum(uint64_t isum, int dtype) {
  unsigned bits = cs_dtype_size(dtype) * 8;
  if (bits > 52) bits = 52;
  return (double)(isum & ((1ull << bits) - 1));
}

static bool is_int(int dtype) { return dtype >= CS_SDC_INT8 && dtype <= CS_SDC_UINT64; }

bool cs_sdc_collect(struct cs_record *r, bool final) {
  if (!r->sdc_slot) return true;
  struct sdc_ctx *x = &cs_sdc_ctxs[r->sdc_ctx - 1];
  unsigned slot = r->sdc_slot - 1;
  struct slot_meta *m = &x->meta[slot];
  for (int k = 0; k < 2; k++) {
    if (!m->launched[k]) continue;
    uint32_t done = __atomic_load_n(&x->res[slot * 2 + k].done, __ATOMIC_ACQUIRE);
    if (done != m->tag[k]) {
      if (!final) return false;
      /* never finished before exit: the slot stays taken (the kernel may still write it) */
      r->sdc_slot = 0;
      r->sdc_ctx = 0;
      return true;
    }
  }
  bool ok = r->status == 0 || r->status == NCCL_IN_PROGRESS;
  const struct cs_sdc_result *in = &x->res[slot * 2], *out = &x->res[slot * 2 + 1];
  r->sdc_checked = 0;
  if (ok && m->launched[1]) {
    r->fingerprint = out->fp;
    r->out_sum = fp8(r->dtype) ? NAN : is_int(r->dtype) ? int_sum(out->isum, r->dtype)
                                                        : out->sum;
    r->sdc_checked |= 1;
  }
  if (ok && m->launched[0]) {
    r->in_sum = fp8(r->dtype) ? NAN : is_int(r->dtype) ? int_sum(in->isum, r->dtype)
                                                       : in->sum;
    r->in_abs = fp8(r->dtype) ? NAN : in->abs;
    r->sdc_checked |= 2;
  }
  atomic_store_explicit(&x->state[slot], 0, memory_order_release);
  r->sdc_slot = 0;
  r->sdc_ctx = 0;
  return true;
}

const char *cs_sdc_standing(uint64_t *launched, uint64_t *no_slot, uint64_t *captured) {
  *launched = atomic_load(&n_launched);
  *no_slot = atomic_load(&n_no_slot);
  *captured = atomic_load(&n_captured);
  if (cs_cfg.sdc_mode == CS_SDC_OFF) return NULL;
#ifndef COLLSCOPE_SDC_FATBIN
  return "compiled_out";
#else
  int n = atomic_load_explicit(&cs_sdc_nctx, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (atomic_load_explicit(&cs_sdc_ctxs[i].ready, memory_order_acquire) && !cs_sdc_ctxs[i].ok) return cs_sdc_ctxs[i].why;
  if (n) return "ready";
  return cs_sdc_no_driver() ? "no_driver" : "unused";
#endif
}

/* ---- what the harvest thread and the dump get (registered by shim/wiring.c) ---- */
static bool sdc_complete(struct cs_record *r, bool final) {
  return !r->sdc_slot || cs_sdc_collect(r, final); /* false: the kernels are still running */
}
const struct cs_harvest_client cs_sdc_harvest = {.name = "sdc", .complete = sdc_complete};

void cs_sdc_dump_footer(const struct cs_dump_kv *kv) {
  uint64_t launches, no_slot, captured;
  const char *sdc = cs_sdc_standing(&launches, &no_slot, &captured);
  if (!sdc) return; /* COLLSCOPE_SDC=off */
  kv->str("sdc", sdc);
  kv->u64("sdc_launches", launches);
  kv->u64("sdc_no_slot", no_slot);
  kv->u64("sdc_captured", captured);
}
