/* include/collscope/detect.h: collscope's ONE straggler and hang detector, used by
 * `collscope report` (dump files), `collscope top` / `collscope salvage` (shm rings) and
 * the shim. Pure C, no I/O, no allocation outside cs_detect(), the cs_det_stream_*() calls and
 * cs_det_result_free().
 *
 * Straggler (per communicator, per collective instance = (comm, seq) seen by >= 2 ranks
 * with GPU timing): the rank that arrived last has the SHORTEST GPU duration (its peers
 * waited for it inside the collective). lateness = median(duration) - its duration. No
 * cross-host clock sync is needed. Every rank's arrival offset in an instance is
 * a = median(duration) - its duration (true median: > 0 means it arrived after the median
 * rank; for the last rank a is its lateness; with >= 8 members the median of those within 5
 * robust sigmas of the median duration, where they are a majority). Over a sliding window of the last `window`
 * instances of a communicator, a rank is flagged when EITHER rule holds on `persist`
 * consecutive instances (a burst of scheduling noise is not a straggler):
 *  offset rule (uses every instance, catches small consistent delays): the rank has a
 *   timed op in >= min_instances of the window's instances, a > 0 in clearly more than
 *   half of them (sign test, z >= 2), and its median offset m satisfies
 *   m >= max(floor_us, min(frac * median duration, 0.1 * its median compute gap),
 *   5 * 1.2533 * sigma / sqrt(its instances), sigma the window's median noise: per instance
 *   of >= 8 members 1.4826 * their median |offset|) (the floor; the gap term only where its
 *   gap exceeds its peers' by 0.1 of it, or, where its excess is at least m / 2, 0.1 * its
 *   least gap over the window), and m is offset_z robust
 *   standard errors
 *   (1.2533 * 1.4826 * MAD / sqrt(n)) above 0, either in us or as a / the instance's median
 *   duration (with mixed sizes a fixed delay is steady in us, a proportional one relatively);
 *  recent rule (a slowdown that starts mid-job, before it fills half the window): the
 *   offset rule over the last `recent` instances only (the rank in >= 3/4 of them), with
 *   a > 0 in >= recent_share of them, recent_z instead of offset_z, and the noise term over
 *   those instances (5 * 1.2533 * sigma / sqrt(recent), sigma their median noise);
 *  share-last rule (catches a rank that is late only now and then, by a lot):
 *   instances_in_window >= min_instances, and
 *   last_count / instances_in_window >= max(share, p0 + z * sqrt(p0 (1 - p0) / n)) with
 *   p0 = 1 / comm_size, n = instances_in_window (arriving last that often is z standard
 *   deviations above chance), and the median lateness of its last-arrivals >= the floor
 *   (its compute gap there: the median over its last-arrivals); judged after the other
 *   rules, the same test over the window's fresh draws (instances naming a last rank right
 *   after one that named none: a tie), then the offset rule over those draws alone: in
 *   >= min_instances of them, a > 0 in clearly more than half (z >= 2), and its median offset
 *   there >= the floor with the draws' noise over their count, and the normal scores of its
 *   mid-ranks among each draw's members, summed over sqrt(their count), a z with
 *   P(Z >= z) <= P(Z >= 4.5) x window / (draws x comm_size) (the level per judged instance over
 *   all members; communicators of >= 8 members). In instances of < 8 members the
 *   offset and recent rules' sign counts must have a binomial tail (1/2) within offset_z's.
 *  cost rule (a rank late rarely or on alternate steps, by a lot: analysis/detect_cost.c): over
 *   the last cost_window instances, the sum of its lateness where it arrived last by more than
 *   max(floor_us, frac * the instance's median duration, 3 x the median lateness of the last
 *   `window` instances) (last in the previous instance too, with its peers idle less than that
 *   lateness since: only its lateness beyond the previous one's) is >= cost_share of the window's elapsed time, in >= cost_min
 *   instances, and cost_z standard deviations above its fair share (1 / comm_size of all such
 *   lateness, the variance of a random last rank).
 * "median duration" = the median over the window's instances of their median duration.
 * kind: the compute gap of a collective = its stream's idle time since the rank's previous
 * collective of the communicator there (collscope/compute_gap.h), the idle time before the
 * Send/Recv in between included (a Send/Recv waits for its peer alone: a stall before it is
 * still the rank's lateness at the next collective). A slow GPU (the stream is late to reach
 * the collective) shows as a compute gap larger than its peers' by at least half the lateness,
 * both over its last-arrivals (share-last rule), or by at least half its median offset over
 * the window, the excess the median of its per-instance excess (offset rules): kind "compute"; otherwise "link" (the rank is consistently
 * late but not because its stream was busy).
 * A slow link slows every rank of a communicator equally: no consistent last arrival, so
 * no rank is flagged. It is reported as kind "link" with rank -1 (no rank to blame) when,
 * over the comm's last `window` instances: no rank is flagged, the instances' lateness is
 * < 10% of their duration (everyone waited for the network alike) and the median duration
 * of small instances (bytes <= 64 KiB, pure latency) less 5 standard errors of it
 * (1.2533 x 1.4826 x their MAD / sqrt(their count)) is >= link_floor_us.
 *
 * Hang (per communicator): reached = the highest seq that EVERY rank completed; the ranks
 * that have not entered reached+1 (no record at all, or the call failed) are `missing`;
 * the ranks that entered it but never completed it are `stuck`. */
