/* tests/sim/cuda/model.c: the modeled clock (COLLSCOPE_SIM_CLOCK=model).
 *
 * Unset or `wall`: the simulated GPU's time is the host's CLOCK_MONOTONIC and nothing here
 * runs beyond one flag test. `model`: time is virtual, in ns from the job's start:
 *  - every stream has a virtual time `vt`, touched only by its worker thread. An item starts
 *    at max(vt, the process's host time when it was enqueued); stalls (slow faults), sleeps
 *    inside host-function items (a "compute kernel", e.g. dp_train --compute-us), copies,
 *    sim kernels and collectives (libnccl.so.2 computes their cost) advance it; nothing
 *    sleeps for modeled time; a `slow:rank=R,compute=P` fault or an active `throttle` of R
 *    makes R's host-function sleeps P% longer;
 *  - every host thread has a virtual host time H, from 0 at its first use. It advances with
 *    modeled host work (simcuda_model_advance) and jumps to the GPU's time when the thread
 *    waits for completed work (stream/event/device synchronize); with a
 *    `hostdelay:rank=R,us=N` fault, rank R's thread then spends N us more (the next batch's
 *    loading) before it goes on (on the wall clock it sleeps N us after the wait). Per
 *    thread, so collscope's own threads (harvest, online exchange), which synchronise at
 *    host-scheduled moments, never move the application thread's clock. An event query
 *    that reports completion moves the querying thread's clock up to the event's time (it
 *    cannot have seen the work done before it was); one that does not, and stream queries,
 *    move nothing;
 *  - events complete at their stream's vt; the host's CLOCK_REALTIME (../vclock.c) reads
 *    SIMCUDA_MODEL_EPOCH_NS + the thread's H, a stream worker's its stream's vt;
 *  - seeded noise: COLLSCOPE_SIM_SEED=N and a `jitter:pct=P[,tail=T]` entry of
 *    COLLSCOPE_SIM_FAULTS give per-op multiplicative factors that depend only on the seed,
 *    the rank and the op's key, never on the host's scheduling. */
#include "sim_internal.h"
#include "nvml/simhealth.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static _Atomic int g_model = -1;           /* -1 not read yet, 0 wall, 1 model */
static __thread uint64_t tls_host_vt;      /* this thread's host time, ns */
static __thread struct CUstream_st *tls_worker;
static __thread int tls_app_fn;            /* running an application's host function */
static __thread int tls_mono_on;           /* a collective's network transfers: modeled MONOTONIC */
static __thread uint64_t tls_mono;         /* that clock, ns */

static pthread_once_t params_once = PTHREAD_ONCE_INIT;
static uint64_t g_seed = 1;
static double g_jitter_pct, g_jitter_tail, g_speed = 1.0;
static uint64_t g_rank_key;
/* faults of this process's rank, each from its onset on (`from=S`: once the device ran its
 * first communicator's collective S-1, i.e. the work that leads to collective S). On the
 * modeled clock `at` is that collective's completion time + 1 (0: not yet), and work starting
 * at or after it is affected: so a stream other than the collectives' sees the onset at the
 * same modeled time run after run, however far ahead the collectives' stream has run */
#define MODEL_MAX_FAULTS 8
static struct onset_fault {
    double amount;
    long long from;
    _Atomic uint64_t at;
    long long every; /* hostdelay: on a host thread's 1st, 1 + every-th, ... synchronize after onset (0: each) */
} g_hostdelay[MODEL_MAX_FAULTS], g_compute[MODEL_MAX_FAULTS];
/* per host thread of the job and hostdelay fault: its synchronizes after onset so far (each
 * thread its own count; collscope's threads are not counted: sim_model_after_sync) */
static __thread long long tls_synced[MODEL_MAX_FAULTS];
static int g_nhostdelay, g_ncompute;       /* hostdelay:us=N (amount us), slow:compute=P (amount %) */
/* the rank's throttles (tests/sim/nvml/simhealth.c): active once collective `seq` completed
 * until collective `until` completed (-1: open); on the modeled clock from/to those
 * completion times (+ 1; 0: not yet) */
static struct throttle_win {
    double pct;
    long long seq, until;
    _Atomic uint64_t at_start, at_end;
} g_throttle[MODEL_MAX_FAULTS];
static int g_nthrottle;

int simcuda_model_on(void)
{
    int m = atomic_load_explicit(&g_model, memory_order_relaxed);
    if (m >= 0) return m;
    const char *e = getenv("COLLSCOPE_SIM_CLOCK");
    m = e && !strcmp(e, "model");
    atomic_store(&g_model, m);
    return m;
}

/* hostdelay:rank=R,us=N[,from=S][,every=N] and slow:rank=R,compute=P[,from=S] (R = this process's
 * RANK): appended to g_hostdelay / g_compute; other slow forms are libnccl.so.2's */
