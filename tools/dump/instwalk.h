/* tools/dump/instwalk.h: walks collective instances (comm, seq) in seq order across many dump
 * files that are read a piece at a time: per communicator a k-way merge of the files'
 * record queues (DESIGN.md "Reading dumps").
 *
 * Each file's records of one communicator come in seq order but for a few (the shim writes
 * them in seq order, holding finished ops behind a pending one up to a bound; older versions
 * wrote a timed op after the sampled-out ops that finished while its events were pending,
 * and an op pending past the bound still comes late). Each queue is kept in seq
 * order, and an instance is complete when every file that takes part in the communicator (it
 * had a record of it) and is not finished has a record 16 seqs later queued (REORDER_SEQS:
 * the records of an instance then follow from the records, not from the files' order), so
 * only the records between the slowest and the fastest file, plus 16 seqs, are held: memory
 * is bounded by files x (the reading chunk + 16), not by the records of the set.
 * While fewer files have shown up in a communicator than its records' comm_size (at most the
 * number of files), its instances also wait for the files that are not finished and not yet
 * in it: a comm created mid-job reaches each file's reading position in a different round.
 * That wait ends at 65,536 queued records of the comm (a comm_size claiming more ranks than
 * ever write to it). A record whose seq is at or below an instance already given out (a file
 * out of order, or one that shows up in the communicator later than that) is counted in
 * cs_walk_late() and dropped. */
#ifndef COLLSCOPE_TOOLS_INSTWALK_H
#define COLLSCOPE_TOOLS_INSTWALK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/detect.h"

/* an op record as the per-instance analyses (stragglers, SDC, instance counts) need it: the
 * detector's op (include/collscope/detect.h) as its first part, named as a whole (`det`: handed
 * to the detector as it is) and field by field (comm_rank: the record's own), then the rest */
struct cs_walk_rec {
  union {
    struct cs_det_op det;
    struct {
      CS_DET_OP_FIELDS
    };
  };
  int op, root, status;
  int rec_rank; /* the record's own "rank" (rank: the file's when that is -1) */
  uint32_t file;
  bool counts; /* passes the report's --op filter */
  const char *op_name, *dtype, *redop;
  int64_t count;
  unsigned sdc_checked; /* as recorded (also on a failed call) */
  uint64_t sdc_fp;
  double sdc_in_sum, sdc_in_abs, sdc_out_sum;
};

/* one instance: its members sorted by comm_rank, then file, then file order */
typedef void (*cs_walk_emit)(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n);

struct cs_walk;
struct cs_walk *cs_walk_new(size_t nfiles, cs_walk_emit emit, void *ctx); /* NULL: out of memory */
/* a record of file (seq >= 0), in the file's order; false out of memory */
bool cs_walk_push(struct cs_walk *w, const struct cs_walk_rec *r);
/* the file takes part in comm (its "comm" record, before its ops): the comm's instances
 * then wait for this file's records; false out of memory */
bool cs_walk_join(struct cs_walk *w, uint32_t file, uint64_t comm);
/* the file has no more records */
void cs_walk_file_done(struct cs_walk *w, uint32_t file);
/* give out every complete instance; at the end (all files done) that is all of them */
bool cs_walk_advance(struct cs_walk *w);
size_t cs_walk_late(const struct cs_walk *w);
size_t cs_walk_held(const struct cs_walk *w); /* records queued now */
void cs_walk_free(struct cs_walk *w);

#endif
