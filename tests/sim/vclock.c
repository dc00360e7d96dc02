/* tests/sim/vclock.c: what a simulated process sees of time under COLLSCOPE_SIM_CLOCK=model
 * (tests/sim/cuda/model.c). Like ../hostname.c, each simulator library defines these, so
 * whichever of them a program links directly comes before libc in the symbol search order:
 *  - clock_gettime(CLOCK_REALTIME[_COARSE]) reads the modeled clock: the calling thread's
 *    virtual host time, on a stream worker its stream's virtual time, both on the epoch
 *    SIMCUDA_MODEL_EPOCH_NS. Other clocks (MONOTONIC: timeouts, pacing) stay the host's;
 *  - clock_gettime(CLOCK_MONOTONIC[_RAW|_COARSE]) on a stream worker while a collective's
 *    network transfers run: the modeled network clock (simcuda_model_net_begin);
 *  - nanosleep/usleep/clock_nanosleep/sleep inside an application's host function on a
 *    stream (a "compute kernel") advance that stream's virtual time instead of sleeping;
 *  - the same sleeps, and poll/ppoll/select/pselect (and a _FORTIFY_SOURCE build's
 *    __poll_chk/__ppoll_chk) with no file descriptor to watch (pure
 *    delays), called by the job's code on a host thread (cuda/hostwait.c says whose a call
 *    is), advance that thread's virtual host time instead of sleeping; with descriptors they
 *    wait for real, and one that times out advances the thread's time by its timeout;
 *  - pthread_cond_timedwait (a condition variable on CLOCK_REALTIME) and sem_timedwait of
 *    the job: their deadline is on the modeled CLOCK_REALTIME; they wait for real until the
 *    same distance on the host's clock, so a signal or post still wakes them, and one that
 *    times out moves the thread's time to the deadline.
 * Everything else, and everything with the wall clock (the default), calls the next
 * definition (libc's). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/select.h>
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

static int ts_ns(const struct timespec *ts, uint64_t *ns)
{
    if (!ts || ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L || ts->tv_sec > 4000000000L) return 0;   /* relative or on an epoch: ns fit */
    *ns = (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
    return 1;
}

/* A deadline on CLOCK_REALTIME the job took from the modeled clock (clock_gettime) is that
 * far from the thread's modeled time; one it took from the host's clock (time(),
 * gettimeofday) is nearer the host's: 1 and *rel the distance to the modeled deadline for the
 * first, 0 for the second (the call waits as it is). */
static int modeled_deadline(const struct timespec *abs, uint64_t *rel)
{
    uint64_t a, host;
    struct timespec h;
    if (!ts_ns(abs, &a) || syscall(SYS_clock_gettime, CLOCK_REALTIME, &h) != 0 || !ts_ns(&h, &host)) return 0;
    uint64_t now = SIMCUDA_MODEL_EPOCH_NS + simcuda_model_now();
    uint64_t to_model = a > now ? a - now : now - a, to_host = a > host ? a - host : host - a;
    if (to_host < to_model) return 0;
    *rel = a > now ? a - now : 0;
    return 1;
}
/* the host's CLOCK_REALTIME rel ns from now */
static struct timespec host_deadline(uint64_t rel)
{
    struct timespec h;
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &h);
    uint64_t t = (uint64_t)h.tv_sec * 1000000000ull + (uint64_t)h.tv_nsec + rel;
    return (struct timespec){(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
}

SIMCLOCK_API int nanosleep(const struct timespec *req, struct timespec *rem)
{
    uint64_t ns;
    if (ts_ns(req, &ns) && simcuda_model_delay(ns, __builtin_return_address(0))) {
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
    if (simcuda_model_delay((uint64_t)us * 1000ull, __builtin_return_address(0))) return 0;
    static void *cache;
    usleep_fn f = (usleep_fn)next_fn(&cache, "usleep");
    if (!f) { errno = ENOSYS; return -1; }
    return f(us);
}

SIMCLOCK_API unsigned int sleep(unsigned int s)
{
    if (simcuda_model_delay((uint64_t)s * 1000000000ull, __builtin_return_address(0))) return 0;
    static void *cache;
    unsigned (*f)(unsigned) = (unsigned (*)(unsigned))next_fn(&cache, "sleep");
    return f ? f(s) : s;
}

/* relative on any clock but the CPU-time ones; absolute on CLOCK_REALTIME (the modeled
 * clock's epoch); absolute on another clock (the host's) waits for real */
SIMCLOCK_API int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
    uint64_t ns;
    int cpu = clk == CLOCK_PROCESS_CPUTIME_ID || clk == CLOCK_THREAD_CPUTIME_ID;
    if (!cpu && ts_ns(req, &ns) && simcuda_model_on()) {
        void *caller = __builtin_return_address(0);
        if (!(flags & TIMER_ABSTIME)) {
            if (simcuda_model_delay(ns, caller)) {
                if (rem) rem->tv_sec = 0, rem->tv_nsec = 0;
                return 0;
            }
        } else if (clk == CLOCK_REALTIME && modeled_deadline(req, &ns) && simcuda_model_delay(ns, caller)) {
            return 0;
        }
    }
    static void *cache;
    int (*f)(clockid_t, int, const struct timespec *, struct timespec *) =
        (int (*)(clockid_t, int, const struct timespec *, struct timespec *))next_fn(&cache, "clock_nanosleep");
    return f ? f(clk, flags, req, rem) : ENOSYS;
}

/* poll/ppoll/select/pselect: with nothing to watch a pure delay (simcuda_model_delay); with
 * descriptors a real wait, whose timeout, when it expires, is the job's modeled time */
static int no_fds(const struct pollfd *fds, nfds_t n)
{
    for (nfds_t i = 0; i < n; i++)
        if (fds[i].fd >= 0) return 0;
    return 1;
}
static int no_sets(int n, const fd_set *r, const fd_set *w, const fd_set *e)
{
    for (int fd = 0; fd < n && fd < FD_SETSIZE; fd++)
        if ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e))) return 0;
    return 1;
}

