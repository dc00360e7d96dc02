/* stats/dump_writer.c: formats records as JSON Lines (DESIGN.md "Dump files") into a
 * buffer and writes whole lines to the per-process file. Formatting is hand-rolled
 * (integers, hex, fixed-point microseconds) because it runs for every op at up to
 * hundreds of thousands of records per second.
 *
 * Write errors (a full disk): the file keeps ending at its last whole line (a partial
 * write is cut back with ftruncate, or, if that fails, a continuation file is started),
 * every record of the failed buffer is counted as dropped (cs_st.drops, footer
 * `write_drops`), and every later flush tries again, so writing resumes when space
 * returns. A lost header is written again before the next record. */
#include "dump_writer.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

#define BUF_CAP (1u << 20)
/* a line starts only with this much room left; a longer line is dropped (and counted) */
#define LINE_ROOM (64u << 10)

struct cs_dump_io cs_dump_io = {write, ftruncate};

static int fd = -1;
static struct cs_dump_sources sources; /* what the layers above hand over (dump_writer.h) */

void cs_dump_sources_set(const struct cs_dump_sources *s) { sources = *s; }
static char path[8192];
static char *buf;
static size_t blen;
static bool header_done; /* the header is in the buffer or on the file */

/* the line being formatted: where it starts, and whether it ran out of room */
static size_t line_start;
static bool line_overflow;
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

enum line_kind { LINE_HEADER,
                 LINE_OP,
                 LINE_XFER,
                 LINE_RECORD,
                 LINE_DROPS,
                 LINE_FOOTER };

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
static inline void put(const char *s, size_t n) {
  if (CS_UNLIKELY(blen + n > BUF_CAP)) { /* only a line longer than LINE_ROOM gets here */
    line_overflow = true;
    return;
  }
  memcpy(buf + blen, s, n);
  blen += n;
}

/* Every line is formatted between line_begin and line_end, so the buffer only ever holds
 * whole lines when it is written. */
