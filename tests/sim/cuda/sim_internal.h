/* tests/sim/cuda/sim_internal.h: private structures of the simulated GPU (libcuda.so.1).
 * Only the driver-side sources include this; everything declared here is hidden. */
#ifndef COLLSCOPE_SIM_INTERNAL_H
#define COLLSCOPE_SIM_INTERNAL_H
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include "simcuda.h"

#define SIM_HIDDEN __attribute__((visibility("hidden")))
#define SIM_MAX_DEVICES 64

enum sim_objtype {
    OBJ_NONE = 0, OBJ_STREAM = 0x5354524d, OBJ_EVENT = 0x45564e54, OBJ_CTX = 0x43545854,
    OBJ_MODULE = 0x4d4f444c, OBJ_FUNC = 0x46554e43, OBJ_GRAPH = 0x47525048,
    OBJ_GEXEC = 0x47455845, OBJ_NODE = 0x4e4f4445
};

/* fault: CUresult of a sticky device fault (0 none), set once with __atomic builtins. Only a
 * primary context's is used: streams belong to a device, and the runtime uses its primary
 * context, so a fault is recorded there and every stream and event of the device reports it. */
struct CUctx_st { uint32_t type; int device; int primary; int fault; };

/* one unit of stream work; also the body of a graph node */
enum unit_kind {
    U_FN = 1,       /* fn(arg) */
    U_REC,          /* event record: complete ev generation gen */
    U_WAITEV,       /* block until ev generation gen completed */
    U_WAITSTREAM,   /* block until stream ws completed seq wseq (legacy-stream sync) */
    U_GRAPH,        /* replay an executable graph */
    U_NOP           /* captured internal event record / dependency: nothing to do */
};

struct nodelist;

struct unit {
    int kind;
    simcuda_fn fn;
    void *arg;
    simcuda_fn free_arg;
    CUevent ev;
    uint64_t gen;
    struct CUstream_st *ws;
    uint64_t wseq;
    struct nodelist *nl;   /* U_GRAPH */
    uint64_t *gens;        /* U_GRAPH: per-node generation of external records */
    CUevent *evs;          /* U_GRAPH: per-node event set on the executable for this launch
                            * (cuGraphExecEventRecordNodeSetEvent), NULL or a NULL entry: the
                            * node's own; each entry holds a reference */
    unsigned stall_us;     /* slow-GPU fault attached after this unit */
    int external;          /* U_REC: CU_EVENT_RECORD_EXTERNAL; U_WAITEV: CU_EVENT_WAIT_EXTERNAL */
    int app_fn;            /* U_FN: an application's host function (its sleeps are GPU time) */
    uint64_t not_before;   /* modeled clock: the host's virtual time when enqueued */
};

struct item {
    struct item *next;
    uint64_t seq;
    struct unit u;
};

struct capture;

struct CUstream_st {
    uint32_t type;
    int device;
    unsigned flags;
    int priority;
    int kind;                      /* STREAM_USER, STREAM_LEGACY, STREAM_PTDS */
    unsigned long long id;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    struct item *head, *tail;
    struct item *running;
    uint64_t enq_seq, done_seq;
    int refs;
    int destroyed;
    int worker_started, worker_exited;
    unsigned stall_pending_us;     /* worker-side slow-GPU state */
    int stall_ev_allow;
    int hang_pending;              /* a GPU hang armed: the next counted unit never ends */
    uint64_t vt;                   /* modeled clock: the stream's virtual time (its worker's) */
    uint64_t vt_done;              /* vt when done_seq was last set (under mu) */
    uint64_t model_ops;            /* modeled sleeps so far (their jitter key) */
    /* under g_lock */
    struct capture *cap;
    struct CUgraphNode_st *cap_last;   /* last node this stream added to the capture */
    struct CUstream_st *all_next, *all_prev;
};

enum { STREAM_USER = 0, STREAM_LEGACY = 1, STREAM_PTDS = 2 };

struct CUevent_st {
    uint32_t type;
    unsigned flags;
    int device;
    int refs;                      /* under ev_mu */
    int destroyed;
    uint64_t rec_gen, done_gen;    /* under ev_mu */
    uint64_t ts_ns;
    uint64_t cap_id;               /* under g_lock; != 0: last recorded inside that capture */
    struct sim_ipc_event *ipc;     /* CU_EVENT_INTERPROCESS with a handle: shared state (ipc.c) */
    int ipc_fd;                    /* exporter: the memfd behind ipc, + 1 */
    int remote;                    /* opened with cuIpcOpenEventHandle: state is ipc's only */
};

/* An interprocess event's state, shared by the exporter and every process that opened its
 * handle: the low 32 bits of rec_gen/done_gen (futex words, compared modulo 2^32). */
struct sim_ipc_event { _Atomic uint32_t rec, done; };

struct CUgraphNode_st {
    uint32_t type;
    struct unit u;                 /* U_FN, U_REC (gen unused), U_WAITEV, U_NOP */
};

