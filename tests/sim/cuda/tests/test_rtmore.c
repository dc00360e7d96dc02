/* Runtime functions frameworks call on start-up or on the data path: cudaMemcpy3D(Async),
 * cudaMemcpyTo/FromSymbol (nvcc-registered __device__ variables), occupancy queries,
 * cudaLaunchCooperativeKernel and graph kernel nodes. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "simtest.h"

#define KEXPORT __attribute__((visibility("default")))

/* add(int *p, int n, int v): p[i] += v */
KEXPORT void collscope_simkernel_add(void **params, const unsigned grid[3], const unsigned block[3]);
KEXPORT const size_t collscope_simkernel_add_argsizes[] = { sizeof(int *), sizeof(int), sizeof(int), 0 };
KEXPORT void collscope_simkernel_add(void **params, const unsigned grid[3], const unsigned block[3])
{
    (void)grid; (void)block;
    int *p = *(int **)params[0];
    int n = *(int *)params[1], v = *(int *)params[2];
    for (int i = 0; i < n; i++) p[i] += v;
}

void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **h);
void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName, int threadLimit,
                            uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
void __cudaRegisterVar(void **h, char *hostVar, char *deviceAddress, const char *deviceName, int ext, size_t size,
                       int constant, int global);

static void stub_add(void) {}
static int dev_table[64];    /* a __device__ int dev_table[64] as nvcc registers it */
static int not_a_symbol[4];

static void register_module(void)
{
    void **h = __cudaRegisterFatBinary((void *)"fatbin");
    REQUIRE(h != NULL);
    __cudaRegisterFunction(h, (const char *)stub_add, (char *)"add", "add", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterVar(h, (char *)dev_table, (char *)"dev_table", "dev_table", 0, sizeof dev_table, 0, 0);
    __cudaRegisterFatBinaryEnd(h);
}

static void test_memcpy3d(void)
{
    /* a 5 x 4 x 3 box of bytes out of a host volume (pitch 16, 8 rows a slice) at (2,1,1)
     * into device memory (pitch 8, 4 rows a slice) at the origin, and back */
    enum { SP = 16, SY = 8, SZ = 4, DP = 8, DY = 4, DZ = 3, W = 5, H = 4, D = 3 };
    static unsigned char src[SP * SY * SZ], back[DP * DY * DZ];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 7 + 1);
    void *dev = NULL;
    REQUIRE(cudaMalloc(&dev, DP * DY * DZ) == cudaSuccess);
    CHECK_EQ(cudaMemset(dev, 0, DP * DY * DZ), cudaSuccess);
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = (struct cudaPitchedPtr){ src, SP, SP, SY };
    p.srcPos = (struct cudaPos){ 2, 1, 1 };
    p.dstPtr = (struct cudaPitchedPtr){ dev, DP, DP, DY };
    p.extent = (struct cudaExtent){ W, H, D };
    p.kind = cudaMemcpyHostToDevice;
    CHECK_EQ(cudaMemcpy3D(&p), cudaSuccess);
    CHECK_EQ(cudaMemcpy(back, dev, sizeof back, cudaMemcpyDeviceToHost), cudaSuccess);
    int ok = 1;
    for (int z = 0; z < DZ; z++)
        for (int y = 0; y < DY; y++)
            for (int x = 0; x < DP; x++) {
                unsigned char want = x < W && y < H && z < D ? src[(z + 1) * SP * SY + (y + 1) * SP + x + 2] : 0;
                ok &= back[z * DP * DY + y * DP + x] == want;
            }
    CHECK(ok);

    /* async: device -> host on a stream, after a pending kernel-free memset */
    static unsigned char out[DP * DY * DZ];
    cudaStream_t s;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    struct cudaMemcpy3DParms q;
    memset(&q, 0, sizeof q);
    q.srcPtr = (struct cudaPitchedPtr){ dev, DP, DP, DY };
    q.dstPtr = (struct cudaPitchedPtr){ out, DP, DP, DY };
    q.extent = (struct cudaExtent){ DP, DY, DZ };
    q.kind = cudaMemcpyDeviceToHost;
    CHECK_EQ(cudaMemcpy3DAsync(&q, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK(memcmp(out, back, sizeof out) == 0);

    p.srcPtr.pitch = 2;   /* narrower than the extent */
    CHECK_EQ(cudaMemcpy3D(&p), cudaErrorInvalidPitchValue);
    p.srcPtr.pitch = SP;
    p.srcPos.x = SP;      /* the box would leave the row */
    CHECK_EQ(cudaMemcpy3D(&p), cudaErrorInvalidValue);
    CHECK_EQ(cudaMemcpy3D(NULL), cudaErrorInvalidValue);
    cudaGetLastError();
    cudaStreamDestroy(s);
    cudaFree(dev);
}

static void test_symbols(void)
{
    int in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8] = { 0 };
    CHECK_EQ(cudaMemcpyToSymbol(dev_table, in, sizeof in, 16 * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_EQ(dev_table[16], 1);
    CHECK_EQ(dev_table[23], 8);
    CHECK_EQ(cudaMemcpyFromSymbol(out, dev_table, sizeof out, 16 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK(memcmp(in, out, sizeof in) == 0);
    void *addr = NULL;
    size_t size = 0;
    CHECK_EQ(cudaGetSymbolAddress(&addr, dev_table), cudaSuccess);
    CHECK(addr == (void *)dev_table);
    CHECK_EQ(cudaGetSymbolSize(&size, dev_table), cudaSuccess);
    CHECK_EQ(size, sizeof dev_table);

    cudaStream_t s;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    int nine = 9, got = 0;
    CHECK_EQ(cudaMemcpyToSymbolAsync(dev_table, &nine, sizeof nine, 0, cudaMemcpyHostToDevice, s), cudaSuccess);
    CHECK_EQ(cudaMemcpyFromSymbolAsync(&got, dev_table, sizeof got, 0, cudaMemcpyDeviceToHost, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(got, 9);
    cudaStreamDestroy(s);

    CHECK_EQ(cudaMemcpyToSymbol(not_a_symbol, in, 4, 0, cudaMemcpyHostToDevice), cudaErrorInvalidSymbol);
    CHECK_EQ(cudaMemcpyToSymbol(dev_table, in, sizeof in, sizeof dev_table - 4, cudaMemcpyHostToDevice),
             cudaErrorInvalidValue);   /* past the end */
    CHECK_EQ(cudaMemcpyToSymbol(dev_table, in, 4, 0, cudaMemcpyDeviceToHost), cudaErrorInvalidMemcpyDirection);
    CHECK_EQ(cudaMemcpyFromSymbol(out, dev_table, 4, 0, cudaMemcpyHostToDevice), cudaErrorInvalidMemcpyDirection);
    cudaGetLastError();
}

static void test_occupancy_and_cooperative(void)
{
    int n = 0;
    CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, (const void *)stub_add, 256, 0), cudaSuccess);
    CHECK_EQ(n, 8);    /* 2048 threads / 256 */
    CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, (const void *)stub_add, 32, 0), cudaSuccess);
    CHECK_EQ(n, 32);   /* the 32-blocks limit */
    CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, (const void *)stub_add, 128, 100 * 1024), cudaSuccess);
    CHECK_EQ(n, 2);    /* 228 KiB / (100 KiB + 1 KiB) */
    CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, (const void *)stub_add, 1024, 0, 0), cudaSuccess);
    CHECK_EQ(n, 2);
    CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, (const void *)test_symbols, 256, 0),
             cudaErrorInvalidDeviceFunction);
    CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, (const void *)stub_add, 2048, 0), cudaErrorInvalidValue);
    size_t smem = 0;
    CHECK_EQ(cudaOccupancyAvailableDynamicSMemPerBlock(&smem, (const void *)stub_add, 2, 256), cudaSuccess);
    CHECK_EQ(smem, 233472 / 2 - 1024);
    cudaGetLastError();

    int *d = NULL;
    REQUIRE(cudaMalloc((void **)&d, 4 * sizeof(int)) == cudaSuccess);
    REQUIRE(cudaMemset(d, 0, 4 * sizeof(int)) == cudaSuccess);
    int cnt = 4, v = 5;
    void *args[] = { &d, &cnt, &v };
    dim3 grid = { 132 * 8, 1, 1 }, block = { 256, 1, 1 }, too_many = { 132 * 8 + 1, 1, 1 };
    CHECK_EQ(cudaLaunchCooperativeKernel((const void *)stub_add, grid, block, args, 0, NULL), cudaSuccess);
    CHECK_EQ(cudaLaunchCooperativeKernel((const void *)stub_add, too_many, block, args, 0, NULL),
             cudaErrorCooperativeLaunchTooLarge);
    cudaGetLastError();
    int h[4] = { 0 };
    CHECK_EQ(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK_EQ(h[3], 5);   /* one launch ran: the host twin runs the whole grid once */
    cudaFree(d);
}

