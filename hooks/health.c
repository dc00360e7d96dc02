/* hooks/health.c: the GPU half of the health sampler (hooks/health.h). NVML is loaded at run
 * time (dlopen COLLSCOPE_LIBNVML, default libnvidia-ml.so.1; nothing links it) on the harvest
 * thread; the functions and constants used are declared from NVML's published API in
 * hooks/health_nvml.h.
 * The GPU is the first communicator's device, found by its PCI bus id. Each field has its
 * own switch: a function that is missing or fails turns off that field alone, with one INFO
 * line; NVML missing or nvmlInit failing turns off the GPU half (one INFO line).
 * Time: samples are paced and stamped on CLOCK_REALTIME, the clock of the op records they are
 * joined with (docs/health.md "Sampling"): the first as soon as the device is known, each next
 * one a period after the last, looked for once a harvest pass and as each communicator record
 * and each record whose GPU work ended about then is written, so the samples follow the job's
 * timeline. */
#include "hooks/health.h"
#include "hooks/health_nvml.h"
#include "hooks/cuda_driver.h"
#include "hooks/gpu_ident.h"
#include "stats/core.h"
#include "stats/dump_writer.h"
#include "stats/ring_writer.h"
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVML's API, the part collscope uses: hooks/health_nvml.h (checked against nvml.h by
 * scripts/check-nvml-abi.sh) */
static struct {
#define NV_MEMBER(fn, name, params) cs_nvml_##name##_fn name;
  CS_NVML_FUNCTIONS(NV_MEMBER)
#undef NV_MEMBER
} nv;

/* the fields, each with its own switch */
enum field { F_NAME,
             F_UUID,
             F_SERIAL,
             F_ARCH,
             F_PLIMIT,
             F_REASONS,
             F_CLOCKS,
             F_POWER,
             F_TEMP,
             F_ECC,
             F_REMAP,
             F_NVLINK,
             F_PCIE,
             F_XID,
             F_COUNT };
static const char *const field_name[F_COUNT] = {"gpu name", "uuid", "serial", "architecture", "power limit",
                                                "clock event reasons", "clocks", "power", "temperature", "ECC counts", "row remapping", "NVLink",
                                                "PCIe replays", "XID events"};
static bool on[F_COUNT];

static enum { ST_NEW,
              ST_READY,
              ST_OFF } st;
static int64_t period_ns, next_ns;
static int dev_index = -1;
static cs_nvml_device_t dev;
static cs_nvml_event_set_t evset;
static char gpu_name[96], gpu_uuid[96], gpu_serial[64], bus_id[32];
static unsigned gpu_arch, gpu_plimit;
static bool have_base;
static unsigned long long base_ecc[2], base_nvl[CS_NVML_NVLINK_MAX_LINKS][3];
static unsigned base_pcie;
static int nlinks;
static unsigned sample_flags;         /* CS_HEALTH_F_* of the sample being taken */
static struct cs_ring_health_vals hv; /* the stats ring's copy: gauges as sampled, counters as totals */
static unsigned long long sample_reasons;

/* The rank's own cause of slowness, for the online exchange's straggler reports (read on
 * another thread): over the last RECENT GPU samples, a throttle reason active in >= 20% of
 * them, NVLink or PCIe errors in any. */
#define RECENT 16
#define CAUSE_REASONS (CS_HEALTH_F_POWER | CS_HEALTH_F_THERMAL | CS_HEALTH_F_HW_SLOWDOWN)
#define CAUSE_ERRORS (CS_HEALTH_F_NVLINK | CS_HEALTH_F_PCIE)
static unsigned char recent_flags[RECENT];
static unsigned nrecent;
static _Atomic unsigned cause_now;

static void note_cause(unsigned flags) {
  recent_flags[nrecent++ % RECENT] = (unsigned char)flags;
  unsigned n = nrecent < RECENT ? nrecent : RECENT, cause = 0;
  for (unsigned bit = 1; bit <= CAUSE_REASONS; bit <<= 1) {
    if (!(bit & CAUSE_REASONS)) continue;
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) k += (recent_flags[i] & bit) != 0;
    if (5 * k >= n) cause |= bit;
  }
  for (unsigned i = 0; i < n; i++) cause |= recent_flags[i] & CAUSE_ERRORS;
  atomic_store_explicit(&cause_now, cause, memory_order_relaxed);
}
unsigned cs_health_cause(void) { return atomic_load_explicit(&cause_now, memory_order_relaxed); }

