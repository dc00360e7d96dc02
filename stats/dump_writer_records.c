/* stats/dump_writer_records.c: formats each record kind (header, op, xfer, comm, link, hang,
 * drops, footer, lines handed over by the layers above) as one JSON line (DESIGN.md "Dump
 * files") into the writer's buffer (stats/dump_writer.c). The keys, their order and their
 * JSON types come from include/collscope/dump_schema.h: each record is first put into a
 * struct generated from its list, then the list writes it (include/collscope/dump_emit.h). Formatting is hand-rolled
 * (integers, hex, fixed-point microseconds) because it runs for every op at up to
 * hundreds of thousands of records per second. */
#include "collscope/dump_emit.h"
#include "dump_writer_internal.h"
#include "flight.h"
#include "flight_local.h"
#include "summary.h"
#include "summary_gaps.h"
#include <dlfcn.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collscope/uthash_nonfatal.h"

static struct cs_dump_sources sources; /* what the layers above hand over (dump_writer.h) */

void cs_dump_sources_set(const struct cs_dump_sources *s) { sources = *s; }

/* a call site's text, formatted once; plain: no character needs a JSON escape */
struct site_entry {
  uint64_t addr;
  char text[192];
  size_t len;
  bool plain;
  UT_hash_handle hh;
};
static struct site_entry *sites;
static unsigned nsites;

/* ---- tiny formatter ---- */
static void puts_(const char *s) { put(s, strlen(s)); }
/* decimal, two digits per division (timestamps have 19 digits) */
static void put_u64(uint64_t v) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";
  char t[24];
  int i = 24;
  while (v >= 100) {
    unsigned d = (unsigned)(v % 100);
    v /= 100;
    t[--i] = pairs[2 * d + 1];
    t[--i] = pairs[2 * d];
  }
  if (v >= 10) {
    t[--i] = pairs[2 * v + 1];
    t[--i] = pairs[2 * v];
  } else {
    t[--i] = (char)('0' + v);
  }
  put(t + i, (size_t)(24 - i));
}
static void put_i64(int64_t v) {
  if (v < 0) {
    put("-", 1);
    put_u64((uint64_t)(-(v + 1)) + 1);
  } else
    put_u64((uint64_t)v);
}
static void put_hex(uint64_t v) {
  static const char hx[] = "0123456789abcdef";
  char t[18];
  int i = 18;
  do {
    t[--i] = hx[v & 15];
    v >>= 4;
  } while (v);
  t[--i] = 'x';
  t[--i] = '0';
  put("\"", 1);
  put(t + i, (size_t)(18 - i));
  put("\"", 1);
}
static void put_id(uint64_t v) { /* fixed 16 hex digits */
  static const char hx[] = "0123456789abcdef";
  char t[18];
  t[0] = t[17] = '"';
  for (int i = 16; i >= 1; i--) {
    t[i] = hx[v & 15];
    v >>= 4;
  }
  put(t, 18);
}
/* the length of s's leading run of characters that need no JSON escape */
static size_t plain_run(const char *s) {
  size_t n = 0;
  while ((unsigned char)s[n] >= 0x20 && s[n] != '"' && s[n] != '\\') n++;
  return n;
}
static void put_str(const char *s) {
  put("\"", 1);
  for (;;) {
    size_t n = plain_run(s); /* copied in one piece */
    put(s, n);
    unsigned char c = (unsigned char)s[n];
    if (!c) break;
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      put(e, 2);
    } else {
      char e[8];
      snprintf(e, sizeof(e), "\\u%04x", c);
      put(e, 6);
    }
    s += n + 1;
  }
  put("\"", 1);
}
static void put_us(int64_t ns) { /* ns -> microseconds with 3 decimals */
  if (ns < 0) {
    put("-", 1);
    ns = -ns;
  }
  put_u64((uint64_t)(ns / 1000));
  char t[4] = {'.', (char)('0' + (ns / 100) % 10), (char)('0' + (ns / 10) % 10), (char)('0' + ns % 10)};
  put(t, 4);
}
/* a name from collscope's own tables (ops, datatypes, timing kinds...): none has a
 * character that needs an escape, so it is copied without the scan */
static void put_name(const char *s) {
  put("\"", 1);
  puts_(s);
  put("\"", 1);
}

static const char *cs_algo_name(int a) {
  static const char *const n[] = {"", "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT", "other"};
  return a >= 0 && a <= CS_ALGO_OTHER ? n[a] : "other";
}
static const char *cs_proto_name(int p) {
  static const char *const n[] = {"", "LL", "LL128", "Simple", "other"};
  return p >= 0 && p <= CS_PROTO_OTHER ? n[p] : "other";
}

