/* tools/cmd_snapshot.c: `collscope snapshot JOB [--shm-dir DIR] [--wait S]`: asks every live
 * process of job JOB on this node whose stats ring the caller owns (root: any user's) to write
 * a flight-recorder window now (docs/always-on.md).
 *
 * The processes are found from their stats rings: a ring is taken only when its name carries
 * JOB and a uid the caller may act for (cs_ring_name_ours), and the checked reader
 * (analysis/ring_reader.c) accepts it: a regular file, not a symbolic link, owned by the uid in
 * its name (and by the caller unless root), the header's uid and job those of its name, every
 * size consistent. The request is the header's snap_asked counter (include/collscope/ring.h
 * "Requests"), added to through a mapping of the header of the very file the reader checked;
 * the process's harvest thread answers it on its next loop. Nothing is sent to the process:
 * no signal, no file in its dump directory. Exit 0 when a process was asked, 1 when none
 * matched, 2 usage. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collscope/ring.h"
#include "ring/ring_view.h"

void cmd_snapshot_help(FILE *o) {
  fputs("usage: collscope snapshot JOB [--shm-dir DIR] [--wait S]\n"
        "  asks every live collscope process of job JOB on this node to write a flight-recorder\n"
        "  window now (COLLSCOPE_RECORD=summary; a full recording flushes its dump); your own\n"
        "  processes, any user's as root. One line per process and a count; exit 1 when no\n"
        "  process of JOB was found. Every node of a Slurm job:\n"
        "    srun --jobid=JOB --overlap -N<nodes> --ntasks-per-node=1 collscope snapshot JOB\n"
        "  --shm-dir DIR  where the stats rings are (default $COLLSCOPE_SHM_DIR or /dev/shm)\n"
        "  --wait S       seconds to wait for the processes' answers (default 5; 0: do not wait)\n",
        o);
}

struct asked {
  struct cs_ring_hdr *h; /* a read-write mapping of the header alone */
  uint64_t target;       /* the snap_asked value this request made */
  uint32_t record;       /* CS_RING_REC_* when found */
  int pid, rank;
  char host[RING_TEXT_MAX];
};

/* the header of the file the reader checked (same device and inode), mapped read-write */
static struct cs_ring_hdr *map_header(const char *path, const struct cs_ring_reader *rd) {
  int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  void *p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_dev == rd->dev && (uint64_t)st.st_ino == rd->ino &&
      st.st_size >= (off_t)sizeof(struct cs_ring_hdr))
    p = mmap(NULL, sizeof(struct cs_ring_hdr), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  else
    errno = EPERM;
  int e = errno;
  close(fd);
  errno = e;
  return p == MAP_FAILED ? NULL : p;
}

/* One ring of the directory: 1 asked (or found without a dump: nothing asked), 0 not ours or
 * not live, -1 refused (one line on stderr) */
static int ask_one(const char *path, const char *job, struct asked *a) {
  struct cs_ring_reader rd;
  char shown[4 * 512 + 1];
  ring_text_escape(shown, sizeof shown, path, strlen(path));
  if (cs_ring_reader_open(&rd, path) != 0) {
    fprintf(stderr, "collscope snapshot: skipping %s: %s\n", shown, rd.why ? rd.why : strerror(errno));
    return -1;
  }
  int rc = 0;
  if (strcmp(rd.h->job, job) != 0 || cs_ring_writer_dead(rd.h) ||
      atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)rd.h)->closed, memory_order_acquire)) {
    cs_ring_reader_close(&rd);
    return 0;
  }
  memset(a, 0, sizeof *a);
  a->pid = *(const volatile int32_t *)&rd.h->pid;
  a->rank = *(const volatile int32_t *)&rd.h->rank;
  ring_text_escape(a->host, sizeof a->host, rd.h->host, sizeof rd.h->host);
  a->record = atomic_load_explicit(&((struct cs_ring_hdr *)(uintptr_t)rd.h)->record, memory_order_acquire);
  if (a->record == CS_RING_REC_NONE) { /* no dump: nothing to ask for */
    cs_ring_reader_close(&rd);
    return 1;
  }
  a->h = map_header(path, &rd);
  if (!a->h) {
    fprintf(stderr, "collscope snapshot: skipping %s: cannot open it for the request: %s\n", shown, strerror(errno));
    rc = -1;
  } else {
    a->target = atomic_fetch_add_explicit(&a->h->snap_asked, 1, memory_order_acq_rel) + 1;
    rc = 1;
  }
  cs_ring_reader_close(&rd);
  return rc;
}

