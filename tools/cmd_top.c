/* tools/cmd_top.c: `collscope top [--once] [--json] [--interval S] [--dir SHMDIR]`.
 *
 * Live view of every collscope process of this user (root: of every user) on this host,
 * read from their shared-memory stats rings (include/collscope/ring.h; read-only mappings,
 * the writers are never blocked; a ring that fails the reader's checks is skipped with one
 * line). One row per process: job, rank, pid, device, comm, current seq, ops/s, busbw, time
 * since the last completion, lateness score, flags (STRAGGLER, CLEARED, HUNG, DROPS, EXITED, DEAD).
 * STRAGGLER while the detector still flags the rank at its comm's last instance; CLEARED for
 * --cleared S seconds (60) of the rank's own op times after it was last flagged, then nothing.
 * Stragglers and hangs come from analysis/detect.c, run over each job's rings on their own, so
 * every flag belongs to a (job, rank): the same detector `collscope report` runs over dump
 * files. Exit status 0, 1 when no ring was found with --once/--json, 2 usage. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "collscope/detect.h"
#include "collscope/ring.h"
#include "collscope/schema.h"
#include "dump/dumpfile.h"
#include "ring/ring_sched.h"
#include "ring/ring_view.h"

struct proc {
  struct ring_view v;
  const struct cs_ring_hdr *h; /* v.rd.h */
  int rank, pid;               /* read once: sorting and matching need values that hold still */
  /* figures */
  uint64_t comm; /* busiest comm (most ops in the ring) */
  int64_t seq;   /* its highest completed seq, -1 none */
  double ops_per_s, busbw, since_last_s;
  double lateness_us, share_last, offset_us;
  bool straggler, cleared, hung, dead, closed; /* cleared: a finding that cleared within top_cleared_ns */
  int64_t last_ns;                             /* its latest op's time (its own clock) */
  uint64_t drops, pending;
  unsigned health; /* CS_HEALTH_F_* of its health samples in the ring (record.h) */
};

/* a cleared finding is shown this long (--cleared S, default 60 s of the rank's op times), then dropped */
static int64_t top_cleared_ns = 60000000000LL;

