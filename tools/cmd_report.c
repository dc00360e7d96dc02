/* tools/cmd_report.c: `collscope report DIR [--json] [--op NAME] [-o FILE]`.
 *
 * Reads a directory of dump files (tools/dump/dumpfile.c, streamed through tools/report/report_agg.c) and
 * prints nccl-tests style tables: per (op, communicator size, message-size bucket), per rank,
 * per communicator, stragglers, hangs, links, SDC findings and notes. The report is a table
 * of sections (tools/report/sections.c), each in its own file behind struct report_section
 * (tools/report/report.h): this file reads the dumps, runs the sections, and writes them.
 *
 * Definitions (also the contract of the --json output):
 *  - Size bucket: a record with bytes B > 0 falls in bucket k = floor(log2 B), covering
 *    [2^k, 2^(k+1)); bucket_lo = 2^k, bucket_hi = 2^(k+1) - 1. Records with B == 0 form
 *    their own bucket (bucket_lo = bucket_hi = 0).
 *  - Row key: (op, comm_size, bucket). Rows count per-rank records (an AllReduce on 4 ranks
 *    is 4 records), like each nccl-tests rank timing its own call.
 *  - Row `bytes` (the representative size): the nearest-rank median (p50, below) of the
 *    `bytes` of all records in the row; it is the exact message size whenever the row holds a
 *    single size (the usual case). `bytes_min`/`bytes_max` give the spread.
 *  - Times: `dur_us` of the row's records whose timing is "gpu_event" only (`timed`);
 *    captured / host / error records are counted (`count`) but carry no time.
 *  - Percentiles: nearest-rank. For N values sorted ascending v[1..N] and 0 < p <= 100,
 *    P_p = v[ceil(p * N / 100)], i.e. the smallest observed value with at least p% of the
 *    values <= it. p50 of {90,95,100,100,100,100,120,300} = v[4] = 100, p99 = v[8] = 300.
 *  - algbw (GB/s) = bytes / (p50 time in s) / 1e9 = bytes / (p50_us * 1000).
 *  - busbw (GB/s) = algbw * cs_busbw_factor(op, comm_size) (nccl-tests factors, schema.h).
 *  - Groups (tools/report/report_agg_group.c): a record with `group_ops` N > 1 shares its
 *    GPU span with the N ops of its group on its stream; it is counted in its op's row
 *    (`grouped`: how many such records, text mark `g`) and never timed there. One group row
 *    per (signature, comm_size, bucket of the group's bytes) has `group_ops` N, op the
 *    signature ("AllReduce x4", "AllReduce x2+Broadcast x1") or "AlltoAll" for a group of one
 *    Send and one Recv per peer on one communicator, one record per rank and group, bytes the
 *    group's (an AlltoAll: its Send bytes, nccl-tests' alltoall size), time its span, and
 *    busbw = bytes / time x (sum of member bytes x their factor / sum of member bytes; an
 *    AlltoAll (n-1)/n): nccl-tests -m N's busbw for the size of one member.
 *  - Communicator `instances`: distinct seq >= 0 (DESIGN.md: seq counts P2P calls too), a
 *    group's members that share a span counting as one (the detector's instance, under the
 *    first member's seq).
 *  - gpu_time_ms: sum of dur_us of "gpu_event" op records / 1000 (summed over the records
 *    counted, i.e. over all ranks for the communicator table); a group member adds its share
 *    of the span (dur_us / group_ops).
 *  - Drops per file: cs_dumpfile_drops() (max of footer and drops records).
 *  - --op NAME restricts every table to op records named NAME (case-insensitive for names
 *    of schema.h); xfer (Memcpy) records are only counted when no --op is given.
 *  - links / slow_links: NCCL_NET wrapper "link" records per host pair, definitions in
 *    include/collscope/links.h. Hosts: the writing file's header host for its own end; the
 *    other end from the record with the same `conn` token in another file, else (send side)
 *    the host of the peer rank. Straggler entries of kind "link" with rank -1 get
 *    "src_host"/"dst_host" of the slowest slow pair (null when there is none).
 *  - balance (docs/balance.md): per rank of the data-parallel communicator (every instance an
 *    AllReduce or ReduceScatter of one size on every rank; else a Send/Recv pipeline's),
 *    ranks[] {rank, host, gpu, compute_us (GPU time between its ops, summed per step; step 0
 *    left out), step_us, share_now (--shares, default equal), share (proportional to
 *    share_now / compute_us, summing to 1), verdict (ok, throttled, slower_model, unexplained,
 *    data_loader, uneven_data), cause, host_wait_us (the GPU's waits for the host, out of
 *    compute_us), host_cost_pct, stalls, stall_us, stall_every_steps, h2d_bytes_per_step};
 *    by_model[], by_host[]; step_us_now (the slowest rank's step), step_us_balanced
 *    (now minus the largest compute plus the balanced compute), gain_pct,
 *    step_us_loader_fixed (without the data_loader ranks' host waits); with a pipeline,
 *    stages[] {stage, rank, compute_us, layers_now, layers (--layers: the integer counts with
 *    today's total that minimise the slowest stage), layer_us} in the Send/Recv chain's stage
 *    order, pipeline_step_us_*, pipeline_gain_pct, microbatches (per step, null unknown),
 *    pipeline_flushed (a cross-stage collective ends every step: the fill and the drain
 *    count), pipeline_gain_us_ci (the predicted gain's 95 % interval across steps; advice only
 *    when it is above zero) and pipeline_gain_steps; action (none, balance, fix,
 *    fix_then_balance, fix_loader) and advice. A cross-stage communicator is never the data-parallel one.
 *  - pipeline (docs/detection.md "Pipelines"; include/collscope/schedule.h): stages (0: no
 *    Send/Recv chain), explained_by_peer_wait and moved_to_peer[] {rank, comm, peer,
 *    wait_excess_us, lateness_us} (link stragglers whose lateness is their wait for a flagged
 *    peer, left out of stragglers: include/collscope/peer_wait.h; with or without stages),
 *    microbatches, schedule (1f1b, all_forwards_first,
 *    1f1b_or_all_forwards_first, other, null), per_stage[] {stage, ranks[],
 *    forwards_before_first_backward}, comms {pipeline[], cross_stage[], stage[]},
 *    explained_by_schedule (stragglers at cross-stage communicators the stage order
 *    explains, left out of stragglers) and slow_stages[] {stage, rank, comm, gap_us,
 *    stage_gap_us, basis, and with basis "stage_compute" instances, above, p} (kept: slower
 *    than its stage's peers; basis "cross_stage": at a cross-stage communicator, or
 *    "stage_compute": at its stage's own collective, by a weighted sign test).
 *  - steps (docs/balance.md "Steps"; include/collscope/step_breakdown.h): ranks,
 *    ranks_without_steps, out_of_memory, per_stage[] {stage, ranks, median_us, share},
 *    per_rank[] {rank, stage, host, step_comm, ops_per_step, steps, steps_found,
 *    steps_incomplete, untimed_ops, unmatched_p2p, median_us and p90_us {step, compute, comm,
 *    wait, bubble}, share {compute, comm, wait, bubble}, per_step[] {step, start_ns, step_ns,
 *    compute_ns, comm_ns, wait_ns, bubble_ns}}: the four parts of a step sum to step_ns.
 *
 * Exit status: 0 report written (malformed lines only produce messages on stderr),
 * 1 unusable input (no dump files, unreadable, unsupported schema) or write error, 2 usage. */
