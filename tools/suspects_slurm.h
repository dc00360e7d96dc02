/* tools/suspects_slurm.h: what Slurm itself says of a job (`scontrol show job`, else `sacct`):
 * the nodes it ran on and its user, for `collscope suspects` to check node records against;
 * and running a site's check command. Commands run without a shell, their output bounded. */
#ifndef COLLSCOPE_SUSPECTS_SLURM_H
#define COLLSCOPE_SUSPECTS_SLURM_H
#include <stdbool.h>
#include <stddef.h>

struct sn_slurm {
  bool answered; /* Slurm knew the job: nodes and uid below */
  char **nodes;  /* the job's NodeList, expanded */
  size_t nnodes;
  long long uid; /* the job's user, -1 unknown */
  char nodelist[192];
  const char *via; /* "scontrol" or "sacct" (static) */
  char why[160];   /* not answered: why */
};

/* Ask Slurm about job `job` (digits, '_' and '+' only; anything else is not asked). Never
 * fails: out->answered says whether Slurm knew the job. */
void sn_slurm_job(const char *job, struct sn_slurm *out);
void sn_slurm_free(struct sn_slurm *s);
bool sn_slurm_has_node(const struct sn_slurm *s, const char *node);
/* Run argv (no shell; stdin and stderr from/to /dev/null when quiet, else stderr kept), keep
 * at most cap-1 bytes of its stdout in out (NUL-terminated), kill it after timeout_s seconds.
 * Returns its exit status, 128+N for a signal, or -1 when it could not run or timed out. */
int sn_run_capture(char *const argv[], char *out, size_t cap, int timeout_s, bool quiet);
#endif
