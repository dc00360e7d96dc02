/* tests/sim/cuda/driver_core.c: the simulated GPU behind libcuda.so.1.
 *
 * Devices are plain host memory; every stream owns one worker thread (started on first use)
 * that runs its items in FIFO order; events complete with a CLOCK_MONOTONIC timestamp when
 * the worker reaches their record item; captures collect items into a linear graph that a
 * graph launch replays on the launch stream.
 *
 * Locks, in the order they may nest: g_lock (registry of streams, captures, event capture
 * state, graph node lists) -> stream mu -> ev_mu (all event generations, one condvar).
 * reg_lock and alloc_lock are leaves. Nobody blocks while holding g_lock or ev_mu except
 * on ev_cv (ev_mu).
 *
 * Fork: pthread_atfork takes g_lock/ev_mu/reg_lock/alloc_lock around fork(). In the child all
 * streams, events, captures, graphs and modules of the parent are abandoned (their worker
 * threads do not exist there): their handles become invalid (CUDA_ERROR_INVALID_HANDLE), the
 * legacy and per-thread default streams are recreated on first use. Memory allocations stay
 * valid (the child has a copy of them) and stay in the table. Contexts are kept. */
#include "sim_internal.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <uthash.h>

SIM_HIDDEN pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cv = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t alloc_lock = PTHREAD_RWLOCK_INITIALIZER;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int g_ndev = 8;
static struct CUctx_st g_primary[SIM_MAX_DEVICES];
static struct CUstream_st *g_legacy[SIM_MAX_DEVICES];   /* under g_lock */
static struct CUstream_st *g_all;                        /* all live streams, under g_lock */
static struct capture *g_caps;                           /* captures not yet ended */
static int g_ncaps_active;                               /* atomic read as a fast path */
static uint64_t g_cap_id;
static unsigned long long g_stream_id = 16;
static unsigned g_epoch = 1;                             /* bumped in a forked child */
static pthread_key_t g_thread_key;

static __thread CUcontext tls_ctx[16];
static __thread int tls_nctx;
static __thread struct CUstream_st *tls_ptds[SIM_MAX_DEVICES];
static __thread unsigned tls_ptds_epoch;
static __thread CUstreamCaptureMode tls_capmode = CU_STREAM_CAPTURE_MODE_GLOBAL;

