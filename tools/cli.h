/* tools/cli.h: the collscope CLI's subcommand entry points and shared helpers.
 * Each subcommand lives in its own cmd_*.c and returns a process exit status. */
#ifndef COLLSCOPE_TOOLS_CLI_H
#define COLLSCOPE_TOOLS_CLI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The commands, one cmd_*.c each (tools/main.c's table dispatches to them): the entry point
 * returns a process exit status; cmd_*_help() prints the help text that both
 * `collscope NAME --help` and `collscope help NAME` show. */
int cmd_run(int argc, char **argv); /* tools/cmd_run.c */
void cmd_run_help(FILE *out);
int cmd_demo(int argc, char **argv); /* tools/cmd_demo.c */
void cmd_demo_help(FILE *out);
int cmd_report(int argc, char **argv); /* tools/cmd_report.c */
void cmd_report_help(FILE *out);
int cmd_trace(int argc, char **argv); /* tools/cmd_trace.c */
void cmd_trace_help(FILE *out);
int cmd_top(int argc, char **argv); /* tools/cmd_top.c */
void cmd_top_help(FILE *out);
int cmd_salvage(int argc, char **argv); /* tools/cmd_salvage.c */
void cmd_salvage_help(FILE *out);
int cmd_snapshot(int argc, char **argv); /* tools/cmd_snapshot.c */
void cmd_snapshot_help(FILE *out);
int cmd_topo(int argc, char **argv); /* tools/cmd_topo.c */
void cmd_topo_help(FILE *out);
int cmd_exporter(int argc, char **argv); /* tools/cmd_exporter.c */
void cmd_exporter_help(FILE *out);
int cmd_suspects(int argc, char **argv); /* tools/cmd_suspects.c */
void cmd_suspects_help(FILE *out);
/* tools/cmd_topo.c: reorder hosts[0..n) in place by the topology plan of topofile
 * (for `collscope run --topology`). Returns 0, or -1 with a message on stderr. */
int cli_topo_order_hosts(const char *topofile, char **hosts, size_t n, int verbose);

/* tools/report/detect_input.c: run analysis/detect.c over a loaded dump set (all op records plus
 * the shim's hang records). Returns 0, -1 out of memory. */
struct cs_dumpset;
struct cs_det_params;
struct cs_det_result;
int cli_detect_dumpset(const struct cs_dumpset *set, const struct cs_det_params *p, struct cs_det_result *out);
/* The stragglers and hangs sections (text and JSON), shared by report and top
 * (tools/report/section_stragglers.c, section_hangs.c). */
struct json_t;
void cli_text_stragglers(const struct cs_det_result *det, const struct cs_det_params *p, FILE *o);
/* the same with a `cost` and a `cause` column: costs[i] and causes[i] for straggler i (NULL: no
 * such column) */
void cli_text_stragglers_causes(const struct cs_det_result *det, const struct cs_det_params *p, FILE *o,
                                const char *const *costs, const char *const *causes);
void cli_text_hangs(const struct cs_det_result *det, FILE *o);
/* a dump's dtype / redop name as the SDC comparison numbers it (tools/dump/dump_args.c): dtype -1
 * unknown; redop -1 none, 5 one without a sum rule (premulsum or a newer name) */
int cli_sdc_dtype(const char *name);
int cli_sdc_redop(const char *name);
/* The SDC findings of the dumps in dir as text (collscope demo's SDC step; tools/report/
 * section_sdc.c): 1 when there are findings, 0 when none, -1 when the dumps cannot be read. */
int cli_report_sdc_text(const char *dir, FILE *o);
struct json_t *cli_json_stragglers(const struct cs_det_result *det);
struct json_t *cli_json_hangs(const struct cs_det_result *det);

/* tools/cmd_report.c: the report of DIR (job, op filter and reading threads as report's
 * --job, --op and -j; NULL / 0 for none) as the one JSON object `report --json` prints, for
 * commands built on the report (suspects, the HTML page). NULL with a message on stderr and
 * *status set to report's exit status (1 unusable input, 2 unknown op); the caller decrefs. */
struct json_t *cli_report_json(const char *dir, const char *job, const char *op, unsigned jobs, int *status);

/* tools/dump/dump_args.c: the command line of report and trace (DIR, -o/--output FILE,
 * --job ID, and per flags --op NAME, --json). Returns -1 when the command goes on, else its
 * exit status (0 after --help, CLI_EXIT_USAGE with a message and the usage on stderr). */
