/* tools/report/report_health_internal.h: what the health section's two files share: the per rank
 * and per port figures built by tools/report/report_health.c (with the causes joined to findings),
 * and the helpers tools/report/report_health_json.c writes the section's JSON and text with. */
#ifndef COLLSCOPE_TOOLS_REPORT_HEALTH_INTERNAL_H
#define COLLSCOPE_TOOLS_REPORT_HEALTH_INTERNAL_H
#include "report_health.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NVL_MAX 64
#define XID_MAX 16

struct rank_h {
  const struct cs_dumpfile *f;
  int rank;
  const char *host, *gpu_name, *gpu_uuid, *bus;
  int arch; /* NVML architecture number, -1 unknown */
  size_t samples, reason_samples, n_power, n_thermal, n_hw;
  double sm_med; /* -1 unknown */
  int64_t power_max, temp_max;
  int64_t ecc_c, ecc_u, pcie; /* -1: never sampled */
  bool remap_pending, remap_failure, have_remap;
  int64_t nvl[NVL_MAX][3]; /* crc, replay, recovery */
  bool nvl_any;
  size_t nxid;
  int64_t xid[XID_MAX][2]; /* code, t_ns */
};
struct port_h {
  const char *host, *dev, *state;
  int port;
  double rate;
  int64_t c[CS_IB_NCOUNTERS]; /* -1: never sampled */
};
struct model_count {
  const char *name;
  size_t ranks;
};
struct report_health {
  struct rank_h *ranks;
  size_t nranks;
  struct port_h *ports;
  size_t nports;
  struct model_count *models; /* each GPU model once, with how many ranks run it */
  size_t nmodels;
  const char *major_model; /* the model more ranks run than any other, NULL when none / tie */
  size_t major_count, model_ranks;
  int max_arch;               /* the newest architecture in the job, -1 unknown */
  const char *max_arch_model; /* a model of that architecture, and how many ranks run it */
  size_t max_arch_count;
};

/* the IB counters that count errors (docs/health.md) */
#define RH_IB_ERROR_COUNTERS 9
extern const int rh_ib_error_counters[RH_IB_ERROR_COUNTERS];
/* the rank's figures, NULL when the set has no such rank */
const struct rank_h *rh_rank_of(const struct report_health *h, int rank);
/* the sum of a host's ports' counters in which[0..n) */
int64_t rh_host_sum(const struct report_health *h, const char *host, const int *which, size_t n);
/* "mlx5_1/1: symbol_error 40, link_downed 2" for a host's ports with counts in which */
void rh_ports_detail(const struct report_health *h, const char *host, const int *which, size_t n, char *b, size_t cap);

#endif
