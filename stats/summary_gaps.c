/* stats/summary_gaps.c: COLLSCOPE_RECORD=summary's compute gaps per (communicator, rank)
 * (stats/summary_gaps.h, docs/always-on.md): the process's compute gap before each op
 * (include/collscope/compute_gap.h, over every op record in the dump's order, as the report
 * computes it from op lines: tools/report/report_agg_record.c agg_on_op) and, per
 * (communicator, rank), what tools/report/report_balance.c member_add() keeps of its ops with
 * a seq, written as "gaps" lines the report reads in place of the op lines. */
#include "summary_gaps.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/compute_gap.h"
#include "collscope/dump_schema.h"
#include "collscope/hash.h"
#include "dump_writer.h"

struct gap_member {
  bool used, reduce, p2p;
  uint64_t comm;
  int comm_size, comm_rank, op;
  uint64_t bytes; /* the first op's */
  uint64_t n, untimed, periodic, ops_hash;
  int64_t cum_ns;
  uint64_t sig[CS_GAPS_HELD];
  int64_t head_gap[CS_GAPS_HELD], head_end[CS_GAPS_HELD], ring_gap[CS_GAPS_HELD], ring_end[CS_GAPS_HELD];
  int64_t ring_seq[CS_GAPS_HELD]; /* the last ops' seqs: their instances (members lose records apart) */
  bool ring_nogap[CS_GAPS_HELD];  /* the last ops counted in `untimed`: no compute gap of their own */
  /* Send/Recv: what analysis/schedule.c member_add() gathers of its instances */
  bool first_send, peer_over, got[2];
  int npeers, peer[2];
  uint64_t sends, recvs, before[2];
  int64_t long_gap[CS_GAPS_LONG];
};

static struct gap_member *members;
static struct cs_gap_tracker *tracker;
static char *line;
#define LINE_CAP CS_DUMP_RAW_MAX
static uint64_t lost;     /* ops of pairs past CS_GAPS_MEMBERS */
static uint64_t too_long; /* lines past the writer's cap (none at CS_GAPS_HELD: ~5 KB at most) */
static int64_t last_write_ns = -1, newest_ns;

bool cs_gaps_init(void) {
  cs_gaps_free();
  members = calloc(CS_GAPS_MEMBERS, sizeof *members);
  tracker = calloc(1, sizeof *tracker);
  line = malloc(LINE_CAP);
  if (!members || !tracker || !line) {
    cs_gaps_free();
    return false;
  }
  cs_gaps_reset();
  return true;
}

void cs_gaps_free(void) {
  if (lost)
    cs_log(CS_LOG_WARN, "summary: %llu ops of more than %d (communicator, rank) pairs have no compute-gap figures "
                        "(the balance section leaves them out)",
           (unsigned long long)lost, CS_GAPS_MEMBERS);
  if (too_long)
    cs_log(CS_LOG_WARN, "summary: %llu gaps lines over %d bytes were not written", (unsigned long long)too_long,
           LINE_CAP);
  free(members);
  free(tracker);
  free(line);
  members = NULL;
  tracker = NULL;
  line = NULL;
  lost = too_long = 0;
}

uint64_t cs_gaps_lost(void) { return lost; }

size_t cs_gaps_mem(void) {
  return members ? CS_GAPS_MEMBERS * sizeof *members + sizeof *tracker + LINE_CAP : 0;
}

void cs_gaps_reset(void) {
  if (!members) return;
  memset(members, 0, CS_GAPS_MEMBERS * sizeof *members);
  cs_gap_reset(tracker);
  lost = too_long = 0;
  last_write_ns = -1;
  newest_ns = 0;
}

static struct gap_member *member_of(const struct cs_record *r) {
  uint64_t h = cs_hash_mix(r->comm_id ^ cs_hash_mix((uint64_t)(uint32_t)r->comm_rank));
  for (size_t i = 0; i < CS_GAPS_MEMBERS; i++) {
    struct gap_member *m = &members[(h + i) % CS_GAPS_MEMBERS];
    if (m->used && m->comm == r->comm_id && m->comm_rank == r->comm_rank) return m;
    if (!m->used) {
      m->used = m->reduce = m->p2p = true;
      m->comm = r->comm_id;
      m->comm_size = r->comm_size;
      m->comm_rank = r->comm_rank;
      m->op = r->op;
      m->bytes = r->bytes;
      m->periodic = ~0ull;
      return m;
    }
  }
  return NULL;
}

/* what makes two ops "the same op of the next step" (tools/report/report_balance.c op_sig):
 * kind, size and (Send/Recv) peer or root */
