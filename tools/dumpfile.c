/* tools/dumpfile.c: loader for collscope JSONL dump files (see dumpfile.h for the
 * robustness contract and DESIGN.md "Dump files" for the schema). One jansson parse per
 * line; records are copied into flat per-file arrays with interned strings. */
#include "dumpfile.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <math.h>
#include <uthash.h>

#include "collscope/schema.h"
#include "opscan.h"
#include "readpool.h"

/* ---------- memory ---------- */

/* Grow *v (element size sz, capacity *cap) so that index n is valid. */
static void grow(void **v, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return;
  size_t nc = *cap ? *cap * 2 : 64;
  while (nc <= n) nc *= 2;
  *v = xrealloc(*v, nc * sz);
  *cap = nc;
}

/* ---------- string interning ---------- */

struct pool_ent {
  UT_hash_handle hh;
  char s[];
};
struct cs_strpool {
  struct pool_ent *head;
  pthread_mutex_t lock;   /* files are read by several threads */
};

/* the interned copy of s[0..len) (s need not be NUL-terminated) */
static const char *intern_n(struct cs_strpool *p, const char *s, size_t len) {
  struct pool_ent *e = NULL;
  pthread_mutex_lock(&p->lock);
  HASH_FIND(hh, p->head, s, len, e);
  if (!e) {
    e = malloc(sizeof *e + len + 1);
    if (!e) oom();
    memset(&e->hh, 0, sizeof e->hh);
    memcpy(e->s, s, len);
    e->s[len] = 0;
    HASH_ADD_KEYPTR(hh, p->head, e->s, len, e);
  }
  pthread_mutex_unlock(&p->lock);
  return e->s;
}
static const char *intern(struct cs_strpool *p, const char *s) { return intern_n(p, s, strlen(s)); }

static void pool_free(struct cs_strpool *p) {
  if (!p) return;
  struct pool_ent *e, *tmp;
  HASH_ITER(hh, p->head, e, tmp) {
    HASH_DEL(p->head, e);
    free(e);
  }
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* ---------- errors ---------- */

__attribute__((format(printf, 2, 3)))
static void add_error(struct cs_dumpset *set, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (set->nerrors >= CS_DUMP_MAX_ERRORS) {   /* a file of bad lines costs no memory per line */
    va_end(ap);
    set->errors_omitted++;
    return;
  }
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) oom();
  va_end(ap);
  grow((void **)&set->errors, &set->errors_cap, set->nerrors, sizeof *set->errors);
  set->errors[set->nerrors++] = msg;
}

void cs_dumpset_print_errors(const struct cs_dumpset *set, FILE *f) {
  char buf[1024];
  for (size_t i = 0; i < set->nerrors; i++) fprintf(f, "collscope: %s\n", cs_text_safe(set->errors[i], buf, sizeof buf));
  if (set->errors_omitted)
    fprintf(f, "collscope: %zu more problems in %s not listed (counted in the report's notes)\n",
            set->errors_omitted, cs_text_safe(set->path, buf, sizeof buf));
}

const char *cs_text_safe(const char *s, char *buf, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  bool clean = true;
  for (size_t i = 0; p[i] && clean; i++)
    clean = p[i] >= 0x20 && p[i] != 0x7f && p[i] != '\\' && !(p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] < 0xa0);
  if (clean || n == 0) return s;
  size_t k = 0;
  for (size_t i = 0; p[i]; i++) {
    char esc[8];
    size_t m;
    if (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] < 0xa0) {   /* C1 control, U+0080..U+009F */
      m = (size_t)snprintf(esc, sizeof esc, "\\x%02x", p[++i]);
    } else if (p[i] < 0x20 || p[i] == 0x7f) {
      m = (size_t)snprintf(esc, sizeof esc, "\\x%02x", p[i]);
    } else if (p[i] == '\\') {
      m = 2, esc[0] = esc[1] = '\\';
    } else {
      m = 1, esc[0] = (char)p[i];
    }
    if (k + m + 1 > n) break;
    memcpy(buf + k, esc, m);
    k += m;
  }
  buf[k] = 0;
  return buf;
}

/* ---------- small public helpers ---------- */

const char *csd_timing_name(enum csd_timing t) {
  switch (t) {
  case CSD_TIMING_GPU_EVENT: return "gpu_event";
  case CSD_TIMING_CAPTURED: return "captured";
  case CSD_TIMING_HOST: return "host";
  case CSD_TIMING_ERROR: return "error";
  default: return "unknown";
  }
}

static enum csd_timing timing_from_name(const char *s) {
  if (strcmp(s, "gpu_event") == 0) return CSD_TIMING_GPU_EVENT;
  /* also timed (start/end/dur valid): NCCL's kernel timer stamps via the profiler plugin,
   * and the host clock around a synchronous copy; timing_name keeps the exact source */
  if (strcmp(s, "profiler") == 0 || strcmp(s, "host_span") == 0) return CSD_TIMING_GPU_EVENT;
  if (strcmp(s, "captured") == 0) return CSD_TIMING_CAPTURED;
  if (strcmp(s, "host") == 0) return CSD_TIMING_HOST;
  if (strcmp(s, "error") == 0) return CSD_TIMING_ERROR;
  return CSD_TIMING_UNKNOWN;
}

uint64_t cs_dumpfile_drops(const struct cs_dumpfile *f) {
  return f->footer_drops > f->drops_records ? f->footer_drops : f->drops_records;
}

const char *cs_comm_hex(uint64_t comm, char buf[17]) {
  snprintf(buf, 17, "%016" PRIx64, comm);
  return buf;
}

/* ---------- one file's reader ---------- */

/* A few recent strings of one field, so the fast path interns without the pool's lock. */
#define ICACHE_N 8
struct icache {
  struct { const char *s; size_t n; int op; enum csd_timing timing; } e[ICACHE_N];
  unsigned next;
};

/* Reading one file: its line counter and header state, its errors (moved to the set in
 * file order once every file is read, so the order does not depend on the threads), and
 * where its op records go. */
struct freader {
  struct cs_dumpset *set;
  struct cs_dumpfile *f;
  size_t index;           /* in the set, before the final sort */
  size_t lineno;
  bool ok, have_header, first_op_rank_set;
  int first_op_rank;
  char **errors; size_t nerrors, errors_cap;
  const struct cs_stream_ops *sink;   /* NULL: ops are kept in f->ops */
  unsigned worker;
  struct icache c_op, c_dtype, c_redop, c_timing, c_site;
  /* streaming: the file's read buffer */
  int fd;
  char *buf; size_t blen, bcap;
  bool eof, skipping;     /* skipping: inside a line longer than the buffer */
  bool header_only;       /* the stream's first round: line 1 only */
  bool excluded;          /* another job's file: not read further */
  size_t ops_seen, errors_omitted;
};

__attribute__((format(printf, 2, 3)))
static void rd_error(struct freader *fr, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (fr->nerrors >= CS_DUMP_MAX_ERRORS) {   /* the set keeps no more than that anyway */
    va_end(ap);
    fr->errors_omitted++;
    return;
  }
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) oom();
  va_end(ap);
  grow((void **)&fr->errors, &fr->errors_cap, fr->nerrors, sizeof *fr->errors);
  fr->errors[fr->nerrors++] = msg;
}

