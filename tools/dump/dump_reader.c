/* tools/dump/dump_reader.c: reading one dump file (struct freader): its lines, whole (one read of
 * the file) or a piece per round (streaming), each to a record through tools/dump/dump_records.c
 * or, for the writer's own op lines, tools/dump/opscan.c; its messages kept in file order; what
 * its footer says was written against what it holds. Part of the reader (tools/dump/dumpfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collscope/schema.h"
#include "dump_internal.h"
#include "opscan.h"
#include "xalloc.h"

__attribute__((format(printf, 2, 3))) static void rd_error(struct freader *fr, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (fr->nerrors >= CS_DUMP_MAX_ERRORS) { /* the set keeps no more than that anyway */
    va_end(ap);
    fr->errors_omitted++;
    return;
  }
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) oom();
  va_end(ap);
  dump_grow((void **)&fr->errors, &fr->errors_cap, fr->nerrors, sizeof *fr->errors);
  fr->errors[fr->nerrors++] = msg;
}

void dump_rd_flush_errors(struct freader *fr) {
  struct cs_dumpset *set = fr->set;
  for (size_t i = 0; i < fr->nerrors; i++) {
    if (set->nerrors >= CS_DUMP_MAX_ERRORS) { /* as add_error */
      free(fr->errors[i]);
      set->errors_omitted++;
      continue;
    }
    dump_grow((void **)&set->errors, &set->errors_cap, set->nerrors, sizeof *set->errors);
    set->errors[set->nerrors++] = fr->errors[i];
  }
  set->errors_omitted += fr->errors_omitted;
  fr->errors_omitted = 0;
  free(fr->errors);
  fr->errors = NULL;
  fr->nerrors = fr->errors_cap = 0;
}

/* collscope-<host>-r<rank|x>-p<pid>[.N].jsonl[.zst] -> host, rank, pid (best effort; the
 * writer adds .N when the plain name already exists). */
static void header_from_name(struct cs_dumpset *set, struct cs_dumpfile *f) {
  struct cs_header *h = &f->hdr;
  memset(h, 0, sizeof *h);
  h->schema = COLLSCOPE_SCHEMA_VERSION;
  h->rank = h->local_rank = h->world_size = h->device = -1;
  h->collscope = h->job = h->pci_bus_id = h->exe = dump_intern(set->pool, "");
  h->host = dump_intern(set->pool, "?");
  char *s = xstrdup(f->name);
  size_t n = strlen(s);
  if (n > 4 && strcmp(s + n - 4, ".zst") == 0) s[n -= 4] = 0;
  if (n > 6 && strcmp(s + n - 6, ".jsonl") == 0) s[n - 6] = 0;
  char *dot = strrchr(s, '.');
  if (dot && dot[1] && strspn(dot + 1, "0123456789") == strlen(dot + 1)) *dot = 0;
  char *pp = strrchr(s, '-');
  if (strncmp(s, "collscope-", 10) == 0 && pp && pp[1] == 'p' && pp[2] &&
      strspn(pp + 2, "0123456789") == strlen(pp + 2)) {
    h->pid = strtoll(pp + 2, NULL, 10);
    *pp = 0;
    char *rp = strrchr(s, '-');
    if (rp && rp > s + 9 && rp[1] == 'r' && rp[2]) {
      if (strspn(rp + 2, "0123456789") == strlen(rp + 2))
        h->rank = dump_clamp_int(strtoll(rp + 2, NULL, 10));
      *rp = 0;
      if (s[10]) h->host = dump_intern(set->pool, s + 10);
    }
  }
  free(s);
}

static const char *json_type_word(json_t *v) {
  switch (json_typeof(v)) {
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER:
  case JSON_REAL: return "a number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  default: return "not an object";
  }
}

/* One line of fp into buf (CS_DUMP_LINE_MAX + 1 bytes), newline excluded and NUL-terminated.
 * Returns its length, or -1 at end of file. A longer line is consumed to its end without
 * being stored: *too_long is set and the return value is 0. */
static ssize_t read_line(FILE *fp, char *buf, bool *has_nl, bool *too_long) {
  size_t len = 0;
  int ch = EOF;
  *has_nl = *too_long = false;
  while ((ch = getc_unlocked(fp)) != EOF && ch != '\n') {
    if (len < CS_DUMP_LINE_MAX)
      buf[len++] = (char)ch;
    else
      *too_long = true;
  }
  if (ch == EOF && len == 0 && !*too_long) return -1;
  *has_nl = ch == '\n';
  if (*too_long) len = 0;
  buf[len] = 0;
  return (ssize_t)len;
}

