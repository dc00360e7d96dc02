/* tools/cmd_salvage.c: `collscope salvage [-o DIR] [--job ID] [--keep | --clean] [--uid UID]
 * [--shm-dir DIR] [RING...]`.
 *
 * Recovers the records of collscope processes that died without a clean exit (SIGKILL,
 * OOM killer) from their shared-memory stats rings: each ring becomes a dump file
 * DIR/collscope-<host>-r<rank>-p<pid>.salvage.jsonl in the dump schema (header, comm, op,
 * xfer and hang records; no footer; every string JSON-escaped), so `collscope report DIR`
 * reads it. Only one uid's rings are read: the caller's, or as root those of --uid UID (the
 * uid in the name, the file's owner and the header's uid must agree; the reader's checks in
 * analysis/ring_reader.c), and only one job's: --job ID picks it; without --job (and without
 * RING arguments) the dead rings must all belong to one job, else the jobs found are listed
 * and nothing is touched. Without RING arguments every ring of that job whose writer is dead
 * and that was not closed cleanly is salvaged (--clean: closed ones too). A dump is written
 * under an O_EXCL|O_NOFOLLOW temporary in DIR and linked to its name; root writes it owned
 * by the rings' owner (tools/ring/ring_clean.c). A salvaged ring is then removed unless
 * --keep, and only when its writer is dead and the name still holds the file that was read.
 * A ring that fails the checks is skipped with one line; with --clean it is removed when it
 * is the uid's and its writer is dead, and one line counts what was done. Exit 0, 1 when
 * nothing was salvaged or a ring was skipped or a file could not be written (--clean: only
 * when a dump could not be written or a ring not removed), 2 usage or several jobs. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collscope/ring.h"
#include "collscope/schema.h"
#include "ring/ring_clean.h"
#include "ring/ring_view.h"

/* a - b in ns as a double: the ring's times may be anything */
static double ns_diff(int64_t a, int64_t b) { return (double)a - (double)b; }