static void rd_flush_errors(struct freader *fr) {
  struct cs_dumpset *set = fr->set;
  for (size_t i = 0; i < fr->nerrors; i++) {
    if (set->nerrors >= CS_DUMP_MAX_ERRORS) {   /* as add_error */
      free(fr->errors[i]);
      set->errors_omitted++;
      continue;
    }
    grow((void **)&set->errors, &set->errors_cap, set->nerrors, sizeof *set->errors);
    set->errors[set->nerrors++] = fr->errors[i];
  }
  set->errors_omitted += fr->errors_omitted;
  fr->errors_omitted = 0;
  free(fr->errors);
  fr->errors = NULL;
  fr->nerrors = fr->errors_cap = 0;
}

/* ---------- typed field access with "first error wins" ---------- */

struct lctx {
  struct cs_dumpset *set;
  struct cs_dumpfile *f;
  json_t *obj;
  const char *type;     /* record type, for messages */
  char err[256];        /* first problem found in this line */
  bool bad;
};

__attribute__((format(printf, 2, 3)))
static void fail(struct lctx *c, const char *fmt, ...) {
  if (c->bad) return;
  c->bad = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
}

/* Returns the field, or NULL (after fail() when required) when absent or null. */
static json_t *field(struct lctx *c, const char *key, bool required) {
  json_t *v = json_object_get(c->obj, key);
  if (v && !json_is_null(v)) return v;
  if (required) fail(c, "%s record: missing field \"%s\"", c->type, key);
  return NULL;
}

static long long get_int(struct lctx *c, const char *key, bool required, long long def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_integer(v)) {
    fail(c, "%s record: field \"%s\" is not an integer", c->type, key);
    return def;
  }
  return json_integer_value(v);
}

static uint64_t get_uint(struct lctx *c, const char *key, bool required, uint64_t def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_integer(v) || json_integer_value(v) < 0) {
    fail(c, "%s record: field \"%s\" is not a non-negative integer", c->type, key);
    return def;
  }
  return (uint64_t)json_integer_value(v);
}

static double get_num(struct lctx *c, const char *key, bool required, double def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_number(v)) {
    fail(c, "%s record: field \"%s\" is not a number", c->type, key);
    return def;
  }
  return json_number_value(v);
}

static bool get_bool(struct lctx *c, const char *key, bool required, bool def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_boolean(v)) {
    fail(c, "%s record: field \"%s\" is not a boolean", c->type, key);
    return def;
  }
  return json_is_true(v);
}

/* Interned string; def (may be NULL) when absent or null and not required. */
static const char *get_str(struct lctx *c, const char *key, bool required, const char *def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_string(v)) {
    fail(c, "%s record: field \"%s\" is not a string", c->type, key);
    return def;
  }
  return intern(c->set->pool, json_string_value(v));
}

/* Hex id ("00ab...", optional 0x prefix) or, leniently, a JSON integer. */
static uint64_t get_hex(struct lctx *c, const char *key, bool required, bool *present) {
  if (present) *present = false;
  json_t *v = field(c, key, required);
  if (!v) return 0;
  if (json_is_integer(v) && json_integer_value(v) >= 0) {
    if (present) *present = true;
    return (uint64_t)json_integer_value(v);
  }
  const char *s = json_is_string(v) ? json_string_value(v) : NULL;
  if (s && (s[0] == '0') && (s[1] == 'x' || s[1] == 'X')) s += 2;
  if (!s || !*s || strlen(s) > 16 || strspn(s, "0123456789abcdefABCDEF") != strlen(s)) {
    fail(c, "%s record: field \"%s\" is not a hex id", c->type, key);
    return 0;
  }
  if (present) *present = true;
  return strtoull(s, NULL, 16);
}

static int clamp_int(long long v) {
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int)v;
}

/* ---------- per-record parsers: return false (with c->err) when malformed ---------- */

static bool parse_header(struct lctx *c, struct cs_header *h) {
  struct cs_strpool *p = c->set->pool;
  h->schema = clamp_int(get_int(c, "schema", true, 0));
  h->collscope = get_str(c, "collscope", false, intern(p, ""));
  h->host = get_str(c, "host", true, intern(p, "?"));
  h->pid = get_int(c, "pid", false, 0);
  h->rank = clamp_int(get_int(c, "rank", false, -1));
  h->local_rank = clamp_int(get_int(c, "local_rank", false, -1));
  h->world_size = clamp_int(get_int(c, "world_size", false, -1));
  h->device = clamp_int(get_int(c, "device", false, -1));
  h->job = get_str(c, "job", false, intern(p, ""));
  h->pci_bus_id = get_str(c, "pci_bus_id", false, intern(p, ""));
  h->exe = get_str(c, "exe", false, intern(p, ""));
  h->salvaged = json_object_get(c->obj, "salvaged_from") != NULL;
  h->nccl_version = get_int(c, "nccl_version", false, 0);
  h->cuda_driver_version = get_int(c, "cuda_driver_version", false, 0);
  json_t *clk = json_object_get(c->obj, "clock");
  if (clk && json_is_object(clk)) {
    json_t *saved = c->obj;
    c->obj = clk;
    h->clock_realtime_ns = get_int(c, "realtime_ns", false, 0);
    h->clock_monotonic_ns = get_int(c, "monotonic_ns", false, 0);
    c->obj = saved;
  } else if (clk && !json_is_null(clk)) {
    fail(c, "header record: field \"clock\" is not an object");
  }
  h->gpu_name = get_str(c, "gpu_name", false, intern(p, ""));
  h->gpu_uuid = get_str(c, "gpu_uuid", false, intern(p, ""));
  h->gpu_pci_bus_id = get_str(c, "gpu_pci_bus_id", false, intern(p, ""));
  h->gpu_arch = clamp_int(get_int(c, "gpu_arch", false, -1));
  h->valid = !c->bad;
  return !c->bad;
}

const char *const cs_ib_counter_names[CS_IB_NCOUNTERS] = {
  "symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_xmit_discards",
  "port_xmit_wait", "local_link_integrity_errors", "excessive_buffer_overrun_errors", "port_xmit_data",
  "port_rcv_data", "out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled"};

/* an optional non-negative integer field of the current object, -1 when absent */
static int64_t opt_count(struct lctx *c, const char *key) {
  json_t *v = json_object_get(c->obj, key);
  if (!v || json_is_null(v)) return -1;
  long long x = get_int(c, key, false, -1);
  return x < 0 ? -1 : x;
}

