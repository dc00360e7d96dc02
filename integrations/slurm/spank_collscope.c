/* integrations/slurm/spank_collscope.c: the SPANK plugin behind `srun --collscope[=OPTS]`
 * (also sbatch and salloc). srun checks OPTS before anything is launched; in each task, just
 * before exec and as the job's user, it makes the job's dump directory and puts
 * libcollscope.so first in LD_PRELOAD with the shim's COLLSCOPE_* variables. Any failure
 * there is one line on the task's stderr and the task runs without collscope.
 *
 * plugstack.conf:  optional /usr/lib/x86_64-linux-gnu/slurm/collscope_spank.so \
 *                  shim=/usr/local/lib/x86_64-linux-gnu/libcollscope.so dir=/shared/collscope/%j
 *                  [group=NAME] [default=on]                                    (docs/slurm.md) */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "cs_jobdir.h"
#include "cs_node_record.h"
#include "collscope/slurm_node.h"
#include "cs_spank_opts.h"

SPANK_PLUGIN(collscope, 1);

static struct cs_spank_site site;
static struct cs_spank_job job;
static int site_bad; /* a bad plugstack.conf argument: the plugin stays out of every job */

static int opt_collscope(int val, const char *optarg, int remote);

static struct spank_option collscope_opt = {
    "collscope", "[OPTS]",
    "record NCCL collectives with collscope; OPTS: comma list of sdc=off|all|sample:N, timing=auto|events|"
    "profiler|off, dir=PATH (%j job id, %u user, %s step), topology=FILE, hang=S, ring=N, log=LEVEL, "
    "online=0|1, sdc_action=log|abort, sdc_min_bytes=N; or off",
    2, 0, opt_collscope};

/* A bad option in a step (the plugin newer or older in slurmstepd than where the job was
 * submitted) is kept here and told in one line by the first task: the job runs without. */
static char step_opt_error[320];

/* Whether srun got the option from the job's environment (every srun of an `sbatch
 * --collscope` job) rather than from its own command line: Slurm carries a job's SPANK
 * options to the steps' sruns as SLURM_SPANK__SLURM_SPANK_OPTION_<plugin>_<option>. */
static int inherited(const char *optarg) {
  const char *env = getenv("SLURM_SPANK__SLURM_SPANK_OPTION_collscope_collscope");
  return env && getenv("SLURM_JOB_ID") && strcmp(env, optarg ? optarg : "(null)") == 0;
}

static int opt_collscope(int val, const char *optarg, int remote) {
  (void)val;
  char err[768], shown[CS_SPANK_SHOW_MAX + 32];
  if (cs_spank_job_parse(&job, optarg, err, sizeof err) == 0) return 0;
  cs_spank_opts_show(optarg, shown, sizeof shown);
  if (remote || inherited(optarg)) {
    /* srun checked it when the job was submitted: a step reaching here anyway runs
     * without collscope, and says so once */
    job.given = true;
    job.off = true;
    snprintf(step_opt_error, sizeof step_opt_error, "--collscope=%s: %.160s", shown, err);
    if (!remote) fprintf(stderr, "collscope: %s; the job runs without collscope\n", step_opt_error);
    return 0;
  }
  /* srun/sbatch/salloc: the job is refused before anything runs. Returning -1 would make
   * Slurm add "Invalid --collscope argument: VALUE" with the whole value, however long; the
   * plugin's line (at most 64 bytes of it) is the message, and the command stops here as it
   * would after Slurm's. */
  slurm_error("collscope: --collscope=%s: %s", shown, err);
  exit(1);
}

int slurm_spank_init(spank_t sp, int ac, char **av) {
  cs_spank_site_init(&site);
  memset(&job, 0, sizeof job);
  for (int i = 0; i < ac; i++) {
    char err[512];
    if (cs_spank_site_arg(&site, av[i], err, sizeof err)) {
      slurm_error("collscope: %s; collscope is off for every job", err);
      site_bad = 1;
    }
  }
  /* the option exists where jobs are launched (srun, sbatch/salloc, slurmstepd), not in
   * slurmd or the prolog/epilog */
  spank_context_t ctx = spank_context();
  if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR) return 0;
  if (spank_option_register(sp, &collscope_opt) != ESPANK_SUCCESS)
    slurm_error("collscope: cannot register --collscope");
  return 0;
}

