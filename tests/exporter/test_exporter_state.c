/* tests/exporter/test_exporter_state.c: the exporter's ring follower and exposition on rings
 * built by hand in a temporary directory:
 *  - hostile files under ring names (garbage, a symbolic link, a FIFO, a bad capacity, a
 *    truncated ring) are skipped with exactly one line each, however often the exporter
 *    passes, and produce no series;
 *  - a scrape racing a writer that overwrites a small ring: every exposition is consistent
 *    (histogram +Inf bucket == _count, only the (op, size) pairs the writer wrote, counters
 *    never go backwards) and records read + lost == records published at the end;
 *  - grace period: a ring of a dead process is exported (collscope_up 0) until the grace
 *    period ends, then dropped and not picked up again; a restarted rank gets fresh series;
 *  - the textfile: a symbolic link planted under its name is replaced, never followed;
 *  - SDC: the rank whose output fingerprint disagrees with the majority is counted, once;
 *  - links: the host pair far below the job's other pairs is flagged slow;
 *  - hang state: seconds since the oldest incomplete op, read live at each scrape;
 *  - the collectives' compute gaps kept across reads (exporter_gaps.h): exact gaps, the newest
 *    EXP_GAP_INST a communicator, a ring that wrapped between reads restarting the sums (one
 *    break), communicators past EXP_GAP_COMMS counted, Send/Recv and 1-rank ones not kept. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "exporter/exporter_metrics.h"
#include "exporter/exporter_state.h"
#include "exporter/exporter_textfile.h"
#include "stats/ring_stats.h"

static char shm[256];

static void setup_dir(void) {
  snprintf(shm, sizeof shm, "/tmp/collscope-exptest-XXXXXX");
  assert_non_null(mkdtemp(shm));
}

static void clean_dir(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", shm);
  assert_int_equal(system(cmd), 0);
}

static int dead_pid(void) {
  pid_t p = fork();
  if (p == 0) _exit(0);
  waitpid(p, NULL, 0);
  return (int)p;
}

/* A ring file NAME in shm, mapped read-write: header filled and initialised, no records. */
static struct cs_ring_hdr *make_ring(const char *name, const char *job, int rank, int pid, uint64_t cap) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", shm, name);
  size_t len = cs_ring_bytes(cap);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)len), 0);
  struct cs_ring_hdr *h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  assert_true(h != MAP_FAILED);
  h->magic = CS_RING_MAGIC;
  h->version = CS_RING_VERSION;
  h->rec_size = sizeof(struct cs_record);
  h->capacity = cap;
  h->stats_size = sizeof(struct cs_ring_stats);
  h->pid = pid;
  h->rank = rank;
  h->local_rank = rank % 2;
  h->world_size = 2;
  h->device = rank % 2;
  h->uid = (uint32_t)geteuid();
  h->created_ns = exp_now_ns();
  snprintf(h->host, sizeof h->host, "host%d", rank / 2);
  snprintf(h->job, sizeof h->job, "%s", job);
  atomic_store(&h->heartbeat_ns, exp_now_ns());
  atomic_store(&h->init, CS_RING_INIT_MAGIC);
  return h;
}

/* the summary block's writer state of each ring (the harvest thread keeps one) */
static struct {
  struct cs_ring_hdr *h;
  struct cs_ring_stats_writer w;
} writers[16];
static struct cs_ring_stats_writer *writer_of(struct cs_ring_hdr *h) {
  for (size_t i = 0; i < 16; i++)
    if (writers[i].h == h) return &writers[i].w;
  for (size_t i = 0; i < 16; i++)
    if (!writers[i].h) {
      writers[i].h = h;
      memset(&writers[i].w, 0, sizeof writers[i].w);
      return &writers[i].w;
    }
  fail_msg("too many rings");
  return NULL;
}

static void unmap_ring(struct cs_ring_hdr *h) {
  for (size_t i = 0; i < 16; i++)
    if (writers[i].h == h) writers[i].h = NULL;
  munmap(h, cs_ring_bytes(h->capacity));
}

/* the writer's protocol (include/collscope/ring.h): the slot, then the summary block */
static void publish(struct cs_ring_hdr *h, const struct cs_record *r) {
  uint64_t n = atomic_load_explicit(&h->head, memory_order_relaxed);
  cs_ring_slot_store(&cs_ring_slots(h)[n & (h->capacity - 1)], n, r);
  atomic_store_explicit(&h->head, n + 1, memory_order_release);
  cs_ring_stats_add(cs_ring_stats_of(h), writer_of(h), r);
}

static struct cs_record op_rec(uint64_t seq, int op, uint64_t bytes, int64_t dur_ns) {
  struct cs_record r;
  memset(&r, 0, sizeof r);
  r.type = CS_REC_OP;
  r.op = (uint8_t)op;
  r.timing = CS_TIMING_GPU_EVENT;
  r.comm_id = 0xc0ffee;
  r.comm_size = 2;
  r.seq = seq;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.enqueue_ns = 1000000000000LL + (int64_t)seq * 1000000;
  r.start_ns = r.enqueue_ns + 1000;
  r.end_ns = r.start_ns + dur_ns;
  return r;
}

