/* shim/init.c: process life cycle of collscope. The constructor only connects the
 * layers (shim/wiring.c) and reads the environment; the first intercepted call does the real set-up (dump file, queue,
 * harvest thread, termination signal handlers); exit and termination signals flush; fork
 * gives the child a clean slate. Every failure leaves the job in pure pass-through. */
#include "cs_internal.h"
#include "hooks/cuda_driver.h"
#include "hooks/gpu_ident.h"
#include "hooks/online_exchange.h"
#include "hooks/timing.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic int init_state; /* 0 = not yet, 1 = in progress, 2 = done */
static _Atomic int exit_registered;

/* ---- the finaliser: exactly once, however many threads end the process ----
 * glibc's exit() runs the exit handlers one at a time, but releases its lock while a handler
 * runs: another thread calling exit() (or returning from main) meanwhile runs the handlers
 * still listed, the libraries' destructors and _exit(), ending the process under the first
 * one's feet, with the dump still in its buffer. So exit_gate is registered CS_EXIT_GATES
 * times, back to back: the first thread to take a copy finalises, and any other thread that
 * takes a copy parks there, as exit() does in later glibc versions: until the finaliser is
 * done (at most CS_EXIT_WAIT_MS), then at most CS_EXIT_LINGER_MS more while that thread ends
 * the process. Up to CS_EXIT_GATES threads can end the process together.
 * A thread that took a copy never returns into the handler loop it came from: glibc 2.36
 * frees a drained block of the handler list even while another thread is inside one of its
 * handlers, and that thread would then read the freed block. It calls exit() again instead
 * (glibc runs such a nested exit() from the current head of the list; on_exit hands the
 * status over). The wait is async-signal-safe (atomic loads, clock_gettime, nanosleep), and a
 * thread that re-enters exit() from a signal handler while finalising does not wait for
 * itself (its exit goes on: that dump ends where the finaliser was). */
#define CS_EXIT_GATES 32
#define CS_EXIT_WAIT_MS 10000
#define CS_EXIT_LINGER_MS 1000
static _Atomic long fin_owner; /* tid of the thread that finalises; 0 = not yet */
static _Atomic int fin_done;

static void finalise(void) {
  if (cs_online_aborting()) {
    /* COLLSCOPE_SDC_ACTION=abort: the exchange thread is writing the dump and will exit
     * with CS_SDC_ABORT_STATUS; the job's own exit (e.g. after its comm was aborted)
     * must not replace that status */
    for (int i = 0; i < 1000; i++) usleep(10000);
    _exit(CS_SDC_ABORT_STATUS);
  }
  atomic_store(&cs_st.ready, 0); /* late calls from other threads pass through */
  /* also when a signal's handler stopped recording first (abort() on another thread): its
   * flush may still be under way, and cs_harvest_stop finishes or awaits it */
  cs_online_shutdown();
  cs_harvest_stop(1000);
}

static long ms_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* another thread finalises: park until it is done, then while it ends the process */
static void park_exiting_thread(void) {
  struct timespec t0, nap = {0, 1000000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (!atomic_load(&fin_done) && ms_since(&t0) < CS_EXIT_WAIT_MS) nanosleep(&nap, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (ms_since(&t0) < CS_EXIT_LINGER_MS) nanosleep(&nap, NULL);
}

static void exit_gate(int status, void *arg) {
  (void)arg;
  long self = (long)syscall(SYS_gettid), owner = 0;
  if (atomic_compare_exchange_strong(&fin_owner, &owner, self)) {
    finalise();
    atomic_store(&fin_done, 1);
    exit(status);
  }
  if (owner == self) return; /* the finaliser's nested exit, or a signal handler's exit during finalise */
  park_exiting_thread();
  exit(status);
}

/* ---- termination signals ----
 * SIGTERM, SIGINT and SIGHUP (what Slurm, torchrun and a terminal send first), and SIGABRT
 * (abort(): a failed check, std::terminate, also while another thread is inside exit())
 * would end the job before the harvest thread wrote its last records and the footer.
 * collscope's handler (async-signal-safe throughout) stops recording, has the harvest thread write everything
 * queued and the footer (at most CS_TERM_FLUSH_MS), puts the job's previous disposition
 * back and sends the signal again with its original siginfo: when the handler returns, the
 * job's own handler or the default action runs as it would have without collscope, so the
 * job's exit status is unchanged. Installed once per process at set-up, over SIG_DFL or a
 * handler, never over SIG_IGN. A handler the job installs later replaces collscope's: that
 * signal is then the job's alone (the footer is written only if the job exits via exit()). */
#define CS_TERM_FLUSH_MS 2000
static const int term_sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGABRT};
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
  if (!atomic_exchange(&exit_registered, 1)) /* CS_EXIT_GATES copies: see exit_gate */
    for (int i = 0; i < CS_EXIT_GATES; i++) on_exit(exit_gate, NULL);
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
  atomic_store(&fin_owner, 0); /* the child finalises its own recording */
  atomic_store(&fin_done, 0);
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
