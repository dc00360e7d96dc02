/* tools/trace/trace_json.c: `collscope trace`'s Chrome trace-event JSON (the default format; layout in
 * cmd_trace.c): the events of the pass as text in the reading threads' buffers (trace_out.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "collscope/schema.h"
#include "trace.h"
/* ---------- events ---------- */

/* "ts", then "dur" when >= 0, then name, cat, ph, pid, tid (the layout of the JSON trace) */
static void head(struct tbuf *b, int64_t ts_ns, double dur_us, const char *name, const char *cat, const char *ph,
                 int pid, int tid) {
  tout_begin_event(b);
  tb_key(b, false, "ts");
  tb_us(b, ts_ns);
  if (dur_us >= 0) {
    tb_key(b, true, "dur");
    tb_fixed3(b, dur_us);
  }
  tb_key(b, true, "name");
  tb_str(b, name);
  tb_key(b, true, "cat");
  tb_str(b, cat);
  tb_key(b, true, "ph");
  tb_str(b, ph);
  tb_key(b, true, "pid");
  tb_int(b, pid);
  tb_key(b, true, "tid");
  tb_int(b, tid);
}

static void kv_str(struct tbuf *b, const char *k, const char *v) { /* no key for a NULL string */
  if (!v) return;
  tb_key(b, true, k);
  tb_str(b, v);
}
static void kv_int(struct tbuf *b, const char *k, long long v) {
  tb_key(b, true, k);
  tb_int(b, v);
}

static void src_arg(struct tbuf *b, const char *fname, unsigned line) {
  char src[512];
  snprintf(src, sizeof src, "%s:%u", fname, line);
  kv_str(b, "src", src);
}

static void write_op(struct trace_out *out, struct tbuf *b, const char *fname, const struct cs_op_rec *o, int pid,
                     int tid) {
  const char *cat = o->op >= 0 && cs_op_table[o->op].cls == CS_CLASS_P2P ? "p2p" : "coll";
  bool slice = trace_op_slice(o);
  char nb[128];
  const char *name = trace_op_event_name(o, nb, sizeof nb);
  if (slice) {
    head(b, o->start_ns, trace_slice_dur_us(o->start_ns, o->end_ns, o->dur_us), name, cat, "X", pid, tid);
  } else {
    head(b, o->enqueue_ns, -1, name, cat, "i", pid, tid);
    kv_str(b, "s", "t");
  }
  tb_key(b, true, "args");
  tb_raw(b, "{\"comm\":", 8);
  tb_hex(b, o->comm, true);
  kv_int(b, "comm_size", o->comm_size);
  kv_int(b, "comm_rank", o->comm_rank);
  kv_int(b, "rank", o->rank);
  kv_int(b, "seq", o->seq);
  kv_str(b, "op", o->op_name);
  kv_str(b, "dtype", o->dtype);
  kv_int(b, "count", o->count);
  kv_int(b, "bytes", (long long)o->bytes);
  tb_key(b, true, "redop");
  if (o->redop)
    tb_str(b, o->redop);
  else
    tb_raw(b, "null", 4);
  kv_int(b, "root", o->root);
  kv_int(b, "peer", o->peer);
  tb_key(b, true, "stream");
  tb_hex(b, o->stream, false);
  kv_int(b, "group", o->group);
  kv_int(b, "enqueue_ns", o->enqueue_ns);
  kv_int(b, "start_ns", o->start_ns);
  kv_int(b, "end_ns", o->end_ns);
  tb_key(b, true, "dur_us");
  tb_real(b, isfinite(o->dur_us) ? o->dur_us : 0.0);
  kv_str(b, "timing", o->timing_name);
  tb_key(b, true, "captured");
  tb_lit(b, o->captured ? "true" : "false");
  kv_str(b, "site", o->site);
  kv_int(b, "status", o->status);
  src_arg(b, fname, o->line);
  tb_raw(b, "}", 1);
  tout_end_event(out, b);
}

static void write_xfer(struct trace_out *out, struct tbuf *b, const char *fname, const struct cs_xfer_rec *x, int pid,
                       int tid) {
  char name[128];
  bool slice = trace_xfer_slice(x);
  const char *op = x->op_name ? x->op_name : "";
  trace_xfer_event_name(x, name, sizeof name);
  if (slice) {
    head(b, x->start_ns, trace_slice_dur_us(x->start_ns, x->end_ns, x->dur_us), name, "xfer", "X", pid, tid);
  } else {
    head(b, x->enqueue_ns, -1, name, "xfer", "i", pid, tid);
    kv_str(b, "s", "t");
  }
  tb_key(b, true, "args");
  tb_raw(b, "{", 1);
  tb_key(b, false, "op");
  tb_str(b, op);
  kv_str(b, "api", x->api);
  kv_str(b, "kind", x->kind);
  kv_int(b, "bytes", (long long)x->bytes);
  tb_key(b, true, "stream");
  tb_hex(b, x->stream, false);
  tb_key(b, true, "async");
  tb_lit(b, x->async ? "true" : "false");
  kv_int(b, "enqueue_ns", x->enqueue_ns);
  kv_int(b, "start_ns", x->start_ns);
  kv_int(b, "end_ns", x->end_ns);
  tb_key(b, true, "dur_us");
  tb_real(b, isfinite(x->dur_us) ? x->dur_us : 0.0);
  kv_str(b, "timing", x->timing_name);
  kv_str(b, "site", x->site);
  kv_int(b, "status", x->status);
  src_arg(b, fname, x->line);
  tb_raw(b, "}", 1);
  tout_end_event(out, b);
}