uint64_t sim_now_ns(void)
{
    if (simcuda_model_on()) return simcuda_model_now();   /* model.c: virtual time */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_us(unsigned us)
{
    struct timespec ts = { us / 1000000u, (long)(us % 1000000u) * 1000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ------------------------------------------------------------------ handle registry */
struct reg_ent { const void *p; uint32_t type; UT_hash_handle hh; };
static struct reg_ent *g_reg;

void reg_add(void *p, uint32_t type)
{
    struct reg_ent *e = calloc(1, sizeof *e);
    if (!e) abort();
    e->p = p; e->type = type;
    pthread_mutex_lock(&reg_lock);
    HASH_ADD_PTR(g_reg, p, e);
    pthread_mutex_unlock(&reg_lock);
}

void reg_del(void *p)
{
    struct reg_ent *e;
    pthread_mutex_lock(&reg_lock);
    HASH_FIND_PTR(g_reg, &p, e);
    if (e) HASH_DEL(g_reg, e);
    pthread_mutex_unlock(&reg_lock);
    free(e);
}

int reg_ok(const void *p, uint32_t type)
{
    struct reg_ent *e;
    if (!p) return 0;
    pthread_mutex_lock(&reg_lock);
    HASH_FIND_PTR(g_reg, &p, e);
    int ok = e && e->type == type;
    pthread_mutex_unlock(&reg_lock);
    return ok;
}

/* ------------------------------------------------------------------ init, fork, devices */
static void fork_prepare(void)
{
    pthread_mutex_lock(&g_lock);
    pthread_mutex_lock(&ev_mu);
    pthread_mutex_lock(&reg_lock);
    pthread_rwlock_wrlock(&alloc_lock);
}

static void fork_parent(void)
{
    pthread_rwlock_unlock(&alloc_lock);
    pthread_mutex_unlock(&reg_lock);
    pthread_mutex_unlock(&ev_mu);
    pthread_mutex_unlock(&g_lock);
}

static void fork_child(void)
{
    /* Abandon every object of the parent; locks are re-created, not unlocked (another
     * thread of the parent may have held a stream mutex, which we never touch again). */
    pthread_mutex_init(&g_lock, NULL);
    pthread_mutex_init(&ev_mu, NULL);
    pthread_cond_init(&ev_cv, NULL);
    pthread_mutex_init(&reg_lock, NULL);
    pthread_rwlock_init(&alloc_lock, NULL);
    g_reg = NULL;
    g_all = NULL;
    g_caps = NULL;
    __atomic_store_n(&g_ncaps_active, 0, __ATOMIC_RELAXED);
    memset(g_legacy, 0, sizeof g_legacy);
    g_epoch++;
    memset(tls_ptds, 0, sizeof tls_ptds);
    tls_ptds_epoch = g_epoch;
    for (int i = 0; i < g_ndev; i++) reg_add(&g_primary[i], OBJ_CTX);
    sim_kstats_fork_child();
}

static void thread_exit(void *unused);
static void hostfn_tramp(void *p);

static void init_once_fn(void)
{
    const char *e = getenv("COLLSCOPE_SIM_GPUS");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 0 && v <= SIM_MAX_DEVICES) g_ndev = (int)v;
    }
    for (int i = 0; i < SIM_MAX_DEVICES; i++) {
        g_primary[i].type = OBJ_CTX;
        g_primary[i].device = i;
        g_primary[i].primary = 1;
    }
    for (int i = 0; i < g_ndev; i++) reg_add(&g_primary[i], OBJ_CTX);
    pthread_key_create(&g_thread_key, thread_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    sim_kstats_init();
    if (sim_kstats_on) {
        sim_kstats_label((const void *)(uintptr_t)hostfn_tramp, "hostfn");
        sim_api_kstats_labels();
    }
}

void sim_init(void) { pthread_once(&init_once, init_once_fn); }
int sim_ndev(void) { sim_init(); return g_ndev; }

CUcontext sim_primary_ctx(int dev)
{
    sim_init();
    if (dev < 0 || dev >= g_ndev) return NULL;
    return &g_primary[dev];
}

CUcontext sim_ctx_current(void) { return tls_nctx ? tls_ctx[tls_nctx - 1] : NULL; }

void sim_ctx_set_current(CUcontext c)
{
    if (c == NULL) { if (tls_nctx) tls_nctx--; return; }
    if (tls_nctx == 0) tls_nctx = 1;
    tls_ctx[tls_nctx - 1] = c;
}

int sim_ctx_push(CUcontext c)
{
    if (tls_nctx >= (int)(sizeof tls_ctx / sizeof tls_ctx[0])) return -1;
    tls_ctx[tls_nctx++] = c;
    return 0;
}

CUcontext sim_ctx_pop(void) { return tls_nctx ? tls_ctx[--tls_nctx] : NULL; }

int sim_cur_dev(void)
{
    CUcontext c = sim_ctx_current();
    return c ? c->device : 0;
}

/* ------------------------------------------------------------------ simcuda_* basics */
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char g_host[256];

static void host_init(void)
{
    const char *h = getenv("COLLSCOPE_HOSTNAME");
    if (h && *h) {
        snprintf(g_host, sizeof g_host, "%s", h);
    } else if (gethostname(g_host, sizeof g_host - 1) != 0) {
        snprintf(g_host, sizeof g_host, "localhost");
    }
    g_host[sizeof g_host - 1] = '\0';
}

const char *simcuda_hostname(void) { pthread_once(&host_once, host_init); return g_host; }
int simcuda_current_device(void) { sim_init(); return sim_cur_dev(); }
int simcuda_device_count(void) { return sim_ndev(); }

void simcuda_pci_bus_id(int dev, char *buf, size_t len)
{
    static const unsigned char bus[8] = { 0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb };
    if (!buf || len == 0) return;
    if (dev < 0) dev = 0;
    snprintf(buf, len, "%04x:%02x:00.0", (unsigned)(dev / 8), (unsigned)bus[dev % 8]);
}

void simcuda_gpu_uuid(int dev, unsigned char out[16])
{
    unsigned h = 2166136261u; /* FNV-1a of the host name */
    for (const char *p = simcuda_hostname(); *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    static const unsigned char mid[6] = { 0x53, 0x49, 0x4d, 0x00, 0x00, 0x00 };
    for (int i = 0; i < 4; i++) out[i] = (unsigned char)(h >> (24 - 8 * i));
    memcpy(out + 4, mid, sizeof mid);
    unsigned long long d = dev < 0 ? 0 : (unsigned long long)dev;
    for (int i = 0; i < 6; i++) out[10 + i] = (unsigned char)(d >> (40 - 8 * i));
}

/* ------------------------------------------------------------------ allocations */
static struct sim_alloc *g_allocs;
static size_t g_nallocs, g_capallocs;
static unsigned long long g_alloc_id;

/* index of the last allocation with base <= p, or -1; caller holds alloc_lock */
static long alloc_idx(uintptr_t p)
{
    long lo = 0, hi = (long)g_nallocs - 1, ans = -1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        if (g_allocs[mid].base <= p) { ans = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return ans;
}

int alloc_find(const void *p, struct sim_alloc *out)
{
    uintptr_t u = (uintptr_t)p;
    int found = 0;
    if (!p) return 0;
    pthread_rwlock_rdlock(&alloc_lock);
    long i = alloc_idx(u);
    if (i >= 0 && (u < g_allocs[i].base + g_allocs[i].size || u == g_allocs[i].base)) {
        if (out) *out = g_allocs[i];
        found = 1;
    }
    pthread_rwlock_unlock(&alloc_lock);
    return found;
}

void alloc_add(void *p, size_t size, int kind, int dev, int owned, unsigned flags)
{
    pthread_rwlock_wrlock(&alloc_lock);
    if (g_nallocs == g_capallocs) {
        size_t nc = g_capallocs ? g_capallocs * 2 : 256;
        struct sim_alloc *na = realloc(g_allocs, nc * sizeof *na);
        if (!na) abort();
        g_allocs = na;
        g_capallocs = nc;
    }
    long i = alloc_idx((uintptr_t)p) + 1;
    memmove(&g_allocs[i + 1], &g_allocs[i], (g_nallocs - (size_t)i) * sizeof *g_allocs);
    g_allocs[i] = (struct sim_alloc){ (uintptr_t)p, size, kind, dev, owned, flags, ++g_alloc_id };
    g_nallocs++;
    pthread_rwlock_unlock(&alloc_lock);
}

/* remove the allocation starting exactly at p whose kind is in kind_mask (bit 1<<kind) */
int alloc_remove(void *p, int kind_mask, struct sim_alloc *out)
{
    int ok = 0;
    pthread_rwlock_wrlock(&alloc_lock);
    long i = alloc_idx((uintptr_t)p);
    if (i >= 0 && g_allocs[i].base == (uintptr_t)p && (kind_mask & (1 << g_allocs[i].kind))) {
        if (out) *out = g_allocs[i];
        memmove(&g_allocs[i], &g_allocs[i + 1], (g_nallocs - (size_t)i - 1) * sizeof *g_allocs);
        g_nallocs--;
        ok = 1;
    }
    pthread_rwlock_unlock(&alloc_lock);
    return ok;
}

size_t alloc_map_len(size_t size)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return size > SIZE_MAX - pg ? SIZE_MAX : (size + pg - 1) / pg * pg;
}

void alloc_release(const struct sim_alloc *a)
{
    switch (a->owned) {
    case SIM_OWN_HEAP: free((void *)a->base); break;
    case SIM_OWN_MAP: case SIM_OWN_IPC: munmap((void *)a->base, alloc_map_len(a->size)); break;
    default: break;
    }
    if (a->ipc_fd > 0) close(a->ipc_fd - 1);
}

int alloc_set_ipc_fd(uintptr_t base, int fd)
{
    int r = -1;
    pthread_rwlock_wrlock(&alloc_lock);
    long i = alloc_idx(base);
    if (i >= 0 && g_allocs[i].base == base && g_allocs[i].ipc_fd == 0) { g_allocs[i].ipc_fd = fd + 1; r = 0; }
    pthread_rwlock_unlock(&alloc_lock);
    return r;
}

size_t alloc_used(int dev)
{
    size_t used = 0;
    pthread_rwlock_rdlock(&alloc_lock);
    for (size_t i = 0; i < g_nallocs; i++)
        if (g_allocs[i].kind == 1 && g_allocs[i].device == dev && g_allocs[i].owned != SIM_OWN_IPC)
            used += g_allocs[i].size;
    pthread_rwlock_unlock(&alloc_lock);
    return used;
}

void alloc_free_device(int dev)
{
    pthread_rwlock_wrlock(&alloc_lock);
    size_t j = 0;
    for (size_t i = 0; i < g_nallocs; i++) {
        struct sim_alloc *a = &g_allocs[i];
        if ((a->kind == 1 || a->kind == 3) && a->device == dev && a->owned) {
            alloc_release(a);
            continue;
        }
        g_allocs[j++] = *a;
    }
    g_nallocs = j;
    pthread_rwlock_unlock(&alloc_lock);
}

int simcuda_ptr_kind(const void *p, int *device)
{
    struct sim_alloc a;
    if (!alloc_find(p, &a)) return 0;
    if (device && (a.kind == 1 || a.kind == 3)) *device = a.device;
    return a.kind;
}

/* ------------------------------------------------------------------ events (refcounts) */
static void event_unref_locked(struct CUevent_st *e)   /* ev_mu held */
{
    if (--e->refs == 0) {
        if (e->ipc) ipc_event_unmap(e->ipc, e->ipc_fd - 1);
        free(e);
    }
}

/* cuIpcGetEventHandle (exporter: publish this event's generations from now on) and
 * cuIpcOpenEventHandle (remote: the page is the only state) */
void event_ipc_attach(CUevent e, struct sim_ipc_event *page, int fd, int remote)
{
    pthread_mutex_lock(&ev_mu);
    e->ipc = page;
    e->ipc_fd = fd + 1;
    e->remote = remote;
    if (!remote) ipc_event_publish(page, e->rec_gen, e->done_gen);
    pthread_mutex_unlock(&ev_mu);
}


static void event_unref(struct CUevent_st *e)
{
    pthread_mutex_lock(&ev_mu);
    event_unref_locked(e);
    pthread_mutex_unlock(&ev_mu);
}

/* a stream waiting on an opened interprocess event: blocks its worker until the exporter's
 * record that was last when the wait was enqueued completed */
struct remote_wait { struct CUevent_st *e; uint32_t target; };
static void model_advance_run(void *p) { simcuda_model_advance_to(*(uint64_t *)p); }
static void remote_wait_run(void *p) { struct remote_wait *w = p; ipc_event_wait(w->e->ipc, w->target); }
static void remote_wait_free(void *p) { struct remote_wait *w = p; event_unref(w->e); free(w); }

static void event_complete_at(struct CUevent_st *e, uint64_t gen, uint64_t now)
{
    pthread_mutex_lock(&ev_mu);
    if (gen > e->done_gen) {
        e->done_gen = gen;
        e->ts_ns = now;
    }
    if (e->ipc) ipc_event_publish(e->ipc, e->rec_gen, e->done_gen);
    pthread_cond_broadcast(&ev_cv);
    pthread_mutex_unlock(&ev_mu);
}

static void event_complete(struct CUevent_st *e, uint64_t gen) { event_complete_at(e, gen, sim_now_ns()); }

static void event_wait_gen(struct CUevent_st *e, uint64_t gen)
{
    pthread_mutex_lock(&ev_mu);
    while (e->done_gen < gen) pthread_cond_wait(&ev_cv, &ev_mu);
    pthread_mutex_unlock(&ev_mu);
}

/* ------------------------------------------------------------------ graph node lists */
/* The event node i of a graph launch records: the one set on the executable for this launch
 * (cuGraphExecEventRecordNodeSetEvent), else the node's own. */
static struct CUevent_st *launch_ev(const struct unit *g, size_t i)
{
    if (g->evs && g->evs[i]) return g->evs[i];
    return g->nl->nodes[i]->u.ev;
}

/* a launch's per-node events: the references it holds (n entries, NULL entries skipped) */
static void launch_evs_free(CUevent *evs, size_t n)
{
    if (!evs) return;
    for (size_t i = 0; i < n; i++)
        if (evs[i]) event_unref(evs[i]);
    free(evs);
}

static struct nodelist *nodelist_new(void)
{
    struct nodelist *nl = calloc(1, sizeof *nl);
    if (!nl) abort();
    nl->refs = 1;
    return nl;
}

static void unit_release(struct unit *u)
{
    switch (u->kind) {
    case U_FN: if (u->free_arg) u->free_arg(u->arg); break;
    case U_REC: case U_WAITEV: if (u->ev) event_unref(u->ev); break;
    default: break;
    }
}

static void nodelist_unref(struct nodelist *nl)
{
    pthread_mutex_lock(&g_lock);
    int last = --nl->refs == 0;
    pthread_mutex_unlock(&g_lock);
    if (!last) return;
    for (size_t i = 0; i < nl->n; i++) {
        unit_release(&nl->nodes[i]->u);
        free(nl->nodes[i]);
    }
    for (size_t i = 0; i < nl->nchild; i++) nodelist_unref(nl->children[i]);
    free(nl->nodes);
    free(nl->children);
    free(nl);
}

/* g_lock held; takes ownership of u's resources */
static struct CUgraphNode_st *nodelist_append(struct nodelist *nl, const struct unit *u)
{
    if (nl->n == nl->cap) {
        size_t nc = nl->cap ? nl->cap * 2 : 16;
        struct CUgraphNode_st **nn = realloc(nl->nodes, nc * sizeof *nn);
        if (!nn) abort();
        nl->nodes = nn;
        nl->cap = nc;
    }
    struct CUgraphNode_st *node = calloc(1, sizeof *node);
    if (!node) abort();
    node->type = OBJ_NODE;
    node->u = *u;
    nl->nodes[nl->n++] = node;
    return node;
}

static void nodelist_add_child(struct nodelist *nl, struct nodelist *child)   /* g_lock held */
{
    if (nl->nchild == nl->capchild) {
        size_t nc = nl->capchild ? nl->capchild * 2 : 4;
        struct nodelist **nn = realloc(nl->children, nc * sizeof *nn);
        if (!nn) abort();
        nl->children = nn;
        nl->capchild = nc;
    }
    child->refs++;
    nl->children[nl->nchild++] = child;
}

/* ------------------------------------------------------------------ captures (g_lock held) */
static struct capture *cap_lookup(uint64_t id)
{
    for (struct capture *c = g_caps; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}

static void cap_invalidate(struct capture *c)
{
    if (c->status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        c->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        __atomic_sub_fetch(&g_ncaps_active, 1, __ATOMIC_RELAXED);
    }
}

/* ------------------------------------------------------------------ streams */
static void stream_unref(struct CUstream_st *s)
{
    pthread_mutex_lock(&s->mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (last) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv_work);
        pthread_cond_destroy(&s->cv_done);
        free(s);
    }
}

static void item_release(struct item *it)
{
    switch (it->u.kind) {
    case U_WAITSTREAM: stream_unref(it->u.ws); break;
    case U_GRAPH:
        launch_evs_free(it->u.evs, it->u.nl->n);
        nodelist_unref(it->u.nl);
        free(it->u.gens);
        break;
    default: unit_release(&it->u); break;
    }
}

/* The slow-GPU fault, applied before running a unit that counts (not implicit waits). */
static void stall_before(struct CUstream_st *s, int kind)
{
    unsigned us = 0;
    if (kind == U_WAITSTREAM || kind == U_NOP) return;
    pthread_mutex_lock(&s->mu);
    if (s->hang_pending) {
        if (kind == U_REC && s->stall_ev_allow) {
            s->stall_ev_allow = 0;
            pthread_mutex_unlock(&s->mu);
            return;
        }
        pthread_mutex_unlock(&s->mu);
        /* the GPU hangs in this unit: it never ends, nothing behind it runs (its events never
         * complete) until the process ends; the worker's signals are blocked, so pause() never
         * returns */
        for (;;) pause();
    }
    if (s->stall_pending_us) {
        if (kind == U_REC && s->stall_ev_allow) {
            s->stall_ev_allow = 0;
        } else {
            us = s->stall_pending_us;
            s->stall_pending_us = 0;
            s->stall_ev_allow = 0;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (us && simcuda_model_on()) s->vt += (uint64_t)us * 1000u;   /* the worker's own stream */
    else if (us) sleep_us(us);
}

static void stall_arm(struct CUstream_st *s, unsigned us)   /* s->mu held */
{
    s->stall_pending_us += us;
    s->stall_ev_allow = 1;
}

/* a function item; an application's host function runs with its sleeps modeled */
static void run_fn(struct unit *u)
{
    if (u->app_fn) sim_model_app_fn(1);
    if (sim_kstats_on) sim_kstats_run(u); else u->fn(u->arg);
    if (u->app_fn) sim_model_app_fn(0);
}

/* modeled clock: a wait on an event ends no earlier than the event's time (its ts_ns) */
static void model_after_wait(struct CUstream_st *s, struct CUevent_st *e)
{
    if (!simcuda_model_on()) return;
    pthread_mutex_lock(&ev_mu);
    uint64_t t = e->ts_ns;
    pthread_mutex_unlock(&ev_mu);
    if (s->vt < t) s->vt = t;
}

static void run_graph(struct CUstream_st *s, struct unit *g)
{
    struct nodelist *nl = g->nl;
    for (size_t i = 0; i < nl->n; i++) {
        struct unit *u = &nl->nodes[i]->u;
        int kind = u->kind;
        if (kind == U_REC && !u->external) kind = U_NOP;   /* internal dependency only */
        stall_before(s, kind);
        switch (kind) {
        case U_FN: run_fn(u); break;
        case U_REC: event_complete(launch_ev(g, i), g->gens[i]); break;
        case U_WAITEV: event_wait_gen(u->ev, g->gens[i]); model_after_wait(s, u->ev); break;
        default: break;
        }
        if (u->stall_us) {
            pthread_mutex_lock(&s->mu);
            stall_arm(s, u->stall_us);
            pthread_mutex_unlock(&s->mu);
        }
    }
}

static void *stream_worker(void *p)
{
    struct CUstream_st *s = p;
    sim_model_worker_enter(s);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->destroyed) pthread_cond_wait(&s->cv_work, &s->mu);
        struct item *it = s->head;
        if (!it) break;
        s->head = it->next;
        if (!s->head) s->tail = NULL;
        s->running = it;
        pthread_mutex_unlock(&s->mu);

        /* modeled clock: work starts no earlier than the host enqueued it */
        if (s->vt < it->u.not_before) s->vt = it->u.not_before;
        if (it->u.kind != U_GRAPH) stall_before(s, it->u.kind);
        switch (it->u.kind) {
        case U_FN: run_fn(&it->u); break;
        case U_REC: event_complete(it->u.ev, it->u.gen); break;
        case U_WAITEV: event_wait_gen(it->u.ev, it->u.gen); model_after_wait(s, it->u.ev); break;
        case U_WAITSTREAM:
            stream_wait_seq(it->u.ws, it->u.wseq);
            if (simcuda_model_on()) {
                pthread_mutex_lock(&it->u.ws->mu);
                uint64_t t = it->u.ws->vt_done;
                pthread_mutex_unlock(&it->u.ws->mu);
                if (s->vt < t) s->vt = t;
            }
            break;
        case U_GRAPH: run_graph(s, &it->u); break;
        default: break;
        }

        /* release the item's references before it counts as done, so a synchronize that
         * returns has also seen its free_arg / graph release run */
        pthread_mutex_lock(&s->mu);
        /* stall_after may add to the running item until here; arm in the same critical
         * section, so an event record arriving now sees the pending stall */
        if (it->u.stall_us) stall_arm(s, it->u.stall_us);
        uint64_t seq = it->seq;
        s->running = NULL;
        pthread_mutex_unlock(&s->mu);
        item_release(it);
        free(it);
        pthread_mutex_lock(&s->mu);
        s->done_seq = seq;
        s->vt_done = s->vt;
        /* an event record queued right behind completes at once: wake the waiters once,
         * after it, instead of twice (a spurious wake-up costs a context switch) */
        if (!(s->head && s->head->u.kind == U_REC && !s->stall_pending_us))
            pthread_cond_broadcast(&s->cv_done);
    }
    s->worker_exited = 1;
    pthread_mutex_unlock(&s->mu);
    stream_unref(s);
    return NULL;
}

/* s->mu held */
static int stream_start_worker(struct CUstream_st *s)
{
    pthread_t t;
    pthread_attr_t at;
    sigset_t all, old;
    if (s->worker_started) return 0;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    /* asynchronous signals belong to the application's threads, not to the GPU */
    sigfillset(&all);
    sigdelset(&all, SIGSEGV); sigdelset(&all, SIGBUS); sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL); sigdelset(&all, SIGABRT); sigdelset(&all, SIGTRAP);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    s->refs++;
    int rc = pthread_create(&t, &at, stream_worker, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0) { s->refs--; return -1; }
    s->worker_started = 1;
    return 0;
}

static struct CUstream_st *stream_alloc(int dev, unsigned flags, int prio, int kind)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->type = OBJ_STREAM;
    s->device = dev;
    s->flags = flags;
    s->priority = prio;
    s->kind = kind;
    s->refs = 1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_work, NULL);
    pthread_cond_init(&s->cv_done, NULL);
    pthread_mutex_lock(&g_lock);
    s->id = ++g_stream_id;
    s->all_next = g_all;
    if (g_all) g_all->all_prev = s;
    g_all = s;
    pthread_mutex_unlock(&g_lock);
    reg_add(s, OBJ_STREAM);
    return s;
}