static void parse_rank_fault(char *kvs, long rank, int compute)
{
    long r = -1, from = 0, every = 0;
    double amount = -1;
    char *save = NULL;
    for (char *kv = strtok_r(kvs, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '='), *end;
        if (!eq) return;
        double v = strtod(eq + 1, &end);
        if (*end || end == eq + 1) return;
        if (!strncmp(kv, "rank=", 5) && v >= 0 && v == (double)(long)v) r = (long)v;
        else if (!strncmp(kv, "from=", 5) && v >= 0 && v < 1e15 && v == (double)(long)v) from = (long)v;
        else if (!compute && !strncmp(kv, "us=", 3) && v >= 0 && v < 100000000 && v == (double)(long)v) amount = v;
        else if (compute && !strncmp(kv, "compute=", 8) && v > 0 && v <= 1000) amount = v;
        else if (compute && !strncmp(kv, "every=", 6)) return;   /* libnccl.so.2 rejects it */
        else if (!strncmp(kv, "every=", 6) && v >= 1 && v <= 1000000 && v == (double)(long)v) every = (long)v;
        else if (!strncmp(kv, "us=", 3) || !strncmp(kv, "pct=", 4) || !strncmp(kv, "every=", 6)) return;
    }
    struct onset_fault *list = compute ? g_compute : g_hostdelay;
    int *n = compute ? &g_ncompute : &g_nhostdelay;
    if (r >= 0 && r == rank && amount > 0 && *n < MODEL_MAX_FAULTS) {
        list[*n].amount = amount;
        list[*n].from = from;
        list[*n].every = every;
        (*n)++;
    }
}

/* jitter:pct=P[,tail=T], hostdelay:rank=R,us=N and slow:rank=R,compute=P inside COLLSCOPE_SIM_FAULTS
 * ("kind:k=v,...;..."); libnccl.so.2's parser validates the same entries and reports bad ones */
static void parse_faults(const char *env, long rank)
{
    for (const char *p = env; p && *p;) {
        while (*p == ' ' || *p == ';') p++;
        size_t len = strcspn(p, ";");
        if (len > 10 && len < 128 && !strncmp(p, "hostdelay:", 10)) {
            char buf[128];
            memcpy(buf, p + 10, len - 10);
            buf[len - 10] = 0;
            parse_rank_fault(buf, rank, 0);
        }
        if (len > 5 && len < 128 && !strncmp(p, "slow:", 5) && memmem(p, len, "compute=", 8)) {
            char buf[128];
            memcpy(buf, p + 5, len - 5);
            buf[len - 5] = 0;
            parse_rank_fault(buf, rank, 1);
        }
        if (len > 7 && !strncmp(p, "jitter:", 7)) {
            char buf[128];
            if (len >= sizeof buf) len = sizeof buf - 1;
            memcpy(buf, p + 7, len - 7);
            buf[len - 7] = 0;
            char *save = NULL;
            for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
                char *end;
                if (!strncmp(kv, "pct=", 4)) {
                    double x = strtod(kv + 4, &end);
                    if (!*end && x >= 0 && x < 100) g_jitter_pct = x;
                } else if (!strncmp(kv, "tail=", 5)) {
                    double x = strtod(kv + 5, &end);
                    if (!*end && x >= 0 && x <= 1000) g_jitter_tail = x;
                }
            }
        }
        p += len;
    }
}

static void params_read(void)
{
    const char *s = getenv("COLLSCOPE_SIM_SEED");
    if (s && *s) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (!*end) g_seed = v;
    }
    const char *r = getenv("RANK");
    g_rank_key = r && *r ? strtoull(r, NULL, 10) + 1 : 0;
    parse_faults(getenv("COLLSCOPE_SIM_FAULTS"), g_rank_key ? (long)g_rank_key - 1 : -1);
    sh_gpu_model(simcuda_hostname(), &g_speed);
    if (!(g_speed > 0.01)) g_speed = 1.0;
    sh_init();
    for (int i = 0; g_rank_key && i < sh_nfaults && g_nthrottle < MODEL_MAX_FAULTS; i++) {
        const struct sh_fault *f = &sh_faults[i];
        if (f->kind != SH_THROTTLE || f->rank != (int)g_rank_key - 1 || !(f->pct > 0)) continue;
        g_throttle[g_nthrottle].pct = f->pct;
        g_throttle[g_nthrottle].seq = f->seq;
        g_throttle[g_nthrottle].until = f->until;
        g_nthrottle++;
    }
}

static uint64_t mix64(uint64_t x)   /* splitmix64's finaliser */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