#ifndef COLLSCOPE_DETECT_H
#define COLLSCOPE_DETECT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cs_det_state {
  CS_DET_DONE = 0,    /* completed with GPU timing (start_ns/end_ns valid) */
  CS_DET_UNTIMED = 1, /* completed, no GPU timing (captured/host) */
  CS_DET_PENDING = 2, /* entered (enqueued) but not complete: in flight or hung */
  CS_DET_FAILED = 3,  /* the call returned an error: the rank did not enter */
  CS_DET_ENTERED = 4, /* enqueued, completion not observed (sampled out of the CUDA-event path):
                       * entered; completed once a later instance of the rank completed */
};

/* One op as the detector takes it, through either entry: cs_detect() (a whole set: `top`,
 * `salvage`, the exporter, the report's loaded path) and cs_det_stream_instance() (an instance
 * at a time: the dump readers, whose record, tools/dump/instwalk.h, holds these fields as its
 * detector part, so it is handed on without a copy field by field).
 *  comm, seq: the instance (seq < 0: ignored); the stream takes them per instance instead.
 *  comm_size, comm_rank, rank (global rank, -1 unknown), host (carried through to the results).
 *  start_ns, end_ns, enqueue_ns; state: enum cs_det_state.
 *  p2p: a Send/Recv, counted for hangs, not for stragglers.
 *  stream: its CUDA stream (compute gaps are per (comm, stream), compute_gap.h).
 *  group: the record's group id (its process's, 0 when ungrouped); group_ops: how many ops of
 *   the group share its GPU span (the record's, 0 when the span is its own). The members of one
 *   group on one communicator with group_ops > 1 are ONE instance, under the first member's
 *   seq, with the group's span (cs_det_group_merge). peer and recv say which Send/Recv it is,
 *   so a group that is an all-to-all of equal splits counts as a collective
 *   (cs_det_a2a_collective).
 *  last_seq: a merged group's last member's seq, which a rank that completed the group completed
 *   too (hangs: the next instance is the stuck one); 0 or below seq: the instance's seq alone.
 *  gap_us: the compute gap before this op (-1 unknown): the stream's input, computed by the
 *   caller; cs_detect() computes its own (from the previous timed op of the same process and
 *   stream in start order) and ignores this one.
 *  gpu_start: of a CS_DET_PENDING op, whether its GPU had reached the op's start when the shim
 *   reported it (the hang record's start event: enum cs_det_gpu_start; 0 unknown). */
#define CS_DET_OP_FIELDS \
  uint64_t comm; \
  int64_t seq; \
  int comm_size; \
  int comm_rank; \
  int rank; \
  const char *host; \
  int64_t start_ns; \
  int64_t end_ns; \
  int64_t enqueue_ns; \
  int state; \
  bool p2p; \
  uint64_t bytes; \
  uint64_t stream; \
  uint64_t group; \
  uint32_t group_ops; \
  int peer; \
  bool recv; \
  int64_t last_seq; \
  double gap_us; \
  int gpu_start;
struct cs_det_op {
  CS_DET_OP_FIELDS
};
enum cs_det_gpu_start {
  CS_DET_START_UNKNOWN = 0,     /* no start event (sampled out, host timing, an old dump) */
  CS_DET_START_REACHED = 1,     /* the op's start event had completed: the GPU was at the op */
  CS_DET_START_NOT_REACHED = 2, /* it had not: the GPU was still busy with work queued before it */
};
/* a hang record's start flags (the dump's "started"/"start_known", the ring's start_ns) */
static inline int cs_det_hang_start(bool started, bool known) {
  return !known ? CS_DET_START_UNKNOWN : started ? CS_DET_START_REACHED
                                                 : CS_DET_START_NOT_REACHED;
}

