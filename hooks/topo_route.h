/* hooks/topo_route.h: COLLSCOPE_TOPOLOGY=FILE (or SLURM_TOPOLOGY_ADDR of every rank):
 * route AllReduce, Broadcast and Reduce through a communicator whose rank order follows
 * the rack/switch topology (ncclCommSplit with key = topology position).
 *
 * Protocol (the same on every rank, so it cannot hang on a rank that decides otherwise):
 *  1. comm created (outside a group, size > 1): enqueue on a collscope-private stream an
 *     ncclAllGather of this rank's host name and SLURM_TOPOLOGY_ADDR (512 bytes a rank)
 *     on the new communicator, plus the copy back to pinned host memory. Nothing waits:
 *     every rank enqueues the same, so it completes (also for ncclCommInitAll, whose
 *     communicators are all enqueued by one thread one after the other).
 *  2. first NCCL call on that communicator (outside a group): wait for that all-gather,
 *     plan the hosts (topology/plan.c); if the communicator spans more than one leaf and
 *     the order changes, ncclCommSplit(comm, 0, key = new position). All ranks see the
 *     same host list, so all decide the same. A first call inside a group skips routing.
 *  3. later AllReduce/Broadcast/Reduce calls use the reordered communicator (root
 *     translated); everything else stays on the user's communicator.
 *  4. destroy/finalize of the user's communicator destroys the reordered one.
 * Any failure logs one line and keeps the user's communicator (fail-open).
 *
 * Costs: per routed communicator a second NCCL communicator (its buffers and
 * connections: on real NCCL typically tens to hundreds of MiB of GPU memory per rank,
 * plus its init time at the first call); per communicator of more than one rank, at
 * init a 512-byte-a-rank all-gather on a private stream (pinned + device buffers freed
 * after the first call). Nothing is added to the hot path when COLLSCOPE_TOPOLOGY and
 * SLURM_TOPOLOGY_ADDR are unset (one relaxed atomic load per call).
 * Results: a sum over a reordered ring adds the ranks' contributions in another order,
 * so floating-point results may differ in the last bits from the unordered ring; all
 * ranks still receive bitwise-identical outputs, as with any NCCL ring or tree.
 * Bounded startup: the file is parsed once, in the first communicator's init, in time
 * linear in its size and under a work budget (2^19 units: hosts, Switches= names,
 * 64-byte blocks; about 500k hosts), counted rather than timed so that every rank decides
 * the same; past it, one line and NCCL's order for every communicator.
 * Limits: a communicator whose first call is inside a group, or that was created inside
 * a group, is not routed; the decision must be the same on every rank, so jobs whose
 * ranks differ in this (one rank groups its first call, another does not) must not set
 * COLLSCOPE_TOPOLOGY. */
#ifndef COLLSCOPE_TOPO_ROUTE_H
#define COLLSCOPE_TOPO_ROUTE_H
#include "hooks.h"

void cs_topo_route_before_op(struct cs_call *c);
void cs_topo_route_comm_created(void *comm, struct cs_comm *info);
void cs_topo_route_comm_destroying(void *comm);

#endif