CUresult stream_create(int dev, unsigned flags, int prio, struct CUstream_st **out)
{
    sim_init();
    if (dev < 0 || dev >= g_ndev) return CUDA_ERROR_INVALID_DEVICE;
    struct CUstream_st *s = stream_alloc(dev, flags, prio, STREAM_USER);
    if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
    *out = s;
    return CUDA_SUCCESS;
}

static void stream_unlink(struct CUstream_st *s)   /* g_lock held */
{
    if (s->all_prev) s->all_prev->all_next = s->all_next; else if (g_all == s) g_all = s->all_next;
    if (s->all_next) s->all_next->all_prev = s->all_prev;
    s->all_next = s->all_prev = NULL;
}

static void stream_retire(struct CUstream_st *s)
{
    reg_del(s);
    pthread_mutex_lock(&g_lock);
    if (s->cap) {
        cap_invalidate(s->cap);
        if (s->cap->origin == s) s->cap->origin = NULL;
        __atomic_store_n(&s->cap, NULL, __ATOMIC_RELEASE);
    }
    stream_unlink(s);
    pthread_mutex_unlock(&g_lock);
    pthread_mutex_lock(&s->mu);
    s->destroyed = 1;
    pthread_cond_broadcast(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    stream_unref(s);   /* the handle's reference; the worker holds its own until drained */
}

CUresult stream_destroy(CUstream s)
{
    if (!reg_ok(s, OBJ_STREAM) || s->kind != STREAM_USER) return CUDA_ERROR_INVALID_HANDLE;
    stream_retire(s);
    return CUDA_SUCCESS;
}

static void thread_exit(void *unused)
{
    (void)unused;
    if (tls_ptds_epoch != g_epoch) return;
    for (int i = 0; i < SIM_MAX_DEVICES; i++) {
        struct CUstream_st *s = tls_ptds[i];
        tls_ptds[i] = NULL;
        if (s && reg_ok(s, OBJ_STREAM)) stream_retire(s);
    }
}

static struct CUstream_st *legacy_stream(int dev)
{
    pthread_mutex_lock(&g_lock);
    struct CUstream_st *s = g_legacy[dev];
    pthread_mutex_unlock(&g_lock);
    if (s) return s;
    s = stream_alloc(dev, 0, 0, STREAM_LEGACY);
    if (!s) return NULL;
    pthread_mutex_lock(&g_lock);
    if (g_legacy[dev]) {   /* lost a race: drop ours */
        struct CUstream_st *other = g_legacy[dev];
        pthread_mutex_unlock(&g_lock);
        stream_retire(s);
        return other;
    }
    g_legacy[dev] = s;
    pthread_mutex_unlock(&g_lock);
    return s;
}

static struct CUstream_st *ptds_stream(int dev)
{
    if (tls_ptds_epoch != g_epoch) {
        memset(tls_ptds, 0, sizeof tls_ptds);
        tls_ptds_epoch = g_epoch;
    }
    if (!tls_ptds[dev]) {
        tls_ptds[dev] = stream_alloc(dev, 0, 0, STREAM_PTDS);
        pthread_setspecific(g_thread_key, (void *)1);
    }
    return tls_ptds[dev];
}

CUresult stream_resolve(CUstream in, int ptds, struct CUstream_st **out)
{
    sim_init();
    if (in == NULL || in == CU_STREAM_LEGACY || in == CU_STREAM_PER_THREAD) {
        int dev = sim_cur_dev();
        if (dev >= g_ndev) return CUDA_ERROR_INVALID_CONTEXT;
        int pt = in == CU_STREAM_PER_THREAD || (in == NULL && ptds);
        *out = pt ? ptds_stream(dev) : legacy_stream(dev);
        return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!reg_ok(in, OBJ_STREAM)) return CUDA_ERROR_INVALID_HANDLE;
    *out = in;
    return CUDA_SUCCESS;
}

static int stream_blocking(const struct CUstream_st *s)
{
    return s->kind != STREAM_LEGACY && !(s->flags & CU_STREAM_NON_BLOCKING);
}

struct dep { struct CUstream_st *s; uint64_t seq; };

/* g_lock held: remember that s must wait for b's work enqueued so far */
static void dep_take(struct CUstream_st *b, struct dep **deps, size_t *n, size_t *cap)
{
    pthread_mutex_lock(&b->mu);
    if (b->done_seq < b->enq_seq) {
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 8;
            struct dep *nd = realloc(*deps, nc * sizeof *nd);
            if (!nd) abort();
            *deps = nd;
            *cap = nc;
        }
        b->refs++;
        (*deps)[(*n)++] = (struct dep){ b, b->enq_seq };
    }
    pthread_mutex_unlock(&b->mu);
}

