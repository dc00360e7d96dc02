/* stats/dump_writer.c: the per-process dump file and its line buffer (DESIGN.md "Dump
 * files"): creating the file (O_EXCL|O_NOFOLLOW), writing whole lines, and counting what
 * reached the file or was lost: a sink of whole lines. The lines themselves, and when to
 * write which, are stats/dump_writer_records.c's; nothing here calls it.
 *
 * Write errors (a full disk): the file keeps ending at its last whole line (a partial
 * write is cut back with ftruncate, or, if that fails, a continuation file is started),
 * every record of the failed buffer is counted as dropped (cs_st.drops, footer
 * `write_drops`), and every later flush tries again, so writing resumes when space
 * returns. A lost header is written again before the next record.
 *
 * Compression (COLLSCOPE_COMPRESS=zstd, *.jsonl.zst): each flush writes independent zstd
 * frames of whole lines (at most DUMP_FRAME_MAX bytes of them each), so a file cut anywhere
 * holds its complete frames (a reader skips and counts the torn last one) and the cut-back
 * above works on frames as it does on lines.
 *
 * The byte budget (COLLSCOPE_BUDGET): the process's dump files never hold more bytes than
 * the budget. A frame that would pass the budget less a reserve is written without its op
 * and xfer lines, and from then on those lines are dropped as they are formatted, counted in
 * the footer's `budget_drops`; the header, comm, hang, link, health and drops lines go on
 * into the reserve, whose last BUDGET_FOOTER_ROOM bytes only the footer may take. */
#include "dump_writer_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

struct cs_dump_io cs_dump_io = {write, ftruncate};
struct dump_line_buf cs_dump_lb;

static int fd = -1;
static char path[8192];
/* what the buffer holds (lines not yet written) */
static uint64_t buf_ops, buf_xfers, buf_recs, buf_drop_counts;
static bool buf_header;
/* what reached the file */
static off_t good_off;          /* the file's length after the last whole write */
static uint64_t n_ops, n_xfers; /* op / xfer records on the file */
/* losses */
static uint64_t ops_lost, write_drops; /* records (ops among them) lost to write errors */
static uint64_t drops_noted;           /* drops covered by "drops" lines buffered or on the file */
static bool failing;                   /* the last write failed (one log line per episode) */
static bool need_new_file;             /* the file could not be cut back: continue in a new one */
static int file_attempt;               /* the name suffix used by the current file */
static bool buf_footer;                /* the buffer holds the footer */
/* COLLSCOPE_COMPRESS=zstd: the frame of the buffer being written */
static bool compressing;
static ZSTD_CCtx *zc;
static char *zbuf;
static size_t zcap;
/* COLLSCOPE_BUDGET */
#define BUDGET_FOOTER_ROOM (8u << 10)
static uint64_t disk_prev;                /* bytes on this process's earlier files (continuations) */
static bool over_budget;                  /* op and xfer lines are dropped from now on */
static uint64_t budget_drops, budget_ops; /* records (ops among them) not written for the budget */

bool cs_dump_active(void) { return fd >= 0; }

/* Every line is formatted between line_begin and line_end, so the buffer only ever holds
 * whole lines when it is written. */
void cs_dump_line_begin(void) {
  if (CS_UNLIKELY(cs_dump_lb.len > DUMP_BUF_CAP - DUMP_LINE_ROOM)) cs_dump_flush();
  cs_dump_lb.line_start = cs_dump_lb.len;
  cs_dump_lb.line_overflow = false;
}
void cs_dump_line_end(enum line_kind kind, uint64_t drops_count) {
  if (CS_UNLIKELY(cs_dump_lb.line_overflow)) { /* cannot happen with collscope's bounded fields */
    cs_dump_lb.len = cs_dump_lb.line_start;
    if (kind == LINE_OP || kind == LINE_XFER || kind == LINE_RECORD) {
      write_drops++;
      ops_lost += kind == LINE_OP;
      atomic_fetch_add(&cs_st.drops, 1);
    } else if (kind == LINE_HEADER) {
      cs_dump_lb.header_done = false;
    }
    return;
  }
  if (CS_UNLIKELY(over_budget) && (kind == LINE_OP || kind == LINE_XFER)) {
    cs_dump_lb.len = cs_dump_lb.line_start;
    budget_drops++;
    budget_ops += kind == LINE_OP;
    return;
  }
  switch (kind) {
  case LINE_HEADER: buf_header = true; break;
  case LINE_OP:
    buf_ops++;
    buf_recs++;
    break;
  case LINE_XFER:
    buf_xfers++;
    buf_recs++;
    break;
  case LINE_RECORD: buf_recs++; break;
  case LINE_DROPS:
    buf_drop_counts += drops_count;
    drops_noted += drops_count;
    break;
  case LINE_FOOTER: buf_footer = true; break;
  }
}

