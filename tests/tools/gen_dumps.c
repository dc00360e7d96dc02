/* tests/tools/gen_dumps.c: writes a deterministic synthetic set of collscope dump files, one
 * per rank, for the trace tests and the reader benchmarks (docs/benchmarks.md). Header, comm
 * and op lines are written by the schema's line writers (include/collscope/dump_emit.h), the
 * ones stats/dump_writer_records.c uses, so they are laid out exactly as the shim writes them
 * (docs/dump-format.md); the footer has the fields a reader reads, named by the schema's keys.
 *
 *   gen_dumps --ranks N --ops M --out DIR [--jobs J] [--seed S]
 *
 * Each rank has the world communicator (N ranks) and, when N >= 16, a split communicator of
 * its 8-rank group (tensor parallel); 1 op in 5 is on the group communicator. Ops cycle through
 * AllReduce / AllGather / ReduceScatter / Broadcast over 1 KiB .. 64 MiB. Every field is a pure
 * function of (seed, comm, seq, rank), so ranks are written independently (J processes) and
 * agree on every instance: one common start, a per-rank arrival jitter, and rank 5 arriving
 * late in every other world instance (a straggler for the detector to find). Every 50th world
 * instance carries an SDC check result with one fingerprint on every rank. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CS_EMIT_T_SITE const char * /* the site as text */
#include "collscope/dump_emit.h"
#include "collscope/schema.h"

static uint64_t mix(uint64_t x) { /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static uint64_t h4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return mix(mix(mix(mix(a) ^ b) ^ c) ^ d); }

#define T0_NS 1764576000000000000ll
#define STRAGGLER 5

struct gen {
  int ranks;
  long ops;
  uint64_t seed;
  const char *out;
};

struct opkind {
  const char *op, *dtype;
  int esz;
  bool redop;
  int busmul;
};
static const struct opkind kinds[] = {
    {"AllReduce", "float32", 4, true, 0},
    {"AllGather", "bfloat16", 2, false, 1},
    {"ReduceScatter", "bfloat16", 2, true, 1},
    {"Broadcast", "float32", 4, false, 0},
};

/* ---- the line being formatted, and the value writers dump_emit.h calls ---- */
static struct {
  char buf[1 << 16];
  size_t len;
  bool overflow;
} line;
#define CS_EMIT_BUF line.buf
#define CS_EMIT_LEN line.len
#define cs_emit_sources(v) ((void)(v)) /* no layer above stats/ writes here */

static void put(const char *s, size_t n) {
  if (line.len + n > sizeof line.buf) {
    line.overflow = true;
    return;
  }
  memcpy(line.buf + line.len, s, n);
  line.len += n;
}
static void putf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void putf(const char *fmt, ...) {
  char t[64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t, sizeof t, fmt, ap);
  va_end(ap);
  if (n > 0) put(t, (size_t)n < sizeof t ? (size_t)n : sizeof t - 1);
}
static void put_i64(int64_t v) { putf("%" PRId64, v); }
static void put_u64(uint64_t v) { putf("%" PRIu64, v); }
static void put_us(int64_t ns) { /* microseconds with 3 decimals, as the writer's */
  uint64_t a = ns < 0 ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns;
  putf("%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000, (unsigned)(a % 1000));
}
static void put_f64(double v) {
  if (!isfinite(v))
    CS_EMIT_LIT("null");
  else
    putf("%.17g", v);
}
static void put_str(const char *s) { /* escaped as JSON needs */
  put("\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      putf("\\%c", c);
    else if (c < 0x20)
      putf("\\u%04x", c);
    else
      put(s, 1);
  }
  put("\"", 1);
}
static void put_site(const char *s) { put_str(s); }
static void put_name(const char *s) {
  put("\"", 1);
  put(s, strlen(s));
  put("\"", 1);
}
static void put_name0(const char *s) {
  if (s)
    put_name(s);
  else
    CS_EMIT_LIT("null");
}
static void put_id(uint64_t v) { putf("\"%016" PRIx64 "\"", v); }
static void put_id0(const uint64_t *v) {
  if (v)
    put_id(*v);
  else
    CS_EMIT_LIT("null");
}
static void put_hex(uint64_t v) { putf("\"0x%" PRIx64 "\"", v); }
static void put_bool(bool v) {
  if (v)
    CS_EMIT_LIT("true");
  else
    CS_EMIT_LIT("false");
}

CS_EMIT_OBJECT(clock, CS_DUMP_CLOCK_FIELDS)
CS_EMIT_OBJECT(sdc, CS_DUMP_SDC_FIELDS)
CS_EMIT_LINE(header, CS_DUMP_HEADER_FIELDS)
CS_EMIT_LINE(comm, CS_DUMP_COMM_FIELDS)
CS_EMIT_LINE(op, CS_DUMP_OP_FIELDS)

static void put_key(const char *k) {
  CS_EMIT_LIT(",\"");
  put(k, strlen(k));
  CS_EMIT_LIT("\":");
}

/* the footer's fields that readers read (write_drops and ops_recorded are the writer's own
 * accounting, read by no reader), by the schema's keys */
static void put_footer_line(uint64_t ops, int64_t t_ns) {
  CS_EMIT_LIT("{\"type\":\"footer\"");
  const char *const zero[] = {cs_dump_footer_keys.xfers, cs_dump_footer_keys.drops, cs_dump_footer_keys.timing_lost};
  put_key(cs_dump_footer_keys.ops);
  put_u64(ops);
  for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) {
    put_key(zero[i]);
    put_u64(0);
  }
  put_key(cs_dump_footer_keys.t_ns);
  put_i64(t_ns);
  CS_EMIT_LIT("}\n");
}

