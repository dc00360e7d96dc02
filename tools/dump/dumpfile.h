/* tools/dump/dumpfile.h: in-memory model of a directory of collscope dump files
 * (DESIGN.md "Dump files") and the loader shared by `collscope report` and `collscope trace`.
 *
 * Loading is robust by contract:
 *  - a truncated LAST line (no trailing newline and not valid JSON: the writer crashed
 *    mid-line) is skipped and counted in cs_dumpfile.truncated_lines, it is not an error;
 *  - a zstd file (*.jsonl.zst, told by its first bytes) is read frame by frame: a last frame
 *    cut short is skipped and counted (torn_frames, torn_bytes), a frame that does not decode
 *    is skipped with a message (bad_frames, bad_bytes) and reading goes on after it;
 *  - any other line that is not valid JSON, not an object, lacks a required field or has a
 *    field of the wrong type is skipped, counted in malformed_lines, and described in
 *    cs_dumpset.errors as "PATH:LINE: WHAT"; every other line of the file is still read;
 *  - records with an unknown "type" are skipped and counted (unknown_types);
 *  - a header whose "schema" is newer than COLLSCOPE_SCHEMA_VERSION (or < 1) is a fatal
 *    error for the whole set (cs_dumpset.fatal): the reader would misread the file;
 *  - a missing/unusable header is an error, but the file's records are still loaded; host,
 *    rank and pid then come from the file name collscope-<host>-r<rank>-p<pid>.jsonl;
 *  - a line longer than CS_DUMP_LINE_MAX bytes is skipped unread (never buffered whole) and
 *    counted as malformed;
 *  - the footer's op and xfer counts are compared with the well-formed records read: the
 *    difference is cs_dumpfile.lost (records the writer wrote but the file does not hold);
 *  - one job per set: files of several job ids are refused (fatal, listing the jobs) unless a
 *    job is picked (cs_dumpset_load_job); files without a job id join the only job found;
 *  - a process's salvage file (collscope salvage, *.salvage.jsonl) next to its own dump (same
 *    host and pid) is merged into that dump: records already in the dump are counted once;
 *  - at most CS_DUMP_MAX_ERRORS messages are kept, the rest only counted.
 * Memory is bounded by the input's size (docs/dump-format.md): nothing is sized by a number
 * read from a file. Strings (host, op names, dtype, site, ...) are interned in the set and
 * live as long as it; text output passes them through cs_text_safe(). */
#ifndef COLLSCOPE_TOOLS_DUMPFILE_H
#define COLLSCOPE_TOOLS_DUMPFILE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CS_DUMP_LINE_MAX 65536 /* longest dump line read, in bytes (newline excluded) */
#define CS_DUMP_MAX_ERRORS 256 /* messages kept per set; the rest are counted */

/* The record's "timing" string. (Distinct from include/collscope/record.h's in-process
 * enum cs_timing, so both headers can be included together.) */
enum csd_timing {
  CSD_TIMING_GPU_EVENT, /* timed: "gpu_event" (CUDA events), "profiler" (NCCL kernel stamps) or
                         * "host_span" (synchronous copy); start/end/dur valid */
  CSD_TIMING_CAPTURED,  /* "captured": graph capture, only enqueue_ns valid */
  CSD_TIMING_HOST,      /* "host": no GPU timing, enqueue only */
  CSD_TIMING_ERROR,     /* "error": the call returned status != 0 */
  CSD_TIMING_UNKNOWN,   /* any other string (newer writer) */
  /* "sampled_out": a small collective outside the CUDA-event sample (COLLSCOPE_EVENT_SAMPLE),
   * only enqueue_ns valid */
  CSD_TIMING_SAMPLED_OUT,
};
const char *csd_timing_name(enum csd_timing t);

struct cs_header {
  bool valid; /* false: line 1 was no usable header (fields from the file name) */
  int schema;
  const char *collscope; /* writer version, "" if absent */
  const char *host;
  long long pid;
  int rank;                           /* global rank, -1 when unknown */
  int step;                           /* the Slurm job step, -1 when the header has none */
  int local_rank, world_size, device; /* -1 when absent */
  const char *job, *pci_bus_id, *exe; /* "" when absent */
  const char *slurm_node;             /* the header's SLURMD_NODENAME (collscope/slurm_node.h), "" when absent */
  long long nccl_version, cuda_driver_version;
  int64_t clock_realtime_ns, clock_monotonic_ns;
  bool salvaged; /* written by collscope salvage (a "salvaged_from" field) */
  /* the GPU's identity from NVML (hooks/health.c), "" when absent */
  const char *gpu_name, *gpu_uuid, *gpu_pci_bus_id;
  int gpu_arch; /* NVML architecture number, -1 when absent */
};

