/* tests/tools/test_ring_cli.c: `collscope top` and `collscope salvage` (the built CLI, path
 * in argv[1]) on hand-made stats rings: hostile sizes (a capacity that wraps the size
 * computation, a head far past a header-only file), rings of another owner or whose name
 * does not carry their owner or job, two jobs side by side (flags keyed by job and rank,
 * salvage --job), and strings with control and non-ASCII bytes. Every ring is written here
 * byte by byte with the layout of include/collscope/ring.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "collscope/ring.h"
#include "collscope/schema.h"

static const char *cli;
static char dir[256], shm[300], out[300];

/* ---- rings by hand ---- */
struct ring_spec {
  const char *name; /* file name in shm */
  const char *job, *host;
  int rank, pid;
  uint64_t capacity; /* written to the header */
  uint64_t slots;    /* slots actually in the file */
  uint64_t head;
  const struct cs_record *recs;
  size_t nrecs;
  uint64_t comm; /* comm table entry (0: none) */
  int comm_size;
};

static void write_ring(const struct ring_spec *s) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", shm, s->name);
  size_t len = cs_ring_bytes(s->slots);
  char *buf = calloc(1, len);
  assert_non_null(buf);
  struct cs_ring_hdr *h = (struct cs_ring_hdr *)buf;
  h->magic = CS_RING_MAGIC;
  h->version = CS_RING_VERSION;
  h->stats_size = sizeof(struct cs_ring_stats);
  h->rec_size = sizeof(struct cs_record);
  h->capacity = s->capacity;
  h->pid = s->pid;
  h->rank = s->rank;
  h->local_rank = s->rank;
  h->world_size = 4;
  h->device = s->rank;
  h->uid = (uint32_t)geteuid();
  snprintf(h->host, sizeof h->host, "%s", s->host);
  snprintf(h->job, sizeof h->job, "%s", s->job);
  atomic_store(&h->init, CS_RING_INIT_MAGIC);
  atomic_store(&h->closed, 0);
  if (s->comm) {
    h->comms[0].id = s->comm;
    h->comms[0].size = s->comm_size;
    h->comms[0].rank = s->rank;
    atomic_store(&h->ncomms, 1);
  }
  struct cs_ring_slot *sl = cs_ring_slots(h);
  for (size_t n = 0; n < s->nrecs && n < s->slots; n++) {
    atomic_store(&sl[n].seq, 2 * n + 2);
    uint64_t w[CS_RING_WORDS] = {0};
    memcpy(w, &s->recs[n], sizeof s->recs[n]);
    for (size_t i = 0; i < CS_RING_WORDS; i++) atomic_store(&sl[n].w[i], w[i]);
  }
  atomic_store(&h->head, s->head ? s->head : s->nrecs);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, buf, len), (ssize_t)len);
  close(fd);
  free(buf);
}

static int dead_pid(void) {
  pid_t p = fork();
  if (p == 0) _exit(0);
  waitpid(p, NULL, 0);
  return (int)p;
}

/* a name that stays valid for the test (a pool of buffers) */
static char *ring_name(const char *job, int rank, unsigned uid) {
  static char pool[16][256];
  static unsigned next;
  char *n = pool[next++ % 16];
  snprintf(n, 256, "collscope-%u-%s-r%d.ring", uid, job, rank);
  return n;
}

/* op records of one rank: n instances of comm, duration dur_us each, ending together */
static struct cs_record *ops(uint64_t comm, int rank, size_t n, double dur_us) {
  struct cs_record *v = calloc(n, sizeof *v);
  int64_t base = 1700000000000000000LL;
  for (size_t i = 0; i < n; i++) {
    struct cs_record *r = &v[i];
    r->type = CS_REC_OP;
    r->op = CS_OP_AllReduce;
    r->dtype = 7;
    r->redop = 0;
    r->comm_id = comm;
    r->comm_size = 4;
    r->comm_rank = rank;
    r->seq = i;
    r->count = 1 << 20;
    r->bytes = 4 << 20;
    r->timing = CS_TIMING_GPU_EVENT;
    r->end_ns = base + (int64_t)i * 5000000;
    r->start_ns = r->end_ns - (int64_t)(dur_us * 1000);
    r->enqueue_ns = r->start_ns - 10000;
    r->site = 0x401000;
  }
  return v;
}

