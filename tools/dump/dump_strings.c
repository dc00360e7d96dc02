/* tools/dump/dump_strings.c: the dump reader's memory and text: growable arrays, the set's
 * interned strings (shared by the reading threads) and the fast path's per-file cache of them,
 * its list of messages, and strings made safe to print (cs_text_safe). Part of the reader
 * (tools/dump/dumpfile.h). */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "collscope/record.h"
#include "collscope/schema.h"
#include "dump_internal.h"
#include "xalloc.h"

const char *dump_cached(struct cs_strpool *pool, struct icache *c, struct cs_slice v, int *op, enum csd_timing *tm) {
  unsigned i = 0;
  for (; i < ICACHE_N; i++)
    if (c->e[i].s && c->e[i].n == v.n && memcmp(c->e[i].s, v.s, v.n) == 0) break;
  if (i == ICACHE_N) {
    i = c->next++ % ICACHE_N;
    c->e[i].s = dump_intern_n(pool, v.s, v.n);
    c->e[i].n = v.n;
    c->e[i].op = cs_op_from_name(c->e[i].s);
    c->e[i].timing = dump_timing_from_name(c->e[i].s);
  }
  if (op) *op = c->e[i].op;
  if (tm) *tm = c->e[i].timing;
  return c->e[i].s;
}

void dump_grow(void **v, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return;
  size_t nc = *cap ? *cap * 2 : 64;
  while (nc <= n) nc *= 2;
  *v = xrealloc(*v, nc * sz);
  *cap = nc;
}

struct pool_ent {
  UT_hash_handle hh;
  char s[];
};
struct cs_strpool {
  struct pool_ent *head;
  pthread_mutex_t lock; /* files are read by several threads */
};

struct cs_strpool *dump_pool_new(void) {
  struct cs_strpool *p = calloc(1, sizeof *p);
  if (!p) oom();
  pthread_mutex_init(&p->lock, NULL);
  return p;
}

/* the interned copy of s[0..len) (s need not be NUL-terminated) */
const char *dump_intern_n(struct cs_strpool *p, const char *s, size_t len) {
  struct pool_ent *e = NULL;
  pthread_mutex_lock(&p->lock);
  HASH_FIND(hh, p->head, s, len, e);
  if (!e) {
    e = malloc(sizeof *e + len + 1);
    if (!e) oom();
    memset(&e->hh, 0, sizeof e->hh);
    memcpy(e->s, s, len);
    e->s[len] = 0;
    HASH_ADD_KEYPTR(hh, p->head, e->s, len, e);
  }
  pthread_mutex_unlock(&p->lock);
  return e->s;
}
const char *dump_intern(struct cs_strpool *p, const char *s) { return dump_intern_n(p, s, strlen(s)); }

void dump_pool_free(struct cs_strpool *p) {
  if (!p) return;
  struct pool_ent *e, *tmp;
  HASH_ITER(hh, p->head, e, tmp) {
    HASH_DEL(p->head, e);
    free(e);
  }
  pthread_mutex_destroy(&p->lock);
  free(p);
}

__attribute__((format(printf, 2, 3))) void dump_add_error(struct cs_dumpset *set, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (set->nerrors >= CS_DUMP_MAX_ERRORS) { /* a file of bad lines costs no memory per line */
    va_end(ap);
    set->errors_omitted++;
    return;
  }
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) oom();
  va_end(ap);
  dump_grow((void **)&set->errors, &set->errors_cap, set->nerrors, sizeof *set->errors);
  set->errors[set->nerrors++] = msg;
}

void cs_dumpset_print_errors(const struct cs_dumpset *set, FILE *f) {
  char buf[1024];
  for (size_t i = 0; i < set->nerrors; i++) fprintf(f, "collscope: %s\n", cs_text_safe(set->errors[i], buf, sizeof buf));
  if (set->errors_omitted)
    fprintf(f, "collscope: %zu more problems in %s not listed (counted in the report's notes)\n",
            set->errors_omitted, cs_text_safe(set->path, buf, sizeof buf));
}

const char *cs_text_safe(const char *s, char *buf, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  bool clean = true;
  for (size_t i = 0; p[i] && clean; i++)
    clean = p[i] >= 0x20 && p[i] != 0x7f && p[i] != '\\' && !(p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] < 0xa0);
  if (clean || n == 0) return s;
  size_t k = 0;
  for (size_t i = 0; p[i]; i++) {
    char esc[8];
    size_t m;
    if (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] < 0xa0) { /* C1 control, U+0080..U+009F */
      m = (size_t)snprintf(esc, sizeof esc, "\\x%02x", p[++i]);
    } else if (p[i] < 0x20 || p[i] == 0x7f) {
      m = (size_t)snprintf(esc, sizeof esc, "\\x%02x", p[i]);
    } else if (p[i] == '\\') {
      m = 2, esc[0] = esc[1] = '\\';
    } else {
      m = 1, esc[0] = (char)p[i];
    }
    if (k + m + 1 > n) break;
    memcpy(buf + k, esc, m);
    k += m;
  }
  buf[k] = 0;
  return buf;
}

const char *csd_timing_name(enum csd_timing t) {
  switch (t) {
  case CSD_TIMING_GPU_EVENT: return "gpu_event";
  case CSD_TIMING_CAPTURED: return "captured";
  case CSD_TIMING_HOST: return "host";
  case CSD_TIMING_ERROR: return "error";
  case CSD_TIMING_SAMPLED_OUT: return cs_timing_name(CS_TIMING_SAMPLED_OUT);
  default: return "unknown";
  }
}

enum csd_timing dump_timing_from_name(const char *s) {
  if (strcmp(s, "gpu_event") == 0) return CSD_TIMING_GPU_EVENT;
  /* also timed (start/end/dur valid): NCCL's kernel timer stamps via the profiler plugin,
   * and the host clock around a synchronous copy; timing_name keeps the exact source */
  if (strcmp(s, "profiler") == 0 || strcmp(s, "host_span") == 0) return CSD_TIMING_GPU_EVENT;
  if (strcmp(s, "captured") == 0) return CSD_TIMING_CAPTURED;
  if (strcmp(s, "host") == 0) return CSD_TIMING_HOST;
  if (strcmp(s, "error") == 0) return CSD_TIMING_ERROR;
  if (strcmp(s, cs_timing_name(CS_TIMING_SAMPLED_OUT)) == 0) return CSD_TIMING_SAMPLED_OUT; /* the writer's name */
  return CSD_TIMING_UNKNOWN;
}

uint64_t cs_dumpfile_drops(const struct cs_dumpfile *f) {
  return f->footer_drops > f->drops_records ? f->footer_drops : f->drops_records;
}

const char *cs_comm_hex(uint64_t comm, char buf[17]) {
  snprintf(buf, 17, "%016" PRIx64, comm);
  return buf;
}
