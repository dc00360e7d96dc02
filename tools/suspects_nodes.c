/* tools/suspects_nodes.c: see suspects_nodes.h. A node record is trusted only as a file the
 * job's user cannot have written or brought from elsewhere: regular, owned by root, one link,
 * writable by nobody else, small, exactly of the record's form, of the directory's job, and
 * naming a node (and user) Slurm gives for that job when Slurm answers. A dump file is bound
 * to the record of its own job, step and pid; the dump headers are read through the dump
 * reader. */
#include "suspects_nodes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collscope/slurm_node.h"
#include "dump/dumpfile.h"
#include "xalloc.h"

static void note(struct sn_dir *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct sn_dir *d, const char *fmt, ...) {
  if (d->nnotes >= SN_NOTES_MAX) {
    d->notes_dropped++;
    return;
  }
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  /* hostile bytes (names from the directory) printed as '?' */
  for (char *p = buf; *p; p++)
    if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) *p = '?';
  d->notes[d->nnotes++] = xstrdup(buf);
}

bool sn_dir_job(const char *dir, char *out, size_t cap) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  size_t e = n, b = n;
  while (b > 0 && dir[b - 1] >= '0' && dir[b - 1] <= '9') b--;
  if (b == e || e - b >= cap || e - b > 20) return false;
  if (b > 0 && dir[b - 1] != '/' && dir[b - 1] != '-' && dir[b - 1] != '_' && dir[b - 1] != '.') return false;
  memcpy(out, dir + b, e - b);
  out[e - b] = 0;
  return true;
}

/* one directory entry named like a node record: trusted only when root's alone */
static void read_record(struct sn_dir *d, int dfd, const char *name) {
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  char buf[CS_NODE_RECORD_MAX + 1];
  struct sn_record r;
  const char *why = NULL;
  if (fd < 0 || fstat(fd, &st) != 0)
    why = errno == ELOOP ? "a symbolic link" : "cannot be read";
  else if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_uid != 0)
    why = "not root's (a copy, or made by the job)";
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    why = "writable by others";
  else if (st.st_size <= 0 || st.st_size > CS_NODE_RECORD_MAX)
    why = "not of a record's size";
  else if (st.st_nlink != 1)
    why = "hard-linked (from another directory)";
  else {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n != st.st_size || !sn_record_parse(buf, (size_t)n, &r)) why = "not of the record's form";
  }
  if (fd >= 0) close(fd);
  if (why) {
    d->rejected++;
    note(d, "node record %.80s is %s: not trusted", name, why);
    return;
  }
  XGROW(d->recs, d->nrecs, d->caprecs);
  d->recs[d->nrecs++] = r;
}

/* the records that do not hold against the directory's job and Slurm's word: dropped, noted */
static void check_records(struct sn_dir *d, bool ask_slurm) {
  size_t k = 0;
  if (ask_slurm && d->nrecs && d->job_named) sn_slurm_job(d->job, &d->slurm);
  if (d->nrecs && !d->slurm.answered)
    note(d, "Slurm not asked or did not answer (%s): node records checked against the directory's job only",
         !ask_slurm ? "--no-slurm" : d->job_named ? d->slurm.why
                                                  : "the directory's name carries no job id");
  for (size_t i = 0; i < d->nrecs; i++) {
    const struct sn_record *r = &d->recs[i];
    if (strcmp(r->job, d->job) != 0) {
      note(d, "a node record of job %s (node %s) in job %s's directory: moved or copied from another job, not trusted", r->job,
           r->node, d->job);
      d->rejected++;
      continue;
    }
    if (d->slurm.answered && !sn_slurm_has_node(&d->slurm, r->node)) {
      note(d, "a node record names node %s, where job %s did not run (%s: NodeList=%s): not trusted", r->node, d->job,
           d->slurm.via, d->slurm.nodelist);
      d->rejected++;
      continue;
    }
    if (d->slurm.answered && d->slurm.uid >= 0 && r->uidn != d->slurm.uid) {
      note(d, "a node record names uid %lld, job %s is uid %lld's (%s): not trusted", r->uidn, d->job, d->slurm.uid, d->slurm.via);
      d->rejected++;
      continue;
    }
    d->recs[k++] = *r;
  }
  d->nrecs = k;
  d->uid = -1;
  for (size_t i = 0; i < d->nrecs; i++) {
    if (d->uid < 0)
      d->uid = d->recs[i].uidn;
    else if (d->uid != d->recs[i].uidn) {
      note(d, "the node records name several users (uid %lld, %lld): no user is counted for this job", d->uid, d->recs[i].uidn);
      d->uid = -1;
      break;
    }
  }
}

static void nop_op(void *ctx, unsigned w, size_t i, const struct cs_dumpfile *f, const struct cs_op_rec *r) {
  (void)ctx, (void)w, (void)i, (void)f, (void)r;
}

