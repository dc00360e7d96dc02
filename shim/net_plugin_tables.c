/* shim/net_plugin_tables.c: what NCCL sees of the net plugin wrapper -- the exported
 * ncclNetPlugin_v12, _v11, _v10 and _v9 tables, each version's own entry points (init, listen,
 * connect, finalize, setNetAttr and the v9 shapes of isend/irecv) over the common calls of
 * shim/net_plugin.c, and the patching, once before init returns, of the optional entries the
 * inner plugin lacks. v9/v10 callers share one global context. */
#include "net_plugin_internal.h"
#include <pthread.h>
#include <stdlib.h>

#define in_ver cs_net_in_ver
#define in11 cs_net_in11
#define in10 cs_net_in10
#define in9 cs_net_in9

static struct wctx global_ctx; /* v9/v10 callers */
static void patch_tables(void);

/* ---- v11 entry points ---------------------------------------------------------------------- */
static cs_net_result_t v11_init(void **ctx, uint64_t commId, struct cs_net_comm_config *cfg, cs_net_logger_t log,
                                cs_net_prof_cb_t prof) {
  cs_net_result_t r = cs_net_init_common();
  if (r != CS_NET_OK) return r;
  struct wctx *x = calloc(1, sizeof *x);
  if (!x) {
    cs_log(CS_LOG_WARN, "net plugin: out of memory in init; declining");
    return CS_NET_SYSTEM_ERROR;
  }
  if (cfg) {
    x->cfg = *cfg;
    x->has_cfg = 1;
  }
  if (in_ver == 11)
    r = in11->init(&x->inner, commId, cfg, log, prof);
  else
    r = cs_net_inner_global_init(log, prof);
  if (r != CS_NET_OK) {
    cs_log_once(CS_LOG_WARN, "net plugin: the inner plugin %s failed to initialise (%d); NCCL uses its own transports",
                cs_net_in_name, r);
    free(x);
    return r;
  }
  patch_tables();
  *ctx = x;
  return r;
}
static cs_net_result_t v11_listen(void *ctx, int dev, void *handle, void **lc) {
  return cs_net_listen(ctx ? ctx : &global_ctx, dev, handle, lc);
}
static cs_net_result_t v11_connect(void *ctx, int dev, void *handle, void **sc, void **dc) {
  return cs_net_connect(ctx ? ctx : &global_ctx, dev, NULL, handle, sc, dc);
}
static cs_net_result_t v11_finalize(void *ctx) {
  struct wctx *x = ctx;
  cs_net_result_t r = CS_NET_OK;
  if (x && in_ver == 11 && in11->finalize) r = in11->finalize(x->inner);
  free(x);
  return r;
}
static cs_net_result_t v11_set_attr(void *ctx, struct cs_net_attr_v11 *a) {
  struct wctx *x = ctx;
  if (in_ver == 11 && in11->setNetAttr) return in11->setNetAttr(x ? x->inner : NULL, a);
  return CS_NET_OK;
}

/* ---- v10 / v9 entry points (one global context) -------------------------------------------- */
static cs_net_result_t v10_init(cs_net_logger_t log, cs_net_prof_cb_t prof) {
  cs_net_result_t r = cs_net_init_common();
  if (r != CS_NET_OK) return r;
  r = cs_net_inner_global_init(log, prof);
  if (r != CS_NET_OK) {
    cs_log_once(CS_LOG_WARN, "net plugin: the inner plugin %s failed to initialise (%d); NCCL uses its own transports",
                cs_net_in_name, r);
    return r;
  }
  global_ctx.inner = in_ver == 11 ? cs_net_in_global_ctx : NULL;
  patch_tables();
  return r;
}
static cs_net_result_t v9_init(cs_net_logger_t log) { return v10_init(log, NULL); }
static cs_net_result_t vx_listen(int dev, void *handle, void **lc) { return cs_net_listen(&global_ctx, dev, handle, lc); }
static cs_net_result_t v10_connect(int dev, struct cs_net_comm_config *cfg, void *handle, void **sc, void **dc) {
  return cs_net_connect(&global_ctx, dev, cfg, handle, sc, dc);
}
static cs_net_result_t v9_connect(int dev, void *handle, void **sc, void **dc) {
  return cs_net_connect(&global_ctx, dev, NULL, handle, sc, dc);
}
static cs_net_result_t v9_isend(void *s, void *data, size_t size, int tag, void *mh, void **req) {
  return cs_net_isend(s, data, size, tag, mh, NULL, req);
}
static cs_net_result_t v9_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs, void **req) {
  return cs_net_irecv(rc, n, data, sizes, tags, mhs, NULL, req);
}

