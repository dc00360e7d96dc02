/* tests/sdc/sdc_job.c: a job for the SDC tests. Every rank runs --steps collectives on
 * seeded random data and does NOT check the results (the simulator's flip faults corrupt
 * them on purpose; collscope must record the catch), so every rank exits cleanly and
 * writes its whole dump.
 *
 *   sdc_job --steps K [--op NAME|mix] [--dtype NAME|mix] [--redop sum|avg|prod|max|min]
 *           [--count N] [--data random|wide|special] [--inplace] [--seed S]
 *           [--bad-call RANK:STEP[:dtype|redop]]
 *
 * --bad-call: before step STEP, rank RANK alone makes one extra ncclAllReduce that NCCL
 * rejects (ncclInvalidArgument: a datatype or reduction operation out of range; redop
 * passes collscope's SDC eligibility, dtype does not) and carries on, as a job that
 * tolerates a failed call does. Its peers make no such call.
 *
 * mix: step k uses op/dtype number k of a fixed cycle, the same on every rank.
 * Data: random -- floats uniform in [-1, 1), integers over their whole range;
 *       wide   -- magnitudes near the type's largest (fp16/bf16/fp32 sums near overflow);
 *       special -- random plus -0.0, NaN, +-Inf and subnormals sprinkled in. */
#include "../apps/common.h"
#include <math.h>
#include <string.h>
#include <time.h>

static const char *const ops[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"};
static const char *const dtypes[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                     "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
static const char *const redops[] = {"sum", "prod", "max", "min", "avg"};
static const size_t dsize[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

static int find(const char *const *v, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v[i], s)) return i;
  if (!strcmp(s, "mix")) return -1;
  fprintf(stderr, "sdc_job: unknown name %s\n", s);
  exit(2);
}

static uint64_t rng_state;
static uint64_t rng(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double urand(void) { return (double)(rng() >> 11) * 0x1p-53; }

static uint16_t f2h(float f) { /* round to nearest even, IEEE half */
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  if (isnan(f)) return (uint16_t)(sign | 0x7e00u);
  float a = fabsf(f);
  if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00u);
  if (a < 0x1p-14f) return (uint16_t)(sign | (uint32_t)lrintf(a * 0x1p24f)); /* subnormal */
  int e;
  float m = frexpf(a, &e);                       /* a = m 2^e, m in [0.5, 1) */
  uint32_t mant = (uint32_t)lrintf(m * 2048.0f); /* 11 bits incl. the leading one */
  if (mant == 2048) {
    mant = 1024;
    e++;
  }
  if (e - 1 + 15 >= 31) return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | (uint32_t)(e - 1 + 15) << 10 | (mant & 0x3ffu));
}

