/* Devices, contexts, per-thread device, error codes, last-error rules, entry points, fork,
 * sticky device faults.
 * Run twice by meson: default environment (8 GPUs) and COLLSCOPE_SIM_GPUS=4 with
 * COLLSCOPE_HOSTNAME=simhost-7 (argv[1] gives the expected values). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simcuda.h"
#include "simtest.h"

static int g_ngpu = 8;
static const char *g_host;

static void test_devices(void)
{
    int n = -1;
    CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    CHECK_EQ(n, g_ngpu);
    CHECK_EQ(simcuda_device_count(), g_ngpu);
    CHECK_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
    CHECK_EQ(n, g_ngpu);
    int v = 0;
    CHECK_EQ(cudaDriverGetVersion(&v), cudaSuccess);
    CHECK_EQ(v, 13000);
    CHECK_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
    CHECK_EQ(v, 13000);
    CHECK_EQ(cuDriverGetVersion(&v), CUDA_SUCCESS);
    CHECK_EQ(v, 13000);

    struct cudaDeviceProp p;
    CHECK_EQ(cudaGetDeviceProperties(&p, 1), cudaSuccess);
    CHECK(strcmp(p.name, "NVIDIA H100 80GB HBM3 (collscope-sim)") == 0);
    CHECK_EQ(p.totalGlobalMem, 80ull << 30);
    CHECK_EQ(p.major, 9);
    CHECK_EQ(p.minor, 0);
    CHECK_EQ(p.multiProcessorCount, 132);
    CHECK_EQ(p.pciBusID, 0x2a);
    CHECK_EQ(p.warpSize, 32);
    CHECK_EQ(cudaGetDeviceProperties(&p, g_ngpu), cudaErrorInvalidDevice);
    cudaGetLastError();

    char bus[32];
    static const char *want[8] = { "0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                                   "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0" };
    for (int d = 0; d < g_ngpu && d < 8; d++) {
        CHECK_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, d), cudaSuccess);
        CHECK(strcmp(bus, want[d]) == 0);
        simcuda_pci_bus_id(d, bus, sizeof bus);
        CHECK(strcmp(bus, want[d]) == 0);
        int back = -1;
        CHECK_EQ(cudaDeviceGetByPCIBusId(&back, want[d]), cudaSuccess);
        CHECK_EQ(back, d);
    }
    CUdevice dev;
    CHECK_EQ(cuDeviceGet(&dev, g_ngpu - 1), CUDA_SUCCESS);
    CHECK_EQ(cuDeviceGet(&dev, g_ngpu), CUDA_ERROR_INVALID_DEVICE);
    CHECK_EQ(cuDeviceGet(&dev, -1), CUDA_ERROR_INVALID_DEVICE);
    char name[128];
    CHECK_EQ(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
    CHECK(strstr(name, "collscope-sim") != NULL);
    CHECK_EQ(cuDeviceGetPCIBusId(bus, sizeof bus, 0), CUDA_SUCCESS);
    CHECK(strcmp(bus, want[0]) == 0);

    int a = 0;
    CHECK_EQ(cudaDeviceGetAttribute(&a, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    CHECK_EQ(a, 132);
    CHECK_EQ(cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), CUDA_SUCCESS);
    CHECK_EQ(a, 9);
    CHECK_EQ(cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 3), CUDA_SUCCESS);
    CHECK_EQ(a, 0x5d);
    CHECK_EQ(cudaDeviceGetAttribute(&a, (enum cudaDeviceAttr)100000, 0), cudaErrorInvalidValue);
    CHECK_EQ(cudaDeviceGetAttribute(&a, cudaDevAttrMultiProcessorCount, g_ngpu), cudaErrorInvalidDevice);
    int lo = 1, hi = 1, pr = 7;
    CHECK_EQ(cudaDeviceGetStreamPriorityRange(&lo, &hi), cudaSuccess);
    CHECK_EQ(lo, 0);
    CHECK_EQ(hi, -5);
    CHECK_EQ(cudaStreamGetPriority(NULL, &pr), cudaSuccess);
    CHECK_EQ(pr, 0);
    cudaGetLastError();

    CHECK(strcmp(simcuda_hostname(), g_host) == 0);
}

static void *thread_dev(void *p)
{
    int *out = p;
    cudaGetDevice(&out[0]);           /* a new thread starts on device 0 */
    cudaSetDevice(3);
    cudaGetDevice(&out[1]);
    out[2] = simcuda_current_device();
    cudaStream_t s;
    cudaStreamCreate(&s);
    out[3] = simcuda_stream_device((CUstream)s);
    out[4] = simcuda_stream_device(NULL);
    cudaStreamDestroy(s);
    return NULL;
}

