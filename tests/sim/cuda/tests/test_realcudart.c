/* A job built against the REAL CUDA 13 runtime (-lcudart from the toolkit) that must run
 * unchanged on the simulator: its versioned references (cudaMalloc@libcudart.so.13, ...)
 * bind to the simulated libcudart.so.13 through LD_LIBRARY_PATH. Only semantics that hold
 * on a real GPU too are asserted, so the same binary also passes on real hardware. */

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "simtest.h"

#define CK(call) CHECK_EQ((call), cudaSuccess)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int gate_open_flag, ran;

static void CUDART_CB gate(void *p)
{
    (void)p;
    pthread_mutex_lock(&mu);
    while (!gate_open_flag) pthread_cond_wait(&cv, &mu);
    ran++;
    pthread_mutex_unlock(&mu);
}

static void CUDART_CB sleep20(void *p) { (void)p; sleep_ms(20); }
static int counter;
static void CUDART_CB count(void *p) { (void)p; counter++; }

int main(void)
{
    Dl_info di;
    int sim = 0;
    if (dladdr((void *)&cudaMalloc, &di) && di.dli_fname) {
        fprintf(stderr, "cudaMalloc comes from %s\n", di.dli_fname);
        sim = strstr(di.dli_fname, "tests/sim") != NULL;
    }
    int n = 0, v = 0;
    CK(cudaGetDeviceCount(&n));
    CHECK(n >= 1);
    CK(cudaRuntimeGetVersion(&v));
    CHECK(v >= 13000);
    CK(cudaDriverGetVersion(&v));
    CHECK(v >= 13000);
    CK(cudaSetDevice(n - 1));
    int d = -1;
    CK(cudaGetDevice(&d));
    CHECK_EQ(d, n - 1);
    CHECK_EQ(cudaSetDevice(n + 100), cudaErrorInvalidDevice);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (sim) {
        CHECK(strstr(prop.name, "collscope-sim") != NULL);
        CHECK_EQ(n, 8);
    }
    char bus[32];
    CK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
    CHECK(strlen(bus) == 12);
    CK(cudaSetDevice(0));

    cudaStream_t s;
    cudaEvent_t a, b, nt;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventCreateWithFlags(&nt, cudaEventDisableTiming));

    /* asynchrony */
    CK(cudaLaunchHostFunc(s, gate, NULL));
    CK(cudaEventRecord(a, s));
    CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
    CHECK_EQ(cudaEventQuery(a), cudaErrorNotReady);
    CHECK_EQ(cudaPeekAtLastError(), cudaSuccess);
    pthread_mutex_lock(&mu);
    gate_open_flag = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    CK(cudaStreamSynchronize(s));
    CHECK_EQ(ran, 1);
    CK(cudaEventQuery(a));

    /* the legacy stream covers busy blocking streams (measured on CUDA 13 / H200) */
    cudaStream_t bs;
    CK(cudaStreamCreate(&bs));
    CK(cudaLaunchHostFunc(bs, sleep20, NULL));
    CHECK_EQ(cudaStreamQuery(NULL), cudaErrorNotReady);
    CK(cudaStreamSynchronize(NULL));
    CK(cudaStreamQuery(bs));
    CK(cudaStreamDestroy(bs));

    /* timing */
    float ms = -1;
    uint64_t h0 = now_ns();   /* the events lie inside the host's interval: a bound load cannot break */
    CK(cudaEventRecord(a, s));
    CK(cudaLaunchHostFunc(s, sleep20, NULL));
    CK(cudaEventRecord(b, s));
    CK(cudaEventRecord(nt, s));
    CK(cudaEventSynchronize(b));
    double host_ms = (double)(now_ns() - h0) / 1e6;
    CK(cudaEventElapsedTime(&ms, a, b));
    CHECK(ms >= 19.0f && ms <= host_ms + 0.01);
    CK(cudaStreamSynchronize(s));
    CHECK_EQ(cudaEventElapsedTime(&ms, a, nt), cudaErrorInvalidResourceHandle);
    cudaGetLastError();

    /* memory */
    enum { N = 1 << 16 };
    static unsigned char host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = (unsigned char)(i * 13);
    void *dp = NULL, *hp = NULL;
    CK(cudaMalloc(&dp, N));
    CK(cudaMallocHost(&hp, N));
    CK(cudaMemcpy(dp, host, N, cudaMemcpyHostToDevice));
    CK(cudaMemcpyAsync(hp, dp, N, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    CHECK(memcmp(hp, host, N) == 0);
    CK(cudaMemsetAsync(dp, 0x42, 100, s));
    CK(cudaMemcpyAsync(back, dp, N, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    CHECK_EQ(back[99], 0x42);
    CHECK_EQ(back[100], host[100]);
    struct cudaPointerAttributes pa;
    CK(cudaPointerGetAttributes(&pa, (char *)dp + 5));
    CHECK_EQ(pa.type, cudaMemoryTypeDevice);
    CHECK_EQ(pa.device, 0);
    CK(cudaPointerGetAttributes(&pa, hp));
    CHECK_EQ(pa.type, cudaMemoryTypeHost);
    CK(cudaPointerGetAttributes(&pa, host));
    CHECK_EQ(pa.type, cudaMemoryTypeUnregistered);
    CHECK_EQ(cudaMemcpy(back, host, 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CHECK_EQ(cudaMemcpy(back, host, 4, (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
    cudaGetLastError();

    /* capture and replay */
    cudaStream_t cs;
    cudaGraph_t g;
    cudaGraphExec_t x;
    enum cudaStreamCaptureStatus st;
    CK(cudaStreamCreate(&cs));
    CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
    CK(cudaStreamIsCapturing(cs, &st));
    CHECK_EQ(st, cudaStreamCaptureStatusActive);
    unsigned long long id = 0;
    CK(cudaStreamGetCaptureInfo(cs, &st, &id, NULL, NULL, NULL, NULL));
    CHECK(id != 0);
    CK(cudaLaunchHostFunc(cs, count, NULL));
    CK(cudaLaunchHostFunc(cs, count, NULL));
    CK(cudaStreamEndCapture(cs, &g));
    CHECK_EQ(counter, 0);
    CK(cudaGraphInstantiate(&x, g, 0));
    CK(cudaGraphLaunch(x, cs));
    CK(cudaGraphLaunch(x, cs));
    CK(cudaStreamSynchronize(cs));
    CHECK_EQ(counter, 4);
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
    CHECK_EQ(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
    cudaGetLastError();

    /* driver entry point through the runtime */
    void *fp = NULL;
    enum cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuEventRecord", &fp, 13000, cudaEnableDefault, &q));
    CHECK(fp != NULL);
    CHECK_EQ(q, cudaDriverEntryPointSuccess);

    CHECK(strcmp(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument") == 0);
    CHECK(strcmp(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady") == 0);

    CK(cudaFree(dp));
    CK(cudaFreeHost(hp));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    CK(cudaEventDestroy(nt));
    CK(cudaStreamDestroy(s));
    CK(cudaStreamDestroy(cs));
    CK(cudaDeviceSynchronize());
    if (!sim) fprintf(stderr, "note: not running on the simulator\n");
    return simtest_done("simcuda_realcudart");
}
