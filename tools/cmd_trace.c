/* tools/cmd_trace.c: `collscope trace DIR [-o FILE]` writes a Chrome trace-event JSON file
 * ({"traceEvents":[...],"displayTimeUnit":"ns"}) that Perfetto and chrome://tracing open.
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
 * Exit status: 0 written, 1 unusable input or write error, 2 usage. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "collscope/schema.h"
#include "dumpfile.h"
#include "xalloc.h"

struct writer {
  FILE *o;
  bool first;
};

/* What to write (--ranks, --comm, --from/--to, and the size cap). */
struct selection {
  bool *file_ok;             /* per file of the set: its rank is selected */
  bool has_comm;
  uint64_t comm;
  bool has_time, has_seq;
  int64_t from_ns, to_ns;    /* absolute, inclusive */
  int64_t seq_lo, seq_hi;
};

struct file_tracks {
  int pid;
  uint64_t *streams;   /* sorted, distinct; tid = index + 1 */
  size_t nstreams;
};


/* Exact "ns / 1000" as a JSON number with 3 decimals. */
static const char *fmt_us(int64_t ns, char buf[32]) {
  uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  snprintf(buf, 32, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
  return buf;
}

/* Emit obj (consumed) as one event; ts_ns / dur_us are inserted first when given
 * (has_ts / dur_us >= 0) so they are written exactly. */
static void emit(struct writer *w, json_t *obj, bool has_ts, int64_t ts_ns, double dur_us) {
  char *s = json_dumps(obj, JSON_COMPACT);
  json_decref(obj);
  if (!s) {
    fputs("collscope: out of memory\n", stderr);
    exit(1);
  }
  fputs(w->first ? "\n" : ",\n", w->o);
  w->first = false;
  fputc('{', w->o);
  bool any = false;
  if (has_ts) {
    char b[32];
    fprintf(w->o, "\"ts\":%s", fmt_us(ts_ns, b));
    any = true;
  }
  if (dur_us >= 0) {
    fprintf(w->o, "%s\"dur\":%.3f", any ? "," : "", dur_us);
    any = true;
  }
  const char *rest = s + 1;   /* skip '{' */
  if (any && *rest != '}') fputc(',', w->o);
  fputs(rest, w->o);
  free(s);
}

static json_t *meta(const char *name, int pid, int tid, const char *key, json_t *val) {
  json_t *e = json_object();
  json_object_set_new(e, "name", json_string(name));
  json_object_set_new(e, "ph", json_string("M"));
  json_object_set_new(e, "pid", json_integer(pid));
  json_object_set_new(e, "tid", json_integer(tid));
  json_t *a = json_object();
  json_object_set_new(a, key, val);
  json_object_set_new(e, "args", a);
  return e;
}

static json_t *hexstr(uint64_t v, bool pad16) {
  char b[24];
  if (pad16) snprintf(b, sizeof b, "%016" PRIx64, v);
  else snprintf(b, sizeof b, "0x%" PRIx64, v);
  return json_string(b);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int tid_of(const struct file_tracks *t, uint64_t stream) {
  const uint64_t *p = bsearch(&stream, t->streams, t->nstreams, sizeof *p, cmp_u64);
  return p ? (int)(p - t->streams) + 1 : 0;
}

static double slice_dur_us(int64_t start_ns, int64_t end_ns, double dur_us) {
  if (dur_us > 0 && isfinite(dur_us)) return dur_us;
  return end_ns > start_ns ? (double)(end_ns - start_ns) / 1e3 : 0.0;
}

static bool op_is_slice(const struct cs_op_rec *o) {
  return o->timing == CSD_TIMING_GPU_EVENT && o->start_ns > 0;
}

static bool in_time(const struct selection *sel, int64_t ts) {
  return !sel->has_time || (ts >= sel->from_ns && ts <= sel->to_ns);
}
static bool op_selected(const struct selection *sel, const struct cs_op_rec *o) {
  if (sel->has_comm && o->comm != sel->comm) return false;
  if (sel->has_seq && (o->seq < sel->seq_lo || o->seq > sel->seq_hi)) return false;
  return in_time(sel, op_is_slice(o) ? o->start_ns : o->enqueue_ns);
}
static bool xfer_selected(const struct selection *sel, const struct cs_xfer_rec *x) {
  if (sel->has_comm || sel->has_seq) return false;   /* a copy belongs to no communicator */
  return in_time(sel, x->timing == CSD_TIMING_GPU_EVENT && x->start_ns > 0 ? x->start_ns : x->enqueue_ns);
}
static bool comm_selected(const struct selection *sel, const struct cs_comm_rec *c) {
  if (sel->has_comm && c->comm != sel->comm) return false;
  return in_time(sel, c->t_ns);
}

static json_t *op_args(const struct cs_dumpfile *f, const struct cs_op_rec *o) {
  json_t *a = json_object();
  char src[512];
  snprintf(src, sizeof src, "%s:%u", f->name, o->line);
  json_object_set_new(a, "comm", hexstr(o->comm, true));
  json_object_set_new(a, "comm_size", json_integer(o->comm_size));
  json_object_set_new(a, "comm_rank", json_integer(o->comm_rank));
  json_object_set_new(a, "rank", json_integer(o->rank));
  json_object_set_new(a, "seq", json_integer(o->seq));
  json_object_set_new(a, "op", json_string(o->op_name));
  json_object_set_new(a, "dtype", json_string(o->dtype));
  json_object_set_new(a, "count", json_integer(o->count));
  json_object_set_new(a, "bytes", json_integer((json_int_t)o->bytes));
  json_object_set_new(a, "redop", o->redop ? json_string(o->redop) : json_null());
  json_object_set_new(a, "root", json_integer(o->root));
  json_object_set_new(a, "peer", json_integer(o->peer));
  json_object_set_new(a, "stream", hexstr(o->stream, false));
  json_object_set_new(a, "group", json_integer(o->group));
  json_object_set_new(a, "enqueue_ns", json_integer(o->enqueue_ns));
  json_object_set_new(a, "start_ns", json_integer(o->start_ns));
  json_object_set_new(a, "end_ns", json_integer(o->end_ns));
  json_object_set_new(a, "dur_us", json_real(isfinite(o->dur_us) ? o->dur_us : 0.0));
  json_object_set_new(a, "timing", json_string(o->timing_name));
  json_object_set_new(a, "captured", json_boolean(o->captured));
  json_object_set_new(a, "site", json_string(o->site));
  json_object_set_new(a, "status", json_integer(o->status));
  json_object_set_new(a, "src", json_string(src));
  return a;
}

static json_t *xfer_args(const struct cs_dumpfile *f, const struct cs_xfer_rec *x) {
  json_t *a = json_object();
  char src[512];
  snprintf(src, sizeof src, "%s:%u", f->name, x->line);
  json_object_set_new(a, "op", json_string(x->op_name));
  json_object_set_new(a, "api", json_string(x->api));
  json_object_set_new(a, "kind", json_string(x->kind));
  json_object_set_new(a, "bytes", json_integer((json_int_t)x->bytes));
  json_object_set_new(a, "stream", hexstr(x->stream, false));
  json_object_set_new(a, "async", json_boolean(x->async));
  json_object_set_new(a, "enqueue_ns", json_integer(x->enqueue_ns));
  json_object_set_new(a, "start_ns", json_integer(x->start_ns));
  json_object_set_new(a, "end_ns", json_integer(x->end_ns));
  json_object_set_new(a, "dur_us", json_real(isfinite(x->dur_us) ? x->dur_us : 0.0));
  json_object_set_new(a, "timing", json_string(x->timing_name));
  json_object_set_new(a, "site", json_string(x->site));
  json_object_set_new(a, "status", json_integer(x->status));
  json_object_set_new(a, "src", json_string(src));
  return a;
}

static json_t *event(const char *name, const char *cat, const char *ph, int pid, int tid) {
  json_t *e = json_object();
  json_object_set_new(e, "name", json_string(name));
  json_object_set_new(e, "cat", json_string(cat));
  json_object_set_new(e, "ph", json_string(ph));
  json_object_set_new(e, "pid", json_integer(pid));
  json_object_set_new(e, "tid", json_integer(tid));
  return e;
}

static const char *op_cat(const struct cs_op_rec *o) {
  if (o->op >= 0 && cs_op_table[o->op].cls == CS_CLASS_P2P) return "p2p";
  return "coll";
}

static void build_tracks(const struct cs_dumpset *set, struct file_tracks *t) {
  bool ranks_usable = true;
  for (size_t i = 0; i < set->nfiles; i++) {
    int r = set->files[i].hdr.rank;
    if (r < 0 || (i > 0 && r == set->files[i - 1].hdr.rank)) ranks_usable = false;   /* sorted */
  }
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    t[i].pid = ranks_usable ? f->hdr.rank : (int)i;
    t[i].streams = xcalloc(f->nops + f->nxfers, sizeof *t[i].streams);
    size_t n = 0;
    for (size_t k = 0; k < f->nops; k++) t[i].streams[n++] = f->ops[k].stream;
    for (size_t k = 0; k < f->nxfers; k++) t[i].streams[n++] = f->xfers[k].stream;
    if (n) qsort(t[i].streams, n, sizeof *t[i].streams, cmp_u64);
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
      if (m == 0 || t[i].streams[k] != t[i].streams[m - 1]) t[i].streams[m++] = t[i].streams[k];
    t[i].nstreams = m;
  }
}

static void write_metadata(struct writer *w, const struct cs_dumpset *set, const struct file_tracks *t,
                           const struct selection *sel) {
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (!sel->file_ok[i]) continue;
    char name[256];
    if (f->hdr.rank >= 0) snprintf(name, sizeof name, "rank %d (%s)", f->hdr.rank, f->hdr.host);
    else snprintf(name, sizeof name, "rank ? (%s) pid %lld", f->hdr.host, f->hdr.pid);
    emit(w, meta("process_name", t[i].pid, 0, "name", json_string(name)), false, 0, -1);
    emit(w, meta("process_sort_index", t[i].pid, 0, "sort_index", json_integer((json_int_t)i)), false, 0, -1);
    if (f->ncomms) {
      emit(w, meta("thread_name", t[i].pid, 0, "name", json_string("host")), false, 0, -1);
      emit(w, meta("thread_sort_index", t[i].pid, 0, "sort_index", json_integer(0)), false, 0, -1);
    }
    for (size_t k = 0; k < t[i].nstreams; k++) {
      char sn[64];
      snprintf(sn, sizeof sn, "stream 0x%" PRIx64, t[i].streams[k]);
      emit(w, meta("thread_name", t[i].pid, (int)k + 1, "name", json_string(sn)), false, 0, -1);
      emit(w, meta("thread_sort_index", t[i].pid, (int)k + 1, "sort_index", json_integer((json_int_t)k + 1)),
           false, 0, -1);
    }
  }
}

