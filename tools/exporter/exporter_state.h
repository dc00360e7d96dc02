/* tools/exporter/exporter_state.h: what `collscope exporter` knows about the rings of this host.
 *
 * One exp_rank per ring (per process): the ring is opened with the checked reader of
 * analysis/ring_reader.c (the same trust checks `top` and `salvage` use). Each poll reads the ring's
 * summary block, not its records: the series' counters and histograms (O(series), each
 * snapshot validated and folded into the exporter's own totals so that they never go
 * backwards), the side ring of rare records (SDC-checked ops, link records, hang reports),
 * the health sample and the GPU's identity. The straggler detector reads the newest
 * EXP_TAIL records of the main ring when it runs (every analyse_every_s). Memory is bounded
 * by ranks x series, never by what a ring says. A ring whose writer exited (clean exit or
 * dead) is kept for the grace period and then dropped; a process that replaces it (a
 * restarted job) gets a new exp_rank, hence fresh series with their own pid label. Rings
 * that fail the checks are skipped with one line each (once per file). */
#ifndef COLLSCOPE_TOOLS_EXPORTER_STATE_H
#define COLLSCOPE_TOOLS_EXPORTER_STATE_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "collscope/detect.h"
#include "collscope/links.h"
#include "collscope/ring.h"
#include "collscope/schema.h"
#include "exporter_gaps.h"
#include "ring/ring_view.h"

#define EXP_COMM_LABELS CS_RING_STAT_COMMS /* comm label values per rank; later comms share comm="other" */
#define EXP_SIZE_CLASSES CS_RING_SIZES     /* message size classes (exp_size_class_name) */
#define EXP_BUCKETS CS_RING_BUCKETS        /* finite duration buckets (exp_bucket_le), +Inf implied */
#define EXP_DET_WINDOW 512                 /* op records per rank kept for the straggler detector */
#define EXP_TAIL 1024                      /* newest records the detector reads from each ring when it runs */
#define EXP_LINK_WINDOW 64                 /* link records per rank kept for the slow-link rule */
#define EXP_SDC_WINDOW 256                 /* SDC-checked op records per rank kept for the cross-rank check */
#define EXP_MAX_RINGS 4096                 /* rings followed at once; more are skipped with a line */
#define EXP_MAX_SKIPS 4096                 /* skipped files remembered (so each is reported once) */
#define EXP_READ_BATCH EXP_TAIL            /* records copied out of a ring at a time */

double exp_bucket_le(unsigned b); /* seconds */
const char *exp_size_class_name(unsigned c);
unsigned exp_size_class(uint64_t bytes);

/* One (comm label, op, size class) of a rank: the exporter's totals, which only go up
 * whatever the ring does (a snapshot below the previous one counts as a restart of the
 * series: its values are added afresh). */
struct exp_opstat {
  uint64_t count;                 /* op records */
  uint64_t errors;                /* of those, calls that returned an error */
  uint64_t bytes;                 /* their bytes (saturating) */
  uint64_t timed;                 /* records with a usable GPU span: the histogram's count */
  uint64_t bucket[EXP_BUCKETS];   /* non-cumulative; rendered cumulative */
  double dur_sum_s;               /* sum of the timed durations */
  double bus_bytes;               /* bytes x busbw factor of the timed records (rate() / dur rate = busbw) */
  double busbw_Bps;               /* gauge: busbw of the timed records of the latest poll that had some */
  struct cs_ring_series_vals raw; /* the latest snapshot taken from the ring */
  uint64_t gen;                   /* its seqlock generation (unchanged: nothing to read) */
};

/* the health counters exported as totals (kept monotonic like exp_opstat) */
enum { EXP_HC_ECC_CORR,
       EXP_HC_ECC_UNCORR,
       EXP_HC_PCIE,
       EXP_HC_NVL_CRC,
       EXP_HC_NVL_REPLAY,
       EXP_HC_NVL_RECOVERY,
       EXP_HC_XID,
       EXP_HC_COUNT };
struct exp_health {
  struct cs_ring_health_vals raw; /* the latest sample */
  uint64_t gen;
  bool have;
  uint64_t total[EXP_HC_COUNT], last[EXP_HC_COUNT];
  uint64_t ib_total[CS_RING_IB_PORTS][CS_RING_IB_COUNTERS], ib_last[CS_RING_IB_PORTS][CS_RING_IB_COUNTERS];
  char ib_dev[CS_RING_IB_PORTS][32]; /* a port's identity as first seen (another one there: restart) */
  uint32_t ib_port[CS_RING_IB_PORTS];
};

struct exp_sdc_entry {
  uint64_t comm, count;
  int64_t seq;
  int op, dtype, redop, root, comm_size, comm_rank;
  unsigned checked;
  uint64_t fp;
  double in_sum, in_abs, out_sum;
  bool done;
};

