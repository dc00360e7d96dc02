/* bench/bench_exporter.c: the cost of `collscope exporter` on synthetic rings.
 *
 *   bench_exporter CLI [--ranks 64] [--rate 10000] [--seconds 45] [--scrape 15] [--check]
 *                      [--inproc [--reps 5]]
 *
 * Writes RANKS rings (capacity 16384, the shim's default) in a temporary directory and
 * publishes RATE op records per second into each (the ring protocol of
 * include/collscope/ring.h; one job, 2 communicators, 3 ops x sizes, every rank the same
 * seqs). The real exporter (CLI exporter --interval 1) follows them as a separate process;
 * the bench scrapes /metrics every SCRAPE seconds and reports:
 *   - scrape time (HTTP round trip of a full exposition of RANKS ranks), median and max;
 *   - the exporter's CPU (utime+stime from /proc) over the run, in % of one core;
 *   - its peak resident memory (VmHWM) and the exposition's size and series count;
 *   - records lost by the exporter (should be 0: it keeps up).
 * The publisher does the harvest thread's work per record: the slot, then the ring's summary
 * block (stats/ring_stats.c), which is what the exporter reads.
 * --check exits 1 when scrape > 10 ms or CPU > 1% of a core. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collscope/ring.h"
#include "collscope/schema.h"
#include "exporter/exporter_metrics.h"
#include "exporter/exporter_state.h"
#include "stats/ring_stats.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static double cpu_s(void) { /* this thread's CPU time: the figure that a loaded machine does not inflate */
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static int64_t rt_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct cs_ring_hdr *make_ring(const char *dir, int rank, int nranks, uint64_t cap) {
  char path[512];
  snprintf(path, sizeof path, "%s/collscope-%u-benchjob-r%d.ring", dir, (unsigned)geteuid(), rank);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)cs_ring_bytes(cap)) != 0) {
    perror(path);
    exit(2);
  }
  struct cs_ring_hdr *h = mmap(NULL, cs_ring_bytes(cap), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (h == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  h->magic = CS_RING_MAGIC;
  h->version = CS_RING_VERSION;
  h->rec_size = sizeof(struct cs_record);
  h->capacity = cap;
  h->stats_size = sizeof(struct cs_ring_stats);
  h->pid = getpid();
  h->rank = rank;
  h->local_rank = rank % 8;
  h->world_size = nranks;
  h->device = rank % 8;
  h->uid = (uint32_t)geteuid();
  h->created_ns = rt_ns();
  snprintf(h->host, sizeof h->host, "node%03d", rank / 8);
  snprintf(h->job, sizeof h->job, "benchjob");
  atomic_store(&h->init, CS_RING_INIT_MAGIC);
  char uuid[64], bus[32]; /* as the health sampler writes them: labels on every series */
  snprintf(uuid, sizeof uuid, "GPU-%08x-5349-4d00-0000-%012x", 0xc3f08f4fu + (unsigned)rank / 8, (unsigned)rank);
  snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x18 + rank % 8 * 0x10);
  cs_ring_stats_ident(h, uuid, bus);
  return h;
}

static struct cs_ring_stats_writer *sw; /* one per ring, like the harvest thread's */

/* the harvest thread's work per record: the slot, then the summary block (stats/ring_stats.c) */
static void publish(struct cs_ring_hdr *h, const struct cs_record *r, int rank) {
  uint64_t n = atomic_load_explicit(&h->head, memory_order_relaxed);
  cs_ring_slot_store(&cs_ring_slots(h)[n & (h->capacity - 1)], n, r);
  atomic_store_explicit(&h->head, n + 1, memory_order_release);
  atomic_store_explicit(&h->heartbeat_ns, rt_ns(), memory_order_relaxed);
  cs_ring_stats_add(cs_ring_stats_of(h), &sw[rank], r);
}