static int mkdir_p(const char *dir) {
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

static void reset_counts(void) {
  cs_dump_lb.len = 0;
  cs_dump_lb.header_done = buf_header = buf_footer = false;
  buf_ops = buf_xfers = buf_recs = buf_drop_counts = 0;
  good_off = 0;
  failing = need_new_file = false;
}

/* Create the file, trying name suffixes from `attempt` on; false with errno set. */
static bool create_file(int attempt) {
  char rank[16];
  if (cs_cfg.rank >= 0)
    snprintf(rank, sizeof(rank), "%d", cs_cfg.rank);
  else
    snprintf(rank, sizeof(rank), "x");
  for (; attempt < 100; attempt++) {
    if (attempt == 0)
      snprintf(path, sizeof(path), "%s/collscope-%s-r%s-p%d.jsonl%s", cs_cfg.dir, cs_cfg.host, rank, (int)getpid(),
               compressing ? ".zst" : "");
    else
      snprintf(path, sizeof(path), "%s/collscope-%s-r%s-p%d.%d.jsonl%s", cs_cfg.dir, cs_cfg.host, rank,
               (int)getpid(), attempt, compressing ? ".zst" : "");
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
    if (fd >= 0) {
      file_attempt = attempt;
      return true;
    }
    if (errno != EEXIST) return false;
  }
  errno = EEXIST;
  return false;
}

/* COLLSCOPE_COMPRESS=zstd: the compressor and its frame buffer, once; false (logged) when
 * they cannot be had: the dump is then plain JSON Lines */
static bool compress_setup(void) {
  if (zc) return true;
  zcap = 2 * ZSTD_compressBound(DUMP_BUF_CAP); /* room for every frame's bound: checked per frame */
  zc = ZSTD_createCCtx();
  zbuf = malloc(zcap);
  if (zc && zbuf && !ZSTD_isError(ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, 3)) &&
      !ZSTD_isError(ZSTD_CCtx_setParameter(zc, ZSTD_c_checksumFlag, 1)))
    return true;
  ZSTD_freeCCtx(zc);
  free(zbuf);
  zc = NULL;
  zbuf = NULL;
  cs_log(CS_LOG_WARN, "cannot set up zstd compression; writing plain JSON Lines");
  return false;
}

bool cs_dump_open(void) {
  if (!cs_dump_lb.buf && !(cs_dump_lb.buf = malloc(DUMP_BUF_CAP))) return false;
  compressing = cs_cfg.compress && compress_setup();
  if (mkdir_p(cs_cfg.dir) != 0) {
    cs_log(CS_LOG_WARN, "cannot create COLLSCOPE_DIR %s: %s; recording off, job runs untouched", cs_cfg.dir,
           strerror(errno));
    return false;
  }
  if (!create_file(0)) {
    cs_log(CS_LOG_WARN, "cannot create dump file %s: %s; recording off, job runs untouched", path, strerror(errno));
    return false;
  }
  reset_counts();
  n_ops = n_xfers = ops_lost = write_drops = drops_noted = 0;
  disk_prev = budget_drops = budget_ops = 0;
  over_budget = false;
  cs_log(CS_LOG_INFO, "writing %s", path);
  return true;
}

const char *cs_dump_path(void) { return path; }

struct dump_counts cs_dump_counts(void) {
  return (struct dump_counts){n_ops + buf_ops, n_xfers + buf_xfers, write_drops, ops_lost,
                              drops_noted, budget_drops, budget_ops};
}

