/* tools/exporter/exporter_otlp_post.c: one OTLP/HTTP export: a POST of the encoded request to
 * the collector's URL (plain http; the collector is normally on the same host or a sidecar),
 * bounded by a deadline for the connection, the request and the response's status line. The
 * response body is not needed: the status says whether the collector took the data. */
#include "exporter_otlp.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct url {
  char host[256], port[8], path[1024];
};

static int parse_url(const char *url, struct url *u) {
  if (strncmp(url, "http://", 7) != 0) return 0;
  const char *h = url + 7, *he, *after;
  if (*h == '[') {
    he = strchr(h, ']');
    if (!he) return 0;
    after = he + 1;
    h++;
  } else {
    he = h + strcspn(h, ":/");
    after = he;
  }
  size_t hn = (size_t)(he - h);
  if (hn == 0 || hn >= sizeof u->host) return 0;
  memcpy(u->host, h, hn);
  u->host[hn] = 0;
  snprintf(u->port, sizeof u->port, "80");
  if (*after == ':') {
    const char *pe = after + 1 + strspn(after + 1, "0123456789");
    size_t pn = (size_t)(pe - after - 1);
    if (pn == 0 || pn > 5 || atoi(after + 1) < 1 || atoi(after + 1) > 65535) return 0;
    snprintf(u->port, sizeof u->port, "%.*s", (int)pn, after + 1);
    after = pe;
  }
  if (*after && *after != '/') return 0;
  if (strlen(*after ? after : "/") >= sizeof u->path) return 0;
  for (const char *c = after; *c; c++)
    if ((unsigned char)*c <= ' ' || *c == 0x7f) return 0;
  snprintf(u->path, sizeof u->path, "%s", *after ? after : "/");
  return 1;
}

int exp_otlp_url_ok(const char *url) {
  struct url u;
  return parse_url(url, &u);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* waits for ev on fd until the deadline: 1 ready, 0 timed out, -1 error */
static int wait_fd(int fd, short ev, double deadline) {
  for (;;) {
    double left = deadline - now_s();
    if (left <= 0) return 0;
    struct pollfd p = {fd, ev, 0};
    int r = poll(&p, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    return r < 0 ? -1 : r > 0;
  }
}

static int send_all(int fd, const char *p, size_t n, double deadline) {
  while (n) {
    if (wait_fd(fd, POLLOUT, deadline) != 1) return -1;
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int exp_otlp_post(const char *url, const void *body, size_t len, double timeout_s, char *err, size_t errlen) {
  struct url u;
  if (!parse_url(url, &u)) {
    snprintf(err, errlen, "not an http://HOST:PORT/PATH URL");
    return -1;
  }
  double deadline = now_s() + timeout_s;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  int g = getaddrinfo(u.host, u.port, &hints, &ai);
  if (g != 0) {
    snprintf(err, errlen, "%s: %s", u.host, gai_strerror(g));
    return -1;
  }
  int fd = -1;
  for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    int soerr = errno;
    if (soerr == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 1) {
      socklen_t sl = sizeof soerr;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) break;
    }
    snprintf(err, errlen, "connect %s:%s: %s", u.host, u.port, soerr == EINPROGRESS ? "timed out" : strerror(soerr));
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd < 0) return -1;
  char head[1536];
  int hn = snprintf(head, sizeof head,
                    "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/x-protobuf\r\n"
                    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                    u.path, u.host, u.port, len);
  int status = -1;
  if (send_all(fd, head, (size_t)hn, deadline) != 0 || send_all(fd, body, len, deadline) != 0) {
    snprintf(err, errlen, "sending to %s:%s failed or timed out", u.host, u.port);
  } else {
    char resp[64];
    size_t got = 0;
    while (got < sizeof resp - 1 && !memchr(resp, '\n', got)) {
      if (wait_fd(fd, POLLIN, deadline) != 1) break;
      ssize_t r = recv(fd, resp + got, sizeof resp - 1 - got, 0);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    resp[got] = 0;
    int code;
    if (sscanf(resp, "HTTP/1.%*d %3d", &code) == 1 && code >= 100 && code <= 599)
      status = code;
    else
      snprintf(err, errlen, "no HTTP status from %s:%s", u.host, u.port);
  }
  close(fd);
  return status;
}
