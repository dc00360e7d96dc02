/* hooks/gpu_ident.c: the process's GPU identity in the stats ring's header (hooks/gpu_ident.h).
 * The device is the first communicator's (its registration record carries it); the UUID and
 * the PCI bus id come from the CUDA driver (cuDeviceGetUuid, cuDeviceGetPCIBusId, resolved at
 * run time by hooks/cuda_driver.c), so the exporter's UUID and pci_bus_id labels are there
 * from the first scrape that shows the communicator, with or without NVML. A driver that
 * cannot tell leaves the identity to the health sampler (hooks/health.c), one INFO line. */
#include "hooks/gpu_ident.h"
#include "hooks/cuda_driver.h"
#include "stats/core.h"
#include "stats/ring_writer.h"
#include <stdio.h>

static int ident_dev = -1;
static char uuid_text[48];

void cs_gpu_uuid_text(const unsigned char b[16], char *out, size_t cap) {
  snprintf(out, cap, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
           b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void resolve(int device) {
  ident_dev = device;
  if (!cs_driver_load()) return; /* no driver: its own line already said so */
  char bus[32];
  if (cs_drv.cuDeviceGetPCIBusId(bus, (int)sizeof bus, (CUdevice)device) != CUDA_SUCCESS) {
    cs_log(CS_LOG_INFO, "gpu identity: cuDeviceGetPCIBusId(%d) failed: the GPU's identity is left to the health sampler",
           device);
    return;
  }
  bus[sizeof bus - 1] = 0;
  CUuuid u;
  if (!cs_drv.cuDeviceGetUuid || cs_drv.cuDeviceGetUuid(&u, (CUdevice)device) != CUDA_SUCCESS) {
    cs_log(CS_LOG_INFO, "gpu identity: the CUDA driver %s cuDeviceGetUuid: the GPU's identity is left to the health sampler",
           cs_drv.cuDeviceGetUuid ? "failed in" : "has no");
    return;
  }
  cs_gpu_uuid_text((const unsigned char *)u.bytes, uuid_text, sizeof uuid_text);
  cs_ring_gpu_identity(uuid_text, bus);
}

static bool ident_complete(struct cs_record *r, bool final) {
  (void) final;
  /* the records that give the ring its device (stats/ring_writer.c add_comm) */
  if (ident_dev < 0 && r->type == CS_REC_COMM && (r->event == CS_COMM_INIT || r->event == CS_COMM_SPLIT) && r->device >= 0)
    resolve(r->device);
  return true;
}

const struct cs_harvest_client cs_gpu_ident_harvest = {.name = "gpu identity", .complete = ident_complete};

int cs_gpu_ident_device(void) { return ident_dev; }
const char *cs_gpu_ident_uuid(void) { return uuid_text; }

void cs_gpu_ident_atfork_child(void) {
  ident_dev = -1;
  uuid_text[0] = 0;
}
