/* tests/sim/nccl/simnccl.h: internals of the simulated libnccl.so.2 (not installed,
 * not part of any contract). See README.md for the behaviour it models. */
#ifndef SIMNCCL_H
#define SIMNCCL_H
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include "simcuda.h"
#include "simnccl_types.h"

#define SN_API __attribute__((visibility("default")))
/* real NCCL: ncclX is weak, pncclX strong, same address */
#define SN_ALIAS(name) extern __typeof(p##name) name __attribute__((weak, alias("p" #name), visibility("default")));

#define SN_MAXRANKS 256
#define SN_SLOTS 2                      /* slots per directed channel */
#define SN_SLOT_BYTES (512u * 1024u)    /* bytes per slot (multiple of 8) */
#define SN_MAGIC 0x53494d4e43434c32ull  /* "SIMNCCL2" */
#define SN_ID_MAGIC 0x636f6c6c73636f70ull

/* ---------------- shared memory segment (one per communicator) -------------------
 * Every field is valid when zero: the first rank to shm_open creates it zero-filled
 * and nobody has to initialise anything. */
struct sn_rankinfo {
  char host[64];
  int dev, pid, present, pad;   /* pad: the rank's RANK (or comm rank), set at join */
  uint64_t busid;
  uint64_t host_vt;             /* modeled clock: the joining thread's host time */
};
struct sn_board_entry { uint32_t gen, pad; int64_t v[4]; };
struct sn_slot_hdr { uint64_t len; uint32_t last, pad; uint64_t pad2[6]; };
/* head/tail: the data slots. vt_*: modeled clock (model.c), the sender's stamps of its sends
 * on this channel (when each one's data can have arrived), the last 3 by send count; posted
 * counts the sender's sends, taken the receiver's receives */
struct sn_p2p_stamp { _Atomic uint64_t tag, t; };
struct sn_chan_ctrl {
  _Atomic uint32_t head, tail;
  _Atomic uint32_t vt_posted, vt_taken;
  struct sn_p2p_stamp vt_stamp[3];
};
struct sn_shm {
  _Atomic uint32_t nranks;   /* CAS 0 -> n by the first joiner */
  _Atomic uint32_t joined;   /* futex: ranks that finished joining */
  _Atomic uint32_t error;    /* poison: an init error every joiner returns */
  _Atomic uint32_t abort;    /* futex: set by ncclCommAbort/Revoke on any rank */
  _Atomic uint32_t left;     /* ranks that destroyed; the last unlinks */
  _Atomic uint32_t board_bell;
  uint32_t pad[10];
  struct sn_rankinfo ranks[SN_MAXRANKS];
  _Atomic uint32_t doorbell[SN_MAXRANKS][16];   /* futex per rank, own cache line */
  struct sn_board_entry board[2][SN_MAXRANKS];
  /* NCCL_NET_PLUGIN edge set-up (netload.c): per rank, 0 = not yet */
  struct sn_net_board {
    _Atomic uint32_t state;    /* 1 no usable plugin, 2 plugin usable */
    _Atomic uint32_t hready;   /* receiver: 1 handle valid, 2 no listen */
    _Atomic uint32_t cready;   /* sender: 1 connected to next, 2 not */
    uint32_t pad;
    unsigned char handle[128];
  } net[SN_MAXRANKS];
  /* NCCL_NET_PLUGIN pairwise connection set-up (netload.c), [src][dst], 0 = not yet */
  struct sn_net_pair {
    _Atomic uint32_t hready;   /* receiver dst: 1 handle valid, 2 no listen */
    _Atomic uint32_t cready;   /* sender src: 1 connected, 2 not */
    uint32_t pad[2];
    unsigned char handle[128];
  } net_pair[SN_MAXRANKS][SN_MAXRANKS];
  /* modeled clock (model.c): each rank's arrival and cost of the comm's collective instance
   * `gen`, double-buffered like the split board; vt_bell is the futex */
  _Atomic uint32_t vt_bell;
  uint32_t vt_pad[15];
  struct sn_vt_entry { _Atomic uint32_t gen; uint32_t pad; uint64_t t, d; } vt_board[2][SN_MAXRANKS];
};
static inline size_t sn_chan_bytes(void) {
  return sizeof(struct sn_chan_ctrl) + SN_SLOTS * (sizeof(struct sn_slot_hdr) + SN_SLOT_BYTES);
}
static inline size_t sn_shm_bytes(int nranks) {
  size_t h = (sizeof(struct sn_shm) + 4095) & ~(size_t)4095;
  return h + (size_t)nranks * (size_t)nranks * sn_chan_bytes();
}

