/* hooks/online_state.h: what the two halves of the online exchange share -- the set-up
 * (hooks/online_setup.c) and the feed,
 * exchange thread and shutdown (hooks/online_exchange.c): the feature's state and its feed items.
 * Protocol: hooks/online_exchange.h. Only hooks/online*.c include it. */
#ifndef COLLSCOPE_ONLINE_STATE_H
#define COLLSCOPE_ONLINE_STATE_H
#include "online_exchange.h"

#include <nccl.h>
#include <pthread.h>
#include <time.h>

#include "collscope/compute_gap.h"
#include "collscope/online.h"
#include "cuda_driver.h"

enum { ON_UNSET = 0,
       ON_SETUP,
       ON_RUNNING,
       ON_OFF };

#define FEED_CAP 4096u /* harvest -> exchange thread (single producer, single consumer) */
#define DRAIN_MS 2000  /* at shutdown: how long the exchanges already due may take */
/* the most the job's thread waits for collscope's thread at shutdown: the drain, then an
 * abort of collscope's communicator (NCCL's abort joins the init thread of a pending one) */
#define STOP_WAIT_MS (DRAIN_MS + 1000)
#define FINAL_MAX 4 /* at shutdown: exchanges after the due ones (see exchange_main) */

#define ONLINE_P2P_COMMS 64 /* communicators whose Send/Recv bytes are tracked (power of two) */

struct feed_item {
  int kind; /* 1 op, 2 sdc */
  union {
    struct cs_online_op op;
    struct cs_online_sdc sdc;
  } u;
};

struct cs_online_hook {
  _Atomic int state;
  void *parent;           /* the user's world communicator */
  uint64_t parent_id;     /* its collscope id (the hooks may route a call to another comm) */
  _Atomic uint64_t colls; /* collectives called on it (P2P counts differ between ranks) */
  ncclComm_t own;
  int rank, n;
  unsigned every, stride;
  CUcontext ctx;
  CUstream stream;
  CUdeviceptr dwire;            /* one round, reduced in place */
  struct cs_online_wire *hwire; /* pinned: this rank's contribution, then the result */
  pthread_t th;
  bool th_running;
  bool th_abandoned;              /* did not stop within STOP_WAIT_MS: still owns `own` and `stream` */
  _Atomic int stop;               /* 1: leave now; 2: run the exchanges due, then leave */
  _Atomic int64_t drain_deadline; /* CLOCK_MONOTONIC ns bound of a drain */
  _Atomic uint64_t trigger;       /* exchanges due (world collectives / K) */
  uint64_t done;
  struct cs_online_rank *st; /* protocol state (analysis/online_eval.c) */
  /* feed */
  struct feed_item *feed;
  _Atomic uint32_t head, tail;
  _Atomic uint32_t feed_lost;
  struct cs_gap_tracker gaps; /* harvest thread: compute gaps per (comm, stream) */
  struct {
    uint64_t comm, bytes;
    bool used;
  } p2p[ONLINE_P2P_COMMS];  /* harvest thread: Send/Recv bytes per comm since its previous collective */
  uint64_t p2p_untracked;   /* Send/Recv with no room there (their collectives ship 0 bytes) */
  uint32_t reduced_backlog; /* the last exchange: most entries any rank still had queued */
};
extern struct cs_online_hook cs_on; /* hooks/online_exchange.c */

static inline void cs_online_sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Every change of cs_on.state but the claim (ON_UNSET -> ON_SETUP) goes through here:
 * it keeps the wrappers' gate (cs_online_running, hooks.h) equal to state == ON_RUNNING. */
static inline void cs_online_set_state(int s) {
  atomic_store(&cs_on.state, s);
  atomic_store(&cs_online_running, s == ON_RUNNING);
}
static inline void cs_online_off(void) { cs_online_set_state(ON_OFF); }
static inline bool cs_online_stop_is_shutdown(void) { return atomic_load(&cs_on.stop) != 0; }

/* hooks/online_exchange.c: start the exchange thread (false: it could not be started) */
bool cs_online_start_thread(void);
/* hooks/online_setup.c: on that thread, before any exchange: collscope's own communicator
 * and buffers (false: not ready, one line logged, the feature off) */
bool cs_online_own_setup(void);

#endif
