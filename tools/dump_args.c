/* tools/dump_args.c: the command line shared by the subcommands that read a dump
 * directory (report, trace): DIR, -o/--output FILE, -j/--jobs N, and where the command takes them,
 * --op NAME and --json. One parser, so both say the same things the same way. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cli_dump_args_parse(const char *cmd, int argc, char **argv, unsigned flags, void (*usage)(FILE *),
                        struct cli_dump_args *out) {
  memset(out, 0, sizeof *out);
  bool with_op = flags & CLI_DUMP_ARGS_OP;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool is_op = with_op && strcmp(a, "--op") == 0;
    if ((flags & CLI_DUMP_ARGS_JSON) && strcmp(a, "--json") == 0) {
      out->json = true;
    } else if (is_op || strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "collscope %s: %s needs a value\n", cmd, a);
        usage(stderr);
        return CLI_EXIT_USAGE;
      }
      if (is_op) out->op = argv[++i];
      else out->outpath = argv[++i];
    } else if (strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0 || strncmp(a, "--jobs=", 7) == 0) {
      const char *eq = strchr(a, '='), *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
      char *end = NULL;
      long n = v ? strtol(v, &end, 10) : 0;
      if (!v || !*v || *end || n < 1 || n > 1024) {
        fprintf(stderr, "collscope %s: %s needs a thread count from 1 to 1024\n", cmd, a);
        usage(stderr);
        return CLI_EXIT_USAGE;
      }
      out->jobs = (unsigned)n;
    } else if (with_op && strncmp(a, "--op=", 5) == 0) {
      out->op = a + 5;
    } else if (strncmp(a, "--output=", 9) == 0) {
      out->outpath = a + 9;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "collscope %s: unknown option %s\n", cmd, a);
      usage(stderr);
      return CLI_EXIT_USAGE;
    } else if (!out->dir) {
      out->dir = a;
    } else {
      fprintf(stderr, "collscope %s: unexpected argument %s\n", cmd, a);
      usage(stderr);
      return CLI_EXIT_USAGE;
    }
  }
  if (!out->dir) {
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  return -1;
}