size_t salvage_write_dump(FILE *o, const struct ring_view *rv) {
  const struct cs_ring_hdr *h = rv->rd.h;
  char host[sizeof h->host + 1];
  memcpy(host, h->host, sizeof h->host);
  host[sizeof h->host] = 0;
  fprintf(o, "{\"type\":\"header\",\"schema\":%d,\"collscope\":\"0.1.0\",\"host\":", COLLSCOPE_SCHEMA_VERSION);
  ring_json_string(o, host);
  fprintf(o, ",\"pid\":%d,\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,\"job\":", h->pid, h->rank, h->local_rank,
          h->world_size);
  ring_json_string(o, rv->job_id);
  fprintf(o, ",\"device\":%d,\"pci_bus_id\":\"\",\"nccl_version\":0,\"cuda_driver_version\":0,"
             "\"clock\":{\"realtime_ns\":%lld,\"monotonic_ns\":0},\"exe\":\"\",\"salvaged_from\":",
          h->device, (long long)h->created_ns);
  ring_json_string(o, rv->rd.path);
  fprintf(o, ",\"lost\":%llu}\n", (unsigned long long)rv->rd.lost);
  static const char *const ev[] = {"init", "split", "finalize", "destroy", "abort"};
  static const char *const xk[] = {"HtoH", "HtoD", "DtoH", "DtoD", "Default", "Peer"};
  size_t ops = 0;
  for (size_t i = 0; i < rv->nrecs; i++) {
    const struct cs_record *r = &rv->recs[i];
    const char *opn = r->op < CS_OP_COUNT ? cs_op_table[r->op].name : "unknown";
    long long seq = r->seq == UINT64_MAX || r->seq > INT64_MAX ? -1 : (long long)r->seq;
    bool timed = r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_HOST_SPAN ||
                 r->timing == CS_TIMING_PROFILER;
    switch (r->type) {
    case CS_REC_COMM:
      fprintf(o, "{\"type\":\"comm\",\"event\":\"%s\",\"comm\":\"%016llx\",\"size\":%d,\"rank\":%d,\"device\":%d,"
                 "\"parent\":",
              r->event < 5 ? ev[r->event] : "unknown", (unsigned long long)r->comm_id, r->comm_size, r->comm_rank,
              r->device);
      if (r->parent_id)
        fprintf(o, "\"%016llx\"", (unsigned long long)r->parent_id);
      else
        fputs("null", o);
      fprintf(o, ",\"t_ns\":%lld}\n", (long long)r->enqueue_ns);
      break;
    case CS_REC_HANG:
      fprintf(o, "{\"type\":\"hang\",\"comm\":\"%016llx\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,\"seq\":%lld,"
                 "\"op\":\"%s\",\"enqueue_ns\":%lld,\"age_ms\":%.0f,\"started\":%s,\"start_known\":%s,\"t_ns\":%lld}\n",
              (unsigned long long)r->comm_id, r->comm_size, r->comm_rank, h->rank, seq, opn, (long long)r->enqueue_ns,
              ns_diff(r->end_ns, r->enqueue_ns) / 1e6, r->start_ns == 1 ? "true" : "false",
              r->start_ns == 0 || r->start_ns == 1 ? "true" : "false", (long long)r->end_ns);
      break;
    case CS_REC_OP:
    case CS_REC_XFER:
      if (r->type == CS_REC_OP) {
        ops++;
        fprintf(o, "{\"type\":\"op\",\"comm\":\"%016llx\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,\"seq\":%lld,"
                   "\"op\":\"%s\",\"dtype\":\"%s\",\"count\":%llu,\"bytes\":%llu,\"redop\":",
                (unsigned long long)r->comm_id, r->comm_size, r->comm_rank, h->rank, seq, opn, cs_dtype_name(r->dtype),
                (unsigned long long)r->count, (unsigned long long)r->bytes);
        if (r->redop >= 0)
          fprintf(o, "\"%s\"", cs_redop_name(r->redop));
        else
          fputs("null", o);
        fprintf(o, ",\"root\":%d,\"peer\":%d,\"stream\":\"0x%llx\",\"group\":%llu", r->root, r->peer,
                (unsigned long long)r->stream, (unsigned long long)r->group);
      } else {
        fprintf(o, "{\"type\":\"xfer\",\"op\":\"Memcpy\",\"api\":\"cudaMemcpy\",\"kind\":\"%s\",\"bytes\":%llu,"
                   "\"stream\":\"0x%llx\",\"async\":%s",
                r->event < 6 ? xk[r->event] : "Default", (unsigned long long)r->bytes, (unsigned long long)r->stream,
                r->async ? "true" : "false");
      }
      fprintf(o, ",\"enqueue_ns\":%lld,\"start_ns\":%lld,\"end_ns\":%lld,\"dur_us\":%.3f", (long long)r->enqueue_ns,
              timed ? (long long)r->start_ns : 0LL, timed ? (long long)r->end_ns : 0LL,
              timed ? ns_diff(r->end_ns, r->start_ns) / 1e3 : 0.0);
      fprintf(o, ",\"timing\":\"%s\",\"captured\":%s,\"site\":\"0x%llx\",\"status\":%d", cs_timing_name(r->timing),
              r->captured ? "true" : "false", (unsigned long long)r->site, r->status);
      /* a replay's graph, a group's shared span: as the shim's writer puts them (dump_schema.h) */
      if (r->type == CS_REC_OP && r->graph) fprintf(o, ",\"graph\":%llu", (unsigned long long)r->graph);
      if (r->type == CS_REC_OP && r->replay) fprintf(o, ",\"replay\":%llu", (unsigned long long)r->replay);
      if (r->type == CS_REC_OP && r->group_ops > 1) fprintf(o, ",\"group_ops\":%u", (unsigned)r->group_ops);
      fputs("}\n", o);
      break;
    default:
      break;
    }
  }
  uint64_t drops = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->drops, memory_order_relaxed);
  if (drops || rv->rd.lost)
    fprintf(o, "{\"type\":\"drops\",\"count\":%llu,\"t_ns\":0}\n", (unsigned long long)(drops + rv->rd.lost));
  return ops;
}

