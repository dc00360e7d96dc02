/* tools/trace/trace_scan.c: `collscope trace`'s first pass (trace.h): tracks, times, and the size of
 * the selection, without keeping the op records. */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* ---------- --ranks LIST ---------- */

/* calls each range [a, b] of "0,3,8-15"; false when malformed */
static bool rank_ranges(const char *s, int rank, bool *hit) {
  const char *p = s;
  if (!*p) return false;
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
    if (rank >= a && rank <= b) *hit = true;
    if (*p == ',')
      p++;
    else if (*p)
      return false;
  }
  return true;
}
bool trace_rank_list_ok(const char *s) {
  bool hit = false;
  return rank_ranges(s, -1, &hit);
}
bool trace_rank_in(const char *s, int rank) {
  bool hit = false;
  if (!s) return true;
  return rank_ranges(s, rank, &hit) && hit && rank >= 0;
}

/* ---------- per record ---------- */

static void add_stream(struct tfile *F, uint64_t s) {
  size_t lo = 0, hi = F->nstreams;
  while (lo < hi) { /* sorted: binary search for the place */
    size_t mid = (lo + hi) / 2;
    if (F->streams[mid] < s)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < F->nstreams && F->streams[lo] == s) return;
  if (F->nstreams >= TRACE_MAX_STREAMS) {
    F->streams_full = true;
    return;
  }
  if (F->nstreams == F->capstreams) {
    F->capstreams = F->capstreams ? 2 * F->capstreams : 4;
    F->streams = xrealloc(F->streams, F->capstreams * sizeof *F->streams);
  }
  memmove(&F->streams[lo + 1], &F->streams[lo], (F->nstreams - lo) * sizeof *F->streams);
  F->streams[lo] = s;
  F->nstreams++;
}

static bool is_salvage_file(const struct cs_dumpfile *f) {
  size_t l = strlen(f->name);
  return f->hdr.salvaged || (l > 14 && strcmp(f->name + l - 14, ".salvage.jsonl") == 0);
}

static void file_init(struct trace_run *R, struct tfile *F, const struct cs_dumpfile *f) {
  F->init = true;
  F->ok = trace_rank_in(R->sel.ranks, f->hdr.rank);
  F->host = f->hdr.host;
  F->hpid = f->hdr.pid;
  F->salvage = is_salvage_file(f);
  F->name = xstrdup(f->name);
}

static inline bool op_slice(const struct cs_op_rec *o) { return o->timing == CSD_TIMING_GPU_EVENT && o->start_ns > 0; }

static void see_time(struct tworker *W, int64_t t) {
  if (t <= 0) return;
  if (!W->any || t < W->lo) W->lo = t;
  if (!W->any || t > W->hi) W->hi = t;
  W->any = true;
}

static void scan_begin(void *ctx, size_t nf) {
  struct trace_run *R = ctx;
  R->nf = nf;
  R->f = xcalloc(nf, sizeof *R->f);
}

static void scan_op(void *ctx, unsigned worker, size_t file, const struct cs_dumpfile *f, const struct cs_op_rec *o) {
  struct trace_run *R = ctx;
  if (file >= R->nf) return;
  struct tworker *W = &R->w[worker < R->nw ? worker : 0];
  struct tfile *F = &R->f[file];
  if (!F->init) file_init(R, F, f);
  W->ops++;
  if (!F->nstreams || F->streams[0] != o->stream) add_stream(F, o->stream);
  int64_t t = op_slice(o) ? o->start_ns : o->enqueue_ns;
  see_time(W, t);
  const struct trace_sel *s = &R->sel;
  if (F->ok && (!s->has_comm || o->comm == s->comm) && (!s->has_seq || (o->seq >= s->seq_lo && o->seq <= s->seq_hi))) {
    if (t > 0)
      th_add(&W->h, t, 1);
    else
      W->nonpos++;
  }
  if (F->salvage) {
    if (F->nsops == F->capsops) {
      F->capsops = F->capsops ? 2 * F->capsops : 64;
      F->sops = xrealloc(F->sops, F->capsops * sizeof *F->sops);
    }
    F->sops[F->nsops++] = *o;
  }
}

/* ---------- after the pass ---------- */

static struct salv_key op_key(const struct cs_op_rec *o) { /* as the loader's salvage merge */
  if (o->seq >= 0) return (struct salv_key){0, o->comm, (uint64_t)o->seq, 0, 0};
  return (struct salv_key){1, o->comm, (uint64_t)o->enqueue_ns, (uint64_t)o->op, 0};
}
static int cmp_key(const void *x, const void *y) {
  const struct salv_key *p = x, *q = y;
  if (p->kind != q->kind) return p->kind < q->kind ? -1 : 1;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return p->c < q->c ? -1 : p->c > q->c;
}