#include "cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "collscope/schema.h"
#include "dump/dumpfile.h"
#include "dump/readpool.h"
#include "report/report.h"
#include "report/report_agg.h"
#include "report/report_balance.h"
#include "report/report_html.h"

/* The whole report as one JSON object: what --json prints, and what other commands (suspects,
 * the HTML page) read through cli_report_json(), so they can never disagree with it. */
static json_t *report_json_doc(const struct report *r) {
  json_t *root = json_object();
  json_object_set_new(root, "schema", json_integer(COLLSCOPE_SCHEMA_VERSION));
  json_object_set_new(root, "dir", json_string(r->set->path));
  json_t *names = json_array();
  for (size_t i = 0; i < report_nsections; i++)
    if (report_sections[i]->json) json_array_append_new(names, json_string(report_sections[i]->name));
  json_object_set_new(root, "sections", names);
  for (size_t i = 0; i < report_nsections; i++)
    if (report_sections[i]->json) json_object_set_new(root, report_sections[i]->name, report_sections[i]->json(r));
  return root;
}

static int write_json(const struct report *r, FILE *o) {
  json_t *root = report_json_doc(r);
  int rc = json_dumpf(root, o, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
  fputc('\n', o);
  json_decref(root);
  return rc;
}

/* ---------- command ---------- */

void cmd_report_help(FILE *o) {
  fputs("usage: collscope report DIR [--json | --html] [--op NAME] [--by-model] [--layers L0,L1,...]\n"
        "                        [--shares W0,W1,...] [--job ID] [-o FILE] [-j N]\n"
        "  DIR         directory of collscope dump files (*.jsonl), or one dump file\n"
        "  --job ID    only the dumps of job ID (needed when DIR holds several jobs)\n"
        "  --json      print one JSON object instead of tables\n"
        "  --html      write one self-contained HTML page of charts (docs/html-report.md)\n"
        "  --op NAME   only op records named NAME (AllReduce, AllGather, Send, ...)\n"
        "  --by-model  the ranks and ops tables split by GPU model (mixed clusters)\n"
        "  --layers L  today's layer count per pipeline stage: the balance section gives the\n"
        "              counts that balance the stages (docs/balance.md)\n"
        "  --shares W  today's work share per data-parallel rank (default: equal)\n"
        "  -o FILE     write to FILE instead of standard output\n"
        "  -j N        read the files with N threads (default: one per core)\n",
        o);
}

/* The schema.h name for --op (any case), or NULL: then records must use NAME exactly. */
static const char *canonical_op(const char *name) {
  for (int i = 0; i < CS_OP_COUNT; i++)
    if (strcasecmp(cs_op_table[i].name, name) == 0) return cs_op_table[i].name;
  return NULL;
}

/* Reads DIR and builds every section's model into *r (with *agg behind it). Returns 0, or the
 * command's exit status (1 unusable input, 2 unknown op) with a message on stderr. */
/* today's layers and shares for the balance section (report --layers, --shares) */
struct balance_args {
  double layers[BAL_MAX_LIST], shares[BAL_MAX_LIST];
  size_t nlayers, nshares;
  bool have_layers, have_shares;
};

static int report_build(struct report *r, struct report_agg *agg, const char *dir, const char *job, const char *op,
                        unsigned jobs, bool by_model, const struct balance_args *ba) {
  memset(r, 0, sizeof *r);
  r->by_model = by_model;
  if (ba && ba->have_layers) r->layers = ba->layers, r->nlayers = ba->nlayers;
  if (ba && ba->have_shares) r->shares = ba->shares, r->nshares = ba->nshares;
  cs_det_params_default(&r->detp);
  if (cs_det_params_env(&r->detp))
    fprintf(stderr, "collscope report: ignoring a bad COLLSCOPE_STRAGGLER_* value (collscope help)\n");
  /* streamed: the op records are read into tables, instances and findings as they go by
   * (tools/report/report_agg.c), never held all at once */
  const char *canon = op ? canonical_op(op) : NULL;
  struct cs_dumpset *set =
      report_agg_run_split(dir, job, canon ? canon : op, jobs ? jobs : cs_pool_default_jobs(), 0, &r->detp, by_model, agg);
  if (!set) {
    report_agg_free(agg);
    return 1;
  }
  r->set = set;
  r->agg = agg;
  if (op) {
    r->op_filter = canon ? canon : agg->filter_matched ? op
                                                       : NULL;
    if (!r->op_filter) {
      fprintf(stderr, "collscope report: unknown op \"%s\" (known:", op);
      for (int i = 0; i < CS_OP_COUNT; i++) fprintf(stderr, " %s", cs_op_table[i].name);
      fprintf(stderr, ")\n");
      report_agg_free(agg);
      cs_dumpset_free(set);
      r->set = NULL;
      return 2;
    }
  }
  r->det = agg->det; /* moved: the stragglers and hangs sections read it */
  memset(&agg->det, 0, sizeof agg->det);
  for (size_t i = 0; i < report_nsections; i++)
    if (report_sections[i]->build) report_sections[i]->build(r);
  return 0;
}

static void report_free(struct report *r) {
  for (size_t i = 0; i < report_nsections; i++)
    if (report_sections[i]->free) report_sections[i]->free(r);
  cs_det_result_free(&r->det);
  report_agg_free(r->agg);
  cs_dumpset_free((struct cs_dumpset *)r->set);
}

struct json_t *cli_report_json(const char *dir, const char *job, const char *op, unsigned jobs, int *status) {
  struct report r;
  struct report_agg agg;
  int st = report_build(&r, &agg, dir, job, op, jobs, false, NULL);
  if (status) *status = st;
  if (st != 0) return NULL;
  json_t *doc = report_json_doc(&r);
  report_free(&r);
  return doc;
}

int cmd_report(int argc, char **argv) {
  struct cli_dump_args args;
  int st = cli_dump_args_parse("report", argc, argv,
                               CLI_DUMP_ARGS_OP | CLI_DUMP_ARGS_JSON | CLI_DUMP_ARGS_HTML | CLI_DUMP_ARGS_BY_MODEL |
                                   CLI_DUMP_ARGS_BALANCE,
                               cmd_report_help, &args);
  if (st >= 0) return st;
  struct balance_args *ba = calloc(1, sizeof *ba);
  if (!ba) {
    fputs("collscope report: out of memory\n", stderr);
    return 1;
  }
  const char *lists[2] = {args.layers, args.shares};
  for (int k = 0; k < 2; k++) {
    if (!lists[k]) continue;
    char err[128];
    int n = report_balance_parse_list(lists[k], k == 0, k == 0 ? ba->layers : ba->shares, BAL_MAX_LIST, err, sizeof err);
    if (n < 0) {
      fprintf(stderr, "collscope report: %s: %s\n", k == 0 ? "--layers" : "--shares", err);
      cmd_report_help(stderr);
      free(ba);
      return CLI_EXIT_USAGE;
    }
    if (k == 0)
      ba->nlayers = (size_t)n, ba->have_layers = true;
    else
      ba->nshares = (size_t)n, ba->have_shares = true;
  }
  struct report r;
  struct report_agg agg;
  st = report_build(&r, &agg, args.dir, args.job, args.op, args.jobs, args.by_model, ba);
  if (st != 0) {
    free(ba);
    return st;
  }

  char *tmp = NULL;
  FILE *o = cli_out_open("report", args.outpath, &tmp);
  int rc = 1;
  if (o) {
    rc = 0;
    if (args.html) { /* the page draws the --json document (tools/report/report_html.c) */
      json_t *doc = report_json_doc(&r);
      rc = report_html_write(doc, o);
      json_decref(doc);
    } else if (args.json) {
      if (write_json(&r, o) != 0) rc = 1;
    } else {
      for (size_t i = 0; i < report_nsections; i++)
        if (report_sections[i]->text) report_sections[i]->text(&r, o);
    }
    rc = cli_out_close("report", o, tmp, args.outpath, rc);
  }
  report_free(&r);
  free(ba);
  return rc;
}
