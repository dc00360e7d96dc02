/* include/collscope/online.h: the job-wide online exchange (hooks/online.c) -- the wire
 * format of the small per-rank summary the ranks all-gather on collscope's own
 * communicator every K collectives of the world communicator, and the evaluator
 * (stats/online_eval.c) that turns the gathered summaries into findings: stragglers (the
 * detector of detect.h over sampled collective instances) and SDC mismatches (the rules
 * of sdc.h over the checked collectives every rank reported).
 *
 * Every rank receives the same gathered bytes in the same order and the evaluator is
 * deterministic, so every rank reaches the same SDC verdict on the same exchange (that is
 * what lets COLLSCOPE_SDC_ACTION=abort stop all ranks together); only world rank 0 logs.
 *
 * Summary: exactly CS_ONLINE_BYTES bytes per rank, little-endian host layout (all ranks of
 * a job run the same library on the same architecture), fixed-size fields only. */
#ifndef COLLSCOPE_ONLINE_H
#define COLLSCOPE_ONLINE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/detect.h"
#include "collscope/sdc.h"

#define CS_ONLINE_MAGIC 0x6f6e6c43u /* "Clno" */
#define CS_ONLINE_VERSION 1
#define CS_ONLINE_BYTES 2048
#define CS_ONLINE_NOPS 16   /* sampled collective instances per summary */
#define CS_ONLINE_NSDC 20   /* checked collectives per summary */
#define CS_ONLINE_HOST 32   /* host name bytes (truncated, NUL padded) */

struct cs_online_hdr {          /* 64 bytes */
  uint32_t magic;
  uint16_t version;
  uint8_t nops, nsdc;           /* entries used */
  int32_t rank;                 /* world rank (= rank in collscope's communicator) */
  uint32_t exchange;            /* 1-based exchange number */
  uint32_t drops;               /* records this rank lost so far (saturating) */
  uint32_t op_backlog;          /* sampled entries still waiting for a later exchange */
  uint32_t sdc_backlog;
  char host[CS_ONLINE_HOST];
  uint32_t pad_;
};

struct cs_online_op {           /* 32 bytes: one sampled collective instance on this rank */
  uint64_t comm;                /* collscope comm id (agrees across ranks) */
  uint64_t seq;
  float dur_us;                 /* GPU duration */
  float gap_us;                 /* this op's start - this rank's previous op end on the comm, < 0 unknown */
  uint32_t bytes;               /* nccl-tests bytes, saturating */
  uint16_t comm_size, comm_rank;
};

struct cs_online_sdc {          /* 72 bytes: one checked collective on this rank */
  uint64_t comm;
  uint64_t seq;
  uint64_t fp;
  double in_sum, in_abs, out_sum;
  uint64_t count;
  int32_t root;
  uint16_t comm_size, comm_rank;
  uint8_t op, checked;          /* enum cs_op; bit 0 fp/out_sum, bit 1 in_sum/in_abs */
  int8_t dtype, redop;          /* redop clamped to 127 (premulsum and beyond) */
  uint32_t pad_;
};

struct cs_online_summary {
  struct cs_online_hdr h;
  struct cs_online_op ops[CS_ONLINE_NOPS];
  struct cs_online_sdc sdc[CS_ONLINE_NSDC];
  unsigned char pad_[CS_ONLINE_BYTES - sizeof(struct cs_online_hdr) - CS_ONLINE_NOPS * sizeof(struct cs_online_op) -
                     CS_ONLINE_NSDC * sizeof(struct cs_online_sdc)];
};
_Static_assert(sizeof(struct cs_online_hdr) == 64, "online header layout");
_Static_assert(sizeof(struct cs_online_op) == 32, "online op layout");
_Static_assert(sizeof(struct cs_online_sdc) == 72, "online sdc layout");
_Static_assert(sizeof(struct cs_online_summary) == CS_ONLINE_BYTES, "online summary size");

/* ---- evaluator (stats/online_eval.c): pure, no I/O ---- */
struct cs_online_eval;

struct cs_online_straggler {    /* a rank newly flagged by the detector */
  uint64_t comm;
  int rank, comm_rank;          /* world rank (sender of the entries) */
  const char *host;
  double share_last, lateness_us, median_dur_us;
  size_t instances;
  int kind;                     /* enum cs_det_kind from the exchanged compute gaps */
};

struct cs_online_sdc_finding {
  uint64_t comm, seq;
  int op, dtype;
  uint64_t bytes;
  int check;                    /* enum cs_sdc_check */
  int suspect_comm_rank;        /* -1: the check cannot tell */
  int suspect_rank;             /* world rank, -1 unknown */
  const char *suspect_host;
  double got, want, tol;
};

struct cs_online_findings {
  struct cs_online_straggler *stragglers; size_t nstragglers;
  struct cs_online_sdc_finding *sdc; size_t nsdc;
  size_t sdc_compared;          /* checked instances complete and compared in this exchange */
  size_t instances;             /* sampled instances the detector saw in this exchange */
  size_t bad_summaries;         /* gathered summaries rejected (magic, version, counts) */
  uint32_t max_backlog;         /* most entries (sampled + checked) any valid summary's rank
                                 * still had queued for later exchanges */
};

/* world_size ranks; params NULL: detector defaults. stragglers: false skips the detector
 * (ranks other than 0 only need the SDC verdict). NULL when out of memory. */
struct cs_online_eval *cs_online_eval_new(int world_size, const struct cs_det_params *params, bool stragglers);
void cs_online_eval_free(struct cs_online_eval *e);
/* Feed one exchange's gathered bytes (world_size * CS_ONLINE_BYTES, rank order) and
 * return what is new since the previous call. `out` stays valid until the next call.
 * Returns 0, -1 when out of memory (state kept, findings empty). */
int cs_online_eval_exchange(struct cs_online_eval *e, const void *gathered, struct cs_online_findings *out);

#endif
