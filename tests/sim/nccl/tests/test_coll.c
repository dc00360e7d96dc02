/* tests/sim/nccl/tests/test_coll.c: bitwise correctness of every collective x datatype x
 * reduction op against a host reference computed in the documented ring order (README.md),
 * one process per rank on 1-4 simulated hosts, in-place and out-of-place, odd counts, and
 * a few large (chunked through the shm slots) cases; then Send/Recv between hosts: a group
 * where every rank sends two messages to every other rank (sizes from 1 element to several
 * slots, one exactly one slot), a chain of lone Send/Recv outside groups, with some ranks'
 * net plugin failing (tests/net runs this program with NCCL_NET_PLUGIN set, where pairwise
 * transfers between hosts go through the plugin). */
#include "harness.h"

enum { C_ALLREDUCE, C_REDUCE, C_REDUCESCATTER, C_ALLGATHER, C_BROADCAST, C_ALLTOALL, C_GATHER, C_SCATTER, C_N };
static const char *cname[C_N] = {"AllReduce", "Reduce", "ReduceScatter", "AllGather", "Broadcast", "AlltoAll", "Gather", "Scatter"};
/* test ops: 0..4 builtin, 5 premulsum host scalar, 6 premulsum device scalar */
enum { O_N = 7 };

struct plan {
  int ncolls; const int *colls;
  int ntypes; const int *types;
  int nops; const int *ops;
  int ncounts; const size_t *counts;
};

static int ring[64], pos[64];
static void compute_ring(int n, const char *const *hosts, int nhosts) {
  char done[64] = {0};
  int k = 0;
  for (int r = 0; r < n; r++) {
    if (done[r]) continue;
    for (int q = r; q < n; q++)
      if (!done[q] && !strcmp(hosts ? hosts[q % nhosts] : "simhost0", hosts ? hosts[r % nhosts] : "simhost0")) {
        done[q] = 1; ring[k++] = q;
      }
  }
  for (int p = 0; p < n; p++) pos[ring[p]] = p;
}

static const char *const *g_hosts;
static int g_nhosts;