/* "health" record (docs/health.md); arrays beyond their caps are cut (the rest ignored) */
static void parse_health(struct lctx *c, struct freader *fr, size_t lineno) {
  struct cs_dumpfile *f = c->f;
  struct cs_health_rec r;
  memset(&r, 0, sizeof r);
  r.rank = clamp_int(get_int(c, "rank", false, f->hdr.rank));
  r.t_ns = get_int(c, "t_ns", true, 0);
  r.reasons = r.sm_mhz = r.mem_mhz = r.power_mw = r.temp_c = -1;
  r.ecc_corrected = r.ecc_uncorrected = r.remap_pending = r.remap_failure = r.pcie_replay = -1;
  r.nvlinks = r.nvlink_down = -1;
  json_t *saved = c->obj, *g = json_object_get(c->obj, "gpu");
  if (g && json_is_object(g)) {
    r.has_gpu = true;
    c->obj = g;
    r.reasons = opt_count(c, "reasons");
    r.sm_mhz = opt_count(c, "sm_mhz");
    r.mem_mhz = opt_count(c, "mem_mhz");
    r.power_mw = opt_count(c, "power_mw");
    r.temp_c = opt_count(c, "temp_c");
    r.ecc_corrected = opt_count(c, "ecc_corrected");
    r.ecc_uncorrected = opt_count(c, "ecc_uncorrected");
    r.remap_pending = opt_count(c, "remap_pending");
    r.remap_failure = opt_count(c, "remap_failure");
    r.pcie_replay = opt_count(c, "pcie_replay");
    r.nvlinks = (int)(opt_count(c, "nvlinks") > 64 ? 64 : opt_count(c, "nvlinks"));
    r.nvlink_down = (int)(opt_count(c, "nvlink_down") > 64 ? 64 : opt_count(c, "nvlink_down"));
    json_t *a = json_object_get(g, "nvlink");
    size_t i;
    json_t *e;
    if (a && json_is_array(a)) json_array_foreach(a, i, e) {
      if (r.nnvl >= CS_HEALTH_LINKS || !json_is_object(e)) break;
      c->obj = e;
      int64_t l = opt_count(c, "link");
      if (l < 0 || l >= 64) continue;
      r.nvl[r.nnvl].link = (int)l;
      r.nvl[r.nnvl].crc = opt_count(c, "crc");
      r.nvl[r.nnvl].replay = opt_count(c, "replay");
      r.nvl[r.nnvl].recovery = opt_count(c, "recovery");
      r.nnvl++;
    }
    a = json_object_get(g, "xid");
    if (a && json_is_array(a)) json_array_foreach(a, i, e) {
      if (r.nxid >= CS_HEALTH_XIDS) break;
      if (json_is_integer(e) && json_integer_value(e) >= 0) r.xid[r.nxid++] = json_integer_value(e);
    }
  } else if (g && !json_is_null(g)) {
    fail(c, "health record: field \"gpu\" is not an object");
  }
  c->obj = saved;
  json_t *ib = json_object_get(c->obj, "ib");
  r.port0 = (uint32_t)f->nhports;
  if (!c->bad && ib && json_is_array(ib)) {
    size_t i;
    json_t *e;
    json_array_foreach(ib, i, e) {
      if (r.nports >= 64 || !json_is_object(e)) break;
      struct cs_health_port p;
      memset(&p, 0, sizeof p);
      c->obj = e;
      p.rec = (uint32_t)f->nhealths;
      p.dev = get_str(c, "dev", false, intern(fr->set->pool, "?"));
      p.state = get_str(c, "state", false, intern(fr->set->pool, ""));
      p.port = clamp_int(get_int(c, "port", false, 0));
      p.rate_gbps = get_num(c, "rate_gbps", false, -1);
      for (int k = 0; k < CS_IB_NCOUNTERS; k++) p.c[k] = opt_count(c, cs_ib_counter_names[k]);
      c->obj = saved;
      if (c->bad) break;
      grow((void **)&f->hports, &f->hport_cap, f->nhports, sizeof *f->hports);
      f->hports[f->nhports++] = p;
      r.nports++;
    }
  }
  c->obj = saved;
  if (c->bad) { f->nhports = r.port0; return; }
  r.line = (uint32_t)lineno;
  grow((void **)&f->healths, &f->health_cap, f->nhealths, sizeof *f->healths);
  f->healths[f->nhealths++] = r;
}

/* optional "sdc":{"checked":N,"fp":HEX16|null,"in_sum":F|null,"in_abs":F|null,"out_sum":F|null} */
static void parse_op_sdc(struct lctx *c, struct cs_op_rec *r) {
  json_t *o = json_object_get(c->obj, "sdc");
  if (!o || json_is_null(o)) return;
  if (!json_is_object(o)) {
    fail(c, "op record: field \"sdc\" is not an object");
    return;
  }
  json_t *saved = c->obj;
  c->obj = o;
  long long checked = get_int(c, "checked", true, 0);
  r->sdc_checked = checked > 0 && checked < 4 ? (unsigned)checked : 0;
  bool has_fp = false;
  r->sdc_fp = get_hex(c, "fp", false, &has_fp);
  if ((r->sdc_checked & 1) && !has_fp) r->sdc_checked &= ~1u;
  r->sdc_in_sum = get_num(c, "in_sum", false, NAN);
  r->sdc_in_abs = get_num(c, "in_abs", false, NAN);
  r->sdc_out_sum = get_num(c, "out_sum", false, NAN);
  c->obj = saved;
}

static bool parse_op(struct lctx *c, struct cs_op_rec *r) {
  struct cs_strpool *p = c->set->pool;
  memset(r, 0, sizeof *r);
  r->comm = get_hex(c, "comm", true, NULL);
  r->comm_size = clamp_int(get_int(c, "comm_size", true, 0));
  r->comm_rank = clamp_int(get_int(c, "comm_rank", true, -1));
  r->rank = clamp_int(get_int(c, "rank", false, c->f->hdr.rank));
  r->seq = get_int(c, "seq", true, 0);
  r->op_name = get_str(c, "op", true, intern(p, "?"));
  r->op = cs_op_from_name(r->op_name);
  r->dtype = get_str(c, "dtype", false, intern(p, ""));
  r->count = get_int(c, "count", false, 0);
  r->bytes = get_uint(c, "bytes", true, 0);
  r->redop = get_str(c, "redop", false, NULL);
  r->root = clamp_int(get_int(c, "root", false, -1));
  r->peer = clamp_int(get_int(c, "peer", false, -1));
  r->stream = get_hex(c, "stream", false, NULL);
  r->group = get_int(c, "group", false, 0);
  r->enqueue_ns = get_int(c, "enqueue_ns", false, 0);
  r->start_ns = get_int(c, "start_ns", false, 0);
  r->end_ns = get_int(c, "end_ns", false, 0);
  r->dur_us = get_num(c, "dur_us", false, 0.0);
  r->timing_name = get_str(c, "timing", true, intern(p, "unknown"));
  r->timing = timing_from_name(r->timing_name);
  r->captured = get_bool(c, "captured", false, r->timing == CSD_TIMING_CAPTURED);
  r->site = get_str(c, "site", false, intern(p, ""));
  r->status = clamp_int(get_int(c, "status", false, 0));
  parse_op_sdc(c, r);
  /* comm_size < 1 (the writer's -1): a call on no known communicator, e.g. a NULL comm that
   * NCCL rejected; the record is read and counted like any other (its seq is -1) */
  return !c->bad;
}

static bool parse_xfer(struct lctx *c, struct cs_xfer_rec *r) {
  struct cs_strpool *p = c->set->pool;
  memset(r, 0, sizeof *r);
  r->op_name = get_str(c, "op", false, intern(p, "Memcpy"));
  r->api = get_str(c, "api", false, intern(p, ""));
  r->kind = get_str(c, "kind", false, intern(p, ""));
  r->bytes = get_uint(c, "bytes", true, 0);
  r->stream = get_hex(c, "stream", false, NULL);
  r->async = get_bool(c, "async", false, false);
  r->enqueue_ns = get_int(c, "enqueue_ns", false, 0);
  r->start_ns = get_int(c, "start_ns", false, 0);
  r->end_ns = get_int(c, "end_ns", false, 0);
  r->dur_us = get_num(c, "dur_us", false, 0.0);
  r->timing_name = get_str(c, "timing", true, intern(p, "unknown"));
  r->timing = timing_from_name(r->timing_name);
  r->site = get_str(c, "site", false, intern(p, ""));
  r->status = clamp_int(get_int(c, "status", false, 0));
  return !c->bad;
}

