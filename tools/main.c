/* tools/main.c: `collscope <command> [args]`: one table of the commands (name, entry point,
 * the overview's summary, the help text) that drives both the dispatch and `collscope help`. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#ifndef COLLSCOPE_VERSION
#define COLLSCOPE_VERSION "0.1.0"
#endif

static int cmd_help(int argc, char **argv);
static void cmd_help_help(FILE *out);

/* summary: the overview's text after the name; a line break continues it under the first line */
static const struct cli_command {
  const char *name;
  int (*fn)(int argc, char **argv); /* argv[0] is the command's name */
  const char *summary;
  void (*help)(FILE *out); /* `collscope help NAME`, the same text as `collscope NAME --help` */
} commands[] = {
    {"run", cmd_run,
     "start a job with the shim: N local ranks with torchrun's environment,\n"
     "or wrap an existing launcher (torchrun, srun, mpirun)",
     cmd_run_help},
    {"demo", cmd_demo, "run a data-parallel training job on the CUDA/NCCL simulator", cmd_demo_help},
    {"report", cmd_report, "bus-bandwidth and straggler tables from a dump directory", cmd_report_help},
    {"trace", cmd_trace, "Chrome/Perfetto trace from a dump directory", cmd_trace_help},
    {"top", cmd_top, "live view of the collscope processes on this host (stats rings in /dev/shm)", cmd_top_help},
    {"salvage", cmd_salvage, "dump files from the stats rings of killed processes", cmd_salvage_help},
    {"snapshot", cmd_snapshot, "ask a job's live processes on this host to write a flight-recorder window now",
     cmd_snapshot_help},
    {"exporter", cmd_exporter, "Prometheus exporter of this host's stats rings (/metrics on 127.0.0.1:9464)",
     cmd_exporter_help},
    {"topo", cmd_topo, "topology-aware host order (plan) and a topology file's tree (show)", cmd_topo_help},
    {"suspects", cmd_suspects,
     "the hosts and GPUs the reports implicate, and the scheduler actions\n"
     "(drain, --exclude, a hostfile for the rerun)",
     cmd_suspects_help},
    {"help", cmd_help, "`collscope help [COMMAND]`: this text, or a command's options", cmd_help_help},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct cli_command *find_command(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(commands[i].name, name)) return &commands[i];
  return NULL;
}

/* the names, comma-separated */
static void put_names(FILE *out) {
  for (size_t i = 0; i < NCOMMANDS; i++) fprintf(out, "%s%s", i ? ", " : "", commands[i].name);
}

static void put_overview(FILE *out) {
  fputs("usage: collscope <command> [options] [args]\n"
        "\n"
        "collscope measures every NCCL collective and CUDA memcpy of a job through an\n"
        "LD_PRELOAD shim (libcollscope.so) and turns the per-rank dump files into reports.\n"
        "\n"
        "commands:\n",
        out);
  for (size_t i = 0; i < NCOMMANDS; i++) {
    const char *s = commands[i].summary;
    fprintf(out, "  %-7s ", commands[i].name);
    for (;;) {
      size_t n = strcspn(s, "\n");
      fprintf(out, "%.*s\n", (int)n, s);
      if (!s[n]) break;
      s += n + 1;
      fputs("          ", out);
    }
  }
  fputs("\n"
        "options: -h/--help (this text), --version\n"
        "`collscope COMMAND --help` and `collscope help COMMAND` show a command's options.\n",
        out);
}

static void cmd_help_help(FILE *out) {
  fputs("usage: collscope help [COMMAND]\n  COMMAND: ", out);
  put_names(out);
  fputc('\n', out);
}

/* `collscope help [COMMAND]`: the overview and the environment table, or COMMAND's help */
static int cmd_help(int argc, char **argv) {
  if (argc > 2) {
    fprintf(stderr, "usage: collscope help [COMMAND]\n");
    return CLI_EXIT_USAGE;
  }
  if (argc < 2) {
    put_overview(stdout);
    fputc('\n', stdout);
    cli_help_env(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    cmd_help_help(stdout);
    return 0;
  }
  const struct cli_command *c = find_command(argv[1]);
  if (!c) {
    fprintf(stderr, "collscope: unknown command '%s' (commands: ", argv[1]);
    put_names(stderr);
    fputs(")\n", stderr);
    return CLI_EXIT_USAGE;
  }
  c->help(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    put_overview(stderr);
    return CLI_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "-h") || !strcmp(name, "--help")) name = "help";
  if (!strcmp(name, "--version") || !strcmp(name, "version")) {
    printf("collscope %s\n", COLLSCOPE_VERSION);
    return 0;
  }
  const struct cli_command *c = find_command(name);
  if (c) return c->fn(argc - 1, argv + 1);
  fprintf(stderr, "collscope: unknown command '%s'\n\n", name);
  put_overview(stderr);
  return CLI_EXIT_USAGE;
}
