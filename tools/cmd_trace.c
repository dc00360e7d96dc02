/* tools/cmd_trace.c: `collscope trace DIR [-o FILE]` writes a Chrome trace-event JSON file
 * ({"traceEvents":[...],"displayTimeUnit":"ns"}) that Perfetto and chrome://tracing open, or
 * with --format perfetto the same tracks and events as a Perfetto protobuf trace
 * (trace_perfetto.c).
 *
 * Layout:
 *  - one process per dump file: pid = the global rank when every file has a distinct known
 *    rank, else the file's index in rank order; named "rank R (host)" (process_name),
 *    ordered by rank (process_sort_index);
 *  - one thread per CUDA stream seen in the file: tid 1.. in ascending stream handle order,
 *    named "stream 0x..." (thread_name, thread_sort_index); tid 0 "host" carries the
 *    communicator lifecycle records (comm init/split/destroy...) as instant events;
 *  - op records with timing "gpu_event": complete events ("ph":"X") with
 *    ts = start_ns / 1000 and dur = dur_us (microseconds), cat "coll" / "p2p",
 *    name = the op, args = every field of the record (plus "src": "file:line");
 *    other timings (captured, host, error, unknown): instant events ("ph":"i", "s":"t") at
 *    enqueue_ns named "OP (timing)";
 *  - xfer records likewise on their stream's track, name "Memcpy KIND", cat "xfer";
 *  - flow arrows, cat "coll": for each collective instance (comm, seq) the timed members,
 *    in comm_rank order, are chained member k -> member k+1 by one "s"/"f" pair each
 *    (own id, "bp":"e"), placed at the middle of each slice so they bind to it.
 * Timestamps are written as exact decimals (ns / 1000 with three decimals), not through a
 * double, so realtime nanoseconds survive in the file.
 * The dumps are read twice and never held (tools/trace/trace.h): once to size the selection, once to
 * write it; events come in reading order (files interleaved), which trace viewers accept.
 * Exit status: 0 written, 1 unusable input or write error, 2 usage. */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump/readpool.h"
#include "trace/trace.h"

void cmd_trace_help(FILE *o) {
  fputs("usage: collscope trace DIR [-o FILE] [--job ID] [--ranks LIST] [--comm ID] [--from T] [--to T]\n"
        "                       [--max-size N] [--format json|perfetto] [-j N]\n"
        "  DIR            directory of collscope dump files (*.jsonl), or one dump file\n"
        "  --job ID       only the dumps of job ID (needed when DIR holds several jobs)\n"
        "  -o FILE        write the trace to FILE (default: standard output)\n"
        "  --format F     json: Chrome/Perfetto trace-event JSON (default); perfetto: Perfetto's\n"
        "                 protobuf trace, ~2.5x smaller\n"
        "  --ranks LIST   only these global ranks: 0,3,8-15\n"
        "  --comm ID      only this communicator's ops and events (16 hex digits, as the report shows)\n"
        "  --from/--to T  seconds from the job's first record (12.5), or seq:N for a range of\n"
        "                 collective instances (seq numbers)\n"
        "  --max-size N   refuse a selection whose trace would exceed N bytes (K, M, G suffixes;\n"
        "                 default 1G, 0: no cap); with no selection, the first part of the job that\n"
        "                 fits is written instead, and the command says which\n"
        "Open FILE in https://ui.perfetto.dev or chrome://tracing.\n",
        o);
}

static bool parse_size(const char *s, uint64_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || !(v >= 0)) return false;
  double m = *end == 'K' || *end == 'k' ? 1024.0 : *end == 'M' || *end == 'm' ? 1048576.0
                                               : *end == 'G' || *end == 'g'   ? 1073741824.0
                                                                              : 1.0;
  if (m > 1) end++;
  if (*end || v * m > 1.8e19) return false;
  *out = (uint64_t)(v * m);
  return true;
}

/* "12.5" (seconds from start) or "seq:N"; false when malformed */
static bool parse_point(const char *s, int64_t start, bool *is_seq, int64_t *v) {
  char *end;
  if (strncmp(s, "seq:", 4) == 0) {
    long long q = strtoll(s + 4, &end, 10);
    if (end == s + 4 || *end || q < 0) return false;
    *is_seq = true;
    *v = q;
    return true;
  }
  double sec = strtod(s, &end);
  if (end == s || *end || !isfinite(sec) || fabs(sec) > 9e9) return false;
  *is_seq = false;
  *v = start + (int64_t)llround(sec * 1e9);
  return true;
}

