/* tests/sim/nvml/nvml.c: the simulated libnvidia-ml.so.1. The NVML functions collscope's
 * health sampler uses, with NVML's signatures and return codes (declared here from NVML's
 * published API, nvml.h), answering for the simulated GPUs of this process's simulated host
 * (COLLSCOPE_HOSTNAME; a device is found by the PCI bus id libcuda.so.1 gives it). Health
 * faults (simhealth.h) change what a GPU reports; COLLSCOPE_SIM_NVML_FAIL makes functions
 * fail. nvmlEventSetWait_v2 also brings the simulated host's InfiniBand sysfs tree (ibsysfs.c)
 * up to date.
 * Time: on the wall clock a GPU reports what it has run so far (its last collective's seq) and
 * its counters ramp over CLOCK_MONOTONIC. On the modeled clock (COLLSCOPE_SIM_CLOCK=model) it
 * reports as of the calling thread's modeled time (CLOCK_REALTIME there): the collectives that
 * had ended by then (simcuda_seq_at), counters ramped over modeled time, so what a sample
 * holds follows from its own stamp, never from the host's scheduling. */
#include "simhealth.h"
#include "simcuda.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NV_API __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_TIMEOUT = 10, NVML_ERROR_UNKNOWN = 999,
};
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ULL
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_CLOCK_GRAPHICS 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_GPU 0
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_AGGREGATE_ECC 1
#define NVML_NVLINK_ERROR_DL_REPLAY 0
#define NVML_NVLINK_ERROR_DL_RECOVERY 1
#define NVML_NVLINK_ERROR_DL_CRC_FLIT 2
#define NVML_NVLINK_ERROR_DL_CRC_DATA 3
#define NVML_DEVICE_ARCH_AMPERE 7
#define NVML_DEVICE_ARCH_HOPPER 9
/* clock event (throttle) reasons */
#define R_SW_POWER_CAP 0x4ULL
#define R_HW_SLOWDOWN 0x8ULL
#define R_SW_THERMAL 0x20ULL
#define R_HW_THERMAL 0x40ULL

struct nvmlDevice_st { int index; };
static struct nvmlDevice_st devs[64];
struct nvmlEventSet_st { unsigned long long mask[64]; int delivered[64][8]; };

static _Atomic int inited;
static _Atomic int ramp_started;   /* a GPU counter was read (the reader's baseline): GPU and sysfs
                                    * counters rise from then on (t0) */
static struct timespec t0;
static uint64_t t0_model;          /* the ramp's start on the modeled clock */
static const char *fail_list;

void sh_ibsysfs_tick(void);   /* ibsysfs.c */

static int fails(const char *fn) {
  if (!fail_list || !*fail_list) return 0;
  if (!strcmp(fail_list, "all") && strcmp(fn, "nvmlInit_v2") && strcmp(fn, "nvmlShutdown") &&
      strcmp(fn, "nvmlErrorString")) return 1;
  size_t n = strlen(fn);
  for (const char *p = strstr(fail_list, fn); p; p = strstr(p + 1, fn))
    if ((p == fail_list || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
  return 0;
}
#define ENTER(fn) do { if (fails(fn)) return NVML_ERROR_UNKNOWN; \
                       if (!atomic_load(&inited)) return NVML_ERROR_UNINITIALIZED; } while (0)
#define DEV(d) do { if (!(d) || (d) < devs || (d) >= devs + 64) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

static double elapsed_ms(void) {
  if (simcuda_model_on()) {
    uint64_t now = simcuda_model_now();
    return now > t0_model ? (double)(now - t0_model) / 1e6 : 0;
  }
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
}
/* the rank a fault's rank= names for this device: RANK when set, else the device index */
static int rank_of(const struct nvmlDevice_st *d) {
  const char *r = getenv("RANK");
  return r && *r ? atoi(r) : d->index;
}
/* the last collective the device had run: so far (wall clock), or by the caller's modeled time */
static long long dev_seq(int index) {
  return simcuda_model_on() ? simcuda_seq_at(index, simcuda_model_now()) : simcuda_last_seq(index);
}
/* a counter that rises by n over the job, or jumps to n once the device reached seq */
static long long counter(const struct nvmlDevice_st *d, long long n, long long seq) {
  if (seq >= 0) return dev_seq(d->index) >= seq ? n : 0;
  return sh_ramp(n, elapsed_ms());
}
static void begin_ramp(void) {
  if (atomic_load(&ramp_started)) return;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  t0_model = simcuda_model_on() ? simcuda_model_now() : 0;
  atomic_store(&ramp_started, 1);
}

NV_API nvmlReturn_t nvmlInit_v2(void) {
  if (!fail_list) fail_list = getenv("COLLSCOPE_SIM_NVML_FAIL");
  if (fails("nvmlInit_v2")) return NVML_ERROR_UNKNOWN;
  sh_init();
  if (!atomic_exchange(&inited, 1))
    for (int i = 0; i < 64; i++) devs[i].index = i;
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlShutdown(void) {
  if (!atomic_load(&inited)) return NVML_ERROR_UNINITIALIZED;
  return NVML_SUCCESS;
}
NV_API const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
  case NVML_SUCCESS: return "Success";
  case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
  case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
  case NVML_ERROR_NOT_FOUND: return "Not Found";
  case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
  case NVML_ERROR_TIMEOUT: return "Timeout";
  default: return "Unknown Error";
  }
}

