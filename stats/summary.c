/* stats/summary.c: COLLSCOPE_RECORD=summary's per-interval op summaries (stats/summary.h,
 * docs/always-on.md): a fixed open-addressed table of (communicator, op, dtype, size bucket)
 * keys, each with its counts, byte range, distinct sizes and a dense histogram of GPU
 * durations in the layout of include/collscope/histogram.h (buckets 1 % wide: percentiles
 * within 0.5 %), written sparse as "index:n,...". */
#include "summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/histogram.h"
#include "flight.h"
#include "flight_local.h"
#include "summary_gaps.h"

struct sum_key {
  bool used;
  uint64_t comm;
  int comm_size, comm_rank, op, dtype, bucket;
  uint64_t count, timed, errors, grouped, bytes, bytes_min, bytes_max;
  int64_t dsum, dmin, dmax;
  uint64_t size_v[CS_SUMMARY_SIZES], size_n[CS_SUMMARY_SIZES];
  unsigned nsizes;
  bool sizes_over;
  int hlo, hhi;     /* the non-empty histogram buckets lie in [hlo, hhi] */
  uint32_t *counts; /* CS_HIST_NBUCKETS */
};

static struct sum_key *keys;
static uint32_t *counts; /* CS_SUMMARY_KEYS x CS_HIST_NBUCKETS */
static char *text;       /* one line's hist or sizes text */
#define TEXT_CAP ((size_t)CS_HIST_NBUCKETS * 24)
static int64_t interval_ns, cur_iv = -1;
static unsigned nused;

bool cs_summary_init(unsigned interval_s) {
  cs_summary_free();
  keys = calloc(CS_SUMMARY_KEYS, sizeof *keys);
  counts = calloc((size_t)CS_SUMMARY_KEYS * CS_HIST_NBUCKETS, sizeof *counts);
  text = malloc(TEXT_CAP);
  if (!keys || !counts || !text || !cs_gaps_init()) {
    cs_summary_free();
    return false;
  }
  for (size_t i = 0; i < CS_SUMMARY_KEYS; i++) keys[i].counts = counts + i * CS_HIST_NBUCKETS;
  interval_ns = (int64_t)(interval_s ? interval_s : 60) * 1000000000LL;
  cur_iv = -1;
  nused = 0;
  return true;
}

bool cs_summary_on(void) { return keys != NULL; }

size_t cs_summary_mem(void) {
  return keys ? CS_SUMMARY_KEYS * (sizeof *keys + CS_HIST_NBUCKETS * sizeof *counts) + TEXT_CAP + cs_gaps_mem() : 0;
}

void cs_summary_free(void) {
  free(keys);
  free(counts);
  free(text);
  cs_gaps_free();
  keys = NULL;
  counts = NULL;
  text = NULL;
}

static int bucket_of(uint64_t b) { return b ? 63 - __builtin_clzll(b) : -1; }

static struct sum_key *find(const struct cs_record *r, int bucket) {
  int op = r->type == CS_REC_XFER ? CS_SUMMARY_XFER : r->op;
  uint64_t comm = r->type == CS_REC_XFER ? 0 : r->comm_id;
  uint64_t h = comm * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)op << 40) ^ ((uint64_t)(uint8_t)r->dtype << 48) ^
               (uint64_t)(bucket + 1);
  h ^= h >> 29;
  for (size_t i = 0; i < CS_SUMMARY_KEYS; i++) {
    struct sum_key *k = &keys[(h + i) % CS_SUMMARY_KEYS];
    if (!k->used) {
      if (nused >= CS_SUMMARY_KEYS * 3 / 4) return NULL; /* full enough: keep probes short */
      memset(k, 0, offsetof(struct sum_key, counts));
      k->used = true;
      k->comm = comm;
      k->comm_size = r->type == CS_REC_XFER ? 0 : r->comm_size;
      k->comm_rank = r->type == CS_REC_XFER ? -1 : r->comm_rank;
      k->op = op;
      k->dtype = r->dtype;
      k->bucket = bucket;
      k->bytes_min = UINT64_MAX;
      k->hlo = CS_HIST_NBUCKETS;
      k->hhi = -1;
      nused++;
      return k;
    }
    if (k->comm == comm && k->op == op && k->dtype == r->dtype && k->bucket == bucket) return k;
  }
  return NULL;
}

static void add_size(struct sum_key *k, uint64_t v) {
  if (k->sizes_over) return;
  for (unsigned i = 0; i < k->nsizes; i++)
    if (k->size_v[i] == v) {
      k->size_n[i]++;
      return;
    }
  if (k->nsizes == CS_SUMMARY_SIZES) {
    k->sizes_over = true;
    return;
  }
  k->size_v[k->nsizes] = v;
  k->size_n[k->nsizes++] = 1;
}

