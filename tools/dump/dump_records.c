/* tools/dump/dump_records.c: one dump line's JSON object into one record (DESIGN.md "Dump files"):
 * typed field access where the first problem of a line wins and names the field, and one
 * parser per record type, its keys, types and defaults read from the record's list in
 * include/collscope/dump_schema.h. The fast path for the writer's own op lines is
 * tools/dump/opscan.c; both give the same values. Part of the reader (tools/dump/dumpfile.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/dump_schema.h"
#include "collscope/schema.h"
#include "dump_internal.h"

__attribute__((format(printf, 2, 3))) void dump_fail(struct lctx *c, const char *fmt, ...) {
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

/* ---------- the schema's rows as reader code (include/collscope/dump_schema.h) ---------- */

/* a row's value: RD_TO(member) = the field read as its JSON type (the reader of the row
 * defines RD_TO and RD_HAS: where the value and an ID0's presence go) */
#define RD_GET_I32(key, req, def, m) dump_clamp_int(get_int(c, key, req, def))
#define RD_GET_I64(key, req, def, m) get_int(c, key, req, def)
#define RD_GET_U64(key, req, def, m) get_uint(c, key, req, def)
#define RD_GET_US(key, req, def, m) get_num(c, key, req, def)
#define RD_GET_F64(key, req, def, m) get_num(c, key, req, def)
#define RD_GET_STR(key, req, def, m) get_str(c, key, req, def)
#define RD_GET_SITE(key, req, def, m) get_str(c, key, req, def)
#define RD_GET_NAME(key, req, def, m) get_str(c, key, req, def)
#define RD_GET_NAME0(key, req, def, m) get_str(c, key, req, def)
#define RD_GET_ID(key, req, def, m) get_hex(c, key, req, NULL)
#define RD_GET_ID0(key, req, def, m) get_hex(c, key, req, &RD_HAS(m))
#define RD_GET_HEX(key, req, def, m) get_hex(c, key, req, NULL)
#define RD_GET_BOOL(key, req, def, m) get_bool(c, key, req, def)

/* an OPT row's value when the field is absent or null */
#define RD_DEF_ZERO 0
#define RD_DEF_MINUS1 (-1)
#define RD_DEF_NO false
#define RD_DEF_NAN_ NAN
#define RD_DEF_NONE NULL
#define RD_DEF_EMPTY dump_intern(c->set->pool, "")
#define RD_DEF_QMARK dump_intern(c->set->pool, "?")
#define RD_DEF_UNKNOWN dump_intern(c->set->pool, "unknown")
#define RD_DEF_MEMCPY dump_intern(c->set->pool, "Memcpy")
#define RD_DEF_HDR_RANK (c->f->hdr.rank)
#define RD_DEF_BY_TIMING (dump_timing_from_name(RD_TO(timing_name)) == CSD_TIMING_CAPTURED)

#define RD_ROW(m, key, jt, wr, rd, def) RD_##rd(m, key, jt, def)
#define RD_REQ(m, key, jt, def) RD_TO(m) = RD_GET_##jt(key, true, RD_DEF_##def, m);
#define RD_OPT(m, key, jt, def) RD_TO(m) = RD_GET_##jt(key, false, RD_DEF_##def, m);
#define RD_HAND(m, key, jt, def) /* read by the record's parser */
#define RD_SKIP(m, key, jt, def) /* not read */

/* a struct of a list's rows as the reader holds them (footer, drops, sdc: read whole first) */
#define RD_T_I32(m) int m;
#define RD_T_I64(m) long long m;
#define RD_T_U64(m) uint64_t m;
#define RD_T_US(m) double m;
#define RD_T_F64(m) double m;
#define RD_T_STR(m) const char *m;
#define RD_T_SITE(m) const char *m;
#define RD_T_NAME(m) const char *m;
#define RD_T_NAME0(m) const char *m;
#define RD_T_ID(m) uint64_t m;
#define RD_T_ID0(m) \
  uint64_t m; \
  bool has_##m;
#define RD_T_HEX(m) uint64_t m;
#define RD_T_BOOL(m) bool m;
#define RD_T_OBJ(m)
#define RD_MEMBER(m, key, jt, wr, rd, def) RD_T_##jt(m)

/* rows into r->member, the record's parser's own struct */
#define RD_TO(m) r->m
#define RD_HAS(m) r->has_##m