/* Captured submission (g_lock held, s->cap active): append the unit to the graph. */
static CUresult submit_captured(struct CUstream_st *s, struct unit *u)
{
    struct nodelist *nl = s->cap->graph->nl;
    if (u->kind == U_GRAPH) {
        /* a graph launched into a capture: its nodes are flattened in */
        struct nodelist *src = u->nl;
        for (size_t i = 0; i < src->n; i++) {
            struct unit c = src->nodes[i]->u;
            c.free_arg = NULL;   /* owned by src, kept alive by the child reference */
            if (c.kind == U_REC) c.ev = launch_ev(u, i);   /* the executable's event, if set */
            if (c.ev) {
                pthread_mutex_lock(&ev_mu);
                c.ev->refs++;
                pthread_mutex_unlock(&ev_mu);
            }
            s->cap_last = nodelist_append(nl, &c);
        }
        nodelist_add_child(nl, src);
        return CUDA_SUCCESS;
    }
    if (u->ev) {
        pthread_mutex_lock(&ev_mu);
        u->ev->refs++;
        pthread_mutex_unlock(&ev_mu);
        if (u->kind == U_REC && !u->external) __atomic_store_n(&u->ev->cap_id, s->cap->id, __ATOMIC_RELEASE);
    }
    s->cap_last = nodelist_append(nl, u);
    return CUDA_SUCCESS;
}