/* the site's entry: from the cache, or formatted now (into the cache while it has room) */
static const struct site_entry *site_of(uint64_t addr) {
  static struct site_entry none = {.plain = true}, spare;
  if (!addr) return &none;
  struct site_entry *e;
  HASH_FIND(hh, sites, &addr, sizeof(addr), e);
  if (e) return e;
  if (nsites >= 65536 || !(e = calloc(1, sizeof(*e)))) e = &spare;
  char *out = e->text;
  const size_t cap = sizeof e->text;
  Dl_info di;
  const char *mod = "?";
  uint64_t off = addr;
  if (dladdr((void *)(uintptr_t)addr, &di) && di.dli_fname) {
    mod = strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1 : di.dli_fname;
    off = addr - (uint64_t)(uintptr_t)di.dli_fbase;
  }
  char sym[96];
  unw_word_t soff = 0;
  /* libunwind's local accessor reads .symtab too, so static functions get names */
  unw_accessors_t *acc = unw_get_accessors(unw_local_addr_space);
  if (acc && acc->get_proc_name &&
      acc->get_proc_name(unw_local_addr_space, (unw_word_t)addr, sym, sizeof(sym), &soff, NULL) == 0)
    snprintf(out, cap, "%s!%s+0x%lx", mod, sym, (unsigned long)soff);
  else
    snprintf(out, cap, "%s+0x%lx", mod, (unsigned long)off);
  e->len = strlen(out);
  e->plain = plain_run(out) == e->len;
  if (e != &spare) {
    e->addr = addr;
    HASH_ADD(hh, sites, addr, sizeof(e->addr), e);
    if (!CS_HASH_ADDED()) { /* no room in the table: formatted this once */
      spare = *e;
      free(e);
      return &spare;
    }
    nsites++;
  }
  return e;
}
static void put_site(uint64_t addr) {
  const struct site_entry *e = site_of(addr);
  if (!e->plain) {
    put_str(e->text);
    return;
  }
  put("\"", 1);
  put(e->text, e->len);
  put("\"", 1);
}

static void put_bool(bool v) {
  if (v)
    PUTL("true");
  else
    PUTL("false");
}
static void put_name0(const char *s) { /* a name, or null */
  if (s)
    put_name(s);
  else
    PUTL("null");
}
static void put_id0(const uint64_t *v) { /* an id, or null */
  if (v)
    put_id(*v);
  else
    PUTL("null");
}
/* %.17g, or null when not finite */
static void put_f64(double v) {
  char t[40];
  if (!__builtin_isfinite(v)) {
    PUTL("null");
    return;
  }
  put(t, (size_t)snprintf(t, sizeof t, "%.17g", v));
}

/* ---- the schema's rows as writer code (include/collscope/dump_emit.h) ---- */
#define CS_EMIT_BUF cs_dump_lb.buf
#define CS_EMIT_LEN cs_dump_lb.len
#define cs_emit_sources(v) _Generic((v), const struct cs_emit_header * \
                                    : header_sources, const struct cs_emit_footer * \
                                    : footer_sources)(v)

struct cs_emit_header;
struct cs_emit_footer;
static void header_sources(const struct cs_emit_header *v);
static void footer_sources(const struct cs_emit_footer *v);

CS_EMIT_OBJECT(clock, CS_DUMP_CLOCK_FIELDS)
CS_EMIT_OBJECT(sdc, CS_DUMP_SDC_FIELDS)
CS_EMIT_LINE(header, CS_DUMP_HEADER_FIELDS)
CS_EMIT_LINE(op, CS_DUMP_OP_FIELDS)
CS_EMIT_LINE(xfer, CS_DUMP_XFER_FIELDS)
CS_EMIT_LINE(comm, CS_DUMP_COMM_FIELDS)
CS_EMIT_LINE(hang, CS_DUMP_HANG_FIELDS)
CS_EMIT_LINE(link, CS_DUMP_LINK_FIELDS)
CS_EMIT_LINE(drops, CS_DUMP_DROPS_FIELDS)
CS_EMIT_LINE(footer, CS_DUMP_FOOTER_FIELDS)
CS_EMIT_LINE(summary, CS_DUMP_SUMMARY_FIELDS)
CS_EMIT_LINE(window, CS_DUMP_WINDOW_FIELDS)

/* ---- the records ---- */

