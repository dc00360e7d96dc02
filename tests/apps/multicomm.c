/* tests/apps/multicomm.c: one world communicator split into tensor-parallel groups
 * (consecutive ranks, --tp of them) and data-parallel groups (same position in each
 * TP group) with ncclCommSplit, used alternately per step: TP AllReduce, TP AllGather,
 * DP AllReduce, world Broadcast. Every result is checked exactly.
 * --comms N: N concurrent communicators on their own streams instead (concurrent()). */
#include <string.h>

#include "common.h"

static const char usage[] =
    "usage: multicomm [--steps N] [--size BYTES] [--tp N | --comms N [--compute-us N]] [-v]\n"
    "  world comm + ncclCommSplit into tensor-parallel groups of N consecutive ranks\n"
    "  (default 2; 1 if it does not divide the world) and data-parallel groups, used\n"
    "  alternately each step.\n"
    "  --comms N (2..16): instead, N world-sized communicators on N streams, one AllReduce\n"
    "  on each per step, all in flight at once; --compute-us N: GPU time before each.\n";

static double v_of(int r, size_t i, int step, int salt) {
  return (double)((r + 1) * (int)((i + (size_t)step + (size_t)salt) % 5 + 1));
}

/* --comms N: N communicators (ncclCommSplit of the world, each with every rank), each with
 * its own stream; per step one AllReduce on each, all in flight at once (no synchronize in
 * between: the streams run concurrently, as PyTorch's process groups do), then every result
 * is checked. --compute-us N: N us of GPU time on each stream before its AllReduce. Communicator k sums (r + 1) x (k + 1) x f(i, step). */
static long compute_us;
static void CUDART_CB compute(void *p) { app_sleep_us(*(long *)p); }

static int concurrent(struct app *a) {
  int N = a->comms;
  compute_us = a->compute_us;
  ncclComm_t world = app_world_comm(a), cs[16];
  cudaStream_t ss[16];
  float *d[16], *h[16];
  size_t cnt = a->size / sizeof(float) ? a->size / sizeof(float) : 1;
  for (int k = 0; k < N; k++) {
    NCCLCHECK(ncclCommSplit(world, 0, a->rank, &cs[k], NULL));
    CUDACHECK(cudaStreamCreate(&ss[k]));
    CUDACHECK(cudaMalloc((void **)&d[k], cnt * sizeof(float)));
    CUDACHECK(cudaMallocHost((void **)&h[k], cnt * sizeof(float)));
  }
  double tri = (double)a->world * (a->world + 1) / 2.0;
  uint64_t hsum = APP_FNV_INIT;
  for (int step = 0; step < a->steps; step++) {
    for (int k = 0; k < N; k++) {
      for (size_t i = 0; i < cnt; i++) h[k][i] = (float)((a->rank + 1) * (k + 1) * (int)((i + (size_t)step) % 5 + 1));
      CUDACHECK(cudaMemcpyAsync(d[k], h[k], cnt * sizeof(float), cudaMemcpyHostToDevice, ss[k]));
      if (compute_us > 0) CUDACHECK(cudaLaunchHostFunc(ss[k], compute, &compute_us));
      NCCLCHECK(ncclAllReduce(d[k], d[k], cnt, ncclFloat32, ncclSum, cs[k], ss[k]));
      CUDACHECK(cudaMemcpyAsync(h[k], d[k], cnt * sizeof(float), cudaMemcpyDeviceToHost, ss[k]));
    }
    for (int k = 0; k < N; k++) {
      CUDACHECK(cudaStreamSynchronize(ss[k]));
      for (size_t i = 0; i < cnt; i++) {
        double want = tri * (k + 1) * (double)((i + (size_t)step) % 5 + 1);
        if (h[k][i] != want) app_mismatch(a, "concurrent.allreduce", i, h[k][i], want);
      }
      hsum = app_fnv(hsum, h[k], cnt * sizeof(float));
    }
  }
  int rc = app_finish(a);
  if (rc == 0 && a->rank == 0)
    printf("summary multicomm world=%d comms=%d steps=%d checksum=%016llx PASS\n", a->world, N, a->steps,
           (unsigned long long)hsum);
  for (int k = 0; k < N; k++) {
    CUDACHECK(cudaFree(d[k]));
    CUDACHECK(cudaFreeHost(h[k]));
    CUDACHECK(cudaStreamDestroy(ss[k]));
    NCCLCHECK(ncclCommDestroy(cs[k]));
  }
  NCCLCHECK(ncclCommDestroy(world));
  return rc;
}

