/* Simulated device memory: allocations, copies of every kind, memsets, pointer attributes. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <string.h>

#include "simcuda.h"
#include "simtest.h"

cudaError_t cudaMemcpy_ptds(void *d, const void *s, size_t n, enum cudaMemcpyKind k);
cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st);
cudaError_t cudaMemsetAsync_ptsz(void *p, int v, size_t n, cudaStream_t s);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s);

static void test_alloc_and_attributes(void)
{
    void *d = NULL, *h = NULL, *m = NULL;
    int x = 0;
    struct cudaPointerAttributes a;
    REQUIRE(cudaSetDevice(2) == cudaSuccess);
    CHECK_EQ(cudaMalloc(&d, 1000), cudaSuccess);
    CHECK_EQ(cudaMallocHost(&h, 1000), cudaSuccess);
    CHECK_EQ(cudaMallocManaged(&m, 1000, cudaMemAttachGlobal), cudaSuccess);
    CHECK(((uintptr_t)d % 256) == 0);

    CHECK_EQ(cudaPointerGetAttributes(&a, (char *)d + 10), cudaSuccess);
    CHECK_EQ(a.type, cudaMemoryTypeDevice);
    CHECK_EQ(a.device, 2);
    CHECK(a.devicePointer == (char *)d + 10);
    CHECK(a.hostPointer == NULL);
    CHECK_EQ(cudaPointerGetAttributes(&a, (char *)h + 999), cudaSuccess);
    CHECK_EQ(a.type, cudaMemoryTypeHost);
    CHECK(a.hostPointer == (char *)h + 999 && a.devicePointer == (char *)h + 999);
    CHECK_EQ(cudaPointerGetAttributes(&a, m), cudaSuccess);
    CHECK_EQ(a.type, cudaMemoryTypeManaged);
    CHECK_EQ(a.device, 2);
    CHECK_EQ(cudaPointerGetAttributes(&a, &x), cudaSuccess);
    CHECK_EQ(a.type, cudaMemoryTypeUnregistered);
    CHECK_EQ(a.device, -2);
    CHECK(a.hostPointer == &x && a.devicePointer == NULL);
    CHECK_EQ(cudaPointerGetAttributes(&a, (char *)d + 1000), cudaSuccess);   /* one past the end */
    CHECK_EQ(a.type, cudaMemoryTypeUnregistered);
    CHECK_EQ(cudaPointerGetAttributes(NULL, d), cudaErrorInvalidValue);
    cudaGetLastError();

    /* driver attributes */
    unsigned int mt = 77;
    int ord = -1;
    CUdeviceptr base = 0;
    size_t size = 0;
    CUcontext ctx = NULL;
    CHECK_EQ(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)d + 5), CUDA_SUCCESS);
    CHECK_EQ(mt, CU_MEMORYTYPE_DEVICE);
    CHECK_EQ(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)h), CUDA_SUCCESS);
    CHECK_EQ(mt, CU_MEMORYTYPE_HOST);
    CHECK_EQ(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)d + 5), CUDA_SUCCESS);
    CHECK_EQ(ord, 2);
    CHECK_EQ(cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr)d + 5), CUDA_SUCCESS);
    CHECK(base == (CUdeviceptr)d);
    CHECK_EQ(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)d + 5), CUDA_SUCCESS);
    CHECK_EQ(size, 1000);
    CHECK_EQ(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)d), CUDA_SUCCESS);
    CUcontext p2;
    cuDevicePrimaryCtxRetain(&p2, 2);
    CHECK(ctx == p2);
    mt = 77;
    CHECK_EQ(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&x), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(mt, 77);
    CHECK_EQ(cuMemGetAddressRange(&base, &size, (CUdeviceptr)d + 999), CUDA_SUCCESS);
    CHECK(base == (CUdeviceptr)d && size == 1000);

    int dev = -1;
    CHECK_EQ(simcuda_ptr_kind((char *)d + 1, &dev), 1);
    CHECK_EQ(dev, 2);
    CHECK_EQ(simcuda_ptr_kind(h, NULL), 2);
    CHECK_EQ(simcuda_ptr_kind(m, NULL), 3);
    CHECK_EQ(simcuda_ptr_kind(&x, NULL), 0);

    size_t fr = 0, tot = 0;
    CHECK_EQ(cudaMemGetInfo(&fr, &tot), cudaSuccess);
    CHECK_EQ(tot, 80ull << 30);
    CHECK(fr <= tot - 1000);

    CHECK_EQ(cudaFree((char *)d + 10), cudaErrorInvalidValue);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_EQ(cudaFree(d), cudaSuccess);
    CHECK_EQ(cudaFree(d), cudaErrorInvalidValue);
    CHECK_EQ(cudaFree(NULL), cudaSuccess);
    CHECK_EQ(cudaFree(h), cudaErrorInvalidValue);   /* pinned memory is freed with cudaFreeHost */
    CHECK_EQ(cudaFreeHost(h), cudaSuccess);
    CHECK_EQ(cudaFree(m), cudaSuccess);
    void *z = (void *)1;
    CHECK_EQ(cudaMalloc(&z, 0), cudaSuccess);
    CHECK(z == NULL);
    CHECK_EQ(cudaMalloc(&z, 81ull << 30), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaMalloc(NULL, 8), cudaErrorInvalidValue);
    cudaGetLastError();

    /* host registration */
    static char buf[4096];
    CHECK_EQ(cudaHostRegister(buf, sizeof buf, cudaHostRegisterDefault), cudaSuccess);
    CHECK_EQ(cudaPointerGetAttributes(&a, buf + 100), cudaSuccess);
    CHECK_EQ(a.type, cudaMemoryTypeHost);
    CHECK_EQ(cudaHostRegister(buf, sizeof buf, 0), cudaErrorHostMemoryAlreadyRegistered);
    CHECK_EQ(cudaHostUnregister(buf), cudaSuccess);
    CHECK_EQ(cudaHostUnregister(buf), cudaErrorHostMemoryNotRegistered);
    cudaGetLastError();
    cudaSetDevice(0);
}

