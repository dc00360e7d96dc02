/* tools/report/report_balance.h: the report's `balance` section (docs/balance.md): how to split the
 * work across GPUs of different speed, from what the dumps already hold.
 *
 * Gathered per collective instance as the dumps stream by (tools/report/report_agg.c calls
 * report_balance_instance() for each instance the walker gives out), in memory bounded by
 * communicators x ranks x BAL_PMAX (a Send/Recv member's running compute over BAL_RING ops,
 * for its per-step figures), never by the number of records:
 *  - per (communicator, rank): its sequence of ops, the running sum of its compute gaps (the
 *    GPU time between the end of the process's previous op and the start of this one, as the
 *    straggler detector measures it) and its op ends, kept for the first and the last
 *    BAL_PMAX ops; and which periods p <= BAL_PMAX the sequence of (op, bytes, peer) repeats
 *    with: the smallest is the step (dp_train's three gradient buckets: p = 3);
 *  - per communicator: whether every instance is an AllReduce or ReduceScatter of one size on
 *    every rank (data parallel), or every op a Send or Recv (pipeline stages).
 * report_balance_finish() turns that into the model: per rank the compute time per step
 * (step 0 left out: it holds the set-up), for data parallel the shares that equalise it
 * (proportional to each rank's speed, today's share / its compute, summing to 1) and the
 * step time predicted with them; for a pipeline the compute per stage and, given today's
 * layer counts, the integer layer counts that minimise the slowest stage. Slow ranks are
 * judged by their health samples (tools/report/report_health.h): throttled (fix the node) or a
 * slower GPU model (balance). A data-parallel rank's waits for its own host (a data loader's
 * stalls) are kept out of its compute and named apart (tools/report/report_balance_host.c). */
#ifndef COLLSCOPE_TOOLS_REPORT_BALANCE_H
#define COLLSCOPE_TOOLS_REPORT_BALANCE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dump/instwalk.h"

#define BAL_PMAX 64           /* the longest step, in a rank's ops of one communicator */
#define BAL_RING 512          /* a pipeline member's last ops whose running compute is kept */
#define BAL_STEPS 64          /* the most steps a rank's per-step figures hold */
#define BAL_MAX_LIST 4096     /* --layers / --shares entries */
#define BAL_MAX_LAYERS 100000 /* --layers: the total */

struct report_balance; /* the gathered figures, then the model */
struct report_health;
struct cs_dumpset;
struct json_t;

struct report_balance *report_balance_new(void);
/* one instance, members sorted by comm_rank (of a duplicate comm_rank the first counts) */
void report_balance_instance(struct report_balance *b, uint64_t comm, int64_t seq, const struct cs_walk_rec *m,
                             size_t n);
void report_balance_free(struct report_balance *b);
/* the pipeline schedule (include/collscope/schedule.h) of the same instances (a summary
 * recording's from its gaps lines), finished on the first call once every instance is in; NULL
 * when there is none (or out of memory) */
struct cs_sched *report_balance_schedule(struct report_balance *b);
/* the pipeline's microbatches per step (after report_balance_finish), 0 unknown */
int report_balance_microbatches(const struct report_balance *b);
/* what delimits rank's steps (after report_balance_finish): its member of the data-parallel
 * view, else of the pipeline view (comm, ops per step), else its member of another
 * communicator of the view's kind whose ops divide into the view's steps; false none */
bool report_balance_rank_step(const struct report_balance *b, int rank, uint64_t *comm, int *period);

/* A comma list of positive numbers ("24,24,24,24"; integers only when `integers`) into out
 * (cap entries). Returns the count, or -1 with a reason in err. */
int report_balance_parse_list(const char *s, bool integers, double *out, size_t cap, char *err, size_t errcap);

/* The model, once every instance is in. layers: today's layer count per pipeline stage
 * (NULL: none given); shares: today's work share per rank of the data-parallel
 * communicator, in its rank order (NULL: equal shares). h may be NULL (no health samples). */
void report_balance_finish(struct report_balance *b, const struct cs_dumpset *set, const struct report_health *h,
                           const double *layers, size_t nlayers, const double *shares, size_t nshares);

/* the section: "balance" (keys in the header comment of tools/cmd_report.c) */
struct json_t *report_balance_json(const struct report_balance *b);
void report_balance_text(const struct report_balance *b, FILE *o);

#endif
