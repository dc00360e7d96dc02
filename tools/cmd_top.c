/* tools/cmd_top.c: `collscope top [--once] [--json] [--interval S] [--dir SHMDIR]`.
 *
 * Live view of every collscope process of this user on this host, read from their
 * shared-memory stats rings (include/collscope/ring.h; read-only mappings, the writers are
 * never blocked). One row per process: rank, pid, device, comm, current seq, ops/s, busbw,
 * time since the last completion, lateness score, flags (STRAGGLER, HUNG, DROPS, EXITED,
 * DEAD). Stragglers and hangs come from stats/detect.c over the records of all rings, the
 * same detector `collscope report` runs over dump files. Exit status 0, 1 when no ring was
 * found with --once/--json, 2 usage. */
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
#include "dumpfile.h"

struct proc {
  struct cs_ring_reader rd;
  struct cs_record *recs;
  size_t nrecs;
  char host[128];
  /* figures */
  uint64_t comm;          /* busiest comm (most ops in the ring) */
  int64_t seq;            /* its highest completed seq, -1 none */
  double ops_per_s, busbw, since_last_s;
  double lateness_us, share_last, offset_us;
  bool straggler, hung, dead, closed;
  uint64_t drops, pending;
};

static int64_t now_rt(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_proc(const void *a, const void *b) {
  const struct proc *x = a, *y = b;
  if (x->rd.h->rank != y->rd.h->rank) return x->rd.h->rank < y->rd.h->rank ? -1 : 1;
  return x->rd.h->pid < y->rd.h->pid ? -1 : x->rd.h->pid > y->rd.h->pid;
}

/* Open every ring in dir and read what it holds. */
static size_t load_procs(const char *dir, struct proc **out) {
  *out = NULL;
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t n = 0, cap = 0;
  struct proc *v = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!cs_ring_name_ours(e->d_name)) continue;
    char path[512];
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    struct proc p = {0};
    if (cs_ring_reader_open(&p.rd, path) != 0) continue;
    size_t cap_r = (size_t)p.rd.h->capacity;
    p.recs = malloc(cap_r * sizeof *p.recs);
    if (!p.recs) { cs_ring_reader_close(&p.rd); continue; }
    p.nrecs = cs_ring_read(&p.rd, p.recs, cap_r);
    snprintf(p.host, sizeof p.host, "%.*s", (int)sizeof p.rd.h->host, p.rd.h->host);
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      struct proc *nv = realloc(v, cap * sizeof *v);
      if (!nv) { free(p.recs); cs_ring_reader_close(&p.rd); break; }
      v = nv;
    }
    v[n++] = p;
  }
  closedir(d);
  if (n) qsort(v, n, sizeof *v, cmp_proc);
  *out = v;
  return n;
}

static void free_procs(struct proc *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(v[i].recs);
    cs_ring_reader_close(&v[i].rd);
  }
  free(v);
}

static double hang_timeout_s(void) {
  const char *t = getenv("COLLSCOPE_HANG_TIMEOUT");
  double x = t && *t ? atof(t) : 300;
  return x > 0 ? x : 300;
}

