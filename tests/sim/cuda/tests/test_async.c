/* Asynchrony, ordering and timing of simulated streams and events. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

#include "simcuda.h"
#include "simtest.h"

/* per-thread-default-stream entry points (declared by cuda_runtime_api.h only when compiling
 * with CUDA_API_PER_THREAD_DEFAULT_STREAM) */
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void *ud);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s);

/* a host function that blocks until the test opens the gate */
struct gate { pthread_mutex_t mu; pthread_cond_t cv; int open, entered, ran; };
#define GATE_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 }

static void gate_fn(void *p)
{
    struct gate *g = p;
    pthread_mutex_lock(&g->mu);
    g->entered = 1;
    pthread_cond_broadcast(&g->cv);
    while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
    g->ran = 1;
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void gate_wait_entered(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->entered) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void test_async_basics(void)
{
    cudaStream_t s;
    cudaEvent_t e;
    struct gate g = GATE_INIT;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    REQUIRE(cudaEventCreate(&e) == cudaSuccess);
    CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
    CHECK_EQ(cudaEventQuery(e), cudaSuccess);   /* never recorded: complete */

    CHECK_EQ(cudaLaunchHostFunc(s, gate_fn, &g), cudaSuccess);   /* returns while blocked */
    CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
    gate_wait_entered(&g);
    CHECK_EQ(g.ran, 0);
    CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
    CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);
    CHECK_EQ(cudaPeekAtLastError(), cudaSuccess);   /* NotReady is not an error */
    sleep_ms(30);
    CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(g.ran, 1);
    CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
    CHECK_EQ(cudaEventQuery(e), cudaSuccess);

    /* event synchronize waits */
    struct gate g2 = GATE_INIT;
    CHECK_EQ(cudaLaunchHostFunc(s, gate_fn, &g2), cudaSuccess);
    CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);   /* re-armed */
    CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);
    gate_open(&g2);
    CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);
    CHECK_EQ(g2.ran, 1);
    CHECK_EQ(cudaEventQuery(e), cudaSuccess);
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
}

static void sleep20(void *p) { (void)p; sleep_ms(20); }

static void test_event_timing(void)
{
    cudaStream_t s;
    cudaEvent_t a, b, nt;
    float ms = -1;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventCreateWithFlags(&nt, cudaEventDisableTiming);
    CHECK_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle);   /* never recorded */
    cudaGetLastError();
    uint64_t h0 = now_ns();   /* the events lie inside the host's interval: a bound load cannot break */
    cudaEventRecord(a, s);
    cudaLaunchHostFunc(s, sleep20, NULL);
    cudaEventRecord(b, s);
    cudaEventRecord(nt, s);
    cudaError_t early = cudaEventElapsedTime(&ms, a, b);
    CHECK(early == cudaErrorNotReady || early == cudaSuccess);
    CHECK_EQ(cudaEventSynchronize(b), cudaSuccess);
    double host_ms = (double)(now_ns() - h0) / 1e6;
    CHECK_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    CHECK(ms >= 20.0f && ms <= host_ms + 0.01);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(cudaEventElapsedTime(&ms, a, nt), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaEventElapsedTime(&ms, nt, b), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaEventElapsedTime(NULL, a, b), cudaErrorInvalidValue);
    cudaGetLastError();

    /* driver API, both names */
    float ms2 = -1;
    CHECK_EQ(cuEventElapsedTime_v2(&ms2, (CUevent)a, (CUevent)b), CUDA_SUCCESS);
    CHECK(ms2 == ms);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaEventDestroy(nt);
    cudaStreamDestroy(s);
}

struct order { pthread_mutex_t mu; int log[64]; int n; };
struct order_item { struct order *o; int v; };
static void order_fn(void *p)
{
    struct order_item *it = p;
    pthread_mutex_lock(&it->o->mu);
    it->o->log[it->o->n++] = it->v;
    pthread_mutex_unlock(&it->o->mu);
}

static int g_freed;
static void count_free(void *p) { (void)p; __atomic_add_fetch(&g_freed, 1, __ATOMIC_RELAXED); }

static void test_stream_order(void)
{
    cudaStream_t s;
    struct order o = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 };
    struct order_item items[32];
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    g_freed = 0;
    for (int i = 0; i < 32; i++) {
        items[i] = (struct order_item){ &o, i };
        if (i % 2) CHECK_EQ(cudaLaunchHostFunc(s, order_fn, &items[i]), cudaSuccess);
        else CHECK_EQ(simcuda_enqueue((CUstream)s, order_fn, &items[i], count_free), CUDA_SUCCESS);
    }
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(o.n, 32);
    for (int i = 0; i < 32; i++) CHECK_EQ(o.log[i], i);
    CHECK_EQ(g_freed, 16);   /* free_arg called after each simcuda_enqueue item ran */
    CHECK_EQ(simcuda_enqueue((CUstream)(uintptr_t)0xdead, order_fn, &items[0], NULL), CUDA_ERROR_INVALID_HANDLE);
    cudaStreamDestroy(s);
}