/* ---- running the CLI ---- */
struct run {
  int status;
  char *out, *err;
};

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = calloc(1, (size_t)n + 1);
  if (n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) b[0] = 0;
  fclose(f);
  return b;
}

static struct run run_argv(const char *const *args) {
  char o[400], e[400];
  snprintf(o, sizeof o, "%s/stdout", dir);
  snprintf(e, sizeof e, "%s/stderr", dir);
  pid_t p = fork();
  if (p == 0) {
    int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fo, 1);
    dup2(fe, 2);
    alarm(60);
    char *av[16] = {(char *)cli};
    for (size_t i = 0; args[i] && i < 14; i++) av[i + 1] = (char *)args[i];
    execv(cli, av);
    _exit(127);
  }
  struct run r;
  waitpid(p, &r.status, 0);
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

#define run_cli(...) run_argv((const char *const[]){__VA_ARGS__, NULL})

static void run_free(struct run *r) {
  free(r->out);
  free(r->err);
}

static void clean_dirs(void) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf %s %s && mkdir -p %s", shm, out, shm);
  assert_int_equal(system(cmd), 0);
}

static bool exists(const char *name) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", shm, name);
  return access(p, F_OK) == 0;
}

static size_t count_files(const char *d) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "ls -A %s 2>/dev/null | wc -l", d);
  FILE *f = popen(cmd, "r");
  size_t n = 0;
  if (fscanf(f, "%zu", &n) != 1) n = 0;
  pclose(f);
  return n;
}

static json_t *top_json(struct run *r) {
  *r = run_cli("top", "--json", "--shm-dir", shm);
  assert_true(WIFEXITED(r->status));
  json_error_t je;
  json_t *j = json_loads(r->out, 0, &je);
  if (!j) print_message("top --json: %s\n%s\n", je.text, r->out);
  assert_non_null(j);
  return j;
}

/* ---- tests ---- */

/* A header claiming 2^61 slots: the size computation wraps to the header's size, and the
 * records would be copied into malloc(0). A second ring keeps a valid neighbour listed. */
static void test_capacity_wrap(void **st) {
  (void)st;
  unsigned me = (unsigned)geteuid();
  struct cs_record *r = ops(0xa1, 0, 8, 100);
  clean_dirs();
  struct ring_spec bad = {.name = ring_name("wrap", 0, me), .job = "wrap", .host = "h", .rank = 0, .pid = dead_pid(), .capacity = 1ull << 61, .slots = 8, .recs = r, .nrecs = 8};
  write_ring(&bad);
  struct ring_spec good = {.name = ring_name("wrap", 1, me), .job = "wrap", .host = "h", .rank = 1, .pid = getpid(), .capacity = 8, .slots = 8, .recs = r, .nrecs = 8};
  write_ring(&good);
  struct run t = run_cli("top", "--once", "--shm-dir", shm);
  print_message("top: status %d\n%s%s", t.status, t.out, t.err);
  assert_true(WIFEXITED(t.status));
  assert_int_equal(WEXITSTATUS(t.status), 0);
  assert_non_null(strstr(t.out, "collscope top: 1 processes"));
  assert_non_null(strstr(t.out, bad.name));
  assert_non_null(strstr(t.out, "capacity"));
  run_free(&t);
  struct run s = run_cli("salvage", "--shm-dir", shm, "-o", out);
  print_message("salvage: status %d\n%s%s", s.status, s.out, s.err);
  assert_true(WIFEXITED(s.status));
  assert_non_null(strstr(s.err, bad.name));
  assert_true(exists(bad.name)); /* not salvaged, not removed */
  run_free(&s);

  /* a head far past a file no bigger than its header (and a capacity to match it) */
  clean_dirs();
  struct ring_spec far = {.name = ring_name("far", 0, me), .job = "far", .host = "h", .rank = 0, .pid = dead_pid(), .capacity = 1ull << 61, .slots = 0, .head = (1ull << 61) + (1ull << 24)};
  write_ring(&far);
  t = run_cli("top", "--once", "--shm-dir", shm);
  assert_true(WIFEXITED(t.status));
  assert_non_null(strstr(t.out, far.name));
  run_free(&t);
  s = run_cli("salvage", "--shm-dir", shm, "-o", out);
  assert_true(WIFEXITED(s.status));
  assert_int_equal(WEXITSTATUS(s.status), 1);
  run_free(&s);
  free(r);
}

