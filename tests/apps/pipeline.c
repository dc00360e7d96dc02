/* tests/apps/pipeline.c: pipeline parallelism, one stage per rank.
 *
 * Forward: microbatch m enters stage 0 as x(m,i); stage r adds r+1 and sends it on to
 * stage r+1. Backward: gradients y(m,i) enter the last stage and flow back the same
 * way. GPipe-style ticks: at tick t, stage r receives microbatch t-r from its
 * upstream neighbour and sends the output of microbatch t-1-r downstream, both inside
 * one ncclGroupStart/ncclGroupEnd. The last stage checks the forward outputs
 * (x + W(W+1)/2), stage 0 the backward outputs (y + W(W+1)/2), exactly.
 * --compute-us N with --layers L0,L1,...: stage r's work on each microbatch also takes
 * L_r x N us on its stream (a sleep, as dp_train --compute-us: GPU time on the modeled clock,
 * 1/speed as long on a slower GPU model). --pause-ms N: the host thread sleeps N ms of wall time
 * after each step (no modeled time: on the modeled clock it only lets collscope's harvest
 * thread catch up). */
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "common.h"

static const char usage[] =
    "usage: pipeline [--steps N] [--size BYTES] [--microbatches N] [--compute-us N [--layers L0,L1,...]]\n"
    "                [--pause-ms N] [-v]\n"
    "  one pipeline stage per rank; per step a forward and a backward pass of N\n"
    "  microbatches (default 4) of BYTES (default 1M) of fp32, neighbour send/recv\n"
    "  grouped with ncclGroupStart/End.\n"
    "  --compute-us N: each stage's work per microbatch and layer sleeps N us on its stream;\n"
    "  --layers: one layer count per stage (default 1 each).\n";

