/* tools/report/report_steps.c: the report's "pipeline" section: the training schedule recovered
 * from the dumps (include/collscope/schedule.h): the stages and their ranks, microbatches per
 * step, the forwards each stage runs before its first backward (1F1B's warm-up), the
 * communicators by kind, and the stragglers of cross-stage communicators judged against
 * their stage's peers: those the stage order explains (counted) and the slow stages named; and
 * the link stragglers a flagged peer's wait explains (include/collscope/peer_wait.h), each
 * named with the peer it moved to. Built after the balance section, whose step gives the
 * microbatches. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/peer_wait.h"
#include "collscope/schedule.h"
#include "dump/dumpfile.h"
#include "report.h"
#include "report_agg.h"
#include "report_balance.h"
#include "xalloc.h"

struct steps_model {
  const struct cs_sched *sched;
  int stages, microbatches;
  size_t explained;
  const struct cs_pwait_moved *moved; /* the findings moved to the peer they waited for */
  size_t nmoved;
  int *stage_of_file; /* per file of the set: its rank's stage, -1 none */
};
static struct steps_model SM; /* one report per process: the section's model */

static void build_steps(struct report *r) {
  memset(&SM, 0, sizeof SM);
  if (!r->agg) return;
  SM.sched = report_balance_schedule(r->agg->balance);
  SM.stages = cs_sched_stages(SM.sched);
  SM.microbatches = report_balance_microbatches(r->agg->balance);
  SM.explained = r->agg->sched_explained;
  SM.moved = r->agg->peer_moved;
  SM.nmoved = r->agg->peer_explained;
  size_t nf = r->set ? r->set->nfiles : 0;
  SM.stage_of_file = xcalloc(nf ? nf : 1, sizeof *SM.stage_of_file);
  for (size_t i = 0; i < nf; i++) SM.stage_of_file[i] = cs_sched_stage(SM.sched, r->set->files[i].hdr.rank);
}

/* the schedule's name from the forwards each stage s < P - 1 runs before its first backward:
 * M everywhere (all forwards first, GPipe), or min(P - s, M) (1F1B: warm-up min(P - s - 1, M),
 * then the steady state's first forward, megatron/core/pipeline_parallel/schedules.py:2276-2279);
 * NULL when unknown or when the two read the same (M <= 1) */
static const char *schedule_name(void) {
  int M = SM.microbatches, P = SM.stages;
  if (M <= 1 || P < 2) return NULL;
  bool gpipe = true, onefb = true;
  for (int s = 0; s < P - 1; s++) {
    size_t ranks;
    uint64_t sends, recvs, fwd;
    if (!cs_sched_stage_counts(SM.sched, s, &ranks, &sends, &recvs, &fwd) || !ranks) return NULL;
    uint64_t f = fwd / ranks, want = (uint64_t)(P - s < M ? P - s : M);
    gpipe &= f == (uint64_t)M;
    onefb &= f == want;
  }
  return onefb && !gpipe ? "1f1b" : gpipe && !onefb ? "all_forwards_first"
                                : onefb             ? "1f1b_or_all_forwards_first"
                                                    : "other";
}

static json_t *comm_list(enum cs_sched_kind kind) {
  json_t *a = json_array();
  size_t n = cs_sched_comms(SM.sched, kind, NULL, 0);
  uint64_t *v = xcalloc(n ? n : 1, sizeof *v);
  cs_sched_comms(SM.sched, kind, v, n);
  char hex[17];
  for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(cs_comm_hex(v[i], hex)));
  free(v);
  return a;
}