/* Rings planted by another user: a file named for our uid but owned by 65534, and (root's
 * case) a file named for 65534 but owned by us. Neither is listed, salvaged or removed. */
static void test_foreign_owner(void **st) {
  (void)st;
  if (geteuid() != 0) skip();
  struct cs_record *r = ops(0xb1, 0, 4, 100);
  clean_dirs();
  char mine[256], named_other[256];
  snprintf(mine, sizeof mine, "%s", ring_name("plant", 0, 0));
  snprintf(named_other, sizeof named_other, "%s", ring_name("plant", 1, 65534));
  struct ring_spec a = {.name = mine, .job = "plant", .host = "h", .rank = 0, .pid = dead_pid(), .capacity = 4, .slots = 4, .recs = r, .nrecs = 4};
  write_ring(&a);
  struct ring_spec b = a;
  b.name = named_other;
  b.rank = 1;
  write_ring(&b);
  char p[600];
  snprintf(p, sizeof p, "%s/%s", shm, mine);
  assert_int_equal(chown(p, 65534, 65534), 0);
  struct run t;
  json_t *j = top_json(&t);
  print_message("%s", t.err);
  assert_int_equal(json_array_size(json_object_get(j, "processes")), 0);
  assert_non_null(strstr(t.err, mine));
  assert_non_null(strstr(t.err, named_other));
  json_decref(j);
  run_free(&t);
  struct run s = run_cli("salvage", "--shm-dir", shm, "-o", out);
  print_message("salvage: %s%s", s.out, s.err);
  assert_int_equal(WEXITSTATUS(s.status), 1);
  assert_true(exists(mine));
  assert_true(exists(named_other));
  assert_int_equal(count_files(out), 0);
  run_free(&s);
  free(r);
}

/* Two jobs: job "live" (4 ranks, rank 1 arrives late every time) and an older job "old"
 * whose rank 1 died. Only the live job's rank 1 is a straggler; salvage --job touches
 * only the job it is given, and without --job refuses to mix them. */
