/* tests/online/online_model.c: the in-process N-rank model (online_model.h). */
#include "online_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* a kept rank's pack and unpack run with callgrind's instrumentation on and everything else
 * with it off (tests/online/online_scale_insn.py counts their instructions: deterministic,
 * unlike the CPU time below); outside valgrind the requests are a few no-op instructions */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define MODEL_COUNT_ON() CALLGRIND_START_INSTRUMENTATION
#define MODEL_COUNT_OFF() CALLGRIND_STOP_INSTRUMENTATION
#endif
#endif
#ifndef MODEL_COUNT_ON
#define MODEL_COUNT_ON() ((void)0)
#define MODEL_COUNT_OFF() ((void)0)
#endif

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static struct cs_online_rank *rank_state(int r, int n) {
  char host[CS_ONLINE_HOST];
  snprintf(host, sizeof host, "node%d", r / 2);
  return cs_online_rank_new(r, n, host, NULL);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

struct model *model_new(int n, const bool *keep, model_feed_fn feed, void *ctx) {
  struct model *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->n = n;
  m->feed = feed;
  m->ctx = ctx;
  m->st = calloc((size_t)n, sizeof *m->st);
  m->f = calloc((size_t)n, sizeof *m->f);
  if (!m->st || !m->f) {
    model_free(m);
    return NULL;
  }
  for (int r = 0; r < n; r++)
    if (!keep || keep[r]) {
      if (!(m->st[r] = rank_state(r, n))) {
        model_free(m);
        return NULL;
      }
    }
  return m;
}

void model_free(struct model *m) {
  if (!m) return;
  if (m->st)
    for (int r = 0; r < m->n; r++) cs_online_rank_free(m->st[r]);
  free(m->st);
  free(m->f);
  free(m);
}

int model_exchange(struct model *m, uint32_t exchange) {
  struct cs_online_wire *red = malloc((CS_ONLINE_DETAIL_ROUNDS + 1) * sizeof *red);
  struct cs_online_wire *w = malloc(sizeof *w);
  double *cpu = calloc((size_t)m->n, sizeof *cpu);
  if (!red || !w || !cpu) {
    free(red);
    free(w);
    free(cpu);
    return -1;
  }
  memset(m->f, 0, (size_t)m->n * sizeof *m->f);
  m->disagree = false;
  for (int r = 0; r < m->n; r++)
    if (m->st[r]) m->feed(m->ctx, r, exchange, false, m->st[r]);
  unsigned round = 0;
  int rc = 0;
  for (;; round++) {
    cs_online_wire_identity(&red[round]);
    /* the ranks not kept first, then the kept ones back to back: what a kept rank's pack and
     * unpack cost is its own work, not the cache misses the model's other ranks left behind
     * (the fold is a min/sum reduction: any order, as NCCL's ring reduces in its own) */
    for (int pass = 0; pass < 2; pass++)
      for (int r = 0; r < m->n; r++) {
        if ((m->st[r] != NULL) != (pass == 1)) continue;
        if (m->st[r]) {
          double t0 = now_us();
          MODEL_COUNT_ON();
          cs_online_pack(m->st[r], exchange, round, w);
          MODEL_COUNT_OFF();
          cpu[r] += now_us() - t0;
        } else {
          struct cs_online_rank *t = rank_state(r, m->n);
          if (!t) {
            rc = -1;
            goto out;
          }
          m->feed(m->ctx, r, exchange, round > 0, t);
          struct cs_online_findings f;
          for (unsigned k = 0; k < round; k++) {
            cs_online_pack(t, exchange, k, w);
            cs_online_unpack(t, exchange, k, &red[k], &f);
          }
          cs_online_pack(t, exchange, round, w);
          cs_online_rank_free(t);
        }
        cs_online_wire_fold(&red[round], w);
      }
    int more = -2;
    for (int r = 0; r < m->n; r++) {
      if (!m->st[r]) continue;
      double t0 = now_us();
      MODEL_COUNT_ON();
      int x = cs_online_unpack(m->st[r], exchange, round, &red[round], &m->f[r]);
      MODEL_COUNT_OFF();
      cpu[r] += now_us() - t0;
      if (x < 0) rc = -1;
      if (more != -2 && x != more) m->disagree = true;
      more = x;
    }
    if (more != 1 || round == CS_ONLINE_DETAIL_ROUNDS) break;
  }
  m->rounds = round + 1;
  m->bytes_per_rank = (size_t)m->rounds * CS_ONLINE_WIRE_BYTES;
  m->cpu_us_max = 0;
  size_t nk = 0;
  for (int r = 0; r < m->n; r++)
    if (m->st[r]) {
      if (cpu[r] > m->cpu_us_max) m->cpu_us_max = cpu[r];
      cpu[nk++] = cpu[r];
    }
  qsort(cpu, nk, sizeof *cpu, cmp_d);
  m->cpu_us_median = nk ? cpu[nk / 2] : 0;
out:
  free(red);
  free(w);
  free(cpu);
  return rc;
}

void model_sdc_verdict(const struct model *m, int r, char *buf, size_t len) {
  const struct cs_online_findings *f = &m->f[r];
  size_t o = (size_t)snprintf(buf, len, "%zu:", f->nsdc);
  for (size_t i = 0; i < f->nsdc && o < len; i++)
    o += (size_t)snprintf(buf + o, len - o, " %llx/%llu/%d/%d/%d", (unsigned long long)f->sdc[i].comm,
                          (unsigned long long)f->sdc[i].seq, f->sdc[i].check, f->sdc[i].suspect_comm_rank,
                          f->sdc[i].suspect_rank);
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}
double model_jit(int r, uint64_t seq, unsigned salt) { /* [0, 1) */
  return (double)(mix((uint64_t)r * 0x9e3779b97f4a7c15ULL ^ seq ^ ((uint64_t)salt << 56)) >> 11) / 9007199254740992.0;
}

void model_gen_feed(void *ctx, int rank, uint32_t exchange, bool sdc_only, struct cs_online_rank *st) {
  const struct model_gen *g = ctx;
  uint32_t x = exchange;
  if (rank == g->lag_rank) {
    if (x == 1) return;
    x--;
  }
  for (int i = 0; i < g->ops && !sdc_only; i++) {
    uint64_t seq = (uint64_t)(x - 1) * (uint64_t)g->ops + (uint64_t)i;
    bool slow = rank == g->slow;
    struct cs_online_op o = {g->comm, seq, (float)(1000 + 20 * model_jit(rank, seq, 1) - (slow ? g->late_us : 0)),
                             (float)(slow ? 50 + g->late_us : 50 + 5 * model_jit(rank, seq, 2)), (uint32_t)g->n,
                             (uint32_t)rank};
    cs_online_rank_feed_op(st, &o);
  }
  double n = g->n;
  for (int i = 0; i < g->sdc; i++) {
    uint64_t seq = MODEL_SDC_SEQ0 + (uint64_t)(x - 1) * (uint64_t)g->sdc + (uint64_t)i;
    int nflip = g->flip_count > 0 ? g->flip_count : 1;
    bool flip = g->flip_rank >= 0 && rank >= g->flip_rank && rank < g->flip_rank + nflip && seq == g->flip_seq;
    struct cs_online_sdc c;
    memset(&c, 0, sizeof c);
    c.comm = g->comm;
    c.seq = seq;
    c.fp = mix(seq) ^ (flip ? 1u << 30 : 0);
    c.in_sum = rank + 1;
    c.in_abs = rank + 1;
    c.out_sum = n * (n + 1) / 2 + (flip ? 1024 : 0) + (g->wrong_sum && seq == g->flip_seq ? 4096 : 0);
    c.count = 4096;
    c.root = -1;
    c.comm_size = (uint32_t)g->n;
    c.comm_rank = (uint32_t)rank;
    c.op = 0; /* CS_OP_AllReduce */
    c.checked = 3;
    c.dtype = 7; /* float32 */
    c.redop = 0;
    cs_online_rank_feed_sdc(st, &c);
  }
}
