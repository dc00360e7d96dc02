/* Kernels: modules, cuModuleGetFunction -> collscope_simkernel_<name>, cuLaunchKernel,
 * and the runtime's cudaLaunchKernel with nvcc-style registration. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <string.h>

#include "simcuda.h"
#include "simtest.h"

#define KEXPORT __attribute__((visibility("default")))

/* a kernel with argument sizes: the launch copies the values */
KEXPORT void collscope_simkernel_fill(void **params, const unsigned grid[3], const unsigned block[3]);
KEXPORT const size_t collscope_simkernel_fill_argsizes[] = { sizeof(int *), sizeof(int), sizeof(int), 0 };
KEXPORT void collscope_simkernel_fill(void **params, const unsigned grid[3], const unsigned block[3])
{
    int *out = *(int **)params[0];
    int n = *(int *)params[1], v = *(int *)params[2];
    for (int i = 0; i < n; i++) out[i] = v + (int)(grid[0] * 1000 + block[0]);
}

/* a kernel without argument sizes: the caller's parameter array is used as given */
static int g_plain_calls;
KEXPORT void collscope_simkernel_plain(void **params, const unsigned grid[3], const unsigned block[3]);
KEXPORT void collscope_simkernel_plain(void **params, const unsigned grid[3], const unsigned block[3])
{
    (void)grid; (void)block;
    g_plain_calls += *(int *)params[0];
}

static void gate_sleep(void *p) { (void)p; sleep_ms(20); }

static void test_driver_kernels(void)
{
    static const char image[] = "not really a cubin";
    CUmodule mod, mod2;
    CUfunction f, f2, none;
    CUstream s;
    REQUIRE(cuInit(0) == CUDA_SUCCESS);
    CHECK_EQ(cuModuleLoadData(&mod, image), CUDA_SUCCESS);
    CHECK_EQ(cuModuleLoadFatBinary(&mod2, image), CUDA_SUCCESS);
    CHECK_EQ(cuModuleLoadData(&mod, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuModuleGetFunction(&f, mod, "fill"), CUDA_SUCCESS);
    CHECK_EQ(cuModuleGetFunction(&f2, mod, "fill"), CUDA_SUCCESS);
    CHECK(f == f2);
    CHECK_EQ(cuModuleGetFunction(&none, mod, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    CHECK_EQ(cuModuleGetFunction(&none, (CUmodule)(uintptr_t)0x77, "fill"), CUDA_ERROR_INVALID_HANDLE);
    const char *name = NULL;
    CHECK_EQ(cuFuncGetName(&name, f), CUDA_SUCCESS);
    CHECK(name && strcmp(name, "fill") == 0);

    REQUIRE(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    int out[8] = { 0 };
    int *outp = out;
    int n = 8, v = 5;
    void *params[] = { &outp, &n, &v };
    CHECK_EQ(cuLaunchHostFunc(s, gate_sleep, NULL), CUDA_SUCCESS);
    CHECK_EQ(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, s, params, NULL), CUDA_SUCCESS);
    v = 99;   /* the launch copied the values: this change is not seen */
    CHECK_EQ(out[0], 0);   /* asynchronous */
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK_EQ(out[0], 5 + 2032);
    CHECK_EQ(out[7], 5 + 2032);

    /* packed argument buffer through `extra` */
    struct { int *p; int n; int v; } packed = { out, 2, 1 };
    size_t psize = sizeof packed;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &psize, CU_LAUNCH_PARAM_END };
    CHECK_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, extra), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK_EQ(out[0], 1 + 1001);
    CHECK_EQ(out[2], 5 + 2032);

    CUfunction pf;
    CHECK_EQ(cuModuleGetFunction(&pf, mod2, "plain"), CUDA_SUCCESS);
    int add = 3;
    void *pp[] = { &add };
    CHECK_EQ(cuLaunchKernel(pf, 1, 1, 1, 1, 1, 1, 0, NULL, pp, NULL), CUDA_SUCCESS);
    CHECK_EQ(cuLaunchKernel(pf, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD, pp, NULL), CUDA_SUCCESS);
    CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    CHECK_EQ(g_plain_calls, 6);

    /* bad launches */
    CHECK_EQ(cuLaunchKernel((CUfunction)(uintptr_t)0x99, 1, 1, 1, 1, 1, 1, 0, s, pp, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_EQ(cuLaunchKernel(pf, 0, 1, 1, 1, 1, 1, 0, s, pp, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuLaunchKernel(pf, 1, 1, 1, 2048, 1, 1, 0, s, pp, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuLaunchKernel(pf, 1, 1, 1, 1, 1, 1, 0, (CUstream)(uintptr_t)0x55, pp, NULL), CUDA_ERROR_INVALID_HANDLE);

    /* kernels are captured like any other work */
    CUgraph g;
    CUgraphExec x;
    n = 1; v = 40;
    CHECK_EQ(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    CHECK_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL), CUDA_SUCCESS);
    CHECK_EQ(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    out[0] = 0;
    CHECK_EQ(cuGraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    CHECK_EQ(cuGraphLaunch(x, s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK_EQ(out[0], 40 + 1001);
    cuGraphExecDestroy(x);
    cuGraphDestroy(g);

    CHECK_EQ(cuModuleUnload(mod), CUDA_SUCCESS);
    CHECK_EQ(cuModuleUnload(mod), CUDA_ERROR_INVALID_HANDLE);
    CHECK_EQ(cuModuleUnload(mod2), CUDA_SUCCESS);
    cuStreamDestroy(s);
}

/* nvcc's registration entry points (what a .cu file's host stub would call) */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **h);
void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName, int threadLimit,
                            uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);

static void host_stub_fill(void) {}
static void host_stub_missing(void) {}
static void not_registered(void) {}

static void test_runtime_kernels(void)
{
    int out[4] = { 0 };
    int *outp = out;
    int n = 4, v = 7;
    void *args[] = { &outp, &n, &v };
    dim3 one = { 1, 1, 1 };
    CHECK_EQ(cudaLaunchKernel((const void *)not_registered, one, one, args, 0, NULL), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);

    void **h = __cudaRegisterFatBinary((void *)"fatbin");
    REQUIRE(h != NULL);
    __cudaRegisterFunction(h, (const char *)host_stub_fill, (char *)"fill", "fill", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(h, (const char *)host_stub_missing, (char *)"missing", "missing", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(h);

    CHECK_EQ(cudaLaunchKernel((const void *)host_stub_fill, one, one, args, 0, NULL), cudaSuccess);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(out[3], 7 + 1001);
    CHECK_EQ(cudaLaunchKernel((const void *)host_stub_missing, one, one, args, 0, NULL), cudaErrorInvalidDeviceFunction);
    dim3 zero = { 0, 1, 1 };
    CHECK_EQ(cudaLaunchKernel((const void *)host_stub_fill, zero, one, args, 0, NULL), cudaErrorInvalidConfiguration);
    struct cudaFuncAttributes fa;
    CHECK_EQ(cudaFuncGetAttributes(&fa, (const void *)host_stub_fill), cudaSuccess);
    CHECK_EQ(fa.maxThreadsPerBlock, 1024);
    cudaGetLastError();
}

int main(void)
{
    RUN(test_driver_kernels);
    RUN(test_runtime_kernels);
    return simtest_done("simcuda_kernel");
}
