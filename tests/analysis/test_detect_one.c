/* tests/analysis/test_detect_one.c: one detector. The same seeded collective instances (8 ranks
 * unless a scenario says, one communicator) go to every caller of the straggler rules: the report's batch detector
 * (cs_detect over op records, its gaps from the op spans), the streaming detector that
 * `collscope top` and the exporter use (cs_det_stream over members, the gaps given), and
 * the online exchange's self-judgement (its ranks in process folding their wires, each judging
 * itself from the reduced aggregates). Scenarios: clean, a rank 5% slow, one 20% slow, a rank
 * whose data loader stalls every other step, a rank behind a slow link (late, no compute gap
 * excess), an intermittent one, a rank 2% slow (just above the floor), a rank that stalls by a
 * lot in one instance of ten (the cost rule's), a rank last at each fresh draw (the instance
 * after two ranks tie) and last by chance elsewhere (the share-last rule over fresh draws),
 * and two data-load scenarios: every rank moves its own Send/Recv bytes before each collective
 * and arrives later by 10 us per 64 KiB of them, one rank the most (nobody flagged: the report's
 * Theil-Sen fit and the online exchange's least-squares line of the peers both explain it), and
 * the same rank 20% slow as well (flagged by every caller); and at 4 ranks, a rank 100 us late
 * in 65% of the instances with another later still each time (nobody flagged: too few members
 * to measure the noise, the pair's sign bar holds it, online too); and at 16 ranks with noise, a
 * clean rank steadily late over the last 16 instances by less than their noise (nobody flagged:
 * the recent rule's noise term, online from the peers' spread). Every rule is on for every
 * caller.
 * Every caller must give the same verdicts (flagged rank, kind) and, outside the data-load
 * scenarios (where the two fits differ by design: docs/online.md), the same figures, exactly:
 * batch and stream every field of the straggler entry; the online report (figures as of its
 * first flag) the batch detector's entry over the instances up to that first flag (share last,
 * lateness, median duration, window instances).
 *
 * The instances are built so that the online exchange's aggregates are exact: whole
 * microseconds (the wire's float durations), and in every instance all ranks but the last
 * and the first share one duration and all ranks but the late one one compute gap (so the
 * trimmed mean of the durations and the mean of the peers' gaps are the medians). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collscope/detect.h"
#include "collscope/online.h"

#define NMAX 24                /* the most members a scenario has */
#define NDEFAULT 8             /* ... and those it has unless it says */
static int members = NDEFAULT; /* the scenario's communicator size */
#define N members
#define T 160       /* instances (the cost rule needs a full window of 100) */
#define PER_EXCH 16 /* instances each exchange completes */
#define D_US 2000   /* the common duration */
#define G_US 100    /* the common compute gap */
#define COMM 0x51ull

struct scenario {
  const char *name;
  uint64_t seed;
  int target;        /* the slow rank, -1 none */
  int late_us;       /* its lateness when late (jittered by up to a tenth) */
  double prob;       /* the share of instances it is late in */
  double gap_excess; /* its compute gap's excess, as a share of the lateness */
  double spike;      /* the share of those instances another rank is later still: the target is
                        late but not last there (the offset rules' case) */
  int want_kind;     /* the verdict every caller must reach (-1: nobody flagged) */
  int want_rule;     /* the report's rule for it */
  int tie_every;     /* > 0: every tie_every-th instance two other ranks tie for the last, and
                        the target is last in the next (a fresh draw) */
  bool data;         /* every rank moves Send/Recv bytes before each collective, later by them */
  int members;       /* the communicator's ranks, 0: NDEFAULT */
  int noise_us;      /* > 0: every rank's duration jittered by that sigma, the target steadily late_us
                        after the median in 14 of the last 16 instances (make_noisy) */
};