static void write_records(struct writer *w, const struct cs_dumpset *set, const struct file_tracks *t,
                          const struct selection *sel) {
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    int pid = t[i].pid;
    if (!sel->file_ok[i]) continue;
    for (size_t k = 0; k < f->nops; k++) {
      const struct cs_op_rec *o = &f->ops[k];
      if (!op_selected(sel, o)) continue;
      int tid = tid_of(&t[i], o->stream);
      if (op_is_slice(o)) {
        json_t *e = event(o->op_name, op_cat(o), "X", pid, tid);
        json_object_set_new(e, "args", op_args(f, o));
        emit(w, e, true, o->start_ns, slice_dur_us(o->start_ns, o->end_ns, o->dur_us));
      } else {
        char name[128];
        snprintf(name, sizeof name, "%s (%s)", o->op_name, o->timing_name);
        json_t *e = event(name, op_cat(o), "i", pid, tid);
        json_object_set_new(e, "s", json_string("t"));
        json_object_set_new(e, "args", op_args(f, o));
        emit(w, e, true, o->enqueue_ns, -1);
      }
    }
    for (size_t k = 0; k < f->nxfers; k++) {
      const struct cs_xfer_rec *x = &f->xfers[k];
      if (!xfer_selected(sel, x)) continue;
      int tid = tid_of(&t[i], x->stream);
      char name[128];
      bool slice = x->timing == CSD_TIMING_GPU_EVENT && x->start_ns > 0;
      if (slice) snprintf(name, sizeof name, "%s %s", x->op_name, x->kind);
      else snprintf(name, sizeof name, "%s %s (%s)", x->op_name, x->kind, x->timing_name);
      json_t *e = event(name, "xfer", slice ? "X" : "i", pid, tid);
      if (!slice) json_object_set_new(e, "s", json_string("t"));
      json_object_set_new(e, "args", xfer_args(f, x));
      if (slice) emit(w, e, true, x->start_ns, slice_dur_us(x->start_ns, x->end_ns, x->dur_us));
      else emit(w, e, true, x->enqueue_ns, -1);
    }
    for (size_t k = 0; k < f->ncomms; k++) {
      const struct cs_comm_rec *c = &f->comms[k];
      if (!comm_selected(sel, c)) continue;
      char name[128];
      snprintf(name, sizeof name, "comm %s", c->event);
      json_t *e = event(name, "comm", "i", pid, 0);
      json_object_set_new(e, "s", json_string("t"));
      json_t *a = json_object();
      json_object_set_new(a, "event", json_string(c->event));
      json_object_set_new(a, "comm", hexstr(c->comm, true));
      json_object_set_new(a, "size", json_integer(c->size));
      json_object_set_new(a, "rank", json_integer(c->rank));
      json_object_set_new(a, "device", json_integer(c->device));
      json_object_set_new(a, "parent", c->has_parent ? hexstr(c->parent, true) : json_null());
      json_object_set_new(a, "t_ns", json_integer(c->t_ns));
      json_object_set_new(e, "args", a);
      emit(w, e, true, c->t_ns, -1);
    }
  }
}