static void test_two_jobs(void **st) {
  (void)st;
  unsigned me = (unsigned)geteuid();
  clean_dirs();
  struct cs_record *v[4];
  for (int k = 0; k < 4; k++) {
    v[k] = ops(0xc1, k, 60, k == 1 ? 200 : 1000);
    struct ring_spec s = {.name = ring_name("live", k, me), .job = "live", .host = "h", .rank = k, .pid = getpid(), .capacity = 64, .slots = 64, .recs = v[k], .nrecs = 60, .comm = 0xc1, .comm_size = 4};
    char nm[256];
    snprintf(nm, sizeof nm, "collscope-%u-live-r%d-p%d.ring", me, k, getpid());
    s.name = nm;
    write_ring(&s);
  }
  struct cs_record *o = ops(0xd1, 1, 20, 1000);
  struct ring_spec old = {.name = ring_name("old", 1, me), .job = "old", .host = "h", .rank = 1, .pid = dead_pid(), .capacity = 32, .slots = 32, .recs = o, .nrecs = 20, .comm = 0xd1, .comm_size = 4};
  write_ring(&old);
  struct cs_record *o2 = ops(0xe1, 0, 5, 1000);
  struct ring_spec older = {.name = ring_name("older", 0, me), .job = "older", .host = "h", .rank = 0, .pid = dead_pid(), .capacity = 8, .slots = 8, .recs = o2, .nrecs = 5};
  write_ring(&older);
  struct run t;
  json_t *j = top_json(&t);
  json_t *procs = json_object_get(j, "processes");
  assert_int_equal(json_array_size(procs), 6);
  size_t flagged = 0;
  for (size_t i = 0; i < json_array_size(procs); i++) {
    json_t *p = json_array_get(procs, i);
    const char *ring = json_string_value(json_object_get(p, "ring"));
    bool live = strstr(ring, "-live-") != NULL;
    int rank = (int)json_integer_value(json_object_get(p, "rank"));
    bool strag = false;
    json_t *fl = json_object_get(p, "flags");
    for (size_t f = 0; f < json_array_size(fl); f++) strag |= !strcmp(json_string_value(json_array_get(fl, f)), "STRAGGLER");
    print_message("%s rank %d straggler %d\n", ring, rank, strag);
    assert_int_equal(strag, live && rank == 1);
    flagged += strag;
  }
  for (size_t i = 0; i < json_array_size(procs); i++) { /* the job column */
    json_t *p = json_array_get(procs, i);
    const char *job = json_string_value(json_object_get(p, "job"));
    assert_non_null(job);
    assert_non_null(strstr(json_string_value(json_object_get(p, "ring")), job));
  }
  assert_int_equal(flagged, 1);
  json_t *sg = json_object_get(j, "stragglers");
  assert_int_equal(json_array_size(sg), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(sg, 0), "job")), "live");
  json_decref(j);
  run_free(&t);
  struct run txt = run_cli("top", "--once", "--shm-dir", shm);
  assert_non_null(strstr(txt.out, "\njob "));
  run_free(&txt);

  /* salvage without --job: two jobs have dead rings (old, older): refused, nothing touched */
  struct run s = run_cli("salvage", "--shm-dir", shm, "-o", out);
  print_message("salvage: %d %s%s", WEXITSTATUS(s.status), s.out, s.err);
  assert_int_equal(WEXITSTATUS(s.status), 2);
  assert_non_null(strstr(s.err, "old"));
  assert_true(exists(old.name) && exists(older.name));
  run_free(&s);
  /* --job old: only old's ring is converted and removed */
  s = run_cli("salvage", "--job", "old", "--shm-dir", shm, "-o", out);
  print_message("salvage --job old: %d %s%s", WEXITSTATUS(s.status), s.out, s.err);
  assert_int_equal(WEXITSTATUS(s.status), 0);
  assert_false(exists(old.name));
  assert_true(exists(older.name));
  assert_int_equal(count_files(out), 1);
  assert_int_equal(count_files(shm), 5);
  run_free(&s);
  /* an explicit ring of another job than --job is refused */
  char p[600];
  snprintf(p, sizeof p, "%s/%s", shm, older.name);
  s = run_cli("salvage", "--job", "old", "--shm-dir", shm, "-o", out, p);
  assert_int_equal(WEXITSTATUS(s.status), 1);
  assert_true(exists(older.name));
  run_free(&s);
  for (int k = 0; k < 4; k++) free(v[k]);
  free(o);
  free(o2);
}

/* `collscope salvage` of the rings in shm into out (status 0), and every line it wrote, each
 * one JSON object */
