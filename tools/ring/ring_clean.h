/* tools/ring/ring_clean.h: the file handling of `collscope salvage` that touches other
 * people's files when root runs it (a Slurm epilog): the output directory opened without
 * following a symbolic link, salvaged dumps written under a temporary name and given to the
 * rings' owner, a ring's writer judged dead from what its file holds, and a ring removed
 * only when its name still holds the file that was judged. */
#ifndef COLLSCOPE_TOOLS_RING_CLEAN_H
#define COLLSCOPE_TOOLS_RING_CLEAN_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Open DIR (made 0700 when absent) for salvaged dumps. As root every component is opened
 * with O_NOFOLLOW (no symbolic link anywhere in DIR), a directory root makes for uid OWNER
 * is given to OWNER, and an existing one must belong to root or OWNER. Returns a directory
 * fd, or -1 with one line on ERR. */
int clean_outdir_open(const char *dir, uid_t owner, FILE *err);

/* A new file NAME in directory DFD, written by WRITE(f, arg) under an O_EXCL|O_NOFOLLOW
 * temporary, owned by OWNER:GROUP when root writes it for another uid, then linked to NAME
 * (never over an existing file). Returns 0, or -1 with errno set (nothing left behind). */
int clean_write_file(int dfd, const char *name, uid_t owner, gid_t group, int (*write)(FILE *f, void *arg),
                     void *arg);

/* What a ring file's header says of its writer, for a file the reader refused: */
enum clean_writer { CLEAN_WRITER_DEAD,
                    CLEAN_WRITER_ALIVE,
                    CLEAN_WRITER_UNKNOWN };
/* PATH, a regular file owned by OWNER (else UNKNOWN): the writer named by the header (our
 * ring version: pid and start time; a header of another version with our magic: its pid),
 * else by the name's -p<pid>. DEV and INO: the file judged. */
enum clean_writer clean_judge_writer(const char *path, uid_t owner, uint64_t *dev, uint64_t *ino);

/* Remove PATH when it still holds the file DEV:INO: it is moved aside first, checked, and
 * put back when another file took the name meanwhile. Returns 0 removed, 1 the name holds
 * another file now (nothing removed), -1 error (errno). */
int clean_remove_ring(const char *path, uint64_t dev, uint64_t ino);

#endif