/* One op record read: kept in the file, or handed to the stream's sink. */
static void deliver_op(struct freader *fr, struct cs_op_rec *r) {
  struct cs_dumpfile *f = fr->f;
  r->line = (uint32_t)fr->lineno;
  r->file = (uint32_t)fr->index;
  r->in_window = fr->summary_mode;
  fr->ops_seen++;
  if (!fr->first_op_rank_set) {
    fr->first_op_rank = r->rank;
    fr->first_op_rank_set = true;
  }
  if (fr->sink) {
    fr->sink->op(fr->sink->ctx, fr->worker, fr->index, f, r);
    return;
  }
  dump_grow((void **)&f->ops, &f->op_cap, f->nops, sizeof *f->ops);
  f->ops[f->nops++] = *r;
}

/* The fast path (DESIGN.md "Reading dumps"): an op line in the writer's own layout, read by
 * tools/dump/opscan.c with the values dump_parse_op() would give; false: read it with jansson. */
static bool fast_op(struct freader *fr, const char *buf, size_t len) {
  struct cs_opscan s;
  if (!cs_opscan(buf, len, &s)) return false;
  struct cs_op_rec r;
  memset(&r, 0, sizeof r);
  r.comm = s.comm;
  r.comm_size = dump_clamp_int(s.comm_size);
  r.comm_rank = dump_clamp_int(s.comm_rank);
  r.rank = dump_clamp_int(s.rank);
  r.seq = s.seq;
  r.op_name = dump_cached(fr->set->pool, &fr->c_op, s.op_name, &r.op, NULL);
  r.dtype = dump_cached(fr->set->pool, &fr->c_dtype, s.dtype, NULL, NULL);
  r.count = s.count;
  r.bytes = s.bytes;
  r.redop = s.redop.s ? dump_cached(fr->set->pool, &fr->c_redop, s.redop, NULL, NULL) : NULL;
  r.root = dump_clamp_int(s.root);
  r.peer = dump_clamp_int(s.peer);
  r.stream = s.stream;
  r.group = s.group;
  r.enqueue_ns = s.enqueue_ns;
  r.start_ns = s.start_ns;
  r.end_ns = s.end_ns;
  r.dur_us = s.dur_us;
  r.timing_name = dump_cached(fr->set->pool, &fr->c_timing, s.timing_name, NULL, &r.timing);
  r.captured = s.captured;
  r.site = dump_cached(fr->set->pool, &fr->c_site, s.site, NULL, NULL);
  r.status = dump_clamp_int(s.status);
  r.graph = s.graph;
  r.replay = s.replay;
  r.group_ops = s.group_ops;
  r.sdc_checked = (unsigned)s.sdc_checked;
  r.sdc_fp = s.sdc_fp;
  r.sdc_in_sum = s.sdc_in_sum;
  r.sdc_in_abs = s.sdc_in_abs;
  r.sdc_out_sum = s.sdc_out_sum;
  deliver_op(fr, &r);
  return true;
}

void dump_rd_start(struct freader *fr, struct cs_dumpset *set, struct cs_dumpfile *f, size_t index) {
  memset(fr, 0, sizeof *fr);
  fr->set = set;
  fr->f = f;
  fr->index = index;
  fr->ok = true;
  fr->fd = -1;
  f->read_index = index;
  header_from_name(set, f);
}

static void rd_finish(struct freader *fr) {
  struct cs_dumpfile *f = fr->f;
  const struct dump_src *z = &fr->src; /* a zstd file's frames cut short or skipped */
  f->compressed = z->kind == DUMP_SRC_ZSTD;
  f->torn_frames = z->torn_frames;
  f->torn_bytes = z->torn_bytes;
  f->bad_frames = z->bad_frames;
  f->bad_bytes = z->bad_bytes;
  if (z->bad_frames)
    rd_error(fr, "%s: %s (%llu bad frame(s), %llu bytes skipped)", f->path, z->bad_what,
             (unsigned long long)z->bad_frames, (unsigned long long)z->bad_bytes);
  if (!fr->have_header && f->hdr.rank < 0 && fr->first_op_rank_set) f->hdr.rank = fr->first_op_rank;
  if (f->has_footer) { /* what the writer says it wrote, against what the file holds */
    uint64_t lo = f->footer_ops > fr->ops_seen ? f->footer_ops - fr->ops_seen : 0;
    uint64_t lx = f->footer_xfers > f->nxfers ? f->footer_xfers - f->nxfers : 0;
    f->lost = lo + lx < lo ? UINT64_MAX : lo + lx; /* saturated: a hostile footer */
  }
}