static void run_case(struct rank_ctx *c, ncclComm_t comm, cudaStream_t st, int coll, int t, int top, size_t count,
                     int inplace, void **in, char *dsend, char *drecv, char *exp, char *got, void *dscalar) {
  int n = c->nranks, me = c->rank, root = 1 % n;
  size_t es = sn_type_size(t);
  int isred = coll <= C_REDUCESCATTER;
  int refop = SN_SUM;
  unsigned char scalar[8] = {0};
  ncclRedOp_t op = ncclSum;
  if (isred) {
    switch (top) {
    case 0: refop = SN_SUM; op = ncclSum; break;
    case 1: refop = SN_PROD; op = ncclProd; break;
    case 2: refop = SN_MAX; op = ncclMax; break;
    case 3: refop = SN_MIN; op = ncclMin; break;
    case 4: op = ncclAvg;
      if (sn_is_float(t)) { refop = SN_PREMULSUM; sn_avg_scalar(t, n, scalar); } else refop = SN_SUMPOSTDIV;
      break;
    default: {
      int32_t three = 3;
      refop = SN_PREMULSUM;
      sn_convert_scalar(SN_INT32, &three, t, scalar);
      if (top == 5) NCCLOK(ncclRedOpCreatePreMulSum(&op, scalar, (ncclDataType_t)t, ncclScalarHostImmediate, comm));
      else {
        CUDAOK(cudaMemcpy(dscalar, scalar, es, cudaMemcpyHostToDevice));
        NCCLOK(ncclRedOpCreatePreMulSum(&op, dscalar, (ncclDataType_t)t, ncclScalarDevice, comm));
      }
    }
    }
  }
  size_t in_elems = count, out_elems = count;
  if (coll == C_REDUCESCATTER || coll == C_ALLTOALL || coll == C_SCATTER) in_elems = count * (size_t)n;
  if (coll == C_ALLGATHER || coll == C_ALLTOALL || coll == C_GATHER) out_elems = count * (size_t)n;
  int order[64];
  size_t expect_n = out_elems;
  /* expected output */
  switch (coll) {
  case C_ALLREDUCE: {
    size_t cs = (count + (size_t)n - 1) / (size_t)n;
    for (int k = 0; k < n; k++) {
      size_t a = (size_t)k * cs, b = a + cs;
      if (a > count) a = count;
      if (b > count) b = count;
      if (b == a) continue;
      for (int j = 0; j < n; j++) order[j] = ring[(k + 1 + j) % n];
      ref_chain(t, refop, scalar, exp + a * es, in, order, n, a, b - a, n);
    }
    break;
  }
  case C_REDUCE:
    if (me != root) { expect_n = 0; break; }
    for (int j = 0; j < n; j++) order[j] = ring[(pos[root] + 1 + j) % n];
    ref_chain(t, refop, scalar, exp, in, order, n, 0, count, n);
    break;
  case C_REDUCESCATTER:
    for (int j = 0; j < n; j++) order[j] = ring[(pos[me] + 1 + j) % n];
    ref_chain(t, refop, scalar, exp, in, order, n, (size_t)me * count, count, n);
    break;
  case C_ALLGATHER:
    for (int r = 0; r < n; r++) memcpy(exp + (size_t)r * count * es, in[r], count * es);
    break;
  case C_BROADCAST: memcpy(exp, in[root], count * es); break;
  case C_ALLTOALL:
    for (int r = 0; r < n; r++) memcpy(exp + (size_t)r * count * es, (char *)in[r] + (size_t)me * count * es, count * es);
    break;
  case C_GATHER:
    if (me != root) { expect_n = 0; break; }
    for (int r = 0; r < n; r++) memcpy(exp + (size_t)r * count * es, in[r], count * es);
    break;
  case C_SCATTER: memcpy(exp, (char *)in[root] + (size_t)me * count * es, count * es); break;
  }
  /* buffers */
  const char *sb = dsend;
  char *rb = drecv;
  CUDAOK(cudaMemset(drecv, 0xA5, out_elems * es + 64));
  if (!inplace) {
    CUDAOK(cudaMemcpy(dsend, in[me], in_elems * es, cudaMemcpyHostToDevice));
  } else {
    switch (coll) {
    case C_ALLREDUCE: case C_REDUCE: case C_BROADCAST: case C_REDUCESCATTER: case C_SCATTER:
      CUDAOK(cudaMemcpy(drecv, in[me], in_elems * es, cudaMemcpyHostToDevice));
      sb = drecv;
      if (coll == C_REDUCESCATTER) rb = drecv + (size_t)me * count * es;
      else if (coll == C_SCATTER) rb = me == root ? drecv + (size_t)root * count * es : drecv;
      else rb = drecv;
      if (coll == C_SCATTER && me != root) sb = dsend;
      break;
    case C_ALLGATHER:
      CUDAOK(cudaMemcpy(drecv + (size_t)me * count * es, in[me], count * es, cudaMemcpyHostToDevice));
      sb = drecv + (size_t)me * count * es;
      break;
    case C_GATHER:
      if (me == root) {
        CUDAOK(cudaMemcpy(drecv + (size_t)root * count * es, in[me], count * es, cudaMemcpyHostToDevice));
        sb = drecv + (size_t)root * count * es;
      } else {
        CUDAOK(cudaMemcpy(dsend, in[me], count * es, cudaMemcpyHostToDevice));
      }
      break;
    default: CUDAOK(cudaMemcpy(dsend, in[me], in_elems * es, cudaMemcpyHostToDevice)); break;
    }
  }
  ncclDataType_t dt = (ncclDataType_t)t;
  ncclResult_t r = ncclSuccess;
  switch (coll) {
  case C_ALLREDUCE: r = ncclAllReduce(sb, rb, count, dt, op, comm, st); break;
  case C_REDUCE: r = ncclReduce(sb, rb, count, dt, op, root, comm, st); break;
  case C_REDUCESCATTER: r = ncclReduceScatter(sb, rb, count, dt, op, comm, st); break;
  case C_ALLGATHER: r = ncclAllGather(sb, rb, count, dt, comm, st); break;
  case C_BROADCAST: r = inplace ? ncclBcast(rb, count, dt, root, comm, st) : ncclBroadcast(sb, rb, count, dt, root, comm, st); break;
  case C_ALLTOALL: r = ncclAlltoAll(sb, rb, count, dt, comm, st); break;
  case C_GATHER: r = ncclGather(sb, rb, count, dt, root, comm, st); break;
  case C_SCATTER: r = ncclScatter(sb, rb, count, dt, root, comm, st); break;
  }
  CHECK(r == ncclSuccess, "%s returned %d", cname[coll], r);
  CUDAOK(cudaStreamSynchronize(st));
  if (isred && top >= 5) NCCLOK(ncclRedOpDestroy(op, comm));
  if (expect_n == 0) return;
  const char *res = (coll == C_REDUCESCATTER && inplace) ? rb : (coll == C_SCATTER && inplace) ? rb : drecv;
  CUDAOK(cudaMemcpy(got, res, expect_n * es, cudaMemcpyDeviceToHost));
  if (memcmp(got, exp, expect_n * es) != 0) {
    size_t i = 0;
    while (i < expect_n && !memcmp(got + i * es, exp + i * es, es)) i++;
    CHECK(0, "rank %d/%d %s type %d op %d count %zu inplace %d: first mismatch at elem %zu (got %g want %g)",
          me, n, cname[coll], t, top, count, inplace, i, sn_load(t, got, i), sn_load(t, exp, i));
  }
}

