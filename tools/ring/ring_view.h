/* tools/ring/ring_view.h: a stats ring as `collscope top` and `collscope salvage` see it. The
 * ring is opened through the checked reader (analysis/ring_reader.c: owner, name, sizes), its records
 * are copied out, and every string that came from the file is made printable before any
 * CLI output uses it. */
#ifndef COLLSCOPE_TOOLS_RING_VIEW_H
#define COLLSCOPE_TOOLS_RING_VIEW_H
#include <stdio.h>

#include "collscope/detect.h"
#include "collscope/ring.h"

#define RING_TEXT_MAX (4 * 128 + 1) /* a 128-byte field with every byte escaped as \xHH */

struct ring_view {
  struct cs_ring_reader rd;
  struct cs_record *recs; /* up to the ring's capacity (bounded by the file's size) */
  size_t nrecs;
  char job_id[128];         /* the header's job, as in the ring's name */
  char host[RING_TEXT_MAX]; /* printable copies (ring_text_escape) */
  char job[RING_TEXT_MAX];
  char path[4 * 512 + 1]; /* printable copy of the ring's path */
};

/* Open PATH and copy its records. On failure writes one line "collscope CMD: skipping PATH:
 * why" to ERR (when not NULL) and returns -1. */
int ring_view_load(struct ring_view *v, const char *path, const char *cmd, FILE *err);
void ring_view_free(struct ring_view *v);

/* SRC (up to srclen bytes or a NUL) into DST as printable ASCII: a byte outside 0x20..0x7e,
 * and the backslash, become \xHH. DST is always terminated (truncated at a whole escape). */
void ring_text_escape(char *dst, size_t dstlen, const char *src, size_t srclen);
/* S as a JSON string literal: '"' and '\\' escaped, every byte outside 0x20..0x7e as \u00XX
 * (a byte read as Latin-1), so the line is valid JSON and valid UTF-8 whatever S holds. */
void ring_json_string(FILE *o, const char *s);

/* Whether op record R carries a GPU-timed span that an honest writer could have produced
 * (profiler or CUDA events, start > 0, end >= start, end and duration far from overflow). */
bool ring_rec_timed(const struct cs_record *r);
/* Op record R of rank RANK on HOST as the detector's op (top's and the exporter's detector
 * input): identity, times, bytes and state (failed, done when timed, entered when its
 * events were sampled out, untimed otherwise). */
void ring_det_op(struct cs_det_op *d, const struct cs_record *r, int rank, const char *host);

/* salvage's dump writer (tools/cmd_salvage.c): V's records as dump-file lines (header, comm,
 * op, xfer, hang, drops), every string JSON-escaped. Returns the number of op records. */
size_t salvage_write_dump(FILE *o, const struct ring_view *v);

#endif