/* Whether one rank's Send/Recv members of a group on a communicator of comm_size ranks are an
 * all-to-all (PyTorch's all_to_all_single, nccl-tests' src/alltoall.cu AlltoAllRunColl): one
 * Send and one Recv per peer, every peer of the communicator once (the rank itself may or may
 * not be among them). Feed each member, then ask; the peers are checked by count, sum and sum
 * of squares for each direction. Such a group is one AlltoAll of the summed Send bytes, with
 * nccl-tests' alltoall bus factor (n-1)/n (src/alltoall.cu AlltoAllGetBw). */
struct cs_det_a2a {
  uint64_t nsend, nrecv, ssum, ssq, rsum, rsq, send_bytes;
  uint64_t smin, smax; /* the smallest and largest Send */
  bool bad;            /* a member that is not a Send/Recv, or a peer out of range */
};
static inline void cs_det_a2a_add(struct cs_det_a2a *a, bool p2p, bool recv, int peer, int comm_size, uint64_t bytes) {
  if (!p2p || peer < 0 || peer >= comm_size) {
    a->bad = true;
    return;
  }
  uint64_t p = (uint64_t)peer;
  if (recv)
    a->nrecv++, a->rsum += p, a->rsq += p * p;
  else {
    if (!a->nsend || bytes < a->smin) a->smin = bytes;
    if (!a->nsend || bytes > a->smax) a->smax = bytes;
    a->nsend++, a->ssum += p, a->ssq += p * p, a->send_bytes += bytes;
  }
}
static inline bool cs_det_a2a_ok(const struct cs_det_a2a *a, int comm_size, int comm_rank) {
  if (a->bad || comm_size < 2 || a->nsend != a->nrecv) return false;
  uint64_t n = (uint64_t)comm_size, sum = n * (n - 1) / 2, sq = (n - 1) * n * (2 * n - 1) / 6;
  if (a->nsend == n - 1) { /* the rank itself left out */
    if (comm_rank < 0 || comm_rank >= comm_size) return false;
    sum -= (uint64_t)comm_rank, sq -= (uint64_t)comm_rank * (uint64_t)comm_rank;
  } else if (a->nsend != n) {
    return false;
  }
  return a->ssum == sum && a->rsum == sum && a->ssq == sq && a->rsq == sq;
}
/* An all-to-all of equal splits (all_to_all_single's, nccl-tests' alltoall) is a collective
 * for the detector: its ranks wait for each other alike. One of uneven splits (an expert-
 * parallel dispatch or combine: the data decides each rank's share) stays Send/Recv there:
 * its lateness is the data's, judged at the next collective through the data-load fit. */
static inline bool cs_det_a2a_collective(const struct cs_det_a2a *a, int comm_size, int comm_rank) {
  return cs_det_a2a_ok(a, comm_size, comm_rank) && a->smin == a->smax;
}

struct cs_det_params {
  unsigned window;        /* COLLSCOPE_STRAGGLER_WINDOW, default 100 instances */
  unsigned min_instances; /* COLLSCOPE_STRAGGLER_MIN, default 10 */
  double share;           /* COLLSCOPE_STRAGGLER_SHARE, default 0.25: minimum share last */
  double z;               /* COLLSCOPE_STRAGGLER_Z, default 6: significance above chance */
  unsigned persist;       /* COLLSCOPE_STRAGGLER_PERSIST, default 6: consecutive instances the
                             conditions must hold before the rank is flagged */
  double offset_z;        /* COLLSCOPE_STRAGGLER_OFFSET_Z, default 5: robust z of the median
                             arrival offset (offset rule) */
  unsigned recent;        /* COLLSCOPE_STRAGGLER_RECENT, default 16 (0: off): the recent rule's
                             window, the last N instances */
  double recent_z;        /* COLLSCOPE_STRAGGLER_RECENT_Z, default 8 */
  double recent_share;    /* COLLSCOPE_STRAGGLER_RECENT_SHARE, default 0.85: share of the recent
                             instances it arrived after the median rank in */
  double floor_us;        /* COLLSCOPE_STRAGGLER_FLOOR_US, default 20 */
  double frac;            /* COLLSCOPE_STRAGGLER_FRAC, default 0.015 (of the median duration) */
  double link_floor_us;   /* COLLSCOPE_LINK_FLOOR_US, default 10000: a <= 64 KiB collective this
                             slow with no last arrival is a link problem */
  /* the cost rule (analysis/detect_cost.c); 0 in any of these: its default */
  unsigned cost_window; /* instances its window holds, default 300 */
  double cost_share;    /* the smallest share of the window's elapsed time its peers waited
                           for the rank, default 0.05 (above 1: the rule is off) */
  unsigned cost_min;    /* the fewest instances it cost them, default 2 */
  double cost_z;        /* its cost above its fair share, in standard deviations, default 3 */
};
void cs_det_params_default(struct cs_det_params *p);
/* Defaults overridden by the environment variables above (bad values: default kept).
 * Returns the number of variables that were ignored. */
