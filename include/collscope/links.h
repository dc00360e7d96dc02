/* include/collscope/links.h: per host pair network figures from the NCCL_NET wrapper's link
 * records (shim/net_plugin.c -> dump "link" lines), and the slow-pair finder. Pure C, no I/O;
 * used by `collscope report` (tools/cmd_report.c), which resolves hosts from the dump files.
 *
 * Definitions (the contract of the report's `links` / `slow_links` sections):
 *  - An observation is one link record: one connection over one interval, seen from its
 *    sending end (send = true: post-to-done of isend) or its receiving end (irecv post to
 *    done, which also counts time waiting for the sender). gbps_p50/p10 are byte-weighted
 *    percentiles of the interval's per-message throughput.
 *  - A pair is (src_host, dst_host), directed. Its figures come from its send-side
 *    observations when it has any (side "send"), else from the receive side ("recv").
 *    bytes/msgs/busy_us: sums over those observations. gbps_p50: the byte-weighted median of
 *    the observations' p50; gbps_p10: the byte-weighted median of their p10.
 *  - Slow pair: a pair with known hosts and >= min_bytes, among at least 2 such pairs, whose
 *    gbps_p50 is below slow_frac x the median gbps_p50 of the OTHER such pairs (ref_gbps_p50;
 *    lower median). Defaults: slow_frac 0.5 (COLLSCOPE_LINK_SLOW_FRAC), min_bytes 65536
 *    (COLLSCOPE_LINK_MIN_BYTES).
 *  - Slow NIC (cs_links_slow_nics, analysis/link_nics.c): a host whose NIC carries all its
 *    inter-host traffic slower slows every pair with an end on it, in and out, alike, while no
 *    single pair is far below the rest. Over the pairs measured on their send side with
 *    >= min_bytes, each pair's mean throughput (bytes x 8 / busy time: exact where the p50 of a
 *    4-per-octave histogram moves in 19 % steps) in logs: a host with >= 2 such pairs, and >= 2
 *    pairs without it, is slow when its fastest pair is below the median of the pairs without
 *    it by at least ln(1 + nic_frac) (a candidate; a single slow pair is a slow link, its ends'
 *    other pairs healthy) and by CS_LINK_NIC_Z sigmas of the pairs that touch no candidate
 *    (1.2533 x their mean absolute deviation from their median, in logs; >= 2 such pairs).
 *    Defaults: nic_frac 0.1 (COLLSCOPE_LINK_NIC_FRAC). Cost: O(P log P + sum over hosts of
 *    their pairs), P pairs. */
#ifndef COLLSCOPE_LINKS_H
#define COLLSCOPE_LINKS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cs_link_obs {
  const char *src_host, *dst_host; /* NULL when unknown */
  int src_rank, dst_rank;          /* -1 when unknown */
  bool send;
  uint64_t bytes, msgs;
  double busy_us, gbps_p50, gbps_p10;
};

struct cs_link_pair {
  const char *src_host, *dst_host; /* NULL when unknown (never slow) */
  bool from_send;                  /* figures from the send side */
  size_t nobs;                     /* observations used */
  uint64_t bytes, msgs;
  double busy_us, gbps_p50, gbps_p10;
  bool slow;
  double ref_gbps_p50; /* median p50 of the other eligible pairs (0 if none) */
};

struct cs_link_params {
  double slow_frac;
  uint64_t min_bytes;
  double nic_frac; /* a slow NIC's least deficit against the other pairs (0.1: 10 %) */
};
#define CS_LINK_NIC_Z 4.0

struct cs_link_nic {
  const char *host;   /* the caller's string (a pair's) */
  size_t pairs;       /* its pairs judged (in and out) */
  size_t others;      /* the pairs without it */
  double gbps;        /* the median mean throughput of its pairs */
  double others_gbps; /* ... of the pairs without it */
  double deficit;     /* ln(others_gbps / its fastest pair's Gbit/s) */
  double sigma;       /* the sigma of ln(Gbit/s) over the pairs touching no candidate */
};
void cs_link_params_default(struct cs_link_params *p);
/* COLLSCOPE_LINK_SLOW_FRAC (0 < f < 1), COLLSCOPE_LINK_MIN_BYTES; returns -1 (and keeps the
 * default for it) when a value is malformed */
int cs_link_params_env(struct cs_link_params *p);

/* Pairs sorted by src_host, dst_host (unknown last). *out is malloc'ed (free it); returns 0,
 * -1 when out of memory. Host strings are the caller's (not copied). */
int cs_links_aggregate(const struct cs_link_obs *v, size_t n, const struct cs_link_params *p,
                       struct cs_link_pair **out, size_t *nout);
/* the slow NICs among the aggregated pairs (definitions above), sorted by host; *out malloc'ed
 * (free it), host strings the pairs'. 0, or -1 out of memory */
int cs_links_slow_nics(const struct cs_link_pair *pairs, size_t np, const struct cs_link_params *p,
                       struct cs_link_nic **out, size_t *nout);

#endif
