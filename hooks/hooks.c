/* hooks/hooks.c: dispatch of the communicator extension points (see hooks.h) to the
 * feature modules. A feature adds one call per hook here (per-call hooks: a call and its
 * gate in the inline dispatchers of hooks.h); nothing else in the shim changes. */
#include "hooks.h"
#include "online_exchange.h"
#include "sdc_check.h"
#include "topo_route.h"

void cs_hooks_comm_created(void *comm, struct cs_comm *info) {
  cs_topo_route_comm_created(comm, info);
  cs_online_comm_created(comm, info);
}

void cs_hooks_comm_unrecorded(void *comm, struct cs_comm *info) { cs_online_comm_unrecorded(comm, info); }

void cs_hooks_comm_destroying(void *comm) {
  cs_online_comm_destroying(comm);
  cs_topo_route_comm_destroying(comm);
}
