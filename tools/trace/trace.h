/* tools/trace/trace.h: `collscope trace`'s two streamed passes over the dumps (docs/trace.md).
 *
 * Pass 1 (trace_scan) reads every file once without keeping its op records: per file the
 * CUDA streams seen (its tracks), the job's first and last record times, and a histogram of the
 * selected records' times, from which the command sizes the selection (and picks the window
 * of a large job) before anything is written. A salvage file that sits next to its process's
 * own dump is small (a ring's worth): its op records are kept, to be written with the dump's
 * track and without the records the dump holds too.
 * Pass 2 (trace_write) reads the files again and writes each selected record as it streams
 * (trace events need no order), from every reading thread, in the chosen format (struct
 * trace_emit: trace_json.c, trace_perfetto.c); the JSON's flow arrows of each collective
 * instance come from the per-communicator merge of tools/dump/instwalk.h.
 * Memory: per file its tracks, per reading thread a buffer of output, and the instances the
 * merge holds; not the records. */
#ifndef COLLSCOPE_TOOLS_TRACE_H
#define COLLSCOPE_TOOLS_TRACE_H
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dump/dumpfile.h"
#include "dump/instwalk.h"
#include "trace_hist.h"
#include "trace_out.h"

/* tracks of one process beyond this many streams share one "other streams" track */
#define TRACE_MAX_STREAMS 4096

struct trace_sel {
  const char *ranks; /* --ranks LIST (checked), NULL: all */
  bool has_comm;
  uint64_t comm;
  bool has_time, has_seq;
  int64_t from_ns, to_ns; /* absolute, inclusive */
  int64_t seq_lo, seq_hi;
};

struct salv_key {
  uint64_t kind, a, b, c;
  size_t idx;
};

struct tfile {        /* one dump file, by its read index (name order) */
  bool init;          /* pass 1 saw a record of it */
  bool ok;            /* its rank is selected */
  bool in_set;        /* in the set read (not another job's, not merged away) */
  bool skip;          /* pass 2 writes none of its records as they stream */
  bool checked, done; /* pass 2: the name compared with pass 1's; the file read */
  bool salvage;
  int pid;          /* the trace's process id */
  size_t sort;      /* place in the set (rank order) */
  char *name;       /* basename, as pass 1 read it */
  const char *host; /* interned in pass 1's set */
  long long hpid;
  uint64_t *streams;
  size_t nstreams, capstreams;
  bool streams_full; /* more streams than TRACE_MAX_STREAMS */
  struct cs_op_rec *sops;
  size_t nsops, capsops; /* a salvage file's op records */
  struct salv_key *keys;
  bool *dup; /* sorted keys of sops; seen in the dump */
  size_t *partners;
  size_t npartners; /* a dump's salvage files (read indices) */
  struct cs_walk_rec *flows;
  size_t nflows, capflows; /* pass 2: this round's flow ends */
};

struct tworker {
  struct thist h;  /* selected records' times (t > 0) */
  uint64_t nonpos; /* selected records without a time */
  int64_t lo, hi;  /* every record's times */
  bool any;
  uint64_t ops, events;
};

struct trace_run;

/* One output format: how the pass's events are written. op is called from the reading threads
 * (worker: the thread's buffer in R->out); the others from one thread at a time, on buffer 0. */
struct trace_emit {
  const char *name;
  unsigned bytes_per_record;          /* about this many bytes of output per record, all included (size cap) */
  void (*begin)(struct trace_run *R); /* the file's head and its tracks (processes, streams) */
  void (*op)(struct trace_run *R, unsigned worker, const char *fname, const struct cs_op_rec *o, int pid, int tid);
  void (*xfer)(struct trace_run *R, const char *fname, const struct cs_xfer_rec *x, int pid, int tid);
  void (*comm)(struct trace_run *R, const struct cs_comm_rec *c, int pid);
  /* the flow arrows of one collective instance (the per-communicator merge, instwalk.h);
   * NULL: the format links an instance's members itself, no merge is run */
  void (*instance)(void *R, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n);
  void (*end)(struct trace_run *R); /* the file's tail; frees the format's state */
};
extern const struct trace_emit trace_emit_json;
/* Perfetto's protobuf trace (trace_perfetto.c); NULL when built without protobuf-c */
const struct trace_emit *trace_emit_perfetto(void);

/* a record drawn as a slice (its GPU time) rather than an instant */
static inline bool trace_op_slice(const struct cs_op_rec *o) {
  return o->timing == CSD_TIMING_GPU_EVENT && o->start_ns > 0;
}
static inline bool trace_xfer_slice(const struct cs_xfer_rec *x) {
  return x->timing == CSD_TIMING_GPU_EVENT && x->start_ns > 0;
}
/* a slice's duration: the record's dur_us, else end - start, else 0 */
static inline double trace_slice_dur_us(int64_t start_ns, int64_t end_ns, double dur_us) {
  if (dur_us > 0 && isfinite(dur_us)) return dur_us;
  return end_ns > start_ns ? (double)(end_ns - start_ns) / 1e3 : 0.0;
}

struct trace_run {
  const struct trace_emit *emit; /* the output format */
  void *fmt;                     /* its state during pass 2 */
  struct trace_sel sel;
  unsigned jobs;
  struct tfile *f;
  size_t nf;
  struct tworker *w;
  unsigned nw;
  struct cs_dumpset *set; /* pass 1's set: headers, xfer and comm records, interned strings */
  struct thist h;         /* merged */
  uint64_t nonpos;
  int64_t start, end; /* the job's first and last record times */
  size_t ok_files;
  /* pass 2 */
  struct trace_out out;
  struct cs_walk *walk;
  uint64_t flows;
  bool changed, oom; /* the files changed between the passes; the merge ran out of memory */
};

/* names of tracks and events (trace_write.c), the same in every format; at most n - 1 bytes */
void trace_process_name(const struct cs_dumpfile *f, char *buf, size_t n);    /* "rank R (host)" */
void trace_stream_name(const struct tfile *F, size_t k, char *buf, size_t n); /* track k + 1 */
/* the op's name for a slice, "OP (timing)" for an instant (in buf) */
const char *trace_op_event_name(const struct cs_op_rec *o, char *buf, size_t n);
void trace_xfer_event_name(const struct cs_xfer_rec *x, char *buf, size_t n); /* "Memcpy KIND[ (timing)]" */
void trace_comm_event_name(const struct cs_comm_rec *c, char *buf, size_t n); /* "comm EVENT" */

bool trace_rank_list_ok(const char *s);
bool trace_rank_in(const char *s, int rank);

/* Pass 1: false when the set is unusable (errors printed). */
bool trace_scan(struct trace_run *R, const char *path, const char *job);
/* the selected records in [sel.from_ns, sel.to_ns] (all with no time selection), an upper bound */
uint64_t trace_count(const struct trace_run *R);
/* Pass 2 into R->out, which the caller opened; false when the set changed or failed. */
bool trace_write(struct trace_run *R, const char *path, const char *job);
void trace_run_free(struct trace_run *R);

#endif