CS_EXPORT cs_net_v12_t ncclNetPlugin_v12 = {
    "collscope",
    v11_init,
    cs_net_devices,
    cs_net_get_props12,
    v11_listen,
    v11_connect,
    cs_net_accept,
    cs_net_reg_mr,
    cs_net_reg_mr_dmabuf,
    cs_net_dereg_mr,
    cs_net_isend,
    cs_net_irecv,
    cs_net_iflush,
    cs_net_test,
    cs_net_close_send,
    cs_net_close_recv,
    cs_net_close_listen,
    cs_net_get_device_mr,
    cs_net_irecv_consumed,
    cs_net_make_vdevice12,
    v11_finalize,
    v11_set_attr,
};
CS_EXPORT cs_net_v11_t ncclNetPlugin_v11 = {
    "collscope",
    v11_init,
    cs_net_devices,
    cs_net_get_props11,
    v11_listen,
    v11_connect,
    cs_net_accept,
    cs_net_reg_mr,
    cs_net_reg_mr_dmabuf,
    cs_net_dereg_mr,
    cs_net_isend,
    cs_net_irecv,
    cs_net_iflush,
    cs_net_test,
    cs_net_close_send,
    cs_net_close_recv,
    cs_net_close_listen,
    cs_net_get_device_mr,
    cs_net_irecv_consumed,
    cs_net_make_vdevice,
    v11_finalize,
    v11_set_attr,
};
CS_EXPORT cs_net_v10_t ncclNetPlugin_v10 = {
    "collscope",
    v10_init,
    cs_net_devices,
    cs_net_get_props9,
    vx_listen,
    v10_connect,
    cs_net_accept,
    cs_net_reg_mr,
    cs_net_reg_mr_dmabuf,
    cs_net_dereg_mr,
    cs_net_isend,
    cs_net_irecv,
    cs_net_iflush,
    cs_net_test,
    cs_net_close_send,
    cs_net_close_recv,
    cs_net_close_listen,
    cs_net_get_device_mr,
    cs_net_irecv_consumed,
    cs_net_make_vdevice,
};
CS_EXPORT cs_net_v9_t ncclNetPlugin_v9 = {
    "collscope",
    v9_init,
    cs_net_devices,
    cs_net_get_props9,
    vx_listen,
    v9_connect,
    cs_net_accept,
    cs_net_reg_mr,
    cs_net_reg_mr_dmabuf,
    cs_net_dereg_mr,
    v9_isend,
    v9_irecv,
    cs_net_iflush,
    cs_net_test,
    cs_net_close_send,
    cs_net_close_recv,
    cs_net_close_listen,
    cs_net_get_device_mr,
    cs_net_irecv_consumed,
    cs_net_make_vdevice,
};

/* Optional entry points NCCL tests for NULL: mirror the inner's (once, before init returns). */
static pthread_once_t patch_once = PTHREAD_ONCE_INIT;
static void do_patch(void) {
// clang-format off
#define HAS(f) (in_ver == 11 ? in11->f != NULL : in_ver == 10 ? in10->f != NULL : in9->f != NULL)
#define OPT(f)                                                   \
  if (!HAS(f)) { ncclNetPlugin_v12.f = NULL; ncclNetPlugin_v11.f = NULL; ncclNetPlugin_v10.f = NULL; ncclNetPlugin_v9.f = NULL; }
  OPT(regMrDmaBuf) OPT(iflush) OPT(getDeviceMr) OPT(irecvConsumed) OPT(makeVDevice)
  if (in_ver == 11 && !in11->setNetAttr) ncclNetPlugin_v11.setNetAttr = NULL, ncclNetPlugin_v12.setNetAttr = NULL;
#undef OPT
#undef HAS
  // clang-format on
  ncclNetPlugin_v12.name = cs_net_in_name;
  ncclNetPlugin_v11.name = cs_net_in_name;
  ncclNetPlugin_v10.name = cs_net_in_name;
  ncclNetPlugin_v9.name = cs_net_in_name;
}
static void patch_tables(void) { pthread_once(&patch_once, do_patch); }
