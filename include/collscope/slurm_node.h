/* include/collscope/slurm_node.h: the Slurm node a rank ran on, as the dump header states it
 * and as the SPANK plugin vouches for it. One definition for the shim (writer), the plugin
 * (integrations/slurm) and `collscope suspects` (reader); docs/slurm.md "Which node names
 * suspects acts on" has the trust model.
 *
 * - The dump header's CS_HDR_SLURM_NODE field: SLURMD_NODENAME as the task got it (Slurm sets
 *   it in every task from slurmd's own node name). The job could set it too, so the header
 *   alone proves nothing.
 * - The node record: a file CS_NODE_RECORD_PREFIX "<step>.<host>.<pid>" in the job's dump
 *   directory, one per task, created by the SPANK plugin as root (uid 0, mode 0444) before the
 *   task drops its privileges, filled with what Slurm says of the task before any of the
 *   job's code ran. Its lines, each "key=value\n", in this order:
 *     CS_NODE_RECORD_MAGIC "\n" "job=<id>\n" "step=<id>\n" "node=<name>\n" "uid=<n>\n" "pid=<n>\n"
 *   job and step: Slurm's ids of the step; node: the SLURMD_NODENAME slurmstepd set; uid: the
 *   job's user (Slurm's S_JOB_UID); pid: the task's process, the one that execs the job's
 *   program (a dump's pid when the rank is that process). A reader trusts a record only when
 *   it is a regular file of uid 0 with one link that nobody else may write, at most
 *   CS_NODE_RECORD_MAX bytes, of exactly this form, of the directory's own job. */
#ifndef COLLSCOPE_SLURM_NODE_H
#define COLLSCOPE_SLURM_NODE_H
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define CS_HDR_SLURM_NODE "slurm_node"
#define CS_NODE_RECORD_PREFIX ".collscope-node."
#define CS_NODE_RECORD_MAGIC "collscope-node-record 2"
#define CS_NODE_RECORD_MAX 512
#define CS_NODE_NAME_MAX 64 /* bytes of a node name, the terminating NUL included */

/* A name scontrol and a hostlist take as one node: Slurm's node-name characters
 * [A-Za-z0-9._-], not starting with '.' or '-', shorter than CS_NODE_NAME_MAX, and not the
 * keyword ALL (any case), which scontrol reads as every node. No '[', ',' or space: never a
 * hostlist expression. */
static inline bool cs_node_name_ok(const char *n) {
  size_t len = strlen(n);
  if (len == 0 || len >= CS_NODE_NAME_MAX || n[0] == '.' || n[0] == '-') return false;
  for (const char *p = n; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
          *p == '_' || *p == '-'))
      return false;
  return !(len == 3 && (n[0] | 0x20) == 'a' && (n[1] | 0x20) == 'l' && (n[2] | 0x20) == 'l');
}
#endif
