/* bench/accuracy_driver.c: the accuracy evaluation's in-process driver (bench/accuracy.py,
 * docs/accuracy.md), its core. It runs a workload of N ranks (bench/accuracy_workloads.c) on
 * the simulator's modeled clock (docs/simulator.md "The modeled clock") without processes: per
 * rank and stream a time, per collective instance the arrival of each member (the time of the
 * communicator's stream there), completion on every member at the latest arrival plus the
 * instance's cost, and feeds each instance, as the report does, into collscope's streaming
 * detector (analysis/detect*.c, linked, not copied), with each member's compute gap as the
 * report forms it (analysis/compute_gap.c, linked: per communicator and stream, the idle time
 * of the stream since the communicator's previous op there). A rank's streams run side by
 * side, as the simulator's do; a stream synchronize makes the next items of the rank's streams
 * start no earlier than the streams it waited for (the host enqueues them after it).
 *
 * The cost is the simulator's, linked (tests/sim/nccl/collcost.c, NCCL 2.28.9's tuning model,
 * src/graph/tuning.cc: 8.4 us base latency, 3.4 us NVLink / 14 us NET per ring step, 150 GB/s
 * inside a host, 100 Gbit/s between hosts, `link:` us added to an edge's latency), in the job
 * shape of tests/stats (`link:a=*,b=*,us=300`: every ring step 300 us more, so the model and
 * not the host sets the arrivals; "backward pass" 2 ms per bucket), with `jitter:pct=2` noise:
 * each compute 1 + 0.02 u per rank, each instance's cost 1 + 0.02 u on every member alike.
 * `hetero`: simhost2's GPUs are an older model at half speed (COLLSCOPE_SIM_GPU_MODEL
 * `simhost2=NVIDIA A100-SXM4-80GB,speed=0.5`): their compute takes twice as long, and so does
 * an instance with a member there (the simulator divides a member's cost by its speed and
 * completes at the longest). Findings on a rank whose GPU model is not the job's majority
 * model are printed apart, as `explained`: the report names them `gpu_model`
 * (tools/report/report_health.c, the odd model out or an older architecture than the job's).
 *
 * Every workload also feeds every member's op of every instance (a pipeline's Sends and Recvs
 * with their peers: pp1f1b, pp1f1b_x, bench/accuracy_pipeline.c) to the report's pipeline
 * schedule (analysis/schedule.c) and peer waits (analysis/peer_wait.c), and the detector's
 * result is judged as the report judges it (tools/report/report_agg.c): cs_sched_judge, then
 * cs_pwait_attribute, then the time elsewhere (cs_celse_judge, analysis/comm_elsewhere.c). The
 * findings they leave out are printed apart.
 *
 *   accuracy_driver --workload dp|3d|moe|fsdp|accum|multicomm|hetero|pp1f1b|pp1f1b_x --fault F
 *                   --ranks N --seed S --steps K [--ranks-per-host H] [--min-instances I]
 * F: none, slow:pct=P[,from=S], intermittent:pct=P, host:pct=P, link, throttle, two,
 *    hang_host, hang_gpu, hang_kernel, compute:pct=P, hostdelay:pct=P, nic:pct=P. Prints one JSON object:
 *    instances, judged, the culprit rank(s), and per finding rank, host, kind, comm index and
 *    the instances from the fault's onset on that communicator to the first flag:
 *    `stragglers`, `explained` (the GPU inventory explains them), `explained_by_schedule` and
 *    `moved_to_peer` (left out by the schedule, by a flagged peer's wait). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accuracy_driver.h"

#define LINK_US 3000.0 /* the `link` fault: simhost1 <-> simhost2, 3 ms per step */
#define HANG_SEQ 20
#define OLD_SPEED 0.5 /* hetero: the older model's speed */

struct driver W;

static void nomem(void) {
  fprintf(stderr, "accuracy_driver: out of memory\n");
  exit(2);
}

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
double unif(uint64_t key) { return (double)(mix(key ^ mix(W.seed)) >> 11) / 9007199254740992.0; }
/* the simulator's jitter:pct=P,tail=T (tests/sim/cuda/model.c): 1 + P/100 u, u uniform in
 * [-1, 1), plus T/100 an exponential draw of mean 1 */
