/* stats/dump_writer.c: the per-process dump file and its line buffer (DESIGN.md "Dump
 * files"): creating the file (O_EXCL|O_NOFOLLOW), writing whole lines, and counting what
 * reached the file or was lost: a sink of whole lines. The lines themselves, and when to
 * write which, are stats/dump_writer_records.c's; nothing here calls it.
 *
 * Write errors (a full disk): the file keeps ending at its last whole line (a partial
 * write is cut back with ftruncate, or, if that fails, a continuation file is started),
 * every record of the failed buffer is counted as dropped (cs_st.drops, footer
 * `write_drops`), and every later flush tries again, so writing resumes when space
 * returns. A lost header is written again before the next record. */
#include "dump_writer_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
  case LINE_FOOTER: break;
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
  cs_dump_lb.header_done = buf_header = false;
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
      snprintf(path, sizeof(path), "%s/collscope-%s-r%s-p%d.jsonl", cs_cfg.dir, cs_cfg.host, rank, (int)getpid());
    else
      snprintf(path, sizeof(path), "%s/collscope-%s-r%s-p%d.%d.jsonl", cs_cfg.dir, cs_cfg.host, rank,
               (int)getpid(), attempt);
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

bool cs_dump_open(void) {
  if (!cs_dump_lb.buf && !(cs_dump_lb.buf = malloc(DUMP_BUF_CAP))) return false;
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
  cs_log(CS_LOG_INFO, "writing %s", path);
  return true;
}

const char *cs_dump_path(void) { return path; }

struct dump_counts cs_dump_counts(void) {
  return (struct dump_counts){n_ops + buf_ops, n_xfers + buf_xfers, write_drops, ops_lost, drops_noted};
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
  buf_header = false;
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
  close(old_fd);
  need_new_file = false;
  good_off = 0;
  cs_log(CS_LOG_WARN, "continuing %s in %s", old, path);
  return true;
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
  size_t off = 0;
  int err = 0;
  while (off < cs_dump_lb.len) {
    ssize_t w = cs_dump_io.write(fd, cs_dump_lb.buf + off, cs_dump_lb.len - off);
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
  good_off += (off_t)cs_dump_lb.len;
  n_ops += buf_ops;
  n_xfers += buf_xfers;
  cs_dump_lb.len = 0;
  buf_ops = buf_xfers = buf_recs = buf_drop_counts = 0;
  buf_header = false;
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
}
