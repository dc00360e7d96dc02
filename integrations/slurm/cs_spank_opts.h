/* integrations/slurm/cs_spank_opts.h: the --collscope[=OPTS] option of the SPANK plugin
 * and its plugstack.conf arguments, parsed and turned into the shim's COLLSCOPE_*
 * variables. No Slurm dependency (unit-tested in tests/slurm without Slurm). */
#ifndef COLLSCOPE_SPANK_OPTS_H
#define COLLSCOPE_SPANK_OPTS_H
#include <stdbool.h>
#include <stddef.h>

#define CS_SPANK_MAX_VARS 16

/* What plugstack.conf says (site) and what the job asked for (job). */
struct cs_spank_site {
  char shim[1024]; /* shim=PATH: libcollscope.so to preload */
  char dir[1024];  /* dir=TEMPLATE: the job's dump directory (%j job id, %u user, %s step id, %% '%') */
  char group[64];  /* group=NAME: the job directory is 0750 and owned by this group */
  bool default_on; /* default=on: jobs get collscope unless --collscope=off */
};

struct cs_spank_job {
  bool given;     /* --collscope was on the command line (with or without OPTS) */
  bool off;       /* --collscope=off */
  char dir[1024]; /* dir=PATH (template as the site's), "" for the site's */
  size_t nvars;   /* the shim variables OPTS set, "NAME=VALUE" */
  char vars[CS_SPANK_MAX_VARS][1088];
};

void cs_spank_site_init(struct cs_spank_site *s);
/* One plugstack.conf argument (KEY=VALUE). Returns 0, or -1 with err filled. */
int cs_spank_site_arg(struct cs_spank_site *s, const char *arg, char *err, size_t errlen);

/* OPTS of --collscope[=OPTS] into job. NULL, "", "(null)" (how Slurm hands the bare flag
 * of sbatch to the job's steps) and "on" are the bare flag: collscope on with defaults;
 * "off"; else KEY=VALUE items separated by single commas, each key at most once (an empty
 * item, as in "," or "a=1,,b=2", and a repeated key are errors). Returns 0, or -1 with a
 * message naming the bad item, key or value (at most 64 bytes of it) in err. */
int cs_spank_job_parse(struct cs_spank_job *job, const char *opts, char *err, size_t errlen);

/* OPTS as an error message shows it: whole up to CS_SPANK_SHOW_MAX bytes, else the first
 * CS_SPANK_SHOW_MAX and the length; control bytes as '?'. Returns out. */
#define CS_SPANK_SHOW_MAX 64
const char *cs_spank_opts_show(const char *opts, char *out, size_t outlen);

/* Whether a job runs with collscope: asked (and not off), or site default on and not off. */
bool cs_spank_job_enabled(const struct cs_spank_site *s, const struct cs_spank_job *job);

/* TEMPLATE with %j, %u, %s and %% replaced; any other '%' sequence is an error.
 * Returns 0, or -1 (bad template or too long for out). */
int cs_spank_expand(const char *tmpl, const char *jobid, const char *user, const char *stepid, char *out,
                    size_t outlen);

/* LD_PRELOAD with shim first and the job's entries after it, shim not repeated.
 * Returns 0, or -1 when it does not fit. */
int cs_spank_preload(const char *shim, const char *cur, char *out, size_t outlen);
#endif
