/* tests/net/test_net_harness.c FAKE11 FAKE9: drives libcollscope's NCCL_NET wrapper
 * (shim/net_plugin.c, linked statically with the shim core) the way NCCL does, over the
 * loopback plugins of fake_inner.c. Each case runs in a forked child (the inner plugin is
 * loaded once per process):
 *  - missing: no COLLSCOPE_NET_INNER -> every init fails, one log line in all;
 *  - badpath: COLLSCOPE_NET_INNER names no library -> init fails;
 *  - initfail / connectfail: the inner's error comes back unchanged, nothing is wrapped;
 *  - basic: listen/connect/accept/regMr/isend/irecv/test through the v11 table; the inner sees
 *    its own handle bytes (fake_inner checks), the payload and sizes pass through, the two
 *    link records (send: peer rank from the handle; recv) share the token, bytes/msgs exact,
 *    p50 throughput matches the fake's delay; a closed connection's slot is reused;
 *  - fullhandle: the inner uses all 128 bytes -> no identity, still works (peer -1, token 0);
 *  - v9inner: v11, v10 and v9 entry points over a v9-only inner;
 *  - threads: 4 threads x 20000 messages on their own connections, exact totals;
 *  - pool: more connections than the wrapper's pool -> the extra ones work unwrapped;
 *  - overhead: ns per isend+test pair, direct vs through the wrapper (printed). */
#include "shim/cs_internal.h"
#include "collscope/nccl_net_abi.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern cs_net_v12_t ncclNetPlugin_v12;
extern cs_net_v11_t ncclNetPlugin_v11;
extern cs_net_v10_t ncclNetPlugin_v10;
extern cs_net_v9_t ncclNetPlugin_v9;