static int poll_from(struct pollfd *fds, nfds_t n, int timeout, void *caller)
{
    static void *cache;
    int (*f)(struct pollfd *, nfds_t, int) = (int (*)(struct pollfd *, nfds_t, int))next_fn(&cache, "poll");
    if (!f) { errno = ENOSYS; return -1; }
    if (timeout <= 0 || !simcuda_model_on()) return f(fds, n, timeout);
    uint64_t ns = (uint64_t)timeout * 1000000ull;
    if (no_fds(fds, n)) {
        if (!simcuda_model_delay(ns, caller)) return f(fds, n, timeout);
        for (nfds_t i = 0; i < n; i++) fds[i].revents = 0;
        return 0;
    }
    int job = simcuda_model_job_wait(caller);
    int r = f(fds, n, timeout);
    if (r == 0 && job) simcuda_model_advance(ns);
    return r;
}

static int ppoll_from(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask, void *caller)
{
    static void *cache;
    int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) =
        (int (*)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))next_fn(&cache, "ppoll");
    if (!f) { errno = ENOSYS; return -1; }
    uint64_t ns;
    if (!ts_ns(ts, &ns) || !ns || !simcuda_model_on()) return f(fds, n, ts, mask);
    if (no_fds(fds, n)) {
        if (!simcuda_model_delay(ns, caller)) return f(fds, n, ts, mask);
        for (nfds_t i = 0; i < n; i++) fds[i].revents = 0;
        return 0;
    }
    int job = simcuda_model_job_wait(caller);
    int r = f(fds, n, ts, mask);
    if (r == 0 && job) simcuda_model_advance(ns);
    return r;
}

SIMCLOCK_API int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    return poll_from(fds, n, timeout, __builtin_return_address(0));
}

SIMCLOCK_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
    return ppoll_from(fds, n, ts, mask, __builtin_return_address(0));
}

/* what a _FORTIFY_SOURCE build calls instead: an array shorter than n goes to libc's check
 * (it aborts the program), the rest as above */
SIMCLOCK_API int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
SIMCLOCK_API int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
    if (fdslen / sizeof *fds < n) {
        static void *cache;
        int (*f)(struct pollfd *, nfds_t, int, size_t) =
            (int (*)(struct pollfd *, nfds_t, int, size_t))next_fn(&cache, "__poll_chk");
        if (f) return f(fds, n, timeout, fdslen);
        abort();
    }
    return poll_from(fds, n, timeout, __builtin_return_address(0));
}

SIMCLOCK_API int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
                             size_t fdslen);