static bool parse_comm(struct lctx *c, struct cs_comm_rec *r) {
  memset(r, 0, sizeof *r);
  r->event = get_str(c, "event", true, intern(c->set->pool, "?"));
  r->comm = get_hex(c, "comm", true, NULL);
  r->size = clamp_int(get_int(c, "size", false, 0));
  r->rank = clamp_int(get_int(c, "rank", false, -1));
  r->device = clamp_int(get_int(c, "device", false, -1));
  r->parent = get_hex(c, "parent", false, &r->has_parent);
  r->t_ns = get_int(c, "t_ns", false, 0);
  return !c->bad;
}

/* ---------- file loading ---------- */

/* collscope-<host>-r<rank|x>-p<pid>[.N].jsonl -> host, rank, pid (best effort; the writer
 * adds .N when the plain name already exists). */
static void header_from_name(struct cs_dumpset *set, struct cs_dumpfile *f) {
  struct cs_header *h = &f->hdr;
  memset(h, 0, sizeof *h);
  h->schema = COLLSCOPE_SCHEMA_VERSION;
  h->rank = h->local_rank = h->world_size = h->device = -1;
  h->collscope = h->job = h->pci_bus_id = h->exe = intern(set->pool, "");
  h->host = intern(set->pool, "?");
  char *s = xstrdup(f->name);
  size_t n = strlen(s);
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
        h->rank = clamp_int(strtoll(rp + 2, NULL, 10));
      *rp = 0;
      if (s[10]) h->host = intern(set->pool, s + 10);
    }
  }
  free(s);
}

