/* hooks/hooks.c: dispatch of the per-call extension points (see hooks.h) to the feature
 * modules. A feature adds one call per hook here; nothing else in the shim changes. */
#include "hooks.h"

void cs_hooks_before_op(struct cs_call *c) { (void)c; }

void cs_hooks_after_op(struct cs_call *c, int status) {
  (void)c;
  (void)status;
}

void cs_hooks_comm_created(void *comm, struct cs_comm *info) {
  (void)comm;
  (void)info;
}

void cs_hooks_comm_destroying(void *comm) { (void)comm; }
