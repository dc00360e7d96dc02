/* tests/sim/nvml/simhealth.h: the simulator's GPU and network health model, shared by the
 * simulated libnvidia-ml.so.1 (nvml.c: what NVML and sysfs report) and libnccl.so.2 (how much
 * slower a throttled or slower-model GPU runs its collectives). Parses the health kinds of
 * COLLSCOPE_SIM_FAULTS (throttle, ecc, xid, remap, nvlink, ib; other kinds are the NCCL
 * simulator's) and COLLSCOPE_SIM_GPU_MODEL. Internal to the simulator (hidden symbols). */
#ifndef SIMHEALTH_H
#define SIMHEALTH_H
#include <stddef.h>

enum sh_kind { SH_THROTTLE, SH_ECC, SH_XID, SH_REMAP, SH_NVLINK, SH_IB };
enum sh_reason { SH_R_POWER, SH_R_THERMAL, SH_R_HW_SLOWDOWN };

struct sh_fault {
  enum sh_kind kind;
  int rank;                  /* -1: not given */
  char host[64], dev[32];    /* ib */
  int port, link, reason, code, pending;
  long long seq;             /* -1: no seq (counters ramp over the job; a throttle from the start) */
  long long until;           /* throttle: ends once the rank ran collective `until` (-1: never) */
  double pct;
  long long corrected, uncorrected, crc, replay, recovery;
  long long symbol_error, link_downed, xmit_wait, cnp;
};

/* Parse once (thread safe); bad health entries are reported on stderr and ignored. */
void sh_init(void);
extern struct sh_fault *sh_faults;
extern int sh_nfaults;

/* The GPU model of a host (COLLSCOPE_SIM_GPU_MODEL), default "NVIDIA H100 80GB HBM3",
 * speed 1.0 (a slower model has speed < 1: its collectives take 1/speed as long). */
const char *sh_gpu_model(const char *host, double *speed);

/* Extra work of rank's collectives on host, in percent: throttle pct plus (1/speed - 1);
 * every throttle fault of the rank counts, whatever its seq window. */
double sh_slow_pct(int rank, const char *host);
/* The same once the rank ran collective seq: only the throttles active then. */
double sh_slow_pct_at(int rank, const char *host, long long seq);
/* Is throttle fault f active once its device ran collective seq (-1: none yet)? A throttle
 * with `seq=S` starts at collective S, one with `until=E` ends at collective E. */
int sh_throttle_active(const struct sh_fault *f, long long seq);

/* Any throttle fault or GPU model given (collective durations must be measured)? */
int sh_any_slow(void);

/* Is kind (the text before ':') a health kind this parser owns? */
int sh_is_health_kind(const char *kind, size_t len);

/* Counter value at elapsed_ms of a counter that rises by n over COLLSCOPE_SIM_HEALTH_RAMP_MS
 * (default 1000) from the start: the process's first read of a GPU counter (nvml.c; the reader's baseline), the
 * host's first sysfs update after one (ibsysfs.c). */
long long sh_ramp(long long n, double elapsed_ms);
#endif