struct exp_rank {
  struct cs_ring_reader rd;
  char name[256]; /* base name of the ring file */
  uint64_t dev, ino;
  int pid, rank, local_rank, world_size, device;
  int64_t created_ns;
  char job_id[128];                             /* the header's job (as in the name) */
  char job[RING_TEXT_MAX], host[RING_TEXT_MAX]; /* printable (ring_text_escape) */
  uint64_t comm_ids[EXP_COMM_LABELS];
  unsigned ncomm_labels;
  struct exp_opstat ops[EXP_COMM_LABELS + 1][CS_OP_COUNT][EXP_SIZE_CLASSES];
  uint64_t records;      /* records the rank published (its ring's head, kept monotonic) */
  uint64_t invalid;      /* side records of an unknown type, series snapshots that fail the checks */
  uint64_t torn;         /* series snapshots skipped (an update in flight on every try) */
  uint64_t restarts;     /* series snapshots below the previous one (added afresh) */
  uint64_t drops;        /* the header's drop count (kept monotonic) */
  uint64_t hang_reports; /* CS_REC_HANG records */
  uint64_t sdc_checks, sdc_findings;
  /* detector window (ring buffer of the last EXP_DET_WINDOW op records) */
  struct cs_det_op det[EXP_DET_WINDOW];
  size_t det_n, det_next;
  struct exp_gaps gaps; /* its collectives' compute gaps across analyses (exporter_gaps.h) */
  struct cs_link_obs links[EXP_LINK_WINDOW];
  size_t link_n, link_next;
  struct exp_sdc_entry sdc[EXP_SDC_WINDOW];
  size_t sdc_n, sdc_next;
  /* live figures (exp_state_analyse) */
  bool exited;       /* closed or writer dead */
  int64_t exited_ns; /* when the exporter saw it exit */
  bool straggler, hung;
  double lateness_s, offset_s, hang_s;
  uint64_t pending;
  struct exp_health health;
  char gpu_uuid[96], pci_bus_id[32];        /* "" until the ring's writer published them */
  bool seen;                                /* found in the latest directory scan */
  char labels[2 * 2 * RING_TEXT_MAX + 320]; /* the rendered rank label set (exporter_metrics.c) */
  int labels_dev;
  bool labels_ident; /* the label set has the GPU's identity */
};

struct exp_skip {
  uint64_t dev, ino;
  char name[256];
  bool seen;
};

struct exp_linkpair {
  char src[RING_TEXT_MAX], dst[RING_TEXT_MAX], job[RING_TEXT_MAX];
  double gbps_p50, ref_gbps;
  bool slow;
};

/* why the HTTP endpoint turned a request or connection away (exporter_http.c counts; the
 * label of each: exporter_metrics.c) */
enum exp_bad_reason {
  EXP_BAD_BAD_REQUEST,    /* answered 400: malformed */
  EXP_BAD_NOT_FOUND,      /* answered 404: not /metrics */
  EXP_BAD_METHOD,         /* answered 405: not GET or HEAD */
  EXP_BAD_TOO_LARGE,      /* answered 413: a body */
  EXP_BAD_URI_TOO_LONG,   /* answered 414: the request line does not fit */
  EXP_BAD_HEADER_LARGE,   /* answered 431: the header fields do not fit */
  EXP_BAD_VERSION,        /* answered 505: an HTTP version other than 1.0 and 1.1 */
  EXP_BAD_SERVER_ERROR,   /* answered 5xx otherwise (500: no memory for the exposition) */
  EXP_BAD_REJECTED,       /* answered any other 4xx */
  EXP_BAD_HEADER_TIMEOUT, /* its request header was not complete within the deadline */
  EXP_BAD_EVICTED,        /* still waiting for its header when a new connection needed room */
  EXP_BAD_REFUSED,        /* a new connection while every slot in question was in a request */
  EXP_BAD_N
};

struct exp_state {
  pthread_mutex_t mu; /* held by the poller and by a scrape while it renders */
  char dir[512];
  double grace_s;
  FILE *log; /* one line per skipped ring, per dropped ring */
  struct exp_rank **v;
  size_t n;
  struct exp_skip *skips; /* files reported as skipped (by dev/ino), bounded */
  size_t nskips;
  uint64_t skipped_total, dropped_total, scrapes;
  uint64_t bad_requests[EXP_BAD_N]; /* the HTTP thread adds, a scrape reads (__atomic, no mutex) */
  struct exp_linkpair *pairs;
  size_t npairs;
  struct cs_det_params dp;
  struct cs_link_params lp;
  bool dirty;             /* records read since the last analysis */
  double analyse_every_s; /* the detectors run at most this often (in the poller) */
  int64_t last_analyse_ns;
  double last_poll_s;      /* duration of the latest poll */
  size_t last_render_len;  /* size of the latest exposition (the next one's first allocation) */
  struct cs_record *batch; /* EXP_READ_BATCH records: the poller's copy buffer */
};

int exp_state_init(struct exp_state *s, const char *dir, double grace_s, FILE *log);
void exp_state_free(struct exp_state *s);
/* Scan the directory, follow every ring, drop expired ones. Takes s->mu. */
void exp_state_poll(struct exp_state *s, int64_t now_ns);
/* Straggler, SDC and link figures from the windows (called with s->mu held; the poller
 * runs it when records arrived, at most every analyse_every_s). */
void exp_state_analyse(struct exp_state *s, int64_t now_ns);
/* The live figures every scrape reads from the ring headers (pending ops, hang seconds,
 * hung); cheap. Called with s->mu held. */
void exp_state_live(struct exp_state *s, int64_t now_ns);
int64_t exp_now_ns(void);

#endif
