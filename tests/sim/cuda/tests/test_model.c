/* The modeled clock (COLLSCOPE_SIM_CLOCK=model, tests/sim/cuda/model.c), run with
 * COLLSCOPE_SIM_CLOCK=model RANK=3 COLLSCOPE_SIM_FAULTS=hostdelay:rank=3,us=250 (meson.build):
 * a host function's sleep is GPU time (exact in events; the wall time it took is printed), a
 * stall its us, the host clock (CLOCK_REALTIME) jumps to the GPU's at a synchronize and then
 * takes the hostdelay, the next work starts no earlier than the host enqueued it, and a wait
 * on another stream's event resumes at that event's time. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include "simcuda.h"
#include "simtest.h"

#define EPOCH SIMCUDA_MODEL_EPOCH_NS

static uint64_t rt_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static void CUDART_CB busy_3s(void *p)   /* a "kernel" that sleeps 3 s of GPU time */
{
    (void)p;
    struct timespec ts = { 3, 0 };
    nanosleep(&ts, NULL);
}
static uint64_t ev_us(cudaEvent_t a, cudaEvent_t b)
{
    float ms = -1;
    CHECK_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    return (uint64_t)((double)ms * 1000.0 + 0.5);
}

static void test_model(void)
{
    REQUIRE(simcuda_model_on() == 1);
    cudaStream_t s, t;
    cudaEvent_t a, b, c, d;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess && cudaStreamCreate(&t) == cudaSuccess);
    cudaEventCreate(&a); cudaEventCreate(&b); cudaEventCreate(&c); cudaEventCreate(&d);
    CHECK_EQ(rt_ns(), EPOCH);                         /* the host clock starts at the epoch */
    uint64_t w0 = now_ns();
    cudaEventRecord(a, s);
    CHECK_EQ(cudaLaunchHostFunc(s, busy_3s, NULL), cudaSuccess);
    cudaEventRecord(b, s);
    simcuda_stream_stall_after((CUstream)s, 1000);   /* 1 ms stall before the next item */
    cudaEventRecord(c, s);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    fprintf(stderr, "3 s of modeled GPU time took %.3f s of wall time\n", (double)(now_ns() - w0) / 1e9);
    CHECK_EQ(ev_us(a, b), 3000000);                   /* exactly 3 s of GPU time */
    CHECK_EQ(ev_us(b, c), 0);                         /* one event record passes the stall */
    /* the host waited until the stream's time, then spent hostdelay's 250 us */
    CHECK_EQ(rt_ns() - EPOCH, 3000000000ull + 250000);
    cudaEventRecord(d, s);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(ev_us(c, d), 1250);                      /* the host enqueued it 250 us after c, then the 1 ms stall */
    /* another stream waits on s's event d: it resumes at d's time, not at its own 0 */
    cudaEvent_t e;
    cudaEventCreate(&e);
    CHECK_EQ(cudaStreamWaitEvent(t, d, 0), cudaSuccess);
    cudaEventRecord(e, t);
    CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);
    CHECK_EQ(ev_us(d, e), 250);                       /* the host enqueued it 250 us after d */
}

/* A stream that waits on an event complete already in wall time (the host polled it, which
 * moves no clock) still resumes at the event's modeled time, not at its own earlier one:
 * whether the event had completed when cudaStreamWaitEvent was called depends on the host's
 * scheduling, the modeled times must not. */
static void test_wait_done_event(void)
{
    cudaStream_t s, t;
    cudaEvent_t x, y;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess && cudaStreamCreate(&t) == cudaSuccess);
    cudaEventCreate(&x); cudaEventCreate(&y);
    CHECK_EQ(cudaLaunchHostFunc(s, busy_3s, NULL), cudaSuccess);
    cudaEventRecord(x, s);
    /* the poll's pause: a real 1 ms (an absolute CLOCK_MONOTONIC deadline), as a background
     * thread's; a relative sleep here would be this job thread's modeled time (../../vclock.c) */
    while (cudaEventQuery(x) == cudaErrorNotReady) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 1000000;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
    }
    CHECK_EQ(cudaStreamWaitEvent(t, x, 0), cudaSuccess);
    cudaEventRecord(y, t);
    CHECK_EQ(cudaEventSynchronize(y), cudaSuccess);
    float ms = -1;
    CHECK_EQ(cudaEventElapsedTime(&ms, x, y), cudaSuccess);
    CHECK_EQ((int64_t)((double)ms * 1000.0 + 0.5), 0);   /* t resumed at x's time */
}

int main(void)
{
    RUN(test_model);
    RUN(test_wait_done_event);
    return simtest_done("simcuda_model");
}