int cs_det_params_env(struct cs_det_params *p);

enum cs_det_kind { CS_DET_COMPUTE = 0,
                   CS_DET_LINK = 1 };
static inline const char *cs_det_kind_name(int k) { return k == CS_DET_LINK ? "link" : "compute"; }
/* the rule a finding comes from: offset (the offset, recent or fresh rule), share-last, cost, or
 * stage (a pipeline's schedule over the whole job, analysis/schedule.c and stage_compute.c: a
 * GPU slower than its stage's peers, a slow stage; no flag instance, no median duration) */
enum cs_det_rule { CS_DET_RULE_OFFSET = 0,
                   CS_DET_RULE_LAST = 1,
                   CS_DET_RULE_COST = 2,
                   CS_DET_RULE_STAGE = 3 };
static inline const char *cs_det_rule_name(int r) {
  return r == CS_DET_RULE_COST ? "cost" : r == CS_DET_RULE_LAST ? "share-last"
                                      : r == CS_DET_RULE_STAGE  ? "stage"
                                                                : "offset";
}

struct cs_det_straggler {
  uint64_t comm;
  int comm_size, comm_rank, rank; /* comm_rank, rank -1 for kind link */
  const char *host;               /* NULL for kind link */
  int kind;                       /* enum cs_det_kind */
  size_t window_instances;        /* instances in the window the figures come from */
  size_t last;                    /* of those, how many it arrived last in */
  double share_last;              /* last / window_instances */
  double lateness_us;             /* median lateness over its last-arrivals (0: never last) */
  double offset_us;               /* its median arrival offset over the window's instances */
  double later_share;             /* share of those instances it arrived after the median (a > 0) */
  double median_dur_us;           /* median over the window's instances of their median duration */
  double gap_us;                  /* its median compute gap (-1 unknown) */
  double peer_gap_us;             /* the other ranks' median compute gap (-1 unknown) */
  size_t first_flag_instance;     /* 1-based count of the comm's instances when first flagged */
  int64_t first_flag_seq;
  int64_t last_flag_seq;               /* the seq of the last instance it was flagged at */
  int64_t first_flag_ns, last_flag_ns; /* its op's end_ns in those two instances (its own clock;
                                          0 for kind link with rank -1) */
  int64_t comm_last_seq;               /* the comm's last instance the detector evaluated */
  int rule;                            /* enum cs_det_rule: the rule that held at its last flag */
  /* the cost rule's figures (rule CS_DET_RULE_COST; 0 otherwise), over its cost window */
  double cost_share;       /* its peers' wait for it over the window's elapsed time */
  size_t late_instances;   /* the instances it cost them (last, beyond the comm's noise) */
  size_t cost_instances;   /* the instances of the cost window */
  size_t period_instances; /* the instances between two of those when regular (0: not) */
  double stall_us;         /* the median of its lateness there */
};

/* A finding is ongoing while the detector still flags it at the comm's last instance; else it
 * cleared after last_flag_seq (the detector's windows decide when: docs/detection.md). */
static inline bool cs_det_straggler_ongoing(const struct cs_det_straggler *s) {
  return s->last_flag_seq >= s->comm_last_seq;
}

struct cs_det_hang {
  uint64_t comm;
  int comm_size;
  int64_t reached; /* highest seq every rank completed, -1 none */
  int64_t seq;     /* reached + 1: the instance the job is stuck at */
  int *missing;
  size_t nmissing; /* global ranks that have not entered `seq` */
  const char **missing_hosts;
  int *stuck;
  size_t nstuck; /* global ranks that entered `seq` but did not complete it (not unstarted) */
  const char **stuck_hosts;
  int *unstarted;
  size_t nunstarted; /* global ranks that entered `seq` whose GPU never reached it, while a peer's
                        GPU is inside it and the rank is in no other communicator's hang: the
                        GPU itself holds (hung, or stuck in its own work before the op) */
  const char **unstarted_hosts;
  int64_t oldest_enqueue_ns; /* enqueue time of the oldest stuck op, 0 unknown */
};

/* Per (comm, comm_rank) summary: the live figures `collscope top` shows. */
struct cs_det_rankstat {
  uint64_t comm;
  int comm_rank, rank;
  const char *host;
  size_t instances, last; /* over the final window */
  double lateness_us;     /* median lateness when last, 0 if never last */
  double offset_us;       /* median arrival offset */
  bool straggler;
};