static uint64_t op_sig(const struct cs_record *r, bool p2p) {
  return cs_op_sig((uint64_t)r->op, r->bytes, (int64_t)(p2p ? r->peer : r->root));
}

/* a Send or Recv as the pipeline schedule counts it (analysis/schedule.c member_add): the
 * distinct peers (a third: not a chain), per peer the Sends before its first Recv */
static void sched_add(struct gap_member *m, const struct cs_record *r, bool first) {
  bool send = r->op == CS_OP_Send;
  if (first) m->first_send = send;
  int i = -1;
  if (r->peer >= 0) {
    for (int k = 0; k < m->npeers; k++)
      if (m->peer[k] == r->peer) i = k;
    if (i < 0 && m->npeers == 2)
      m->peer_over = true;
    else if (i < 0)
      i = m->npeers++, m->peer[i] = r->peer;
  }
  if (send) {
    m->sends++;
    if (i >= 0 && !m->got[i]) m->before[i]++;
  } else {
    m->recvs++;
    if (i >= 0) m->got[i] = true;
  }
}

void cs_gaps_add(const struct cs_record *r) {
  if (!members || r->type != CS_REC_OP) return;
  /* as the report reads the op line (tools/report/report_agg.h report_op_det_state): timed
   * (CUDA events, NCCL's profiler stamps, a host span: tools/dump/dump_strings.c
   * dump_timing_from_name) and no error, or not */
  bool failed = r->status != 0 || r->timing == CS_TIMING_ERROR;
  bool done = !failed && (r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_PROFILER ||
                          r->timing == CS_TIMING_HOST_SPAN);
  double gap = -1;
  if (done)
    gap = cs_gap_timed(tracker, r->comm_id, r->stream, r->start_ns, r->end_ns);
  else if (!failed)
    cs_gap_untimed(tracker, r->stream);
  if (r->enqueue_ns > newest_ns) newest_ns = r->enqueue_ns;
  if (r->seq == UINT64_MAX || r->comm_rank < 0 || r->op >= CS_OP_COUNT) return; /* no instance */
  struct gap_member *m = member_of(r);
  if (!m) {
    lost++;
    return;
  }
  bool p2p = cs_op_table[r->op].cls == CS_CLASS_P2P;
  uint64_t s = op_sig(r, p2p), n = m->n;
  /* only the periods still possible (bit q-1 set) are compared: after a few steps that is the
   * step's period and its multiples, not all CS_GAPS_HELD */
  for (uint64_t left = m->periodic; left; left &= left - 1) {
    uint64_t q = (uint64_t)__builtin_ctzll(left) + 1;
    if (q > n) break;
    if (m->sig[(n - q) % CS_GAPS_HELD] != s) m->periodic &= ~(1ull << (q - 1));
  }
  m->sig[n % CS_GAPS_HELD] = s;
  m->reduce &= r->op == CS_OP_AllReduce || r->op == CS_OP_ReduceScatter;
  m->p2p &= p2p;
  m->ops_hash = cs_hash_mix(m->ops_hash ^ cs_hash_mix(((uint64_t)r->op << 56) ^ r->bytes));
  bool timed = done && r->end_ns > 0;
  if (timed && gap >= 0)
    m->cum_ns += (int64_t)(gap * 1e3 + 0.5); /* the ns the report's gap_us holds */
  else
    m->untimed++;
  int64_t end = timed ? r->end_ns : -1;
  if (n < CS_GAPS_HELD) m->head_gap[n] = m->cum_ns, m->head_end[n] = end;
  m->ring_gap[n % CS_GAPS_HELD] = m->cum_ns;
  m->ring_end[n % CS_GAPS_HELD] = end;
  m->ring_seq[n % CS_GAPS_HELD] = r->seq > (uint64_t)INT64_MAX ? -1 : (int64_t)r->seq;
  m->ring_nogap[n % CS_GAPS_HELD] = !(timed && gap >= 0);
  m->long_gap[n % CS_GAPS_LONG] = m->cum_ns;
  if (p2p) sched_add(m, r, n == 0);
  m->n = n + 1;
}

/* appends to the line at len; past LINE_CAP nothing more is written and len stays past it */
__attribute__((format(printf, 2, 3))) static size_t putf(size_t len, const char *fmt, ...) {
  if (len >= LINE_CAP) return len;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line + len, LINE_CAP - len, fmt, ap);
  va_end(ap);
  return n < 0 ? LINE_CAP : len + (size_t)n;
}

/* "v,v,..." of k values of a, from index `from` on (mod CS_GAPS_HELD) */
static size_t put_list(size_t len, const char *key, const int64_t *a, uint64_t from, uint64_t k) {
  len = putf(len, ",\"%s\":\"", key);
  for (uint64_t i = 0; i < k; i++) len = putf(len, "%s%lld", i ? "," : "", (long long)a[(from + i) % CS_GAPS_HELD]);
  return putf(len, "\"");
}

