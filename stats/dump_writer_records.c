/* stats/dump_writer_records.c: formats each record kind (header, op, xfer, comm, link, hang,
 * drops, footer, lines handed over by the layers above) as one JSON line (DESIGN.md "Dump
 * files") into the writer's buffer (stats/dump_writer.c). Formatting is hand-rolled
 * (integers, hex, fixed-point microseconds) because it runs for every op at up to
 * hundreds of thousands of records per second. */
#include "collscope/slurm_node.h"
#include "dump_writer_internal.h"
#include <dlfcn.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

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

static void write_header(int device) {
  int nccl_ver = 0, drv_ver = 0;
  int (*getver)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "pncclGetVersion");
  if (getver) getver(&nccl_ver);
  char bus[32] = "";
  if (sources.device_info) sources.device_info(device, &drv_ver, bus, sizeof bus);
  char exe[1024] = "";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[n > 0 ? n : 0] = 0;
  cs_dump_line_begin();
  PUTL("{\"type\":\"header\",\"schema\":");
  put_u64(COLLSCOPE_SCHEMA_VERSION);
  KEY("collscope");
  put_str("0.1.0");
  KEY("host");
  put_str(cs_cfg.host);
  KEY("pid");
  put_i64(getpid());
  KEY("rank");
  put_i64(cs_cfg.rank);
  KEY("local_rank");
  put_i64(cs_cfg.local_rank);
  KEY("world_size");
  put_i64(cs_cfg.world_size);
  KEY("job");
  put_str(cs_cfg.job);
  if (cs_cfg.step >= 0) {
    KEY("step");
    put_i64(cs_cfg.step);
  }
  if (cs_cfg.slurm_node[0]) {
    KEY(CS_HDR_SLURM_NODE);
    put_str(cs_cfg.slurm_node);
  }
  KEY("device");
  put_i64(device);
  KEY("pci_bus_id");
  put_str(bus);
  KEY("nccl_version");
  put_i64(nccl_ver);
  KEY("cuda_driver_version");
  put_i64(drv_ver);
  KEY("clock");
  PUTL("{\"realtime_ns\":");
  put_i64(cs_now_ns(CLOCK_REALTIME));
  PUTL(",\"monotonic_ns\":");
  put_i64(cs_now_ns(CLOCK_MONOTONIC));
  PUTL("}");
  KEY("exe");
  put_str(exe);
  if (cs_dump_header_extra) { /* gpu_name, gpu_uuid (hooks/health.c) */
    char extra[1024];
    size_t n = cs_dump_header_extra(device, extra, sizeof extra);
    if (n < sizeof extra) put(extra, n);
  }
  PUTL("}\n");
  cs_dump_lb.header_done = true;
  cs_dump_line_end(LINE_HEADER, 0);
}

size_t (*cs_dump_header_extra)(int device, char *out, size_t cap);

static void ensure_header(int device);
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