static const char *json_type_word(json_t *v) {
  switch (json_typeof(v)) {
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: case JSON_REAL: return "a number";
  case JSON_TRUE: case JSON_FALSE: return "a boolean";
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
    if (len < CS_DUMP_LINE_MAX) buf[len++] = (char)ch;
    else *too_long = true;
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
  fr->ops_seen++;
  if (!fr->first_op_rank_set) {
    fr->first_op_rank = r->rank;
    fr->first_op_rank_set = true;
  }
  if (fr->sink) {
    fr->sink->op(fr->sink->ctx, fr->worker, fr->index, f, r);
    return;
  }
  grow((void **)&f->ops, &f->op_cap, f->nops, sizeof *f->ops);
  f->ops[f->nops++] = *r;
}

/* the interned string of a field through the reader's cache (no lock on a hit) */
static const char *cached(struct freader *fr, struct icache *c, struct cs_slice v, int *op, enum csd_timing *tm) {
  unsigned i = 0;
  for (; i < ICACHE_N; i++)
    if (c->e[i].s && c->e[i].n == v.n && memcmp(c->e[i].s, v.s, v.n) == 0) break;
  if (i == ICACHE_N) {
    i = c->next++ % ICACHE_N;
    c->e[i].s = intern_n(fr->set->pool, v.s, v.n);
    c->e[i].n = v.n;
    c->e[i].op = cs_op_from_name(c->e[i].s);
    c->e[i].timing = timing_from_name(c->e[i].s);
  }
  if (op) *op = c->e[i].op;
  if (tm) *tm = c->e[i].timing;
  return c->e[i].s;
}

/* The fast path (DESIGN.md "Reading dumps"): an op line in the writer's own layout, read by
 * tools/opscan.c with the values parse_op() would give; false: read it with jansson. */
static bool fast_op(struct freader *fr, const char *buf, size_t len) {
  struct cs_opscan s;
  if (!cs_opscan(buf, len, &s)) return false;
  struct cs_op_rec r;
  memset(&r, 0, sizeof r);
  r.comm = s.comm;
  r.comm_size = clamp_int(s.comm_size);
  r.comm_rank = clamp_int(s.comm_rank);
  r.rank = clamp_int(s.rank);
  r.seq = s.seq;
  r.op_name = cached(fr, &fr->c_op, s.op, &r.op, NULL);
  r.dtype = cached(fr, &fr->c_dtype, s.dtype, NULL, NULL);
  r.count = s.count;
  r.bytes = s.bytes;
  r.redop = s.redop.s ? cached(fr, &fr->c_redop, s.redop, NULL, NULL) : NULL;
  r.root = clamp_int(s.root);
  r.peer = clamp_int(s.peer);
  r.stream = s.stream;
  r.group = s.group;
  r.enqueue_ns = s.enqueue_ns;
  r.start_ns = s.start_ns;
  r.end_ns = s.end_ns;
  r.dur_us = s.dur_us;
  r.timing_name = cached(fr, &fr->c_timing, s.timing, NULL, &r.timing);
  r.captured = s.captured;
  r.site = cached(fr, &fr->c_site, s.site, NULL, NULL);
  r.status = clamp_int(s.status);
  r.sdc_checked = s.sdc_checked;
  r.sdc_fp = s.sdc_fp;
  r.sdc_in_sum = s.sdc_in_sum;
  r.sdc_in_abs = s.sdc_in_abs;
  r.sdc_out_sum = s.sdc_out_sum;
  deliver_op(fr, &r);
  return true;
}

static void rd_start(struct freader *fr, struct cs_dumpset *set, struct cs_dumpfile *f, size_t index) {
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
  if (!fr->have_header && f->hdr.rank < 0 && fr->first_op_rank_set) f->hdr.rank = fr->first_op_rank;
  if (f->has_footer) {   /* what the writer says it wrote, against what the file holds */
    uint64_t lo = f->footer_ops > fr->ops_seen ? f->footer_ops - fr->ops_seen : 0;
    uint64_t lx = f->footer_xfers > f->nxfers ? f->footer_xfers - f->nxfers : 0;
    f->lost = lo + lx < lo ? UINT64_MAX : lo + lx;   /* saturated: a hostile footer */
  }
}

/* One line of the file, its newline (has_nl) removed; too_long: a line over CS_DUMP_LINE_MAX,
 * skipped unread (buf then empty). buf[len] is writable. */
static void rd_line(struct freader *fr, char *buf, size_t len0, bool has_nl, bool too_long) {
  if (!fr->ok) return;   /* an unsupported schema ends the file */
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
  if (len == 0 && has_nl) return;   /* blank line: ignore */
  if (lineno > 1 && fast_op(fr, buf, (size_t)len)) return;

  json_error_t jerr;
  json_t *obj = json_loadb(buf, (size_t)len, 0, &jerr);
  if (!obj) {
    if (!has_nl) {
      f->truncated_lines++;   /* the writer died mid-line: expected, not an error */
    } else {
      f->malformed_lines++;
      rd_error(fr, "%s:%zu: invalid JSON: %s (column %d)", f->path, lineno, jerr.text,
                jerr.column);
    }
    return;
  }
  struct lctx c = {.set = set, .f = f, .obj = obj, .type = "?"};
  if (!json_is_object(obj)) {
    fail(&c, "line is %s, not a JSON object", json_type_word(obj));
  } else {
    json_t *t = json_object_get(obj, "type");
    if (!json_is_string(t)) fail(&c, "missing string field \"type\"");
    else c.type = json_string_value(t);
  }

  if (!c.bad && strcmp(c.type, "header") == 0) {
    if (lineno != 1 || fr->have_header) {
      fail(&c, "unexpected header record (the header must be line 1)");
    } else {
      struct cs_header h = f->hdr;
      if (parse_header(&c, &h)) {
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
    if (parse_op(&c, &r)) deliver_op(fr, &r);
  } else if (strcmp(c.type, "xfer") == 0) {
    struct cs_xfer_rec r;
    if (parse_xfer(&c, &r)) {
      r.line = (uint32_t)lineno;
      grow((void **)&f->xfers, &f->xfer_cap, f->nxfers, sizeof *f->xfers);
      f->xfers[f->nxfers++] = r;
    }
  } else if (strcmp(c.type, "comm") == 0) {
    struct cs_comm_rec r;
    if (parse_comm(&c, &r)) {
      r.line = (uint32_t)lineno;
      grow((void **)&f->comms, &f->comm_cap, f->ncomms, sizeof *f->comms);
      f->comms[f->ncomms++] = r;
    }
  } else if (strcmp(c.type, "hang") == 0) {
    struct cs_hang_rec r = {0};
    r.comm = get_hex(&c, "comm", true, NULL);
    r.comm_size = clamp_int(get_int(&c, "comm_size", false, 0));
    r.comm_rank = clamp_int(get_int(&c, "comm_rank", true, -1));
    r.rank = clamp_int(get_int(&c, "rank", false, f->hdr.rank));
    r.seq = get_int(&c, "seq", true, 0);
    r.op_name = get_str(&c, "op", false, intern(set->pool, "?"));
    r.enqueue_ns = get_int(&c, "enqueue_ns", false, 0);
    r.t_ns = get_int(&c, "t_ns", false, 0);
    r.age_s = (double)get_int(&c, "age_ms", false, 0) / 1e3;
    r.started = get_bool(&c, "started", false, false);
    if (!c.bad) {
      r.line = (uint32_t)lineno;
      grow((void **)&f->hangs, &f->hang_cap, f->nhangs, sizeof *f->hangs);
      f->hangs[f->nhangs++] = r;
    }
  } else if (strcmp(c.type, "link") == 0) {   /* NCCL_NET wrapper */
    struct cs_link_rec r = {0};
    const char *dir = get_str(&c, "dir", true, "");
    r.send = dir && strcmp(dir, "send") == 0;
    if (!c.bad && !r.send && strcmp(dir, "recv") != 0) fail(&c, "field \"dir\" is neither \"send\" nor \"recv\"");
    r.rank = clamp_int(get_int(&c, "rank", false, f->hdr.rank));
    r.peer = clamp_int(get_int(&c, "peer", false, -1));
    r.conn = get_hex(&c, "conn", false, NULL);
    r.dev = clamp_int(get_int(&c, "dev", false, -1));
    r.bytes = get_uint(&c, "bytes", true, 0);
    r.msgs = get_uint(&c, "msgs", false, 0);
    r.busy_us = get_num(&c, "busy_us", false, 0);
    r.gbps_p50 = get_num(&c, "gbps_p50", false, 0);
    r.gbps_p10 = get_num(&c, "gbps_p10", false, 0);
    r.gbps_mean = get_num(&c, "gbps_mean", false, 0);
    r.max_inflight = get_uint(&c, "max_inflight", false, 0);
    r.t0_ns = get_int(&c, "t0_ns", false, 0);
    r.t_ns = get_int(&c, "t_ns", false, 0);
    r.closed = get_bool(&c, "closed", false, false);
    if (!c.bad) {
      r.line = (uint32_t)lineno;
      grow((void **)&f->links, &f->link_cap, f->nlinks, sizeof *f->links);
      f->links[f->nlinks++] = r;
    }
  } else if (strcmp(c.type, "health") == 0) {   /* hooks/health.c */
    parse_health(&c, fr, lineno);
  } else if (strcmp(c.type, "drops") == 0) {
    uint64_t n = get_uint(&c, "count", true, 0);
    if (!c.bad) f->drops_records += n;
  } else if (strcmp(c.type, "footer") == 0) {
    uint64_t o = get_uint(&c, "ops", false, 0), x = get_uint(&c, "xfers", false, 0);
    uint64_t d = get_uint(&c, "drops", false, 0), tl = get_uint(&c, "timing_lost", false, 0);
    int64_t t = get_int(&c, "t_ns", false, 0);
    const char *prof = get_str(&c, "profiler", false, NULL);
    const char *ptr = get_str(&c, "prof_trusted", false, ""), *prj = get_str(&c, "prof_rejected", false, "");
    uint64_t pp = get_uint(&c, "prof_probes", false, 0), pa = get_uint(&c, "prof_agreed", false, 0);
    const char *sdc = get_str(&c, "sdc", false, NULL);
    uint64_t sl = get_uint(&c, "sdc_launches", false, 0), sn = get_uint(&c, "sdc_no_slot", false, 0);
    if (!c.bad) {
      f->footer_sdc = sdc;
      f->footer_sdc_launches = sl;
      f->footer_sdc_no_slot = sn;
      f->footer_profiler = prof;
      f->footer_prof_trusted = ptr;
      f->footer_prof_rejected = prj;
      f->footer_prof_probes = pp;
      f->footer_prof_agreed = pa;
      f->has_footer = true;
      f->footer_ops = o;
      f->footer_xfers = x;
      f->footer_drops = d;
      f->footer_timing_lost = tl;
      f->footer_t_ns = t;
    }
  } else {
    f->unknown_types++;
  }
  if (c.bad) {
    if (!has_nl) {
      f->truncated_lines++;   /* cannot happen for a cut object, kept for safety */
    } else {
      f->malformed_lines++;
      rd_error(fr, "%s:%zu: %s", f->path, lineno, c.err);
    }
  }
  json_decref(obj);
}

/* Reads one file into f. Returns false when the file is unusable as a whole (I/O error,
 * unsupported schema); the message is in fr's errors. */
static bool load_file(struct freader *fr) {
  struct cs_dumpfile *f = fr->f;
  FILE *fp = fopen(f->path, "re");
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
  rd_finish(fr);
  return fr->ok;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_files(const void *a, const void *b) {
  const struct cs_dumpfile *x = a, *y = b;
  unsigned rx = (unsigned)x->hdr.rank, ry = (unsigned)y->hdr.rank;   /* -1 sorts last */
  if (rx != ry) return rx < ry ? -1 : 1;
  int c = strcmp(x->hdr.host, y->hdr.host);
  if (c) return c;
  if (x->hdr.pid != y->hdr.pid) return x->hdr.pid < y->hdr.pid ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void add_file(struct cs_dumpset *set, size_t *cap, const char *path) {
  grow((void **)&set->files, cap, set->nfiles, sizeof *set->files);
  struct cs_dumpfile *f = &set->files[set->nfiles++];
  memset(f, 0, sizeof *f);
  f->path = xstrdup(path);
  const char *slash = strrchr(f->path, '/');
  f->name = slash ? slash + 1 : f->path;
}

static void free_file(struct cs_dumpfile *f) {
  free(f->path);
  free(f->ops);
  free(f->xfers);
  free(f->comms);
  free(f->hangs);
  free(f->links);
  free(f->healths);
  free(f->hports);
}

/* ---------- one job per set ---------- */

struct job_count {
  const char *job;   /* interned */
  size_t files;
};

/* Keeps the files of `job` (NULL: the only job found). Returns false (message added) when the
 * set holds several jobs and none was picked, or the picked one is absent. */
static bool select_job(struct cs_dumpset *set, const char *job) {
  struct job_count *jobs = xrealloc(NULL, (set->nfiles + 1) * sizeof *jobs);
  size_t nj = 0, unnamed = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const char *j = set->files[i].hdr.job;
    if (!*j) {
      unnamed++;
      continue;
    }
    size_t k = 0;
    while (k < nj && jobs[k].job != j) k++;   /* interned */
    if (k == nj) jobs[nj++] = (struct job_count){j, 0};
    jobs[k].files++;
  }
  bool ok = true;
  const char *keep = NULL;
  if (job) {
    keep = intern(set->pool, job);
  } else if (nj == 1) {
    keep = jobs[0].job;
  } else if (nj > 1) {
    char *list = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&list, &len);
    if (!m) oom();
    char b[256];
    for (size_t k = 0; k < nj; k++)
      fprintf(m, "%s%s (%zu file%s)", k ? ", " : "", cs_text_safe(jobs[k].job, b, sizeof b), jobs[k].files,
              jobs[k].files == 1 ? "" : "s");
    if (unnamed) fprintf(m, ", %zu file%s without a job id", unnamed, unnamed == 1 ? "" : "s");
    fclose(m);
    add_error(set, "%s: dumps of %zu jobs, not mixed: %s; pick one with --job ID", set->path, nj, list);
    free(list);
    ok = false;
  }
  set->job = keep ? keep : intern(set->pool, "");
  if (ok && keep) {
    size_t w = 0;
    for (size_t i = 0; i < set->nfiles; i++) {
      struct cs_dumpfile *f = &set->files[i];
      bool mine = f->hdr.job == keep || (!job && !*f->hdr.job);
      if (mine) {
        set->files[w++] = *f;
      } else {
        free_file(f);
        set->other_job_files++;
      }
    }
    set->nfiles = w;
    if (!w) {
      char b[256];
      add_error(set, "%s: no dumps of job %s", set->path, cs_text_safe(keep, b, sizeof b));
      ok = false;
    } else if (set->other_job_files) {
      char b[256];
      add_error(set, "%s: %zu file%s of other jobs (or without a job id) left out, reporting job %s", set->path,
                set->other_job_files, set->other_job_files == 1 ? "" : "s", cs_text_safe(keep, b, sizeof b));
    }
  }
  free(jobs);
  return ok;
}

/* ---------- a salvage file next to its process's own dump ---------- */

/* A record's identity within one process: ops by (comm, seq) (seq counts every call per
 * communicator), unnumbered ops, xfers and comm events by their times and ids. */
struct rec_key {
  uint64_t kind, a, b, c;
};
static int cmp_key(const void *x, const void *y) {
  const struct rec_key *p = x, *q = y;
  if (p->kind != q->kind) return p->kind < q->kind ? -1 : 1;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return p->c < q->c ? -1 : p->c > q->c;
}
static struct rec_key op_key(const struct cs_op_rec *o) {
  if (o->seq >= 0) return (struct rec_key){0, o->comm, (uint64_t)o->seq, 0};
  return (struct rec_key){1, o->comm, (uint64_t)o->enqueue_ns, (uint64_t)o->op};
}
static struct rec_key xfer_key(const struct cs_xfer_rec *x) {
  return (struct rec_key){2, (uint64_t)x->enqueue_ns, x->stream, x->bytes};
}
static struct rec_key comm_key(const struct cs_comm_rec *c) {
  return (struct rec_key){3, c->comm, (uint64_t)c->t_ns, (uint64_t)(uintptr_t)c->event};
}
static struct rec_key hang_key(const struct cs_hang_rec *h) {
  return (struct rec_key){4, h->comm, (uint64_t)h->seq, 0};
}
static bool have_key(const struct rec_key *v, size_t n, struct rec_key k) {
  return n && bsearch(&k, v, n, sizeof *v, cmp_key) != NULL;
}

/* Moves the records of salvage file s that dump file d lacks into d; s is then empty. */
static void merge_salvage(struct cs_dumpfile *d, struct cs_dumpfile *s) {
  size_t n = d->nops + d->nxfers + d->ncomms + d->nhangs, k = 0;
  struct rec_key *v = xrealloc(NULL, (n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < d->nops; i++) v[k++] = op_key(&d->ops[i]);
  for (size_t i = 0; i < d->nxfers; i++) v[k++] = xfer_key(&d->xfers[i]);
  for (size_t i = 0; i < d->ncomms; i++) v[k++] = comm_key(&d->comms[i]);
  for (size_t i = 0; i < d->nhangs; i++) v[k++] = hang_key(&d->hangs[i]);
  if (n) qsort(v, n, sizeof *v, cmp_key);
#define MERGE(arr, cnt, cap, keyf)                                   \
  for (size_t i = 0; i < s->cnt; i++) {                              \
    if (have_key(v, n, keyf(&s->arr[i]))) {                          \
      d->dup_salvage++;                                              \
      continue;                                                      \
    }                                                                \
    grow((void **)&d->arr, &d->cap, d->cnt, sizeof *d->arr);         \
    d->arr[d->cnt++] = s->arr[i];                                    \
    d->merged_salvage++;                                             \
  }
  MERGE(ops, nops, op_cap, op_key)
  MERGE(xfers, nxfers, xfer_cap, xfer_key)
  MERGE(comms, ncomms, comm_cap, comm_key)
  MERGE(hangs, nhangs, hang_cap, hang_key)
#undef MERGE
  d->truncated_lines += s->truncated_lines;
  d->malformed_lines += s->malformed_lines;
  d->unknown_types += s->unknown_types;
  d->lines += s->lines;
  free(v);
}

static bool is_salvage(const struct cs_dumpfile *f) {
  size_t l = strlen(f->name);
  return f->hdr.salvaged || (l > 14 && strcmp(f->name + l - 14, ".salvage.jsonl") == 0);
}

/* Each salvage file whose process (host, pid) also left its own dump is merged into it. */
static void merge_salvaged(struct cs_dumpset *set) {
  size_t w = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    struct cs_dumpfile *s = &set->files[i];
    struct cs_dumpfile *d = NULL;
    if (is_salvage(s) && s->hdr.pid > 0)
      for (size_t j = 0; j < set->nfiles && !d; j++) {
        struct cs_dumpfile *c = &set->files[j];
        if (c->path && !is_salvage(c) && c->hdr.pid == s->hdr.pid && c->hdr.host == s->hdr.host) d = c;
      }
    if (d) {
      merge_salvage(d, s);
      free_file(s);
      s->path = NULL;   /* gone: its records live in d */
    }
  }
  for (size_t i = 0; i < set->nfiles; i++)
    if (set->files[i].path) set->files[w++] = set->files[i];
  set->nfiles = w;
}

struct cs_dumpset *cs_dumpset_load(const char *path) { return cs_dumpset_load_job(path, NULL); }

/* A new set with the files of PATH (a directory's *.jsonl in name order, or one file), not
 * read yet; fatal (with the error) when there are none. */
static struct cs_dumpset *discover(const char *path) {
  struct cs_dumpset *set = calloc(1, sizeof *set);
  if (!set) oom();
  set->pool = calloc(1, sizeof *set->pool);
  if (!set->pool) oom();
  pthread_mutex_init(&set->pool->lock, NULL);
  set->path = xstrdup(path);
  set->job = intern(set->pool, "");
  size_t cap = 0;

  struct stat st;
  if (stat(path, &st) != 0) {
    add_error(set, "%s: %s", path, strerror(errno));
    set->fatal = true;
    return set;
  }
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d) {
      add_error(set, "%s: cannot open directory: %s", path, strerror(errno));
      set->fatal = true;
      return set;
    }
    char **names = NULL;
    size_t nn = 0, ncap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      size_t l = strlen(de->d_name);
      if (l <= 6 || strcmp(de->d_name + l - 6, ".jsonl") != 0) continue;
      char *full = NULL;
      if (asprintf(&full, "%s/%s", path, de->d_name) < 0) oom();
      struct stat fst;
      if (stat(full, &fst) != 0 || !S_ISREG(fst.st_mode)) {
        free(full);
        continue;
      }
      grow((void **)&names, &ncap, nn, sizeof *names);
      names[nn++] = full;
    }
    closedir(d);
    if (nn) qsort(names, nn, sizeof *names, cmp_names); /* qsort(NULL, 0) is UB */
    for (size_t i = 0; i < nn; i++) {
      add_file(set, &cap, names[i]);
      free(names[i]);
    }
    free(names);
    if (set->nfiles == 0) {
      add_error(set, "%s: no dump files (*.jsonl) found", path);
      set->fatal = true;
      return set;
    }
  } else {
    add_file(set, &cap, path);
  }

  return set;
}

