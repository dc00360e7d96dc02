/* shim/init.c: process life cycle of collscope. The constructor only connects the
 * layers (shim/wiring.c) and reads the environment; the first intercepted call does the real set-up (dump file, queue,
 * harvest thread, termination signal handlers); exit and termination signals flush; fork
 * gives the child a clean slate. Every failure leaves the job in pure pass-through. */
#include "cs_internal.h"
#include "hooks/cuda_driver.h"
#include "hooks/gpu_ident.h"
#include "hooks/online.h"
#include "hooks/timing.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int init_state; /* 0 = not yet, 1 = in progress, 2 = done */
static _Atomic int exit_registered;

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

/* ---- termination signals ----
 * SIGTERM, SIGINT and SIGHUP (what Slurm, torchrun and a terminal send first) would end the
 * job before the harvest thread wrote its last records and the footer. collscope's handler
 * (async-signal-safe throughout) stops recording, has the harvest thread write everything
 * queued and the footer (at most CS_TERM_FLUSH_MS), puts the job's previous disposition
 * back and sends the signal again with its original siginfo: when the handler returns, the
 * job's own handler or the default action runs as it would have without collscope, so the
 * job's exit status is unchanged. Installed once per process at set-up, over SIG_DFL or a
 * handler, never over SIG_IGN. A handler the job installs later replaces collscope's: that
 * signal is then the job's alone (the footer is written only if the job exits via exit()). */
#define CS_TERM_FLUSH_MS 2000
static const int term_sigs[] = {SIGTERM, SIGINT, SIGHUP};
#define N_TERM ((int)(sizeof term_sigs / sizeof term_sigs[0]))
static struct sigaction term_prev[N_TERM];
static _Atomic int term_installed;

static void on_term_signal(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  int saved_errno = errno;
  atomic_store(&cs_st.ready, 0); /* calls from here on pass through */
  cs_harvest_final_from_signal(CS_TERM_FLUSH_MS);
  for (int k = 0; k < N_TERM; k++)
    if (term_sigs[k] == sig) sigaction(sig, &term_prev[k], NULL);
  /* pending until this handler returns (sig is blocked while it runs) */
  if (!si || syscall(SYS_rt_tgsigqueueinfo, (long)getpid(), (long)syscall(SYS_gettid), (long)sig, si) != 0)
    raise(sig);
  errno = saved_errno;
}

static void install_term_handlers(void) {
  if (atomic_exchange(&term_installed, 1)) return; /* a forked child keeps the parent's */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_term_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int k = 0; k < N_TERM; k++) sigaddset(&sa.sa_mask, term_sigs[k]);
  for (int k = 0; k < N_TERM; k++) {
    struct sigaction cur;
    if (sigaction(term_sigs[k], NULL, &cur) != 0) continue;
    if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN) continue; /* nohup & co. */
    term_prev[k] = cur;                                                      /* in place before the handler can run */
    if (sigaction(term_sigs[k], &sa, &cur) == 0) term_prev[k] = cur;
  }
}

static void do_init(void) {
  cs_st.pid = getpid();
  if (cs_cfg.disabled) return;
  if (cs_cfg.timing) cs_driver_load();
  if (!cs_harvest_start()) return;
  if (!atomic_exchange(&exit_registered, 1)) atexit(at_exit);
  atomic_store_explicit(&cs_st.ready, 1, memory_order_release);
  install_term_handlers();
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
  cs_gpu_ident_atfork_child();
  atomic_store(&cs_st.drops, 0);
  atomic_store(&cs_st.timing_lost, 0);
  /* re-initialise lazily in the child if the parent was recording */
  atomic_store(&init_state, was_ready ? 0 : 2);
}

__attribute__((constructor)) static void cs_constructor(void) {
  cs_wiring_connect();
  cs_config_load();
  /* forced profiler timing: every eligible op asks the plugin, loaded or not */
  if (cs_cfg.timing_mode == CS_TMODE_PROFILER) cs_timing_plugin_live();
  pthread_atfork(NULL, NULL, atfork_child);
}