/* the GPU's identity (hooks/health.c through cs_dump_sources) */
static void header_sources(const struct cs_emit_header *v) {
  if (!sources.header_extra) return;
  char extra[1024];
  size_t n = sources.header_extra((int)v->device, extra, sizeof extra);
  if (n < sizeof extra) put(extra, n);
}

static void write_header(int device) {
  int nccl_ver = 0, drv_ver = 0;
  int (*getver)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "pncclGetVersion");
  if (getver) getver(&nccl_ver);
  char bus[32] = "";
  if (sources.device_info) sources.device_info(device, &drv_ver, bus, sizeof bus);
  char exe[1024] = "";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[n > 0 ? n : 0] = 0;
  struct cs_emit_clock clock;
  clock.realtime_ns = cs_now_ns(CLOCK_REALTIME);
  clock.monotonic_ns = cs_now_ns(CLOCK_MONOTONIC);
  const struct cs_emit_header h = {
      .schema = COLLSCOPE_SCHEMA_VERSION,
      .collscope = "0.1.0",
      .host = cs_cfg.host,
      .pid = getpid(),
      .rank = cs_cfg.rank,
      .local_rank = cs_cfg.local_rank,
      .world_size = cs_cfg.world_size,
      .job = cs_cfg.job,
      .step = cs_cfg.step,
      .slurm_node = cs_cfg.slurm_node,
      .device = device,
      .pci_bus_id = bus,
      .nccl_version = nccl_ver,
      .cuda_driver_version = drv_ver,
      .clock = &clock,
      .exe = exe,
  };
  cs_dump_line_begin();
  put_header_line(&h);
  cs_dump_lb.header_done = true;
  cs_dump_line_end(LINE_HEADER, 0);
}

static void ensure_header(int device) {
  if (!cs_dump_lb.header_done) write_header(device);
}

void cs_dump_raw_line(const char *json, size_t len, int device) {
  if (!cs_dump_active()) return;
  ensure_header(device);
  cs_dump_line_begin();
  if (len > CS_DUMP_RAW_MAX)
    cs_dump_lb.line_overflow = true;
  else {
    put(json, len);
    PUTL("\n");
  }
  cs_dump_line_end(LINE_RECORD, 0);
}

static const char *comm_event_name(int e) {
  static const char *const names[] = {"init", "split", "finalize", "destroy", "abort"};
  return (e >= 0 && e < 5) ? names[e] : "unknown";
}
static const char *xfer_kind_name(int k) {
  static const char *const names[] = {"HtoH", "HtoD", "DtoH", "DtoD", "Default", "Peer"};
  return (k >= 0 && k < 6) ? names[k] : "Default";
}

static const char *xfer_api_name(int api) {
  return sources.xfer_api_name ? sources.xfer_api_name(api) : "unknown";
}

static int64_t seq_or_none(uint64_t seq) { return seq == UINT64_MAX ? -1 : (int64_t)seq; }

static void write_op(const struct cs_record *r, bool timed) {
  /* SDC check results (hooks/sdc_check.c): a field whose bit of sdc_checked is clear is null */
  bool out = r->sdc_checked & 1, in = r->sdc_checked & 2;
  const struct cs_emit_sdc sdc = {
      .checked = r->sdc_checked,
      .fp = out ? &r->fingerprint : NULL,
      .in_sum = in ? r->in_sum : NAN,
      .in_abs = in ? r->in_abs : NAN,
      .out_sum = out ? r->out_sum : NAN,
  };
  const struct cs_emit_op v = {
      .comm = r->comm_id,
      .comm_size = r->comm_size,
      .comm_rank = r->comm_rank,
      .rank = cs_cfg.rank,
      .seq = seq_or_none(r->seq),
      .op_name = r->op < CS_OP_COUNT ? cs_op_table[r->op].name : "unknown",
      .dtype = cs_dtype_name(r->dtype),
      .count = (int64_t)r->count,
      .bytes = r->bytes,
      .redop = r->redop >= 0 ? cs_redop_name(r->redop) : NULL,
      .root = r->root,
      .peer = r->peer,
      .stream = r->stream,
      .group = (int64_t)r->group,
      .enqueue_ns = r->enqueue_ns,
      .start_ns = timed ? r->start_ns : 0,
      .end_ns = timed ? r->end_ns : 0,
      .dur_us = timed ? r->end_ns - r->start_ns : 0,
      .timing_name = cs_timing_name(r->timing),
      .captured = r->captured,
      .site = r->site,
      .status = r->status,
      .graph = r->graph,
      .replay = r->replay,
      .group_ops = r->group_ops,
      .sdc = r->sdc_checked ? &sdc : NULL,
      .algo = r->algo ? cs_algo_name(r->algo) : NULL,
      .proto = r->proto ? cs_proto_name(r->proto) : NULL,
      .nchannels = r->nchannels,
  };
  put_op_line(&v);
}

