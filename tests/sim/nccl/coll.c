/* tests/sim/nccl/coll.c: collective and P2P entry points (argument checks like NCCL's
 * ncclEnqueueCheck/ArgsCheck, fault matching), groups (per-thread depth, deferred init
 * and split jobs, fused launch per communicator), ncclGroupSimulateEnd, and the stream
 * work items. */
#include "simnccl.h"
#include "../nvml/simhealth.h"
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- group state */
struct pend { struct ncclComm *c; struct sn_op op; };
static __thread int g_depth;
static __thread ncclResult_t g_err;
static __thread struct pend *g_ops;
static __thread int g_nops, g_cap;
static __thread struct sn_job *g_jobs, *g_jobs_tail;

int sn_group_depth(void) { return g_depth; }
void sn_group_error(ncclResult_t r) { if (g_depth > 0 && g_err == ncclSuccess) g_err = r; }
int sn_group_add_job(struct sn_job *j) {
  if (g_depth == 0) return 0;
  j->next = NULL;
  if (g_jobs_tail) g_jobs_tail->next = j; else g_jobs = j;
  g_jobs_tail = j;
  return 1;
}

/* ---------------------------------------------------------------- work items */
struct work {
  struct ncclComm *c;
  struct sn_op *ops;
  int nops, captured;
  uint32_t ticket;
  uint64_t vt_end;               /* modeled clock: the item's completion (for work_join) */
  _Atomic int refs;
  _Atomic uint32_t finished;
};
static void work_unref(void *arg) {
  struct work *w = arg;
  if (atomic_fetch_sub(&w->refs, 1) == 1) { free(w->ops); free(w); }
}
/* `slow:pct=P` (misc.c): the delay is P% of the median of the rank's last DUR_HIST measured
 * collective executions on that comm (work item start to end on its stream, waits for
 * peers included), not counting the comm's first one (warm-up: it includes the ranks'
 * start-up skew). As the slowed rank arrives last, its own duration is the collective's
 * undisturbed one. Kept only for comms a pct fault targets. */
#define DUR_HIST 32
static struct durhist {
  struct ncclComm *c;
  char name[sizeof ((struct ncclComm *)0)->shm_name];   /* a freed comm's address may be reused */
  unsigned n;                    /* durations noted, the comm's first item (warm-up) not kept */
  int announced;                 /* the first stall was logged */
  uint64_t us[DUR_HIST];
} dur_hist[16];
static pthread_mutex_t dur_mu = PTHREAD_MUTEX_INITIALIZER;

static int has_pct_fault(struct ncclComm *c) {
  if (sh_slow_pct(c->fault_rank, simcuda_hostname()) > 0) return 1;   /* throttle, GPU model */
  for (int i = 0; i < sn_nfaults; i++)
    if (sn_faults[i].kind == SN_F_SLOW && sn_faults[i].elem && sn_faults[i].rank == c->fault_rank) return 1;
  return 0;
}
static struct durhist *dur_slot(struct ncclComm *c, int create) {
  for (int i = 0; i < 16; i++)
    if (dur_hist[i].c == c && !strcmp(dur_hist[i].name, c->shm_name)) return &dur_hist[i];
  if (!create) return NULL;
  struct durhist *h = &dur_hist[((uintptr_t)c >> 6) % 16];   /* table full: replace one */
  for (int i = 0; i < 16; i++)
    if (!dur_hist[i].c) { h = &dur_hist[i]; break; }
  h->c = c;
  memcpy(h->name, c->shm_name, sizeof h->name);
  h->n = 0;
  h->announced = 0;
  return h;
}
static void dur_note(struct ncclComm *c, uint64_t ns) {
  if (!has_pct_fault(c)) return;
  pthread_mutex_lock(&dur_mu);
  struct durhist *h = dur_slot(c, 1);
  if (h && h->n++ > 0) h->us[(h->n - 2) % DUR_HIST] = ns / 1000;
  pthread_mutex_unlock(&dur_mu);
}
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static unsigned dur_median_us(struct ncclComm *c) {
  uint64_t v[DUR_HIST];
  unsigned n = 0;
  pthread_mutex_lock(&dur_mu);
  struct durhist *h = dur_slot(c, 0);
  if (h && h->n > 1) {
    n = h->n - 1 < DUR_HIST ? h->n - 1 : DUR_HIST;
    memcpy(v, h->us, n * sizeof *v);
  }
  pthread_mutex_unlock(&dur_mu);
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_u64);
  return (unsigned)v[(n - 1) / 2];
}
static void slow_stall(struct ncclComm *c, long long seq, CUstream stream);
/* `gpuhang:rank=R,seq=S`: R's GPU hangs in the first work its stream runs after the item that
 * holds seq S - 1 (and the end event recorded right behind it): a compute kernel that never
 * ends. Seq S and everything after it on that stream never start, their start events never
 * complete, while the host thread goes on enqueuing; R's peers start seq S and wait for it. */
