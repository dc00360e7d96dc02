/* tools/dump/dump_zstd.c: a dump file's bytes as the line reader sees them (struct dump_src):
 * a plain file as it is, a compressed one (*.jsonl.zst, COLLSCOPE_COMPRESS=zstd: the writer's
 * independent frames of whole lines) decompressed as it streams. The kind is told by the first
 * four bytes, not by the name.
 *
 * Hostile input: before a frame is decompressed its extent is walked from its header and
 * block headers (RFC 8878 3.1.1) with pread(2) against the file's size now, so
 *  - a frame cut short (the writer died in a write, a full disk) is never decompressed: its
 *    bytes are counted in torn_bytes (torn_frames) and reading ends there;
 *  - a frame that does not decode (bad header, bad block, checksum) is counted in bad_frames
 *    and bad_bytes, and reading goes on at its end, known from the walk;
 *  - memory is the decoder's window, at most 2^DUMP_ZSTD_WINDOW_LOG bytes whatever a frame
 *    header declares (ZSTD_d_windowLogMax; a larger window is a bad frame), plus a
 *    DUMP_ZSTD_IN byte input buffer; both are freed whenever reading stops at a frame's end
 *    (dump_src_idle), and a streamed piece of a zstd file goes on to its frame's end
 *    (tools/dump/dump_reader.c), so a file between two pieces holds nothing. Output is bounded
 *    by what the frames decompress to, read a buffer at a time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump_internal.h"
#include "xalloc.h"

#define ZSTD_MAGIC 0xFD2FB528u
#define ZSTD_SKIP_MAGIC 0x184D2A50u /* the low 4 bits are free */
#define ZSTD_BLOCK_MAX (128u << 10) /* RFC 8878 3.1.1.2.3: Block_Maximum_Size */

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void dump_src_init(struct dump_src *s, int fd) {
  memset(s, 0, sizeof *s);
  s->fd = fd;
}

