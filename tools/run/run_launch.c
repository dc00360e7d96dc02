/* tools/run/run_launch.c: `collscope run -n N`'s ranks (cli_run_launch): forks N ranks with
 * torchrun's environment (DESIGN.md "The CLI", launcher contract), each in its own process group with
 * stdin from /dev/null, then waits in one poll() loop that (a) forwards whole output lines
 * with a "[R] " prefix (--tag-output, tools/run/run_output.c), (b) reaps ranks (SIGCHLD through a
 * self-pipe), (c) forwards SIGINT/SIGTERM/..., and (d) runs the kill-on-fail grace timer.
 * Nothing spins: poll() sleeps until an event. Without -n: prepares the environment
 * (tools/run/run_env.c) and execvp()s an existing launcher. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collscope/hostlist.h"
#include "run_internal.h"

/* ------------------------------------------------------------ signals & state */

static int sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t sig_pending[NSIG];
static const int fwd_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
#define N_FWD ((int)(sizeof fwd_signals / sizeof fwd_signals[0]))

static int fwd_ignored[N_FWD]; /* ignored when we started (nohup): stays so in ranks */

static void on_signal(int sig) {
  int e = errno;
  if (sig > 0 && sig < NSIG) sig_pending[sig] = 1;
  if (sig_pipe[1] >= 0) {
    char c = (char)sig;
    ssize_t w = write(sig_pipe[1], &c, 1);
    (void)w;
  }
  errno = e;
}

struct rank {
  pid_t pid;
  int alive;
  int status;        /* raw wait status */
  int code;          /* exit code or 128+signal */
  int stopped_by_us; /* terminated by kill-on-fail */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void signal_ranks(struct rank *r, int n, int sig, int mark_stopped) {
  for (int i = 0; i < n; i++) {
    if (!r[i].alive) continue;
    if (mark_stopped) r[i].stopped_by_us = 1;
    /* the whole process group (the rank and whatever it started), else just the rank */
    if (kill(-r[i].pid, sig) != 0) kill(r[i].pid, sig);
  }
}

static int status_code(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

static void describe(char *buf, size_t len, int st) {
  if (WIFEXITED(st))
    snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
  else if (WIFSIGNALED(st))
    snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  else
    snprintf(buf, len, "ended with wait status 0x%x", st);
}

/* ------------------------------------------------------------------ launching */

struct plan {
  char **hosts;
  size_t nhosts;
  int per_host;
  int port;
  char hostname[256];
};

static void child_exec(const struct cli_run_opts *o, const struct plan *p, int rank, int out_w,
                       int err_w, pid_t parent) {
  /* default dispositions; SIG_IGN would survive exec */
  for (int i = 0; i < N_FWD; i++) signal(fwd_signals[i], fwd_ignored[i] ? SIG_IGN : SIG_DFL);
  signal(SIGCHLD, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(CLI_EXIT_NOEXEC); /* launcher already gone */

  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull >= 0) dup2(devnull, 0);
  if (out_w >= 0) dup2(out_w, 1);
  if (err_w >= 0) dup2(err_w, 2);

  int local = rank % p->per_host, group = rank / p->per_host;
  char v[32];
  snprintf(v, sizeof v, "%d", rank);
  setenv("RANK", v, 1);
  snprintf(v, sizeof v, "%d", o->nranks);
  setenv("WORLD_SIZE", v, 1);
  snprintf(v, sizeof v, "%d", local);
  setenv("LOCAL_RANK", v, 1);
  snprintf(v, sizeof v, "%d", p->per_host);
  setenv("LOCAL_WORLD_SIZE", v, 1);
  snprintf(v, sizeof v, "%d", group);
  setenv("GROUP_RANK", v, 1);
  snprintf(v, sizeof v, "%zu", p->hosts ? p->nhosts : (size_t)1);
  setenv("GROUP_WORLD_SIZE", v, 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  snprintf(v, sizeof v, "%d", p->port);
  setenv("MASTER_PORT", v, 1);
  setenv("COLLSCOPE_HOSTNAME", p->hosts ? p->hosts[group] : p->hostname, 1);
  for (size_t i = 0; i < o->nenv; i++) run_put_kv(o->env[i]);

  execvp(o->argv[0], o->argv);
  int e = errno;
  fprintf(stderr, "collscope run: rank %d: cannot execute %s: %s\n", rank, o->argv[0], strerror(e));
  _exit(e == ENOENT ? CLI_EXIT_NOEXEC : 126);
}

/* the launcher's state while its ranks run */
struct launch {
  const struct cli_run_opts *o;
  const struct plan *p;
  int n;                 /* ranks to start */
  struct rank *r;        /* n */
  struct run_outbuf *ob; /* --tag-output: the ranks' stdout and stderr pipes (2 per rank), else NULL */
  struct pollfd *pf;     /* the signal pipe and ob's open pipes */
  struct sigaction old_sa[N_FWD + 2];
  int started, alive, open_fds;
  int killing, killed_hard; /* SIGTERM sent (SIGKILL at deadline); SIGKILL sent */
  int int_count, failed;    /* SIGINT/SIGTERM received; ranks that failed on their own */
  double deadline, drain_deadline;
};

/* The forwarded signals, SIGCHLD (both into sig_pipe, for poll) and SIGPIPE (ignored: a
 * closed stdout must not kill us). 0, or 1 with a message. */
static int handlers_install(struct launch *L) {
  if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    run_say("pipe: %s", strerror(errno));
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < NSIG; i++) sig_pending[i] = 0;
  for (int i = 0; i < N_FWD; i++) {
    sigaction(fwd_signals[i], &sa, &L->old_sa[i]);
    fwd_ignored[i] = L->old_sa[i].sa_handler == SIG_IGN;
  }
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, &L->old_sa[N_FWD]);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, &L->old_sa[N_FWD + 1]);
  return 0;
}

