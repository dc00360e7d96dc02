/* include/collscope/online.h: the job-wide online exchange (hooks/online_exchange.c) -- what the
 * ranks all-reduce on collscope's own communicator every K collectives of the world
 * communicator, and the per-rank protocol state (analysis/online_eval.c) that builds each
 * rank's contribution and turns the reduced result into findings: stragglers (each rank
 * judges itself against the instance's minimum, maximum and sum of durations, the rules of
 * detect.h) and SDC mismatches (the rules of sdc.h over aggregates of the checked
 * collectives).
 *
 * Cost per rank per exchange is a constant: each round all-reduces one struct
 * cs_online_wire (three arrays: element-wise MIN of uint64, SUM of uint64, SUM of double),
 * whatever the number of ranks. Round 0 always runs; detail rounds (same size) run only
 * when a checked collective's fingerprints disagree, at most CS_ONLINE_DETAIL_ROUNDS.
 *
 * Determinism: every rank receives the same reduced bytes, and the shared part of the
 * state (partial aggregates, SDC verdicts, the number of rounds) is a function of those
 * bytes only, so every rank reaches the same SDC verdict on the same exchange (that is
 * what lets COLLSCOPE_SDC_ACTION=abort stop all ranks together); only world rank 0 logs.
 * Little-endian host layout (all ranks of a job run the same library). */
#ifndef COLLSCOPE_ONLINE_H
#define COLLSCOPE_ONLINE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/detect.h"
#include "collscope/sdc.h"

#define CS_ONLINE_MAGIC 0x6f6e6c43u /* "Clno" */
#define CS_ONLINE_VERSION 5
#define CS_ONLINE_HOST 32     /* host name bytes (truncated, NUL padded) */
#define CS_ONLINE_SHIP_OPS 32 /* sampled instances a rank ships per exchange at most */
#define CS_ONLINE_OP_SLOTS 64 /* ... into slots hashed from (comm, seq, exchange) */
#define CS_ONLINE_SHIP_SDC 24 /* checked collectives a rank ships per exchange at most */
#define CS_ONLINE_SDC_SLOTS 32
#define CS_ONLINE_REPORT_SLOTS 4  /* straggler reports (a rank that judged itself late) */
#define CS_ONLINE_DETAIL 4        /* disagreeing checked collectives per detail round */
#define CS_ONLINE_BUCKETS 16      /* fingerprint buckets per disagreeing collective */
#define CS_ONLINE_DETAIL_ROUNDS 3 /* detail rounds per exchange at most */

/* One round on the wire: reduced element-wise over all ranks (MIN, SUM, SUM). */
#define CS_ONLINE_NMIN 1040
#define CS_ONLINE_NSUM 4232
#define CS_ONLINE_NFSUM 140
struct cs_online_wire {
  uint64_t min[CS_ONLINE_NMIN];
  uint64_t sum[CS_ONLINE_NSUM];
  double fsum[CS_ONLINE_NFSUM];
};
#define CS_ONLINE_WIRE_BYTES sizeof(struct cs_online_wire)

/* A sampled collective instance on this rank (fed by the harvest thread). */
struct cs_online_op {
  uint64_t comm; /* collscope comm id (agrees across ranks) */
  uint64_t seq;
  float dur_us; /* GPU duration */
  float gap_us; /* this op's start - this rank's previous op end, < 0 unknown */
  uint32_t comm_size, comm_rank;
  uint32_t first_shipped; /* the evaluator's own: the exchange that first shipped it (feed 0) */
  uint64_t p2p_bytes;     /* its Send/Recv bytes of the comm since its previous collective of it */
};

/* A checked collective on this rank. */
struct cs_online_sdc {
  uint64_t comm;
  uint64_t seq;
  uint64_t fp;
  double in_sum, in_abs, out_sum;
  uint64_t count;
  int32_t root;
  uint32_t comm_size, comm_rank;
  uint8_t op, checked; /* enum cs_op; bit 0 fp/out_sum, bit 1 in_sum/in_abs */
  int8_t dtype, redop; /* redop clamped to 127 (premulsum and beyond) */
};