static void rank_main(struct rank_ctx *c) {
  const struct plan *pl = c->arg;
  int n = c->nranks;
  compute_ring(n, g_hosts, g_nhosts);
  ncclComm_t comm;
  NCCLOK(ncclCommInitRank(&comm, n, c->id, c->rank));
  cudaStream_t st;
  CUDAOK(cudaStreamCreate(&st));
  size_t maxc = 0;
  for (int i = 0; i < pl->ncounts; i++) if (pl->counts[i] > maxc) maxc = pl->counts[i];
  size_t maxb = maxc * (size_t)n * 8 + 64;
  void *in[64];
  for (int r = 0; r < n; r++) in[r] = malloc(maxb);
  char *exp = malloc(maxb), *got = malloc(maxb);
  char *dsend, *drecv;
  void *dscalar;
  CUDAOK(cudaMalloc((void **)&dsend, maxb));
  CUDAOK(cudaMalloc((void **)&drecv, maxb));
  CUDAOK(cudaMalloc(&dscalar, 8));
  int salt = 0;
  for (int ci = 0; ci < pl->ncolls; ci++) {
    int coll = pl->colls[ci];
    for (int ti = 0; ti < pl->ntypes; ti++) {
      int t = pl->types[ti];
      int nops = coll <= C_REDUCESCATTER ? pl->nops : 1;
      for (int oi = 0; oi < nops; oi++) {
        for (int k = 0; k < pl->ncounts; k++) {
          size_t count = pl->counts[k];
          size_t in_elems = (coll == C_REDUCESCATTER || coll == C_ALLTOALL || coll == C_SCATTER) ? count * (size_t)n : count;
          salt++;
          for (int r = 0; r < n; r++) fill_input(t, in[r], in_elems, r, salt);
          for (int inplace = 0; inplace < 2; inplace++) {
            if (coll == C_ALLTOALL && inplace) continue;
            run_case(c, comm, st, coll, t, pl->ops[oi], count, inplace, in, dsend, drecv, exp, got, dscalar);
          }
        }
      }
    }
  }
  NCCLOK(ncclCommDestroy(comm));
  for (int r = 0; r < n; r++) free(in[r]);
  free(exp); free(got);
  cudaFree(dsend); cudaFree(drecv); cudaFree(dscalar);
}

/* ---- Send/Recv ----
 * p2p_fail: COLLSCOPE_SIMNET_FAIL value set on odd ranks (NULL: none); only simnet reads it */