static const struct scenario scenarios[] = {
    {"clean", 11, -1, 0, 0, 0, 0, -1, 0, 0, false},
    {"slow5", 12, 5, 100, 1.0, 1.0, 0.5, CS_DET_COMPUTE, CS_DET_RULE_LAST, 0, false},
    {"slow20", 13, 2, 400, 1.0, 1.0, 0.0, CS_DET_COMPUTE, CS_DET_RULE_LAST, 0, false},
    {"dataloader", 14, 6, 600, 0.5, 1.0, 0.0, CS_DET_COMPUTE, CS_DET_RULE_LAST, 0, false},
    {"link", 15, 1, 200, 1.0, 0.0, 0.3, CS_DET_LINK, CS_DET_RULE_LAST, 0, false},
    {"intermittent", 16, 4, 1000, 0.4, 1.0, 0.0, CS_DET_COMPUTE, CS_DET_RULE_LAST, 0, false},
    /* near the floor (1.5% of the duration: 30 us): the offset's scale decides the flag */
    {"slow2", 17, 3, 40, 1.0, 1.0, 0.6, CS_DET_COMPUTE, CS_DET_RULE_LAST, 0, false},
    {"stall", 18, 7, 1500, 0.15, 1.0, 0.0, CS_DET_COMPUTE, CS_DET_RULE_COST, 0, false},
    {"fresh", 19, 5, 100, 0.0, 1.0, 0.0, CS_DET_COMPUTE, CS_DET_RULE_LAST, 5, false},
    {"data", 20, -1, 0, 0, 0, 0, -1, 0, 0, true},
    {"data_slow20", 21, 6, 400, 1.0, 1.0, 0.0, CS_DET_COMPUTE, CS_DET_RULE_LAST, 0, true},
    {"pair4", 22, 1, 100, 0.65, 1.0, 1.0, -1, 0, 0, false, 4},
    /* 16 members whose durations have a sigma of 30 us, a clean one steadily ~38 us after the
     * others' median over the last 40 instances: within the recent rule's noise term over 16
     * (5 x 1.2533 x 30 / 4 = 47 us), above the window's (19 us) and the duration's 1.5 % (30 us):
     * the report flags it without that term, the online exchange without measuring the noise */
    {"noisy_recent", 23, 3, 38, 0, 0, 0, -1, 0, 0, false, 16, 30},
    /* 16 members, every other instance a tie (all alike) and a fresh draw after it (sigma 60 us):
     * clean, nobody; a GPU slower at its work, 60 us after the others' median at every draw
     * and last in few of them (the others' tails): the offset rule over the draws, online with
     * the mid-ranks of the normal law over its peers' spread */
    {"draws16_clean", 25, -1, 0, 0, 0, 0, -1, 0, 2, false, 16, 60},
    {"draws16", 24, 5, 60, 0, 0, 0, CS_DET_COMPUTE, CS_DET_RULE_OFFSET, 2, false, 16, 60},
    /* 12 members with the noise of noisy_recent: under 16 the exchange's sums give no noise term,
     * so it flagged the clean rank (instance 100, 38.6 us) that the report holds; at most 16
     * members carry their durations one by one and the exchange reads the report's figures */
    {"noisy12", 27, 3, 38, 0, 0, 0, -1, 0, 0, false, 12, 30},
    /* 8 members, the draws scenario: the report names the GPU by the offset rule over the draws,
     * whose mid-ranks the exchange had no measure of under 16 members (it named nobody) */
    {"draws8_clean", 28, -1, 0, 0, 0, 0, -1, 0, 2, false, 8, 60},
    {"draws8", 29, 5, 60, 0, 0, 0, CS_DET_COMPUTE, CS_DET_RULE_OFFSET, 2, false, 8, 60},
    /* the data scenarios with 24 members: past 16 the exchange has sums only, its data-load fit
     * the least-squares line over the rank's peers (online_instance.c) */
    {"data24", 30, -1, 0, 0, 0, 0, -1, 0, 0, true, 24},
    {"data_slow20_24", 31, 6, 400, 1.0, 1.0, 0.0, CS_DET_COMPUTE, CS_DET_RULE_LAST, 0, true, 24},
};
#define DATA_HOT 6      /* the rank the data gives the most bytes */
#define DATA_UNIT 65536 /* bytes per unit; 10 us later per unit */

