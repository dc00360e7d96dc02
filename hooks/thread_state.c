/* hooks/thread_state.c: the per-thread state (thread_state.h), the event sample's per-row
 * counts the job's threads share (timing.h), and the park of job threads while
 * COLLSCOPE_SDC_ACTION=abort ends the process. */
#include "thread_state.h"
#include "timing.h"
#include <unistd.h>

__thread struct cs_tls cs_tls;

/* the event sample's per-row counts of timed ops (timing.h cs_op_row_wants_events) */
_Atomic uint64_t cs_row_counts[CS_ROW_SLOTS];

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
