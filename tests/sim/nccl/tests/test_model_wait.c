/* tests/sim/nccl/tests/test_model_wait.c: host sleeps, timed waits and P2P on the modeled
 * clock (COLLSCOPE_SIM_CLOCK=model, set by meson.build), exact to the nanosecond:
 *  - init: every member leaves ncclCommInitRank at the latest member's host time (rank 1
 *    slept 5 ms before it), and sees a non-blocking init done (ncclCommGetAsyncError) then;
 *  - P2P: a Recv ends when its Send's data lands: sender busy 2000 us of modeled compute,
 *    the receiver's events around its Recv read 2000 us + the pair's transfer time; a Recv
 *    whose data is already there takes the transfer time only;
 *  - the job's sleeps (usleep, nanosleep, clock_nanosleep relative and absolute, sleep,
 *    poll/ppoll/select/pselect/__poll_chk without descriptors) advance the thread's CLOCK_REALTIME by
 *    exactly their length; a poll on a descriptor that stays quiet by its timeout, one that is
 *    ready by nothing; pthread_cond_timedwait and sem_timedwait with a deadline on the modeled
 *    clock time out at it, and a signalled wait still wakes;
 *  - not the job's: a thread named collscope*, and code in a library named libcollscope*
 *    (libcollscope_waitprobe.so), sleep for real and move no modeled clock. */
#include "harness.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <sys/select.h>

#include "simcuda.h"

#define REQUIRE_OK(cond) \
  do { if (!(cond)) { fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); exit(1); } } while (0)
#define P2P_BYTES (1u << 20)
/* a Send/Recv of 1 MiB inside a host: NVLink latency 3.4 us + 1 MiB / 150 GB/s
 * (tests/sim/nccl/collcost.c), rounded to the ns (model.c) */
#define P2P_NS 10391ull

void probe_usleep(unsigned us);   /* libcollscope_waitprobe.so */
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);

static uint64_t rt_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void CUDART_CB compute_2ms(void *p) {
  (void)p;
  usleep(2000);   /* on a stream: 2000 us of modeled GPU time */
}

static double ev_us(cudaEvent_t a, cudaEvent_t b) {
  float ms = -1;
  CUDAOK(cudaEventElapsedTime(&ms, a, b));
  return (double)ms * 1000.0;
}

static void init_rank(struct rank_ctx *c) {
  uint64_t t0 = rt_ns();
  if (c->rank == 1) usleep(5000);
  ncclComm_t comm;
  NCCLOK(ncclCommInitRank(&comm, c->nranks, c->id, c->rank));
  CHECK(rt_ns() - t0 == 5000000ull, "rank %d left init %llu ns after it started, want 5000000", c->rank,
        (unsigned long long)(rt_ns() - t0));
  NCCLOK(ncclCommDestroy(comm));
}

/* non-blocking: the init joins on the simulator's own thread; the caller sees it done by
 * ncclCommGetAsyncError at the latest member's host time all the same */
static void init_nb_rank(struct rank_ctx *c) {
  uint64_t t0 = rt_ns();
  if (c->rank == 1) usleep(5000);
  ncclComm_t comm;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm, c->nranks, c->id, c->rank, &cfg);
  CHECK(r == ncclInProgress || r == ncclSuccess, "non-blocking init returned %d", (int)r);
  ncclResult_t st = ncclInProgress;
  while (ncclCommGetAsyncError(comm, &st) == ncclSuccess && st == ncclInProgress) sched_yield();
  CHECK(st == ncclSuccess, "async error %d", (int)st);
  CHECK(rt_ns() - t0 == 5000000ull, "rank %d saw the non-blocking init done %llu ns after it started, want 5000000",
        c->rank, (unsigned long long)(rt_ns() - t0));
  NCCLOK(ncclCommDestroy(comm));
}