static void handlers_restore(struct launch *L) {
  for (int i = 0; i < N_FWD; i++) sigaction(fwd_signals[i], &L->old_sa[i], NULL);
  sigaction(SIGCHLD, &L->old_sa[N_FWD], NULL);
  sigaction(SIGPIPE, &L->old_sa[N_FWD + 1], NULL);
  close(sig_pipe[0]);
  close(sig_pipe[1]);
  sig_pipe[0] = sig_pipe[1] = -1;
}

/* Fork and exec every rank, each in its own process group. 0, or 1 when one could not be
 * started (a message; the ranks already started are killed). */
static int start_ranks(struct launch *L) {
  const struct cli_run_opts *o = L->o;
  int rc = 0;
  /* Block the handled signals while forking: a child must not run on_signal() (it
   * would swallow a SIGTERM meant for it) before it resets the dispositions. */
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int i = 0; i < N_FWD; i++) sigaddset(&block, fwd_signals[i]);
  sigaddset(&block, SIGCHLD);
  sigprocmask(SIG_BLOCK, &block, &old_mask);
  pid_t self = getpid();
  fflush(NULL);
  for (int i = 0; i < L->n; i++) {
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (o->tag_output && (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC))) {
      run_say("pipe: %s", strerror(errno));
      if (po[0] >= 0) {
        close(po[0]);
        close(po[1]);
      }
      rc = 1;
      break;
    }
    pid_t pid = fork();
    if (pid < 0) {
      run_say("fork for rank %d: %s", i, strerror(errno));
      if (po[0] >= 0) {
        close(po[0]);
        close(po[1]);
        close(pe[0]);
        close(pe[1]);
      }
      rc = 1;
      break;
    }
    if (pid == 0) child_exec(o, L->p, i, po[1], pe[1], self);
    setpgid(pid, pid); /* also here: no window where a signal misses the group */
    L->r[i].pid = pid;
    L->r[i].alive = 1;
    L->started++;
    L->alive++;
    if (o->tag_output) {
      close(po[1]);
      close(pe[1]);
      fcntl(po[0], F_SETFL, O_NONBLOCK);
      fcntl(pe[0], F_SETFL, O_NONBLOCK);
      L->ob[2 * i] = (struct run_outbuf){.fd = po[0], .dest = 1, .rank = i};
      L->ob[2 * i + 1] = (struct run_outbuf){.fd = pe[0], .dest = 2, .rank = i};
    }
  }
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  if (rc) { /* could not start them all: stop the ones that run */
    run_say("stopping the %d ranks already started", L->started);
    signal_ranks(L->r, L->started, SIGKILL, 1);
  }
  return rc;
}

