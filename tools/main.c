/* tools/main.c: `collscope <command> [args]` dispatcher, help texts, and the lookup of
 * collscope's own artefacts (simulator, shim, test apps) relative to the executable. */
#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef COLLSCOPE_VERSION
#define COLLSCOPE_VERSION "0.1.0"
#endif
#ifndef COLLSCOPE_PREFIX
#define COLLSCOPE_PREFIX "/usr/local"
#endif
/* where the install keeps the simulator (sim/) and the demo's job (apps/): meson's
 * collscope_pkglibdir, tried after the directories next to the executable */
#ifndef COLLSCOPE_PKGLIBDIR
#define COLLSCOPE_PKGLIBDIR COLLSCOPE_PREFIX "/lib/collscope"
#endif

/* ------------------------------------------------------------------ help texts */

static const char help_overview[] =
    "usage: collscope <command> [options] [args]\n"
    "\n"
    "collscope measures every NCCL collective and CUDA memcpy of a job through an\n"
    "LD_PRELOAD shim (libcollscope.so) and turns the per-rank dump files into reports.\n"
    "\n"
    "commands:\n"
    "  run     start a job with the shim: N local ranks with torchrun's environment,\n"
    "          or wrap an existing launcher (torchrun, srun, mpirun)\n"
    "  demo    run a data-parallel training job on the CUDA/NCCL simulator\n"
    "  report  bus-bandwidth and straggler tables from a dump directory\n"
    "  trace   Chrome/Perfetto trace from a dump directory\n"
    "  top     live view of the collscope processes on this host (stats rings in /dev/shm)\n"
    "  salvage dump files from the stats rings of killed processes\n"
    "  exporter Prometheus exporter of this host's stats rings (/metrics on 127.0.0.1:9464)\n"
    "  topo    topology-aware host order (plan) and a topology file's tree (show)\n"
    "  suspects the hosts and GPUs the reports implicate, and the scheduler actions\n"
    "          (drain, --exclude, a hostfile for the rerun)\n"
    "  help    `collscope help [COMMAND]`: this text, or a command's options\n"
    "\n"
    "options: -h/--help (this text), --version\n"
    "`collscope COMMAND --help` and `collscope help COMMAND` show a command's options.\n";

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

static const char help_demo[] =
    "usage: collscope demo [--keep DIR] [--steps N] [--no-shim] [-v]\n"
    "\n"
    "Runs the data-parallel test job (tests/apps dp_train: fp32 AllReduce of gradient\n"
    "buckets of several sizes each step, results checked exactly) with 8 ranks on the\n"
    "two simulated hosts simhost[1-2] on the CUDA/NCCL simulator, through the same code\n"
    "as `collscope run -n 8 --hosts simhost[1-2] --sim --tag-output`, then prints what\n"
    "it did (ranks, hosts, steps, sizes, pass/fail, wall time) and the dump files the\n"
    "shim wrote. No GPU is needed.\n"
    "\n"
    "options:\n"
    "  --keep DIR     write the dump files into DIR (created if missing); default: a\n"
    "                 fresh collscope-demo-<date>-<time> directory under $COLLSCOPE_DIR,\n"
    "                 or under the current directory when COLLSCOPE_DIR is unset.\n"
    "                 The ranks get COLLSCOPE_DIR set to that directory.\n"
    "  --steps N      training steps (default 5)\n"
    "  --no-shim      run without libcollscope.so (no dump files)\n"
    "  -v, --verbose  launcher details (see collscope run --verbose)\n"
    "  -h, --help     this text\n"
    "\n"
    "exit status: 0 if every rank checked its results, else the job's status.\n";

/* every variable collscope, its launcher and its simulator read, from the one table that
 * the docs are checked against (tests/tools/check_env_table.py) */
static const struct {
  const char *name, *def, *who, *meaning;
} env_table[] = {
#define CS_ENV_VAR(name, def, who, meaning) {name, def, who, meaning},
#include "collscope/env_vars.def"
#undef CS_ENV_VAR
};