/* Every file read: errors in file order, the job picked, salvage merged, files sorted,
 * record file indices set. */
static void finish_set(struct cs_dumpset *set, struct freader *fr, const char *job) {
  for (size_t i = 0; i < set->nfiles; i++) {
    if (!fr[i].ok) set->fatal = true;
    rd_flush_errors(&fr[i]);
  }
  if (!select_job(set, job)) set->fatal = true;
  merge_salvaged(set);
  if (set->nfiles) qsort(set->files, set->nfiles, sizeof *set->files, cmp_files);
  for (size_t i = 0; i < set->nfiles; i++) {
    struct cs_dumpfile *f = &set->files[i];
    for (size_t k = 0; k < f->nops; k++) f->ops[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nxfers; k++) f->xfers[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->ncomms; k++) f->comms[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nhangs; k++) f->hangs[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nlinks; k++) f->links[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nhealths; k++) f->healths[k].file = (uint32_t)i;
  }
}

struct load_job { struct freader *fr; };
static void load_one(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  struct load_job *j = ctx;
  load_file(&j->fr[i]);
}

struct cs_dumpset *cs_dumpset_load_job(const char *path, const char *job) {
  struct cs_dumpset *set = discover(path);
  if (set->fatal) return set;
  struct freader *fr = calloc(set->nfiles, sizeof *fr);
  if (!fr) oom();
  for (size_t i = 0; i < set->nfiles; i++) rd_start(&fr[i], set, &set->files[i], i);
  struct load_job j = {fr};
  cs_pool_run(cs_pool_default_jobs(), set->nfiles, load_one, &j);
  finish_set(set, fr, job);
  free(fr);
  return set;
}

