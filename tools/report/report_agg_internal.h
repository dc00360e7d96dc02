/* tools/report/report_agg_internal.h: what the report aggregation's files share (report_agg*.c): the
 * reading threads' tables, the per-file state, the aggregation's private state, and the calls
 * between the per-record tables, the walk of instances and the final merge. */
#ifndef COLLSCOPE_REPORT_AGG_INTERNAL_H
#define COLLSCOPE_REPORT_AGG_INTERNAL_H

#include "report_agg.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uthash.h>

#include "collscope/compute_gap.h"
#include "collscope/detect.h"
#include "collscope/schema.h"
#include "collscope/sdc.h"
#include "dump/instwalk.h"
#include "xalloc.h"

struct row_key {
  const char *op_name;
  int comm_size, bucket;
  const char *model; /* --by-model: the file's GPU model (interned), else NULL */
  size_t group_ops;  /* a group row: its ops (report_agg_group.c), 0 for an op row */
};

/* one rank's group being gathered from its file (report_agg_group.c): the members that share
 * one GPU span (same group id and stream), complete when group_ops of them are seen */
#define AGG_OPEN_GROUPS 8 /* per file; one more emits the oldest as it is (untimed) */
struct gunit {
  bool used;
  int64_t group;
  uint64_t stream, expect, seen, age;
  int64_t start_ns, end_ns;
  bool all_timed, one_comm;
  uint64_t comm, bytes;
  double fbytes;
  int comm_size, comm_rank;
  uint32_t nop[CS_OP_COUNT + 1]; /* members per op (schema order), the last: other names */
  struct cs_det_a2a a2a;
  const char *model;
};
struct row_ent {
  struct row_key k;
  struct agg_row r;
  UT_hash_handle hh;
};
struct comm_ent {
  uint64_t comm;
  struct agg_comm c;
  UT_hash_handle hh;
};
struct crank_key {
  uint64_t comm;
  int comm_rank;
};
struct crank_ent {
  struct crank_key k;
  UT_hash_handle hh;
};
struct inst_ent {
  uint64_t comm;
  size_t n;
  UT_hash_handle hh;
};
/* The detector sees a communicator's ranks renumbered 0..n-1 over the ranks that have records
 * (as cli_detect_dumpset does): its memory follows the ranks seen, never a comm_size or
 * comm_rank a record claims. Numbers are given in order of first appearance. */
struct dense_key {
  uint64_t comm;
  int real;
};
struct dense_ent {
  struct dense_key k;
  int dense;
  UT_hash_handle hh;
};
struct dense_comm {
  uint64_t comm;
  int declared;
  int *real;
  size_t n, cap;
  UT_hash_handle hh;
};

/* A group on one communicator, gathered from its members' instances (report_agg_walk.c): each
 * dense rank's members folded into one, fed to the detector as ONE instance under the first
 * member's seq when an instance of another group (or none) comes on the communicator. */
struct gmem {
  bool in;
  uint64_t group;
  int comm_rank, comm_size; /* the record's own */
  bool p2p_all;
  uint64_t bytes;
  struct cs_det_a2a a2a;
  struct cs_det_op d;
};
struct gpend {
  uint64_t comm;
  bool open, counted;
  int64_t seq;
  struct gmem *v;
  size_t cap;
  UT_hash_handle hh;
};

struct worker { /* one reading thread's tables */
  struct row_ent *rows;
  struct comm_ent *comms;
  struct crank_ent *cranks;
  struct agg_counts counts;
  bool matched;
  size_t window_ops; /* op lines of flight-recorder windows (COLLSCOPE_RECORD=summary) */
};