static void record(struct cs_record *r, uint64_t n, int rank, int nranks) {
  static const int ops[3] = {CS_OP_AllReduce, CS_OP_AllGather, CS_OP_ReduceScatter};
  static const uint64_t sizes[3] = {256u << 10, 4u << 20, 64u << 20};
  memset(r, 0, sizeof *r);
  r->type = CS_REC_OP;
  r->op = (uint8_t)ops[n % 3];
  r->timing = CS_TIMING_GPU_EVENT;
  r->comm_id = n % 4 == 3 ? 0xbbbb : 0xaaaa;
  r->comm_size = nranks;
  r->comm_rank = rank;
  r->seq = n;
  r->bytes = sizes[(n / 3) % 3];
  r->count = r->bytes / 4;
  r->enqueue_ns = rt_ns();
  r->start_ns = r->enqueue_ns + 1000 + (rank == 5 ? 20000 : 0);
  r->end_ns = r->start_ns + 50000 + (int64_t)(r->bytes >> 10);
}

static double last_lost, last_records; /* sums over the ranks, from the latest scrape */

static double sum_family(const char *buf, const char *name) {
  double t = 0;
  size_t l = strlen(name);
  for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (!strncmp(p, name, l) && p[l] == '{') {
      const char *v = strstr(p, "} ");
      if (v) t += atof(v + 2);
    }
  return t;
}

static int scrape(int port, double *ms, size_t *bytes, size_t *series) {
  double t0 = now_s();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
    close(fd);
    return -1;
  }
  size_t cap = 1 << 20, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (n + 65537 > cap) buf = realloc(buf, cap *= 2);
    ssize_t r = read(fd, buf + n, cap - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  *ms = (now_s() - t0) * 1e3;
  *bytes = n;
  *series = 0;
  for (size_t i = 0; i + 1 < n; i++)
    if (buf[i] == '\n' && buf[i + 1] == 'c') (*series)++;
  buf[n] = 0;
  last_lost = sum_family(buf, "collscope_records_lost_total");
  last_records = sum_family(buf, "collscope_records_total");
  free(buf);
  return n > 0 ? 0 : -1;
}

static double proc_cpu_s(pid_t pid) {
  char path[64], b[2048];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(b, 1, sizeof b - 1, f);
  fclose(f);
  b[n] = 0;
  char *p = strrchr(b, ')');
  unsigned long ut = 0, st = 0;
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long proc_hwm_kb(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "RssAnon:", 8)) kb = atol(line + 8);
  if (f) fclose(f);
  return kb;
}

/* In-process: RANKS full rings, one pass of the exporter's follower (opening the rings), then
 * one more second of records at RATE per rank and the steady pass that follows (summary
 * blocks only: the detectors are timed on their own), then the parts of a scrape timed on
 * their own (analysis, rendering) over REPS scrapes. */