static int64_t slice_mid_ns(const struct cs_op_rec *o) {
  double d = slice_dur_us(o->start_ns, o->end_ns, o->dur_us);
  return o->start_ns + (int64_t)llround(d * 500.0);
}

static size_t write_flows(struct writer *w, const struct cs_dumpset *set, const struct file_tracks *t,
                          const struct selection *sel) {
  struct cs_instances inst;
  cs_group_instances(set, &inst);
  size_t id = 0;
  for (size_t i = 0; i < inst.n; i++) {
    const struct cs_instance *in = &inst.v[i];
    const struct cs_op_rec *prev = NULL;
    for (size_t k = 0; k < in->n; k++) {
      const struct cs_op_rec *o = in->ops[k];
      if (!op_is_slice(o) || !sel->file_ok[o->file] || !op_selected(sel, o)) continue;
      if (prev) {
        id++;
        char name[128];
        snprintf(name, sizeof name, "%s seq %" PRId64, in->op_name, in->seq);
        const struct cs_op_rec *ends[2] = {prev, o};
        for (int e = 0; e < 2; e++) {
          const struct file_tracks *ft = &t[ends[e]->file];
          json_t *ev = event(name, "coll", e ? "f" : "s", ft->pid, tid_of(ft, ends[e]->stream));
          json_object_set_new(ev, "id", json_integer((json_int_t)id));
          if (e) json_object_set_new(ev, "bp", json_string("e"));
          emit(w, ev, true, slice_mid_ns(ends[e]), -1);
        }
      }
      prev = o;
    }
  }
  cs_instances_free(&inst);
  return id;
}