/* ---------- per-record parsers: return false (with c->err) when malformed ---------- */

bool dump_parse_header(struct lctx *c, struct cs_header *r) {
  CS_DUMP_HEADER_FIELDS(RD_ROW)
  r->salvaged = json_object_get(c->obj, "salvaged_from") != NULL;
  json_t *clk = json_object_get(c->obj, "clock");
  if (clk && json_is_object(clk)) {
    json_t *saved = c->obj;
    c->obj = clk;
#undef RD_TO
#define RD_TO(m) r->clock_##m
    CS_DUMP_CLOCK_FIELDS(RD_ROW)
#undef RD_TO
#define RD_TO(m) r->m
    c->obj = saved;
  } else if (clk && !json_is_null(clk)) {
    dump_fail(c, "header record: field \"clock\" is not an object");
  }
  r->valid = !c->bad;
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
void dump_parse_health(struct lctx *c, struct freader *fr, size_t lineno) {
  struct cs_dumpfile *f = c->f;
  struct cs_health_rec r;
  memset(&r, 0, sizeof r);
  r.rank = dump_clamp_int(get_int(c, "rank", false, f->hdr.rank));
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
    dump_fail(c, "health record: field \"gpu\" is not an object");
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
      p.dev = get_str(c, "dev", false, dump_intern(fr->set->pool, "?"));
      p.state = get_str(c, "state", false, dump_intern(fr->set->pool, ""));
      p.port = dump_clamp_int(get_int(c, "port", false, 0));
      p.rate_gbps = get_num(c, "rate_gbps", false, -1);
      for (int k = 0; k < CS_IB_NCOUNTERS; k++) p.c[k] = opt_count(c, cs_ib_counter_names[k]);
      c->obj = saved;
      if (c->bad) break;
      dump_grow((void **)&f->hports, &f->hport_cap, f->nhports, sizeof *f->hports);
      f->hports[f->nhports++] = p;
      r.nports++;
    }
  }
  c->obj = saved;
  if (c->bad) {
    f->nhports = r.port0;
    return;
  }
  r.line = (uint32_t)lineno;
  dump_grow((void **)&f->healths, &f->health_cap, f->nhealths, sizeof *f->healths);
  f->healths[f->nhealths++] = r;
}

/* optional "sdc" object: a checked value outside 1..3 reads as 0, bit 0 cleared when fp is null */
static void parse_op_sdc(struct lctx *c, struct cs_op_rec *r) {
  json_t *o = json_object_get(c->obj, "sdc");
  if (!o || json_is_null(o)) return;
  if (!json_is_object(o)) {
    dump_fail(c, "op record: field \"sdc\" is not an object");
    return;
  }
  json_t *saved = c->obj;
  c->obj = o;
  struct {
    CS_DUMP_SDC_FIELDS(RD_MEMBER)
  } sdc;
#undef RD_TO
#undef RD_HAS
#define RD_TO(m) sdc.m
#define RD_HAS(m) sdc.has_##m
  CS_DUMP_SDC_FIELDS(RD_ROW)
#undef RD_TO
#undef RD_HAS
#define RD_TO(m) r->m
#define RD_HAS(m) r->has_##m
  r->sdc_checked = sdc.checked > 0 && sdc.checked < 4 ? (unsigned)sdc.checked : 0;
  if ((r->sdc_checked & 1) && !sdc.has_fp) r->sdc_checked &= ~1u;
  r->sdc_fp = sdc.fp;
  r->sdc_in_sum = sdc.in_sum;
  r->sdc_in_abs = sdc.in_abs;
  r->sdc_out_sum = sdc.out_sum;
  c->obj = saved;
}

bool dump_parse_op(struct lctx *c, struct cs_op_rec *r) {
  memset(r, 0, sizeof *r);
  CS_DUMP_OP_FIELDS(RD_ROW)
  r->op = cs_op_from_name(r->op_name);
  r->timing = dump_timing_from_name(r->timing_name);
  parse_op_sdc(c, r);
  /* comm_size < 1 (the writer's -1): a call on no known communicator, e.g. a NULL comm that
   * NCCL rejected; the record is read and counted like any other (its seq is -1) */
  return !c->bad;
}