/* text on lines of at most width columns after a 6-space indent, broken at spaces */
static void put_wrapped(FILE *out, const char *text, size_t width) {
  while (*text) {
    size_t n = strlen(text);
    if (n > width) {
      n = width;
      while (n > 0 && text[n] != ' ') n--;
      if (n == 0) n = strcspn(text, " "); /* one word longer than the line */
    }
    fprintf(out, "      %.*s\n", (int)n, text);
    text += n;
    while (*text == ' ') text++;
  }
}

void cli_help_env(FILE *out) {
  fprintf(out, "environment (variable, default, [who reads it]):\n");
  for (size_t i = 0; i < sizeof env_table / sizeof env_table[0]; i++) {
    fprintf(out, "  %-32s default: %s  [%s]\n", env_table[i].name, env_table[i].def, env_table[i].who);
    put_wrapped(out, env_table[i].meaning, 88);
  }
}

int cli_help(const char *cmd, FILE *out) {
  if (!cmd) {
    fputs(help_overview, out);
    fputc('\n', out);
    cli_help_env(out);
    return 0;
  }
  if (!strcmp(cmd, "run")) {
    fputs(help_run, out);
  } else if (!strcmp(cmd, "demo")) {
    fputs(help_demo, out);
  } else if (!strcmp(cmd, "report") || !strcmp(cmd, "trace") || !strcmp(cmd, "top") || !strcmp(cmd, "salvage") ||
             !strcmp(cmd, "exporter")) {
    /* their options are documented by their own --help */
    fflush(out);
    char *args[] = {(char *)cmd, "--help", NULL};
    if (!strcmp(cmd, "top")) return cmd_top(2, args);
    if (!strcmp(cmd, "salvage")) return cmd_salvage(2, args);
    if (!strcmp(cmd, "exporter")) return cmd_exporter(2, args);
    return !strcmp(cmd, "report") ? cmd_report(2, args) : cmd_trace(2, args);
  } else if (!strcmp(cmd, "topo")) {
    return cmd_topo_help(out);
  } else if (!strcmp(cmd, "suspects")) {
    cmd_suspects_help(out);
    return 0;
  } else if (!strcmp(cmd, "help")) {
    fputs("usage: collscope help [COMMAND]\n  COMMAND: run, demo, report, trace, top, salvage, topo, suspects\n", out);
    return 0;
  } else {
    fprintf(stderr, "collscope: unknown command '%s' (commands: run, demo, report, trace, top, salvage, topo, suspects, help)\n", cmd);
    return CLI_EXIT_USAGE;
  }
  fputc('\n', out);
  cli_help_env(out);
  return 0;
}

/* ------------------------------------------------------------ artefact lookup */