const char *cs_health_cause_text(unsigned cause, char *buf, size_t cap) {
  static const struct {
    unsigned bit;
    const char *name;
  } names[] = {{CS_HEALTH_F_POWER, "power_cap"}, {CS_HEALTH_F_THERMAL, "thermal"}, {CS_HEALTH_F_HW_SLOWDOWN, "hw_slowdown"}, {CS_HEALTH_F_NVLINK, "nvlink_errors"}, {CS_HEALTH_F_PCIE, "pcie_replay"}};
  size_t len = 0;
  if (cap) buf[0] = 0;
  for (size_t i = 0; i < sizeof names / sizeof *names && len < cap; i++)
    if (cause & names[i].bit) len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? "," : "", names[i].name);
  return buf;
}

static void field_off(enum field f, const char *fn, int rc) {
  if (!on[f]) return;
  on[f] = false;
  if (rc < 0)
    cs_log(CS_LOG_INFO, "health: NVML has no %s: %s not sampled", fn, field_name[f]);
  else
    cs_log(CS_LOG_INFO, "health: %s returned %d: %s not sampled", fn, rc, field_name[f]);
}

void cs_sb_printf(struct cs_strbuf *b, const char *fmt, ...) {
  if (b->len >= b->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  b->len = (size_t)n >= b->cap - b->len ? b->cap : b->len + (size_t)n;
}
/* a JSON string of NVML's text (printable ASCII kept, other bytes '?') */
static void sb_str(struct cs_strbuf *b, const char *s) {
  char t[128];
  size_t n = 0;
  for (; *s && n < sizeof t - 1; s++) t[n++] = (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\') ? *s : '?';
  t[n] = 0;
  cs_sb_printf(b, "\"%s\"", t);
}

#define SYM(member, name) (*(void **)&nv.member = dlsym(lib, name))

/* the communicator's device: the first registered communicator's (hooks/gpu_ident.c's, when
 * its record was seen; else the communicator table's) */
static void find_dev(void *comm, struct cs_comm *c, void *arg) {
  (void)comm;
  (void)arg;
  if (dev_index < 0 && c->device >= 0) dev_index = c->device;
}

static void open_nvml(void) {
  const char *path = getenv("COLLSCOPE_LIBNVML");
  if (!path || !*path) path = "libnvidia-ml.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    cs_log(CS_LOG_INFO, "health: %s not loaded: GPU health not sampled", path);
    return;
  }
  SYM(init, "nvmlInit_v2");
  if (!nv.init) {
    cs_log(CS_LOG_INFO, "health: %s has no nvmlInit_v2: GPU health not sampled", path);
    return;
  }
  int rc = nv.init();
  if (rc != CS_NVML_SUCCESS) {
    cs_log(CS_LOG_INFO, "health: nvmlInit_v2 returned %d: GPU health not sampled", rc);
    memset(&nv, 0, sizeof nv);
    return;
  }
  SYM(by_bus, "nvmlDeviceGetHandleByPciBusId_v2");
  SYM(name, "nvmlDeviceGetName");
  SYM(uuid, "nvmlDeviceGetUUID");
  SYM(serial, "nvmlDeviceGetSerial");
  SYM(arch, "nvmlDeviceGetArchitecture");
  SYM(plimit, "nvmlDeviceGetPowerManagementLimit");
  if (!SYM(reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
    SYM(reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  SYM(clock, "nvmlDeviceGetClockInfo");
  SYM(power, "nvmlDeviceGetPowerUsage");
  SYM(temp, "nvmlDeviceGetTemperature");
  SYM(ecc, "nvmlDeviceGetTotalEccErrors");
  SYM(remap, "nvmlDeviceGetRemappedRows");
  SYM(nvl_state, "nvmlDeviceGetNvLinkState");
  SYM(nvl_err, "nvmlDeviceGetNvLinkErrorCounter");
  SYM(pcie, "nvmlDeviceGetPcieReplayCounter");
  SYM(ev_create, "nvmlEventSetCreate");
  SYM(ev_register, "nvmlDeviceRegisterEvents");
  SYM(ev_wait, "nvmlEventSetWait_v2");
  if (!nv.by_bus) {
    cs_log(CS_LOG_INFO, "health: NVML has no nvmlDeviceGetHandleByPciBusId_v2: GPU health not sampled");
    return;
  }
  for (int f = 0; f < F_COUNT; f++) on[f] = true;
  const struct {
    enum field f;
    void *p;
    const char *fn;
  } need[] = {
      {F_NAME, (void *)nv.name, "nvmlDeviceGetName"},
      {F_UUID, (void *)nv.uuid, "nvmlDeviceGetUUID"},
      {F_SERIAL, (void *)nv.serial, "nvmlDeviceGetSerial"},
      {F_ARCH, (void *)nv.arch, "nvmlDeviceGetArchitecture"},
      {F_PLIMIT, (void *)nv.plimit, "nvmlDeviceGetPowerManagementLimit"},
      {F_REASONS, (void *)nv.reasons, "nvmlDeviceGetCurrentClocksEventReasons"},
      {F_CLOCKS, (void *)nv.clock, "nvmlDeviceGetClockInfo"},
      {F_POWER, (void *)nv.power, "nvmlDeviceGetPowerUsage"},
      {F_TEMP, (void *)nv.temp, "nvmlDeviceGetTemperature"},
      {F_ECC, (void *)nv.ecc, "nvmlDeviceGetTotalEccErrors"},
      {F_REMAP, (void *)nv.remap, "nvmlDeviceGetRemappedRows"},
      {F_NVLINK, (void *)(nv.nvl_state && nv.nvl_err ? (void *)nv.nvl_err : NULL), "nvmlDeviceGetNvLinkErrorCounter"},
      {F_PCIE, (void *)nv.pcie, "nvmlDeviceGetPcieReplayCounter"},
      {F_XID, (void *)(nv.ev_create && nv.ev_register ? (void *)nv.ev_wait : NULL), "nvmlEventSetWait_v2"},
  };
  for (size_t i = 0; i < sizeof need / sizeof *need; i++)
    if (!need[i].p) field_off(need[i].f, need[i].fn, -1);
}

/* Once the device is known: its handle and identity (name, UUID, serial, architecture,
 * power limit), the XID event set. */
static bool open_device(void) {
  if (dev_index < 0) dev_index = cs_gpu_ident_device();
  if (dev_index < 0) cs_comm_foreach(find_dev, NULL);
  if (dev_index < 0 || !cs_drv.loaded) return false;
  if (cs_drv.cuDeviceGetPCIBusId(bus_id, sizeof bus_id, (CUdevice)dev_index) != CUDA_SUCCESS) {
    bus_id[0] = 0;
    return false;
  }
  if (!nv.by_bus) {
    cs_ring_gpu_identity("", bus_id);
    return true;
  }
  int rc = nv.by_bus(bus_id, &dev);
  if (rc != CS_NVML_SUCCESS) {
    cs_log(CS_LOG_INFO, "health: nvmlDeviceGetHandleByPciBusId_v2(%s) returned %d: GPU health not sampled", bus_id, rc);
    memset(&nv, 0, sizeof nv);
    return true;
  }
  if (on[F_NAME] && (rc = nv.name(dev, gpu_name, sizeof gpu_name)) != CS_NVML_SUCCESS) field_off(F_NAME, "nvmlDeviceGetName", rc);
  if (on[F_UUID] && (rc = nv.uuid(dev, gpu_uuid, sizeof gpu_uuid)) != CS_NVML_SUCCESS) field_off(F_UUID, "nvmlDeviceGetUUID", rc);
  if (on[F_SERIAL] && (rc = nv.serial(dev, gpu_serial, sizeof gpu_serial)) != CS_NVML_SUCCESS) {
    gpu_serial[0] = 0; /* not allowed for every user: quietly absent */
    on[F_SERIAL] = false;
  }
  if (on[F_ARCH] && (rc = nv.arch(dev, &gpu_arch)) != CS_NVML_SUCCESS) field_off(F_ARCH, "nvmlDeviceGetArchitecture", rc);
  if (on[F_PLIMIT] && (rc = nv.plimit(dev, &gpu_plimit)) != CS_NVML_SUCCESS) field_off(F_PLIMIT, "nvmlDeviceGetPowerManagementLimit", rc);
  if (on[F_XID]) {
    if ((rc = nv.ev_create(&evset)) != CS_NVML_SUCCESS)
      field_off(F_XID, "nvmlEventSetCreate", rc);
    else if ((rc = nv.ev_register(dev, CS_NVML_EVENT_TYPE_XID_CRITICAL_ERROR, evset)) != CS_NVML_SUCCESS)
      field_off(F_XID, "nvmlDeviceRegisterEvents", rc);
  }
  gpu_name[sizeof gpu_name - 1] = gpu_uuid[sizeof gpu_uuid - 1] = gpu_serial[sizeof gpu_serial - 1] = 0;
  /* labels for the exporter's joins: the driver's, written at the first communicator
   * (hooks/gpu_ident.c), stay; NVML's are written only when the driver could not tell */
  const char *drv_uuid = cs_gpu_ident_uuid();
  if (on[F_UUID] && drv_uuid[0] && strcmp(drv_uuid, gpu_uuid) != 0)
    cs_log(CS_LOG_WARN, "health: NVML's UUID %.96s differs from the CUDA driver's %s for bus %s: the driver's is kept", gpu_uuid,
           drv_uuid, bus_id);
  cs_ring_gpu_identity(on[F_UUID] ? gpu_uuid : "", bus_id);
  if (on[F_PLIMIT]) {
    hv.power_limit_mw = gpu_plimit;
    hv.valid |= CS_RH_PLIMIT;
  }
  return true;
}

/* The device opened once. A failed try (device not known yet, or the driver cannot tell its
 * bus id) is tried again at the sampling period's pace, not on every harvest pass; the first
 * sight of the communicator's device (hooks/gpu_ident.c) is tried at once. */
static bool dev_open;
static int64_t next_open_ns;
static bool ensure_dev(bool now_anyway) {
  if (dev_open) return true;
  int64_t now = cs_now_ns(CLOCK_MONOTONIC);
  bool fresh = dev_index < 0 && cs_gpu_ident_device() >= 0;
  if (!now_anyway && !fresh && now < next_open_ns) return false;
  next_open_ns = now + period_ns;
  dev_open = open_device();
  return dev_open;
}

size_t cs_health_header_extra(int device, char *out, size_t cap) {
  if (st != ST_READY) return 0; /* not started, or off */
  if (dev_index < 0 && device >= 0) dev_index = device;
  if (!ensure_dev(true) || !nv.by_bus || !dev) return 0;
  struct cs_strbuf b = {out, 0, cap};
  if (on[F_NAME]) {
    cs_sb_printf(&b, ",\"gpu_name\":");
    sb_str(&b, gpu_name);
  }
  if (on[F_UUID]) {
    cs_sb_printf(&b, ",\"gpu_uuid\":");
    sb_str(&b, gpu_uuid);
  }
  if (on[F_SERIAL]) {
    cs_sb_printf(&b, ",\"gpu_serial\":");
    sb_str(&b, gpu_serial);
  }
  if (on[F_ARCH]) cs_sb_printf(&b, ",\"gpu_arch\":%u", gpu_arch);
  if (on[F_PLIMIT]) cs_sb_printf(&b, ",\"gpu_power_limit_mw\":%u", gpu_plimit);
  cs_sb_printf(&b, ",\"gpu_pci_bus_id\":\"%s\"", bus_id);
  return b.len < cap ? b.len : cap;
}

static unsigned long long delta(unsigned long long now, unsigned long long *base) {
  unsigned long long d = now >= *base ? now - *base : now; /* a reset counter starts over */
  *base = now;
  return d;
}

/* the NVLinks: how many there are (those whose state NVML answers, counted at the first
 * sample), how many are down, and each link's error counter deltas since the last sample */
static void sample_nvlink(struct cs_strbuf *b, bool base) {
  int rc;
  unsigned long long x;
  if (!base) { /* the links there are: those whose state NVML answers */
    nlinks = 0;
    for (unsigned l = 0; l < CS_NVML_NVLINK_MAX_LINKS; l++) {
      int act;
      if (nv.nvl_state(dev, l, &act) != CS_NVML_SUCCESS) break;
      nlinks = (int)l + 1;
    }
    if (!nlinks) field_off(F_NVLINK, "nvmlDeviceGetNvLinkState", 3);
  }
  int down = 0;
  bool first = true;
  static const int kinds[3] = {CS_NVML_NVLINK_ERROR_DL_CRC_FLIT, CS_NVML_NVLINK_ERROR_DL_REPLAY, CS_NVML_NVLINK_ERROR_DL_RECOVERY};
  char links[4096] = ""; /* up to CS_NVML_NVLINK_MAX_LINKS entries of ~70 bytes */
  struct cs_strbuf lb = {links, 0, sizeof links};
  for (int l = 0; l < nlinks && on[F_NVLINK]; l++) {
    int act = 0;
    if (nv.nvl_state(dev, (unsigned)l, &act) == CS_NVML_SUCCESS && !act) down++;
    unsigned long long d[3];
    for (int k = 0; k < 3 && on[F_NVLINK]; k++) {
      if ((rc = nv.nvl_err(dev, (unsigned)l, kinds[k], &x)) != CS_NVML_SUCCESS)
        field_off(F_NVLINK, "nvmlDeviceGetNvLinkErrorCounter", rc);
      else
        d[k] = delta(x, &base_nvl[l][k]);
    }
    if (on[F_NVLINK] && base) {
      hv.nvlink_crc += d[0];
      hv.nvlink_replay += d[1];
      hv.nvlink_recovery += d[2];
    }
    if (on[F_NVLINK] && base && (d[0] | d[1] | d[2])) {
      cs_sb_printf(&lb, "%s{\"link\":%d,\"crc\":%llu,\"replay\":%llu,\"recovery\":%llu}", first ? "" : ",", l, d[0], d[1], d[2]);
      first = false;
      sample_flags |= CS_HEALTH_F_NVLINK;
    }
  }
  if (on[F_NVLINK]) {
    cs_sb_printf(b, ",\"nvlinks\":%d,\"nvlink_down\":%d,\"nvlink\":[%s]", nlinks, down, lb.len < lb.cap ? links : "");
    hv.nvlinks = (uint64_t)nlinks;
    hv.nvlink_down = (uint64_t)down;
    hv.valid |= CS_RH_NVLINK;
  }
}

/* the XID events since the last sample (polled, never blocking) */
static void sample_xid(struct cs_strbuf *b) {
  int rc;
  cs_sb_printf(b, ",\"xid\":[");
  cs_nvml_event_data_t ev;
  bool first = true;
  for (int i = 0; i < 16; i++) { /* polled, never blocking: timeout 0 */
    memset(&ev, 0, sizeof ev);
    rc = nv.ev_wait(evset, &ev, 0);
    if (rc == CS_NVML_ERROR_TIMEOUT) break;
    if (rc != CS_NVML_SUCCESS) {
      field_off(F_XID, "nvmlEventSetWait_v2", rc);
      break;
    }
    if (ev.device == dev && (ev.eventType & CS_NVML_EVENT_TYPE_XID_CRITICAL_ERROR)) {
      cs_sb_printf(b, "%s%llu", first ? "" : ",", ev.eventData);
      first = false;
      sample_flags |= CS_HEALTH_F_XID;
      hv.xid_events++;
      hv.xid_last = ev.eventData;
    }
  }
  cs_sb_printf(b, "]");
  if (on[F_XID]) hv.valid |= CS_RH_XID;
}

static void sample_gpu(struct cs_strbuf *b) {
  int rc;
  unsigned u, u2, u3, u4;
  unsigned long long x;
  bool base = have_base;
  cs_sb_printf(b, ",\"gpu\":{\"bus\":\"%s\"", bus_id);
  if (on[F_REASONS]) {
    if ((rc = nv.reasons(dev, &x)) != CS_NVML_SUCCESS)
      field_off(F_REASONS, "nvmlDeviceGetCurrentClocksEventReasons", rc);
    else {
      cs_sb_printf(b, ",\"reasons\":%llu", x);
      sample_reasons = x;
      hv.reasons = x;
      hv.valid |= CS_RH_REASONS;
      if (x & CS_NVML_REASON_SW_POWER_CAP) sample_flags |= CS_HEALTH_F_POWER;
      if (x & (CS_NVML_REASON_SW_THERMAL | CS_NVML_REASON_HW_THERMAL)) sample_flags |= CS_HEALTH_F_THERMAL;
      if (x & (CS_NVML_REASON_HW_SLOWDOWN | CS_NVML_REASON_HW_POWER_BRAKE)) sample_flags |= CS_HEALTH_F_HW_SLOWDOWN;
    }
  }
  if (on[F_CLOCKS]) {
    if ((rc = nv.clock(dev, CS_NVML_CLOCK_SM, &u)) != CS_NVML_SUCCESS || (rc = nv.clock(dev, CS_NVML_CLOCK_MEM, &u2)) != CS_NVML_SUCCESS)
      field_off(F_CLOCKS, "nvmlDeviceGetClockInfo", rc);
    else {
      cs_sb_printf(b, ",\"sm_mhz\":%u,\"mem_mhz\":%u", u, u2);
      hv.sm_mhz = u;
      hv.mem_mhz = u2;
      hv.valid |= CS_RH_CLOCKS;
    }
  }
  if (on[F_POWER]) {
    if ((rc = nv.power(dev, &u)) != CS_NVML_SUCCESS)
      field_off(F_POWER, "nvmlDeviceGetPowerUsage", rc);
    else {
      cs_sb_printf(b, ",\"power_mw\":%u", u);
      hv.power_mw = u;
      hv.valid |= CS_RH_POWER;
    }
  }
  if (on[F_TEMP]) {
    if ((rc = nv.temp(dev, CS_NVML_TEMPERATURE_GPU, &u)) != CS_NVML_SUCCESS)
      field_off(F_TEMP, "nvmlDeviceGetTemperature", rc);
    else {
      cs_sb_printf(b, ",\"temp_c\":%u", u);
      hv.temp_c = u;
      hv.valid |= CS_RH_TEMP;
    }
  }
  if (on[F_ECC]) {
    unsigned long long c, un;
    if ((rc = nv.ecc(dev, CS_NVML_MEMORY_ERROR_TYPE_CORRECTED, CS_NVML_VOLATILE_ECC, &c)) != CS_NVML_SUCCESS ||
        (rc = nv.ecc(dev, CS_NVML_MEMORY_ERROR_TYPE_UNCORRECTED, CS_NVML_VOLATILE_ECC, &un)) != CS_NVML_SUCCESS)
      field_off(F_ECC, "nvmlDeviceGetTotalEccErrors", rc);
    else {
      unsigned long long dc = delta(c, &base_ecc[0]), du = delta(un, &base_ecc[1]);
      if (base) cs_sb_printf(b, ",\"ecc_corrected\":%llu,\"ecc_uncorrected\":%llu", dc, du);
      if (base && (dc || du)) sample_flags |= CS_HEALTH_F_ECC;
      if (base) {
        hv.ecc_corrected += dc;
        hv.ecc_uncorrected += du;
      }
      hv.valid |= CS_RH_ECC;
    }
  }
  if (on[F_REMAP]) {
    if ((rc = nv.remap(dev, &u, &u2, &u3, &u4)) != CS_NVML_SUCCESS)
      field_off(F_REMAP, "nvmlDeviceGetRemappedRows", rc);
    else {
      cs_sb_printf(b, ",\"remap_pending\":%u,\"remap_failure\":%u", u3 ? 1u : 0u, u4 ? 1u : 0u);
      if (u3 || u4) sample_flags |= CS_HEALTH_F_ECC;
      hv.remap_pending = u3 ? 1 : 0;
      hv.remap_failure = u4 ? 1 : 0;
      hv.valid |= CS_RH_REMAP;
    }
  }
  if (on[F_PCIE]) {
    if ((rc = nv.pcie(dev, &u)) != CS_NVML_SUCCESS)
      field_off(F_PCIE, "nvmlDeviceGetPcieReplayCounter", rc);
    else {
      unsigned long long bp = base_pcie, d = delta(u, &bp);
      base_pcie = (unsigned)bp;
      if (base) cs_sb_printf(b, ",\"pcie_replay\":%llu", d);
      if (base && d) sample_flags |= CS_HEALTH_F_PCIE;
      if (base) hv.pcie_replay += d;
      hv.valid |= CS_RH_PCIE;
    }
  }
  if (on[F_NVLINK]) sample_nvlink(b, base);
  if (on[F_XID]) sample_xid(b);
  cs_sb_printf(b, "}");
  have_base = true;
}

static void start(void) {
  const char *v = getenv("COLLSCOPE_HEALTH_MS");
  long ms = 1000;
  if (v && *v) {
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 3600000)
      cs_log(CS_LOG_WARN, "ignoring COLLSCOPE_HEALTH_MS=%.32s (expected 0..3600000); using 1000", v);
    else
      ms = x;
  }
  if (ms == 0) {
    st = ST_OFF;
    return;
  }
  period_ns = ms * 1000000LL;
  open_nvml();
  st = ST_READY;
  next_ns = cs_now_ns(CLOCK_REALTIME); /* the first (the counters' baseline) once the device is known */
}

void cs_health_start(void) {
  if (st == ST_NEW) start();
}

/* A communicator record (it may name the device: the first sample, the counters' baseline,
 * is taken then, before any of its ops is written), or a record timed on the GPU (an op, a
 * copy) whose end is within 1 ms of the next sample's moment: the clock decides (its end came
 * from an event the harvest thread saw done, so the clock is at least there; the 1 ms spares
 * a clock read per record). */
void cs_health_record_done(const struct cs_record *r) {
  if (st != ST_READY) return;
  if (r->type == CS_REC_COMM ||
      ((r->type == CS_REC_OP || r->type == CS_REC_XFER) && r->end_ns > 0 && r->end_ns + 1000000 >= next_ns))
    cs_health_tick(false);
}

void cs_health_tick(bool final) {
  if (st == ST_NEW) start();
  if (st != ST_READY) return;
  if (!ensure_dev(final)) return; /* nothing before the communicator's device is known */
  int64_t now = cs_now_ns(CLOCK_REALTIME);
  if (next_ns - now > period_ns) next_ns = now; /* the clock was set back: due now */
  if (!final && now < next_ns) return;
  next_ns = now + period_ns;
  int64_t cpu0 = cs_now_ns(CLOCK_THREAD_CPUTIME_ID); /* the sample's own cost, in the record */
  static char line[CS_DUMP_RAW_MAX];
  struct cs_strbuf b = {line, 0, sizeof line};
  cs_sb_printf(&b, "{\"type\":\"health\",\"rank\":%d,\"t_ns\":%lld", cs_cfg.rank, (long long)now);
  bool any = false, ib_errors = false;
  sample_flags = 0;
  sample_reasons = 0;
  hv.valid &= CS_RH_PLIMIT; /* the groups this sample answers are set again as they are read */
  hv.t_ns = now;
  if (dev_open && nv.by_bus && dev) {
    sample_gpu(&b);
    note_cause(sample_flags);
    any = true;
  }
  if (cs_cfg.local_rank <= 0 && cs_health_ib_sample(&b, &ib_errors, &hv)) any = true;
  if (ib_errors) sample_flags |= CS_HEALTH_F_IB;
  cs_sb_printf(&b, ",\"cost_us\":%.1f}", (double)(cs_now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / 1e3);
  if (any && b.len < b.cap) cs_dump_raw_line(line, b.len, dev_index);
  if (any) { /* the stats ring: the sample's flags, for `collscope top` */
    struct cs_record r;
    memset(&r, 0, sizeof r);
    r.type = CS_REC_HEALTH;
    r.op = (uint8_t)sample_flags;
    r.count = sample_reasons;
    r.device = dev_index;
    r.seq = UINT64_MAX;
    r.enqueue_ns = r.start_ns = r.end_ns = now;
    cs_ring_publish(&r);
    cs_ring_health(&hv); /* the values, for `collscope exporter` */
  }
}
