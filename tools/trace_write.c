/* tools/trace_write.c: `collscope trace`'s second pass (trace.h): every selected record written
 * as the dumps stream, by the reading threads; flow arrows per collective instance. */
#include "trace.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/schema.h"
#include "xalloc.h"

/* ---------- the selection ---------- */

static inline bool op_slice(const struct cs_op_rec *o) { return o->timing == CSD_TIMING_GPU_EVENT && o->start_ns > 0; }
static bool in_time(const struct trace_sel *sel, int64_t ts) {
  return !sel->has_time || (ts >= sel->from_ns && ts <= sel->to_ns);
}
static bool op_selected(const struct trace_sel *sel, const struct cs_op_rec *o) {
  if (sel->has_comm && o->comm != sel->comm) return false;
  if (sel->has_seq && (o->seq < sel->seq_lo || o->seq > sel->seq_hi)) return false;
  return in_time(sel, op_slice(o) ? o->start_ns : o->enqueue_ns);
}
static bool xfer_selected(const struct trace_sel *sel, const struct cs_xfer_rec *x) {
  if (sel->has_comm || sel->has_seq) return false; /* a copy belongs to no communicator */
  return in_time(sel, x->timing == CSD_TIMING_GPU_EVENT && x->start_ns > 0 ? x->start_ns : x->enqueue_ns);
}
static bool comm_selected(const struct trace_sel *sel, const struct cs_comm_rec *c) {
  if (sel->has_comm && c->comm != sel->comm) return false;
  return in_time(sel, c->t_ns);
}

static double slice_dur_us(int64_t start_ns, int64_t end_ns, double dur_us) {
  if (dur_us > 0 && isfinite(dur_us)) return dur_us;
  return end_ns > start_ns ? (double)(end_ns - start_ns) / 1e3 : 0.0;
}