double simcuda_model_noise(uint64_t key)
{
    pthread_once(&params_once, params_read);
    if (g_jitter_pct <= 0 && g_jitter_tail <= 0) return 1.0;
    uint64_t h = mix64(g_seed ^ mix64(key));
    double u = (double)(h >> 11) / 9007199254740992.0;              /* [0, 1) */
    double f = 1.0 + g_jitter_pct / 100.0 * (2.0 * u - 1.0);
    if (g_jitter_tail > 0) {                                        /* exponential tail, mean T% */
        double v = (double)((mix64(h) >> 11) + 1) / 9007199254740993.0;   /* (0, 1] */
        f += g_jitter_tail / 100.0 * -log(v);
    }
    return f > 0.01 ? f : 0.01;
}

double simcuda_model_speed(void)
{
    pthread_once(&params_once, params_read);
    return g_speed;
}

uint64_t simcuda_model_rank_key(void)
{
    pthread_once(&params_once, params_read);
    return g_rank_key;
}

uint64_t simcuda_model_now(void)
{
    return tls_worker ? tls_worker->vt : tls_host_vt;
}

void simcuda_model_advance(uint64_t ns)
{
    if (tls_worker) tls_worker->vt += ns;
    else tls_host_vt += ns;
}

void simcuda_model_advance_to(uint64_t t)
{
    if (tls_worker) { if (tls_worker->vt < t) tls_worker->vt = t; }
    else if (tls_host_vt < t) tls_host_vt = t;
}

/* the sum of g_compute's (or g_hostdelay's) amounts whose onset has passed on device dev for
 * work starting now; sync: a host synchronize, counted for the `every=` period (hostdelay) */
static double onset_sum_at(struct onset_fault *list, int n, int dev, int sync)
{
    double sum = 0;
    int model = simcuda_model_on();
    long long done = n && !model ? simcuda_last_seq(dev) : -1;
    uint64_t now = model ? simcuda_model_now() : 0;
    for (int i = 0; i < n; i++) {
        uint64_t at = model ? atomic_load_explicit(&list[i].at, memory_order_acquire) : 0;
        if (!(list[i].from <= 0 || (model ? at && at - 1 <= now : done >= list[i].from - 1))) continue;
        if (sync && list[i].every > 1 && tls_synced[i]++ % list[i].every) continue;
        sum += list[i].amount;
    }
    return sum;
}

/* the sum of g_compute's (or g_hostdelay's) amounts whose onset has passed on device dev for
 * work starting now (the modeled clock: the calling worker's or host thread's time) */
static double onset_sum(struct onset_fault *list, int n, int dev)
{
    return onset_sum_at(list, n, dev, 0);
}

/* libnccl.so.2 ran collective seq of the first communicator on this worker (its completion:
 * the worker's time): the onsets it starts (simcuda_note_seq) */
void sim_model_note_seq(long long seq)
{
    if (!simcuda_model_on() || !tls_worker) return;
    pthread_once(&params_once, params_read);
    uint64_t t = tls_worker->vt + 1;
    for (int i = 0; i < g_nthrottle; i++) {
        struct throttle_win *w = &g_throttle[i];
        uint64_t zero = 0;
        if (w->seq >= 0 && seq >= w->seq)
            atomic_compare_exchange_strong_explicit(&w->at_start, &zero, t, memory_order_release, memory_order_relaxed);
        zero = 0;
        if (w->until >= 0 && seq >= w->until)
            atomic_compare_exchange_strong_explicit(&w->at_end, &zero, t, memory_order_release, memory_order_relaxed);
    }
    for (int k = 0; k < 2; k++) {
        struct onset_fault *list = k ? g_compute : g_hostdelay;
        int n = k ? g_ncompute : g_nhostdelay;
        for (int i = 0; i < n; i++) {
            uint64_t zero = 0;
            if (list[i].from > 0 && seq >= list[i].from - 1)
                atomic_compare_exchange_strong_explicit(&list[i].at, &zero, t, memory_order_release,
                                                        memory_order_relaxed);
        }
    }
}

/* How much longer this rank's GPU compute takes on device dev, in % (modeled clock): its
 * slow:compute faults and its active throttles (a throttled GPU runs its kernels slower: the
 * throttle's pct once the device ran collective seq=S, until it ran until=E) */
static double compute_slow_pct(int dev)
{
    double pct = onset_sum(g_compute, g_ncompute, dev);
    uint64_t now = simcuda_model_now();
    for (int i = 0; i < g_nthrottle; i++) {   /* the modeled clock: by completion times */
        struct throttle_win *t = &g_throttle[i];
        uint64_t a = atomic_load_explicit(&t->at_start, memory_order_acquire);
        uint64_t e = atomic_load_explicit(&t->at_end, memory_order_acquire);
        if ((t->seq < 0 || (a && a - 1 <= now)) && !(t->until >= 0 && e && e - 1 <= now)) pct += t->pct;
    }
    return pct;
}