static void usage(FILE *o) {
  fputs("usage: collscope trace DIR [-o FILE] [--job ID] [--ranks LIST] [--comm ID] [--from T] [--to T]\n"
        "                       [--max-size N] [-j N]\n"
        "  DIR            directory of collscope dump files (*.jsonl), or one dump file\n"
        "  --job ID       only the dumps of job ID (needed when DIR holds several jobs)\n"
        "  -o FILE        write the Chrome/Perfetto trace JSON to FILE (default: standard output)\n"
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

/* about this many bytes of trace per record, flows and metadata included (measured on
 * bench/gen_dumps sets: ~720-800) */
#define TRACE_BYTES_PER_RECORD 800

static size_t count_selected(const struct cs_dumpset *set, const struct selection *sel) {
  size_t n = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (!sel->file_ok[i]) continue;
    for (size_t k = 0; k < f->nops; k++) n += op_selected(sel, &f->ops[k]);
    for (size_t k = 0; k < f->nxfers; k++) n += xfer_selected(sel, &f->xfers[k]);
    for (size_t k = 0; k < f->ncomms; k++) n += comm_selected(sel, &f->comms[k]);
  }
  return n;
}

/* the first and last record times of the set */
static void job_span(const struct cs_dumpset *set, int64_t *lo, int64_t *hi) {
  bool any = false;
  *lo = *hi = 0;
#define SEE(t)                                                    \
  do {                                                            \
    int64_t t_ = (t);                                             \
    if (t_ <= 0) break;                                           \
    if (!any || t_ < *lo) *lo = t_;                               \
    if (!any || t_ > *hi) *hi = t_;                               \
    any = true;                                                   \
  } while (0)
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    for (size_t k = 0; k < f->nops; k++) SEE(op_is_slice(&f->ops[k]) ? f->ops[k].start_ns : f->ops[k].enqueue_ns);
    for (size_t k = 0; k < f->nxfers; k++) SEE(f->xfers[k].start_ns > 0 ? f->xfers[k].start_ns : f->xfers[k].enqueue_ns);
    for (size_t k = 0; k < f->ncomms; k++) SEE(f->comms[k].t_ns);
  }
#undef SEE
}