CUresult stream_submit(struct CUstream_st *s, struct unit *u, uint64_t *seq_out)
{
    struct dep *deps = NULL;
    size_t ndeps = 0, capdeps = 0;
    CUresult err = CUDA_SUCCESS;

    pthread_mutex_lock(&g_lock);
    if (s->cap) {
        if (s->cap->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else err = submit_captured(s, u);
        pthread_mutex_unlock(&g_lock);
        if (seq_out) *seq_out = 0;
        return err;
    }
    /* legacy default stream semantics: it waits for all blocking streams of its device,
     * and every blocking stream waits for it */
    if (s->kind == STREAM_LEGACY) {
        for (struct CUstream_st *b = g_all; b; b = b->all_next) {
            if (b == s || b->device != s->device || !stream_blocking(b)) continue;
            if (b->cap) {
                cap_invalidate(b->cap);
                err = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
                continue;
            }
            dep_take(b, &deps, &ndeps, &capdeps);
        }
    } else if (stream_blocking(s) && g_legacy[s->device]) {
        dep_take(g_legacy[s->device], &deps, &ndeps, &capdeps);
    }
    if (err != CUDA_SUCCESS) {
        pthread_mutex_unlock(&g_lock);
        for (size_t i = 0; i < ndeps; i++) stream_unref(deps[i].s);
        free(deps);
        return err;
    }
    /* event generations are assigned here, so a query right after the call sees NotReady */
    if (u->kind == U_REC || u->kind == U_WAITEV || u->kind == U_GRAPH) {
        pthread_mutex_lock(&ev_mu);
        if (u->kind == U_REC) {
            u->gen = ++u->ev->rec_gen;
            u->ev->refs++;
            if (u->ev->ipc) ipc_event_publish(u->ev->ipc, u->ev->rec_gen, u->ev->done_gen);
        } else if (u->kind == U_WAITEV) {
            u->ev->refs++;
        } else {
            struct nodelist *nl = u->nl;
            for (size_t i = 0; i < nl->n; i++) {
                struct unit *n = &nl->nodes[i]->u;
                if (n->kind == U_REC && n->external) {
                    struct CUevent_st *e = launch_ev(u, i);
                    u->gens[i] = ++e->rec_gen;
                    if (e->ipc) ipc_event_publish(e->ipc, e->rec_gen, e->done_gen);
                }
                else if (n->kind == U_WAITEV) u->gens[i] = n->ev->rec_gen;
            }
        }
        pthread_mutex_unlock(&ev_mu);
        if (u->kind == U_REC) __atomic_store_n(&u->ev->cap_id, 0, __ATOMIC_RELEASE);
        if (u->kind == U_GRAPH) {
            for (size_t i = 0; i < u->nl->n; i++) {
                struct unit *n = &u->nl->nodes[i]->u;
                if (n->kind == U_REC && n->external) __atomic_store_n(&launch_ev(u, i)->cap_id, 0, __ATOMIC_RELEASE);
            }
            u->nl->refs++;
        }
    }
    pthread_mutex_unlock(&g_lock);

    struct item *items[ndeps + 1];
    for (size_t i = 0; i <= ndeps; i++) {
        items[i] = calloc(1, sizeof(struct item));
        if (!items[i]) abort();
    }
    for (size_t i = 0; i < ndeps; i++) {
        items[i]->u.kind = U_WAITSTREAM;
        items[i]->u.ws = deps[i].s;
        items[i]->u.wseq = deps[i].seq;
    }
    items[ndeps]->u = *u;
    free(deps);
    int model = simcuda_model_on();
    if (model) items[ndeps]->u.not_before = sim_model_host_now();

    pthread_mutex_lock(&s->mu);
    /* An event recorded on an idle stream completes at once, as on a GPU, without a round
     * trip through the worker (a wake-up per record would make every timed call slower
     * than on real hardware). Not while a slow-GPU stall or a hang is pending: it must apply. */
    if (ndeps == 0 && u->kind == U_REC && !seq_out && !s->head && !s->running && !s->stall_pending_us && !s->hang_pending &&
        !u->stall_us) {
        if (model && s->vt < items[0]->u.not_before) s->vt_done = s->vt = items[0]->u.not_before;
        event_complete_at(items[0]->u.ev, items[0]->u.gen, model ? s->vt : sim_now_ns());
        pthread_mutex_unlock(&s->mu);
        item_release(items[0]);
        free(items[0]);
        return CUDA_SUCCESS;
    }
    if (stream_start_worker(s) != 0) {
        pthread_mutex_unlock(&s->mu);
        abort();   /* cannot create a thread: nothing sensible left to simulate */
    }
    for (size_t i = 0; i <= ndeps; i++) {
        items[i]->seq = ++s->enq_seq;
        if (s->tail) s->tail->next = items[i]; else s->head = items[i];
        s->tail = items[i];
    }
    if (seq_out) *seq_out = s->enq_seq;
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    return CUDA_SUCCESS;
}

void stream_wait_seq(struct CUstream_st *s, uint64_t seq)
{
    pthread_mutex_lock(&s->mu);
    while (s->done_seq < seq) pthread_cond_wait(&s->cv_done, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static CUresult stream_capture_violation(struct CUstream_st *s)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&g_lock);
    if (s->cap) {
        cap_invalidate(s->cap);
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* The legacy stream also covers the work queued so far on every blocking stream of its
 * device (measured on CUDA 13: cudaStreamQuery(0) is NotReady and cudaStreamSynchronize(0)
 * waits while a blocking stream is busy). Returns the snapshot; the caller drops the refs. */
static struct dep *legacy_deps(struct CUstream_st *s, size_t *n)
{
    struct dep *deps = NULL;
    size_t cap = 0;
    *n = 0;
    pthread_mutex_lock(&g_lock);
    for (struct CUstream_st *b = g_all; b; b = b->all_next)
        if (b != s && b->device == s->device && stream_blocking(b)) dep_take(b, &deps, n, &cap);
    pthread_mutex_unlock(&g_lock);
    return deps;
}

/* a synchronization's wait: until s completed seq, or s's device took a sticky fault */
static void sync_wait_seq(struct CUstream_st *s, uint64_t seq)
{
    pthread_mutex_lock(&s->mu);
    while (s->done_seq < seq && sim_dev_fault(s->device) == CUDA_SUCCESS) pthread_cond_wait(&s->cv_done, &s->mu);
    uint64_t t = s->vt_done;
    pthread_mutex_unlock(&s->mu);
    if (simcuda_model_on()) sim_model_host_observe(t);   /* the host waited until then */
}

CUresult stream_sync(struct CUstream_st *s)
{
    CUresult r = sim_dev_fault(s->device);
    if (r != CUDA_SUCCESS) return r;
    r = stream_capture_violation(s);
    if (r != CUDA_SUCCESS) return r;
    if (s->kind == STREAM_LEGACY) {
        size_t n;
        struct dep *deps = legacy_deps(s, &n);
        for (size_t i = 0; i < n; i++) {
            sync_wait_seq(deps[i].s, deps[i].seq);
            stream_unref(deps[i].s);
        }
        free(deps);
    }
    pthread_mutex_lock(&s->mu);
    uint64_t target = s->enq_seq;
    pthread_mutex_unlock(&s->mu);
    sync_wait_seq(s, target);
    sim_model_after_sync();
    return sim_dev_fault(s->device);
}

CUresult stream_query(struct CUstream_st *s)
{
    CUresult r = sim_dev_fault(s->device);
    if (r != CUDA_SUCCESS) return r;
    r = stream_capture_violation(s);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&s->mu);
    r = s->done_seq < s->enq_seq ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
    pthread_mutex_unlock(&s->mu);   /* no host-time jump, as event_query */
    if (r == CUDA_SUCCESS && s->kind == STREAM_LEGACY) {
        size_t n;
        struct dep *deps = legacy_deps(s, &n);   /* only streams with pending work */
        if (n) r = CUDA_ERROR_NOT_READY;
        for (size_t i = 0; i < n; i++) stream_unref(deps[i].s);
        free(deps);
    }
    return r;
}

CUresult device_sync(int dev)
{
    CUresult r = sim_dev_fault(dev);
    if (r != CUDA_SUCCESS) return r;
    r = capture_unsafe_call();
    if (r != CUDA_SUCCESS) return r;
    struct dep *deps = NULL;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&g_lock);
    for (struct CUstream_st *b = g_all; b; b = b->all_next)
        if (b->device == dev) dep_take(b, &deps, &n, &cap);
    pthread_mutex_unlock(&g_lock);
    for (size_t i = 0; i < n; i++) {
        sync_wait_seq(deps[i].s, deps[i].seq);
        stream_unref(deps[i].s);
    }
    free(deps);
    sim_model_after_sync();
    return sim_dev_fault(dev);
}

/* ------------------------------------------------------------------ sticky faults */
/* An illegal address (or other kernel) fault is sticky: "This leaves the process in an
 * inconsistent state and any further CUDA work will return the same error"
 * (driver_types.h:769-775 cudaErrorIllegalAddress, cuda.h:2829-2837). Modelled for the calls
 * that report asynchronous errors: stream/context synchronize and query, event synchronize
 * and query (and the runtime's last error). They return the fault at once, without waiting
 * for the device's remaining work (a dead context runs nothing any more). */
CUresult sim_dev_fault(int dev)
{
    if (dev < 0 || dev >= SIM_MAX_DEVICES) return CUDA_SUCCESS;
    return (CUresult)__atomic_load_n(&g_primary[dev].fault, __ATOMIC_ACQUIRE);
}

CUresult simcuda_device_error(int dev) { return sim_dev_fault(dev); }

static _Atomic long long dev_seq[64] = {[0 ... 63] = -1};
/* modeled clock: each device's collectives as (seq, the stream's time at its end), in the
 * order they ran (one stream of the first communicator: both rise), for simcuda_seq_at */
#define SEQ_HIST_MAX (1u << 20)
static struct seq_hist { long long *seq; uint64_t *t; size_t n, cap; } seq_hist[64];
static pthread_mutex_t seq_hist_mu = PTHREAD_MUTEX_INITIALIZER;
static void seq_hist_add(int dev, long long seq, uint64_t t)
{
    struct seq_hist *h = &seq_hist[dev];
    pthread_mutex_lock(&seq_hist_mu);
    if (h->n == h->cap && h->cap < SEQ_HIST_MAX) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        long long *ns = realloc(h->seq, cap * sizeof *ns);
        if (ns) h->seq = ns;
        uint64_t *nt = ns ? realloc(h->t, cap * sizeof *nt) : NULL;
        if (nt) { h->t = nt; h->cap = cap; }
    }
    if (h->n < h->cap && (!h->n || (h->seq[h->n - 1] < seq && h->t[h->n - 1] <= t))) {
        h->seq[h->n] = seq;
        h->t[h->n++] = t;
    }
    pthread_mutex_unlock(&seq_hist_mu);
}
void simcuda_note_seq(int dev, long long seq)
{
    if (dev < 0 || dev >= 64) return;
    long long cur = atomic_load(&dev_seq[dev]);
    while (seq > cur && !atomic_compare_exchange_weak(&dev_seq[dev], &cur, seq)) {}
    sim_model_note_seq(seq);   /* from= onsets on the modeled clock (model.c) */
    if (simcuda_model_on()) seq_hist_add(dev, seq, simcuda_model_now());
}
long long simcuda_last_seq(int dev) { return dev >= 0 && dev < 64 ? atomic_load(&dev_seq[dev]) : -1; }
long long simcuda_seq_at(int dev, uint64_t t)
{
    if (dev < 0 || dev >= 64) return -1;
    struct seq_hist *h = &seq_hist[dev];
    long long seq = -1;
    pthread_mutex_lock(&seq_hist_mu);
    size_t lo = 0, hi = h->n;   /* the last entry at or before t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->t[mid] <= t) lo = mid + 1;
        else hi = mid;
    }
    if (lo) seq = h->seq[lo - 1];
    if (h->n == SEQ_HIST_MAX && lo == h->n) seq = simcuda_last_seq(dev);   /* past the history's end */
    pthread_mutex_unlock(&seq_hist_mu);
    return seq;
}