/* A sleep inside an application's host function on a stream is the GPU being busy for that
 * long (scaled by the GPU model's speed and the rank's compute faults, with jitter keyed by
 * rank and the stream's item count): consumed here, 1. Anywhere else: 0, the caller sleeps
 * for real. */
int simcuda_model_sleep(uint64_t ns)
{
    if (!tls_worker || !tls_app_fn || !simcuda_model_on()) return 0;
    struct CUstream_st *s = tls_worker;
    /* keyed by rank and the stream's own count, not its id: the shim's streams, created by
     * a background thread, make ids scheduling-dependent */
    uint64_t key = (simcuda_model_rank_key() << 40) ^ (0x5a5aull << 56) ^ ++s->model_ops;
    double d = (double)ns / simcuda_model_speed() * simcuda_model_noise(key);
    double slow = compute_slow_pct(s->device);
    if (slow > 0) d *= 1.0 + slow / 100.0;
    s->vt += (uint64_t)(d + 0.5);
    return 1;
}

/* Network transfers inside one collective item (libnccl.so.2 brackets sn_exec_ops): the
 * worker's CLOCK_MONOTONIC becomes a modeled clock that starts at the host's and advances
 * only when the net plugin completes a send at its modeled delivery (simnet), so a plugin
 * wrapper's post-to-done times are the wire model's, whatever the host's load. */
void simcuda_model_net_begin(void)
{
    if (!tls_worker || !simcuda_model_on()) return;
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (tls_mono < now) tls_mono = now;
    tls_mono_on = 1;
}
void simcuda_model_net_end(void) { tls_mono_on = 0; }
int simcuda_model_mono(uint64_t *ns)
{
    if (!tls_mono_on) return 0;
    *ns = tls_mono;
    return 1;
}
void simcuda_model_mono_advance_to(uint64_t t)
{
    if (tls_mono_on && tls_mono < t) tls_mono = t;
}

/* ---- hidden helpers for driver_core.c / driver_api.c ---- */
uint64_t sim_model_host_now(void) { return tls_host_vt; }
void sim_model_host_observe(uint64_t t) { if (tls_host_vt < t) tls_host_vt = t; }

/* after a host thread's synchronize: the hostdelay fault (both clocks). It models the job's
 * host (a data loader) late after its synchronize, so collscope's own threads (the clock
 * anchor's synchronize every 2 s of wall time) neither take the delay nor count toward
 * `every=`: else the anchor's modeled time, and every GPU time converted through it, would
 * move by the delay at a wall-clock-dependent synchronize */
void sim_model_after_sync(void)
{
    pthread_once(&params_once, params_read);
    if (!g_nhostdelay || tls_worker || sim_thread_is_collscope()) return;
    unsigned us = (unsigned)onset_sum_at(g_hostdelay, g_nhostdelay, sim_cur_dev(), 1);
    if (!us) return;
    if (simcuda_model_on()) { tls_host_vt += (uint64_t)us * 1000u; return; }
    struct timespec ts = { us / 1000000u, (long)(us % 1000000u) * 1000L };
    while (nanosleep(&ts, &ts) != 0) {}
}
/* On the modeled clock no thread's wall-clock latency is part of any figure, so the
 * simulated process runs as SCHED_BATCH (no wake-up preemption; same nice): the main thread
 * at load, so the threads it starts inherit it, and each stream worker (a GPU) again. On a
 * host with far more ranks than cores (a 256-rank job on 2 cores) a ring step's wake then
 * no longer preempts the waker before it finishes its own step: fewer context switches. */
static void batch_sched(void)
{
    struct sched_param sp = {0};
    if (simcuda_model_on()) (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);   /* best effort */
}
__attribute__((constructor)) static void batch_at_load(void) { batch_sched(); }
void sim_model_worker_enter(struct CUstream_st *s)
{
    tls_worker = s;
    batch_sched();
}
void sim_model_app_fn(int on) { tls_app_fn = on; }
struct CUstream_st *sim_model_worker(void) { return tls_worker; }

/* a copy of n bytes on the current worker: 25 GB/s (a PCIe 5 x16 link's practical rate) */
void sim_model_copy(size_t n)
{
    if (!tls_worker || !simcuda_model_on()) return;
    tls_worker->vt += 2000 + (uint64_t)((double)n / 25.0);   /* 2 us launch + n / 25 B/ns */
}

/* a sim kernel: 5 us of GPU time at speed 1 */
void sim_model_kernel(void)
{
    if (!tls_worker || !simcuda_model_on()) return;
    tls_worker->vt += (uint64_t)(5000.0 / simcuda_model_speed() + 0.5);
}
