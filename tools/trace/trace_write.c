/* tools/trace/trace_write.c: `collscope trace`'s second pass (trace.h): every selected record handed to
 * the format (R->emit) as the dumps stream, by the reading threads; the instances' members
 * gathered for the per-communicator merge when the format draws flows from it. The selection
 * is decided here, once, for every format. */
#include "trace.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/schema.h"
#include "xalloc.h"

/* ---------- the selection ---------- */

static bool in_time(const struct trace_sel *sel, int64_t ts) {
  return !sel->has_time || (ts >= sel->from_ns && ts <= sel->to_ns);
}
static bool op_selected(const struct trace_sel *sel, const struct cs_op_rec *o) {
  if (sel->has_comm && o->comm != sel->comm) return false;
  if (sel->has_seq && (o->seq < sel->seq_lo || o->seq > sel->seq_hi)) return false;
  return in_time(sel, trace_op_slice(o) ? o->start_ns : o->enqueue_ns);
}
static bool xfer_selected(const struct trace_sel *sel, const struct cs_xfer_rec *x) {
  if (sel->has_comm || sel->has_seq) return false; /* a copy belongs to no communicator */
  return in_time(sel, trace_xfer_slice(x) ? x->start_ns : x->enqueue_ns);
}
static bool comm_selected(const struct trace_sel *sel, const struct cs_comm_rec *c) {
  if (sel->has_comm && c->comm != sel->comm) return false;
  return in_time(sel, c->t_ns);
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

/* ---------- names of tracks and events, the same in every format ---------- */

void trace_process_name(const struct cs_dumpfile *f, char *buf, size_t n) {
  if (f->hdr.rank >= 0)
    snprintf(buf, n, "rank %d (%s)", f->hdr.rank, f->hdr.host);
  else
    snprintf(buf, n, "rank ? (%s) pid %lld", f->hdr.host, f->hdr.pid);
}

void trace_stream_name(const struct tfile *F, size_t k, char *buf, size_t n) {
  if (k < F->nstreams)
    snprintf(buf, n, "stream 0x%" PRIx64, F->streams[k]);
  else
    snprintf(buf, n, "other streams (beyond %d)", TRACE_MAX_STREAMS);
}

const char *trace_op_event_name(const struct cs_op_rec *o, char *buf, size_t n) {
  if (trace_op_slice(o)) return o->op_name ? o->op_name : "";
  snprintf(buf, n, "%s (%s)", o->op_name ? o->op_name : "", o->timing_name ? o->timing_name : "");
  return buf;
}

void trace_xfer_event_name(const struct cs_xfer_rec *x, char *buf, size_t n) {
  const char *op = x->op_name ? x->op_name : "", *kind = x->kind ? x->kind : "";
  if (trace_xfer_slice(x))
    snprintf(buf, n, "%s %s", op, kind);
  else
    snprintf(buf, n, "%s %s (%s)", op, kind, x->timing_name ? x->timing_name : "");
}

void trace_comm_event_name(const struct cs_comm_rec *c, char *buf, size_t n) {
  snprintf(buf, n, "comm %s", c->event ? c->event : "");
}

/* ---------- flows: each instance's timed members, to the per-communicator merge ---------- */

static void flow_end(struct trace_run *R, struct tfile *F, size_t file, const struct cs_op_rec *o, int pid, int tid) {
  if (o->seq < 0 || !R->walk) return;
  if (F->nflows == F->capflows) {
    F->capflows = F->capflows ? 2 * F->capflows : 64;
    F->flows = xrealloc(F->flows, F->capflows * sizeof *F->flows);
  }
  double d = trace_slice_dur_us(o->start_ns, o->end_ns, o->dur_us);
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
  R->emit->op(R, worker, f->name, o, F->pid, tid);
  W->events++;
  if (trace_op_slice(o)) flow_end(R, F, file, o, F->pid, tid);
}

/* the records of the dump's salvage copies that the dump lacks, once the dump is read */
static void write_salvaged(struct trace_run *R, struct tfile *D, size_t di) {
  for (size_t p = 0; p < D->npartners; p++) {
    struct tfile *S = &R->f[D->partners[p]];
    for (size_t k = 0; k < S->nsops; k++) {
      const struct cs_op_rec *o = &S->sops[k];
      if (S->dup[k] || !D->ok || !op_selected(&R->sel, o)) continue;
      int tid = tid_of(D, o->stream);
      R->emit->op(R, 0, S->name, o, D->pid, tid);
      R->w[0].events++;
      if (trace_op_slice(o)) flow_end(R, D, di, o, D->pid, tid);
    }
  }
}

static void write_round(void *ctx, const bool *done, size_t nfiles) {
  struct trace_run *R = ctx;
  for (size_t i = 0; i < nfiles && i < R->nf; i++) {
    struct tfile *F = &R->f[i];
    if (done[i] && !F->done && F->npartners && !F->skip) write_salvaged(R, F, i);
    for (size_t k = 0; k < F->nflows; k++)
      if (!cs_walk_push(R->walk, &F->flows[k])) R->oom = true;
    F->nflows = 0;
    if (done[i] && !F->done) {
      F->done = true;
      if (R->walk) cs_walk_file_done(R->walk, (uint32_t)i);
      free(F->flows);
      F->flows = NULL;
      F->capflows = 0;
    }
  }
  if (R->walk && !cs_walk_advance(R->walk)) R->oom = true;
}

bool trace_write(struct trace_run *R, const char *path, const char *job) {
  if (R->emit->instance) {
    R->walk = cs_walk_new(R->nf, R->emit->instance, R);
    if (!R->walk) oom();
  }
  tout_init(&R->out, R->out.o, R->nw);
  R->emit->begin(R);
  tout_flush_all(&R->out);

  struct cs_stream_ops ops = {.ctx = R, .jobs = R->nw, .begin = write_begin, .op = write_op_rec, .round = write_round, .own_salvage = true};
  struct cs_dumpset *again = cs_dumpset_stream(path, job, &ops);
  bool ok = !again->fatal && !R->changed;
  cs_dumpset_free(again);

  /* copies and communicator events: kept in pass 1's set */
  const struct cs_dumpset *set = R->set;
  for (size_t i = 0; i < set->nfiles && ok; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (f->read_index >= R->nf || !R->f[f->read_index].ok) continue;
    const struct tfile *F = &R->f[f->read_index];
    for (size_t k = 0; k < f->nxfers; k++)
      if (xfer_selected(&R->sel, &f->xfers[k])) {
        R->emit->xfer(R, f->name, &f->xfers[k], F->pid, tid_of(F, f->xfers[k].stream));
        R->w[0].events++;
      }
    for (size_t k = 0; k < f->ncomms; k++)
      if (comm_selected(&R->sel, &f->comms[k])) {
        R->emit->comm(R, &f->comms[k], F->pid);
        R->w[0].events++;
      }
  }
  R->emit->end(R);
  tout_flush_all(&R->out);
  if (R->changed) fputs("collscope trace: the dump files changed while they were read; run it again\n", stderr);
  if (R->oom) fputs("collscope trace: out of memory joining instances; some flow arrows are missing\n", stderr);
  return ok && !R->out.failed;
}
