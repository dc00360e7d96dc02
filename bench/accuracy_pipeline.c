/* bench/accuracy_pipeline.c: the in-process accuracy driver's 1F1B step (bench/accuracy_driver.h
 * pipeline_step): every stage's passes and grouped Sends and Recvs in the order
 * tests/apps/megatron_pp.c issues them, after Megatron-LM's
 * forward_backward_pipelining_without_interleaving (commit d98e8a64ddf3,
 * megatron/core/pipeline_parallel/schedules.py:2147): warm-up forwards min(P - s - 1, M)
 * (:2276-2279), each a recv_forward, the forward, a send_forward; a recv_forward before the
 * steady state; per steady microbatch the forward, send_forward_recv_backward (:2416), the
 * backward, send_backward_recv_forward (:2446) or, the last, send_backward; the cool-down's
 * recv_backward, backward, send_backward (:2450). Each call is one group
 * (p2p_communication.py:22-57 _batched_p2p_ops: send_prev, recv_prev, send_next, recv_next).
 *
 * Timing on the modeled clock: a group starts at its rank's stream time and posts its ops
 * there; the k-th Send from a to b meets the k-th Recv at b from a (NCCL 2.28.9 queues each
 * peer's ops in call order, src/enqueue.cc:2406-2408), each op ends at the later of the two
 * posts plus its cost, and the group at its last op. A stage blocked on a peer that has not
 * posted yet waits while the other stages run on, so a stage's fill and drain are the time
 * its neighbours take, and a slow stage delays the others through its Sends. A pass: the
 * compute of the stage's two tensor ranks, then their AllReduce. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accuracy_driver.h"

enum act_kind { A_FWD,
                A_BWD,
                A_GROUP };
enum { SEND_PREV = 1,
       RECV_PREV = 2,
       SEND_NEXT = 4,
       RECV_NEXT = 8 };

struct act {
  enum act_kind kind;
  int ops; /* A_GROUP: SEND_PREV | RECV_PREV | SEND_NEXT | RECV_NEXT, issued in that order */
};

/* a group of the ops `ops` appended at a[n] unless empty; the new length */
static int group(struct act *a, int n, int ops) {
  if (ops) a[n++] = (struct act){A_GROUP, ops};
  return n;
}

/* stage s's program for one step into a (room for 6 M + 2: 3 entries a warm-up forward and a cool-down backward, 4 a steady microbatch, 1 more); returns its length */
static int program(int P, int M, int s, struct act *a) {
  int first = s == 0, last = s == P - 1, n = 0;
  int warm = P - s - 1 < M ? P - s - 1 : M, rest = M - warm;
  for (int i = 0; i < warm; i++) {
    n = group(a, n, first ? 0 : RECV_PREV); /* recv_forward */
    a[n++] = (struct act){A_FWD, 0};
    n = group(a, n, last ? 0 : SEND_NEXT); /* send_forward */
  }
  if (rest > 0) n = group(a, n, first ? 0 : RECV_PREV);
  for (int i = 0; i < rest; i++) {
    a[n++] = (struct act){A_FWD, 0};
    n = group(a, n, last ? 0 : SEND_NEXT | RECV_NEXT); /* send_forward_recv_backward */
    a[n++] = (struct act){A_BWD, 0};
    if (i == rest - 1)
      n = group(a, n, first ? 0 : SEND_PREV); /* send_backward */
    else
      n = group(a, n, first ? 0 : SEND_PREV | RECV_PREV); /* send_backward_recv_forward */
  }
  for (int i = 0; i < warm; i++) {
    n = group(a, n, last ? 0 : RECV_NEXT); /* recv_backward */
    a[n++] = (struct act){A_BWD, 0};
    n = group(a, n, first ? 0 : SEND_PREV); /* send_backward */
  }
  return n;
}

/* one direction of one stage boundary of one replica: the posts of its Sends and its Recvs,
 * per tensor index, in call order */
struct lane {
  int ns, nr;
  double *send[2], *recv[2]; /* [t][k]: the k-th post's stream time, M of each */
};

struct run {
  const struct pipeline *p;
  int d;
  struct lane *ln; /* [(b * 2 + dir)]: boundary b between stages b and b + 1; dir 0 forward, 1 back */
};

/* the op bit's lane, its side and its peer stage, for stage s */
static struct lane *lane_of(const struct run *R, int s, int bit, bool *send, int *peer) {
  int b = bit == SEND_PREV || bit == RECV_PREV ? s - 1 : s;
  *send = bit == SEND_PREV || bit == SEND_NEXT;
  *peer = bit == SEND_PREV || bit == RECV_PREV ? s - 1 : s + 1;
  int dir = bit == SEND_NEXT || bit == RECV_PREV ? 0 : 1; /* activations forward, gradients back */
  return &R->ln[b * 2 + dir];
}

