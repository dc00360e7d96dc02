/* tools/suspects_nodes.h: which node a host name of a dump directory stands for, and whether
 * `collscope suspects` may act on it: only a node that a root-owned node record of the
 * SPANK plugin vouches for (include/collscope/slurm_node.h), of the directory's own job, for
 * the dump's own pid, and on a node Slurm says the job ran on (trust model in docs/slurm.md).
 * What does not hold is a note ('#' line), never an action. */
#ifndef COLLSCOPE_SUSPECTS_NODES_H
#define COLLSCOPE_SUSPECTS_NODES_H
#include <stdbool.h>
#include <stddef.h>

#include "suspects_slurm.h"

struct sn_record {
  char job[32], step[16], node[64], uid[16], pid[16];
  long long uidn, pidn;
};
struct sn_file {
  char *label, *job, *node; /* the header's host (the user's label), job, slurm_node ("" none) */
  long long rank, step, pid;
  const char *rnode; /* the node the record of its pid names (NULL: none) */
  bool verified;     /* the record of its job, step and pid names node */
};
#define SN_NOTES_MAX 32
struct sn_dir {
  char job[32];   /* the directory's job: the number its name ends in, else the dumps' job */
  bool job_named; /* job comes from the directory's name */
  long long uid;  /* the job's user, from its trusted records (Slurm's when it answered); -1 none */
  struct sn_slurm slurm;
  struct sn_record *recs;
  size_t nrecs, caprecs;
  size_t rejected; /* node record files not trusted (owner, mode, links, size, form, job, node) */
  struct sn_file *files;
  size_t nfiles;
  char *notes[SN_NOTES_MAX]; /* what does not hold, one line each */
  size_t nnotes, notes_dropped;
};

/* The trusted node records of DIR and the header of each dump file (jobs: reading threads);
 * dumps_job: the job the report read ("" none); ask_slurm: check the records against Slurm.
 * Never fails: what cannot be read or does not hold is simply not verified (and noted). */
void sn_dir_load(struct sn_dir *d, const char *dir, unsigned jobs, const char *dumps_job, bool ask_slurm);
void sn_dir_free(struct sn_dir *d);
/* Parse one node record's text (len bytes, no NUL needed). Returns true when it is exactly of
 * the record's form, with a plain node name and decimal uid and pid. */
bool sn_record_parse(const char *text, size_t len, struct sn_record *out);
/* The job id a directory's name ends in (its last component, all digits or the digits after
 * a final '-', '_' or '.'), into out; false when it names none. */
bool sn_dir_job(const char *dir, char *out, size_t cap);
/* The verified node of the files with host `label` (and rank `rank`, -1: any): their one node
 * when every such file is verified and they agree. NULL otherwise, with why (a static or
 * why-buffer string) saying what is missing, and *claimed set to the node the record of the
 * rank's pid names when the dump contradicts it (else NULL). */
const char *sn_node_of(const struct sn_dir *d, const char *label, long long rank, char *why, size_t whylen,
                       const char **claimed);
#endif