static json_t *salvage_lines(void) {
  struct run sv = run_cli("salvage", "--shm-dir", shm, "-o", out);
  print_message("salvage: %d %s%s", WEXITSTATUS(sv.status), sv.out, sv.err);
  assert_int_equal(WEXITSTATUS(sv.status), 0);
  run_free(&sv);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "cat %s/*.salvage.jsonl", out);
  FILE *f = popen(cmd, "r");
  char line[8192];
  json_t *a = json_array();
  while (fgets(line, sizeof line, f)) {
    json_error_t je;
    json_t *l = json_loads(line, 0, &je);
    if (!l) print_message("not JSON: %s (%s)\n", line, je.text);
    assert_non_null(l);
    json_array_append_new(a, l);
  }
  pclose(f);
  return a;
}

/* A host name with an escape sequence and a non-ASCII byte: top prints it escaped, and every
 * line salvage writes is valid JSON. */
static void test_escaped_strings(void **st) {
  (void)st;
  unsigned me = (unsigned)geteuid();
  clean_dirs();
  struct cs_record *r = ops(0xf1, 0, 4, 100);
  const char *host = "evil\x1b[2J\x07host\xff\"q\\";
  struct ring_spec s = {.name = ring_name("esc", 0, me), .job = "esc", .host = host, .rank = 0, .pid = dead_pid(), .capacity = 4, .slots = 4, .recs = r, .nrecs = 4, .comm = 0xf1, .comm_size = 4};
  write_ring(&s);
  struct run t = run_cli("top", "--once", "--shm-dir", shm);
  assert_true(WIFEXITED(t.status));
  assert_null(strchr(t.out, '\x1b'));
  assert_null(strchr(t.out, '\x07'));
  assert_non_null(strstr(t.out, "evil\\x1b"));
  run_free(&t);
  json_t *j = top_json(&t);
  json_t *p0 = json_array_get(json_object_get(j, "processes"), 0);
  assert_non_null(p0);
  assert_string_equal(json_string_value(json_object_get(p0, "host")), "evil\\x1b[2J\\x07host\\xff\"q\\x5c");
  json_decref(j);
  run_free(&t);
  json_t *lines = salvage_lines();
  assert_string_equal(json_string_value(json_object_get(json_array_get(lines, 0), "host")),
                      "evil\x1b[2J\x07host\xc3\xbf\"q\\");
  assert_int_equal(json_array_size(lines), 5); /* header + 4 ops */
  json_decref(lines);
  free(r);
}

/* A group of 4 AllReduces that share one span (group_ops 4, the shim's one event pair per
 * stream): top's busbw is the group's bytes x factor over the span, not one member's bytes
 * over the whole group's time (a quarter of it). Two groups, 400 us each, ending 100 ms ago. */
