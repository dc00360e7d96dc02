/* tests/fuzz/fuzz_target.c: one libFuzzer entry point per parser, chosen at compile time:
 * FUZZ_HOSTLIST (cs_hostlist_expand + compress round trip, count = expansion), FUZZ_FORMAT=
 * CS_TOPO_SLURM / CS_TOPO_MAP / CS_TOPO_IBNET / CS_TOPO_AUTO (cs_topo_parse_limited with a
 * 4096-host cap and a work budget, then plan every host in
 * reverse order and check the plan is a permutation with leaves contiguous), FUZZ_ADDR
 * (cs_topo_from_addrs: first line the pattern, one address per further line).
 * Built with clang -fsanitize=fuzzer,address,undefined, or with driver.c (gcc). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/hostlist.h"
#include "collscope/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static __attribute__((unused)) void check_plan(const struct cs_topo *t) {
  size_t n = t->nhost;
  const char **hosts = malloc((n ? n : 1) * sizeof *hosts);
  if (!hosts) return;
  for (size_t i = 0; i < n; i++) hosts[i] = t->host[n - 1 - i];
  struct cs_plan p;
  char err[256];
  if (cs_topo_plan(t, hosts, n, &p, err, sizeof err) == 0) {
    char *seen = calloc(n ? n : 1, 1);
    for (size_t i = 0; i < n; i++) {
      if (p.order[i] >= n || seen[p.order[i]]) abort();
      seen[p.order[i]] = 1;
    }
    for (int l = 0; l < p.nlevels; l++)
      if (p.after.groups[l] > 1 && p.after.ring[l] != p.after.groups[l]) abort();
    free(seen);
    cs_plan_free(&p);
  } else {
    abort(); /* every host of the file is known */
  }
  free(hosts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
#if defined(FUZZ_HOSTLIST)
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  char **h;
  size_t n;
  char err[256];
  size_t counted;
  int crc = cs_hostlist_each(s, 4096, NULL, NULL, &counted, err, sizeof err);
  if (cs_hostlist_expand_max(s, 4096, &h, &n, err, sizeof err) == 0) {
    if (crc != 0 || counted != n) abort(); /* counting agrees with expanding */
    char *c = cs_hostlist_compress((const char *const *)h, n);
    if (c) {
      char **h2;
      size_t n2;
      if (cs_hostlist_expand_max(c, 8192, &h2, &n2, err, sizeof err) != 0 || n2 > n) abort();
      cs_hostlist_free(h2, n2);
      free(c);
    }
    cs_hostlist_free(h, n);
  } else if (crc == 0) {
    abort();
  }
  free(s);
#elif defined(FUZZ_ADDR)
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  const char *addrs[64];
  size_t n = 0;
  char *save = NULL, *pat = strtok_r(s, "\n", &save);
  for (char *l = strtok_r(NULL, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save)) addrs[n++] = l;
  struct cs_topo *t;
  char err[256];
  if (pat && cs_topo_from_addrs(addrs, n, pat, &t, err, sizeof err) == 0) {
    check_plan(t);
    cs_topo_free(t);
  }
  free(s);
#else
  struct cs_topo *t;
  char err[512];
  /* small caps keep each input fast and reach the cap and budget paths */
  const struct cs_topo_limits lim = {.max_hosts = 4096, .max_work = 20000};
  if (cs_topo_parse_limited((const char *)data, size, "fuzz", FUZZ_FORMAT, &lim, &t, err, sizeof err) == 0) {
    if (t->nhost <= 4096) check_plan(t);
    cs_topo_free(t);
  } else if (strncmp(err, "fuzz", 4) != 0) {
    abort(); /* every error names the file */
  }
#endif
  return 0;
}
