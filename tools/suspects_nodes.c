/* tools/suspects_nodes.c: see suspects_nodes.h. The node records are trusted only as files
 * the job's user cannot have written: regular, owned by root, writable by nobody else, small,
 * and exactly of the record's form; the dump headers are read through the dump reader. */
#include "suspects_nodes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collscope/slurm_node.h"
#include "dump/dumpfile.h"
#include "xalloc.h"

/* one directory entry named like a node record: trusted only when root's alone */
static void read_record(struct sn_dir *d, int dfd, const char *name) {
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  char buf[CS_NODE_RECORD_MAX + 1];
  struct sn_record r;
  bool ok = false;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
      st.st_size > 0 && st.st_size <= CS_NODE_RECORD_MAX) {
    ssize_t n = read(fd, buf, sizeof buf);
    ok = n == st.st_size && sn_record_parse(buf, (size_t)n, &r);
  }
  if (fd >= 0) close(fd);
  if (!ok) {
    d->rejected++;
    return;
  }
  XGROW(d->recs, d->nrecs, d->caprecs);
  d->recs[d->nrecs++] = r;
}

static void nop_op(void *ctx, unsigned w, size_t i, const struct cs_dumpfile *f, const struct cs_op_rec *r) {
  (void)ctx, (void)w, (void)i, (void)f, (void)r;
}

void sn_dir_load(struct sn_dir *d, const char *dir, unsigned jobs) {
  memset(d, 0, sizeof *d);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dp = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!dp && dfd >= 0) close(dfd);
  size_t pl = strlen(CS_NODE_RECORD_PREFIX);
  for (struct dirent *e; dp && (e = readdir(dp));)
    if (strncmp(e->d_name, CS_NODE_RECORD_PREFIX, pl) == 0) read_record(d, dirfd(dp), e->d_name);
  if (dp) closedir(dp);

  /* the headers: streamed (records dropped as they come), or whole when salvage must merge */
  struct cs_stream_ops ops = {.jobs = jobs, .op = nop_op};
  struct cs_dumpset *set = cs_dumpset_stream(dir, NULL, &ops);
  if (set->whole) {
    cs_dumpset_free(set);
    set = cs_dumpset_load_jobs(dir, NULL, jobs);
  }
  d->files = xcalloc(set->nfiles + 1, sizeof *d->files);
  for (size_t i = 0; !set->fatal && i < set->nfiles; i++) {
    const struct cs_header *h = &set->files[i].hdr;
    if (!h->host) continue;
    struct sn_file *f = &d->files[d->nfiles++];
    f->label = xstrdup(h->host);
    f->job = xstrdup(h->job ? h->job : "");
    f->node = xstrdup(h->slurm_node ? h->slurm_node : "");
    f->rank = h->rank, f->step = h->step;
    char step[16];
    snprintf(step, sizeof step, "%lld", f->step);
    for (size_t k = 0; f->node[0] && f->step >= 0 && k < d->nrecs; k++)
      if (!strcmp(d->recs[k].job, f->job) && !strcmp(d->recs[k].step, step) && !strcmp(d->recs[k].node, f->node))
        f->verified = true;
  }
  cs_dumpset_free(set);
}

void sn_dir_free(struct sn_dir *d) {
  for (size_t i = 0; i < d->nfiles; i++) free(d->files[i].label), free(d->files[i].job), free(d->files[i].node);
  free(d->files), free(d->recs);
  memset(d, 0, sizeof *d);
}

const char *sn_node_of(const struct sn_dir *d, const char *label, long long rank, char *why, size_t whylen) {
  const char *node = NULL;
  size_t n = 0;
  for (size_t i = 0; i < d->nfiles; i++) {
    const struct sn_file *f = &d->files[i];
    if (strcmp(f->label, label) != 0 || (rank >= 0 && f->rank != rank)) continue;
    n++;
    if (!f->node[0]) {
      snprintf(why, whylen, "no Slurm node name in rank %lld's dump (not started by the SPANK plugin)", f->rank);
      return NULL;
    }
    if (!f->verified) {
      snprintf(why, whylen, "no node record of the SPANK plugin vouches for node %s of rank %lld", f->node, f->rank);
      return NULL;
    }
    if (node && strcmp(node, f->node) != 0) {
      snprintf(why, whylen, "the host name stands for several nodes (%s, %s)", node, f->node);
      return NULL;
    }
    node = f->node;
  }
  if (!n) snprintf(why, whylen, "no dump file of this host name");
  return node;
}
