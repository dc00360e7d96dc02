/* bench/bench_planner.c: planning 32,768 hosts (1,024 leaves of 32 under 32 spines under
 * 4 cores, launch order shuffled) with cs_topo_plan(), which also counts the ring and
 * double-binary-tree crossings before and after. Prints the median and best of 15 runs;
 * target <= 20 ms. Exit status 1 if the best run is above the target (argv[1] = "--check"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collscope/topology.h"

#define NHOSTS 32768
#define PER_LEAF 32
#define LEAVES_PER_SPINE 32
#define SPINES_PER_CORE 8
#define RUNS 15

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  size_t cap = (size_t)NHOSTS * 48, len = 0;
  char *text = malloc(cap);
  if (!text) return 1;
  for (int h = 0; h < NHOSTS; h++) {
    int leaf = h / PER_LEAF, spine = leaf / LEAVES_PER_SPINE, core = spine / SPINES_PER_CORE;
    len += (size_t)snprintf(text + len, cap - len, "gpu%05d leaf%04d spine%03d core%d\n", h, leaf, spine, core);
  }
  struct cs_topo *t;
  char err[512];
  double t0 = now_ms();
  if (cs_topo_parse(text, len, "bench.map", CS_TOPO_MAP, &t, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  double parse_ms = now_ms() - t0;
  /* launch order: a fixed shuffle (a scheduler that interleaves leaves) */
  char **hosts = malloc(NHOSTS * sizeof *hosts);
  for (int i = 0; i < NHOSTS; i++) hosts[i] = t->host[i];
  unsigned s = 42;
  for (int i = NHOSTS - 1; i > 0; i--) {
    s = s * 1103515245u + 12345u;
    int j = (int)((s >> 8) % (unsigned)(i + 1));
    char *x = hosts[i];
    hosts[i] = hosts[j];
    hosts[j] = x;
  }
  double ms[RUNS];
  struct cs_plan p;
  for (int r = 0; r < RUNS; r++) {
    t0 = now_ms();
    if (cs_topo_plan(t, (const char *const *)hosts, NHOSTS, &p, err, sizeof err)) {
      fprintf(stderr, "%s\n", err);
      return 1;
    }
    ms[r] = now_ms() - t0;
    if (r + 1 < RUNS) cs_plan_free(&p);
  }
  qsort(ms, RUNS, sizeof ms[0], cmpd);
  printf("planner: %d hosts, %d leaves, %d spines, %d cores (levels %d): plan+crossings median %.2f ms, best %.2f ms "
         "(target <= 20 ms); parsing the %zu-byte map %.1f ms\n",
         NHOSTS, NHOSTS / PER_LEAF, NHOSTS / PER_LEAF / LEAVES_PER_SPINE,
         NHOSTS / PER_LEAF / LEAVES_PER_SPINE / SPINES_PER_CORE, t->nlevels, ms[RUNS / 2], ms[0], len, parse_ms);
  printf("planner: ring hops crossing leaf %ld -> %ld, spine %ld -> %ld, core %ld -> %ld; tree edges crossing leaf "
         "%ld -> %ld\n",
         p.before.ring[1], p.after.ring[1], p.before.ring[2], p.after.ring[2], p.before.ring[3],
         p.after.ring[3], p.before.tree[1], p.after.tree[1]);
  /* best of 15: on a shared machine the median measures the neighbours */
  int bad = argc > 1 && !strcmp(argv[1], "--check") && ms[0] > 20.0;
  cs_plan_free(&p);
  free(hosts);
  cs_topo_free(t);
  free(text);
  return bad;
}
