/* tools/suspects_nodes.h: which node a host name of a dump directory stands for, and whether
 * `collscope suspects` may act on it: only a node the SPANK plugin's root-owned node record
 * vouches for (include/collscope/slurm_node.h; trust model in docs/slurm.md). */
#ifndef COLLSCOPE_SUSPECTS_NODES_H
#define COLLSCOPE_SUSPECTS_NODES_H
#include <stdbool.h>
#include <stddef.h>

struct sn_record {
  char job[32], step[16], node[64];
};
struct sn_file {
  char *label, *job, *node; /* the header's host (the user's label), job, slurm_node ("" none) */
  long long rank, step;
  bool verified; /* a node record of this job and step names node */
};
struct sn_dir {
  struct sn_record *recs;
  size_t nrecs, caprecs;
  size_t rejected; /* node record files not trusted (owner, mode, size or form) */
  struct sn_file *files;
  size_t nfiles;
};

/* The trusted node records of DIR and the header of each dump file (job: as report's -j).
 * Never fails: what cannot be read is simply not verified. */
void sn_dir_load(struct sn_dir *d, const char *dir, unsigned jobs);
void sn_dir_free(struct sn_dir *d);
/* Parse one node record's text (len bytes, no NUL needed). Returns true when it is exactly of
 * the record's form, with a plain node name. */
bool sn_record_parse(const char *text, size_t len, struct sn_record *out);
/* The verified node of the files with host `label` (and rank `rank`, -1: any): their one node
 * when every such file is verified and they agree. NULL otherwise, with why (a static or
 * why-buffer string) saying what is missing. */
const char *sn_node_of(const struct sn_dir *d, const char *label, long long rank, char *why, size_t whylen);
#endif
