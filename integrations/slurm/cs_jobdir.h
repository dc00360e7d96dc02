/* integrations/slurm/cs_jobdir.h: the job's dump directory, made by the job's user without
 * following a symbolic link anywhere on its path. No Slurm dependency. */
#ifndef COLLSCOPE_JOBDIR_H
#define COLLSCOPE_JOBDIR_H
#include <stddef.h>
#include <sys/types.h>

/* Make (or accept, when it is already the caller's own directory) PATH, walked one component
 * at a time with openat/mkdirat and O_NOFOLLOW|O_DIRECTORY from "/" (absolute) or the current
 * directory. Missing parents are made 0755. Every parent must be owned by root or the caller,
 * and when others may write to it, be sticky (a planted entry cannot then replace ours). The
 * last component ends up owned by the caller with mode 0700, or 0750 and group gid when gid
 * is not (gid_t)-1. Returns 0, or -1 with one line in err. */
int cs_jobdir_make(const char *path, gid_t gid, char *err, size_t errlen);
/* The same, returning the directory opened (O_DIRECTORY, close-on-exec) instead of 0. */
int cs_jobdir_open(const char *path, gid_t gid, char *err, size_t errlen);
#endif
