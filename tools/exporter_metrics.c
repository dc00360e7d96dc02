/* tools/exporter_metrics.c: metric families (names, HELP, TYPE, labels) and their exposition
 * in the Prometheus text format or OpenMetrics (see exporter_metrics.h and docs/exporter.md).
 * Every label value comes from a ring and was made printable (ring_text_escape); it is
 * escaped once more for the exposition (backslash, quote, newline). */
#include "exporter_metrics.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The exposition is built in one growing buffer with hand-rolled number formatting: a
 * scrape of 64 ranks is tens of thousands of lines, and stdio's per-call cost dominated. */
struct obuf {
  char *p;
  size_t n, cap;
  bool oom;
};

static void reserve(struct obuf *o, size_t more) {
  if (o->oom || o->n + more <= o->cap) return;
  size_t nc = o->cap ? o->cap : 1 << 16;
  while (nc < o->n + more) nc *= 2;
  char *np = realloc(o->p, nc);
  if (!np) {
    o->oom = true;
    return;
  }
  o->p = np;
  o->cap = nc;
}
static void putn(struct obuf *o, const char *s, size_t n) {
  reserve(o, n);
  if (o->oom) return;
  memcpy(o->p + o->n, s, n);
  o->n += n;
}
static void puts_(struct obuf *o, const char *s) { putn(o, s, strlen(s)); }
static void putc_(struct obuf *o, char c) { putn(o, &c, 1); }
static void putu(struct obuf *o, uint64_t v) {
  char b[24];
  int i = sizeof b;
  do {
    b[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  putn(o, b + i, sizeof b - (size_t)i);
}
static void putf(struct obuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct obuf *o, const char *fmt, ...) {
  char b[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  if (n > 0) putn(o, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

enum kind { GAUGE,
            COUNTER,
            HISTOGRAM };
struct family {
  const char *name;
  enum kind kind;
  const char *help;
};

/* names without _total: the text format adds it to counters in TYPE lines */
enum {
  F_UP,
  F_COLL,
  F_ERR,
  F_BYTES,
  F_BUS,
  F_DUR,
  F_BUSBW,
  F_REC,
  F_DROP,
  F_LOST,
  F_INVALID,
  F_STRAG,
  F_LATE,
  F_OFFS,
  F_HANGS,
  F_HUNG,
  F_PEND,
  F_SDCC,
  F_SDCF,
  F_LINKSLOW,
  F_LINKBW,
  F_RINGS,
  F_SKIP,
  F_DROPPED,
  F_POLL,
  F_SCRAPES,
  F_N
};
static const struct family fam[F_N] = {
    [F_UP] = {"collscope_up", GAUGE, "1 while the rank's process runs, 0 during the grace period after it exited"},
    [F_COLL] = {"collscope_collectives", COUNTER, "NCCL operations completed (one per call on this rank)"},
    [F_ERR] = {"collscope_collective_errors", COUNTER, "NCCL operations whose call returned an error"},
    [F_BYTES] = {"collscope_collective_bytes", COUNTER, "Bytes of the NCCL operations (the op's message size)"},
    [F_BUS] = {"collscope_collective_bus_bytes", COUNTER,
               "Bytes times the bus bandwidth factor of the timed operations (rate over the duration sum's rate is the bus bandwidth)"},
    [F_DUR] = {"collscope_collective_duration_seconds", HISTOGRAM, "GPU duration of the timed NCCL operations"},
    [F_BUSBW] = {"collscope_busbw_bytes_per_second", GAUGE,
                 "Bus bandwidth of the operations completed since the previous poll that had some"},
    [F_REC] = {"collscope_records", COUNTER, "Records the exporter read from the rank's stats ring"},
    [F_DROP] = {"collscope_records_dropped", COUNTER, "Records the rank's process could not publish (its queue was full)"},
    [F_LOST] = {"collscope_records_lost", COUNTER, "Records overwritten in the ring before the exporter read them"},
    [F_INVALID] = {"collscope_records_invalid", COUNTER, "Records of an unknown type or op (ignored)"},
    [F_STRAG] = {"collscope_straggler", GAUGE, "1 when the live detector flags the rank as a straggler"},
    [F_LATE] = {"collscope_lateness_seconds", GAUGE, "Median lateness of the rank when it arrived last"},
    [F_OFFS] = {"collscope_arrival_offset_seconds", GAUGE, "Median arrival offset of the rank against the others"},
    [F_HANGS] = {"collscope_hang_seconds", GAUGE, "Seconds since the oldest incomplete operation was enqueued (0: none)"},
    [F_HUNG] = {"collscope_hung", GAUGE, "1 when the rank reported an operation as hung"},
    [F_PEND] = {"collscope_pending_operations", GAUGE, "Operations entered and not complete"},
    [F_SDCC] = {"collscope_sdc_checks", COUNTER, "Operations whose output was fingerprinted for silent data corruption"},
    [F_SDCF] = {"collscope_sdc_findings", COUNTER, "Cross-rank SDC checks that named this rank as the suspect"},
    [F_LINKSLOW] = {"collscope_link_slow", GAUGE, "1 when the host pair's network bandwidth is well below the job's other pairs"},
    [F_LINKBW] = {"collscope_link_bandwidth_bytes_per_second", GAUGE, "Median network bandwidth of the host pair"},
    [F_RINGS] = {"collscope_exporter_rings", GAUGE, "Rings the exporter follows"},
    [F_SKIP] = {"collscope_exporter_rings_skipped", COUNTER, "Ring files that failed the reader's checks"},
    [F_DROPPED] = {"collscope_exporter_rings_dropped", COUNTER, "Rings dropped after their grace period"},
    [F_POLL] = {"collscope_exporter_poll_seconds", GAUGE, "Duration of the exporter's latest pass over the rings"},
    [F_SCRAPES] = {"collscope_exporter_scrapes", COUNTER, "Scrapes served"},
};

bool exp_wants_openmetrics(const char *accept) {
  return accept && strstr(accept, "application/openmetrics-text") != NULL;
}

static void header(struct obuf *o, int f, bool om) {
  const struct family *F = &fam[f];
  const char *t = F->kind == GAUGE ? "gauge" : F->kind == COUNTER ? "counter"
                                                                  : "histogram";
  const char *suf = F->kind == COUNTER && !om ? "_total" : "";
  putf(o, "# HELP %s%s %s\n# TYPE %s%s %s\n", F->name, suf, F->help, F->name, suf, t);
  if (om && strstr(F->name, "_seconds"))
    putf(o, "# UNIT %s seconds\n", F->name);
  else if (om && strstr(F->name, "_bytes") && !strstr(F->name, "per_second"))
    putf(o, "# UNIT %s bytes\n", F->name);
}

/* a label value: the ring's printable copy with \, " and newline escaped */
/* a label value: the ring's printable copy with \, " and newline escaped */
static void lv(struct obuf *o, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == '"') {
      putc_(o, '\\');
      putc_(o, *s);
    } else if (*s == '\n')
      puts_(o, "\\n");
    else
      putc_(o, *s);
  }
}

/* the rank's label set, built once per rank and again when its device becomes known */
static const char *rank_labels(struct exp_rank *r) {
  int dev = *(const volatile int32_t *)&r->rd.h->device;
  if (r->labels[0] && dev == r->labels_dev) return r->labels;
  struct obuf b = {0};
  puts_(&b, "job=\"");
  lv(&b, r->job);
  puts_(&b, "\",host=\"");
  lv(&b, r->host);
  putf(&b, "\",rank=\"%d\",local_rank=\"%d\",pid=\"%d\",gpu=\"%d\"", r->rank, r->local_rank, r->pid, dev);
  putc_(&b, 0);
  if (!b.oom) {
    snprintf(r->labels, sizeof r->labels, "%s", b.p);
    r->labels_dev = dev;
  }
  free(b.p);
  return r->labels;
}

static void num(struct obuf *o, double v) {
  if (v != v)
    puts_(o, "NaN");
  else if (v > 1e308)
    puts_(o, "+Inf");
  else if (v < -1e308)
    puts_(o, "-Inf");
  else if (v >= 0 && v < 1e15 && v == (double)(uint64_t)v)
    putu(o, (uint64_t)v);
  else
    putf(o, "%.9g", v);
}

static void name(struct obuf *o, int f) {
  puts_(o, fam[f].name);
  if (fam[f].kind == COUNTER) puts_(o, "_total");
}

static void rank_sample(struct obuf *o, int f, struct exp_rank *r, double v) {
  name(o, f);
  putc_(o, '{');
  puts_(o, rank_labels(r));
  puts_(o, "} ");
  num(o, v);
  putc_(o, '\n');
}

/* ,comm="...",op="...",size="..." (no comm for C > EXP_COMM_LABELS: the histogram's) */
static void op_suffix(struct obuf *o, const struct exp_rank *r, unsigned c, unsigned op, unsigned z) {
  static const char hex[] = "0123456789abcdef";
  if (c < r->ncomm_labels) {
    char b[16];
    for (int i = 0; i < 16; i++) b[i] = hex[(r->comm_ids[c] >> (60 - 4 * i)) & 15];
    puts_(o, ",comm=\"");
    putn(o, b, 16);
    puts_(o, "\"");
  } else if (c <= EXP_COMM_LABELS) {
    puts_(o, ",comm=\"other\"");
  }
  puts_(o, ",op=\"");
  puts_(o, cs_op_table[op].name);
  puts_(o, "\",size=\"");
  puts_(o, exp_size_class_name(z));
  putc_(o, '"');
}

typedef double (*opval)(const struct exp_opstat *);
static double v_count(const struct exp_opstat *x) { return (double)x->count; }
static double v_err(const struct exp_opstat *x) { return (double)x->errors; }
static double v_bytes(const struct exp_opstat *x) { return (double)x->bytes; }
static double v_bus(const struct exp_opstat *x) { return (double)(uint64_t)(x->bus_bytes + 0.5); }
static double v_busbw(const struct exp_opstat *x) { return x->busbw_Bps; }

static void op_family(struct obuf *o, const struct exp_state *s, int f, opval get, bool om) {
  header(o, f, om);
  for (size_t i = 0; i < s->n; i++) {
    struct exp_rank *r = s->v[i];
    const char *lab = rank_labels(r);
    for (unsigned c = 0; c <= EXP_COMM_LABELS; c++)
      for (unsigned op = 0; op < CS_OP_COUNT; op++)
        for (unsigned z = 0; z < EXP_SIZE_CLASSES; z++) {
          const struct exp_opstat *x = &r->ops[c][op][z];
          if (!x->count) continue;
          if (f == F_BUSBW && !x->timed) continue;
          name(o, f);
          putc_(o, '{');
          puts_(o, lab);
          op_suffix(o, r, c, op, z);
          puts_(o, "} ");
          num(o, get(x));
          putc_(o, '\n');
        }
  }
}

/* per (op, size class): the communicators' histograms added up (bounded series) */
static void histograms(struct obuf *o, const struct exp_state *s, bool om) {
  header(o, F_DUR, om);
  const char *n = fam[F_DUR].name;
  static char le[EXP_BUCKETS][40];
  if (!le[0][0])
    for (unsigned b = 0; b < EXP_BUCKETS; b++) snprintf(le[b], sizeof le[b], ",le=\"%g\"} ", exp_bucket_le[b]);
  for (size_t i = 0; i < s->n; i++) {
    struct exp_rank *r = s->v[i];
    const char *lab = rank_labels(r);
    for (unsigned op = 0; op < CS_OP_COUNT; op++)
      for (unsigned z = 0; z < EXP_SIZE_CLASSES; z++) {
        uint64_t bucket[EXP_BUCKETS] = {0}, timed = 0, count = 0;
        double sum = 0;
        for (unsigned c = 0; c <= EXP_COMM_LABELS; c++) {
          const struct exp_opstat *x = &r->ops[c][op][z];
          count += x->count;
          timed += x->timed;
          sum += x->dur_sum_s;
          for (unsigned b = 0; b < EXP_BUCKETS; b++) bucket[b] += x->bucket[b];
        }
        if (!count) continue;
        const unsigned nocomm = EXP_COMM_LABELS + 1;
        uint64_t cum = 0;
        for (unsigned b = 0; b <= EXP_BUCKETS; b++) {
          puts_(o, n);
          puts_(o, "_bucket{");
          puts_(o, lab);
          op_suffix(o, r, nocomm, op, z);
          if (b < EXP_BUCKETS) {
            cum += bucket[b];
            puts_(o, le[b]);
            putu(o, cum);
          } else {
            puts_(o, ",le=\"+Inf\"} ");
            putu(o, timed);
          }
          putc_(o, '\n');
        }
        puts_(o, n);
        puts_(o, "_sum{");
        puts_(o, lab);
        op_suffix(o, r, nocomm, op, z);
        puts_(o, "} ");
        num(o, sum);
        putc_(o, '\n');
        puts_(o, n);
        puts_(o, "_count{");
        puts_(o, lab);
        op_suffix(o, r, nocomm, op, z);
        puts_(o, "} ");
        putu(o, timed);
        putc_(o, '\n');
      }
  }
}

typedef double (*rankval)(const struct exp_rank *);
static double r_up(const struct exp_rank *r) { return !r->exited; }
static double r_rec(const struct exp_rank *r) { return (double)r->records; }
static double r_drop(const struct exp_rank *r) { return (double)r->drops; }
static double r_lost(const struct exp_rank *r) { return (double)r->rd.lost; }
static double r_inv(const struct exp_rank *r) { return (double)r->invalid; }
static double r_strag(const struct exp_rank *r) { return r->straggler; }
static double r_late(const struct exp_rank *r) { return r->lateness_s; }
static double r_offs(const struct exp_rank *r) { return r->offset_s; }
static double r_hangs(const struct exp_rank *r) { return r->hang_s; }
static double r_hung(const struct exp_rank *r) { return r->hung; }
static double r_pend(const struct exp_rank *r) { return (double)r->pending; }
static double r_sdcc(const struct exp_rank *r) { return (double)r->sdc_checks; }
static double r_sdcf(const struct exp_rank *r) { return (double)r->sdc_findings; }

static void rank_family(struct obuf *o, const struct exp_state *s, int f, rankval get, bool om) {
  header(o, f, om);
  for (size_t i = 0; i < s->n; i++) rank_sample(o, f, s->v[i], get(s->v[i]));
}

static void link_family(struct obuf *o, const struct exp_state *s, int f, bool om) {
  header(o, f, om);
  for (size_t i = 0; i < s->npairs; i++) {
    const struct exp_linkpair *p = &s->pairs[i];
    puts_(o, fam[f].name);
    puts_(o, "{job=\"");
    lv(o, p->job);
    puts_(o, "\",src_host=\"");
    lv(o, p->src);
    puts_(o, "\",dst_host=\"");
    lv(o, p->dst);
    puts_(o, "\"} ");
    num(o, f == F_LINKSLOW ? (double)p->slow : p->gbps_p50 * 1e9 / 8);
    putc_(o, '\n');
  }
}

static void plain(struct obuf *o, int f, double v, bool om) {
  header(o, f, om);
  name(o, f);
  putc_(o, ' ');
  num(o, v);
  putc_(o, '\n');
}

static void render(struct exp_state *s, struct obuf *o, bool om, int64_t now_ns) {
  exp_state_live(s, now_ns);
  s->scrapes++;
  rank_family(o, s, F_UP, r_up, om);
  op_family(o, s, F_COLL, v_count, om);
  op_family(o, s, F_ERR, v_err, om);
  op_family(o, s, F_BYTES, v_bytes, om);
  op_family(o, s, F_BUS, v_bus, om);
  histograms(o, s, om);
  op_family(o, s, F_BUSBW, v_busbw, om);
  rank_family(o, s, F_REC, r_rec, om);
  rank_family(o, s, F_DROP, r_drop, om);
  rank_family(o, s, F_LOST, r_lost, om);
  rank_family(o, s, F_INVALID, r_inv, om);
  rank_family(o, s, F_STRAG, r_strag, om);
  rank_family(o, s, F_LATE, r_late, om);
  rank_family(o, s, F_OFFS, r_offs, om);
  rank_family(o, s, F_HANGS, r_hangs, om);
  rank_family(o, s, F_HUNG, r_hung, om);
  rank_family(o, s, F_PEND, r_pend, om);
  rank_family(o, s, F_SDCC, r_sdcc, om);
  rank_family(o, s, F_SDCF, r_sdcf, om);
  link_family(o, s, F_LINKSLOW, om);
  link_family(o, s, F_LINKBW, om);
  plain(o, F_RINGS, (double)s->n, om);
  plain(o, F_SKIP, (double)s->skipped_total, om);
  plain(o, F_DROPPED, (double)s->dropped_total, om);
  plain(o, F_POLL, s->last_poll_s, om);
  plain(o, F_SCRAPES, (double)s->scrapes, om);
  if (om) puts_(o, "# EOF\n");
}

char *exp_render_buf(struct exp_state *s, bool om, size_t *len) {
  struct obuf o = {0};
  render(s, &o, om, exp_now_ns());
  putc_(&o, 0);
  if (o.oom) {
    free(o.p);
    return NULL;
  }
  *len = o.n - 1;
  return o.p;
}