static void gpu_hang(struct ncclComm *c, const struct sn_op *ops, int nops) {
  for (int i = 0; i < sn_nfaults; i++) {
    const struct sn_fault *f = &sn_faults[i];
    if (f->kind != SN_F_HANG || !f->gpu || f->rank != c->fault_rank || f->comm != c->index) continue;
    for (int k = 0; k < nops; k++)
      if ((long long)ops[k].seq == f->seq - 1) {
        sn_warn(c->dev, "injected GPU hang after seq %lld (COLLSCOPE_SIM_FAULTS)", f->seq - 1);
        simcuda_worker_hang_after();
        return;
      }
  }
}
static void work_run(void *arg) {
  struct work *w = arg;
  struct ncclComm *c = w->c;
  if (!w->captured) {   /* all fused items of one comm run in launch order, whatever the stream */
    for (;;) {
      uint32_t d = atomic_load(&c->done);
      if (d == w->ticket) break;
      sn_wait(&c->done, d);
    }
  }
  /* modeled clock (model.c): the GPU timer is the stream's virtual time on the realtime epoch */
  int model = simcuda_model_on();
  uint64_t v0 = model ? simcuda_model_now() : 0;
  uint64_t t0_ = model ? SIMCUDA_MODEL_EPOCH_NS + v0 : sn_prof_now();
  if (model) simcuda_model_net_begin();   /* a net plugin's transfers on the modeled clock */
  sn_exec_ops(c, w->ops, w->nops);
  if (model) simcuda_model_net_end();
  if (model) sn_model_item_done(c, w->ops, w->nops, v0);
  uint64_t t1_ = model ? SIMCUDA_MODEL_EPOCH_NS + (w->vt_end = simcuda_model_now()) : sn_prof_now();
  if (!w->captured) sn_prof_kernels(c, w->ops, w->nops, t0_, t1_);
  if (!w->captured && (sn_nfaults || sh_any_slow())) {
    dur_note(c, t1_ - t0_);
    slow_stall(c, (long long)w->ops[w->nops - 1].seq, NULL);
  }
  if (c->index == 0 && w->nops > 0) simcuda_note_seq(c->dev, (long long)w->ops[w->nops - 1].seq);
  if (!w->captured && sn_nfaults) gpu_hang(c, w->ops, w->nops);
  if (!w->captured) { atomic_fetch_add(&c->done, 1); sn_wake(&c->done); }
  atomic_store(&w->finished, 1);
  sn_wake(&w->finished);
}
/* other streams used by the same group wait for the fused item (NCCL joins them) */
static void work_join(void *arg) {
  struct work *w = arg;
  while (!atomic_load(&w->finished)) sn_wait(&w->finished, 0);
  if (simcuda_model_on()) simcuda_model_advance_to(w->vt_end);
}

/* the stall after collective seq: it delays collective seq + 1, the one a `from=`/`every=`
 * onset names */
