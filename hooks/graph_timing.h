/* hooks/graph_timing.h: timing of CUDA graph replays that hold captured NCCL ops. At capture,
 * each NCCL op (or a group's span on one stream) is bracketed by two external event record
 * nodes, remembered with the op's record as a template; an instantiated executable gets its
 * own copy of its graph's ops; each launch sets fresh pooled events on the executable's nodes
 * and pushes one record per captured op (graph id, replay number, a fresh seq), timed like an
 * eager op. Nothing here can make a capture, an instantiation or a launch fail: a failure
 * leaves the op untimed (host timing, or no replay records) and is counted in
 * cs_st.timing_lost (the footer's). */
#ifndef COLLSCOPE_GRAPH_TIMING_H
#define COLLSCOPE_GRAPH_TIMING_H
#include "stats/core.h"
#include <stdbool.h>

/* Capture side (hooks/timing.c, job threads, a stream under capture).
 * cs_graph_capture_begin: the start node of r's span, before the NCCL call (r->graph_node =
 *   1 + its slot, 0 when none could be made);
 * cs_graph_capture_end:   the end node, after the call returned (ok: NCCL accepted it); a
 *   failed call or node frees the span; r outside a group (r->group 0) is an op whose
 *   record is final and joins its span (cs_graph_capture_op); a group's span on a stream
 *   carries the group's id;
 * cs_graph_capture_op:    an op whose record is final (status, seq, group) joins the span
 *   named by its graph_node, as the template of its replays' records. */
void cs_graph_capture_begin(struct cs_record *r, void *stream);
void cs_graph_capture_end(struct cs_record *r, void *stream, bool ok);
void cs_graph_capture_op(const struct cs_record *r);

/* The graph API (shim/cudart_wrappers.c): after a successful instantiation, and when an
 * executable or a graph is destroyed (before the real call). */
void cs_graph_instantiated(void *exec, void *graph);
void cs_graph_exec_destroyed(void *exec);
void cs_graph_destroyed(void *graph);

/* One launch of `exec`: cs_graph_launch_begin (before the real launch) sets fresh events on the
 * executable's nodes and returns its entry (NULL: not one with captured NCCL ops, nothing to do);
 * cs_graph_launch_end (after it, ok: the launch was accepted) pushes the replay's records. No
 * lock, allocation or syscall; one event pair per captured span. */
struct cs_graph_exec;
struct cs_graph_exec *cs_graph_launch_begin(void *exec);
void cs_graph_launch_end(struct cs_graph_exec *x, bool ok);

/* Stream captures opened and closed in the process (the capture calls,
 * shim/cudart_wrappers.c): while one is open, no op is sampled out (cs_sample_below), so that
 * a small collective outside the event sample is still bracketed in the graph and its replays
 * timed. An over-count only costs events; opening counts before the real call. */
void cs_graph_capture_opening(void);
void cs_graph_capture_closed(void);
/* The event sample's size bound as the hot path reads it: COLLSCOPE_EVENT_SAMPLE_BYTES once
 * the driver is loaded, 0 (nothing sampled out) without a driver or while a capture is open;
 * set by cs_graph_sample_update (driver load, capture open/close; one lock, never per op). */
extern _Atomic uint64_t cs_sample_below;
void cs_graph_sample_update(void);

void cs_graph_atfork_child(void);

#endif
