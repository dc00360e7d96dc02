/* stats/dump_writer.h: the per-process JSONL dump file (schema in DESIGN.md). Only the
 * harvest thread calls these, so there is no locking. Lines are only ever written whole. */
#ifndef COLLSCOPE_DUMP_WRITER_H
#define COLLSCOPE_DUMP_WRITER_H
#include "shim/cs_internal.h"

/* Create the directory (mkdir -p) and the file (0600, O_EXCL|O_NOFOLLOW). */
bool cs_dump_open(void);
void cs_dump_record(const struct cs_record *r);
void cs_dump_drops(uint64_t count);
/* an op not complete after COLLSCOPE_HANG_TIMEOUT (DESIGN.md "hang" record) */
void cs_dump_hang(const struct cs_record *r, int64_t now_ns, bool started);
void cs_dump_footer(void);
void cs_dump_flush(void);           /* write(2) buffered whole lines */
void cs_dump_close(void);
const char *cs_dump_path(void);
void cs_dump_atfork_child(void);

#endif