struct p2pplan { const char *fail_odd; };
static size_t p2p_count(int src, int dst, int m) {
  static const size_t sizes[] = {1, 1023, 131072 /* one 512 KiB slot */, 300001, 7, 131073};
  return sizes[(size_t)(src * 3 + dst * 5 + m) % (sizeof sizes / sizeof *sizes)];
}
#define P2P_MAXC 300001

static void p2p_check(const char *what, int me, int from, int m, const float *got, size_t n, int salt) {
  float *want = malloc(n * sizeof *want);
  fill_input(SN_F32, want, n, from * 64 + me, salt + m);
  if (memcmp(got, want, n * sizeof *want) != 0) {
    size_t i = 0;
    while (i < n && got[i] == want[i]) i++;
    CHECK(0, "rank %d: %s message %d from %d (%zu elems): first mismatch at %zu (got %g want %g)", me, what, m, from, n, i,
          (double)got[i], (double)want[i]);
  }
  free(want);
}

static void rank_p2p(struct rank_ctx *c) {
  const struct p2pplan *pl = c->arg;
  int n = c->nranks, me = c->rank;
  if (pl->fail_odd && me % 2) setenv("COLLSCOPE_SIMNET_FAIL", pl->fail_odd, 1);
  ncclComm_t comm;
  NCCLOK(ncclCommInitRank(&comm, n, c->id, c->rank));
  cudaStream_t st;
  CUDAOK(cudaStreamCreate(&st));
  float *dsend[64][2], *drecv[64][2], *host = malloc(P2P_MAXC * sizeof(float));
  for (int round = 0; round < 2; round++) {
    int salt = 100 + round * 10;
    /* 1. one group: two messages to and from every other rank */
    for (int p = 0; p < n; p++)
      for (int m = 0; m < 2 && p != me; m++) {
        size_t sc = p2p_count(me, p, m), rc = p2p_count(p, me, m);
        CUDAOK(cudaMalloc((void **)&dsend[p][m], sc * sizeof(float)));
        CUDAOK(cudaMalloc((void **)&drecv[p][m], rc * sizeof(float)));
        fill_input(SN_F32, host, sc, me * 64 + p, salt + m);
        CUDAOK(cudaMemcpy(dsend[p][m], host, sc * sizeof(float), cudaMemcpyHostToDevice));
        CUDAOK(cudaMemset(drecv[p][m], 0xA5, rc * sizeof(float)));
      }
    NCCLOK(ncclGroupStart());
    for (int k = 1; k < n; k++) {
      int to = (me + k) % n, from = (me - k + n) % n;
      for (int m = 0; m < 2; m++) {
        NCCLOK(ncclSend(dsend[to][m], p2p_count(me, to, m), ncclFloat32, to, comm, st));
        NCCLOK(ncclRecv(drecv[from][m], p2p_count(from, me, m), ncclFloat32, from, comm, st));
      }
    }
    NCCLOK(ncclGroupEnd());
    CUDAOK(cudaStreamSynchronize(st));
    for (int p = 0; p < n; p++)
      for (int m = 0; m < 2 && p != me; m++) {
        size_t rc = p2p_count(p, me, m);
        CUDAOK(cudaMemcpy(host, drecv[p][m], rc * sizeof(float), cudaMemcpyDeviceToHost));
        p2p_check("grouped", me, p, m, host, rc, salt);
        CUDAOK(cudaFree(dsend[p][m]));
        CUDAOK(cudaFree(drecv[p][m]));
      }
    /* 2. lone Send/Recv (outside a group), rank r -> r + 1: even ranks send first, odd ones
     * receive first (n even, so the chain closes) */
    if (n % 2 == 0) {
      int to = (me + 1) % n, from = (me - 1 + n) % n;
      size_t cnt = P2P_MAXC - (size_t)round;
      float *ds, *dr;
      CUDAOK(cudaMalloc((void **)&ds, cnt * sizeof(float)));
      CUDAOK(cudaMalloc((void **)&dr, cnt * sizeof(float)));
      fill_input(SN_F32, host, cnt, me * 64 + to, salt + 5);
      CUDAOK(cudaMemcpy(ds, host, cnt * sizeof(float), cudaMemcpyHostToDevice));
      for (int step = 0; step < 2; step++) {
        if ((me % 2 == 0) == (step == 0)) NCCLOK(ncclSend(ds, cnt, ncclFloat32, to, comm, st));
        else NCCLOK(ncclRecv(dr, cnt, ncclFloat32, from, comm, st));
        CUDAOK(cudaStreamSynchronize(st));
      }
      CUDAOK(cudaMemcpy(host, dr, cnt * sizeof(float), cudaMemcpyDeviceToHost));
      p2p_check("lone", me, from, 5, host, cnt, salt);
      CUDAOK(cudaFree(ds));
      CUDAOK(cudaFree(dr));
    }
  }
  NCCLOK(ncclCommDestroy(comm));
  free(host);
}

