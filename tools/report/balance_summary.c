/* tools/report/balance_summary.c: the balance section's input from COLLSCOPE_RECORD=summary
 * files (docs/always-on.md): each (communicator, rank)'s last "gaps" line
 * (stats/summary_gaps.c) becomes the member tools/report/report_balance.c would have gathered
 * from every op line of the full recording; the windows' op lines, a part of the job, are
 * set aside. The pipeline schedule (analysis/schedule.c) is built from the same lines: each
 * member's peers and Send/Recv counts, summed by the writer (cs_sched_summed), and the
 * collective members' last ops as instances of the stage comparison
 * (tools/report/balance_summary_stage.c). */
#include "report_agg_internal.h"
#include "report_balance_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/schedule.h"
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
  if (!(g->ops == (uint64_t)e->n && g->untimed <= g->ops && fill(g->head_gap, k, 0, e->head_gap, NULL) &&
        fill(g->head_end, k, 0, NULL, e->head_end) && fill(g->ring_gap, k, e->n - k, e->ring_gap, NULL) &&
        fill(g->ring_end, k, e->n - k, NULL, e->ring_end)))
    return false;
  if (!g->p2p) return true;
  /* a Send/Recv member: its running compute over the last BAL_RING ops (report_balance.c
   * member_add's long_gap), the first value whole, then what each op added */
  size_t kl = e->n < BAL_RING ? e->n : BAL_RING;
  int64_t *v = xcalloc(BAL_RING, sizeof *v);
  bool ok = g->sends <= g->ops && g->recvs <= g->ops - g->sends && cs_gaps_list(g->long_gap, v, BAL_RING) == (int)kl;
  if (ok) {
    e->long_gap = xcalloc(BAL_RING, sizeof *e->long_gap);
    int64_t sum = 0;
    for (size_t i = 0; i < kl; i++) {
      ok &= v[i] >= 0 || i == 0;
      sum = v[i] > INT64_MAX - sum ? INT64_MAX : sum + v[i];
      e->long_gap[(e->n - kl + i) % BAL_RING] = (double)sum / 1e3;
    }
  }
  free(v);
  return ok;
}

/* a member's line as the pipeline schedule's figures (include/collscope/schedule.h); false
 * when its peer lists are malformed */
static bool sched_sum(struct cs_sched_sum *o, const struct bal_member *e, const struct cs_gaps_rec *g) {
  memset(o, 0, sizeof *o);
  o->comm_rank = e->k.comm_rank;
  o->rank = e->rank;
  o->host = e->host;
  o->p2p = g->p2p;
  o->last_seq = (int64_t)e->n - 1;
  if (!g->p2p) { /* a collective: its compute gaps (a cross-stage straggler's figures) */
    o->gap_sum = e->cum_gap;
    o->gap_n = e->n - e->untimed;
    size_t k = e->n < BAL_PMAX ? e->n : BAL_PMAX; /* its span: its first and last timed op's end */
    for (size_t i = 0; i < k && !o->first_ns; i++) o->first_ns = e->head_end[i] > 0 ? e->head_end[i] : 0;
    o->last_ns = e->n && e->ring_end[(e->n - 1) % BAL_PMAX] > 0 ? e->ring_end[(e->n - 1) % BAL_PMAX] : 0;
    return true;
  }
  int64_t p[2], b[2], got[2];
  int np = cs_gaps_list(g->peers, p, 2);
  if (np < 0 || cs_gaps_list(g->sent_before, b, 2) != np || cs_gaps_list(g->got, got, 2) != np) return false;
  o->first_send = g->first_send;
  o->peer_over = g->peer_over;
  o->npeers = np;
  o->sends = g->sends;
  o->recvs = g->recvs;
  for (int i = 0; i < np; i++) {
    if (p[i] < 0 || p[i] > INT32_MAX || b[i] < 0 || (uint64_t)b[i] > g->sends || got[i] < 0 || got[i] > 1) return false;
    o->peer[i] = (int)p[i];
    o->before[i] = (uint64_t)b[i];
    o->got[i] = got[i] == 1;
  }
  return true;
}

struct seq_hash { /* a member's or a communicator's (op, bytes) sequence hash */
  struct bal_key k;
  uint64_t hash;
  const struct cs_gaps_rec *g; /* a member's line */
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
      memset(&tmp, 0, sizeof tmp);
      if (g->comm_rank < 0 || !g->ops || g->ops > hash_at(&counted, g->comm, -1)->hash || !member_of(&tmp, f, g)) {
        free(tmp.long_gap);
        P->agg->gaps_refused++;
        continue; /* hostile, or more ops than the file counted */
      }
      struct bal_member *e;
      HASH_FIND(hh, b->members, &tmp.k, sizeof tmp.k, e);
      if (!e) {
        e = xcalloc(1, sizeof *e);
        *e = tmp;
        HASH_ADD(hh, b->members, k, sizeof e->k, e);
      } else if (tmp.n >= e->n) { /* a later line of the same member: its figures go further */
        UT_hash_handle hh = e->hh;
        free(e->long_gap);
        *e = tmp;
        e->hh = hh;
      } else {
        free(tmp.long_gap);
        continue;
      }
      struct seq_hash *h = hash_at(&members, g->comm, g->comm_rank);
      h->hash = g->ops_hash;
      h->g = g;
    }
  }
  /* per communicator: its instances, and whether every member ran the same (op, bytes) in
   * every instance (the same sequence hash) */
  /* the pipeline schedule from the same members: the one the report judges with
   * (report_balance_schedule), the windows' instances set aside */
  cs_sched_free(b->sum_sched);
  b->sum_sched = cs_sched_new();
  struct bal_gaps_ref *coll = xcalloc(HASH_COUNT(b->members) + 1, sizeof *coll);
  size_t ncoll = 0;
  struct bal_member *m, *mt;
  HASH_ITER(hh, b->members, m, mt) {
    struct cs_sched_sum o;
    const struct cs_gaps_rec *g = hash_at(&members, m->k.comm, m->k.comm_rank)->g;
    bool sum_ok = g && sched_sum(&o, m, g);
    P->agg->gaps_sched_refused += g && !sum_ok;
    if (g && sum_ok && !g->p2p) coll[ncoll++] = (struct bal_gaps_ref){m, g};
    if (b->sum_sched && sum_ok && cs_sched_summed(b->sum_sched, m->k.comm, &o) < 0) {
      fputs("collscope report: pipeline schedule out of memory: stages unknown\n", stderr);
      cs_sched_free(b->sum_sched);
      b->sum_sched = NULL;
    }
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
  /* the stage comparison over the instances the collective members' last ops give */
  long refused = bal_summary_stage(b->sum_sched, coll, ncoll);
  if (refused < 0) {
    fputs("collscope report: pipeline schedule out of memory: stages unknown\n", stderr);
    cs_sched_free(b->sum_sched);
    b->sum_sched = NULL;
  } else {
    P->agg->gaps_sched_refused += (size_t)refused;
  }
  free(coll);
  hashes_free(&members);
  hashes_free(&comms);
  hashes_free(&counted);
}
