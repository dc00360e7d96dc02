/* tools/report/report_balance_internal.h: what the balance section's two files share: the figures
 * gathered per communicator and member, and the model tools/report/report_balance.c builds from
 * them, which tools/report/report_balance_json.c writes as JSON and text. */
#ifndef COLLSCOPE_TOOLS_REPORT_BALANCE_INTERNAL_H
#define COLLSCOPE_TOOLS_REPORT_BALANCE_INTERNAL_H
#include "report_balance.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uthash.h>

#include "collscope/schedule.h"

#define BAL_STALLS 256     /* a member's host stalls held one by one */
#define BAL_STALL_US 1000. /* an op the GPU waited this long for its host: a stall */

struct bal_stall {
  size_t op; /* the member's op index */
  double us;
};
struct bal_key {
  uint64_t comm;
  int comm_rank;
};
struct bal_member {
  struct bal_key k;
  int rank;
  const char *host;
  uint32_t file;
  size_t n, untimed; /* its ops in the communicator; of those, without a compute gap */
  bool coll_reduce;  /* every op an AllReduce or ReduceScatter */
  bool p2p;          /* every op a Send or Recv */
  uint64_t periodic; /* bit q-1: the sequence so far repeats with period q */
  uint64_t sig[BAL_PMAX];
  double cum_gap; /* us */
  /* the part of the compute gaps the GPU waited for this process's host longer than at the same
   * op of the steps before and after (the op enqueued that much later after the previous op's
   * end: a data loader's stall; tools/report/report_balance_host.c): running sum, as cum_gap
   * (an op's own wait added once the next step's op is in), and the ops where it was a stall
   * (at least BAL_STALL_US), the first BAL_STALLS of them by op index. ring_lead: each op's
   * enqueue less the previous op's end, ring_opgap its gap (us, NAN untimed) */
  double cum_host, head_host[BAL_PMAX], ring_host[BAL_PMAX], ring_lead[BAL_PMAX], ring_opgap[BAL_PMAX];
  double slack; /* the least gap - lead so far (an op starts after its enqueue: the clocks'
                 * offset is at most that); valid when has_slack */
  bool has_slack;
  struct bal_stall *stall;
  size_t nstall, stall_more; /* held; counted past the cap */
  double stall_more_us;
  size_t stall_more_last;
  double head_gap[BAL_PMAX], ring_gap[BAL_PMAX];
  int64_t head_end[BAL_PMAX], ring_end[BAL_PMAX];
  double *long_gap; /* a Send/Recv member's running compute over its last BAL_RING ops (the
                     * per-step figures of a pipeline stage); NULL for other members */
  UT_hash_handle hh;
};
struct bal_comm {
  uint64_t comm;
  size_t instances;
  bool same_size;           /* every instance one op of one size on every member */
  size_t nmem;              /* report_balance_finish: its members, */
  bool all_reduce, all_p2p; /* every one of them reducing / only Send/Recv */
  UT_hash_handle hh;
};

enum { VERDICT_OK = 0,
       VERDICT_THROTTLED,
       VERDICT_MODEL,
       VERDICT_UNEXPLAINED,
       VERDICT_LOADER,
       VERDICT_DATA };
static const char *const verdict_names[] = {"ok", "throttled", "slower_model", "unexplained", "data_loader",
                                            "uneven_data"};