static const char *base_of(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

/* collscope-<uid>-...: a ring salvage may touch at all */
static bool name_of_uid(const char *base, uid_t uid) {
  char pre[32];
  int l = snprintf(pre, sizeof pre, "collscope-%u-", (unsigned)uid);
  return strncmp(base, pre, (size_t)l) == 0;
}

struct salvage_opts {
  uid_t uid; /* whose rings: the caller's, or root's --uid */
  int dfd;   /* the output directory */
  bool keep, clean;
};

/* what --clean reports in its one line */
struct tally {
  size_t salvaged, removed, bad_removed, live, kept;
};

struct dump_arg {
  size_t ops;
  const struct ring_view *rv;
};
static int write_dump_cb(FILE *f, void *arg) {
  struct dump_arg *a = arg;
  a->ops = salvage_write_dump(f, a->rv);
  return 0;
}

/* --clean, a ring the reader refused: removed when it is the uid's and its writer is dead;
 * counted either way (1: it could not be removed) */
static int clean_refused(const char *ring, const char *shown, const struct salvage_opts *o, struct tally *t) {
  uint64_t dev = 0, ino = 0;
  enum clean_writer w = clean_judge_writer(ring, o->uid, &dev, &ino);
  if (w == CLEAN_WRITER_ALIVE) {
    t->live++;
    return 0;
  }
  if (w == CLEAN_WRITER_UNKNOWN) {
    fprintf(stderr, "collscope salvage: %s left in place: not owned by uid %u, or its writer cannot be told\n", shown,
            (unsigned)o->uid);
    t->kept++;
    return 0;
  }
  int gone = clean_remove_ring(ring, dev, ino);
  if (gone == 0) {
    t->bad_removed++;
    return 0;
  }
  fprintf(stderr, "collscope salvage: %s left in place: %s\n", shown,
          gone > 0 ? "the name no longer holds the file that was judged" : strerror(errno));
  t->kept++;
  return gone < 0;
}

/* A writer the pid check calls dead may live in another pid namespace (a container that
 * shares /dev/shm): its harvest thread still moves the heartbeat, every pass (at most about
 * 10 ms apart). The scan reads each candidate's heartbeat, then waits HEARTBEAT_WATCH_MS once
 * for all; a ring named on the command line is watched on its own. */
#define HEARTBEAT_WATCH_MS 100
static int64_t heartbeat(const struct cs_ring_hdr *h) {
  return atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->heartbeat_ns, memory_order_acquire);
}
static void heartbeat_wait(void) {
  struct timespec nap = {0, HEARTBEAT_WATCH_MS * 1000000L};
  while (nanosleep(&nap, &nap) != 0 && errno == EINTR) {
  }
}

