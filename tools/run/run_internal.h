/* tools/run/run_internal.h: what the launcher's files share (`collscope run`, tools/cli.h
 * cli_run_launch):
 *   cmd_run.c     the command line
 *   run_launch.c  the ranks: started, waited for, signals forwarded, kill-on-fail
 *   run_env.c     the environment every rank (or a wrapped launcher) gets
 *   run_output.c  --tag-output: each rank's output lines prefixed "[R] " */
#ifndef COLLSCOPE_TOOLS_RUN_INTERNAL_H
#define COLLSCOPE_TOOLS_RUN_INTERNAL_H
#include <stddef.h>

#include "cli.h"

#define RUN_MAX_RANKS 4096
#define RUN_LINE_BUF 16384

/* cmd_run.c: a "collscope run: ..." line on stderr (stdout flushed first) */
void run_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* run_env.c */
int run_valid_kv(const char *kv); /* "KEY=VALUE" with a non-empty key */
int run_put_kv(const char *kv);   /* setenv() of a valid KEY=VALUE; -1 when KEY is too long */
/* Environment common to all ranks (and to a wrapped launcher), set in this process:
 * COLLSCOPE_JOB_ID, the simulator's LD_LIBRARY_PATH, the shim's LD_PRELOAD. 0, or -1 (said). */
int run_prepare_env(const struct cli_run_opts *o);
/* A free TCP port on 127.0.0.1 (bind port 0, read it back, close); -1 on failure. */
int run_free_port(void);

/* run_output.c */
struct run_outbuf { /* one rank's stdout or stderr pipe in --tag-output mode */
  int fd;           /* read end, -1 when closed */
  int dest;         /* 1 or 2 */
  int rank;
  int midline; /* a partial line was already forwarded */
  size_t len;
  char buf[RUN_LINE_BUF];
};
/* Forward data[0..len) of ob, tagged unless it continues a forwarded partial line;
 * add_newline terminates an unterminated last line (EOF). */
void run_emit(struct run_outbuf *ob, const char *data, size_t len, int add_newline);
/* Read what is available; forward complete lines. Returns 0 on EOF/error (closed). */
int run_pump(struct run_outbuf *ob);

#endif