static int slow_us(struct ncclComm *c, long long seq) {
  unsigned us = 0, med = 0;
  int have_med = 0;
  for (int i = 0; i < sn_nfaults; i++) {
    const struct sn_fault *f = &sn_faults[i];
    if (f->kind != SN_F_SLOW || f->rank != c->fault_rank || f->compute || !sn_fault_on(f, seq + 1)) continue;
    if (!f->elem) { us += f->us; continue; }
    if (!have_med) { med = dur_median_us(c); have_med = 1; }
    us += (unsigned)((double)med * (double)f->elem / 100000.0 + 0.5);
  }
  double hp = sh_slow_pct_at(c->fault_rank, simcuda_hostname(), seq);   /* tests/sim/nvml/simhealth.h */
  if (simcuda_model_on()) {   /* the modeled cost already divides by the GPU model's speed */
    double speed = 1;
    sh_gpu_model(simcuda_hostname(), &speed);
    if (speed < 1) hp -= (1.0 / speed - 1.0) * 100.0;
  }
  if (hp > 0) {
    if (!have_med) med = dur_median_us(c);
    us += (unsigned)((double)med * hp / 100.0 + 0.5);
  }
  return (int)us;
}

/* the slow fault's stall after collective seq. An eager item's is taken by its own work
 * function when it completes (stream NULL: after the running item), so a pct stall's median
 * covers exactly the comm's items up to seq, whatever the host thread's lead: the same on
 * every run of a seeded modeled job. A captured item's is fixed at capture. */
static void slow_stall(struct ncclComm *c, long long seq, CUstream stream) {
  int us = slow_us(c, seq);
  if (us <= 0) return;
  if (stream) simcuda_stream_stall_after(stream, (unsigned)us);
  else simcuda_worker_stall_after((unsigned)us);
  if (!has_pct_fault(c)) return;
  pthread_mutex_lock(&dur_mu);   /* where the slowdown starts (NCCL_DEBUG=INFO) */
  struct durhist *h = dur_slot(c, 0);
  int first = h && !h->announced;
  if (first) h->announced = 1;
  pthread_mutex_unlock(&dur_mu);
  if (first)
    sn_info(c->dev, "slow fault: rank %d first stall %d us, before seq %lld (comm %d of the process)",
            c->fault_rank, us, seq + 1, c->index);
}

static ncclResult_t launch_comm(struct ncclComm *c, struct sn_op *ops, int nops) {
  /* the work item owns ops; they are freed with its last reference (read below only) */
  CUstream stream0 = (CUstream)ops[0].stream;
  unsigned long long last_seq = (unsigned long long)ops[nops - 1].seq;
  struct work *w = calloc(1, sizeof *w);
  if (!w) { free(ops); return ncclSystemError; }
  w->c = c; w->ops = ops; w->nops = nops;
  /* captured: the item is a node of the graph and runs at every replay with the same ops, as
   * NCCL's persistent plan does (src/enqueue.cc:1420-1435 of 2.28.9: the plan's work is kept
   * with the graph; :1519-1533 its proxy callbacks are captured too; :1542-1545 freed with the
   * graph): no ticket (replays are ordered by their streams), no KernelCh events */
  int captured = w->captured = simcuda_stream_capturing((CUstream)ops[0].stream) != 0;
  atomic_store(&w->refs, 2);   /* the stream's and this function's until its join loop is done */
  void *ph_[64], **ph = nops <= 64 ? ph_ : calloc((size_t)nops, sizeof *ph); /* profiler handles */
  sn_prof_launch_start(c, ops, nops);
  for (int i = 0; ph && i < nops; i++) ph[i] = ops[i].prof_h;
  if (w->captured || !ph) for (int i = 0; i < nops; i++) ops[i].prof_h = NULL; /* no KernelCh on replay */
  pthread_mutex_lock(&c->lock);
  if (!w->captured) w->ticket = c->issued++;
  CUresult cr = simcuda_enqueue((CUstream)ops[0].stream, work_run, w, work_unref);
  if (cr != CUDA_SUCCESS) {
    if (!w->captured) c->issued--;
    pthread_mutex_unlock(&c->lock);
    free(ops); free(w);
    sn_warn(c->dev, "Cuda failure %d enqueuing NCCL work", (int)cr);
    if (ph) sn_prof_launch_stop(c, ph, nops);
    if (ph != ph_) free(ph);
    return ncclUnhandledCudaError;
  }
  pthread_mutex_unlock(&c->lock);
  if (ph) sn_prof_launch_stop(c, ph, nops);   /* enqueued: Coll/P2p events stop */
  if (ph != ph_) free(ph);
  for (int i = 1; i < nops; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++) if (ops[j].stream == ops[i].stream) seen = 1;
    if (seen || w->captured) continue;
    atomic_fetch_add(&w->refs, 1);
    if (simcuda_enqueue((CUstream)ops[i].stream, work_join, w, work_unref) != CUDA_SUCCESS) work_unref(w);
  }
  work_unref(w);   /* ops and w may be freed from here on */
  if (captured) slow_stall(c, (long long)last_seq, stream0);   /* fixed with the graph's node */
  return ncclSuccess;
}

