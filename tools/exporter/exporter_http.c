/* tools/exporter/exporter_http.c: /metrics over HTTP with libmicrohttpd, run from the exporter's own
 * HTTP thread (MHD_run_wait), so that every libmicrohttpd callback and the connection table
 * below live on that one thread. A scrape renders the state under its mutex; the rings
 * themselves are read only by the poller, so a scrape never waits on a ring.
 *
 * Slow clients cannot lock scrapers out (libmicrohttpd's own timeout is an idle timeout,
 * reset by every byte). The table tracks each connection's phase:
 *   waiting    from accept, or from the end of the previous response (keep-alive), until
 *              its request header is complete (the access handler's first call);
 *   in request until the response is done (libmicrohttpd's completion callback).
 * A connection waiting longer than EXP_HTTP_HEADER_DEADLINE_S after accept (a kept-alive
 * one that was answered 2xx/3xx: EXP_HTTP_IDLE_TIMEOUT_S after that response) is shut
 * down: absolute, from the start of the wait, whatever trickles in. A new connection over
 * the per-client cap or the total cap shuts down the oldest waiting connection of that
 * client (or of all) to make room; only when every connection in question is in a request
 * is the new one turned away. Shutting down
 * is shutdown(2) of the socket from this thread while the connection is in the table (its
 * descriptor is still libmicrohttpd's and open); libmicrohttpd then reads the end of
 * stream and closes it. No timer races: the order of arrival decides who is evicted. */
#include "exporter_http.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "exporter_metrics.h"
#include "exporter_ratelog.h"

#define EXP_HTTP_MAX_CONNS 32        /* connections served at once */
#define EXP_HTTP_PER_CLIENT 8        /* of them from one client address */
#define EXP_HTTP_HEADER_DEADLINE_S 5 /* to deliver a whole request header after accept */
#define EXP_HTTP_IDLE_TIMEOUT_S 30   /* libmicrohttpd's idle timeout (any phase), and the
                                        deadline of a kept-alive connection's next header */
/* tracked: the live ones and those shut down that libmicrohttpd has not closed yet (it
 * accepts at most a few per pass and closes the shut-down ones on its next pass) */
#define EXP_HTTP_TABLE (4 * EXP_HTTP_MAX_CONNS)
#define EXP_HTTP_WAIT_MS 250 /* the loop's longest sleep: how soon a stop is seen */
#define EXP_HTTP_LOG_PERIOD_NS (60 * 1000000000LL)

struct conn {
  struct MHD_Connection *c; /* NULL: a free slot */
  int fd;
  int family;
  unsigned char addr[16]; /* the client's address (no port): the per-client cap's key */
  int64_t wait_since_ns;  /* start of the current wait for a request header */
  uint64_t wait_seq;      /* order of the waits: the oldest is evicted first */
  bool in_request;
  bool served;  /* a request was answered below 400: the wait is a kept-alive one */
  bool closing; /* shut down here; libmicrohttpd has not closed it yet */
};

struct exp_http {
  struct MHD_Daemon *d;
  struct exp_state *s;
  pthread_t thread;
  volatile int stop; /* read by the thread, set by exp_http_stop (with __atomic) */
  struct conn conns[EXP_HTTP_TABLE];
  uint64_t seq;
  struct exp_ratelog log;
  /* the status of an error response libmicrohttpd queued itself, from its log line, until
   * the request's end or its connection's close counts it (0: none) */
  unsigned logged_status;
};

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void count_bad(struct exp_http *h, enum exp_bad_reason why) {
  __atomic_fetch_add(&h->s->bad_requests[why], 1, __ATOMIC_RELAXED);
}

/* a request answered STATUS (>= 400) counted under its status's reason */
static void count_status(struct exp_http *h, unsigned status) {
  enum exp_bad_reason why = status == 400   ? EXP_BAD_BAD_REQUEST
                            : status == 404 ? EXP_BAD_NOT_FOUND
                            : status == 405 ? EXP_BAD_METHOD
                            : status == 413 ? EXP_BAD_TOO_LARGE
                            : status == 414 ? EXP_BAD_URI_TOO_LONG
                            : status == 431 ? EXP_BAD_HEADER_LARGE
                            : status == 505 ? EXP_BAD_VERSION
                            : status >= 500 ? EXP_BAD_SERVER_ERROR
                                            : EXP_BAD_REJECTED;
  count_bad(h, why);
}

