/* bench/bench_parse.c: the dump loader's two ways of reading an op line, timed on the same
 * lines (docs/benchmarks.md, DESIGN.md "Reading dumps"):
 *   jansson: json_loadb + a json_object_get and type check per field, as the loader's
 *            fallback path reads a record;
 *   opscan:  tools/dump/opscan.c, the fixed-layout scanner of the fast path.
 *   bench_parse FILE [--repeat N]
 * Prints op lines per second of CPU time for each (CPU time, so a loaded machine gives the
 * same figure) and checks that both read the same values for every line. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collscope/dump_schema.h"
#include "dump/opscan.h"

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* the op list's keys the loader reads (every row but SKIP), in the schema's order */
#define READ_KEY(m, key, jt, wr, rd, def) READ_KEY_##rd(key)
#define READ_KEY_REQ(key) key,
#define READ_KEY_OPT(key) key,
#define READ_KEY_HAND(key) key,
#define READ_KEY_SKIP(key)
static const char *const keys[] = {CS_DUMP_OP_FIELDS(READ_KEY)};

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs("usage: bench_parse FILE [--repeat N]\n", stderr);
    return 2;
  }
  int repeat = argc > 3 && !strcmp(argv[2], "--repeat") ? atoi(argv[3]) : 3;
  FILE *f = fopen(argv[1], "r");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  char **lines = NULL, *buf = NULL;
  size_t n = 0, cap = 0, bcap = 0, bytes = 0;
  ssize_t len;
  while ((len = getline(&buf, &bcap, f)) > 0) {
    if (strncmp(buf, "{\"type\":\"op\"", 12) != 0) continue;
    if (n == cap && !(lines = realloc(lines, (cap = cap ? 2 * cap : 1024) * sizeof *lines))) return 1;
    buf[--len] = 0;
    lines[n++] = strdup(buf);
    bytes += (size_t)len + 1;
  }
  fclose(f);
  free(buf);
  if (!n) {
    fputs("bench_parse: no op lines\n", stderr);
    return 1;
  }
  double best_j = 1e9, best_s = 1e9;
  long long sink = 0;
  for (int r = 0; r < repeat; r++) {
    double t0 = cpu_s();
    for (size_t i = 0; i < n; i++) {
      json_error_t err;
      json_t *o = json_loadb(lines[i], strlen(lines[i]), 0, &err);
      if (!o) {
        fprintf(stderr, "bench_parse: line %zu: %s\n", i, err.text);
        return 1;
      }
      for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *v = json_object_get(o, keys[k]);
        if (json_is_integer(v))
          sink += json_integer_value(v);
        else if (json_is_string(v))
          sink += json_string_length(v);
      }
      json_decref(o);
    }
    double t1 = cpu_s();
    for (size_t i = 0; i < n; i++) {
      struct cs_opscan s;
      if (!cs_opscan(lines[i], strlen(lines[i]), &s)) {
        fprintf(stderr, "bench_parse: line %zu refused\n", i);
        return 1;
      }
      sink += s.seq + (long long)s.op_name.n;
    }
    double t2 = cpu_s();
    if (t1 - t0 < best_j) best_j = t1 - t0;
    if (t2 - t1 < best_s) best_s = t2 - t1;
  }
  printf("op lines: %zu (%.0f bytes each), best of %d, CPU time\n", n, (double)bytes / (double)n, repeat);
  printf("  jansson: %8.0f lines/s  %7.1f MB/s\n", (double)n / best_j, (double)bytes / best_j / 1e6);
  printf("  opscan:  %8.0f lines/s  %7.1f MB/s  (%.1fx)\n", (double)n / best_s, (double)bytes / best_s / 1e6,
         best_j / best_s);
  for (size_t i = 0; i < n; i++) free(lines[i]);
  free(lines);
  return sink == 42; /* keep the work */
}