/* the signals received since the last pass, forwarded to every rank; a second SIGINT or
 * SIGTERM kills them */
static void forward_signals(struct launch *L) {
  for (int s = 0; s < N_FWD; s++) {
    int sig = fwd_signals[s];
    if (!sig_pending[sig]) continue;
    sig_pending[sig] = 0;
    if (sig == SIGINT || sig == SIGTERM) L->int_count++;
    if (L->int_count >= 2 && (sig == SIGINT || sig == SIGTERM)) {
      run_say("second %s: killing %d ranks", strsignal(sig), L->alive);
      signal_ranks(L->r, L->started, SIGKILL, 0);
      L->killed_hard = L->killing = 1;
    } else {
      if (L->o->verbose || sig == SIGINT || sig == SIGTERM)
        run_say("forwarding %s to %d ranks", strsignal(sig), L->alive);
      signal_ranks(L->r, L->started, sig, 0);
    }
  }
}

/* the ranks that ended: their status; with --kill-on-fail, the first failure starts the
 * others' termination (SIGTERM, SIGKILL after the grace period) */
static void reap_ranks(struct launch *L) {
  const struct cli_run_opts *o = L->o;
  for (;;) {
    int st;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid <= 0) break;
    for (int i = 0; i < L->started; i++) {
      struct rank *r = &L->r[i];
      if (r->pid != pid || !r->alive) continue;
      r->alive = 0;
      r->status = st;
      /* "stopped by us" only if it died of what we sent; an exit code still counts */
      if (r->stopped_by_us && !(WIFSIGNALED(st) && (WTERMSIG(st) == SIGTERM || WTERMSIG(st) == SIGKILL)))
        r->stopped_by_us = 0;
      r->code = status_code(st);
      L->alive--;
      char d[96];
      describe(d, sizeof d, st);
      if (r->code != 0 && !r->stopped_by_us) {
        L->failed++;
        run_say("rank %d (host %s, pid %d) %s", i, L->p->hosts ? L->p->hosts[i / L->p->per_host] : L->p->hostname,
                (int)pid, d);
        if (o->kill_on_fail && !L->killing && L->alive > 0) {
          run_say("terminating the other %d ranks (SIGKILL after %.3g s; --no-kill-on-fail keeps them)", L->alive,
                  o->grace_s);
          signal_ranks(L->r, L->started, SIGTERM, 1);
          L->killing = 1;
          L->deadline = now_s() + o->grace_s;
        }
      } else if (o->verbose) {
        run_say("rank %d (pid %d) %s%s", i, (int)pid, d, r->stopped_by_us ? " (stopped by collscope)" : "");
      }
      break;
    }
  }
}

/* Until every rank has ended and its output is drained: poll the signal pipe and the output
 * pipes, forward signals, reap, and enforce the grace and drain deadlines. */
