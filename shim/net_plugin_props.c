/* shim/net_plugin_props.c: the net plugin wrapper's getProperties and makeVDevice for each
 * version it exports, over whatever version the inner plugin is. Conversions follow NCCL's own
 * adapters (src/plugin/net/net_v11.cc, v2.30.7-1): fields copied by name, a v12 caller of an
 * older inner gets railId = planeId = -1 (NCCL_NET_ID_UNDEF, "ignored in NCCL core"), an
 * older caller of a v12 inner gets its first devices of a virtual NIC. A v12 makeVDevice of
 * more devices than an older inner can take (4) is refused (ncclInvalidArgument, one log
 * line) rather than truncated. */
#include "net_plugin_internal.h"
#include <string.h>

#define COPY_COMMON(d, s) \
  do { \
    (d)->name = (s)->name, (d)->pciPath = (s)->pciPath, (d)->guid = (s)->guid; \
    (d)->ptrSupport = (s)->ptrSupport, (d)->regIsGlobal = (s)->regIsGlobal; \
    (d)->forceFlush = (s)->forceFlush, (d)->speed = (s)->speed, (d)->port = (s)->port; \
    (d)->latency = (s)->latency, (d)->maxComms = (s)->maxComms, (d)->maxRecvs = (s)->maxRecvs; \
    (d)->netDeviceType = (s)->netDeviceType, (d)->netDeviceVersion = (s)->netDeviceVersion; \
    (d)->maxP2pBytes = (s)->maxP2pBytes, (d)->maxCollBytes = (s)->maxCollBytes; \
  } while (0)

static void vprops_down(struct cs_net_vprops *d, const struct cs_net_vprops_v12 *s) {
  d->ndevs = s->ndevs < 0 ? 0 : s->ndevs > CS_NET_MAX_DEVS_PER_NIC ? CS_NET_MAX_DEVS_PER_NIC
                                                                   : s->ndevs;
  for (int i = 0; i < d->ndevs; i++) d->devs[i] = s->devs[i];
}
static void vprops_up(struct cs_net_vprops_v12 *d, const struct cs_net_vprops *s) {
  d->ndevs = s->ndevs < 0 ? 0 : s->ndevs > CS_NET_MAX_DEVS_PER_NIC ? CS_NET_MAX_DEVS_PER_NIC
                                                                   : s->ndevs;
  for (int i = 0; i < d->ndevs; i++) d->devs[i] = s->devs[i];
}

cs_net_result_t cs_net_get_props12(int dev, struct cs_net_props_v12 *p) {
  if (cs_net_in12) return cs_net_in12->getProperties(dev, p);
  struct cs_net_props_v11 q;
  memset(&q, 0, sizeof q);
  cs_net_result_t r = cs_net_get_props11(dev, &q);
  memset(p, 0, sizeof *p);
  COPY_COMMON(p, &q);
  vprops_up(&p->vProps, &q.vProps);
  p->maxMultiRequestSize = q.maxMultiRequestSize;
  p->railId = p->planeId = CS_NET_ID_UNDEF;
  return r;
}

cs_net_result_t cs_net_get_props11(int dev, struct cs_net_props_v11 *p) {
  if (cs_net_in12) {
    struct cs_net_props_v12 q;
    memset(&q, 0, sizeof q);
    cs_net_result_t r = cs_net_in12->getProperties(dev, &q);
    memset(p, 0, sizeof *p);
    COPY_COMMON(p, &q);
    vprops_down(&p->vProps, &q.vProps);
    p->maxMultiRequestSize = q.maxMultiRequestSize;
    return r;
  }
  if (cs_net_in_ver == 11) return cs_net_in11->getProperties(dev, p);
  struct cs_net_props_v9 q;
  memset(&q, 0, sizeof q);
  cs_net_result_t r = cs_net_in_ver == 10 ? cs_net_in10->getProperties(dev, &q) : cs_net_in9->getProperties(dev, &q);
  memcpy(p, &q, sizeof q);
  p->maxMultiRequestSize = 1;
  return r;
}

cs_net_result_t cs_net_get_props9(int dev, struct cs_net_props_v9 *p) {
  if (cs_net_in_ver != 11)
    return cs_net_in_ver == 10 ? cs_net_in10->getProperties(dev, p) : cs_net_in9->getProperties(dev, p);
  struct cs_net_props_v11 q;
  memset(&q, 0, sizeof q);
  cs_net_result_t r = cs_net_get_props11(dev, &q);
  memcpy(p, &q, sizeof *p);
  return r;
}

cs_net_result_t cs_net_make_vdevice(int *d, struct cs_net_vprops *p) {
  if (cs_net_in12) {
    struct cs_net_vprops_v12 q;
    memset(&q, 0, sizeof q);
    vprops_up(&q, p);
    return cs_net_in12->makeVDevice(d, &q);
  }
  return cs_net_in_ver == 11   ? cs_net_in11->makeVDevice(d, p)
         : cs_net_in_ver == 10 ? cs_net_in10->makeVDevice(d, p)
                               : cs_net_in9->makeVDevice(d, p);
}

cs_net_result_t cs_net_make_vdevice12(int *d, struct cs_net_vprops_v12 *p) {
  if (cs_net_in12) return cs_net_in12->makeVDevice(d, p);
  if (p->ndevs > CS_NET_MAX_DEVS_PER_NIC) {
    cs_log_once(CS_LOG_WARN, "net plugin: NCCL asked for a virtual NIC of %d devices; the inner plugin (older than "
                             "v12) takes at most %d: refused",
                p->ndevs, CS_NET_MAX_DEVS_PER_NIC);
    return 4; /* ncclInvalidArgument */
  }
  struct cs_net_vprops q;
  vprops_down(&q, p);
  return cs_net_make_vdevice(d, &q);
}
