/* topology/plan.c: the planner (hosts in launch order -> an order in which every leaf
 * is contiguous and leaves under one upper switch are adjacent, recursively) and the
 * crossing counts of NCCL's inter-node ring and double binary tree. O(n log n) with
 * n x nlevels integer keys; no per-item allocation (but one per distinct unknown host,
 * to report each once). */
#include "collscope/topology.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collscope/uthash_nonfatal.h" /* out of memory in a hash add: never exit (this runs in the shim) */

/* NCCL's binary tree (src/graph/trees.cc, ncclGetBtree): parent of `rank`, -1 for 0. */
static int btree_up(int nranks, int rank) {
  if (rank == 0) return -1;
  int bit;
  for (bit = 1; bit < nranks; bit <<= 1)
    if (bit & rank) break;
  int up = (rank ^ bit) | (bit << 1);
  if (up >= nranks) up = rank ^ bit;
  return up;
}

/* The second tree of ncclGetDtree: mirrored (even nranks) or shifted by one (odd). */
static int dtree1_up(int nranks, int rank) {
  if (nranks % 2 == 1) {
    int u = btree_up(nranks, (rank - 1 + nranks) % nranks);
    return u == -1 ? -1 : (u + 1) % nranks;
  }
  int u = btree_up(nranks, nranks - 1 - rank);
  return u == -1 ? -1 : nranks - 1 - u;
}

/* All ancestors of host h, levels 0..L-1, in one walk up. */
static void ancestors(const struct cs_topo *t, int h, int *out) {
  int L = t->nlevels, s = t->host_leaf[h];
  out[0] = h;
  for (int l = 1; l < L; l++) {
    out[l] = s;
    if (t->sw[s].parent >= 0) s = t->sw[s].parent;
  }
}

static void count_edge(const int *na, int L, int a, int b, long *acc) {
  const int *x = na + (size_t)a * (size_t)L, *y = na + (size_t)b * (size_t)L;
  for (int l = 0; l < L; l++)
    if (x[l] != y[l]) acc[l]++;
}

void cs_topo_crossings(const struct cs_topo *t, const int *hostidx, const size_t *order, size_t n,
                       struct cs_crossings *out) {
  memset(out, 0, sizeof *out);
  if (!t || !n) return;
  /* calloc'd tables indexed by host or switch id, reset only where touched: the cost is
   * O(n x levels) whatever the size of the topology (a communicator of 4 ranks under a
   * file of 500,000 hosts touches a few pages, not megabytes) */
  int *node_of = calloc(t->nhost ? t->nhost : 1, sizeof *node_of); /* node + 1, 0: none */
  int *node_host = malloc(n * sizeof *node_host);
  char *seen = calloc((t->nhost > t->nsw ? t->nhost : t->nsw) + 1, 1);
  if (!node_of || !node_host || !seen) {
    free(node_of);
    free(node_host);
    free(seen);
    return;
  }
  int nn = 0;
  for (size_t i = 0; i < n; i++) {
    int h = hostidx[order ? order[i] : i];
    if (h < 0 || (size_t)h >= t->nhost) continue;
    if (!node_of[h]) {
      node_host[nn++] = h;
      node_of[h] = nn;
    }
  }
  int L = t->nlevels;
  int *na = malloc(((size_t)nn * (size_t)L + 1) * sizeof *na); /* node k's ancestors */
  if (!na) {
    free(node_of);
    free(node_host);
    free(seen);
    return;
  }
  for (int k = 0; k < nn; k++) ancestors(t, node_host[k], na + (size_t)k * (size_t)L);
  for (int l = 0; l < L; l++) {
    for (int k = 0; k < nn; k++) {
      int a = na[(size_t)k * (size_t)L + (size_t)l];
      if (!seen[a]) {
        seen[a] = 1;
        out->groups[l]++;
      }
    }
    for (int k = 0; k < nn; k++) seen[na[(size_t)k * (size_t)L + (size_t)l]] = 0;
  }
  if (nn > 1) {
    for (int k = 0; k < nn; k++) count_edge(na, L, k, (k + 1) % nn, out->ring);
    for (int k = 0; k < nn; k++) {
      int u0 = btree_up(nn, k), u1 = dtree1_up(nn, k);
      if (u0 >= 0) count_edge(na, L, k, u0, out->tree);
      if (u1 >= 0) count_edge(na, L, k, u1, out->tree);
    }
  }
  free(na);
  free(node_of);
  free(node_host);
  free(seen);
}

void cs_plan_free(struct cs_plan *p) {
  if (!p) return;
  free(p->hostidx);
  free(p->order);
  free(p->pos);
  memset(p, 0, sizeof *p);
}

