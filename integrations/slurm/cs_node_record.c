/* integrations/slurm/cs_node_record.c: see cs_node_record.h. */
#include "cs_node_record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collscope/slurm_node.h"

int cs_node_record_create(int dirfd, const char *step, char *err, size_t errlen) {
  char host[256] = "", name[384];
  if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
  for (char *p = host; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
      *p = '_';
  snprintf(name, sizeof name, "%s%s.%.64s.%ld", CS_NODE_RECORD_PREFIX, step, host, (long)getpid());
  int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0) {
    snprintf(err, errlen, "cannot create the node record %s: %s", name, strerror(errno));
    return -1;
  }
  /* whatever the umask: nobody but root may write it */
  if (fchmod(fd, 0444) != 0) {
    snprintf(err, errlen, "cannot set the mode of the node record %s: %s", name, strerror(errno));
    close(fd);
    unlinkat(dirfd, name, 0);
    return -1;
  }
  return fd;
}

int cs_node_record_fill(int fd, const char *job, const char *step, const char *node, unsigned long uid, long pid,
                        char *err, size_t errlen) {
  char buf[CS_NODE_RECORD_MAX + 1];
  int rc = -1;
  if (!node || !cs_node_name_ok(node)) {
    snprintf(err, errlen, "SLURMD_NODENAME is not a plain node name");
    goto out;
  }
  int n = snprintf(buf, sizeof buf, "%s\njob=%s\nstep=%s\nnode=%s\nuid=%lu\npid=%ld\n", CS_NODE_RECORD_MAGIC, job, step, node,
                   uid, pid);
  if (n < 0 || n > CS_NODE_RECORD_MAX) {
    snprintf(err, errlen, "the node record is too long");
    goto out;
  }
  if (write(fd, buf, (size_t)n) != n) {
    snprintf(err, errlen, "cannot write the node record: %s", strerror(errno));
    goto out;
  }
  rc = 0;
out:
  if (close(fd) != 0 && rc == 0) {
    snprintf(err, errlen, "cannot write the node record: %s", strerror(errno));
    rc = -1;
  }
  return rc;
}
