/* tools/dump/readpool.h: a pool of threads for the dump readers: runs fn(ctx, i, worker) for
 * every i in [0, n), each index once, on `jobs` threads (the caller's thread is worker 0);
 * returns when all are done. Workers take the next index from a shared counter, so a slow
 * file does not hold up the others. */
#ifndef COLLSCOPE_TOOLS_READPOOL_H
#define COLLSCOPE_TOOLS_READPOOL_H
#include <stddef.h>

/* one per online core, at least 1 (the `-j` default) */
unsigned cs_pool_default_jobs(void);
/* jobs is clamped to [1, n]; a thread that cannot be started leaves its share to the others */
void cs_pool_run(unsigned jobs, size_t n, void (*fn)(void *ctx, size_t i, unsigned worker), void *ctx);

#endif