/* post stage s's group: each op's index k in its lane (into k[]) and its post time */
static void post(const struct run *R, int s, int ops, int *k) {
  const struct pipeline *p = R->p;
  for (int i = 0, bit = 1; bit <= RECV_NEXT; bit <<= 1, i++) {
    if (!(ops & bit)) continue;
    bool send;
    int peer;
    struct lane *l = lane_of(R, s, bit, &send, &peer);
    k[i] = send ? l->ns++ : l->nr++;
    for (int t = 0; t < 2; t++) {
      double at = *stream_t(0, p->pc[R->d * 2 + t]->m[s]);
      (send ? l->send : l->recv)[t][k[i]] = at;
    }
  }
}

/* every op of the posted group has its match posted */
static bool matched(const struct run *R, int s, int ops, const int *k) {
  for (int i = 0, bit = 1; bit <= RECV_NEXT; bit <<= 1, i++) {
    if (!(ops & bit)) continue;
    bool send;
    int peer;
    struct lane *l = lane_of(R, s, bit, &send, &peer);
    if ((send ? l->nr : l->ns) <= k[i]) return false;
  }
  return true;
}

/* run the posted, matched group of stage s on both of its tensor ranks */
static void run_group(const struct run *R, int s, int ops, const int *k) {
  const struct pipeline *p = R->p;
  for (int t = 0; t < 2; t++) {
    struct comm *c = p->pc[R->d * 2 + t];
    double *clock = stream_t(0, c->m[s]), st = *clock, en = st;
    struct p2p_op o[4];
    int n = 0;
    for (int i = 0, bit = 1; bit <= RECV_NEXT; bit <<= 1, i++) {
      if (!(ops & bit)) continue;
      bool send;
      int peer;
      struct lane *l = lane_of(R, s, bit, &send, &peer);
      double other = (send ? l->recv : l->send)[t][k[i]];
      double e = (other > st ? other : st) + p2p_cost_us(c, s, peer, p->bytes);
      if (e > en) en = e;
      o[n++] = (struct p2p_op){peer, send};
    }
    *clock = en;
    p2p_span(c, s, o, n, st, en);
  }
}

static void run_pass(const struct run *R, int s, bool fwd) {
  struct comm *c = R->p->tp[s * R->p->dp + R->d];
  for (int k = 0; k < c->n; k++) compute(c->m[k], fwd ? R->p->fwd_us : R->p->bwd_us);
  collective(c, SN_COST_ALLREDUCE, R->p->bytes);
}

void pipeline_step(const struct pipeline *p) {
  int P = p->pp, M = p->M, cap = 6 * M + 2;
  struct act *a = malloc((size_t)(P * cap) * sizeof *a);
  int *len = calloc((size_t)P, sizeof *len), *pc = calloc((size_t)P, sizeof *pc), *k = calloc((size_t)P * 4, sizeof *k);
  bool *posted = calloc((size_t)P, sizeof *posted);
  struct lane *ln = calloc((size_t)(P * 2), sizeof *ln);
  double *q = malloc((size_t)(P * 2 * 4 * M) * sizeof *q);
  if (!a || !len || !pc || !k || !posted || !ln || !q) exit(2);
  for (int s = 0; s < P; s++) len[s] = program(P, M, s, a + s * cap);
  for (int i = 0; i < P * 2; i++)
    for (int t = 0; t < 2; t++) ln[i].send[t] = q + ((size_t)i * 4 + (size_t)t) * (size_t)M, ln[i].recv[t] = ln[i].send[t] + 2 * M;
  for (int d = 0; d < p->dp && !W.hung; d++) {
    struct run R = {p, d, ln};
    for (int i = 0; i < P * 2; i++) ln[i].ns = ln[i].nr = 0;
    memset(pc, 0, (size_t)P * sizeof *pc);
    memset(posted, 0, (size_t)P * sizeof *posted);
    for (bool moved = true; moved && !W.hung;) {
      moved = false;
      for (int s = 0; s < P && !W.hung; s++)
        while (pc[s] < len[s] && !W.hung) {
          const struct act *x = &a[s * cap + pc[s]];
          if (x->kind != A_GROUP) {
            run_pass(&R, s, x->kind == A_FWD);
          } else {
            if (!posted[s]) post(&R, s, x->ops, k + 4 * s), posted[s] = moved = true;
            if (!matched(&R, s, x->ops, k + 4 * s)) break;
            run_group(&R, s, x->ops, k + 4 * s);
            posted[s] = false;
          }
          pc[s]++;
          moved = true;
        }
    }
    for (int s = 0; s < P && !W.hung; s++)
      if (pc[s] < len[s]) { /* a schedule whose ops never meet: a bug here */
        fprintf(stderr, "accuracy_driver: pipeline stage %d stuck at its op %d of %d\n", s, pc[s], len[s]);
        exit(3);
      }
  }
  free(a), free(len), free(pc), free(k), free(posted), free(ln), free(q);
}