struct nodelist {
    int refs;                      /* under g_lock */
    size_t n, cap;
    struct CUgraphNode_st **nodes;
    size_t nchild, capchild;
    struct nodelist **children;    /* nested graph launches captured: refs held */
};

struct CUgraph_st { uint32_t type; struct nodelist *nl; };
/* evs (under g_lock, NULL until the first cuGraphExecEventRecordNodeSetEvent): nl->n events
 * that replace the event of an event record node in later launches, a reference each */
struct CUgraphExec_st { uint32_t type; struct nodelist *nl; CUevent *evs; };

struct capture {
    uint64_t id;
    int status;                    /* CU_STREAM_CAPTURE_STATUS_ACTIVE / _INVALIDATED */
    int mode;                      /* CUstreamCaptureMode */
    pthread_t owner;
    struct CUstream_st *origin;
    CUgraph graph;
    struct capture *next;
};

typedef void (*simkernel_fn)(void **params, const unsigned grid[3], const unsigned block[3]);

struct CUfunc_st {
    uint32_t type;
    simkernel_fn fn;
    const size_t *argsizes;        /* optional collscope_simkernel_<name>_argsizes, 0-terminated */
    struct CUmod_st *mod;
    struct CUfunc_st *next;
    char name[];
};

struct CUmod_st { uint32_t type; struct CUfunc_st *funcs; };

struct sim_alloc {
    uintptr_t base;
    size_t size;
    int kind;                      /* 1 device, 2 pinned host, 3 managed */
    int device;
    int owned;                     /* 0: cuMemHostRegister'ed range; SIM_OWN_* */
    unsigned flags;
    unsigned long long id;
    int ipc_fd;                    /* kind 1: memfd + 1 once exported by cuIpcGetMemHandle, else 0 */
};
#define SIM_OWN_HEAP 1             /* posix_memalign'ed (pinned host, managed) */
#define SIM_OWN_MAP 2              /* device memory: its own page-rounded mapping */
#define SIM_OWN_IPC 3              /* a mapping of another process's allocation (cuIpcOpenMemHandle) */

/* ---- model.c: the modeled clock (COLLSCOPE_SIM_CLOCK=model) ---- */
SIM_HIDDEN uint64_t sim_model_host_now(void);
SIM_HIDDEN void sim_model_host_observe(uint64_t t);   /* the host saw work done at t */
SIM_HIDDEN void sim_model_after_sync(void);           /* hostdelay fault, after a host's sync */
/* hostwait.c: the calling thread is one of collscope's (named "collscope*": stats/core.c
 * cs_thread_start), whose synchronizes are not the job's host's */
SIM_HIDDEN int sim_thread_is_collscope(void);
SIM_HIDDEN void sim_model_note_seq(long long seq);    /* comm 0's collective seq done on this worker */
SIM_HIDDEN void sim_model_worker_enter(struct CUstream_st *s);
SIM_HIDDEN void sim_model_app_fn(int on);
SIM_HIDDEN void sim_model_copy(size_t n);
SIM_HIDDEN void sim_model_kernel(void);

/* ---- driver_core.c ---- */
SIM_HIDDEN extern pthread_mutex_t g_lock;
SIM_HIDDEN void sim_init(void);
SIM_HIDDEN int sim_ndev(void);
SIM_HIDDEN CUcontext sim_primary_ctx(int dev);
SIM_HIDDEN CUcontext sim_ctx_current(void);
SIM_HIDDEN void sim_ctx_set_current(CUcontext c);
SIM_HIDDEN int sim_ctx_push(CUcontext c);
SIM_HIDDEN CUcontext sim_ctx_pop(void);
SIM_HIDDEN int sim_cur_dev(void);
SIM_HIDDEN uint64_t sim_now_ns(void);
SIM_HIDDEN CUresult sim_dev_fault(int dev);   /* the device's sticky fault, CUDA_SUCCESS if none */

SIM_HIDDEN void reg_add(void *p, uint32_t type);
SIM_HIDDEN void reg_del(void *p);
SIM_HIDDEN int reg_ok(const void *p, uint32_t type);

/* streams: ptds = resolve NULL to the per-thread default stream */
SIM_HIDDEN CUresult stream_resolve(CUstream in, int ptds, struct CUstream_st **out);
SIM_HIDDEN CUresult stream_create(int dev, unsigned flags, int prio, struct CUstream_st **out);
SIM_HIDDEN CUresult stream_destroy(CUstream s);
SIM_HIDDEN CUresult stream_submit(struct CUstream_st *s, struct unit *u, uint64_t *seq_out);
SIM_HIDDEN CUresult stream_sync(struct CUstream_st *s);
SIM_HIDDEN CUresult stream_query(struct CUstream_st *s);
SIM_HIDDEN CUresult device_sync(int dev);
SIM_HIDDEN void stream_wait_seq(struct CUstream_st *s, uint64_t seq);
SIM_HIDDEN void stream_stall_after(struct CUstream_st *s, unsigned us);
SIM_HIDDEN struct CUstream_st *sim_model_worker(void);   /* the calling stream worker's stream, or NULL */