static int64_t now_rt(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_proc(const void *a, const void *b) {
  const struct proc *x = a, *y = b;
  int j = strcmp(x->v.job_id, y->v.job_id);
  if (j) return j;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Open every ring in dir and read what it holds; rings that fail the reader's checks go to
 * *skip (one line each). */
static size_t load_procs(const char *dir, struct proc **out, char **skip, size_t *skip_len) {
  *out = NULL;
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t n = 0, cap = 0;
  struct proc *v = NULL;
  struct dirent *e;
  FILE *sk = open_memstream(skip, skip_len);
  while ((e = readdir(d))) {
    if (!cs_ring_name_ours(e->d_name)) continue;
    char path[512];
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    struct proc p;
    memset(&p, 0, sizeof p);
    if (ring_view_load(&p.v, path, "top", sk) != 0) continue;
    p.h = p.v.rd.h;
    p.rank = *(const volatile int32_t *)&p.h->rank;
    p.pid = *(const volatile int32_t *)&p.h->pid;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      struct proc *nv = realloc(v, cap * sizeof *v);
      if (!nv) {
        ring_view_free(&p.v);
        break;
      }
      v = nv;
    }
    v[n++] = p;
  }
  closedir(d);
  if (sk) fclose(sk);
  if (n) qsort(v, n, sizeof *v, cmp_proc);
  *out = v;
  return n;
}

static void free_procs(struct proc *v, size_t n) {
  for (size_t i = 0; i < n; i++) ring_view_free(&v[i].v);
  free(v);
}

/* (a - b) in seconds, without overflow whatever the ring holds */
static double secs_between(int64_t a, int64_t b) { return ((double)a - (double)b) / 1e9; }

static double hang_timeout_s(void) {
  const char *t = getenv("COLLSCOPE_HANG_TIMEOUT");
  double x = t && *t ? atof(t) : 300;
  return x > 0 ? x : 300;
}

/* Figures of the processes v[0..n) (one job's) and the detector over their records; flags
 * are matched by rank within the job only. */
static void analyse_job(struct proc *v, size_t n, const struct cs_det_params *dp, struct cs_det_result *det) {
  int64_t now = now_rt();
  size_t tot = 0;
  for (size_t i = 0; i < n; i++) tot += v[i].v.nrecs;
  struct cs_det_op *ops = calloc(tot ? tot : 1, sizeof *ops);
  memset(det, 0, sizeof *det);
  if (!ops) return;
  size_t k = 0;
  double tmo = hang_timeout_s();
  for (size_t i = 0; i < n; i++) {
    struct proc *p = &v[i];
    const struct cs_ring_hdr *h = p->h;
    p->dead = cs_ring_writer_dead(h);
    p->closed = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->closed, memory_order_acquire);
    p->drops = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->drops, memory_order_relaxed);
    p->pending = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->pending, memory_order_relaxed);
    int64_t oldest = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->oldest_pending_ns, memory_order_relaxed);
    p->hung = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->hung, memory_order_relaxed) > 0 ||
              (!p->closed && p->pending && oldest && secs_between(now, oldest) >= tmo);
    /* busiest comm */
    uint64_t best = 0;
    size_t bestn = 0;
    for (uint32_t c = 0; c < atomic_load(&((struct cs_ring_hdr *)(uintptr_t)h)->ncomms) && c < CS_RING_MAX_COMMS; c++) {
      size_t cnt = 0;
      for (size_t j = 0; j < p->v.nrecs; j++) cnt += p->v.recs[j].type == CS_REC_OP && p->v.recs[j].comm_id == h->comms[c].id;
      if (cnt > bestn || !best) {
        best = h->comms[c].id;
        bestn = cnt;
      }
    }
    p->comm = best;
    p->seq = -1;
    int64_t last = 0;
    size_t recent = 0;
    double bw[4096];
    size_t nbw = 0;
    /* a group's members that share one span (group_ops > 1) have no time of their own: one
     * bandwidth per group, the sum of their bytes x factor over the span, an all-to-all's Send
     * bytes x (n-1)/n (as the report's group rows, tools/report/report_agg_group.c) */
    struct {
      uint64_t group;
      int64_t start, end;
      uint32_t n;
      double fb;
      struct cs_det_a2a a2a;
    } ga;
    memset(&ga, 0, sizeof ga);
    for (size_t j = 0; j < p->v.nrecs; j++) {
      const struct cs_record *r = &p->v.recs[j];
      if (r->type == CS_REC_HEALTH) { /* hooks/health.c */
        p->health |= r->op;
        continue;
      }
      if (r->type == CS_REC_HANG) {
        p->hung = true;
        struct cs_det_op *d = &ops[k++];
        d->comm = r->comm_id;
        d->seq = (int64_t)r->seq;
        d->comm_size = r->comm_size;
        d->comm_rank = r->comm_rank;
        d->rank = p->rank;
        d->host = p->v.host;
        d->enqueue_ns = r->enqueue_ns;
        d->state = CS_DET_PENDING;
        d->gpu_start = cs_det_hang_start(r->start_ns == 1, r->start_ns == 0 || r->start_ns == 1);
        continue;
      }
      if (r->type != CS_REC_OP) continue;
      /* times are the file's: a span is used only when it is a plain one */
      bool timed = ring_rec_timed(r);
      int64_t t = timed ? r->end_ns : r->enqueue_ns;
      if (r->comm_id == best && r->status == 0 && r->seq != UINT64_MAX && (int64_t)r->seq > p->seq) p->seq = (int64_t)r->seq;
      if (t > last) last = t;
      if (secs_between(now, t) <= 1.0) {
        recent++;
        if (timed && r->end_ns > r->start_ns && r->op < CS_OP_COUNT && r->group && r->group_ops > 1) {
          if (ga.n == 0 || ga.group != r->group || ga.start != r->start_ns || ga.end != r->end_ns)
            memset(&ga, 0, sizeof ga), ga.group = r->group, ga.start = r->start_ns, ga.end = r->end_ns;
          ga.fb += (double)r->bytes * cs_busbw_factor((enum cs_op)r->op, r->comm_size);
          cs_det_a2a_add(&ga.a2a, cs_op_table[r->op].cls == CS_CLASS_P2P, r->op == CS_OP_Recv, r->peer, r->comm_size,
                         r->bytes);
          if (++ga.n == r->group_ops && nbw < 4096) {
            if (cs_det_a2a_ok(&ga.a2a, r->comm_size, r->comm_rank))
              ga.fb = (double)ga.a2a.send_bytes * cs_busbw_factor(CS_OP_AlltoAll, r->comm_size);
            bw[nbw++] = ga.fb / (double)(ga.end - ga.start);
            ga.n = 0;
          }
        } else if (timed && r->end_ns > r->start_ns && r->op < CS_OP_COUNT && nbw < 4096)
          bw[nbw++] = (double)r->bytes / ((double)(r->end_ns - r->start_ns)) *
                      cs_busbw_factor((enum cs_op)r->op, r->comm_size);
      }
      if (r->seq == UINT64_MAX) continue;
      ring_det_op(&ops[k++], r, p->rank, p->v.host);
    }
    p->last_ns = last;
    p->ops_per_s = (double)recent;
    p->since_last_s = last ? secs_between(now, last) : -1;
    if (nbw) {
      for (size_t a = 1; a < nbw; a++)
        for (size_t b = a; b > 0 && bw[b - 1] > bw[b]; b--) {
          double t = bw[b];
          bw[b] = bw[b - 1];
          bw[b - 1] = t;
        }
      p->busbw = bw[(nbw - 1) / 2];
    }
  }
  if (cs_detect(ops, k, dp, CS_DET_HANG_SEEN, det) != 0) memset(det, 0, sizeof *det);
  /* the pipeline schedule and the peers' waits, as the report applies them (ring_sched.h) */
  struct ring_sched_counts sc;
  if (ring_sched_judge(ops, k, det, &sc) < 0)
    fputs("collscope top: pipeline schedule out of memory: stragglers not judged against it\n", stderr);
  for (size_t i = 0; i < n; i++) {
    struct proc *p = &v[i];
    for (size_t r = 0; r < det->nranks; r++) {
      const struct cs_det_rankstat *rs = &det->ranks[r];
      if (rs->comm != p->comm || rs->rank != p->rank) continue;
      p->lateness_us = rs->lateness_us;
      p->offset_us = rs->offset_us;
      p->share_last = rs->instances ? (double)rs->last / (double)rs->instances : 0;
    }
    for (size_t s = 0; s < det->nstragglers; s++) {
      const struct cs_det_straggler *st = &det->stragglers[s];
      if (st->rank < 0 || st->rank != p->rank) continue;
      if (cs_det_straggler_ongoing(st))
        p->straggler = true;
      else if (st->last_flag_ns > 0 && p->last_ns - st->last_flag_ns <= top_cleared_ns)
        p->cleared = true;
    }
    if (p->straggler) p->cleared = false;
  }
  free(ops);
}

