/* tools/cmd_salvage.c: `collscope salvage [-o DIR] [--job ID] [--keep] [--shm-dir DIR] [RING...]`.
 *
 * Recovers the records of collscope processes that died without a clean exit (SIGKILL,
 * OOM killer) from their shared-memory stats rings: each ring becomes a dump file
 * DIR/collscope-<host>-r<rank>-p<pid>.salvage.jsonl in the dump schema (header, comm, op,
 * xfer and hang records; no footer; every string JSON-escaped), so `collscope report DIR`
 * reads it. Only the caller's own rings are read (its uid in the name, owned by it; the
 * reader's checks in analysis/ring_reader.c), and only one job's: --job ID picks it; without --job
 * (and without RING arguments) the dead rings must all belong to one job, else the jobs
 * found are listed and nothing is touched. Without RING arguments every ring of that job
 * whose writer is dead and that was not closed cleanly is salvaged. A salvaged ring is then
 * removed unless --keep, and only when its writer is dead and the name still holds the file
 * that was read. A ring that fails the checks is skipped with one line. Exit 0, 1 when
 * nothing was salvaged or a file could not be written, 2 usage or several jobs. */
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
#include <unistd.h>

#include "collscope/ring.h"
#include "collscope/schema.h"
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
                 "\"op\":\"%s\",\"enqueue_ns\":%lld,\"age_ms\":%.0f,\"started\":%s,\"t_ns\":%lld}\n",
              (unsigned long long)r->comm_id, r->comm_size, r->comm_rank, h->rank, seq, opn, (long long)r->enqueue_ns,
              ns_diff(r->end_ns, r->enqueue_ns) / 1e6, r->start_ns ? "true" : "false", (long long)r->end_ns);
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

/* collscope-<our euid>-...: a ring salvage may touch at all */
static bool name_of_ours(const char *base) {
  char pre[32];
  int l = snprintf(pre, sizeof pre, "collscope-%u-", (unsigned)geteuid());
  return strncmp(base, pre, (size_t)l) == 0;
}

static int salvage_one(const char *ring, const char *outdir, const char *job, bool keep) {
  char shown[4 * 512 + 1];
  ring_text_escape(shown, sizeof shown, ring, strlen(ring));
  if (!name_of_ours(base_of(ring))) {
    fprintf(stderr, "collscope salvage: skipping %s: not a ring of uid %u\n", shown, (unsigned)geteuid());
    return 1;
  }
  struct ring_view rv;
  if (ring_view_load(&rv, ring, "salvage", stderr) != 0) return 1;
  if (job && strcmp(rv.job_id, job) != 0) {
    fprintf(stderr, "collscope salvage: skipping %s: it belongs to job %s\n", shown, rv.job);
    ring_view_free(&rv);
    return 1;
  }
  const struct cs_ring_hdr *h = rv.rd.h;
  char host[sizeof h->host + 1], rank[16], path[4096];
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
  snprintf(path, sizeof path, "%s/collscope-%s-r%s-p%d.salvage.jsonl", outdir, host, rank, hpid);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  FILE *o = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!o) {
    fprintf(stderr, "collscope salvage: cannot create %s: %s\n", path, strerror(errno));
    if (fd >= 0) close(fd);
    ring_view_free(&rv);
    return 1;
  }
  size_t ops = salvage_write_dump(o, &rv);
  int rc = 0;
  if (fflush(o) != 0 || ferror(o)) rc = 1;
  if (fclose(o) != 0) rc = 1;
  printf("salvaged %s: %zu records (%zu ops, %llu overwritten) -> %s\n", shown, rv.nrecs, ops,
         (unsigned long long)rv.rd.lost, path);
  bool dead = cs_ring_writer_dead(h);
  uint64_t dev = rv.rd.dev, ino = rv.rd.ino;
  ring_view_free(&rv);
  if (rc || keep) return rc;
  struct stat st;
  if (!dead)
    fprintf(stderr, "collscope salvage: %s left in place: its writer (pid %d) is alive\n", shown, hpid);
  else if (lstat(ring, &st) != 0 || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino)
    fprintf(stderr, "collscope salvage: %s left in place: the name no longer holds the ring that was read\n", shown);
  else if (unlink(ring) != 0)
    fprintf(stderr, "collscope salvage: cannot remove %s: %s\n", shown, strerror(errno));
  return rc;
}