/* the formatted line to the file */
static bool line_out(FILE *f) {
  bool ok = !line.overflow && fwrite(line.buf, 1, line.len, f) == line.len;
  line.len = 0;
  line.overflow = false;
  return ok;
}

static int write_rank(const struct gen *g, int rank) {
  char host[32], path[4096];
  snprintf(host, sizeof host, "node%04d", rank / 8);
  snprintf(path, sizeof path, "%s/collscope-%s-r%d-p%d.jsonl", g->out, host, rank, 10000 + rank);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    fprintf(stderr, "gen_dumps: %s: %s\n", path, strerror(errno));
    return 1;
  }
  FILE *f = fdopen(fd, "w");
  static char iobuf[1 << 20];
  setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
  bool tp = g->ranks >= 16;
  uint64_t world = h4(g->seed, 1, 0, 0), group = h4(g->seed, 2, (uint64_t)rank / 8, 0);
  uint64_t stream = 0x7f3a2c000b20ull + ((uint64_t)rank % 8) * 0x100;
  const struct cs_emit_clock clock = {.realtime_ns = T0_NS - 5000000000ll, .monotonic_ns = 1000000000ll};
  char bus[16];
  snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x18 + rank % 8);
  const struct cs_emit_header hdr = {
      .schema = COLLSCOPE_SCHEMA_VERSION,
      .collscope = "0.1.0",
      .host = host,
      .pid = 10000 + rank,
      .rank = rank,
      .local_rank = rank % 8,
      .world_size = g->ranks,
      .job = "bench",
      .step = -1,
      .device = rank % 8,
      .pci_bus_id = bus,
      .nccl_version = 22809,
      .cuda_driver_version = 13000,
      .clock = &clock,
      .exe = "/usr/bin/python3.12",
  };
  put_header_line(&hdr);
  bool ok = line_out(f);
  const struct cs_emit_comm init = {
      .event = "init", .comm = world, .size = g->ranks, .rank = rank, .device = rank % 8, .t_ns = T0_NS - 2000000000ll};
  put_comm_line(&init);
  ok &= line_out(f);
  if (tp) {
    const struct cs_emit_comm split = {
        .event = "split", .comm = group, .size = 8, .rank = rank % 8, .device = rank % 8, .parent = &world, .t_ns = T0_NS - 1000000000ll};
    put_comm_line(&split);
    ok &= line_out(f);
  }
  int64_t wseq = 0, gseq = 0;
  for (long i = 0; i < g->ops; i++) {
    bool on_group = tp && i % 5 == 4;
    uint64_t comm = on_group ? group : world;
    int64_t seq = on_group ? gseq++ : wseq++;
    int csize = on_group ? 8 : g->ranks, crank = on_group ? rank % 8 : rank;
    const struct opkind *k = &kinds[(uint64_t)i % 4];
    uint64_t bytes = 1024ull << (h4(g->seed, comm, (uint64_t)seq, 7) % 17); /* 1 KiB .. 64 MiB */
    uint64_t count = bytes / (uint64_t)k->esz;
    if (k->busmul) count /= (uint64_t)csize;
    if (!count) count = 1;
    bytes = count * (uint64_t)k->esz * (k->busmul ? (uint64_t)csize : 1);
    /* instance timeline: every rank agrees on t (the op index sets the clock) */
    int64_t t = T0_NS + (int64_t)i * 2000000 + 100000;
    int64_t xfer_ns = 8000 + (int64_t)(bytes / 40); /* ~40 GB/s */
    int64_t jit = (int64_t)(h4(g->seed, comm, (uint64_t)seq, (uint64_t)rank) % 20000);
    bool late = !on_group && rank == STRAGGLER && seq % 2 == 0;
    int64_t arrive = t + jit + (late ? 300000 : 0);
    int64_t all_in = t + 20000 + (!on_group && seq % 2 == 0 && g->ranks > STRAGGLER ? 300000 : 0);
    int64_t start = arrive, end = all_in + xfer_ns;
    int64_t enq = arrive - 15000 - (int64_t)(h4(g->seed, comm, (uint64_t)seq, 3) % 5000);
    uint64_t fp = h4(g->seed, comm, (uint64_t)seq, 99);
    const struct cs_emit_sdc sdc = {
        .checked = 3,
        .fp = &fp,
        .in_sum = 0.5 * (double)(rank + 1),
        .in_abs = 0.75 * (double)(rank + 1),
        .out_sum = 0.25 * (double)g->ranks * (g->ranks + 1),
    };
    const struct cs_emit_op op = {
        .comm = comm,
        .comm_size = csize,
        .comm_rank = crank,
        .rank = rank,
        .seq = seq,
        .op_name = k->op,
        .dtype = k->dtype,
        .count = (int64_t)count,
        .bytes = bytes,
        .redop = k->redop ? "sum" : NULL,
        .root = k->redop || k->busmul ? -1 : 0,
        .peer = -1,
        .stream = stream,
        .group = 0,
        .enqueue_ns = enq,
        .start_ns = start,
        .end_ns = end,
        .dur_us = end - start,
        .timing_name = "gpu_event",
        .captured = false,
        .site = "libtorch_cuda.so!c10d::ProcessGroupNCCL::collective+0x1a4",
        .status = 0,
        .sdc = !on_group && seq % 50 == 0 && k->redop ? &sdc : NULL,
        .algo = "Ring",
        .proto = "Simple",
        .nchannels = 16,
    };
    put_op_line(&op);
    ok &= line_out(f);
  }
  put_footer_line((uint64_t)g->ops, T0_NS + (long long)g->ops * 2000000 + 1000000);
  ok &= line_out(f);
  if (fclose(f) != 0 || !ok) {
    fprintf(stderr, "gen_dumps: %s: write failed\n", path);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct gen g = {.ranks = 8, .ops = 1000, .seed = 1, .out = NULL};
  int jobs = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--ranks"))
      g.ranks = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--ops"))
      g.ops = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--out"))
      g.out = argv[i + 1];
    else if (!strcmp(argv[i], "--jobs"))
      jobs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed"))
      g.seed = strtoull(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "gen_dumps: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!g.out || g.ranks < 1 || g.ops < 0 || jobs < 1) {
    fputs("usage: gen_dumps --ranks N --ops M --out DIR [--jobs J] [--seed S]\n", stderr);
    return 2;
  }
  if (mkdir(g.out, 0755) != 0 && errno != EEXIST) {
    perror(g.out);
    return 1;
  }
  for (int j = 0; j < jobs; j++) {
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      return 1;
    }
    if (p == 0) {
      int rc = 0;
      for (int r = j; r < g.ranks; r += jobs) rc |= write_rank(&g, r);
      _exit(rc);
    }
  }
  int rc = 0, st;
  while (wait(&st) > 0) rc |= !WIFEXITED(st) || WEXITSTATUS(st);
  return rc;
}
