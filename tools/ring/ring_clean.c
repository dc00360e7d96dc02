/* tools/ring/ring_clean.c: salvage's output directory, its files and the removal of rings
 * (ring_clean.h), safe when root runs it for another user. */
#include "ring_clean.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collscope/ring.h"

static int fail_dir(FILE *err, const char *dir, int fd, const char *why) {
  if (fd >= 0) close(fd);
  fprintf(err, "collscope salvage: cannot use %s: %s\n", dir, why);
  return -1;
}

/* root: one component at a time from / (or the working directory), never through a link */
static int walk_nofollow(const char *dir, bool *made, FILE *err) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return fail_dir(err, dir, -1, "path too long");
  int cur = open(buf[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cur < 0) return fail_dir(err, dir, -1, strerror(errno));
  char *save = NULL;
  for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    bool last = !save || save[strspn(save, "/")] == 0;
    int nfd = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (nfd < 0 && errno == ENOENT && last) {
      if (mkdirat(cur, c, 0700) == 0)
        *made = true;
      else if (errno != EEXIST)
        return fail_dir(err, dir, cur, strerror(errno));
      nfd = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (nfd < 0)
      return fail_dir(err, dir, cur,
                      errno == ELOOP || errno == ENOTDIR ? "a symbolic link or not a directory in its path"
                                                         : strerror(errno));
    close(cur);
    cur = nfd;
  }
  return cur;
}

int clean_outdir_open(const char *dir, uid_t owner, FILE *err) {
  if (!*dir) return fail_dir(err, "\"\"", -1, "empty path");
  if (geteuid() != 0) {
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return fail_dir(err, dir, -1, strerror(errno));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd >= 0 ? fd : fail_dir(err, dir, -1, strerror(errno));
  }
  bool made = false;
  int fd = walk_nofollow(dir, &made, err);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0) return fail_dir(err, dir, fd, strerror(errno));
  if (made && owner != 0 && fchown(fd, owner, (gid_t)-1) != 0) return fail_dir(err, dir, fd, strerror(errno));
  if (!made && st.st_uid != 0 && st.st_uid != owner)
    return fail_dir(err, dir, fd, "owned by a user who is neither root nor the rings' owner");
  return fd;
}

int clean_write_file(int dfd, const char *name, uid_t owner, gid_t group, int (*write)(FILE *f, void *arg),
                     void *arg) {
  static unsigned serial;
  char tmp[96];
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
    snprintf(tmp, sizeof tmp, ".collscope-salvage-p%d-%u.tmp", (int)getpid(), serial++);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return -1;
  }
  if (fd < 0) return -1;
  int e = 0;
  if (geteuid() == 0 && owner != 0 && fchown(fd, owner, group) != 0) e = errno;
  FILE *f = e ? NULL : fdopen(fd, "w");
  if (!f) {
    if (!e) e = errno;
    close(fd);
  } else {
    if (write(f, arg) != 0 || fflush(f) != 0 || ferror(f)) e = errno ? errno : EIO;
    if (fclose(f) != 0 && !e) e = errno;
  }
  if (!e && linkat(dfd, tmp, dfd, name, 0) != 0) e = errno;
  unlinkat(dfd, tmp, 0);
  errno = e;
  return e ? -1 : 0;
}

/* the pid of a ring name's -p<pid>, 0 when it has none */
static int name_pid(const char *path) {
  size_t l = strlen(path);
  if (l < 5 || strcmp(path + l - 5, ".ring") != 0) return 0;
  const char *end = path + l - 5, *p = end;
  while (p > path && p[-1] >= '0' && p[-1] <= '9') p--;
  if (p == end || end - p > 9 || p - path < 2 || p[-1] != 'p' || p[-2] != '-') return 0;
  return atoi(p);
}

enum clean_writer clean_judge_writer(const char *path, uid_t owner, uint64_t *dev, uint64_t *ino) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return CLEAN_WRITER_UNKNOWN;
  struct stat st;
  struct cs_ring_hdr h;
  memset(&h, 0, sizeof h);
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == owner) n = pread(fd, &h, sizeof h, 0);
  close(fd);
  if (n < 0) return CLEAN_WRITER_UNKNOWN;
  *dev = (uint64_t)st.st_dev;
  *ino = (uint64_t)st.st_ino;
  if (n == (ssize_t)sizeof h && h.magic == CS_RING_MAGIC && h.version == CS_RING_VERSION)
    return cs_ring_writer_dead(&h) ? CLEAN_WRITER_DEAD : CLEAN_WRITER_ALIVE;
  int pid = n >= (ssize_t)(offsetof(struct cs_ring_hdr, pid) + sizeof h.pid) && h.magic == CS_RING_MAGIC
                ? h.pid
                : name_pid(path);
  if (pid <= 0) return CLEAN_WRITER_UNKNOWN;
  struct cs_ring_hdr q;
  memset(&q, 0, sizeof q);
  q.pid = pid; /* no start time: a live process under that pid counts as the writer */
  return cs_ring_writer_dead(&q) ? CLEAN_WRITER_DEAD : CLEAN_WRITER_ALIVE;
}

int clean_remove_ring(const char *path, uint64_t dev, uint64_t ino) {
  const char *slash = strrchr(path, '/');
  int dl = slash ? (int)(slash - path) : 1;
  const char *d = slash ? path : ".";
  if (slash == path) dl = 1; /* a ring in / */
  char aside[4200];
  int rc = -1;
  for (int attempt = 0; attempt < 16 && rc != 0; attempt++) {
    snprintf(aside, sizeof aside, "%.*s/.collscope-salvage-p%d-%d.aside", dl, d, (int)getpid(), attempt);
    rc = renameat2(AT_FDCWD, path, AT_FDCWD, aside, RENAME_NOREPLACE);
    if (rc != 0 && errno != EEXIST) return -1;
  }
  if (rc != 0) return -1;
  struct stat st;
  if (lstat(aside, &st) == 0 && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino) return unlink(aside);
  /* another file took the name after it was judged: give it its name back */
  if (link(aside, path) != 0) return -1; /* left under the aside name: never removed */
  unlink(aside);
  return 1;
}
