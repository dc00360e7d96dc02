/* tools/dump_records.c: one dump line's JSON object into one record (DESIGN.md "Dump files"):
 * typed field access where the first problem of a line wins and names the field, and one
 * parser per record type. The fast path for the writer's own op lines is tools/opscan.c;
 * both give the same values. Part of the reader (tools/dumpfile.h). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/schema.h"
#include "dump_internal.h"

__attribute__((format(printf, 2, 3)))
void dump_fail(struct lctx *c, const char *fmt, ...) {
  if (c->bad) return;
  c->bad = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
}

/* Returns the field, or NULL (after dump_fail() when required) when absent or null. */
static json_t *field(struct lctx *c, const char *key, bool required) {
  json_t *v = json_object_get(c->obj, key);
  if (v && !json_is_null(v)) return v;
  if (required) dump_fail(c, "%s record: missing field \"%s\"", c->type, key);
  return NULL;
}

static long long get_int(struct lctx *c, const char *key, bool required, long long def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_integer(v)) {
    dump_fail(c, "%s record: field \"%s\" is not an integer", c->type, key);
    return def;
  }
  return json_integer_value(v);
}

static uint64_t get_uint(struct lctx *c, const char *key, bool required, uint64_t def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_integer(v) || json_integer_value(v) < 0) {
    dump_fail(c, "%s record: field \"%s\" is not a non-negative integer", c->type, key);
    return def;
  }
  return (uint64_t)json_integer_value(v);
}

static double get_num(struct lctx *c, const char *key, bool required, double def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_number(v)) {
    dump_fail(c, "%s record: field \"%s\" is not a number", c->type, key);
    return def;
  }
  return json_number_value(v);
}

static bool get_bool(struct lctx *c, const char *key, bool required, bool def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_boolean(v)) {
    dump_fail(c, "%s record: field \"%s\" is not a boolean", c->type, key);
    return def;
  }
  return json_is_true(v);
}

/* Interned string; def (may be NULL) when absent or null and not required. */
static const char *get_str(struct lctx *c, const char *key, bool required, const char *def) {
  json_t *v = field(c, key, required);
  if (!v) return def;
  if (!json_is_string(v)) {
    dump_fail(c, "%s record: field \"%s\" is not a string", c->type, key);
    return def;
  }
  return dump_intern(c->set->pool, json_string_value(v));
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
    dump_fail(c, "%s record: field \"%s\" is not a hex id", c->type, key);
    return 0;
  }
  if (present) *present = true;
  return strtoull(s, NULL, 16);
}

/* ---------- per-record parsers: return false (with c->err) when malformed ---------- */

bool dump_parse_header(struct lctx *c, struct cs_header *h) {
  struct cs_strpool *p = c->set->pool;
  h->schema = dump_clamp_int(get_int(c, "schema", true, 0));
  h->collscope = get_str(c, "collscope", false, dump_intern(p, ""));
  h->host = get_str(c, "host", true, dump_intern(p, "?"));
  h->pid = get_int(c, "pid", false, 0);
  h->rank = dump_clamp_int(get_int(c, "rank", false, -1));
  h->local_rank = dump_clamp_int(get_int(c, "local_rank", false, -1));
  h->world_size = dump_clamp_int(get_int(c, "world_size", false, -1));
  h->step = dump_clamp_int(get_int(c, "step", false, -1));
  h->device = dump_clamp_int(get_int(c, "device", false, -1));
  h->job = get_str(c, "job", false, dump_intern(p, ""));
  h->pci_bus_id = get_str(c, "pci_bus_id", false, dump_intern(p, ""));
  h->exe = get_str(c, "exe", false, dump_intern(p, ""));
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
    dump_fail(c, "header record: field \"clock\" is not an object");
  }
  h->valid = !c->bad;
  return !c->bad;
}