static json_t *json_steps(const struct report *r) {
  json_t *o = json_object();
  json_object_set_new(o, "stages", json_integer(SM.stages));
  json_object_set_new(o, "explained_by_peer_wait", jcount(SM.nmoved));
  json_t *mv = json_array();
  char hx[17];
  for (size_t i = 0; i < SM.nmoved; i++) {
    json_t *e = json_object();
    json_object_set_new(e, "rank", json_integer(SM.moved[i].rank));
    json_object_set_new(e, "comm", json_string(cs_comm_hex(SM.moved[i].comm, hx)));
    json_object_set_new(e, "peer", json_integer(SM.moved[i].peer));
    json_object_set_new(e, "wait_excess_us", json_real(SM.moved[i].excess_us));
    json_object_set_new(e, "lateness_us", json_real(SM.moved[i].late_us));
    json_array_append_new(mv, e);
  }
  json_object_set_new(o, "moved_to_peer", mv);
  json_object_set_new(o, "explained_by_comm_elsewhere", jcount(r->agg ? r->agg->comm_explained : 0));
  json_t *ce = json_array();
  for (size_t i = 0; r->agg && i < r->agg->comm_explained; i++) {
    const struct cs_celse_explained *x = &r->agg->comm_moved[i];
    json_t *e = json_object();
    json_object_set_new(e, "rank", json_integer(x->rank));
    json_object_set_new(e, "comm", json_string(cs_comm_hex(x->comm, hx)));
    json_object_set_new(e, "time_elsewhere_excess_us", json_real(x->excess_us));
    json_object_set_new(e, "lateness_us", json_real(x->late_us));
    json_array_append_new(ce, e);
  }
  json_object_set_new(o, "comm_elsewhere", ce);
  if (!SM.stages) return o;
  json_object_set_new(o, "microbatches", SM.microbatches > 0 ? json_integer(SM.microbatches) : json_null());
  const char *name = schedule_name();
  json_object_set_new(o, "schedule", name ? json_string(name) : json_null());
  json_t *st = json_array();
  for (int s = 0; s < SM.stages; s++) {
    json_t *e = json_object(), *ranks = json_array();
    json_object_set_new(e, "stage", json_integer(s));
    for (size_t i = 0; r->set && i < r->set->nfiles; i++)
      if (SM.stage_of_file[i] == s) json_array_append_new(ranks, json_integer(r->set->files[i].hdr.rank));
    json_object_set_new(e, "ranks", ranks);
    size_t nr;
    uint64_t sends, recvs, fwd;
    cs_sched_stage_counts(SM.sched, s, &nr, &sends, &recvs, &fwd);
    json_object_set_new(e, "forwards_before_first_backward",
                        s < SM.stages - 1 && nr ? json_integer((json_int_t)(fwd / nr)) : json_null());
    json_array_append_new(st, e);
  }
  json_object_set_new(o, "per_stage", st);
  json_t *c = json_object();
  json_object_set_new(c, "pipeline", comm_list(CS_SCHED_PIPELINE));
  json_object_set_new(c, "cross_stage", comm_list(CS_SCHED_CROSS_STAGE));
  json_object_set_new(c, "stage", comm_list(CS_SCHED_STAGE));
  json_object_set_new(o, "comms", c);
  json_object_set_new(o, "explained_by_schedule", jcount(SM.explained));
  json_t *slow = json_array();
  size_t nv;
  const struct cs_sched_verdict *v = cs_sched_verdicts(SM.sched, &nv);
  char hex[17];
  for (size_t i = 0; i < nv; i++) {
    if (!v[i].kept) continue;
    json_t *e = json_object();
    json_object_set_new(e, "stage", json_integer(v[i].stage));
    json_object_set_new(e, "rank", json_integer(v[i].rank));
    json_object_set_new(e, "comm", json_string(cs_comm_hex(v[i].comm, hex)));
    json_object_set_new(e, "gap_us", json_real(v[i].gap_us));
    json_object_set_new(e, "stage_gap_us", json_real(v[i].stage_gap_us));
    /* what named it: its gap at a cross-stage collective, or at its stage's own (a sign test) */
    json_object_set_new(e, "basis", json_string(v[i].by_compute ? "stage_compute" : "cross_stage"));
    if (v[i].by_compute) {
      json_object_set_new(e, "instances", jcount(v[i].instances));
      json_object_set_new(e, "above", jcount(v[i].above));
      json_object_set_new(e, "p", json_real(v[i].p));
    }
    json_array_append_new(slow, e);
  }
  json_object_set_new(o, "slow_stages", slow);
  return o;
}

static void text_steps(const struct report *r, FILE *o) {
  char hx[17];
  if (SM.nmoved) fprintf(o, "\n# %zu straggler%s explained by a peer's wait (moved to the peer)\n", SM.nmoved, SM.nmoved == 1 ? "" : "s");
  for (size_t i = 0; i < SM.nmoved; i++)
    fprintf(o, "  rank %d at %s: late %.1f us, waiting for rank %d %.1f us an instance more than its peers\n",
            SM.moved[i].rank, cs_comm_hex(SM.moved[i].comm, hx), SM.moved[i].late_us, SM.moved[i].peer,
            SM.moved[i].excess_us);
  if (!SM.stages) return;
  const char *name = schedule_name();
  fprintf(o, "\n# Pipeline: %d stages", SM.stages);
  if (SM.microbatches > 0) fprintf(o, ", %d microbatches per step", SM.microbatches);
  if (name) fprintf(o, " (%s)", name);
  fprintf(o, "\n");
  for (int s = 0; s < SM.stages; s++) {
    fprintf(o, "  stage %d: ranks", s);
    for (size_t i = 0; r->set && i < r->set->nfiles; i++)
      if (SM.stage_of_file[i] == s) fprintf(o, " %d", r->set->files[i].hdr.rank);
    fprintf(o, "\n");
  }
  size_t ncross = cs_sched_comms(SM.sched, CS_SCHED_CROSS_STAGE, NULL, 0);
  fprintf(o, "# %zu cross-stage communicator%s: arrivals there follow the stage order; %zu straggler%s "
             "explained by the schedule (there, or late at the pipeline's Send/Recv by the waits it orders)\n",
          ncross, ncross == 1 ? "" : "s", SM.explained, SM.explained == 1 ? "" : "s");
  size_t nv;
  const struct cs_sched_verdict *v = cs_sched_verdicts(SM.sched, &nv);
  for (size_t i = 0; i < nv; i++)
    if (v[i].kept) {
      fprintf(o, "  slow stage %d: rank %d, compute gap %.1f us against its stage's peers' %.1f us (+%.1f %%)",
              v[i].stage, v[i].rank, v[i].gap_us, v[i].stage_gap_us,
              100.0 * (v[i].gap_us - v[i].stage_gap_us) / v[i].stage_gap_us);
      if (v[i].by_compute)
        fprintf(o, " at its stage's collective, above them in %zu of %zu instances (sign test p = %.2g)", v[i].above,
                v[i].instances, v[i].p);
      fputc('\n', o);
    }
}

static void free_steps(struct report *r) {
  (void)r;
  free(SM.stage_of_file);
  memset(&SM, 0, sizeof SM);
}

const struct report_section report_section_pipeline = {"pipeline", build_steps, text_steps, json_steps, free_steps};
