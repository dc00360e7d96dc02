/* stats/flight.h: COLLSCOPE_RECORD=summary's flight recorder (docs/always-on.md): the last
 * COLLSCOPE_FLIGHT_OPS op records in a ring allocated once, written as ordinary op lines in a
 * window around a trigger (a "window" line first, include/collscope/dump_schema.h
 * CS_DUMP_WINDOW_FIELDS): the ring's ops not yet written, then the next COLLSCOPE_FLIGHT_AFTER
 * ops as they finish. Everything but cs_flight_request runs on the harvest thread. */
#ifndef COLLSCOPE_STATS_FLIGHT_H
#define COLLSCOPE_STATS_FLIGHT_H
#include "core.h"

enum cs_flight_reason { CS_WIN_FAILED = 1,
                        CS_WIN_HANG,
                        CS_WIN_FINDING,
                        CS_WIN_SIGNAL,
                        CS_WIN_REQUEST,
                        CS_WIN_IDLE,
                        CS_WIN_SNAPSHOT,
                        CS_WIN_LOCAL };

/* COLLSCOPE_RECORD=summary: the ring and the summaries (stats/summary.h); false (logged) when
 * they cannot be allocated: every op is then written whole, as in full mode */
bool cs_flight_init(size_t ring_ops, size_t after_ops, unsigned summary_s);
bool cs_flight_on(void);
/* a finished op or xfer record in summary mode: summarised, kept in the ring, and written when a
 * window is open or it opens one (a failed op) */
void cs_flight_op(const struct cs_record *r);
/* a window now (r: the trigger's op, NULL when none) */
void cs_flight_trigger(enum cs_flight_reason why, const struct cs_record *r);
/* from any thread (one atomic store): a window at the harvest thread's next loop */
void cs_flight_request(enum cs_flight_reason why);
/* the harvest thread's loop: requests, `collscope snapshot`'s (the stats ring's snap_asked,
 * include/collscope/ring.h "Requests": a window, or in full mode a flush, then the answer in
 * the ring's header), the trigger file <COLLSCOPE_DIR>/collscope-flight (a
 * window each time its modification time changes; checked at most once a second), and a
 * process whose ops stopped: no op or memcpy finished for COLLSCOPE_HANG_TIMEOUT seconds of
 * the host's clock after some did (once until they flow again): its ring and summaries reach
 * the file while the process is alive (a rank stuck inside a call has no pending op to
 * report as hung) */
void cs_flight_tick(void);
/* the file closes (stats/summary.c cs_summary_close): a last look at the trigger file, so a
 * request made while this process ran its last second still gets its window */
void cs_flight_closing(void);
const char *cs_flight_reason_name(int why);
size_t cs_flight_mem(void);
/* a forked child: the ring and the summaries start empty (the memory is kept) */
void cs_flight_atfork_child(void);
void cs_flight_free(void);
/* windows written, ops written in them */
uint64_t cs_flight_windows(void);
uint64_t cs_flight_ops_written(void);
/* windows of the local trigger (stats/flight_local.h) */
uint64_t cs_flight_local_windows(void);
/* triggers that wrote no window: inside an open one, or past the bound (WINDOW_BURST, then
 * one an hour of the records' time, stats/flight.c) */
uint64_t cs_flight_suppressed(void);

/* the writer's lines (stats/dump_writer_records.c) */
void cs_dump_window_line(int why, const struct cs_record *r, uint64_t before, uint64_t after);
void cs_dump_op_line(const struct cs_record *r); /* an op line whatever the mode */

#endif
