/* tools/dump/dump_salvage.c: a salvage file (collscope salvage, *.salvage.jsonl) next to its
 * process's own dump (same host and pid) is merged into that dump; records already in the
 * dump are counted once. Part of the reader (tools/dump/dumpfile.h). */
#include <stdlib.h>
#include <string.h>

#include "dump_internal.h"
#include "xalloc.h"

/* A record's identity within one process: ops by (comm, seq) (seq counts every call per
 * communicator), unnumbered ops, xfers and comm events by their times and ids. */
struct rec_key {
  uint64_t kind, a, b, c;
};
static int cmp_key(const void *x, const void *y) {
  const struct rec_key *p = x, *q = y;
  if (p->kind != q->kind) return p->kind < q->kind ? -1 : 1;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return p->c < q->c ? -1 : p->c > q->c;
}
static struct rec_key op_key(const struct cs_op_rec *o) {
  if (o->seq >= 0) return (struct rec_key){0, o->comm, (uint64_t)o->seq, 0};
  return (struct rec_key){1, o->comm, (uint64_t)o->enqueue_ns, (uint64_t)o->op};
}
static struct rec_key xfer_key(const struct cs_xfer_rec *x) {
  return (struct rec_key){2, (uint64_t)x->enqueue_ns, x->stream, x->bytes};
}
static struct rec_key comm_key(const struct cs_comm_rec *c) {
  return (struct rec_key){3, c->comm, (uint64_t)c->t_ns, (uint64_t)(uintptr_t)c->event};
}
static struct rec_key hang_key(const struct cs_hang_rec *h) {
  return (struct rec_key){4, h->comm, (uint64_t)h->seq, 0};
}
static bool have_key(const struct rec_key *v, size_t n, struct rec_key k) {
  return n && bsearch(&k, v, n, sizeof *v, cmp_key) != NULL;
}

/* Moves the records of salvage file s that dump file d lacks into d; s is then empty. */
static void merge_salvage(struct cs_dumpfile *d, struct cs_dumpfile *s) {
  size_t n = d->nops + d->nxfers + d->ncomms + d->nhangs, k = 0;
  struct rec_key *v = xrealloc(NULL, (n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < d->nops; i++) v[k++] = op_key(&d->ops[i]);
  for (size_t i = 0; i < d->nxfers; i++) v[k++] = xfer_key(&d->xfers[i]);
  for (size_t i = 0; i < d->ncomms; i++) v[k++] = comm_key(&d->comms[i]);
  for (size_t i = 0; i < d->nhangs; i++) v[k++] = hang_key(&d->hangs[i]);
  if (n) qsort(v, n, sizeof *v, cmp_key);
#define MERGE(arr, cnt, cap, keyf) \
  for (size_t i = 0; i < s->cnt; i++) { \
    if (have_key(v, n, keyf(&s->arr[i]))) { \
      d->dup_salvage++; \
      continue; \
    } \
    dump_grow((void **)&d->arr, &d->cap, d->cnt, sizeof *d->arr); \
    d->arr[d->cnt++] = s->arr[i]; \
    d->merged_salvage++; \
  }
  MERGE(ops, nops, op_cap, op_key)
  MERGE(xfers, nxfers, xfer_cap, xfer_key)
  MERGE(comms, ncomms, comm_cap, comm_key)
  MERGE(hangs, nhangs, hang_cap, hang_key)
#undef MERGE
  d->truncated_lines += s->truncated_lines;
  d->malformed_lines += s->malformed_lines;
  d->unknown_types += s->unknown_types;
  d->lines += s->lines;
  free(v);
}

static bool is_salvage(const struct cs_dumpfile *f) {
  size_t l = strlen(f->name);
  return f->hdr.salvaged || (l > 14 && strcmp(f->name + l - 14, ".salvage.jsonl") == 0);
}

/* Each salvage file whose process (host, pid) also left its own dump is merged into it. */
void dump_merge_salvaged(struct cs_dumpset *set) {
  size_t w = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    struct cs_dumpfile *s = &set->files[i];
    struct cs_dumpfile *d = NULL;
    if (is_salvage(s) && s->hdr.pid > 0)
      for (size_t j = 0; j < set->nfiles && !d; j++) {
        struct cs_dumpfile *c = &set->files[j];
        if (c->path && !is_salvage(c) && c->hdr.pid == s->hdr.pid && c->hdr.host == s->hdr.host) d = c;
      }
    if (d) {
      merge_salvage(d, s);
      dump_free_file(s);
      s->path = NULL; /* gone: its records live in d */
    }
  }
  for (size_t i = 0; i < set->nfiles; i++)
    if (set->files[i].path) set->files[w++] = set->files[i];
  set->nfiles = w;
}

/* a salvage file whose process also left its own dump (merge_salvaged's pairs) */
bool dump_salvage_pairs(const struct cs_dumpset *set, const struct freader *fr) {
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *s = &set->files[i];
    if (fr[i].excluded || !is_salvage(s) || s->hdr.pid <= 0) continue;
    for (size_t j = 0; j < set->nfiles; j++) {
      const struct cs_dumpfile *c = &set->files[j];
      if (!fr[j].excluded && !is_salvage(c) && c->hdr.pid == s->hdr.pid && c->hdr.host == s->hdr.host) return true;
    }
  }
  return false;
}