static void write_xfer(const struct cs_record *r, bool timed) {
  const struct cs_emit_xfer v = {
      .op_name = "Memcpy",
      .api = xfer_api_name(r->api),
      .kind = xfer_kind_name(r->event),
      .bytes = r->bytes,
      .async = r->async,
      .stream = r->stream,
      .enqueue_ns = r->enqueue_ns,
      .start_ns = timed ? r->start_ns : 0,
      .end_ns = timed ? r->end_ns : 0,
      .dur_us = timed ? r->end_ns - r->start_ns : 0,
      .timing_name = cs_timing_name(r->timing),
      .captured = r->captured,
      .site = r->site,
      .status = r->status,
  };
  put_xfer_line(&v);
}

static void write_comm(const struct cs_record *r) {
  const struct cs_emit_comm v = {
      .event = comm_event_name(r->event),
      .comm = r->comm_id,
      .size = r->comm_size,
      .rank = r->comm_rank,
      .device = r->device,
      .parent = r->parent_id ? &r->parent_id : NULL,
      .t_ns = r->enqueue_ns,
  };
  put_comm_line(&v);
}

/* NCCL_NET wrapper: one connection over [t0_ns, t_ns] */
static void write_link(const struct cs_record *r) {
  struct cs_link_record l;
  cs_link_unpack(r, &l);
  const struct cs_emit_link v = {
      .dir = l.recv ? "recv" : "send",
      .rank = cs_cfg.rank,
      .peer = l.peer,
      .conn = l.token,
      .dev = l.dev,
      .bytes = l.bytes,
      .msgs = l.msgs,
      .busy_us = (int64_t)l.busy_ns,
      .gbps_p50 = l.gbps_p50,
      .gbps_p10 = l.gbps_p10,
      .gbps_mean = l.gbps_mean,
      .max_inflight = l.max_inflight,
      .t0_ns = l.t0_ns,
      .t_ns = l.t_ns,
      .closed = l.closed,
  };
  put_link_line(&v);
}

void cs_dump_record(const struct cs_record *r) {
  if (!cs_dump_active()) return;
  ensure_header(r->device);
  if ((r->type == CS_REC_OP || r->type == CS_REC_XFER) && cs_flight_on()) { /* COLLSCOPE_RECORD=summary */
    cs_flight_op(r);
    return;
  }
  cs_dump_op_line(r);
}

void cs_dump_op_line(const struct cs_record *r) {
  if (!cs_dump_active()) return;
  if (r->type != CS_REC_COMM && r->type != CS_REC_OP && r->type != CS_REC_LINK && r->type != CS_REC_XFER) return;
  bool timed = r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_HOST_SPAN || r->timing == CS_TIMING_PROFILER;
  cs_dump_line_begin();
  enum line_kind kind = LINE_RECORD;
  switch (r->type) {
  case CS_REC_COMM: write_comm(r); break;
  case CS_REC_OP:
    write_op(r, timed);
    kind = LINE_OP;
    break;
  case CS_REC_LINK: write_link(r); break;
  default:
    write_xfer(r, timed);
    kind = LINE_XFER;
    break;
  }
  cs_dump_line_end(kind, 0);
}

void cs_dump_hang(const struct cs_record *r, int64_t now_ns, int started) {
  if (!cs_dump_active()) return;
  ensure_header(r->device);
  cs_flight_trigger(CS_WIN_HANG, r); /* COLLSCOPE_RECORD=summary: the detail and counts before it */
  const struct cs_emit_hang v = {
      .comm = r->comm_id,
      .comm_size = r->comm_size,
      .comm_rank = r->comm_rank,
      .rank = cs_cfg.rank,
      .seq = seq_or_none(r->seq),
      .op_name = r->op < CS_OP_COUNT ? cs_op_table[r->op].name : "unknown",
      .enqueue_ns = r->enqueue_ns,
      .age_ms = (now_ns - r->enqueue_ns) / 1000000,
      .started = started > 0,
      .start_known = started >= 0,
      .t_ns = now_ns,
  };
  cs_dump_line_begin();
  put_hang_line(&v);
  cs_dump_line_end(LINE_RECORD, 0);
}

