/* include/collscope/dump_schema.h: the fields of every dump record type, in the order the
 * shim's writer puts them on the line (DESIGN.md "Dump files"). One list per record type
 * generates the writer's field sequence (stats/dump_writer_records.c), the JSON reader's key table
 * (tools/dump/dump_records.c) and the op-line fast path (tools/dump/opscan.c), so a key is named once.
 *
 * A row is X(MEMBER, "key", JTYPE, WRITE, READ, DEFAULT):
 *  MEMBER   the field's name in the record structs generated from the list, and in the
 *           reader's record (tools/dump/dumpfile.h)
 *  JTYPE    the value on the line:
 *             I32 / I64  integer (the reader keeps an I32 in an int, clamped)
 *             U64        non-negative integer
 *             US         number: microseconds with 3 decimals (the writer holds nanoseconds)
 *             F64        number, %.17g, or null when not finite
 *             STR        string (escaped as JSON needs); SITE: the writer holds a code
 *                        address and writes its symbol; NAME: a name from collscope's own
 *                        tables (no character needs an escape); NAME0: such a name, or null
 *             ID         16 hex digits in a string; ID0: such an id, or null (the writer's 0)
 *             HEX        "0x" and hex digits in a string
 *             BOOL       true / false
 *             OBJ        an object whose fields are listed below (CS_DUMP_<MEMBER>_FIELDS)
 *  WRITE    ALWAYS; IFSET: written only when set (an integer >= 0 for I32/I64, != 0 for
 *           U64, a non-empty name or string, an object that is there); SOURCE: written by a
 *           layer above stats/ through struct cs_dump_sources (stats/dump_writer.h), where
 *           the first SOURCE row of the list stands
 *  READ     REQ: the reader rejects the line without it; OPT: it takes DEFAULT; HAND: the
 *           reader reads it itself (a conversion the row cannot say); SKIP: not read
 *  DEFAULT  what the reader takes when an OPT field is absent or null: ZERO, MINUS1, NO
 *           (false), EMPTY (""), NONE (NULL), QMARK ("?"), UNKNOWN ("unknown"), MEMCPY
 *           ("Memcpy"), HDR_RANK (the file header's rank), BY_TIMING (true when the timing
 *           is "captured"); the reader defines each
 *
 * Every line starts with {"type":"<record type>"; the first row follows it with its comma.
 * "health" lines are formatted by hooks/health.c and read by hand (docs/health.md); a header
 * written by `collscope salvage` has "salvaged_from" too. */
#ifndef COLLSCOPE_DUMP_SCHEMA_H
#define COLLSCOPE_DUMP_SCHEMA_H
#include "collscope/slurm_node.h"

/* line 1 of every file */
#define CS_DUMP_HEADER_FIELDS(X) \
  X(schema, "schema", I32, ALWAYS, REQ, ZERO) \
  X(collscope, "collscope", STR, ALWAYS, OPT, EMPTY) \
  X(host, "host", STR, ALWAYS, REQ, QMARK) \
  X(pid, "pid", I64, ALWAYS, OPT, ZERO) \
  X(rank, "rank", I32, ALWAYS, OPT, MINUS1) \
  X(local_rank, "local_rank", I32, ALWAYS, OPT, MINUS1) \
  X(world_size, "world_size", I32, ALWAYS, OPT, MINUS1) \
  X(job, "job", STR, ALWAYS, OPT, EMPTY) \
  X(step, "step", I32, IFSET, OPT, MINUS1) \
  X(slurm_node, CS_HDR_SLURM_NODE, STR, IFSET, OPT, EMPTY) \
  X(device, "device", I32, ALWAYS, OPT, MINUS1) \
  X(pci_bus_id, "pci_bus_id", STR, ALWAYS, OPT, EMPTY) \
  X(nccl_version, "nccl_version", I64, ALWAYS, OPT, ZERO) \
  X(cuda_driver_version, "cuda_driver_version", I64, ALWAYS, OPT, ZERO) \
  X(clock, "clock", OBJ, ALWAYS, HAND, NONE) \
  X(exe, "exe", STR, ALWAYS, OPT, EMPTY) \
  /* the GPU's identity from NVML (hooks/health.c) */ \
  X(gpu_name, "gpu_name", STR, SOURCE, OPT, EMPTY) \
  X(gpu_uuid, "gpu_uuid", STR, SOURCE, OPT, EMPTY) \
  X(gpu_serial, "gpu_serial", STR, SOURCE, SKIP, NONE) \
  X(gpu_arch, "gpu_arch", I32, SOURCE, OPT, MINUS1) \
  X(gpu_power_limit_mw, "gpu_power_limit_mw", U64, SOURCE, SKIP, NONE) \
  X(gpu_pci_bus_id, "gpu_pci_bus_id", STR, SOURCE, OPT, EMPTY)

