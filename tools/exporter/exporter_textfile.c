/* tools/exporter/exporter_textfile.c: the atomic textfile writer (see exporter_textfile.h). */
#include "exporter_textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int exp_textfile_write(const char *dir, const char *text, size_t len, FILE *log) {
  char tmp[4096], dst[4096];
  if (snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, EXP_TEXTFILE_NAME) >= (int)sizeof tmp ||
      snprintf(dst, sizeof dst, "%s/%s", dir, EXP_TEXTFILE_NAME) >= (int)sizeof dst) {
    if (log) fprintf(log, "collscope exporter: --textfile %s: path too long\n", dir);
    return -1;
  }
  int fd = mkostemp(tmp, O_CLOEXEC); /* O_CREAT|O_EXCL: a planted link is never followed */
  if (fd < 0) {
    if (log) fprintf(log, "collscope exporter: cannot create a temporary in %s: %s\n", dir, strerror(errno));
    return -1;
  }
  const char *p = text;
  size_t left = len;
  int err = 0;
  while (left && !err) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      err = w < 0 ? errno : EIO;
    else {
      p += w;
      left -= (size_t)w;
    }
  }
  if (!err && fchmod(fd, 0644) != 0) err = errno; /* node_exporter usually runs as another user */
  if (!err && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, dst) != 0) err = errno;
  if (err) {
    unlink(tmp);
    if (log) fprintf(log, "collscope exporter: cannot write %s: %s\n", dst, strerror(err));
    return -1;
  }
  return 0;
}
