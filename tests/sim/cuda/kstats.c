/* tests/sim/cuda/kstats.c: opt-in accounting of the simulated GPU's work.
 *
 * COLLSCOPE_SIM_KERNEL_STATS=<dir>: every stream worker times each function item it runs
 * (kernel launches, copies, memsets, host functions, the simulated NCCL's collectives)
 * with CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID, and at process exit the process writes
 * <dir>/kstats-<host>-<pid>.json:
 *
 *   {"pid": P, "host": H, "proc_cpu_ns": user+sys of the process, "busy_ns": sum of the
 *    items' wall time, "busy_cpu_ns": their thread CPU, "items": N, "span_ns": first item
 *    start to last item end, "event_records": successful cuEventRecord* calls (any caller's),
 *    "fns": [{"name": ..., "kind": "kernel"|"fn", "count": launches,
 *    "ns": wall, "cpu_ns": thread CPU}, ...]}
 *
 * Kernels are named by their kernel name, functions of this library by what they do
 * (memcpy, memset, ...), other functions (the simulated NCCL's work items) by their
 * exported symbol, else <library>+0x<offset>. Unset: the workers test one flag per item.
 * Waits (event waits, legacy-stream joins) are not items here: busy_ns is work only (a
 * collective's item includes its wait for the peers, as on a GPU). */
#include "sim_internal.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define KS_MAX 128

struct ks_ent {
    const void *key;               /* kernel: its host function; else the item's fn */
    int kernel;
    char name[96];
    _Atomic uint64_t count, ns, cpu_ns;
};

SIM_HIDDEN int sim_kstats_on;
static char ks_dir[1024];
static struct ks_ent ks_tab[KS_MAX];
static _Atomic int ks_n;
static pthread_mutex_t ks_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t ks_items, ks_busy, ks_busy_cpu, ks_first, ks_last, ks_event_records;
static const void *ks_label_key[8];
static const char *ks_label_name[8];
static int ks_nlabels;

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* the name of a non-kernel function item */
static void fn_name(const void *fn, char *out, size_t n)
{
    for (int i = 0; i < ks_nlabels; i++)
        if (ks_label_key[i] == fn) { snprintf(out, n, "%s", ks_label_name[i]); return; }
    Dl_info di;
    if (dladdr(fn, &di) && di.dli_fname) {
        if (di.dli_sname && di.dli_saddr == fn) { snprintf(out, n, "%s", di.dli_sname); return; }
        const char *b = strrchr(di.dli_fname, '/');
        snprintf(out, n, "%s+0x%lx", b ? b + 1 : di.dli_fname,
                 (unsigned long)((uintptr_t)fn - (uintptr_t)di.dli_fbase));
        return;
    }
    snprintf(out, n, "fn@%p", fn);
}

