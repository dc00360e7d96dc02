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
      return cli_help("run", stdout);
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
