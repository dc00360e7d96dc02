/* bench/gen_dumps.c: writes a deterministic synthetic set of collscope dump files, one per
 * rank, with lines laid out exactly as stats/dump_writer_records.c writes them (docs/dump-format.md),
 * for the reader benchmarks (docs/benchmarks.md).
 *
 *   gen_dumps --ranks N --ops M --out DIR [--jobs J] [--seed S]
 *
 * Each rank has the world communicator (N ranks) and, when N >= 16, a split communicator of
 * its 8-rank group (tensor parallel); 1 op in 5 is on the group communicator. Ops cycle through
 * AllReduce / AllGather / ReduceScatter / Broadcast over 1 KiB .. 64 MiB. Every field is a pure
 * function of (seed, comm, seq, rank), so ranks are written independently (J processes) and
 * agree on every instance: one common start, a per-rank arrival jitter, and rank 5 arriving
 * late in every other world instance (a straggler for the detector to find). Every 50th world
 * instance carries an SDC check result with one fingerprint on every rank. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t mix(uint64_t x) { /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static uint64_t h4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return mix(mix(mix(mix(a) ^ b) ^ c) ^ d); }

#define T0_NS 1764576000000000000ll
#define STRAGGLER 5

struct gen {
  int ranks;
  long ops;
  uint64_t seed;
  const char *out;
};

struct opkind {
  const char *op, *dtype;
  int esz;
  bool redop;
  int busmul;
};
static const struct opkind kinds[] = {
    {"AllReduce", "float32", 4, true, 0},
    {"AllGather", "bfloat16", 2, false, 1},
    {"ReduceScatter", "bfloat16", 2, true, 1},
    {"Broadcast", "float32", 4, false, 0},
};

static void put_us(FILE *f, int64_t ns) {
  fprintf(f, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

static int write_rank(const struct gen *g, int rank) {
  char host[32], path[4096];
  snprintf(host, sizeof host, "node%04d", rank / 8);
  snprintf(path, sizeof path, "%s/collscope-%s-r%d-p%d.jsonl", g->out, host, rank, 10000 + rank);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    fprintf(stderr, "gen_dumps: %s: %s\n", path, strerror(errno));
    return 1;
  }
  FILE *f = fdopen(fd, "w");
  static char iobuf[1 << 20];
  setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
  bool tp = g->ranks >= 16;
  uint64_t world = h4(g->seed, 1, 0, 0), group = h4(g->seed, 2, (uint64_t)rank / 8, 0);
  uint64_t stream = 0x7f3a2c000b20ull + ((uint64_t)rank % 8) * 0x100;
  fprintf(f, "{\"type\":\"header\",\"schema\":1,\"collscope\":\"0.1.0\",\"host\":\"%s\",\"pid\":%d,\"rank\":%d,"
             "\"local_rank\":%d,\"world_size\":%d,\"job\":\"bench\",\"device\":%d,\"pci_bus_id\":\"0000:%02x:00.0\","
             "\"nccl_version\":22809,\"cuda_driver_version\":13000,\"clock\":{\"realtime_ns\":%lld,\"monotonic_ns\":%lld},"
             "\"exe\":\"/usr/bin/python3.12\"}\n",
          host, 10000 + rank, rank, rank % 8, g->ranks, rank % 8, 0x18 + rank % 8, T0_NS - 5000000000ll, 1000000000ll);
  fprintf(f, "{\"type\":\"comm\",\"event\":\"init\",\"comm\":\"%016" PRIx64 "\",\"size\":%d,\"rank\":%d,\"device\":%d,"
             "\"parent\":null,\"t_ns\":%lld}\n",
          world, g->ranks, rank, rank % 8, T0_NS - 2000000000ll);
  if (tp)
    fprintf(f, "{\"type\":\"comm\",\"event\":\"split\",\"comm\":\"%016" PRIx64 "\",\"size\":8,\"rank\":%d,\"device\":%d,"
               "\"parent\":\"%016" PRIx64 "\",\"t_ns\":%lld}\n",
            group, rank % 8, rank % 8, world, T0_NS - 1000000000ll);
  int64_t wseq = 0, gseq = 0;
  for (long i = 0; i < g->ops; i++) {
    bool on_group = tp && i % 5 == 4;
    uint64_t comm = on_group ? group : world;
    int64_t seq = on_group ? gseq++ : wseq++;
    int csize = on_group ? 8 : g->ranks, crank = on_group ? rank % 8 : rank;
    const struct opkind *k = &kinds[(uint64_t)i % 4];
    uint64_t bytes = 1024ull << (h4(g->seed, comm, (uint64_t)seq, 7) % 17); /* 1 KiB .. 64 MiB */
    uint64_t count = bytes / (uint64_t)k->esz;
    if (k->busmul) count /= (uint64_t)csize;
    if (!count) count = 1;
    bytes = count * (uint64_t)k->esz * (k->busmul ? (uint64_t)csize : 1);
    /* instance timeline: every rank agrees on t (the op index sets the clock) */
    int64_t t = T0_NS + (int64_t)i * 2000000 + 100000;
    int64_t xfer_ns = 8000 + (int64_t)(bytes / 40); /* ~40 GB/s */
    int64_t jit = (int64_t)(h4(g->seed, comm, (uint64_t)seq, (uint64_t)rank) % 20000);
    bool late = !on_group && rank == STRAGGLER && seq % 2 == 0;
    int64_t arrive = t + jit + (late ? 300000 : 0);
    int64_t all_in = t + 20000 + (!on_group && seq % 2 == 0 && g->ranks > STRAGGLER ? 300000 : 0);
    int64_t start = arrive, end = all_in + xfer_ns;
    int64_t enq = arrive - 15000 - (int64_t)(h4(g->seed, comm, (uint64_t)seq, 3) % 5000);
    fprintf(f, "{\"type\":\"op\",\"comm\":\"%016" PRIx64 "\",\"comm_size\":%d,\"comm_rank\":%d,\"rank\":%d,"
               "\"seq\":%" PRId64 ",\"op\":\"%s\",\"dtype\":\"%s\",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"redop\":",
            comm, csize, crank, rank, seq, k->op, k->dtype, count, bytes);
    if (k->redop)
      fputs("\"sum\"", f);
    else
      fputs("null", f);
    fprintf(f, ",\"root\":%d,\"peer\":-1,\"stream\":\"0x%" PRIx64 "\",\"group\":0,\"enqueue_ns\":%" PRId64 ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"dur_us\":",
            k->redop || k->busmul ? -1 : 0, stream, enq, start, end);
    put_us(f, end - start);
    fputs(",\"timing\":\"gpu_event\",\"captured\":false,\"site\":\"libtorch_cuda.so!c10d::ProcessGroupNCCL::"
          "collective+0x1a4\",\"status\":0",
          f);
    if (!on_group && seq % 50 == 0 && k->redop) {
      uint64_t fp = h4(g->seed, comm, (uint64_t)seq, 99);
      fprintf(f, ",\"sdc\":{\"checked\":3,\"fp\":\"%016" PRIx64 "\",\"in_sum\":%.17g,\"in_abs\":%.17g,\"out_sum\":%.17g}",
              fp, 0.5 * (double)(rank + 1), 0.75 * (double)(rank + 1), 0.25 * (double)g->ranks * (g->ranks + 1));
    }
    fputs(",\"algo\":\"Ring\",\"proto\":\"Simple\",\"nchannels\":16}\n", f);
  }
  fprintf(f, "{\"type\":\"footer\",\"ops\":%ld,\"xfers\":0,\"drops\":0,\"timing_lost\":0,\"t_ns\":%lld}\n", g->ops,
          T0_NS + (long long)g->ops * 2000000 + 1000000);
  if (fclose(f) != 0) {
    fprintf(stderr, "gen_dumps: %s: write failed\n", path);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct gen g = {.ranks = 8, .ops = 1000, .seed = 1, .out = NULL};
  int jobs = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--ranks"))
      g.ranks = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--ops"))
      g.ops = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--out"))
      g.out = argv[i + 1];
    else if (!strcmp(argv[i], "--jobs"))
      jobs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed"))
      g.seed = strtoull(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "gen_dumps: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!g.out || g.ranks < 1 || g.ops < 0 || jobs < 1) {
    fputs("usage: gen_dumps --ranks N --ops M --out DIR [--jobs J] [--seed S]\n", stderr);
    return 2;
  }
  if (mkdir(g.out, 0755) != 0 && errno != EEXIST) {
    perror(g.out);
    return 1;
  }
  for (int j = 0; j < jobs; j++) {
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      return 1;
    }
    if (p == 0) {
      int rc = 0;
      for (int r = j; r < g.ranks; r += jobs) rc |= write_rank(&g, r);
      _exit(rc);
    }
  }
  int rc = 0, st;
  while (wait(&st) > 0) rc |= !WIFEXITED(st) || WEXITSTATUS(st);
  return rc;
}
