/* hooks/sdc_check.h: silent-data-corruption checks of collective buffers.
 * Before an eligible collective, a kernel sums the input on the collective's stream;
 * after it, a kernel fingerprints and sums the output (hooks/sdc_kernels.cu). Results go
 * to pinned host memory; the harvest thread copies them into the record once the kernel
 * has written them (cs_sdc_collect). Readers compare ranks (analysis/sdc_compare.c). */
#ifndef COLLSCOPE_HOOKS_SDC_H
#define COLLSCOPE_HOOKS_SDC_H
#include "hooks/hooks.h"
#include "stats/dump_writer.h"
#include "stats/harvest.h"

void cs_sdc_before_op(struct cs_call *c);
void cs_sdc_after_op(struct cs_call *c, int status);
/* After the real outermost ncclGroupEnd returned, before the group's records are pushed
 * (cs_group_launch_end): launches the grouped ops' output checks. Until the shim calls it,
 * grouped ops are not checked. */
void cs_sdc_group_launched(int status);
/* A record of a group ended by ncclGroupSimulateEnd, about to be dropped: its slot. */
void cs_sdc_group_simulated(struct cs_record *r);
/* Harvest thread: true when r's SDC results are in r (or given up: final, or failed op);
 * false while the kernels have not finished. No-op (true) for records without a slot. */
bool cs_sdc_collect(struct cs_record *r, bool final);
/* The process's SDC standing for the dump footer: NULL when COLLSCOPE_SDC=off, else
 * "ready" (every context set up and its kernel self-test passed), "unused" (no checked
 * collective yet), "compiled_out", "no_driver", or the first failed context's reason:
 * "setup_failed", "selftest_failed", "selftest_timeout"; with the kernel launches made
 * for checks, the checks skipped for want of a free result slot, and those skipped because
 * the collective's stream was capturing a CUDA graph. */
const char *cs_sdc_standing(uint64_t *launched, uint64_t *no_slot, uint64_t *captured);
/* Harvest thread: a record with an SDC slot is finished once cs_sdc_collect says so. */
extern const struct cs_harvest_client cs_sdc_harvest;
/* The dump footer's SDC fields (sdc, sdc_launches, sdc_no_slot, sdc_captured; none when off). */
void cs_sdc_dump_footer(const struct cs_dump_kv *kv);

#endif
