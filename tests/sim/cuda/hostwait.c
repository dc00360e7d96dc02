/* tests/sim/cuda/hostwait.c: whose host sleep or timed wait is modeled time
 * (COLLSCOPE_SIM_CLOCK=model, ../vclock.c interposes the calls).
 *
 * A sleep or a wait's timeout is the job's when the code that called it belongs to the job:
 * the calling instruction lies outside collscope's library (a file named libcollscope*) and
 * outside the simulator's libraries (every shared object in the directory of this
 * libcuda.so.1: libcudart, libnccl, the simulated NVML, simnet), on a host thread (not a
 * stream worker) whose name does not start with "collscope" (collscope names its threads:
 * stats/core.c cs_thread_start). Such a delay advances the thread's modeled host time and
 * returns at once. Everything else sleeps for real: collscope's harvest, writer and online
 * threads and its polling loops on the job's threads (they wait for other threads, and a
 * modeled sleep would make them spin and their clocks scheduling-dependent), and the
 * simulator's own waits.
 *
 * The verdict is by address: the executable segments of every loaded object, each marked
 * ours or the job's, kept in an append-only table that readers scan without a lock, filled
 * at load and again (dl_iterate_phdr, under a lock) when a caller's address is not in it
 * (a library loaded later). An address found nowhere (the table is full) is not modeled: a
 * real sleep is always safe. */
#include "sim_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define HW_MAX_RANGES 1024

static struct hw_range {
    uintptr_t lo, hi;
    int ours;
} g_range[HW_MAX_RANGES];
static _Atomic int g_nrange;                   /* published entries (release) */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_sim_dir[512];                    /* this library's directory, with the '/' */
static size_t g_sim_dir_len;

/* -1: not held; else 1 ours, 0 the job's */
static int lookup(uintptr_t a)
{
    int n = atomic_load_explicit(&g_nrange, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (a >= g_range[i].lo && a < g_range[i].hi) return g_range[i].ours;
    return -1;
}

static int name_is_ours(const char *path)
{
    if (!path || !*path) return 0;             /* the executable */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strncmp(base, "libcollscope", 12)) return 1;
    return g_sim_dir_len && (size_t)(base - path) == g_sim_dir_len && !strncmp(path, g_sim_dir, g_sim_dir_len);
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    int ours = name_is_ours(info->dlpi_name);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr, hi = lo + (uintptr_t)ph->p_memsz;
        int n = atomic_load_explicit(&g_nrange, memory_order_relaxed), known = 0;
        for (int k = 0; k < n && !known; k++) known = g_range[k].lo == lo && g_range[k].hi == hi;
        if (known) continue;
        if (n >= HW_MAX_RANGES) return 1;      /* full: stop */
        g_range[n] = (struct hw_range){lo, hi, ours};
        atomic_store_explicit(&g_nrange, n + 1, memory_order_release);
    }
    return 0;
}

static void rebuild(void)
{
    if (!g_sim_dir_len) {
        Dl_info me;
        const char *slash;
        if (dladdr((void *)simcuda_model_on, &me) && me.dli_fname && (slash = strrchr(me.dli_fname, '/')) &&
            (size_t)(slash + 1 - me.dli_fname) < sizeof g_sim_dir) {
            g_sim_dir_len = (size_t)(slash + 1 - me.dli_fname);
            memcpy(g_sim_dir, me.dli_fname, g_sim_dir_len);
        }
    }
    dl_iterate_phdr(add_object, NULL);
}

__attribute__((constructor)) static void table_at_load(void)
{
    if (!simcuda_model_on()) return;
    pthread_mutex_lock(&g_mu);
    rebuild();
    pthread_mutex_unlock(&g_mu);
}

static int caller_is_ours(const void *caller)
{
    uintptr_t a = (uintptr_t)caller;
    int v = lookup(a);
    if (v >= 0) return v;
    pthread_mutex_lock(&g_mu);
    if ((v = lookup(a)) < 0) {
        rebuild();
        v = lookup(a);
    }
    pthread_mutex_unlock(&g_mu);
    return v < 0 ? 1 : v;
}

int sim_thread_is_collscope(void)
{
    char name[16];
    return pthread_getname_np(pthread_self(), name, sizeof name) == 0 && !strncmp(name, "collscope", 9);
}

int simcuda_model_job_wait(const void *caller)
{
    if (!simcuda_model_on() || sim_model_worker()) return 0;
    return !caller_is_ours(caller) && !sim_thread_is_collscope();
}

int simcuda_model_delay(uint64_t ns, const void *caller)
{
    if (!simcuda_model_on()) return 0;
    if (simcuda_model_sleep(ns)) return 1;     /* a host function on a stream: GPU time */
    if (!simcuda_model_job_wait(caller)) return 0;
    simcuda_model_advance(ns);
    return 1;
}