/* One snapshot's detector results: one per job, and their entries side by side for output
 * (shallow copies; the per-job results own them) with the job each belongs to. */
struct findings {
  struct cs_det_result *per_job;
  size_t njobs;
  struct cs_det_result all;
  const char **straggler_job, **hang_job;
};

static void analyse(struct proc *v, size_t n, const struct cs_det_params *dp, struct findings *f) {
  memset(f, 0, sizeof *f);
  f->per_job = calloc(n ? n : 1, sizeof *f->per_job);
  const char **job_of = calloc(n ? n : 1, sizeof *job_of);
  if (!f->per_job || !job_of) {
    free(job_of);
    return;
  }
  size_t ns = 0, nh = 0;
  for (size_t i = 0; i < n;) { /* v is sorted by job */
    size_t j = i + 1;
    while (j < n && strcmp(v[j].v.job_id, v[i].v.job_id) == 0) j++;
    struct cs_det_result *d = &f->per_job[f->njobs];
    analyse_job(v + i, j - i, dp, d);
    job_of[f->njobs++] = v[i].v.job;
    ns += d->nstragglers;
    nh += d->nhangs;
    f->all.instances += d->instances;
    i = j;
  }
  f->all.stragglers = calloc(ns ? ns : 1, sizeof *f->all.stragglers);
  f->all.hangs = calloc(nh ? nh : 1, sizeof *f->all.hangs);
  f->straggler_job = calloc(ns ? ns : 1, sizeof *f->straggler_job);
  f->hang_job = calloc(nh ? nh : 1, sizeof *f->hang_job);
  if (f->all.stragglers && f->all.hangs && f->straggler_job && f->hang_job) {
    for (size_t j = 0; j < f->njobs; j++) {
      const struct cs_det_result *d = &f->per_job[j];
      for (size_t s = 0; s < d->nstragglers; s++) {
        f->straggler_job[f->all.nstragglers] = job_of[j];
        f->all.stragglers[f->all.nstragglers++] = d->stragglers[s];
      }
      for (size_t h = 0; h < d->nhangs; h++) {
        f->hang_job[f->all.nhangs] = job_of[j];
        f->all.hangs[f->all.nhangs++] = d->hangs[h];
      }
    }
  }
  free(job_of);
}