static char *render(struct exp_state *s) {
  pthread_mutex_lock(&s->mu);
  size_t len;
  char *b = exp_render_buf(s, false, &len);
  pthread_mutex_unlock(&s->mu);
  assert_non_null(b);
  return b;
}

static size_t count_lines(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* the value of the first sample whose line starts with PREFIX, -1 when none */
static double sample(const char *text, const char *prefix) {
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (!strncmp(p, prefix, strlen(prefix))) {
      const char *eol = strchr(p, '\n'), *sp = strchr(p, '}'); /* a label set on this line only */
      return sp && (!eol || sp < eol) ? atof(sp + 2) : atof(strchr(p, ' ') + 1);
    }
  return -1;
}

/* ---- hostile files ---- */
static void test_hostile_rings(void **st) {
  (void)st;
  setup_dir();
  unsigned uid = (unsigned)geteuid();
  char name[128], path[600];
  snprintf(name, sizeof name, "collscope-%u-job-r0.ring", uid);
  struct cs_ring_hdr *good = make_ring(name, "job", 0, getpid(), 64);
  struct cs_record r = op_rec(0, CS_OP_AllReduce, 4096, 50000);
  publish(good, &r);
  /* garbage under a ring name */
  snprintf(path, sizeof path, "%s/collscope-%u-job-r1.ring", shm, uid);
  FILE *f = fopen(path, "w");
  for (int i = 0; i < 5000; i++) fputc((i * 131) & 0xff, f);
  fclose(f);
  /* a symbolic link to the good ring */
  char target[600];
  snprintf(target, sizeof target, "%s/%s", shm, name);
  snprintf(path, sizeof path, "%s/collscope-%u-job-r2.ring", shm, uid);
  assert_int_equal(symlink(target, path), 0);
  /* a FIFO */
  snprintf(path, sizeof path, "%s/collscope-%u-job-r3.ring", shm, uid);
  assert_int_equal(mkfifo(path, 0600), 0);
  /* a capacity that is not a power of two */
  snprintf(name, sizeof name, "collscope-%u-job-r4.ring", uid);
  struct cs_ring_hdr *bad = make_ring(name, "job", 4, getpid(), 64);
  bad->capacity = 63;
  munmap(bad, cs_ring_bytes(64));
  /* a header that claims more slots than the file holds */
  snprintf(name, sizeof name, "collscope-%u-job-r5.ring", uid);
  bad = make_ring(name, "job", 5, getpid(), 64);
  bad->capacity = 1u << 20;
  munmap(bad, cs_ring_bytes(64));

  char *log = NULL;
  size_t loglen = 0;
  FILE *lf = open_memstream(&log, &loglen);
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 300, lf), 0);
  for (int pass = 0; pass < 3; pass++) exp_state_poll(&s, exp_now_ns());
  char *text = render(&s);
  fflush(lf);
  fprintf(stderr, "%s", log);
  assert_int_equal(count_lines(log, "collscope exporter: skipping "), 5); /* once each, not per pass */
  assert_int_equal(s.n, 1);
  assert_int_equal(s.skipped_total, 5);
  assert_int_equal(count_lines(text, "collscope_up{"), 1);
  assert_true(strstr(text, "collscope_up{job=\"job\",host=\"host0\",rank=\"0\"") != NULL);
  assert_true(sample(text, "collscope_exporter_rings_skipped_total") == 5);
  for (int k = 1; k <= 5; k++) {
    char lbl[32];
    snprintf(lbl, sizeof lbl, "rank=\"%d\"", k);
    assert_null(strstr(text, lbl));
  }
  free(text);
  exp_state_free(&s);
  fclose(lf);
  free(log);
  unmap_ring(good);
  clean_dir();
}

/* ---- a scrape racing the writer ---- */
#define RACE_RECORDS 200000
struct race {
  struct cs_ring_hdr *h;
  struct exp_state *s;
  atomic_bool done;
};

static void *race_writer(void *arg) {
  struct race *x = arg;
  for (uint64_t n = 0; n < RACE_RECORDS; n++) {
    /* two shapes: a torn copy would mix them into a third (op, size) or another bucket */
    struct cs_record r = n % 2 ? op_rec(n, CS_OP_AllReduce, 1024, 30000) : op_rec(n, CS_OP_Broadcast, 32u << 20, 3000000);
    publish(x->h, &r);
  }
  atomic_store(&x->done, true);
  return NULL;
}

static void *race_poller(void *arg) {
  struct race *x = arg;
  while (!atomic_load(&x->done)) exp_state_poll(x->s, exp_now_ns());
  exp_state_poll(x->s, exp_now_ns());
  return NULL;
}

