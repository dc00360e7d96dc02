/* simcuda_stream_stall_after: the slow-GPU fault (DESIGN.md, COLLSCOPE_SIM_FAULTS slow). */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "simcuda.h"
#include "simtest.h"

#define STALL_US 40000u
#define STALL_NS (STALL_US * 1000ull)

struct stamp { uint64_t t; };
static void stamp_fn(void *p) { ((struct stamp *)p)->t = now_ns(); }

static uint64_t ev_ns(cudaEvent_t a, cudaEvent_t b)
{
    float ms = -1;
    CHECK_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    return (uint64_t)(ms * 1e6);
}

/* [coll][end event] <stall> [start event][coll]: the end event is on time, the next start late */
static void test_with_event(void)
{
    cudaStream_t s;
    cudaEvent_t e0, end1, start2, end2;
    struct stamp a = { 0 }, b = { 0 };
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    cudaEventCreate(&e0); cudaEventCreate(&end1); cudaEventCreate(&start2); cudaEventCreate(&end2);
    cudaEventRecord(e0, s);
    CHECK_EQ(simcuda_enqueue((CUstream)s, stamp_fn, &a, NULL), CUDA_SUCCESS);   /* collective 1 */
    simcuda_stream_stall_after((CUstream)s, STALL_US);
    cudaEventRecord(end1, s);
    cudaEventRecord(start2, s);
    CHECK_EQ(simcuda_enqueue((CUstream)s, stamp_fn, &b, NULL), CUDA_SUCCESS);   /* collective 2 */
    cudaEventRecord(end2, s);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    /* the stall sits after the end event and before the next start: end1 passed early (were
     * it delayed, end1 and start2 would be adjacent) */
    CHECK(ev_ns(end1, start2) >= STALL_NS - 1000000);
    CHECK(b.t - a.t >= STALL_NS - 1000000);
    cudaEventDestroy(e0); cudaEventDestroy(end1); cudaEventDestroy(start2); cudaEventDestroy(end2);
    cudaStreamDestroy(s);
}

/* [coll] <stall> [coll]: no event between, the next item is late */
static void test_without_event(void)
{
    cudaStream_t s;
    struct stamp a = { 0 }, b = { 0 }, c = { 0 };
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    simcuda_enqueue((CUstream)s, stamp_fn, &a, NULL);
    simcuda_stream_stall_after((CUstream)s, STALL_US);
    simcuda_enqueue((CUstream)s, stamp_fn, &b, NULL);
    simcuda_enqueue((CUstream)s, stamp_fn, &c, NULL);
    cudaStreamSynchronize(s);
    CHECK(b.t - a.t >= STALL_NS - 1000000);
    /* one stall only, and the exact figures: on the modeled clock (simcuda_model), where no
     * host load can stretch a wall-clock interval */
    cudaStreamDestroy(s);
}

/* Deterministic whatever the timing: the stall is kept until the next item arrives, even if
 * the stream went idle long before; and two event records: only the first passes early. */
static void test_late_next_item(void)
{
    cudaStream_t s;
    cudaEvent_t e1, e2, e3;
    struct stamp a = { 0 }, b = { 0 };
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    cudaEventCreate(&e1); cudaEventCreate(&e2); cudaEventCreate(&e3);
    simcuda_enqueue((CUstream)s, stamp_fn, &a, NULL);
    simcuda_stream_stall_after((CUstream)s, STALL_US);
    cudaStreamSynchronize(s);      /* the worker finished the item and is idle */
    sleep_ms(60);                  /* longer than the stall */
    uint64_t t0 = now_ns();
    cudaEventRecord(e1, s);        /* the one allowed event record */
    cudaEventRecord(e2, s);        /* waits for the stall */
    simcuda_enqueue((CUstream)s, stamp_fn, &b, NULL);
    cudaEventRecord(e3, s);
    CHECK_EQ(cudaEventSynchronize(e1), cudaSuccess);
    /* e1 passed before the stall: e2, the next item, came a whole stall after it (below) */
    cudaStreamSynchronize(s);
    CHECK(ev_ns(e1, e2) >= STALL_NS - 1000000);
    CHECK(b.t - t0 >= STALL_NS - 1000000);
    cudaEventDestroy(e1); cudaEventDestroy(e2); cudaEventDestroy(e3);
    cudaStreamDestroy(s);
}

/* stalls after several queued collectives each apply once, in order */
static void test_queued_stalls(void)
{
    cudaStream_t s;
    struct stamp st[4] = { { 0 } };
    cudaEvent_t ends[4];
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    for (int i = 0; i < 4; i++) {
        cudaEventCreate(&ends[i]);
        simcuda_enqueue((CUstream)s, stamp_fn, &st[i], NULL);
        /* the last stall lasts an hour: the synchronize returns only if it is left pending */
        simcuda_stream_stall_after((CUstream)s, i < 3 ? STALL_US / 2 : 3600u * 1000000u);
        cudaEventRecord(ends[i], s);
    }
    cudaStreamSynchronize(s);
    for (int i = 1; i < 4; i++) CHECK(st[i].t - st[i - 1].t >= STALL_NS / 2 - 1000000);
    /* the last stall is pending, not slept: nothing follows it yet (else the test's timeout) */
    for (int i = 0; i < 4; i++) cudaEventDestroy(ends[i]);
    cudaStreamDestroy(s);
}

int main(void)
{
    RUN(test_with_event);
    RUN(test_without_event);
    RUN(test_late_next_item);
    RUN(test_queued_stalls);
    return simtest_done("simcuda_stall");
}
