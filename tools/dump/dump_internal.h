/* tools/dump/dump_internal.h: what the dump reader's files share; the commands use dumpfile.h.
 *   dumpfile.c       the set: files found, read (whole or streamed), finished, freed
 *   dump_reader.c    one file (struct freader): lines, pieces, messages, footer counts
 *   dump_records.c   one line's JSON object into one record (struct lctx)
 *   dump_jobs.c      one job per set
 *   dump_salvage.c   a salvage file merged into its process's dump
 *   dump_instances.c collective instances of a loaded set
 *   dump_strings.c   growable arrays, interned strings (and the fast path's cache of them), the
 *                    set's messages, printable text */
#ifndef COLLSCOPE_TOOLS_DUMP_INTERNAL_H
#define COLLSCOPE_TOOLS_DUMP_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "dumpfile.h"
#include "opscan.h"

/* ---------- dump_strings.c ---------- */

/* Grow *v (element size sz, capacity *cap) so that index n is valid. */
void dump_grow(void **v, size_t *cap, size_t n, size_t sz);
struct cs_strpool *dump_pool_new(void);
void dump_pool_free(struct cs_strpool *p);
/* the interned copy of s[0..len) (s need not be NUL-terminated); of s */
const char *dump_intern_n(struct cs_strpool *p, const char *s, size_t len);
const char *dump_intern(struct cs_strpool *p, const char *s);
/* a message in the set's list (at most CS_DUMP_MAX_ERRORS kept, the rest counted) */
__attribute__((format(printf, 2, 3))) void dump_add_error(struct cs_dumpset *set, const char *fmt, ...);
/* a record's "timing" string as enum csd_timing */
enum csd_timing dump_timing_from_name(const char *s);
/* A few recent strings of one field, so the fast path interns without the pool's lock. */
#define ICACHE_N 8
struct icache {
  struct {
    const char *s;
    size_t n;
    int op;
    enum csd_timing timing;
  } e[ICACHE_N];
  unsigned next;
};
/* the interned string of a field (an op line's slice, opscan.h) through the reader's cache c (no
 * lock on a hit); *op and *tm (when not NULL): the string as enum cs_op and enum csd_timing */
const char *dump_cached(struct cs_strpool *pool, struct icache *c, struct cs_slice v, int *op, enum csd_timing *tm);

static inline int dump_clamp_int(long long v) {
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN
                                                   : (int)v;
}

/* ---------- dump_records.c: typed field access with "first error wins" ---------- */

struct lctx {
  struct cs_dumpset *set;
  struct cs_dumpfile *f;
  json_t *obj;
  const char *type; /* record type, for messages */
  char err[256];    /* first problem found in this line */
  bool bad;
};
__attribute__((format(printf, 2, 3))) void dump_fail(struct lctx *c, const char *fmt, ...);
/* per-record parsers: false (with c->err) when malformed */
bool dump_parse_header(struct lctx *c, struct cs_header *h);
bool dump_parse_op(struct lctx *c, struct cs_op_rec *r);
bool dump_parse_xfer(struct lctx *c, struct cs_xfer_rec *r);
bool dump_parse_comm(struct lctx *c, struct cs_comm_rec *r);
bool dump_parse_hang(struct lctx *c, struct cs_hang_rec *r);
bool dump_parse_link(struct lctx *c, struct cs_link_rec *r);
bool dump_parse_drops(struct lctx *c, uint64_t *count);
bool dump_parse_footer(struct lctx *c, struct cs_dumpfile *f);
bool dump_parse_summary(struct lctx *c, struct cs_summary_rec *r);
bool dump_parse_gaps(struct lctx *c, struct cs_gaps_rec *r);
bool dump_parse_window(struct lctx *c, struct cs_window_rec *r);
/* a "health" record (hooks/health.c) appended to fr's file, its IB ports too; malformed: c->bad */
struct freader;
void dump_parse_health(struct lctx *c, struct freader *fr, size_t lineno);

/* ---------- dump_zstd.c: a file's bytes, plain or zstd frames ---------- */

#include <zstd.h>
#define DUMP_ZSTD_WINDOW_LOG 21  /* the largest decoder window: 2 MiB (the writer's frames: <= 1 MiB) */
#define DUMP_ZSTD_IN (32u << 10) /* the input buffer while a frame is read */
enum { DUMP_SRC_UNKNOWN,
       DUMP_SRC_PLAIN,
       DUMP_SRC_ZSTD };
