/* hooks/nccl_calls.c: the NCCL functions hooks/ calls (nccl_calls.h). Until the shim
 * hands them over, nothing resolves and every real function reads NULL. */
#include "nccl_calls.h"

static bool resolve_none(void) { return false; }
#define CS_NCCL_NONE(name, params) static ncclResult_t(*const none_##name) params = 0;
CS_NCCL_CALLS(CS_NCCL_NONE)
#undef CS_NCCL_NONE

struct cs_nccl_calls cs_nccl = {
    .resolve = resolve_none,
#define CS_NCCL_NONE_FIELD(name, params) .real_##name = &none_##name,
    CS_NCCL_CALLS(CS_NCCL_NONE_FIELD)
#undef CS_NCCL_NONE_FIELD
};

void cs_nccl_calls_set(const struct cs_nccl_calls *c) { cs_nccl = *c; }