static bool answered(const struct asked *a) {
  return (int64_t)(atomic_load_explicit(&a->h->snap_seen, memory_order_acquire) - a->target) >= 0;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* wait up to wait_s for every asked process's answer (a process that died is not waited for) */
static void wait_answers(struct asked *v, size_t n, double wait_s) {
  double deadline = now_s() + wait_s;
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < n && all; i++)
      if (v[i].h && !answered(&v[i])) all = kill(v[i].pid, 0) != 0 && errno == ESRCH;
    if (all || now_s() >= deadline) return;
    usleep(10000);
  }
}

int cmd_snapshot(int argc, char **argv) {
  const char *job = NULL, *dir = NULL;
  double wait_s = 5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    char *end;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      cmd_snapshot_help(stdout);
      return 0;
    } else if (!strcmp(a, "--shm-dir") && i + 1 < argc) {
      dir = argv[++i];
    } else if (!strcmp(a, "--wait") && i + 1 < argc) {
      wait_s = strtod(argv[++i], &end);
      if (end == argv[i] || *end || !(wait_s >= 0 && wait_s <= 3600)) {
        fprintf(stderr, "collscope snapshot: --wait needs seconds in [0, 3600]\n");
        return CLI_EXIT_USAGE;
      }
    } else if (a[0] != '-' && !job) {
      job = a;
    } else {
      fprintf(stderr, "collscope snapshot: unexpected argument %s\n", a);
      cmd_snapshot_help(stderr);
      return CLI_EXIT_USAGE;
    }
  }
  if (!job || !*job) {
    cmd_snapshot_help(stderr);
    return CLI_EXIT_USAGE;
  }
  if (!dir) dir = cs_ring_dir();
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "collscope snapshot: cannot read %s: %s\n", dir, strerror(errno));
    return 1;
  }
  struct asked *v = NULL;
  size_t n = 0, cap = 0, refused = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!cs_ring_name_ours(e->d_name) || !cs_ring_name_job(e->d_name, job)) continue;
    char path[1024];
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 16;
      struct asked *nv = realloc(v, nc * sizeof *v);
      if (!nv) {
        fprintf(stderr, "collscope snapshot: out of memory after %zu processes\n", n);
        break;
      }
      v = nv;
      cap = nc;
    }
    int r = ask_one(path, job, &v[n]);
    n += r > 0;
    refused += r < 0;
  }
  closedir(d);
  if (wait_s > 0) wait_answers(v, n, wait_s);
  char jshown[RING_TEXT_MAX];
  ring_text_escape(jshown, sizeof jshown, job, strlen(job));
  size_t windows = 0, flushed = 0, nodump = 0, none = 0, silent = 0;
  for (size_t i = 0; i < n; i++) {
    struct asked *a = &v[i];
    const char *what, *got = "";
    if (!a->h) {
      what = "nothing asked: the process writes no dump (COLLSCOPE_DIR=none), only its stats ring";
      nodump++;
    } else {
      bool full = a->record == CS_RING_REC_FULL;
      what = full ? "flush asked (full recording: every op goes to the dump)" : "flight window asked";
      uint32_t res = atomic_load_explicit(&a->h->snap_result, memory_order_relaxed);
      if (wait_s <= 0) {
        got = "";
      } else if (!answered(a)) {
        got = ": no answer yet", silent++;
      } else if (res == CS_RING_SNAP_WINDOW) {
        got = ": window written", windows++;
      } else if (res == CS_RING_SNAP_SUPPRESSED) {
        got = ": no window of its own (one was open, or the bound on windows was reached)", none++;
      } else if (res == CS_RING_SNAP_FLUSHED) {
        got = ": dump flushed", flushed++;
      } else {
        got = ": nothing written (no dump)", nodump++;
      }
    }
    printf("job %s rank %d pid %d host %s: %s%s\n", jshown, a->rank, a->pid, a->host, what, got);
    if (a->h) munmap(a->h, sizeof *a->h);
  }
  printf("collscope snapshot: %zu processes of job %s: %zu windows written, %zu dumps flushed, %zu without a dump, "
         "%zu without a window of their own, %zu without an answer%s",
         n, jshown, windows, flushed, nodump, none, silent, refused ? "" : "\n");
  if (refused) printf("; %zu rings refused (above)\n", refused);
  free(v);
  if (!n) fprintf(stderr, "collscope snapshot: no live process of job %s in %s\n", jshown, dir);
  return n ? 0 : 1;
}