static void write_comm(struct trace_out *out, struct tbuf *b, const struct cs_comm_rec *c, int pid) {
  char name[128];
  trace_comm_event_name(c, name, sizeof name);
  head(b, c->t_ns, -1, name, "comm", "i", pid, 0);
  kv_str(b, "s", "t");
  tb_key(b, true, "args");
  tb_raw(b, "{", 1);
  tb_key(b, false, "event");
  tb_str(b, c->event ? c->event : "");
  tb_key(b, true, "comm");
  tb_hex(b, c->comm, true);
  kv_int(b, "size", c->size);
  kv_int(b, "rank", c->rank);
  kv_int(b, "device", c->device);
  tb_key(b, true, "parent");
  if (c->has_parent)
    tb_hex(b, c->parent, true);
  else
    tb_raw(b, "null", 4);
  kv_int(b, "t_ns", c->t_ns);
  tb_raw(b, "}", 1);
  tout_end_event(out, b);
}

/* {"name":NAME,"ph":"M","pid":P,"tid":T,"args":{KEY:...}} with a string or an integer */
static void meta(struct trace_out *out, struct tbuf *b, const char *name, int pid, int tid, const char *key,
                 const char *sval, long long ival) {
  tout_begin_event(b);
  tb_key(b, false, "name");
  tb_str(b, name);
  tb_raw(b, ",\"ph\":\"M\"", 9);
  kv_int(b, "pid", pid);
  kv_int(b, "tid", tid);
  tb_raw(b, ",\"args\":{", 9);
  tb_key(b, false, key);
  if (sval)
    tb_str(b, sval);
  else
    tb_int(b, ival);
  tb_raw(b, "}", 1);
  tout_end_event(out, b);
}

static void json_begin(struct trace_run *R) {
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", R->out.o);
  struct tbuf *b = tout_buf(&R->out, 0);
  const struct cs_dumpset *set = R->set;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (f->read_index >= R->nf) continue;
    const struct tfile *F = &R->f[f->read_index];
    if (!F->ok) continue;
    char name[256];
    trace_process_name(f, name, sizeof name);
    meta(&R->out, b, "process_name", F->pid, 0, "name", name, 0);
    meta(&R->out, b, "process_sort_index", F->pid, 0, "sort_index", NULL, (long long)i);
    if (f->ncomms) {
      meta(&R->out, b, "thread_name", F->pid, 0, "name", "host", 0);
      meta(&R->out, b, "thread_sort_index", F->pid, 0, "sort_index", NULL, 0);
    }
    size_t nt = F->nstreams + F->streams_full;
    for (size_t k = 0; k < nt; k++) {
      char sn[64];
      trace_stream_name(F, k, sn, sizeof sn);
      meta(&R->out, b, "thread_name", F->pid, (int)k + 1, "name", sn, 0);
      meta(&R->out, b, "thread_sort_index", F->pid, (int)k + 1, "sort_index", NULL, (long long)k + 1);
    }
  }
}

/* ---------- flows: each instance's timed members chained in comm_rank order ---------- */

static void json_instance(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
  (void)comm;
  struct trace_run *R = ctx;
  struct tbuf *b = tout_buf(&R->out, 0); /* the walk runs between the reading rounds */
  for (size_t k = 1; k < n; k++) {
    R->flows++;
    char name[128];
    snprintf(name, sizeof name, "%s seq %" PRId64, m[0].op_name ? m[0].op_name : "", seq);
    for (int e = 0; e < 2; e++) {
      const struct cs_walk_rec *x = &m[k - 1 + (size_t)e];
      head(b, x->start_ns, -1, name, "coll", e ? "f" : "s", x->rank, x->rec_rank);
      kv_int(b, "id", (long long)R->flows);
      if (e) kv_str(b, "bp", "e");
      tout_end_event(&R->out, b);
    }
  }
}

static void json_op(struct trace_run *R, unsigned worker, const char *fname, const struct cs_op_rec *o, int pid,
                    int tid) {
  write_op(&R->out, tout_buf(&R->out, worker), fname, o, pid, tid);
}
static void json_xfer(struct trace_run *R, const char *fname, const struct cs_xfer_rec *x, int pid, int tid) {
  write_xfer(&R->out, tout_buf(&R->out, 0), fname, x, pid, tid);
}
static void json_comm(struct trace_run *R, const struct cs_comm_rec *c, int pid) {
  write_comm(&R->out, tout_buf(&R->out, 0), c, pid);
}
static void json_end(struct trace_run *R) {
  tout_flush_all(&R->out);
  fputs("\n]}\n", R->out.o);
}

const struct trace_emit trace_emit_json = {
    .name = "json",
    .bytes_per_record = 800, /* measured on bench/gen_dumps sets: ~720-800, flows and metadata included */
    .begin = json_begin,
    .op = json_op,
    .xfer = json_xfer,
    .comm = json_comm,
    .instance = json_instance,
    .end = json_end,
};