SIMCLOCK_API int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
                             size_t fdslen)
{
    if (fdslen / sizeof *fds < n) {
        static void *cache;
        int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t) =
            (int (*)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t))next_fn(&cache,
                                                                                                       "__ppoll_chk");
        if (f) return f(fds, n, ts, mask, fdslen);
        abort();
    }
    return ppoll_from(fds, n, ts, mask, __builtin_return_address(0));
}

SIMCLOCK_API int select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
    static void *cache;
    int (*f)(int, fd_set *, fd_set *, fd_set *, struct timeval *) =
        (int (*)(int, fd_set *, fd_set *, fd_set *, struct timeval *))next_fn(&cache, "select");
    if (!f) { errno = ENOSYS; return -1; }
    if (!tv || tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec >= 1000000 || tv->tv_sec > 1000000000L ||
        (!tv->tv_sec && !tv->tv_usec) || n < 0 || !simcuda_model_on())
        return f(n, rd, wr, ex, tv);
    void *caller = __builtin_return_address(0);
    uint64_t ns = (uint64_t)tv->tv_sec * 1000000000ull + (uint64_t)tv->tv_usec * 1000ull;
    if (no_sets(n, rd, wr, ex)) {
        if (!simcuda_model_delay(ns, caller)) return f(n, rd, wr, ex, tv);
        tv->tv_sec = 0, tv->tv_usec = 0;   /* Linux: the time not slept */
        return 0;
    }
    int job = simcuda_model_job_wait(caller);
    int r = f(n, rd, wr, ex, tv);
    if (r == 0 && job) simcuda_model_advance(ns);
    return r;
}

SIMCLOCK_API int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts, const sigset_t *mask)
{
    static void *cache;
    int (*f)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *) =
        (int (*)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *))next_fn(&cache,
                                                                                                         "pselect");
    if (!f) { errno = ENOSYS; return -1; }
    uint64_t ns;
    if (!ts_ns(ts, &ns) || !ns || n < 0 || !simcuda_model_on()) return f(n, rd, wr, ex, ts, mask);
    void *caller = __builtin_return_address(0);
    if (no_sets(n, rd, wr, ex)) {
        if (simcuda_model_delay(ns, caller)) return 0;
        return f(n, rd, wr, ex, ts, mask);
    }
    int job = simcuda_model_job_wait(caller);
    int r = f(n, rd, wr, ex, ts, mask);
    if (r == 0 && job) simcuda_model_advance(ns);
    return r;
}

/* glibc (2.25 on, nptl/pthread_cond_common.c __condvar_get_clockid): bit 1 of __wrefs is set
 * for a condition variable on CLOCK_MONOTONIC */
SIMCLOCK_API int pthread_cond_timedwait(pthread_cond_t *cv, pthread_mutex_t *mu, const struct timespec *abs)
{
    static void *cache;
    void *f0 = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    if (!f0 && (f0 = dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2")) != NULL)
        __atomic_store_n(&cache, f0, __ATOMIC_RELEASE);
    int (*f)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *) =
        f0 ? (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))f0
           : (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))next_fn(&cache, "pthread_cond_timedwait");
    if (!f) return ENOSYS;
    uint64_t rel;
    if (!simcuda_model_on() || (cv->__data.__wrefs & 2) || !simcuda_model_job_wait(__builtin_return_address(0)) ||
        !modeled_deadline(abs, &rel))
        return f(cv, mu, abs);
    uint64_t deadline = SIMCUDA_MODEL_EPOCH_NS + simcuda_model_now() + rel;
    struct timespec h = host_deadline(rel);
    int r = f(cv, mu, &h);
    if (r == ETIMEDOUT) simcuda_model_advance_to(deadline - SIMCUDA_MODEL_EPOCH_NS);
    return r;
}

SIMCLOCK_API int sem_timedwait(sem_t *sem, const struct timespec *abs)
{
    static void *cache;
    int (*f)(sem_t *, const struct timespec *) = (int (*)(sem_t *, const struct timespec *))next_fn(&cache, "sem_timedwait");
    if (!f) { errno = ENOSYS; return -1; }
    uint64_t rel;
    if (!simcuda_model_on() || !simcuda_model_job_wait(__builtin_return_address(0)) || !modeled_deadline(abs, &rel))
        return f(sem, abs);
    uint64_t deadline = simcuda_model_now() + rel;
    struct timespec h = host_deadline(rel);
    int r = f(sem, &h);
    if (r != 0 && errno == ETIMEDOUT) simcuda_model_advance_to(deadline);
    return r;
}
