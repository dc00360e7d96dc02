/* tests/health/test_gpu_ident.c: hooks/gpu_ident.c alone, with fakes of the CUDA driver and the
 * ring: the first communicator record that names a device writes that device's UUID (in
 * NVML's text form) and PCI bus id once; later records, another device's included, change
 * nothing; a driver without cuDeviceGetUuid writes nothing and says so in one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "hooks/cuda_driver.h"
#include "hooks/gpu_ident.h"
#include "stats/core.h"
#include "stats/ring_writer.h"

/* ---- fakes ---- */
struct cs_driver cs_drv;
static unsigned log_lines, ident_writes, uuid_calls;
static char ring_uuid[96], ring_bus[32];
static bool has_uuid = true;

void cs_log(int level, const char *fmt, ...) {
  (void)level;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  log_lines++;
}
bool cs_driver_load(void) { return cs_drv.loaded; }
void cs_ring_gpu_identity(const char *uuid, const char *bus_id) {
  ident_writes++;
  snprintf(ring_uuid, sizeof ring_uuid, "%s", uuid);
  snprintf(ring_bus, sizeof ring_bus, "%s", bus_id);
}
static CUresult bus_of(char *b, int len, CUdevice d) {
  snprintf(b, (size_t)len, "0000:%02x:00.0", 0x18 + d);
  return CUDA_SUCCESS;
}
static CUresult uuid_of(CUuuid *u, CUdevice d) {
  uuid_calls++;
  for (int i = 0; i < 16; i++) u->bytes[i] = (char)(0xa0 + i + d);
  return CUDA_SUCCESS;
}

static bool feed(enum cs_comm_event ev, int device) {
  struct cs_record r;
  memset(&r, 0, sizeof r);
  r.type = CS_REC_COMM;
  r.event = (uint8_t)ev;
  r.device = device;
  return cs_gpu_ident_harvest.complete(&r, false);
}

static void run(void) {
  cs_drv.loaded = true;
  cs_drv.cuDeviceGetPCIBusId = bus_of;
  cs_drv.cuDeviceGetUuid = has_uuid ? uuid_of : NULL;
  struct cs_record op;
  memset(&op, 0, sizeof op);
  op.type = CS_REC_OP;
  op.device = 3;
  assert_true(cs_gpu_ident_harvest.complete(&op, false)); /* an op names no identity */
  assert_true(feed(CS_COMM_INIT, -1));                    /* a communicator without a device yet */
  assert_int_equal(cs_gpu_ident_device(), -1);
  assert_true(feed(CS_COMM_INIT, 2));
  assert_true(feed(CS_COMM_SPLIT, 5));
  assert_true(feed(CS_COMM_INIT, 2));
  assert_int_equal(cs_gpu_ident_device(), 2);
}

static void identity_once(void **state) {
  (void)state;
  run();
  assert_int_equal(ident_writes, 1);
  assert_int_equal(uuid_calls, 1);
  assert_string_equal(ring_uuid, "GPU-a2a3a4a5-a6a7-a8a9-aaab-acadaeafb0b1");
  assert_string_equal(ring_bus, "0000:1a:00.0");
  assert_string_equal(cs_gpu_ident_uuid(), ring_uuid);
  assert_int_equal(log_lines, 0);
}

int main(int argc, char **argv) {
  /* argv[1] "no-uuid": a driver without cuDeviceGetUuid (its own process: the module's state is
   * once per process) */
  if (argc > 1 && !strcmp(argv[1], "no-uuid")) {
    has_uuid = false;
    run();
    printf("driver without cuDeviceGetUuid: %u ring writes, %u log line(s)\n", ident_writes, log_lines);
    return ident_writes == 0 && log_lines == 1 && cs_gpu_ident_uuid()[0] == 0 ? 0 : 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(identity_once)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