/* ---------------- the unique id ---------------------------------------------------- */
struct sn_id { uint64_t magic; uint64_t rnd[2]; uint32_t uid; uint32_t gen; char name[96]; };

/* ---------------- user reduction operators ------------------------------------------ */
struct sn_userop { int used; int dtype; int is_ptr; const void *ptr; unsigned char scalar[8]; };

/* ---------------- communicator ------------------------------------------------------ */
struct ncclComm {
  uint64_t start_magic;
  char shm_name[112];
  char comm_name[64];                  /* config.commName, copied as NCCL does (profiler init) */
  struct sn_shm *shm;
  size_t shm_size;
  int rank, nranks, dev, index;        /* index = creation index in this process */
  int fault_rank;                      /* RANK env if set, else comm rank */
  int *ring, *pos;                     /* ring[p] = rank at ring position p, pos[r] = p */
  int blocking;
  ncclConfig_t config;
  _Atomic int async_err;
  _Atomic int ready;                   /* 1 once joined (nonblocking init) */
  _Atomic int aborting;                /* ncclCommAbort called: a pending init stops */
  pthread_t init_thread;
  void *init_job;                      /* freed once init_thread is joined */
  int init_thread_live;
  pthread_mutex_t lock;
  uint64_t seq;                        /* collective + p2p calls (fault seq) */
  uint32_t issued;                     /* fused work items launched */
  _Atomic uint32_t done;               /* futex: fused work items finished */
  unsigned splits;                     /* host-side board generation */
  int revoked, finalized, destroyed;
  struct sn_userop *userops;
  int nuserops;
  _Atomic uint64_t *sent_bytes;        /* per destination rank, for link stats */
  void *prof_ctx; int prof_mask, prof_on; /* profiler plugin (profiler.c) */
  struct sn_net *net;                  /* NCCL_NET_PLUGIN (netload.c): NULL = no usable plugin */
  int net_init, net_setup;             /* plugin state published / ring edges set up */
  int check_pointers;                  /* NCCL_CHECK_POINTERS=1 at init (checks at the call) */
  _Atomic int faulted;                 /* a work item touched a NULL buffer: later items do nothing */
  uint32_t vt_gen;                     /* modeled clock: collective instances run (model.c) */
  uint64_t model_key;                  /* modeled clock: the members' job ranks hashed (0: not yet) */
  uint64_t p2p_ready;                  /* modeled clock: the item's receives' data lands (model.c) */
  _Atomic uint64_t init_vt;            /* modeled clock: the init caller's host time, then the
                                        * members' latest (comm_join_watch) */
  uint64_t end_magic;
};

/* ---------------- operations ------------------------------------------------------- */
enum sn_coll { SN_ALLREDUCE, SN_BROADCAST, SN_REDUCE, SN_ALLGATHER, SN_REDUCESCATTER,
               SN_ALLTOALL, SN_GATHER, SN_SCATTER, SN_SEND, SN_RECV };
struct sn_op {
  int coll;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  int dtype;
  int redop;                 /* SN_SUM.. */
  unsigned char scalar[8];   /* premul scalar in dtype */
  const void *scalar_ptr;    /* device scalar, read at execution */
  int scalar_dtype;
  int root;                  /* root or peer */
  cudaStream_t stream;
  uint64_t seq;
  int hang;
  int flip_out, flip_hop;    /* 1 if a flip fault targets this op */
  uint64_t flip_elem;
  int flip_bit;
  void *prof_h;              /* profiler plugin Coll/P2p event handle (profiler.c) */
  int prof_mask;                 /* the plugin's activation mask when it was enqueued */
};

/* The buffers an op reads or writes on this rank when count > 0 (what a kernel would touch):
 * the root's sendbuff only for Broadcast/Scatter, the root's recvbuff only for Reduce/Gather. */
static inline int sn_op_uses_send(const struct sn_op *op, int rank) {
  if (op->coll == SN_RECV) return 0;
  if (op->coll == SN_BROADCAST || op->coll == SN_SCATTER) return rank == op->root;
  return 1;
}
static inline int sn_op_uses_recv(const struct sn_op *op, int rank) {
  if (op->coll == SN_SEND) return 0;
  if (op->coll == SN_REDUCE || op->coll == SN_GATHER) return rank == op->root;
  return 1;
}

