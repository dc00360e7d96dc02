/* tools/dump/instwalk.c: per-communicator k-way merge of the files' record queues (instwalk.h). */
#include "instwalk.h"

#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <uthash.h>

/* the record's fields named one by one are its detector part's (one field list, two names) */
_Static_assert(offsetof(struct cs_walk_rec, comm) == offsetof(struct cs_walk_rec, det.comm), "det");
_Static_assert(offsetof(struct cs_walk_rec, gap_us) == offsetof(struct cs_walk_rec, det.gap_us), "det");

struct queue { /* one file's queued records of one comm: a ring */
  struct cs_walk_rec *v;
  size_t head, n, cap;
  uint32_t file;
};
struct wcomm {
  uint64_t comm;
  struct queue *q;
  size_t nq, capq;
  bool emitted;     /* last_seq is valid */
  int64_t last_seq; /* the last instance given out */
  size_t expect;    /* files the comm should have: its largest comm_size, at most nf */
  size_t held;      /* its records queued now */
};
/* where a file's records of a comm go: (file, comm) -> the comm's index and its queue's */
struct slot_key {
  uint64_t comm;
  uint32_t file;
};
struct fileslot {
  struct slot_key k;
  size_t comm, queue;
  UT_hash_handle hh;
};
struct wfile {
  struct fileslot *last; /* the slot used last (most records repeat it) */
  bool done;
};
struct comm_slot {
  uint64_t comm;
  size_t index;
  UT_hash_handle hh;
};
struct cs_walk {
  struct wcomm *c;
  size_t nc, capc;
  struct fileslot *slots;  /* hash of (file, comm) */
  struct comm_slot *comms; /* hash of comm -> index in c */
  struct wfile *f;
  size_t nf;
  cs_walk_emit emit;
  void *ctx;
  struct cs_walk_rec *m;
  size_t capm; /* members of the instance being given out */
  size_t late, held;
  size_t ndone; /* files finished */
};

/* A communicator's records queued while it waits for files that have not shown up in it yet
 * (a comm created mid-job reaches each file's reading position in a different round). Past
 * this many the oldest instance is given out anyway: a comm_size that claims more ranks than
 * ever write records must not make the walker hold the whole comm. */
#define WAIT_HOLD_CAP 65536u

/* How far out of seq order a file's records of one communicator may come and still join
 * their instance. The shim writes them in seq order (stats/harvest.c holds a comm's finished
 * ops behind a pending one, up to 1,024); dumps of older versions wrote a timed op after the
 * sampled-out ops enqueued after it that finished while its events were pending. A queue
 * is kept in seq order, and an instance waits until every open file in the communicator has
 * a record REORDER_SEQS seqs past it queued: which records make an instance is then a
 * function of the records, not of their order in the files. Memory: REORDER_SEQS more
 * instances per communicator held. */
#define REORDER_SEQS 16
/* at most this many queued records are moved to put one in order (a file whose records come
 * backwards must not make each push walk its whole queue) */
#define REORDER_MOVES (4 * REORDER_SEQS)

struct cs_walk *cs_walk_new(size_t nfiles, cs_walk_emit emit, void *ctx) {
  struct cs_walk *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->f = calloc(nfiles ? nfiles : 1, sizeof *w->f);
  if (!w->f) {
    free(w);
    return NULL;
  }
  w->nf = nfiles;
  w->emit = emit;
  w->ctx = ctx;
  return w;
}

static bool grow(void **v, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return true;
  size_t nc = *cap ? 2 * *cap : 8;
  void *p = realloc(*v, nc * sz);
  if (!p) return false;
  *v = p;
  *cap = nc;
  return true;
}

/* the queue of (file, comm), created on first use */
static struct queue *queue_of(struct cs_walk *w, uint32_t file, uint64_t comm, struct wcomm **cp) {
  struct wfile *f = &w->f[file];
  struct fileslot *fs = f->last;
  if (!fs || fs->k.comm != comm) {
    struct slot_key k;
    memset(&k, 0, sizeof k);
    k.comm = comm;
    k.file = file;
    HASH_FIND(hh, w->slots, &k, sizeof k, fs);
    if (!fs) {
      struct comm_slot *cs;
      HASH_FIND(hh, w->comms, &comm, sizeof comm, cs);
      if (!cs) {
        if (!grow((void **)&w->c, &w->capc, w->nc, sizeof *w->c) || !(cs = calloc(1, sizeof *cs))) return NULL;
        memset(&w->c[w->nc], 0, sizeof w->c[0]);
        w->c[w->nc].comm = comm;
        cs->comm = comm;
        cs->index = w->nc++;
        HASH_ADD(hh, w->comms, comm, sizeof comm, cs);
      }
      struct wcomm *c = &w->c[cs->index];
      if (!grow((void **)&c->q, &c->capq, c->nq, sizeof *c->q) || !(fs = calloc(1, sizeof *fs))) return NULL;
      memset(&c->q[c->nq], 0, sizeof c->q[0]);
      c->q[c->nq].file = file;
      fs->k = k;
      fs->comm = cs->index;
      fs->queue = c->nq++;
      HASH_ADD(hh, w->slots, k, sizeof k, fs);
    }
    f->last = fs;
  }
  *cp = &w->c[fs->comm];
  return &(*cp)->q[fs->queue];
}