/* a salvage file merged into its process's dump: its records go with the dump's */
static void pair_salvage(struct trace_run *R, size_t si) {
  struct tfile *S = &R->f[si];
  const struct cs_dumpset *set = R->set;
  const struct cs_dumpfile *d = NULL;
  for (size_t i = 0; i < set->nfiles && !d; i++) {
    const struct cs_dumpfile *c = &set->files[i];
    if (!is_salvage_file(c) && c->hdr.pid == S->hpid && c->hdr.host == S->host) d = c;
  }
  S->skip = true;
  if (!d || d->read_index >= R->nf) { /* no dump to join (not expected): nothing to write */
    S->nsops = 0;
    return;
  }
  struct tfile *D = &R->f[d->read_index];
  D->partners = xrealloc(D->partners, (D->npartners + 1) * sizeof *D->partners);
  D->partners[D->npartners++] = si;
  for (size_t k = 0; k < S->nstreams; k++) add_stream(D, S->streams[k]);
  D->streams_full |= S->streams_full;
  S->keys = xcalloc(S->nsops, sizeof *S->keys);
  S->dup = xcalloc(S->nsops, sizeof *S->dup);
  for (size_t k = 0; k < S->nsops; k++) {
    S->keys[k] = op_key(&S->sops[k]);
    S->keys[k].idx = k;
  }
  if (S->nsops) qsort(S->keys, S->nsops, sizeof *S->keys, cmp_key);
}

bool trace_scan(struct trace_run *R, const char *path, const char *job) {
  R->nw = R->jobs ? R->jobs : 1;
  R->w = xcalloc(R->nw, sizeof *R->w);
  struct cs_stream_ops ops = {.ctx = R, .jobs = R->nw, .begin = scan_begin, .op = scan_op, .own_salvage = true};
  R->set = cs_dumpset_stream(path, job, &ops);
  cs_dumpset_print_errors(R->set, stderr);
  if (R->set->fatal) return false;
  const struct cs_dumpset *set = R->set;
  if (!R->f) scan_begin(R, 0);

  /* the set as read: places, process ids (the global rank when every file has a distinct
   * known one, else the place), the ranks selected, the copies' streams */
  bool ranks_usable = true;
  for (size_t i = 0; i < set->nfiles; i++) {
    int r = set->files[i].hdr.rank;
    if (r < 0 || (i > 0 && r == set->files[i - 1].hdr.rank)) ranks_usable = false; /* sorted */
  }
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (f->read_index >= R->nf) continue;
    struct tfile *F = &R->f[f->read_index];
    if (!F->init) file_init(R, F, f);
    F->in_set = true;
    F->sort = i;
    F->pid = ranks_usable ? f->hdr.rank : (int)i;
    F->ok = trace_rank_in(R->sel.ranks, f->hdr.rank);
    R->ok_files += F->ok;
    for (size_t k = 0; k < f->nxfers; k++) add_stream(F, f->xfers[k].stream);
  }
  for (size_t i = 0; i < R->nf; i++) {
    struct tfile *F = &R->f[i];
    if (F->salvage && F->init && !F->in_set)
      pair_salvage(R, i);
    else if (F->salvage) { /* a salvage file of its own: written as it streams */
      free(F->sops);
      F->sops = NULL;
      F->nsops = F->capsops = 0;
    }
  }
  for (size_t i = 0; i < R->nf; i++)
    for (size_t k = 0; k < R->f[i].npartners; k++) R->f[R->f[i].partners[k]].ok = R->f[i].ok;

  /* the threads' figures, then the records kept in the set (copies, communicator events) */
  struct tworker all = {0};
  for (unsigned k = 0; k < R->nw; k++) {
    struct tworker *W = &R->w[k];
    th_merge(&R->h, &W->h);
    R->nonpos += W->nonpos;
    if (W->any) {
      see_time(&all, W->lo);
      see_time(&all, W->hi);
    }
  }
  const struct trace_sel *s = &R->sel;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    bool ok = f->read_index < R->nf && R->f[f->read_index].ok;
    for (size_t k = 0; k < f->nxfers; k++) {
      const struct cs_xfer_rec *x = &f->xfers[k];
      int64_t t = x->timing == CSD_TIMING_GPU_EVENT && x->start_ns > 0 ? x->start_ns : x->enqueue_ns;
      see_time(&all, x->start_ns > 0 ? x->start_ns : x->enqueue_ns);
      if (!ok || s->has_comm || s->has_seq) continue;
      if (t > 0)
        th_add(&R->h, t, 1);
      else
        R->nonpos++;
    }
    for (size_t k = 0; k < f->ncomms; k++) {
      const struct cs_comm_rec *c = &f->comms[k];
      see_time(&all, c->t_ns);
      if (!ok || (s->has_comm && c->comm != s->comm)) continue;
      if (c->t_ns > 0)
        th_add(&R->h, c->t_ns, 1);
      else
        R->nonpos++;
    }
  }
  R->start = all.any ? all.lo : 0;
  R->end = all.any ? all.hi : 0;
  return true;
}

uint64_t trace_count(const struct trace_run *R) {
  if (!R->sel.has_time) return R->h.total + R->nonpos;
  return th_count(&R->h, R->sel.from_ns, R->sel.to_ns);
}

void trace_run_free(struct trace_run *R) {
  for (size_t i = 0; i < R->nf; i++) {
    struct tfile *F = &R->f[i];
    free(F->name);
    free(F->streams);
    free(F->sops);
    free(F->keys);
    free(F->dup);
    free(F->partners);
    free(F->flows);
  }
  free(R->f);
  for (unsigned k = 0; k < R->nw; k++) th_free(&R->w[k].h);
  free(R->w);
  th_free(&R->h);
  cs_walk_free(R->walk);
  cs_dumpset_free(R->set);
  memset(R, 0, sizeof *R);
}