static void p2p_rank(struct rank_ctx *c) {
  ncclComm_t comm;
  NCCLOK(ncclCommInitRank(&comm, c->nranks, c->id, c->rank));
  cudaStream_t s;
  cudaEvent_t e0, e1;
  CUDAOK(cudaStreamCreate(&s));
  CUDAOK(cudaEventCreate(&e0));
  CUDAOK(cudaEventCreate(&e1));
  float *buf;
  size_t n = P2P_BYTES / sizeof(float);
  CUDAOK(cudaMallocManaged((void **)&buf, P2P_BYTES, cudaMemAttachGlobal));
  for (size_t i = 0; i < n; i++) buf[i] = c->rank == 0 ? (float)(i % 97) : -1.0f;
  /* 1: rank 0 computes 2000 us, then sends; rank 1's Recv waits for the data */
  if (c->rank == 0) {
    CUDAOK(cudaLaunchHostFunc(s, compute_2ms, NULL));
    CUDAOK(cudaEventRecord(e0, s));
    NCCLOK(ncclSend(buf, n, ncclFloat32, 1, comm, s));
  } else {
    CUDAOK(cudaEventRecord(e0, s));
    NCCLOK(ncclRecv(buf, n, ncclFloat32, 0, comm, s));
  }
  CUDAOK(cudaEventRecord(e1, s));
  CUDAOK(cudaStreamSynchronize(s));
  double want = c->rank == 0 ? P2P_NS / 1000.0 : 2000.0 + P2P_NS / 1000.0;
  double got = ev_us(e0, e1);
  CHECK(got > want - 0.001 && got < want + 0.001, "rank %d: %s took %.3f us, want %.3f", c->rank,
        c->rank ? "Recv" : "Send", got, want);
  if (c->rank == 1)
    for (size_t i = 0; i < n; i++)
      if (buf[i] != (float)(i % 97)) { CHECK(0, "recv[%zu] = %g", i, buf[i]); break; }
  /* 2: rank 1 sends at once; rank 0 computes 2000 us first: its Recv finds the data there */
  if (c->rank == 1) {
    CUDAOK(cudaEventRecord(e0, s));
    NCCLOK(ncclSend(buf, n, ncclFloat32, 0, comm, s));
  } else {
    CUDAOK(cudaLaunchHostFunc(s, compute_2ms, NULL));
    CUDAOK(cudaEventRecord(e0, s));
    NCCLOK(ncclRecv(buf, n, ncclFloat32, 1, comm, s));
  }
  CUDAOK(cudaEventRecord(e1, s));
  CUDAOK(cudaStreamSynchronize(s));
  got = ev_us(e0, e1);
  CHECK(got > P2P_NS / 1000.0 - 0.001 && got < P2P_NS / 1000.0 + 0.001, "rank %d: %s (second) took %.3f us, want %.3f",
        c->rank, c->rank ? "Send" : "Recv", got, P2P_NS / 1000.0);
  CUDAOK(cudaFree(buf));
  CUDAOK(cudaStreamDestroy(s));
  NCCLOK(ncclCommDestroy(comm));
}

#define ADVANCES(call, ns)                                                                             \
  do {                                                                                                 \
    uint64_t t0_ = rt_ns();                                                                            \
    call;                                                                                              \
    uint64_t d_ = rt_ns() - t0_;                                                                       \
    CHECK(d_ == (uint64_t)(ns), "%s moved the modeled clock %llu ns, want %llu", #call, (unsigned long long)d_, \
          (unsigned long long)(ns));                                                                   \
  } while (0)