int cs_topo_plan(const struct cs_topo *t, const char *const *hosts, size_t n, struct cs_plan *p,
                 char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  if (err && errlen) err[0] = '\0';
  if (!t || (!hosts && n)) {
    if (err && errlen) snprintf(err, errlen, "invalid argument");
    return -1;
  }
  p->n = n;
  p->nlevels = t->nlevels;
  p->hostidx = malloc((n ? n : 1) * sizeof *p->hostidx);
  p->order = malloc((n ? n : 1) * sizeof *p->order);
  p->pos = malloc((n ? n : 1) * sizeof *p->pos);
  int L = t->nlevels;
  int *keys = malloc((n ? n : 1) * (size_t)L * sizeof *keys);
  size_t m = t->nhost > t->nsw ? t->nhost : t->nsw;
  int *first = calloc(m ? m : 1, sizeof *first); /* first appearance + 1, 0: none; reset where touched */
  if (!p->hostidx || !p->order || !p->pos || !keys || !first) {
    free(keys);
    free(first);
    cs_plan_free(p);
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return -1;
  }
  size_t unknown = 0, ulen = 0;
  struct unknown_host {
    const char *name;
    UT_hash_handle hh;
  } *seen = NULL, *u, *tmpu;
  int oom = 0;
  for (size_t j = 0; j < n; j++) {
    p->hostidx[j] = cs_topo_host_index(t, hosts[j]);
    if (p->hostidx[j] >= 0) continue;
    HASH_FIND_STR(seen, hosts[j], u); /* report each unknown host once */
    if (u) continue;
    if (!(u = malloc(sizeof *u))) {
      oom = 1;
      break;
    }
    u->name = hosts[j];
    HASH_ADD_KEYPTR(hh, seen, u->name, strlen(u->name), u);
    if (!CS_HASH_ADDED()) {
      free(u);
      oom = 1;
      break;
    }
    if (unknown < 8 && err && errlen > ulen + 1) {
      int k = snprintf(err + ulen, errlen - ulen, "%s%s", unknown ? ", " : "", hosts[j]);
      if (k > 0) ulen += (size_t)k < errlen - ulen ? (size_t)k : errlen - ulen - 1;
    }
    unknown++;
  }
  HASH_ITER(hh, seen, u, tmpu) {
    HASH_DEL(seen, u);
    free(u);
  }
  if (oom) {
    free(keys);
    free(first);
    cs_plan_free(p);
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (unknown) {
    if (err && errlen) {
      char list[512];
      snprintf(list, sizeof list, "%s", err);
      snprintf(err, errlen, "%zu host%s not in the topology: %s%s", unknown, unknown == 1 ? " is" : "s are", list,
               unknown > 8 ? ", ..." : "");
    }
    free(keys);
    free(first);
    cs_plan_free(p);
    return -1;
  }
  /* key of item j at column c = first appearance of its ancestor at level L-1-c */
  int anc[CS_TOPO_MAX_LEVELS];
  for (size_t j = 0; j < n; j++) {
    ancestors(t, p->hostidx[j], anc);
    for (int l = 0; l < L; l++) keys[j * (size_t)L + (size_t)(L - 1 - l)] = anc[l];
  }
  for (int c = 0; c < L; c++) {
    for (size_t j = 0; j < n; j++) {
      int a = keys[j * (size_t)L + (size_t)c];
      if (!first[a]) first[a] = (int)j + 1;
    }
    /* backwards: an ancestor's first item is the last of its items seen, where its entry
     * is reset for the next column */
    for (size_t j = n; j-- > 0;) {
      int *k = &keys[j * (size_t)L + (size_t)c], a = *k;
      *k = first[a] - 1;
      if ((size_t)*k == j) first[a] = 0;
    }
  }
  /* LSD radix sort: stable counting sorts from the last column to the first; keys are
   * first-appearance indexes in [0, n), ties keep input order. O(n x levels). */
  size_t *tmp = malloc((n ? n : 1) * sizeof *tmp), *cnt = calloc(n + 1, sizeof *cnt);
  if (!tmp || !cnt) {
    free(tmp);
    free(cnt);
    free(keys);
    free(first);
    cs_plan_free(p);
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t j = 0; j < n; j++) p->order[j] = j;
  for (int c = L - 1; c >= 0; c--) {
    memset(cnt, 0, (n + 1) * sizeof *cnt);
    for (size_t j = 0; j < n; j++) cnt[(size_t)keys[j * (size_t)L + (size_t)c] + 1]++;
    for (size_t k = 1; k <= n; k++) cnt[k] += cnt[k - 1];
    for (size_t i = 0; i < n; i++) {
      size_t j = p->order[i];
      tmp[cnt[keys[j * (size_t)L + (size_t)c]]++] = j;
    }
    memcpy(p->order, tmp, n * sizeof *tmp);
  }
  free(tmp);
  free(cnt);
  for (size_t i = 0; i < n; i++) {
    p->pos[p->order[i]] = i;
    if (p->order[i] != i) p->changed = 1;
  }
  free(keys);
  free(first);
  cs_topo_crossings(t, p->hostidx, NULL, n, &p->before);
  cs_topo_crossings(t, p->hostidx, p->order, n, &p->after);
  return 0;
}