static void start_wait(struct exp_http *h, struct conn *k, int64_t now) {
  k->in_request = false;
  k->wait_since_ns = now;
  k->wait_seq = ++h->seq;
}

/* an idle kept-alive connection is no bad request: it is closed, not counted */
static void evict(struct exp_http *h, struct conn *k, enum exp_bad_reason why) {
  shutdown(k->fd, SHUT_RDWR);
  k->closing = true;
  if (!k->served) count_bad(h, why);
}

static bool same_client(const struct conn *a, const struct conn *b) {
  return a->family == b->family && memcmp(a->addr, b->addr, sizeof a->addr) == 0;
}

/* the oldest live connection but NEW waiting for its header, of NEW's client or of all */
static struct conn *oldest_waiting(struct exp_http *h, const struct conn *new, bool same_client_only) {
  struct conn *best = NULL;
  for (int i = 0; i < EXP_HTTP_TABLE; i++) {
    struct conn *k = &h->conns[i];
    if (!k->c || k->closing || k->in_request || k == new || (same_client_only && !same_client(k, new))) continue;
    if (!best || k->wait_seq < best->wait_seq) best = k;
  }
  return best;
}

/* a new connection K (already in the table): make room under the caps, or turn it away */
static void admit(struct exp_http *h, struct conn *k) {
  unsigned total = 0, client = 0;
  for (int i = 0; i < EXP_HTTP_TABLE; i++) {
    const struct conn *o = &h->conns[i];
    if (!o->c || o->closing || o == k) continue;
    total++;
    if (same_client(o, k)) client++;
  }
  if (client >= EXP_HTTP_PER_CLIENT) {
    struct conn *v = oldest_waiting(h, k, true);
    if (!v) {
      evict(h, k, EXP_BAD_REFUSED);
      return;
    }
    evict(h, v, EXP_BAD_EVICTED);
    total--;
  }
  if (total >= EXP_HTTP_MAX_CONNS) {
    struct conn *v = oldest_waiting(h, k, false);
    if (!v) {
      evict(h, k, EXP_BAD_REFUSED);
      return;
    }
    evict(h, v, EXP_BAD_EVICTED);
  }
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
  struct exp_http *h = cls;
  if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
    struct conn *k = *socket_context;
    /* an error response libmicrohttpd sent before any request end could be reported (a
     * request line too long for its buffer: 414, an unknown HTTP version: 505) and closed
     * on: known from its log line only, counted here */
    /* (a connection shut down here was counted then: evicted, refused, header_timeout) */
    if (h->logged_status && !(k && k->closing)) count_status(h, h->logged_status);
    h->logged_status = 0;
    if (k) memset(k, 0, sizeof *k);
    *socket_context = NULL;
    return;
  }
  const union MHD_ConnectionInfo *fdi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  struct conn *k = NULL;
  for (int i = 0; i < EXP_HTTP_TABLE && !k; i++)
    if (!h->conns[i].c) k = &h->conns[i];
  if (!fdi) return; /* cannot happen: untracked, libmicrohttpd's idle timeout still applies */
  if (!k) {         /* the table is full of connections being closed: turn this one away */
    shutdown(fdi->connect_fd, SHUT_RDWR);
    count_bad(h, EXP_BAD_REFUSED);
    return;
  }
  memset(k, 0, sizeof *k);
  k->c = c;
  k->fd = fdi->connect_fd;
  if (ai && ai->client_addr) {
    k->family = ai->client_addr->sa_family;
    if (k->family == AF_INET)
      memcpy(k->addr, &((const struct sockaddr_in *)(const void *)ai->client_addr)->sin_addr, 4);
    else if (k->family == AF_INET6)
      memcpy(k->addr, &((const struct sockaddr_in6 *)(const void *)ai->client_addr)->sin6_addr, 16);
  }
  start_wait(h, k, mono_ns());
  *socket_context = k;
  admit(h, k);
}

static struct conn *conn_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return i ? i->socket_context : NULL;
}