struct cs_op_rec {
  uint32_t file; /* index into cs_dumpset.files */
  uint32_t line; /* 1-based line number in that file */
  int op;        /* enum cs_op (schema.h), or -1 if the name is not in the table */
  const char *op_name;
  uint64_t comm;
  int comm_size, comm_rank, rank;
  int64_t seq;
  const char *dtype;
  int64_t count;
  uint64_t bytes;
  const char *redop; /* NULL when the record has null / no redop */
  int root, peer;    /* -1 when not applicable */
  uint64_t stream;
  int64_t group;
  int64_t enqueue_ns, start_ns, end_ns;
  double dur_us;
  enum csd_timing timing;
  const char *timing_name; /* the record's string, also for CSD_TIMING_UNKNOWN */
  bool captured;
  const char *site;
  int status;
  uint64_t graph, replay; /* a CUDA graph replay: the graph's id and the replay's number; 0 when eager */
  uint64_t group_ops;     /* ops of its group that share this op's GPU span (0: the span is its own) */
  /* "sdc" object (SDC checks, include/collscope/sdc.h): sdc_checked 0 when absent; bit 0:
   * sdc_fp and sdc_out_sum valid, bit 1: sdc_in_sum and sdc_in_abs valid; sums are NAN
   * when the record has null (non-finite) */
  unsigned sdc_checked;
  uint64_t sdc_fp;
  double sdc_in_sum, sdc_in_abs, sdc_out_sum;
  /* a COLLSCOPE_RECORD=summary file's op line: detail of a flight-recorder window, whose op is
   * also counted in a "summary" line (the ops table takes it from there) */
  bool in_window;
};

struct cs_xfer_rec {
  uint32_t file, line;
  const char *op_name; /* "Memcpy" */
  const char *api, *kind, *site;
  uint64_t bytes;
  uint64_t stream;
  bool async;
  int64_t enqueue_ns, start_ns, end_ns;
  double dur_us;
  enum csd_timing timing;
  const char *timing_name;
  int status;
};

struct cs_comm_rec {
  uint32_t file, line;
  const char *event; /* init|split|finalize|destroy|abort */
  uint64_t comm;
  int size, rank, device;
  bool has_parent;
  uint64_t parent;
  int64_t t_ns;
};

/* "hang" record: the shim saw an op not complete after COLLSCOPE_HANG_TIMEOUT seconds. */
struct cs_hang_rec {
  uint32_t file, line;
  uint64_t comm;
  int comm_size, comm_rank, rank;
  int64_t seq;
  const char *op_name;
  int64_t enqueue_ns, t_ns;
  double age_s;
  bool started;     /* the op's GPU start event had completed */
  bool start_known; /* the op had a start event to ask (absent in older dumps: unknown) */
};

/* "summary" record (COLLSCOPE_RECORD=summary, docs/always-on.md): one interval's ops of one
 * (comm, op, dtype, size bucket); sizes and hist as written ("v:n,..." / "index:n,...": parse
 * with cs_summary_pairs) */
struct cs_summary_rec {
  uint32_t file, line;
  uint64_t comm;
  int comm_size, comm_rank, rank, bucket;
  int op; /* enum cs_op, or -1 */
  const char *op_name, *dtype, *sizes, *hist;
  int64_t t0_ns, t1_ns;
  uint64_t count, timed, errors, grouped, bytes, bytes_min, bytes_max;
  double dur_sum_us, dur_min_us, dur_max_us;
};
/* "window" record: a flight-recorder window's header (reason: failed, hang, finding, signal,
 * request); the op lines that follow it are its detail */
struct cs_window_rec {
  uint32_t file, line;
  const char *reason;
  int rank;
  bool has_comm;
  uint64_t comm;
  int64_t seq, t_ns;
  uint64_t before, after;
};
/* "gaps" record (COLLSCOPE_RECORD=summary, stats/summary_gaps.c): one (comm, rank)'s compute
 * gaps as the balance section gathers them (include/collscope/dump_schema.h
 * CS_DUMP_GAPS_FIELDS); the lists as written ("v,v,...": parse with cs_gaps_list) */
