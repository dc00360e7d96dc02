/* tools/cmd_exporter.c: `collscope exporter`, the per-node Prometheus exporter.
 *
 *   collscope exporter [--listen ADDR:PORT|none] [--textfile DIR] [--interval S]
 *                      [--shm-dir DIR] [--grace S] [--once]
 *
 * Follows every stats ring on this host that the exporter's user may read (exporter_state.c,
 * the checked reader `top` uses) every S seconds and serves the metrics on /metrics
 * (exporter_http.c) and/or writes DIR/collscope.prom (exporter_textfile.c). The default
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

#include "exporter/exporter_http.h"
#include "exporter/exporter_metrics.h"
#include "exporter/exporter_state.h"
#include "exporter/exporter_textfile.h"

#define EXP_DEFAULT_LISTEN "127.0.0.1:9464"
#define EXP_TEXTFILE_MIN_S 5.0 /* the textfile is rewritten at most this often */

static volatile sig_atomic_t stop_flag;
static void on_stop(int sig) {
  (void)sig;
  stop_flag = 1;
}

void cmd_exporter_help(FILE *o) {
  fputs("usage: collscope exporter [--listen ADDR:PORT|none] [--textfile DIR] [--interval S]\n"
        "                          [--shm-dir DIR] [--grace S] [--once]\n"
        "  Prometheus exporter of the collscope stats rings on this host (one per node; the\n"
        "  jobs are not changed). Serves /metrics (OpenMetrics when the scraper asks for it).\n"
        "  --listen ADDR:PORT  where to serve (default " EXP_DEFAULT_LISTEN ", loopback only;\n"
        "                      0.0.0.0:9464 or [::]:9464 to be scraped from other hosts;\n"
        "                      port 0 picks a free port; none: no HTTP)\n"
        "  --textfile DIR      also write DIR/collscope.prom for node_exporter's textfile\n"
        "                      collector (atomically: temporary + rename)\n"
        "  --interval S        how often the rings' summaries are read (default 1; at most 256\n"
        "                      SDC-checked ops, link and hang records per rank between passes)\n"
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

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

int cmd_exporter(int argc, char **argv) {
  const char *listen = EXP_DEFAULT_LISTEN, *textfile = NULL, *dir = NULL;
  double interval = 1.0, grace = 300.0;
  bool once = false;
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
  } else if (!textfile) {
    fputs("collscope exporter: --listen none needs --textfile DIR\n", stderr);
    exp_state_free(&st);
    return CLI_EXIT_USAGE;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  int64_t last_text = 0;
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
    sleep_s(interval);
  }
  exp_http_stop(http);
  exp_state_free(&st);
  return 0;
}