static void check_consistent(const char *text, double *last_total) {
  /* only the two shapes, each in its own bucket */
  assert_null(strstr(text, "op=\"AllReduce\",size=\"1MiB-16MiB\""));
  assert_null(strstr(text, "op=\"AllReduce\",size=\"16MiB-256MiB\""));
  assert_null(strstr(text, "op=\"Broadcast\",size=\"0-64KiB\""));
  double total = 0;
  const char *ops[2][3] = {{"AllReduce", "0-64KiB", "5e-05"}, {"Broadcast", "16MiB-256MiB", "0.005"}};
  for (int i = 0; i < 2; i++) {
    char pre[512], tail[160], htail[160]; /* the histograms are per (op, size): no comm label */
    snprintf(tail, sizeof tail, ",comm=\"0000000000c0ffee\",op=\"%s\",size=\"%s\"", ops[i][0], ops[i][1]);
    snprintf(htail, sizeof htail, ",op=\"%s\",size=\"%s\"", ops[i][0], ops[i][1]);
    const char *lbl = "{job=\"race\",host=\"host0\",rank=\"0\",local_rank=\"0\",pid=";
    char pid[32];
    snprintf(pid, sizeof pid, "\"%d\",gpu=\"0\"", getpid());
    snprintf(pre, sizeof pre, "collscope_collectives_total%s%s%s}", lbl, pid, tail);
    double c = sample(text, pre);
    if (c < 0) continue;
    total += c;
    snprintf(pre, sizeof pre, "collscope_collective_duration_seconds_count%s%s%s}", lbl, pid, htail);
    double hc = sample(text, pre);
    snprintf(pre, sizeof pre, "collscope_collective_duration_seconds_bucket%s%s%s,le=\"+Inf\"}", lbl, pid, htail);
    double inf = sample(text, pre);
    snprintf(pre, sizeof pre, "collscope_collective_duration_seconds_bucket%s%s%s,le=\"%s\"}", lbl, pid, htail, ops[i][2]);
    double in_bucket = sample(text, pre);
    assert_true(hc == c && inf == c && in_bucket == c);
  }
  assert_true(total >= *last_total);
  *last_total = total;
}

static void test_scrape_races_overwrite(void **st) {
  (void)st;
  setup_dir();
  char name[128];
  snprintf(name, sizeof name, "collscope-%u-race-r0.ring", (unsigned)geteuid());
  struct race x = {.h = make_ring(name, "race", 0, getpid(), 64)};
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 300, stderr), 0);
  x.s = &s;
  pthread_t w, p;
  pthread_create(&p, NULL, race_poller, &x);
  pthread_create(&w, NULL, race_writer, &x);
  double last = 0;
  size_t scrapes = 0;
  while (!atomic_load(&x.done)) {
    char *text = render(&s);
    check_consistent(text, &last);
    free(text);
    scrapes++;
  }
  pthread_join(w, NULL);
  pthread_join(p, NULL);
  char *text = render(&s);
  check_consistent(text, &last);
  free(text);
  assert_int_equal(s.n, 1);
  uint64_t published = s.v[0]->records;
  fprintf(stderr, "race: %zu scrapes, %llu records published, %.0f counted, %llu series snapshots torn\n", scrapes,
          (unsigned long long)published, last, (unsigned long long)s.v[0]->torn);
  /* the summary block counts every record, however far the ring (64 slots) wrapped */
  assert_int_equal(published, RACE_RECORDS);
  assert_true(last == (double)RACE_RECORDS);
  assert_int_equal(s.v[0]->invalid, 0);
  assert_int_equal(s.v[0]->restarts, 0);
  exp_state_free(&s);
  unmap_ring(x.h);
  clean_dir();
}

