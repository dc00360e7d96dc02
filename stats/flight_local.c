/* stats/flight_local.c: the local trigger of the flight recorder (stats/flight_local.h,
 * docs/always-on.md): what one process sees of a straggler or a slow link in its own records.
 * A straggler makes its peers wait inside the collective, so their GPU durations grow by its
 * lateness; a slow link lengthens every member's. Each key keeps blocks of CS_LOCAL_BLOCK
 * durations; a completed block's least and median are judged against the minima and medians
 * of the CS_LOCAL_BLOCKS blocks before it, so the cost per record is a store, and a sort of 8 once a block. The
 * table is static (no allocation); a key past its capacity is not judged. */
#include "flight_local.h"

#include <string.h>

#include "collscope/schema.h"

struct lkey {
  bool used, armed;
  int op;
  uint64_t comm, bytes;
  unsigned n, nb, next; /* durations in cur; blocks held; the slot of the next block */
  unsigned streak;      /* departing blocks in a row */
  int64_t cur[CS_LOCAL_BLOCK];
  int64_t bmin[CS_LOCAL_BLOCKS], bmed[CS_LOCAL_BLOCKS];
};

static struct lkey keys[CS_LOCAL_KEYS];

void cs_local_reset(void) { memset(keys, 0, sizeof keys); }

size_t cs_local_mem(void) { return sizeof keys; }

static struct lkey *find(const struct cs_record *r) {
  uint64_t h = r->comm_id * 0x9e3779b97f4a7c15ULL ^ r->bytes * 0xff51afd7ed558ccdULL ^ r->op;
  h ^= h >> 31;
  for (unsigned i = 0; i < CS_LOCAL_KEYS; i++) {
    struct lkey *k = &keys[(h + i) % CS_LOCAL_KEYS];
    if (!k->used) {
      k->used = k->armed = true;
      k->op = r->op;
      k->comm = r->comm_id;
      k->bytes = r->bytes;
      return k;
    }
    if (k->comm == r->comm_id && k->bytes == r->bytes && k->op == r->op) return k;
  }
  return NULL;
}

static int64_t median(int64_t *v) { /* sorts v (CS_LOCAL_BLOCK values) */
  for (int i = 1; i < CS_LOCAL_BLOCK; i++) {
    int64_t x = v[i];
    int j = i - 1;
    for (; j >= 0 && v[j] > x; j--) v[j + 1] = v[j];
    v[j + 1] = x;
  }
  return (v[CS_LOCAL_BLOCK / 2 - 1] + v[CS_LOCAL_BLOCK / 2]) / 2;
}

static bool past(int64_t diff, int64_t base) {
  return diff > CS_LOCAL_ABS_NS && diff * 100 > base * CS_LOCAL_REL_PCT;
}

bool cs_local_add(const struct cs_record *r, struct cs_local_change *c) {
  /* collectives timed on the GPU alone: a Send/Recv waits for one peer, a group member shares
   * its group's span */
  if (r->type != CS_REC_OP || r->status != 0 || r->timing != CS_TIMING_GPU_EVENT || r->op >= CS_OP_COUNT ||
      cs_op_table[r->op].cls != CS_CLASS_COLL || (r->group != 0 && r->group_ops > 1) || r->end_ns <= r->start_ns)
    return false;
  struct lkey *k = find(r);
  if (!k) return false;
  k->cur[k->n++] = r->end_ns - r->start_ns;
  if (k->n < CS_LOCAL_BLOCK) return false;
  k->n = 0;
  int64_t med = median(k->cur), floor = 0, least_med = 0;
  for (unsigned i = 0; i < k->nb; i++) {
    if (!i || k->bmin[i] < floor) floor = k->bmin[i];
    if (!i || k->bmed[i] < least_med) least_med = k->bmed[i];
  }
  /* longer: even the block's least duration (the instance that waited least) is past the
   * floor, so a key whose instances differ by design (the first of each step, say) does not
   * depart by its spread; shorter: its median under every median of the blocks before */
  bool longer = k->nb && past(k->cur[0] - floor, floor);
  bool shorter = k->nb && past(least_med - med, least_med);
  /* a departure lasting CS_LOCAL_STREAK blocks fires once; a block within the margins re-arms */
  k->streak = longer || shorter ? k->streak + 1 : 0;
  bool fire = k->streak >= CS_LOCAL_STREAK && k->armed;
  if (fire) k->armed = false;
  if (!k->streak) k->armed = true;
  if (fire) {
    c->base_ns = longer ? floor : least_med;
    c->recent_ns = longer ? k->cur[0] : med;
    c->longer = longer;
  }
  if (k->streak && k->armed) return false; /* a departure building up stays out of its baseline */
  k->bmin[k->next] = k->cur[0];            /* sorted: the least first */
  k->bmed[k->next] = med;
  k->next = (k->next + 1) % CS_LOCAL_BLOCKS;
  if (k->nb < CS_LOCAL_BLOCKS) k->nb++;
  return fire;
}
