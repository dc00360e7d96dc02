/* hooks/hooks.c: dispatch of the per-call extension points (see hooks.h) to the feature
 * modules. A feature adds one call per hook here; nothing else in the shim changes. */
#include "hooks.h"
#include "online.h"
#include "sdc.h"
#include "topo_route.h"

/* COLLSCOPE_SDC is fixed at start-up: with checks off, the SDC hooks have nothing to do
 * (the record's SDC fields are zero from cs_op_begin) and are not called at all. */
void cs_hooks_before_op(struct cs_call *c) {
  if (cs_cfg.sdc_mode != CS_SDC_OFF) cs_sdc_before_op(c);
  cs_topo_route_before_op(c);
}

void cs_hooks_after_op(struct cs_call *c, int status) {
  if (cs_cfg.sdc_mode != CS_SDC_OFF) cs_sdc_after_op(c, status);
  cs_online_after_op(c, status);
}

void cs_hooks_comm_created(void *comm, struct cs_comm *info) {
  cs_topo_route_comm_created(comm, info);
  cs_online_comm_created(comm, info);
}

void cs_hooks_comm_unrecorded(void *comm, struct cs_comm *info) { cs_online_comm_unrecorded(comm, info); }

void cs_hooks_comm_destroying(void *comm) {
  cs_online_comm_destroying(comm);
  cs_topo_route_comm_destroying(comm);
}