/* abort while pairwise transfers wait: rank 0 waits for data from rank 1 (pair connected by a
 * first exchange) and for the set-up with rank 3 (which never calls a transfer); the others
 * abort after 1.5 s, which must release rank 0's stream with ncclRemoteError */
static void rank_p2p_abort(struct rank_ctx *c) {
  int me = c->rank;
  ncclComm_t comm;
  NCCLOK(ncclCommInitRank(&comm, c->nranks, c->id, me));
  cudaStream_t st;
  CUDAOK(cudaStreamCreate(&st));
  float *d;
  CUDAOK(cudaMalloc((void **)&d, 2000 * sizeof(float)));
  if (me < 2) {
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclSend(d, 1000, ncclFloat32, 1 - me, comm, st));
    NCCLOK(ncclRecv(d + 1000, 1000, ncclFloat32, 1 - me, comm, st));
    NCCLOK(ncclGroupEnd());
    CUDAOK(cudaStreamSynchronize(st));
  }
  if (me == 0) {
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclRecv(d, 1000, ncclFloat32, 1, comm, st));
    NCCLOK(ncclSend(d + 1000, 1000, ncclFloat32, 3, comm, st));
    NCCLOK(ncclGroupEnd());
    double t0 = now_s();
    CUDAOK(cudaStreamSynchronize(st));   /* released by rank 1's abort */
    ncclResult_t ae = ncclSuccess;
    NCCLOK(ncclCommGetAsyncError(comm, &ae));
    CHECK(ae == ncclRemoteError, "async error %d", ae);
    CHECK(now_s() - t0 > 0.1, "rank 0's transfers ended before the abort (%.3fs)", now_s() - t0);
  } else {
    /* ranks 1-3 abort (rank 1's abort first, or all together); 1.5 s leaves rank 0 time to
     * finish its first exchange and enqueue the second even on a loaded machine (an abort
     * before that makes its calls fail at once, which is not what this case checks) */
    usleep(1500000);
  }
  NCCLOK(ncclCommAbort(comm));
  cudaFree(d);
}

static int run_p2p(const char *what, int n, const char *const *hosts, int nhosts, const char *fail_odd) {
  struct p2pplan pl = {fail_odd};
  double t0 = now_s();
  int bad = run_ranks(n, hosts, nhosts, rank_p2p, &pl, NULL, 100);
  printf("%-44s nranks %d: %s (%.2fs)\n", what, n, bad ? "FAIL" : "ok", now_s() - t0);
  return bad;
}