static void test_wait_event(void)
{
    cudaStream_t s1, s2;
    cudaEvent_t e, e2;
    struct gate g = GATE_INIT;
    struct order o = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 };
    struct order_item i1 = { &o, 1 }, i2 = { &o, 2 };
    REQUIRE(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) == cudaSuccess);
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    cudaEventCreate(&e2);
    cudaLaunchHostFunc(s1, gate_fn, &g);
    cudaLaunchHostFunc(s1, order_fn, &i1);
    cudaEventRecord(e, s1);
    CHECK_EQ(cudaStreamWaitEvent(s2, e, 0), cudaSuccess);
    cudaLaunchHostFunc(s2, order_fn, &i2);
    cudaEventRecord(e2, s2);
    sleep_ms(20);
    CHECK_EQ(o.n, 0);
    CHECK_EQ(cudaStreamQuery(s2), cudaErrorNotReady);   /* s2's worker blocks on the event */
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess);
    CHECK_EQ(o.n, 2);
    CHECK_EQ(o.log[0], 1);
    CHECK_EQ(o.log[1], 2);
    /* waiting on a never-recorded or completed event is a no-op */
    cudaEvent_t fresh;
    cudaEventCreate(&fresh);
    CHECK_EQ(cudaStreamWaitEvent(s2, fresh, 0), cudaSuccess);
    CHECK_EQ(cudaStreamQuery(s2), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(s2, e, 0), cudaSuccess);
    CHECK_EQ(cudaStreamQuery(s2), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(s2, (cudaEvent_t)(uintptr_t)0x1234, 0), cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    /* an event destroyed while a wait on it is pending still releases the waiter */
    struct gate g3 = GATE_INIT;
    cudaLaunchHostFunc(s1, gate_fn, &g3);
    cudaEventRecord(fresh, s1);
    cudaStreamWaitEvent(s2, fresh, 0);
    CHECK_EQ(cudaEventDestroy(fresh), cudaSuccess);
    gate_open(&g3);
    CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess);
    cudaEventDestroy(e);
    cudaEventDestroy(e2);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
}

static void sleep_then_open(void *p)
{
    struct gate *g = p;
    sleep_ms(30);
    g->ran = 1;
}

/* the legacy default stream waits for blocking streams and they wait for it */
static void test_legacy_stream(void)
{
    cudaStream_t blocking, nonblocking;
    struct gate g = GATE_INIT, g2 = GATE_INIT;
    struct order o = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 };
    struct order_item a = { &o, 1 }, b = { &o, 2 }, c = { &o, 3 };
    REQUIRE(cudaStreamCreate(&blocking) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking) == cudaSuccess);
    cudaLaunchHostFunc(blocking, gate_fn, &g);
    cudaLaunchHostFunc(blocking, order_fn, &a);
    cudaLaunchHostFunc(NULL, order_fn, &b);          /* legacy: after blocking's work */
    cudaLaunchHostFunc(nonblocking, order_fn, &c);    /* independent */
    CHECK_EQ(cudaStreamSynchronize(nonblocking), cudaSuccess);
    CHECK_EQ(o.n, 1);
    CHECK_EQ(o.log[0], 3);
    CHECK_EQ(cudaStreamQuery(cudaStreamLegacy), cudaErrorNotReady);
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(NULL), cudaSuccess);
    CHECK_EQ(o.n, 3);
    /* synchronizing the legacy stream waits for busy blocking streams even with nothing of
     * its own queued; a non-blocking stream is not covered */
    struct gate g4 = GATE_INIT, g5 = GATE_INIT;
    cudaLaunchHostFunc(blocking, sleep_then_open, &g4);
    cudaLaunchHostFunc(nonblocking, gate_fn, &g5);
    CHECK_EQ(cudaStreamSynchronize(NULL), cudaSuccess);
    CHECK_EQ(g4.ran, 1);
    CHECK_EQ(cudaStreamQuery(nonblocking), cudaErrorNotReady);
    gate_open(&g5);
    CHECK_EQ(cudaStreamSynchronize(nonblocking), cudaSuccess);
    CHECK_EQ(o.log[1], 1);
    CHECK_EQ(o.log[2], 2);
    /* blocking stream work waits for earlier legacy work */
    o.n = 0;
    cudaLaunchHostFunc(cudaStreamLegacy, gate_fn, &g2);
    cudaLaunchHostFunc(blocking, order_fn, &a);
    sleep_ms(10);
    CHECK_EQ(cudaStreamQuery(blocking), cudaErrorNotReady);
    gate_open(&g2);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(o.n, 1);
    cudaStreamDestroy(blocking);
    cudaStreamDestroy(nonblocking);
}