static void test_group_busbw(void **st) {
  (void)st;
  unsigned me = (unsigned)geteuid();
  struct cs_record *r = ops(0xc7, 0, 8, 400);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  for (size_t i = 0; i < 8; i++) {
    r[i].group = 1 + i / 4;
    r[i].group_ops = 4;
    r[i].end_ns = now - 100000000LL + (int64_t)(i / 4) * 1000000;
    r[i].start_ns = r[i].end_ns - 400000;
    r[i].enqueue_ns = r[i].start_ns - 10000;
  }
  clean_dirs();
  struct ring_spec g = {.name = ring_name("grp", 0, me), .job = "grp", .host = "h", .rank = 0, .pid = getpid(), .capacity = 8, .slots = 8, .recs = r, .nrecs = 8, .comm = 0xc7, .comm_size = 4};
  write_ring(&g);
  struct run t;
  json_t *j = top_json(&t);
  json_t *p = json_array_get(json_object_get(j, "processes"), 0);
  assert_non_null(p);
  double want = 4.0 * (4 << 20) * 1.5 / 400000.0; /* GB/s: 4 x 4 MiB x 2(n-1)/n over 400 us */
  double got = json_real_value(json_object_get(p, "busbw_gbs"));
  print_message("top busbw %.4f, want %.4f\n", got, want);
  assert_true(got > want * 0.999 && got < want * 1.001);
  json_decref(j);
  run_free(&t);
  /* an all-to-all: a Send and a Recv of 1 MiB per peer in one group of 8, 400 us: its Send
   * bytes x (n-1)/n over the span (nccl-tests' alltoall rule) */
  for (size_t i = 0; i < 8; i++) {
    r[i].group = 1;
    r[i].group_ops = 8;
    r[i].op = i % 2 ? CS_OP_Recv : CS_OP_Send;
    r[i].peer = (int)(i / 2);
    r[i].bytes = 1 << 20;
    r[i].end_ns = now - 100000000LL;
    r[i].start_ns = r[i].end_ns - 400000;
  }
  clean_dirs();
  write_ring(&g);
  j = top_json(&t);
  p = json_array_get(json_object_get(j, "processes"), 0);
  want = 4.0 * (1 << 20) * 0.75 / 400000.0;
  got = json_real_value(json_object_get(p, "busbw_gbs"));
  print_message("top all-to-all busbw %.4f, want %.4f\n", got, want);
  assert_true(got > want * 0.999 && got < want * 1.001);
  json_decref(j);
  run_free(&t);
  /* salvage keeps what the shim's writer puts on such lines: the shared span's member count,
   * and a replay's graph and number (a dump reader takes the span as the group's) */
  r[3].graph = 5;
  r[3].replay = 17;
  clean_dirs();
  g.pid = dead_pid(); /* salvage takes the rings of dead processes */
  write_ring(&g);
  json_t *lines = salvage_lines(), *l;
  size_t members = 0, replays = 0, k;
  json_array_foreach(lines, k, l) {
    if (json_integer_value(json_object_get(l, "group_ops")) == 8) members++;
    if (json_integer_value(json_object_get(l, "graph")) == 5 && json_integer_value(json_object_get(l, "replay")) == 17)
      replays++;
  }
  json_decref(lines);
  print_message("salvaged: %zu members with group_ops 8, %zu replay lines\n", members, replays);
  assert_int_equal(members, 8);
  assert_int_equal(replays, 1);
  free(r);
}

/* Long job ids and host names are shown whole in top's text: two hosts that differ only in
 * their last characters, beyond 14, stay two names. */
static void test_long_names(void **st) {
  (void)st;
  unsigned me = (unsigned)geteuid();
  struct cs_record *r = ops(0xc9, 0, 4, 100);
  clean_dirs();
  const char *job = "slurm-job-12345678901234";
  struct ring_spec a = {.name = ring_name(job, 0, me), .job = job, .host = "gpu-node-rack12-slot07", .rank = 0, .pid = getpid(), .capacity = 4, .slots = 4, .recs = r, .nrecs = 4, .comm = 0xc9, .comm_size = 4};
  write_ring(&a);
  struct ring_spec b = a;
  b.name = ring_name(job, 1, me);
  b.host = "gpu-node-rack12-slot08";
  b.rank = 1;
  write_ring(&b);
  struct run t = run_cli("top", "--once", "--shm-dir", shm);
  print_message("%s%s", t.out, t.err);
  assert_int_equal(WEXITSTATUS(t.status), 0);
  assert_non_null(strstr(t.out, "gpu-node-rack12-slot07"));
  assert_non_null(strstr(t.out, "gpu-node-rack12-slot08"));
  assert_non_null(strstr(t.out, "slurm-job-12345678901234 "));
  run_free(&t);
  free(r);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH_TO_COLLSCOPE\n", argv[0]);
    return 2;
  }
  cli = argv[1];
  snprintf(dir, sizeof dir, "/tmp/collscope-ringcli-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  snprintf(shm, sizeof shm, "%s/shm", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_capacity_wrap),
      cmocka_unit_test(test_foreign_owner),
      cmocka_unit_test(test_two_jobs),
      cmocka_unit_test(test_escaped_strings),
      cmocka_unit_test(test_group_busbw),
      cmocka_unit_test(test_long_names),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0 && !rc) rc = 1;
  return rc;
}