static int tid_of(const struct tfile *F, uint64_t stream) {
  size_t lo = 0, hi = F->nstreams;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (F->streams[mid] < stream)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < F->nstreams && F->streams[lo] == stream) return (int)lo + 1;
  return (int)F->nstreams + 1; /* beyond TRACE_MAX_STREAMS: the shared track */
}

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
  bool slice = op_slice(o);
  if (slice) {
    head(b, o->start_ns, slice_dur_us(o->start_ns, o->end_ns, o->dur_us), o->op_name ? o->op_name : "", cat, "X", pid,
         tid);
  } else {
    char name[128];
    snprintf(name, sizeof name, "%s (%s)", o->op_name ? o->op_name : "", o->timing_name ? o->timing_name : "");
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
  bool slice = x->timing == CSD_TIMING_GPU_EVENT && x->start_ns > 0;
  const char *op = x->op_name ? x->op_name : "", *kind = x->kind ? x->kind : "";
  if (slice)
    snprintf(name, sizeof name, "%s %s", op, kind);
  else
    snprintf(name, sizeof name, "%s %s (%s)", op, kind, x->timing_name ? x->timing_name : "");
  if (slice) {
    head(b, x->start_ns, slice_dur_us(x->start_ns, x->end_ns, x->dur_us), name, "xfer", "X", pid, tid);
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
  snprintf(name, sizeof name, "comm %s", c->event ? c->event : "");
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

static void write_metadata(struct trace_run *R) {
  struct tbuf *b = tout_buf(&R->out, 0);
  const struct cs_dumpset *set = R->set;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (f->read_index >= R->nf) continue;
    const struct tfile *F = &R->f[f->read_index];
    if (!F->ok) continue;
    char name[256];
    if (f->hdr.rank >= 0)
      snprintf(name, sizeof name, "rank %d (%s)", f->hdr.rank, f->hdr.host);
    else
      snprintf(name, sizeof name, "rank ? (%s) pid %lld", f->hdr.host, f->hdr.pid);
    meta(&R->out, b, "process_name", F->pid, 0, "name", name, 0);
    meta(&R->out, b, "process_sort_index", F->pid, 0, "sort_index", NULL, (long long)i);
    if (f->ncomms) {
      meta(&R->out, b, "thread_name", F->pid, 0, "name", "host", 0);
      meta(&R->out, b, "thread_sort_index", F->pid, 0, "sort_index", NULL, 0);
    }
    size_t nt = F->nstreams + F->streams_full;
    for (size_t k = 0; k < nt; k++) {
      char sn[64];
      if (k < F->nstreams)
        snprintf(sn, sizeof sn, "stream 0x%" PRIx64, F->streams[k]);
      else
        snprintf(sn, sizeof sn, "other streams (beyond %d)", TRACE_MAX_STREAMS);
      meta(&R->out, b, "thread_name", F->pid, (int)k + 1, "name", sn, 0);
      meta(&R->out, b, "thread_sort_index", F->pid, (int)k + 1, "sort_index", NULL, (long long)k + 1);
    }
  }
}

/* ---------- flows: each instance's timed members chained in comm_rank order ---------- */

static void on_instance(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
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

static void flow_end(struct trace_run *R, struct tfile *F, size_t file, const struct cs_op_rec *o, int pid, int tid) {
  if (o->seq < 0) return;
  if (F->nflows == F->capflows) {
    F->capflows = F->capflows ? 2 * F->capflows : 64;
    F->flows = xrealloc(F->flows, F->capflows * sizeof *F->flows);
  }
  double d = slice_dur_us(o->start_ns, o->end_ns, o->dur_us);
  int size = o->comm_size;
  if (size > 0 && (size_t)size > R->ok_files) size = (int)R->ok_files; /* the files that may show up */
  F->flows[F->nflows++] = (struct cs_walk_rec){.comm = o->comm, .seq = o->seq, .comm_rank = o->comm_rank, .comm_size = size, .file = (uint32_t)file, .rank = pid, .rec_rank = tid, .start_ns = o->start_ns + (int64_t)llround(d * 500.0), .op_name = o->op_name};
}

/* ---------- the pass ---------- */

static void write_begin(void *ctx, size_t nf) {
  struct trace_run *R = ctx;
  if (nf != R->nf) R->changed = true;
}

static bool same_key(const struct salv_key *a, const struct salv_key *b) {
  return a->kind == b->kind && a->a == b->a && a->b == b->b && a->c == b->c;
}

/* a record of the dump that its salvage copy holds too: the copy's is not written */
static void mark_dup(struct trace_run *R, const struct tfile *F, const struct cs_op_rec *o) {
  struct salv_key k = o->seq >= 0 ? (struct salv_key){0, o->comm, (uint64_t)o->seq, 0, 0}
                                  : (struct salv_key){1, o->comm, (uint64_t)o->enqueue_ns, (uint64_t)o->op, 0};
  for (size_t p = 0; p < F->npartners; p++) {
    struct tfile *S = &R->f[F->partners[p]];
    size_t lo = 0, hi = S->nsops;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      const struct salv_key *m = &S->keys[mid];
      bool less = m->kind != k.kind ? m->kind < k.kind
                  : m->a != k.a     ? m->a < k.a
                  : m->b != k.b     ? m->b < k.b
                                    : m->c < k.c;
      if (less)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (; lo < S->nsops && same_key(&S->keys[lo], &k); lo++) S->dup[S->keys[lo].idx] = true;
  }
}

static void write_op_rec(void *ctx, unsigned worker, size_t file, const struct cs_dumpfile *f,
                         const struct cs_op_rec *o) {
  struct trace_run *R = ctx;
  if (file >= R->nf) return;
  struct tfile *F = &R->f[file];
  if (!F->checked) { /* the file pass 1 read at this place */
    F->checked = true;
    if (!F->name || strcmp(F->name, f->name) != 0) {
      F->skip = true;
      R->changed = true;
    }
  }
  if (F->skip || !F->in_set) return;
  if (F->npartners) mark_dup(R, F, o);
  if (!F->ok || !op_selected(&R->sel, o)) return;
  struct tworker *W = &R->w[worker < R->nw ? worker : 0];
  int tid = tid_of(F, o->stream);
  write_op(&R->out, tout_buf(&R->out, worker), f->name, o, F->pid, tid);
  W->events++;
  if (op_slice(o)) flow_end(R, F, file, o, F->pid, tid);
}

/* the records of the dump's salvage copies that the dump lacks, once the dump is read */
static void write_salvaged(struct trace_run *R, struct tfile *D, size_t di) {
  struct tbuf *b = tout_buf(&R->out, 0);
  for (size_t p = 0; p < D->npartners; p++) {
    struct tfile *S = &R->f[D->partners[p]];
    for (size_t k = 0; k < S->nsops; k++) {
      const struct cs_op_rec *o = &S->sops[k];
      if (S->dup[k] || !D->ok || !op_selected(&R->sel, o)) continue;
      int tid = tid_of(D, o->stream);
      write_op(&R->out, b, S->name, o, D->pid, tid);
      R->w[0].events++;
      if (op_slice(o)) flow_end(R, D, di, o, D->pid, tid);
    }
  }
}

static void write_round(void *ctx, const bool *done, size_t nfiles) {
  struct trace_run *R = ctx;
  if (!R->walk) return;
  for (size_t i = 0; i < nfiles && i < R->nf; i++) {
    struct tfile *F = &R->f[i];
    if (done[i] && !F->done && F->npartners && !F->skip) write_salvaged(R, F, i);
    for (size_t k = 0; k < F->nflows; k++)
      if (!cs_walk_push(R->walk, &F->flows[k])) R->oom = true;
    F->nflows = 0;
    if (done[i] && !F->done) {
      F->done = true;
      cs_walk_file_done(R->walk, (uint32_t)i);
      free(F->flows);
      F->flows = NULL;
      F->capflows = 0;
    }
  }
  if (!cs_walk_advance(R->walk)) R->oom = true;
}

bool trace_write(struct trace_run *R, const char *path, const char *job) {
  R->walk = cs_walk_new(R->nf, on_instance, R);
  if (!R->walk) oom();
  tout_init(&R->out, R->out.o, R->nw);
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", R->out.o);
  write_metadata(R);
  tout_flush_all(&R->out);

  struct cs_stream_ops ops = {.ctx = R, .jobs = R->nw, .begin = write_begin, .op = write_op_rec, .round = write_round, .own_salvage = true};
  struct cs_dumpset *again = cs_dumpset_stream(path, job, &ops);
  bool ok = !again->fatal && !R->changed;
  cs_dumpset_free(again);

  /* copies and communicator events: kept in pass 1's set */
  struct tbuf *b = tout_buf(&R->out, 0);
  const struct cs_dumpset *set = R->set;
  for (size_t i = 0; i < set->nfiles && ok; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (f->read_index >= R->nf || !R->f[f->read_index].ok) continue;
    const struct tfile *F = &R->f[f->read_index];
    for (size_t k = 0; k < f->nxfers; k++)
      if (xfer_selected(&R->sel, &f->xfers[k])) {
        write_xfer(&R->out, b, f->name, &f->xfers[k], F->pid, tid_of(F, f->xfers[k].stream));
        R->w[0].events++;
      }
    for (size_t k = 0; k < f->ncomms; k++)
      if (comm_selected(&R->sel, &f->comms[k])) {
        write_comm(&R->out, b, &f->comms[k], F->pid);
        R->w[0].events++;
      }
  }
  tout_flush_all(&R->out);
  fputs("\n]}\n", R->out.o);
  if (R->changed) fputs("collscope trace: the dump files changed while they were read; run it again\n", stderr);
  if (R->oom) fputs("collscope trace: out of memory joining instances; some flow arrows are missing\n", stderr);
  return ok && !R->out.failed;
}