struct cs_online_straggler { /* a rank that flagged itself (detector rules of detect.h) */
  uint64_t comm;
  int rank, comm_rank; /* world rank */
  const char *host;
  double share_last, lateness_us, median_dur_us;
  size_t instances;
  int kind;       /* enum cs_det_kind from the compute gaps */
  unsigned cause; /* what its own health samples showed as it reported: CS_HEALTH_F_* bits of
                     include/collscope/record.h (power, thermal, hw slowdown, NVLink, PCIe), 0 none */
};

struct cs_online_sdc_finding {
  uint64_t comm, seq;
  int op, dtype;
  uint64_t bytes;
  int check;                /* enum cs_sdc_check */
  int suspect_comm_rank;    /* -1: the check cannot tell */
  int suspect_rank;         /* world rank, -1 unknown */
  const char *suspect_host; /* NULL unknown */
  uint64_t suspects;        /* ranks holding the same suspect bytes bucket (>= 1 when named) */
  double got, want, tol;
};

struct cs_online_findings {
  struct cs_online_straggler *stragglers;
  size_t nstragglers;
  struct cs_online_sdc_finding *sdc;
  size_t nsdc;
  size_t sdc_compared;  /* checked instances complete and compared in this exchange */
  size_t instances;     /* sampled instances completed in this exchange */
  size_t bad_summaries; /* 1 when the round-0 header did not agree (exchange ignored) */
  size_t lost_slots;    /* slots two different instances landed in (shipped again) */
  uint32_t max_backlog; /* most entries any rank still had queued for later exchanges */
  unsigned rounds;      /* rounds this exchange took */
};

/* ---- per-rank protocol state (analysis/online_eval.c): pure, no I/O ---- */
struct cs_online_rank;

/* rank in [0, nranks); params NULL: detector defaults. NULL when out of memory. */
struct cs_online_rank *cs_online_rank_new(int rank, int nranks, const char *host, const struct cs_det_params *params);
void cs_online_rank_free(struct cs_online_rank *st);
/* this rank's finished records (bounded FIFO backlogs; the oldest are dropped and counted) */
void cs_online_rank_feed_op(struct cs_online_rank *st, const struct cs_online_op *o);
void cs_online_rank_feed_sdc(struct cs_online_rank *st, const struct cs_online_sdc *c);
uint64_t cs_online_rank_lost(const struct cs_online_rank *st);
/* records this rank lost elsewhere (feed, harvest), carried in its next contribution */
void cs_online_rank_set_drops(struct cs_online_rank *st, uint64_t drops);
/* What this rank's own health samples show now (CS_HEALTH_F_* bits, at most 8 bits): sent
 * with its straggler report, in the report's kind word (the exchange's size is unchanged). */
void cs_online_rank_set_cause(struct cs_online_rank *st, unsigned cause);

/* One exchange (1-based number, the same on every rank) is a sequence of rounds:
 *   round = 0; do { pack(st, exchange, round, &w); all-reduce w; } while (unpack(...) > 0, round++)
 * pack fills this rank's contribution (every element, identities where it has nothing).
 * unpack takes the reduced wire and returns 1 when another round follows (every rank
 * decides alike), 0 when the exchange is over (*out then holds its findings, valid until
 * the next exchange), -1 when out of memory (the exchange's findings are empty). */
void cs_online_pack(struct cs_online_rank *st, uint32_t exchange, unsigned round, struct cs_online_wire *w);
int cs_online_unpack(struct cs_online_rank *st, uint32_t exchange, unsigned round, const struct cs_online_wire *w,
                     struct cs_online_findings *out);

/* The element-wise reduction the transport performs (the model and the tests use it):
 * acc = acc (op) w. */
void cs_online_wire_identity(struct cs_online_wire *acc);
void cs_online_wire_fold(struct cs_online_wire *acc, const struct cs_online_wire *w);

#endif