struct dump_src {
  int fd, kind;
  /* zstd: the frame being read [frame_off, frame_end), its bytes in[in_pos..in_len) at in_off */
  bool in_frame;
  uint64_t frame_off, frame_end, in_off;
  ZSTD_DCtx *dc;
  unsigned char *in;
  size_t in_len, in_pos;
  /* losses: a torn last frame (not read), frames that did not decode (skipped) */
  uint64_t torn_frames, torn_bytes, bad_frames, bad_bytes;
  char bad_what[160]; /* the first bad frame */
};
void dump_src_init(struct dump_src *s, int fd);
/* up to n bytes of the file's text: > 0, 0 at its end, -1 on an I/O error (errno) */
ssize_t dump_src_read(struct dump_src *s, char *buf, size_t n);
/* between pieces: frees the decoder unless a frame is half read */
void dump_src_idle(struct dump_src *s);
void dump_src_close(struct dump_src *s); /* the fd stays open */
/* back to the file's start (its first frame), nothing kept */
void dump_src_rewind(struct dump_src *s);

/* ---------- dump_reader.c: one file's reader ---------- */

/* Reading one file: its line counter and header state, its errors (moved to the set in
 * file order once every file is read, so the order does not depend on the threads), and
 * where its op records go. */
struct freader {
  struct cs_dumpset *set;
  struct cs_dumpfile *f;
  size_t index; /* in the set, before the final sort */
  size_t lineno;
  bool ok, have_header, first_op_rank_set;
  int first_op_rank;
  char **errors;
  size_t nerrors, errors_cap;
  const struct cs_stream_ops *sink; /* NULL: ops are kept in f->ops */
  unsigned worker;
  struct icache c_op, c_dtype, c_redop, c_timing, c_site;
  /* streaming: the file's read buffer */
  int fd;
  struct dump_src src;
  char *buf;
  size_t blen, bcap;
  bool eof, skipping; /* skipping: inside a line longer than the buffer */
  bool header_only;   /* the stream's first round: line 1 only */
  bool excluded;      /* another job's file: not read further */
  size_t ops_seen, errors_omitted;
  bool summary_mode; /* a "window" or "summary" line was read: op lines are window detail */
  size_t reread;     /* text bytes to skip: read once before the source was rewound */
};

/* Starts reading file f (index in the set, before the final sort): its name-derived identity. */
void dump_rd_start(struct freader *fr, struct cs_dumpset *set, struct cs_dumpfile *f, size_t index);
/* Reads the whole file. Returns false when it is unusable as a whole (I/O error, unsupported
 * schema); the message is in fr's errors. */
bool dump_load_file(struct freader *fr);
/* Streaming: the file's next piece (about `chunk` bytes) through the reading thread's buffer
 * buf (wcap bytes: chunk + CS_DUMP_LINE_MAX + 2); in the header round line 1 only. */
void dump_rd_piece(struct freader *fr, size_t chunk, char *buf, size_t wcap);
/* Closes a file that will not be read further (another job's). */
void dump_rd_drop(struct freader *fr);
/* Moves fr's messages to the set (in file order once every file is read). */
void dump_rd_flush_errors(struct freader *fr);

/* ---------- dump_jobs.c ---------- */

/* Keeps the files of `job` (NULL: the only job found). Returns false (message added) when the
 * set holds several jobs and none was picked, or the picked one is absent. */
bool dump_select_job(struct cs_dumpset *set, const char *job);
/* dump_select_job()'s choice made on the headers, before the records are read: the files it
 * will leave out are marked excluded (all when it will refuse the set). */
void dump_mark_job(struct cs_dumpset *set, struct freader *fr, const char *job);

/* ---------- dump_salvage.c ---------- */

/* Each salvage file whose process (host, pid) also left its own dump is merged into it. */
void dump_merge_salvaged(struct cs_dumpset *set);
/* whether some salvage file has such a pair (the stream then loads the set whole) */
bool dump_salvage_pairs(const struct cs_dumpset *set, const struct freader *fr);

/* ---------- dumpfile.c ---------- */

void dump_free_file(struct cs_dumpfile *f);

#endif
