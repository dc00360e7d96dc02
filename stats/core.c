/* stats/core.c: the process-wide records every layer shares (stats/core.h): the
 * configuration (filled from the environment by shim/config.c), the process counters,
 * and the one-line logger. */
#include "core.h"
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