static struct ks_ent *lookup(const void *key, int kernel, const char *kname)
{
    int n = atomic_load_explicit(&ks_n, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (ks_tab[i].key == key && ks_tab[i].kernel == kernel) return &ks_tab[i];
    pthread_mutex_lock(&ks_mu);
    struct ks_ent *e = NULL;
    n = atomic_load_explicit(&ks_n, memory_order_relaxed);
    for (int i = 0; i < n && !e; i++)
        if (ks_tab[i].key == key && ks_tab[i].kernel == kernel) e = &ks_tab[i];
    if (!e && n < KS_MAX) {
        e = &ks_tab[n];
        e->key = key;
        e->kernel = kernel;
        if (kernel) snprintf(e->name, sizeof e->name, "%s", kname ? kname : "?");
        else fn_name(key, e->name, sizeof e->name);
        atomic_store_explicit(&ks_n, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&ks_mu);
    return e;   /* NULL: table full, the item still counts in the totals */
}

void sim_kstats_label(const void *fn, const char *name)
{
    pthread_mutex_lock(&ks_mu);
    if (ks_nlabels < 8) {
        ks_label_key[ks_nlabels] = fn;
        ks_label_name[ks_nlabels] = name;
        ks_nlabels++;
    }
    pthread_mutex_unlock(&ks_mu);
}

void sim_kstats_run(const struct unit *u)
{
    const void *key;
    const char *kname = NULL;
    int kernel = sim_kernel_item(u, &key, &kname);
    if (!kernel) key = (const void *)(uintptr_t)u->fn;
    uint64_t c0 = thread_cpu_ns(), t0 = sim_now_ns();
    u->fn(u->arg);
    uint64_t t1 = sim_now_ns(), c1 = thread_cpu_ns();
    struct ks_ent *e = lookup(key, kernel, kname);
    if (e) {
        atomic_fetch_add_explicit(&e->count, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&e->ns, t1 - t0, memory_order_relaxed);
        atomic_fetch_add_explicit(&e->cpu_ns, c1 - c0, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&ks_items, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ks_busy, t1 - t0, memory_order_relaxed);
    atomic_fetch_add_explicit(&ks_busy_cpu, c1 - c0, memory_order_relaxed);
    uint64_t z = 0;
    atomic_compare_exchange_strong(&ks_first, &z, t0);
    uint64_t l = atomic_load_explicit(&ks_last, memory_order_relaxed);
    while (l < t1 && !atomic_compare_exchange_weak(&ks_last, &l, t1)) {}
}

void sim_kstats_event_record(void) { atomic_fetch_add_explicit(&ks_event_records, 1, memory_order_relaxed); }

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned)(unsigned char)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void ks_write(void)
{
    struct rusage ru;
    uint64_t cpu = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        cpu = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
              ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
    const char *host = simcuda_hostname();
    char path[1400], tmp[1420];
    snprintf(path, sizeof path, "%s/kstats-%s-%ld.json", ks_dir, host, (long)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "simcuda: COLLSCOPE_SIM_KERNEL_STATS: cannot write %s\n", tmp);
        return;
    }
    uint64_t first = atomic_load(&ks_first), last = atomic_load(&ks_last);
    fprintf(f, "{\"pid\": %ld, \"host\": ", (long)getpid());
    json_str(f, host);
    fprintf(f, ", \"proc_cpu_ns\": %llu, \"busy_ns\": %llu, \"busy_cpu_ns\": %llu, \"items\": %llu, "
               "\"span_ns\": %llu, \"event_records\": %llu, \"fns\": [",
            (unsigned long long)cpu, (unsigned long long)atomic_load(&ks_busy),
            (unsigned long long)atomic_load(&ks_busy_cpu), (unsigned long long)atomic_load(&ks_items),
            (unsigned long long)(last > first ? last - first : 0), (unsigned long long)atomic_load(&ks_event_records));
    int n = atomic_load_explicit(&ks_n, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        struct ks_ent *e = &ks_tab[i];
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        json_str(f, e->name);
        fprintf(f, ", \"kind\": \"%s\", \"count\": %llu, \"ns\": %llu, \"cpu_ns\": %llu}", e->kernel ? "kernel" : "fn",
                (unsigned long long)atomic_load(&e->count), (unsigned long long)atomic_load(&e->ns),
                (unsigned long long)atomic_load(&e->cpu_ns));
    }
    fprintf(f, "]}\n");
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        fprintf(stderr, "simcuda: COLLSCOPE_SIM_KERNEL_STATS: cannot write %s\n", path);
}

void sim_kstats_init(void)
{
    const char *d = getenv("COLLSCOPE_SIM_KERNEL_STATS");
    if (!d || !*d || strlen(d) >= sizeof ks_dir) return;
    snprintf(ks_dir, sizeof ks_dir, "%s", d);
    sim_kstats_on = 1;
    atexit(ks_write);
}

/* A forked child counts its own work only (its file has its own pid). */
void sim_kstats_fork_child(void)
{
    if (!sim_kstats_on) return;
    pthread_mutex_init(&ks_mu, NULL);
    int n = atomic_load_explicit(&ks_n, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        atomic_store(&ks_tab[i].count, 0);
        atomic_store(&ks_tab[i].ns, 0);
        atomic_store(&ks_tab[i].cpu_ns, 0);
    }
    atomic_store(&ks_items, 0);
    atomic_store(&ks_event_records, 0);
    atomic_store(&ks_busy, 0);
    atomic_store(&ks_busy_cpu, 0);
    atomic_store(&ks_first, 0);
    atomic_store(&ks_last, 0);
}
