/* Stream capture and graph replay. Expected codes were measured on CUDA 13.0 / H200. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

#include "simcuda.h"
#include "simtest.h"

CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                   const CUgraphNode **deps, size_t *n);
CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec x, CUgraphNode node, CUevent e);

static int g_log[64], g_n;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static void log_fn(void *p)
{
    pthread_mutex_lock(&g_mu);
    g_log[g_n++] = (int)(intptr_t)p;
    pthread_mutex_unlock(&g_mu);
}
static int g_freed;
static void free_fn(void *p) { (void)p; g_freed++; }
static void sleep10(void *p) { (void)p; sleep_ms(10); }
/* sleep10 that first waits until the test opens the gate: "not ready yet" is then a fact of
 * the test's order, not of how fast a loaded host runs the stream */
static _Atomic int gate_open;
static void gated_sleep10(void *p)
{
    while (!gate_open) sleep_ms(1);
    sleep10(p);
}

static void test_capture_state(void)
{
    cudaStream_t s;
    enum cudaStreamCaptureStatus st;
    unsigned long long id = 99;
    cudaGraph_t g = NULL;
    const cudaGraphNode_t *deps = NULL;
    size_t nd = 99;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    CHECK_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
    CHECK_EQ(st, cudaStreamCaptureStatusNone);
    CHECK_EQ(cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL), cudaSuccess);
    CHECK_EQ(st, cudaStreamCaptureStatusNone);
    CHECK_EQ(simcuda_stream_capturing((CUstream)s), 0);

    CHECK_EQ(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
    CHECK_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaErrorIllegalState);
    CHECK_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
    CHECK_EQ(st, cudaStreamCaptureStatusActive);
    CHECK_EQ(simcuda_stream_capturing((CUstream)s), 1);
    CHECK_EQ(cudaStreamGetCaptureInfo(s, &st, &id, &g, &deps, NULL, &nd), cudaSuccess);
    CHECK_EQ(st, cudaStreamCaptureStatusActive);
    CHECK(id != 0);
    CHECK(g != NULL);
    CHECK_EQ(nd, 0);

    /* driver forms report the same */
    CUstreamCaptureStatus cst;
    cuuint64_t cid = 0;
    CHECK_EQ(cuStreamIsCapturing((CUstream)s, &cst), CUDA_SUCCESS);
    CHECK_EQ(cst, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_EQ(cuStreamGetCaptureInfo((CUstream)s, &cst, &cid, NULL, NULL, NULL, NULL), CUDA_SUCCESS);   /* _v3 */
    CHECK_EQ(cid, id);
    CHECK_EQ(cuStreamGetCaptureInfo_v2((CUstream)s, &cst, &cid, NULL, NULL, NULL), CUDA_SUCCESS);
    CHECK_EQ(cst, CU_STREAM_CAPTURE_STATUS_ACTIVE);

    CHECK_EQ(cudaLaunchHostFunc(s, log_fn, (void *)1), cudaSuccess);
    CHECK_EQ(cudaStreamGetCaptureInfo(s, &st, &id, &g, &deps, NULL, &nd), cudaSuccess);
    CHECK_EQ(nd, 1);
    CHECK(deps != NULL && deps[0] != NULL);
    CHECK_EQ(cudaStreamQuery(s), cudaErrorStreamCaptureUnsupported);   /* and invalidates */
    CHECK_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
    CHECK_EQ(st, cudaStreamCaptureStatusInvalidated);
    id = 777;
    CHECK_EQ(cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL), cudaSuccess);
    CHECK_EQ(st, cudaStreamCaptureStatusInvalidated);
    CHECK_EQ(id, 777);   /* not written unless active (CUDA 13) */
    CHECK_EQ(cudaLaunchHostFunc(s, log_fn, (void *)2), cudaErrorStreamCaptureInvalidated);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    CHECK(g == NULL);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
    CHECK_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
    CHECK_EQ(st, cudaStreamCaptureStatusNone);
    CHECK_EQ(g_n, 0);   /* captured work never ran */

    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    cudaGetLastError();
    cudaStreamDestroy(s);
}