/* events */
SIM_HIDDEN CUresult event_create(unsigned flags, struct CUevent_st **out);
SIM_HIDDEN CUresult event_destroy(CUevent e);
SIM_HIDDEN CUresult event_record(CUevent e, struct CUstream_st *s, unsigned flags);
SIM_HIDDEN CUresult event_query(CUevent e);
SIM_HIDDEN CUresult event_sync(CUevent e);
SIM_HIDDEN CUresult event_elapsed(float *ms, CUevent a, CUevent b);
SIM_HIDDEN CUresult stream_wait_event(struct CUstream_st *s, CUevent e, unsigned flags);
SIM_HIDDEN void event_ipc_attach(CUevent e, struct sim_ipc_event *page, int fd, int remote);
/* ipc.c */
SIM_HIDDEN void ipc_event_publish(struct sim_ipc_event *p, uint64_t rec, uint64_t done);
SIM_HIDDEN int ipc_event_done(const struct sim_ipc_event *p, uint32_t target);
SIM_HIDDEN void ipc_event_wait(struct sim_ipc_event *p, uint32_t target);
SIM_HIDDEN void ipc_event_unmap(struct sim_ipc_event *p, int fd);

/* capture and graphs */
SIM_HIDDEN CUresult capture_begin(struct CUstream_st *s, int mode);
SIM_HIDDEN CUresult capture_end(struct CUstream_st *s, CUgraph *g);
SIM_HIDDEN CUresult capture_info(struct CUstream_st *s, CUstreamCaptureStatus *st, cuuint64_t *id,
                                 CUgraph *g, const CUgraphNode **deps, size_t *ndeps);
SIM_HIDDEN CUresult capture_unsafe_call(void);
SIM_HIDDEN CUstreamCaptureMode capture_exchange_mode(CUstreamCaptureMode m);
SIM_HIDDEN CUresult graph_create(CUgraph *g);
SIM_HIDDEN CUresult graph_destroy(CUgraph g);
SIM_HIDDEN CUresult graph_instantiate(CUgraphExec *e, CUgraph g);
SIM_HIDDEN CUresult graph_exec_destroy(CUgraphExec e);
SIM_HIDDEN CUresult graph_launch(CUgraphExec e, struct CUstream_st *s);
SIM_HIDDEN CUresult graph_exec_set_event(CUgraphExec x, CUgraphNode node, CUevent e);
SIM_HIDDEN CUresult graph_nodes(CUgraph g, CUgraphNode *nodes, size_t *n);
SIM_HIDDEN CUresult graph_add_host_node(CUgraphNode *out, CUgraph g, CUhostFn fn, void *arg);
SIM_HIDDEN CUresult graph_add_kernel_node(CUgraphNode *out, CUgraph g, struct CUfunc_st *f, const unsigned grid[3],
                                         const unsigned block[3], void **params, void **extra);

/* memory */
SIM_HIDDEN int alloc_find(const void *p, struct sim_alloc *out);
SIM_HIDDEN void alloc_add(void *p, size_t size, int kind, int dev, int owned, unsigned flags);
SIM_HIDDEN int alloc_remove(void *p, int kind_mask, struct sim_alloc *out);
SIM_HIDDEN size_t alloc_used(int dev);
SIM_HIDDEN void alloc_free_device(int dev);
SIM_HIDDEN void alloc_release(const struct sim_alloc *a);   /* unmap/free a removed allocation */
SIM_HIDDEN size_t alloc_map_len(size_t size);              /* size rounded up to whole pages */
SIM_HIDDEN int alloc_set_ipc_fd(uintptr_t base, int fd);   /* 0 ok; -1 not there / already set */

/* kernels */
SIM_HIDDEN CUresult kernel_launch(struct CUfunc_st *f, const unsigned grid[3], const unsigned block[3],
                                  struct CUstream_st *s, void **params, void **extra);

/* kstats.c: COLLSCOPE_SIM_KERNEL_STATS accounting (off unless the variable is set) */
SIM_HIDDEN extern int sim_kstats_on;
SIM_HIDDEN void sim_kstats_init(void);
SIM_HIDDEN void sim_kstats_fork_child(void);
SIM_HIDDEN void sim_kstats_label(const void *fn, const char *name);
SIM_HIDDEN void sim_kstats_run(const struct unit *u);
SIM_HIDDEN void sim_kstats_event_record(void); /* one successful cuEventRecord* call */
/* driver_core.c: is this item a kernel launch (then its host function and name)? */
SIM_HIDDEN int sim_kernel_item(const struct unit *u, const void **fn, const char **name);
/* driver_api.c: names of its function items for the accounting */
SIM_HIDDEN void sim_api_kstats_labels(void);

SIM_HIDDEN const char *sim_cu_error_name(CUresult r);
SIM_HIDDEN const char *sim_cu_error_string(CUresult r);

#endif