bool cs_walk_push(struct cs_walk *w, const struct cs_walk_rec *r) {
  if (r->file >= w->nf || r->seq < 0) return true;
  struct wcomm *c;
  struct queue *q = queue_of(w, r->file, r->comm, &c);
  if (!q) return false;
  if (c->emitted && r->seq <= c->last_seq) {
    w->late++;
    return true;
  }
  if (q->n == q->cap) {                  /* grow the ring, unrolled to start at 0 */
    size_t nc = q->cap ? 2 * q->cap : 4; /* a power of two; small: a file may be in many comms */
    struct cs_walk_rec *v = malloc(nc * sizeof *v);
    if (!v) return false;
    for (size_t i = 0; i < q->n; i++) v[i] = q->v[(q->head + i) & (q->cap - 1)];
    free(q->v);
    q->v = v;
    q->head = 0;
    q->cap = nc;
  }
  /* into seq order (stable; cap is a power of two); a record further out of order than the
   * shim writes is late */
  size_t mask = q->cap - 1, j = q->n;
  while (j > 0 && q->n - j < REORDER_MOVES && q->v[(q->head + j - 1) & mask].seq > r->seq) j--;
  if (j > 0 && q->v[(q->head + j - 1) & mask].seq > r->seq) {
    w->late++;
    return true;
  }
  for (size_t k = q->n; k > j; k--) q->v[(q->head + k) & mask] = q->v[(q->head + k - 1) & mask];
  q->v[(q->head + j) & mask] = *r;
  q->n++;
  w->held++;
  c->held++;
  if (r->comm_size > 0 && (size_t)r->comm_size > c->expect)
    c->expect = (size_t)r->comm_size < w->nf ? (size_t)r->comm_size : w->nf;
  return true;
}

bool cs_walk_join(struct cs_walk *w, uint32_t file, uint64_t comm) {
  struct wcomm *c;
  return file >= w->nf || queue_of(w, file, comm, &c) != NULL;
}

void cs_walk_file_done(struct cs_walk *w, uint32_t file) {
  if (file < w->nf && !w->f[file].done) {
    w->f[file].done = true;
    w->ndone++;
  }
}

static int cmp_member(const void *a, const void *b) {
  const struct cs_walk_rec *x = a, *y = b;
  if (x->comm_rank != y->comm_rank) return x->comm_rank < y->comm_rank ? -1 : 1;
  return x->file < y->file ? -1 : x->file > y->file;
}

static bool advance_comm(struct cs_walk *w, struct wcomm *c) {
  for (;;) {
    bool any = false;
    int64_t min = 0;
    for (size_t i = 0; i < c->nq; i++) {
      struct queue *q = &c->q[i];
      if (!q->n) {
        if (!w->f[q->file].done) return true; /* that file may still have the next seq */
        continue;
      }
      int64_t s = q->v[q->head].seq;
      if (!any || s < min) min = s, any = true;
    }
    if (!any) return true;
    for (size_t i = 0; i < c->nq; i++) { /* an open file may still bring a record of min */
      const struct queue *q = &c->q[i];
      if (!w->f[q->file].done && (uint64_t)(q->v[(q->head + q->n - 1) & (q->cap - 1)].seq - min) < REORDER_SEQS)
        return true;
    }
    if (c->nq < c->expect && c->held < WAIT_HOLD_CAP) {
      /* fewer files than its comm_size have shown up: wait while a file that is not in the
       * comm yet may still bring its first record of it */
      size_t open_in = 0;
      for (size_t i = 0; i < c->nq; i++) open_in += !w->f[c->q[i].file].done;
      if (w->nf - w->ndone > open_in) return true;
    }
    size_t n = 0;
    for (size_t i = 0; i < c->nq; i++) {
      struct queue *q = &c->q[i];
      while (q->n && q->v[q->head].seq == min) {
        if (!grow((void **)&w->m, &w->capm, n, sizeof *w->m)) return false;
        w->m[n++] = q->v[q->head];
        q->head = (q->head + 1) & (q->cap - 1);
        q->n--;
        w->held--;
        c->held--;
      }
    }
    /* stable for one file's records of the same rank: qsort is not, so order by file
     * position too (members of one file are contiguous and already in order) */
    for (size_t i = 1; i < n; i++) { /* insertion sort: n is a comm's size, nearly sorted */
      struct cs_walk_rec t = w->m[i];
      size_t j = i;
      while (j > 0 && cmp_member(&w->m[j - 1], &t) > 0) {
        w->m[j] = w->m[j - 1];
        j--;
      }
      w->m[j] = t;
    }
    c->emitted = true;
    c->last_seq = min;
    w->emit(w->ctx, c->comm, min, w->m, n);
  }
}

bool cs_walk_advance(struct cs_walk *w) {
  for (size_t i = 0; i < w->nc; i++)
    if (!advance_comm(w, &w->c[i])) return false;
  return true;
}

size_t cs_walk_late(const struct cs_walk *w) { return w->late; }
size_t cs_walk_held(const struct cs_walk *w) { return w->held; }

void cs_walk_free(struct cs_walk *w) {
  if (!w) return;
  for (size_t i = 0; i < w->nc; i++) {
    for (size_t k = 0; k < w->c[i].nq; k++) free(w->c[i].q[k].v);
    free(w->c[i].q);
  }
  struct fileslot *fs, *ft;
  HASH_ITER(hh, w->slots, fs, ft) {
    HASH_DEL(w->slots, fs);
    free(fs);
  }
  struct comm_slot *cs, *ct;
  HASH_ITER(hh, w->comms, cs, ct) {
    HASH_DEL(w->comms, cs);
    free(cs);
  }
  free(w->c);
  free(w->f);
  free(w->m);
  free(w);
}
