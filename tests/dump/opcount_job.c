/* tests/dump/opcount_job.c: a job that counts its own collectives where a test can read the
 * count even after the job was killed. Each rank runs --steps AllReduces of --size bytes
 * (fp32 sum, in place, synchronising every 64) and, after each call returns, stores the
 * number of calls made so far in an 8-byte shared mapping of $OPCOUNT_DIR/ops.r<RANK>
 * (the page outlives the process). With OPCOUNT_GATE=1, SIGTERM/SIGINT/SIGHUP are blocked
 * in every thread (the mask is set before any thread exists) and unblocked on the main
 * thread only between two calls (and in the synchronisations, which come after a call's count
 * is stored), so a termination signal lands where the count is exact and no rank waits, with
 * the signal blocked, on a collective of a peer that already died of it.
 * OPCOUNT_PACE_US=N: a sleep of N us after each call (a run of --steps calls lasts at
 * least steps x N us, however loaded the machine).
 * Rank 0 prints "opcount world=W ops=N" at the end. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../apps/common.h"

static const char usage[] =
    "usage: opcount_job [--steps N] [--size BYTES]\n"
    "  N in-place fp32 sum-AllReduces of BYTES; the running count goes to $OPCOUNT_DIR/ops.r<RANK>.\n"
    "  OPCOUNT_GATE=1: termination signals are taken only between two calls.\n";

static volatile uint64_t *map_counter(int rank) {
  const char *dir = getenv("OPCOUNT_DIR");
  if (!dir || !*dir) return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/ops.r%d", dir, rank);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, 8) != 0) app_die(__FILE__, __LINE__, "open", path);
  void *p = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) app_die(__FILE__, __LINE__, "mmap", path);
  return p;
}

int main(int argc, char **argv) {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGINT);
  sigaddset(&term, SIGHUP);
  const char *g = getenv("OPCOUNT_GATE");
  int gate = g && !strcmp(g, "1");
  const char *pace_s = getenv("OPCOUNT_PACE_US");
  long pace = pace_s ? atol(pace_s) : 0;
  struct timespec pace_ts = {pace / 1000000, (pace % 1000000) * 1000L};
  if (gate) sigprocmask(SIG_BLOCK, &term, NULL);

  struct app a;
  app_init(&a, "opcount_job", argc, argv, usage);
  volatile uint64_t *counter = map_counter(a.rank);
  ncclComm_t comm = app_world_comm(&a);
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));
  size_t n = a.size / sizeof(float) ? a.size / sizeof(float) : 1;
  float *d;
  CUDACHECK(cudaMalloc((void **)&d, n * sizeof(float)));
  uint64_t ops = 0;
  for (int i = 0; i < a.steps; i++) {
    if (gate) { /* a pending termination signal is delivered here, between two calls */
      sigprocmask(SIG_UNBLOCK, &term, NULL);
      sigprocmask(SIG_BLOCK, &term, NULL);
    }
    NCCLCHECK(ncclAllReduce(d, d, n, ncclFloat32, ncclSum, comm, s));
    ops++;
    if (counter) *counter = ops;
    if (pace > 0) nanosleep(&pace_ts, NULL);
    if (i % 64 == 63) {
      /* the count is stored: the wait is between two calls too, and a rank that waits on a
       * collective a peer that took the signal will never run must be able to take it */
      if (gate) sigprocmask(SIG_UNBLOCK, &term, NULL);
      CUDACHECK(cudaStreamSynchronize(s));
      if (gate) sigprocmask(SIG_BLOCK, &term, NULL);
    }
  }
  CUDACHECK(cudaStreamSynchronize(s));
  CUDACHECK(cudaFree(d));
  CUDACHECK(cudaStreamDestroy(s));
  NCCLCHECK(ncclCommDestroy(comm));
  if (a.rank == 0) printf("opcount world=%d ops=%llu\n", a.world, (unsigned long long)ops);
  return 0;
}