/* ---- compute gaps kept across reads ---- */
static void test_gap_history(void **st) {
  (void)st;
  setup_dir();
  char name[128], path[600];
  snprintf(name, sizeof name, "collscope-%u-gaps-r0.ring", (unsigned)geteuid());
  snprintf(path, sizeof path, "%s/%s", shm, name);
  struct cs_ring_hdr *h = make_ring(name, "gaps", 0, getpid(), 64);
  struct cs_ring_reader rd;
  assert_int_equal(cs_ring_reader_open(&rd, path), 0);
  struct cs_record buf[16];
  struct exp_gaps *g = calloc(1, sizeof *g);
  assert_non_null(g);
  /* one AllReduce a ms, 200 us long: 800 us of compute before each but the first */
  for (uint64_t q = 0; q < 40; q++) publish(h, (struct cs_record[]){op_rec(q, CS_OP_AllReduce, 4096, 200000)});
  struct cs_record p2p = op_rec(0, CS_OP_Send, 4096, 200000), one = op_rec(0, CS_OP_AllReduce, 4096, 200000);
  p2p.comm_id = 0xbeef;
  one.comm_id = 0xf00d;
  one.comm_size = 1;
  publish(h, &p2p);
  publish(h, &one);
  exp_gaps_fold(g, &rd, buf, 16);
  assert_int_equal(g->ncomms, 1);
  assert_int_equal(g->breaks, 0);
  assert_int_equal(g->c[0].n, 40);
  assert_true(g->c[0].e[0].gap_us == -1);
  for (size_t i = 1; i < 40; i++) {
    assert_int_equal(g->c[0].e[i].seq, (int64_t)i);
    assert_true(g->c[0].e[i].gap_us == 800);
  }
  /* 200 more before the next read: the ring (64) wrapped, the sums restart once */
  for (uint64_t q = 40; q < 240; q++) publish(h, (struct cs_record[]){op_rec(q, CS_OP_AllReduce, 4096, 200000)});
  exp_gaps_fold(g, &rd, buf, 16);
  assert_int_equal(g->breaks, 1);
  assert_int_equal(g->c[0].n, 40 + 64);
  size_t first = 240 - 64, k = 0; /* the oldest record still in the ring */
  for (size_t i = 0; i < 40 + 64; i++) {
    const int64_t q = g->c[0].e[i].seq;
    assert_int_equal(q, i < 40 ? (int64_t)i : (int64_t)(first + i - 40));
    if (q == (int64_t)first) assert_true(g->c[0].e[i].gap_us == -1), k++;
    if (q > (int64_t)first || (q < 40 && q > 0)) assert_true(g->c[0].e[i].gap_us == 800);
  }
  assert_int_equal(k, 1);
  /* 60 more, read in time: the newest EXP_GAP_INST kept */
  for (uint64_t q = 240; q < 300; q++) publish(h, (struct cs_record[]){op_rec(q, CS_OP_AllReduce, 4096, 200000)});
  exp_gaps_fold(g, &rd, buf, 16);
  assert_int_equal(g->breaks, 1);
  assert_int_equal(g->c[0].n, EXP_GAP_INST);
  assert_int_equal(g->c[0].e[(g->c[0].next + EXP_GAP_INST - 1) % EXP_GAP_INST].seq, 299);
  assert_int_equal(g->c[0].e[g->c[0].next].seq, 300 - EXP_GAP_INST - (240 - 64 - 40));
  /* 10 more communicators: 7 kept, 3 counted */
  for (uint64_t c = 0; c < 10; c++) {
    struct cs_record r = op_rec(300 + c, CS_OP_AllReduce, 4096, 200000);
    r.comm_id = 0x100 + c;
    publish(h, &r);
  }
  exp_gaps_fold(g, &rd, buf, 16);
  assert_int_equal(g->ncomms, EXP_GAP_COMMS);
  assert_int_equal(g->untracked, 3);
  assert_int_equal(exp_gaps_count(g), EXP_GAP_INST + 7);
  struct ring_sched_gap out[EXP_GAP_INST + 7];
  assert_int_equal(exp_gaps_put(g, 3, "hostx", out), EXP_GAP_INST + 7);
  assert_int_equal(out[EXP_GAP_INST].rank, 3);
  assert_int_equal(out[EXP_GAP_INST].comm, 0x100);
  free(g);
  cs_ring_reader_close(&rd);
  unmap_ring(h);
  clean_dir();
}

/* ---- grace period and restart ---- */
static void test_grace_and_restart(void **st) {
  (void)st;
  setup_dir();
  unsigned uid = (unsigned)geteuid();
  char name[128];
  snprintf(name, sizeof name, "collscope-%u-g-r0.ring", uid);
  int gone = dead_pid();
  struct cs_ring_hdr *h = make_ring(name, "g", 0, gone, 64);
  for (uint64_t n = 0; n < 10; n++) {
    struct cs_record r = op_rec(n, CS_OP_AllReduce, 4096, 50000);
    publish(h, &r);
  }
  atomic_store(&h->closed, 1);
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 1.0, stderr), 0);
  exp_state_poll(&s, exp_now_ns());
  char *text = render(&s);
  assert_int_equal(s.n, 1);
  assert_true(sample(text, "collscope_up{") == 0); /* exited, in its grace period */
  assert_true(sample(text, "collscope_collectives_total{") == 10);
  free(text);
  usleep(1300 * 1000);
  exp_state_poll(&s, exp_now_ns());
  assert_int_equal(s.n, 0);
  assert_int_equal(s.dropped_total, 1);
  exp_state_poll(&s, exp_now_ns()); /* still in the directory: not brought back */
  assert_int_equal(s.n, 0);
  text = render(&s);
  assert_null(strstr(text, "collscope_up{"));
  free(text);
  /* the rank restarts: a new process, a new ring of the same job and rank */
  snprintf(name, sizeof name, "collscope-%u-g-r0-p%d.ring", uid, getpid());
  struct cs_ring_hdr *h2 = make_ring(name, "g", 0, getpid(), 64);
  for (uint64_t n = 0; n < 3; n++) {
    struct cs_record r = op_rec(n, CS_OP_AllReduce, 4096, 50000);
    publish(h2, &r);
  }
  exp_state_poll(&s, exp_now_ns());
  text = render(&s);
  assert_int_equal(s.n, 1);
  char pre[160];
  snprintf(pre, sizeof pre, "collscope_collectives_total{job=\"g\",host=\"host0\",rank=\"0\",local_rank=\"0\",pid=\"%d\"",
           getpid());
  assert_true(sample(text, pre) == 3); /* fresh series: its own pid, counting from its own start */
  assert_true(sample(text, "collscope_up{") == 1);
  free(text);
  exp_state_free(&s);
  unmap_ring(h);
  unmap_ring(h2);
  clean_dir();
}