static void test_per_thread_device(void)
{
    int d = -1, out[5] = { -1, -1, -1, -1, -1 };
    CUcontext c = NULL, prim = NULL;
    CHECK_EQ(cudaSetDevice(1), cudaSuccess);
    pthread_t t;
    pthread_create(&t, NULL, thread_dev, out);
    pthread_join(t, NULL);
    CHECK_EQ(out[0], 0);
    CHECK_EQ(out[1], 3);
    CHECK_EQ(out[2], 3);
    CHECK_EQ(out[3], 3);
    CHECK_EQ(out[4], 3);
    CHECK_EQ(cudaGetDevice(&d), cudaSuccess);
    CHECK_EQ(d, 1);                   /* unchanged by the other thread */
    CHECK_EQ(cuCtxGetCurrent(&c), CUDA_SUCCESS);
    CHECK_EQ(cuDevicePrimaryCtxRetain(&prim, 1), CUDA_SUCCESS);
    CHECK(c == prim);
    CUdevice cd = -1;
    CHECK_EQ(cuCtxGetDevice(&cd), CUDA_SUCCESS);
    CHECK_EQ(cd, 1);

    cudaEvent_t e;
    cudaEventCreate(&e);
    cudaStream_t s;
    cudaStreamCreate(&s);
    CHECK_EQ(simcuda_stream_device((CUstream)s), 1);
    int sd = -1;
    CHECK_EQ(cudaStreamGetDevice(s, &sd), cudaSuccess);
    CHECK_EQ(sd, 1);
    cudaStreamDestroy(s);
    cudaEventDestroy(e);

    CHECK_EQ(cudaSetDevice(99), cudaErrorInvalidDevice);
    CHECK_EQ(cudaSetDevice(-1), cudaErrorInvalidDevice);
    CHECK_EQ(cudaGetDevice(&d), cudaSuccess);
    CHECK_EQ(d, 1);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);

    /* driver context stack */
    CUcontext mine = NULL, popped = NULL;
    CHECK_EQ(cuCtxCreate(&mine, NULL, 0, 2), CUDA_SUCCESS);
    CHECK_EQ(cuCtxGetDevice(&cd), CUDA_SUCCESS);
    CHECK_EQ(cd, 2);
    CHECK_EQ(simcuda_current_device(), 2);
    CHECK_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
    CHECK(popped == mine);
    CHECK_EQ(cuCtxDestroy(mine), CUDA_SUCCESS);
    CHECK_EQ(simcuda_current_device(), 1);
    CHECK_EQ(cuCtxSetCurrent((CUcontext)(uintptr_t)0x1234), CUDA_ERROR_INVALID_CONTEXT);
    cudaSetDevice(0);
}

static void *thread_noctx(void *p)
{
    int *out = p;
    CUcontext c = (CUcontext)(uintptr_t)1;
    CUdevice d;
    out[0] = cuCtxGetCurrent(&c) == CUDA_SUCCESS && c == NULL;
    out[1] = cuCtxGetDevice(&d);
    void *m = NULL;
    out[2] = cudaFree(NULL);                 /* initialises device 0's primary context */
    out[3] = cuCtxGetCurrent(&c) == CUDA_SUCCESS && c != NULL;
    out[4] = cudaMalloc(&m, 16) == cudaSuccess && simcuda_ptr_kind(m, &out[5]) == 1;
    cudaFree(m);
    return NULL;
}