static int fails;
#define CHECK(c) \
  do { \
    if (!(c)) { \
      fprintf(stderr, "FAIL %s line %d: %s\n", g_case, __LINE__, #c); \
      fails++; \
    } \
  } while (0)
static const char *g_case = "";
static const char *fake11, *fake9;

static struct cs_record recs[4096];
static size_t nrecs;
static void emit(const struct cs_record *r) {
  if (nrecs < 4096) recs[nrecs++] = *r;
}
static void logf_(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static cs_net_v11_t *N = &ncclNetPlugin_v11;

/* connect a send/recv pair through the v11 table */
static int pair11(void *ctx, void **sc, void **rc, unsigned char *handle_out) {
  unsigned char handle[CS_NET_HANDLE_MAXSIZE];
  memset(handle, 0x5a, sizeof handle); /* NCCL's buffer is not zeroed; the wrapper zeroes it */
  void *lc = NULL;
  if (N->listen(ctx, 0, handle, &lc) != CS_NET_OK || !lc) return -1;
  if (handle_out) memcpy(handle_out, handle, sizeof handle);
  int r = N->connect(ctx, 0, handle, sc, NULL);
  if (r != CS_NET_OK || !*sc) {
    N->closeListen(lc);
    return r ? r : -1;
  }
  r = N->accept(lc, rc, NULL);
  N->closeListen(lc);
  return r == CS_NET_OK && *rc ? 0 : -1;
}

/* n messages of len bytes sc -> rc; returns 0 when every byte arrived intact */
static int traffic(void *sc, void *rc, int n, size_t len) {
  static __thread unsigned char sb[65536], rb[65536];
  void *smh = NULL, *rmh = NULL;
  if (N->regMr(sc, sb, sizeof sb, CS_NET_PTR_HOST, &smh) || N->regMr(rc, rb, sizeof rb, CS_NET_PTR_HOST, &rmh)) return -1;
  int bad = 0;
  for (int i = 0; i < n; i++) {
    memset(sb, i & 0xff, len);
    void *sr = NULL, *rr = NULL;
    while (!sr)
      if (N->isend(sc, sb, len, 0, smh, NULL, &sr)) return -1;
    void *d[1] = {rb};
    size_t sz[1] = {sizeof rb};
    int tags[1] = {0};
    void *mhs[1] = {rmh};
    while (!rr)
      if (N->irecv(rc, 1, d, sz, tags, mhs, NULL, &rr)) return -1;
    int sd = 0, rd = 0, got = -1;
    while (!sd || !rd) {
      if (!sd && N->test(sr, &sd, NULL)) return -1;
      if (!rd && N->test(rr, &rd, &got)) return -1;
    }
    if (got != (int)len || rb[0] != (unsigned char)(i & 0xff) || rb[len - 1] != (unsigned char)(i & 0xff)) bad++;
  }
  N->deregMr(sc, smh);
  N->deregMr(rc, rmh);
  return bad ? -1 : 0;
}

static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0, c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

static void case_missing(void) {
  unsetenv("COLLSCOPE_NET_INNER");
  cs_cfg.log_level = CS_LOG_WARN;
  char path[] = "/tmp/collscope-net-log-XXXXXX";
  int fd = mkstemp(path);
  int saved = dup(2);
  dup2(fd, 2);
  void *ctx = NULL;
  int r1 = N->init(&ctx, 1, NULL, logf_, NULL), r2 = N->init(&ctx, 2, NULL, logf_, NULL);
  int r3 = ncclNetPlugin_v10.init(logf_, NULL), r4 = ncclNetPlugin_v9.init(logf_);
  fflush(stderr);
  dup2(saved, 2);
  close(fd);
  CHECK(r1 != CS_NET_OK && r2 != CS_NET_OK && r3 != CS_NET_OK && r4 != CS_NET_OK);
  CHECK(count_lines(path) == 1); /* logged once */
  unlink(path);
}
static void case_badpath(void) {
  setenv("COLLSCOPE_NET_INNER", "/nonexistent/libnccl-net-none.so", 1);
  void *ctx = NULL;
  CHECK(N->init(&ctx, 1, NULL, logf_, NULL) != CS_NET_OK);
}
static void case_initfail(void) {
  setenv("FAKE_NET_FAIL", "init", 1);
  void *ctx = (void *)0x1;
  CHECK(N->init(&ctx, 1, NULL, logf_, NULL) == CS_NET_SYSTEM_ERROR); /* the inner's code */
  CHECK(ncclNetPlugin_v10.init(logf_, NULL) == CS_NET_SYSTEM_ERROR);
}
static void case_connectfail(void) {
  setenv("FAKE_NET_FAIL", "connect", 1);
  void *ctx = NULL, *lc = NULL, *sc = (void *)0x1;
  CHECK(N->init(&ctx, 1, NULL, logf_, NULL) == CS_NET_OK);
  unsigned char h[CS_NET_HANDLE_MAXSIZE];
  CHECK(N->listen(ctx, 0, h, &lc) == CS_NET_OK && lc);
  CHECK(N->connect(ctx, 0, h, &sc, NULL) == CS_NET_SYSTEM_ERROR);
  CHECK(sc == NULL);
  nrecs = 0;
  cs_net_collect(true, emit);
  CHECK(nrecs == 0);
}

static void case_basic(void) {
  setenv("FAKE_NET_DELAY_US", "200", 1);
  cs_cfg.rank = 5;
  void *ctx = NULL;
  CHECK(N->init(&ctx, 7, NULL, logf_, NULL) == CS_NET_OK);
  CHECK(strcmp(N->name, "fake") == 0); /* NCCL_NET=<name> keeps selecting the inner */
  int nd = 0;
  CHECK(N->devices(&nd) == CS_NET_OK && nd == 2);
  struct cs_net_props_v11 p;
  CHECK(N->getProperties(1, &p) == CS_NET_OK && p.speed == 200001 && !strcmp(p.name, "fake0"));
  CHECK(N->regMrDmaBuf == NULL && N->iflush == NULL); /* mirrors the inner's optional entries */
  void *sc = NULL, *rc = NULL;
  unsigned char h[CS_NET_HANDLE_MAXSIZE];
  CHECK(pair11(ctx, &sc, &rc, h) == 0);
  struct cs_net_id id;
  memcpy(&id, h + CS_NET_ID_OFFSET, sizeof id);
  CHECK(id.magic == CS_NET_ID_MAGIC && id.rank == 5 && id.token != 0);
  int64_t t0 = cs_now_ns(CLOCK_MONOTONIC);
  CHECK(traffic(sc, rc, 100, 4096) == 0);
  /* no message took longer than all of them: its rate is at least 4096 B over that time,
   * however slowly a busy host ran the 200 us delays */
  double floor_gbps = 4096.0 * 8.0 / (double)(cs_now_ns(CLOCK_MONOTONIC) - t0);
  nrecs = 0;
  CHECK(cs_net_collect(true, emit) == 2);
  const struct cs_record *s = recs[0].root == 0 ? &recs[0] : &recs[1], *r = recs[0].root == 0 ? &recs[1] : &recs[0];
  CHECK(s->type == CS_REC_LINK && r->type == CS_REC_LINK);
  CHECK(s->root == 0 && r->root == 1);
  CHECK(s->peer == 5 && r->peer == -1);
  CHECK(s->comm_id == id.token && r->comm_id == id.token);
  CHECK(s->bytes == 409600 && r->bytes == 409600 && s->count == 100 && r->count == 100);
  CHECK(s->seq >= 1); /* max in flight */
  /* 4096 B in >= 200 us: <= 0.164 Gbit/s (the bucket's middle may sit a bit above) */
  printf("basic: send p50 %.4f p10 %.4f mean %.4f Gbit/s (4096 B per 200 us = 0.164)\n", s->in_sum, s->in_abs, s->out_sum);
  CHECK(s->in_sum >= floor_gbps && s->in_sum < 0.2);
  CHECK(s->out_sum >= floor_gbps && s->out_sum <= 0.165);
  nrecs = 0;
  CHECK(cs_net_collect(false, emit) == 0); /* nothing new */
  CHECK(N->closeSend(sc) == CS_NET_OK && N->closeRecv(rc) == CS_NET_OK);
  void *sc2 = NULL, *rc2 = NULL; /* with no harvest thread (COLLSCOPE_DISABLE=1) close frees the slots */
  CHECK(pair11(ctx, &sc2, &rc2, NULL) == 0);
  CHECK(traffic(sc2, rc2, 3, 100) == 0);
  nrecs = 0;
  CHECK(cs_net_collect(true, emit) == 2); /* only the new pair: the closed ones are gone */
  CHECK(recs[0].count == 3 && recs[1].count == 3);
  CHECK(N->finalize(ctx) == CS_NET_OK);
}

static void case_fullhandle(void) {
  setenv("FAKE_NET_FULLHANDLE", "1", 1);
  void *ctx = NULL, *sc = NULL, *rc = NULL;
  CHECK(N->init(&ctx, 1, NULL, logf_, NULL) == CS_NET_OK);
  unsigned char h[CS_NET_HANDLE_MAXSIZE];
  CHECK(pair11(ctx, &sc, &rc, h) == 0);
  CHECK(h[CS_NET_HANDLE_MAXSIZE - 1] == 0xab); /* untouched */
  CHECK(traffic(sc, rc, 10, 1000) == 0);
  nrecs = 0;
  CHECK(cs_net_collect(true, emit) == 2);
  CHECK(recs[0].comm_id == 0 && recs[1].comm_id == 0 && recs[0].peer == -1 && recs[1].peer == -1);
}

/* NCCL 2.30 calls the v12 table: over a v11 inner the properties are v11's with rail and
 * plane ids undefined, and a virtual NIC of more devices than v11 takes is refused. */
static void case_v12outer(void) {
  cs_net_v12_t *T = &ncclNetPlugin_v12;
  void *ctx = NULL, *sc = NULL, *rc = NULL;
  CHECK(T->init(&ctx, 7, NULL, logf_, NULL) == CS_NET_OK);
  CHECK(strcmp(T->name, "fake") == 0);
  struct cs_net_props_v12 p;
  memset(&p, 0x5a, sizeof p);
  CHECK(T->getProperties(1, &p) == CS_NET_OK && p.speed == 200001 && !strcmp(p.name, "fake0"));
  CHECK(p.railId == CS_NET_ID_UNDEF && p.planeId == CS_NET_ID_UNDEF && p.maxMultiRequestSize == 1 &&
        p.maxP2pBytes == p.maxCollBytes && p.vProps.ndevs == 0);
  CHECK(T->makeVDevice == NULL);           /* the fake v11 inner has none */
  CHECK(pair11(ctx, &sc, &rc, NULL) == 0); /* v12's calls are v11's: same connections, timed */
  CHECK(traffic(sc, rc, 10, 256) == 0);
  nrecs = 0;
  CHECK(cs_net_collect(true, emit) == 2);
}

/* A v12 inner: a v12 caller gets its properties untouched; a v11 caller its first 4 devices
 * of a virtual NIC; makeVDevice through v11 reaches the inner as v12. */
static void case_v12inner(void) {
  void *ctx = NULL;
  CHECK(ncclNetPlugin_v12.init(&ctx, 7, NULL, logf_, NULL) == CS_NET_OK);
  CHECK(strcmp(ncclNetPlugin_v12.name, "fake12") == 0);
  struct cs_net_props_v12 p;
  CHECK(ncclNetPlugin_v12.getProperties(0, &p) == CS_NET_OK && p.railId == 3 && p.planeId == 1 &&
        p.vProps.ndevs == 6 && p.vProps.devs[5] == 15 && p.maxMultiRequestSize == 3);
  struct cs_net_props_v11 q;
  CHECK(N->getProperties(0, &q) == CS_NET_OK && q.vProps.ndevs == 4 && q.vProps.devs[3] == 13 &&
        q.speed == 200000 && q.maxMultiRequestSize == 3);
  struct cs_net_vprops v = {2, {1, 2, 0, 0}};
  int d = -1;
  CHECK(N->makeVDevice && N->makeVDevice(&d, &v) == CS_NET_OK && d == 102);
  struct cs_net_vprops_v12 v12 = {7, {0, 1, 2, 3, 4, 5, 6, 0}};
  CHECK(ncclNetPlugin_v12.makeVDevice(&d, &v12) == CS_NET_OK && d == 107);
  CHECK(ncclNetPlugin_v12.finalize(ctx) == CS_NET_OK);
}

static void case_v9inner(void) {
  void *ctx = NULL, *sc = NULL, *rc = NULL;
  CHECK(N->init(&ctx, 1, NULL, logf_, NULL) == CS_NET_OK);
  CHECK(strcmp(N->name, "fake9") == 0);
  struct cs_net_props_v11 p;
  CHECK(N->getProperties(0, &p) == CS_NET_OK && p.speed == 200000 && p.maxMultiRequestSize == 1);
  CHECK(pair11(ctx, &sc, &rc, NULL) == 0);
  CHECK(traffic(sc, rc, 20, 512) == 0);
  /* the v9 and v10 tables over the same inner */
  CHECK(ncclNetPlugin_v9.init(logf_) == CS_NET_OK && ncclNetPlugin_v10.init(logf_, NULL) == CS_NET_OK);
  unsigned char h[CS_NET_HANDLE_MAXSIZE];
  void *lc = NULL, *s9 = NULL, *r9 = NULL;
  CHECK(ncclNetPlugin_v9.listen(0, h, &lc) == CS_NET_OK);
  CHECK(ncclNetPlugin_v10.connect(0, NULL, h, &s9, NULL) == CS_NET_OK && s9);
  CHECK(ncclNetPlugin_v9.accept(lc, &r9, NULL) == CS_NET_OK && r9);
  void *mh = NULL, *req = NULL, *rreq = NULL;
  char buf[64] = "hello", out[64] = {0};
  CHECK(ncclNetPlugin_v9.regMr(s9, buf, sizeof buf, CS_NET_PTR_HOST, &mh) == CS_NET_OK);
  CHECK(ncclNetPlugin_v9.isend(s9, buf, 6, 0, mh, &req) == CS_NET_OK && req);
  void *d[1] = {out};
  size_t sz[1] = {sizeof out};
  int tags[1] = {0}, done = 0, got = 0;
  void *mhs[1] = {mh};
  CHECK(ncclNetPlugin_v9.irecv(r9, 1, d, sz, tags, mhs, &rreq) == CS_NET_OK && rreq);
  while (!done) CHECK(ncclNetPlugin_v9.test(rreq, &done, &got) == CS_NET_OK);
  done = 0;
  while (!done) CHECK(ncclNetPlugin_v9.test(req, &done, NULL) == CS_NET_OK);
  CHECK(got == 6 && !strcmp(out, "hello"));
  nrecs = 0;
  CHECK(cs_net_collect(true, emit) == 4);
}

struct thr {
  void *sc, *rc;
  int rc_;
};
static void *thr_main(void *a) {
  struct thr *t = a;
  t->rc_ = traffic(t->sc, t->rc, 20000, 64);
  return NULL;
}
static void case_threads(void) {
  void *ctx = NULL;
  CHECK(N->init(&ctx, 1, NULL, logf_, NULL) == CS_NET_OK);
  struct thr t[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) CHECK(pair11(ctx, &t[i].sc, &t[i].rc, NULL) == 0);
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, thr_main, &t[i]);
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(t[i].rc_ == 0);
  }
  nrecs = 0;
  CHECK(cs_net_collect(true, emit) == 8);
  uint64_t msgs = 0, bytes = 0;
  for (size_t i = 0; i < nrecs; i++) {
    msgs += recs[i].count;
    bytes += recs[i].bytes;
  }
  CHECK(msgs == 8 * 20000 && bytes == 8 * 20000 * 64);
}

