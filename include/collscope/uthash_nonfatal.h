/* include/collscope/uthash_nonfatal.h: uthash for code that runs inside the job (stats/, analysis/:
 * the dump writer, the online exchange) and the readers sharing it. uthash's default on an
 * allocation failure while adding is exit(): collscope never ends the job. Here the element is
 * left out of the table and cs_hash_oom (per thread) is set; CS_HASH_ADDED() after an add says
 * whether it went in (and clears the flag), so the caller frees what it could not add and
 * degrades as it does for any other allocation failure. Include this, never <uthash.h>, in
 * those folders (the lint suite's check-layers test refuses a plain include there). */
#ifndef COLLSCOPE_UTHASH_NONFATAL_H
#define COLLSCOPE_UTHASH_NONFATAL_H

#ifdef HASH_NONFATAL_OOM
#error "collscope/uthash_nonfatal.h sets uthash's out-of-memory mode: include it instead of <uthash.h>"
#endif
#define HASH_NONFATAL_OOM 1
static _Thread_local int cs_hash_oom __attribute__((unused));
#define uthash_nonfatal_oom(e) ((void)(e), cs_hash_oom = 1)
#include <uthash.h>

/* after a HASH_ADD: true when the element is in the table; false (the flag cleared) when uthash
 * could not allocate for it */
#define CS_HASH_ADDED() (cs_hash_oom ? (cs_hash_oom = 0, 0) : 1)

#endif
