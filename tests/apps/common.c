/* tests/apps/common.c: see common.h. */
#include "common.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap.h"

struct app *app_self;
long app_errors;

void app_die(const char *file, int line, const char *what, const char *why) {
  struct app *a = app_self;
  fprintf(stderr, "%s rank %d: %s:%d: %s failed: %s\n", a ? a->name : "app", a ? a->rank : -1, file, line,
          what, why);
  fflush(NULL);
  exit(1);
}

static int env_int(const char *k, int def) {
  const char *v = getenv(k);
  if (!v || !*v) return def;
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || x < 0 || x > 1 << 20) {
    fprintf(stderr, "bad %s=%s\n", k, v);
    exit(2);
  }
  return (int)x;
}

static size_t parse_size(const char *name, const char *v) {
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  if (*end == 'K' || *end == 'k') {
    x <<= 10;
    end++;
  } else if (*end == 'M' || *end == 'm') {
    x <<= 20;
    end++;
  } else if (*end == 'G' || *end == 'g') {
    x <<= 30;
    end++;
  }
  if (*end || end == v || x == 0 || x > (1ull << 34)) {
    fprintf(stderr, "%s: --size: expected BYTES (with optional K/M/G), got '%s'\n", name, v);
    exit(2);
  }
  return (size_t)x;
}

static int parse_count(const char *name, const char *opt, const char *v, int lo, int hi) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || end == v || x < lo || x > hi) {
    fprintf(stderr, "%s: %s: expected %d..%d, got '%s'\n", name, opt, lo, hi, v);
    exit(2);
  }
  return (int)x;
}

/* a comma list of positive numbers (integers up to 1000 when `integers`), or exit 2 */
static int parse_list(const char *name, const char *opt, const char *v, double *out, int cap, int integers) {
  int n = 0;
  for (const char *p = v;;) {
    char *end;
    double x = strtod(p, &end);
    if (end == p || !(x > 0) || x > 1e6 || (integers && (x != (double)(int)x || x > 1000)) || n == cap ||
        (*end && *end != ',')) {
      fprintf(stderr, "%s: %s: expected a comma list of positive %s, got '%s'\n", name, opt,
              integers ? "integers" : "numbers", v);
      exit(2);
    }
    out[n++] = x;
    if (!*end) return n;
    p = end + 1;
  }
}

