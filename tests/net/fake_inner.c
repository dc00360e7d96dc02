/* tests/net/fake_inner.c: an in-process loopback NCCL net plugin for test_net_harness.c,
 * built as libnccl-net-fake.so (ncclNetPlugin_v11), with -DFAKE_V12 as libnccl-net-fake12.so
 * (ncclNetPlugin_v12 as well) and, with -DFAKE_V9,
 * libnccl-net-fake9.so (ncclNetPlugin_v9 only). It checks what the wrapper hands it:
 *  - connect() compares the whole 128-byte handle with what its listen() wrote and fails
 *    (ncclInvalidArgument) on any difference, so collscope's identity block must be removed;
 *  - FAKE_NET_FULLHANDLE=1: listen() writes all 128 bytes (no room for the identity block);
 *  - FAKE_NET_FAIL=init|connect: that call fails with ncclSystemError (2);
 *  - FAKE_NET_DELAY_US: a message completes (both ends) this long after its isend.
 * Messages are copied into per-connection queues (64 entries, <= 64 KiB each). */
#include "collscope/nccl_net_abi.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))
#define NL 4096
#define QN 64
#define MAXMSG 65536

struct msg {
  size_t len;
  int64_t t;
  unsigned char data[MAXMSG];
};
struct pair {
  pthread_mutex_t mu;
  struct msg q[QN];
  unsigned head, tail;
};
struct req {
  int used, send;
  struct pair *p;
  int64_t t;
  void *buf;
  size_t cap;
};
struct comm {
  struct pair *p;
  int send;
  struct req reqs[CS_NET_MAX_REQUESTS];
};
struct lst {
  int used, connected;
  unsigned char handle[CS_NET_HANDLE_MAXSIZE];
  struct pair *p;
};

static struct lst lsts[NL];
static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;
static int mhd;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}
static int env_is(const char *k, const char *v) {
  const char *e = getenv(k);
  return e && !strcmp(e, v);
}
static int64_t delay_ns(void) {
  const char *e = getenv("FAKE_NET_DELAY_US");
  return e ? atoll(e) * 1000 : 0;
}