/* one line on the task's stderr, from the first task on each node only */
static void say_once(spank_t sp, const char *what) {
  int local = -1;
  if (spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS || local == 0)
    fprintf(stderr, "collscope: %s; the job runs without collscope\n", what);
}

/* The step's ids, the user's name and the job directory, as both task hooks need them.
 * Returns 0, or -1 with what went wrong in msg (msg "" : a step collscope leaves alone). */
struct step_info {
  uint32_t jobid, stepid;
  uid_t uid;
  gid_t gid; /* the group= group, (gid_t)-1 without */
  char jobs[16], steps[16], user[256], dir[1024];
};
static int step_info(spank_t sp, struct step_info *si, char *msg, size_t msglen) {
  msg[0] = 0;
  si->jobid = si->stepid = 0;
  si->uid = 0;
  if (spank_get_item(sp, S_JOB_ID, &si->jobid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &si->stepid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &si->uid) != ESPANK_SUCCESS) {
    snprintf(msg, msglen, "cannot read the job id, step id or user");
    return -1;
  }
  /* the batch script, the extern and interactive steps are shells, not the job's ranks:
   * the sruns they start are steps of their own */
  if (si->stepid == SLURM_BATCH_SCRIPT || si->stepid == SLURM_EXTERN_CONT || si->stepid == SLURM_INTERACTIVE_STEP)
    return -1;
  snprintf(si->jobs, sizeof si->jobs, "%u", (unsigned)si->jobid);
  snprintf(si->steps, sizeof si->steps, "%u", (unsigned)si->stepid);
  char pwbuf[4096];
  struct passwd pw, *pwp = NULL;
  if (getpwuid_r(si->uid, &pw, pwbuf, sizeof pwbuf, &pwp) == 0 && pwp)
    snprintf(si->user, sizeof si->user, "%s", pw.pw_name);
  else
    snprintf(si->user, sizeof si->user, "%u", (unsigned)si->uid);
  si->gid = (gid_t)-1;
  if (site.group[0]) {
    struct group gr, *grp = NULL;
    char grbuf[8192];
    if (getgrnam_r(site.group, &gr, grbuf, sizeof grbuf, &grp) != 0 || !grp) {
      snprintf(msg, msglen, "unknown group '%s' in plugstack.conf", site.group);
      return -1;
    }
    si->gid = gr.gr_gid;
  }
  if (cs_spank_expand(job.dir[0] ? job.dir : site.dir, si->jobs, si->user, si->steps, si->dir, sizeof si->dir)) {
    snprintf(msg, msglen, "the job directory template does not expand to a path");
    return -1;
  }
  return 0;
}

/* The node record (include/collscope/slurm_node.h): created here, as root, in the job
 * directory (walked and made with the user's identity, so nothing is made or followed that
 * the user could not), and filled in slurm_spank_task_init once Slurm has put its own node
 * name in the task's SLURMD_NODENAME. One per task: this process is the task, which execs
 * the job's program, so the record's pid is the rank's when the rank is the task itself. Any
 * failure leaves no record: that task's node is then unverified, the job runs as it would. */
