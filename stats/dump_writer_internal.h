/* stats/dump_writer_internal.h: what the dump writer's two files share. stats/dump_writer.c owns
 * the file and its line buffer (open, flush, cut back after a failed write, continuation
 * files, the accounting of what was written or lost): a sink of whole lines that calls
 * nothing back. stats/dump_writer_records.c formats each record kind into one JSON line of that
 * buffer, and decides from the writer's counts what else to write (a "drops" line). */
#ifndef COLLSCOPE_DUMP_INTERNAL_H
#define COLLSCOPE_DUMP_INTERNAL_H
#include "dump_writer.h"
#include <string.h>

#define DUMP_BUF_CAP (1u << 20)
/* a line starts only with this much room left; a longer line is dropped (and counted) */
#define DUMP_LINE_ROOM (64u << 10)
/* COLLSCOPE_COMPRESS=zstd: a frame holds at most this many bytes of lines (one longer line
 * alone), so a reader's decoder window is small (tools/dump/dump_zstd.c) */
#define DUMP_FRAME_MAX (64u << 10)

enum line_kind { LINE_HEADER,
                 LINE_OP,
                 LINE_XFER,
                 LINE_RECORD,
                 LINE_DROPS,
                 LINE_FOOTER };

/* the buffer of whole lines not yet written, and the line being formatted at its end */
struct dump_line_buf {
  char *buf;
  size_t len;
  size_t line_start;  /* where the line being formatted starts */
  bool line_overflow; /* it ran out of room */
  bool header_done;   /* the header is in the buffer or on the file */
};
extern struct dump_line_buf cs_dump_lb;

static inline void put(const char *s, size_t n) {
  if (CS_UNLIKELY(cs_dump_lb.len + n > DUMP_BUF_CAP)) { /* only a line longer than DUMP_LINE_ROOM gets here */
    cs_dump_lb.line_overflow = true;
    return;
  }
  memcpy(cs_dump_lb.buf + cs_dump_lb.len, s, n);
  cs_dump_lb.len += n;
}
/* string literals: length known at compile time */
#define PUTL(lit) put(lit, sizeof(lit) - 1)

/* the file is open (records are written) */
bool cs_dump_active(void);
/* Every line is formatted between line_begin and line_end, so the buffer only ever holds
 * whole lines when it is written. drops_count: the drops a LINE_DROPS line covers. */
void cs_dump_line_begin(void);
void cs_dump_line_end(enum line_kind kind, uint64_t drops_count);

/* the footer's counts: records on the file or buffered, and those lost to write errors or
 * to the byte budget (COLLSCOPE_BUDGET) */
struct dump_counts {
  uint64_t ops, xfers;   /* op / xfer records written or buffered */
  uint64_t write_drops;  /* records lost to write errors */
  uint64_t ops_lost;     /* op records among them */
  uint64_t drops_noted;  /* drops covered by "drops" lines buffered or on the file */
  uint64_t budget_drops; /* op and xfer records not written: the budget was reached */
  uint64_t budget_ops;   /* op records among them */
};
struct dump_counts cs_dump_counts(void);

#endif
