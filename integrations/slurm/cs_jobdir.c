/* integrations/slurm/cs_jobdir.c: see cs_jobdir.h. */
#include "cs_jobdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WALK_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

static int open_component(int dfd, const char *name, const char *path, char *err, size_t errlen) {
  int fd = openat(dfd, name, WALK_FLAGS);
  if (fd >= 0) return fd;
  if (errno == ELOOP || errno == ENOTDIR)
    snprintf(err, errlen, "%s: '%s' is a symbolic link or not a directory", path, name);
  else
    snprintf(err, errlen, "%s: '%s': %s", path, name, strerror(errno));
  return -1;
}

/* a parent nobody else can swap our entry in: root's or ours, and sticky if others write */
static int parent_ok(int fd, const char *name, const char *path, char *err, size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(err, errlen, "%s: '%s': %s", path, name, strerror(errno));
    return -1;
  }
  if (st.st_uid != 0 && st.st_uid != geteuid()) {
    snprintf(err, errlen, "%s: '%s' belongs to uid %u, not to root or the job's user", path, name,
             (unsigned)st.st_uid);
    return -1;
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
    snprintf(err, errlen, "%s: '%s' is writable by others and not sticky", path, name);
    return -1;
  }
  return 0;
}

int cs_jobdir_open(const char *path, gid_t gid, char *err, size_t errlen) {
  char buf[4096];
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof buf) {
    snprintf(err, errlen, "job directory: empty or too long path");
    return -1;
  }
  memcpy(buf, path, len + 1);
  int dfd = open(buf[0] == '/' ? "/" : ".", WALK_FLAGS);
  if (dfd < 0) {
    snprintf(err, errlen, "%s: cannot open the start of the path: %s", path, strerror(errno));
    return -1;
  }
  if (parent_ok(dfd, buf[0] == '/' ? "/" : ".", path, err, errlen)) goto fail;

  /* the components, "." and empty ones skipped; ".." refused (no way up) */
  char *comp[512];
  size_t n = 0;
  char *save = NULL;
  for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    if (strcmp(c, ".") == 0) continue;
    if (strcmp(c, "..") == 0 || n == sizeof comp / sizeof comp[0]) {
      snprintf(err, errlen, "%s: '..' or too many components in the job directory", path);
      goto fail;
    }
    comp[n++] = c;
  }
  if (n == 0) {
    snprintf(err, errlen, "%s: not a directory to make", path);
    goto fail;
  }
  for (size_t i = 0; i + 1 < n; i++) {
    if (mkdirat(dfd, comp[i], 0755) != 0 && errno != EEXIST) {
      snprintf(err, errlen, "%s: cannot make '%s': %s", path, comp[i], strerror(errno));
      goto fail;
    }
    int fd = open_component(dfd, comp[i], path, err, errlen);
    if (fd < 0) goto fail;
    close(dfd);
    dfd = fd;
    if (parent_ok(dfd, comp[i], path, err, errlen)) goto fail;
  }

  const char *leaf = comp[n - 1];
  mode_t mode = gid == (gid_t)-1 ? 0700 : 0750;
  if (mkdirat(dfd, leaf, mode) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "%s: cannot make it: %s", path, strerror(errno));
    goto fail;
  }
  int fd = open_component(dfd, leaf, path, err, errlen);
  if (fd < 0) goto fail;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
    snprintf(err, errlen, "%s: exists and belongs to uid %u, not to the job's user", path, (unsigned)st.st_uid);
    close(fd);
    goto fail;
  }
  /* the mode and group asked for, whatever the umask or an earlier step left */
  if ((gid != (gid_t)-1 && st.st_gid != gid && fchown(fd, (uid_t)-1, gid) != 0) ||
      ((st.st_mode & 07777) != mode && fchmod(fd, mode) != 0)) {
    snprintf(err, errlen, "%s: cannot set mode %o%s: %s", path, (unsigned)mode, gid != (gid_t)-1 ? " and group" : "",
             strerror(errno));
    close(fd);
    goto fail;
  }
  close(dfd);
  return fd;
fail:
  close(dfd);
  return -1;
}

int cs_jobdir_make(const char *path, gid_t gid, char *err, size_t errlen) {
  int fd = cs_jobdir_open(path, gid, err, errlen);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}