/* The buffer could not be written: count its records as dropped, and let its lines about
 * the file (header, drops) be written again later. */
static void lose_buffer(int err) {
  write_drops += buf_recs;
  ops_lost += buf_ops;
  atomic_fetch_add(&cs_st.drops, buf_recs);
  drops_noted -= buf_drop_counts;
  if (buf_header) cs_dump_lb.header_done = false;
  if (!failing)
    cs_log(CS_LOG_WARN, "write to %s failed: %s; records are counted as dropped until writing works again", path,
           strerror(err));
  failing = true;
  cs_dump_lb.len = 0;
  buf_ops = buf_xfers = buf_recs = buf_drop_counts = 0;
  buf_header = buf_footer = false;
}

/* After a failed write the file must end at its last whole line again. */
static void cut_back(void) {
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size == good_off) return;
  if (cs_dump_io.ftruncate(fd, good_off) == 0) return;
  cs_log(CS_LOG_WARN, "cannot cut %s back to its last whole line: %s; continuing in a new file", path,
         strerror(errno));
  need_new_file = true;
  cs_dump_lb.header_done = false; /* the new file starts with its own header */
}

/* A continuation file (the same name with the next free suffix), with its own header. */
static bool open_continuation(void) {
  char old[sizeof path];
  memcpy(old, path, sizeof path);
  int old_fd = fd;
  if (!create_file(file_attempt + 1)) {
    memcpy(path, old, sizeof path);
    fd = old_fd;
    return false;
  }
  struct stat st; /* what the old file keeps counts against the budget */
  disk_prev += fstat(old_fd, &st) == 0 && st.st_size > good_off ? (uint64_t)st.st_size : (uint64_t)good_off;
  close(old_fd);
  need_new_file = false;
  good_off = 0;
  cs_log(CS_LOG_WARN, "continuing %s in %s", old, path);
  return true;
}

/* What is written for the buffer: its lines, or zstd frames of them, each of whole lines and
 * at most DUMP_FRAME_MAX bytes of them unless one line is longer; false (logged) when the
 * compressor fails. */
static bool frame_of_buffer(const char **out, size_t *n) {
  *out = cs_dump_lb.buf;
  *n = cs_dump_lb.len;
  if (!compressing) return true;
  const char *b = cs_dump_lb.buf;
  size_t pos = 0, o = 0, len = cs_dump_lb.len;
  while (pos < len) {
    size_t end = len - pos > DUMP_FRAME_MAX ? pos + DUMP_FRAME_MAX : len;
    while (end > pos && end < len && b[end - 1] != '\n') end--; /* back to a line's end */
    if (end == pos) {                                           /* one line longer than a frame */
      const char *nl = memchr(b + pos, '\n', len - pos);
      end = nl ? (size_t)(nl - b) + 1 : len;
    }
    if (zcap - o < ZSTD_compressBound(end - pos)) { /* cannot happen: zcap holds every bound */
      cs_log(CS_LOG_WARN, "zstd compression: no room for a frame");
      return false;
    }
    size_t z = ZSTD_compress2(zc, zbuf + o, zcap - o, b + pos, end - pos);
    if (ZSTD_isError(z)) {
      cs_log(CS_LOG_WARN, "zstd compression failed: %s", ZSTD_getErrorName(z));
      return false;
    }
    o += z;
    pos = end;
  }
  *out = zbuf;
  *n = o;
  return true;
}

/* The budget is reached: the buffer's op and xfer lines (the writer's own lines, which start
 * with their type) past its first `keep` bytes are taken out and counted. */
static void drop_budget_lines(size_t keep) {
  char *b = cs_dump_lb.buf;
  size_t r = 0, w = 0, len = cs_dump_lb.len;
  bool dropping = false; /* once one is dropped, so are the later ones (the file keeps op order) */
  while (r < len) {
    const char *nl = memchr(b + r, '\n', len - r);
    size_t n = nl ? (size_t)(nl - (b + r)) + 1 : len - r;
    bool op = n >= 12 && memcmp(b + r, "{\"type\":\"op\"", 12) == 0;
    bool xfer = n >= 14 && memcmp(b + r, "{\"type\":\"xfer\"", 14) == 0;
    if ((op || xfer) && (dropping || w + n > keep)) {
      dropping = true;
      budget_drops++;
      budget_ops += op;
      buf_ops -= op;
      buf_xfers -= xfer;
      buf_recs--;
    } else {
      memmove(b + w, b + r, n);
      w += n;
    }
    r += n;
  }
  cs_dump_lb.len = w;
}

