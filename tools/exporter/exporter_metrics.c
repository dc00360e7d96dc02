/* tools/exporter/exporter_metrics.c: metric families (names, HELP, TYPE, labels) and their exposition
 * in the Prometheus text format or OpenMetrics (see exporter_metrics.h and docs/exporter.md).
 * Every label value comes from a ring and was made printable (ring_text_escape); it is
 * escaped once more for the exposition (backslash, quote, newline). */
#include "exporter_metrics.h"
#include "exporter_obuf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
  F_H_TIME,
  F_H_REASONS,
  F_H_THROTTLED,
  F_H_SMCLK,
  F_H_MEMCLK,
  F_H_POWER,
  F_H_PLIMIT,
  F_H_TEMP,
  F_H_ECC,
  F_H_REMAP,
  F_H_PCIE,
  F_H_NVLINKS,
  F_H_NVLDOWN,
  F_H_NVLERR,
  F_H_XID,
  F_H_XIDLAST,
  F_IB_ACTIVE,
  F_IB_RATE,
  F_IB_ERR,
  F_IB_EVENTS,
  F_IB_TX,
  F_IB_RX,
  F_RINGS,
  F_SKIP,
  F_DROPPED,
  F_POLL,
  F_SCRAPES,
  F_BAD,
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
    [F_REC] = {"collscope_records", COUNTER, "Records the rank published to its stats ring"},
    [F_DROP] = {"collscope_records_dropped", COUNTER, "Records the rank's process could not publish (its queue was full)"},
    [F_LOST] = {"collscope_records_lost", COUNTER, "Rare records (SDC checks, links, hangs) overwritten in the ring before the exporter read them"},
    [F_INVALID] = {"collscope_records_invalid", COUNTER, "Records of an unknown type and summaries that failed the exporter's checks (ignored)"},
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
    [F_H_TIME] = {"collscope_health_sample_timestamp_seconds", GAUGE, "Time of the rank's latest health sample (Unix seconds)"},
    [F_H_REASONS] = {"collscope_gpu_clock_event_reasons", GAUGE, "NVML clock event (throttle) reasons of the GPU, a bit mask"},
    [F_H_THROTTLED] = {"collscope_gpu_throttled", GAUGE, "1 while the GPU's clocks are held down for the reason (power, thermal, hw_slowdown)"},
    [F_H_SMCLK] = {"collscope_gpu_sm_clock_hertz", GAUGE, "SM clock of the GPU"},
    [F_H_MEMCLK] = {"collscope_gpu_memory_clock_hertz", GAUGE, "Memory clock of the GPU"},
    [F_H_POWER] = {"collscope_gpu_power_watts", GAUGE, "Power draw of the GPU"},
    [F_H_PLIMIT] = {"collscope_gpu_power_limit_watts", GAUGE, "Power management limit of the GPU"},
    [F_H_TEMP] = {"collscope_gpu_temperature_celsius", GAUGE, "GPU temperature"},
    [F_H_ECC] = {"collscope_gpu_ecc_errors", COUNTER, "Volatile ECC errors of the GPU seen by the sampler (type corrected or uncorrected)"},
    [F_H_REMAP] = {"collscope_gpu_row_remap", GAUGE, "1 when the GPU has a row remapping pending or failed (state pending or failure)"},
    [F_H_PCIE] = {"collscope_gpu_pcie_replays", COUNTER, "PCIe replays of the GPU seen by the sampler"},
    [F_H_NVLINKS] = {"collscope_gpu_nvlinks", GAUGE, "NVLinks of the GPU"},
    [F_H_NVLDOWN] = {"collscope_gpu_nvlinks_down", GAUGE, "NVLinks of the GPU that are not active"},
    [F_H_NVLERR] = {"collscope_gpu_nvlink_errors", COUNTER, "NVLink errors of the GPU's links seen by the sampler (type crc, replay or recovery)"},
    [F_H_XID] = {"collscope_gpu_xid_events", COUNTER, "XID critical error events of the GPU"},
    [F_H_XIDLAST] = {"collscope_gpu_last_xid", GAUGE, "The latest XID of the GPU (0: none)"},
    [F_IB_ACTIVE] = {"collscope_ib_port_active", GAUGE, "1 when the InfiniBand port is ACTIVE"},
    [F_IB_RATE] = {"collscope_ib_port_rate_bytes_per_second", GAUGE, "Link rate of the InfiniBand port"},
    [F_IB_ERR] = {"collscope_ib_port_errors", COUNTER, "Error counters of the InfiniBand port seen by the sampler (one per counter)"},
    [F_IB_EVENTS] = {"collscope_ib_port_events", COUNTER, "Congestion counters of the InfiniBand port seen by the sampler (one per counter)"},
    [F_IB_TX] = {"collscope_ib_port_transmit_bytes", COUNTER, "Bytes the InfiniBand port sent"},
    [F_IB_RX] = {"collscope_ib_port_receive_bytes", COUNTER, "Bytes the InfiniBand port received"},
    [F_RINGS] = {"collscope_exporter_rings", GAUGE, "Rings the exporter follows"},
    [F_SKIP] = {"collscope_exporter_rings_skipped", COUNTER, "Ring files that failed the reader's checks"},
    [F_DROPPED] = {"collscope_exporter_rings_dropped", COUNTER, "Rings dropped after their grace period"},
    [F_POLL] = {"collscope_exporter_poll_seconds", GAUGE, "Duration of the exporter's latest pass over the rings"},
    [F_SCRAPES] = {"collscope_exporter_scrapes", COUNTER, "Scrapes served"},
    [F_BAD] = {"collscope_exporter_bad_requests", COUNTER,
               "Requests and connections the HTTP endpoint turned away, by reason (the status answered, header_timeout, "
               "evicted or refused)"},
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
  if (om && strstr(F->name, "_seconds") && !strstr(F->name, "per_second"))
    putf(o, "# UNIT %s seconds\n", F->name);
  else if (om && strstr(F->name, "_celsius"))
    putf(o, "# UNIT %s celsius\n", F->name);
  else if (om && strstr(F->name, "_watts"))
    putf(o, "# UNIT %s watts\n", F->name);
  else if (om && strstr(F->name, "_hertz"))
    putf(o, "# UNIT %s hertz\n", F->name);
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