NV_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *out) {
  ENTER("nvmlDeviceGetHandleByPciBusId_v2");
  if (!bus || !out) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < simcuda_device_count() && i < 64; i++) {
    char b[32];
    simcuda_pci_bus_id(i, b, sizeof b);
    if (!strcasecmp(b, bus) || (strlen(bus) > 5 && !strcasecmp(b + 5, bus))) {
      *out = &devs[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t put_str(char *buf, unsigned len, const char *s) {
  if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(s) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(buf, s, strlen(s) + 1);
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len) {
  ENTER("nvmlDeviceGetName"); DEV(d);
  return put_str(name, len, sh_gpu_model(simcuda_hostname(), NULL));
}
static unsigned host_hash(void) {
  unsigned h = 2166136261u;
  for (const char *p = simcuda_hostname(); *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  return h;
}
NV_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len) {
  ENTER("nvmlDeviceGetUUID"); DEV(d);
  unsigned char b[16]; /* libcuda.so.1's cuDeviceGetUuid bytes, in NVML's text form */
  simcuda_gpu_uuid(d->index, b);
  char s[96];
  snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
           b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return put_str(uuid, len, s);
}
NV_API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *serial, unsigned int len) {
  ENTER("nvmlDeviceGetSerial"); DEV(d);
  char s[32];
  snprintf(s, sizeof s, "%010u%02d", host_hash() % 1000000000u, d->index);
  return put_str(serial, len, s);
}
static int is_a100(void) { return strstr(sh_gpu_model(simcuda_hostname(), NULL), "A100") != NULL; }
NV_API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int *arch) {
  ENTER("nvmlDeviceGetArchitecture"); DEV(d);
  if (!arch) return NVML_ERROR_INVALID_ARGUMENT;
  *arch = is_a100() ? NVML_DEVICE_ARCH_AMPERE : NVML_DEVICE_ARCH_HOPPER;
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw) {
  ENTER("nvmlDeviceGetPowerManagementLimit"); DEV(d);
  if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
  *mw = is_a100() ? 400000 : 700000;
  return NVML_SUCCESS;
}
static int throttled(const struct nvmlDevice_st *d, int reason) {
  for (int i = 0; i < sh_nfaults; i++)
    if (sh_faults[i].kind == SH_THROTTLE && sh_faults[i].rank == rank_of(d) &&
        (reason < 0 || sh_faults[i].reason == reason) && sh_throttle_active(&sh_faults[i], dev_seq(d->index)))
      return 1;
  return 0;
}
static unsigned long long reasons(const struct nvmlDevice_st *d) {
  unsigned long long r = 0;
  if (throttled(d, SH_R_POWER)) r |= R_SW_POWER_CAP;
  if (throttled(d, SH_R_THERMAL)) r |= R_SW_THERMAL | R_HW_THERMAL;
  if (throttled(d, SH_R_HW_SLOWDOWN)) r |= R_HW_SLOWDOWN;
  return r;
}
NV_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r) {
  ENTER("nvmlDeviceGetCurrentClocksEventReasons"); DEV(d);
  if (!r) return NVML_ERROR_INVALID_ARGUMENT;
  *r = reasons(d);
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r) {
  ENTER("nvmlDeviceGetCurrentClocksThrottleReasons"); DEV(d);
  if (!r) return NVML_ERROR_INVALID_ARGUMENT;
  *r = reasons(d);
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
  ENTER("nvmlDeviceGetClockInfo"); DEV(d);
  if (!mhz || type < 0 || type > 3) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned sm = is_a100() ? 1410 : 1980, mem = is_a100() ? 1593 : 2619;
  if (throttled(d, -1)) sm = sm * 6 / 10;
  *mhz = type == NVML_CLOCK_MEM ? mem : sm;
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
  ENTER("nvmlDeviceGetPowerUsage"); DEV(d);
  if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned lim = is_a100() ? 400000 : 700000;
  *mw = throttled(d, SH_R_POWER) ? lim : lim * 6 / 10;
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *c) {
  ENTER("nvmlDeviceGetTemperature"); DEV(d);
  if (!c || sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *c = throttled(d, SH_R_THERMAL) ? 91 : 52;
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter_type, unsigned long long *n) {
  ENTER("nvmlDeviceGetTotalEccErrors"); begin_ramp(); DEV(d);
  if (!n || type < 0 || type > 1 || counter_type < 0 || counter_type > 1) return NVML_ERROR_INVALID_ARGUMENT;
  long long v = 0;
  for (int i = 0; i < sh_nfaults; i++) {
    const struct sh_fault *f = &sh_faults[i];
    if (f->kind != SH_ECC || f->rank != rank_of(d)) continue;
    v += counter(d, type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? f->corrected : f->uncorrected, f->seq);
  }
  *n = (unsigned long long)v;
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
                                              unsigned int *pending, unsigned int *failure) {
  ENTER("nvmlDeviceGetRemappedRows"); DEV(d);
  if (!corr || !unc || !pending || !failure) return NVML_ERROR_INVALID_ARGUMENT;
  *corr = *unc = *pending = *failure = 0;
  for (int i = 0; i < sh_nfaults; i++)
    if (sh_faults[i].kind == SH_REMAP && sh_faults[i].rank == rank_of(d) && sh_faults[i].pending) {
      *pending = 1;
      *unc = 1;
    }
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *active) {
  ENTER("nvmlDeviceGetNvLinkState"); DEV(d);
  if (!active || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  *active = 1;
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter_kind,
                                                    unsigned long long *v) {
  ENTER("nvmlDeviceGetNvLinkErrorCounter"); begin_ramp(); DEV(d);
  if (!v || link >= NVML_NVLINK_MAX_LINKS || counter_kind < 0 || counter_kind > 4) return NVML_ERROR_INVALID_ARGUMENT;
  long long x = 0;
  for (int i = 0; i < sh_nfaults; i++) {
    const struct sh_fault *f = &sh_faults[i];
    if (f->kind != SH_NVLINK || f->rank != rank_of(d) || f->link != (int)link) continue;
    long long n = counter_kind == NVML_NVLINK_ERROR_DL_REPLAY ? f->replay
                : counter_kind == NVML_NVLINK_ERROR_DL_RECOVERY ? f->recovery
                : counter_kind == NVML_NVLINK_ERROR_DL_CRC_FLIT ? f->crc : 0;
    x += counter(d, n, f->seq);
  }
  *v = (unsigned long long)x;
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *v) {
  ENTER("nvmlDeviceGetPcieReplayCounter"); begin_ramp(); DEV(d);
  if (!v) return NVML_ERROR_INVALID_ARGUMENT;
  *v = 0;
  return NVML_SUCCESS;
}

/* XID events: a fault's event is delivered once, after its device reached the fault's seq */
NV_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
  ENTER("nvmlEventSetCreate");
  if (!set) return NVML_ERROR_INVALID_ARGUMENT;
  *set = calloc(1, sizeof **set);
  return *set ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}
NV_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
  ENTER("nvmlDeviceRegisterEvents"); DEV(d);
  if (!set) return NVML_ERROR_INVALID_ARGUMENT;
  if (types & ~NVML_EVENT_TYPE_XID_CRITICAL_ERROR) return NVML_ERROR_NOT_SUPPORTED;
  set->mask[d->index] |= types;
  return NVML_SUCCESS;
}
NV_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
  ENTER("nvmlEventSetWait_v2");
  if (!set || !data) return NVML_ERROR_INVALID_ARGUMENT;
  /* the last call of collscope's GPU sample, just before it reads the ports: the host's
   * sysfs counters are brought up to date here (from the first GPU counter read on) */
  if (atomic_load(&ramp_started)) sh_ibsysfs_tick();
  for (int di = 0; di < 64; di++) {
    if (!(set->mask[di] & NVML_EVENT_TYPE_XID_CRITICAL_ERROR)) continue;
    int k = 0;
    for (int i = 0; i < sh_nfaults && k < 8; i++) {
      const struct sh_fault *f = &sh_faults[i];
      if (f->kind != SH_XID || f->rank != rank_of(&devs[di])) continue;
      if (!set->delivered[di][k] && dev_seq(di) >= f->seq) {
        set->delivered[di][k] = 1;
        memset(data, 0, sizeof *data);
        data->device = &devs[di];
        data->eventType = NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
        data->eventData = (unsigned long long)f->code;
        return NVML_SUCCESS;
      }
      k++;
    }
  }
  (void)timeout_ms;   /* collscope polls with 0: never blocks here */
  return NVML_ERROR_TIMEOUT;
}
NV_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (!atomic_load(&inited)) return NVML_ERROR_UNINITIALIZED;
  free(set);
  return NVML_SUCCESS;
}
