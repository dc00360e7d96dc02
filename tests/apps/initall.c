/* tests/apps/initall.c: one process drives every GPU: ncclCommInitAll over --ndev
 * devices (default all), then per step a group-launched AllReduce (one call per
 * device between ncclGroupStart/End, each on its device's stream) and a grouped
 * AllGather, checked exactly. No launcher needed. */
#include <string.h>

#include "common.h"

static const char usage[] =
    "usage: initall [--steps N] [--size BYTES] [--ndev N] [-v]\n"
    "  single process: ncclCommInitAll over N devices (default: all), group-launched\n"
    "  AllReduce and AllGather per step.\n";

static double v_of(int dev, size_t i, int step) { return (double)((dev + 1) * (int)((i + (size_t)step) % 7 + 1)); }

int main(int argc, char **argv) {
  struct app a;
  app_init(&a, "initall", argc, argv, usage);
  int nd = a.ndevs ? a.ndevs : a.ndev;
  if (nd > a.ndev) app_die(__FILE__, __LINE__, "--ndev", "more devices than present");
  ncclComm_t *comms = calloc((size_t)nd, sizeof *comms);
  cudaStream_t *st = calloc((size_t)nd, sizeof *st);
  float **dsend = calloc((size_t)nd, sizeof *dsend), **drecv = calloc((size_t)nd, sizeof *drecv);
  float **dgath = calloc((size_t)nd, sizeof *dgath), **h = calloc((size_t)nd, sizeof *h);
  if (!comms || !st || !dsend || !drecv || !dgath || !h) app_die(__FILE__, __LINE__, "calloc", "out of memory");
  NCCLCHECK(ncclCommInitAll(comms, nd, NULL));
  for (int d = 0; d < nd; d++) {
    int n, r, dev;
    NCCLCHECK(ncclCommCount(comms[d], &n));
    NCCLCHECK(ncclCommUserRank(comms[d], &r));
    NCCLCHECK(ncclCommCuDevice(comms[d], &dev));
    if (n != nd || r != d || dev != d) app_mismatch(&a, "comm(size,rank,dev)", (size_t)d, n * 10000 + r * 100 + dev, nd * 10000 + d * 100 + d);
  }
  size_t cnt = a.size / sizeof(float) ? a.size / sizeof(float) : 1;
  for (int d = 0; d < nd; d++) {
    CUDACHECK(cudaSetDevice(d));
    CUDACHECK(cudaStreamCreate(&st[d]));
    CUDACHECK(cudaMalloc((void **)&dsend[d], cnt * sizeof(float)));
    CUDACHECK(cudaMalloc((void **)&drecv[d], cnt * sizeof(float)));
    CUDACHECK(cudaMalloc((void **)&dgath[d], cnt * (size_t)nd * sizeof(float)));
    CUDACHECK(cudaMallocHost((void **)&h[d], cnt * (size_t)nd * sizeof(float)));
  }
  uint64_t hsum = APP_FNV_INIT;
  long ops = 0;
  for (int step = 0; step < a.steps; step++) {
    for (int d = 0; d < nd; d++) {
      for (size_t i = 0; i < cnt; i++) h[d][i] = (float)v_of(d, i, step);
      CUDACHECK(cudaSetDevice(d));
      CUDACHECK(cudaMemcpyAsync(dsend[d], h[d], cnt * sizeof(float), cudaMemcpyHostToDevice, st[d]));
    }
    NCCLCHECK(ncclGroupStart());
    for (int d = 0; d < nd; d++)
      NCCLCHECK(ncclAllReduce(dsend[d], drecv[d], cnt, ncclFloat32, ncclSum, comms[d], st[d]));
    NCCLCHECK(ncclGroupEnd());
    NCCLCHECK(ncclGroupStart());
    for (int d = 0; d < nd; d++) NCCLCHECK(ncclAllGather(dsend[d], dgath[d], cnt, ncclFloat32, comms[d], st[d]));
    NCCLCHECK(ncclGroupEnd());
    ops += 2;
    for (int d = 0; d < nd; d++) {
      CUDACHECK(cudaSetDevice(d));
      CUDACHECK(cudaMemcpyAsync(h[d], drecv[d], cnt * sizeof(float), cudaMemcpyDeviceToHost, st[d]));
      CUDACHECK(cudaStreamSynchronize(st[d]));
      for (size_t i = 0; i < cnt; i++) {
        double want = 0;
        for (int k = 0; k < nd; k++) want += v_of(k, i, step);
        if (h[d][i] != want) app_mismatch(&a, "allreduce", i, h[d][i], want);
      }
      if (d == 0) hsum = app_fnv(hsum, h[d], cnt * sizeof(float));
      CUDACHECK(cudaMemcpyAsync(h[d], dgath[d], cnt * (size_t)nd * sizeof(float), cudaMemcpyDeviceToHost, st[d]));
      CUDACHECK(cudaStreamSynchronize(st[d]));
      for (int k = 0; k < nd; k++)
        for (size_t i = 0; i < cnt; i++)
          if (h[d][(size_t)k * cnt + i] != v_of(k, i, step))
            app_mismatch(&a, "allgather", (size_t)k * cnt + i, h[d][(size_t)k * cnt + i], v_of(k, i, step));
    }
    if (a.verbose) printf("initall: step %d ok\n", step);
  }
  int rc = app_finish(&a);
  if (rc == 0)
    printf("summary initall ndev=%d steps=%d bytes=%zu grouped_ops=%ld checksum=%016llx PASS\n", nd, a.steps,
           cnt * sizeof(float), ops, (unsigned long long)hsum);
  for (int d = 0; d < nd; d++) {
    CUDACHECK(cudaSetDevice(d));
    CUDACHECK(cudaFree(dsend[d]));
    CUDACHECK(cudaFree(drecv[d]));
    CUDACHECK(cudaFree(dgath[d]));
    CUDACHECK(cudaFreeHost(h[d]));
    CUDACHECK(cudaStreamDestroy(st[d]));
    NCCLCHECK(ncclCommDestroy(comms[d]));
  }
  free(comms);
  free(st);
  free(dsend);
  free(drecv);
  free(dgath);
  free(h);
  return rc;
}
