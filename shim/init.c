/* shim/init.c: process life cycle of collscope. The constructor only reads the
 * environment; the first intercepted call does the real set-up (dump file, queue,
 * harvest thread); exit flushes; fork gives the child a clean slate. Every failure
 * leaves the job in pure pass-through. */
#include "cs_internal.h"
#include "hooks/cuda_driver.h"
#include "hooks/online.h"
#include "hooks/timing.h"
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

struct cs_state cs_st;
__thread struct cs_tls cs_tls;

static _Atomic int init_state; /* 0 = not yet, 1 = in progress, 2 = done */
static _Atomic int exit_registered;

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

static void at_exit(void) {
  if (cs_online_aborting()) {
    /* COLLSCOPE_SDC_ACTION=abort: the exchange thread is writing the dump and will exit
     * with CS_SDC_ABORT_STATUS; the job's own exit (e.g. after its comm was aborted)
     * must not replace that status */
    for (int i = 0; i < 1000; i++) usleep(10000);
    _exit(CS_SDC_ABORT_STATUS);
  }
  if (atomic_load(&cs_st.ready)) {
    atomic_store(&cs_st.ready, 0); /* late calls from other threads pass through */
    cs_online_shutdown();
    cs_harvest_stop(1000);
  }
}

static void do_init(void) {
  cs_st.pid = getpid();
  if (cs_cfg.disabled) return;
  if (cs_cfg.timing) cs_driver_load();
  if (!cs_harvest_start()) return;
  if (!atomic_exchange(&exit_registered, 1)) atexit(at_exit);
  atomic_store_explicit(&cs_st.ready, 1, memory_order_release);
}

void cs_ensure_init(void) {
  if (CS_LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&init_state, &expected, 1)) {
    int saved_depth = cs_tls.depth;
    cs_tls.depth = 1; /* anything we call during set-up passes straight through */
    do_init();
    cs_tls.depth = saved_depth;
    atomic_store_explicit(&init_state, 2, memory_order_release);
  } else {
    while (atomic_load_explicit(&init_state, memory_order_acquire) != 2) sched_yield();
  }
}

static void atfork_child(void) {
  bool was_ready = atomic_load(&cs_st.ready);
  atomic_store(&cs_st.ready, 0);
  cs_harvest_atfork_child();
  cs_timing_atfork_child();
  cs_online_atfork_child();
  atomic_store(&cs_st.drops, 0);
  atomic_store(&cs_st.timing_lost, 0);
  /* re-initialise lazily in the child if the parent was recording */
  atomic_store(&init_state, was_ready ? 0 : 2);
}

__attribute__((constructor)) static void cs_constructor(void) {
  cs_config_load();
  pthread_atfork(NULL, NULL, atfork_child);
}