struct bal_rank {
  int rank, comm_rank, period;
  uint32_t file;            /* the walk's file number */
  double h2d_bytes;         /* per step: bytes its process copied host to device (data parallel) */
  size_t nstep;             /* per-step compute figures in step_c (the last steps the ring holds) */
  double step_c[BAL_STEPS]; /* the compute of each of those steps, oldest first (us) */
  double step_h[BAL_STEPS]; /* the host waits within those steps (data parallel) */
  double host_us;           /* per step: the GPU's wait for this rank's host (data parallel) */
  double host_cost_pct;     /* its excess over the ranks' median, in % of the step */
  size_t stalls;            /* stalls of BAL_STALL_US or more in the measured steps */
  double stall_us;          /* their mean */
  double stall_every;       /* steps between them when regular (within one step), else 0 */
  const char *host, *gpu;
  size_t steps, untimed;
  double compute_us, step_us; /* per step; step_us -1 unknown */
  double judge_us;            /* what a slow rank is judged by: its compute, a stage's per layer */
  double share_now, share, speed;
  int verdict;
  char cause[256];
};
struct bal_view { /* one communicator analysed */
  bool found, ok;
  uint64_t comm;
  struct bal_rank *r;
  size_t n, steps;
  int period;
  double step_now, step_bal, gain_pct, compute_bal;
};
struct bal_group {
  const char *name, *gpu;
  size_t ranks;
  double compute_us, share; /* mean compute; summed share */
};
struct bal_stage {
  int stage, rank;
  const char *host, *gpu;
  double compute_us, per_layer_us;
  long layers_now, layers;
};

struct report_balance {
  struct bal_member *members;
  struct bal_comm *comms;
  /* the model (report_balance_finish) */
  bool finished;
  struct bal_view dp, pp;
  struct bal_group *models, *hosts;
  size_t nmodels, nhosts;
  struct bal_stage *stages;
  size_t nstages;
  bool layers_given, layers_ok;
  double pp_step_bal, pp_gain_pct;
  int microbatches;              /* per step (the first stage's Sends per step), 0 unknown */
  bool flushed;                  /* a cross-stage collective ends the steps: fill and drain count */
  double pp_gain_lo, pp_gain_hi; /* the predicted gain's 95 % interval across steps (us) */
  size_t pp_gain_steps;
  double dp_gain_lo, dp_gain_hi; /* the same for the data-parallel shares (us) */
  size_t dp_gain_steps;
  struct cs_sched *sched;     /* the pipeline schedule gathered from the same instances */
  struct cs_sched *sum_sched; /* COLLSCOPE_RECORD=summary: the pipeline model's, from the gaps lines */
  struct cs_sched_op *sop;
  size_t sopcap;
  bool sched_done;
  char layers_note[160], shares_note[160];
  double host_fixed_step; /* the data-parallel step predicted with the data_loader ranks' stalls gone, -1 none */
  const char *action;
  char advice[1024];
};

/* Student's t at 97.5 % for df degrees of freedom (INFINITY for 0) */
double bal_t975(size_t df);

/* the pipeline's model (tools/report/report_balance_pipeline.c), b->pp built: stage order,
 * microbatches, layer counts, predicted step and its interval */
void bal_pipeline_model(struct report_balance *b, const struct cs_sched *sched, const double *layers,
                        size_t nlayers);

/* tools/report/report_balance_host.c: the host's share of the compute gaps */
void bal_host_add(struct bal_member *m, const struct cs_walk_rec *r, bool timed);
/* the host figures of a member's steps (as member_figures: steps 1 .. steps-1, period p) */
void bal_host_figures(const struct bal_member *m, size_t p, size_t steps, struct bal_rank *r);
/* data parallel: the host waits taken out of the compute (shares do not move them) */
void bal_host_split(struct bal_view *v);
/* data parallel: a rank the GPU waits for its host by MIN_GAIN_PCT of the step or more is
 * data_loader (ranks the GPU figures call ok only); then the advice that names it */
void bal_host_judge(struct report_balance *b, double min_gain_pct);
void bal_host_advise(struct report_balance *b);

/* tools/report/report_balance_data.c: a rank slow with no cause in its health samples whose
 * process copies more bytes to its GPU per step than the ranks that are not slow (their
 * median) is uneven_data. True
 * when those are then the only slow ranks: today's shares, inferred from the compute (one GPU
 * speed), are in shares_now (v->n entries) */
struct cs_dumpfile;
bool bal_data_judge(struct report_balance *b, const struct cs_dumpfile **by_index, size_t nindex,
                    double *shares_now);
void bal_data_advise(struct report_balance *b);

#endif