static int stage_us; /* this stage's compute per microbatch: layers x --compute-us */
static void CUDART_CB stage_compute(void *p) {
  (void)p;
  struct timespec ts = {stage_us / 1000000, (long)(stage_us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static double x_val(int m, size_t i) { return (double)(((size_t)m * 3 + i) % 17); }
static double y_val(int m, size_t i) { return (double)(((size_t)m + 2 * i) % 19); }

struct pipe {
  struct app *a;
  ncclComm_t comm;
  cudaStream_t s;
  size_t n;
  float **din, **dout; /* per microbatch */
  float *host;
  long sends, recvs;
};

/* One pass; dir +1 (forward: 0 -> W-1) or -1 (backward). */
static void pass(struct pipe *p, int dir, int step, uint64_t *h) {
  struct app *a = p->a;
  int W = a->world, M = a->microbatches;
  int pos = dir > 0 ? a->rank : W - 1 - a->rank; /* position along the flow */
  int up = a->rank - dir, down = a->rank + dir;
  int first = pos == 0, last = pos == W - 1;
  size_t bytes = p->n * sizeof(float);
  for (int t = 0; t < M + W - 1; t++) {
    int m = t - pos, mo = t - 1 - pos;
    int do_recv = !first && m >= 0 && m < M, do_send = !last && mo >= 0 && mo < M;
    if (do_recv || do_send) {
      NCCLCHECK(ncclGroupStart());
      if (do_recv) {
        NCCLCHECK(ncclRecv(p->din[m], p->n, ncclFloat32, up, p->comm, p->s));
        p->recvs++;
      }
      if (do_send) {
        NCCLCHECK(ncclSend(p->dout[mo], p->n, ncclFloat32, down, p->comm, p->s));
        p->sends++;
      }
      NCCLCHECK(ncclGroupEnd());
    }
    if (m < 0 || m >= M) continue;
    if (stage_us > 0) CUDACHECK(cudaLaunchHostFunc(p->s, stage_compute, NULL));
    /* this stage's "compute" on microbatch m: out = in + (rank+1) */
    if (first) {
      for (size_t i = 0; i < p->n; i++) p->host[i] = (float)(dir > 0 ? x_val(m, i) : y_val(m, i));
    } else {
      CUDACHECK(cudaMemcpyAsync(p->host, p->din[m], bytes, cudaMemcpyDeviceToHost, p->s));
      CUDACHECK(cudaStreamSynchronize(p->s));
    }
    for (size_t i = 0; i < p->n; i++) p->host[i] += (float)(a->rank + 1);
    if (last) {
      double tri = (double)W * (W + 1) / 2.0;
      for (size_t i = 0; i < p->n; i++) {
        double want = (dir > 0 ? x_val(m, i) : y_val(m, i)) + tri;
        if (p->host[i] != want) app_mismatch(a, dir > 0 ? "forward" : "backward", i, p->host[i], want);
      }
      if (step == a->steps - 1) *h = app_fnv(*h, p->host, bytes);
    } else {
      CUDACHECK(cudaMemcpyAsync(p->dout[m], p->host, bytes, cudaMemcpyHostToDevice, p->s));
      CUDACHECK(cudaStreamSynchronize(p->s)); /* host buffer is reused next tick */
    }
  }
  CUDACHECK(cudaStreamSynchronize(p->s));
}

/* --pause-ms N (taken out of argv before the common options) */
static long take_pause(int *argc, char **argv) {
  long ms = 0;
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    if (!strcmp(argv[i], "--pause-ms") && i + 1 < *argc) {
      char *end;
      ms = strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end || ms < 0 || ms > 10000) {
        fprintf(stderr, "pipeline: --pause-ms: expected 0..10000, got '%s'\n", argv[i]);
        exit(2);
      }
    } else {
      argv[out++] = argv[i];
    }
  }
  argv[out] = NULL;
  *argc = out;
  return ms;
}

int main(int argc, char **argv) {
  struct app a;
  long pause_ms = take_pause(&argc, argv);
  app_init(&a, "pipeline", argc, argv, usage);
  if (a.compute_us > 0) stage_us = (a.stage_layers > 0 ? a.stage_layers : 1) * a.compute_us;
  struct pipe p = {.a = &a, .comm = app_world_comm(&a)};
  CUDACHECK(cudaStreamCreate(&p.s));
  p.n = a.size / sizeof(float) ? a.size / sizeof(float) : 1;
  p.din = calloc((size_t)a.microbatches, sizeof *p.din);
  p.dout = calloc((size_t)a.microbatches, sizeof *p.dout);
  if (!p.din || !p.dout) app_die(__FILE__, __LINE__, "calloc", "out of memory");
  for (int m = 0; m < a.microbatches; m++) {
    CUDACHECK(cudaMalloc((void **)&p.din[m], p.n * sizeof(float)));
    CUDACHECK(cudaMalloc((void **)&p.dout[m], p.n * sizeof(float)));
  }
  CUDACHECK(cudaMallocHost((void **)&p.host, p.n * sizeof(float)));
  uint64_t hf = APP_FNV_INIT, hb = APP_FNV_INIT;
  for (int step = 0; step < a.steps; step++) {
    pass(&p, +1, step, &hf);
    pass(&p, -1, step, &hb);
    if (pause_ms > 0) {
      /* the raw system call: the simulator models the job's nanosleep as host time
       * (tests/sim/vclock.c), this pause must take wall time only */
      struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
      while (syscall(SYS_nanosleep, &ts, &ts) != 0) {
      }
    }
    if (a.verbose && a.rank == 0) printf("pipeline: step %d ok\n", step);
  }
  int rc = app_finish(&a);
  if (rc == 0 && a.rank == a.world - 1)
    printf("result pipeline last_stage=%d forward_checksum=%016llx\n", a.rank, (unsigned long long)hf);
  if (rc == 0 && a.rank == 0) {
    printf("result pipeline first_stage=0 backward_checksum=%016llx\n", (unsigned long long)hb);
    printf("summary pipeline stages=%d steps=%d microbatches=%d bytes=%zu PASS\n", a.world, a.steps,
           a.microbatches, p.n * sizeof(float));
  }
  if (a.verbose) printf("pipeline rank %d: %ld sends, %ld recvs\n", a.rank, p.sends, p.recvs);
  for (int m = 0; m < a.microbatches; m++) {
    CUDACHECK(cudaFree(p.din[m]));
    CUDACHECK(cudaFree(p.dout[m]));
  }
  CUDACHECK(cudaFreeHost(p.host));
  free(p.din);
  free(p.dout);
  CUDACHECK(cudaStreamDestroy(p.s));
  NCCLCHECK(ncclCommDestroy(p.comm));
  return rc;
}
