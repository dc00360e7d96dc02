/* stats/core.c: the process-wide records every layer shares (stats/core.h): the
 * configuration (filled from the environment by shim/config.c), the process counters,
 * the one-line logger, and the start of collscope's own threads. */
#include "core.h"
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

struct cs_config cs_cfg;
struct cs_state cs_st;

void cs_log(int level, const char *fmt, ...) {
  if (level > cs_cfg.log_level) return;
  char line[1024];
  int n = snprintf(line, sizeof(line), "collscope[%d]: ", (int)getpid());
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && n < (int)sizeof(line)) n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof(line) - 1) n = (int)sizeof(line) - 2;
  if (n < 0) return;
  line[n++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w;
}

int cs_thread_start(pthread_t *th, void *(*fn)(void *), bool detached, const char *name) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 1 << 20);
  if (detached) pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(th, &a, fn, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&a);
  if (rc == 0) pthread_setname_np(*th, name);
  return rc;
}
