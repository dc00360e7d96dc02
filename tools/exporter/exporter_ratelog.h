/* tools/exporter/exporter_ratelog.h: a log that writes at most one line per period and counts the
 * rest (libmicrohttpd writes one line per bad client; a flood must not fill a disk). */
#ifndef COLLSCOPE_TOOLS_EXPORTER_RATELOG_H
#define COLLSCOPE_TOOLS_EXPORTER_RATELOG_H
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

struct exp_ratelog {
  pthread_mutex_t mu;
  FILE *out;
  const char *prefix; /* "collscope exporter: http: " */
  int64_t period_ns;  /* at most one line per period */
  int64_t last_ns;    /* when the latest line was written (0: never) */
  uint64_t held;      /* messages since then that were not written */
  char latest[256];   /* the newest of them */
};

void exp_ratelog_init(struct exp_ratelog *l, FILE *out, const char *prefix, int64_t period_ns);
void exp_ratelog_free(struct exp_ratelog *l);
/* One message (a trailing newline is dropped, other control bytes become '?'): written at
 * once when the period since the latest line has passed, otherwise counted and kept. */
void exp_ratelog_msg(struct exp_ratelog *l, int64_t now_ns, const char *msg);
/* Called now and then: once the period has passed, one line with the count of the held
 * messages and the newest of them. */
void exp_ratelog_flush(struct exp_ratelog *l, int64_t now_ns);

#endif
