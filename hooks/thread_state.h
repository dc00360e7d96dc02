/* hooks/thread_state.h: what collscope keeps per job thread (re-entrancy depth, group
 * nesting, the group's pending records, caches of the hot path) and the park that
 * COLLSCOPE_SDC_ACTION=abort puts job threads in. The shim's wrappers and hooks/ use it;
 * stats/ never does. Defined in hooks/thread_state.c. */
#ifndef COLLSCOPE_THREAD_STATE_H
#define COLLSCOPE_THREAD_STATE_H
#include "stats/core.h"

struct cs_pending; /* hooks/timing.c */
struct cs_tls {
  int depth;       /* re-entrancy guard: >0 inside a collscope wrapper */
  int group_depth; /* ncclGroupStart nesting, mirrors NCCL's per-thread depth */
  uint64_t group_id;
  struct cs_pending *pending; /* ops queued in the current group */
  uint64_t last_uid_hash;     /* last ncclGetUniqueId result seen on this thread */
  int park_exempt;            /* the thread that set cs_st.park (it aborts and exits) */
  struct cs_record *prof_cur; /* cs_prof_cur (shim/cs_internal.h) */
  void *site;                 /* call site of the NCCL_OP wrapper entered last (shim/nccl_wrappers.c) */
  struct cs_comm *last_comm;  /* the communicator entry this thread used last, never NULL: &cs_comm_none
                               * until there is one (hooks/timing.c) */
  void *last_pool;            /* the event pool this thread used last (hooks/timing.c) */
};
/* Initial-exec TLS: the wrappers reach it with one %fs-relative access, no __tls_get_addr
 * call. The model puts the library's whole TLS segment in glibc's static TLS block, so
 * when NCCL dlopen()s the library as a plugin without LD_PRELOAD, the segment must fit
 * glibc's static-TLS surplus (a few hundred bytes, shared with every library loaded
 * later): the segment's budget is 256 bytes. Keep every __thread in the library small
 * (larger per-thread state is allocated per thread and reached through a pointer, e.g.
 * hooks/sdc_check.c's group list). tests/stats/test_dlopen_tls.c loads the library that way,
 * calls it from a thread older than the dlopen and checks the budget. */
#define CS_TLS_IE __attribute__((tls_model("initial-exec")))
extern __thread struct cs_tls cs_tls CS_TLS_IE;

/* COLLSCOPE_SDC_ACTION=abort ends the process from collscope's thread, which aborts every
 * communicator: from cs_park_begin on, a job thread entering any NCCL wrapper sleeps in
 * cs_park instead (the aborting thread is exempt) until that thread's _exit; if the abort
 * itself hangs, a parked thread exits the process after CS_PARK_MAX_S. */
#define CS_PARK_MAX_S 30
void cs_park_begin(void);
void cs_park(void);

#endif
