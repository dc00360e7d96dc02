/* tests/health/test_health_retry.c: how often hooks/health.c tries to open the GPU on the
 * harvest thread's passes, with fakes of what it calls (the communicator table, the CUDA
 * driver's cuDeviceGetPCIBusId, the GPU identity, the ring and the dump). The harvest thread
 * passes far more often than the sampling period; a device that is not known yet, or one whose
 * bus id the driver cannot tell, is tried again at the period's pace, not on every pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "hooks/cuda_driver.h"
#include "hooks/gpu_ident.h"
#include "hooks/health.h"
#include "stats/core.h"
#include "stats/dump_writer.h"
#include "stats/ring_writer.h"

#define PERIOD_MS 40
#define PASSES 400 /* one every millisecond: ~10 periods */

/* ---- fakes ---- */
struct cs_config cs_cfg;
struct cs_driver cs_drv;
static int comm_device = -1, ident_device = -1;
static unsigned foreach_calls, busid_calls;

void cs_log(int level, const char *fmt, ...) {
  (void)level;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}
void cs_comm_foreach(void (*fn)(void *comm, struct cs_comm *c, void *arg), void *arg) {
  foreach_calls++;
  if (comm_device < 0) return;
  struct cs_comm c;
  memset(&c, 0, sizeof c);
  c.device = comm_device;
  fn(&c, &c, arg);
}
static CUresult busid_fails(char *b, int len, CUdevice d) {
  (void)b, (void)len, (void)d;
  busid_calls++;
  return CUDA_ERROR_INVALID_DEVICE;
}
int cs_gpu_ident_device(void) { return ident_device; }
const char *cs_gpu_ident_uuid(void) { return ""; }
void cs_ring_gpu_identity(const char *uuid, const char *bus_id) { (void)uuid, (void)bus_id; }
void cs_ring_publish(const struct cs_record *r) { (void)r; }
void cs_ring_health(const struct cs_ring_health_vals *v) { (void)v; }
void cs_dump_raw_line(const char *json, size_t len, int device) { (void)json, (void)len, (void)device; }
bool cs_health_ib_sample(struct cs_strbuf *b, bool *errors, struct cs_ring_health_vals *hv) {
  (void)b, (void)errors, (void)hv;
  return false;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* PASSES passes, one a millisecond; returns the milliseconds they took */
static double passes(void) {
  double t0 = now_ms();
  for (int i = 0; i < PASSES; i++) {
    cs_health_tick(false);
    usleep(1000);
  }
  return now_ms() - t0;
}

static void tries_at_period_pace(void **state) {
  (void)state;
  setenv("COLLSCOPE_HEALTH_MS", "40", 1);
  setenv("COLLSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1); /* NVML absent: bus id alone */
  cs_drv.loaded = true;
  cs_drv.cuDeviceGetPCIBusId = busid_fails;
  cs_health_start();

  /* no communicator yet: the table is looked at once a period */
  double ms = passes();
  unsigned bound = 2 + (unsigned)(ms / PERIOD_MS);
  printf("device not known: %u communicator-table lookups in %d passes over %.0f ms (bound %u)\n", foreach_calls,
         PASSES, ms, bound);
  assert_true(foreach_calls >= 1);
  assert_true(foreach_calls <= bound);

  /* the communicator's device known, its bus id not: the driver is asked once a period */
  comm_device = 0;
  ms = passes();
  bound = 2 + (unsigned)(ms / PERIOD_MS);
  printf("bus id failing: %u cuDeviceGetPCIBusId calls in %d passes over %.0f ms (bound %u)\n", busid_calls, PASSES,
         ms, bound);
  assert_true(busid_calls >= 1);
  assert_true(busid_calls <= bound);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(tries_at_period_pace)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
