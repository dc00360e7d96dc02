/* hooks/gpu_ident.h: the process's GPU identity (UUID, PCI bus id) from the CUDA driver, written
 * into the stats ring's header as soon as the first communicator's device is known. */
#ifndef COLLSCOPE_HOOKS_GPU_IDENT_H
#define COLLSCOPE_HOOKS_GPU_IDENT_H
#include "stats/harvest.h"
#include <stddef.h>

/* The harvest client (shim/wiring.c registers it first): on the first communicator record
 * that names a device, before the ring has that record, asks the driver for the device's
 * UUID and PCI bus id and writes both into the ring's header (written once; NVML never
 * changes them later). */
extern const struct cs_harvest_client cs_gpu_ident_harvest;

/* Harvest thread only. The device the identity belongs to (the first communicator's), -1
 * until one is known. */
int cs_gpu_ident_device(void);
/* Harvest thread only. The driver's UUID in NVML's text form ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-
 * xxxxxxxxxxxx"), "" when not known. */
const char *cs_gpu_ident_uuid(void);

/* In a forked child: its ring is new, so its first communicator names the identity again. */
void cs_gpu_ident_atfork_child(void);

/* 16 UUID bytes in NVML's text form; out must hold 41 bytes. */
void cs_gpu_uuid_text(const unsigned char bytes[16], char *out, size_t cap);

#endif