static cs_net_result_t f_devices(int *n) {
  *n = 2;
  return CS_NET_OK;
}
static cs_net_result_t f_props11(int dev, struct cs_net_props_v11 *p) {
  static char name[] = "fake0";
  memset(p, 0, sizeof *p);
  p->name = name;
  p->speed = 200000 + dev;
  p->maxRecvs = 1;
  p->ptrSupport = CS_NET_PTR_HOST;
  p->maxP2pBytes = MAXMSG;
  p->maxCollBytes = MAXMSG;
  p->maxMultiRequestSize = 1;
  return CS_NET_OK;
}
static cs_net_result_t f_listen_any(int dev, void *handle, void **lc) {
  (void)dev;
  pthread_mutex_lock(&glock);
  int i = 0;
  while (i < NL && lsts[i].used) i++;
  if (i == NL) {
    pthread_mutex_unlock(&glock);
    return CS_NET_SYSTEM_ERROR;
  }
  lsts[i].used = 1;
  lsts[i].connected = 0;
  pthread_mutex_unlock(&glock);
  unsigned char h[CS_NET_HANDLE_MAXSIZE];
  memcpy(h, handle, sizeof h); /* bytes 16.. are NCCL's (the wrapper zeroed them) unless FULLHANDLE */
  memset(h, 0, 16);
  memcpy(h, "FAKE", 4);
  memcpy(h + 4, &i, sizeof i);
  if (env_is("FAKE_NET_FULLHANDLE", "1")) memset(h + 16, 0xab, sizeof h - 16);
  memcpy(handle, h, sizeof h);
  memcpy(lsts[i].handle, h, sizeof h);
  *lc = &lsts[i];
  return CS_NET_OK;
}
static cs_net_result_t f_connect_any(void *handle, void **sc) {
  *sc = NULL;
  if (env_is("FAKE_NET_FAIL", "connect")) return CS_NET_SYSTEM_ERROR;
  int i;
  memcpy(&i, (unsigned char *)handle + 4, sizeof i);
  if (memcmp(handle, "FAKE", 4) || i < 0 || i >= NL || !lsts[i].used) return CS_NET_INVALID_ARGUMENT;
  if (memcmp(handle, lsts[i].handle, CS_NET_HANDLE_MAXSIZE)) return CS_NET_INVALID_ARGUMENT; /* modified */
  struct pair *p = calloc(1, sizeof *p);
  struct comm *c = calloc(1, sizeof *c);
  if (!p || !c) {
    free(p);
    free(c);
    return CS_NET_SYSTEM_ERROR;
  }
  pthread_mutex_init(&p->mu, NULL);
  c->p = p;
  c->send = 1;
  pthread_mutex_lock(&glock);
  lsts[i].p = p;
  lsts[i].connected = 1;
  pthread_mutex_unlock(&glock);
  *sc = c;
  return CS_NET_OK;
}
static cs_net_result_t f_accept(void *lc, void **rc, void **dc) {
  struct lst *l = lc;
  if (dc) *dc = NULL;
  *rc = NULL;
  pthread_mutex_lock(&glock);
  struct pair *p = l->connected ? l->p : NULL;
  pthread_mutex_unlock(&glock);
  if (!p) return CS_NET_OK;
  struct comm *c = calloc(1, sizeof *c);
  if (!c) return CS_NET_SYSTEM_ERROR;
  c->p = p;
  *rc = c;
  return CS_NET_OK;
}
static cs_net_result_t f_reg(void *comm, void *data, size_t size, int type, void **mh) {
  (void)comm, (void)data, (void)size, (void)type;
  *mh = &mhd;
  return CS_NET_OK;
}
static cs_net_result_t f_dereg(void *comm, void *mh) {
  (void)comm;
  return mh == &mhd ? CS_NET_OK : CS_NET_INVALID_ARGUMENT;
}
static struct req *rget(struct comm *c) {
  for (int i = 0; i < CS_NET_MAX_REQUESTS; i++)
    if (!c->reqs[i].used) {
      memset(&c->reqs[i], 0, sizeof c->reqs[i]);
      c->reqs[i].used = 1;
      c->reqs[i].p = c->p;
      return &c->reqs[i];
    }
  return NULL;
}
static cs_net_result_t f_isend_any(void *sc, void *data, size_t size, void *mh, void **request) {
  struct comm *c = sc;
  *request = NULL;
  if (!c->send || size > MAXMSG || mh != &mhd) return CS_NET_INVALID_ARGUMENT;
  struct pair *p = c->p;
  pthread_mutex_lock(&p->mu);
  if (p->head - p->tail >= QN) {
    pthread_mutex_unlock(&p->mu);
    return CS_NET_OK;
  } /* full: retry */
  struct req *r = rget(c);
  if (!r) {
    pthread_mutex_unlock(&p->mu);
    return CS_NET_OK;
  }
  struct msg *m = &p->q[p->head % QN];
  memcpy(m->data, data, size);
  m->len = size;
  m->t = now_ns() + delay_ns();
  p->head++;
  pthread_mutex_unlock(&p->mu);
  r->send = 1;
  r->t = m->t;
  *request = r;
  return CS_NET_OK;
}
static cs_net_result_t f_irecv_any(void *rc, int n, void **data, size_t *sizes, void **request) {
  struct comm *c = rc;
  *request = NULL;
  if (c->send || n != 1) return CS_NET_INVALID_ARGUMENT;
  struct req *r = rget(c);
  if (!r) return CS_NET_OK;
  r->buf = data[0];
  r->cap = sizes[0];
  *request = r;
  return CS_NET_OK;
}
static cs_net_result_t f_test(void *request, int *done, int *sizes) {
  struct req *r = request;
  *done = 0;
  if (r->send) {
    if (now_ns() >= r->t) {
      r->used = 0;
      *done = 1;
    }
    return CS_NET_OK;
  }
  struct pair *p = r->p;
  pthread_mutex_lock(&p->mu);
  if (p->head != p->tail && now_ns() >= p->q[p->tail % QN].t) {
    struct msg *m = &p->q[p->tail % QN];
    size_t l = m->len < r->cap ? m->len : r->cap;
    memcpy(r->buf, m->data, l);
    if (sizes) sizes[0] = (int)l;
    p->tail++;
    r->used = 0;
    *done = 1;
  }
  pthread_mutex_unlock(&p->mu);
  return CS_NET_OK;
}
static cs_net_result_t f_close(void *comm) {
  free(comm);
  return CS_NET_OK;
} /* pairs leak: test process */
static cs_net_result_t f_close_listen(void *lc) {
  struct lst *l = lc;
  pthread_mutex_lock(&glock);
  l->used = 0;
  pthread_mutex_unlock(&glock);
  return CS_NET_OK;
}