void app_init(struct app *a, const char *name, int argc, char **argv, const char *usage) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  memset(a, 0, sizeof *a);
  app_self = a;
  a->name = name;
  a->steps = 5;
  a->size = 1 << 20;
  a->layers = 4;
  a->microbatches = 4;
  a->tp = 2;
  a->ndevs = 0;
  a->work = 1.0;
  a->accum = 4;
  a->pp = 2;
  a->skew = 1.2;
  a->prefetch = 1;
  const char *share_list = NULL, *layer_list = NULL;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      printf("%s", usage);
      exit(0);
    }
    if (!strcmp(o, "-v") || !strcmp(o, "--verbose")) {
      a->verbose = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "%s: unknown option or missing value: %s (see --help)\n", name, o);
      exit(2);
    }
    if (!strcmp(o, "--steps"))
      a->steps = parse_count(name, o, v, 1, 1000000);
    else if (!strcmp(o, "--size"))
      a->size = parse_size(name, v);
    else if (!strcmp(o, "--batch-bytes"))
      a->batch_bytes = parse_size(name, v);
    else if (!strcmp(o, "--layers") && strchr(v, ','))
      layer_list = v;
    else if (!strcmp(o, "--layers"))
      a->layers = parse_count(name, o, v, 1, 1000);
    else if (!strcmp(o, "--shares"))
      share_list = v;
    else if (!strcmp(o, "--microbatches"))
      a->microbatches = parse_count(name, o, v, 1, 1000);
    else if (!strcmp(o, "--tp"))
      a->tp = parse_count(name, o, v, 1, 4096);
    else if (!strcmp(o, "--ndev"))
      a->ndevs = parse_count(name, o, v, 1, 4096);
    else if (!strcmp(o, "--compute-us"))
      a->compute_us = parse_count(name, o, v, 0, 10000000);
    else if (!strcmp(o, "--accum"))
      a->accum = parse_count(name, o, v, 1, 1000);
    else if (!strcmp(o, "--pp"))
      a->pp = parse_count(name, o, v, 1, 1024);
    else if (!strcmp(o, "--comms"))
      a->comms = parse_count(name, o, v, 1, 16);
    else if (!strcmp(o, "--prefetch"))
      a->prefetch = parse_count(name, o, v, 0, 1);
    else if (!strcmp(o, "--skew")) {
      char *end;
      a->skew = strtod(v, &end);
      if (*end || end == v || !(a->skew >= 0 && a->skew <= 10)) {
        fprintf(stderr, "%s: --skew: expected 0..10, got '%s'\n", name, v);
        exit(2);
      }
    } else if (!strcmp(o, "--ops") && (!strcmp(v, "allreduce") || !strcmp(v, "mixed") || !strcmp(v, "pairwise")))
      a->mixed = !strcmp(v, "mixed") ? APP_OPS_MIXED : !strcmp(v, "pairwise") ? APP_OPS_PAIRWISE
                                                                              : 0;
    else {
      fprintf(stderr, "%s: unknown option %s (see --help)\n", name, o);
      exit(2);
    }
    i++;
  }
  a->world = env_int("WORLD_SIZE", 1);
  a->rank = env_int("RANK", 0);
  a->local_world = env_int("LOCAL_WORLD_SIZE", a->world);
  a->local_rank = env_int("LOCAL_RANK", a->rank);
  a->host = getenv("COLLSCOPE_HOSTNAME");
  if (!a->host) a->host = "localhost";
  if (a->world < 1 || a->rank >= a->world) {
    fprintf(stderr, "%s: RANK=%d WORLD_SIZE=%d is inconsistent\n", name, a->rank, a->world);
    exit(2);
  }
  if (share_list) {
    double w[1024], sum = 0;
    int n = parse_list(name, "--shares", share_list, w, 1024, 0);
    if (n != a->world) {
      fprintf(stderr, "%s: --shares gives %d weights for %d ranks\n", name, n, a->world);
      exit(2);
    }
    for (int i = 0; i < n; i++) sum += w[i];
    a->work = (double)a->world * w[a->rank] / sum;
  }
  if (layer_list) {
    double l[1024];
    int n = parse_list(name, "--layers", layer_list, l, 1024, 1);
    if (n != a->world) {
      fprintf(stderr, "%s: --layers gives %d stages for %d ranks\n", name, n, a->world);
      exit(2);
    }
    a->stage_layers = (int)l[a->rank];
  }
  CUDACHECK(cudaGetDeviceCount(&a->ndev));
  if (a->ndev < 1) app_die(__FILE__, __LINE__, "cudaGetDeviceCount", "no devices");
  a->device = a->local_rank % a->ndev;
  CUDACHECK(cudaSetDevice(a->device));
}

void app_share_ids(struct app *a, ncclUniqueId *ids, int n) {
  char keys[16][64];
  if (n > 16) app_die(__FILE__, __LINE__, "app_share_ids", "too many ids");
  for (int k = 0; k < n; k++) snprintf(keys[k], sizeof keys[k], "%s.id%d", a->name, k);
  if (a->rank == 0) {
    struct bs_kv kv[16];
    for (int k = 0; k < n; k++) {
      NCCLCHECK(ncclGetUniqueId(&ids[k]));
      kv[k] = (struct bs_kv){keys[k], &ids[k], sizeof ids[k]};
    }
    if (a->world > 1 && bs_serve(kv, (size_t)n, (a->world - 1) * n) != 0)
      app_die(__FILE__, __LINE__, "bs_serve", "unique id exchange failed");
  } else {
    for (int k = 0; k < n; k++)
      if (bs_get(keys[k], &ids[k], sizeof ids[k]) != 0)
        app_die(__FILE__, __LINE__, "bs_get", "unique id exchange failed");
  }
}

ncclComm_t app_world_comm(struct app *a) {
  ncclUniqueId id;
  app_share_ids(a, &id, 1);
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, a->world, id, a->rank));
  return comm;
}

uint64_t app_fnv(uint64_t h, const void *p, size_t len) {
  const unsigned char *c = p;
  for (size_t i = 0; i < len; i++) {
    h ^= c[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint16_t app_f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
  return (uint16_t)(u >> 16);
}

float app_bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

void app_sleep_us(long us) {
  if (us <= 0) return;
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void app_mismatch(struct app *a, const char *what, size_t idx, double got, double want) {
  long before = __atomic_fetch_add(&app_errors, 1, __ATOMIC_RELAXED);
  if (before < 10)
    fprintf(stderr, "%s rank %d: MISMATCH %s[%zu] = %.9g, expected %.9g\n", a->name, a->rank, what, idx, got, want);
}

int app_finish(struct app *a) {
  if (app_errors) {
    printf("result %s rank=%d FAIL mismatches=%ld\n", a->name, a->rank, app_errors);
    return 1;
  }
  return 0;
}