static void wait_ranks(struct launch *L) {
  struct run_outbuf *ob = L->ob;
  while (L->alive > 0 || L->open_fds > 0) {
    int nf = 0;
    L->pf[nf++] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN};
    for (int i = 0; ob && i < 2 * L->started; i++)
      if (ob[i].fd >= 0) L->pf[nf++] = (struct pollfd){.fd = ob[i].fd, .events = POLLIN};
    int timeout = -1;
    double t = now_s();
    if (L->killing && !L->killed_hard) timeout = L->deadline > t ? (int)((L->deadline - t) * 1000) + 1 : 0;
    if (L->alive == 0) { /* ranks gone; descendants may hold the pipes: drain briefly */
      if (L->drain_deadline == 0) L->drain_deadline = t + 2.0;
      int d = L->drain_deadline > t ? (int)((L->drain_deadline - t) * 1000) + 1 : 0;
      if (timeout < 0 || d < timeout) timeout = d;
    }
    int pr = poll(L->pf, (nfds_t)nf, timeout);
    if (pr < 0 && errno != EINTR) {
      run_say("poll: %s", strerror(errno));
      break;
    }
    if (pr > 0 && (L->pf[0].revents & POLLIN)) {
      char drain[64];
      while (read(sig_pipe[0], drain, sizeof drain) > 0) {
      }
    }
    for (int k = 1; k < nf && pr > 0; k++) {
      if (!(L->pf[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      for (int i = 0; i < 2 * L->started; i++)
        if (ob[i].fd == L->pf[k].fd) {
          if (!run_pump(&ob[i])) L->open_fds--;
          break;
        }
    }
    forward_signals(L);
    reap_ranks(L);
    if (L->killing && !L->killed_hard && L->alive > 0 && now_s() >= L->deadline) {
      run_say("grace period over: killing %d ranks", L->alive);
      signal_ranks(L->r, L->started, SIGKILL, 1);
      L->killed_hard = 1;
    }
    if (L->alive == 0 && L->open_fds > 0 && L->drain_deadline > 0 && now_s() >= L->drain_deadline) {
      for (int i = 0; i < 2 * L->started; i++)
        if (ob[i].fd >= 0) {
          if (ob[i].len) run_emit(&ob[i], ob[i].buf, ob[i].len, 1);
          close(ob[i].fd);
          ob[i].fd = -1;
        }
      L->open_fds = 0;
    }
  }
}

/* the worst status; ranks we stopped only count if nothing else failed */
static int worst_status(const struct launch *L, int rc) {
  int worst = 0, worst_any = 0;
  for (int i = 0; i < L->started; i++) {
    if (L->r[i].code > worst_any) worst_any = L->r[i].code;
    if (!L->r[i].stopped_by_us && L->r[i].code > worst) worst = L->r[i].code;
  }
  if (worst == 0) worst = worst_any;
  if (rc) worst = worst ? worst : rc;
  if (L->failed > 0 || (worst && L->o->verbose))
    run_say("%d of %d ranks failed; exit status %d", L->failed, L->n, worst);
  return worst;
}

static int launch_ranks(const struct cli_run_opts *o, struct plan *p) {
  struct launch L = {.o = o, .p = p, .n = o->nranks};
  L.r = calloc((size_t)L.n, sizeof *L.r);
  L.ob = o->tag_output ? calloc((size_t)L.n * 2, sizeof *L.ob) : NULL;
  L.pf = calloc((size_t)L.n * 2 + 1, sizeof *L.pf);
  int worst = 1;
  if (!L.r || !L.pf || (o->tag_output && !L.ob)) {
    run_say("out of memory");
    goto out;
  }
  for (int i = 0; L.ob && i < 2 * L.n; i++) L.ob[i].fd = -1;
  if (handlers_install(&L)) goto out;
  int rc = start_ranks(&L);
  L.killing = L.killed_hard = rc != 0;
  L.open_fds = L.ob ? 2 * L.started : 0;
  wait_ranks(&L);
  worst = worst_status(&L, rc);
  handlers_restore(&L);
out:
  free(L.r);
  free(L.ob);
  free(L.pf);
  return worst;
}

int cli_run_launch(const struct cli_run_opts *o) {
  if (!o->argv || !o->argv[0]) {
    run_say("no command given (collscope run [options] -- CMD ARGS...)");
    return CLI_EXIT_USAGE;
  }
  for (size_t i = 0; i < o->nenv; i++)
    if (!run_valid_kv(o->env[i]) || strchr(o->env[i], '=') - o->env[i] >= 256) {
      run_say("--env %s: expected KEY=VALUE", o->env[i]);
      return CLI_EXIT_USAGE;
    }

  if (o->nranks == 0) { /* wrap an existing launcher */
    if (o->hosts || o->tag_output || o->topology) {
      run_say("%s needs -n N (without -n, collscope run wraps a launcher that starts the ranks)",
              o->hosts ? "--hosts" : o->topology ? "--topology"
                                                 : "--tag-output");
      return CLI_EXIT_USAGE;
    }
    if (run_prepare_env(o)) return 1;
    for (size_t i = 0; i < o->nenv; i++) run_put_kv(o->env[i]);
    if (o->verbose) run_say("exec %s (COLLSCOPE_JOB_ID=%s)", o->argv[0], getenv("COLLSCOPE_JOB_ID"));
    fflush(NULL);
    execvp(o->argv[0], o->argv);
    int e = errno;
    run_say("cannot execute %s: %s", o->argv[0], strerror(e));
    return e == ENOENT ? CLI_EXIT_NOEXEC : 126;
  }

  if (o->nranks < 0 || o->nranks > RUN_MAX_RANKS) {
    run_say("-n %d: expected 1..%d ranks", o->nranks, RUN_MAX_RANKS);
    return CLI_EXIT_USAGE;
  }
  if (!(o->grace_s >= 0 && o->grace_s <= 3600)) {
    run_say("--grace %g: expected 0..3600 seconds", o->grace_s);
    return CLI_EXIT_USAGE;
  }
  struct plan p;
  memset(&p, 0, sizeof p);
  if (gethostname(p.hostname, sizeof p.hostname - 1) != 0) snprintf(p.hostname, sizeof p.hostname, "localhost");
  if (o->hosts) {
    char err[256];
    if (cs_hostlist_expand_max(o->hosts, RUN_MAX_RANKS, &p.hosts, &p.nhosts, err, sizeof err)) {
      run_say("--hosts '%s': %s", o->hosts, err);
      return CLI_EXIT_USAGE;
    }
  }
  if (o->topology && !p.hosts) {
    run_say("--topology needs --hosts (the hosts to order)");
    return CLI_EXIT_USAGE;
  }
  if (o->topology && p.hosts && cli_topo_order_hosts(o->topology, p.hosts, p.nhosts, o->verbose)) {
    cs_hostlist_free(p.hosts, p.nhosts);
    return CLI_EXIT_USAGE;
  }
  size_t nh = p.hosts ? p.nhosts : 1;
  if ((size_t)o->nranks < nh || o->nranks % (int)nh != 0) {
    run_say("-n %d ranks do not divide evenly over %zu hosts (%s): use a multiple of %zu", o->nranks, nh,
            o->hosts ? o->hosts : p.hostname, nh);
    cs_hostlist_free(p.hosts, p.nhosts);
    return CLI_EXIT_USAGE;
  }
  p.per_host = o->nranks / (int)nh;
  p.port = run_free_port();
  if (p.port <= 0) {
    run_say("cannot find a free TCP port on 127.0.0.1: %s", strerror(errno));
    cs_hostlist_free(p.hosts, p.nhosts);
    return 1;
  }
  if (run_prepare_env(o)) {
    cs_hostlist_free(p.hosts, p.nhosts);
    return 1;
  }
  if (o->verbose)
    run_say("%d ranks on %zu host%s (%s), %d per host; MASTER_ADDR=127.0.0.1 MASTER_PORT=%d "
            "COLLSCOPE_JOB_ID=%s; command: %s",
            o->nranks, nh, nh == 1 ? "" : "s", o->hosts ? o->hosts : p.hostname, p.per_host, p.port,
            getenv("COLLSCOPE_JOB_ID"), o->argv[0]);
  int rc = launch_ranks(o, &p);
  cs_hostlist_free(p.hosts, p.nhosts);
  return rc;
}