static double jit(uint64_t key) {
  double f = 1.0 + W.jitter * (2.0 * unif(key) - 1.0);
  if (W.tail > 0) f -= W.tail * log(1.0 - unif(key ^ 0x7a11000000000000ull));
  return f;
}

static bool link_pair(int a, int b) {
  int ha = host_of(a), hb = host_of(b);
  return W.fault == F_LINK && ((ha == 0 && hb == 1) || (ha == 1 && hb == 0));
}

struct comm *comm_new(const int *m, int n, int stream) {
  struct comm *c = &W.comms[W.ncomms];
  memset(c, 0, sizeof *c);
  c->id = (int)W.ncomms++;
  c->n = n;
  c->stream = stream;
  c->m = malloc((size_t)n * sizeof *c->m);
  c->mb = calloc((size_t)n, sizeof *c->mb);
  if (!c->m || !c->mb) exit(2);
  memcpy(c->m, m, (size_t)n * sizeof *m);
  for (int k = 0; k < n && W.hang_comm < 0; k++)
    if (m[k] == W.culprit) W.hang_comm = c->id;
  return c;
}

/* the edge between comm ranks a and b as the simulator forms it (tests/sim/nccl/model.c):
 * NVLink inside a host, 100 Gbit/s between hosts, every edge the quiet shape's 300 us and the
 * `link` fault's pair 3 ms more */
static struct sn_edge pair_edge(void *ctx, int a, int b) {
  const struct comm *c = ctx;
  int ra = c->m[a], rb = c->m[b];
  bool same = host_of(ra) == host_of(rb);
  bool nic = W.fault == F_NIC && !same && (host_of(ra) == W.chost || host_of(rb) == W.chost);
  return sn_cost_edge(same, SN_COST_NET_GBPS / 8.0, W.wire_us + (link_pair(ra, rb) ? LINK_US : 0),
                      nic ? 1.0 / (1.0 + W.pct / 100.0) : 1.0);
}
static struct sn_edge ring_edge(void *ctx, int p) {
  const struct comm *c = ctx;
  return pair_edge(ctx, p, (p + 1) % c->n);
}
/* the simulator's cost of one op on c (tests/sim/nccl/collcost.c), in us; P2P from comm rank
 * self to peer */
