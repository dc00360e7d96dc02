/* hooks/online_exchange.h: the job-wide online exchange: stragglers and SDC verdicts.
 *
 * Protocol (the same on every rank):
 *  1. The first communicator whose size equals the job's world size (WORLD_SIZE,
 *     SLURM_NTASKS, ...) and whose rank equals the process's global rank, created outside
 *     a group by the process's main thread, blocking (several threads creating
 *     communicators at once would make "first" differ between processes), is the world:
 *     its collectives are counted from its creation on. The job's thread only starts
 *     collscope's online thread (no NCCL call, no wait). That thread creates collscope's
 *     own communicator: world rank 0 makes an ncclUniqueId and leaves it in COLLSCOPE_DIR
 *     (hooks/online_setup.c), every rank reads it and calls a non-blocking
 *     ncclCommInitRankConfig with one CTA, polls it, and aborts it when it is not
 *     complete within COLLSCOPE_ONLINE_TIMEOUT or at shutdown. The job's communicators
 *     are never called by collscope, so a rank without collscope (or with the exchange
 *     off) costs the others nothing on the job's threads.
 *  2. The harvest thread feeds this module the finished records: every stride-th
 *     collective instance of each communicator (stride = max(1, K/16)) and every record
 *     with SDC check results.
 *  3. When the world communicator's collective count reaches a multiple of K
 *     (COLLSCOPE_ONLINE_EVERY, default 1000), collscope's own thread all-reduces one
 *     fixed-size record per round (include/collscope/online.h; a second round only when a
 *     checked collective's fingerprints disagree) on the private communicator and stream,
 *     polls for completion (never synchronizes) for at most COLLSCOPE_ONLINE_TIMEOUT
 *     seconds, then evaluates: world rank 0 logs new stragglers and SDC findings; every
 *     rank applies COLLSCOPE_SDC_ACTION=abort (ncclCommAbort on every communicator, exit
 *     status CS_SDC_ABORT_STATUS). Bytes and CPU per rank do not depend on the world size.
 *  4. Destroying the world communicator (or exit) stops the thread; a pending exchange
 *     is aborted, never waited for.
 * Hot path cost: one relaxed load and a modulo per collective on the world communicator.
 * Requirements: one rank per process; COLLSCOPE_DIR shared by world rank 0 and the others
 * (else the exchange stays off, in the background). */
#ifndef COLLSCOPE_ONLINE_HOOK_H
#define COLLSCOPE_ONLINE_HOOK_H
#include "hooks.h"
#include "stats/harvest.h"

void cs_online_comm_created(void *comm, struct cs_comm *info);
/* a communicator of a process whose recording is off (info: size, rank, nonblocking) */
void cs_online_comm_unrecorded(void *comm, struct cs_comm *info);
void cs_online_after_op(struct cs_call *c, int status);
void cs_online_comm_destroying(void *comm);
/* harvest thread: a record is final (timed, or given up) */
void cs_online_note(const struct cs_record *r);
/* the harvest thread's client that feeds cs_online_note (registered by shim/wiring.c) */
extern const struct cs_harvest_client cs_online_harvest;
/* process exit: stop the thread (the communicator is left to the process's end) */
void cs_online_shutdown(void);
void cs_online_atfork_child(void);
/* true once COLLSCOPE_SDC_ACTION=abort is stopping the process (its exit status wins) */
bool cs_online_aborting(void);

#endif