/* the header's "clock": both clocks read together, to align hosts' CLOCK_REALTIME */
#define CS_DUMP_CLOCK_FIELDS(X) \
  X(realtime_ns, "realtime_ns", I64, ALWAYS, OPT, ZERO) \
  X(monotonic_ns, "monotonic_ns", I64, ALWAYS, OPT, ZERO)

/* one NCCL collective or P2P call */
#define CS_DUMP_OP_FIELDS(X) \
  X(comm, "comm", ID, ALWAYS, REQ, ZERO) \
  X(comm_size, "comm_size", I32, ALWAYS, REQ, ZERO) \
  X(comm_rank, "comm_rank", I32, ALWAYS, REQ, MINUS1) \
  X(rank, "rank", I32, ALWAYS, OPT, HDR_RANK) \
  X(seq, "seq", I64, ALWAYS, REQ, ZERO) \
  X(op_name, "op", NAME, ALWAYS, REQ, QMARK) \
  X(dtype, "dtype", NAME, ALWAYS, OPT, EMPTY) \
  X(count, "count", I64, ALWAYS, OPT, ZERO) \
  X(bytes, "bytes", U64, ALWAYS, REQ, ZERO) \
  X(redop, "redop", NAME0, ALWAYS, OPT, NONE) \
  X(root, "root", I32, ALWAYS, OPT, MINUS1) \
  X(peer, "peer", I32, ALWAYS, OPT, MINUS1) \
  X(stream, "stream", HEX, ALWAYS, OPT, ZERO) \
  X(group, "group", I64, ALWAYS, OPT, ZERO) \
  X(enqueue_ns, "enqueue_ns", I64, ALWAYS, OPT, ZERO) \
  X(start_ns, "start_ns", I64, ALWAYS, OPT, ZERO) \
  X(end_ns, "end_ns", I64, ALWAYS, OPT, ZERO) \
  X(dur_us, "dur_us", US, ALWAYS, OPT, ZERO) \
  X(timing_name, "timing", NAME, ALWAYS, REQ, UNKNOWN) \
  X(captured, "captured", BOOL, ALWAYS, OPT, BY_TIMING) \
  X(site, "site", SITE, ALWAYS, OPT, EMPTY) \
  X(status, "status", I32, ALWAYS, OPT, ZERO) \
  /* a CUDA graph replay: the executable graph's id and the replay's number (docs/timing.md) */ \
  X(graph, "graph", U64, IFSET, OPT, ZERO) \
  X(replay, "replay", U64, IFSET, OPT, ZERO) \
  /* a group's ops that share this op's GPU span (one span brackets them all): their number */ \
  X(group_ops, "group_ops", U64, IFSET, OPT, ZERO) \
  X(sdc, "sdc", OBJ, IFSET, HAND, NONE) \
  /* from NCCL's profiler plugin, when it reported them */ \
  X(algo, "algo", NAME, IFSET, SKIP, NONE) \
  X(proto, "proto", NAME, IFSET, SKIP, NONE) \
  X(nchannels, "nchannels", U64, IFSET, SKIP, NONE)

/* an op's "sdc": the SDC checks' results (hooks/sdc_check.c); checked bit 0: fp and out_sum are
 * valid, bit 1: in_sum and in_abs; the others are null */
#define CS_DUMP_SDC_FIELDS(X) \
  X(checked, "checked", I64, ALWAYS, REQ, ZERO) \
  X(fp, "fp", ID0, ALWAYS, OPT, ZERO) \
  X(in_sum, "in_sum", F64, ALWAYS, OPT, NAN_) \
  X(in_abs, "in_abs", F64, ALWAYS, OPT, NAN_) \
  X(out_sum, "out_sum", F64, ALWAYS, OPT, NAN_)

