/* tools/cmd_run.c: `collscope run`, the launcher's command line: options into struct
 * cli_run_opts, then cli_run_launch() (tools/run/run_launch.c; the parts are listed in
 * tools/run/run_internal.h). */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

static const char help_run[] =
    "usage: collscope run -n N [options] [--] CMD [ARGS...]      (launch N ranks)\n"
    "       collscope run [--sim] [--no-shim] [--env K=V]... [--] LAUNCHER ARGS...\n"
    "                                                            (wrap a launcher)\n"
    "\n"
    "With -n, starts N copies of CMD (fork/execvp) with the environment torchrun gives\n"
    "its workers, each rank in its own process group:\n"
    "  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (node index),\n"
    "  GROUP_WORLD_SIZE (hosts), MASTER_ADDR=127.0.0.1, MASTER_PORT (a free TCP port),\n"
    "  COLLSCOPE_HOSTNAME (the rank's host), COLLSCOPE_JOB_ID (kept if already set,\n"
    "  else generated as run-<pid>-<time>).\n"
    "Ranks are spread in blocks over the hosts of --hosts: ranks 0..N/H-1 on the first\n"
    "host, and so on (N must be a multiple of the number of hosts H).\n"
    "Without -n, sets LD_PRELOAD (appended to any existing value), COLLSCOPE_JOB_ID,\n"
    "the simulator path (--sim) and --env variables, then execvp()s the launcher, so every\n"
    "rank it starts (torchrun, srun, mpirun, a single process) is covered.\n"
    "\n"
    "options:\n"
    "  -n, --nproc N         number of ranks to start (1..4096)\n"
    "  -H, --hosts HOSTLIST  Slurm hostlist the ranks are spread over, e.g. simhost[1-2]\n"
    "                        or node[01-04],gpu7 (default: this machine's hostname).\n"
    "                        Only names: every rank runs on this machine; the host name\n"
    "                        reaches the rank as COLLSCOPE_HOSTNAME (the simulator and\n"
    "                        the shim use it as the rank's host)\n"
    "  --topology FILE       order the --hosts by the rack/switch topology FILE first\n"
    "                        (leaves contiguous, see `collscope topo plan`)\n"
    "  --sim                 prepend the CUDA/NCCL simulator directory to LD_LIBRARY_PATH\n"
    "                        (error if the simulator is not found)\n"
    "  --no-shim             do not LD_PRELOAD libcollscope.so (default: preload it when\n"
    "                        found; when not found the job runs without it)\n"
    "  --tag-output          prefix every output line of rank R with \"[R] \" (stdout to\n"
    "                        stdout, stderr to stderr, whole lines only)\n"
    "  -x, --env K=V         set K=V for every rank (repeatable; applied last, so it\n"
    "                        overrides the launcher's own variables)\n"
    "  --job-id ID           set COLLSCOPE_JOB_ID=ID\n"
    "  --kill-on-fail        when a rank fails (non-zero exit or signal), SIGTERM the\n"
    "                        others, SIGKILL after the grace period (default, like torchrun)\n"
    "  --no-kill-on-fail     let the other ranks keep running when one fails\n"
    "  --grace SECONDS       grace period between SIGTERM and SIGKILL (default 5)\n"
    "  -v, --verbose         print the plan (hosts, port, shim, simulator) and each\n"
    "                        rank's exit on stderr\n"
    "  -h, --help            this text\n"
    "\n"
    "SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are forwarded to every rank; a second\n"
    "SIGINT/SIGTERM kills them (SIGKILL). Ranks get stdin from /dev/null.\n"
    "exit status: the worst rank status (exit code, or 128+signal for a rank killed by a\n"
    "signal; ranks stopped by --kill-on-fail do not count), 2 for a usage error, 127 if\n"
    "CMD cannot be executed.\n"
    "\n"
    "examples:\n"
    "  collscope run -n 8 --hosts simhost[1-2] --sim -- ./dp_train --steps 3\n"
    "  collscope run -- torchrun --nproc-per-node 8 train.py\n"
    "  collscope run -- srun -N 4 --ntasks-per-node 8 python train.py\n";

void cmd_run_help(FILE *out) {
  fputs(help_run, out);
  fputc('\n', out);
  cli_help_env(out);
}

void run_say(const char *fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
  fflush(stdout);
  fprintf(stderr, "collscope run: %.*s\n", n, line);
}

void cli_run_opts_init(struct cli_run_opts *o) {
  memset(o, 0, sizeof *o);
  o->kill_on_fail = 1;
  o->grace_s = 5.0;
}

