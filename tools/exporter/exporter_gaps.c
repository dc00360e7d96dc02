/* tools/exporter/exporter_gaps.c: a rank's collectives' compute gaps kept across the exporter's
 * analyses (exporter_gaps.h). The gaps are taken as tools/ring/ring_sched.c takes them over a
 * window: in the ring's order, failed ops skipped, an untimed op breaking its stream's sum. */
#include "exporter_gaps.h"

#include <string.h>

#include "collscope/schema.h"
#include "ring/ring_view.h"

static void keep(struct exp_gaps *g, const struct cs_record *r, double gap_us) {
  struct exp_gap_comm *c = NULL;
  for (size_t i = 0; i < g->ncomms; i++)
    if (g->c[i].comm == r->comm_id) c = &g->c[i];
  if (!c) {
    if (g->ncomms == EXP_GAP_COMMS) {
      g->untracked++;
      return;
    }
    c = &g->c[g->ncomms++];
    memset(c, 0, sizeof *c);
    c->comm = r->comm_id;
    c->comm_rank = r->comm_rank;
  }
  if (c->comm_rank != r->comm_rank) return; /* not this rank's communicator as first seen */
  c->e[c->next].seq = (int64_t)r->seq;
  c->e[c->next].gap_us = (float)gap_us;
  c->next = (c->next + 1) % EXP_GAP_INST;
  if (c->n < EXP_GAP_INST) c->n++;
}

void exp_gaps_fold(struct exp_gaps *g, struct cs_ring_reader *rd, struct cs_record *buf, size_t cap) {
  for (;;) {
    uint64_t lost = rd->lost;
    size_t got = cs_ring_read(rd, buf, cap);
    if (rd->lost != lost) {
      cs_gap_reset(&g->t);
      g->breaks++;
    }
    for (size_t i = 0; i < got; i++) {
      const struct cs_record *r = &buf[i];
      if (r->type != CS_REC_OP || r->op >= CS_OP_COUNT || r->seq > (uint64_t)INT64_MAX || r->comm_rank < 0 ||
          r->status != 0 || r->timing == CS_TIMING_ERROR)
        continue;
      double gap = -1;
      if (ring_rec_timed(r))
        gap = cs_gap_timed(&g->t, r->comm_id, r->stream, r->start_ns, r->end_ns);
      else
        cs_gap_untimed(&g->t, r->stream);
      if (cs_op_table[r->op].cls != CS_CLASS_P2P && r->comm_size > 1) keep(g, r, gap);
    }
    if (got < cap) return;
  }
}

size_t exp_gaps_count(const struct exp_gaps *g) {
  size_t n = 0;
  for (size_t i = 0; i < g->ncomms; i++) n += g->c[i].n;
  return n;
}

size_t exp_gaps_put(const struct exp_gaps *g, int rank, const char *host, struct ring_sched_gap *out) {
  size_t k = 0;
  for (size_t i = 0; i < g->ncomms; i++) {
    const struct exp_gap_comm *c = &g->c[i];
    for (size_t j = 0; j < c->n; j++)
      out[k++] = (struct ring_sched_gap){c->comm, c->e[j].seq, c->comm_rank, rank, host, c->e[j].gap_us};
  }
  return k;
}
