/* integrations/slurm/cs_node_record.h: the plugin's record of the node a step's tasks ran on
 * (format: include/collscope/slurm_node.h). Created empty by root in the job directory before
 * the task drops its privileges (one per task), filled once Slurm has set the task's SLURMD_NODENAME from
 * slurmd's own node name, before the job's program runs. No Slurm dependency. */
#ifndef COLLSCOPE_NODE_RECORD_H
#define COLLSCOPE_NODE_RECORD_H
#include <stddef.h>

/* Create the record file in dirfd (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0444, owned by the caller:
 * root), named CS_NODE_RECORD_PREFIX "<step>.<host>.<pid>" (the machine's host name and the
 * task's pid keep concurrent tasks of a shared directory apart). Returns the open fd
 * (write-only, close-on-exec), or -1 with one line in err. */
int cs_node_record_create(int dirfd, const char *step, char *err, size_t errlen);
/* Write job, step, node, the job's uid and the task's pid into the record and close fd
 * (always). Returns 0, or -1 (node not a plain node name, or a write error) with one line in
 * err. */
int cs_node_record_fill(int fd, const char *job, const char *step, const char *node, unsigned long uid, long pid,
                        char *err, size_t errlen);
#endif
