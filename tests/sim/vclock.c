/* tests/sim/vclock.c: what a simulated process sees of time under COLLSCOPE_SIM_CLOCK=model
 * (tests/sim/cuda/model.c). Like ../hostname.c, each simulator library defines these, so
 * whichever of them a program links directly comes before libc in the symbol search order:
 *  - clock_gettime(CLOCK_REALTIME[_COARSE]) reads the modeled clock: the calling thread's
 *    virtual host time, on a stream worker its stream's virtual time, both on the epoch
 *    SIMCUDA_MODEL_EPOCH_NS. Other clocks (MONOTONIC: timeouts, pacing) stay the host's;
 *  - clock_gettime(CLOCK_MONOTONIC[_RAW|_COARSE]) on a stream worker while a collective's
 *    network transfers run: the modeled network clock (simcuda_model_net_begin);
 *  - nanosleep/usleep inside an application's host function on a stream (a "compute
 *    kernel") advance that stream's virtual time instead of sleeping.
 * Everything else, and everything with the wall clock (the default), calls the next
 * definition (libc's). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "simcuda.h"

#define SIMCLOCK_API __attribute__((visibility("default")))

typedef int (*gettime_fn)(clockid_t, struct timespec *);
typedef int (*nanosleep_fn)(const struct timespec *, struct timespec *);
typedef int (*usleep_fn)(useconds_t);

/* the next definition of name (another sim library's, then libc's), looked up once */
static void *next_fn(void **cache, const char *name)
{
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!f && (f = dlsym(RTLD_NEXT, name)) != NULL) __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    return f;
}

static gettime_fn next_gettime(void)
{
    static gettime_fn cached;
    gettime_fn f = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (gettime_fn)dlvsym(RTLD_NEXT, "clock_gettime", "GLIBC_2.17");
        if (!f) f = (gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        if (f) __atomic_store_n(&cached, f, __ATOMIC_RELEASE);
    }
    return f;
}

SIMCLOCK_API int clock_gettime(clockid_t clk, struct timespec *ts)
{
    if ((clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE) && simcuda_model_on()) {
        uint64_t ns = SIMCUDA_MODEL_EPOCH_NS + simcuda_model_now();
        ts->tv_sec = (time_t)(ns / 1000000000ull);
        ts->tv_nsec = (long)(ns % 1000000000ull);
        return 0;
    }
    uint64_t mono;
    if ((clk == CLOCK_MONOTONIC || clk == CLOCK_MONOTONIC_RAW || clk == CLOCK_MONOTONIC_COARSE) &&
        simcuda_model_mono(&mono)) {
        ts->tv_sec = (time_t)(mono / 1000000000ull);
        ts->tv_nsec = (long)(mono % 1000000000ull);
        return 0;
    }
    gettime_fn f = next_gettime();
    if (f) return f(clk, ts);
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

SIMCLOCK_API int nanosleep(const struct timespec *req, struct timespec *rem)
{
    if (req && req->tv_sec >= 0 && req->tv_nsec >= 0 && req->tv_nsec < 1000000000L &&
        simcuda_model_sleep((uint64_t)req->tv_sec * 1000000000ull + (uint64_t)req->tv_nsec)) {
        if (rem) rem->tv_sec = 0, rem->tv_nsec = 0;
        return 0;
    }
    static void *cache;
    nanosleep_fn f = (nanosleep_fn)next_fn(&cache, "nanosleep");
    if (!f) { errno = ENOSYS; return -1; }
    return f(req, rem);
}

SIMCLOCK_API int usleep(useconds_t us)
{
    if (simcuda_model_sleep((uint64_t)us * 1000ull)) return 0;
    static void *cache;
    usleep_fn f = (usleep_fn)next_fn(&cache, "usleep");
    if (!f) { errno = ENOSYS; return -1; }
    return f(us);
}