/* ---- SDC: a rank whose output fingerprint disagrees with the majority is named ---- */
static void test_sdc_findings(void **st) {
  (void)st;
  setup_dir();
  struct cs_ring_hdr *h[3];
  for (int r = 0; r < 3; r++) {
    char name[128];
    snprintf(name, sizeof name, "collscope-%u-sdc-r%d.ring", (unsigned)geteuid(), r);
    h[r] = make_ring(name, "sdc", r, getpid(), 64);
    for (uint64_t n = 0; n < 20; n++) {
      struct cs_record rec = op_rec(n, CS_OP_AllReduce, 4096, 50000);
      rec.comm_size = 3;
      rec.comm_rank = r;
      rec.dtype = 7; /* ncclFloat32 */
      rec.redop = 0;
      rec.sdc_checked = 1;
      rec.fingerprint = 0x1234 + n + (r == 2 && n >= 5 && n < 10 ? 0x1000 : 0);
      publish(h[r], &rec);
    }
  }
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 300, stderr), 0);
  exp_state_poll(&s, exp_now_ns());
  char *text = render(&s);
  for (int r = 0; r < 3; r++) {
    char pre[160];
    snprintf(pre, sizeof pre, "collscope_sdc_findings_total{job=\"sdc\",host=\"host%d\",rank=\"%d\"", r / 2, r);
    assert_true(sample(text, pre) == (r == 2 ? 5 : 0));
    snprintf(pre, sizeof pre, "collscope_sdc_checks_total{job=\"sdc\",host=\"host%d\",rank=\"%d\"", r / 2, r);
    assert_true(sample(text, pre) == 20);
  }
  free(text);
  pthread_mutex_lock(&s.mu); /* compared once: another analysis adds nothing */
  exp_state_analyse(&s, exp_now_ns());
  pthread_mutex_unlock(&s.mu);
  text = render(&s);
  assert_true(sample(text, "collscope_sdc_findings_total{job=\"sdc\",host=\"host1\",rank=\"2\"") == 5);
  free(text);
  exp_state_free(&s);
  for (int r = 0; r < 3; r++) unmap_ring(h[r]);
  clean_dir();
}

/* ---- slow links: the host pair far below the job's other pairs ---- */
static void test_slow_link_pair(void **st) {
  (void)st;
  setup_dir();
  struct cs_ring_hdr *h[4];
  for (int i = 0; i < 4; i++) { /* ranks 0, 2, 4, 6 on host0..host3, each sending to the next host */
    int r = 2 * i;
    char name[128];
    snprintf(name, sizeof name, "collscope-%u-lk-r%d.ring", (unsigned)geteuid(), r);
    h[i] = make_ring(name, "lk", r, getpid(), 64);
    struct cs_record rec;
    memset(&rec, 0, sizeof rec);
    rec.type = CS_REC_LINK;
    rec.root = 0; /* send side */
    rec.peer = (r + 2) % 8;
    rec.bytes = 1 << 20;
    rec.count = 16;
    rec.in_sum = r == 0 ? 10 : 100; /* Gbit/s p50: host0 -> host1 is slow */
    rec.in_abs = rec.in_sum;
    publish(h[i], &rec);
  }
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 300, stderr), 0);
  exp_state_poll(&s, exp_now_ns());
  char *text = render(&s);
  assert_true(sample(text, "collscope_link_slow{job=\"lk\",src_host=\"host0\",dst_host=\"host1\"}") == 1);
  assert_true(sample(text, "collscope_link_slow{job=\"lk\",src_host=\"host1\",dst_host=\"host2\"}") == 0);
  assert_true(sample(text, "collscope_link_bandwidth_bytes_per_second{job=\"lk\",src_host=\"host0\",dst_host=\"host1\"}") == 1.25e9);
  assert_int_equal(count_lines(text, "collscope_link_slow{"), 4);
  free(text);
  exp_state_free(&s);
  for (int i = 0; i < 4; i++) unmap_ring(h[i]);
  clean_dir();
}

/* ---- hang state: seconds since the oldest incomplete op, live at every scrape ---- */
static void test_hang_seconds(void **st) {
  (void)st;
  setup_dir();
  char name[128];
  snprintf(name, sizeof name, "collscope-%u-hg-r0.ring", (unsigned)geteuid());
  struct cs_ring_hdr *h = make_ring(name, "hg", 0, getpid(), 64);
  atomic_store(&h->pending, 2);
  atomic_store(&h->oldest_pending_ns, exp_now_ns() - 30000000000LL);
  atomic_store(&h->hung, 1);
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 300, stderr), 0);
  exp_state_poll(&s, exp_now_ns());
  char *text = render(&s);
  double hs = sample(text, "collscope_hang_seconds{");
  assert_true(hs >= 30 && hs < 40);
  assert_true(sample(text, "collscope_hung{") == 1);
  assert_true(sample(text, "collscope_pending_operations{") == 2);
  free(text);
  atomic_store(&h->pending, 0); /* it completed: no poll needed for the scrape to see it */
  text = render(&s);
  assert_true(sample(text, "collscope_hang_seconds{") == 0);
  free(text);
  exp_state_free(&s);
  unmap_ring(h);
  clean_dir();
}

