/* bench/insn_count.c: a fixed number of intercepted ncclAllReduce calls on the null
 * backend, for counting instructions under callgrind (bench/insn_check.py). The counted
 * calls all run inside measured_calls(), which the checker names to callgrind's
 * --toggle-collect, so set-up, the first (initialising) calls and the harvest thread are
 * not counted; between batches the process sleeps so the harvest thread drains the queue
 * and returns events, as in a steady-state job.
 *   bench_insn_count CALLS_PER_BATCH BATCHES                                          */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) void measured_calls(ncclComm_t comm, float *buf, int n) {
  for (int i = 0; i < n; i++) ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, comm, NULL);
  __asm__ volatile("" ::
                       : "memory");
}

int main(int argc, char **argv) {
  int per = argc > 1 ? atoi(argv[1]) : 200, batches = argc > 2 ? atoi(argv[2]) : 10;
  ncclUniqueId id;
  ncclComm_t comm;
  ncclGetUniqueId(&id);
  if (ncclCommInitRank(&comm, 8, id, 0) != ncclSuccess) return 3;
  float buf[4] = {0};
  for (int i = 0; i < 64; i++) ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, comm, NULL); /* warm-up */
  usleep(50000);
  for (int b = 0; b < batches; b++) {
    measured_calls(comm, buf, per);
    usleep(20000);
  }
  ncclCommDestroy(comm);
  printf("%d\n", per * batches);
  return 0;
}