/* one CUDA memcpy */
#define CS_DUMP_XFER_FIELDS(X) \
  X(op_name, "op", NAME, ALWAYS, OPT, MEMCPY) \
  X(api, "api", NAME, ALWAYS, OPT, EMPTY) \
  X(kind, "kind", NAME, ALWAYS, OPT, EMPTY) \
  X(bytes, "bytes", U64, ALWAYS, REQ, ZERO) \
  X(async, "async", BOOL, ALWAYS, OPT, NO) \
  X(stream, "stream", HEX, ALWAYS, OPT, ZERO) \
  X(enqueue_ns, "enqueue_ns", I64, ALWAYS, OPT, ZERO) \
  X(start_ns, "start_ns", I64, ALWAYS, OPT, ZERO) \
  X(end_ns, "end_ns", I64, ALWAYS, OPT, ZERO) \
  X(dur_us, "dur_us", US, ALWAYS, OPT, ZERO) \
  X(timing_name, "timing", NAME, ALWAYS, REQ, UNKNOWN) \
  X(captured, "captured", BOOL, ALWAYS, SKIP, NO) \
  X(site, "site", SITE, ALWAYS, OPT, EMPTY) \
  X(status, "status", I32, ALWAYS, OPT, ZERO)

/* a communicator's event (init, split, finalize, destroy, abort) */
#define CS_DUMP_COMM_FIELDS(X) \
  X(event, "event", NAME, ALWAYS, REQ, QMARK) \
  X(comm, "comm", ID, ALWAYS, REQ, ZERO) \
  X(size, "size", I32, ALWAYS, OPT, ZERO) \
  X(rank, "rank", I32, ALWAYS, OPT, MINUS1) \
  X(device, "device", I32, ALWAYS, OPT, MINUS1) \
  X(parent, "parent", ID0, ALWAYS, OPT, ZERO) \
  X(t_ns, "t_ns", I64, ALWAYS, OPT, ZERO)

/* an op not complete after COLLSCOPE_HANG_TIMEOUT */
#define CS_DUMP_HANG_FIELDS(X) \
  X(comm, "comm", ID, ALWAYS, REQ, ZERO) \
  X(comm_size, "comm_size", I32, ALWAYS, OPT, ZERO) \
  X(comm_rank, "comm_rank", I32, ALWAYS, REQ, MINUS1) \
  X(rank, "rank", I32, ALWAYS, OPT, HDR_RANK) \
  X(seq, "seq", I64, ALWAYS, REQ, ZERO) \
  X(op_name, "op", NAME, ALWAYS, OPT, QMARK) \
  X(enqueue_ns, "enqueue_ns", I64, ALWAYS, OPT, ZERO) \
  X(age_ms, "age_ms", I64, ALWAYS, HAND, ZERO) \
  X(started, "started", BOOL, ALWAYS, OPT, NO) \
  X(start_known, "start_known", BOOL, ALWAYS, OPT, NO) \
  X(t_ns, "t_ns", I64, ALWAYS, OPT, ZERO)

/* the NCCL_NET wrapper: one connection's figures over [t0_ns, t_ns] (struct cs_link_record) */
#define CS_DUMP_LINK_FIELDS(X) \
  X(dir, "dir", NAME, ALWAYS, HAND, NONE) \
  X(rank, "rank", I32, ALWAYS, OPT, HDR_RANK) \
  X(peer, "peer", I32, ALWAYS, OPT, MINUS1) \
  X(conn, "conn", ID, ALWAYS, OPT, ZERO) \
  X(dev, "dev", I32, ALWAYS, OPT, MINUS1) \
  X(bytes, "bytes", U64, ALWAYS, REQ, ZERO) \
  X(msgs, "msgs", U64, ALWAYS, OPT, ZERO) \
  X(busy_us, "busy_us", US, ALWAYS, OPT, ZERO) \
  X(gbps_p50, "gbps_p50", F64, ALWAYS, OPT, ZERO) \
  X(gbps_p10, "gbps_p10", F64, ALWAYS, OPT, ZERO) \
  X(gbps_mean, "gbps_mean", F64, ALWAYS, OPT, ZERO) \
  X(max_inflight, "max_inflight", U64, ALWAYS, OPT, ZERO) \
  X(t0_ns, "t0_ns", I64, ALWAYS, OPT, ZERO) \
  X(t_ns, "t_ns", I64, ALWAYS, OPT, ZERO) \
  X(closed, "closed", BOOL, ALWAYS, OPT, NO)

