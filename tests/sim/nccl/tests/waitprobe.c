/* tests/sim/nccl/tests/waitprobe.c: libcollscope_waitprobe.so, a library whose file name
 * marks it as collscope's (tests/sim/cuda/hostwait.c): its sleeps stay real on the modeled
 * clock (test_model_wait.c). */
#include <unistd.h>

void probe_usleep(unsigned us);
void probe_usleep(unsigned us)
{
    usleep(us);
    __asm__ volatile("" ::: "memory");   /* no tail call: the sleep's caller is this library */
}