int main(int argc, char **argv) {
  struct app a;
  app_init(&a, "multicomm", argc, argv, usage);
  if (a.comms > 1) return concurrent(&a);
  int tp = a.tp;
  if (tp > a.world || a.world % tp != 0) {
    if (a.rank == 0) printf("multicomm: --tp %d does not divide world %d: using tp=1\n", tp, a.world);
    tp = 1;
  }
  int dp = a.world / tp;
  ncclComm_t world = app_world_comm(&a), tpc, dpc;
  NCCLCHECK(ncclCommSplit(world, a.rank / tp, a.rank, &tpc, NULL));
  NCCLCHECK(ncclCommSplit(world, a.rank % tp, a.rank, &dpc, NULL));
  int n, r;
  NCCLCHECK(ncclCommCount(tpc, &n));
  NCCLCHECK(ncclCommUserRank(tpc, &r));
  if (n != tp || r != a.rank % tp) app_mismatch(&a, "tp.comm(size,rank)", 0, n * 1000 + r, tp * 1000 + a.rank % tp);
  NCCLCHECK(ncclCommCount(dpc, &n));
  NCCLCHECK(ncclCommUserRank(dpc, &r));
  if (n != dp || r != a.rank / tp) app_mismatch(&a, "dp.comm(size,rank)", 0, n * 1000 + r, dp * 1000 + a.rank / tp);

  cudaStream_t s_tp, s_dp, s_w; /* one stream per process group, like PyTorch */
  CUDACHECK(cudaStreamCreate(&s_tp));
  CUDACHECK(cudaStreamCreate(&s_dp));
  CUDACHECK(cudaStreamCreate(&s_w));
  size_t cnt = a.size / sizeof(float) ? a.size / sizeof(float) : 1;
  float *d0, *d1, *dg, *h;
  CUDACHECK(cudaMalloc((void **)&d0, cnt * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&d1, cnt * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&dg, cnt * (size_t)tp * sizeof(float)));
  CUDACHECK(cudaMallocHost((void **)&h, cnt * (size_t)tp * sizeof(float)));
  int tp_base = (a.rank / tp) * tp, dp_pos = a.rank % tp;
  uint64_t hsum = APP_FNV_INIT;
  long ops = 0;
  for (int step = 0; step < a.steps; step++) {
    /* 1. TP AllReduce */
    for (size_t i = 0; i < cnt; i++) h[i] = (float)v_of(a.rank, i, step, 0);
    CUDACHECK(cudaMemcpyAsync(d0, h, cnt * sizeof(float), cudaMemcpyHostToDevice, s_tp));
    NCCLCHECK(ncclAllReduce(d0, d1, cnt, ncclFloat32, ncclSum, tpc, s_tp));
    CUDACHECK(cudaMemcpyAsync(h, d1, cnt * sizeof(float), cudaMemcpyDeviceToHost, s_tp));
    CUDACHECK(cudaStreamSynchronize(s_tp));
    for (size_t i = 0; i < cnt; i++) {
      double want = 0;
      for (int k = 0; k < tp; k++) want += v_of(tp_base + k, i, step, 0);
      if (h[i] != want) app_mismatch(&a, "tp.allreduce", i, h[i], want);
    }
    hsum = app_fnv(hsum, h, cnt * sizeof(float));
    /* 2. TP AllGather */
    for (size_t i = 0; i < cnt; i++) h[i] = (float)(a.rank * 10 + (int)(i % 10));
    CUDACHECK(cudaMemcpyAsync(d0, h, cnt * sizeof(float), cudaMemcpyHostToDevice, s_tp));
    NCCLCHECK(ncclAllGather(d0, dg, cnt, ncclFloat32, tpc, s_tp));
    CUDACHECK(cudaMemcpyAsync(h, dg, cnt * (size_t)tp * sizeof(float), cudaMemcpyDeviceToHost, s_tp));
    CUDACHECK(cudaStreamSynchronize(s_tp));
    for (int k = 0; k < tp; k++)
      for (size_t i = 0; i < cnt; i++) {
        double want = (tp_base + k) * 10 + (int)(i % 10);
        if (h[(size_t)k * cnt + i] != want) app_mismatch(&a, "tp.allgather", (size_t)k * cnt + i, h[(size_t)k * cnt + i], want);
      }
    /* 3. DP AllReduce */
    for (size_t i = 0; i < cnt; i++) h[i] = (float)v_of(a.rank, i, step, 1);
    CUDACHECK(cudaMemcpyAsync(d0, h, cnt * sizeof(float), cudaMemcpyHostToDevice, s_dp));
    NCCLCHECK(ncclAllReduce(d0, d0, cnt, ncclFloat32, ncclSum, dpc, s_dp));
    CUDACHECK(cudaMemcpyAsync(h, d0, cnt * sizeof(float), cudaMemcpyDeviceToHost, s_dp));
    CUDACHECK(cudaStreamSynchronize(s_dp));
    for (size_t i = 0; i < cnt; i++) {
      double want = 0;
      for (int k = 0; k < dp; k++) want += v_of(dp_pos + k * tp, i, step, 1);
      if (h[i] != want) app_mismatch(&a, "dp.allreduce", i, h[i], want);
    }
    hsum = app_fnv(hsum, h, cnt * sizeof(float));
    /* 4. world Broadcast from a rotating root */
    int root = step % a.world;
    for (size_t i = 0; i < cnt; i++) h[i] = (float)(a.rank == root ? (double)((i * 13 + (size_t)step) % 101) : -1.0);
    CUDACHECK(cudaMemcpyAsync(d1, h, cnt * sizeof(float), cudaMemcpyHostToDevice, s_w));
    NCCLCHECK(ncclBroadcast(d1, d1, cnt, ncclFloat32, root, world, s_w));
    CUDACHECK(cudaMemcpyAsync(h, d1, cnt * sizeof(float), cudaMemcpyDeviceToHost, s_w));
    CUDACHECK(cudaStreamSynchronize(s_w));
    for (size_t i = 0; i < cnt; i++) {
      double want = (double)((i * 13 + (size_t)step) % 101);
      if (h[i] != want) app_mismatch(&a, "world.broadcast", i, h[i], want);
    }
    ops += 4;
    if (a.verbose && a.rank == 0) printf("multicomm: step %d ok\n", step);
  }
  int rc = app_finish(&a);
  if (rc == 0)
    printf("result multicomm rank=%d tp_group=%d dp_group=%d checksum=%016llx\n", a.rank, a.rank / tp, a.rank % tp,
           (unsigned long long)hsum);
  if (rc == 0 && a.rank == 0)
    printf("summary multicomm world=%d tp=%d dp=%d steps=%d ops=%ld PASS\n", a.world, tp, dp, a.steps, ops);
  CUDACHECK(cudaFree(d0));
  CUDACHECK(cudaFree(d1));
  CUDACHECK(cudaFree(dg));
  CUDACHECK(cudaFreeHost(h));
  CUDACHECK(cudaStreamDestroy(s_tp));
  CUDACHECK(cudaStreamDestroy(s_dp));
  CUDACHECK(cudaStreamDestroy(s_w));
  NCCLCHECK(ncclCommDestroy(dpc));
  NCCLCHECK(ncclCommDestroy(tpc));
  NCCLCHECK(ncclCommDestroy(world));
  return rc;
}