/* records lost before the writer (a full queue) */
#define CS_DUMP_DROPS_FIELDS(X) \
  X(count, "count", U64, ALWAYS, REQ, ZERO) \
  X(t_ns, "t_ns", I64, ALWAYS, SKIP, ZERO)

/* the last line of a process's file */
#define CS_DUMP_FOOTER_FIELDS(X) \
  X(ops, "ops", U64, ALWAYS, OPT, ZERO) \
  X(xfers, "xfers", U64, ALWAYS, OPT, ZERO) \
  X(drops, "drops", U64, ALWAYS, OPT, ZERO) \
  X(write_drops, "write_drops", U64, ALWAYS, SKIP, ZERO) \
  X(ops_recorded, "ops_recorded", U64, ALWAYS, SKIP, ZERO) \
  X(timing_lost, "timing_lost", U64, ALWAYS, OPT, ZERO) \
  /* the NCCL profiler plugin's standing (shim/wiring.c), with COLLSCOPE_TIMING=auto|profiler */ \
  X(profiler, "profiler", STR, SOURCE, OPT, NONE) \
  X(prof_probes, "prof_probes", U64, SOURCE, OPT, ZERO) \
  X(prof_agreed, "prof_agreed", U64, SOURCE, OPT, ZERO) \
  X(prof_trusted, "prof_trusted", STR, SOURCE, OPT, EMPTY) \
  X(prof_rejected, "prof_rejected", STR, SOURCE, OPT, EMPTY) \
  /* the SDC checks' standing (hooks/sdc_check.c) */ \
  X(sdc, "sdc", STR, SOURCE, OPT, NONE) \
  X(sdc_launches, "sdc_launches", U64, SOURCE, OPT, ZERO) \
  X(sdc_no_slot, "sdc_no_slot", U64, SOURCE, OPT, ZERO) \
  X(sdc_captured, "sdc_captured", U64, SOURCE, SKIP, ZERO) \
  /* COLLSCOPE_BUDGET (stats/dump_writer.c): the bound, and the op and xfer records past it */ \
  X(budget, "budget", U64, IFSET, OPT, ZERO) \
  X(budget_drops, "budget_drops", U64, IFSET, OPT, ZERO) \
  /* COLLSCOPE_RECORD=summary (docs/always-on.md): flight-recorder windows the rate limit refused \
   * (stats/flight.c), ops with no compute-gap figures (their (communicator, rank) past the gaps \
   * table, stats/summary_gaps.c) and collectives the local trigger could not key (its table \
   * full, stats/flight_local.c) */ \
  X(windows_suppressed, "windows_suppressed", U64, IFSET, OPT, ZERO) \
  X(gaps_lost, "gaps_lost", U64, IFSET, OPT, ZERO) \
  X(local_unkeyed, "local_unkeyed", U64, IFSET, OPT, ZERO) \
  X(t_ns, "t_ns", I64, ALWAYS, OPT, ZERO)

/* COLLSCOPE_RECORD=summary (docs/always-on.md): the ops of one interval [t0_ns, t1_ns) of one
 * (communicator, op, dtype, size bucket) in one line (stats/summary.c). bucket: floor(log2(bytes)),
 * -1 for 0 bytes (the report's size buckets); sizes: "bytes:n,..." of the distinct sizes while
 * there are at most 8 (else empty); dur_*: the timed ops' GPU durations (sum exact); hist: the
 * non-empty buckets of those durations as "index:n,..." in the layout of
 * include/collscope/histogram.h (0.5 % relative error) */