static void test_graph_replay(void)
{
    cudaStream_t s, s2;
    cudaGraph_t g;
    cudaGraphExec_t x;
    cudaEvent_t e1, e2;
    enum cudaStreamCaptureStatus st;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) == cudaSuccess);
    cudaEventCreate(&e1);
    cudaEventCreate(&e2);
    g_n = 0;
    g_freed = 0;

    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, log_fn, (void *)1), cudaSuccess);
    CHECK_EQ(simcuda_enqueue((CUstream)s, log_fn, (void *)2, free_fn), CUDA_SUCCESS);
    CHECK_EQ(cudaEventRecord(e1, s), cudaSuccess);                      /* a node */
    CHECK_EQ(cudaEventQuery(e1), cudaErrorCapturedEvent);               /* invalidates... */
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    CHECK_EQ(cudaEventQuery(e1), cudaErrorInvalidValue);                /* stale captured event */
    CHECK_EQ(g_freed, 1);                                               /* graph dropped: free_arg ran */
    cudaEventRecord(e1, s);                                             /* a real record resets it */
    CHECK_EQ(cudaEventSynchronize(e1), cudaSuccess);
    cudaGetLastError();

    /* a clean capture: fork into s2 via an event, join back, replay twice */
    g_freed = 0;
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, log_fn, (void *)1), cudaSuccess);
    CHECK_EQ(simcuda_enqueue((CUstream)s, log_fn, (void *)2, free_fn), CUDA_SUCCESS);
    CHECK_EQ(cudaEventRecord(e1, s), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(s2, e1, 0), cudaSuccess);              /* s2 joins the capture */
    CHECK_EQ(cudaStreamIsCapturing(s2, &st), cudaSuccess);
    CHECK_EQ(st, cudaStreamCaptureStatusActive);
    CHECK_EQ(simcuda_stream_capturing((CUstream)s2), 1);
    CHECK_EQ(cudaLaunchHostFunc(s2, log_fn, (void *)3), cudaSuccess);
    CHECK_EQ(cudaEventRecord(e2, s2), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(s, e2, 0), cudaSuccess);               /* join */
    CHECK_EQ(cudaLaunchHostFunc(s, sleep10, NULL), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, log_fn, (void *)4), cudaSuccess);
    CHECK_EQ(cudaStreamEndCapture(s2, &g), cudaErrorStreamCaptureUnmatched);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    CHECK(g != NULL);
    CHECK_EQ(cudaStreamIsCapturing(s2, &st), cudaSuccess);
    CHECK_EQ(st, cudaStreamCaptureStatusNone);
    sleep_ms(20);
    CHECK_EQ(g_n, 0);
    size_t nn = 0;
    CHECK_EQ(cudaGraphGetNodes(g, NULL, &nn), cudaSuccess);
    CHECK(nn >= 5);

    CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
    CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);                    /* asynchronous */
    CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(g_n, 8);
    static const int want[8] = { 1, 2, 3, 4, 1, 2, 3, 4 };
    for (int i = 0; i < 8; i++) CHECK_EQ(g_log[i], want[i]);
    CHECK_EQ(cudaEventQuery(e1), cudaErrorInvalidValue);   /* captured (internal) records stay captured */

    /* destroying the graph keeps the executable working; free_arg runs once both are gone */
    CHECK_EQ(cudaGraphDestroy(g), cudaSuccess);
    CHECK_EQ(g_freed, 0);
    CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
    CHECK_EQ(cudaGraphExecDestroy(x), cudaSuccess);   /* launch still pending: fine */
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(g_n, 12);
    CHECK_EQ(g_freed, 1);
    CHECK_EQ(cudaGraphLaunch(x, s), cudaErrorInvalidValue);
    cudaGetLastError();
    cudaEventDestroy(e1);
    cudaEventDestroy(e2);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
}