void simcuda_device_fault(int dev, CUresult err)
{
    sim_init();
    if (dev < 0 || dev >= g_ndev || err == CUDA_SUCCESS) return;
    int none = 0;
    if (!__atomic_compare_exchange_n(&g_primary[dev].fault, &none, (int)err, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    /* wake every synchronization waiting on this device's work */
    pthread_mutex_lock(&g_lock);
    for (struct CUstream_st *b = g_all; b; b = b->all_next) {
        if (b->device != dev) continue;
        pthread_mutex_lock(&b->mu);
        pthread_cond_broadcast(&b->cv_done);
        pthread_mutex_unlock(&b->mu);
    }
    pthread_mutex_unlock(&g_lock);
    pthread_mutex_lock(&ev_mu);
    pthread_cond_broadcast(&ev_cv);
    pthread_mutex_unlock(&ev_mu);
}

void stream_stall_after(struct CUstream_st *s, unsigned us)
{
    pthread_mutex_lock(&g_lock);
    if (s->cap) {
        if (s->cap_last) s->cap_last->u.stall_us += us;
        pthread_mutex_unlock(&g_lock);
        return;
    }
    pthread_mutex_unlock(&g_lock);
    pthread_mutex_lock(&s->mu);
    if (s->tail) s->tail->u.stall_us += us;
    else if (s->running) s->running->u.stall_us += us;
    else stall_arm(s, us);   /* the last item already completed: stall before the next one */
    pthread_mutex_unlock(&s->mu);
}

/* from inside an item on a stream worker (a collective's work function): the stall comes after
 * the item now running, whatever was enqueued behind it meanwhile */
void simcuda_worker_stall_after(unsigned us)
{
    struct CUstream_st *s = sim_model_worker();
    if (us == 0 || !s) return;
    pthread_mutex_lock(&s->mu);
    if (s->running) s->running->u.stall_us += us;
    else stall_arm(s, us);
    pthread_mutex_unlock(&s->mu);
}

/* a GPU hang after the item now running (simcuda.h) */
void simcuda_worker_hang_after(void)
{
    struct CUstream_st *s = sim_model_worker();
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->hang_pending = 1;
    s->stall_ev_allow = 1;
    pthread_mutex_unlock(&s->mu);
}

void simcuda_stream_stall_after(CUstream s, unsigned us)
{
    struct CUstream_st *st;
    if (us == 0 || stream_resolve(s, 0, &st) != CUDA_SUCCESS) return;
    stream_stall_after(st, us);
}

CUresult simcuda_enqueue(CUstream s, simcuda_fn fn, void *arg, simcuda_fn free_arg)
{
    struct CUstream_st *st;
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_resolve(s, 0, &st);
    if (r != CUDA_SUCCESS) return r;
    struct unit u = { .kind = U_FN, .fn = fn, .arg = arg, .free_arg = free_arg };
    return stream_submit(st, &u, NULL);
}

int simcuda_stream_device(CUstream s)
{
    struct CUstream_st *st;
    if (stream_resolve(s, 0, &st) != CUDA_SUCCESS) return -1;
    return st->device;
}

int simcuda_stream_capturing(CUstream s)
{
    struct CUstream_st *st;
    if (stream_resolve(s, 0, &st) != CUDA_SUCCESS) return 0;
    pthread_mutex_lock(&g_lock);
    int c = st->cap != NULL && st->cap->status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
    pthread_mutex_unlock(&g_lock);
    return c;
}

/* ------------------------------------------------------------------ events */
CUresult event_create(unsigned flags, struct CUevent_st **out)
{
    if (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
    e->type = OBJ_EVENT;
    e->flags = flags;
    e->device = sim_cur_dev();
    e->refs = 1;
    reg_add(e, OBJ_EVENT);
    *out = e;
    return CUDA_SUCCESS;
}

CUresult event_destroy(CUevent e)
{
    if (!reg_ok(e, OBJ_EVENT)) return CUDA_ERROR_INVALID_HANDLE;
    reg_del(e);
    pthread_mutex_lock(&ev_mu);
    e->destroyed = 1;
    event_unref_locked(e);
    pthread_mutex_unlock(&ev_mu);
    return CUDA_SUCCESS;
}

CUresult event_record(CUevent e, struct CUstream_st *s, unsigned flags)
{
    if (!reg_ok(e, OBJ_EVENT)) return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
    if (e->remote) return CUDA_ERROR_NOT_SUPPORTED;   /* only the exporting process records */
    struct unit u = { .kind = U_REC, .ev = e, .external = (flags & CU_EVENT_RECORD_EXTERNAL) != 0 };
    if (u.external && !simcuda_stream_capturing(s)) return CUDA_ERROR_ILLEGAL_STATE;   /* as CUDA 13 */
    return stream_submit(s, &u, NULL);
}

/* Captured-event rules measured on CUDA 13 (see README): while the capture that recorded the
 * event is active, query/synchronize fail with CUDA_ERROR_CAPTURED_EVENT and invalidate that
 * capture; once that capture ended (or was invalidated) they fail with INVALID_VALUE until
 * the event is recorded again outside a capture. */
static CUresult event_capture_state(CUevent e)
{
    CUresult r = CUDA_SUCCESS;
    /* common case, no capture involved: answer without the global lock */
    if (!__atomic_load_n(&e->cap_id, __ATOMIC_ACQUIRE)) return CUDA_SUCCESS;
    pthread_mutex_lock(&g_lock);
    if (e->cap_id) {
        struct capture *c = cap_lookup(e->cap_id);
        if (c && c->status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
            cap_invalidate(c);
            r = CUDA_ERROR_CAPTURED_EVENT;
        } else {
            r = CUDA_ERROR_INVALID_VALUE;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

CUresult event_query(CUevent e)
{
    if (!reg_ok(e, OBJ_EVENT)) return CUDA_ERROR_INVALID_HANDLE;
    if (sim_dev_fault(e->device) != CUDA_SUCCESS) return sim_dev_fault(e->device);
    if (e->remote) return ipc_event_done(e->ipc, atomic_load(&e->ipc->rec)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    CUresult r = event_capture_state(e);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&ev_mu);
    r = e->done_gen >= e->rec_gen ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    uint64_t t = e->ts_ns;
    pthread_mutex_unlock(&ev_mu);
    /* a thread that saw the event done is no earlier than it: its host time moves up to the
     * event's (a poll that finds it not done moves nothing, so how often the host's scheduler
     * let the thread poll never shows) */
    if (r == CUDA_SUCCESS && simcuda_model_on()) sim_model_host_observe(t);
    return r;
}

CUresult event_sync(CUevent e)
{
    if (!reg_ok(e, OBJ_EVENT)) return CUDA_ERROR_INVALID_HANDLE;
    if (sim_dev_fault(e->device) != CUDA_SUCCESS) return sim_dev_fault(e->device);
    if (e->remote) { ipc_event_wait(e->ipc, atomic_load(&e->ipc->rec)); return CUDA_SUCCESS; }
    CUresult r = event_capture_state(e);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&ev_mu);
    uint64_t target = e->rec_gen;
    while (e->done_gen < target && sim_dev_fault(e->device) == CUDA_SUCCESS) pthread_cond_wait(&ev_cv, &ev_mu);
    uint64_t t = e->ts_ns;
    pthread_mutex_unlock(&ev_mu);
    if (simcuda_model_on()) sim_model_host_observe(t);
    sim_model_after_sync();
    return sim_dev_fault(e->device);
}

CUresult event_elapsed(float *ms, CUevent a, CUevent b)
{
    if (!ms) return CUDA_ERROR_INVALID_VALUE;
    if (!reg_ok(a, OBJ_EVENT) || !reg_ok(b, OBJ_EVENT)) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = event_capture_state(a);
    if (r == CUDA_SUCCESS) r = event_capture_state(b);
    if (r != CUDA_SUCCESS) return r;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&ev_mu);
    if (a->rec_gen == 0 || b->rec_gen == 0) r = CUDA_ERROR_INVALID_HANDLE;
    else if (a->done_gen < a->rec_gen || b->done_gen < b->rec_gen) r = CUDA_ERROR_NOT_READY;
    else *ms = (float)((double)((int64_t)(b->ts_ns - a->ts_ns)) / 1e6);
    pthread_mutex_unlock(&ev_mu);
    return r;
}

CUresult stream_wait_event(struct CUstream_st *s, CUevent e, unsigned flags)
{
    if (!reg_ok(e, OBJ_EVENT)) return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
    if (e->remote) {
        uint32_t target = atomic_load(&e->ipc->rec);
        if (ipc_event_done(e->ipc, target)) return CUDA_SUCCESS;
        if (simcuda_stream_capturing(s)) return CUDA_ERROR_NOT_SUPPORTED;
        struct remote_wait *w = malloc(sizeof *w);
        if (!w) return CUDA_ERROR_OUT_OF_MEMORY;
        pthread_mutex_lock(&ev_mu);
        e->refs++;
        pthread_mutex_unlock(&ev_mu);
        *w = (struct remote_wait){ e, target };
        struct unit u = { .kind = U_FN, .fn = remote_wait_run, .arg = w, .free_arg = remote_wait_free };
        CUresult r = stream_submit(s, &u, NULL);
        if (r != CUDA_SUCCESS) remote_wait_free(w);
        return r;
    }
    pthread_mutex_lock(&g_lock);
    struct capture *ecap = e->cap_id ? cap_lookup(e->cap_id) : NULL;
    if (s->cap) {
        CUresult r = CUDA_SUCCESS;
        struct unit u = { .kind = U_NOP };
        if (s->cap->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else if (ecap == s->cap) {
            s->cap_last = nodelist_append(s->cap->graph->nl, &u);   /* in-graph dependency */
        } else if (e->cap_id && ecap) {
            cap_invalidate(s->cap);
            r = CUDA_ERROR_STREAM_CAPTURE_MERGE;
        } else if (e->cap_id) {
            r = CUDA_ERROR_INVALID_VALUE;
        } else if (flags & CU_EVENT_WAIT_EXTERNAL) {
            u.kind = U_WAITEV;
            u.ev = e;
            u.external = 1;
            r = submit_captured(s, &u);
        } else {
            cap_invalidate(s->cap);
            r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
        }
        pthread_mutex_unlock(&g_lock);
        return r;
    }
    if (ecap) {
        /* fork: a stream waiting on an event recorded in an active capture joins it */
        CUresult r = CUDA_SUCCESS;
        if (ecap->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else if (s->kind == STREAM_LEGACY) { cap_invalidate(ecap); r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT; }
        else {
            __atomic_store_n(&s->cap, ecap, __ATOMIC_RELEASE);
            s->cap_last = NULL;
        }
        pthread_mutex_unlock(&g_lock);
        return r;
    }
    if (e->cap_id) { pthread_mutex_unlock(&g_lock); return CUDA_ERROR_INVALID_VALUE; }
    pthread_mutex_unlock(&g_lock);

    pthread_mutex_lock(&ev_mu);
    uint64_t gen = e->rec_gen;
    int needed = gen != 0 && e->done_gen < gen;
    uint64_t t_done = e->ts_ns;
    pthread_mutex_unlock(&ev_mu);
    if (!needed && gen != 0 && simcuda_model_on()) {
        /* complete already (in wall time, which depends on the host's scheduling): on the
         * modeled clock the stream still resumes no earlier than the event's time */
        uint64_t *t = malloc(sizeof *t);
        if (!t) return CUDA_ERROR_OUT_OF_MEMORY;
        *t = t_done;
        struct unit u = { .kind = U_FN, .fn = model_advance_run, .arg = t, .free_arg = free };
        CUresult r = stream_submit(s, &u, NULL);
        if (r != CUDA_SUCCESS) free(t);
        return r;
    }
    if (!needed) return CUDA_SUCCESS;   /* never recorded or already complete: no-op */
    struct unit u = { .kind = U_WAITEV, .ev = e, .gen = gen };
    /* stream_submit takes the event reference; U_WAITEV keeps the gen we read above */
    CUresult r = stream_submit(s, &u, NULL);
    return r;
}

/* ------------------------------------------------------------------ capture API */
CUresult capture_begin(struct CUstream_st *s, int mode)
{
    if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->kind == STREAM_LEGACY) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    CUgraph g;
    CUresult r = graph_create(&g);
    if (r != CUDA_SUCCESS) return r;
    struct capture *c = calloc(1, sizeof *c);
    if (!c) { graph_destroy(g); return CUDA_ERROR_OUT_OF_MEMORY; }
    pthread_mutex_lock(&g_lock);
    if (s->cap) {
        pthread_mutex_unlock(&g_lock);
        free(c);
        graph_destroy(g);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    c->id = ++g_cap_id;
    c->status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    c->mode = mode;
    c->owner = pthread_self();
    c->origin = s;
    c->graph = g;
    c->next = g_caps;
    g_caps = c;
    __atomic_store_n(&s->cap, c, __ATOMIC_RELEASE);
    s->cap_last = NULL;
    __atomic_add_fetch(&g_ncaps_active, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

CUresult capture_end(struct CUstream_st *s, CUgraph *out)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    struct capture *c = s->cap;
    if (!c) { pthread_mutex_unlock(&g_lock); return CUDA_ERROR_ILLEGAL_STATE; }
    if (c->origin != s) { pthread_mutex_unlock(&g_lock); return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED; }
    if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->owner, pthread_self())) {
        pthread_mutex_unlock(&g_lock);
        return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    }
    for (struct CUstream_st *b = g_all; b; b = b->all_next)
        if (b->cap == c) { __atomic_store_n(&b->cap, NULL, __ATOMIC_RELEASE); b->cap_last = NULL; }
    for (struct capture **pp = &g_caps; *pp; pp = &(*pp)->next)
        if (*pp == c) { *pp = c->next; break; }
    int ok = c->status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (ok) __atomic_sub_fetch(&g_ncaps_active, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lock);
    CUgraph g = c->graph;
    free(c);
    if (!ok) {
        graph_destroy(g);
        *out = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *out = g;
    return CUDA_SUCCESS;
}

CUresult capture_info(struct CUstream_st *s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                      const CUgraphNode **deps, size_t *ndeps)
{
    if (!st) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    struct capture *c = s->cap;
    *st = c ? (CUstreamCaptureStatus)c->status : CU_STREAM_CAPTURE_STATUS_NONE;
    if (c && c->status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        if (id) *id = c->id;
        if (g) *g = c->graph;
        if (deps) *deps = s->cap_last ? (const CUgraphNode *)&s->cap_last : NULL;
        if (ndeps) *ndeps = s->cap_last ? 1 : 0;
    } else {   /* the id is only written while a capture is active (as CUDA 13 does) */
        if (g) *g = NULL;
        if (deps) *deps = NULL;
        if (ndeps) *ndeps = 0;
    }
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

/* "Potentially unsafe" calls (allocation, device synchronize) while a capture that forbids
 * them is active: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the capture is invalidated. */
CUresult capture_unsafe_call(void)
{
    if (__atomic_load_n(&g_ncaps_active, __ATOMIC_RELAXED) == 0) return CUDA_SUCCESS;
    if (tls_capmode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
    CUresult r = CUDA_SUCCESS;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&g_lock);
    for (struct capture *c = g_caps; c; c = c->next) {
        if (c->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) continue;
        if (c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
            (c->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && pthread_equal(c->owner, self))) {
            cap_invalidate(c);
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

CUstreamCaptureMode capture_exchange_mode(CUstreamCaptureMode m)
{
    CUstreamCaptureMode old = tls_capmode;
    tls_capmode = m;
    return old;
}

/* ------------------------------------------------------------------ graphs */
CUresult graph_create(CUgraph *out)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
    g->type = OBJ_GRAPH;
    g->nl = nodelist_new();
    reg_add(g, OBJ_GRAPH);
    *out = g;
    return CUDA_SUCCESS;
}

CUresult graph_destroy(CUgraph g)
{
    if (!reg_ok(g, OBJ_GRAPH)) return CUDA_ERROR_INVALID_VALUE;
    reg_del(g);
    nodelist_unref(g->nl);   /* free_args run once executables and pending launches are gone */
    free(g);
    return CUDA_SUCCESS;
}

CUresult graph_instantiate(CUgraphExec *out, CUgraph g)
{
    if (!out || !reg_ok(g, OBJ_GRAPH)) return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
    x->type = OBJ_GEXEC;
    pthread_mutex_lock(&g_lock);
    x->nl = g->nl;
    g->nl->refs++;
    pthread_mutex_unlock(&g_lock);
    reg_add(x, OBJ_GEXEC);
    *out = x;
    return CUDA_SUCCESS;
}

CUresult graph_exec_destroy(CUgraphExec x)
{
    if (!reg_ok(x, OBJ_GEXEC)) return CUDA_ERROR_INVALID_VALUE;
    reg_del(x);
    launch_evs_free(x->evs, x->nl->n);
    nodelist_unref(x->nl);
    free(x);
    return CUDA_SUCCESS;
}

CUresult graph_launch(CUgraphExec x, struct CUstream_st *s)
{
    if (!reg_ok(x, OBJ_GEXEC)) return CUDA_ERROR_INVALID_VALUE;
    struct unit u = { .kind = U_GRAPH, .nl = x->nl };
    u.gens = calloc(x->nl->n + 1, sizeof *u.gens);
    if (!u.gens) return CUDA_ERROR_OUT_OF_MEMORY;
    /* the events set on the executable so far: a later set does not change this launch
     * ("already enqueued or running launches of hGraphExec are not affected", cuda.h 13.0,
     * cuGraphExecEventRecordNodeSetEvent) */
    pthread_mutex_lock(&g_lock);
    if (x->evs) {
        u.evs = calloc(x->nl->n, sizeof *u.evs);
        if (!u.evs) abort();
        pthread_mutex_lock(&ev_mu);
        for (size_t i = 0; i < x->nl->n; i++)
            if ((u.evs[i] = x->evs[i]) != NULL) u.evs[i]->refs++;
        pthread_mutex_unlock(&ev_mu);
    }
    pthread_mutex_unlock(&g_lock);
    uint64_t seq = 0;
    CUresult r = stream_submit(s, &u, &seq);
    if (r != CUDA_SUCCESS || seq == 0) {   /* seq 0: flattened into a capture */
        free(u.gens);
        launch_evs_free(u.evs, x->nl->n);
    }
    return r;
}

/* cuGraphExecEventRecordNodeSetEvent: hNode is an event record node of the graph the
 * executable was instantiated from (an external record made by capture, or one added);
 * later launches record `e` there instead. Anything else: CUDA_ERROR_INVALID_VALUE. */
CUresult graph_exec_set_event(CUgraphExec x, CUgraphNode node, CUevent e)
{
    if (!reg_ok(x, OBJ_GEXEC) || !reg_ok(e, OBJ_EVENT) || !node) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *old = NULL;
    pthread_mutex_lock(&g_lock);
    struct nodelist *nl = x->nl;
    size_t i = 0;
    while (i < nl->n && nl->nodes[i] != node) i++;
    if (i < nl->n && nl->nodes[i]->u.kind == U_REC && nl->nodes[i]->u.external) {
        if (!x->evs) x->evs = calloc(nl->n, sizeof *x->evs);
        if (x->evs) {
            pthread_mutex_lock(&ev_mu);
            e->refs++;
            pthread_mutex_unlock(&ev_mu);
            old = x->evs[i];
            x->evs[i] = e;
            r = CUDA_SUCCESS;
        } else {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (old) event_unref(old);
    return r;
}

CUresult graph_nodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    if (!n || !reg_ok(g, OBJ_GRAPH)) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    size_t have = g->nl->n;
    if (nodes) {
        size_t k = *n < have ? *n : have;
        for (size_t i = 0; i < k; i++) nodes[i] = g->nl->nodes[i];
        for (size_t i = k; i < *n; i++) nodes[i] = NULL;
        if (*n > have) *n = have;
    } else {
        *n = have;
    }
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

struct hostfn_arg { CUhostFn fn; void *arg; };
static void hostfn_tramp(void *p) { struct hostfn_arg *h = p; h->fn(h->arg); }

CUresult graph_add_host_node(CUgraphNode *out, CUgraph g, CUhostFn fn, void *arg)
{
    if (!out || !fn || !reg_ok(g, OBJ_GRAPH)) return CUDA_ERROR_INVALID_VALUE;
    struct hostfn_arg *h = malloc(sizeof *h);
    if (!h) return CUDA_ERROR_OUT_OF_MEMORY;
    h->fn = fn;
    h->arg = arg;
    struct unit u = { .kind = U_FN, .fn = hostfn_tramp, .arg = h, .free_arg = free };
    pthread_mutex_lock(&g_lock);
    *out = nodelist_append(g->nl, &u);
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ kernels */
struct kcall {
    simkernel_fn fn;
    const char *name;              /* the CUfunc's (kernel accounting) */
    unsigned grid[3], block[3];
    void **params;
    void *store;
};

/* COLLSCOPE_SIM_KERNEL_FAULT=<kernel>:<n>[:delay=MS][@HOST]: the n-th launch (1-based,
 * per process) of <kernel> reads bit 0 of its first argument's first byte flipped -- a
 * transient fault of that one kernel's read (the memory is restored when it returns);
 * with delay=MS it instead starts MS ms late, as on a GPU whose SMs are all busy; with
 * @HOST only in the processes of that simulated host. For testing what collscope does
 * when a GPU kernel computes a wrong result, or is slow. */
static struct {
    pthread_once_t once;
    char name[64];
    unsigned long n, delay_ms;
    atomic_ulong seen;
} kfault = { .once = PTHREAD_ONCE_INIT };

static void kfault_parse(void)
{
    const char *e = getenv("COLLSCOPE_SIM_KERNEL_FAULT"), *c = e ? strchr(e, ':') : NULL;
    if (!c || (size_t)(c - e) >= sizeof kfault.name) return;
    memcpy(kfault.name, e, (size_t)(c - e));
    kfault.name[c - e] = 0;
    char *end;
    kfault.n = strtoul(c + 1, &end, 10);
    if (!strncmp(end, ":delay=", 7)) kfault.delay_ms = strtoul(end + 7, &end, 10);
    if (*end == '@') {
        if (strcmp(end + 1, simcuda_hostname())) kfault.n = 0;   /* another host's fault */
    } else if (*end) {
        fprintf(stderr, "simcuda: COLLSCOPE_SIM_KERNEL_FAULT=%s: expected <kernel>:<n>[:delay=MS][@HOST]\n", e);
        kfault.n = 0;
    }
}

static void kcall_run(void *p)
{
    struct kcall *k = p;
    unsigned char *flip = NULL;
    pthread_once(&kfault.once, kfault_parse);
    if (kfault.n && k->name && !strcmp(k->name, kfault.name) && k->params && k->params[0] &&
        atomic_fetch_add(&kfault.seen, 1ul) + 1ul == kfault.n) {
        if (kfault.delay_ms) {
            struct timespec ts = { (time_t)(kfault.delay_ms / 1000), (long)(kfault.delay_ms % 1000) * 1000000L };
            if (simcuda_model_on()) simcuda_model_advance((uint64_t)kfault.delay_ms * 1000000u);
            else nanosleep(&ts, NULL);
        } else {
            flip = *(unsigned char **)k->params[0];
            if (flip) *flip ^= 1;
        }
    }
    k->fn(k->params, k->grid, k->block);
    if (flip) *flip ^= 1;
    sim_model_kernel();
}

int sim_kernel_item(const struct unit *u, const void **fn, const char **name)
{
    if (u->fn != kcall_run) return 0;
    const struct kcall *k = u->arg;
    *fn = (const void *)(uintptr_t)k->fn;
    *name = k->name;
    return 1;
}

static void kcall_free(void *p)
{
    struct kcall *k = p;
    free(k->store);
    free(k);
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* the stream/graph unit body of one launch of f: arguments copied as described in simcuda.h */
static CUresult kcall_build(struct CUfunc_st *f, const unsigned grid[3], const unsigned block[3],
                            void **params, void **extra, struct kcall **out)
{
    struct kcall *k = calloc(1, sizeof *k);
    if (!k) return CUDA_ERROR_OUT_OF_MEMORY;
    k->fn = f->fn;
    k->name = f->name;
    memcpy(k->grid, grid, sizeof k->grid);
    memcpy(k->block, block, sizeof k->block);

    const void *buf = NULL;
    size_t bufsize = 0;
    if (extra) {
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) bufsize = *(size_t *)extra[i + 1];
            else { free(k); return CUDA_ERROR_INVALID_VALUE; }
        }
        if (!buf) { free(k); return CUDA_ERROR_INVALID_VALUE; }
    }
    if (f->argsizes) {
        /* argument values are copied at launch, like the real driver does */
        size_t n = 0, total = 0;
        while (f->argsizes[n]) {
            size_t a = f->argsizes[n] >= 8 ? 8 : f->argsizes[n];
            total = align_up(total, a) + f->argsizes[n];
            n++;
        }
        if (!params && !buf && n) { free(k); return CUDA_ERROR_INVALID_VALUE; }
        k->store = calloc(1, n * sizeof(void *) + total + 8);
        if (!k->store) { free(k); return CUDA_ERROR_OUT_OF_MEMORY; }
        k->params = k->store;
        char *data = (char *)k->store + n * sizeof(void *);
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            size_t a = f->argsizes[i] >= 8 ? 8 : f->argsizes[i];
            off = align_up(off, a);
            const void *src = params ? params[i] : (const char *)buf + off;
            if (!params && off + f->argsizes[i] > bufsize) { kcall_free(k); return CUDA_ERROR_INVALID_VALUE; }
            memcpy(data + off, src, f->argsizes[i]);
            k->params[i] = data + off;
            off += f->argsizes[i];
        }
    } else if (buf) {
        k->store = malloc(sizeof(void *) + bufsize + 1);
        if (!k->store) { free(k); return CUDA_ERROR_OUT_OF_MEMORY; }
        k->params = k->store;
        memcpy((char *)k->store + sizeof(void *), buf, bufsize);
        k->params[0] = (char *)k->store + sizeof(void *);
    } else {
        k->params = params;   /* no argument sizes known: the caller's array is used as is */
    }
    *out = k;
    return CUDA_SUCCESS;
}

CUresult kernel_launch(struct CUfunc_st *f, const unsigned grid[3], const unsigned block[3],
                       struct CUstream_st *s, void **params, void **extra)
{
    struct kcall *k;
    CUresult r = kcall_build(f, grid, block, params, extra, &k);
    if (r != CUDA_SUCCESS) return r;
    struct unit u = { .kind = U_FN, .fn = kcall_run, .arg = k, .free_arg = kcall_free };
    r = stream_submit(s, &u, NULL);
    if (r != CUDA_SUCCESS) kcall_free(k);
    return r;
}

/* a kernel node: the launch unit appended to the graph (it runs in insertion order) */
CUresult graph_add_kernel_node(CUgraphNode *out, CUgraph g, struct CUfunc_st *f, const unsigned grid[3],
                               const unsigned block[3], void **params, void **extra)
{
    if (!out || !reg_ok(g, OBJ_GRAPH)) return CUDA_ERROR_INVALID_VALUE;
    struct kcall *k;
    CUresult r = kcall_build(f, grid, block, params, extra, &k);
    if (r != CUDA_SUCCESS) return r;
    struct unit u = { .kind = U_FN, .fn = kcall_run, .arg = k, .free_arg = kcall_free };
    pthread_mutex_lock(&g_lock);
    *out = nodelist_append(g->nl, &u);
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}