/* ---------- streaming: every file a piece at a time, in rounds ---------- */

/* Read the file's next piece (about `chunk` bytes) into the reading thread's buffer `buf`
 * (wcap bytes: chunk + CS_DUMP_LINE_MAX + 2) and every complete line in it; in the header round
 * only line 1 (reading on until it is whole). Between pieces the file keeps only its partial
 * last line (fr->buf), so memory is per thread, not per file. */
static void rd_piece(struct freader *fr, size_t chunk, char *buf, size_t wcap) {
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
  }
  size_t blen = fr->blen;
  if (blen) memcpy(buf, fr->buf, blen);
  bool at_end = false;
  for (size_t want = blen + chunk < wcap - 1 ? blen + chunk : wcap - 1;;) {
    while (blen < want) {
      ssize_t n = read(fr->fd, buf + blen, want - blen);
      if (n < 0 && errno == EINTR) continue;
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
      blen += (size_t)n;
    }
    if (!fr->header_only || at_end || want >= wcap - 1 || memchr(buf, '\n', blen)) break;
    want = blen + chunk < wcap - 1 ? blen + chunk : wcap - 1;   /* line 1 is not whole yet */
  }
  size_t pos = 0;
  while (pos < blen && fr->ok) {
    char *nl = memchr(buf + pos, '\n', blen - pos);
    if (!nl) break;
    size_t len = (size_t)(nl - (buf + pos));
    if (fr->skipping) fr->skipping = false;   /* the end of a line already counted as too long */
    else if (len > CS_DUMP_LINE_MAX) rd_line(fr, buf + pos, 0, true, true);
    else rd_line(fr, buf + pos, len, true, false);
    pos += len + 1;
    if (fr->header_only) break;
  }
  if (!fr->ok) at_end = true;
  size_t rest = blen - pos;
  if (rest > CS_DUMP_LINE_MAX && !fr->header_only) {   /* no newline in rest: a line this long is skipped unread */
    if (!fr->skipping) rd_line(fr, buf + pos, 0, true, true);
    fr->skipping = true;
    pos = blen;
    rest = 0;
  }
  if (at_end && !(fr->header_only && rest)) {
    if (rest && !fr->skipping && fr->ok) rd_line(fr, buf + pos, rest, false, false);   /* cut off */
    rest = 0;
    fr->eof = true;
  }
  fr->blen = rest;   /* keep the partial line */
  if (rest) {
    fr->buf = xrealloc(fr->buf, rest);
    memcpy(fr->buf, buf + pos, rest);
  }
  if (fr->eof) {
    if (fr->fd >= 0) close(fr->fd);
    fr->fd = -1;
    free(fr->buf);
    fr->buf = NULL;
    fr->bcap = 0;
    rd_finish(fr);
  }
}

/* Close a file that will not be read further (another job's). */
static void rd_drop(struct freader *fr) {
  if (fr->fd >= 0) close(fr->fd);
  fr->fd = -1;
  free(fr->buf);
  fr->buf = NULL;
  fr->bcap = fr->blen = 0;
  fr->eof = fr->excluded = true;
}

/* select_job()'s choice made on the headers, before the records are read: the files it will
 * leave out are marked excluded. All are when it will refuse the set. */
static void mark_job(struct cs_dumpset *set, struct freader *fr, const char *job) {
  const char *keep = job ? intern(set->pool, job) : NULL;
  if (!job) {
    size_t nj = 0;
    for (size_t i = 0; i < set->nfiles; i++) {
      const char *j = set->files[i].hdr.job;
      if (!*j || j == keep) continue;
      if (!keep) keep = j, nj = 1;
      else nj = 2;
    }
    if (nj > 1) {   /* several jobs, none picked: refused, nothing to read */
      for (size_t i = 0; i < set->nfiles; i++) rd_drop(&fr[i]);
      return;
    }
    if (!keep) return;   /* no job ids at all: every file */
  }
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    bool mine = f->hdr.job == keep || (!job && !*f->hdr.job);
    if (!mine) rd_drop(&fr[i]);
  }
}