/* "0,3,8-15" -> file_ok by the files' global ranks; false when malformed */
static bool parse_ranks(const char *s, const struct cs_dumpset *set, bool *ok) {
  for (size_t i = 0; i < set->nfiles; i++) ok[i] = false;
  const char *p = s;
  while (*p) {
    char *end;
    long a = strtol(p, &end, 10), b = a;
    if (end == p || a < 0) return false;
    p = end;
    if (*p == '-') {
      b = strtol(p + 1, &end, 10);
      if (end == p + 1 || b < a) return false;
      p = end;
    }
    for (size_t i = 0; i < set->nfiles; i++)
      if (set->files[i].hdr.rank >= a && set->files[i].hdr.rank <= b) ok[i] = true;
    if (*p == ',') p++;
    else if (*p) return false;
  }
  return true;
}

static bool parse_size(const char *s, uint64_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || !(v >= 0)) return false;
  double m = *end == 'K' || *end == 'k' ? 1024.0 : *end == 'M' || *end == 'm' ? 1048576.0
             : *end == 'G' || *end == 'g' ? 1073741824.0 : 1.0;
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
  int st = cli_dump_args_parse("trace", argc, argv, CLI_DUMP_ARGS_SELECT, usage, &args);
  if (st >= 0) return st;
  const char *dir = args.dir, *outpath = args.outpath;

  struct cs_dumpset *set = cs_dumpset_load_cli(dir, args.job);
  if (!set) return 1;

  /* the selection, checked against the size cap before anything is written */
  struct selection sel = {.file_ok = xcalloc(set->nfiles, sizeof *sel.file_ok)};
  for (size_t i = 0; i < set->nfiles; i++) sel.file_ok[i] = true;
  int64_t start, end;
  job_span(set, &start, &end);
  uint64_t cap = (uint64_t)1 << 30;
  const char *bad = NULL;
  if (args.max_size && !parse_size(args.max_size, &cap)) bad = "--max-size";
  if (args.ranks && !parse_ranks(args.ranks, set, sel.file_ok)) bad = "--ranks";
  if (args.comm) {
    char *e;
    sel.comm = strtoull(args.comm, &e, 16);
    sel.has_comm = true;
    if (!*args.comm || *e) bad = "--comm";
  }
  const char *pts[2] = {args.from, args.to};
  bool seq_pt[2] = {false, false};
  int64_t v[2] = {INT64_MIN, INT64_MAX};
  for (int k = 0; k < 2; k++)
    if (pts[k] && !parse_point(pts[k], start, &seq_pt[k], &v[k])) bad = k ? "--to" : "--from";
  if (!bad && args.from && args.to && seq_pt[0] != seq_pt[1]) bad = "--from/--to (both seconds or both seq:N)";
  if (bad) {
    fprintf(stderr, "collscope trace: bad %s value\n", bad);
    usage(stderr);
    free(sel.file_ok);
    cs_dumpset_free(set);
    return CLI_EXIT_USAGE;
  }
  if (seq_pt[0] || seq_pt[1]) {
    sel.has_seq = true;
    sel.seq_lo = seq_pt[0] ? v[0] : 0;
    sel.seq_hi = seq_pt[1] ? v[1] : INT64_MAX;
  } else if (args.from || args.to) {
    sel.has_time = true;
    sel.from_ns = v[0];
    sel.to_ns = v[1];
  }
  size_t nsel = count_selected(set, &sel);
  double est = (double)nsel * TRACE_BYTES_PER_RECORD;
  if (cap && est > (double)cap) {
    bool chosen = args.ranks || args.comm || args.from || args.to;
    if (chosen) {
      fprintf(stderr,
              "collscope trace: the selection holds %zu records, a trace of about %.0f MB, over the %.0f MB cap; "
              "narrow it (--ranks, --comm, --from/--to) or raise --max-size (0: no cap)\n",
              nsel, est / 1048576.0, (double)cap / 1048576.0);
      free(sel.file_ok);
      cs_dumpset_free(set);
      return 1;
    }
    /* a large job and no selection: the longest start of the job that fits */
    sel.has_time = true;
    sel.from_ns = start;
    int64_t lo = start, hi = end;
    while (hi - lo > 1000000) {   /* to a millisecond */
      int64_t mid = lo + (hi - lo) / 2;
      sel.to_ns = mid;
      if ((double)count_selected(set, &sel) * TRACE_BYTES_PER_RECORD <= (double)cap) lo = mid;
      else hi = mid;
    }
    sel.to_ns = lo;
    size_t nwin = count_selected(set, &sel);
    fprintf(stderr,
            "collscope trace: %zu records would make a trace of about %.0f MB, over the %.0f MB cap; writing the "
            "first %.3f s of the job (--from 0 --to %.3f: %zu records); pick another part with --ranks, --comm, "
            "--from/--to, or raise --max-size\n",
            nsel, est / 1048576.0, (double)cap / 1048576.0, (double)(lo - start) / 1e9, (double)(lo - start) / 1e9,
            nwin);
  }

  /* Write to a new temporary beside FILE and rename, so a failed run never leaves a half
   * trace behind and a planted FILE.tmp link is never followed. */
  char *tmp = NULL;
  FILE *o = cli_out_open("trace", outpath, &tmp);
  if (!o) {
    free(sel.file_ok);
    cs_dumpset_free(set);
    return 1;
  }

  struct file_tracks *t = xcalloc(set->nfiles, sizeof *t);
  build_tracks(set, t);
  struct writer w = {.o = o, .first = true};
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", o);
  write_metadata(&w, set, t, &sel);
  write_records(&w, set, t, &sel);
  size_t flows = write_flows(&w, set, t, &sel);
  fputs("\n]}\n", o);

  bool to_file = tmp != NULL;
  int rc = cli_out_close("trace", o, tmp, outpath, 0);
  if (!rc && to_file) {
    size_t nev = count_selected(set, &sel), np = 0;
    for (size_t i = 0; i < set->nfiles; i++) np += sel.file_ok[i];
    fprintf(stderr, "collscope trace: wrote %s (%zu processes, %zu events, %zu flows)\n", outpath, np, nev, flows);
  }
  free(sel.file_ok);
  for (size_t i = 0; i < set->nfiles; i++) free(t[i].streams);
  free(t);
  cs_dumpset_free(set);
  return rc;
}