/* optional "sdc":{"checked":N,"fp":HEX16|null,"in_sum":F|null,"in_abs":F|null,"out_sum":F|null} */
static void parse_op_sdc(struct lctx *c, struct cs_op_rec *r) {
  json_t *o = json_object_get(c->obj, "sdc");
  if (!o || json_is_null(o)) return;
  if (!json_is_object(o)) {
    dump_fail(c, "op record: field \"sdc\" is not an object");
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

bool dump_parse_op(struct lctx *c, struct cs_op_rec *r) {
  struct cs_strpool *p = c->set->pool;
  memset(r, 0, sizeof *r);
  r->comm = get_hex(c, "comm", true, NULL);
  r->comm_size = dump_clamp_int(get_int(c, "comm_size", true, 0));
  r->comm_rank = dump_clamp_int(get_int(c, "comm_rank", true, -1));
  r->rank = dump_clamp_int(get_int(c, "rank", false, c->f->hdr.rank));
  r->seq = get_int(c, "seq", true, 0);
  r->op_name = get_str(c, "op", true, dump_intern(p, "?"));
  r->op = cs_op_from_name(r->op_name);
  r->dtype = get_str(c, "dtype", false, dump_intern(p, ""));
  r->count = get_int(c, "count", false, 0);
  r->bytes = get_uint(c, "bytes", true, 0);
  r->redop = get_str(c, "redop", false, NULL);
  r->root = dump_clamp_int(get_int(c, "root", false, -1));
  r->peer = dump_clamp_int(get_int(c, "peer", false, -1));
  r->stream = get_hex(c, "stream", false, NULL);
  r->group = get_int(c, "group", false, 0);
  r->enqueue_ns = get_int(c, "enqueue_ns", false, 0);
  r->start_ns = get_int(c, "start_ns", false, 0);
  r->end_ns = get_int(c, "end_ns", false, 0);
  r->dur_us = get_num(c, "dur_us", false, 0.0);
  r->timing_name = get_str(c, "timing", true, dump_intern(p, "unknown"));
  r->timing = dump_timing_from_name(r->timing_name);
  r->captured = get_bool(c, "captured", false, r->timing == CSD_TIMING_CAPTURED);
  r->site = get_str(c, "site", false, dump_intern(p, ""));
  r->status = dump_clamp_int(get_int(c, "status", false, 0));
  parse_op_sdc(c, r);
  /* comm_size < 1 (the writer's -1): a call on no known communicator, e.g. a NULL comm that
   * NCCL rejected; the record is read and counted like any other (its seq is -1) */
  return !c->bad;
}

bool dump_parse_xfer(struct lctx *c, struct cs_xfer_rec *r) {
  struct cs_strpool *p = c->set->pool;
  memset(r, 0, sizeof *r);
  r->op_name = get_str(c, "op", false, dump_intern(p, "Memcpy"));
  r->api = get_str(c, "api", false, dump_intern(p, ""));
  r->kind = get_str(c, "kind", false, dump_intern(p, ""));
  r->bytes = get_uint(c, "bytes", true, 0);
  r->stream = get_hex(c, "stream", false, NULL);
  r->async = get_bool(c, "async", false, false);
  r->enqueue_ns = get_int(c, "enqueue_ns", false, 0);
  r->start_ns = get_int(c, "start_ns", false, 0);
  r->end_ns = get_int(c, "end_ns", false, 0);
  r->dur_us = get_num(c, "dur_us", false, 0.0);
  r->timing_name = get_str(c, "timing", true, dump_intern(p, "unknown"));
  r->timing = dump_timing_from_name(r->timing_name);
  r->site = get_str(c, "site", false, dump_intern(p, ""));
  r->status = dump_clamp_int(get_int(c, "status", false, 0));
  return !c->bad;
}

bool dump_parse_comm(struct lctx *c, struct cs_comm_rec *r) {
  memset(r, 0, sizeof *r);
  r->event = get_str(c, "event", true, dump_intern(c->set->pool, "?"));
  r->comm = get_hex(c, "comm", true, NULL);
  r->size = dump_clamp_int(get_int(c, "size", false, 0));
  r->rank = dump_clamp_int(get_int(c, "rank", false, -1));
  r->device = dump_clamp_int(get_int(c, "device", false, -1));
  r->parent = get_hex(c, "parent", false, &r->has_parent);
  r->t_ns = get_int(c, "t_ns", false, 0);
  return !c->bad;
}

bool dump_parse_hang(struct lctx *c, struct cs_hang_rec *r) {
  memset(r, 0, sizeof *r);
  r->comm = get_hex(c, "comm", true, NULL);
  r->comm_size = dump_clamp_int(get_int(c, "comm_size", false, 0));
  r->comm_rank = dump_clamp_int(get_int(c, "comm_rank", true, -1));
  r->rank = dump_clamp_int(get_int(c, "rank", false, c->f->hdr.rank));
  r->seq = get_int(c, "seq", true, 0);
  r->op_name = get_str(c, "op", false, dump_intern(c->set->pool, "?"));
  r->enqueue_ns = get_int(c, "enqueue_ns", false, 0);
  r->t_ns = get_int(c, "t_ns", false, 0);
  r->age_s = (double)get_int(c, "age_ms", false, 0) / 1e3;
  r->started = get_bool(c, "started", false, false);
  return !c->bad;
}

/* NCCL_NET wrapper */
bool dump_parse_link(struct lctx *c, struct cs_link_rec *r) {
  memset(r, 0, sizeof *r);
  const char *dir = get_str(c, "dir", true, "");
  r->send = dir && strcmp(dir, "send") == 0;
  if (!c->bad && !r->send && strcmp(dir, "recv") != 0) dump_fail(c, "field \"dir\" is neither \"send\" nor \"recv\"");
  r->rank = dump_clamp_int(get_int(c, "rank", false, c->f->hdr.rank));
  r->peer = dump_clamp_int(get_int(c, "peer", false, -1));
  r->conn = get_hex(c, "conn", false, NULL);
  r->dev = dump_clamp_int(get_int(c, "dev", false, -1));
  r->bytes = get_uint(c, "bytes", true, 0);
  r->msgs = get_uint(c, "msgs", false, 0);
  r->busy_us = get_num(c, "busy_us", false, 0);
  r->gbps_p50 = get_num(c, "gbps_p50", false, 0);
  r->gbps_p10 = get_num(c, "gbps_p10", false, 0);
  r->gbps_mean = get_num(c, "gbps_mean", false, 0);
  r->max_inflight = get_uint(c, "max_inflight", false, 0);
  r->t0_ns = get_int(c, "t0_ns", false, 0);
  r->t_ns = get_int(c, "t_ns", false, 0);
  r->closed = get_bool(c, "closed", false, false);
  return !c->bad;
}

bool dump_parse_drops(struct lctx *c, uint64_t *count) {
  uint64_t n = get_uint(c, "count", true, 0);
  if (!c->bad) *count = n;
  return !c->bad;
}

/* the footer's fields go into the file only when the whole record is well formed */
bool dump_parse_footer(struct lctx *c, struct cs_dumpfile *f) {
  uint64_t o = get_uint(c, "ops", false, 0), x = get_uint(c, "xfers", false, 0);
  uint64_t d = get_uint(c, "drops", false, 0), tl = get_uint(c, "timing_lost", false, 0);
  int64_t t = get_int(c, "t_ns", false, 0);
  const char *prof = get_str(c, "profiler", false, NULL);
  const char *ptr = get_str(c, "prof_trusted", false, ""), *prj = get_str(c, "prof_rejected", false, "");
  uint64_t pp = get_uint(c, "prof_probes", false, 0), pa = get_uint(c, "prof_agreed", false, 0);
  const char *sdc = get_str(c, "sdc", false, NULL);
  uint64_t sl = get_uint(c, "sdc_launches", false, 0), sn = get_uint(c, "sdc_no_slot", false, 0);
  if (!c->bad) {
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
  return !c->bad;
}