static void test_errors(void)
{
    int out[6] = { 0 };
    pthread_t t;
    pthread_create(&t, NULL, thread_noctx, out);
    pthread_join(t, NULL);
    CHECK_EQ(out[0], 1);
    CHECK_EQ(out[1], CUDA_ERROR_INVALID_CONTEXT);
    CHECK_EQ(out[2], cudaSuccess);
    CHECK_EQ(out[3], 1);
    CHECK_EQ(out[4], 1);
    CHECK_EQ(out[5], 0);

    /* last error: sticky per thread until read, untouched by success and by NotReady */
    cudaGetLastError();
    cudaStream_t bad = (cudaStream_t)(uintptr_t)0xbad0;
    CHECK_EQ(cudaStreamSynchronize(bad), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaStreamQuery(NULL), cudaSuccess);
    CHECK_EQ(cudaPeekAtLastError(), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(NULL), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaStreamDestroy(cudaStreamPerThread), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaEventQuery((cudaEvent_t)(uintptr_t)0xbad0), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaEventRecord((cudaEvent_t)(uintptr_t)0xbad0, NULL), cudaErrorInvalidResourceHandle);
    cudaEvent_t e;
    CHECK_EQ(cudaEventCreateWithFlags(&e, 0x100), cudaErrorInvalidValue);
    CHECK_EQ(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue);
    CHECK_EQ(cudaEventCreate(&e), cudaSuccess);
    CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
    CHECK_EQ(cudaEventDestroy(e), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaEventRecordWithFlags(e, NULL, 0), cudaErrorInvalidResourceHandle);
    cudaStream_t s;
    CHECK_EQ(cudaStreamCreateWithFlags(&s, 0x10), cudaErrorInvalidValue);
    CHECK_EQ(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -100), cudaSuccess);
    int pr = 0;
    CHECK_EQ(cudaStreamGetPriority(s, &pr), cudaSuccess);
    CHECK_EQ(pr, -5);
    unsigned fl = 0;
    CHECK_EQ(cudaStreamGetFlags(s, &fl), cudaSuccess);
    CHECK_EQ(fl, cudaStreamNonBlocking);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaLaunchHostFunc(NULL, NULL, NULL), cudaErrorInvalidValue);
    cudaGetLastError();

    CHECK(strcmp(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument") == 0);
    CHECK(strcmp(cudaGetErrorString(cudaErrorNotReady), "device not ready") == 0);
    CHECK(strcmp(cudaGetErrorName(cudaErrorCapturedEvent), "cudaErrorCapturedEvent") == 0);
    CHECK(strcmp(cudaGetErrorString((cudaError_t)12345), "unrecognized error code") == 0);
    const char *str = NULL;
    CHECK_EQ(cuGetErrorName(CUDA_ERROR_NOT_READY, &str), CUDA_SUCCESS);
    CHECK(str && strcmp(str, "CUDA_ERROR_NOT_READY") == 0);
    CHECK_EQ(cuGetErrorString(CUDA_ERROR_INVALID_HANDLE, &str), CUDA_SUCCESS);
    CHECK(str && strcmp(str, "invalid resource handle") == 0);
    CHECK_EQ(cuGetErrorString((CUresult)9999, &str), CUDA_ERROR_INVALID_VALUE);
    CHECK(str == NULL);
    CHECK_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuInit(0), CUDA_SUCCESS);
}

static const char *sym_of(void *fp)
{
    Dl_info di;
    return fp && dladdr(fp, &di) && di.dli_sname ? di.dli_sname : "";
}