static void free_findings(struct findings *f) {
  for (size_t j = 0; j < f->njobs; j++) cs_det_result_free(&f->per_job[j]);
  free(f->per_job);
  free(f->all.stragglers);
  free(f->all.hangs);
  free(f->straggler_job);
  free(f->hang_job);
}

static const struct {
  unsigned bit;
  const char *name;
} health_flags[] = {
    {CS_HEALTH_F_POWER, "THROTTLED:POWER"}, {CS_HEALTH_F_THERMAL, "THROTTLED:THERMAL"}, {CS_HEALTH_F_HW_SLOWDOWN, "THROTTLED:HW"}, {CS_HEALTH_F_NVLINK, "NVLINK"}, {CS_HEALTH_F_ECC, "ECC"}, {CS_HEALTH_F_XID, "XID"}, {CS_HEALTH_F_IB, "IB"}, {CS_HEALTH_F_PCIE, "PCIE"}};
#define NHEALTH_FLAGS (sizeof health_flags / sizeof *health_flags)

static void flags_text(const struct proc *p, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s%s%s%s%s%s", p->straggler ? "STRAGGLER " : "", p->cleared ? "CLEARED " : "",
                   p->hung ? "HUNG " : "",
                   p->drops || p->v.rd.lost ? "DROPS " : "", p->closed ? "EXITED " : "", !p->closed && p->dead ? "DEAD " : "");
  for (size_t i = 0; i < NHEALTH_FLAGS && n >= 0 && (size_t)n < len; i++)
    if (p->health & health_flags[i].bit) n += snprintf(buf + n, len - (size_t)n, "%s ", health_flags[i].name);
}

/* the job of each entry of a findings array, added to its JSON object */
static json_t *with_jobs(json_t *a, const char **jobs) {
  for (size_t i = 0; i < json_array_size(a); i++) json_object_set_new(json_array_get(a, i), "job", json_string(jobs[i]));
  return a;
}

