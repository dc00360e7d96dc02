/* analysis/detect_group.c: a group's members as one collective instance for the detector
 * (cs_det_group_merge, include/collscope/detect.h). Inside ncclGroupStart/End NCCL launches the
 * group's ops on a stream as one fused launch, so one span brackets them all: the members of
 * one group on one communicator are one instance, under the first member's seq (a well-formed
 * program issues the same members in the same order on every rank, so that seq is the same
 * on every rank), never one instance per member timed with the whole group's span. */
#include <stdlib.h>
#include <string.h>

#include "collscope/detect.h"

static int str_cmp(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

static bool grouped(const struct cs_det_op *o) { return o->group != 0 && o->group_ops > 1 && o->seq >= 0; }

static int cmp_member(const void *pa, const void *pb, void *ctx) {
  const struct cs_det_op *v = ctx, *a = &v[*(const size_t *)pa], *b = &v[*(const size_t *)pb];
  int c = str_cmp(a->host, b->host);
  if (c) return c;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}
static bool same_group(const struct cs_det_op *a, const struct cs_det_op *b) {
  return !str_cmp(a->host, b->host) && a->rank == b->rank && a->comm == b->comm && a->group == b->group;
}
/* a member's state folded into the group's: failed, pending, entered, untimed, done */
static int state_rank(int s) {
  switch (s) {
  case CS_DET_FAILED: return 4;
  case CS_DET_PENDING: return 3;
  case CS_DET_ENTERED: return 2;
  case CS_DET_UNTIMED: return 1;
  default: return 0;
  }
}

size_t cs_det_group_merge(struct cs_det_op *ops, size_t n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) m += grouped(&ops[i]);
  if (m < 2) return 0;
  size_t *idx = malloc(m * sizeof *idx);
  if (!idx) return 0; /* left as they are: one instance per member */
  m = 0;
  for (size_t i = 0; i < n; i++)
    if (grouped(&ops[i])) idx[m++] = i;
  qsort_r(idx, m, sizeof *idx, cmp_member, ops);
  size_t folded = 0;
  for (size_t a = 0; a < m;) {
    size_t b = a + 1;
    while (b < m && same_group(&ops[idx[a]], &ops[idx[b]])) b++;
    struct cs_det_op *g = &ops[idx[a]];
    struct cs_det_a2a aa;
    memset(&aa, 0, sizeof aa);
    uint64_t bytes = 0;
    bool p2p = true;
    int st = g->state;
    int64_t last = g->seq;
    for (size_t k = a; k < b; k++) {
      const struct cs_det_op *o = &ops[idx[k]];
      cs_det_a2a_add(&aa, o->p2p, o->recv, o->peer, o->comm_size, o->bytes);
      bytes += o->bytes;
      p2p &= o->p2p;
      if (state_rank(o->state) > state_rank(st)) st = o->state;
      if (o->seq > last) last = o->seq;
      if (k == a) continue;
      if (o->start_ns && (!g->start_ns || o->start_ns < g->start_ns)) g->start_ns = o->start_ns;
      if (o->end_ns > g->end_ns) g->end_ns = o->end_ns;
      if (o->enqueue_ns && (!g->enqueue_ns || o->enqueue_ns < g->enqueue_ns)) g->enqueue_ns = o->enqueue_ns;
    }
    bool a2a = b - a > 1 && cs_det_a2a_collective(&aa, g->comm_size, g->comm_rank);
    g->state = st;
    g->last_seq = last;
    g->p2p = p2p && !a2a;
    g->bytes = a2a ? aa.send_bytes : bytes;
    for (size_t k = a + 1; k < b; k++) ops[idx[k]].seq = -1, folded++;
    a = b;
  }
  free(idx);
  return folded;
}