static const int all_colls[] = {C_ALLREDUCE, C_REDUCE, C_REDUCESCATTER, C_ALLGATHER, C_BROADCAST, C_ALLTOALL, C_GATHER, C_SCATTER};
static const int all_types[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const int all_ops[] = {0, 1, 2, 3, 4, 5, 6};

static int run(const char *what, int n, const char *const *hosts, int nhosts, const struct plan *pl) {
  g_hosts = hosts; g_nhosts = nhosts;
  double t0 = now_s();
  int bad = run_ranks(n, hosts, nhosts, rank_main, (void *)pl, NULL, 100);
  printf("%-44s nranks %d: %s (%.2fs)\n", what, n, bad ? "FAIL" : "ok", now_s() - t0);
  return bad;
}

int main(void) {
  int bad = 0;
  static const char *const h2[] = {"hostA", "hostB"};
  static const char *const h4[] = {"node0", "node1", "node2", "node3"};
  static const char *const h3[] = {"h1", "h1", "h2"};
  const size_t counts_full[] = {1, 7, 1023};
  struct plan full = {C_N, all_colls, 12, all_types, O_N, all_ops, 3, counts_full};
  /* every collective x datatype x op, 4 ranks on 2 hosts: ring 0 2 1 3 */
  bad += run("full matrix (2 hosts)", 4, h2, 2, &full);
  /* 1 rank */
  const size_t c1[] = {1, 7};
  struct plan one = {C_N, all_colls, 12, all_types, O_N, all_ops, 2, c1};
  bad += run("full matrix, single rank", 1, NULL, 1, &one);
  /* 3 ranks, 2 hosts with 2+1 ranks; 2 ranks */
  const int t3[] = {SN_F32, SN_F16, SN_BF16, SN_INT32, SN_F8E4M3};
  const int o3[] = {0, 4, 5};
  const size_t c3[] = {7, 1023};
  struct plan p3 = {C_N, all_colls, 5, t3, 3, o3, 2, c3};
  bad += run("subset (hosts h1 h1 h2)", 3, h3, 3, &p3);
  bad += run("subset (one host)", 2, NULL, 1, &p3);
  /* 8 ranks on 4 hosts: ring 0 4 1 5 2 6 3 7 */
  const int t8[] = {SN_F32, SN_BF16, SN_INT64};
  const int o8[] = {0, 2, 4};
  const size_t c8[] = {1, 1023};
  struct plan p8 = {C_N, all_colls, 3, t8, 3, o8, 2, c8};
  bad += run("subset (4 hosts)", 8, h4, 4, &p8);
  /* large: chunked through the shm slots */
  const int cl[] = {C_ALLREDUCE};
  const int tl[] = {SN_F32};
  const int ol[] = {0};
  const size_t cnt_l[] = {5000011};
  struct plan large = {1, cl, 1, tl, 1, ol, 1, cnt_l};
  bad += run("large fp32 AllReduce 5M", 3, h3, 3, &large);
  const int crs[] = {C_REDUCESCATTER};
  const size_t cnt_rs[] = {1000003};
  struct plan largers = {1, crs, 1, tl, 1, ol, 1, cnt_rs};
  bad += run("large fp32 ReduceScatter 3x1M", 3, h3, 3, &largers);
  const int cb[] = {C_BROADCAST, C_ALLGATHER, C_REDUCE};
  const int tb[] = {SN_BF16};
  const size_t cnt_b[] = {1500007};
  struct plan largeb = {3, cb, 1, tb, 1, ol, 1, cnt_b};
  bad += run("large bf16 Broadcast/AllGather/Reduce 1.5M", 2, h2, 2, &largeb);
  /* large pairwise collectives: several slots per peer */
  const int cp[] = {C_ALLTOALL, C_GATHER, C_SCATTER};
  const size_t cnt_p[] = {300007};
  struct plan largep = {3, cp, 1, tl, 1, ol, 1, cnt_p};
  bad += run("large fp32 AlltoAll/Gather/Scatter 300K", 4, h2, 2, &largep);
  /* Send/Recv between hosts */
  bad += run_p2p("Send/Recv (2 hosts)", 4, h2, 2, NULL);
  bad += run_p2p("Send/Recv (hosts h1 h1 h2)", 3, h3, 3, NULL);
  bad += run_p2p("Send/Recv (4 hosts)", 8, h4, 4, NULL);
  bad += run_p2p("Send/Recv, odd ranks' connect failing", 4, h2, 2, "connect");
  bad += run_p2p("Send/Recv, odd ranks' plugin init failing", 4, h2, 2, "init");
  {
    double t0 = now_s();
    int rc = run_ranks(4, h2, 2, rank_p2p_abort, NULL, NULL, 30);
    printf("%-44s nranks 4: %s (%.2fs)\n", "Send/Recv waits released by an abort", rc ? "FAIL" : "ok", now_s() - t0);
    bad += rc;
  }
  printf("%s\n", bad ? "FAILED" : "all passed");
  return bad ? 1 : 0;
}