static void test_sleeps(void) {
  struct timespec ts = {0, 3000000};
  ADVANCES(CHECK(usleep(3000) == 0, "usleep"), 3000000);
  ADVANCES(CHECK(nanosleep(&ts, NULL) == 0, "nanosleep"), 3000000);
  ADVANCES(CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == 0, "clock_nanosleep"), 3000000);
  struct timespec now, until;
  clock_gettime(CLOCK_REALTIME, &now);
  until = now;
  until.tv_nsec += 2500000;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  ADVANCES(CHECK(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &until, NULL) == 0, "abs"), 2500000);
  ADVANCES(CHECK(sleep(2) == 0, "sleep"), 2000000000ull);
  ADVANCES(CHECK(poll(NULL, 0, 4) == 0, "poll"), 4000000);
  ADVANCES(CHECK(__poll_chk(NULL, 0, 4, 0) == 0, "__poll_chk"), 4000000);   /* a _FORTIFY_SOURCE build's */
  struct pollfd none = {.fd = -1};
  ADVANCES(CHECK(ppoll(&none, 1, &ts, NULL) == 0, "ppoll"), 3000000);
  struct timeval tv = {0, 1500};
  ADVANCES(CHECK(select(0, NULL, NULL, NULL, &tv) == 0, "select"), 1500000);
  ADVANCES(CHECK(pselect(0, NULL, NULL, NULL, &ts, NULL) == 0, "pselect"), 3000000);
  /* a descriptor: a real wait; quiet until the timeout, it is modeled time; ready, none */
  int fds[2];
  REQUIRE_OK(pipe(fds) == 0);
  struct pollfd pf = {.fd = fds[0], .events = POLLIN};
  ADVANCES(CHECK(poll(&pf, 1, 2) == 0, "quiet poll"), 2000000);
  CHECK(write(fds[1], "x", 1) == 1, "write");
  ADVANCES(CHECK(poll(&pf, 1, 2) == 1, "ready poll"), 0);
  close(fds[0]);
  close(fds[1]);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int waiting, signalled;

static void *signaller(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);   /* the waiter holds it until it waits */
  while (!waiting) {
    pthread_mutex_unlock(&mu);
    sched_yield();
    pthread_mutex_lock(&mu);
  }
  signalled = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static struct timespec realtime_in(uint64_t ns) {
  uint64_t t = rt_ns() + ns;
  return (struct timespec){(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
}

static void test_timedwaits(void) {
  /* nobody signals: times out at the modeled deadline */
  struct timespec dl = realtime_in(2000000);
  pthread_mutex_lock(&mu);
  ADVANCES(CHECK(pthread_cond_timedwait(&cv, &mu, &dl) == ETIMEDOUT, "cond timeout"), 2000000);
  /* signalled long before a 60 s deadline: wakes, no modeled time passes */
  dl = realtime_in(60000000000ull);
  pthread_t th;
  REQUIRE_OK(pthread_create(&th, NULL, signaller, NULL) == 0);
  waiting = 1;
  int r = 0;
  ADVANCES(while (!signalled && (r = pthread_cond_timedwait(&cv, &mu, &dl)) == 0) {}, 0);
  CHECK(r == 0 && signalled, "signalled wait returned %d, signalled %d", r, signalled);
  pthread_mutex_unlock(&mu);
  pthread_join(th, NULL);
  sem_t sem;
  sem_init(&sem, 0, 0);
  dl = realtime_in(1000000);
  ADVANCES(CHECK(sem_timedwait(&sem, &dl) == -1 && errno == ETIMEDOUT, "sem timeout"), 1000000);
  sem_post(&sem);
  dl = realtime_in(1000000);
  ADVANCES(CHECK(sem_timedwait(&sem, &dl) == 0, "sem posted"), 0);
  sem_destroy(&sem);
}

/* collscope's threads and collscope's code sleep for real */
static void *named_thread(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "collscope-test");
  ADVANCES(usleep(2000), 0);
  return NULL;
}
static void *plain_thread(void *arg) {
  (void)arg;
  ADVANCES(usleep(2000), 2000000);
  ADVANCES(probe_usleep(2000), 0);   /* called from libcollscope_waitprobe.so */
  return NULL;
}

int main(void) {
  const char *hosts[] = {"simhost0"};
  REQUIRE_OK(simcuda_model_on() == 1);
  int bad = run_ranks(2, hosts, 1, init_rank, NULL, NULL, 60);
  bad += run_ranks(2, hosts, 1, init_nb_rank, NULL, NULL, 60);
  bad += run_ranks(2, hosts, 1, p2p_rank, NULL, NULL, 60);
  test_sleeps();
  test_timedwaits();
  pthread_t a, b;
  REQUIRE_OK(pthread_create(&a, NULL, named_thread, NULL) == 0);
  pthread_join(a, NULL);
  REQUIRE_OK(pthread_create(&b, NULL, plain_thread, NULL) == 0);
  pthread_join(b, NULL);
  fprintf(stderr, "%d rank failures, %d checks failed\n", bad, h_fail);
  return bad || h_fail ? 1 : 0;
}
