/* stats/summary.h: COLLSCOPE_RECORD=summary's per-interval op summaries (docs/always-on.md):
 * the harvest thread adds every finished op record; each interval of COLLSCOPE_SUMMARY_S
 * seconds (on the records' own enqueue times) becomes one "summary" line per (communicator,
 * op, dtype, size bucket) (include/collscope/dump_schema.h CS_DUMP_SUMMARY_FIELDS). Tables
 * are allocated once (cs_summary_init); adding allocates nothing. Harvest thread only. */
#ifndef COLLSCOPE_STATS_SUMMARY_H
#define COLLSCOPE_STATS_SUMMARY_H
#include "core.h"

#define CS_SUMMARY_KEYS 256 /* distinct keys in the table; when 3/4 are used its lines are written early */
#define CS_SUMMARY_SIZES 8  /* distinct sizes a line lists */
#define CS_SUMMARY_XFER 255 /* the op of a CUDA memcpy's summary (written "Memcpy") */

/* false when the tables cannot be allocated (summary mode is then off: every op is written) */
bool cs_summary_init(unsigned interval_s);
bool cs_summary_on(void);
/* adds an op or xfer record; false only without tables (the caller writes it whole) */
bool cs_summary_add(const struct cs_record *r);
/* writes every key's line of the open interval and starts an empty one */
void cs_summary_flush(void);
/* at the file's end: the open interval's lines and the compute gaps' (stats/summary_gaps.h) */
void cs_summary_close(void);
/* forgets the open interval (a forked child: its parent's ops are not its own) */
void cs_summary_reset(void);
/* bytes the tables hold (the benchmark's memory figure) */
size_t cs_summary_mem(void);
void cs_summary_free(void);

/* one summary line as the writer formats it (stats/dump_writer_records.c) */
struct cs_summary_line {
  uint64_t comm;
  int comm_size, comm_rank, op, dtype, bucket;
  int64_t t0_ns, t1_ns;
  uint64_t count, timed, errors, grouped, bytes, bytes_min, bytes_max;
  int64_t dur_sum_ns, dur_min_ns, dur_max_ns;
  const char *sizes, *hist;
};
void cs_dump_summary_line(const struct cs_summary_line *s);

#endif