#define CS_DUMP_SUMMARY_FIELDS(X) \
  X(comm, "comm", ID, ALWAYS, REQ, ZERO) \
  X(comm_size, "comm_size", I32, ALWAYS, REQ, ZERO) \
  X(comm_rank, "comm_rank", I32, ALWAYS, OPT, MINUS1) \
  X(rank, "rank", I32, ALWAYS, OPT, HDR_RANK) \
  X(op_name, "op", NAME, ALWAYS, REQ, QMARK) \
  X(dtype, "dtype", NAME, ALWAYS, OPT, EMPTY) \
  X(bucket, "bucket", I32, ALWAYS, OPT, MINUS1) \
  X(t0_ns, "t0_ns", I64, ALWAYS, OPT, ZERO) \
  X(t1_ns, "t1_ns", I64, ALWAYS, OPT, ZERO) \
  X(count, "count", U64, ALWAYS, REQ, ZERO) \
  X(timed, "timed", U64, ALWAYS, OPT, ZERO) \
  X(errors, "errors", U64, ALWAYS, OPT, ZERO) \
  X(grouped, "grouped", U64, ALWAYS, OPT, ZERO) \
  X(bytes, "bytes", U64, ALWAYS, OPT, ZERO) \
  X(bytes_min, "bytes_min", U64, ALWAYS, OPT, ZERO) \
  X(bytes_max, "bytes_max", U64, ALWAYS, OPT, ZERO) \
  X(sizes, "sizes", STR, ALWAYS, OPT, EMPTY) \
  X(dur_sum_us, "dur_sum_us", US, ALWAYS, OPT, ZERO) \
  X(dur_min_us, "dur_min_us", US, ALWAYS, OPT, ZERO) \
  X(dur_max_us, "dur_max_us", US, ALWAYS, OPT, ZERO) \
  X(hist, "hist", STR, ALWAYS, OPT, EMPTY)

/* COLLSCOPE_RECORD=summary: a flight-recorder window (stats/flight.c) follows: the ring_ops op
 * and memcpy lines the ring held up to the trigger, then at most after_ops more as they
 * finish. reason: failed (an op's status), hang, finding (the online exchange's straggler or
 * SDC verdict), signal (a termination signal or abort), request (the trigger file), idle (no
 * record for COLLSCOPE_HANG_TIMEOUT), snapshot (`collscope snapshot`); seq and
 * comm: the trigger's op (-1 / null when none) */
#define CS_DUMP_WINDOW_FIELDS(X) \
  X(reason, "reason", NAME, ALWAYS, REQ, QMARK) \
  X(rank, "rank", I32, ALWAYS, OPT, HDR_RANK) \
  X(comm, "comm", ID0, ALWAYS, OPT, ZERO) \
  X(seq, "seq", I64, ALWAYS, OPT, MINUS1) \
  X(before, "ring_ops", U64, ALWAYS, OPT, ZERO) \
  X(after, "after_ops", U64, ALWAYS, OPT, ZERO) \
  X(t_ns, "t_ns", I64, ALWAYS, OPT, ZERO)

/* COLLSCOPE_RECORD=summary: one (communicator, rank)'s compute gaps as the report's balance
 * section gathers them from op lines (tools/report/report_balance.h), over every op of the
 * communicator with a seq the process ran so far (stats/summary_gaps.c): ops, those without a
 * compute gap (untimed), whether every op is an AllReduce or ReduceScatter (reduce), a Send or
 * Recv (send_recv), the first op's (op, bytes), ops_hash: a hash of the whole sequence of (op,
 * bytes) (members with equal hashes ran the same op and size in every instance); periodic:
 * bit q-1 set when the sequence of (op, bytes, peer or root) repeats with period q; gap_sum_us:
 * the running compute after the last op; head_*: after each of the first 64 ops, ring_*: after
 * each of the last 64, oldest first, as "v,v,..." (gaps in ns, ends: the op's end_ns, -1 when
 * untimed); ring_seq: the seq of each of the last 64 ops, oldest first (the instances they
 * belong to: members align on them whatever records one lost), ring_nogap: bit i set when the
 * i-th of them has no compute gap (counted in untimed). Send/Recv members (send_recv
 * true) also give what the pipeline schedule gathers (include/collscope/schedule.h
 * cs_sched_summed): sends, recvs, whether the first op was a
 * Send, the distinct peers (up to two, "p,p"; peer_over: a third), per peer the Sends before
 * the first Recv from it (sent_before) and whether one came (got, 0 or 1); long_gap: the
 * running compute after each of the last 512 ops, the first value in ns, the rest the ns
 * added since the one before. The last line of a (communicator, rank) in a file holds its
 * figures. */