static int is_dir(const char *p) {
  struct stat st;
  return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static int is_file(const char *p) {
  struct stat st;
  return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Directory of the running executable and its parent ("" when unknown). */
static const char *exe_parent(const char **exe_dir_out) {
  static char dir[PATH_MAX], parent[PATH_MAX];
  static int done;
  if (!done) {
    done = 1;
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) {
      dir[0] = '\0';
    } else {
      dir[n] = '\0';
      char *slash = strrchr(dir, '/');
      if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
      snprintf(parent, sizeof parent, "%s", dir);
      slash = strrchr(parent, '/');
      if (slash) *(slash == parent ? slash + 1 : slash) = '\0';
    }
  }
  if (exe_dir_out) *exe_dir_out = dir;
  return parent;
}

/* True when the executable sits in <build>/tools (a meson build tree). */
static int in_build_tree(void) {
  const char *dir;
  const char *parent = exe_parent(&dir);
  size_t n = strlen(dir);
  if (n < 6 || strcmp(dir + n - 6, "/tools") != 0) return 0;
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/build.ninja", parent);
  return is_file(p);
}

/* Install prefix: <prefix>/bin/collscope -> <prefix>; else the configured prefix. */
static const char *install_prefix(void) {
  const char *dir;
  const char *parent = exe_parent(&dir);
  size_t n = strlen(dir);
  if (n >= 4 && strcmp(dir + n - 4, "/bin") == 0 && parent[0]) return parent;
  return COLLSCOPE_PREFIX;
}

/* Try fmt-formatted candidates; keep the first that exists (check: dir or file). */
static const char *first_existing(char *buf, size_t len, int want_dir, const char *base,
                                  const char *const *rel, const char *must_hold) {
  for (size_t i = 0; rel[i]; i++) {
    snprintf(buf, len, "%s/%s", base, rel[i]);
    if (want_dir) {
      if (!is_dir(buf)) continue;
      if (must_hold) {
        char f[PATH_MAX + 64];
        snprintf(f, sizeof f, "%s/%s", buf, must_hold);
        if (!is_file(f)) continue;
      }
      return buf;
    }
    if (is_file(buf)) return buf;
  }
  return NULL;
}

static const char *env_nonempty(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

const char *cli_sim_dir(void) {
  static char buf[PATH_MAX];
  const char *e = env_nonempty("COLLSCOPE_SIM_DIR");
  if (e) return is_dir(e) ? e : NULL;
  if (in_build_tree()) {
    static const char *const rel[] = {"tests/sim", NULL};
    return first_existing(buf, sizeof buf, 1, exe_parent(NULL), rel, "libcuda.so.1");
  }
  static const char *const rel[] = {"lib/collscope/sim", "lib64/collscope/sim", NULL};
  static const char *const configured[] = {"sim", NULL};
  const char *d = first_existing(buf, sizeof buf, 1, install_prefix(), rel, "libcuda.so.1");
  return d ? d : first_existing(buf, sizeof buf, 1, COLLSCOPE_PKGLIBDIR, configured, "libcuda.so.1");
}

const char *cli_shim_path(void) {
  static char buf[PATH_MAX];
  const char *e = env_nonempty("COLLSCOPE_SHIM");
  if (e) return is_file(e) ? e : NULL;
  if (in_build_tree()) {
    static const char *const rel[] = {"shim/libcollscope.so", NULL};
    return first_existing(buf, sizeof buf, 0, exe_parent(NULL), rel, NULL);
  }
  static const char *const rel[] = {"lib/libcollscope.so", "lib64/libcollscope.so",
                                    "lib/x86_64-linux-gnu/libcollscope.so",
                                    "lib/aarch64-linux-gnu/libcollscope.so", NULL};
  return first_existing(buf, sizeof buf, 0, install_prefix(), rel, NULL);
}

const char *cli_apps_dir(void) {
  static char buf[PATH_MAX];
  const char *e = env_nonempty("COLLSCOPE_APPS_DIR");
  if (e) return is_dir(e) ? e : NULL;
  if (in_build_tree()) {
    static const char *const rel[] = {"tests/apps", NULL};
    return first_existing(buf, sizeof buf, 1, exe_parent(NULL), rel, "dp_train");
  }
  static const char *const rel[] = {"lib/collscope/apps", "libexec/collscope/apps", NULL};
  static const char *const configured[] = {"apps", NULL};
  const char *d = first_existing(buf, sizeof buf, 1, install_prefix(), rel, "dp_train");
  return d ? d : first_existing(buf, sizeof buf, 1, COLLSCOPE_PKGLIBDIR, configured, "dp_train");
}

/* ------------------------------------------------------------------ dispatcher */

static int wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--")) return 0;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(help_overview, stderr);
    return CLI_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
    if (argc > 3) {
      fprintf(stderr, "usage: collscope help [COMMAND]\n");
      return CLI_EXIT_USAGE;
    }
    return cli_help(argc == 3 ? argv[2] : NULL, stdout);
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("collscope %s\n", COLLSCOPE_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "demo")) {
    if (wants_help(argc - 1, argv + 1)) return cli_help("demo", stdout);
    return cmd_demo(argc - 1, argv + 1);
  }
  if (!strcmp(cmd, "report")) return cmd_report(argc - 1, argv + 1);
  if (!strcmp(cmd, "trace")) return cmd_trace(argc - 1, argv + 1);
  if (!strcmp(cmd, "top")) return cmd_top(argc - 1, argv + 1);
  if (!strcmp(cmd, "salvage")) return cmd_salvage(argc - 1, argv + 1);
  if (!strcmp(cmd, "topo")) return cmd_topo(argc - 1, argv + 1);
  if (!strcmp(cmd, "suspects")) return cmd_suspects(argc - 1, argv + 1);
  if (!strcmp(cmd, "exporter")) return cmd_exporter(argc - 1, argv + 1);
  fprintf(stderr, "collscope: unknown command '%s'\n\n", cmd);
  fputs(help_overview, stderr);
  return CLI_EXIT_USAGE;
}