/* launch a list of (comm, op): one fused item per comm, ops in call order */
static ncclResult_t launch_all(struct pend *list, int n) {
  ncclResult_t ret = ncclSuccess;
  char *taken = calloc((size_t)n + 1, 1);
  if (!taken) return ncclSystemError;
  for (int i = 0; i < n; i++) {
    if (taken[i]) continue;
    struct ncclComm *c = list[i].c;
    int cnt = 0;
    for (int j = i; j < n; j++) if (list[j].c == c) cnt++;
    struct sn_op *ops = malloc((size_t)cnt * sizeof *ops);
    if (!ops) { ret = ncclSystemError; break; }
    int k = 0;
    for (int j = i; j < n; j++) if (list[j].c == c) { ops[k++] = list[j].op; taken[j] = 1; }
    ncclResult_t r = launch_comm(c, ops, cnt);
    if (r && !ret) ret = r;
  }
  free(taken);
  return ret;
}

ncclResult_t sn_submit(struct ncclComm *c, struct sn_op *op) {
  if (g_depth > 0) {
    if (g_nops == g_cap) {
      int nc = g_cap ? g_cap * 2 : 16;
      struct pend *n = realloc(g_ops, (size_t)nc * sizeof *n);
      if (!n) return ncclSystemError;
      g_ops = n; g_cap = nc;
    }
    g_ops[g_nops].c = c;
    g_ops[g_nops].op = *op;
    g_nops++;
    return ncclSuccess;
  }
  struct pend p = {c, *op};
  return launch_all(&p, 1);
}

/* ---------------------------------------------------------------- groups */
ncclResult_t sn_group_start_internal(void) { g_depth++; return ncclSuccess; }

static void drop_group(void) {
  g_nops = 0;
  for (struct sn_job *j = g_jobs, *nx; j; j = nx) { nx = j->next; if (j->done) j->done(j); }
  g_jobs = g_jobs_tail = NULL;
  g_err = ncclSuccess;
}

static ncclResult_t run_jobs(void) {
  ncclResult_t ret = ncclSuccess;
  struct sn_job *jobs = g_jobs;
  g_jobs = g_jobs_tail = NULL;
  int njobs = 0;
  for (struct sn_job *j = jobs; j; j = j->next) njobs++;
  if (njobs == 1 && !jobs->nonblocking) {   /* nothing to overlap with: run it here */
    ret = jobs->fn(jobs);
    if (jobs->done) jobs->done(jobs);
    return ret;
  }
  for (struct sn_job *j = jobs; j; j = j->next) {
    if (pthread_create(&j->th, NULL, sn_job_thread, j) != 0) { j->res = ncclSystemError; j->th = 0; }
  }
  for (struct sn_job *j = jobs, *nx; j; j = nx) {
    nx = j->next;
    if (j->nonblocking && j->comm && j->th) {   /* joined later by ensure_ready / destroy */
      pthread_mutex_lock(&j->comm->lock);
      j->comm->init_thread = j->th;
      j->comm->init_thread_live = 1;
      j->comm->init_job = j;
      pthread_mutex_unlock(&j->comm->lock);
      if (ret == ncclSuccess) ret = ncclInProgress;
      continue;
    }
    if (j->th) pthread_join(j->th, NULL);
    if (j->res != ncclSuccess && (ret == ncclSuccess || ret == ncclInProgress)) ret = j->res;
    if (j->done) j->done(j);
  }
  return ret;
}

