/* hooks/cuda_driver.c: dlopen of libcuda.so.1 and lookup of the driver entry points
 * collscope needs (see cuda_driver.h). Versioned names first (what cuda.h maps to),
 * then the legacy unversioned name. */
#include "cuda_driver.h"
#include "graph_timing.h"
#include "stats/core.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct cs_driver cs_drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static bool drv_ok;

static void *lookup(void *h, const char *sym) {
  void *p = dlsym(h, sym);
  if (!p) {
    /* "cuFoo_v2" -> "cuFoo" */
    char base[64];
    const char *v = strstr(sym, "_v");
    if (v && (size_t)(v - sym) < sizeof(base)) {
      memcpy(base, sym, (size_t)(v - sym));
      base[v - sym] = 0;
      p = dlsym(h, base);
    }
  }
  return p;
}

static void *drv_handle;

static void drv_load_once(void) {
  const char *name = cs_cfg.libcuda ? cs_cfg.libcuda : "libcuda.so.1";
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    cs_log_once(CS_LOG_WARN, "cannot load %s (%s): GPU timing off, ops recorded with host time only",
                name, dlerror());
    return;
  }
  drv_handle = h;
  bool ok = true;
  char missing[512] = "";
  size_t mlen = 0;
#define CS_DRV_LOOK(ret, fname, params, sym) \
  cs_drv.fname = (ret(*) params)lookup(h, sym); \
  if (!cs_drv.fname) { \
    ok = false; \
    if (mlen < sizeof(missing) - 1) \
      mlen += (size_t)snprintf(missing + mlen, sizeof(missing) - mlen, " %s", sym); \
  }
  CS_DRIVER_FNS(CS_DRV_LOOK)
#undef CS_DRV_LOOK
  if (!ok) cs_log(CS_LOG_WARN, "%s lacks%s: GPU timing off, ops recorded with host time only", name, missing);
#define CS_DRV_OPT(ret, fname, params, sym) cs_drv.fname = ok ? (ret(*) params)dlsym(h, sym) : NULL;
  CS_DRIVER_OPT_FNS(CS_DRV_OPT)
#undef CS_DRV_OPT
  cs_drv.loaded = ok;
  drv_ok = ok;
  cs_graph_sample_update(); /* the event sample applies from here */
}

bool cs_driver_load(void) {
  pthread_once(&drv_once, drv_load_once);
  return drv_ok;
}

struct cs_driver_xchg cs_drvx;
static pthread_once_t xchg_once = PTHREAD_ONCE_INIT;

static void xchg_load_once(void) {
  cs_driver_load();
  if (!drv_handle) return;
  bool ok = true;
#define CS_DRV_LOOK(ret, fname, params, sym) ok = (cs_drvx.fname = (ret(*) params)lookup(drv_handle, sym)) && ok;
  CS_DRIVER_XCHG_FNS(CS_DRV_LOOK)
#undef CS_DRV_LOOK
  cs_drvx.loaded = ok && cs_drv.loaded;
}

bool cs_driver_xchg_load(void) {
  pthread_once(&xchg_once, xchg_load_once);
  return cs_drvx.loaded;
}

void cs_driver_thread_relaxed(void) {
  /* (never loads the driver itself: a thread started without it makes no CUDA call) */
  if (!cs_drv.loaded || !cs_drv.cuThreadExchangeStreamCaptureMode) return;
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (cs_drv.cuThreadExchangeStreamCaptureMode(&m) != CUDA_SUCCESS)
    cs_log_once(CS_LOG_WARN, "cannot put a collscope thread in the relaxed capture mode: its CUDA calls may "
                             "invalidate a graph capture the job makes in the global mode");
}

void cs_driver_device_info(int device, int *driver_version, char *bus, size_t bus_len) {
  if (cs_drv.loaded) cs_drv.cuDriverGetVersion(driver_version);
  if (cs_drv.loaded && device >= 0) {
    if (cs_drv.cuDeviceGetPCIBusId(bus, (int)bus_len, (CUdevice)device) != CUDA_SUCCESS) bus[0] = 0;
  }
}