static void analyse(struct proc *v, size_t n, const struct cs_det_params *dp, struct cs_det_result *det) {
  int64_t now = now_rt();
  size_t tot = 0;
  for (size_t i = 0; i < n; i++) tot += v[i].nrecs;
  struct cs_det_op *ops = calloc(tot ? tot : 1, sizeof *ops);
  size_t k = 0;
  double tmo = hang_timeout_s();
  for (size_t i = 0; i < n; i++) {
    struct proc *p = &v[i];
    const struct cs_ring_hdr *h = p->rd.h;
    p->dead = cs_ring_writer_dead(h);
    p->closed = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->closed, memory_order_acquire);
    p->drops = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->drops, memory_order_relaxed);
    p->pending = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->pending, memory_order_relaxed);
    int64_t oldest = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->oldest_pending_ns, memory_order_relaxed);
    p->hung = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->hung, memory_order_relaxed) > 0 ||
              (!p->closed && p->pending && oldest && (double)(now - oldest) / 1e9 >= tmo);
    /* busiest comm */
    uint64_t best = 0;
    size_t bestn = 0;
    for (uint32_t c = 0; c < atomic_load(&((struct cs_ring_hdr *)(uintptr_t)h)->ncomms) && c < CS_RING_MAX_COMMS; c++) {
      size_t cnt = 0;
      for (size_t j = 0; j < p->nrecs; j++) cnt += p->recs[j].type == CS_REC_OP && p->recs[j].comm_id == h->comms[c].id;
      if (cnt > bestn || !best) { best = h->comms[c].id; bestn = cnt; }
    }
    p->comm = best;
    p->seq = -1;
    int64_t last = 0;
    size_t recent = 0;
    double bw[4096];
    size_t nbw = 0;
    for (size_t j = 0; j < p->nrecs; j++) {
      const struct cs_record *r = &p->recs[j];
      if (r->type == CS_REC_HANG) {
        p->hung = true;
        struct cs_det_op *d = &ops[k++];
        d->comm = r->comm_id; d->seq = (int64_t)r->seq; d->comm_size = r->comm_size; d->comm_rank = r->comm_rank;
        d->rank = h->rank; d->host = p->host; d->enqueue_ns = r->enqueue_ns; d->state = CS_DET_PENDING;
        continue;
      }
      if (r->type != CS_REC_OP) continue;
      bool timed = r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_PROFILER;
      int64_t t = timed ? r->end_ns : r->enqueue_ns;
      if (r->comm_id == best && r->status == 0 && r->seq != UINT64_MAX && (int64_t)r->seq > p->seq) p->seq = (int64_t)r->seq;
      if (t > last) last = t;
      if (now - t <= 1000000000LL) {
        recent++;
        if (timed && r->end_ns > r->start_ns && r->op < CS_OP_COUNT && nbw < 4096)
          bw[nbw++] = (double)r->bytes / ((double)(r->end_ns - r->start_ns)) *
                      cs_busbw_factor((enum cs_op)r->op, r->comm_size);
      }
      if (r->seq == UINT64_MAX) continue;
      struct cs_det_op *d = &ops[k++];
      d->comm = r->comm_id; d->seq = (int64_t)r->seq; d->comm_size = r->comm_size; d->comm_rank = r->comm_rank;
      d->rank = h->rank; d->host = p->host; d->start_ns = r->start_ns; d->end_ns = r->end_ns;
      d->enqueue_ns = r->enqueue_ns;
      d->state = r->status != 0 || r->timing == CS_TIMING_ERROR ? CS_DET_FAILED : timed ? CS_DET_DONE : CS_DET_UNTIMED;
      d->p2p = r->op < CS_OP_COUNT && cs_op_table[r->op].cls == CS_CLASS_P2P;
      d->bytes = r->bytes;
    }
    p->ops_per_s = (double)recent;
    p->since_last_s = last ? (double)(now - last) / 1e9 : -1;
    if (nbw) {
      for (size_t a = 1; a < nbw; a++)
        for (size_t b = a; b > 0 && bw[b - 1] > bw[b]; b--) { double t = bw[b]; bw[b] = bw[b - 1]; bw[b - 1] = t; }
      p->busbw = bw[(nbw - 1) / 2];
    }
  }
  if (cs_detect(ops, k, dp, CS_DET_HANG_SEEN, det) != 0) memset(det, 0, sizeof *det);
  for (size_t i = 0; i < n; i++) {
    struct proc *p = &v[i];
    for (size_t r = 0; r < det->nranks; r++) {
      const struct cs_det_rankstat *rs = &det->ranks[r];
      if (rs->comm != p->comm || rs->rank != p->rd.h->rank) continue;
      p->lateness_us = rs->lateness_us;
      p->offset_us = rs->offset_us;
      p->share_last = rs->instances ? (double)rs->last / (double)rs->instances : 0;
    }
    for (size_t s = 0; s < det->nstragglers; s++)
      if (det->stragglers[s].rank >= 0 && det->stragglers[s].rank == p->rd.h->rank) p->straggler = true;
  }
  free(ops);
}

static void flags_text(const struct proc *p, char *buf, size_t len) {
  snprintf(buf, len, "%s%s%s%s%s", p->straggler ? "STRAGGLER " : "", p->hung ? "HUNG " : "",
           p->drops || p->rd.lost ? "DROPS " : "", p->closed ? "EXITED " : "", !p->closed && p->dead ? "DEAD " : "");
}

