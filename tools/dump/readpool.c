/* tools/dump/readpool.c: the readers' thread pool (readpool.h). */
#include "readpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct pool {
  atomic_size_t next;
  size_t n;
  void (*fn)(void *, size_t, unsigned);
  void *ctx;
};
struct worker {
  struct pool *p;
  unsigned id;
};

unsigned cs_pool_default_jobs(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1;
}

static void drain(struct pool *p, unsigned id) {
  for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) p->fn(p->ctx, i, id);
}
static void *thread_main(void *arg) {
  struct worker *w = arg;
  drain(w->p, w->id);
  return NULL;
}

void cs_pool_run(unsigned jobs, size_t n, void (*fn)(void *ctx, size_t i, unsigned worker), void *ctx) {
  struct pool p = {.n = n, .fn = fn, .ctx = ctx};
  atomic_init(&p.next, 0);
  if (jobs > n) jobs = (unsigned)n;
  if (jobs < 1) jobs = 1;
  pthread_t *t = jobs > 1 ? calloc(jobs, sizeof *t) : NULL;
  struct worker *w = jobs > 1 ? calloc(jobs, sizeof *w) : NULL;
  unsigned started = 0;
  if (t && w)
    for (unsigned k = 1; k < jobs; k++) {
      w[k] = (struct worker){&p, k};
      if (pthread_create(&t[k], NULL, thread_main, &w[k]) != 0) break;
      started = k;
    }
  drain(&p, 0);
  for (unsigned k = 1; k <= started; k++) pthread_join(t[k], NULL);
  free(t);
  free(w);
}
