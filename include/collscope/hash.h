/* include/collscope/hash.h: the 64-bit mixing every layer hashes with, in one place: the
 * splitmix64 finaliser (Steele, Lea and Flood's constants), and the signature that makes two ops
 * of a rank "the same op of the next step" (kind, size, and the Send/Recv peer or the root),
 * which the summary writer's gaps lines (stats/summary_gaps.c) and the report's balance section
 * (tools/report/report_balance.c) must compute alike: a gaps line is checked by it. */
#ifndef COLLSCOPE_HASH_H
#define COLLSCOPE_HASH_H

#include <stdint.h>

#define CS_HASH_GOLDEN 0x9e3779b97f4a7c15ull

/* the finaliser alone: a bijection of 64 bits with full avalanche */
static inline uint64_t cs_hash_fin(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* one splitmix64 step from x: 0 does not map to 0 */
static inline uint64_t cs_hash_mix(uint64_t x) { return cs_hash_fin(x + CS_HASH_GOLDEN); }

/* an op's step signature: op is the op's kind (or a hash of an unknown kind's name), peer_or_root
 * the Send/Recv peer, else the root (-1 where none) */
static inline uint64_t cs_op_sig(uint64_t op, uint64_t bytes, int64_t peer_or_root) {
  return cs_hash_mix(op ^ cs_hash_mix(bytes) ^ cs_hash_mix((uint64_t)peer_or_root + 7));
}

#endif