/* ---------------- functions shared between the .c files --------------------------- */
/* debug.c */
extern int sn_debug_level;   /* 0 none, 1 warn, 2 info */
void sn_debug_init(void);
void sn_warn(int dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sn_info(int dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* faults.c */
struct sn_fault {
  enum { SN_F_SLOW, SN_F_LINK, SN_F_FLIP, SN_F_HANG, SN_F_FAIL, SN_F_HOSTDELAY, SN_F_JITTER, SN_F_NIC } kind;
  int rank; long long seq; int comm; unsigned us; char a[64], b[64];
  unsigned long long elem; int bit; int at_hop; int code;
  long long from;            /* onset: acts on seq >= from (0: from the start) */
  long long every;           /* slow: only on seq from, from + every, ... (0: every seq) */
  long long until;           /* slow: only on seq < until (0: to the end): a transient slowdown */
  int compute;               /* slow:compute=P: the rank's compute (libcuda, cuda/model.c), no stall */
  int gpu;                   /* gpuhang: the GPU hangs in its work after seq - 1, before seq */
};
/* does fault f (with onset from= and period every=) act on seq? */
static inline int sn_fault_on(const struct sn_fault *f, long long seq) {
  if (seq < f->from || (f->until > 0 && seq >= f->until)) return 0;
  return f->every <= 0 || (seq - f->from) % f->every == 0;
}
void sn_faults_init(void);
extern struct sn_fault *sn_faults;
extern int sn_nfaults;
/* link: and nic: faults' extra latency (us) of an edge between two hosts for a transfer of
 * collective seq (-1: any onset); nic:pct= also scales the edge's bandwidth by *bw_scale */
unsigned sn_link_delay_us(const char *ha, const char *hb, long long seq, double *bw_scale);
int sn_link_class(const char *ha, const char *hb);   /* 0 same_host 1 same_leaf 2 cross_leaf */
const char *sn_leaf_of(const char *host);            /* COLLSCOPE_SIM_TOPOLOGY leaf, or NULL */
int sn_leaf_hosts(const char *leaf);                 /* hosts the map puts under that leaf */
void sn_linkstats_register(void);
void sn_linkstats_fold(struct ncclComm *c);
void sn_linkstats_track(struct ncclComm *c, int add);
/* comm.c */
int sn_comm_ok(struct ncclComm *c);
ncclResult_t sn_comm_check(struct ncclComm *c, const char *opname);
void sn_wake(_Atomic uint32_t *w);
void sn_wait(_Atomic uint32_t *w, uint32_t val);
void sn_wait_ns(_Atomic uint32_t *w, uint32_t val, long ns);   /* at most ns */
_Atomic uint32_t *sn_doorbell(struct ncclComm *c, int rank);
void sn_ring_bell(struct ncclComm *c, int rank);   /* wakes a sleeper of any kind */
#define SN_BELL_DATA 1                                 /* doorbell sleeper/ring kinds (comm.c) */
#define SN_BELL_SPACE 2
#define SN_BELL_ANY 3
void sn_ring_bell_for(struct ncclComm *c, int rank, int kind);
void sn_bell_wait(struct ncclComm *c, uint32_t val, int kind, long ns);   /* own doorbell; ns 0: no limit */
struct sn_chan_ctrl *sn_chan(struct ncclComm *c, int src, int dst);
struct sn_slot_hdr *sn_slot(struct sn_chan_ctrl *ch, uint32_t i);
void sn_comm_wait_idle(struct ncclComm *c);
ncclResult_t sn_comm_ensure_ready(struct ncclComm *c);
ncclResult_t sn_init_rank_dev(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank, int dev);
void *sn_job_thread(void *arg);
/* group.c: jobs that must run concurrently at the outermost ncclGroupEnd (init, split) */
struct sn_job {
  ncclResult_t (*fn)(struct sn_job *);
  void (*done)(struct sn_job *);          /* frees the job (may be NULL) */
  struct ncclComm *comm;                  /* comm being initialised (init jobs) */
  struct ncclComm *parent;                /* split / shrink */
  int color, key, *exclude, nexclude, is_shrink;
  ncclComm_t *newcomm;
  ncclConfig_t config; int has_config;
  int nonblocking;
  unsigned gen;                           /* split generation on the parent */
  ncclResult_t res;
  pthread_t th;
  struct sn_job *next;
};
int sn_group_add_job(struct sn_job *j);   /* 1 if queued (inside a group) */
ncclResult_t sn_group_start_internal(void);
ncclResult_t sn_group_end_internal(void);
/* group.c */
int sn_group_depth(void);
void sn_group_error(ncclResult_t r);
ncclResult_t sn_submit(struct ncclComm *c, struct sn_op *op);
/* profiler.c: NCCL_PROFILER_PLUGIN */
void sn_prof_comm_init(struct ncclComm *c);
void sn_prof_comm_fini(struct ncclComm *c);
void sn_prof_launch_start(struct ncclComm *c, struct sn_op *ops, int nops);
void sn_prof_launch_stop(struct ncclComm *c, void **hs, int n);
uint64_t sn_prof_now(void);
void sn_prof_kernels(struct ncclComm *c, struct sn_op *ops, int nops, uint64_t t0, uint64_t t1);
/* netload.c: NCCL_NET_PLUGIN; the ring edge to `next` / from `prev`, and pairwise transfers
 * between hosts, may go through it */
struct sn_p2p_dir {          /* one pairwise connection: this rank -> peer (send) or peer -> this rank */
  int state;                 /* SN_P2P_* once resolved, else a set-up step (netload.c) */
  void *comm, *mh, *lc;      /* plugin send/recv comm, its registration, listen comm (receiver) */
  unsigned char *buf;        /* staging: SN_SLOTS send slots, or 1 receive slot */
  void *req[SN_SLOTS];       /* send: isend per slot; receive: req[0] = the posted irecv */
  size_t len[SN_SLOTS];
  uint32_t head, posted, done;   /* send: pieces staged, posted (isend), completed */
};
struct sn_net {
  void *ctx, *scomm, *rcomm, *smh, *rmh;
  int next, prev, send_on, recv_on, recv_broken, failed;  /* failed: an isend/test error */
  int in_ring;               /* exec.c: set while a ring algorithm runs */
  unsigned char *bufs;       /* ring: SN_SLOTS send staging slots + 1 receive slot, SN_SLOT_BYTES + 64 each (lazy) */
  void *sreq[SN_SLOTS];      /* outstanding isend per staging slot */
  uint32_t shead;
  struct sn_p2p_dir *p2p;    /* pairwise: [2 * peer] send to peer, [2 * peer + 1] receive from peer */
};
void sn_net_setup(struct ncclComm *c);       /* once per comm, first ring op, on the stream worker */
void *sn_net_send_acquire(struct ncclComm *c);
int sn_net_send_commit(struct ncclComm *c, size_t len);
struct sn_slot_hdr *sn_net_recv_acquire(struct ncclComm *c);
int sn_net_drain(struct ncclComm *c);        /* complete outstanding sends (end of a ring op) */
void sn_net_close(struct ncclComm *c);       /* comm destroy: close the plugin's connections */
/* pairwise transfers (exec.c p2p_run); nothing here blocks beyond one plugin call */
enum { SN_P2P_SHM = 100, SN_P2P_NET, SN_P2P_BROKEN, SN_P2P_WAIT, SN_P2P_RETRY };
/* route of the pair this rank -> peer (send) or peer -> this rank: SN_P2P_SHM / _NET / _BROKEN
 * (accept failed after the sender connected: the transfer cannot complete), or, while the
 * lazy set-up is under way, SN_P2P_WAIT (waiting for the peer, which rings our doorbell) or
 * SN_P2P_RETRY (a plugin call to retry: poll) */
int sn_net_p2p_route(struct ncclComm *c, int peer, int send);
void *sn_net_p2p_send_acquire(struct ncclComm *c, int peer);   /* a free staging slot, or NULL */
void sn_net_p2p_send_commit(struct ncclComm *c, int peer, size_t len);
/* post staged pieces, test the oldest posted ones; *busy = pieces not yet completed.
 * Returns 1 if something moved, 0 if not, -1 on a plugin error */
int sn_net_p2p_send_progress(struct ncclComm *c, int peer, uint32_t *busy);
/* 1: a message arrived (*data, *len valid until the next call for this peer), 0: not yet,
 * -1: plugin error */
int sn_net_p2p_recv(struct ncclComm *c, int peer, const void **data, size_t *len);
/* exec.c */
void sn_exec_ops(struct ncclComm *c, struct sn_op *ops, int nops);
/* model.c: the modeled clock (COLLSCOPE_SIM_CLOCK=model). On the stream worker, after the
 * item's ops ran (data moved) with the stream's virtual time at v0 when it started: advance
 * the stream's virtual time to the item's modeled completion. */
void sn_model_item_done(struct ncclComm *c, const struct sn_op *ops, int nops, uint64_t v0);
/* the item's modeled cost in ns on this rank (speed and jitter applied) */
uint64_t sn_model_item_ns(struct ncclComm *c, const struct sn_op *ops, int nops);
/* P2P on the modeled clock: the sender stamps each Send when its item starts (its stream's
 * time + the op's transfer time) on the pair's channel before any of its data; the receiver
 * takes the stamp when the Recv's last piece is in, and the item completes no earlier */
void sn_model_p2p_post(struct ncclComm *c, const struct sn_op *send);
void sn_model_p2p_take(struct ncclComm *c, int peer);
#endif