static void ensure_header(int device) {
  if (!cs_dump_lb.header_done) write_header(device);
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

/* SDC check results (hooks/sdc_check.c): "sdc":{"checked":BITS,"fp":HEX16,"in_sum":F,"in_abs":F,"out_sum":F};
 * fields whose bit of sdc_checked is clear, and non-finite sums, are null. */
static void put_f64(bool ok, double v) {
  char t[40];
  if (!ok || !__builtin_isfinite(v)) {
    PUTL("null");
    return;
  }
  put(t, (size_t)snprintf(t, sizeof t, "%.17g", v));
}
static void put_sdc(const struct cs_record *r) {
  bool out = r->sdc_checked & 1, in = r->sdc_checked & 2;
  KEY("sdc");
  PUTL("{\"checked\":");
  put_u64(r->sdc_checked);
  PUTL(",\"fp\":");
  if (out)
    put_id(r->fingerprint);
  else
    PUTL("null");
  PUTL(",\"in_sum\":");
  put_f64(in, r->in_sum);
  PUTL(",\"in_abs\":");
  put_f64(in, r->in_abs);
  PUTL(",\"out_sum\":");
  put_f64(out, r->out_sum);
  PUTL("}");
}

/* the fields that name an op, shared by "op" and "hang" lines: the communicator's id (after
 * the caller's `"comm":`), comm_size, comm_rank, rank, seq (-1: none) and op */
static void put_op_identity(const struct cs_record *r) {
  put_id(r->comm_id);
  KEY("comm_size");
  put_i64(r->comm_size);
  KEY("comm_rank");
  put_i64(r->comm_rank);
  KEY("rank");
  put_i64(cs_cfg.rank);
  KEY("seq");
  if (r->seq == UINT64_MAX)
    PUTL("-1");
  else
    put_u64(r->seq);
  KEY("op");
  put_name(r->op < CS_OP_COUNT ? cs_op_table[r->op].name : "unknown");
}

void cs_dump_record(const struct cs_record *r) {
  if (!cs_dump_active()) return;
  ensure_header(r->device);
  bool timed = r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_HOST_SPAN || r->timing == CS_TIMING_PROFILER;
  cs_dump_line_begin();
  switch (r->type) {
  case CS_REC_COMM:
    PUTL("{\"type\":\"comm\",\"event\":");
    put_name(comm_event_name(r->event));
    KEY("comm");
    put_id(r->comm_id);
    KEY("size");
    put_i64(r->comm_size);
    KEY("rank");
    put_i64(r->comm_rank);
    KEY("device");
    put_i64(r->device);
    KEY("parent");
    if (r->parent_id)
      put_id(r->parent_id);
    else
      PUTL("null");
    KEY("t_ns");
    put_i64(r->enqueue_ns);
    PUTL("}\n");
    cs_dump_line_end(LINE_RECORD, 0);
    return;
  case CS_REC_OP:
    PUTL("{\"type\":\"op\",\"comm\":");
    put_op_identity(r);
    KEY("dtype");
    put_name(cs_dtype_name(r->dtype));
    KEY("count");
    put_u64(r->count);
    KEY("bytes");
    put_u64(r->bytes);
    KEY("redop");
    if (r->redop >= 0)
      put_name(cs_redop_name(r->redop));
    else
      PUTL("null");
    KEY("root");
    put_i64(r->root);
    KEY("peer");
    put_i64(r->peer);
    break;
  case CS_REC_LINK: { /* NCCL_NET wrapper: one connection over [t0_ns, t_ns] (DESIGN.md) */
    PUTL("{\"type\":\"link\",\"dir\":");
    put_name(r->root ? "recv" : "send");
    KEY("rank");
    put_i64(cs_cfg.rank);
    KEY("peer");
    put_i64(r->peer);
    KEY("conn");
    put_id(r->comm_id);
    KEY("dev");
    put_i64(r->device);
    KEY("bytes");
    put_u64(r->bytes);
    KEY("msgs");
    put_u64(r->count);
    KEY("busy_us");
    put_us((int64_t)r->stream);
    KEY("gbps_p50");
    put_f64(true, r->in_sum);
    KEY("gbps_p10");
    put_f64(true, r->in_abs);
    KEY("gbps_mean");
    put_f64(true, r->out_sum);
    KEY("max_inflight");
    put_u64(r->seq);
    KEY("t0_ns");
    put_i64(r->start_ns);
    KEY("t_ns");
    put_i64(r->end_ns);
    KEY("closed");
    puts_(r->event ? "true" : "false");
    PUTL("}\n");
    cs_dump_line_end(LINE_RECORD, 0);
    return;
  }
  case CS_REC_XFER:
    PUTL("{\"type\":\"xfer\",\"op\":\"Memcpy\",\"api\":");
    put_name(xfer_api_name(r->api));
    KEY("kind");
    put_name(xfer_kind_name(r->event));
    KEY("bytes");
    put_u64(r->bytes);
    KEY("async");
    puts_(r->async ? "true" : "false");
    break;
  default:
    return;
  }
  KEY("stream");
  put_hex(r->stream);
  if (r->type == CS_REC_OP) {
    KEY("group");
    put_u64(r->group);
  }
  KEY("enqueue_ns");
  put_i64(r->enqueue_ns);
  KEY("start_ns");
  put_i64(timed ? r->start_ns : 0);
  KEY("end_ns");
  put_i64(timed ? r->end_ns : 0);
  KEY("dur_us");
  put_us(timed ? r->end_ns - r->start_ns : 0);
  KEY("timing");
  put_name(cs_timing_name(r->timing));
  KEY("captured");
  puts_(r->captured ? "true" : "false");
  KEY("site");
  put_site(r->site);
  KEY("status");
  put_i64(r->status);
  if (r->type == CS_REC_OP && r->sdc_checked) put_sdc(r);
  if (r->type == CS_REC_OP && r->algo) {
    KEY("algo");
    put_name(cs_algo_name(r->algo));
  }
  if (r->type == CS_REC_OP && r->proto) {
    KEY("proto");
    put_name(cs_proto_name(r->proto));
  }
  if (r->type == CS_REC_OP && r->nchannels) {
    KEY("nchannels");
    put_u64(r->nchannels);
  }
  PUTL("}\n");
  cs_dump_line_end(r->type == CS_REC_OP ? LINE_OP : LINE_XFER, 0);
}

void cs_dump_hang(const struct cs_record *r, int64_t now_ns, bool started) {
  if (!cs_dump_active()) return;
  ensure_header(r->device);
  cs_dump_line_begin();
  PUTL("{\"type\":\"hang\",\"comm\":");
  put_op_identity(r);
  KEY("enqueue_ns");
  put_i64(r->enqueue_ns);
  KEY("age_ms");
  put_i64((now_ns - r->enqueue_ns) / 1000000);
  KEY("started");
  puts_(started ? "true" : "false");
  KEY("t_ns");
  put_i64(now_ns);
  PUTL("}\n");
  cs_dump_line_end(LINE_RECORD, 0);
}

void cs_dump_drops(uint64_t count) {
  if (!cs_dump_active()) return;
  ensure_header(-1);
  cs_dump_line_begin();
  PUTL("{\"type\":\"drops\",\"count\":");
  put_u64(count);
  KEY("t_ns");
  put_i64(cs_now_ns(CLOCK_REALTIME));
  PUTL("}\n");
  cs_dump_line_end(LINE_DROPS, count);
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

void cs_dump_footer(void) {
  if (!cs_dump_active()) return;
  /* write what is buffered first, so the footer counts its fate, and note new drops */
  cs_dump_flush();
  cs_dump_drops_sync();
  ensure_header(-1);
  cs_dump_line_begin();
  struct dump_counts c = cs_dump_counts();
  PUTL("{\"type\":\"footer\",\"ops\":");
  put_u64(c.ops);
  KEY("xfers");
  put_u64(c.xfers);
  KEY("drops");
  put_u64(atomic_load(&cs_st.drops));
  KEY("write_drops");
  put_u64(c.write_drops);
  KEY("ops_recorded");
  put_u64(c.ops + c.ops_lost);
  KEY("timing_lost");
  put_u64(atomic_load(&cs_st.timing_lost));
  for (int i = 0; i < CS_DUMP_FOOTERS; i++)
    if (sources.footer[i]) sources.footer[i](&footer_kv);
  KEY("t_ns");
  put_i64(cs_now_ns(CLOCK_REALTIME));
  PUTL("}\n");
  cs_dump_line_end(LINE_FOOTER, 0);
}