static void test_external_events(void)
{
    cudaStream_t s, other;
    cudaEvent_t ex, a, b, outside;
    cudaGraph_t g;
    cudaGraphExec_t x;
    float ms = 0;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) == cudaSuccess);
    cudaEventCreate(&ex);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventCreate(&outside);

    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    CHECK_EQ(cudaEventRecordWithFlags(a, s, cudaEventRecordExternal), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, gated_sleep10, NULL), cudaSuccess);
    CHECK_EQ(cudaEventRecordWithFlags(b, s, cudaEventRecordExternal), cudaSuccess);
    CHECK_EQ(cudaEventQuery(a), cudaSuccess);   /* external records leave the event's own state alone */
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    uint64_t h0 = now_ns();   /* the events lie inside the host's interval: a bound load cannot break */
    CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
    CHECK_EQ(cudaEventQuery(b), cudaErrorNotReady);
    gate_open = 1;
    CHECK_EQ(cudaEventSynchronize(b), cudaSuccess);
    double host_ms = (double)(now_ns() - h0) / 1e6;
    CHECK_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    CHECK(ms >= 10.0f && ms <= host_ms + 0.01);
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);

    /* an external record outside any capture is an illegal state (CUDA 13) */
    CHECK_EQ(cudaEventRecordWithFlags(a, s, cudaEventRecordExternal), cudaErrorIllegalState);
    cudaGetLastError();

    /* waiting on an event from outside the capture: isolation error unless external */
    cudaEventRecord(outside, other);
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(s, outside, 0), cudaErrorStreamCaptureIsolation);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(s, outside, cudaEventWaitExternal), cudaSuccess);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    cudaGraphDestroy(g);

    /* unsafe calls during a global-mode capture */
    void *p = NULL;
    int v = 0;
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    CHECK_EQ(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    REQUIRE(cudaMalloc(&p, 64) == cudaSuccess);
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    CHECK_EQ(cudaMemcpy(p, &v, 4, cudaMemcpyHostToDevice), cudaErrorStreamCaptureImplicit);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    /* relaxed mode allows them */
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    void *q = NULL;
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    CHECK_EQ(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
    CHECK_EQ(m, cudaStreamCaptureModeGlobal);
    CHECK_EQ(cudaMalloc(&q, 64), cudaSuccess);
    CHECK_EQ(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    cudaGraphDestroy(g);
    cudaFree(q);
    cudaFree(p);
    cudaGetLastError();

    /* a graph launched into a capturing stream is inlined into the new graph */
    g_n = 0;
    cudaGraph_t inner, outer;
    cudaGraphExec_t xi, xo;
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cudaLaunchHostFunc(s, log_fn, (void *)7);
    CHECK_EQ(cudaStreamEndCapture(s, &inner), cudaSuccess);
    CHECK_EQ(cudaGraphInstantiate(&xi, inner, 0), cudaSuccess);
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    CHECK_EQ(cudaGraphLaunch(xi, s), cudaSuccess);
    cudaLaunchHostFunc(s, log_fn, (void *)8);
    CHECK_EQ(cudaStreamEndCapture(s, &outer), cudaSuccess);
    cudaGraphExecDestroy(xi);
    cudaGraphDestroy(inner);
    CHECK_EQ(cudaGraphInstantiate(&xo, outer, 0), cudaSuccess);
    CHECK_EQ(cudaGraphLaunch(xo, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(g_n, 2);
    CHECK_EQ(g_log[0], 7);
    CHECK_EQ(g_log[1], 8);
    cudaGraphExecDestroy(xo);
    cudaGraphDestroy(outer);

    cudaEventDestroy(ex);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaEventDestroy(outside);
    cudaStreamDestroy(s);
    cudaStreamDestroy(other);
}

/* the capture's last node (an external record just made): cuStreamGetCaptureInfo's dependency */
static CUgraphNode last_node(cudaStream_t s)
{
    CUstreamCaptureStatus st;
    const CUgraphNode *deps = NULL;
    size_t nd = 0;
    if (cuStreamGetCaptureInfo_v2((CUstream)s, &st, NULL, NULL, &deps, &nd) != CUDA_SUCCESS || nd != 1) return NULL;
    return deps[0];
}

/* cuGraphExecEventRecordNodeSetEvent: a captured external record node of an executable
 * records the event set on it in later launches, never in launches already enqueued; only
 * event record nodes take an event */
static void test_exec_set_event(void)
{
    cudaStream_t s;
    cudaEvent_t a, b, a2, b2, a3, b3;
    cudaGraph_t g;
    cudaGraphExec_t x;
    float ms = 0;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventCreate(&a2);
    cudaEventCreate(&b2);
    cudaEventCreate(&a3);
    cudaEventCreate(&b3);
    gate_open = 0;
    CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    CHECK_EQ(cudaEventRecordWithFlags(a, s, cudaEventRecordExternal), cudaSuccess);
    CUgraphNode na = last_node(s);
    CHECK_EQ(cudaLaunchHostFunc(s, gated_sleep10, NULL), cudaSuccess);
    CUgraphNode nfn = last_node(s);
    CHECK_EQ(cudaEventRecordWithFlags(b, s, cudaEventRecordExternal), cudaSuccess);
    CUgraphNode nb = last_node(s);
    CHECK(na != NULL && nb != NULL && nfn != NULL && na != nb);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    CUgraphExec cx = (CUgraphExec)x;

    CHECK_EQ(cuGraphExecEventRecordNodeSetEvent(cx, nfn, (CUevent)a2), CUDA_ERROR_INVALID_VALUE);   /* host node */
    CHECK_EQ(cuGraphExecEventRecordNodeSetEvent(cx, NULL, (CUevent)a2), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuGraphExecEventRecordNodeSetEvent((CUgraphExec)s, na, (CUevent)a2), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuGraphExecEventRecordNodeSetEvent(cx, na, (CUevent)s), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuGraphExecEventRecordNodeSetEvent(cx, na, (CUevent)a2), CUDA_SUCCESS);
    CHECK_EQ(cuGraphExecEventRecordNodeSetEvent(cx, nb, (CUevent)b2), CUDA_SUCCESS);
    CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);   /* held at the gate */
    /* set while that launch is enqueued: only the next launch records a3/b3 */
    CHECK_EQ(cuGraphExecEventRecordNodeSetEvent(cx, na, (CUevent)a3), CUDA_SUCCESS);
    CHECK_EQ(cuGraphExecEventRecordNodeSetEvent(cx, nb, (CUevent)b3), CUDA_SUCCESS);
    CHECK_EQ(cudaEventQuery(b2), cudaErrorNotReady);
    gate_open = 1;
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(cudaEventElapsedTime(&ms, a2, b2), cudaSuccess);
    CHECK(ms >= 10.0f);
    CHECK_EQ(cudaEventElapsedTime(&ms, a3, b3), cudaErrorInvalidResourceHandle);   /* never recorded */
    CHECK_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle);     /* the nodes' own: untouched */
    cudaGetLastError();
    CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(cudaEventElapsedTime(&ms, a3, b3), cudaSuccess);
    CHECK(ms >= 10.0f);
    CHECK_EQ(cudaEventElapsedTime(&ms, b2, a3), cudaSuccess);   /* the second launch came after the first */
    CHECK(ms >= 0.0f);
    /* an event destroyed while set stays usable by the executable */
    cudaEventDestroy(a3);
    CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaEventDestroy(a2);
    cudaEventDestroy(b2);
    cudaEventDestroy(b3);
    cudaStreamDestroy(s);
}

int main(void)
{
    RUN(test_capture_state);
    RUN(test_graph_replay);
    RUN(test_external_events);
    RUN(test_exec_set_event);
    return simtest_done("simcuda_capture");
}