#ifndef FAKE_V9
static int ctxv;
static cs_net_result_t f_init11(void **ctx, uint64_t id, struct cs_net_comm_config *cfg, cs_net_logger_t log,
                                cs_net_prof_cb_t prof) {
  (void)id, (void)cfg, (void)log, (void)prof;
  if (env_is("FAKE_NET_FAIL", "init")) return CS_NET_SYSTEM_ERROR;
  *ctx = &ctxv;
  return CS_NET_OK;
}
static cs_net_result_t f_listen11(void *ctx, int dev, void *handle, void **lc) {
  if (ctx != &ctxv) return CS_NET_INVALID_ARGUMENT; /* the wrapper must pass our ctx */
  return f_listen_any(dev, handle, lc);
}
static cs_net_result_t f_connect11(void *ctx, int dev, void *handle, void **sc, void **dc) {
  (void)dev;
  if (dc) *dc = NULL;
  if (ctx != &ctxv) return CS_NET_INVALID_ARGUMENT;
  return f_connect_any(handle, sc);
}
static cs_net_result_t f_isend11(void *sc, void *data, size_t size, int tag, void *mh, void *ph, void **req) {
  (void)tag, (void)ph;
  return f_isend_any(sc, data, size, mh, req);
}
static cs_net_result_t f_irecv11(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs, void **phs,
                                 void **req) {
  (void)tags, (void)mhs, (void)phs;
  return f_irecv_any(rc, n, data, sizes, req);
}
static cs_net_result_t f_finalize(void *ctx) { return ctx == &ctxv ? CS_NET_OK : CS_NET_INVALID_ARGUMENT; }
#ifdef FAKE_V12
/* a v12 plugin: eight devices per virtual NIC, rail and plane ids */
static cs_net_result_t f_props12(int dev, struct cs_net_props_v12 *p) {
  struct cs_net_props_v11 q;
  f_props11(dev, &q);
  memset(p, 0, sizeof *p);
  p->name = q.name, p->speed = q.speed, p->maxRecvs = q.maxRecvs, p->ptrSupport = q.ptrSupport;
  p->maxP2pBytes = q.maxP2pBytes, p->maxCollBytes = q.maxCollBytes, p->maxMultiRequestSize = 3;
  p->vProps.ndevs = 6;
  for (int i = 0; i < 6; i++) p->vProps.devs[i] = 10 + i;
  p->railId = 3;
  p->planeId = 1;
  return CS_NET_OK;
}
static int vdev_last_ndevs;
static cs_net_result_t f_vdev12(int *d, struct cs_net_vprops_v12 *p) {
  vdev_last_ndevs = p->ndevs;
  *d = 100 + p->ndevs;
  return CS_NET_OK;
}
API cs_net_v12_t ncclNetPlugin_v12 = {
    "fake12",
    f_init11,
    f_devices,
    f_props12,
    f_listen11,
    f_connect11,
    f_accept,
    f_reg,
    NULL,
    f_dereg,
    f_isend11,
    f_irecv11,
    NULL,
    f_test,
    f_close,
    f_close,
    f_close_listen,
    NULL,
    NULL,
    f_vdev12,
    f_finalize,
    NULL,
};
#endif
API cs_net_v11_t ncclNetPlugin_v11 = {
    "fake",
    f_init11,
    f_devices,
    f_props11,
    f_listen11,
    f_connect11,
    f_accept,
    f_reg,
    NULL,
    f_dereg,
    f_isend11,
    f_irecv11,
    NULL,
    f_test,
    f_close,
    f_close,
    f_close_listen,
    NULL,
    NULL,
    NULL,
    f_finalize,
    NULL,
};
#else
static cs_net_result_t f_init9(cs_net_logger_t log) {
  (void)log;
  return env_is("FAKE_NET_FAIL", "init") ? CS_NET_SYSTEM_ERROR : CS_NET_OK;
}
static cs_net_result_t f_props9(int dev, struct cs_net_props_v9 *p) {
  struct cs_net_props_v11 q;
  f_props11(dev, &q);
  memcpy(p, &q, sizeof *p);
  return CS_NET_OK;
}
static cs_net_result_t f_connect9(int dev, void *handle, void **sc, void **dc) {
  (void)dev;
  if (dc) *dc = NULL;
  return f_connect_any(handle, sc);
}
static cs_net_result_t f_isend9(void *sc, void *data, size_t size, int tag, void *mh, void **req) {
  (void)tag;
  return f_isend_any(sc, data, size, mh, req);
}
static cs_net_result_t f_irecv9(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs, void **req) {
  (void)tags, (void)mhs;
  return f_irecv_any(rc, n, data, sizes, req);
}
API cs_net_v9_t ncclNetPlugin_v9 = {
    "fake9",
    f_init9,
    f_devices,
    f_props9,
    f_listen_any,
    f_connect9,
    f_accept,
    f_reg,
    NULL,
    f_dereg,
    f_isend9,
    f_irecv9,
    NULL,
    f_test,
    f_close,
    f_close,
    f_close_listen,
    NULL,
    NULL,
    NULL,
};
#endif
