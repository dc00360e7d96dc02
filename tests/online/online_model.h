/* tests/online/online_model.h: an in-process model of N ranks running the online
 * exchange's real protocol code (analysis/online_eval.c). The collectives are replaced by
 * their mathematical result: every rank's contribution is folded (MIN / SUM) into one
 * reduced wire that every rank then unpacks.
 *
 * Ranks are "kept" (a persistent protocol state, unpacked and timed) or "transient": a
 * transient rank's contribution is made by a fresh state fed the same records the
 * generator gives it for this exchange (what a rank that keeps up ships), so a model of
 * 131,072 ranks needs only the kept ranks' memory. A transient rank replays the earlier
 * rounds of the exchange to contribute to a detail round. */
#ifndef COLLSCOPE_ONLINE_MODEL_H
#define COLLSCOPE_ONLINE_MODEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collscope/online.h"

/* the records rank `rank` finished since the previous exchange; sdc_only: only the checked
 * collectives (a transient rank replaying round 0 for a detail round needs no more) */
/* a deterministic draw in [0, 1) for rank r at seq (salt: which draw), the jitter of the model's
 * generators and of tests/online's */
double model_jit(int r, uint64_t seq, unsigned salt);

typedef void (*model_feed_fn)(void *ctx, int rank, uint32_t exchange, bool sdc_only, struct cs_online_rank *st);

struct model {
  int n;
  struct cs_online_rank **st; /* n entries; NULL for transient ranks */
  model_feed_fn feed;
  void *ctx;
  char host[CS_ONLINE_HOST];
  /* the last exchange */
  unsigned rounds;
  size_t bytes_per_rank;        /* contributed (= received) wire bytes of one rank */
  double cpu_us_max;            /* pack + unpack of one kept rank, the most over kept ranks */
  double cpu_us_median;         /* ... the median over kept ranks */
  struct cs_online_findings *f; /* per kept rank (others: zeroed) */
  bool disagree;                /* kept ranks asked for different numbers of rounds */
};

/* keep[r]: rank r gets a persistent state (NULL: all kept). Hosts "node<r/2>". */
struct model *model_new(int n, const bool *keep, model_feed_fn feed, void *ctx);
void model_free(struct model *m);
/* one exchange; 0, or -1 when out of memory */
int model_exchange(struct model *m, uint32_t exchange);
/* the SDC verdict of kept rank r (for comparisons): a string of its findings */
void model_sdc_verdict(const struct model *m, int r, char *buf, size_t len);

#endif

/* A job generator: every exchange each rank finishes `ops` sampled instances and `sdc`
 * checked AllReduces (float32 sum) of communicator `comm` (all ranks). Rank `slow` arrives
 * `late_us` late (its duration shorter, its compute gap longer by that much); rank
 * `flip_rank` (and the next flip_count - 1) received the same different bytes at checked
 * seq `flip_seq`; `wrong_sum`: every rank's
 * output sum of that seq is off (a fault upstream of every rank); rank `lag_rank` finishes
 * each exchange's records one exchange later. -1: none. */
struct model_gen {
  int n, ops, sdc;
  uint64_t comm;
  int slow;
  double late_us;
  int flip_rank;
  uint64_t flip_seq;
  bool wrong_sum;
  int lag_rank;
  int flip_count; /* ranks flip_rank .. flip_rank + flip_count - 1 flipped alike (0: 1) */
};
#define MODEL_SDC_SEQ0 1000000u
void model_gen_feed(void *ctx, int rank, uint32_t exchange, bool sdc_only, struct cs_online_rank *st);