bool cs_summary_add(const struct cs_record *r) {
  if (!keys) return false;
  cs_gaps_add(r); /* the balance section's compute gaps (stats/summary_gaps.c) */
  int64_t iv = r->enqueue_ns / interval_ns;
  if (cur_iv < 0) cur_iv = iv;
  if (iv > cur_iv) { /* a later interval: the open one is complete (a late record joins the open one) */
    cs_summary_flush();
    cur_iv = iv;
  }
  struct sum_key *k = find(r, bucket_of(r->bytes));
  if (!k) { /* a full table: its lines now, the interval goes on in fresh lines (readers add them up) */
    cs_summary_flush();
    k = find(r, bucket_of(r->bytes));
  }
  if (!k) return false;
  /* as the report reads an op line (tools/report/report_agg.h): an error has a non-zero status
   * or no timing; a group member sharing its group's span is counted, never timed */
  bool timed = r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_HOST_SPAN || r->timing == CS_TIMING_PROFILER;
  bool grouped = r->group != 0 && r->group_ops > 1;
  k->count++;
  k->errors += r->status != 0 || r->timing == CS_TIMING_ERROR;
  k->grouped += grouped;
  k->bytes += r->bytes;
  if (r->bytes < k->bytes_min) k->bytes_min = r->bytes;
  if (r->bytes > k->bytes_max) k->bytes_max = r->bytes;
  add_size(k, r->bytes);
  if (timed && !grouped) {
    int64_t d = r->end_ns - r->start_ns;
    if (!k->timed || d < k->dmin) k->dmin = d;
    if (!k->timed || d > k->dmax) k->dmax = d;
    k->timed++;
    k->dsum += d;
    /* the dump writes dur_us with 3 decimals: the same value's bucket */
    int b = d > 0 ? cs_hist_bucket((double)d / 1e3) : 0;
    k->counts[b]++;
    if (b < k->hlo) k->hlo = b;
    if (b > k->hhi) k->hhi = b;
    if (r->type == CS_REC_OP) cs_local_add(r, d); /* stats/flight_local.c */
  }
  return true;
}

static const char *hist_text(struct sum_key *k) {
  size_t n = 0;
  text[0] = 0;
  for (int b = k->hlo; b <= k->hhi; b++) {
    if (!k->counts[b]) continue;
    n += (size_t)snprintf(text + n, TEXT_CAP - n, "%s%d:%u", n ? "," : "", b, k->counts[b]);
    k->counts[b] = 0;
  }
  return text;
}

static const char *sizes_text(const struct sum_key *k) {
  size_t n = 0;
  text[0] = 0;
  if (k->sizes_over) return text;
  for (unsigned i = 0; i < k->nsizes; i++)
    n += (size_t)snprintf(text + n, TEXT_CAP - n, "%s%llu:%llu", n ? "," : "", (unsigned long long)k->size_v[i],
                          (unsigned long long)k->size_n[i]);
  return text;
}

void cs_summary_reset(void) {
  if (!keys) return;
  for (size_t i = 0; i < CS_SUMMARY_KEYS; i++) {
    struct sum_key *k = &keys[i];
    for (int b = k->hlo; k->used && b <= k->hhi; b++) k->counts[b] = 0;
    k->used = false;
  }
  nused = 0;
  cur_iv = -1;
  cs_gaps_reset();
}

void cs_summary_close(void) {
  cs_flight_closing(); /* a window asked in the last second comes before the last counts */
  cs_summary_flush();
  cs_gaps_write(true);
}

void cs_summary_flush(void) {
  if (!keys || cur_iv < 0) return;
  cs_gaps_write(false);
  for (size_t i = 0; i < CS_SUMMARY_KEYS; i++) {
    struct sum_key *k = &keys[i];
    if (!k->used) continue;
    char sizes[CS_SUMMARY_SIZES * 44 + 1];
    snprintf(sizes, sizeof sizes, "%s", sizes_text(k));
    struct cs_summary_line l = {
        .comm = k->comm,
        .comm_size = k->comm_size,
        .comm_rank = k->comm_rank,
        .op = k->op,
        .dtype = k->dtype,
        .bucket = k->bucket,
        .t0_ns = cur_iv * interval_ns,
        .t1_ns = (cur_iv + 1) * interval_ns,
        .count = k->count,
        .timed = k->timed,
        .errors = k->errors,
        .grouped = k->grouped,
        .bytes = k->bytes,
        .bytes_min = k->bytes_min,
        .bytes_max = k->bytes_max,
        .dur_sum_ns = k->dsum,
        .dur_min_ns = k->dmin,
        .dur_max_ns = k->dmax,
        .sizes = sizes,
        .hist = hist_text(k),
    };
    cs_dump_summary_line(&l);
    k->used = false;
  }
  nused = 0;
}