static void test_entry_points(void)
{
    void *fp = NULL;
    CUdriverProcAddressQueryResult q;
    CHECK_EQ(cuGetProcAddress("cuEventElapsedTime", &fp, 13000, 0, &q), CUDA_SUCCESS);
    CHECK(strcmp(sym_of(fp), "cuEventElapsedTime_v2") == 0);
    CHECK_EQ(cuGetProcAddress("cuStreamGetCaptureInfo", &fp, 13000, 0, &q), CUDA_SUCCESS);
    CHECK(strcmp(sym_of(fp), "cuStreamGetCaptureInfo_v3") == 0);
    CHECK_EQ(cuGetProcAddress("cuMemAlloc", &fp, 13000, 0, &q), CUDA_SUCCESS);
    CHECK(strcmp(sym_of(fp), "cuMemAlloc_v2") == 0);
    CHECK_EQ(cuGetProcAddress("cuEventDestroy", &fp, 13000, 0, &q), CUDA_SUCCESS);
    CHECK(strcmp(sym_of(fp), "cuEventDestroy_v2") == 0);
    CHECK_EQ(cuGetProcAddress("cuStreamQuery", &fp, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q), CUDA_SUCCESS);
    CHECK(strcmp(sym_of(fp), "cuStreamQuery_ptsz") == 0);
    CHECK_EQ(cuGetProcAddress("cuMemcpyHtoD", &fp, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q), CUDA_SUCCESS);
    CHECK(strcmp(sym_of(fp), "cuMemcpyHtoD_v2_ptds") == 0);
    CHECK_EQ(cuGetProcAddress("cuLaunchKernel", &fp, 13000, 0, &q), CUDA_SUCCESS);
    CHECK(strcmp(sym_of(fp), "cuLaunchKernel") == 0);
    CHECK_EQ(q, CU_GET_PROC_ADDRESS_SUCCESS);
    CHECK_EQ(cuGetProcAddress("cuNoSuch", &fp, 13000, 0, &q), CUDA_SUCCESS);
    CHECK(fp == NULL);
    CHECK_EQ(q, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    CHECK_EQ(cuGetProcAddress("cuInit", &fp, 1000, 0, &q), CUDA_SUCCESS);
    CHECK_EQ(q, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    enum cudaDriverEntryPointQueryResult rq;
    CHECK_EQ(cudaGetDriverEntryPointByVersion("cuEventRecord", &fp, 13000, cudaEnableDefault, &rq), cudaSuccess);
    CHECK(strcmp(sym_of(fp), "cuEventRecord") == 0);
    CHECK_EQ(rq, cudaDriverEntryPointSuccess);

    /* the legacy plain names resolve by dlsym, like collscope's resolver does */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(h != NULL);
    static const char *names[] = {
        "cuInit", "cuDriverGetVersion", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetName", "cuDeviceGetAttribute",
        "cuDeviceGetPCIBusId", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice", "cuDevicePrimaryCtxRetain",
        "cuEventCreate", "cuEventDestroy", "cuEventDestroy_v2", "cuEventRecord", "cuEventRecordWithFlags",
        "cuEventQuery", "cuEventSynchronize", "cuEventElapsedTime", "cuEventElapsedTime_v2", "cuStreamIsCapturing",
        "cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v2", "cuStreamGetCaptureInfo_v3", "cuStreamSynchronize",
        "cuStreamQuery", "cuLaunchHostFunc", "cuLaunchKernel", "cuModuleLoadData", "cuModuleLoadFatBinary",
        "cuModuleGetFunction", "cuModuleUnload", "cuMemAlloc", "cuMemAlloc_v2", "cuMemFree", "cuMemFree_v2",
        "cuMemAllocHost", "cuMemAllocHost_v2", "cuMemFreeHost", "cuMemcpy", "cuMemcpyAsync", "cuMemcpyHtoD",
        "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoHAsync_v2", "cuMemsetD8", "cuMemsetD8_v2",
        "cuMemsetD8Async", "cuPointerGetAttribute", "cuGetErrorString", "cuGetErrorName", "cuGetProcAddress",
        "cuGetProcAddress_v2", "cuStreamBeginCapture", "cuStreamBeginCapture_v2", "cuCtxCreate", "cuCtxCreate_v4",
        "cuGraphInstantiate", "cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuStreamWaitEvent",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *p = dlsym(h, names[i]);
        if (!p) fprintf(stderr, "missing %s\n", names[i]);
        CHECK(p != NULL);
    }
    /* the plain 3-argument cuStreamGetCaptureInfo */
    CUresult (*legacy_info)(CUstream, CUstreamCaptureStatus *, cuuint64_t *) =
        (CUresult (*)(CUstream, CUstreamCaptureStatus *, cuuint64_t *))dlsym(h, "cuStreamGetCaptureInfo");
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    cuuint64_t id = 5;
    CHECK_EQ(legacy_info(NULL, &st, &id), CUDA_SUCCESS);
    CHECK_EQ(st, CU_STREAM_CAPTURE_STATUS_NONE);
    dlclose(h);
}

static void noop(void *p) { (void)p; }

static void test_fork(void)
{
    cudaStream_t s;
    cudaEvent_t e;
    void *d;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    REQUIRE(cudaEventCreate(&e) == cudaSuccess);
    REQUIRE(cudaMalloc(&d, 64) == cudaSuccess);
    cudaLaunchHostFunc(s, noop, NULL);
    cudaLaunchHostFunc(NULL, noop, NULL);
    cudaEventRecord(e, s);
    cudaStreamSynchronize(s);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        /* parent handles are gone in the child; fresh ones work, memory stays valid */
        int bad = 0;
        if (cudaStreamQuery(s) != cudaErrorInvalidResourceHandle) bad |= 1;
        if (cudaEventQuery(e) != cudaErrorInvalidResourceHandle) bad |= 2;
        cudaStream_t s2;
        cudaEvent_t e2;
        if (cudaStreamCreate(&s2) != cudaSuccess) bad |= 4;
        if (cudaEventCreate(&e2) != cudaSuccess) bad |= 8;
        if (cudaMemsetAsync(d, 3, 64, s2) != cudaSuccess) bad |= 16;
        if (cudaEventRecord(e2, s2) != cudaSuccess) bad |= 32;
        if (cudaEventSynchronize(e2) != cudaSuccess || ((unsigned char *)d)[63] != 3) bad |= 64;
        if (cudaLaunchHostFunc(NULL, noop, NULL) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) bad |= 128;
        if (simcuda_ptr_kind(d, NULL) != 1) bad |= 256;
        _exit(bad);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    /* the parent is unaffected */
    CHECK_EQ(cudaLaunchHostFunc(s, noop, NULL), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    cudaFree(d);
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
}

/* A sticky fault (simcuda_device_fault; driver_types.h:769-775: "any further CUDA work will
 * return the same error"): a synchronize already waiting returns it without waiting for the
 * device's remaining work, every later synchronize/query and cudaGetLastError return it, the
 * first error stays, and another device is not affected. In a child: the context is lost. */
static volatile int sticky_release;
static void sticky_block(void *p) { (void)p; while (!sticky_release) sleep_ms(1); }
static void *sticky_fault_later(void *p)
{
    (void)p;
    sleep_ms(100);
    simcuda_device_fault(0, CUDA_ERROR_ILLEGAL_ADDRESS);
    return NULL;
}

static void test_sticky_fault(void)
{
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(20);   /* a synchronize that misses the fault hangs: fail by signal */
        int bad = 0;
        cudaStream_t s, s1;
        if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess) _exit(100);
        if (simcuda_enqueue((CUstream)s, sticky_block, NULL, NULL) != CUDA_SUCCESS) _exit(101);
        pthread_t t;
        pthread_create(&t, NULL, sticky_fault_later, NULL);
        if (cudaStreamSynchronize(s) != cudaErrorIllegalAddress) bad |= 1;
        if (sticky_release) bad |= 2;   /* returned while the stream's work is still running */
        pthread_join(t, NULL);
        if (cudaStreamQuery(s) != cudaErrorIllegalAddress) bad |= 4;
        if (cuCtxSynchronize() != CUDA_ERROR_ILLEGAL_ADDRESS) bad |= 8;
        if (cudaGetLastError() != cudaErrorIllegalAddress || cudaGetLastError() != cudaErrorIllegalAddress) bad |= 16;
        simcuda_device_fault(0, CUDA_ERROR_LAUNCH_FAILED);   /* the first fault stays */
        if (simcuda_device_error(0) != CUDA_ERROR_ILLEGAL_ADDRESS) bad |= 32;
        if (simcuda_device_count() >= 2) {
            if (cudaSetDevice(1) != cudaSuccess || cudaStreamCreate(&s1) != cudaSuccess) _exit(102);
            if (cudaStreamSynchronize(s1) != cudaSuccess || cudaGetLastError() != cudaSuccess) bad |= 64;
        }
        sticky_release = 1;
        _exit(bad);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status), 0);
    CHECK_EQ(simcuda_device_error(0), CUDA_SUCCESS);   /* the parent is unaffected */
}

int main(int argc, char **argv)
{
    char host[256] = "";
    gethostname(host, sizeof host);
    g_host = host;
    if (argc >= 3) {   /* <gpus> <hostname> expected from the environment */
        g_ngpu = atoi(argv[1]);
        g_host = argv[2];
    }
    RUN(test_devices);
    RUN(test_per_thread_device);
    RUN(test_errors);
    RUN(test_entry_points);
    RUN(test_fork);
    RUN(test_sticky_fault);
    return simtest_done("simcuda_device");
}