/* ---- the summary block read by a hostile reader's rules ---- */
/* write series (row, op, size class) of H by hand, with the writer's seqlock */
static void put_series(struct cs_ring_hdr *h, unsigned row, int op, unsigned z, const struct cs_ring_series_vals *v) {
  struct cs_ring_series *s = &cs_ring_stats_of(h)->series[row][op][z];
  uint64_t g = atomic_load(&s->gen);
  atomic_store(&s->gen, g + 1);
  uint64_t w[sizeof *v / 8];
  memcpy(w, v, sizeof *v);
  for (size_t i = 0; i < sizeof *v / 8; i++) atomic_store(&s->w[i], w[i]);
  atomic_store(&s->gen, g + 2);
}

static double poll_and_count(struct exp_state *s, const char *prefix) {
  exp_state_poll(s, exp_now_ns());
  char *text = render(s);
  double v = sample(text, prefix);
  free(text);
  return v;
}

static void test_summary_hostile(void **st) {
  (void)st;
  setup_dir();
  char name[128];
  snprintf(name, sizeof name, "collscope-%u-sum-r0.ring", (unsigned)geteuid());
  struct cs_ring_hdr *h = make_ring(name, "sum", 0, getpid(), 64);
  struct cs_ring_stats *b = cs_ring_stats_of(h);
  atomic_store(&b->comm_ids[0], 0xabcull);
  struct cs_ring_series_vals v = {.count = 100, .timed = 90, .bytes = 4096, .dur_ns = 90000, .bus_bytes = 8192};
  v.bucket[1] = 90;
  put_series(h, 0, CS_OP_AllReduce, 0, &v);
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 300, stderr), 0);
  const char *coll = "collscope_collectives_total{job=\"sum\"";
  const char *hcount = "collscope_collective_duration_seconds_count{job=\"sum\"";
  assert_true(poll_and_count(&s, coll) == 100);
  /* the writer's counters go back (a restarted writer, or a hostile one): the exporter's
   * total never does; the new values count afresh */
  v.count = 40;
  v.timed = 30;
  v.bucket[1] = 30;
  put_series(h, 0, CS_OP_AllReduce, 0, &v);
  assert_true(poll_and_count(&s, coll) == 140);
  assert_true(poll_and_count(&s, hcount) == 120);
  assert_int_equal(s.v[0]->restarts, 1);
  /* a snapshot no honest writer makes (more in the buckets than timed): not taken */
  struct cs_ring_series_vals bad = v;
  bad.count = 50;
  bad.bucket[3] = 1000;
  put_series(h, 0, CS_OP_AllReduce, 0, &bad);
  assert_true(poll_and_count(&s, coll) == 140);
  assert_int_equal(s.v[0]->invalid, 1);
  /* an update that never ends (gen stays odd): skipped, the previous figures stay */
  struct cs_ring_series *ser = &b->series[0][CS_OP_AllReduce][0];
  v.count = 45;
  put_series(h, 0, CS_OP_AllReduce, 0, &v);
  atomic_fetch_add(&ser->gen, 1);
  uint64_t torn = s.v[0]->torn;
  assert_true(poll_and_count(&s, coll) == 140);
  assert_true(s.v[0]->torn > torn);
  atomic_fetch_add(&ser->gen, 1); /* the update completes: its 5 more count */
  assert_true(poll_and_count(&s, coll) == 145);
  /* two rows naming the same communicator: the second is never read (no duplicate series) */
  atomic_store(&b->comm_ids[1], 0xabcull);
  put_series(h, 1, CS_OP_AllReduce, 0, &v);
  exp_state_poll(&s, exp_now_ns());
  char *text = render(&s);
  assert_int_equal(count_lines(text, "collscope_collectives_total{"), 1);
  free(text);
  exp_state_free(&s);
  unmap_ring(h);
  clean_dir();
}

/* The writer names the GPU before the ring shows its device: a render that sees the device
 * has the identity too, even when the last poll came before both (no series is ever seen
 * with the device and without the identity). */