static void write_member(const struct gap_member *m) {
  const __typeof__(cs_dump_gaps_keys) *K = &cs_dump_gaps_keys;
  uint64_t k = m->n < CS_GAPS_HELD ? m->n : CS_GAPS_HELD;
  size_t len = putf(
      0,
      "{\"type\":\"gaps\",\"%s\":\"%016llx\",\"%s\":%d,\"%s\":%d,\"%s\":%d,\"%s\":\"%s\",\"%s\":%llu,\"%s\":%llu,"
      "\"%s\":%llu,\"%s\":%s,\"%s\":%s,\"%s\":\"0x%llx\",\"%s\":\"0x%llx\",\"%s\":%lld.%03lld",
      K->comm, (unsigned long long)m->comm, K->comm_size, m->comm_size, K->comm_rank, m->comm_rank, K->rank,
      cs_cfg.rank, K->op_name, cs_op_table[m->op].name, K->bytes, (unsigned long long)m->bytes, K->ops,
      (unsigned long long)m->n, K->untimed, (unsigned long long)m->untimed, K->reduce, m->reduce ? "true" : "false",
      K->p2p, m->p2p ? "true" : "false", K->ops_hash, (unsigned long long)m->ops_hash, K->periodic,
      (unsigned long long)m->periodic, K->gap_us, (long long)(m->cum_ns / 1000), (long long)(m->cum_ns % 1000));
  len = put_list(len, K->head_gap, m->head_gap, 0, k);
  len = put_list(len, K->head_end, m->head_end, 0, k);
  len = put_list(len, K->ring_gap, m->ring_gap, m->n - k, k);
  len = put_list(len, K->ring_end, m->ring_end, m->n - k, k);
  len = put_list(len, K->ring_seq, m->ring_seq, m->n - k, k);
  uint64_t nogap = 0; /* bit i: the list's i-th op has no gap (a timed op after a break has none) */
  for (uint64_t i = 0; i < k; i++) nogap |= (uint64_t)m->ring_nogap[(m->n - k + i) % CS_GAPS_HELD] << i;
  len = putf(len, ",\"%s\":\"0x%llx\"", K->ring_nogap, (unsigned long long)nogap);
  if (m->p2p) {
    len = putf(len, ",\"%s\":%llu,\"%s\":%llu,\"%s\":%s,\"%s\":%s,\"%s\":\"", K->sends,
               (unsigned long long)m->sends, K->recvs, (unsigned long long)m->recvs, K->first_send,
               m->first_send ? "true" : "false", K->peer_over, m->peer_over ? "true" : "false", K->peers);
    for (int i = 0; i < m->npeers; i++) len = putf(len, "%s%d", i ? "," : "", m->peer[i]);
    len = putf(len, "\",\"%s\":\"", K->sent_before);
    for (int i = 0; i < m->npeers; i++) len = putf(len, "%s%llu", i ? "," : "", (unsigned long long)m->before[i]);
    len = putf(len, "\",\"%s\":\"", K->got);
    for (int i = 0; i < m->npeers; i++) len = putf(len, "%s%d", i ? "," : "", m->got[i] ? 1 : 0);
    /* the last ops' running compute: the first value whole, then what each op added */
    uint64_t kl = m->n < CS_GAPS_LONG ? m->n : CS_GAPS_LONG;
    len = putf(len, "\",\"%s\":\"", K->long_gap);
    for (uint64_t i = 0, at = m->n - kl; i < kl; i++, at++)
      len = putf(len, "%s%lld", i ? "," : "",
                 (long long)(m->long_gap[at % CS_GAPS_LONG] - (i ? m->long_gap[(at - 1) % CS_GAPS_LONG] : 0)));
    len = putf(len, "\"");
  }
  len = putf(len, ",\"%s\":%lld}", K->t_ns, (long long)newest_ns);
  if (len < LINE_CAP)
    cs_dump_raw_line(line, len, -1);
  else
    too_long++; /* lost whole, never cut; counted */
}

void cs_gaps_write(bool force) {
  if (!members) return;
  if (!force && last_write_ns >= 0 && newest_ns - last_write_ns < (int64_t)CS_GAPS_EVERY_S * 1000000000LL) return;
  if (!force && last_write_ns < 0) { /* the first interval: the clock starts */
    last_write_ns = newest_ns;
    return;
  }
  last_write_ns = newest_ns;
  for (size_t i = 0; i < CS_GAPS_MEMBERS; i++)
    if (members[i].used && members[i].n) write_member(&members[i]);
}
