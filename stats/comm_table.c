/* stats/comm_table.c: ncclComm_t -> collscope's view of the communicator (id, size,
 * rank, per-comm sequence counter). Open addressing with atomic keys: lookups from
 * the hot path take no lock; inserts/removes happen at communicator init/destroy, under
 * one lock, and an entry's key is published (release) only after its fields are written. */
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

/* Every write of an entry's fields happens here, under insert_lock, before the key is
 * published with a release store: a lock-free reader (cs_comm_lookup, acquire) that finds the
 * key finds the fields complete. A communicator registered again (its pointer reused without a
 * destroy) gets a fresh entry; the old one becomes a tombstone first. */
struct cs_comm *cs_comm_insert(void *comm, const struct cs_comm *init) {
  if (!comm || comm == TOMBSTONE) return NULL;
  pthread_mutex_lock(&insert_lock);
  struct cs_comm *old = cs_comm_lookup(comm), *c = NULL;
  if (old) atomic_store_explicit(&old->key, TOMBSTONE, memory_order_release);
  size_t i = slot_of(comm);
  for (size_t n = 0; n < CS_COMM_CAP; n++, i = (i + 1) & (CS_COMM_CAP - 1)) {
    void *k = atomic_load_explicit(&table[i].key, memory_order_relaxed);
    if (k == NULL || k == TOMBSTONE) {
      c = &table[i];
      break;
    }
  }
  if (c) {
    c->id = init->id;
    c->parent_id = init->parent_id;
    c->size = init->size;
    c->rank = init->rank;
    c->device = init->device;
    c->index = atomic_fetch_add(&cs_st.comm_index, 1); /* creation order of the entries */
    c->nonblocking = init->nonblocking;
    atomic_store_explicit(&c->seq, 0, memory_order_relaxed);
    atomic_store_explicit(&c->splits, 0, memory_order_relaxed);
    atomic_store_explicit(&c->key, comm, memory_order_release);
  }
  pthread_mutex_unlock(&insert_lock);
  return c;
}

struct cs_comm cs_comm_none = {.key = TOMBSTONE, .id = 0, .size = -1, .rank = -1, .device = -1};

void cs_comm_remove(void *comm) {
  pthread_mutex_lock(&insert_lock);
  struct cs_comm *c = cs_comm_lookup(comm);
  if (c) atomic_store_explicit(&c->key, TOMBSTONE, memory_order_release);
  pthread_mutex_unlock(&insert_lock);
}

/* Each live entry is copied under insert_lock, so a copy is never torn by an insert that
 * reuses the slot (a tombstone) while fn runs; fn runs without the lock and may insert or
 * remove communicators itself. */
void cs_comm_foreach(void (*fn)(void *comm, struct cs_comm *c, void *arg), void *arg) {
  for (size_t i = 0; i < CS_COMM_CAP; i++) {
    void *k = atomic_load_explicit(&table[i].key, memory_order_acquire);
    if (!k || k == TOMBSTONE) continue;
    struct cs_comm snap;
    pthread_mutex_lock(&insert_lock);
    k = atomic_load_explicit(&table[i].key, memory_order_relaxed);
    bool live = k && k != TOMBSTONE;
    if (live) {
      const struct cs_comm *c = &table[i];
      atomic_init(&snap.key, k);
      snap.id = c->id;
      snap.parent_id = c->parent_id;
      snap.size = c->size;
      snap.rank = c->rank;
      snap.device = c->device;
      snap.index = c->index;
      snap.nonblocking = c->nonblocking;
      atomic_init(&snap.seq, atomic_load_explicit(&c->seq, memory_order_relaxed));
      atomic_init(&snap.splits, atomic_load_explicit(&c->splits, memory_order_relaxed));
    }
    pthread_mutex_unlock(&insert_lock);
    if (live) fn(k, &snap, arg);
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