int cmd_trace(int argc, char **argv) {
  struct cli_dump_args args;
  int st = cli_dump_args_parse("trace", argc, argv, CLI_DUMP_ARGS_SELECT, cmd_trace_help, &args);
  if (st >= 0) return st;
  const char *dir = args.dir, *outpath = args.outpath;

  struct trace_run R;
  memset(&R, 0, sizeof R);
  R.jobs = args.jobs ? args.jobs : cs_pool_default_jobs();
  R.emit = &trace_emit_json;
  if (args.format && strcmp(args.format, "perfetto") == 0) {
    R.emit = trace_emit_perfetto();
    if (!R.emit) {
      fputs("collscope trace: --format perfetto is not built in (protobuf-c was not found when collscope was "
            "built: install libprotobuf-c-dev and protobuf-c-compiler, then rebuild)\n",
            stderr);
      return 1;
    }
  }
  uint64_t cap = (uint64_t)1 << 30;
  const char *bad = NULL;
  if (args.max_size && !parse_size(args.max_size, &cap)) bad = "--max-size";
  if (args.format && strcmp(args.format, "json") != 0 && strcmp(args.format, "perfetto") != 0) bad = "--format";
  if (args.ranks && !trace_rank_list_ok(args.ranks)) bad = "--ranks";
  R.sel.ranks = args.ranks;
  if (args.comm) {
    char *e;
    R.sel.comm = strtoull(args.comm, &e, 16);
    R.sel.has_comm = true;
    if (!*args.comm || *e) bad = "--comm";
  }
  /* the points' syntax now; seconds become times once the job's start is known */
  const char *pts[2] = {args.from, args.to};
  bool seq_pt[2] = {false, false};
  int64_t v[2] = {INT64_MIN, INT64_MAX};
  for (int k = 0; k < 2; k++)
    if (pts[k] && !parse_point(pts[k], 0, &seq_pt[k], &v[k])) bad = k ? "--to" : "--from";
  if (!bad && args.from && args.to && seq_pt[0] != seq_pt[1]) bad = "--from/--to (both seconds or both seq:N)";
  if (bad) {
    fprintf(stderr, "collscope trace: bad %s value\n", bad);
    cmd_trace_help(stderr);
    return CLI_EXIT_USAGE;
  }
  if (seq_pt[0] || seq_pt[1]) {
    R.sel.has_seq = true;
    R.sel.seq_lo = seq_pt[0] ? v[0] : 0;
    R.sel.seq_hi = seq_pt[1] ? v[1] : INT64_MAX;
  }

  /* pass 1: tracks, the job's span, the selection's size */
  if (!trace_scan(&R, dir, args.job)) {
    trace_run_free(&R);
    return 1;
  }
  if (!R.sel.has_seq && (args.from || args.to)) {
    R.sel.has_time = true;
    R.sel.from_ns = INT64_MIN;
    R.sel.to_ns = INT64_MAX;
    if (args.from) parse_point(args.from, R.start, &seq_pt[0], &R.sel.from_ns);
    if (args.to) parse_point(args.to, R.start, &seq_pt[1], &R.sel.to_ns);
  }
  uint64_t nsel = trace_count(&R);
  double per = R.emit->bytes_per_record, est = (double)nsel * per;
  if (cap && est > (double)cap) {
    bool chosen = args.ranks || args.comm || args.from || args.to;
    if (chosen) {
      fprintf(stderr,
              "collscope trace: the selection holds %" PRIu64 " records, a trace of about %.0f MB, over the %.0f MB "
              "cap; narrow it (--ranks, --comm, --from/--to) or raise --max-size (0: no cap)\n",
              nsel, est / 1048576.0, (double)cap / 1048576.0);
      trace_run_free(&R);
      return 1;
    }
    /* a large job and no selection: the longest start of the job that fits */
    R.sel.has_time = true;
    R.sel.from_ns = R.start;
    int64_t lo = th_fit(&R.h, R.start, (uint64_t)((double)cap / per));
    if (lo > R.end) lo = R.end;
    if (lo < R.start) lo = R.start;
    R.sel.to_ns = lo;
    uint64_t nwin = trace_count(&R);
    fprintf(stderr,
            "collscope trace: %" PRIu64 " records would make a trace of about %.0f MB, over the %.0f MB cap; writing "
            "the first %.3f s of the job (--from 0 --to %.3f: %" PRIu64 " records); pick another part with --ranks, "
            "--comm, --from/--to, or raise --max-size\n",
            nsel, est / 1048576.0, (double)cap / 1048576.0, (double)(lo - R.start) / 1e9, (double)(lo - R.start) / 1e9,
            nwin);
  }

  /* Write to a new temporary beside FILE and rename, so a failed run never leaves a half
   * trace behind and a planted FILE.tmp link is never followed. */
  char *tmp = NULL;
  FILE *o = cli_out_open("trace", outpath, &tmp);
  if (!o) {
    trace_run_free(&R);
    return 1;
  }
  R.out.o = o;
  bool ok = trace_write(&R, dir, args.job);
  bool to_file = tmp != NULL;
  int rc = cli_out_close("trace", o, tmp, outpath, ok ? 0 : 1);
  if (!rc && to_file) {
    uint64_t nev = 0;
    for (unsigned k = 0; k < R.nw; k++) nev += R.w[k].events;
    size_t np = 0;
    for (size_t i = 0; i < R.nf; i++) np += R.f[i].in_set && R.f[i].ok;
    if (R.emit->instance)
      fprintf(stderr, "collscope trace: wrote %s (%zu processes, %" PRIu64 " events, %" PRIu64 " flows)\n", outpath,
              np, nev, R.flows);
    else
      fprintf(stderr, "collscope trace: wrote %s (%s, %zu processes, %" PRIu64 " events)\n", outpath, R.emit->name, np,
              nev);
  }
  tout_free(&R.out);
  trace_run_free(&R);
  return rc;
}
