/* topology/name_index.c: the hash index behind every name lookup of the parsers (hosts,
 * switches, ibnetdiscover node ids): open addressing, load <= 1/2, each slot the entry's
 * index and its 32-bit hash, so a probe that is not a match costs no visit to the name
 * and growing the table rehashes without reading any name. Names are read from the
 * indexed array through a key function, so the array may be reallocated freely.
 * Lookups and inserts are O(1) expected, which keeps parsing linear in the file. */
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

static uint32_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a, high bits folded in */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  h ^= h >> 32;
  h *= 0x9E3779B97F4A7C15ULL;
  return (uint32_t)(h >> 32);
}

static int probe(const struct cs_name_index *x, const void *base, name_key_fn key, const char *name, uint32_t h,
                 size_t *at) {
  size_t m = x->cap - 1, i = h & m;
  for (;;) {
    const struct cs_name_slot *s = &x->slot[i];
    if (!s->idx1) {
      *at = i;
      return -1;
    }
    if (s->hash == h && !strcmp(key(base, s->idx1 - 1), name)) {
      *at = i;
      return (int)(s->idx1 - 1);
    }
    i = (i + 1) & m;
  }
}

int name_index_find(const struct cs_name_index *x, const void *base, name_key_fn key, const char *name) {
  if (!x->cap) return -1;
  size_t at;
  return probe(x, base, key, name, hash_str(name), &at);
}

static int grow(struct cs_name_index *x, size_t count) {
  if ((count + 1) * 2 <= x->cap) return 0;
  size_t nc = x->cap ? x->cap * 2 : 64;
  while ((count + 1) * 2 > nc) nc *= 2;
  struct cs_name_slot *ns = calloc(nc, sizeof *ns);
  if (!ns) return -1;
  for (size_t k = 0; k < x->cap; k++) { /* from the stored hashes: no name is read */
    if (!x->slot[k].idx1) continue;
    size_t i = x->slot[k].hash & (nc - 1);
    while (ns[i].idx1) i = (i + 1) & (nc - 1);
    ns[i] = x->slot[k];
  }
  free(x->slot);
  x->slot = ns;
  x->cap = nc;
  return 0;
}

int name_index_add(struct cs_name_index *x, const void *base, name_key_fn key, size_t count, const char *name,
                   int idx) {
  if (grow(x, count)) return -2;
  size_t at;
  uint32_t h = hash_str(name);
  int prev = probe(x, base, key, name, h, &at);
  if (prev >= 0) return prev;
  x->slot[at] = (struct cs_name_slot){(uint32_t)idx + 1, h};
  return -1;
}

void name_index_free(struct cs_name_index *x) {
  free(x->slot);
  x->slot = NULL;
  x->cap = 0;
}