static double cost_us(struct comm *c, enum sn_cost_algo algo, double bytes, int self, int peer) {
  struct sn_cost_net net = {.n = c->n, .ring = ring_edge, .pair = pair_edge, .ctx = c};
  return sn_cost_op_ns(&net, algo, bytes, self, peer) / 1e3;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
/* the slow fault's stall before rank r's collective on c: P% of the median of its last 32
 * measured durations there (the first is a warm-up), from step `from` on (tests/sim:
 * slow:pct) */
static double stall_us(const struct comm *c, int r, int64_t step) {
  bool on = false;
  switch (W.fault) {
  case F_SLOW: on = r == W.culprit; break;
  case F_TWO: on = r == W.culprit || r == W.culprit2; break;
  case F_HOST: on = host_of(r) == W.chost; break;
  case F_INTERMITTENT: on = r == W.culprit && c->seq % 2 == 0; break; /* every other one (every=2) */
  default: break;
  }
  if (!on || step < W.from || c->nhist < 4) return 0; /* the simulator's first stall: seq 4 */
  size_t k = c->nhist - 1 < 32 ? c->nhist - 1 : 32;
  double v[32];
  for (size_t i = 0; i < k; i++) v[i] = c->hist[(c->nhist - 1 - i) % 32];
  qsort(v, k, sizeof *v, cmp_d);
  double med = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
  return W.pct / 100.0 * med;
}
static bool culprit(int r) {
  switch (W.fault) {
  case F_HOST: return host_of(r) == W.chost;
  case F_TWO: return r == W.culprit || r == W.culprit2;
  case F_NONE:
  case F_NIC:
  case F_LINK: return false;
  default: return r == W.culprit;
  }
}

static bool older(int r) { return W.old_host >= 0 && host_of(r) == W.old_host; }

/* a fault that slows the culprit's own work (its GPU's compute, its host) is on */
static bool work_fault(int r) {
  return (W.fault == F_THROTTLE || W.fault == F_COMPUTE || W.fault == F_HOSTDELAY) && r == W.culprit &&
         W.step >= W.from;
}

void compute_on(int s, int r, double us) {
  if (W.hstep[r] != W.step) { /* the host enqueues this step's first work */
    W.hstep[r] = W.step;
    if (W.fault == F_HOSTDELAY && work_fault(r)) {
      /* hostdelay: its thread spends pct% of a step's compute after the step's synchronize
       * (tests/sim/cuda/model.c), so every one of its streams starts the step that late */
      double h = *stream_t(s, r) + W.pct / 100.0 * W.step0[r];
      for (int q = 0; q < NSTREAMS; q++)
        if (*stream_t(q, r) < h) *stream_t(q, r) = h;
    }
  }
  if (W.step == 0) W.step0[r] += us;
  double f = jit(((uint64_t)r << 40) ^ W.draws[r]++);
  if (W.fault == F_THROTTLE && work_fault(r)) f *= 1.0 / 0.7;          /* clocks at 70% */
  if (W.fault == F_COMPUTE && work_fault(r)) f *= 1.0 + W.pct / 100.0; /* slow:compute=P */
  if (older(r)) f /= OLD_SPEED;
  *stream_t(s, r) += us * f;
}

void sync_streams(int r, int s0, int s1) {
  double h = 0;
  for (int s = s0; s <= s1; s++)
    if (*stream_t(s, r) > h) h = *stream_t(s, r);
  for (int s = 0; s < NSTREAMS; s++)
    if (*stream_t(s, r) < h) *stream_t(s, r) = h;
}

/* one collective instance on c: arrivals, completion, the detector's instance; a member on
 * the older model makes the instance's cost its (the longest) */
void collective(struct comm *c, enum sn_cost_algo op, double bytes) {
  if (W.hung) return;
  int64_t seq = c->seq++;
  W.ninst++;
  double tmax = 0, speed = 1.0;
  bool delayed = false;
  for (int k = 0; k < c->n; k++) {
    int r = c->m[k];
    double s = stall_us(c, r, W.step), *t = stream_t(c->stream, r);
    if (s > 0 || work_fault(r)) delayed = true;
    if (older(r)) speed = OLD_SPEED;
    *t += s;
    if (*t > tmax) tmax = *t;
  }
  if (delayed && !c->onset) c->onset = seq + 1;
  bool hang = (W.fault == F_HANG_HOST || W.fault == F_HANG_GPU || W.fault == F_HANG_KERNEL) && seq == HANG_SEQ &&
              c->id == W.hang_comm;
  double end = tmax + sn_cost_item_ns(cost_us(c, op, bytes, 0, 0), speed, jit(((uint64_t)c->id << 48) ^ ((uint64_t)c->n << 32) ^ (uint64_t)seq));
  size_t nm = 0;
  bool recorded = false;
  for (int k = 0; k < c->n; k++) {
    int r = c->m[k];
    if (hang && W.fault == F_HANG_HOST && r == W.culprit) continue; /* never enters */
    struct cs_det_op *b = &c->mb[nm++];
    double *t = stream_t(c->stream, r);
    int64_t st = (int64_t)(*t * 1e3), en = (int64_t)(end * 1e3);
    double gap = hang ? -1 : cs_gap_timed(&W.gaps[r], (uint64_t)c->id + 1, (uint64_t)c->stream + 1, st, en);
    *b = (struct cs_det_op){.comm_rank = k, .comm_size = c->n, .rank = r, .host = W.host[host_of(r)], .start_ns = st, .end_ns = en, .enqueue_ns = st, .state = hang ? CS_DET_PENDING : CS_DET_DONE, .bytes = (uint64_t)bytes, .gap_us = gap};
    /* what each shim's hang record says of the op's start event: the hung GPU (hang_gpu: stuck
     * in its own work before the op, the simulator's gpuhang:) never reached it; every other
     * GPU is inside it (hang_kernel: the hung GPU too, its kernel started and never ends) */
    if (hang) b->gpu_start = W.fault == F_HANG_GPU && r == W.culprit ? CS_DET_START_NOT_REACHED : CS_DET_START_REACHED;
    if (W.sched) { /* what the report's walk gives the schedule and the peer waits */
      W.sop[nm - 1] = (struct cs_sched_op){k, r, b->host, -1, false, false, gap};
      W.pop[nm - 1] = (struct cs_pwait_op){k, r, -1, false, false, !hang, st, en};
    }
    if (!hang && culprit(r) && !recorded) {
      c->hist[c->nhist++ % 32] = end - *t;
      recorded = true;
    }
    if (!hang) *t = end;
  }
  if (W.sched && (cs_sched_instance(W.sched, (uint64_t)c->id + 1, seq, W.sop, nm) ||
                  cs_pwait_instance(W.pwait, (uint64_t)c->id + 1, W.pop, nm)))
    nomem();
  if (cs_det_stream_instance(W.det, (uint64_t)c->id + 1, seq, c->mb, nm)) nomem();
  if (hang) W.hung = true;
}

void judge_p2p(void) {
  if (W.sched) return; /* once */
  W.sched = cs_sched_new();
  W.pwait = cs_pwait_new();
  W.celse = cs_celse_new();
  W.sop = malloc((size_t)W.n * sizeof *W.sop);
  W.pop = malloc((size_t)W.n * sizeof *W.pop);
  if (!W.sched || !W.pwait || !W.celse || !W.sop || !W.pop) nomem();
}

double p2p_cost_us(struct comm *c, int k, int peer, double bytes) {
  int r = c->m[k];
  return sn_cost_item_ns(cost_us(c, SN_COST_P2P, bytes, k, peer), older(r) ? OLD_SPEED : 1.0,
                         jit(((uint64_t)r << 40) ^ W.draws[r]++));
}

/* as the report's walk forms a group's instance (tools/report/report_balance.c,
 * tools/report/section_steps.c): every op with its peer, one GPU span; no compute gap (the
 * schedule reads a collective's) */
void p2p_span(struct comm *c, int k, const struct p2p_op *ops, int n, double st, double en) {
  int r = c->m[k];
  int64_t s = (int64_t)(st * 1e3), e = (int64_t)(en * 1e3);
  cs_gap_timed(&W.gaps[r], (uint64_t)c->id + 1, (uint64_t)c->stream + 1, s, e);
  if (!W.sched || n > W.n) return;
  for (int i = 0; i < n; i++) {
    W.sop[i] = (struct cs_sched_op){k, r, W.host[host_of(r)], ops[i].peer, true, ops[i].send, -1};
    W.pop[i] = (struct cs_pwait_op){k, r, ops[i].peer, true, ops[i].send, true, s, e};
  }
  if (cs_sched_instance(W.sched, (uint64_t)c->id + 1, c->seq++, W.sop, (size_t)n) ||
      cs_pwait_instance(W.pwait, (uint64_t)c->id + 1, W.pop, (size_t)n))
    nomem();
}

/* ---------------------------------------------------------------- main */

/* the job's GPU inventory explains a finding on a rank whose model is not the one most ranks
 * run (the report's `gpu_model` cause, tools/report/report_health.c) */
static bool explained(int r) {
  if (r < 0 || W.old_host < 0) return false;
  int old = 0;
  for (int q = 0; q < W.n; q++) old += host_of(q) == W.old_host;
  bool old_major = 2 * old > W.n, mine_old = host_of(r) == W.old_host;
  return 2 * old != W.n && mine_old != old_major;
}

/* the findings v[0..n-1] as a JSON list `name`: rank, host, kind, comm, and the instances from
 * the onset on the comm to the first flag; expl 0: those the GPU inventory does not explain, 1:
 * those it does, 2: all */
static void print_findings(const struct cs_det_straggler *v, size_t n, const char *name, int expl) {
  printf(",\"%s\":[", name);
  bool first = true;
  for (size_t i = 0; i < n; i++) {
    const struct cs_det_straggler *s = &v[i];
    if (expl < 2 && explained(s->rank) != (expl == 1)) continue;
    const struct comm *c = &W.comms[s->comm - 1];
    /* instances from the first delayed one (counted as 1) to the first flag; none for the
     * schedule's verdicts over the whole job (a GPU slower than its stage's peers, a slow
     * stage: analysis/stage_compute.c, schedule.c), which carry no flag instance */
    char after[32] = "null";
    bool whole_job = s->rule == CS_DET_RULE_STAGE;
    if (c->onset && !whole_job) snprintf(after, sizeof after, "%lld", (long long)s->first_flag_instance - (long long)c->onset + 1);
    printf("%s{\"rank\":%d,\"host\":%s%s%s,\"kind\":\"%s\",\"comm\":%d,\"comm_size\":%d,\"first_flag_instance\":%zu,"
           "\"onset\":%lld,\"after\":%s,\"offset_us\":%.1f,\"later_share\":%.3f,\"share_last\":%.3f,"
           "\"lateness_us\":%.1f,\"median_dur_us\":%.1f,\"gap_us\":%.1f,\"peer_gap_us\":%.1f,\"rule\":\"%s\"}",
           first ? "" : ",", s->rank, s->host ? "\"" : "", s->host ? s->host : "null", s->host ? "\"" : "",
           cs_det_kind_name(s->kind), c->id, c->n, s->first_flag_instance, (long long)c->onset, after, s->offset_us,
           s->later_share, s->share_last, s->lateness_us, s->median_dur_us, s->gap_us, s->peer_gap_us,
           cs_det_rule_name(s->rule));
    first = false;
  }
  printf("]");
}

/* the findings the report leaves out of a job with Send/Recv, each as the detector gave it */
struct judged {
  struct cs_det_straggler *sched, *peer, *celse; /* the schedule explains; a flagged peer's wait
                                                    explains; the rank's time elsewhere explains */
  size_t nsched, npeer, ncelse;
};

static bool found(const struct cs_det_result *r, const struct cs_det_straggler *x) {
  for (size_t i = 0; i < r->nstragglers; i++)
    if (r->stragglers[i].comm == x->comm && r->stragglers[i].rank == x->rank &&
        r->stragglers[i].comm_rank == x->comm_rank)
      return true;
  return false;
}

/* as the report judges the detector's result (tools/report/report_agg.c): a cross-stage
 * straggler against its stage's peers (cs_sched_judge), then a link finding whose lateness is
 * its wait for a flagged peer moved to that peer (cs_pwait_attribute), then a finding its rank's
 * longer time in its other communicators explains (cs_celse_judge); what each removed is kept
 * in jd */
static void judge(struct cs_det_result *res, struct judged *jd) {
  memset(jd, 0, sizeof *jd);
  if (!W.sched) return;
  size_t n = res->nstragglers;
  struct cs_det_straggler *pre = malloc((n ? n : 1) * sizeof *pre);
  jd->sched = malloc((n ? n : 1) * sizeof *jd->sched);
  jd->peer = malloc((n ? n : 1) * sizeof *jd->peer);
  jd->celse = malloc((n ? n : 1) * sizeof *jd->celse);
  if (!pre || !jd->sched || !jd->peer || !jd->celse || cs_sched_finish(W.sched)) nomem();
  if (n) memcpy(pre, res->stragglers, n * sizeof *pre);
  cs_sched_judge(W.sched, res);
  for (size_t i = 0; i < n; i++)
    if (!found(res, &pre[i])) jd->sched[jd->nsched++] = pre[i];
  n = res->nstragglers;
  pre = realloc(pre, (n ? n : 1) * sizeof *pre);
  if (!pre) nomem();
  if (n) memcpy(pre, res->stragglers, n * sizeof *pre);
  cs_pwait_attribute(W.pwait, res);
  for (size_t i = 0; i < n; i++)
    if (!found(res, &pre[i])) jd->peer[jd->npeer++] = pre[i];
  n = res->nstragglers;
  if (n) memcpy(pre, res->stragglers, n * sizeof *pre);
  cs_celse_judge(W.celse, W.pwait, res, W.sched);
  for (size_t i = 0; i < n; i++)
    if (!found(res, &pre[i])) jd->celse[jd->ncelse++] = pre[i];
  free(pre);
}

static int parse_fault(const char *f) {
  W.from = 0;
  const char *kv = strchr(f, ':');
  size_t kl = kv ? (size_t)(kv - f) : strlen(f);
#define IS(s) (kl == strlen(s) && !strncmp(f, s, kl))
  if (IS("none"))
    W.fault = F_NONE;
  else if (IS("slow"))
    W.fault = F_SLOW;
  else if (IS("intermittent"))
    W.fault = F_INTERMITTENT;
  else if (IS("host"))
    W.fault = F_HOST;
  else if (IS("link"))
    W.fault = F_LINK;
  else if (IS("throttle"))
    W.fault = F_THROTTLE;
  else if (IS("two"))
    W.fault = F_TWO;
  else if (IS("hang_host"))
    W.fault = F_HANG_HOST;
  else if (IS("hang_gpu"))
    W.fault = F_HANG_GPU;
  else if (IS("hang_kernel"))
    W.fault = F_HANG_KERNEL;
  else if (IS("compute"))
    W.fault = F_COMPUTE;
  else if (IS("hostdelay"))
    W.fault = F_HOSTDELAY;
  else if (IS("nic"))
    W.fault = F_NIC;
  else
    return -1;
#undef IS
  W.pct = W.fault == F_TWO ? 20 : 0;
  for (const char *p = kv ? kv + 1 : NULL; p && *p;) {
    char *end;
    if (!strncmp(p, "pct=", 4))
      W.pct = strtod(p + 4, &end);
    else if (!strncmp(p, "from=", 5))
      W.from = strtoll(p + 5, &end, 10);
    else
      return -1;
    p = *end == ',' ? end + 1 : NULL;
  }
  if (W.fault == F_THROTTLE && !W.from) W.from = 2;
  if ((W.fault == F_COMPUTE || W.fault == F_HOSTDELAY) && !W.from) W.from = 1; /* from the second step */
  return 0;
}

int main(int argc, char **argv) {
  const char *wl = "dp", *fault = "none";
  W.n = 8;
  W.steps = 40;
  W.seed = 1;
  W.rph = 0;
  W.jitter = 0.02;
  W.wire_us = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--workload"))
      wl = argv[i + 1];
    else if (!strcmp(argv[i], "--fault"))
      fault = argv[i + 1];
    else if (!strcmp(argv[i], "--ranks"))
      W.n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed"))
      W.seed = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--steps"))
      W.steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--ranks-per-host"))
      W.rph = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--jitter"))
      W.jitter = atof(argv[i + 1]) / 100.0;
    else if (!strcmp(argv[i], "--tail"))
      W.tail = atof(argv[i + 1]) / 100.0;
    else if (!strcmp(argv[i], "--wire-us"))
      W.wire_us = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--min-instances"))
      W.min_inst = strtoull(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "accuracy_driver: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (W.n < 8 || W.n > (1 << 20) || W.n % 8 || W.steps < 1 || parse_fault(fault) || !(W.jitter >= 0 && W.jitter < 1) ||
      !(W.tail >= 0 && W.tail <= 1) || !(W.wire_us >= 0 && W.wire_us <= 1e6)) {
    fprintf(stderr, "accuracy_driver: bad --ranks (a multiple of 8), --steps or --fault %s\n", fault);
    return 2;
  }
  if (W.rph <= 0) W.rph = W.n == 8 ? 2 : 8; /* collscope run -n 8 --hosts simhost[1-4]; else 8 GPUs a host */
  int nh = (W.n + W.rph - 1) / W.rph;
  W.culprit = W.n == 8 ? 5 : W.n / 2 + 5; /* simhost3 at 8 ranks */
  W.culprit2 = W.n == 8 ? 1 : W.n / 4 + 1;
  W.chost = host_of(W.culprit);
  W.hang_comm = -1;
  W.old_host = !strcmp(wl, "hetero") ? 1 : -1; /* simhost2 */
  W.t = calloc((size_t)W.n * NSTREAMS, sizeof *W.t);
  W.gaps = calloc((size_t)W.n, sizeof *W.gaps); /* zero: cs_gap_reset's state */
  W.draws = calloc((size_t)W.n, sizeof *W.draws);
  W.hstep = malloc((size_t)W.n * sizeof *W.hstep);
  W.step0 = calloc((size_t)W.n, sizeof *W.step0);
  if (W.hstep)
    for (int r = 0; r < W.n; r++) W.hstep[r] = -1;
  W.host = malloc((size_t)nh * sizeof *W.host);
  W.comms = calloc((size_t)W.n * 2 + 16, sizeof *W.comms);
  if (!W.t || !W.gaps || !W.draws || !W.hstep || !W.step0 || !W.host || !W.comms) return 2;
  for (int h = 0; h < nh; h++) {
    char b[32];
    snprintf(b, sizeof b, "simhost%d", h + 1);
    W.host[h] = strdup(b);
  }
  struct cs_det_params p;
  cs_det_params_default(&p);
  if (cs_det_params_env(&p)) fprintf(stderr, "accuracy_driver: a COLLSCOPE_STRAGGLER_* value was ignored\n");
  W.det = cs_det_stream_new(&p, CS_DET_HANG_PENDING);
  if (!W.det) return 2;
  judge_p2p(); /* the report's judgements after the detector, for every workload */
  if (run_workload(wl)) {
    fprintf(stderr, "accuracy_driver: unknown workload %s\n", wl);
    return 2;
  }
  struct cs_det_result res;
  if (cs_det_stream_finish(W.det, &res)) return 2;
  struct judged jd;
  judge(&res, &jd);
  printf("{\"instances\":%zu,\"judged\":%zu,\"culprits\":[", res.instances, res.judged);
  bool first = true;
  for (int r = 0; r < W.n; r++)
    if (culprit(r)) printf("%s%d", first ? "" : ",", r), first = false;
  printf("],\"culprit_host\":\"%s\"",
         W.fault == F_NONE || W.fault == F_LINK || W.fault == F_NIC || W.fault == F_HANG_KERNEL ? ""
                                                                                                : W.host[host_of(W.culprit)]);
  print_findings(res.stragglers, res.nstragglers, "stragglers", 0);
  print_findings(res.stragglers, res.nstragglers, "explained", 1);
  print_findings(jd.sched, jd.nsched, "explained_by_schedule", 2);
  print_findings(jd.peer, jd.npeer, "moved_to_peer", 2);
  print_findings(jd.celse, jd.ncelse, "explained_by_comm_elsewhere", 2);
  printf(",\"hangs\":[");
  for (size_t i = 0; i < res.nhangs; i++) {
    const struct cs_det_hang *h = &res.hangs[i];
    printf("%s{\"seq\":%lld,\"missing\":[", i ? "," : "", (long long)h->seq);
    for (size_t k = 0; k < h->nmissing; k++) printf("%s%d", k ? "," : "", h->missing[k]);
    printf("],\"unstarted\":[");
    for (size_t k = 0; k < h->nunstarted; k++) printf("%s%d", k ? "," : "", h->unstarted[k]);
    printf("],\"stuck\":%zu}", h->nstuck);
  }
  printf("]}\n");
  if (getenv("ACCURACY_DRIVER_RANKS")) /* per-rank figures of the final window (debugging) */
    for (size_t i = 0; i < res.nranks; i++)
      fprintf(stderr, "comm %llu rank %d offset %.1f last %zu/%zu\n", (unsigned long long)res.ranks[i].comm - 1,
              res.ranks[i].rank, res.ranks[i].offset_us, res.ranks[i].last, res.ranks[i].instances);
  cs_det_result_free(&res);
  cs_det_stream_free(W.det);
  free(jd.sched);
  free(jd.peer);
  free(jd.celse);
  cs_sched_free(W.sched);
  cs_pwait_free(W.pwait);
  cs_celse_free(W.celse);
  free(W.sop);
  free(W.pop);
  return 0;
}