struct cs_gaps_rec {
  uint32_t file, line;
  uint64_t comm, bytes, ops, untimed, ops_hash, periodic, ring_nogap;
  int comm_size, comm_rank, rank;
  const char *op_name, *head_gap, *head_end, *ring_gap, *ring_end, *ring_seq;
  uint64_t sends, recvs;
  const char *peers, *sent_before, *got, *long_gap; /* Send/Recv members */
  bool reduce, p2p, first_send, peer_over;
  double gap_us;
  long long t_ns;
};
/* A gaps record's list "v,v,..." into out (at most cap values): the count, or -1 when
 * malformed or longer than cap. */
int cs_gaps_list(const char *s, int64_t *out, size_t cap);
/* The pairs "a:b,a:b" of a summary's sizes or hist: calls fn for each well-formed pair;
 * false at the first malformed one (the pairs before it were handed over). */
bool cs_summary_pairs(const char *s, void (*fn)(void *ctx, uint64_t a, uint64_t b), void *ctx);

/* "link" record (NCCL_NET wrapper, shim/net_plugin.c): one network connection's figures over
 * [t0_ns, t_ns]. The send side knows the peer rank (from the listen handle); both sides carry
 * the connection token `conn` (0 when the handle had no room), which joins them across files. */
struct cs_link_rec {
  uint32_t file, line;
  bool send;      /* "dir": "send" | "recv" */
  int rank, peer; /* global ranks; peer -1 when unknown (recv side) */
  uint64_t conn;
  int dev;
  uint64_t bytes, msgs, max_inflight;
  double busy_us, gbps_p50, gbps_p10, gbps_mean;
  int64_t t0_ns, t_ns;
  bool closed;
};

/* "health" record (hooks/health.c, docs/health.md): one sample of the rank's GPU and, on local
 * rank 0, its host's IB ports. Values are -1 when the field is absent (turned off); counters
 * are deltas since the previous sample. */
#define CS_HEALTH_LINKS 18
#define CS_HEALTH_XIDS 8
enum { CS_IB_SYMBOL_ERROR,
       CS_IB_LINK_DOWNED,
       CS_IB_LINK_ERROR_RECOVERY,
       CS_IB_PORT_RCV_ERRORS,
       CS_IB_PORT_XMIT_DISCARDS,
       CS_IB_PORT_XMIT_WAIT,
       CS_IB_LOCAL_LINK_INTEGRITY_ERRORS,
       CS_IB_EXCESSIVE_BUFFER_OVERRUN_ERRORS,
       CS_IB_PORT_XMIT_DATA,
       CS_IB_PORT_RCV_DATA,
       CS_IB_OUT_OF_SEQUENCE,
       CS_IB_PACKET_SEQ_ERR,
       CS_IB_NP_CNP_SENT,
       CS_IB_RP_CNP_HANDLED,
       CS_IB_NCOUNTERS };
extern const char *const cs_ib_counter_names[CS_IB_NCOUNTERS];
struct cs_health_port {
  uint32_t rec;            /* index of its health record in cs_dumpfile.healths */
  const char *dev, *state; /* state "" when absent */
  int port;
  double rate_gbps;           /* -1 when absent */
  int64_t c[CS_IB_NCOUNTERS]; /* deltas, -1 when absent */
};
struct cs_health_rec {
  uint32_t file, line;
  int rank;
  int64_t t_ns;
  bool has_gpu;
  int64_t reasons, sm_mhz, mem_mhz, power_mw, temp_c;
  int64_t ecc_corrected, ecc_uncorrected, remap_pending, remap_failure, pcie_replay;
  int nvlinks, nvlink_down; /* -1 when absent */
  int nnvl;
  struct {
    int link;
    int64_t crc, replay, recovery;
  } nvl[CS_HEALTH_LINKS];
  int nxid;
  int64_t xid[CS_HEALTH_XIDS];
  uint32_t port0, nports; /* its IB ports: cs_dumpfile.hports[port0 .. port0 + nports) */
};