void cs_dump_drops(uint64_t count) {
  if (!cs_dump_active()) return;
  ensure_header(-1);
  const struct cs_emit_drops v = {.count = count, .t_ns = cs_now_ns(CLOCK_REALTIME)};
  cs_dump_line_begin();
  put_drops_line(&v);
  cs_dump_line_end(LINE_DROPS, count);
}

void cs_dump_drops_sync(void) {
  uint64_t d = atomic_load(&cs_st.drops), noted = cs_dump_counts().drops_noted;
  if (d > noted) cs_dump_drops(d - noted);
}

/* the footer writers' fields (cs_dump_sources) */
static void footer_key(const char *key) {
  PUTL(",\"");
  puts_(key);
  PUTL("\":");
}
static void footer_str(const char *key, const char *v) {
  footer_key(key);
  put_str(v);
}
static void footer_u64(const char *key, uint64_t v) {
  footer_key(key);
  put_u64(v);
}
static const struct cs_dump_kv footer_kv = {footer_str, footer_u64};

static void footer_sources(const struct cs_emit_footer *v) {
  (void)v;
  for (int i = 0; i < CS_DUMP_FOOTERS; i++)
    if (sources.footer[i]) sources.footer[i](&footer_kv);
}

/* COLLSCOPE_RECORD=summary's lines (stats/summary.c, stats/flight.c) */
void cs_dump_summary_line(const struct cs_summary_line *s) {
  if (!cs_dump_active()) return;
  const struct cs_emit_summary v = {
      .comm = s->comm,
      .comm_size = s->comm_size,
      .comm_rank = s->comm_rank,
      .rank = cs_cfg.rank,
      .op_name = s->op == CS_SUMMARY_XFER            ? "Memcpy"
                 : s->op >= 0 && s->op < CS_OP_COUNT ? cs_op_table[s->op].name
                                                     : "unknown",
      .dtype = cs_dtype_name(s->dtype),
      .bucket = s->bucket,
      .t0_ns = s->t0_ns,
      .t1_ns = s->t1_ns,
      .count = s->count,
      .timed = s->timed,
      .errors = s->errors,
      .grouped = s->grouped,
      .bytes = s->bytes,
      .bytes_min = s->bytes_min,
      .bytes_max = s->bytes_max,
      .sizes = s->sizes,
      .dur_sum_us = s->dur_sum_ns,
      .dur_min_us = s->dur_min_ns,
      .dur_max_us = s->dur_max_ns,
      .hist = s->hist,
  };
  cs_dump_line_begin();
  put_summary_line(&v);
  cs_dump_line_end(LINE_RECORD, 0);
}

void cs_dump_window_line(int why, const struct cs_record *r, uint64_t before, uint64_t after) {
  if (!cs_dump_active()) return;
  const struct cs_emit_window v = {
      .reason = cs_flight_reason_name(why),
      .rank = cs_cfg.rank,
      .comm = r ? &r->comm_id : NULL,
      .seq = r ? seq_or_none(r->seq) : -1,
      .before = before,
      .after = after,
      .t_ns = r ? r->enqueue_ns : cs_now_ns(CLOCK_REALTIME),
  };
  cs_dump_line_begin();
  put_window_line(&v);
  cs_dump_line_end(LINE_RECORD, 0);
}

void cs_dump_footer(void) {
  if (!cs_dump_active()) return;
  cs_summary_close(); /* the open interval, the compute gaps */
  /* write what is buffered first, so the footer counts its fate, and note new drops */
  cs_dump_flush();
  cs_dump_drops_sync();
  ensure_header(-1);
  cs_dump_line_begin();
  struct dump_counts c = cs_dump_counts();
  const struct cs_emit_footer v = {
      .ops = c.ops,
      .xfers = c.xfers,
      .drops = atomic_load(&cs_st.drops),
      .write_drops = c.write_drops,
      .ops_recorded = c.ops + c.ops_lost + c.budget_ops,
      .timing_lost = atomic_load(&cs_st.timing_lost),
      .budget = cs_cfg.budget,
      .budget_drops = c.budget_drops,
      .windows_suppressed = cs_flight_suppressed(),
      .gaps_lost = cs_gaps_lost(),
      .local_unkeyed = cs_local_unkeyed(),
      .t_ns = cs_now_ns(CLOCK_REALTIME),
  };
  put_footer_line(&v);
  cs_dump_line_end(LINE_FOOTER, 0);
}
