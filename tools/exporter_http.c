/* tools/exporter_http.c: /metrics over HTTP with libmicrohttpd (its own thread, a bounded
 * number of connections and a timeout). A scrape renders the state under its mutex; the
 * rings themselves are read only by the poller, so a scrape never waits on a ring. */
#include "exporter_http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "exporter_metrics.h"

struct exp_http {
  struct MHD_Daemon *d;
  struct exp_state *s;
};

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
  if (*con_cls == NULL) { /* first call: headers only */
    *con_cls = h;
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

struct exp_http *exp_http_start(const char *listen, struct exp_state *s, int *port, char *err, size_t errlen) {
  struct sockaddr_storage sa;
  unsigned salen;
  if (exp_parse_listen(listen, &sa, &salen, err, errlen) != 0) return NULL;
  struct exp_http *h = calloc(1, sizeof *h);
  if (!h) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  h->s = s;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (sa.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)32, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                          MHD_OPTION_END);
  if (!h->d) {
    snprintf(err, errlen, "cannot listen on %s (address in use or not available?)", listen);
    free(h);
    return NULL;
  }
  const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  *port = i ? (int)i->port : -1;
  return h;
}

void exp_http_stop(struct exp_http *h) {
  if (!h) return;
  MHD_stop_daemon(h->d);
  free(h);
}