static json_t *to_json(const struct proc *v, size_t n, const struct findings *f, const char *skipped,
                       const char *dir) {
  json_t *root = json_object();
  json_object_set_new(root, "time_ns", json_integer(now_rt()));
  json_object_set_new(root, "dir", json_string(dir));
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < n; i++) {
    const struct proc *p = &v[i];
    const struct cs_ring_hdr *h = p->h;
    json_t *o = json_object(), *comms = json_array(), *fl = json_array();
    json_object_set_new(o, "job", json_string(p->v.job));
    json_object_set_new(o, "rank", json_integer(p->rank));
    json_object_set_new(o, "pid", json_integer(p->pid));
    json_object_set_new(o, "host", json_string(p->v.host));
    json_object_set_new(o, "device", json_integer(h->device));
    json_object_set_new(o, "ring", json_string(p->v.path));
    uint32_t nc = atomic_load(&((struct cs_ring_hdr *)(uintptr_t)h)->ncomms);
    for (uint32_t c = 0; c < nc && c < CS_RING_MAX_COMMS; c++) {
      json_t *co = json_object();
      json_object_set_new(co, "comm", json_string(cs_comm_hex(h->comms[c].id, hex)));
      json_object_set_new(co, "size", json_integer(h->comms[c].size));
      json_object_set_new(co, "rank", json_integer(h->comms[c].rank));
      json_array_append_new(comms, co);
    }
    json_object_set_new(o, "comms", comms);
    json_object_set_new(o, "comm", p->comm ? json_string(cs_comm_hex(p->comm, hex)) : json_null());
    json_object_set_new(o, "seq", json_integer(p->seq));
    json_object_set_new(o, "ops_per_s", json_real(p->ops_per_s));
    json_object_set_new(o, "busbw_gbs", json_real(p->busbw));
    json_object_set_new(o, "since_last_s", json_real(p->since_last_s));
    json_object_set_new(o, "share_last", json_real(p->share_last));
    json_object_set_new(o, "lateness_us", json_real(p->lateness_us));
    json_object_set_new(o, "offset_us", json_real(p->offset_us));
    json_object_set_new(o, "pending", json_integer((json_int_t)p->pending));
    json_object_set_new(o, "drops", json_integer((json_int_t)p->drops));
    json_object_set_new(o, "records", json_integer((json_int_t)p->v.nrecs));
    json_object_set_new(o, "lost", json_integer((json_int_t)p->v.rd.lost));
    json_object_set_new(o, "alive", json_boolean(!p->dead));
    json_object_set_new(o, "clean_exit", json_boolean(p->closed));
    if (p->straggler) json_array_append_new(fl, json_string("STRAGGLER"));
    if (p->cleared) json_array_append_new(fl, json_string("CLEARED"));
    if (p->hung) json_array_append_new(fl, json_string("HUNG"));
    if (p->drops || p->v.rd.lost) json_array_append_new(fl, json_string("DROPS"));
    for (size_t k = 0; k < NHEALTH_FLAGS; k++)
      if (p->health & health_flags[k].bit) json_array_append_new(fl, json_string(health_flags[k].name));
    json_object_set_new(o, "flags", fl);
    json_array_append_new(a, o);
  }
  json_object_set_new(root, "processes", a);
  json_object_set_new(root, "stragglers", with_jobs(cli_json_stragglers(&f->all), f->straggler_job));
  json_object_set_new(root, "hangs", with_jobs(cli_json_hangs(&f->all), f->hang_job));
  json_t *sk = json_array(); /* one printable line per ring that failed the reader's checks */
  for (const char *l = skipped; l && *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    json_array_append_new(sk, json_stringn(l, len));
    l += len + (e != NULL);
  }
  json_object_set_new(root, "skipped", sk);
  return root;
}

static void print_text(const struct proc *v, size_t n, const struct findings *f, const char *skipped,
                       const struct cs_det_params *dp, const char *dir, FILE *o) {
  fprintf(o, "collscope top: %zu processes (rings in %s)\n", n, dir);
  /* job ids and host names whole, however long (two hosts that differ in their last
   * characters stay apart): the columns as wide as the longest shown */
  int jw = 3, hw = 4;
  for (size_t i = 0; i < n; i++) {
    size_t lj = strlen(v[i].v.job), lh = strlen(v[i].v.host);
    if (lj > (size_t)jw) jw = lj < 256 ? (int)lj : 256;
    if (lh > (size_t)hw) hw = lh < 256 ? (int)lh : 256;
  }
  fprintf(o, "%-*s %5s %8s %-*s %3s %-16s %8s %8s %9s %8s %8s %10s %10s  %s\n", jw, "job", "rank", "pid", hw, "host",
          "dev", "comm", "seq", "ops/s", "busbw", "idle_s", "last%", "late_us", "offset_us", "flags");
  char hex[17], fl[64];
  for (size_t i = 0; i < n; i++) {
    const struct proc *p = &v[i];
    flags_text(p, fl, sizeof fl);
    fprintf(o, "%-*s %5d %8d %-*s %3d %-16s %8lld %8.0f %9.2f %8.1f %8.0f %10.1f %10.1f  %s\n", jw, p->v.job, p->rank,
            p->pid, hw, p->v.host, p->h->device, p->comm ? cs_comm_hex(p->comm, hex) : "-", (long long)p->seq,
            p->ops_per_s, p->busbw, p->since_last_s, p->share_last * 100, p->lateness_us, p->offset_us, fl);
  }
  cli_text_stragglers(&f->all, dp, o);
  cli_text_hangs(&f->all, o);
  if (skipped && *skipped) fprintf(o, "\n# Rings skipped (failed the reader's checks)\n%s", skipped);
}

