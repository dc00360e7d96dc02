/* tools/exporter/exporter_ratelog.c: at most one log line per period; the messages in between are
 * counted and the newest is kept for the next line (see exporter_ratelog.h). */
#include "exporter_ratelog.h"

#include <stdbool.h>
#include <string.h>

void exp_ratelog_init(struct exp_ratelog *l, FILE *out, const char *prefix, int64_t period_ns) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
  l->out = out;
  l->prefix = prefix;
  l->period_ns = period_ns;
}

void exp_ratelog_free(struct exp_ratelog *l) { pthread_mutex_destroy(&l->mu); }

static bool due(const struct exp_ratelog *l, int64_t now_ns) {
  return l->last_ns == 0 || now_ns - l->last_ns >= l->period_ns;
}

/* the held count and the newest held message; called with mu held and something held */
static void write_held(struct exp_ratelog *l, int64_t now_ns) {
  if (l->out)
    fprintf(l->out, "%s%llu more message%s since the previous line, the latest: %s\n", l->prefix,
            (unsigned long long)l->held, l->held == 1 ? "" : "s", l->latest);
  l->held = 0;
  l->last_ns = now_ns;
}

void exp_ratelog_msg(struct exp_ratelog *l, int64_t now_ns, const char *msg) {
  char clean[sizeof l->latest];
  size_t n = 0;
  for (; msg[n] && n + 1 < sizeof clean; n++) clean[n] = (msg[n] >= 32 && msg[n] < 127) ? msg[n] : '?';
  while (n > 0 && clean[n - 1] == '?' && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) n--;
  clean[n] = 0;
  pthread_mutex_lock(&l->mu);
  if (due(l, now_ns)) {
    if (l->out && l->held)
      fprintf(l->out, "%s%s (and %llu earlier message%s held back)\n", l->prefix, clean, (unsigned long long)l->held,
              l->held == 1 ? "" : "s");
    else if (l->out)
      fprintf(l->out, "%s%s\n", l->prefix, clean);
    l->held = 0;
    l->last_ns = now_ns;
  } else {
    l->held++;
    memcpy(l->latest, clean, n + 1);
  }
  pthread_mutex_unlock(&l->mu);
}

void exp_ratelog_flush(struct exp_ratelog *l, int64_t now_ns) {
  pthread_mutex_lock(&l->mu);
  if (l->held && due(l, now_ns)) write_held(l, now_ns);
  pthread_mutex_unlock(&l->mu);
}