static int record_fd = -1;

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av) {
  (void)ac, (void)av;
  if (!spank_remote(sp) || site_bad || step_opt_error[0] || !cs_spank_job_enabled(&site, &job)) return 0;
  if (geteuid() != 0) return 0;
  struct step_info si;
  char msg[1200];
  if (step_info(sp, &si, msg, sizeof msg) || si.dir[0] != '/') return 0; /* relative: the task's cwd is not set yet */

  gid_t saved[256];
  int nsaved = getgroups(256, saved);
  gid_t *gids = NULL;
  int ngids = 0;
  if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) != ESPANK_SUCCESS) gids = NULL, ngids = 0;
  gid_t pgid = 0;
  if (spank_get_item(sp, S_JOB_GID, &pgid) != ESPANK_SUCCESS || nsaved < 0) return 0;
  int dfd = -1;
  char err[768];
  /* the user's identity for the walk, root's again for the record */
  if (setgroups((size_t)ngids, gids) == 0 && setegid(pgid) == 0 && seteuid(si.uid) == 0) {
    dfd = cs_jobdir_open(si.dir, si.gid, err, sizeof err);
  }
  if (seteuid(0) != 0 || setegid(0) != 0 || setgroups((size_t)nsaved, saved) != 0) {
    slurm_error("collscope: cannot return to root after making the job directory: %s", strerror(errno));
    if (dfd >= 0) close(dfd);
    return -1; /* still the user's identity at best: Slurm ends this task set-up */
  }
  if (dfd < 0) return 0; /* task_init says what went wrong, as the user */
  record_fd = cs_node_record_create(dfd, si.steps, err, sizeof err);
  if (record_fd < 0) slurm_verbose("collscope: %s", err);
  close(dfd);
  return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
  (void)ac, (void)av;
  if (!spank_remote(sp) || site_bad || (!step_opt_error[0] && !cs_spank_job_enabled(&site, &job))) return 0;
  struct step_info si;
  char msg[1200];
  if (step_info(sp, &si, msg, sizeof msg)) {
    if (msg[0]) say_once(sp, msg);
    return 0;
  }
  if (step_opt_error[0]) {
    say_once(sp, step_opt_error);
    return 0;
  }
  char err[768];
  if (record_fd >= 0) {
    /* Slurm set SLURMD_NODENAME from slurmd's node name after copying the job's environment
     * (a value the job passed is overwritten) and no code of the job has run yet */
    char node[CS_NODE_NAME_MAX + 1] = "";
    if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node) != ESPANK_SUCCESS) node[0] = 0;
    if (cs_node_record_fill(record_fd, si.jobs, si.steps, node, (unsigned long)si.uid, (long)getpid(), err, sizeof err))
      slurm_verbose("collscope: %s", err);
    record_fd = -1;
  }
  if (access(site.shim, R_OK) != 0) {
    snprintf(msg, sizeof msg, "cannot read the shim %s", site.shim);
    say_once(sp, msg);
    return 0;
  }
  if (cs_jobdir_make(si.dir, si.gid, err, sizeof err)) {
    say_once(sp, err);
    return 0;
  }

  char cur[8192] = "", preload[8192 + 1024];
  int have = spank_getenv(sp, "LD_PRELOAD", cur, sizeof cur) == ESPANK_SUCCESS;
  if (cs_spank_preload(site.shim, have ? cur : NULL, preload, sizeof preload)) {
    say_once(sp, "LD_PRELOAD is too long");
    return 0;
  }
  /* the variables first, LD_PRELOAD last: a failure leaves the job's preload as it was */
  int bad = spank_setenv(sp, "COLLSCOPE_DIR", si.dir, 1) != ESPANK_SUCCESS ||
            spank_setenv(sp, "COLLSCOPE_JOB_ID", si.jobs, 1) != ESPANK_SUCCESS;
  /* on by the site's default (the job did not ask): the always-on recording mode, bounded disk
   * (docs/always-on.md); a job's record= below overrides it */
  if (!bad && !job.given) bad = spank_setenv(sp, "COLLSCOPE_RECORD", "summary", 1) != ESPANK_SUCCESS;
  for (size_t i = 0; i < job.nvars && !bad; i++) {
    char name[64];
    const char *eq = strchr(job.vars[i], '=');
    size_t nl = (size_t)(eq - job.vars[i]);
    if (nl >= sizeof name) continue;
    memcpy(name, job.vars[i], nl);
    name[nl] = 0;
    bad = spank_setenv(sp, name, eq + 1, 1) != ESPANK_SUCCESS;
  }
  if (bad || spank_setenv(sp, "LD_PRELOAD", preload, 1) != ESPANK_SUCCESS) say_once(sp, "cannot set the task's environment");
  return 0;
}