/* HB_SEEN: the heartbeat the scan read (NULL for a ring named on the command line) */
static int salvage_one(const char *ring, const struct salvage_opts *o, const char *job, const int64_t *hb_seen,
                       struct tally *t) {
  char shown[4 * 512 + 1];
  ring_text_escape(shown, sizeof shown, ring, strlen(ring));
  if (!name_of_uid(base_of(ring), o->uid)) {
    fprintf(stderr, "collscope salvage: skipping %s: not a ring of uid %u\n", shown, (unsigned)o->uid);
    return 1;
  }
  struct stat named;
  struct ring_view rv;
  if (lstat(ring, &named) != 0 || ring_view_load(&rv, ring, "salvage", stderr) != 0)
    return o->clean ? clean_refused(ring, shown, o, t) : 1;
  const struct cs_ring_hdr *h = rv.rd.h;
  const char *why = NULL;
  if ((uint64_t)named.st_dev != rv.rd.dev || (uint64_t)named.st_ino != rv.rd.ino)
    why = "the name changed while it was read";
  else if (named.st_uid != o->uid)
    why = "not owned by that uid";
  if (why || (job && strcmp(rv.job_id, job) != 0)) {
    if (why)
      fprintf(stderr, "collscope salvage: skipping %s: %s\n", shown, why);
    else
      fprintf(stderr, "collscope salvage: skipping %s: it belongs to job %s\n", shown, rv.job);
    ring_view_free(&rv);
    return 1;
  }
  int64_t hb = hb_seen ? *hb_seen : heartbeat(h);
  bool dead = cs_ring_writer_dead(h);
  if (dead && !hb_seen) heartbeat_wait();
  if (dead && heartbeat(h) != hb) {
    fprintf(stderr, "collscope salvage: %s: its writer's pid is gone here, but its heartbeat still advances (a "
                    "process in another pid namespace): alive\n",
            shown);
    dead = false;
  }
  if (!dead && hb_seen) { /* found by the scan: only dead writers' rings are salvaged */
    t->live++;
    ring_view_free(&rv);
    return 0;
  }
  char host[sizeof h->host + 1], rank[16], name[512];
  /* the host becomes part of a file name: a safe alphabet only */
  snprintf(host, sizeof host, "%.*s", (int)sizeof h->host, h->host);
  for (char *c = host; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
          *c == '_' || *c == '.'))
      *c = '_';
  int hrank = h->rank, hpid = h->pid;
  if (hrank >= 0)
    snprintf(rank, sizeof rank, "%d", hrank);
  else
    snprintf(rank, sizeof rank, "x");
  snprintf(name, sizeof name, "collscope-%s-r%s-p%d.salvage.jsonl", host, rank, hpid);
  struct dump_arg arg = {0, &rv};
  if (clean_write_file(o->dfd, name, o->uid, named.st_gid, write_dump_cb, &arg) != 0) {
    fprintf(stderr, "collscope salvage: cannot write %s: %s; %s left in place\n", name, strerror(errno), shown);
    ring_view_free(&rv);
    return 1;
  }
  printf("salvaged %s: %zu records (%zu ops, %llu overwritten) -> %s\n", shown, rv.nrecs, arg.ops,
         (unsigned long long)rv.rd.lost, name);
  t->salvaged++;
  uint64_t dev = rv.rd.dev, ino = rv.rd.ino;
  ring_view_free(&rv);
  if (o->keep) return 0;
  int gone = dead ? clean_remove_ring(ring, dev, ino) : 0;
  if (!dead)
    fprintf(stderr, "collscope salvage: %s left in place: its writer (pid %d) is alive\n", shown, hpid);
  else if (gone == 1)
    fprintf(stderr, "collscope salvage: %s left in place: the name no longer holds the ring that was read\n", shown);
  else if (gone < 0)
    fprintf(stderr, "collscope salvage: cannot remove %s: %s\n", shown, strerror(errno));
  else
    t->removed++;
  return 0;
}

void cmd_salvage_help(FILE *o) {
  fputs("usage: collscope salvage [-o DIR] [--job ID] [--keep | --clean] [--uid UID] [--shm-dir DIR]\n"
        "                         [RING...]\n"
        "  writes the records held in the stats rings of dead collscope processes as dump\n"
        "  files DIR/collscope-<host>-r<rank>-p<pid>.salvage.jsonl (read them with\n"
        "  `collscope report DIR`), then removes the rings; only your own rings, of one job\n"
        "  -o DIR         output directory (default ./collscope-salvage)\n"
        "  --job ID       only the rings of job ID (needed when the dead rings are of several jobs)\n"
        "  --keep         leave the rings in place\n"
        "  --clean        also the rings of dead processes that exited cleanly, and remove a dead\n"
        "                 process's ring that cannot be read; one summary line (a Slurm epilog)\n"
        "  --uid UID      root only: the rings of user UID (owned by UID, UID in their names);\n"
        "                 the dumps are written owned by UID, DIR has no symbolic link in its path\n"
        "  --shm-dir DIR  where the rings are (default $COLLSCOPE_SHM_DIR or /dev/shm; the old\n"
        "                 name --dir is still accepted, with a warning)\n"
        "  RING           salvage these ring files (default: every ring of the job whose writer\n"
        "                 is dead)\n",
        o);
}