static json_t *to_json(const struct proc *v, size_t n, const struct cs_det_result *det, const char *dir) {
  json_t *root = json_object();
  json_object_set_new(root, "time_ns", json_integer(now_rt()));
  json_object_set_new(root, "dir", json_string(dir));
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < n; i++) {
    const struct proc *p = &v[i];
    const struct cs_ring_hdr *h = p->rd.h;
    json_t *o = json_object(), *comms = json_array(), *fl = json_array();
    json_object_set_new(o, "rank", json_integer(h->rank));
    json_object_set_new(o, "pid", json_integer(h->pid));
    json_object_set_new(o, "host", json_string(p->host));
    json_object_set_new(o, "device", json_integer(h->device));
    json_object_set_new(o, "ring", json_string(p->rd.path));
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
    json_object_set_new(o, "records", json_integer((json_int_t)p->nrecs));
    json_object_set_new(o, "lost", json_integer((json_int_t)p->rd.lost));
    json_object_set_new(o, "alive", json_boolean(!p->dead));
    json_object_set_new(o, "clean_exit", json_boolean(p->closed));
    if (p->straggler) json_array_append_new(fl, json_string("STRAGGLER"));
    if (p->hung) json_array_append_new(fl, json_string("HUNG"));
    if (p->drops || p->rd.lost) json_array_append_new(fl, json_string("DROPS"));
    json_object_set_new(o, "flags", fl);
    json_array_append_new(a, o);
  }
  json_object_set_new(root, "processes", a);
  json_object_set_new(root, "stragglers", cli_json_stragglers(det));
  json_object_set_new(root, "hangs", cli_json_hangs(det));
  return root;
}

static void print_text(const struct proc *v, size_t n, const struct cs_det_result *det,
                       const struct cs_det_params *dp, const char *dir, FILE *o) {
  fprintf(o, "collscope top: %zu processes (rings in %s)\n", n, dir);
  fprintf(o, "%5s %8s %-14s %3s %-16s %8s %8s %9s %8s %8s %10s %10s  %s\n", "rank", "pid", "host", "dev", "comm", "seq",
          "ops/s", "busbw", "idle_s", "last%", "late_us", "offset_us", "flags");
  char hex[17], fl[64];
  for (size_t i = 0; i < n; i++) {
    const struct proc *p = &v[i];
    flags_text(p, fl, sizeof fl);
    fprintf(o, "%5d %8d %-14.14s %3d %-16s %8lld %8.0f %9.2f %8.1f %8.0f %10.1f %10.1f  %s\n", p->rd.h->rank,
            p->rd.h->pid, p->host, p->rd.h->device, p->comm ? cs_comm_hex(p->comm, hex) : "-", (long long)p->seq,
            p->ops_per_s, p->busbw, p->since_last_s, p->share_last * 100, p->lateness_us, p->offset_us, fl);
  }
  cli_text_stragglers(det, dp, o);
  cli_text_hangs(det, o);
}

static void usage(FILE *o) {
  fputs("usage: collscope top [--once] [--json] [--interval S] [--dir SHMDIR]\n"
        "  live view of the collscope processes on this host (their /dev/shm stats rings),\n"
        "  refreshed every S seconds (default 1): rank, pid, device, comm, seq, ops/s,\n"
        "  busbw (GB/s), seconds since the last completion, share of instances it arrived\n"
        "  last, lateness (us), flags STRAGGLER HUNG DROPS EXITED DEAD\n"
        "  --once      print one snapshot and exit\n"
        "  --json      print one snapshot as JSON and exit\n"
        "  --dir DIR   where the rings are (default $COLLSCOPE_SHM_DIR or /dev/shm)\n",
        o);
}

int cmd_top(int argc, char **argv) {
  bool once = false, json = false;
  double interval = 1.0;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--once")) once = true;
    else if (!strcmp(a, "--json")) json = true;
    else if ((!strcmp(a, "--interval") || !strcmp(a, "--dir")) && i + 1 < argc) {
      if (!strcmp(a, "--dir")) dir = argv[++i];
      else interval = atof(argv[++i]);
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "collscope top: unknown argument %s\n", a);
      usage(stderr);
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
    size_t n = load_procs(dir, &v);
    struct cs_det_result det;
    analyse(v, n, &dp, &det);
    if (json) {
      json_t *root = to_json(v, n, &det, dir);
      json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
      fputc('\n', stdout);
      json_decref(root);
    } else {
      if (!once) fputs("\033[H\033[2J", stdout);
      print_text(v, n, &det, &dp, dir, stdout);
    }
    fflush(stdout);
    cs_det_result_free(&det);
    free_procs(v, n);
    if (once || json) return n ? 0 : 1;
    struct timespec ts = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
    nanosleep(&ts, NULL);
  }
}
