/* include/collscope/record.h: the fixed-size in-memory record every collscope writer
 * produces (one per NCCL op, memcpy or communicator event) and every in-process reader
 * (harvest thread, dump writer, later the shm ring) consumes. Field meanings match the
 * JSONL schema in DESIGN.md ("Dump files"). */
#ifndef COLLSCOPE_RECORD_H
#define COLLSCOPE_RECORD_H
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum cs_rec_type { CS_REC_OP = 1,
                   CS_REC_XFER = 2,
                   CS_REC_COMM = 3,
                   /* 4 is CS_REC_HANG (ring.h) */
                   CS_REC_LINK = 5,  /* NCCL_NET wrapper (shim/net_plugin.c): one connection's figures over an
                                    * interval, a struct cs_link_record (cs_link_pack / cs_link_unpack) */
                   CS_REC_HEALTH = 6 /* health sampler (hooks/health.c), stats ring only: op = CS_HEALTH_F_*
                                      * flags of the sample, count = NVML clock event reasons, end_ns = time */
};
/* CS_REC_HEALTH flags (`collscope top` shows them per rank) */
enum { CS_HEALTH_F_POWER = 1,
       CS_HEALTH_F_THERMAL = 2,
       CS_HEALTH_F_HW_SLOWDOWN = 4,
       CS_HEALTH_F_NVLINK = 8,
       CS_HEALTH_F_ECC = 16,
       CS_HEALTH_F_XID = 32,
       CS_HEALTH_F_IB = 64,
       CS_HEALTH_F_PCIE = 128 };

enum cs_timing {
  CS_TIMING_GPU_EVENT = 0, /* start/end from CUDA events */
  CS_TIMING_CAPTURED = 1,  /* stream under graph capture: enqueue time only */
  CS_TIMING_HOST = 2,      /* no GPU timing available: enqueue time only */
  CS_TIMING_ERROR = 3,     /* the call failed; nothing enqueued */
  CS_TIMING_PENDING = 4,   /* internal: events not yet harvested */
  CS_TIMING_HOST_SPAN = 5, /* synchronous call: start/end from the host clock around it */
  CS_TIMING_PROFILER = 6,  /* start/end from NCCL's profiler plugin KernelCh timer stamps */
  /* CUDA-event path, a small collective outside the event sample (COLLSCOPE_EVENT_SAMPLE):
   * enqueue time only, no events */
  CS_TIMING_SAMPLED_OUT = 7,
};
/* algo / proto reported by NCCL's profiler plugin (0 = not known) */
enum cs_algo { CS_ALGO_NONE,
               CS_ALGO_TREE,
               CS_ALGO_RING,
               CS_ALGO_COLLNET_DIRECT,
               CS_ALGO_COLLNET_CHAIN,
               CS_ALGO_NVLS,
               CS_ALGO_NVLS_TREE,
               CS_ALGO_PAT,
               CS_ALGO_OTHER };
enum cs_proto { CS_PROTO_NONE,
                CS_PROTO_LL,
                CS_PROTO_LL128,
                CS_PROTO_SIMPLE,
                CS_PROTO_OTHER };

/* The dump-file name of a timing source (one table for every writer). */
static inline const char *cs_timing_name(int t) {
  switch (t) {
  case CS_TIMING_GPU_EVENT: return "gpu_event";
  case CS_TIMING_CAPTURED: return "captured";
  case CS_TIMING_ERROR: return "error";
  case CS_TIMING_HOST_SPAN: return "host_span";
  case CS_TIMING_PROFILER: return "profiler";
  case CS_TIMING_SAMPLED_OUT: return "sampled_out";
  default: return "host";
  }
}

enum cs_comm_event { CS_COMM_INIT,
                     CS_COMM_SPLIT,
                     CS_COMM_FINALIZE,
                     CS_COMM_DESTROY,
                     CS_COMM_ABORT };

enum cs_xfer_kind { CS_XFER_HTOH,
                    CS_XFER_HTOD,
                    CS_XFER_DTOH,
                    CS_XFER_DTOD,
                    CS_XFER_DEFAULT,
                    CS_XFER_PEER };

