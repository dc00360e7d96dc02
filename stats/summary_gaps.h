/* stats/summary_gaps.h: COLLSCOPE_RECORD=summary's compute gaps per (communicator, rank)
 * (docs/always-on.md): the figures the report's balance section gathers from op lines
 * (tools/report/report_balance.h: ops, the running compute gap, its values and the op ends
 * after the first and the last 64 ops, the periods the op sequence repeats with), kept by the
 * harvest thread from every op record and written as "gaps" lines
 * (include/collscope/dump_schema.h CS_DUMP_GAPS_FIELDS) at most once an hour of the records'
 * time and when the file closes. Send/Recv members also keep what the pipeline schedule gathers
 * (include/collscope/schedule.h cs_sched_summed) and the running compute over their last
 * CS_GAPS_LONG ops (a stage's compute per step). Tables allocated once (cs_gaps_init); harvest thread only. */
#ifndef COLLSCOPE_STATS_SUMMARY_GAPS_H
#define COLLSCOPE_STATS_SUMMARY_GAPS_H
#include "core.h"

#define CS_GAPS_MEMBERS 64   /* (communicator, rank) pairs kept; later ones are counted, not kept */
#define CS_GAPS_HELD 64      /* ops whose running compute is kept at each end (BAL_PMAX) */
#define CS_GAPS_LONG 512     /* a Send/Recv member's last ops whose running compute is kept (BAL_RING) */
#define CS_GAPS_EVERY_S 3600 /* the lines at most this often (records' time), and at close */

bool cs_gaps_init(void);
void cs_gaps_free(void);
size_t cs_gaps_mem(void);
/* ops that found no room in the (communicator, rank) table since the last reset (the footer's
 * gaps_lost) */
uint64_t cs_gaps_lost(void);
/* an op record, in the order the dump writes op lines */
void cs_gaps_add(const struct cs_record *r);
/* the lines, when CS_GAPS_EVERY_S of the records' time passed since the last ones (or force) */
void cs_gaps_write(bool force);
/* forgets everything (a forked child) */
void cs_gaps_reset(void);

#endif
