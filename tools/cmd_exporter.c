/* tools/cmd_exporter.c: `collscope exporter`, the per-node Prometheus exporter.
 *
 *   collscope exporter [--listen ADDR:PORT|none] [--textfile DIR] [--interval S]
 *                      [--otlp URL] [--otlp-interval S] [--shm-dir DIR] [--grace S] [--once]
 *
 * Follows every stats ring on this host that the exporter's user may read (exporter_state.c,
 * the checked reader `top` uses) every S seconds and serves the metrics on /metrics
 * (exporter_http.c) and/or writes DIR/collscope.prom (exporter_textfile.c) and/or pushes them to
 * an OpenTelemetry collector over OTLP/HTTP (exporter_otlp.c). The default
 * listen address is 127.0.0.1:9464 (loopback only: anything wider is an explicit choice).
 * --once prints one exposition on stdout after one pass and exits. SIGINT/SIGTERM stop it. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exporter/exporter_http.h"
#include "exporter/exporter_metrics.h"
#include "exporter/exporter_otlp.h"
#include "exporter/exporter_state.h"
#include "exporter/exporter_textfile.h"

#define EXP_DEFAULT_LISTEN "127.0.0.1:9464"
#define EXP_TEXTFILE_MIN_S 5.0  /* the textfile is rewritten at most this often */
#define EXP_OTLP_TIMEOUT_S 10.0 /* one OTLP export: connection, request and the response's status */

static volatile sig_atomic_t stop_flag;
static void on_stop(int sig) {
  (void)sig;
  stop_flag = 1;
}

void cmd_exporter_help(FILE *o) {
  fputs("usage: collscope exporter [--listen ADDR:PORT|none] [--textfile DIR] [--interval S]\n"
        "                          [--otlp URL] [--otlp-interval S] [--shm-dir DIR] [--grace S] [--once]\n"
        "  Prometheus exporter of the collscope stats rings on this host (one per node; the\n"
        "  jobs are not changed). Serves /metrics (OpenMetrics when the scraper asks for it).\n"
        "  --listen ADDR:PORT  where to serve (default " EXP_DEFAULT_LISTEN ", loopback only;\n"
        "                      0.0.0.0:9464 or [::]:9464 to be scraped from other hosts;\n"
        "                      port 0 picks a free port; none: no HTTP)\n"
        "  --textfile DIR      also write DIR/collscope.prom for node_exporter's textfile\n"
        "                      collector (atomically: temporary + rename)\n"
        "  --interval S        how often the rings' summaries are read (default 1; at most 256\n"
        "                      SDC-checked ops, link and hang records per rank between passes)\n"
        "  --otlp URL          also push the metrics to an OpenTelemetry collector over OTLP/HTTP\n"
        "                      (protobuf), e.g. http://127.0.0.1:4318/v1/metrics\n"
        "  --otlp-interval S   how often to push (default 30, at least 1)\n"
        "  --shm-dir DIR       where the rings are (default $COLLSCOPE_SHM_DIR or /dev/shm;\n"
        "                      the old name --dir is still accepted, with a warning)\n"
        "  --grace S           how long a ring of an exited process stays visible (default 300)\n"
        "  --once              one pass, the exposition on stdout, exit\n",
        o);
}

static bool num_arg(const char *s, double lo, double *out) {
  char *e;
  double v = strtod(s, &e);
  if (!*s || *e || !(v >= lo) || v > 1e9) return false;
  *out = v;
  return true;
}

static uint64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* one OTLP export of the exposition. 0 when the collector took it (2xx). A failed export is
 * logged once, and once more when exports work again (*failing tracks it; NULL: always log) */
static int otlp_push(const char *url, const char *text, size_t len, uint64_t start_ns, int *failing) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  size_t n = 0;
  char *body = exp_otlp_encode(text, len, realtime_ns(), start_ns, host, &n);
  char err[512] = "";
  int status = body ? exp_otlp_post(url, body, n, EXP_OTLP_TIMEOUT_S, err, sizeof err) : -1;
  if (!body) snprintf(err, sizeof err, "cannot encode the metrics");
  free(body);
  int ok = status >= 200 && status < 300;
  if (!ok && (!failing || !*failing)) {
    if (status > 0) snprintf(err, sizeof err, "the collector answered %d", status);
    fprintf(stderr, "collscope exporter: OTLP export to %s failed: %s%s\n", url, err,
            failing ? " (retried every --otlp-interval; logged again when it works)" : "");
  } else if (ok && failing && *failing)
    fprintf(stderr, "collscope exporter: OTLP exports to %s work again\n", url);
  if (failing) *failing = !ok;
  return ok ? 0 : -1;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