#define CS_DUMP_GAPS_FIELDS(X) \
  X(comm, "comm", ID, ALWAYS, REQ, ZERO) \
  X(comm_size, "comm_size", I32, ALWAYS, OPT, ZERO) \
  X(comm_rank, "comm_rank", I32, ALWAYS, REQ, MINUS1) \
  X(rank, "rank", I32, ALWAYS, OPT, HDR_RANK) \
  X(op_name, "op", NAME, ALWAYS, OPT, QMARK) \
  X(bytes, "bytes", U64, ALWAYS, OPT, ZERO) \
  X(ops, "ops", U64, ALWAYS, REQ, ZERO) \
  X(untimed, "untimed", U64, ALWAYS, OPT, ZERO) \
  X(reduce, "reduce", BOOL, ALWAYS, OPT, NO) \
  X(p2p, "send_recv", BOOL, ALWAYS, OPT, NO) \
  X(ops_hash, "ops_hash", HEX, ALWAYS, OPT, ZERO) \
  X(periodic, "periodic", HEX, ALWAYS, OPT, ZERO) \
  X(gap_us, "gap_sum_us", US, ALWAYS, OPT, ZERO) \
  X(head_gap, "head_gap", STR, ALWAYS, OPT, EMPTY) \
  X(head_end, "head_end", STR, ALWAYS, OPT, EMPTY) \
  X(ring_gap, "ring_gap", STR, ALWAYS, OPT, EMPTY) \
  X(ring_end, "ring_end", STR, ALWAYS, OPT, EMPTY) \
  X(ring_seq, "ring_seq", STR, ALWAYS, OPT, EMPTY) \
  X(ring_nogap, "ring_nogap", HEX, ALWAYS, OPT, ZERO) \
  X(sends, "sends", U64, ALWAYS, OPT, ZERO) \
  X(recvs, "recvs", U64, ALWAYS, OPT, ZERO) \
  X(first_send, "first_send", BOOL, ALWAYS, OPT, NO) \
  X(peer_over, "peer_over", BOOL, ALWAYS, OPT, NO) \
  X(peers, "peers", STR, ALWAYS, OPT, EMPTY) \
  X(sent_before, "sent_before", STR, ALWAYS, OPT, EMPTY) \
  X(got, "got", STR, ALWAYS, OPT, EMPTY) \
  X(long_gap, "long_gap", STR, ALWAYS, OPT, EMPTY) \
  X(t_ns, "t_ns", I64, ALWAYS, OPT, ZERO)

/* Each list's keys by member, for readers that name a field (tools/trace/trace_perfetto.c,
 * bench/bench_parse.c): cs_dump_<list>_keys.<member> is the row's key. */
#define CS_DUMP_KEY_MEMBER(m, key, jt, wr, rd, def) const char *m;
#define CS_DUMP_KEY_INIT(m, key, jt, wr, rd, def) .m = key,
#define CS_DUMP_KEYS(name, LIST) \
  static const struct { \
    LIST(CS_DUMP_KEY_MEMBER) \
  } name __attribute__((unused)) = {LIST(CS_DUMP_KEY_INIT)};
CS_DUMP_KEYS(cs_dump_header_keys, CS_DUMP_HEADER_FIELDS)
CS_DUMP_KEYS(cs_dump_clock_keys, CS_DUMP_CLOCK_FIELDS)
CS_DUMP_KEYS(cs_dump_op_keys, CS_DUMP_OP_FIELDS)
CS_DUMP_KEYS(cs_dump_sdc_keys, CS_DUMP_SDC_FIELDS)
CS_DUMP_KEYS(cs_dump_xfer_keys, CS_DUMP_XFER_FIELDS)
CS_DUMP_KEYS(cs_dump_comm_keys, CS_DUMP_COMM_FIELDS)
CS_DUMP_KEYS(cs_dump_hang_keys, CS_DUMP_HANG_FIELDS)
CS_DUMP_KEYS(cs_dump_link_keys, CS_DUMP_LINK_FIELDS)
CS_DUMP_KEYS(cs_dump_drops_keys, CS_DUMP_DROPS_FIELDS)
CS_DUMP_KEYS(cs_dump_footer_keys, CS_DUMP_FOOTER_FIELDS)
CS_DUMP_KEYS(cs_dump_summary_keys, CS_DUMP_SUMMARY_FIELDS)
CS_DUMP_KEYS(cs_dump_window_keys, CS_DUMP_WINDOW_FIELDS)
CS_DUMP_KEYS(cs_dump_gaps_keys, CS_DUMP_GAPS_FIELDS)

#endif