static void line_begin(void) {
  if (CS_UNLIKELY(blen > BUF_CAP - LINE_ROOM)) cs_dump_flush();
  line_start = blen;
  line_overflow = false;
}
static void line_end(enum line_kind kind, uint64_t drops_count) {
  if (CS_UNLIKELY(line_overflow)) { /* cannot happen with collscope's bounded fields */
    blen = line_start;
    if (kind == LINE_OP || kind == LINE_XFER || kind == LINE_RECORD) {
      write_drops++;
      ops_lost += kind == LINE_OP;
      atomic_fetch_add(&cs_st.drops, 1);
    } else if (kind == LINE_HEADER) {
      header_done = false;
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
static void puts_(const char *s) { put(s, strlen(s)); }
/* string literals: length known at compile time */
#define PUTL(lit) put(lit, sizeof(lit) - 1)
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
#define KEY(k) PUTL(",\"" k "\":")

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
  blen = 0;
  header_done = buf_header = false;
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
  if (!buf && !(buf = malloc(BUF_CAP))) return false;
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

static void write_header(int device) {
  int nccl_ver = 0, drv_ver = 0;
  int (*getver)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "pncclGetVersion");
  if (getver) getver(&nccl_ver);
  char bus[32] = "";
  if (sources.device_info) sources.device_info(device, &drv_ver, bus, sizeof bus);
  char exe[1024] = "";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[n > 0 ? n : 0] = 0;
  line_begin();
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
  header_done = true;
  line_end(LINE_HEADER, 0);
}

size_t (*cs_dump_header_extra)(int device, char *out, size_t cap);

static void ensure_header(int device);
void cs_dump_raw_line(const char *json, size_t len, int device) {
  if (fd < 0) return;
  ensure_header(device);
  line_begin();
  if (len > CS_DUMP_RAW_MAX)
    line_overflow = true;
  else {
    put(json, len);
    PUTL("\n");
  }
  line_end(LINE_RECORD, 0);
}

static void ensure_header(int device) {
  if (!header_done) write_header(device);
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

/* SDC check results (hooks/sdc.c): "sdc":{"checked":BITS,"fp":HEX16,"in_sum":F,"in_abs":F,"out_sum":F};
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

void cs_dump_record(const struct cs_record *r) {
  if (fd < 0) return;
  ensure_header(r->device);
  bool timed = r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_HOST_SPAN || r->timing == CS_TIMING_PROFILER;
  line_begin();
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
    line_end(LINE_RECORD, 0);
    return;
  case CS_REC_OP:
    PUTL("{\"type\":\"op\",\"comm\":");
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
    line_end(LINE_RECORD, 0);
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
  line_end(r->type == CS_REC_OP ? LINE_OP : LINE_XFER, 0);
}

void cs_dump_hang(const struct cs_record *r, int64_t now_ns, bool started) {
  if (fd < 0) return;
  ensure_header(r->device);
  line_begin();
  PUTL("{\"type\":\"hang\",\"comm\":");
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
  KEY("enqueue_ns");
  put_i64(r->enqueue_ns);
  KEY("age_ms");
  put_i64((now_ns - r->enqueue_ns) / 1000000);
  KEY("started");
  puts_(started ? "true" : "false");
  KEY("t_ns");
  put_i64(now_ns);
  PUTL("}\n");
  line_end(LINE_RECORD, 0);
}

void cs_dump_drops(uint64_t count) {
  if (fd < 0) return;
  ensure_header(-1);
  line_begin();
  PUTL("{\"type\":\"drops\",\"count\":");
  put_u64(count);
  KEY("t_ns");
  put_i64(cs_now_ns(CLOCK_REALTIME));
  PUTL("}\n");
  line_end(LINE_DROPS, count);
}

void cs_dump_drops_sync(void) {
  uint64_t d = atomic_load(&cs_st.drops);
  if (d > drops_noted) cs_dump_drops(d - drops_noted);
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
  if (fd < 0) return;
  /* write what is buffered first, so the footer counts its fate, and note new drops */
  cs_dump_flush();
  cs_dump_drops_sync();
  ensure_header(-1);
  line_begin();
  PUTL("{\"type\":\"footer\",\"ops\":");
  put_u64(n_ops + buf_ops);
  KEY("xfers");
  put_u64(n_xfers + buf_xfers);
  KEY("drops");
  put_u64(atomic_load(&cs_st.drops));
  KEY("write_drops");
  put_u64(write_drops);
  KEY("ops_recorded");
  put_u64(n_ops + buf_ops + ops_lost);
  KEY("timing_lost");
  put_u64(atomic_load(&cs_st.timing_lost));
  for (int i = 0; i < CS_DUMP_FOOTERS; i++)
    if (sources.footer[i]) sources.footer[i](&footer_kv);
  KEY("t_ns");
  put_i64(cs_now_ns(CLOCK_REALTIME));
  PUTL("}\n");
  line_end(LINE_FOOTER, 0);
}

/* The buffer could not be written: count its records as dropped, and let its lines about
 * the file (header, drops) be written again later. */
static void lose_buffer(int err) {
  write_drops += buf_recs;
  ops_lost += buf_ops;
  atomic_fetch_add(&cs_st.drops, buf_recs);
  drops_noted -= buf_drop_counts;
  if (buf_header) header_done = false;
  if (!failing)
    cs_log(CS_LOG_WARN, "write to %s failed: %s; records are counted as dropped until writing works again", path,
           strerror(err));
  failing = true;
  blen = 0;
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
  header_done = false; /* the new file starts with its own header */
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
  if (fd < 0 || blen == 0) return;
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
  while (off < blen) {
    ssize_t w = cs_dump_io.write(fd, buf + off, blen - off);
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
  good_off += (off_t)blen;
  n_ops += buf_ops;
  n_xfers += buf_xfers;
  blen = 0;
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