bool dump_parse_xfer(struct lctx *c, struct cs_xfer_rec *r) {
  memset(r, 0, sizeof *r);
  CS_DUMP_XFER_FIELDS(RD_ROW)
  r->timing = dump_timing_from_name(r->timing_name);
  return !c->bad;
}

bool dump_parse_comm(struct lctx *c, struct cs_comm_rec *r) {
  memset(r, 0, sizeof *r);
  CS_DUMP_COMM_FIELDS(RD_ROW)
  return !c->bad;
}

bool dump_parse_hang(struct lctx *c, struct cs_hang_rec *r) {
  memset(r, 0, sizeof *r);
  CS_DUMP_HANG_FIELDS(RD_ROW)
  r->age_s = (double)get_int(c, "age_ms", false, 0) / 1e3;
  return !c->bad;
}

/* NCCL_NET wrapper */
bool dump_parse_link(struct lctx *c, struct cs_link_rec *r) {
  memset(r, 0, sizeof *r);
  const char *dir = get_str(c, "dir", true, "");
  r->send = dir && strcmp(dir, "send") == 0;
  if (!c->bad && !r->send && strcmp(dir, "recv") != 0) dump_fail(c, "field \"dir\" is neither \"send\" nor \"recv\"");
  CS_DUMP_LINK_FIELDS(RD_ROW)
  return !c->bad;
}

/* COLLSCOPE_RECORD=summary (docs/always-on.md) */
bool dump_parse_summary(struct lctx *c, struct cs_summary_rec *r) {
  memset(r, 0, sizeof *r);
  CS_DUMP_SUMMARY_FIELDS(RD_ROW)
  r->op = cs_op_from_name(r->op_name);
  return !c->bad;
}

bool dump_parse_gaps(struct lctx *c, struct cs_gaps_rec *r) {
  memset(r, 0, sizeof *r);
  CS_DUMP_GAPS_FIELDS(RD_ROW)
  return !c->bad;
}

int cs_gaps_list(const char *s, int64_t *out, size_t cap) {
  size_t n = 0;
  while (s && *s) {
    char *end;
    if (n == cap || ((*s < '0' || *s > '9') && *s != '-')) return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || (*end && *end != ',')) return -1;
    out[n++] = v;
    s = *end ? end + 1 : end;
  }
  return (int)n;
}

bool dump_parse_window(struct lctx *c, struct cs_window_rec *r) {
  memset(r, 0, sizeof *r);
  CS_DUMP_WINDOW_FIELDS(RD_ROW)
  return !c->bad;
}

bool cs_summary_pairs(const char *s, void (*fn)(void *ctx, uint64_t a, uint64_t b), void *ctx) {
  while (s && *s) {
    char *end;
    if (*s < '0' || *s > '9') return false;
    unsigned long long a = strtoull(s, &end, 10);
    if (*end != ':' || end[1] < '0' || end[1] > '9') return false;
    unsigned long long b = strtoull(end + 1, &end, 10);
    if (*end && *end != ',') return false;
    fn(ctx, a, b);
    s = *end ? end + 1 : end;
  }
  return true;
}

#undef RD_TO
#undef RD_HAS
#define RD_TO(m) v.m
#define RD_HAS(m) v.has_##m

bool dump_parse_drops(struct lctx *c, uint64_t *count) {
  struct {
    CS_DUMP_DROPS_FIELDS(RD_MEMBER)
  } v;
  CS_DUMP_DROPS_FIELDS(RD_ROW)
  if (!c->bad) *count = v.count;
  return !c->bad;
}

/* the footer's fields go into the file (f->footer_<name>) only when the whole record is well formed */
#define RD_COMMIT(m, key, jt, wr, rd, def) RD_COMMIT_##rd(m)
#define RD_COMMIT_REQ(m) f->footer_##m = v.m;
#define RD_COMMIT_OPT(m) f->footer_##m = v.m;
#define RD_COMMIT_HAND(m)
#define RD_COMMIT_SKIP(m)
bool dump_parse_footer(struct lctx *c, struct cs_dumpfile *f) {
  struct {
    CS_DUMP_FOOTER_FIELDS(RD_MEMBER)
  } v;
  CS_DUMP_FOOTER_FIELDS(RD_ROW)
  if (!c->bad) {
    CS_DUMP_FOOTER_FIELDS(RD_COMMIT)
    f->has_footer = true;
  }
  return !c->bad;
}
