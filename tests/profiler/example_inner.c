/* tests/profiler/example_inner.c: a small NCCL profiler plugin for the chaining tests
 * (libnccl-profiler-example.so): it writes the events NCCL hands it to a file, so a run with
 * collscope in front (COLLSCOPE_PROFILER_INNER=example) can be compared line by line with a
 * run where NCCL loads it alone (NCCL_PROFILER_PLUGIN=example).
 *
 * Exports ncclProfiler_v6 and ncclProfiler_v5 (-DEXAMPLE_NO_SYMBOLS: neither, a library NCCL
 * would call unsupported). Environment:
 *   EXAMPLE_INNER_OUT   folder; each process appends to <folder>/inner.<pid>.txt
 *   EXAMPLE_INNER_MASK  the event types it asks for (default Coll | KernelCh = 0x42)
 *   EXAMPLE_INNER_FAIL  "init": init fails (ncclInternalError)
 * Lines carry no time stamps and no addresses, only what NCCL described: the event type,
 * the op (func, count, seq), the channel, and for a child its parent's description -- or
 * "BADPARENT" when the parent handle is not one this plugin gave out (a handle the plugin
 * in front failed to translate). A handle it does not know at stop / record time prints
 * "BADHANDLE". Test code: event objects are kept to the end of the process (no reuse). */
#include "collscope/nccl_profiler_abi.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

#ifndef EXAMPLE_NO_SYMBOLS
#define MAXEV 200000
struct ev {
  unsigned magic;
  char what[512];
};
static struct ev *evs[MAXEV];
static int nev;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static int ctx_tag;

static void emit(const char *fmt, const char *a, const char *b) {
  if (!out) return;
  fprintf(out, fmt, a, b);
  fputc('\n', out);
  fflush(out);
}

static struct ev *known(void *h) { /* under lock */
  for (int i = nev; i-- > 0;)
    if ((void *)evs[i] == h) return evs[i];
  return NULL;
}

static cs_nccl_result_t ex_init(void **ctx, uint64_t comm, int *mask, const char *name, int nnodes, int nranks,
                                int rank, cs_nccl_logger_t log) {
  (void)comm, (void)name, (void)nnodes, (void)log;
  const char *f = getenv("EXAMPLE_INNER_FAIL");
  if (f && !strcmp(f, "init")) return 3;
  const char *m = getenv("EXAMPLE_INNER_MASK");
  *mask = m && *m ? (int)strtol(m, NULL, 0) : (CS_NCCL_PROFILE_COLL | CS_NCCL_PROFILE_KERNEL_CH);
  pthread_mutex_lock(&lock);
  if (!out) {
    const char *dir = getenv("EXAMPLE_INNER_OUT");
    char path[512];
    if (dir && *dir) {
      snprintf(path, sizeof path, "%s/inner.%d.txt", dir, (int)getpid());
      out = fopen(path, "a");
    }
  }
  char a[64], b[64];
  snprintf(a, sizeof a, "%d", rank);
  snprintf(b, sizeof b, "%d mask=0x%x", nranks, *mask);
  emit("init rank=%s nranks=%s", a, b);
  pthread_mutex_unlock(&lock);
  *ctx = &ctx_tag;
  return 0;
}

static cs_nccl_result_t ex_start(void *ctx, void **h, cs_nccl_prof_descr_v6_t *d) {
  *h = NULL;
  if (ctx != &ctx_tag) return 0;
  struct ev *e = calloc(1, sizeof *e);
  if (!e) return 0;
  e->magic = 0x65786d70;
  pthread_mutex_lock(&lock);
  struct ev *parent = d->parentObj ? known(d->parentObj) : NULL;
  const char *pw = !d->parentObj ? "-" : parent ? parent->what
                                                : "BADPARENT";
  switch (d->type) {
  case CS_NCCL_PROFILE_COLL:
    snprintf(e->what, sizeof e->what, "Coll %s count=%zu seq=%llu root=%d nch=%d rank=%d", d->coll.func,
             d->coll.count, (unsigned long long)d->coll.seqNumber, d->coll.root, d->coll.nChannels, d->rank);
    break;
  case CS_NCCL_PROFILE_P2P:
    snprintf(e->what, sizeof e->what, "P2p %s count=%zu peer=%d rank=%d", d->p2p.func, d->p2p.count, d->p2p.peer,
             d->rank);
    break;
  case CS_NCCL_PROFILE_KERNEL_CH:
    snprintf(e->what, sizeof e->what, "KernelCh ch=%d of [%.300s]", d->kernelCh.channelId, pw);
    break;
  case CS_NCCL_PROFILE_CE_COLL:
    snprintf(e->what, sizeof e->what, "CeColl %s count=%zu seq=%llu rank=%d", d->ceColl.func, d->ceColl.count,
             (unsigned long long)d->ceColl.seqNumber, d->rank);
    break;
  default:
    snprintf(e->what, sizeof e->what, "type=0x%llx of [%.300s]", (unsigned long long)d->type, pw);
    break;
  }
  if (nev < MAXEV) evs[nev++] = e;
  emit("start %s%s", e->what, "");
  pthread_mutex_unlock(&lock);
  *h = e;
  return 0;
}
static cs_nccl_result_t ex_start5(void *ctx, void **h, cs_nccl_prof_descr_v5_t *d) {
  cs_nccl_prof_descr_v6_t d6; /* same layout for every v5 member */
  memcpy(&d6, d, sizeof d6);
  return ex_start(ctx, h, &d6);
}

static cs_nccl_result_t ex_stop(void *h) {
  pthread_mutex_lock(&lock);
  struct ev *e = known(h);
  emit("stop %s%s", e ? e->what : "BADHANDLE", "");
  pthread_mutex_unlock(&lock);
  return 0;
}

static cs_nccl_result_t ex_state(void *h, cs_nccl_profiler_state_t st, cs_nccl_prof_state_args_t *a) {
  (void)a;
  pthread_mutex_lock(&lock);
  struct ev *e = known(h);
  char s[32];
  snprintf(s, sizeof s, "%d", st);
  emit("state %s of %s", s, e ? e->what : "BADHANDLE");
  pthread_mutex_unlock(&lock);
  return 0;
}

static cs_nccl_result_t ex_finalize(void *ctx) {
  pthread_mutex_lock(&lock);
  emit("finalize%s%s", ctx == &ctx_tag ? "" : " BADCONTEXT", "");
  pthread_mutex_unlock(&lock);
  return 0;
}

API cs_nccl_profiler_v6_t ncclProfiler_v6 = {"example", ex_init, ex_start, ex_stop, ex_state, ex_finalize};
API cs_nccl_profiler_v5_t ncclProfiler_v5 = {"example", ex_init, ex_start5, ex_stop, ex_state, ex_finalize};
#else
API int example_inner_has_no_profiler_symbols;
#endif