/* NVML's form of a PCI bus id, as dcgm-exporter's pci_bus_id label has it: an 8-digit
 * domain and upper-case hex (the CUDA driver writes a 4-digit domain) */
static void nvml_bus_id(char *out, size_t cap, const char *in) {
  const char *c = strchr(in, ':');
  size_t dom = c ? (size_t)(c - in) : 0;
  size_t k = 0;
  for (size_t i = dom; c && i < 8 && k + 1 < cap; i++) out[k++] = '0';
  for (; *in && k + 1 < cap; in++) out[k++] = (*in >= 'a' && *in <= 'f') ? (char)(*in - 32) : *in;
  out[k] = 0;
}

/* the rank's label set, built once per rank and again when its device or its GPU's
 * identity becomes known */
static const char *rank_labels(struct exp_rank *r) {
  int dev = __atomic_load_n(&r->rd.h->device, __ATOMIC_ACQUIRE); /* pairs with the writer's release store */
  bool ident = r->gpu_uuid[0] || r->pci_bus_id[0];
  if (!ident && dev >= 0) { /* the writer names the GPU before its device: one label set from the first */
    cs_ring_gpu_ident(&r->rd, r->gpu_uuid, sizeof r->gpu_uuid, r->pci_bus_id, sizeof r->pci_bus_id);
    ident = r->gpu_uuid[0] || r->pci_bus_id[0];
  }
  if (r->labels[0] && dev == r->labels_dev && ident == r->labels_ident) return r->labels;
  struct obuf b = {0};
  puts_(&b, "job=\"");
  lv(&b, r->job);
  puts_(&b, "\",host=\"");
  lv(&b, r->host);
  putf(&b, "\",rank=\"%d\",local_rank=\"%d\",pid=\"%d\",gpu=\"%d\"", r->rank, r->local_rank, r->pid, dev);
  if (ident) { /* dcgm-exporter's names, so that `on(UUID)` or `on(pci_bus_id)` joins as it is */
    char bus[48];
    nvml_bus_id(bus, sizeof bus, r->pci_bus_id);
    if (r->gpu_uuid[0]) { /* none without NVML: the bus id alone */
      puts_(&b, ",UUID=\"");
      lv(&b, r->gpu_uuid);
      putc_(&b, '"');
    }
    if (bus[0]) {
      puts_(&b, ",pci_bus_id=\"");
      lv(&b, bus);
      putc_(&b, '"');
    }
  }
  putc_(&b, 0);
  if (!b.oom) {
    snprintf(r->labels, sizeof r->labels, "%s", b.p);
    r->labels_dev = dev;
    r->labels_ident = ident;
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
    for (unsigned b = 0; b < EXP_BUCKETS; b++) snprintf(le[b], sizeof le[b], ",le=\"%g\"} ", exp_bucket_le(b));
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
static double r_lost(const struct exp_rank *r) { return (double)r->rd.side_lost; }
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

/* ---- health: one sample per rank (the ring's latest), series only for what was sampled ---- */
static void rank_sample_x(struct obuf *o, int f, struct exp_rank *r, const char *extra, double v) {
  name(o, f);
  putc_(o, '{');
  puts_(o, rank_labels(r));
  puts_(o, extra);
  puts_(o, "} ");
  num(o, v);
  putc_(o, '\n');
}

static double h_gauge(const struct cs_ring_health_vals *h, int f) {
  switch (f) {
  case F_H_TIME: return (double)h->t_ns / 1e9;
  case F_H_REASONS: return (double)h->reasons;
  case F_H_SMCLK: return (double)h->sm_mhz * 1e6;
  case F_H_MEMCLK: return (double)h->mem_mhz * 1e6;
  case F_H_POWER: return (double)h->power_mw / 1e3;
  case F_H_PLIMIT: return (double)h->power_limit_mw / 1e3;
  case F_H_TEMP: return (double)h->temp_c;
  case F_H_NVLINKS: return (double)h->nvlinks;
  case F_H_NVLDOWN: return (double)h->nvlink_down;
  case F_H_XIDLAST: return (double)h->xid_last;
  default: return 0;
  }
}

/* the CS_RH_* group a family needs */
static uint64_t h_need(int f) {
  switch (f) {
  case F_H_REASONS:
  case F_H_THROTTLED: return CS_RH_REASONS;
  case F_H_SMCLK:
  case F_H_MEMCLK: return CS_RH_CLOCKS;
  case F_H_POWER: return CS_RH_POWER;
  case F_H_PLIMIT: return CS_RH_PLIMIT;
  case F_H_TEMP: return CS_RH_TEMP;
  case F_H_ECC: return CS_RH_ECC;
  case F_H_REMAP: return CS_RH_REMAP;
  case F_H_PCIE: return CS_RH_PCIE;
  case F_H_NVLINKS:
  case F_H_NVLDOWN:
  case F_H_NVLERR: return CS_RH_NVLINK;
  case F_H_XID:
  case F_H_XIDLAST: return CS_RH_XID;
  default: return 0;
  }
}

static void health_family(struct obuf *o, const struct exp_state *s, int f, bool om) {
  header(o, f, om);
  for (size_t i = 0; i < s->n; i++) {
    struct exp_rank *r = s->v[i];
    const struct exp_health *h = &r->health;
    if (!h->have || (h_need(f) & h->raw.valid) != h_need(f)) continue;
    switch (f) {
    case F_H_THROTTLED: /* NVML's reason bits: power cap 0x4; thermal 0x20, 0x40; hw slowdown 0x8, 0x80 */
      rank_sample_x(o, f, r, ",reason=\"power\"", (h->raw.reasons & 0x4ULL) != 0);
      rank_sample_x(o, f, r, ",reason=\"thermal\"", (h->raw.reasons & 0x60ULL) != 0);
      rank_sample_x(o, f, r, ",reason=\"hw_slowdown\"", (h->raw.reasons & 0x88ULL) != 0);
      break;
    case F_H_ECC:
      rank_sample_x(o, f, r, ",type=\"corrected\"", (double)h->total[EXP_HC_ECC_CORR]);
      rank_sample_x(o, f, r, ",type=\"uncorrected\"", (double)h->total[EXP_HC_ECC_UNCORR]);
      break;
    case F_H_REMAP:
      rank_sample_x(o, f, r, ",state=\"pending\"", h->raw.remap_pending != 0);
      rank_sample_x(o, f, r, ",state=\"failure\"", h->raw.remap_failure != 0);
      break;
    case F_H_NVLERR:
      rank_sample_x(o, f, r, ",type=\"crc\"", (double)h->total[EXP_HC_NVL_CRC]);
      rank_sample_x(o, f, r, ",type=\"replay\"", (double)h->total[EXP_HC_NVL_REPLAY]);
      rank_sample_x(o, f, r, ",type=\"recovery\"", (double)h->total[EXP_HC_NVL_RECOVERY]);
      break;
    case F_H_PCIE: rank_sample_x(o, f, r, "", (double)h->total[EXP_HC_PCIE]); break;
    case F_H_XID: rank_sample_x(o, f, r, "", (double)h->total[EXP_HC_XID]); break;
    default: rank_sample_x(o, f, r, "", h_gauge(&h->raw, f));
    }
  }
}

/* IB ports: ib_device, ib_port (the names the sampler checked: [A-Za-z0-9_.-]) */
static void ib_family(struct obuf *o, const struct exp_state *s, int f, bool om) {
  header(o, f, om);
  for (size_t i = 0; i < s->n; i++) {
    struct exp_rank *r = s->v[i];
    const struct exp_health *h = &r->health;
    if (!h->have || !(h->raw.valid & CS_RH_IB)) continue;
    for (unsigned p = 0; p < h->raw.nib; p++) {
      if (!h->ib_dev[p][0]) continue;
      char port[80];
      snprintf(port, sizeof port, ",ib_device=\"%s\",ib_port=\"%u\"", h->ib_dev[p], h->ib_port[p]);
      const struct cs_ring_ib_port *ip = &h->raw.ib[p];
      if (f == F_IB_ACTIVE) rank_sample_x(o, f, r, port, ip->active != 0);
      if (f == F_IB_RATE) rank_sample_x(o, f, r, port, (double)ip->rate_mbps * 1e6 / 8);
      if (f == F_IB_TX) rank_sample_x(o, f, r, port, (double)h->ib_total[p][8] * 4); /* port_xmit_data: 4-byte words */
      if (f == F_IB_RX) rank_sample_x(o, f, r, port, (double)h->ib_total[p][9] * 4);
      if (f != F_IB_ERR && f != F_IB_EVENTS) continue;
      for (unsigned k = 0; k < CS_RING_IB_COUNTERS; k++) {
        if (k == 8 || k == 9 || cs_ring_ib_counter_is_error(k) != (f == F_IB_ERR)) continue;
        char lab[160];
        snprintf(lab, sizeof lab, "%s,counter=\"%s\"", port, cs_ring_ib_counter_name(k));
        rank_sample_x(o, f, r, lab, (double)h->ib_total[p][k]);
      }
    }
  }
}

static void plain(struct obuf *o, int f, double v, bool om) {
  header(o, f, om);
  name(o, f);
  putc_(o, ' ');
  num(o, v);
  putc_(o, '\n');
}

static void bad_requests(struct obuf *o, struct exp_state *s, bool om) {
  static const char *const why[EXP_BAD_N] = {
      [EXP_BAD_BAD_REQUEST] = "bad_request",
      [EXP_BAD_NOT_FOUND] = "not_found",
      [EXP_BAD_METHOD] = "method_not_allowed",
      [EXP_BAD_TOO_LARGE] = "payload_too_large",
      [EXP_BAD_URI_TOO_LONG] = "uri_too_long",
      [EXP_BAD_HEADER_LARGE] = "header_too_large",
      [EXP_BAD_VERSION] = "http_version_not_supported",
      [EXP_BAD_SERVER_ERROR] = "server_error",
      [EXP_BAD_REJECTED] = "rejected",
      [EXP_BAD_HEADER_TIMEOUT] = "header_timeout",
      [EXP_BAD_EVICTED] = "evicted",
      [EXP_BAD_REFUSED] = "refused",
  };
  header(o, F_BAD, om);
  for (int i = 0; i < EXP_BAD_N; i++) {
    name(o, F_BAD);
    putf(o, "{reason=\"%s\"} ", why[i]);
    num(o, (double)__atomic_load_n(&s->bad_requests[i], __ATOMIC_RELAXED));
    putc_(o, '\n');
  }
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
  for (int f = F_H_TIME; f <= F_H_XIDLAST; f++) health_family(o, s, f, om);
  for (int f = F_IB_ACTIVE; f <= F_IB_RX; f++) ib_family(o, s, f, om);
  plain(o, F_RINGS, (double)s->n, om);
  plain(o, F_SKIP, (double)s->skipped_total, om);
  plain(o, F_DROPPED, (double)s->dropped_total, om);
  plain(o, F_POLL, s->last_poll_s, om);
  plain(o, F_SCRAPES, (double)s->scrapes, om);
  bad_requests(o, s, om);
  if (om) puts_(o, "# EOF\n");
}

char *exp_render_buf(struct exp_state *s, bool om, size_t *len) {
  struct obuf o = {0};
  reserve(&o, s->last_render_len + s->last_render_len / 8 + 1); /* no doubling copies in steady state */
  render(s, &o, om, exp_now_ns());
  s->last_render_len = o.n;
  putc_(&o, 0);
  if (o.oom) {
    free(o.p);
    return NULL;
  }
  *len = o.n - 1;
  return o.p;
}