int cmd_exporter(int argc, char **argv) {
  const char *listen = EXP_DEFAULT_LISTEN, *textfile = NULL, *dir = NULL;
  double interval = 1.0, grace = 300.0;
  bool once = false;
  const char *otlp = NULL;
  double otlp_every = 30.0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    if (!strcmp(a, "--listen") && has)
      listen = argv[++i];
    else if (!strcmp(a, "--textfile") && has)
      textfile = argv[++i];
    else if ((!strcmp(a, "--shm-dir") || !strcmp(a, "--dir")) && has) {
      if (!strcmp(a, "--dir")) fputs("collscope exporter: --dir is deprecated, use --shm-dir\n", stderr);
      dir = argv[++i];
    } else if (!strcmp(a, "--interval") && has) {
      if (!num_arg(argv[++i], 0.05, &interval)) {
        fprintf(stderr, "collscope exporter: bad --interval %s\n", argv[i]);
        return CLI_EXIT_USAGE;
      }
    } else if (!strcmp(a, "--grace") && has) {
      if (!num_arg(argv[++i], 0, &grace)) {
        fprintf(stderr, "collscope exporter: bad --grace %s\n", argv[i]);
        return CLI_EXIT_USAGE;
      }
    } else if (!strcmp(a, "--otlp") && has) {
      otlp = argv[++i];
      if (!exp_otlp_url_ok(otlp)) {
        fprintf(stderr, "collscope exporter: bad --otlp %s (want http://HOST:PORT/PATH)\n", otlp);
        return CLI_EXIT_USAGE;
      }
    } else if (!strcmp(a, "--otlp-interval") && has) {
      if (!num_arg(argv[++i], 1, &otlp_every)) {
        fprintf(stderr, "collscope exporter: bad --otlp-interval %s (at least 1)\n", argv[i]);
        return CLI_EXIT_USAGE;
      }
    } else if (!strcmp(a, "--once"))
      once = true;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      cmd_exporter_help(stdout);
      return 0;
    } else {
      fprintf(stderr, "collscope exporter: unknown argument %s\n", a);
      cmd_exporter_help(stderr);
      return CLI_EXIT_USAGE;
    }
  }
  const char *from = dir ? "--shm-dir" : getenv("COLLSCOPE_SHM_DIR") ? "COLLSCOPE_SHM_DIR"
                                                                     : "the default";
  if (!dir) dir = cs_ring_dir();
  /* a ring directory that is not there is a mistake to say, not an empty host to serve */
  DIR *probe = opendir(dir);
  if (!probe) {
    fprintf(stderr, "collscope exporter: the ring directory %s (%s) cannot be read: %s\n", dir, from, strerror(errno));
    return 1;
  }
  closedir(probe);
  uint64_t start_ns = realtime_ns(); /* the cumulative OTLP points' start */
  struct exp_state st;
  if (exp_state_init(&st, dir, grace, stderr) != 0) {
    fputs("collscope exporter: cannot initialise\n", stderr);
    return 1;
  }
  if (once) {
    exp_state_poll(&st, exp_now_ns());
    pthread_mutex_lock(&st.mu);
    size_t len = 0;
    char *buf = exp_render_buf(&st, false, &len);
    pthread_mutex_unlock(&st.mu);
    int rc = buf ? 0 : 1;
    if (buf) fwrite(buf, 1, len, stdout);
    if (buf && textfile && exp_textfile_write(textfile, buf, len, stderr) != 0) rc = 1;
    if (buf && otlp && otlp_push(otlp, buf, len, start_ns, NULL) != 0) rc = 1;
    free(buf);
    exp_state_free(&st);
    return rc;
  }
  struct exp_http *http = NULL;
  if (strcmp(listen, "none") != 0) {
    char err[256];
    int port = -1;
    http = exp_http_start(listen, &st, &port, err, sizeof err);
    if (!http) {
      fprintf(stderr, "collscope exporter: %s\n", err);
      exp_state_free(&st);
      return 1;
    }
    char host[256];
    const char *c = strrchr(listen, ':');
    snprintf(host, sizeof host, "%.*s", (int)(c - listen), listen);
    fprintf(stderr, "collscope exporter: serving http://%s:%d/metrics (rings in %s)\n", host, port, dir);
  } else if (!textfile && !otlp) {
    fputs("collscope exporter: --listen none needs --textfile DIR or --otlp URL\n", stderr);
    exp_state_free(&st);
    return CLI_EXIT_USAGE;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  int64_t last_text = 0, last_otlp = 0;
  int otlp_failing = 0;
  while (!stop_flag) {
    int64_t now = exp_now_ns();
    exp_state_poll(&st, now);
    if (textfile && (last_text == 0 || (double)(now - last_text) / 1e9 >= EXP_TEXTFILE_MIN_S)) {
      size_t len = 0;
      pthread_mutex_lock(&st.mu);
      char *buf = exp_render_buf(&st, false, &len);
      pthread_mutex_unlock(&st.mu);
      if (buf) exp_textfile_write(textfile, buf, len, stderr);
      free(buf);
      last_text = now;
    }
    if (otlp && (last_otlp == 0 || (double)(now - last_otlp) / 1e9 >= otlp_every)) {
      size_t len = 0;
      pthread_mutex_lock(&st.mu);
      char *buf = exp_render_buf(&st, false, &len);
      pthread_mutex_unlock(&st.mu);
      if (buf) otlp_push(otlp, buf, len, start_ns, &otlp_failing);
      free(buf);
      last_otlp = now;
    }
    sleep_s(interval);
  }
  exp_http_stop(http);
  exp_state_free(&st);
  return 0;
}
