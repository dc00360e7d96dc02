/* tests/sim/nccl/tests/harness.h: multi-rank harness for the NCCL simulator tests.
 * run_ranks() forks one child per rank BEFORE any CUDA call; each child sets RANK and
 * COLLSCOPE_HOSTNAME (hosts[] cycles), selects device = index of the rank on its host,
 * gets the unique id from rank 0 through a pipe, and runs fn. A child's exit status is its
 * failure count. Also: the reference arithmetic helpers shared by the tests. */
#ifndef SIMNCCL_TEST_HARNESS_H
#define SIMNCCL_TEST_HARNESS_H
#include <cuda_runtime.h>
#include <nccl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../simnccl_types.h"

static int h_fail;
#define CHECK(cond, ...)                                                                   \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      h_fail++;                                                                             \
      fprintf(stderr, "[pid %d] %s:%d: CHECK(%s) failed: ", (int)getpid(), __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                         \
      fprintf(stderr, "\n");                                                                \
    }                                                                                       \
  } while (0)
#define NCCLOK(call)                                                                        \
  do {                                                                                      \
    ncclResult_t r_ = (call);                                                               \
    if (r_ != ncclSuccess) { h_fail++; fprintf(stderr, "[pid %d] %s:%d: %s -> %d (%s)\n", (int)getpid(), __FILE__, __LINE__, #call, (int)r_, ncclGetErrorString(r_)); } \
  } while (0)
#define CUDAOK(call)                                                                        \
  do {                                                                                      \
    cudaError_t r_ = (call);                                                                \
    if (r_ != cudaSuccess) { h_fail++; fprintf(stderr, "[pid %d] %s:%d: %s -> cuda %d\n", (int)getpid(), __FILE__, __LINE__, #call, (int)r_); } \
  } while (0)

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct rank_ctx {
  int rank, nranks, dev;
  const char *host;
  ncclUniqueId id;
  void *arg;
};
typedef void (*rank_fn)(struct rank_ctx *);

/* env_extra: "NAME=value" strings set in every child (NULL-terminated, may be NULL) */
static inline int run_ranks(int nranks, const char *const *hosts, int nhosts, rank_fn fn, void *arg,
                     const char *const *env_extra, int timeout_s) {
  int pipes[64][2];
  pid_t pids[64];
  for (int r = 0; r < nranks; r++) if (pipe(pipes[r]) != 0) return 1;
  fflush(stdout); fflush(stderr);
  for (int r = 0; r < nranks; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      alarm((unsigned)timeout_s);
      char buf[16];
      snprintf(buf, sizeof buf, "%d", r);
      setenv("RANK", buf, 1);
      const char *host = hosts ? hosts[r % nhosts] : "simhost0";
      setenv("COLLSCOPE_HOSTNAME", host, 1);
      for (int i = 0; env_extra && env_extra[i]; i++) putenv((char *)env_extra[i]);
      struct rank_ctx c = {r, nranks, 0, host, {{0}}, arg};
      for (int q = 0; q < r; q++) if (!hosts || !strcmp(hosts[q % nhosts], host)) c.dev++;
      if (r == 0) {
        ncclGetUniqueId(&c.id);
        for (int q = 1; q < nranks; q++) if (write(pipes[q][1], &c.id, sizeof c.id) != (ssize_t)sizeof c.id) _exit(100);
      } else {
        if (read(pipes[r][0], &c.id, sizeof c.id) != (ssize_t)sizeof c.id) _exit(101);
      }
      cudaSetDevice(c.dev);
      fn(&c);
      fflush(stdout); fflush(stderr);
      exit(h_fail > 100 ? 100 : h_fail);   /* exit(): atexit handlers (link stats) run */
    }
  }
  int bad = 0;
  for (int r = 0; r < nranks; r++) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "rank %d: %s %d\n", r, WIFEXITED(st) ? "exit" : "signal",
              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      bad++;
    }
  }
  for (int r = 0; r < nranks; r++) { close(pipes[r][0]); close(pipes[r][1]); }
  return bad;
}

/* ---- deterministic inputs: rank r, element i, type t ---- */
static inline void fill_input(int t, void *buf, size_t n, int r, int salt) {
  for (size_t i = 0; i < n; i++) {
    long v = (long)((i * 7 + (size_t)r * 13 + (size_t)salt * 5) % 23) - 11;   /* -11..11 */
    switch (t) {
    case SN_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case SN_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(v + 11); break;
    case SN_INT32: ((int32_t *)buf)[i] = (int32_t)(v * 1000); break;
    case SN_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(v + 11) * 1000u; break;
    case SN_INT64: ((int64_t *)buf)[i] = (int64_t)v * 100000; break;
    case SN_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(v + 11) * 100000u; break;
    case SN_F16: ((uint16_t *)buf)[i] = sn_f2h((float)v * 0.37f); break;
    case SN_F32: ((float *)buf)[i] = (float)v * 0.37f + 1e-3f * (float)r; break;
    case SN_F64: ((double *)buf)[i] = (double)v * 0.37 + 1e-9 * r; break;
    case SN_BF16: ((uint16_t *)buf)[i] = sn_f2bf((float)v * 0.37f); break;
    case SN_F8E4M3: ((uint8_t *)buf)[i] = sn_f_to_e4m3((float)v * 0.37f); break;
    case SN_F8E5M2: ((uint8_t *)buf)[i] = sn_f_to_e5m2((float)v * 0.37f); break;
    }
  }
}

/* reference chain: dst[0..n) = post(((pre(in[order0]) op pre(in[order1])) op ...)) */
static inline void ref_chain(int t, int op, const void *scalar, void *dst, void *const *in, const int *order,
                             int norder, size_t off, size_t n, int nranks) {
  size_t es = sn_type_size(t);
  char *d = (char *)dst;
  sn_reduce(t, op, scalar, d, NULL, (const char *)in[order[0]] + off * es, n);
  for (int j = 1; j < norder; j++) sn_reduce(t, op, scalar, d, d, (const char *)in[order[j]] + off * es, n);
  sn_post(t, op, d, n, nranks);
}
/* capture what the children write on fdno (1 or 2) while body runs; the caller frees it */
static inline char *capture(int fdno, int (*body)(void *), void *arg, int *rc) {
  char path[] = "/tmp/simnccl-capXXXXXX";
  int fd = mkstemp(path);
  fflush(stdout); fflush(stderr);
  int saved = dup(fdno);
  dup2(fd, fdno);
  *rc = body(arg);
  fflush(stdout); fflush(stderr);
  dup2(saved, fdno);
  close(saved);
  off_t len = lseek(fd, 0, SEEK_END);
  char *buf = calloc((size_t)len + 1, 1);
  if (pread(fd, buf, (size_t)len, 0) < 0) buf[0] = 0;
  close(fd);
  unlink(path);
  return buf;
}

static inline int count_substr(const char *s, const char *sub) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, sub)); p++) n++;
  return n;
}
#endif