/* COLLSCOPE_BUDGET: whether a frame of n bytes may be written; the buffer's op and xfer lines
 * are dropped (and *out, *n made again) when they no longer fit. */
static bool within_budget(const char **out, size_t *n) {
  if (!cs_cfg.budget) return true;
  uint64_t used = disk_prev + (uint64_t)good_off;
  uint64_t reserve = cs_cfg.budget / 8;
  if (reserve > (1u << 20)) reserve = 1u << 20;
  if (reserve < (16u << 10)) reserve = 16u << 10;
  uint64_t op_room = cs_cfg.budget - reserve;
  if (buf_ops + buf_xfers && (over_budget || used + *n > op_room)) {
    if (!over_budget)
      cs_log(CS_LOG_WARN, "dump budget of %llu bytes reached: op and xfer records are counted, not written",
             (unsigned long long)cs_cfg.budget);
    /* the op lines that still fit: their share of the lines as the frame's bytes go (plain:
     * exact; a frame: estimated from its ratio, and made smaller until it fits) */
    uint64_t avail = over_budget || used >= op_room ? 0 : op_room - used;
    over_budget = true;
    for (int tries = 0; tries < 6 && buf_ops + buf_xfers && used + *n > op_room; tries++) {
      double keep = tries < 5 && *n ? (double)cs_dump_lb.len * (double)avail / (double)*n : 0;
      drop_budget_lines(compressing ? (size_t)(keep * 0.97) : (size_t)keep);
      if (!frame_of_buffer(out, n)) return false;
    }
    if (buf_ops + buf_xfers && used + *n > op_room) { /* cannot happen: every op line is out */
      drop_budget_lines(0);
      if (!frame_of_buffer(out, n)) return false;
    }
  }
  return used + *n <= cs_cfg.budget - (buf_footer ? 0 : BUDGET_FOOTER_ROOM);
}

void cs_dump_flush(void) {
  if (fd < 0 || cs_dump_lb.len == 0) return;
  if (need_new_file) {
    if (!open_continuation()) {
      lose_buffer(errno);
      return;
    }
    if (!buf_header) { /* the buffer's lines go after a new header */
      lose_buffer(EIO);
      return;
    }
  }
  const char *out;
  size_t outlen;
  if (!frame_of_buffer(&out, &outlen)) {
    lose_buffer(EIO);
    return;
  }
  if (!within_budget(&out, &outlen)) {
    lose_buffer(EFBIG);
    return;
  }
  size_t off = 0;
  int err = 0;
  while (off < outlen) {
    ssize_t w = cs_dump_io.write(fd, out + off, outlen - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err = w < 0 ? errno : ENOSPC;
      break;
    }
    off += (size_t)w;
  }
  if (err) {
    cut_back();
    lose_buffer(err);
    return;
  }
  if (failing) cs_log(CS_LOG_WARN, "writing %s again (%llu records lost so far)", path, (unsigned long long)write_drops);
  failing = false;
  good_off += (off_t)outlen;
  n_ops += buf_ops;
  n_xfers += buf_xfers;
  cs_dump_lb.len = 0;
  buf_ops = buf_xfers = buf_recs = buf_drop_counts = 0;
  buf_header = buf_footer = false;
}

void cs_dump_close(void) {
  cs_dump_flush();
  if (fd >= 0) close(fd);
  fd = -1;
}

void cs_dump_atfork_child(void) {
  /* the parent's buffered lines are the parent's to write */
  if (fd >= 0) close(fd);
  fd = -1;
  reset_counts();
  n_ops = n_xfers = ops_lost = write_drops = drops_noted = 0;
  disk_prev = budget_drops = budget_ops = 0;
  over_budget = false;
}
