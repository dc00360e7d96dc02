/* stats/comm_table.c: ncclComm_t -> collscope's view of the communicator (id, size,
 * rank, per-comm sequence counter). Open addressing with atomic keys: lookups from
 * the hot path take no lock; inserts/removes happen at communicator init/destroy. */
#include "core.h"
#include <pthread.h>
#include <string.h>

#define CS_COMM_CAP 4096 /* power of two */
#define TOMBSTONE ((void *)1)

static struct cs_comm table[CS_COMM_CAP];
static pthread_mutex_t insert_lock = PTHREAD_MUTEX_INITIALIZER; /* init/destroy only */

static size_t slot_of(void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (CS_COMM_CAP - 1);
}

struct cs_comm *cs_comm_lookup(void *comm) {
  if (!comm) return NULL;
  size_t i = slot_of(comm);
  for (size_t n = 0; n < CS_COMM_CAP; n++, i = (i + 1) & (CS_COMM_CAP - 1)) {
    void *k = atomic_load_explicit(&table[i].key, memory_order_acquire);
    if (k == comm) return &table[i];
    if (k == NULL) return NULL;
  }
  return NULL;
}

struct cs_comm *cs_comm_insert(void *comm) {
  pthread_mutex_lock(&insert_lock);
  struct cs_comm *c = cs_comm_lookup(comm);
  if (!c) {
    size_t i = slot_of(comm);
    for (size_t n = 0; n < CS_COMM_CAP; n++, i = (i + 1) & (CS_COMM_CAP - 1)) {
      void *k = atomic_load_explicit(&table[i].key, memory_order_relaxed);
      if (k == NULL || k == TOMBSTONE) {
        c = &table[i];
        break;
      }
    }
    if (c) {
      c->id = c->parent_id = 0;
      c->size = c->rank = c->device = -1;
      c->index = 0;
      atomic_store(&c->seq, 0);
      atomic_store(&c->splits, 0);
      c->nonblocking = false;
      atomic_store_explicit(&c->key, comm, memory_order_release);
    }
  }
  pthread_mutex_unlock(&insert_lock);
  return c;
}

void cs_comm_remove(void *comm) {
  pthread_mutex_lock(&insert_lock);
  struct cs_comm *c = cs_comm_lookup(comm);
  if (c) atomic_store_explicit(&c->key, TOMBSTONE, memory_order_release);
  pthread_mutex_unlock(&insert_lock);
}

void cs_comm_foreach(void (*fn)(void *comm, struct cs_comm *c, void *arg), void *arg) {
  for (size_t i = 0; i < CS_COMM_CAP; i++) {
    void *k = atomic_load_explicit(&table[i].key, memory_order_acquire);
    if (k && k != TOMBSTONE) fn(k, &table[i], arg);
  }
}

uint64_t cs_hash_bytes(const void *p, size_t n, uint64_t seed) {
  /* FNV-1a 64 with a final avalanche; ids only need to agree across ranks */
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}