/* a request line was read: makes libmicrohttpd report the end of every request (also those
 * it rejects itself before the handler runs) to on_completed */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)cls;
  (void)uri;
  (void)c;
  return NULL;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
  (void)con_cls;
  (void)toe;
  struct exp_http *h = cls;
  const union MHD_ConnectionInfo *st = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
  unsigned status = st ? st->http_status : 0;
  if (status >= 400) count_status(h, status);
  if (h->logged_status && (status == h->logged_status || status == 0)) {
    if (status == 0) count_status(h, h->logged_status); /* ended before its status was kept */
    h->logged_status = 0;
  }
  struct conn *k = conn_of(c);
  if (k && k->c == c) { /* kept alive: waits for its next request */
    k->served = status > 0 && status < 400;
    start_wait(h, k, mono_ns());
  }
}

/* every waiting connection past the deadline; returns ms until the next one is due */
static int enforce_deadline(struct exp_http *h, int64_t now) {
  const int64_t first = (int64_t)EXP_HTTP_HEADER_DEADLINE_S * 1000000000LL;
  const int64_t again = (int64_t)EXP_HTTP_IDLE_TIMEOUT_S * 1000000000LL;
  int64_t next = (int64_t)EXP_HTTP_WAIT_MS * 1000000LL;
  for (int i = 0; i < EXP_HTTP_TABLE; i++) {
    struct conn *k = &h->conns[i];
    if (!k->c || k->closing || k->in_request) continue;
    int64_t left = k->wait_since_ns + (k->served ? again : first) - now;
    if (left <= 0)
      evict(h, k, EXP_BAD_HEADER_TIMEOUT);
    else if (left < next)
      next = left;
  }
  return (int)(next / 1000000) + 1;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  struct exp_http *h = cls;
  char msg[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  /* libmicrohttpd 0.9.75, connection.c transmit_error_response: "Error processing request
   * (HTTP response code is %u (...)). Closing connection." */
  const char *code = strstr(msg, "HTTP response code is ");
  unsigned status = 0;
  if (code && sscanf(code + 22, "%u", &status) == 1 && status >= 400 && status < 600) {
    if (h->logged_status) count_status(h, h->logged_status); /* the previous one never ended */
    h->logged_status = status;
  }
  exp_ratelog_msg(&h->log, mono_ns(), msg);
}

static void *http_main(void *arg) {
  struct exp_http *h = arg;
  int wait_ms = EXP_HTTP_WAIT_MS;
  while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
    MHD_run_wait(h->d, wait_ms);
    int64_t now = mono_ns();
    wait_ms = enforce_deadline(h, now);
    exp_ratelog_flush(&h->log, now);
  }
  return NULL;
}