static void inproc(const char *dir, struct cs_ring_hdr **h, int ranks, int reps, double rate) {
  struct cs_record rec;
  uint64_t n = 0;
  for (; n < 16384; n++)
    for (int r = 0; r < ranks; r++) {
      record(&rec, n, r, ranks);
      publish(h[r], &rec, r);
    }
  struct exp_state st;
  exp_state_init(&st, dir, 300, stderr);
  double t0 = cpu_s();
  exp_state_poll(&st, rt_ns());
  double tfirst = cpu_s() - t0;
  for (uint64_t end = n + (uint64_t)rate; n < end; n++)
    for (int r = 0; r < ranks; r++) {
      record(&rec, n, r, ranks);
      publish(h[r], &rec, r);
    }
  st.analyse_every_s = 1e9; /* the steady pass alone */
  t0 = cpu_s();
  exp_state_poll(&st, rt_ns());
  double tpoll = cpu_s() - t0;
  double ta = 0, tr = 0;
  size_t len = 0;
  for (int i = 0; i < reps; i++) {
    t0 = cpu_s();
    exp_state_analyse(&st, rt_ns());
    ta += cpu_s() - t0;
    t0 = cpu_s();
    char *b = exp_render_buf(&st, false, &len);
    tr += cpu_s() - t0;
    free(b);
  }
  printf("in-process (CPU time), %d ranks: first poll of 16384 records each %.1f ms (page faults of the mappings "
         "and the first analysis included); a poll after 1 s at %.0f records/s per rank %.3f ms; analysis %.2f ms "
         "(in the poller, at most every 10 s); render (a scrape) %.2f ms, %zu bytes\n",
         ranks, tfirst * 1e3, rate, tpoll * 1e3, ta / reps * 1e3, tr / reps * 1e3, len);
  exp_state_free(&st);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs("usage: bench_exporter CLI [--ranks N] [--rate R] [--seconds S] [--scrape S] [--check]\n", stderr);
    return 2;
  }
  const char *cli = argv[1];
  int ranks = 64, seconds = 45, scrape_every = 15, check = 0, inp = 0, reps = 5;
  double rate = 10000;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
      ranks = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
      rate = atof(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--scrape") && i + 1 < argc)
      scrape_every = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--check"))
      check = 1;
    else if (!strcmp(argv[i], "--inproc"))
      inp = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 1;
  }
  char dir[] = "/tmp/collscope-bench-exporter-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 2;
  }
  struct cs_ring_hdr **h = calloc((size_t)ranks, sizeof *h);
  sw = calloc((size_t)ranks, sizeof *sw);
  for (int r = 0; r < ranks; r++) h[r] = make_ring(dir, r, ranks, 16384);
  if (inp) {
    inproc(dir, h, ranks, reps, rate);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) != 0;
  }
  /* a free port for the exporter */
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  bind(s, (struct sockaddr *)&a, sizeof a);
  getsockname(s, (struct sockaddr *)&a, &al);
  int port = ntohs(a.sin_port);
  close(s);
  char listen[64];
  snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
  pid_t ex = fork();
  if (ex == 0) {
    int dn = open("/dev/null", O_WRONLY);
    if (dn >= 0) dup2(dn, 2);
    execl(cli, cli, "exporter", "--listen", listen, "--shm-dir", dir, "--interval", "1", (char *)NULL);
    _exit(127);
  }
  usleep(300000);
  uint64_t n = 0;
  double t0 = now_s(), next_scrape = t0 + 2, cpu0 = -1, tcpu0 = 0;
  double ms[64];
  size_t nms = 0, bytes = 0, series = 0;
  struct cs_record rec;
  while (now_s() - t0 < seconds) {
    double t = now_s() - t0;
    uint64_t want = (uint64_t)(t * rate);
    for (; n < want; n++)
      for (int r = 0; r < ranks; r++) {
        record(&rec, n, r, ranks);
        publish(h[r], &rec, r);
      }
    if (cpu0 < 0 && t >= 2) {
      cpu0 = proc_cpu_s(ex);
      tcpu0 = now_s();
    } /* after start-up */
    if (now_s() >= next_scrape) {
      if (nms < 64 && scrape(port, &ms[nms], &bytes, &series) == 0) nms++;
      next_scrape += scrape_every;
    }
    usleep(10000);
  }
  double cpu = (proc_cpu_s(ex) - cpu0) / (now_s() - tcpu0) * 100;
  long hwm = proc_hwm_kb(ex);
  /* records lost by the exporter: from one more scrape's collscope_records_lost_total lines */
  kill(ex, SIGTERM);
  waitpid(ex, NULL, 0);
  qsort(ms, nms, sizeof *ms, cmp_d);
  printf("bench_exporter: %d ranks x %.0f records/s for %d s, scrape every %d s (exporter polls every 1 s)\n", ranks,
         rate, seconds, scrape_every);
  printf("  records published: %llu per rank, %llu total\n", (unsigned long long)n, (unsigned long long)n * (unsigned)ranks);
  printf("  scrape (HTTP, %zu samples): median %.2f ms, max %.2f ms; exposition %zu bytes, %zu sample lines\n", nms,
         nms ? ms[nms / 2] : -1, nms ? ms[nms - 1] : -1, bytes, series);
  printf("  at the last scrape: %.0f records counted, %.0f lost (overwritten before the exporter read them)\n",
         last_records, last_lost);
  double rps = (double)n * ranks / seconds;
  printf("  exporter CPU: %.2f%% of one core (%.0f ns of CPU per record at %.0f records/s); private memory "
         "(RssAnon) %ld KiB (the rings' shared pages not counted)\n",
         cpu, cpu / 100 * 1e9 / rps, rps, hwm);
  for (int r = 0; r < ranks; r++) munmap(h[r], cs_ring_bytes(16384));
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (check && (!nms || ms[nms - 1] > 10 || cpu > 1)) {
    printf("FAIL: bars are scrape <= 10 ms, CPU <= 1%%\n");
    return 1;
  }
  return 0;
}