struct cs_dumpfile {
  char *path;        /* as opened (DIR/NAME) */
  size_t read_index; /* its place while reading (name order): the `file` of the op records
                           * that cs_dumpset_stream() hands out */
  const char *name;  /* basename, points into path */
  struct cs_header hdr;
  struct cs_op_rec *ops;
  size_t nops;
  struct cs_xfer_rec *xfers;
  size_t nxfers;
  struct cs_comm_rec *comms;
  size_t ncomms;
  struct cs_hang_rec *hangs;
  size_t nhangs;
  uint64_t drops_records; /* sum of "drops" record counts */
  bool has_footer;        /* false: the process did not exit cleanly (or is still running) */
  uint64_t footer_ops, footer_xfers, footer_drops;
  uint64_t footer_timing_lost;                            /* optional footer field: ops whose GPU timing was lost */
  const char *footer_profiler;                            /* optional: NCCL profiler plugin standing (trusted, rejected,
                                  * mixed, probation, not_loaded, forced), NULL when absent */
  const char *footer_prof_trusted, *footer_prof_rejected; /* op types, comma lists ("" when none) */
  uint64_t footer_prof_probes, footer_prof_agreed;
  const char *footer_sdc; /* optional: SDC standing (ready, unused, compiled_out, no_driver,
                                  * setup_failed, selftest_failed, selftest_timeout), NULL when absent */
  uint64_t footer_sdc_launches, footer_sdc_no_slot;
  /* a zstd file (*.jsonl.zst, tools/dump/dump_zstd.c): its last frame cut short (not read,
   * its bytes counted), frames that did not decode (skipped, reading goes on after them) */
  bool compressed;
  uint64_t torn_frames, torn_bytes, bad_frames, bad_bytes;
  uint64_t footer_budget;       /* optional: COLLSCOPE_BUDGET in bytes, 0 when none */
  uint64_t footer_budget_drops; /* optional: op and xfer records not written for the budget */
  /* optional, summary mode: windows the rate limit refused, ops without compute-gap figures,
   * collectives the local trigger could not key */
  uint64_t footer_windows_suppressed, footer_gaps_lost, footer_local_unkeyed;
  int64_t footer_t_ns;
  uint64_t lost;         /* footer ops + xfers minus the well-formed op and xfer records read
                           * (0 without a footer: see has_footer) */
  size_t merged_salvage; /* records taken from this process's salvage file (not in the dump) */
  size_t dup_salvage;    /* records of that salvage file already in the dump, counted once */
  size_t lines;          /* physical lines read, including skipped ones */
  size_t truncated_lines, malformed_lines, unknown_types;
  size_t op_cap, xfer_cap, comm_cap, hang_cap; /* internal */
  struct cs_link_rec *links;
  size_t nlinks, link_cap; /* NCCL_NET wrapper */
  struct cs_health_rec *healths;
  size_t nhealths, health_cap; /* health samples */
  struct cs_health_port *hports;
  size_t nhports, hport_cap;
  struct cs_summary_rec *summaries; /* COLLSCOPE_RECORD=summary */
  size_t nsummaries, summary_cap;
  struct cs_window_rec *windows;
  size_t nwindows, window_cap;
  struct cs_gaps_rec *gaps; /* COLLSCOPE_RECORD=summary: compute gaps per (comm, rank) */
  size_t ngaps, gaps_cap;
};

struct cs_strpool;

struct cs_dumpset {
  char *path; /* the directory (or single file) given to the loader */
  struct cs_dumpfile *files;
  size_t nfiles; /* sorted by rank (unknown last), host, pid, name */
  char **errors;
  size_t nerrors;         /* "PATH:LINE: what", in discovery order */
  size_t errors_omitted;  /* messages beyond CS_DUMP_MAX_ERRORS */
  const char *job;        /* the set's job id ("" when none is known) */
  bool whole;             /* cs_dumpset_stream: not streamed, load it whole */
  size_t other_job_files; /* files left out: another job, or no job id
                                                while a job was picked */
  bool fatal;             /* the set must not be reported: unreadable path, no dump files,
                             or a file with an unsupported schema version (see errors) */
  struct cs_strpool *pool;
  size_t errors_cap;     /* internal */
  uint64_t largest_file; /* internal: bytes of the largest file when it was found */
};

/* Load PATH: a directory (every regular *.jsonl and *.jsonl.zst file in it, not recursive) or
 * one dump file.
 * Never returns NULL (out of memory exits the process with a message); check ->fatal and
 * ->errors. */