/* A dead ring of the uid found by the directory scan. */
struct candidate {
  char path[1024];
  char job[128];
  int64_t hb; /* its heartbeat when the scan read it */
};

/* The scan: rings of the uid (of JOB when given) whose writer is dead, not closed cleanly
 * (--clean: closed too, and, with JOB, those the reader refuses). Live ones are counted. */
static size_t find_dead(const char *dir, const char *job, const struct salvage_opts *o, struct tally *t,
                        struct candidate **out) {
  *out = NULL;
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t n = 0, cap = 0;
  struct candidate *v = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!name_of_uid(e->d_name, o->uid) || !cs_ring_name_ours(e->d_name)) continue;
    if (job && !cs_ring_name_job(e->d_name, job)) continue;
    struct candidate c;
    if (snprintf(c.path, sizeof c.path, "%s/%s", dir, e->d_name) >= (int)sizeof c.path) continue;
    struct ring_view rv;
    bool retry = o->clean && job; /* salvage_one judges it again, and says why */
    bool dead = retry;
    if (ring_view_load(&rv, c.path, "salvage", retry ? NULL : stderr) == 0) {
      dead = cs_ring_writer_dead(rv.rd.h) &&
             (o->clean ||
              !atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)rv.rd.h)->closed, memory_order_acquire));
      snprintf(c.job, sizeof c.job, "%s", rv.job_id);
      c.hb = heartbeat(rv.rd.h);
      t->live += !cs_ring_writer_dead(rv.rd.h);
      ring_view_free(&rv);
    } else {
      snprintf(c.job, sizeof c.job, "%s", job ? job : "");
      c.hb = 0;
    }
    if (!dead) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      struct candidate *nv = realloc(v, cap * sizeof *v);
      if (!nv) break;
      v = nv;
    }
    v[n++] = c;
  }
  closedir(d);
  *out = v;
  return n;
}

/* without --job and RING arguments: the dead rings must be of one job */
static bool one_job(const struct candidate *found, size_t nfound, const char *dir) {
  size_t njobs = 0;
  for (size_t i = 0; i < nfound; i++) {
    bool seen = false;
    for (size_t k = 0; k < i && !seen; k++) seen = strcmp(found[k].job, found[i].job) == 0;
    njobs += !seen;
  }
  if (njobs <= 1) return true;
  fprintf(stderr, "collscope salvage: dead rings of %zu jobs in %s; pick one with --job ID:", njobs, dir);
  for (size_t i = 0; i < nfound; i++) {
    bool seen = false;
    for (size_t k = 0; k < i && !seen; k++) seen = strcmp(found[k].job, found[i].job) == 0;
    char shown[RING_TEXT_MAX];
    ring_text_escape(shown, sizeof shown, found[i].job, sizeof found[i].job);
    if (!seen) fprintf(stderr, " %s", shown);
  }
  fputc('\n', stderr);
  return false;
}

static bool parse_uid(const char *s, uid_t *uid) {
  unsigned long v = 0;
  if (!*s) return false;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + (unsigned long)(*s - '0');
    if (v >= UINT32_MAX) return false;
  }
  *uid = (uid_t)v;
  return true;
}