static void case_pool(void) {
  void *ctx = NULL;
  CHECK(N->init(&ctx, 1, NULL, logf_, NULL) == CS_NET_OK);
  enum { NP = 520 }; /* 1040 connections > the wrapper's 1024 */
  static void *sc[NP], *rc[NP];
  for (int i = 0; i < NP; i++) CHECK(pair11(ctx, &sc[i], &rc[i], NULL) == 0);
  CHECK(traffic(sc[NP - 1], rc[NP - 1], 5, 128) == 0); /* unwrapped ones still work */
  CHECK(traffic(sc[0], rc[0], 5, 128) == 0);
  nrecs = 0;
  CHECK(cs_net_collect(true, emit) == 2); /* only the wrapped pair moved data */
  for (int i = 0; i < NP; i++) {
    N->closeSend(sc[i]);
    N->closeRecv(rc[i]);
  }
}

static double bench(void *sc, void *rc, int n, const cs_net_v11_t *T) {
  static unsigned char b[64];
  void *smh = NULL;
  T->regMr(sc, b, sizeof b, CS_NET_PTR_HOST, &smh);
  void *d[1] = {b};
  size_t sz[1] = {sizeof b};
  int tags[1] = {0};
  void *mhs[1] = {smh};
  /* the thread's own CPU time: time the host gave other processes is not the wrapper's */
  int64_t t0 = cs_now_ns(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < n; i++) {
    void *sr = NULL, *rr = NULL;
    int sd = 0, rd = 0, got;
    T->isend(sc, b, 8, 0, smh, NULL, &sr);
    T->irecv(rc, 1, d, sz, tags, mhs, NULL, &rr);
    while (!sd) T->test(sr, &sd, NULL);
    while (!rd) T->test(rr, &rd, &got);
  }
  return (double)(cs_now_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / n;
}
static void case_overhead(void) {
  void *ctx = NULL;
  CHECK(N->init(&ctx, 1, NULL, logf_, NULL) == CS_NET_OK);
  void *h = dlopen(fake11, RTLD_NOW | RTLD_LOCAL);
  const cs_net_v11_t *F = h ? dlsym(h, "ncclNetPlugin_v11") : NULL; /* same instance as the inner */
  CHECK(F != NULL);
  if (!F) return;
  void *sc = NULL, *rc = NULL;
  CHECK(pair11(ctx, &sc, &rc, NULL) == 0);
  /* a pair opened on the fake directly, without the wrapper */
  void *fctx = NULL, *flc = NULL, *fsc = NULL, *frc = NULL;
  unsigned char hd[CS_NET_HANDLE_MAXSIZE] = {0};
  F->init(&fctx, 1, NULL, logf_, NULL);
  F->listen(fctx, 0, hd, &flc);
  F->connect(fctx, 0, hd, &fsc, NULL);
  F->accept(flc, &frc, NULL);
  const int n = 200000;
  double direct = 1e18, wrapped = 1e18;
  for (int rep = 0; rep < 3; rep++) {
    double a = bench(fsc, frc, n, F), b = bench(sc, rc, n, N);
    if (a < direct) direct = a;
    if (b < wrapped) wrapped = b;
  }
  printf("overhead: isend+irecv+2 test per message: direct %.1f ns, through collscope %.1f ns (+%.1f ns, "
         "i.e. +%.1f ns per call)\n",
         direct, wrapped, wrapped - direct, (wrapped - direct) / 4);
  CHECK(wrapped < 4 * direct + 2000); /* sanity (sanitizer builds inflate both): far below a network latency */
}

static int run_case(const char *name, void (*fn)(void), const char *inner) {
  fflush(stdout);
  pid_t p = fork();
  if (p == 0) {
    g_case = name;
    if (inner) setenv("COLLSCOPE_NET_INNER", inner, 1);
    fn();
    fflush(stdout);
    _exit(fails ? 1 : 0);
  }
  int st = 0;
  waitpid(p, &st, 0);
  int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  printf("%-12s %s\n", name, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s FAKE11.so FAKE9.so FAKE12.so\n", argv[0]);
    return 2;
  }
  fake11 = argv[1];
  fake9 = argv[2];
  const char *fake12 = argv[3];
  int bad = 0;
  bad += run_case("missing", case_missing, NULL);
  bad += run_case("badpath", case_badpath, NULL);
  bad += run_case("initfail", case_initfail, fake11);
  bad += run_case("connectfail", case_connectfail, fake11);
  bad += run_case("basic", case_basic, fake11);
  bad += run_case("fullhandle", case_fullhandle, fake11);
  bad += run_case("v9inner", case_v9inner, fake9);
  bad += run_case("v12outer", case_v12outer, fake11);
  bad += run_case("v12inner", case_v12inner, fake12);
  bad += run_case("threads", case_threads, fake11);
  bad += run_case("pool", case_pool, fake11);
  bad += run_case("overhead", case_overhead, fake11);
  printf("%s\n", bad ? "FAILED" : "all passed");
  return bad ? 1 : 0;
}