struct cs_dumpset *cs_dumpset_load(const char *path);
/* The same, keeping only the files of job `job` (NULL: the path must hold a single job, else
 * the set is fatal with a message naming the jobs found). */
struct cs_dumpset *cs_dumpset_load_job(const char *path, const char *job);
/* The same with `jobs` reading threads (0: one per online CPU). */
struct cs_dumpset *cs_dumpset_load_jobs(const char *path, const char *job, unsigned jobs);
/* Streaming (DESIGN.md "Reading dumps"): the same reading, but op records are handed to
 * ops->op (from the reading threads, each file's records in file order, r->file = the file's
 * read_index) instead of kept, so memory does not grow with the records. A first round reads
 * every file's header and picks the job (as cs_dumpset_load_job; files of other jobs are not
 * read further); then files are read in rounds, a piece of every file per round (ops->budget
 * bytes over all files, default 64 MiB), by ops->jobs threads (0: one per core). ops->begin
 * runs once the files are listed; after each round ops->round runs on the calling thread with
 * done[read_index] = the file is read to its end (or left out). Returns the set as
 * cs_dumpset_load_job() does, with every file's ops empty -- except when a salvage file sits
 * next to its process's own dump: their records must be de-duplicated against each other,
 * which needs the dump whole, so nothing is streamed and the result has `whole` set: the
 * caller then uses cs_dumpset_load_job(). */
struct cs_stream_ops {
  void *ctx;
  unsigned jobs;
  size_t budget;
  void (*begin)(void *ctx, size_t nfiles); /* the files are listed, none read yet */
  void (*op)(void *ctx, unsigned worker, size_t file, const struct cs_dumpfile *f, const struct cs_op_rec *r);
  void (*round)(void *ctx, const bool *done, size_t nfiles);
  bool own_salvage; /* the caller de-duplicates a salvage file's ops against its dump: stream
                       * anyway (its other records are still merged into the dump at the end) */
};
struct cs_dumpset *cs_dumpset_stream(const char *path, const char *job, const struct cs_stream_ops *ops);
/* For the CLI commands: load (job as above), print every error on stderr, and return NULL
 * (set freed) when nothing usable was loaded (the command then exits 1). */
struct cs_dumpset *cs_dumpset_load_cli(const char *path, const char *job);
void cs_dumpset_free(struct cs_dumpset *set);
/* Print every error as "collscope: MSG" to f. */
void cs_dumpset_print_errors(const struct cs_dumpset *set, FILE *f);

/* Records lost by the writer for this file: max(footer drops, sum of drops records), since
 * the footer (when present) already totals the drops records. */
uint64_t cs_dumpfile_drops(const struct cs_dumpfile *f);

/* Display helpers. */
/* s for a text line: control characters (C0, DEL, C1) as \xHH, a backslash as \\; s itself
 * when nothing needs escaping, else buf (n bytes, cut short when needed). */
const char *cs_text_safe(const char *s, char *buf, size_t n);
const char *cs_comm_hex(uint64_t comm, char buf[17]); /* 16 lowercase hex digits */

/* A collective instance: the op records of all ranks sharing (comm, seq). P2P calls count
 * in seq too (DESIGN.md), so a Send/Recv "instance" joins whatever each rank issued as its
 * seq-th call on that communicator. Records with seq < 0 (the writer's "no sequence number",
 * e.g. a call that failed before it was numbered) belong to no instance. */
struct cs_instance {
  uint64_t comm;
  int64_t seq;
  int comm_size;       /* max comm_size of the members */
  const char *op_name; /* the first member's op */
  bool mixed_ops;      /* members disagree on the op name (a desynchronised job) */
  size_t n;            /* members, sorted by comm_rank then file */
  const struct cs_op_rec **ops;
};
struct cs_instances {
  struct cs_instance *v; /* sorted by comm, then seq */
  size_t n;
  const struct cs_op_rec **storage; /* internal */
};
/* Group every op record with seq >= 0 into instances (all timings, errors included; filter
 * on ops[i]->timing as needed). Returns 0 (out of memory exits). */
int cs_group_instances(const struct cs_dumpset *set, struct cs_instances *out);
void cs_instances_free(struct cs_instances *inst);

#endif