static void test_gpu_identity_with_device(void **st) {
  (void)st;
  setup_dir();
  char name[128];
  snprintf(name, sizeof name, "collscope-%u-idd-r0.ring", (unsigned)geteuid());
  struct cs_ring_hdr *h = make_ring(name, "idd", 0, getpid(), 64);
  h->device = -1;
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 300, stderr), 0);
  exp_state_poll(&s, exp_now_ns());
  char *text = render(&s);
  assert_non_null(strstr(text, ",gpu=\"-1\"}"));
  assert_null(strstr(text, "UUID="));
  free(text);
  cs_ring_stats_ident(h, "GPU-00aa", "0000:18:00.0"); /* as stats/ring_writer.c's writer: identity, then device */
  __atomic_store_n(&h->device, 0, __ATOMIC_RELEASE);
  text = render(&s); /* no poll in between */
  assert_null(strstr(text, ",gpu=\"-1\""));
  assert_non_null(strstr(text, ",gpu=\"0\",UUID=\"GPU-00aa\",pci_bus_id=\"00000000:18:00.0\"}"));
  assert_null(strstr(text, ",gpu=\"0\"}"));
  free(text);
  exp_state_free(&s);
  unmap_ring(h);
  clean_dir();
}

/* ---- the GPU's identity: labels named and shaped as dcgm-exporter's ---- */
static void test_gpu_identity_labels(void **st) {
  (void)st;
  setup_dir();
  char name[128];
  snprintf(name, sizeof name, "collscope-%u-id-r0.ring", (unsigned)geteuid());
  struct cs_ring_hdr *h = make_ring(name, "id", 0, getpid(), 64);
  struct cs_record r = op_rec(0, CS_OP_AllReduce, 4096, 50000);
  publish(h, &r);
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 300, stderr), 0);
  exp_state_poll(&s, exp_now_ns());
  char *text = render(&s);
  assert_null(strstr(text, "UUID=")); /* not known yet: no label */
  free(text);
  cs_ring_stats_ident(h, "GPU-1b2c\"x", "0000:8a:00.0");
  cs_ring_stats_ident(h, "GPU-other", "0000:01:00.0"); /* written once */
  exp_state_poll(&s, exp_now_ns());
  text = render(&s);
  assert_non_null(strstr(text, "collscope_up{job=\"id\",host=\"host0\",rank=\"0\",local_rank=\"0\",pid="));
  /* every per-rank sample carries them (the NVML form of the bus id, the UUID made safe) */
  size_t ranked = 0;
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)len, p);
    if (!strstr(line, ",pid=\"")) continue;
    ranked++;
    assert_non_null(strstr(line, ",UUID=\"GPU-1b2c_x\",pci_bus_id=\"00000000:8A:00.0\""));
  }
  assert_true(ranked > 20);
  assert_non_null(strstr(text, "collscope_collectives_total{job=\"id\""));
  assert_null(strstr(text, "GPU-other"));
  free(text);
  exp_state_free(&s);
  unmap_ring(h);
  clean_dir();
}