/* One line of the file, its newline (has_nl) removed; too_long: a line over CS_DUMP_LINE_MAX,
 * skipped unread (buf then empty). buf[len] is writable. */
static void rd_line(struct freader *fr, char *buf, size_t len0, bool has_nl, bool too_long) {
  if (!fr->ok) return; /* an unsupported schema ends the file */
  struct cs_dumpset *set = fr->set;
  struct cs_dumpfile *f = fr->f;
  size_t lineno = ++fr->lineno;
  f->lines++;
  if (too_long) {
    f->malformed_lines++;
    rd_error(fr, "%s:%zu: line longer than %d bytes, skipped", f->path, lineno, CS_DUMP_LINE_MAX);
    return;
  }
  ssize_t len = (ssize_t)len0;
  buf[len] = 0;
  while (len > 0 && buf[len - 1] == '\r') buf[--len] = 0;
  if (len == 0 && has_nl) return; /* blank line: ignore */
  if (lineno > 1 && fast_op(fr, buf, (size_t)len)) return;

  json_error_t jerr;
  json_t *obj = json_loadb(buf, (size_t)len, 0, &jerr);
  if (!obj) {
    if (!has_nl) {
      f->truncated_lines++; /* the writer died mid-line: expected, not an error */
    } else {
      f->malformed_lines++;
      rd_error(fr, "%s:%zu: invalid JSON: %s (column %d)", f->path, lineno, jerr.text,
               jerr.column);
    }
    return;
  }
  struct lctx c = {.set = set, .f = f, .obj = obj, .type = "?"};
  if (!json_is_object(obj)) {
    dump_fail(&c, "line is %s, not a JSON object", json_type_word(obj));
  } else {
    json_t *t = json_object_get(obj, "type");
    if (!json_is_string(t))
      dump_fail(&c, "missing string field \"type\"");
    else
      c.type = json_string_value(t);
  }

  if (!c.bad && strcmp(c.type, "header") == 0) {
    if (lineno != 1 || fr->have_header) {
      dump_fail(&c, "unexpected header record (the header must be line 1)");
    } else {
      struct cs_header h = f->hdr;
      if (dump_parse_header(&c, &h)) {
        if (h.schema > COLLSCOPE_SCHEMA_VERSION || h.schema < 1) {
          rd_error(fr,
                   "%s:1: dump schema version %d is not supported by this collscope "
                   "(supports version %d%s)",
                   f->path, h.schema, COLLSCOPE_SCHEMA_VERSION,
                   h.schema > COLLSCOPE_SCHEMA_VERSION ? "; use a newer collscope" : "");
          json_decref(obj);
          fr->ok = false;
          return;
        }
        f->hdr = h;
        fr->have_header = true;
      }
    }
  } else if (!c.bad && lineno == 1) {
    /* No header: report it, keep going with the name-derived identity, still use the line. */
    rd_error(fr, "%s:1: first line is a \"%s\" record, not the header", f->path, c.type);
  }

  if (c.bad) {
    /* fallthrough to error below */
  } else if (strcmp(c.type, "header") == 0) {
    /* handled above */
  } else if (strcmp(c.type, "op") == 0) {
    struct cs_op_rec r;
    if (dump_parse_op(&c, &r)) deliver_op(fr, &r);
  } else if (strcmp(c.type, "xfer") == 0) {
    struct cs_xfer_rec r;
    if (dump_parse_xfer(&c, &r)) {
      r.line = (uint32_t)lineno;
      dump_grow((void **)&f->xfers, &f->xfer_cap, f->nxfers, sizeof *f->xfers);
      f->xfers[f->nxfers++] = r;
    }
  } else if (strcmp(c.type, "comm") == 0) {
    struct cs_comm_rec r;
    if (dump_parse_comm(&c, &r)) {
      r.line = (uint32_t)lineno;
      dump_grow((void **)&f->comms, &f->comm_cap, f->ncomms, sizeof *f->comms);
      f->comms[f->ncomms++] = r;
    }
  } else if (strcmp(c.type, "hang") == 0) {
    struct cs_hang_rec r;
    if (dump_parse_hang(&c, &r)) {
      r.line = (uint32_t)lineno;
      dump_grow((void **)&f->hangs, &f->hang_cap, f->nhangs, sizeof *f->hangs);
      f->hangs[f->nhangs++] = r;
    }
  } else if (strcmp(c.type, "link") == 0) { /* NCCL_NET wrapper */
    struct cs_link_rec r;
    if (dump_parse_link(&c, &r)) {
      r.line = (uint32_t)lineno;
      dump_grow((void **)&f->links, &f->link_cap, f->nlinks, sizeof *f->links);
      f->links[f->nlinks++] = r;
    }
  } else if (strcmp(c.type, "summary") == 0) { /* COLLSCOPE_RECORD=summary */
    struct cs_summary_rec r;
    fr->summary_mode = true;
    if (dump_parse_summary(&c, &r)) {
      r.line = (uint32_t)lineno;
      dump_grow((void **)&f->summaries, &f->summary_cap, f->nsummaries, sizeof *f->summaries);
      f->summaries[f->nsummaries++] = r;
    }
  } else if (strcmp(c.type, "window") == 0) {
    struct cs_window_rec r;
    fr->summary_mode = true;
    if (dump_parse_window(&c, &r)) {
      r.line = (uint32_t)lineno;
      dump_grow((void **)&f->windows, &f->window_cap, f->nwindows, sizeof *f->windows);
      f->windows[f->nwindows++] = r;
    }
  } else if (strcmp(c.type, "gaps") == 0) { /* COLLSCOPE_RECORD=summary: compute gaps */
    struct cs_gaps_rec r;
    fr->summary_mode = true;
    if (dump_parse_gaps(&c, &r)) {
      r.line = (uint32_t)lineno;
      dump_grow((void **)&f->gaps, &f->gaps_cap, f->ngaps, sizeof *f->gaps);
      f->gaps[f->ngaps++] = r;
    }
  } else if (strcmp(c.type, "health") == 0) { /* hooks/health.c */
    dump_parse_health(&c, fr, lineno);
  } else if (strcmp(c.type, "drops") == 0) {
    uint64_t n = 0;
    if (dump_parse_drops(&c, &n)) f->drops_records += n;
  } else if (strcmp(c.type, "footer") == 0) {
    dump_parse_footer(&c, f);
  } else {
    f->unknown_types++;
  }
  if (c.bad) {
    if (!has_nl) {
      f->truncated_lines++; /* cannot happen for a cut object, kept for safety */
    } else {
      f->malformed_lines++;
      rd_error(fr, "%s:%zu: %s", f->path, lineno, c.err);
    }
  }
  json_decref(obj);
}

