/* tests/apps/bootstrap.c: see bootstrap.h. Plain sockets + poll() with deadlines. */
#include "bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int ms_left(double deadline) {
  double l = deadline - now_s();
  return l <= 0 ? 0 : (int)(l * 1000) + 1;
}

static int master_addr(struct sockaddr_in *a) {
  const char *host = getenv("MASTER_ADDR");
  const char *port = getenv("MASTER_PORT");
  if (!host || !*host) host = "127.0.0.1";
  if (!port || !*port) {
    fprintf(stderr, "bootstrap: MASTER_PORT is not set (start the job with collscope run -n N)\n");
    return -1;
  }
  char *end;
  long p = strtol(port, &end, 10);
  if (*end || p <= 0 || p > 65535) {
    fprintf(stderr, "bootstrap: bad MASTER_PORT '%s'\n", port);
    return -1;
  }
  memset(a, 0, sizeof *a);
  a->sin_family = AF_INET;
  a->sin_port = htons((uint16_t)p);
  if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res) {
      fprintf(stderr, "bootstrap: cannot resolve MASTER_ADDR '%s'\n", host);
      return -1;
    }
    a->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
    freeaddrinfo(res);
  }
  return 0;
}

/* Move exactly len bytes, waiting at most until deadline. */
static int xfer(int fd, void *buf, size_t len, int sending, double deadline) {
  char *p = buf;
  while (len > 0) {
    struct pollfd pf = {.fd = fd, .events = sending ? POLLOUT : POLLIN};
    int r = poll(&pf, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1; /* timeout or error */
    ssize_t n = sending ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(fd, p, len, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return -1; /* error or peer closed */
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int bs_serve(const struct bs_kv *kv, size_t nkv, int requests) {
  struct sockaddr_in a;
  if (master_addr(&a)) return -1;
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) {
    perror("bootstrap: socket");
    return -1;
  }
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1024) != 0) {
    fprintf(stderr, "bootstrap: cannot listen on port %d: %s\n", ntohs(a.sin_port), strerror(errno));
    close(ls);
    return -1;
  }
  double deadline = now_s() + BS_IO_S;
  int served = 0, rc = 0;
  while (served < requests) {
    struct pollfd pf = {.fd = ls, .events = POLLIN};
    int r = poll(&pf, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      fprintf(stderr, "bootstrap: only %d of %d requests arrived within %d s (a peer died?)\n", served,
              requests, BS_IO_S);
      rc = -1;
      break;
    }
    int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    uint32_t klen;
    char key[256];
    if (xfer(c, &klen, 4, 0, deadline) == 0 && (klen = ntohl(klen)) < sizeof key &&
        xfer(c, key, klen, 0, deadline) == 0) {
      key[klen] = '\0';
      const struct bs_kv *hit = NULL;
      for (size_t i = 0; i < nkv; i++)
        if (!strcmp(kv[i].key, key)) hit = &kv[i];
      uint32_t vlen = htonl(hit ? (uint32_t)hit->len : 0);
      if (xfer(c, &vlen, 4, 1, deadline) == 0 && (!hit || xfer(c, (void *)hit->value, hit->len, 1, deadline) == 0))
        served++;
      if (!hit) fprintf(stderr, "bootstrap: request for unknown key '%s'\n", key);
    }
    close(c);
  }
  close(ls);
  return rc;
}

int bs_get(const char *key, void *value, size_t len) {
  struct sockaddr_in a;
  if (master_addr(&a)) return -1;
  size_t klen = strlen(key);
  if (klen >= 256 || len > BS_MAX_VALUE) return -1;
  double deadline = now_s() + BS_CONNECT_S;
  int fd = -1;
  for (;;) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      perror("bootstrap: socket");
      return -1;
    }
    int r = connect(fd, (struct sockaddr *)&a, sizeof a);
    if (r != 0 && errno == EINPROGRESS) {
      struct pollfd pf = {.fd = fd, .events = POLLOUT};
      int err = 0;
      socklen_t el = sizeof err;
      if (poll(&pf, 1, ms_left(deadline)) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
        r = 0;
      else
        errno = err ? err : ETIMEDOUT;
    }
    if (r == 0) break;
    int e = errno;
    close(fd);
    fd = -1;
    if (now_s() >= deadline) {
      fprintf(stderr, "bootstrap: cannot connect to rank 0's store at %s:%d within %d s: %s\n",
              inet_ntoa(a.sin_addr), ntohs(a.sin_port), BS_CONNECT_S, strerror(e));
      return -1;
    }
    /* rank 0 not listening yet: retry in 50 ms of the host's time. An absolute deadline on
     * CLOCK_MONOTONIC: on the simulator's modeled clock a relative sleep is the job's time,
     * and this wait for another process is not (docs/simulator.md "Host time") */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 50 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
  }
  double io = now_s() + BS_IO_S;
  uint32_t kl = htonl((uint32_t)klen), vl = 0;
  int rc = -1;
  if (xfer(fd, &kl, 4, 1, io) == 0 && xfer(fd, (void *)key, klen, 1, io) == 0 && xfer(fd, &vl, 4, 0, io) == 0) {
    vl = ntohl(vl);
    if (vl != len)
      fprintf(stderr, "bootstrap: key '%s': got %u bytes, expected %zu\n", key, vl, len);
    else if (xfer(fd, value, len, 0, io) == 0)
      rc = 0;
  }
  if (rc) fprintf(stderr, "bootstrap: fetching '%s' from rank 0 failed or timed out\n", key);
  close(fd);
  return rc;
}
