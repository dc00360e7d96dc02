/* tools/cmd_salvage.c: `collscope salvage [-o DIR] [--keep] [--dir SHMDIR] [RING...]`.
 *
 * Recovers the records of collscope processes that died without a clean exit (SIGKILL,
 * OOM killer) from their shared-memory stats rings: each ring becomes a dump file
 * DIR/collscope-<host>-r<rank>-p<pid>.salvage.jsonl in the dump schema (header, comm, op,
 * xfer and hang records; no footer), so `collscope report DIR` reads it. Without RING
 * arguments, every ring of this user whose writer pid is dead and that was not closed
 * cleanly is salvaged. The ring is then removed unless --keep. Exit 0, 1 when nothing was
 * salvaged or a file could not be written, 2 usage. */
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

static void jstr(FILE *o, const char *s) {
  fputc('"', o);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(o, "\\%c", c);
    else if (c < 0x20) fprintf(o, "\\u%04x", c);
    else fputc(c, o);
  }
  fputc('"', o);
}

static void put_us(FILE *o, int64_t ns) { fprintf(o, "%.3f", (double)ns / 1e3); }

static int salvage_one(const char *ring, const char *outdir, bool keep) {
  struct cs_ring_reader rd;
  if (cs_ring_reader_open(&rd, ring) != 0) {
    fprintf(stderr, "collscope salvage: %s: %s\n", ring,
            errno == EPROTO ? "not a collscope ring of this version" : strerror(errno));
    return 1;
  }
  const struct cs_ring_hdr *h = rd.h;
  size_t cap = (size_t)h->capacity;
  struct cs_record *v = malloc(cap * sizeof *v);
  if (!v) { cs_ring_reader_close(&rd); return 1; }
  size_t n = cs_ring_read(&rd, v, cap);
  char host[129], job[129], rank[16], path[4096];
  snprintf(host, sizeof host, "%.*s", (int)sizeof h->host, h->host);
  snprintf(job, sizeof job, "%.*s", (int)sizeof h->job, h->job);
  for (char *c = host; *c; c++) if (*c == '/') *c = '_';
  if (h->rank >= 0) snprintf(rank, sizeof rank, "%d", h->rank);
  else snprintf(rank, sizeof rank, "x");
  snprintf(path, sizeof path, "%s/collscope-%s-r%s-p%d.salvage.jsonl", outdir, host, rank, h->pid);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  FILE *o = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!o) {
    fprintf(stderr, "collscope salvage: cannot create %s: %s\n", path, strerror(errno));
    if (fd >= 0) close(fd);
    free(v);
    cs_ring_reader_close(&rd);
    return 1;
  }
  fprintf(o, "{\"type\":\"header\",\"schema\":%d,\"collscope\":\"0.1.0\",\"host\":", COLLSCOPE_SCHEMA_VERSION);
  jstr(o, host);
  fprintf(o, ",\"pid\":%d,\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,\"job\":", h->pid, h->rank, h->local_rank,
          h->world_size);
  jstr(o, job);
  fprintf(o, ",\"device\":%d,\"pci_bus_id\":\"\",\"nccl_version\":0,\"cuda_driver_version\":0,"
             "\"clock\":{\"realtime_ns\":%lld,\"monotonic_ns\":0},\"exe\":\"\",\"salvaged_from\":",
          h->device, (long long)h->created_ns);
  jstr(o, ring);
  fprintf(o, ",\"lost\":%llu}\n", (unsigned long long)rd.lost);
  static const char *const ev[] = {"init", "split", "finalize", "destroy", "abort"};
  static const char *const xk[] = {"HtoH", "HtoD", "DtoH", "DtoD", "Default", "Peer"};
  size_t ops = 0;
  for (size_t i = 0; i < n; i++) {
    const struct cs_record *r = &v[i];
    const char *opn = r->op < CS_OP_COUNT ? cs_op_table[r->op].name : "unknown";
    long long seq = r->seq == UINT64_MAX ? -1 : (long long)r->seq;
    bool timed = r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_HOST_SPAN ||
                 r->timing == CS_TIMING_PROFILER;
    switch (r->type) {
    case CS_REC_COMM:
      fprintf(o, "{\"type\":\"comm\",\"event\":\"%s\",\"comm\":\"%016llx\",\"size\":%d,\"rank\":%d,\"device\":%d,"
                 "\"parent\":",
              r->event < 5 ? ev[r->event] : "unknown", (unsigned long long)r->comm_id, r->comm_size, r->comm_rank,
              r->device);
      if (r->parent_id) fprintf(o, "\"%016llx\"", (unsigned long long)r->parent_id);
      else fputs("null", o);
      fprintf(o, ",\"t_ns\":%lld}\n", (long long)r->enqueue_ns);
      break;
    case CS_REC_HANG:
      fprintf(o, "{\"type\":\"hang\",\"comm\":\"%016llx\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,\"seq\":%lld,"
                 "\"op\":\"%s\",\"enqueue_ns\":%lld,\"age_ms\":%lld,\"started\":%s,\"t_ns\":%lld}\n",
              (unsigned long long)r->comm_id, r->comm_size, r->comm_rank, h->rank, seq, opn, (long long)r->enqueue_ns,
              (long long)((r->end_ns - r->enqueue_ns) / 1000000), r->start_ns ? "true" : "false",
              (long long)r->end_ns);
      break;
    case CS_REC_OP:
    case CS_REC_XFER:
      if (r->type == CS_REC_OP) {
        ops++;
        fprintf(o, "{\"type\":\"op\",\"comm\":\"%016llx\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,\"seq\":%lld,"
                   "\"op\":\"%s\",\"dtype\":\"%s\",\"count\":%llu,\"bytes\":%llu,\"redop\":",
                (unsigned long long)r->comm_id, r->comm_size, r->comm_rank, h->rank, seq, opn, cs_dtype_name(r->dtype),
                (unsigned long long)r->count, (unsigned long long)r->bytes);
        if (r->redop >= 0) fprintf(o, "\"%s\"", cs_redop_name(r->redop));
        else fputs("null", o);
        fprintf(o, ",\"root\":%d,\"peer\":%d,\"stream\":\"0x%llx\",\"group\":%llu", r->root, r->peer,
                (unsigned long long)r->stream, (unsigned long long)r->group);
      } else {
        fprintf(o, "{\"type\":\"xfer\",\"op\":\"Memcpy\",\"api\":\"cudaMemcpy\",\"kind\":\"%s\",\"bytes\":%llu,"
                   "\"stream\":\"0x%llx\",\"async\":%s",
                r->event < 6 ? xk[r->event] : "Default", (unsigned long long)r->bytes, (unsigned long long)r->stream,
                r->async ? "true" : "false");
      }
      fprintf(o, ",\"enqueue_ns\":%lld,\"start_ns\":%lld,\"end_ns\":%lld,\"dur_us\":", (long long)r->enqueue_ns,
              timed ? (long long)r->start_ns : 0LL, timed ? (long long)r->end_ns : 0LL);
      put_us(o, timed ? r->end_ns - r->start_ns : 0);
      fprintf(o, ",\"timing\":\"%s\",\"captured\":%s,\"site\":\"0x%llx\",\"status\":%d}\n", cs_timing_name(r->timing),
              r->captured ? "true" : "false", (unsigned long long)r->site, r->status);
      break;
    default:
      break;
    }
  }
  uint64_t drops = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)h)->drops, memory_order_relaxed);
  if (drops || rd.lost) fprintf(o, "{\"type\":\"drops\",\"count\":%llu,\"t_ns\":0}\n", (unsigned long long)(drops + rd.lost));
  int rc = 0;
  if (fflush(o) != 0 || ferror(o)) rc = 1;
  if (fclose(o) != 0) rc = 1;
  printf("salvaged %s: %zu records (%zu ops, %llu overwritten) -> %s\n", ring, n, ops, (unsigned long long)rd.lost,
         path);
  free(v);
  cs_ring_reader_close(&rd);
  if (!rc && !keep && unlink(ring) != 0) fprintf(stderr, "collscope salvage: cannot remove %s: %s\n", ring, strerror(errno));
  return rc;
}

