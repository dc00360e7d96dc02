/* hooks/thread_state.c: the per-thread state (thread_state.h), the event sample's per-row
 * counts the job's threads share (timing.h), and the park of job threads while
 * COLLSCOPE_SDC_ACTION=abort ends the process. */
#include "thread_state.h"
#include "timing.h"
#include <unistd.h>

/* (last_comm starts at an entry that matches nothing: the hot path tests no NULL) */
__thread struct cs_tls cs_tls = {.last_comm = &cs_comm_none};

/* the event sample's per-row counts of timed ops (timing.h cs_op_row_wants_events) */
_Atomic uint64_t cs_row_counts[CS_ROW_SLOTS];

/* The row of hash h was not in its first slot: its own slot among the next ones, or a free
 * one it takes (count 1), or -- every slot another row's -- its first slot, taken over. An
 * empty collective's row (0 bytes) gets none: no events for it. */
__attribute__((noinline)) bool cs_op_row_probe(uint64_t h, uint64_t bytes) {
  if (!bytes) return false;
  uint64_t tag = h | 15u;
  size_t first = (size_t)(h >> 52);
  for (size_t k = 0; k < CS_ROW_PROBES; k++) {
    _Atomic uint64_t *w = &cs_row_counts[(first + k) & (CS_ROW_SLOTS - 1)];
    uint64_t v = atomic_load_explicit(w, memory_order_relaxed);
    if ((v | 15u) == tag) {
      if ((v & 15u) >= CS_ROW_TIMED) return false;
      atomic_compare_exchange_strong_explicit(w, &v, v + 1, memory_order_relaxed, memory_order_relaxed);
      return true;
    }
    if (v == 0) {
      atomic_compare_exchange_strong_explicit(w, &v, tag - 14u, memory_order_relaxed, memory_order_relaxed);
      return true;
    }
  }
  _Atomic uint64_t *w = &cs_row_counts[first];
  atomic_store_explicit(w, tag - 14u, memory_order_relaxed); /* count 1 */
  return true;
}

void cs_park_begin(void) {
  cs_tls.park_exempt = 1;
  atomic_store(&cs_st.park_since, cs_now_ns(CLOCK_MONOTONIC));
  atomic_store(&cs_st.park, 1);
}

void cs_park(void) {
  if (cs_tls.park_exempt) return;
  for (;;) {
    usleep(10000);
    if (cs_now_ns(CLOCK_MONOTONIC) - atomic_load(&cs_st.park_since) > CS_PARK_MAX_S * 1000000000LL)
      _exit(CS_SDC_ABORT_STATUS);
  }
}