static void test_kernel_nodes(void)
{
    int *d = NULL;
    REQUIRE(cudaMalloc((void **)&d, 4 * sizeof(int)) == cudaSuccess);
    REQUIRE(cudaMemset(d, 0, 4 * sizeof(int)) == cudaSuccess);
    cudaGraph_t g;
    REQUIRE(cudaGraphCreate(&g, 0) == cudaSuccess);
    int cnt = 4, v1 = 10, v2 = 1;
    void *a1[] = { &d, &cnt, &v1 }, *a2[] = { &d, &cnt, &v2 };
    struct cudaKernelNodeParams kp = { (void *)stub_add, { 1, 1, 1 }, { 32, 1, 1 }, 0, a1, NULL };
    cudaGraphNode_t n1, n2;
    CHECK_EQ(cudaGraphAddKernelNode(&n1, g, NULL, 0, &kp), cudaSuccess);
    kp.kernelParams = a2;
    CHECK_EQ(cudaGraphAddKernelNode(&n2, g, &n1, 1, &kp), cudaSuccess);
    v1 = 1000;   /* the node copied its arguments when it was added */
    kp.func = (void *)test_symbols;
    cudaGraphNode_t bad;
    CHECK_EQ(cudaGraphAddKernelNode(&bad, g, NULL, 0, &kp), cudaErrorInvalidDeviceFunction);
    cudaGetLastError();
    size_t nn = 0;
    CHECK_EQ(cudaGraphGetNodes(g, NULL, &nn), cudaSuccess);
    CHECK_EQ(nn, 2);
    cudaGraphExec_t x;
    REQUIRE(cudaGraphInstantiate(&x, g, 0) == cudaSuccess);
    cudaStream_t s;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
    CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    int h[4] = { 0 };
    CHECK_EQ(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK_EQ(h[0], 22);
    CHECK_EQ(h[3], 22);
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    cudaFree(d);
}

int main(void)
{
    register_module();
    RUN(test_memcpy3d);
    RUN(test_symbols);
    RUN(test_occupancy_and_cooperative);
    RUN(test_kernel_nodes);
    return simtest_done("simcuda_rtmore");
}