struct ptds_res { cudaStream_t s; int dev; unsigned long long id; };
static void *ptds_thread(void *p)
{
    struct ptds_res *r = p;
    cudaSetDevice(r->dev);
    cudaStreamGetId(cudaStreamPerThread, &r->id);
    struct gate g = GATE_INIT;
    gate_open(&g);
    cudaLaunchHostFunc(cudaStreamPerThread, gate_fn, &g);
    cudaStreamSynchronize(cudaStreamPerThread);
    return NULL;
}

static void test_per_thread_stream(void)
{
    struct ptds_res r1 = { NULL, 1, 0 }, r2 = { NULL, 1, 0 };
    pthread_t t1, t2;
    unsigned long long mine = 0, legacy = 0;
    pthread_create(&t1, NULL, ptds_thread, &r1);
    pthread_create(&t2, NULL, ptds_thread, &r2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK_EQ(cudaStreamGetId(cudaStreamPerThread, &mine), cudaSuccess);
    CHECK_EQ(cudaStreamGetId(cudaStreamLegacy, &legacy), cudaSuccess);
    CHECK(r1.id != r2.id);
    CHECK(r1.id != mine && r2.id != mine);
    CHECK(mine != legacy);
    /* _ptsz entry points: NULL means the per-thread stream */
    struct gate g = GATE_INIT;
    CHECK_EQ(cudaLaunchHostFunc_ptsz(NULL, gate_fn, &g), cudaSuccess);
    gate_wait_entered(&g);
    CHECK_EQ(cudaStreamQuery_ptsz(NULL), cudaErrorNotReady);
    CHECK_EQ(cudaStreamQuery(cudaStreamPerThread), cudaErrorNotReady);
    CHECK_EQ(cudaStreamQuery(cudaStreamLegacy), cudaErrorNotReady);   /* covers blocking streams (CUDA 13) */
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize_ptsz(NULL), cudaSuccess);
    cudaDeviceSynchronize();
}

/* an item that never returns (a hung collective) does not stop other streams */
static struct gate g_hang = GATE_INIT;
static void test_hung_stream(void)
{
    cudaStream_t hung, other;
    REQUIRE(cudaStreamCreateWithFlags(&hung, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) == cudaSuccess);
    CHECK_EQ(simcuda_enqueue((CUstream)hung, gate_fn, &g_hang, NULL), CUDA_SUCCESS);
    gate_wait_entered(&g_hang);
    struct gate g = GATE_INIT;
    gate_open(&g);
    for (int i = 0; i < 10; i++) CHECK_EQ(cudaLaunchHostFunc(other, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(other), cudaSuccess);
    CHECK_EQ(cudaStreamQuery(hung), cudaErrorNotReady);
    /* destroying a stream with pending work returns at once; its work still completes */
    CHECK_EQ(cudaStreamDestroy(hung), cudaSuccess);
    gate_open(&g_hang);
    cudaStreamDestroy(other);
}

/* several host threads on several devices and streams at once */
struct mt_arg { int dev; int count; };
static void inc_fn(void *p) { __atomic_add_fetch((int *)p, 1, __ATOMIC_RELAXED); }
static void *mt_thread(void *p)
{
    struct mt_arg *a = p;
    cudaStream_t s;
    cudaEvent_t e;
    cudaSetDevice(a->dev);
    cudaStreamCreate(&s);
    cudaEventCreate(&e);
    for (int i = 0; i < 200; i++) {
        cudaLaunchHostFunc(s, inc_fn, &a->count);
        cudaEventRecord(e, s);
        if (i % 50 == 0) cudaEventSynchronize(e);
    }
    cudaStreamSynchronize(s);
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[6];
    struct mt_arg a[6];
    for (int i = 0; i < 6; i++) {
        a[i] = (struct mt_arg){ i % 3, 0 };
        pthread_create(&t[i], NULL, mt_thread, &a[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(a[i].count, 200);
    }
}

int main(void)
{
    RUN(test_async_basics);
    RUN(test_event_timing);
    RUN(test_stream_order);
    RUN(test_wait_event);
    RUN(test_legacy_stream);
    RUN(test_per_thread_stream);
    RUN(test_hung_stream);
    RUN(test_threads);
    return simtest_done("simcuda_async");
}
