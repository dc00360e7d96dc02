/* topology/name_index.c: the hash index behind every name lookup of the parsers (hosts,
 * switches, ibnetdiscover node ids): open addressing over int slots (4 bytes a slot at
 * load <= 1/2), names read from the indexed array through a key function, so the array
 * may be reallocated freely. Lookups and inserts are O(1) expected, which keeps parsing
 * linear in the file. */
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h ^ (h >> 29);
}

int name_index_find(const struct cs_name_index *x, const void *base, name_key_fn key, const char *name) {
  if (!x->cap) return -1;
  size_t m = x->cap - 1, i = (size_t)hash_str(name) & m;
  for (;;) {
    int e = x->slot[i];
    if (!e) return -1;
    if (!strcmp(key(base, (size_t)(e - 1)), name)) return e - 1;
    i = (i + 1) & m;
  }
}

static void insert(int *slot, size_t cap, const char *name, int idx) {
  size_t i = (size_t)hash_str(name) & (cap - 1);
  while (slot[i]) i = (i + 1) & (cap - 1);
  slot[i] = idx + 1;
}

int name_index_put(struct cs_name_index *x, const void *base, name_key_fn key, size_t count, int idx) {
  if ((count + 1) * 2 > x->cap) {   /* grow and rehash entries 0..count-1 */
    size_t nc = x->cap ? x->cap * 2 : 64;
    while ((count + 1) * 2 > nc) nc *= 2;
    int *ns = calloc(nc, sizeof *ns);
    if (!ns) return -1;
    for (size_t k = 0; k < count; k++)
      if ((int)k != idx) insert(ns, nc, key(base, k), (int)k);
    free(x->slot);
    x->slot = ns;
    x->cap = nc;
  }
  insert(x->slot, x->cap, key(base, (size_t)idx), idx);
  return 0;
}

void name_index_free(struct cs_name_index *x) {
  free(x->slot);
  x->slot = NULL;
  x->cap = 0;
}