static void usage(FILE *o) {
  fputs("usage: collscope salvage [-o DIR] [--keep] [--dir SHMDIR] [RING...]\n"
        "  writes the records held in the stats rings of dead collscope processes as dump\n"
        "  files DIR/collscope-<host>-r<rank>-p<pid>.salvage.jsonl (read them with\n"
        "  `collscope report DIR`), then removes the rings\n"
        "  -o DIR      output directory (default ./collscope-salvage)\n"
        "  --keep      leave the rings in place\n"
        "  --dir DIR   where the rings are (default $COLLSCOPE_SHM_DIR or /dev/shm)\n"
        "  RING        salvage these ring files (default: every ring whose writer is dead)\n",
        o);
}

int cmd_salvage(int argc, char **argv) {
  const char *out = "collscope-salvage", *dir = NULL;
  bool keep = false;
  char **rings = calloc((size_t)argc + 1, sizeof *rings);
  size_t nr = 0;
  if (!rings) return 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((!strcmp(a, "-o") || !strcmp(a, "--dir")) && i + 1 < argc) {
      if (!strcmp(a, "-o")) out = argv[++i];
      else dir = argv[++i];
    } else if (!strcmp(a, "--keep")) {
      keep = true;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      free(rings);
      return 0;
    } else if (a[0] == '-') {
      fprintf(stderr, "collscope salvage: unknown option %s\n", a);
      usage(stderr);
      free(rings);
      return CLI_EXIT_USAGE;
    } else {
      rings[nr++] = (char *)a;
    }
  }
  if (!dir) dir = cs_ring_dir();
  if (mkdir(out, 0700) != 0 && errno != EEXIST) {
    fprintf(stderr, "collscope salvage: cannot create %s: %s\n", out, strerror(errno));
    free(rings);
    return 1;
  }
  int rc = 0;
  size_t done = 0;
  if (nr) {
    for (size_t i = 0; i < nr; i++) {
      rc |= salvage_one(rings[i], out, keep);
      done++;
    }
  } else {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (!cs_ring_name_ours(e->d_name)) continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      struct cs_ring_reader rd;
      if (cs_ring_reader_open(&rd, path) != 0) continue;
      bool dead = cs_ring_writer_dead(rd.h) &&
                  !atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)rd.h)->closed, memory_order_acquire);
      cs_ring_reader_close(&rd);
      if (!dead) continue;
      rc |= salvage_one(path, out, keep);
      done++;
    }
    if (d) closedir(d);
  }
  free(rings);
  if (!done) {
    fprintf(stderr, "collscope salvage: no ring of a dead process in %s\n", dir);
    return 1;
  }
  return rc ? 1 : 0;
}