/* per instance and rank: duration and compute gap (whole us, gap -1 unknown) */
struct job {
  int64_t dur[T][NMAX], gap[T][NMAX];
  uint64_t xb[T][NMAX]; /* Send/Recv bytes before the collective (data scenarios) */
  bool data;
};
/* instance k's collective seq: after its Send/Recv (seq 2k) in the data scenarios */
static int64_t seq_of(const struct job *j, int k) { return j->data ? 2 * (int64_t)k + 1 : k; }

static uint64_t rng(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int pick(uint64_t *s, int n, int not1, int not2) {
  for (;;) {
    int r = (int)(rng(s) % (uint64_t)n);
    if (r != not1 && r != not2) return r;
  }
}

/* about normal, mean 0 and sigma 1: 12 uniforms less 6 */
static double gauss(uint64_t *s) {
  double g = -6;
  for (int i = 0; i < 12; i++) g += (double)(rng(s) % 1000000) / 1e6;
  return g;
}

/* the noisy scenario: every rank's duration D_US + noise_us x gauss (whole us), but the target's
 * in the last NOISY_LAST instances: the others' median less late_us (+-3 us), but 10 us above it
 * in every 8th (so each 16 has 14 after the median, the recent rule's count) and 1.3 late_us in
 * the 8th after that (no 6 in a row within 1.25x of each other: the fresh rule's) */
#define NOISY_LAST 40
static void make_noisy(const struct scenario *sc, struct job *j) {
  uint64_t s = sc->seed;
  for (int k = 0; k < T; k++) {
    int64_t o[NMAX];
    int no = 0;
    for (int r = 0; r < N; r++) {
      double g = gauss(&s) * sc->noise_us;
      j->dur[k][r] = D_US + (int64_t)(g < 0 ? g - 0.5 : g + 0.5);
      j->gap[k][r] = k == 0 ? -1 : G_US;
      j->xb[k][r] = 0;
      if (r != sc->target) o[no++] = j->dur[k][r];
    }
    if (sc->tie_every) { /* the draws scenario: every other instance a tie, the target late at the others */
      if (k % sc->tie_every == 0) {
        for (int r = 0; r < N; r++) j->dur[k][r] = D_US;
        if (k > 0 && sc->target >= 0) j->gap[k][sc->target] = G_US + sc->late_us; /* a GPU slower at its work */
        continue;
      }
    }
    int i = sc->tie_every ? NOISY_LAST : k - (T - NOISY_LAST);
    if (i < 0 || sc->target < 0) continue;
    for (int a = 1; a < no; a++) /* the others' median: sorted, the middle one (the upper of two) */
      for (int b = a; b > 0 && o[b] < o[b - 1]; b--) {
        int64_t t = o[b];
        o[b] = o[b - 1];
        o[b - 1] = t;
      }
    int64_t med = o[no / 2];
    int64_t late = i % 8 == 2 ? sc->late_us * 13 / 10 : sc->late_us + (int64_t)(rng(&s) % 7) - 3;
    j->dur[k][sc->target] = i % 8 == 5 ? med + 10 : med - late;
    if (sc->tie_every && k > 0) j->gap[k][sc->target] = G_US + late; /* a GPU slower at its work */
  }
  j->data = false;
}

static void make_job(const struct scenario *sc, struct job *j) {
  uint64_t s = sc->seed;
  if (sc->noise_us) {
    make_noisy(sc, j);
    return;
  }
  for (int k = 0; k < T; k++) {
    int last, x, gx = 0;
    bool hit = sc->target >= 0 && (double)(rng(&s) % 1000) < sc->prob * 1000;
    if (hit) {
      last = sc->target;
      x = sc->late_us + (int)(rng(&s) % (uint64_t)(sc->late_us / 10 + 1)) - sc->late_us / 20;
      gx = (int)(sc->gap_excess * x);
    } else { /* noise: someone else last by a little, its gap as its peers' */
      last = pick(&s, N, sc->target, -1);
      x = 1 + (int)(rng(&s) % 10);
    }
    int first = pick(&s, N, last, -1);
    for (int r = 0; r < N; r++) {
      j->dur[k][r] = D_US;
      j->gap[k][r] = k == 0 ? -1 : G_US;
    }
    j->dur[k][last] = D_US - x;
    j->dur[k][first] = D_US + (int)(rng(&s) % 10);
    if (k > 0) j->gap[k][last] = G_US + gx;
    if (sc->tie_every && k % sc->tie_every == 0) { /* two others tie for the last */
      int a = pick(&s, N, sc->target, first), b = pick(&s, N, sc->target, first);
      while (b == a) b = pick(&s, N, sc->target, first);
      j->dur[k][last] = D_US;
      if (k > 0) j->gap[k][last] = G_US;
      j->dur[k][a] = j->dur[k][b] = D_US - 5;
    } else if (sc->tie_every && k % sc->tie_every == 1) { /* the fresh draw: the target last */
      int lt = sc->late_us + (int)(rng(&s) % (uint64_t)(sc->late_us / 10 + 1)) - sc->late_us / 20;
      j->dur[k][last] = D_US;
      if (k > 0) j->gap[k][last] = G_US;
      j->dur[k][sc->target] = D_US - lt;
      j->gap[k][sc->target] = G_US + (int)(sc->gap_excess * lt);
    }
    if (hit && (double)(rng(&s) % 1000) < sc->spike * 1000) {
      /* another rank later still (its gap as its peers'); a mirror rank early by the target's
       * lateness, and the first earlier still, keep the middle six's mean at D_US */
      int other = pick(&s, N, last, first), mirror = pick(&s, N, last, first);
      while (mirror == other) mirror = pick(&s, N, last, first);
      j->dur[k][other] = D_US - x - 50 - (int)(rng(&s) % 100);
      j->dur[k][mirror] = D_US + x;
      j->dur[k][first] = D_US + x + 1 + (int)(rng(&s) % 10);
    }
  }
  j->data = sc->data;
  for (int k = 0; k < T; k++)
    for (int r = 0; r < N; r++) {
      int u = !sc->data ? 0 : r == DATA_HOT ? 16 + (int)(rng(&s) % 8)
                                            : (int)(rng(&s) % 8);
      j->xb[k][r] = sc->data ? (uint64_t)(u + 1) * DATA_UNIT : 0;
      j->dur[k][r] -= 10 * u;
    }
}

static const char *host_of(int r) {
  static const char *h[NMAX] = {"node0", "node0", "node1", "node1", "node2", "node2", "node3", "node3",
                                "node4", "node4", "node5", "node5", "node6", "node6", "node7", "node7"};
  return h[r];
}

/* ---- caller 1: the report's batch detector over op records (gaps from the spans) */
static void run_batch(const struct job *j, int ninst, struct cs_det_result *out) {
  static struct cs_det_op ops[2 * T * NMAX];
  size_t n = 0;
  for (int r = 0; r < N; r++) {
    int64_t t = 1000000000ll + r * 777000ll;
    for (int k = 0; k < ninst; k++) {
      if (j->data) /* its Send/Recv, at once after its previous collective, of no duration */
        ops[n++] = (struct cs_det_op){.comm = COMM,
                                      .seq = 2 * k,
                                      .comm_size = N,
                                      .comm_rank = r,
                                      .rank = r,
                                      .host = host_of(r),
                                      .start_ns = t,
                                      .end_ns = t,
                                      .enqueue_ns = t,
                                      .state = CS_DET_DONE,
                                      .p2p = true,
                                      .bytes = j->xb[k][r],
                                      .stream = 1,
                                      .peer = (r + 1) % N};
      int64_t start = t + (j->gap[k][r] < 0 ? 5000 : j->gap[k][r] * 1000), end = start + j->dur[k][r] * 1000;
      ops[n++] = (struct cs_det_op){.comm = COMM,
                                    .seq = seq_of(j, k),
                                    .comm_size = N,
                                    .comm_rank = r,
                                    .rank = r,
                                    .host = host_of(r),
                                    .start_ns = start,
                                    .end_ns = end,
                                    .enqueue_ns = start,
                                    .state = CS_DET_DONE,
                                    .bytes = 1 << 20,
                                    .stream = 1,
                                    .peer = -1};
      t = end;
    }
  }
  struct cs_det_params p;
  cs_det_params_default(&p);

  assert_int_equal(cs_detect(ops, n, &p, CS_DET_HANG_OFF, out), 0);
}

/* ---- caller 2: the streaming detector (top, the exporter) over members */
static void run_stream(const struct job *j, struct cs_det_result *out) {
  struct cs_det_params p;
  cs_det_params_default(&p);

  struct cs_det_stream *s = cs_det_stream_new(&p, CS_DET_HANG_OFF);
  assert_non_null(s);
  int64_t t[NMAX];
  for (int r = 0; r < N; r++) t[r] = 1000000000ll + r * 777000ll;
  for (int k = 0; k < T; k++) {
    struct cs_det_op m[NMAX];
    if (j->data) {
      for (int r = 0; r < N; r++)
        m[r] = (struct cs_det_op){.comm_rank = r,
                                  .comm_size = N,
                                  .rank = r,
                                  .host = host_of(r),
                                  .start_ns = t[r],
                                  .end_ns = t[r],
                                  .enqueue_ns = t[r],
                                  .state = CS_DET_DONE,
                                  .p2p = true,
                                  .bytes = j->xb[k][r],
                                  .peer = (r + 1) % N,
                                  .gap_us = k ? 0 : -1};
      assert_int_equal(cs_det_stream_instance(s, COMM, 2 * k, m, N), 0);
    }
    for (int r = 0; r < N; r++) {
      int64_t start = t[r] + (j->gap[k][r] < 0 ? 5000 : j->gap[k][r] * 1000), end = start + j->dur[k][r] * 1000;
      m[r] = (struct cs_det_op){.comm_rank = r,
                                .comm_size = N,
                                .rank = r,
                                .host = host_of(r),
                                .start_ns = start,
                                .end_ns = end,
                                .enqueue_ns = start,
                                .state = CS_DET_DONE,
                                .bytes = 1 << 20,
                                .gap_us = (double)j->gap[k][r]};
      t[r] = end;
    }
    assert_int_equal(cs_det_stream_instance(s, COMM, seq_of(j, k), m, N), 0);
  }
  assert_int_equal(cs_det_stream_finish(s, out), 0);
  cs_det_stream_free(s);
}

/* ---- caller 3: the online exchange, the ranks in process; the reports rank 0 learns */
struct online_seen {
  struct cs_online_straggler s[NMAX];
  size_t n;
};
static void run_online(const struct job *j, struct online_seen *seen) {
  struct cs_online_rank *st[NMAX];
  for (int r = 0; r < N; r++) assert_non_null(st[r] = cs_online_rank_new(r, N, host_of(r), NULL));
  struct cs_online_wire *red = malloc(sizeof *red), *w = malloc(sizeof *w);
  assert_non_null(red);
  assert_non_null(w);
  memset(seen, 0, sizeof *seen);
  uint32_t nx = T / PER_EXCH + 6; /* the last ones carry the late reports */
  for (uint32_t x = 1; x <= nx; x++) {
    for (int r = 0; r < N; r++)
      for (int k = (int)(x - 1) * PER_EXCH; k < (int)x * PER_EXCH && k < T; k++) {
        struct cs_online_op o = {.comm = COMM,
                                 .seq = (uint64_t)seq_of(j, k),
                                 .p2p_bytes = j->xb[k][r],
                                 .dur_us = (float)j->dur[k][r],
                                 .gap_us = (float)j->gap[k][r],
                                 .comm_size = N,
                                 .comm_rank = (uint32_t)r};
        cs_online_rank_feed_op(st[r], &o);
      }
    struct cs_online_findings f[NMAX];
    for (unsigned round = 0;; round++) {
      cs_online_wire_identity(red);
      for (int r = 0; r < N; r++) {
        cs_online_pack(st[r], x, round, w);
        cs_online_wire_fold(red, w);
      }
      int more = 0;
      for (int r = 0; r < N; r++) {
        more = cs_online_unpack(st[r], x, round, red, &f[r]);
        assert_true(more >= 0);
      }
      if (more != 1 || round == CS_ONLINE_DETAIL_ROUNDS) break;
    }
    for (size_t i = 0; i < f[0].nstragglers && seen->n < NMAX; i++) seen->s[seen->n++] = f[0].stragglers[i];
  }
  free(red);
  free(w);
  for (int r = 0; r < N; r++) cs_online_rank_free(st[r]);
}

static const struct cs_det_straggler *rank_entry(const struct cs_det_result *r) {
  const struct cs_det_straggler *e = NULL;
  for (size_t i = 0; i < r->nstragglers; i++)
    if (r->stragglers[i].rank >= 0) {
      assert_null(e); /* one flagged rank at most in these scenarios */
      e = &r->stragglers[i];
    }
  return e;
}

static void same_entry(const struct cs_det_straggler *a, const struct cs_det_straggler *b) {
  assert_int_equal(a->comm, b->comm);
  assert_int_equal(a->rank, b->rank);
  assert_int_equal(a->comm_rank, b->comm_rank);
  assert_int_equal(a->kind, b->kind);
  assert_int_equal(a->window_instances, b->window_instances);
  assert_int_equal(a->last, b->last);
  assert_true(a->share_last == b->share_last);
  assert_true(a->lateness_us == b->lateness_us);
  assert_true(a->offset_us == b->offset_us);
  assert_true(a->later_share == b->later_share);
  assert_true(a->median_dur_us == b->median_dur_us);
  assert_true(a->gap_us == b->gap_us);
  assert_true(a->peer_gap_us == b->peer_gap_us);
  assert_int_equal(a->first_flag_instance, b->first_flag_instance);
  assert_int_equal(a->first_flag_seq, b->first_flag_seq);
  assert_int_equal(a->last_flag_seq, b->last_flag_seq);
}

static void one_scenario(const struct scenario *sc) {
  static struct job j;
  members = sc->members ? sc->members : NDEFAULT;
  make_job(sc, &j);
  struct cs_det_result batch, stream;
  run_batch(&j, T, &batch);
  run_stream(&j, &stream);
  struct online_seen on;
  run_online(&j, &on);

  const struct cs_det_straggler *b = rank_entry(&batch), *s = rank_entry(&stream);
  if (sc->want_kind < 0) {
    if (b || s || on.n)
      print_message("%-12s flagged: batch rank %d (%s), stream rank %d, online %zu (rank %d at %zu, lateness %.1f us)\n",
                    sc->name, b ? b->rank : -1, b ? cs_det_rule_name(b->rule) : "-", s ? s->rank : -1, on.n,
                    on.n ? on.s[0].rank : -1, on.n ? on.s[0].instances : 0, on.n ? on.s[0].lateness_us : 0.0);
    assert_null(b);
    assert_null(s);
    assert_int_equal(on.n, 0);
  } else {
    assert_non_null(b);
    assert_non_null(s);
    assert_int_equal(b->rank, sc->target);
    assert_int_equal(b->kind, sc->want_kind);
    assert_int_equal(b->rule, sc->want_rule);
    same_entry(b, s);
    /* the online report: flagged once, with the figures of its first flag */
    assert_int_equal(on.n, 1);
    const struct cs_online_straggler *o = &on.s[0];
    assert_true(b->first_flag_instance <= T);
    struct cs_det_result at;
    run_batch(&j, (int)b->first_flag_instance, &at);
    const struct cs_det_straggler *a = rank_entry(&at);
    assert_non_null(a);
    assert_int_equal(a->last_flag_seq, seq_of(&j, (int)b->first_flag_instance - 1));
    assert_int_equal(o->comm, COMM);
    assert_int_equal(o->rank, a->rank);
    assert_int_equal(o->comm_rank, a->comm_rank);
    assert_int_equal(o->kind, a->kind);
    print_message("%-12s rank %d %s by %s, first flag at instance %zu: share %.4f lateness %.1f us offset %.1f us "
                  "median %.1f us; online: at %zu share %.4f lateness %.1f us median %.1f us\n",
                  sc->name, b->rank, cs_det_kind_name(b->kind), cs_det_rule_name(b->rule), b->first_flag_instance,
                  a->share_last, a->lateness_us, a->offset_us, a->median_dur_us, o->instances, o->share_last,
                  o->lateness_us, o->median_dur_us);
    /* at most 16 members every member's duration and bytes travel: the report's figures; past
     * 16 with bytes the data-load fits differ by design (docs/online.md): the verdict alone */
    if (N <= 16 || !sc->data) {
      assert_int_equal(o->instances, a->window_instances);
      assert_true(o->share_last == a->share_last);
      assert_true(o->lateness_us == a->lateness_us);
      assert_true(o->median_dur_us == a->median_dur_us);
    }
    cs_det_result_free(&at);
  }
  cs_det_result_free(&batch);
  cs_det_result_free(&stream);
}

static void test_clean(void **state) {
  (void)state;
  one_scenario(&scenarios[0]);
}
static void test_slow5(void **state) {
  (void)state;
  one_scenario(&scenarios[1]);
}
static void test_slow20(void **state) {
  (void)state;
  one_scenario(&scenarios[2]);
}
static void test_dataloader(void **state) {
  (void)state;
  one_scenario(&scenarios[3]);
}
static void test_link(void **state) {
  (void)state;
  one_scenario(&scenarios[4]);
}
static void test_intermittent(void **state) {
  (void)state;
  one_scenario(&scenarios[5]);
}
static void test_slow2(void **state) {
  (void)state;
  one_scenario(&scenarios[6]);
}
static void test_stall(void **state) {
  (void)state;
  one_scenario(&scenarios[7]);
}
static void test_fresh(void **state) {
  (void)state;
  one_scenario(&scenarios[8]);
}
static void test_data(void **state) {
  (void)state;
  one_scenario(&scenarios[9]);
}
static void test_data_slow20(void **state) {
  (void)state;
  one_scenario(&scenarios[10]);
}
static void test_pair4(void **state) {
  (void)state;
  one_scenario(&scenarios[11]);
}
static void test_noisy_recent(void **state) {
  (void)state;
  one_scenario(&scenarios[12]);
}
static void test_draws16_clean(void **state) {
  (void)state;
  one_scenario(&scenarios[13]);
}
static void test_draws16(void **state) {
  (void)state;
  one_scenario(&scenarios[14]);
}
static void test_noisy12(void **state) {
  (void)state;
  one_scenario(&scenarios[15]);
}
static void test_draws8_clean(void **state) {
  (void)state;
  one_scenario(&scenarios[16]);
}
static void test_draws8(void **state) {
  (void)state;
  one_scenario(&scenarios[17]);
}
static void test_data24(void **state) {
  (void)state;
  one_scenario(&scenarios[18]);
}
static void test_data_slow20_24(void **state) {
  (void)state;
  one_scenario(&scenarios[19]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clean),
      cmocka_unit_test(test_slow5),
      cmocka_unit_test(test_slow20),
      cmocka_unit_test(test_dataloader),
      cmocka_unit_test(test_link),
      cmocka_unit_test(test_intermittent),
      cmocka_unit_test(test_slow2),
      cmocka_unit_test(test_stall),
      cmocka_unit_test(test_fresh),
      cmocka_unit_test(test_data),
      cmocka_unit_test(test_data_slow20),
      cmocka_unit_test(test_pair4),
      cmocka_unit_test(test_noisy_recent),
      cmocka_unit_test(test_draws16_clean),
      cmocka_unit_test(test_draws16),
      cmocka_unit_test(test_noisy12),
      cmocka_unit_test(test_draws8_clean),
      cmocka_unit_test(test_draws8),
      cmocka_unit_test(test_data24),
      cmocka_unit_test(test_data_slow20_24),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
