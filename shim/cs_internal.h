/* shim/cs_internal.h: the shim's internal API: what its files (entry points, the NCCL
 * profiler and NCCL_NET plugins, configuration, life cycle) share. The state every layer
 * shares is stats/core.h (configuration record, logger, counters, record queue,
 * communicator table); the per-thread state is hooks/thread_state.h. */
#ifndef COLLSCOPE_INTERNAL_H
#define COLLSCOPE_INTERNAL_H
#include "stats/core.h"
#include "hooks/thread_state.h"
#include "hooks/timing.h"

/* ---- configuration (shim/config.c): the environment, read once into cs_cfg ---- */
void cs_config_load(void);
/* COLLSCOPE_TIMING's value as CS_TMODE_* (shim/profiler.c); -1 when not valid */
int cs_timing_mode_parse(const char *v);

/* ---- life cycle (shim/init.c) ---- */
/* Lazy init on the first intercepted call (cheap after the first time). */
void cs_ensure_init(void);
/* Connects the layers at load (shim/wiring.c): hands hooks/ the shim's NCCL entry points
 * and profiler plugin, registers the harvest thread's clients and the dump's sources. */
void cs_wiring_connect(void);

/* ---- NCCL profiler plugin (shim/profiler.c) ---- */
/* The op record of the NCCL call this thread is inside (set around the real call by the
 * NCCL_OP wrappers); profiler Coll/P2p events started on this thread attach to it. */
#define cs_prof_cur (cs_tls.prof_cur)
/* true when the plugin may time ops: COLLSCOPE_TIMING=profiler, or auto once NCCL has
 * initialised the plugin (cheap, hot path) */
bool cs_prof_active(void);
/* cs_prof_active, the op is eligible, and its type's probation has not rejected the plugin */
bool cs_prof_wanted(int op);
/* How an eligible op is timed (hot path; call once per op, after cs_prof_wanted):
 * CS_PROF_ONLY, CS_PROF_PROBE, CS_PROF_EVENTS or CS_PROF_NONE (hooks/timing.h). */
int cs_prof_claim(int op);
/* hot path, rare: an op the plugin was trusted to time got no event from NCCL (e.g. NCCL
 * launched it from a CUDA host callback once CUDA graphs with NCCL work exist); after
 * PROF_UNLINKED_MAX such ops the type goes back to CUDA events (one log line) */
void cs_prof_unlinked(int op);
/* harvest thread: a finished probation record (its event timing final) */
void cs_prof_probe_judge(const struct cs_record *r);
/* the plugin's standing for the dump footer: "trusted" / "rejected" (every op type with a
 * verdict), "mixed" (some of each), "probation" (no verdict yet), "not_loaded" (NCCL never
 * initialised it), "forced" (COLLSCOPE_TIMING=profiler), or NULL (events/off); st gets the
 * probes compared and agreeing, and the op types trusted / rejected (comma lists) */
struct cs_prof_standing {
  unsigned judged, agreed;
  char trusted[160], rejected[160];
};
const char *cs_prof_standing(struct cs_prof_standing *st);
bool cs_prof_op_eligible(int op);
/* the group records being launched by this thread's outermost ncclGroupEnd */
void cs_prof_group_set(struct cs_record *recs, size_t n);
/* harvest thread: true when the record's profiler timing is final (filled or given up) */
bool cs_prof_collect(struct cs_record *r, bool final);
void cs_prof_release(struct cs_record *r);

/* ---- NCCL_NET wrapper (shim/net_plugin.c) ---- */
/* harvest thread: hand one CS_REC_LINK record per connection that moved data (every
 * COLLSCOPE_FLUSH_MS), closed, or (final) is still open, to emit; returns the count */
size_t cs_net_collect(bool final, void (*emit)(const struct cs_record *r));

/* ---- CUDA runtime wrappers (shim/cudart_wrappers.c) ---- */
/* the name of a CS_API_* code, as the dump writes it */
const char *cs_cudart_api_name(int api);

#endif
