/* stats/flight_local.c: the local trigger of the flight recorder (stats/flight_local.h,
 * docs/always-on.md): what one process sees of a straggler or a slow link in its own records.
 * A straggler makes its peers wait inside the collective, so their GPU durations grow by its
 * lateness; a slow link lengthens every member's. Each key keeps blocks of CS_LOCAL_BLOCK
 * durations; a completed block's least and mean are judged against the minima and means of
 * the CS_LOCAL_BLOCKS blocks before it, so the cost per record is a compare and an add, and
 * two passes over 8 values once a block. The
 * table is static (no allocation); a key past its capacity is not judged, and counted (the
 * footer's local_unkeyed). */
#include "flight_local.h"

#include <string.h>

#include "collscope/schema.h"

struct lkey {
  bool used, armed, judged;
  int op;
  uint64_t comm, bytes;
  unsigned n, nb, next; /* durations in the block; blocks held; the slot of the next block */
  unsigned streak;      /* departing blocks in a row */
  int64_t least, sum;   /* the block's least and sum so far */
  int64_t bmin[CS_LOCAL_BLOCKS], bmean[CS_LOCAL_BLOCKS];
};

static struct lkey keys[CS_LOCAL_KEYS];
static uint64_t unkeyed;

void cs_local_reset(void) {
  memset(keys, 0, sizeof keys);
  unkeyed = 0;
  cs_local_fired.pending = false;
}

size_t cs_local_mem(void) { return sizeof keys; }

uint64_t cs_local_unkeyed(void) { return unkeyed; }

static struct lkey *find(const struct cs_record *r) {
  /* the product's top 6 bits: the slot (CS_LOCAL_KEYS 64) */
  uint64_t h = (r->comm_id ^ r->bytes ^ r->op) * 0x9e3779b97f4a7c15ULL >> 58;
  for (unsigned i = 0; i < CS_LOCAL_KEYS; i++) {
    struct lkey *k = &keys[(h + i) % CS_LOCAL_KEYS];
    if (!k->used) {
      k->used = k->armed = true;
      /* a Send/Recv waits for one peer, not for every member: never judged */
      k->judged = r->op < CS_OP_COUNT && cs_op_table[r->op].cls == CS_CLASS_COLL;
      k->op = r->op;
      k->comm = r->comm_id;
      k->bytes = r->bytes;
      return k;
    }
    if (k->comm == r->comm_id && k->bytes == r->bytes && k->op == r->op) return k;
  }
  return NULL;
}

struct cs_local_change cs_local_fired;

/* diff past the margins times m */
static bool past(int64_t diff, int64_t base, int64_t m) {
  return diff > CS_LOCAL_ABS_NS * m && diff * 100 > base * CS_LOCAL_REL_PCT * m;
}

void cs_local_add(const struct cs_record *r, int64_t d) {
  /* collectives timed alone (not a group member), not failed */
  if (r->status != 0 || d <= 0 || !cs_cfg.flight_local) return;
  struct lkey *k = find(r);
  if (!k) {
    bool coll = r->op < CS_OP_COUNT && cs_op_table[r->op].cls == CS_CLASS_COLL;
    unkeyed += coll; /* a Send/Recv is never judged: not lost */
    return;
  }
  if (!k->judged) return;
  if (!k->n || d < k->least) k->least = d;
  k->sum += d;
  if (++k->n < CS_LOCAL_BLOCK) return;
  int64_t least = k->least, mean = k->sum / CS_LOCAL_BLOCK, floor = k->bmin[0], least_mean = k->bmean[0];
  k->n = 0;
  k->sum = 0;
  for (unsigned i = 1; i < k->nb; i++) { /* nb 0: the values are unused */
    if (k->bmin[i] < floor) floor = k->bmin[i];
    if (k->bmean[i] < least_mean) least_mean = k->bmean[i];
  }
  /* longer: even the block's least duration (the instance that waited least) is past the
   * floor, so a key whose instances differ by design (the first of each step, say) does not
   * depart by its spread; shorter: its mean under every mean of the blocks before */
  bool longer = k->nb && past(least - floor, floor, 1);
  bool shorter = k->nb && past(least_mean - mean, least_mean, 1);
  /* a departure lasting CS_LOCAL_STREAK blocks, or one block CS_LOCAL_JUMP times past the
   * margins, fires once; a block within the margins re-arms */
  bool jump = longer && past(least - floor, floor, CS_LOCAL_JUMP);
  k->streak = longer || shorter ? k->streak + 1 : 0;
  bool fire = (k->streak >= CS_LOCAL_STREAK || jump) && k->armed;
  if (fire) k->armed = false;
  if (!k->streak) k->armed = true;
  if (fire) {
    cs_local_fired.base_ns = longer ? floor : least_mean;
    cs_local_fired.recent_ns = longer ? least : mean;
    cs_local_fired.longer = longer;
    cs_local_fired.pending = true;
  }
  if (k->streak && k->armed) return; /* a departure building up stays out of its baseline */
  k->bmin[k->next] = least;
  k->bmean[k->next] = mean;
  k->next = (k->next + 1) % CS_LOCAL_BLOCKS;
  if (k->nb < CS_LOCAL_BLOCKS) k->nb++;
}