/* each dump file against the record of its own job, step and pid */
static void bind_file(struct sn_dir *d, struct sn_file *f) {
  char step[16];
  snprintf(step, sizeof step, "%lld", f->step);
  if (strcmp(f->job, d->job) != 0) return; /* noted once per job claimed, by the caller */
  const struct sn_record *r = NULL;
  for (size_t k = 0; f->step >= 0 && k < d->nrecs; k++) {
    const struct sn_record *c = &d->recs[k];
    if (c->pidn != f->pid || strcmp(c->step, step) != 0) continue;
    if (r && strcmp(r->node, c->node) != 0) {
      /* two records of one task that disagree: neither is the task's word */
      note(d, "two node records of rank %lld's pid %lld name nodes %s and %s: its node is not verified", f->rank, f->pid,
           r->node, c->node);
      return;
    }
    r = c;
  }
  if (!r) return;
  f->rnode = r->node;
  if (f->node[0] && !strcmp(r->node, f->node))
    f->verified = true;
  else if (f->node[0])
    note(d, "rank %lld's dump says node %s; the node record of its pid %lld says %s: no action from it", f->rank, f->node,
         f->pid, r->node);
}

void sn_dir_load(struct sn_dir *d, const char *dir, unsigned jobs, const char *dumps_job, bool ask_slurm) {
  memset(d, 0, sizeof *d);
  d->uid = -1;
  d->job_named = sn_dir_job(dir, d->job, sizeof d->job);
  if (!d->job_named) snprintf(d->job, sizeof d->job, "%s", dumps_job ? dumps_job : "");
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dp = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!dp && dfd >= 0) close(dfd);
  size_t pl = strlen(CS_NODE_RECORD_PREFIX);
  for (struct dirent *e; dp && (e = readdir(dp)) && d->nrecs < 65536;)
    if (strncmp(e->d_name, CS_NODE_RECORD_PREFIX, pl) == 0) read_record(d, dirfd(dp), e->d_name);
  if (dp) closedir(dp);
  check_records(d, ask_slurm);

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
    f->rank = h->rank, f->step = h->step, f->pid = h->pid;
  }
  cs_dumpset_free(set);
  /* dumps that claim another job than the directory's: one note per job claimed */
  for (size_t i = 0; i < d->nfiles; i++) {
    const struct sn_file *f = &d->files[i];
    bool first = strcmp(f->job, d->job) != 0;
    size_t n = 0;
    for (size_t j = 0; first && j < d->nfiles; j++) {
      if (j < i && !strcmp(d->files[j].job, f->job)) first = false;
      n += !strcmp(d->files[j].job, f->job);
    }
    if (first)
      note(d, "%zu dump%s claim%s job %s (rank %lld's first); this directory is job %s's: not verified", n, n == 1 ? "" : "s",
           n == 1 ? "s" : "", f->job[0] ? f->job : "(none)", f->rank, d->job);
  }
  /* two dumps of one step claiming one pid: neither is bound to its record */
  for (size_t i = 0; i < d->nfiles; i++) {
    bool dup = false;
    for (size_t j = 0; j < d->nfiles; j++)
      dup |= j != i && d->files[j].pid == d->files[i].pid && d->files[j].step == d->files[i].step &&
             !strcmp(d->files[j].job, d->files[i].job);
    if (dup)
      note(d, "rank %lld's dump shares pid %lld with another dump of its step: its node is not verified", d->files[i].rank,
           d->files[i].pid);
    else
      bind_file(d, &d->files[i]);
  }
}

void sn_dir_free(struct sn_dir *d) {
  for (size_t i = 0; i < d->nfiles; i++) free(d->files[i].label), free(d->files[i].job), free(d->files[i].node);
  for (size_t i = 0; i < d->nnotes; i++) free(d->notes[i]);
  sn_slurm_free(&d->slurm);
  free(d->files), free(d->recs);
  memset(d, 0, sizeof *d);
}

const char *sn_node_of(const struct sn_dir *d, const char *label, long long rank, char *why, size_t whylen,
                       const char **claimed) {
  const char *node = NULL;
  size_t n = 0;
  *claimed = NULL;
  for (size_t i = 0; i < d->nfiles; i++) {
    const struct sn_file *f = &d->files[i];
    if (strcmp(f->label, label) != 0 || (rank >= 0 && f->rank != rank)) continue;
    n++;
    if (!f->node[0]) {
      snprintf(why, whylen, "no Slurm node name in rank %lld's dump (not started by the SPANK plugin)", f->rank);
      return NULL;
    }
    if (!f->verified) {
      if (f->rnode) {
        *claimed = f->rnode;
        snprintf(why, whylen, "rank %lld's dump says node %s, the node record of its pid %lld says %s", f->rank, f->node, f->pid,
                 f->rnode);
      } else if (strcmp(f->job, d->job) != 0) {
        snprintf(why, whylen, "rank %lld's dump claims job %s, not this directory's job %s", f->rank, f->job, d->job);
      } else {
        snprintf(why, whylen, "no node record of the SPANK plugin vouches for node %s of rank %lld (pid %lld)", f->node, f->rank,
                 f->pid);
      }
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