static void fill(void *buf, int dt, size_t n, const char *data) {
  int wide = !strcmp(data, "wide"), special = !strcmp(data, "special");
  for (size_t i = 0; i < n; i++) {
    double v = 2 * urand() - 1;
    if (wide) {
      double big = dt == 6 ? 16000.0 : dt == 9 ? 8e37
                                   : dt == 7   ? 8e37
                                   : dt == 8   ? 4e307
                                               : 1.0;
      v = (v < 0 ? -1 : 1) * big * (0.5 + 0.5 * fabs(v));
    }
    if (special && dt >= 6 && rng() % 64 == 0) {
      switch (rng() % 5) {
      case 0: v = -0.0; break;
      case 1: v = NAN; break;
      case 2: v = INFINITY; break;
      case 3: v = -INFINITY; break;
      default: v = 1e-40; break; /* subnormal for fp32, 0 for the small types */
      }
    }
    uint64_t r = rng();
    switch (dt) {
    case 0:
    case 1: ((uint8_t *)buf)[i] = (uint8_t)r; break;
    case 2:
    case 3: ((uint32_t *)buf)[i] = (uint32_t)r; break;
    case 4:
    case 5: ((uint64_t *)buf)[i] = r; break;
    case 6: ((uint16_t *)buf)[i] = f2h((float)v); break;
    case 7: ((float *)buf)[i] = (float)v; break;
    case 8: ((double *)buf)[i] = v; break;
    case 9: ((uint16_t *)buf)[i] = isnan(v) ? 0x7fc0 : app_f2bf((float)v); break;
    default: ((uint8_t *)buf)[i] = (uint8_t)(r & 0x77); break; /* small fp8 values, no NaN */
    }
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  const char *opn = "AllReduce", *dtn = "float32", *redn = "sum", *data = "random";
  size_t count = 4096;
  int bad_rank = -1, bad_step = -1, bad_redop = 0;                                            /* --bad-call */
  int inplace = 0, reuse = 0, group = 0; /* --group: each collective in ncclGroupStart/End */ /* --reuse: fill once, no per-step sync (benchmark loop) */
  uint64_t seed = 1;
  char **rest = calloc((size_t)argc + 1, sizeof(char *));
  int nrest = 0;
  rest[nrest++] = argv[0];
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "--inplace")) {
      inplace = 1;
      continue;
    }
    if (!strcmp(o, "--reuse")) {
      reuse = 1;
      continue;
    }
    if (!strcmp(o, "--group")) {
      group = 1;
      continue;
    }
    if (v && !strcmp(o, "--op"))
      opn = argv[++i];
    else if (v && !strcmp(o, "--dtype"))
      dtn = argv[++i];
    else if (v && !strcmp(o, "--redop"))
      redn = argv[++i];
    else if (v && !strcmp(o, "--data"))
      data = argv[++i];
    else if (v && !strcmp(o, "--count"))
      count = strtoull(argv[++i], NULL, 0);
    else if (v && !strcmp(o, "--seed"))
      seed = strtoull(argv[++i], NULL, 0);
    else if (v && !strcmp(o, "--bad-call")) {
      char kind[16] = "dtype";
      if (sscanf(argv[++i], "%d:%d:%15s", &bad_rank, &bad_step, kind) < 2 ||
          (strcmp(kind, "dtype") && strcmp(kind, "redop"))) {
        fprintf(stderr, "sdc_job: --bad-call RANK:STEP[:dtype|redop]\n");
        exit(2);
      }
      bad_redop = !strcmp(kind, "redop");
    } else
      rest[nrest++] = argv[i];
  }
  struct app a;
  app_init(&a, "sdc_job", nrest, rest,
           "sdc_job --steps K [--op NAME|mix] [--dtype NAME|mix] [--redop R] [--count N] [--data random|wide|special] "
           "[--inplace] [--seed S]");
  int op0 = find(ops, 5, opn), dt0 = find(dtypes, 12, dtn), red = find(redops, 5, redn);
  if (red < 0) red = 0;
  ncclComm_t comm = app_world_comm(&a);
  cudaStream_t s;
  CUDACHECK(cudaStreamCreate(&s));
  size_t n = (size_t)a.world, maxbytes = count * 8 * n;
  void *host, *dsend, *drecv;
  CUDACHECK(cudaMallocHost(&host, maxbytes));
  CUDACHECK(cudaMalloc(&dsend, maxbytes));
  CUDACHECK(cudaMalloc(&drecv, maxbytes));
  double t0 = now_ms();
  for (int k = 0; k < a.steps; k++) {
    int op = op0 >= 0 ? op0 : k % 5;
    int dt = dt0 >= 0 ? dt0 : (k / 5) % 12;
    size_t es = dsize[dt];
    size_t in_count = op == 4 ? count * n : count; /* ReduceScatter: n chunks */
    rng_state = seed * 0x100000001b3ull + (uint64_t)a.rank * 0x9e3779b97f4a7c15ull + (uint64_t)k * 7919;
    if (k == 1 && reuse) {
      CUDACHECK(cudaStreamSynchronize(s));
      NCCLCHECK(ncclAllReduce(dsend, drecv, 1, ncclFloat32, ncclSum, comm, s)); /* line up the ranks */
      CUDACHECK(cudaStreamSynchronize(s));
      t0 = now_ms();
    }
    if (!reuse || k == 0) {
      CUDACHECK(cudaStreamSynchronize(s)); /* the previous step's copy has read `host` */
      fill(host, dt, in_count, data);
      CUDACHECK(cudaMemcpyAsync(dsend, host, in_count * es, cudaMemcpyHostToDevice, s));
    }
    void *in = dsend, *out = drecv;
    if (inplace) {
      /* in-place layouts: AllGather sends from recvbuff + rank * count; ReduceScatter
       * receives into sendbuff + rank * count */
      if (op == 3) {
        out = dsend;
        in = (char *)dsend + (size_t)a.rank * count * es;
        CUDACHECK(cudaMemcpyAsync(in, host, count * es, cudaMemcpyHostToDevice, s));
      } else if (op == 4) {
        out = (char *)dsend + (size_t)a.rank * count * es;
      } else {
        out = dsend;
      }
    }
    ncclDataType_t t = (ncclDataType_t)dt;
    ncclRedOp_t r = (ncclRedOp_t)red;
    if (k == bad_step && a.rank == bad_rank) {
      ncclResult_t e = bad_redop ? ncclAllReduce(in, out, count, ncclFloat32, (ncclRedOp_t)(ncclNumOps + 7), comm, s)
                                 : ncclAllReduce(in, out, count, (ncclDataType_t)ncclNumTypes, ncclSum, comm, s);
      if (e != ncclInvalidArgument) {
        fprintf(stderr, "sdc_job: the bad call returned %d, want ncclInvalidArgument\n", (int)e);
        exit(1);
      }
    }
    if (group) NCCLCHECK(ncclGroupStart());
    switch (op) {
    case 0: NCCLCHECK(ncclAllReduce(in, out, count, t, r, comm, s)); break;
    case 1: NCCLCHECK(ncclBroadcast(in, out, count, t, k % a.world, comm, s)); break;
    case 2: NCCLCHECK(ncclReduce(in, out, count, t, r, k % a.world, comm, s)); break;
    case 3: NCCLCHECK(ncclAllGather(in, out, count, t, comm, s)); break;
    default: NCCLCHECK(ncclReduceScatter(in, out, count, t, r, comm, s)); break;
    }
    if (group) NCCLCHECK(ncclGroupEnd());
  }
  CUDACHECK(cudaStreamSynchronize(s));
  double loop_ms = now_ms() - t0;
  NCCLCHECK(ncclCommDestroy(comm));
  printf("sdc_job rank=%d steps=%d op=%s dtype=%s data=%s loop_ms=%.3f done\n", a.rank, a.steps, opn, dtn, data,
         loop_ms);
  free(rest);
  return 0;
}