struct cli_dump_args {
  const char *dir, *outpath, *op, *job;
  bool json, html; /* --json; --html (CLI_DUMP_ARGS_HTML) */
  bool by_model;   /* --by-model (CLI_DUMP_ARGS_BY_MODEL) */
  unsigned jobs;   /* -j N: reading threads, 0 = one per core */
  /* CLI_DUMP_ARGS_SELECT (trace): --ranks LIST, --comm ID, --from/--to (seconds from the job's
   * start, or seq:N), --max-size BYTES[KMG], --format NAME; as given, the command parses them */
  const char *ranks, *comm, *from, *to, *max_size, *format;
  /* CLI_DUMP_ARGS_BALANCE (report): --layers LIST, --shares LIST, as given */
  const char *layers, *shares;
};
enum { CLI_DUMP_ARGS_OP = 1,
       CLI_DUMP_ARGS_JSON = 2,
       CLI_DUMP_ARGS_SELECT = 4,
       CLI_DUMP_ARGS_HTML = 8,
       CLI_DUMP_ARGS_BY_MODEL = 16,
       CLI_DUMP_ARGS_BALANCE = 32 };
int cli_dump_args_parse(const char *cmd, int argc, char **argv, unsigned flags, void (*usage)(FILE *),
                        struct cli_dump_args *out);

/* tools/dump/dump_args.c: an output file written whole or not at all. cli_out_open() returns
 * stdout for NULL or "-", else a new temporary next to path (mkstemp: O_EXCL, never a
 * planted file or link) whose name is kept in *tmp; NULL with a message on failure.
 * cli_out_close() flushes, closes and renames it onto path (rc == 0), or removes it;
 * returns 0, or 1 with a message. */
FILE *cli_out_open(const char *cmd, const char *path, char **tmp);
int cli_out_close(const char *cmd, FILE *o, char *tmp, const char *path, int rc);

/* tools/run/run_paths.c: locations of collscope's own artefacts, found relative to the running
 * executable (build tree or install prefix) or from env overrides:
 * COLLSCOPE_SIM_DIR, COLLSCOPE_SHIM, COLLSCOPE_APPS_DIR. Return NULL if absent. */
const char *cli_sim_dir(void);
const char *cli_shim_path(void);
const char *cli_apps_dir(void);

/* tools/env_help.c: the table of every environment variable collscope reads or sets
 * (include/collscope/env_vars.def), for the help texts. */
void cli_help_env(FILE *out);

/* Exit statuses shared by the subcommands. */
#define CLI_EXIT_USAGE 2    /* bad command line */
#define CLI_EXIT_NOEXEC 127 /* command not found / could not be started */

/* tools/cmd_run.c: the launcher, callable by other subcommands (demo). */
struct cli_run_opts {
  int nranks;           /* ranks to start; 0: wrap an existing launcher (execvp) */
  const char *hosts;    /* Slurm hostlist the ranks are spread over; NULL: hostname */
  const char *topology; /* --topology FILE: reorder the hosts by the topology plan */
  int sim;              /* prepend cli_sim_dir() to LD_LIBRARY_PATH */
  int no_shim;          /* do not LD_PRELOAD cli_shim_path() */
  int tag_output;       /* prefix each output line of rank R with "[R] " */
  int kill_on_fail;     /* terminate the other ranks when one fails (default 1) */
  double grace_s;       /* SIGTERM -> SIGKILL grace period (default 5 s) */
  int verbose;
  const char *job_id; /* COLLSCOPE_JOB_ID to set (NULL: keep or generate one) */
  char **env;         /* nenv "KEY=VALUE" strings set for every rank (last wins) */
  size_t nenv;
  char **argv; /* the command, NULL-terminated */
};
void cli_run_opts_init(struct cli_run_opts *o);
/* Start the ranks (nranks > 0) and wait for them: returns the worst rank status (exit
 * code, or 128+signal), or CLI_EXIT_USAGE / 1 for a launcher error (message printed).
 * nranks == 0: prepare the environment and execvp() argv; returns only on failure. */
int cli_run_launch(const struct cli_run_opts *o);

/* tools/cmd_demo.c: mkdir -p (0755); 0, or -1 with errno */
int cli_mkdirs(const char *path);
/* tools/demo_always_on.c: the demo's always-on step (the straggler job in summary mode) */
void demo_always_on(struct cli_run_opts *o, const char *absdir, char *app, char *size_s);

#endif
