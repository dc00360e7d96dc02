/* tools/cli.h: the collscope CLI's subcommand entry points and shared helpers.
 * Each subcommand lives in its own cmd_*.c and returns a process exit status. */
#ifndef COLLSCOPE_TOOLS_CLI_H
#define COLLSCOPE_TOOLS_CLI_H

int cmd_run(int argc, char **argv);     /* tools/cmd_run.c */
int cmd_demo(int argc, char **argv);    /* tools/cmd_demo.c */
int cmd_report(int argc, char **argv);  /* tools/cmd_report.c */
int cmd_trace(int argc, char **argv);   /* tools/cmd_trace.c */

/* Locations of collscope's own artefacts, found relative to the running
 * executable (build tree or install prefix) or from env overrides:
 * COLLSCOPE_SIM_DIR, COLLSCOPE_SHIM, COLLSCOPE_APPS_DIR. Return NULL if absent. */
const char *cli_sim_dir(void);
const char *cli_shim_path(void);
const char *cli_apps_dir(void);

#endif
