/* tools/dump/dump_args.c: the command line shared by the subcommands that read a dump
 * directory (report, trace): DIR, -o/--output FILE, --job ID, -j N, and where the command takes
 * them, --op NAME, --json, trace's selection and report's --layers/--shares. One parser, so both say the same things the same way. Also
 * their output file: a temporary beside it, renamed into place once written whole. And the
 * dtype / redop names as the SDC comparison numbers them. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collscope/schema.h"

int cli_dump_args_parse(const char *cmd, int argc, char **argv, unsigned flags, void (*usage)(FILE *),
                        struct cli_dump_args *out) {
  memset(out, 0, sizeof *out);
  bool with_op = flags & CLI_DUMP_ARGS_OP;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool is_op = with_op && strcmp(a, "--op") == 0, is_job = strcmp(a, "--job") == 0;
    const char **sel = NULL; /* trace's selection options */
    if (flags & CLI_DUMP_ARGS_SELECT) {
      if (strcmp(a, "--ranks") == 0)
        sel = &out->ranks;
      else if (strcmp(a, "--comm") == 0)
        sel = &out->comm;
      else if (strcmp(a, "--from") == 0)
        sel = &out->from;
      else if (strcmp(a, "--to") == 0)
        sel = &out->to;
      else if (strcmp(a, "--max-size") == 0)
        sel = &out->max_size;
      else if (strcmp(a, "--format") == 0)
        sel = &out->format;
    }
    if (flags & CLI_DUMP_ARGS_BALANCE) {
      if (strcmp(a, "--layers") == 0)
        sel = &out->layers;
      else if (strcmp(a, "--shares") == 0)
        sel = &out->shares;
    }
    if ((flags & CLI_DUMP_ARGS_JSON) && strcmp(a, "--json") == 0) {
      out->json = true;
    } else if ((flags & CLI_DUMP_ARGS_HTML) && strcmp(a, "--html") == 0) {
      out->html = true;
    } else if ((flags & CLI_DUMP_ARGS_BY_MODEL) && strcmp(a, "--by-model") == 0) {
      out->by_model = true;
    } else if (sel || is_op || is_job || strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "collscope %s: %s needs a value\n", cmd, a);
        usage(stderr);
        return CLI_EXIT_USAGE;
      }
      if (sel)
        *sel = argv[++i];
      else if (is_op)
        out->op = argv[++i];
      else if (is_job)
        out->job = argv[++i];
      else
        out->outpath = argv[++i];
    } else if (strncmp(a, "-j", 2) == 0) { /* -j N or -jN: reading threads */
      const char *v = a[2] ? a + 2 : i + 1 < argc ? argv[++i]
                                                  : NULL;
      char *end = NULL;
      long n = v ? strtol(v, &end, 10) : 0;
      if (!v || !*v || *end || n < 1 || n > 1024) {
        fprintf(stderr, "collscope %s: %s needs a thread count from 1 to 1024\n", cmd, a);
        usage(stderr);
        return CLI_EXIT_USAGE;
      }
      out->jobs = (unsigned)n;
    } else if (strncmp(a, "--job=", 6) == 0) {
      out->job = a + 6;
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
  if (out->json && out->html) {
    fprintf(stderr, "collscope %s: --json and --html exclude each other\n", cmd);
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  if (!out->dir) {
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  return -1;
}

FILE *cli_out_open(const char *cmd, const char *path, char **tmp) {
  *tmp = NULL;
  if (!path || strcmp(path, "-") == 0) return stdout;
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    /* a device, FIFO or socket (/dev/null, a pipe to a pager): written where it is; the
     * temporary-and-rename below would replace it with a regular file (for root, /dev/null) */
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    FILE *o = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!o) {
      int e = errno;
      if (fd >= 0) close(fd);
      fprintf(stderr, "collscope %s: cannot write %s: %s\n", cmd, path, strerror(e));
    }
    return o;
  }
  const char *slash = strrchr(path, '/');
  int dirlen = slash ? (int)(slash - path) + 1 : 0;
  if (asprintf(tmp, "%.*s.%s.XXXXXX", dirlen, path, slash ? slash + 1 : path) < 0) {
    fputs("collscope: out of memory\n", stderr);
    exit(1);
  }
  int fd = mkostemp(*tmp, O_CLOEXEC); /* O_CREAT|O_EXCL: a planted name or link fails */
  FILE *o = NULL;
  if (fd >= 0) {
    mode_t um = umask(0);
    umask(um);
    (void)fchmod(fd, 0666 & ~um); /* as a plain create would; on failure mkstemp's 0600 stays */
    o = fdopen(fd, "w");
    if (!o) {
      int e = errno;
      close(fd);
      unlink(*tmp);
      errno = e;
    }
  }
  if (!o) {
    fprintf(stderr, "collscope %s: cannot write %s: %s\n", cmd, path, strerror(errno));
    free(*tmp);
    *tmp = NULL;
  }
  return o;
}

int cli_out_close(const char *cmd, FILE *o, char *tmp, const char *path, int rc) {
  if (fflush(o) != 0 || ferror(o)) rc = 1;
  if (o != stdout && fclose(o) != 0) rc = 1;
  if (rc) fprintf(stderr, "collscope %s: write error: %s\n", cmd, strerror(errno));
  if (tmp) {
    if (!rc && rename(tmp, path) != 0) {
      fprintf(stderr, "collscope %s: cannot rename %s to %s: %s\n", cmd, tmp, path, strerror(errno));
      rc = 1;
    }
    if (rc) unlink(tmp);
    free(tmp);
  }
  return rc;
}

int cli_sdc_dtype(const char *name) {
  for (int i = 0; name && i < CS_DTYPE_COUNT; i++)
    if (strcmp(cs_dtype_table[i].name, name) == 0) return i;
  return -1;
}

int cli_sdc_redop(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < 5; i++)
    if (strcmp(cs_redop_name(i), name) == 0) return i;
  return 5;
}