/* the file's text as a FILE (plain or zstd frames: tools/dump/dump_zstd.c) */
static ssize_t src_cookie_read(void *cookie, char *buf, size_t n) { return dump_src_read(cookie, buf, n); }

/* Reads one file into f. Returns false when the file is unusable as a whole (I/O error,
 * unsupported schema); the message is in fr's errors. */
bool dump_load_file(struct freader *fr) {
  struct cs_dumpfile *f = fr->f;
  int fd = open(f->path, O_RDONLY | O_CLOEXEC);
  FILE *fp = NULL;
  if (fd >= 0) {
    dump_src_init(&fr->src, fd);
    fp = fopencookie(&fr->src, "r", (cookie_io_functions_t){.read = src_cookie_read});
    if (!fp) close(fd);
  }
  if (!fp) {
    rd_error(fr, "%s: cannot open: %s", f->path, strerror(errno));
    return false;
  }
  char *buf = xrealloc(NULL, CS_DUMP_LINE_MAX + 1);
  ssize_t len;
  bool has_nl, too_long;
  while (fr->ok && (len = read_line(fp, buf, &has_nl, &too_long)) >= 0) rd_line(fr, buf, (size_t)len, has_nl, too_long);
  if (fr->ok && ferror(fp)) {
    rd_error(fr, "%s: read error: %s", f->path, strerror(errno));
    fr->ok = false;
  }
  free(buf);
  fclose(fp);
  dump_src_close(&fr->src);
  close(fd);
  rd_finish(fr);
  return fr->ok;
}

/* Read the file's next piece (about `chunk` bytes) into the reading thread's buffer `buf`
 * (wcap bytes: chunk + CS_DUMP_LINE_MAX + 2) and every complete line in it; in the header round
 * only line 1 (reading on until it is whole). Between pieces the file keeps only its partial
 * last line (fr->buf), so memory is per thread, not per file. */
