/* tools/report/balance_summary.c: the balance section's input from COLLSCOPE_RECORD=summary
 * files (docs/always-on.md): each (communicator, rank)'s last "gaps" line
 * (stats/summary_gaps.c) becomes the member tools/report/report_balance.c would have gathered
 * from every op line of the full recording; the windows' op lines, a part of the job, are
 * set aside. Send/Recv members are left out (a pipeline's stages need every instance: the
 * schedule is built from op lines). */
#include "report_agg_internal.h"
#include "report_balance_internal.h"

#include <stdlib.h>
#include <string.h>

#include "dump/dumpfile.h"
#include "xalloc.h"

static void forget(struct report_balance *b) {
  struct bal_member *m, *mt;
  HASH_ITER(hh, b->members, m, mt) {
    HASH_DEL(b->members, m);
    free(m->long_gap);
    free(m);
  }
  struct bal_comm *c, *ct;
  HASH_ITER(hh, b->comms, c, ct) {
    HASH_DEL(b->comms, c);
    free(c);
  }
}

/* a list of the line into a member's gaps (us) or ends (ns) at index (first + i) mod BAL_PMAX;
 * false when malformed or not k values */
static bool fill(const char *s, size_t k, size_t first, double *gap, int64_t *end) {
  int64_t v[BAL_PMAX];
  if (cs_gaps_list(s, v, BAL_PMAX) != (int)k) return false;
  for (size_t i = 0; i < k; i++) {
    if (gap) gap[(first + i) % BAL_PMAX] = (double)v[i] / 1e3;
    if (end) end[(first + i) % BAL_PMAX] = v[i];
  }
  return true;
}

static bool member_of(struct bal_member *e, const struct cs_dumpfile *f, const struct cs_gaps_rec *g) {
  memset(e, 0, sizeof *e);
  e->k.comm = g->comm;
  e->k.comm_rank = g->comm_rank;
  e->rank = f->hdr.rank;
  e->host = f->hdr.host;
  e->file = f->read_index;
  e->n = (size_t)g->ops;
  e->untimed = (size_t)g->untimed;
  e->coll_reduce = g->reduce;
  e->p2p = g->p2p;
  e->periodic = g->periodic;
  e->cum_gap = g->gap_us;
  size_t k = e->n < BAL_PMAX ? e->n : BAL_PMAX;
  return g->ops == (uint64_t)e->n && g->untimed <= g->ops && fill(g->head_gap, k, 0, e->head_gap, NULL) &&
         fill(g->head_end, k, 0, NULL, e->head_end) && fill(g->ring_gap, k, e->n - k, e->ring_gap, NULL) &&
         fill(g->ring_end, k, e->n - k, NULL, e->ring_end);
}

struct seq_hash { /* a member's or a communicator's (op, bytes) sequence hash */
  struct bal_key k;
  uint64_t hash;
  UT_hash_handle hh;
};

static struct seq_hash *hash_at(struct seq_hash **t, uint64_t comm, int comm_rank) {
  struct bal_key k;
  memset(&k, 0, sizeof k);
  k.comm = comm;
  k.comm_rank = comm_rank;
  struct seq_hash *h;
  HASH_FIND(hh, *t, &k, sizeof k, h);
  if (!h) {
    h = xcalloc(1, sizeof *h);
    h->k = k;
    HASH_ADD(hh, *t, k, sizeof h->k, h);
  }
  return h;
}

static void hashes_free(struct seq_hash **t) {
  struct seq_hash *h, *ht;
  HASH_ITER(hh, *t, h, ht) {
    HASH_DEL(*t, h);
    free(h);
  }
}

/* the file's ops per communicator as its summary lines count them: a gaps line claiming more
 * is not taken (a file's own counts bound what it says of its compute) */
static void count_ops(struct seq_hash **t, const struct cs_dumpfile *f) {
  hashes_free(t);
  for (size_t j = 0; j < f->nsummaries; j++) {
    struct seq_hash *h = hash_at(t, f->summaries[j].comm, -1);
    uint64_t c = f->summaries[j].count;
    h->hash = c > UINT64_MAX - h->hash ? UINT64_MAX : h->hash + c;
  }
}

void agg_balance_from_gaps(struct report_agg_priv *P, const struct cs_dumpset *set) {
  struct report_balance *b = P->agg->balance;
  size_t ngaps = 0;
  for (size_t i = 0; i < set->nfiles; i++) ngaps += set->files[i].ngaps;
  if (!b || !ngaps) return;
  forget(b);
  struct seq_hash *members = NULL, *comms = NULL, *counted = NULL;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (f->ngaps) count_ops(&counted, f);
    for (size_t j = 0; j < f->ngaps; j++) {
      const struct cs_gaps_rec *g = &f->gaps[j];
      struct bal_member tmp;
      if (g->p2p || g->comm_rank < 0 || !g->ops || g->ops > hash_at(&counted, g->comm, -1)->hash ||
          !member_of(&tmp, f, g))
        continue; /* hostile, more ops than the file counted, or a pipeline's */
      struct bal_member *e;
      HASH_FIND(hh, b->members, &tmp.k, sizeof tmp.k, e);
      if (!e) {
        e = xcalloc(1, sizeof *e);
        *e = tmp;
        HASH_ADD(hh, b->members, k, sizeof e->k, e);
      } else if (tmp.n >= e->n) { /* a later line of the same member: its figures go further */
        UT_hash_handle hh = e->hh;
        *e = tmp;
        e->hh = hh;
      } else {
        continue;
      }
      hash_at(&members, g->comm, g->comm_rank)->hash = g->ops_hash;
    }
  }
  /* per communicator: its instances, and whether every member ran the same (op, bytes) in
   * every instance (the same sequence hash) */
  struct bal_member *m, *mt;
  HASH_ITER(hh, b->members, m, mt) {
    struct bal_comm *c;
    HASH_FIND(hh, b->comms, &m->k.comm, sizeof m->k.comm, c);
    uint64_t h = hash_at(&members, m->k.comm, m->k.comm_rank)->hash;
    struct seq_hash *ch = hash_at(&comms, m->k.comm, -1);
    if (!c) {
      c = xcalloc(1, sizeof *c);
      c->comm = m->k.comm;
      c->same_size = true;
      ch->hash = h;
      HASH_ADD(hh, b->comms, comm, sizeof c->comm, c);
    }
    if (m->n > c->instances) c->instances = m->n;
    if (h != ch->hash) c->same_size = false;
  }
  hashes_free(&members);
  hashes_free(&comms);
  hashes_free(&counted);
}