void cmd_top_help(FILE *o) {
  fputs("usage: collscope top [--once] [--json] [--interval S] [--cleared S] [--shm-dir DIR]\n"
        "  live view of the collscope processes on this host (their /dev/shm stats rings; root\n"
        "  sees every user's), refreshed every S seconds (default 1): job, rank, pid, device,\n"
        "  comm, seq, ops/s,\n"
        "  busbw (GB/s), seconds since the last completion, share of instances it arrived\n"
        "  last, lateness (us), flags STRAGGLER CLEARED HUNG DROPS EXITED DEAD, health THROTTLED:POWER|THERMAL|HW NVLINK ECC XID IB PCIE\n"
        "  --once      print one snapshot and exit\n"
        "  --json      print one snapshot as JSON and exit\n"
        "  --cleared S a straggler the detector no longer flags shows as CLEARED for S seconds of\n"
        "              the rank's own op times after it was last flagged (default 60), then not\n"
        "  --shm-dir DIR  where the rings are (default $COLLSCOPE_SHM_DIR or /dev/shm; --dir: the\n"
        "              same, deprecated)\n",
        o);
}

int cmd_top(int argc, char **argv) {
  bool once = false, json = false;
  double interval = 1.0;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--once"))
      once = true;
    else if (!strcmp(a, "--json"))
      json = true;
    else if (!strcmp(a, "--cleared") && i + 1 < argc) {
      char *e;
      double c = strtod(argv[++i], &e);
      if (*e || e == argv[i] || !(c >= 0 && c <= 1e6)) {
        fprintf(stderr, "collscope top: bad --cleared %s (seconds, 0 to 1e6)\n", argv[i]);
        return CLI_EXIT_USAGE;
      }
      top_cleared_ns = (int64_t)(c * 1e9);
    } else if ((!strcmp(a, "--interval") || !strcmp(a, "--shm-dir") || !strcmp(a, "--dir")) && i + 1 < argc) {
      if (!strcmp(a, "--dir")) fputs("collscope top: --dir is deprecated, use --shm-dir\n", stderr);
      if (strcmp(a, "--interval") != 0)
        dir = argv[++i];
      else
        interval = atof(argv[++i]);
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      cmd_top_help(stdout);
      return 0;
    } else {
      fprintf(stderr, "collscope top: unknown argument %s\n", a);
      cmd_top_help(stderr);
      return CLI_EXIT_USAGE;
    }
  }
  if (!(interval >= 0.1)) interval = 1.0;
  if (!dir) dir = cs_ring_dir();
  struct cs_det_params dp;
  cs_det_params_default(&dp);
  cs_det_params_env(&dp);
  for (;;) {
    struct proc *v;
    char *skipped = NULL;
    size_t skipped_len = 0;
    size_t n = load_procs(dir, &v, &skipped, &skipped_len);
    struct findings f;
    analyse(v, n, &dp, &f);
    if (json) {
      json_t *root = to_json(v, n, &f, skipped, dir);
      json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
      fputc('\n', stdout);
      json_decref(root);
    } else {
      if (!once) fputs("\033[H\033[2J", stdout);
      print_text(v, n, &f, skipped, &dp, dir, stdout);
    }
    if (json && skipped) fputs(skipped, stderr);
    fflush(stdout);
    free_findings(&f);
    free_procs(v, n);
    free(skipped);
    if (once || json) return n ? 0 : 1;
    struct timespec ts = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
    nanosleep(&ts, NULL);
  }
}
