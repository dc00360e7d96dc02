/* tests/integration/exit_race.c: threads that end the process at the same moment, the way an
 * NCCLCHECK-style macro ends a job when every thread sees the same error. One process drives
 * two GPUs (ncclCommInitAll), runs one grouped AllReduce on both communicators and
 * synchronises; then the threads of MODE pass one barrier together and end the process:
 *   exit N   N threads call exit(1)
 *   main     a thread calls exit(1) while the main thread returns 0 from main
 *   abort    a thread calls exit(1) while another calls abort()
 *   signal   a thread calls exit(1) while another takes SIGUSR1, whose handler calls exit(1)
 * No timing decides anything: the barrier releases every thread at once. Prints
 * "exit_race: ready" (flushed) once the collective is done, before the threads start. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NDEV 2
#define COUNT 1024
#define MAX_THREADS 16

#define CHECK(what, ok) \
  do { \
    if (!(ok)) { \
      fprintf(stderr, "exit_race: %s failed\n", what); \
      return 2; \
    } \
  } while (0)

enum mode { MODE_EXIT,
            MODE_MAIN,
            MODE_ABORT,
            MODE_SIGNAL };

static pthread_barrier_t go;
static enum mode mode;

static void on_usr1(int sig) {
  (void)sig;
  exit(1);
}

static void *ender(void *arg) {
  int idx = (int)(long)arg;
  pthread_barrier_wait(&go);
  if (idx == 1 && mode == MODE_ABORT) abort();
  if (idx == 1 && mode == MODE_SIGNAL) pthread_kill(pthread_self(), SIGUSR1);
  exit(1);
}

static int run_collective(void) {
  ncclComm_t comms[NDEV];
  cudaStream_t st[NDEV];
  float *buf[NDEV];
  CHECK("ncclCommInitAll", ncclCommInitAll(comms, NDEV, NULL) == ncclSuccess);
  for (int d = 0; d < NDEV; d++) {
    CHECK("cudaSetDevice", cudaSetDevice(d) == cudaSuccess);
    CHECK("cudaStreamCreate", cudaStreamCreate(&st[d]) == cudaSuccess);
    CHECK("cudaMalloc", cudaMalloc((void **)&buf[d], COUNT * sizeof(float)) == cudaSuccess);
    CHECK("cudaMemset", cudaMemset(buf[d], 0, COUNT * sizeof(float)) == cudaSuccess);
  }
  CHECK("ncclGroupStart", ncclGroupStart() == ncclSuccess);
  for (int d = 0; d < NDEV; d++)
    CHECK("ncclAllReduce", ncclAllReduce(buf[d], buf[d], COUNT, ncclFloat32, ncclSum, comms[d], st[d]) == ncclSuccess);
  CHECK("ncclGroupEnd", ncclGroupEnd() == ncclSuccess);
  for (int d = 0; d < NDEV; d++) {
    CHECK("cudaSetDevice", cudaSetDevice(d) == cudaSuccess);
    CHECK("cudaStreamSynchronize", cudaStreamSynchronize(st[d]) == cudaSuccess);
  }
  return 0;
}

int main(int argc, char **argv) {
  int nthreads = 2;
  if (argc >= 2 && !strcmp(argv[1], "exit")) {
    mode = MODE_EXIT;
    if (argc >= 3) nthreads = atoi(argv[2]);
  } else if (argc >= 2 && !strcmp(argv[1], "main")) {
    mode = MODE_MAIN;
    nthreads = 1;
  } else if (argc >= 2 && !strcmp(argv[1], "abort")) {
    mode = MODE_ABORT;
  } else if (argc >= 2 && !strcmp(argv[1], "signal")) {
    mode = MODE_SIGNAL;
  } else {
    fprintf(stderr, "usage: exit_race exit [N] | main | abort | signal\n");
    return 2;
  }
  if (nthreads < 1 || nthreads > MAX_THREADS) nthreads = 2;
  if (mode == MODE_SIGNAL) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK("sigaction", sigaction(SIGUSR1, &sa, NULL) == 0);
  }
  int rc = run_collective();
  if (rc) return rc;
  printf("exit_race: ready\n"); /* before any thread can end the process */
  fflush(stdout);
  int parties = nthreads + (mode == MODE_MAIN);
  CHECK("pthread_barrier_init", pthread_barrier_init(&go, NULL, (unsigned)parties) == 0);
  pthread_t th[MAX_THREADS];
  for (int i = 0; i < nthreads; i++)
    CHECK("pthread_create", pthread_create(&th[i], NULL, ender, (void *)(long)i) == 0);
  if (mode == MODE_MAIN) {
    pthread_barrier_wait(&go);
    return 0;
  }
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL); /* never returns: the threads end the process */
  return 3;
}
