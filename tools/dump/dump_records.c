/* tools/dump/dump_records.c: one dump line's JSON object into one record (DESIGN.md "Dump files"):
 * typed field access where the first problem of a line wins and names the field, and one
 * parser per record type. The fast path for the writer's own op lines is tools/dump/opscan.c;
 * both give the same values. Part of the reader (tools/dump/dumpfile.h). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/slurm_node.h"
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
  h->slurm_node = get_str(c, CS_HDR_SLURM_NODE, false, dump_intern(p, ""));
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
  h->gpu_name = get_str(c, "gpu_name", false, dump_intern(p, ""));
  h->gpu_uuid = get_str(c, "gpu_uuid", false, dump_intern(p, ""));
  h->gpu_pci_bus_id = get_str(c, "gpu_pci_bus_id", false, dump_intern(p, ""));
  h->gpu_arch = dump_clamp_int(get_int(c, "gpu_arch", false, -1));
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