static void test_copies(void)
{
    enum { N = 4096 };
    unsigned char src[N], dst[N];
    void *d1, *d2, *h;
    cudaStream_t s;
    for (int i = 0; i < N; i++) src[i] = (unsigned char)(i * 7 + 1);
    REQUIRE(cudaMalloc(&d1, N) == cudaSuccess);
    REQUIRE(cudaMalloc(&d2, N) == cudaSuccess);
    REQUIRE(cudaMallocHost(&h, N) == cudaSuccess);
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);

    CHECK_EQ(cudaMemcpy(d1, src, N, cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_EQ(cudaMemcpy(d2, d1, N, cudaMemcpyDeviceToDevice), cudaSuccess);
    memset(dst, 0, N);
    CHECK_EQ(cudaMemcpy(dst, d2, N, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK(memcmp(src, dst, N) == 0);
    CHECK_EQ(cudaMemcpy(h, d2, N, cudaMemcpyDefault), cudaSuccess);
    CHECK(memcmp(src, h, N) == 0);
    CHECK_EQ(cudaMemcpy(dst, src, N, cudaMemcpyHostToHost), cudaSuccess);
    /* direction checks, as CUDA 13 does them */
    CHECK_EQ(cudaMemcpy(dst, src, 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CHECK_EQ(cudaMemcpy(dst, src, 4, (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
    CHECK_EQ(cudaMemcpy(dst, src, 4, cudaMemcpyDefault), cudaSuccess);
    cudaGetLastError();

    /* async copies and memset are stream-ordered */
    CHECK_EQ(cudaMemsetAsync(d1, 0x5a, N, s), cudaSuccess);
    CHECK_EQ(cudaMemcpyAsync(h, d1, N, cudaMemcpyDeviceToHost, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= ((unsigned char *)h)[i] == 0x5a;
    CHECK(ok);
    CHECK_EQ(cudaMemset(d1, 0x11, 16), cudaSuccess);
    CHECK_EQ(cudaMemcpy(dst, d1, 16, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK_EQ(dst[0], 0x11);
    CHECK_EQ(dst[15], 0x11);

    /* per-thread variants */
    CHECK_EQ(cudaMemcpyAsync_ptsz(d2, src, N, cudaMemcpyHostToDevice, NULL), cudaSuccess);
    CHECK_EQ(cudaMemsetAsync_ptsz(d2, 0x22, 8, NULL), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize_ptsz(NULL), cudaSuccess);
    CHECK_EQ(cudaMemcpy_ptds(dst, d2, N, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK_EQ(dst[7], 0x22);
    CHECK_EQ(dst[8], src[8]);

    /* 2D */
    unsigned char grid[8][16];
    for (int y = 0; y < 8; y++) for (int x = 0; x < 16; x++) grid[y][x] = (unsigned char)(y * 16 + x);
    CHECK_EQ(cudaMemcpy2D(d1, 32, grid, 16, 16, 8, cudaMemcpyHostToDevice), cudaSuccess);
    unsigned char back[8][4];
    CHECK_EQ(cudaMemcpy2DAsync(back, 4, (char *)d1 + 2, 32, 4, 8, cudaMemcpyDeviceToHost, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(back[0][0], 2);
    CHECK_EQ(back[7][3], 7 * 16 + 5);
    CHECK_EQ(cudaMemcpy2D(d1, 8, grid, 16, 16, 8, cudaMemcpyHostToDevice), cudaErrorInvalidPitchValue);
    cudaGetLastError();

    /* peer */
    void *p3;
    cudaSetDevice(3);
    REQUIRE(cudaMalloc(&p3, N) == cudaSuccess);
    cudaSetDevice(0);
    CHECK_EQ(cudaMemcpyPeer(p3, 3, d1, 0, 64), cudaSuccess);
    CHECK_EQ(cudaMemcpyPeerAsync(d2, 0, p3, 3, 64, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK(memcmp(d1, d2, 64) == 0);
    CHECK_EQ(cudaMemcpyPeer(p3, 99, d1, 0, 64), cudaErrorInvalidDevice);
    cudaGetLastError();
    int can = -1;
    CHECK_EQ(cudaDeviceCanAccessPeer(&can, 0, 3), cudaSuccess);
    CHECK_EQ(can, 1);
    CHECK_EQ(cudaDeviceEnablePeerAccess(3, 0), cudaSuccess);
    CHECK_EQ(cudaDeviceEnablePeerAccess(3, 0), cudaErrorPeerAccessAlreadyEnabled);
    CHECK_EQ(cudaDeviceDisablePeerAccess(3), cudaSuccess);
    cudaGetLastError();

    /* driver copies and sets */
    CUdeviceptr dd;
    CHECK_EQ(cuMemAlloc(&dd, 256), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyHtoD(dd, src, 256), CUDA_SUCCESS);
    CHECK_EQ(cuMemsetD32(dd + 16, 0xdeadbeef, 2), CUDA_SUCCESS);
    CHECK_EQ(cuMemsetD16Async(dd + 32, 0x1234, 2, (CUstream)s), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyDtoHAsync(dst, dd, 256, (CUstream)s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize((CUstream)s), CUDA_SUCCESS);
    uint32_t w;
    uint16_t hw;
    memcpy(&w, dst + 20, 4);
    memcpy(&hw, dst + 34, 2);
    CHECK_EQ(w, 0xdeadbeef);
    CHECK_EQ(hw, 0x1234);
    CHECK_EQ(dst[0], src[0]);
    CHECK_EQ(cuMemsetD32(dd + 1, 0, 1), CUDA_ERROR_INVALID_VALUE);   /* misaligned */
    CHECK_EQ(cuMemFree(dd), CUDA_SUCCESS);
    CHECK_EQ(cuMemFree(dd), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemFree(0), CUDA_SUCCESS);
    CHECK_EQ(cuMemAlloc(&dd, 0), CUDA_ERROR_INVALID_VALUE);

    /* stream-ordered allocation */
    void *ad = NULL;
    CHECK_EQ(cudaMallocAsync(&ad, 128, s), cudaSuccess);
    CHECK_EQ(cudaMemsetAsync(ad, 1, 128, s), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(ad, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(simcuda_ptr_kind(ad, NULL), 0);

    cudaFree(d1);
    cudaFree(d2);
    cudaFree(p3);
    cudaFreeHost(h);
    cudaStreamDestroy(s);
}

/* cudaFree waits for queued work that uses the memory */
static void slow_fill(void *p) { sleep_ms(30); memset(p, 7, 64); }
static void test_free_syncs(void)
{
    void *d;
    cudaStream_t s;
    REQUIRE(cudaMalloc(&d, 64) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
    cudaLaunchHostFunc(s, slow_fill, d);
    uint64_t t0 = now_ns();
    CHECK_EQ(cudaFree(d), cudaSuccess);
    CHECK(now_ns() - t0 >= 20000000ull);
    CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
    cudaStreamDestroy(s);
}

int main(void)
{
    RUN(test_alloc_and_attributes);
    RUN(test_copies);
    RUN(test_free_syncs);
    return simtest_done("simcuda_memory");
}
