/* hooks/health.h: GPU (NVML) and InfiniBand health sampled on collscope's harvest thread,
 * never on the job's threads (docs/health.md). Every COLLSCOPE_HEALTH_MS a `health` line goes
 * to the dump: the GPU's current values and its counters' deltas, and on local rank 0 the
 * host's InfiniBand port counter deltas (hooks/health_ib.c). */
#ifndef COLLSCOPE_HOOKS_HEALTH_H
#define COLLSCOPE_HOOKS_HEALTH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Called by the harvest thread on every pass (cheap when no sample is due); final: the
 * process is ending, take a last sample now. */
/* On the harvest thread as it starts: reads COLLSCOPE_HEALTH_MS and opens NVML (before the
 * dump header is written). */
void cs_health_start(void);
/* The dump header's GPU identity (struct cs_dump_sources' header_extra, shim/wiring.c):
 * `,"gpu_name":...` into out, its length; 0 before cs_health_start() or with health off. */
size_t cs_health_header_extra(int device, char *out, size_t cap);
void cs_health_tick(bool final);
/* Called by the harvest thread as each record is written: an op whose GPU work ended past the
 * next sample's moment makes it due now (samples follow the job's timeline). */
struct cs_record;
void cs_health_record_done(const struct cs_record *r);

/* IB ports (health_ib.c): append the sample's "ib":[...] JSON to buf (NUL terminated,
 * truncated at cap); returns false when nothing was written. */
struct cs_strbuf {
  char *p;
  size_t len, cap;
};
void cs_sb_printf(struct cs_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* *errors: an error counter moved; hv (the stats ring's health sample): the first
 * CS_RING_IB_PORTS ports' state, rate and counter totals */
struct cs_ring_health_vals;
bool cs_health_ib_sample(struct cs_strbuf *b, bool *errors, struct cs_ring_health_vals *hv);

/* What the rank's own recent GPU samples show (any thread): CS_HEALTH_F_* bits of
 * include/collscope/record.h, a throttle reason active in >= 20% of the last 16 samples,
 * NVLink or PCIe errors in any of them; 0 when none or not sampled. */
unsigned cs_health_cause(void);
/* Those bits as the report's cause kinds ("power_cap,thermal"), "" for none. */
const char *cs_health_cause_text(unsigned cause, char *buf, size_t cap);
#endif