struct fstate { /* one file's state across rounds */
  struct cs_walk_rec *buf;
  size_t n, cap; /* this round's records (seq >= 0) */
  struct cs_walk_rec *pbuf;
  size_t pn, pcap; /* the last round's, walked while this one is read */
  bool walked_done;
  /* the worker's table entries this file used last (most records repeat a few): valid while
   * the same worker reads the file (cw = worker + 1) */
  unsigned cw;
  struct comm_ent *cc[2];
  struct crank_ent *cr[2];
  struct cs_gap_tracker gaps; /* the process's compute gaps (zeroed: none yet) */
  struct gunit groups[AGG_OPEN_GROUPS];
  uint64_t gage;
};

struct report_agg_priv {
  struct report_agg *agg;
  struct worker *w;
  unsigned nw;
  struct fstate *fs;
  size_t nf;
  struct cs_walk *walk;
  struct cs_det_stream *det;
  struct inst_ent *inst; /* instances per comm (with a member passing the filter) */
  struct cs_sdc_member *mem;
  size_t memcap;
  struct cs_det_op *dm;
  size_t dmcap;
  struct dense_ent *dense;
  struct dense_comm *dcomms;
  struct gpend *gpend; /* groups being gathered, per comm */
  bool oom;
  /* the walk of the last round's records runs on its own thread while the next is read */
  pthread_t bg;
  bool bg_on;
  bool *pdone; /* per file: its last records are in pbuf */
};

/* the detector's dense comm_rank numbering (report_agg_walk.c) */
struct dense_comm *agg_dense_comm_of(struct report_agg_priv *P, uint64_t comm);
int agg_dense_of(struct report_agg_priv *P, struct dense_comm *c, int real, int declared);
int agg_real_of(struct report_agg_priv *P, uint64_t comm, int dense);
int agg_declared_of(struct report_agg_priv *P, uint64_t comm, int size);

/* groups' rows (report_agg_group.c): a member of a group that shares its span, on the reading
 * thread; the file's open groups emitted when it is done (between rounds) */
void agg_group_member(struct report_agg_priv *P, struct worker *W, struct fstate *F, const struct cs_dumpfile *f,
                      const struct cs_op_rec *o);
void agg_group_file_done(struct report_agg_priv *P, struct fstate *F);
struct row_ent *agg_row_find(struct worker *W, const struct row_key *k, const char *op_name, int op, uint64_t bytes);
void agg_row_dur(struct report_agg_priv *P, struct agg_row *r, double v);

/* per record, on the reading threads (report_agg_record.c) */
void agg_row_pour(struct report_agg_priv *P, struct agg_row *r);
void agg_row_size(struct agg_row *r, uint64_t v, size_t n);
/* COLLSCOPE_RECORD=summary's summary lines into worker 0's tables (report_agg_summary.c) */
void agg_summaries(struct report_agg_priv *P, const struct cs_dumpset *set);
/* the balance section's members from the files' "gaps" lines, in place of what the walk gave
 * it (tools/report/balance_summary.c); nothing when no file has one */
void agg_balance_from_gaps(struct report_agg_priv *P, const struct cs_dumpset *set);
/* the stage comparison's instances from the collective members' lines (each its line's
 * member, tools/report/balance_summary_stage.c): the members whose lists were refused, or -1
 * out of memory */
struct bal_member;
struct cs_gaps_rec;
struct cs_sched;
struct bal_gaps_ref {
  const struct bal_member *m;
  const struct cs_gaps_rec *g;
};
long bal_summary_stage(struct cs_sched *s, const struct bal_gaps_ref *v, size_t n);
void agg_on_op(void *ctx, unsigned worker, size_t file, const struct cs_dumpfile *f, const struct cs_op_rec *o);

/* per instance and round, the walk thread (report_agg_walk.c) */
void agg_on_instance(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n);
void agg_on_round(void *ctx, const bool *done, size_t nfiles);
void agg_walk_join(struct report_agg_priv *P);
/* the groups still being gathered into the detector (the walk is over), and their memory */
void agg_groups_flush(struct report_agg_priv *P);
void agg_groups_free(struct report_agg_priv *P);

#endif