/* n bytes at off (fewer at the end of the file); -1 on an I/O error */
static ssize_t pread_full(int fd, unsigned char *b, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, b + got, n - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

enum { FRAME_WHOLE,
       FRAME_TORN,
       FRAME_BAD,
       FRAME_IOERR };

/* The extent of the frame at off: FRAME_WHOLE with *end, FRAME_TORN (it passes the file's
 * end), FRAME_BAD (not a frame; *end: the file's end) or FRAME_IOERR. */
static int walk_frame(int fd, uint64_t off, uint64_t fsize, uint64_t *end) {
  unsigned char h[18];
  *end = fsize;
  ssize_t n = pread_full(fd, h, sizeof h, off);
  if (n < 0) return FRAME_IOERR;
  if (n < 4) return FRAME_TORN;
  uint32_t magic = le32(h);
  if ((magic & 0xFFFFFFF0u) == ZSTD_SKIP_MAGIC) { /* RFC 8878 3.1.2: skippable frame */
    if (n < 8) return FRAME_TORN;
    uint64_t e = off + 8 + le32(h + 4);
    if (e > fsize) return FRAME_TORN;
    *end = e;
    return FRAME_WHOLE;
  }
  if (magic != ZSTD_MAGIC) return FRAME_BAD;
  if (n < 5) return FRAME_TORN;
  unsigned fhd = h[4];
  if (fhd & 0x08) return FRAME_BAD; /* reserved bit */
  unsigned fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, checksum = (fhd >> 2) & 1, did_flag = fhd & 3;
  static const unsigned did_size[4] = {0, 1, 2, 4};
  unsigned fcs_size = fcs_flag == 0 ? single : 1u << fcs_flag;
  uint64_t pos = off + 5 + !single + did_size[did_flag] + fcs_size;
  for (;;) {
    unsigned char b[3];
    n = pread_full(fd, b, 3, pos);
    if (n < 0) return FRAME_IOERR;
    if (n < 3) return FRAME_TORN;
    uint32_t bh = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
    unsigned type = (bh >> 1) & 3;
    uint32_t size = bh >> 3;
    if (type == 3 || size > ZSTD_BLOCK_MAX) return FRAME_BAD;
    pos += 3 + (type == 1 ? 1 : size); /* an RLE block holds one byte */
    if (pos > fsize) return FRAME_TORN;
    if (bh & 1) break; /* the last block */
  }
  pos += checksum ? 4 : 0;
  if (pos > fsize) return FRAME_TORN;
  *end = pos;
  return FRAME_WHOLE;
}

/* the decoder and input buffer, while a frame is read */
static bool src_open_frame(struct dump_src *s) {
  if (!s->dc) {
    s->dc = ZSTD_createDCtx();
    if (!s->dc) oom();
    ZSTD_DCtx_setParameter(s->dc, ZSTD_d_windowLogMax, DUMP_ZSTD_WINDOW_LOG);
  } else {
    ZSTD_DCtx_reset(s->dc, ZSTD_reset_session_only);
  }
  if (!s->in) s->in = xrealloc(NULL, DUMP_ZSTD_IN);
  s->in_len = s->in_pos = 0;
  s->in_off = s->frame_off;
  return true;
}

void dump_src_idle(struct dump_src *s) {
  if (s->in_frame) return;
  ZSTD_freeDCtx(s->dc);
  s->dc = NULL;
  free(s->in);
  s->in = NULL;
}

void dump_src_close(struct dump_src *s) {
  s->in_frame = false;
  dump_src_idle(s);
}

void dump_src_rewind(struct dump_src *s) {
  dump_src_close(s);
  s->frame_off = 0;
  s->torn_frames = s->torn_bytes = s->bad_frames = s->bad_bytes = 0; /* read again, counted again */
  s->bad_what[0] = 0;
  if (s->kind == DUMP_SRC_PLAIN) lseek(s->fd, 0, SEEK_SET);
}

/* a frame that did not decode: counted, reading goes on at its end */
static void bad_frame(struct dump_src *s, const char *why) {
  s->bad_frames++;
  s->bad_bytes += s->frame_end - s->frame_off;
  if (!s->bad_what[0]) snprintf(s->bad_what, sizeof s->bad_what, "zstd frame at byte %llu: %s",
                                (unsigned long long)s->frame_off, why);
  s->in_frame = false;
  s->frame_off = s->frame_end;
}

/* zstd: up to n decompressed bytes; 0 at the end (a torn last frame counted) */
static ssize_t zstd_read(struct dump_src *s, char *buf, size_t n) {
  ZSTD_outBuffer out = {buf, n, 0};
  while (out.pos == 0) {
    if (!s->in_frame) {
      struct stat st;
      if (fstat(s->fd, &st) != 0) return -1;
      uint64_t fsize = st.st_size > 0 ? (uint64_t)st.st_size : 0;
      if (s->frame_off >= fsize) return 0;
      int k = walk_frame(s->fd, s->frame_off, fsize, &s->frame_end);
      if (k == FRAME_IOERR) return -1;
      if (k == FRAME_TORN) {
        s->torn_frames++;
        s->torn_bytes += fsize - s->frame_off;
        s->frame_off = fsize;
        return 0;
      }
      if (k == FRAME_BAD) {
        bad_frame(s, "not a zstd frame; the rest of the file skipped");
        continue;
      }
      s->in_frame = true;
      src_open_frame(s);
    }
    uint64_t left = s->frame_end - s->in_off - s->in_len; /* the frame's bytes not read yet */
    if (s->in_pos == s->in_len && left) {
      size_t want = left < DUMP_ZSTD_IN ? (size_t)left : DUMP_ZSTD_IN;
      ssize_t r = pread_full(s->fd, s->in, want, s->in_off + s->in_len);
      if (r < 0) return -1;
      if ((size_t)r < want) { /* the file shrank under us */
        bad_frame(s, "the file shrank while read");
        continue;
      }
      s->in_off += s->in_len;
      s->in_len = (size_t)r;
      s->in_pos = 0;
      left -= (uint64_t)r;
    }
    ZSTD_inBuffer in = {s->in, s->in_len, s->in_pos};
    size_t r = ZSTD_decompressStream(s->dc, &out, &in);
    s->in_pos = in.pos;
    if (ZSTD_isError(r)) {
      bad_frame(s, ZSTD_getErrorName(r));
      continue;
    }
    bool at_end = s->in_pos == s->in_len && !left;
    if (r == 0 && at_end) { /* the frame ended where its blocks said */
      s->in_frame = false;
      s->frame_off = s->frame_end;
    } else if (r == 0) {
      bad_frame(s, "the frame ends before its blocks say");
    } else if (at_end && out.pos < out.size) { /* nothing more to give it, and it wants more */
      bad_frame(s, "the frame does not end where its blocks say");
    }
  }
  return (ssize_t)out.pos;
}

ssize_t dump_src_read(struct dump_src *s, char *buf, size_t n) {
  if (s->kind == DUMP_SRC_UNKNOWN) {
    unsigned char m[4];
    ssize_t r = pread_full(s->fd, m, 4, 0);
    if (r < 0 && errno != ESPIPE) return -1; /* a pipe given as the path: plain text */
    uint32_t magic = r == 4 ? le32(m) : 0;
    s->kind = magic == ZSTD_MAGIC || (magic & 0xFFFFFFF0u) == ZSTD_SKIP_MAGIC ? DUMP_SRC_ZSTD : DUMP_SRC_PLAIN;
  }
  if (s->kind == DUMP_SRC_ZSTD) return zstd_read(s, buf, n);
  for (;;) {
    ssize_t r = read(s->fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}