int exp_parse_listen(const char *listen, struct sockaddr_storage *sa, unsigned *salen, char *err, size_t errlen) {
  char host[256];
  const char *port;
  if (listen[0] == '[') {
    const char *e = strchr(listen, ']');
    if (!e || e[1] != ':' || (size_t)(e - listen - 1) >= sizeof host) goto bad;
    memcpy(host, listen + 1, (size_t)(e - listen - 1));
    host[e - listen - 1] = 0;
    port = e + 2;
  } else {
    const char *c = strrchr(listen, ':');
    if (!c || (size_t)(c - listen) >= sizeof host) goto bad;
    memcpy(host, listen, (size_t)(c - listen));
    host[c - listen] = 0;
    port = c + 1;
  }
  char *end;
  long p = strtol(port, &end, 10);
  if (!*port || *end || p < 0 || p > 65535) goto bad;
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(*host ? host : NULL, port, &hints, &ai);
  if (rc != 0 || !ai) {
    snprintf(err, errlen, "--listen %s: %s (a numeric address is needed)", listen, gai_strerror(rc));
    return -1;
  }
  memcpy(sa, ai->ai_addr, ai->ai_addrlen);
  *salen = (unsigned)ai->ai_addrlen;
  freeaddrinfo(ai);
  return 0;
bad:
  snprintf(err, errlen, "--listen %s: expected ADDR:PORT or [ADDR6]:PORT", listen);
  return -1;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len,
                             enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
  if (!r) {
    if (mode == MHD_RESPMEM_MUST_FREE) free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_len, void **con_cls) {
  (void)version;
  (void)upload;
  struct exp_http *h = cls;
  if (*con_cls == NULL) { /* first call: the header is complete */
    *con_cls = h;
    struct conn *k = conn_of(c);
    if (k && k->c == c) k->in_request = true;
    return MHD_YES;
  }
  if (*upload_len) {
    *upload_len = 0;
    return MHD_YES;
  } /* discard a body */
  static char notfound[] = "not found: the metrics are at /metrics\n";
  static char badmethod[] = "only GET and HEAD\n";
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", badmethod, sizeof badmethod - 1, MHD_RESPMEM_PERSISTENT);
  if (strcmp(url, "/metrics") != 0)
    return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", notfound, sizeof notfound - 1, MHD_RESPMEM_PERSISTENT);
  bool om = exp_wants_openmetrics(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
  size_t len = 0;
  pthread_mutex_lock(&h->s->mu);
  char *body = exp_render_buf(h->s, om, &len);
  pthread_mutex_unlock(&h->s->mu);
  if (!body) {
    static char oom[] = "out of memory\n";
    return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", oom, sizeof oom - 1, MHD_RESPMEM_PERSISTENT);
  }
  return reply(c, MHD_HTTP_OK, om ? EXP_CT_OPENMETRICS : EXP_CT_TEXT, body, len, MHD_RESPMEM_MUST_FREE);
}

/* Bind the address once (as libmicrohttpd will, SO_REUSEADDR) and let it go: a port in use
 * or an address not on this host is named with the system's error before libmicrohttpd
 * tries (whose own line names the port argument, 0 here, not the address's). */
static int probe_bind(const char *listen, const struct sockaddr_storage *sa, unsigned salen, char *err, size_t errlen) {
  int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(err, errlen, "cannot listen on %s: %s", listen, strerror(errno));
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (sa->ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  int rc = bind(fd, (const struct sockaddr *)sa, salen);
  int e = errno;
  close(fd);
  if (rc == 0) return 0;
  unsigned p = sa->ss_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port)
                                         : ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
  snprintf(err, errlen, "cannot listen on %s: port %u: %s%s", listen, p, strerror(e),
           e == EADDRINUSE ? " (another process listens there: pick another port with --listen)" : "");
  return -1;
}

struct exp_http *exp_http_start(const char *listen, struct exp_state *s, int *port, char *err, size_t errlen) {
  struct sockaddr_storage sa;
  unsigned salen;
  if (exp_parse_listen(listen, &sa, &salen, err, errlen) != 0) return NULL;
  if (probe_bind(listen, &sa, salen, err, errlen) != 0) return NULL;
  struct exp_http *h = calloc(1, sizeof *h);
  if (!h) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  h->s = s;
  exp_ratelog_init(&h->log, s->log, "collscope exporter: http: ", EXP_HTTP_LOG_PERIOD_NS);
  /* no internal thread: http_main runs libmicrohttpd, so every callback is on one thread;
   * select(2), level-triggered (libmicrohttpd 0.9.75's epoll mode missed a client's end of
   * stream that arrived during a response on a kept-alive connection) */
  unsigned flags = MHD_USE_ERROR_LOG;
  if (sa.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
                          MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)EXP_HTTP_TABLE, MHD_OPTION_CONNECTION_TIMEOUT,
                          (unsigned)EXP_HTTP_IDLE_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                          MHD_OPTION_URI_LOG_CALLBACK, on_uri, h, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                          MHD_OPTION_END);
  if (!h->d) {
    snprintf(err, errlen, "cannot listen on %s (address in use or not available?)", listen);
    exp_ratelog_free(&h->log);
    free(h);
    return NULL;
  }
  const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  *port = i ? (int)i->port : -1;
  if (pthread_create(&h->thread, NULL, http_main, h) != 0) {
    snprintf(err, errlen, "cannot start the HTTP thread");
    MHD_stop_daemon(h->d);
    exp_ratelog_free(&h->log);
    free(h);
    return NULL;
  }
  return h;
}

void exp_http_stop(struct exp_http *h) {
  if (!h) return;
  __atomic_store_n(&h->stop, 1, __ATOMIC_RELEASE);
  pthread_join(h->thread, NULL);
  MHD_stop_daemon(h->d);
  exp_ratelog_flush(&h->log, INT64_MAX); /* the count of what was held back, whenever */
  exp_ratelog_free(&h->log);
  free(h);
}