/* a salvage file whose process also left its own dump (merge_salvaged's pairs) */
static bool salvage_pairs(const struct cs_dumpset *set, const struct freader *fr) {
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *s = &set->files[i];
    if (fr[i].excluded || !is_salvage(s) || s->hdr.pid <= 0) continue;
    for (size_t j = 0; j < set->nfiles; j++) {
      const struct cs_dumpfile *c = &set->files[j];
      if (!fr[j].excluded && !is_salvage(c) && c->hdr.pid == s->hdr.pid && c->hdr.host == s->hdr.host) return true;
    }
  }
  return false;
}

struct stream_job {
  struct freader *fr;
  size_t *live, chunk, wcap;
  char **wbuf;   /* one piece buffer per reading thread */
};
static void stream_one(void *ctx, size_t i, unsigned worker) {
  struct stream_job *j = ctx;
  struct freader *fr = &j->fr[j->live[i]];
  fr->worker = worker;
  if (!j->wbuf[worker]) j->wbuf[worker] = xrealloc(NULL, j->wcap);
  rd_piece(fr, fr->header_only ? 4096 : j->chunk, j->wbuf[worker], j->wcap);
}

struct cs_dumpset *cs_dumpset_stream(const char *path, const char *job, const struct cs_stream_ops *ops) {
  struct cs_dumpset *set = discover(path);
  if (set->fatal) return set;
  size_t n = set->nfiles;
  struct freader *fr = calloc(n, sizeof *fr);
  size_t *live = calloc(n, sizeof *live);
  bool *done = calloc(n, sizeof *done);
  if (!fr || !live || !done) oom();
  for (size_t i = 0; i < n; i++) rd_start(&fr[i], set, &set->files[i], i);
  /* the text read per round over all files is bounded by `budget` */
  size_t budget = ops->budget ? ops->budget : (size_t)64 << 20;
  size_t chunk = budget / n;
  if (chunk < ((size_t)16 << 10)) chunk = (size_t)16 << 10;
  if (chunk > ((size_t)1 << 20)) chunk = (size_t)1 << 20;
  unsigned jobs = ops->jobs ? ops->jobs : cs_pool_default_jobs();
  struct stream_job j = {fr, live, chunk, chunk + CS_DUMP_LINE_MAX + 2, calloc(jobs, sizeof(char *))};
  if (!j.wbuf) oom();
  /* the header round: line 1 of every file, then the job, and whether salvage must merge */
  for (size_t i = 0; i < n; i++) {
    live[i] = i;
    fr[i].header_only = true;
  }
  cs_pool_run(jobs, n, stream_one, &j);
  for (size_t i = 0; i < n; i++) fr[i].header_only = false;
  mark_job(set, fr, job);
  if (salvage_pairs(set, fr)) {
    for (size_t i = 0; i < n; i++) {
      rd_drop(&fr[i]);
      for (size_t k = 0; k < fr[i].nerrors; k++) free(fr[i].errors[k]);
      free(fr[i].errors);
    }
    free(fr);
    free(live);
    free(done);
    for (unsigned k = 0; k < jobs; k++) free(j.wbuf[k]);
    free(j.wbuf);
    cs_dumpset_free(set);
    set = calloc(1, sizeof *set);
    if (!set) oom();
    set->whole = true;
    return set;
  }
  if (ops->begin) ops->begin(ops->ctx, n);
  for (size_t i = 0; i < n; i++) {   /* from now on ops go to the sink; a headerless file's line 1 too */
    struct cs_dumpfile *f = &set->files[i];
    fr[i].sink = ops;
    for (size_t k = 0; k < f->nops && !fr[i].excluded; k++) ops->op(ops->ctx, 0, i, f, &f->ops[k]);
    free(f->ops);
    f->ops = NULL;
    f->nops = f->op_cap = 0;
  }
  for (;;) {
    size_t nl = 0;
    for (size_t i = 0; i < n; i++)
      if (!fr[i].eof) live[nl++] = i;
    for (size_t i = 0; i < n; i++) done[i] = fr[i].eof;
    if (ops->round) ops->round(ops->ctx, done, n);   /* also after the header round */
    if (!nl) break;
    cs_pool_run(jobs, nl, stream_one, &j);
  }
  finish_set(set, fr, job);
  free(fr);
  free(live);
  free(done);
  for (unsigned k = 0; k < jobs; k++) free(j.wbuf[k]);
  free(j.wbuf);
  return set;
}

struct cs_dumpset *cs_dumpset_load_cli(const char *path, const char *job) {
  struct cs_dumpset *set = cs_dumpset_load_job(path, job);
  cs_dumpset_print_errors(set, stderr);
  if (set->fatal) {
    cs_dumpset_free(set);
    return NULL;
  }
  return set;
}

void cs_dumpset_free(struct cs_dumpset *set) {
  if (!set) return;
  for (size_t i = 0; i < set->nfiles; i++) free_file(&set->files[i]);
  free(set->files);
  for (size_t i = 0; i < set->nerrors; i++) free(set->errors[i]);
  free(set->errors);
  pool_free(set->pool);
  free(set->path);
  free(set);
}

/* ---------- collective instances ---------- */

static int cmp_inst(const void *a, const void *b) {
  const struct cs_op_rec *x = *(const struct cs_op_rec *const *)a;
  const struct cs_op_rec *y = *(const struct cs_op_rec *const *)b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->comm_rank != y->comm_rank) return x->comm_rank < y->comm_rank ? -1 : 1;
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

int cs_group_instances(const struct cs_dumpset *set, struct cs_instances *out) {
  memset(out, 0, sizeof *out);
  size_t total = 0;
  for (size_t i = 0; i < set->nfiles; i++) total += set->files[i].nops;
  if (total == 0) return 0;
  out->storage = xrealloc(NULL, total * sizeof *out->storage);
  size_t k = 0;
  for (size_t i = 0; i < set->nfiles; i++)
    for (size_t j = 0; j < set->files[i].nops; j++)
      if (set->files[i].ops[j].seq >= 0) out->storage[k++] = &set->files[i].ops[j];
  total = k;
  if (total) qsort(out->storage, total, sizeof *out->storage, cmp_inst);
  size_t cap = 0;
  for (size_t i = 0; i < total;) {
    size_t j = i + 1;
    while (j < total && out->storage[j]->comm == out->storage[i]->comm &&
           out->storage[j]->seq == out->storage[i]->seq)
      j++;
    grow((void **)&out->v, &cap, out->n, sizeof *out->v);
    struct cs_instance *in = &out->v[out->n++];
    memset(in, 0, sizeof *in);
    in->comm = out->storage[i]->comm;
    in->seq = out->storage[i]->seq;
    in->op_name = out->storage[i]->op_name;
    in->n = j - i;
    in->ops = &out->storage[i];
    for (size_t m = i; m < j; m++) {
      if (out->storage[m]->comm_size > in->comm_size) in->comm_size = out->storage[m]->comm_size;
      if (out->storage[m]->op_name != in->op_name) in->mixed_ops = true;   /* interned */
    }
    i = j;
  }
  return 0;
}

void cs_instances_free(struct cs_instances *inst) {
  free(inst->v);
  free(inst->storage);
  memset(inst, 0, sizeof *inst);
}
