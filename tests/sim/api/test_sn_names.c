/* tests/sim/api/test_sn_names.c: a program that defines functions whose names the
 * simulator uses internally (sn_*, sim_*, alloc_*) and exports them (-rdynamic) must run
 * unchanged: the simulator libraries are built with hidden visibility, so their own calls
 * never bind to a program's definitions. Each definition here aborts if the simulator
 * calls it; the program runs a grouped AllReduce on 2 ranks and checks the result. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define OK(x) do { int r_ = (int)(x); if (r_) { fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, r_); return 1; } } while (0)
#define TRAP(name) void name(void); void name(void) { fprintf(stderr, "simulator called the program's " #name "\n"); abort(); }

TRAP(sn_submit)
TRAP(sn_wait)
TRAP(sn_wake)
TRAP(sn_wait_ns)
TRAP(sn_debug_init)
TRAP(sn_comm_check)
TRAP(sn_comm_ok)
TRAP(sn_exec_ops)
TRAP(sn_job_thread)
TRAP(sn_init_rank_dev)
TRAP(sn_group_start_internal)
TRAP(sn_group_end_internal)
TRAP(sn_chan)
TRAP(sn_slot)
TRAP(sn_ring_bell)
TRAP(sn_doorbell)
TRAP(alloc_find)
TRAP(alloc_add)
TRAP(sim_init)

#define CNT 1000
int main(void)
{
    ncclComm_t comms[2];
    cudaStream_t st[2];
    float *buf[2], h[CNT];
    OK(ncclCommInitAll(comms, 2, NULL));
    for (int i = 0; i < 2; i++) {
        OK(cudaSetDevice(i));
        OK(cudaStreamCreate(&st[i]));
        OK(cudaMalloc((void **)&buf[i], sizeof h));
        for (int j = 0; j < CNT; j++) h[j] = (float)(i + 1) * (float)j;
        OK(cudaMemcpy(buf[i], h, sizeof h, cudaMemcpyHostToDevice));
    }
    OK(ncclGroupStart());
    for (int i = 0; i < 2; i++) OK(ncclAllReduce(buf[i], buf[i], CNT, ncclFloat, ncclSum, comms[i], st[i]));
    OK(ncclGroupEnd());
    for (int i = 0; i < 2; i++) {
        OK(cudaSetDevice(i));
        OK(cudaStreamSynchronize(st[i]));
        OK(cudaMemcpy(h, buf[i], sizeof h, cudaMemcpyDeviceToHost));
        for (int j = 0; j < CNT; j++)
            if (h[j] != 3.0f * (float)j) { fprintf(stderr, "rank %d [%d] = %g\n", i, j, h[j]); return 1; }
        OK(cudaFree(buf[i]));
        OK(cudaStreamDestroy(st[i]));
        OK(ncclCommDestroy(comms[i]));
    }
    printf("ok\n");
    return 0;
}