/* ---- health: gauges in base units, counters that never go backwards, bounded IB ports ---- */
static void test_health_metrics(void **st) {
  (void)st;
  setup_dir();
  char name[128];
  snprintf(name, sizeof name, "collscope-%u-hl-r0.ring", (unsigned)geteuid());
  struct cs_ring_hdr *h = make_ring(name, "hl", 0, getpid(), 64);
  struct cs_ring_stats *b = cs_ring_stats_of(h);
  struct exp_state s;
  assert_int_equal(exp_state_init(&s, shm, 300, stderr), 0);
  exp_state_poll(&s, exp_now_ns());
  char *text = render(&s);
  assert_null(strstr(text, "collscope_gpu_power_watts{")); /* no sample: no series */
  free(text);
  struct cs_ring_health_vals v;
  memset(&v, 0, sizeof v);
  v.t_ns = 1700000000000000000LL;
  v.valid = CS_RH_REASONS | CS_RH_CLOCKS | CS_RH_POWER | CS_RH_TEMP | CS_RH_ECC | CS_RH_PCIE | CS_RH_NVLINK |
            CS_RH_XID | CS_RH_PLIMIT | CS_RH_IB | CS_RH_REMAP;
  v.reasons = 0x4; /* power cap */
  v.sm_mhz = 1410;
  v.mem_mhz = 2619;
  v.power_mw = 251500;
  v.power_limit_mw = 700000;
  v.temp_c = 71;
  v.ecc_corrected = 3;
  v.pcie_replay = 2;
  v.nvlinks = 18;
  v.nvlink_down = 1;
  v.nvlink_crc = 9;
  v.xid_events = 1;
  v.xid_last = 79;
  v.remap_pending = 1;
  v.nib = 2;
  snprintf(v.ib[0].dev, sizeof v.ib[0].dev, "mlx5_0");
  v.ib[0].port = 1;
  v.ib[0].active = 1;
  v.ib[0].rate_mbps = 400000;
  v.ib[0].c[0] = 5;                                  /* symbol_error */
  v.ib[0].c[5] = 77;                                 /* port_xmit_wait */
  v.ib[0].c[8] = 1000;                               /* port_xmit_data, 4-byte words */
  snprintf(v.ib[1].dev, sizeof v.ib[1].dev, "a\"b"); /* not a name the sampler writes */
  v.ib[1].port = 1;
  cs_ring_stats_health(b, &v);
  exp_state_poll(&s, exp_now_ns());
  text = render(&s);
  assert_true(sample(text, "collscope_gpu_power_watts{") == 251.5);
  assert_true(sample(text, "collscope_gpu_power_limit_watts{") == 700);
  assert_true(sample(text, "collscope_gpu_sm_clock_hertz{") == 1.41e9);
  assert_true(sample(text, "collscope_gpu_memory_clock_hertz{") == 2.619e9);
  assert_true(sample(text, "collscope_gpu_temperature_celsius{") == 71);
  assert_true(sample(text, "collscope_gpu_clock_event_reasons{") == 4);
  assert_non_null(strstr(text, ",reason=\"power\"} 1\n"));
  assert_non_null(strstr(text, ",reason=\"thermal\"} 0\n"));
  assert_non_null(strstr(text, "collscope_gpu_ecc_errors_total{"));
  assert_non_null(strstr(text, ",type=\"corrected\"} 3\n"));
  assert_non_null(strstr(text, ",type=\"crc\"} 9\n"));
  assert_non_null(strstr(text, ",state=\"pending\"} 1\n"));
  assert_true(sample(text, "collscope_gpu_pcie_replays_total{") == 2);
  assert_true(sample(text, "collscope_gpu_nvlinks_down{") == 1);
  assert_true(sample(text, "collscope_gpu_last_xid{") == 79);
  assert_true(sample(text, "collscope_health_sample_timestamp_seconds{") == 1.7e9);
  assert_non_null(strstr(text, ",ib_device=\"mlx5_0\",ib_port=\"1\",counter=\"symbol_error\"} 5\n"));
  assert_non_null(strstr(text, ",ib_device=\"mlx5_0\",ib_port=\"1\",counter=\"port_xmit_wait\"} 77\n"));
  assert_non_null(strstr(text, ",ib_device=\"mlx5_0\",ib_port=\"1\"} 4000\n")); /* transmit bytes */
  assert_true(sample(text, "collscope_ib_port_rate_bytes_per_second{") == 5e10);
  assert_null(strstr(text, "a\\\"b"));
  assert_int_equal(count_lines(text, "collscope_ib_port_active{"), 1);
  free(text);
  /* the writer's totals go back (a reset counter): the exported total does not */
  v.ecc_corrected = 1;
  v.power_mw = 100000;
  cs_ring_stats_health(b, &v);
  exp_state_poll(&s, exp_now_ns());
  text = render(&s);
  assert_non_null(strstr(text, ",type=\"corrected\"} 4\n"));
  assert_true(sample(text, "collscope_gpu_power_watts{") == 100);
  free(text);
  /* a group the sampler lost (valid bit clear): its series go away */
  v.valid &= ~(uint64_t)CS_RH_POWER;
  cs_ring_stats_health(b, &v);
  exp_state_poll(&s, exp_now_ns());
  text = render(&s);
  assert_null(strstr(text, "collscope_gpu_power_watts{"));
  free(text);
  exp_state_free(&s);
  unmap_ring(h);
  clean_dir();
}

/* ---- the textfile: a link planted under its name is replaced, never followed ---- */
static void test_textfile_never_follows_links(void **st) {
  (void)st;
  setup_dir();
  char victim[600], link[600];
  snprintf(victim, sizeof victim, "%s/victim", shm);
  snprintf(link, sizeof link, "%s/" EXP_TEXTFILE_NAME, shm);
  FILE *f = fopen(victim, "w");
  fputs("precious\n", f);
  fclose(f);
  assert_int_equal(symlink(victim, link), 0);
  const char text[] = "# HELP collscope_up x\n# TYPE collscope_up gauge\n";
  assert_int_equal(exp_textfile_write(shm, text, sizeof text - 1, stderr), 0);
  struct stat sb;
  assert_int_equal(lstat(link, &sb), 0);
  assert_true(S_ISREG(sb.st_mode));
  assert_int_equal(sb.st_mode & 0777, 0644);
  char buf[128] = {0};
  f = fopen(victim, "r");
  assert_non_null(fgets(buf, sizeof buf, f));
  fclose(f);
  assert_string_equal(buf, "precious\n");
  f = fopen(link, "r");
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  assert_string_equal(buf, text);
  /* no temporaries left behind */
  size_t files = 0;
  DIR *d = opendir(shm);
  for (struct dirent *e; (e = readdir(d));) files += e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, ".."));
  closedir(d);
  assert_int_equal(files, 2);
  clean_dir();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hostile_rings),
      cmocka_unit_test(test_scrape_races_overwrite),
      cmocka_unit_test(test_grace_and_restart),
      cmocka_unit_test(test_textfile_never_follows_links),
      cmocka_unit_test(test_sdc_findings),
      cmocka_unit_test(test_slow_link_pair),
      cmocka_unit_test(test_hang_seconds),
      cmocka_unit_test(test_summary_hostile),
      cmocka_unit_test(test_gpu_identity_labels),
      cmocka_unit_test(test_gpu_identity_with_device),
      cmocka_unit_test(test_health_metrics),
      cmocka_unit_test(test_gap_history),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