static ncclResult_t group_end(ncclSimInfo_t *sim) {
  if (g_depth == 0) {
    sn_warn(-1, "ncclGroupEnd: not in a group call.");
    return ncclInvalidUsage;
  }
  if (--g_depth > 0) return ncclSuccess;
  ncclResult_t ret = g_err;
  if (ret != ncclSuccess) { drop_group(); return ret; }
  if (sim) {
    ncclSimInfo_t in = NCCL_SIM_INFO_INITIALIZER;
    size_t real;
    memcpy(&real, sim, sizeof real);
    if (real > sizeof in) real = sizeof in;
    in.magic = 0;
    memcpy(&in, sim, real);
    if (in.magic != 0x74685283) {
      sn_warn(-1, "ncclSimInfo_t argument not initialized via NCCL_SIM_INFO_INITIALIZER");
      drop_group();
      return ncclInvalidArgument;
    }
    /* model: per op 10 us + 5 us per ring step + bytes moved at 20 GB/s */
    double us = 0;
    for (int i = 0; i < g_nops; i++) {
      struct sn_op *op = &g_ops[i].op;
      int n = g_ops[i].c->nranks;
      double bytes = (double)op->count * (double)sn_type_size(op->dtype), steps = n - 1, factor = 1;
      switch (op->coll) {
      case SN_ALLREDUCE: steps = 2.0 * (n - 1); factor = n > 1 ? 2.0 * (n - 1) / n : 0; break;
      case SN_ALLGATHER: case SN_ALLTOALL: case SN_GATHER: case SN_SCATTER: factor = n - 1; break;
      case SN_REDUCESCATTER: factor = n - 1; break;
      case SN_SEND: case SN_RECV: steps = 1; break;
      default: break;
      }
      us += 10.0 + 5.0 * steps + bytes * factor / 20000.0;
    }
    float est = (float)us;
    if (real >= offsetof(ncclSimInfo_t, estimatedTime) + sizeof(float)) sim->estimatedTime = est;
    drop_group();
    return ncclSuccess;
  }
  if (g_jobs) {
    ret = run_jobs();
    if (ret != ncclSuccess && ret != ncclInProgress) { drop_group(); return ret; }
  }
  ncclResult_t r2 = ncclSuccess;
  if (g_nops) {
    /* a nonblocking comm still initialising must be ready before its ops launch */
    for (int i = 0; i < g_nops; i++) (void)sn_comm_ensure_ready(g_ops[i].c);
    r2 = launch_all(g_ops, g_nops);
  }
  g_nops = 0;
  g_err = ncclSuccess;
  return r2 != ncclSuccess ? r2 : ret;
}
ncclResult_t sn_group_end_internal(void) { return group_end(NULL); }

SN_API ncclResult_t pncclGroupStart(void) { return sn_group_start_internal(); }
SN_ALIAS(ncclGroupStart)
SN_API ncclResult_t pncclGroupEnd(void) { return group_end(NULL); }
SN_ALIAS(ncclGroupEnd)
SN_API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  return group_end(simInfo);   /* NULL: like NCCL, a plain ncclGroupEnd */
}
SN_ALIAS(ncclGroupSimulateEnd)

/* ---------------------------------------------------------------- enqueue check */
static const char *opnames[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                "AlltoAll", "Gather", "Scatter", "Send", "Recv"};

/* NCCL_CHECK_POINTERS=1: CudaPtrCheck (argcheck.cc:10-26) on the buffers ArgsCheck names
 * (argcheck.cc:71-84): Send/Recv only with count > 0; a collective's sendbuff except a
 * Broadcast's off the root, its recvbuff except a Reduce's off the root, whatever the count.
 * Not a device or pinned or managed allocation (cudaPointerGetAttributes: no device
 * pointer), or device memory of another device: ncclInvalidArgument. */