/* ------------------------------------------------------------ option parsing */

/* "--name=value" / "--name value" / "-n8" / "-n 8". Returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *shortf, const char *longf,
                             int *matched) {
  const char *a = argv[*i];
  *matched = 0;
  size_t ll = longf ? strlen(longf) : 0;
  if ((shortf && !strcmp(a, shortf)) || (longf && !strcmp(a, longf))) {
    *matched = 1;
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
  }
  if (longf && !strncmp(a, longf, ll) && a[ll] == '=') {
    *matched = 1;
    return a + ll + 1;
  }
  if (shortf && !strncmp(a, shortf, 2) && a[2] && a[1] != '-') {
    *matched = 1;
    return a + 2;
  }
  return NULL;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int cmd_run(int argc, char **argv) {
  struct cli_run_opts o;
  cli_run_opts_init(&o);
  char **env = calloc((size_t)argc + 1, sizeof *env);
  if (!env) return 1;
  o.env = env;
  int i = 1, cmd_at = -1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    const char *v;
    int m;
    if (!strcmp(a, "--")) {
      cmd_at = i + 1;
      break;
    }
    if (a[0] != '-' || a[1] == '\0') {
      cmd_at = i;
      break;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      free(env);
      cmd_run_help(stdout);
      return 0;
    }
    if (!strcmp(a, "--sim")) {
      o.sim = 1;
      continue;
    }
    if (!strcmp(a, "--no-shim")) {
      o.no_shim = 1;
      continue;
    }
    if (!strcmp(a, "--tag-output")) {
      o.tag_output = 1;
      continue;
    }
    if (!strcmp(a, "--kill-on-fail")) {
      o.kill_on_fail = 1;
      continue;
    }
    if (!strcmp(a, "--no-kill-on-fail")) {
      o.kill_on_fail = 0;
      continue;
    }
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
      o.verbose = 1;
      continue;
    }
    v = opt_value(argc, argv, &i, "-n", "--nproc", &m);
    if (m) {
      long n;
      if (!v || parse_int(v, 1, RUN_MAX_RANKS, &n)) {
        run_say("-n: expected a number of ranks in 1..%d, got '%s'", RUN_MAX_RANKS, v ? v : "");
        free(env);
        return CLI_EXIT_USAGE;
      }
      o.nranks = (int)n;
      continue;
    }
    v = opt_value(argc, argv, &i, "-H", "--hosts", &m);
    if (m) {
      if (!v) {
        run_say("--hosts needs a hostlist");
        free(env);
        return CLI_EXIT_USAGE;
      }
      o.hosts = v;
      continue;
    }
    v = opt_value(argc, argv, &i, NULL, "--topology", &m);
    if (m) {
      if (!v || !*v) {
        run_say("--topology needs a FILE");
        free(env);
        return CLI_EXIT_USAGE;
      }
      o.topology = v;
      continue;
    }
    v = opt_value(argc, argv, &i, "-x", "--env", &m);
    if (m) {
      if (!v || !run_valid_kv(v)) {
        run_say("--env: expected KEY=VALUE, got '%s'", v ? v : "");
        free(env);
        return CLI_EXIT_USAGE;
      }
      env[o.nenv++] = (char *)v;
      continue;
    }
    v = opt_value(argc, argv, &i, NULL, "--job-id", &m);
    if (m) {
      if (!v || !*v) {
        run_say("--job-id needs a value");
        free(env);
        return CLI_EXIT_USAGE;
      }
      o.job_id = v;
      continue;
    }
    v = opt_value(argc, argv, &i, NULL, "--grace", &m);
    if (m) {
      char *end;
      double g = v ? strtod(v, &end) : -1;
      if (!v || *end || !(g >= 0 && g <= 3600)) {
        run_say("--grace: expected seconds in 0..3600, got '%s'", v ? v : "");
        free(env);
        return CLI_EXIT_USAGE;
      }
      o.grace_s = g;
      continue;
    }
    run_say("unknown option '%s' (collscope run --help)", a);
    free(env);
    return CLI_EXIT_USAGE;
  }
  if (cmd_at < 0 || cmd_at >= argc) {
    run_say("no command given: collscope run [options] -- CMD ARGS... (collscope run --help)");
    free(env);
    return CLI_EXIT_USAGE;
  }
  o.argv = argv + cmd_at; /* argv is NULL-terminated by the C runtime */
  int rc = cli_run_launch(&o);
  free(env);
  return rc;
}