void dump_rd_piece(struct freader *fr, size_t chunk, char *buf, size_t wcap) {
  struct cs_dumpfile *f = fr->f;
  if (fr->eof) return;
  if (fr->fd < 0) {
    fr->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fr->fd < 0) {
      rd_error(fr, "%s: cannot open: %s", f->path, strerror(errno));
      fr->ok = false;
      fr->eof = true;
      return;
    }
    dump_src_init(&fr->src, fr->fd);
  }
  size_t blen = fr->blen;
  if (blen) memcpy(buf, fr->buf, blen);
  bool at_end = false;
  size_t pos, rest;
  /* a zstd file's piece goes on to the end of the frame it is in, so that no decoder is kept
   * between pieces (tools/dump/dump_zstd.c); a plain file's is one pass */
  for (;;) {
    for (size_t want = blen + chunk < wcap - 1 ? blen + chunk : wcap - 1;;) {
      while (blen < want) {
        ssize_t n = dump_src_read(&fr->src, buf + blen, want - blen);
        if (n < 0) {
          rd_error(fr, "%s: read error: %s", f->path, strerror(errno));
          fr->ok = false;
          at_end = true;
          break;
        }
        if (n == 0) {
          at_end = true;
          break;
        }
        size_t skip = fr->reread < (size_t)n ? fr->reread : (size_t)n; /* text read before a rewind */
        memmove(buf + blen, buf + blen + skip, (size_t)n - skip);
        fr->reread -= skip;
        blen += (size_t)n - skip;
      }
      if (!fr->header_only || at_end || want >= wcap - 1 || memchr(buf, '\n', blen)) break;
      want = blen + chunk < wcap - 1 ? blen + chunk : wcap - 1; /* line 1 is not whole yet */
    }
    pos = 0;
    while (pos < blen && fr->ok) {
      char *nl = memchr(buf + pos, '\n', blen - pos);
      if (!nl) break;
      size_t len = (size_t)(nl - (buf + pos));
      if (fr->skipping)
        fr->skipping = false; /* the end of a line already counted as too long */
      else if (len > CS_DUMP_LINE_MAX)
        rd_line(fr, buf + pos, 0, true, true);
      else
        rd_line(fr, buf + pos, len, true, false);
      pos += len + 1;
      if (fr->header_only) break;
    }
    if (!fr->ok) at_end = true;
    rest = blen - pos;
    if (rest > CS_DUMP_LINE_MAX && !fr->header_only) { /* no newline in rest: a line this long is skipped unread */
      if (!fr->skipping) rd_line(fr, buf + pos, 0, true, true);
      fr->skipping = true;
      pos = blen;
      rest = 0;
    }
    if (fr->header_only || at_end || !fr->src.in_frame) break;
    memmove(buf, buf + pos, rest); /* the frame goes on */
    blen = rest;
  }
  if (fr->header_only && !at_end && fr->src.in_frame && pos && !fr->skipping) {
    /* the header round ends inside a frame: the file starts again at its first frame next
     * round, skipping the text read up to here, rather than keep a decoder per file */
    dump_src_rewind(&fr->src);
    fr->reread = pos;
    rest = 0;
  }
  if (at_end && !(fr->header_only && rest)) {
    if (rest && !fr->skipping && fr->ok) rd_line(fr, buf + pos, rest, false, false); /* cut off */
    rest = 0;
    fr->eof = true;
  }
  fr->blen = rest; /* keep the partial line */
  if (rest) {
    fr->buf = xrealloc(fr->buf, rest);
    memcpy(fr->buf, buf + pos, rest);
  }
  dump_src_idle(&fr->src); /* nothing kept between pieces but a frame a header round left */
  if (fr->eof) {
    dump_src_close(&fr->src);
    if (fr->fd >= 0) close(fr->fd);
    fr->fd = -1;
    free(fr->buf);
    fr->buf = NULL;
    fr->bcap = 0;
    rd_finish(fr);
  }
}

/* Close a file that will not be read further (another job's). */
void dump_rd_drop(struct freader *fr) {
  dump_src_close(&fr->src);
  if (fr->fd >= 0) close(fr->fd);
  fr->fd = -1;
  free(fr->buf);
  fr->buf = NULL;
  fr->bcap = fr->blen = 0;
  fr->eof = fr->excluded = true;
}
