/* shim/wiring.c: connects the layers at load. The layers depend one way (shim -> hooks ->
 * stats; DESIGN.md "Layers and where things are decided"): where a lower layer needs work
 * of a higher one done -- the harvest thread finishing a record, the dump naming a CUDA
 * runtime call, hooks/ calling NCCL or the NCCL profiler plugin -- it offers a table and
 * this file fills it, once, from the constructor (shim/init.c), before any thread of
 * collscope runs. The order of the harvest clients is the order each record is finished
 * in: the GPU's identity (from the first communicator record, before the ring has it), SDC results, then timing (the profiler plugin's span, the GPU events, the probation
 * verdict); then the online exchange sees the finished record; then the NCCL_NET links; then
 * the health sampler (its own clock decides when a pass samples). */
#include "nccl_shim.h"
#include "hooks/cuda_driver.h"
#include "hooks/gpu_ident.h"
#include "hooks/health.h"
#include "hooks/nccl_calls.h"
#include "hooks/online_exchange.h"
#include "hooks/sdc_check.h"
#include "hooks/timing.h"
#include "stats/dump_writer.h"
#include "stats/harvest.h"

/* ---- hooks/ calls NCCL: the real functions and the shim's own entry points ---- */
static const struct cs_nccl_calls nccl_calls = {
    .resolve = cs_resolve_nccl,
#define CS_NCCL_WIRE(name, params) .real_##name = &cs_real_##name, .name = name,
    CS_NCCL_CALLS(CS_NCCL_WIRE)
#undef CS_NCCL_WIRE
};

/* ---- the NCCL profiler plugin as hooks/timing.c's second timing source ---- */
static const struct cs_timing_plugin profiler_plugin = {
    .wanted = cs_prof_wanted,
    .claim = cs_prof_claim,
    .unlinked = cs_prof_unlinked,
    .group_set = cs_prof_group_set,
    .collect = cs_prof_collect,
    .probe_judge = cs_prof_probe_judge,
};

/* ---- the harvest thread: NCCL_NET link records once a pass ---- */
static void net_pass(bool final, void (*emit)(const struct cs_record *r)) { cs_net_collect(final, emit); }
static const struct cs_harvest_client net_links = {.name = "net", .pass = net_pass};

/* ---- the harvest thread: GPU and IB health samples (hooks/health.c); the final pass takes
 * the last sample before the footer ---- */
static void health_pass(bool final, void (*emit)(const struct cs_record *r)) {
  (void)emit;
  cs_health_tick(final);
}
static const struct cs_harvest_client health = {
    .name = "health", .finished = cs_health_record_done, .pass = health_pass, .thread_start = cs_health_start};

/* ---- the dump: the profiler's standing in the footer ---- */
static void profiler_footer(const struct cs_dump_kv *kv) {
  struct cs_prof_standing ps;
  const char *prof = cs_prof_standing(&ps);
  if (!prof) return; /* NCCL profiler plugin timing (COLLSCOPE_TIMING=auto|profiler) only */
  kv->str("profiler", prof);
  kv->u64("prof_probes", ps.judged);
  kv->u64("prof_agreed", ps.agreed);
  if (ps.trusted[0]) kv->str("prof_trusted", ps.trusted);
  if (ps.rejected[0]) kv->str("prof_rejected", ps.rejected);
}
static const struct cs_dump_sources dump_sources = {
    .device_info = cs_driver_device_info,
    .xfer_api_name = cs_cudart_api_name,
    .header_extra = cs_health_header_extra,
    .footer = {profiler_footer, cs_sdc_dump_footer},
};

void cs_wiring_connect(void) {
  cs_nccl_calls_set(&nccl_calls);
  cs_timing_plugin_set(&profiler_plugin);
  cs_harvest_register(&cs_gpu_ident_harvest);
  cs_harvest_register(&cs_sdc_harvest);
  cs_harvest_register(&cs_timing_harvest);
  cs_harvest_register(&cs_online_harvest);
  cs_harvest_register(&net_links);
  cs_harvest_register(&health);
  cs_dump_sources_set(&dump_sources);
}