struct cs_record {
  uint8_t type;   /* enum cs_rec_type */
  uint8_t op;     /* enum cs_op (schema.h) */
  uint8_t timing; /* enum cs_timing */
  uint8_t captured;
  uint8_t owns_events; /* last record sharing ev_start/ev_end returns them to the pool */
  uint8_t event;       /* CS_REC_COMM: enum cs_comm_event; CS_REC_XFER: enum cs_xfer_kind */
  uint8_t async;       /* CS_REC_XFER: async API */
  uint8_t api;         /* CS_REC_XFER: index into the cudart table */
  int8_t dtype;        /* ncclDataType_t, -1 for none */
  /* silent-data-corruption checks (hooks/sdc_check.c); valid when sdc_checked != 0 */
  uint8_t sdc_checked; /* bit 0: fingerprint and out_sum valid, bit 1: in_sum/in_abs valid */
  uint8_t sdc_ctx;     /* internal: 1 + hooks/sdc_check.c context index while results are pending */
  uint8_t prof_probe;  /* internal: COLLSCOPE_TIMING=auto probation op, timed by CUDA events
                        * AND the profiler plugin (1; 2 once the plugin's stamps are in) */
  uint8_t comm_nb;     /* internal: its communicator is non-blocking (NCCL launches its
                        * work on its own thread: the profiler plugin cannot be matched) */
  /* NCCL profiler plugin (shim/profiler.c); algo/proto/nchannels 0 when not known */
  uint8_t algo;  /* enum cs_algo */
  uint8_t proto; /* enum cs_proto */
  uint8_t nchannels;
  int16_t device;
  int16_t status;      /* return code of the call (ncclResult_t, cudaError_t, CUresult) */
  uint8_t prof_want;   /* internal: 1 while the op waits for the profiler to time it */
  uint8_t spare;       /* (zero) */
  uint16_t graph_node; /* internal: 1 + hooks/graph_timing.c span slot of a captured op, 0 when none */
  int32_t redop;       /* ncclRedOp_t, -1 for none */
  int32_t comm_size;
  int32_t comm_rank;
  int32_t root;
  int32_t peer;
  uint32_t sdc_slot;  /* internal: 1 + result slot while pending, 0 when none */
  uint32_t prof_slot; /* internal: 1 + shim/profiler.c event slot, 0 when none */
  uint32_t prof_gen;  /* internal: that slot's generation (its low 32 bits) */
  /* groups (hooks/timing.c): how many ops of this record's group share its GPU span (one event
   * pair on their stream brackets all of them), 0 when the span is the op's own */
  uint32_t group_ops;
  /* a CUDA graph replay (hooks/graph_timing.c): its number, 1 for the executable's first
   * launch, 0 when the op is eager */
  uint32_t replay;
  uint64_t comm_id;
  union {
    uint64_t parent_id; /* CS_REC_COMM split/shrink */
    uint64_t graph;     /* CS_REC_OP, a replay: its executable graph's id (0 for an eager op) */
  };
  uint64_t seq;
  uint64_t count;
  uint64_t bytes;
  uint64_t group;
  uint64_t stream;
  uint64_t site;      /* caller's return address */
  int64_t enqueue_ns; /* CLOCK_REALTIME */
  int64_t start_ns;   /* CLOCK_REALTIME, aligned from the GPU clock */
  int64_t end_ns;
  uint64_t fingerprint; /* order-independent hash of the output bytes */
  double in_sum;        /* fp64 sum of this rank's input (before the op) */
  double in_abs;        /* fp64 sum of |input| (tolerance) */
  double out_sum;       /* fp64 sum of this rank's output */
  uint64_t ev_start;    /* internal: CUevent handles, 0 when none */
  uint64_t ev_end;
  uint64_t ctx;          /* internal: CUcontext of the events */
  int64_t prof_start_ns; /* internal: a probation op's profiler-timed span (CLOCK_REALTIME) */
  int64_t prof_end_ns;
};
/* 14 lines of 16 bytes: the hot path zeroes it and copies it into the record queue
 * (hooks/timing.h cs_record_zero, stats/queue.h); each line more costs every call */
_Static_assert(sizeof(struct cs_record) == 224, "struct cs_record: keep it 224 bytes (the hot path's cost)");

/* A CS_REC_LINK record's figures: one NCCL_NET connection over [t0_ns, t_ns], as the NCCL_NET
 * wrapper measures them (shim/net_plugin_harvest.c) and the dump's "link" line and the
 * exporter read them. The queue and the stats ring carry every record in the fixed-size
 * struct cs_record; cs_link_pack() and cs_link_unpack() are the one place that says which of
 * its fields hold which figure. */
struct cs_link_record {
  bool recv;                 /* the receiving end (irecv); else the sending end (isend) */
  bool closed;               /* the connection's last record */
  int32_t rank;              /* this process's global rank */
  int32_t peer;              /* the peer's global rank, -1 when unknown (receiving end) */
  int32_t dev;               /* the net plugin's device index */
  uint64_t token;            /* the connection token that joins both ends across files, 0 when none */
  uint64_t msgs, bytes;      /* over the interval */
  uint64_t busy_ns;          /* time with a message in flight */
  uint64_t max_inflight;     /* most messages in flight at once */
  double gbps_p50, gbps_p10; /* byte-weighted percentiles of per-message Gbit/s */
  double gbps_mean;          /* bytes over busy time, Gbit/s */
  int64_t t0_ns, t_ns;       /* the interval, CLOCK_REALTIME */
};

static inline void cs_link_pack(const struct cs_link_record *l, struct cs_record *r) {
  memset(r, 0, sizeof *r);
  r->type = CS_REC_LINK;
  r->timing = CS_TIMING_HOST;
  r->event = l->closed;
  r->root = l->recv;
  r->comm_rank = l->rank;
  r->peer = l->peer;
  r->device = l->dev;
  r->comm_id = l->token;
  r->count = l->msgs;
  r->bytes = l->bytes;
  r->stream = l->busy_ns;
  r->seq = l->max_inflight;
  r->in_sum = l->gbps_p50;
  r->in_abs = l->gbps_p10;
  r->out_sum = l->gbps_mean;
  r->start_ns = l->t0_ns;
  r->end_ns = r->enqueue_ns = l->t_ns;
}

static inline void cs_link_unpack(const struct cs_record *r, struct cs_link_record *l) {
  l->recv = r->root != 0;
  l->closed = r->event != 0;
  l->rank = r->comm_rank;
  l->peer = r->peer;
  l->dev = r->device;
  l->token = r->comm_id;
  l->msgs = r->count;
  l->bytes = r->bytes;
  l->busy_ns = r->stream;
  l->max_inflight = r->seq;
  l->gbps_p50 = r->in_sum;
  l->gbps_p10 = r->in_abs;
  l->gbps_mean = r->out_sum;
  l->t0_ns = r->start_ns;
  l->t_ns = r->end_ns;
}

#endif