struct cs_det_result {
  struct cs_det_straggler *stragglers;
  size_t nstragglers;
  struct cs_det_hang *hangs;
  size_t nhangs;
  struct cs_det_rankstat *ranks;
  size_t nranks;
  size_t instances; /* collective instances evaluated */
  size_t judged;    /* of those, the ones the rules ran at: a window of >= min_instances of
                       its communicator (the denominator of a false-finding rate) */
};

/* hang_mode: which communicators get a hang entry.
 *  CS_DET_HANG_PENDING: those with at least one CS_DET_PENDING op (report: the shim wrote
 *    a hang record; top: an op older than the hang timeout was marked pending by the caller);
 *  CS_DET_HANG_OFF: none;
 *  CS_DET_HANG_SEEN: as PENDING, but comm ranks with no observation at all are left out
 *    (top: it sees only the processes of its own host). */
enum { CS_DET_HANG_OFF = 0,
       CS_DET_HANG_PENDING = 1,
       CS_DET_HANG_SEEN = 2 };
/* The members of one group (same host, rank, comm and group, group_ops > 1) made one op in
 * place: the first member (lowest seq) gets the group's span (earliest start and enqueue,
 * latest end), its state (failed, pending, entered, untimed over done), its bytes (an
 * all-to-all of equal splits: the Send bytes, and it is a collective; otherwise all members',
 * and it stays Send/Recv when they all are) and the others get seq
 * -1 (ignored). Returns how many ops were folded into another. cs_detect() applies it to a copy. */
size_t cs_det_group_merge(struct cs_det_op *ops, size_t n);
/* Returns 0, or -1 when out of memory (out is then empty). `ops` is not modified. */
int cs_detect(const struct cs_det_op *ops, size_t n, const struct cs_det_params *p, int hang_mode,
              struct cs_det_result *out);
void cs_det_result_free(struct cs_det_result *r);
/* sqrt without libm (the shim links no libm): Newton from a power-of-two guess; 0 for x <= 0
 * or NaN. Also the online evaluator's (analysis/online_eval.c). */
double cs_det_sqrt(double x);
/* P(Z >= z) of a standard normal (z <= 0: 0.5), and P(X >= k) of X ~ Binomial(n, p): the
 * share-last rule's chance level, exact at any communicator size (no libm either). */
double cs_det_normal_tail(double z);
double cs_det_binom_tail(size_t n, size_t k, double p);
/* The fresh rule's shape, shared by the report's detector and the online evaluator: a rank's
 * offset in each of the instances fed is at least the floor, and the largest is within
 * 1.25x of the smallest (a slow GPU's delay is steady; the work a burst of data gives a rank,
 * or the noise between two ranks, is not). Feed every instance's offset, then ask. */
struct cs_det_steady {
  double min, max;
  size_t n;
  bool below; /* an offset under the floor (or a missing one) was fed */
};
static inline void cs_det_steady_add(struct cs_det_steady *s, double off, double floor_us) {
  if (!(off >= floor_us)) s->below = true;
  if (s->n == 0 || off < s->min) s->min = off;
  if (s->n == 0 || off > s->max) s->max = off;
  s->n++;
}
static inline bool cs_det_steady_ok(const struct cs_det_steady *s) {
  return s->n > 0 && !s->below && s->max <= 1.25 * s->min;
}

/* The same detector fed one collective instance at a time (the dump readers, which never
 * hold all records): per communicator, instances must come in increasing seq order, each
 * with its members sorted by comm_rank (one per rank; the first of a comm_rank counts).
 * Only the last `window` + 1 instances of each communicator are kept, so memory is bounded
 * by communicators x comm size x window. An instance with seq < 0 only records who its
 * members are. The results equal cs_detect()'s over the same records, with two exceptions
 * of unusual input: the comm size is the largest seen so far (cs_detect uses the largest of
 * the whole set), and gap_us is whatever the caller computed (cs_detect: from the previous
 * timed op of the same process in start order). The members'
 * comm and seq are not read: the instance's are the call's. */
struct cs_det_stream;
struct cs_det_stream *cs_det_stream_new(const struct cs_det_params *p, int hang_mode); /* NULL: out of memory */
/* 0, or -1 out of memory (the stream then only refuses) */
int cs_det_stream_instance(struct cs_det_stream *s, uint64_t comm, int64_t seq, const struct cs_det_op *m, size_t n);
/* Results in communicator order, as cs_detect's. 0, or -1 out of memory (out empty). */
int cs_det_stream_finish(struct cs_det_stream *s, struct cs_det_result *out);
void cs_det_stream_free(struct cs_det_stream *s);

#endif
