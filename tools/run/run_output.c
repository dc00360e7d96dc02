/* tools/run/run_output.c: `collscope run --tag-output`: each rank's stdout and stderr read from
 * a pipe and forwarded a whole line at a time with a "[R] " prefix (an over-long line in
 * pieces, tagged once); writes that fail drop the output, never the job. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "run_internal.h"

static void write_all(int fd, const struct iovec *iov, int n) {
  struct iovec v[4];
  memcpy(v, iov, (size_t)n * sizeof *v);
  int i = 0;
  while (i < n) {
    ssize_t w = writev(fd, v + i, n - i);
    if (w < 0) {
      if (errno == EINTR) continue;
      return; /* EPIPE etc.: drop the output, keep running the job */
    }
    while (i < n && (size_t)w >= v[i].iov_len) {
      w -= (ssize_t)v[i].iov_len;
      i++;
    }
    if (i < n) {
      v[i].iov_base = (char *)v[i].iov_base + w;
      v[i].iov_len -= (size_t)w;
    }
  }
}

void run_emit(struct run_outbuf *ob, const char *data, size_t len, int add_newline) {
  char tag[24];
  int tl = snprintf(tag, sizeof tag, "[%d] ", ob->rank);
  struct iovec iov[3];
  int n = 0;
  if (!ob->midline) {
    iov[n].iov_base = tag;
    iov[n].iov_len = (size_t)tl;
    n++;
  }
  iov[n].iov_base = (void *)data;
  iov[n].iov_len = len;
  n++;
  if (add_newline) {
    iov[n].iov_base = "\n";
    iov[n].iov_len = 1;
    n++;
  }
  write_all(ob->dest, iov, n);
}

int run_pump(struct run_outbuf *ob) {
  for (;;) {
    ssize_t r = read(ob->fd, ob->buf + ob->len, sizeof ob->buf - ob->len);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;
    }
    if (r <= 0) { /* EOF or error: flush the partial line */
      if (ob->len)
        run_emit(ob, ob->buf, ob->len, 1);
      else if (ob->midline)
        write_all(ob->dest, &(struct iovec){"\n", 1}, 1);
      ob->len = 0;
      ob->midline = 0;
      close(ob->fd);
      ob->fd = -1;
      return 0;
    }
    ob->len += (size_t)r;
    size_t start = 0;
    for (;;) {
      char *nl = memchr(ob->buf + start, '\n', ob->len - start);
      if (!nl) break;
      size_t l = (size_t)(nl - (ob->buf + start)) + 1;
      run_emit(ob, ob->buf + start, l, 0);
      ob->midline = 0;
      start += l;
    }
    memmove(ob->buf, ob->buf + start, ob->len - start);
    ob->len -= start;
    if (ob->len == sizeof ob->buf) { /* over-long line: forward what we have */
      run_emit(ob, ob->buf, ob->len, 0);
      ob->midline = 1;
      ob->len = 0;
    }
    if ((size_t)r < RUN_LINE_BUF / 2) return 1; /* likely drained; poll again */
  }
}