static ncclResult_t ptr_check_cuda(const void *p, struct ncclComm *c, const char *ptrname, const char *opname) {
  int dev = -1;
  int kind = p ? simcuda_ptr_kind(p, &dev) : 0;
  if (kind == 0) {
    sn_warn(c->dev, "%s : %s %p is not a valid pointer", opname, ptrname, p);
    return ncclInvalidArgument;
  }
  if (kind == 1 && dev != c->dev) {
    sn_warn(c->dev, "%s : %s allocated on device %d mismatchs with NCCL device %d", opname, ptrname, dev, c->dev);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}
static ncclResult_t check_pointers(struct ncclComm *c, const struct sn_op *o, const char *opname) {
  ncclResult_t r;
  if (o->coll == SN_SEND || o->coll == SN_RECV) {
    if (o->count > 0)
      return ptr_check_cuda(o->coll == SN_SEND ? o->sendbuff : o->recvbuff, c, "buff", opname);
    return ncclSuccess;
  }
  if (o->coll != SN_BROADCAST || c->rank == o->root)
    if ((r = ptr_check_cuda(o->sendbuff, c, "sendbuff", opname))) return r;
  if (o->coll != SN_REDUCE || c->rank == o->root)
    if ((r = ptr_check_cuda(o->recvbuff, c, "recvbuff", opname))) return r;
  return ncclSuccess;
}

static ncclResult_t enqueue(int coll, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t dt,
                            ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  const char *name = opnames[coll];
  ncclResult_t r = sn_comm_check(comm, name);
  if (r) { sn_group_error(r); return r; }
  if (comm->revoked) {
    sn_warn(comm->dev, "%s: communicator was revoked", name);
    sn_group_error(ncclInvalidUsage);
    return ncclInvalidUsage;
  }
  if ((r = sn_comm_ensure_ready(comm))) goto fail;
  if (root < 0 || root >= comm->nranks) {
    sn_warn(comm->dev, "%s : invalid root %d (root should be in the 0..%d range)", name, root, comm->nranks);
    r = ncclInvalidArgument; goto fail;
  }
  if ((int)dt < 0 || (int)dt >= ncclNumTypes) {
    sn_warn(comm->dev, "%s : invalid type %d", name, (int)dt);
    r = ncclInvalidArgument; goto fail;
  }
  if ((int)op < 0) {
    sn_warn(comm->dev, "%s : invalid reduction operation %d", name, (int)op);
    r = ncclInvalidArgument; goto fail;
  }
  struct sn_op o;
  memset(&o, 0, sizeof o);
  o.coll = coll; o.sendbuff = sendbuff; o.recvbuff = recvbuff; o.count = count; o.dtype = (int)dt;
  o.root = root; o.stream = stream;
  pthread_mutex_lock(&comm->lock);
  if ((int)op >= (int)ncclNumOps) {
    int ix = (int)op - (int)ncclNumOps;
    if (ix >= comm->nuserops || !comm->userops[ix].used) {
      pthread_mutex_unlock(&comm->lock);
      sn_warn(comm->dev, "%s : reduction operation %d unknown to this communicator", name, (int)op);
      r = ncclInvalidArgument; goto fail;
    }
    struct sn_userop *u = &comm->userops[ix];
    o.redop = SN_PREMULSUM;
    if (u->is_ptr) { o.scalar_ptr = u->ptr; o.scalar_dtype = u->dtype; }
    else sn_convert_scalar(u->dtype, u->scalar, (int)dt, o.scalar);
  } else {
    switch (op) {
    case ncclSum: o.redop = SN_SUM; break;
    case ncclProd: o.redop = SN_PROD; break;
    case ncclMax: o.redop = SN_MAX; break;
    case ncclMin: o.redop = SN_MIN; break;
    default:   /* ncclAvg */
      if (sn_is_float((int)dt)) { o.redop = SN_PREMULSUM; sn_avg_scalar((int)dt, comm->nranks, o.scalar); }
      else o.redop = SN_SUMPOSTDIV;
      break;
    }
  }
  pthread_mutex_unlock(&comm->lock);
  /* NCCL checks buffers at the call only with NCCL_CHECK_POINTERS=1 (argcheck.cc:71-84, before
   * a zero count is discarded); otherwise a NULL buffer is enqueued and faults on the device,
   * which exec.c models (sn_exec_ops) */
  if (comm->check_pointers && (r = check_pointers(comm, &o, name))) goto fail;
  /* fault matching: seq counts this rank's collective + P2P calls on this comm */
  sn_faults_init();
  pthread_mutex_lock(&comm->lock);
  o.seq = comm->seq++;
  pthread_mutex_unlock(&comm->lock);
  for (int i = 0; i < sn_nfaults; i++) {
    struct sn_fault *f = &sn_faults[i];
    if (f->kind == SN_F_SLOW || f->kind == SN_F_LINK || f->kind == SN_F_NIC || (f->kind == SN_F_HANG && f->gpu)) continue;
    if (f->rank != comm->fault_rank || (unsigned long long)f->seq != o.seq || f->comm != comm->index) continue;
    if (f->kind == SN_F_FAIL) {
      sn_warn(comm->dev, "%s : injected failure %d (COLLSCOPE_SIM_FAULTS)", name, f->code);
      return (ncclResult_t)f->code;
    }
    if (f->kind == SN_F_HANG && f->at_hop) {   /* stall: the host thread blocks before enqueuing */
      sn_warn(comm->dev, "%s : injected stall before enqueue (COLLSCOPE_SIM_FAULTS)", name);
      for (;;) {
        uint32_t v = atomic_load(&comm->shm->abort);
        if (v) break;
        sn_wait(&comm->shm->abort, v);
      }
      r = ncclRemoteError;
      goto fail;
    }
    if (f->kind == SN_F_HANG) o.hang = 1;
    if (f->kind == SN_F_FLIP) {
      o.flip_elem = f->elem; o.flip_bit = f->bit;
      if (f->at_hop) o.flip_hop = 1; else o.flip_out = 1;
    }
  }
  /* an empty collective is discarded (enqueue.cc:2554-2555); an empty Send/Recv stays a task
   * that needs its peer (enqueue.cc:2550-2551 p2pTaskAppend; one step, enqueue.cc:983-985) */
  if (count == 0 && !o.hang && coll != SN_SEND && coll != SN_RECV) return ncclSuccess;
  r = sn_submit(comm, &o);
  if (r) goto fail;
  return ncclSuccess;
fail:
  sn_group_error(r);
  if (!comm->blocking) { int z = ncclSuccess; atomic_compare_exchange_strong(&comm->async_err, &z, r); }
  return r;
}

SN_API ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(SN_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}
SN_ALIAS(ncclAllReduce)

SN_API ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                   int root, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(SN_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}
SN_ALIAS(ncclBroadcast)

SN_API ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(SN_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}
SN_ALIAS(ncclReduce)

SN_API ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(SN_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}
SN_ALIAS(ncclAllGather)

SN_API ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                       cudaStream_t stream) {
  return enqueue(SN_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}
SN_ALIAS(ncclReduceScatter)

SN_API ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclComm_t comm, cudaStream_t stream) {
  return enqueue(SN_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream);
}
SN_ALIAS(ncclAlltoAll)

SN_API ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                int root, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(SN_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}
SN_ALIAS(ncclGather)

SN_API ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                 int root, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(SN_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}
SN_ALIAS(ncclScatter)

SN_API ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                              ncclComm_t comm, cudaStream_t stream) {
  return enqueue(SN_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, comm, stream);
}
SN_ALIAS(ncclSend)

SN_API ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                              cudaStream_t stream) {
  return enqueue(SN_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}
SN_ALIAS(ncclRecv)