void cmd_salvage_help(FILE *o) {
  fputs("usage: collscope salvage [-o DIR] [--job ID] [--keep] [--shm-dir DIR] [RING...]\n"
        "  writes the records held in the stats rings of dead collscope processes as dump\n"
        "  files DIR/collscope-<host>-r<rank>-p<pid>.salvage.jsonl (read them with\n"
        "  `collscope report DIR`), then removes the rings; only your own rings, of one job\n"
        "  -o DIR         output directory (default ./collscope-salvage)\n"
        "  --job ID       only the rings of job ID (needed when the dead rings are of several jobs)\n"
        "  --keep         leave the rings in place\n"
        "  --shm-dir DIR  where the rings are (default $COLLSCOPE_SHM_DIR or /dev/shm; the old\n"
        "                 name --dir is still accepted, with a warning)\n"
        "  RING           salvage these ring files (default: every ring of the job whose writer\n"
        "                 is dead)\n",
        o);
}

/* A dead, not cleanly closed ring of ours found by the directory scan. */
struct candidate {
  char path[1024];
  char job[128];
};

/* The scan: rings of our uid (of JOB when given) whose writer died without closing them. */
static size_t find_dead(const char *dir, const char *job, struct candidate **out) {
  *out = NULL;
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t n = 0, cap = 0;
  struct candidate *v = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!name_of_ours(e->d_name) || !cs_ring_name_ours(e->d_name)) continue;
    if (job && !cs_ring_name_job(e->d_name, job)) continue;
    struct candidate c;
    if (snprintf(c.path, sizeof c.path, "%s/%s", dir, e->d_name) >= (int)sizeof c.path) continue;
    struct ring_view rv;
    if (ring_view_load(&rv, c.path, "salvage", stderr) != 0) continue;
    bool dead = cs_ring_writer_dead(rv.rd.h) &&
                !atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)rv.rd.h)->closed, memory_order_acquire);
    snprintf(c.job, sizeof c.job, "%s", rv.job_id);
    ring_view_free(&rv);
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

int cmd_salvage(int argc, char **argv) {
  const char *out = "collscope-salvage", *dir = NULL, *job = NULL;
  bool keep = false;
  char **rings = calloc((size_t)argc + 1, sizeof *rings);
  size_t nr = 0;
  if (!rings) return 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((!strcmp(a, "-o") || !strcmp(a, "--shm-dir") || !strcmp(a, "--dir") || !strcmp(a, "--job")) && i + 1 < argc) {
      if (!strcmp(a, "--dir")) fputs("collscope salvage: --dir is deprecated, use --shm-dir\n", stderr);
      if (!strcmp(a, "-o"))
        out = argv[++i];
      else if (!strcmp(a, "--job"))
        job = argv[++i];
      else
        dir = argv[++i];
    } else if (!strcmp(a, "--keep")) {
      keep = true;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      cmd_salvage_help(stdout);
      free(rings);
      return 0;
    } else if (a[0] == '-') {
      fprintf(stderr, "collscope salvage: unknown option %s\n", a);
      cmd_salvage_help(stderr);
      free(rings);
      return CLI_EXIT_USAGE;
    } else {
      rings[nr++] = (char *)a;
    }
  }
  if (job && !*job) {
    fprintf(stderr, "collscope salvage: --job needs a job id\n");
    free(rings);
    return CLI_EXIT_USAGE;
  }
  if (!dir) dir = cs_ring_dir();
  struct candidate *found = NULL;
  size_t nfound = nr ? 0 : find_dead(dir, job, &found);
  if (!nr && !job && nfound) { /* one job only: never mix (or remove) the rings of several */
    size_t njobs = 0;
    for (size_t i = 0; i < nfound; i++) {
      bool seen = false;
      for (size_t k = 0; k < i && !seen; k++) seen = strcmp(found[k].job, found[i].job) == 0;
      njobs += !seen;
    }
    if (njobs > 1) {
      fprintf(stderr, "collscope salvage: dead rings of %zu jobs in %s; pick one with --job ID:", njobs, dir);
      for (size_t i = 0; i < nfound; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++) seen = strcmp(found[k].job, found[i].job) == 0;
        char shown[RING_TEXT_MAX];
        ring_text_escape(shown, sizeof shown, found[i].job, sizeof found[i].job);
        if (!seen) fprintf(stderr, " %s", shown);
      }
      fputc('\n', stderr);
      free(found);
      free(rings);
      return CLI_EXIT_USAGE;
    }
  }
  int rc = 0;
  size_t done = 0;
  if (nr || nfound) {
    if (mkdir(out, 0700) != 0 && errno != EEXIST) {
      fprintf(stderr, "collscope salvage: cannot create %s: %s\n", out, strerror(errno));
      free(found);
      free(rings);
      return 1;
    }
  }
  for (size_t i = 0; i < nr; i++, done++) rc |= salvage_one(rings[i], out, job, keep);
  for (size_t i = 0; i < nfound; i++, done++) rc |= salvage_one(found[i].path, out, found[i].job, keep);
  free(found);
  free(rings);
  if (!done) {
    fprintf(stderr, "collscope salvage: no ring of a dead process%s%s in %s\n", job ? " of job " : "", job ? job : "",
            dir);
    return 1;
  }
  return rc ? 1 : 0;
}
