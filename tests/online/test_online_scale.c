/* tests/online/test_online_scale.c: the online exchange's cost per rank does not grow with
 * the job. The in-process model (online_model.h) runs the real protocol code at 8, 1,024,
 * 32,768 and 131,072 ranks -- a straggler (rank 5) and a fingerprint flip (rank 2) in the
 * job -- and prints, per rank per exchange, the bytes each rank contributes to the
 * all-reduces (what it sends into and receives from them; a ring all-reduce moves about
 * twice that on the wire) and the CPU it spends building and evaluating its contribution
 * (the median over the kept ranks, one run: printed, not judged, as a CPU time depends on
 * the machine and its load). Asserts the largest bytes within 2x of the
 * smallest, and that every size found the straggler and the suspect. For comparison it
 * prints the all-gather protocol's bytes (a 2 KiB summary per rank, all of them received by
 * every rank).
 *
 * test_online_scale --only N: one run of N ranks, for online_scale_insn.py, which counts
 * the kept ranks' pack and unpack instructions under callgrind (the judged CPU figure). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "online_model.h"

#define EXCHANGES 2
#define KEPT 5 /* ranks with a persistent state: 0, 2, 5, n/2, n-1 */

struct result {
  double bytes, cpu_us;
  bool straggler, suspect;
};

static int run(int n, struct result *res) {
  struct model_gen g = {n, 16, 8, 0x77, 5, 400, 2, MODEL_SDC_SEQ0 + 8 + 3, false, -1, 0};
  bool *keep = calloc((size_t)n, sizeof *keep);
  if (!keep) return -1;
  int kept[KEPT] = {0, 2, 5, n / 2, n - 1};
  for (size_t i = 0; i < KEPT; i++) keep[kept[i]] = true;
  struct model *m = model_new(n, keep, model_gen_feed, &g);
  free(keep);
  if (!m) return -1;
  double bytes = 0, cpu = 0;
  for (uint32_t x = 1; x <= EXCHANGES; x++) {
    if (model_exchange(m, x) || m->disagree) {
      model_free(m);
      return -1;
    }
    bytes += (double)m->bytes_per_rank;
    cpu += m->cpu_us_median;
    const struct cs_online_findings *f = &m->f[0];
    for (size_t i = 0; i < f->nstragglers; i++)
      if (f->stragglers[i].rank == 5) res->straggler = true;
    for (size_t i = 0; i < f->nsdc; i++)
      if (f->sdc[i].suspect_rank == 2 && f->sdc[i].suspect_host && !strcmp(f->sdc[i].suspect_host, "node1"))
        res->suspect = true;
  }
  res->bytes = bytes / EXCHANGES;
  res->cpu_us = cpu / EXCHANGES;
  model_free(m);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--only")) {
    struct result one;
    memset(&one, 0, sizeof one);
    int n = atoi(argv[2]);
    if (n < 8 || run(n, &one)) {
      fprintf(stderr, "model failed at %d ranks\n", n);
      return 1;
    }
    printf("%d ranks: kept %d, exchanges %d, found %s %s\n", n, KEPT, EXCHANGES,
           one.straggler ? "strag" : "-", one.suspect ? "sdc" : "-");
    return one.straggler && one.suspect ? 0 : 1;
  }
  const int sizes[] = {8, 1024, 32768, 131072};
  struct result r[4];
  memset(r, 0, sizeof r);
  printf("%8s %22s %22s %20s %10s\n", "ranks", "bytes/rank/exchange", "all-gather (before)", "eval CPU us/rank", "found");
  double bmin = 1e300, bmax = 0, cmin = 1e300, cmax = 0; /* CPU: printed only */
  int fail = 0;
  for (int i = 0; i < 4; i++) {
    if (run(sizes[i], &r[i])) {
      fprintf(stderr, "model failed at %d ranks\n", sizes[i]);
      return 1;
    }
    double before = 2048.0 * sizes[i];
    printf("%8d %22.0f %22.0f %20.1f %5s %4s\n", sizes[i], r[i].bytes, before, r[i].cpu_us,
           r[i].straggler ? "strag" : "-", r[i].suspect ? "sdc" : "-");
    if (r[i].bytes < bmin) bmin = r[i].bytes;
    if (r[i].bytes > bmax) bmax = r[i].bytes;
    if (r[i].cpu_us < cmin) cmin = r[i].cpu_us;
    if (r[i].cpu_us > cmax) cmax = r[i].cpu_us;
    if (!r[i].straggler || !r[i].suspect) {
      fprintf(stderr, "FAIL: %d ranks: straggler or suspect not found\n", sizes[i]);
      fail = 1;
    }
  }
  printf("bytes max/min %.2f, CPU max/min %.2f\n", bmax / bmin, cmax / cmin);
  if (bmax > 2 * bmin) {
    fprintf(stderr, "FAIL: bytes per rank grow with the job\n");
    fail = 1;
  }
  return fail;
}
