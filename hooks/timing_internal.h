/* hooks/timing_internal.h: what GPU timing's two files share: the per-context event pool
 * (hooks/timing.c owns the pools and the hot path that takes events from them;
 * hooks/timing_harvest.c refills them, keeps their clock anchors and completes records on the
 * harvest thread). */
#ifndef COLLSCOPE_TIMING_INTERNAL_H
#define COLLSCOPE_TIMING_INTERNAL_H
#include "timing.h"
#include "cuda_driver.h"
#include "stats/queue.h"

#define POOL_CAP 65536 /* events */
#define POOL_PREFILL 1024
#define POOL_LOW 1024
#define POOL_BATCH 256

/* The pool holds free events in pairs (an op takes a start and an end event at once);
 * released events come back one at a time: one waits in `half` for its partner. */
struct ev_pair {
  uint64_t a, b;
};
struct cs_evpool {
  _Atomic(CUcontext) ctx;
  _Atomic int ready;
  struct cs_queue q;     /* free CUevents, struct ev_pair items */
  _Atomic uint64_t half; /* a free event without its partner yet (0: none) */
  _Atomic size_t created;
  /* anchor (harvest thread only) */
  CUstream anchor_stream;
  CUevent anchor_ev;
  int64_t anchor_ns;
  int64_t anchor_mono;
};

/* the pools created so far (*n of them); pools are never removed (fork in the child clears
 * them all) */
struct cs_evpool *cs_evpools(int *n);
/* ctx's pool, NULL when it has none */
struct cs_evpool *cs_evpool_find(uint64_t ctx);
/* up to n new events into p (its context current) */
void cs_evpool_fill(struct cs_evpool *p, int n);
/* the timing plugin the shim handed over (or the one that wants nothing) */
const struct cs_timing_plugin *cs_timing_plugin_current(void);

#endif
