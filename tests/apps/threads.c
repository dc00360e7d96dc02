/* tests/apps/threads.c: two threads per process, each with its own communicator (two
 * unique ids) and its own stream, running AllReduces concurrently: thread 0 fp32 sum,
 * thread 1 int32 max. Thread t uses device (LOCAL_RANK + t*LOCAL_WORLD_SIZE) % device
 * count: the ranks of one communicator always get distinct GPUs (when there are at least
 * LOCAL_WORLD_SIZE), and with >= 2*LOCAL_WORLD_SIZE GPUs the two communicators never
 * share a GPU (two comms driving one GPU concurrently can deadlock on real hardware). */
#include <pthread.h>
#include <string.h>

#include "common.h"

static const char usage[] =
    "usage: threads [--steps N] [--size BYTES] [-v]\n"
    "  two threads per process, each with its own communicator and stream, running\n"
    "  AllReduces concurrently (thread 0: fp32 sum, thread 1: int32 max).\n";

struct worker {
  struct app *a;
  int t;
  ncclUniqueId id;
  uint64_t checksum;
  long ops;
};

static double sum_val(int r, size_t i, int step) { return (double)((r + 1) * (int)((i + (size_t)step) % 3 + 1)); }
static int32_t max_val(int r, size_t i, int step, int W) { return (int32_t)(((size_t)r * 7 + i + (size_t)step) % (size_t)(W + 3)); }

static void *run(void *p) {
  struct worker *w = p;
  struct app *a = w->a;
  int W = a->world;
  CUDACHECK(cudaSetDevice((a->local_rank + w->t * a->local_world) % a->ndev));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, W, w->id, a->rank));
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));
  size_t cnt = a->size / 4 ? a->size / 4 : 1;
  void *d, *h;
  CUDACHECK(cudaMalloc(&d, cnt * 4));
  CUDACHECK(cudaMallocHost(&h, cnt * 4));
  w->checksum = APP_FNV_INIT;
  for (int step = 0; step < a->steps; step++) {
    if (w->t == 0) {
      float *f = h;
      for (size_t i = 0; i < cnt; i++) f[i] = (float)sum_val(a->rank, i, step);
    } else {
      int32_t *x = h;
      for (size_t i = 0; i < cnt; i++) x[i] = max_val(a->rank, i, step, W);
    }
    CUDACHECK(cudaMemcpyAsync(d, h, cnt * 4, cudaMemcpyHostToDevice, s));
    NCCLCHECK(ncclAllReduce(d, d, cnt, w->t == 0 ? ncclFloat32 : ncclInt32, w->t == 0 ? ncclSum : ncclMax, comm, s));
    CUDACHECK(cudaMemcpyAsync(h, d, cnt * 4, cudaMemcpyDeviceToHost, s));
    CUDACHECK(cudaStreamSynchronize(s));
    w->ops++;
    for (size_t i = 0; i < cnt; i++) {
      if (w->t == 0) {
        double want = 0;
        for (int r = 0; r < W; r++) want += sum_val(r, i, step);
        if (((float *)h)[i] != want) app_mismatch(a, "thread0.allreduce.sum", i, ((float *)h)[i], want);
      } else {
        int32_t want = 0;
        for (int r = 0; r < W; r++)
          if (max_val(r, i, step, W) > want) want = max_val(r, i, step, W);
        if (((int32_t *)h)[i] != want) app_mismatch(a, "thread1.allreduce.max", i, ((int32_t *)h)[i], want);
      }
    }
    w->checksum = app_fnv(w->checksum, h, cnt * 4);
  }
  CUDACHECK(cudaFree(d));
  CUDACHECK(cudaFreeHost(h));
  CUDACHECK(cudaStreamDestroy(s));
  NCCLCHECK(ncclCommDestroy(comm));
  return NULL;
}

int main(int argc, char **argv) {
  struct app a;
  app_init(&a, "threads", argc, argv, usage);
  ncclUniqueId ids[2];
  app_share_ids(&a, ids, 2);
  struct worker w[2];
  pthread_t th[2];
  for (int t = 0; t < 2; t++) {
    w[t] = (struct worker){.a = &a, .t = t, .id = ids[t]};
    if (pthread_create(&th[t], NULL, run, &w[t]) != 0) app_die(__FILE__, __LINE__, "pthread_create", "failed");
  }
  for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
  int rc = app_finish(&a);
  if (rc == 0)
    printf("result threads rank=%d sum_checksum=%016llx max_checksum=%016llx\n", a.rank,
           (unsigned long long)w[0].checksum, (unsigned long long)w[1].checksum);
  if (rc == 0 && a.rank == 0)
    printf("summary threads world=%d threads=2 steps=%d allreduces=%ld PASS\n", a.world, a.steps, w[0].ops + w[1].ops);
  return rc;
}