int cmd_salvage(int argc, char **argv) {
  const char *out = "collscope-salvage", *dir = NULL, *job = NULL;
  struct salvage_opts o = {.uid = geteuid(), .dfd = -1};
  char **rings = calloc((size_t)argc + 1, sizeof *rings);
  size_t nr = 0;
  int usage = 0;
  if (!rings) return 1;
  for (int i = 1; i < argc && !usage; i++) {
    const char *a = argv[i];
    if ((!strcmp(a, "-o") || !strcmp(a, "--shm-dir") || !strcmp(a, "--dir") || !strcmp(a, "--job") ||
         !strcmp(a, "--uid")) &&
        i + 1 < argc) {
      if (!strcmp(a, "--dir")) fputs("collscope salvage: --dir is deprecated, use --shm-dir\n", stderr);
      if (!strcmp(a, "-o"))
        out = argv[++i];
      else if (!strcmp(a, "--job"))
        job = argv[++i];
      else if (!strcmp(a, "--uid") && !parse_uid(argv[++i], &o.uid))
        usage = fprintf(stderr, "collscope salvage: --uid needs a numeric uid\n");
      else if (strcmp(a, "--uid") != 0)
        dir = argv[++i];
    } else if (!strcmp(a, "--keep") || !strcmp(a, "--clean")) {
      if (a[2] == 'k')
        o.keep = true;
      else
        o.clean = true;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      cmd_salvage_help(stdout);
      free(rings);
      return 0;
    } else if (a[0] == '-') {
      fprintf(stderr, "collscope salvage: unknown option %s\n", a);
      cmd_salvage_help(stderr);
      usage = 1;
    } else {
      rings[nr++] = (char *)a;
    }
  }
  if (!usage && job && !*job) usage = fprintf(stderr, "collscope salvage: --job needs a job id\n");
  if (!usage && o.keep && o.clean) usage = fprintf(stderr, "collscope salvage: --keep and --clean exclude each other\n");
  if (!usage && o.uid != geteuid() && geteuid() != 0)
    usage = fprintf(stderr, "collscope salvage: only root may name another user's rings (--uid %u)\n",
                    (unsigned)o.uid);
  if (usage) {
    free(rings);
    return CLI_EXIT_USAGE;
  }
  if (!dir) dir = cs_ring_dir();
  struct tally t = {0};
  struct candidate *found = NULL;
  size_t nfound = nr ? 0 : find_dead(dir, job, &o, &t, &found);
  if (!nr && !job && nfound && !one_job(found, nfound, dir)) { /* never mix (or remove) several jobs' rings */
    free(found);
    free(rings);
    return CLI_EXIT_USAGE;
  }
  int rc = 0;
  size_t done = 0;
  if ((nr || nfound) && (o.dfd = clean_outdir_open(out, o.uid, stderr)) < 0) {
    free(found);
    free(rings);
    return 1;
  }
  if (nfound) heartbeat_wait();
  for (size_t i = 0; i < nr; i++, done++) rc |= salvage_one(rings[i], &o, job, NULL, &t);
  for (size_t i = 0; i < nfound; i++, done++) rc |= salvage_one(found[i].path, &o, found[i].job, &found[i].hb, &t);
  if (o.dfd >= 0) close(o.dfd);
  free(found);
  free(rings);
  if (o.clean) {
    char shown[RING_TEXT_MAX];
    ring_text_escape(shown, sizeof shown, job ? job : "(any)", strlen(job ? job : "(any)"));
    printf("salvage --clean: job %s, uid %u: %zu rings salvaged (%zu removed), %zu unreadable removed, %zu live "
           "left untouched, %zu kept\n",
           shown, (unsigned)o.uid, t.salvaged, t.removed, t.bad_removed, t.live, t.kept);
  }
  if (!done) {
    fprintf(stderr, "collscope salvage: no ring of a dead process%s%s in %s\n", job ? " of job " : "", job ? job : "",
            dir);
    return o.clean ? 0 : 1;
  }
  return rc ? 1 : 0;
}
