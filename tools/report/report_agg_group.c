/* tools/report/report_agg_group.c: the report's group rows. Inside ncclGroupStart/End NCCL fuses
 * the group's ops into one launch per stream, so the shim brackets each stream's part of a
 * group with one CUDA event pair and every member carries that span (its record's group_ops:
 * how many share it). Such a member has no time of its own: its op row counts it (grouped),
 * and one row per (group signature: its ops, comm size, total bytes) gets the group's bytes
 * over the group's span, busbw from each member's bus factor (sum of bytes x factor over the
 * span). So nccl-tests' -m N (N ops of size S in one group; src/common.cu BenchTime divides
 * the time by iters x agg_iters) and this row give the same busbw for size S. A group of only
 * Send/Recv on one communicator with one Send and one Recv per peer is an AlltoAll of its Send
 * bytes with nccl-tests' alltoall factor (n-1)/n (src/alltoall.cu AlltoAllGetBw), as PyTorch's
 * all_to_all_single issues it. Members are gathered per file (one rank) on its reading thread;
 * at most AGG_OPEN_GROUPS groups are open per file. */
#include "report_agg_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <uthash.h>

#include "collscope/schema.h"
#include "xalloc.h"

/* the signatures: interned once per process, so a row key holds a pointer; bounded */
#define SIG_MAX 4096
struct sig_ent {
  UT_hash_handle hh;
  char s[];
};
static struct sig_ent *sigs;
static size_t nsigs;
static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *sig_intern(const char *s) {
  pthread_mutex_lock(&sig_lock);
  struct sig_ent *e;
  HASH_FIND_STR(sigs, s, e);
  if (!e && nsigs >= SIG_MAX) s = "group"; /* every further kind under one name */
  if (!e) HASH_FIND_STR(sigs, s, e);
  if (!e) {
    size_t n = strlen(s) + 1;
    e = xcalloc(1, sizeof *e + n);
    memcpy(e->s, s, n);
    HASH_ADD_STR(sigs, s, e);
    nsigs++;
  }
  pthread_mutex_unlock(&sig_lock);
  return e->s;
}

static int bucket_of(uint64_t bytes) { return bytes ? 63 - __builtin_clzll(bytes) : -1; }

/* "AllReduce x4", "AllReduce x2+Broadcast x1" (schema order), "AlltoAll" */
static const char *signature(const struct gunit *u, bool a2a) {
  if (a2a) return sig_intern("AlltoAll");
  char b[512];
  size_t n = 0;
  b[0] = 0;
  for (int i = 0; i <= CS_OP_COUNT && n < sizeof b - 64; i++) {
    if (!u->nop[i]) continue;
    int w = snprintf(b + n, sizeof b - n, "%s%s x%u", n ? "+" : "", i < CS_OP_COUNT ? cs_op_table[i].name : "other",
                     u->nop[i]);
    if (w > 0) n += (size_t)w;
  }
  return sig_intern(b);
}

static void emit(struct report_agg_priv *P, struct worker *W, struct gunit *u) {
  if (!u->used) return;
  u->used = false;
  bool a2a = u->one_comm && u->seen > 1 && cs_det_a2a_ok(&u->a2a, u->comm_size, u->comm_rank);
  uint64_t bytes = a2a ? u->a2a.send_bytes : u->bytes;
  double fbytes = a2a ? (double)bytes * cs_busbw_factor(CS_OP_AlltoAll, u->comm_size) : u->fbytes;
  struct row_key k;
  memset(&k, 0, sizeof k);
  k.op_name = signature(u, a2a);
  k.comm_size = u->comm_size;
  k.bucket = bucket_of(bytes);
  k.model = u->model;
  k.group_ops = u->seen;
  struct agg_row *r = &agg_row_find(W, &k, k.op_name, a2a ? CS_OP_AlltoAll : -1, bytes)->r;
  r->count++;
  if (bytes < r->bytes_min) r->bytes_min = bytes;
  if (bytes > r->bytes_max) r->bytes_max = bytes;
  agg_row_size(r, bytes, 1);
  r->fbytes += fbytes;
  r->gbytes += (double)bytes;
  /* timed: every member of the group was, and all of them are here */
  if (u->all_timed && u->seen == u->expect && u->end_ns > u->start_ns)
    agg_row_dur(P, r, (double)(u->end_ns - u->start_ns) / 1e3);
}

void agg_group_member(struct report_agg_priv *P, struct worker *W, struct fstate *F, const struct cs_dumpfile *f,
                      const struct cs_op_rec *o) {
  struct gunit *u = NULL, *free_slot = NULL, *oldest = NULL;
  for (size_t i = 0; i < AGG_OPEN_GROUPS; i++) {
    struct gunit *g = &F->groups[i];
    if (!g->used) {
      if (!free_slot) free_slot = g;
      continue;
    }
    if (g->group == o->group && g->stream == o->stream) {
      u = g;
      break;
    }
    if (!oldest || g->age < oldest->age) oldest = g;
  }
  if (!u) {
    if (!free_slot) { /* too many open at once: the oldest as it is */
      emit(P, W, oldest);
      free_slot = oldest;
    }
    u = free_slot;
    memset(u, 0, sizeof *u);
    u->used = true;
    u->group = o->group;
    u->stream = o->stream;
    u->expect = o->group_ops;
    u->age = ++F->gage;
    u->all_timed = true;
    u->one_comm = true;
    u->comm = o->comm;
    u->comm_rank = o->comm_rank;
    u->start_ns = o->start_ns;
    u->end_ns = o->end_ns;
    if (P->agg->by_model) u->model = f->hdr.gpu_name && *f->hdr.gpu_name ? f->hdr.gpu_name : "unknown";
  }
  u->seen++;
  u->all_timed &= o->timing == CSD_TIMING_GPU_EVENT;
  u->one_comm &= o->comm == u->comm;
  if (o->comm_size > u->comm_size) u->comm_size = o->comm_size;
  if (o->start_ns && (!u->start_ns || o->start_ns < u->start_ns)) u->start_ns = o->start_ns;
  if (o->end_ns > u->end_ns) u->end_ns = o->end_ns;
  u->bytes += o->bytes;
  u->fbytes += (double)o->bytes * (o->op >= 0 ? cs_busbw_factor((enum cs_op)o->op, o->comm_size) : 1.0);
  u->nop[o->op >= 0 && o->op < CS_OP_COUNT ? o->op : CS_OP_COUNT]++;
  bool p2p = o->op >= 0 && o->op < CS_OP_COUNT && cs_op_table[o->op].cls == CS_CLASS_P2P;
  cs_det_a2a_add(&u->a2a, p2p, o->op == CS_OP_Recv, o->peer, o->comm_size, o->bytes);
  if (u->seen >= u->expect) emit(P, W, u);
}

void agg_group_file_done(struct report_agg_priv *P, struct fstate *F) {
  for (size_t i = 0; i < AGG_OPEN_GROUPS; i++) emit(P, &P->w[0], &F->groups[i]);
}
