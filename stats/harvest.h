/* stats/harvest.h: the work the layers above hand the harvest thread (stats/harvest.c).
 * The harvest thread drains the record queue, finishes each record, writes it (dump file,
 * stats ring) and flushes; what "finished" means for a record -- GPU events read, SDC
 * results copied, the NCCL profiler's span collected -- belongs to the layers that
 * started that work, so they register it here at load (shim/wiring.c), in the order
 * given there. stats/ calls nothing of hooks/ or shim/ by name. */
#ifndef COLLSCOPE_STATS_HARVEST_H
#define COLLSCOPE_STATS_HARVEST_H
#include "core.h"
#include "queue.h"

/* cs_record_push (core.h) inlined into the hot path: the record queue and whether it is
 * set up (stats/harvest.c; cs_rq_ok is set once, before recording starts). */
extern struct cs_queue cs_rq;
extern bool cs_rq_ok;
static inline __attribute__((always_inline)) bool cs_record_push_inline(const struct cs_record *r) {
  if (CS_LIKELY(cs_rq_ok && cs_queue_push_sized(&cs_rq, r, sizeof(*r)))) return true;
  atomic_fetch_add_explicit(&cs_st.drops, 1, memory_order_relaxed);
  return false;
}

struct cs_harvest_client {
  const char *name;
  /* Per pending record, clients in registration order until one returns false ("not
   * yet": the record stays pending and every client is asked again next pass). final:
   * the last pass at exit -- give up what is not done and return true. */
  bool (*complete)(struct cs_record *r, bool final);
  /* A finished record, after the dump file and the ring have it. */
  void (*finished)(const struct cs_record *r);
  /* Once a pass, after the records: may hand extra records (e.g. NCCL_NET link records)
   * to emit, which writes them to the dump file and the ring. */
  void (*pass)(bool final, void (*emit)(const struct cs_record *r));
  /* Once a loop of the running thread, after its pass (not during the final flush). */
  void (*tick)(void);
  /* Hang reports: 1 when the op's GPU work has started, 0 when it has not, -1 when the client
   * cannot tell (no start event). */
  int (*started)(const struct cs_record *r);
  /* Once, on the harvest thread as it starts, before its first pass (and so before the
   * dump's header is written: e.g. the health sampler's header fields). */
  void (*thread_start)(void);
};

/* Add a client (at most CS_HARVEST_CLIENTS; before cs_harvest_start). The struct must
 * outlive the process's use of it (a static). False when the table is full. */
#define CS_HARVEST_CLIENTS 8
bool cs_harvest_register(const struct cs_harvest_client *c);

/* How many pending ops stopped holding their communicator's later, finished ops (more than
 * the bound held behind one; stats/harvest.c "Order"): each is written out of seq order. */
uint64_t cs_harvest_order_breaks(void);

#endif
