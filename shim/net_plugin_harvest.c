/* shim/net_plugin_harvest.c: the net plugin wrapper's harvest side: every
 * COLLSCOPE_FLUSH_MS, at close and at exit the harvest thread turns each connection's
 * counters (shim/net_plugin.c) into a struct cs_link_record, handed on as a CS_REC_LINK record. */
#include "net_plugin_internal.h"
#include <string.h>

#define conns cs_net_conns

/* Gbit/s at the middle of a bucket */
static double bucket_gbps(int b) {
  if (b <= 0) return 0;
  int m = (b - 1) / 4, sub = (b - 1) % 4;
  double lo = (double)(1ull << m) * (1.0 + sub / 4.0), hi = (double)(1ull << m) * (1.0 + (sub + 1) / 4.0);
  return (lo + hi) / 2 * 8.0 / 1000.0;
}

static double hist_quantile(const uint64_t *h, uint64_t total, double q) {
  if (!total) return 0;
  uint64_t want = (uint64_t)((double)total * q), acc = 0;
  for (int b = 0; b < NHIST; b++) {
    acc += h[b];
    if (acc > want) return bucket_gbps(b);
  }
  return bucket_gbps(NHIST - 1);
}

size_t cs_net_collect(bool final, void (*emit)(const struct cs_record *r)) {
  size_t n = 0;
  int64_t now = cs_now_ns(CLOCK_MONOTONIC), period = (int64_t)cs_cfg.flush_ms * 1000000LL;
  for (int i = 0; i < NCONN; i++) {
    struct wconn *c = &conns[i];
    int st = atomic_load_explicit(&c->state, memory_order_acquire);
    if (st < 2) continue;
    uint64_t msgs = atomic_load_explicit(&c->msgs, memory_order_relaxed);
    bool closed = st == 3;
    if (!closed && !final && (msgs == c->l_msgs || now - c->l_emit_mono < period)) continue;
    if (msgs != c->l_msgs || closed) {
      uint64_t bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed);
      uint64_t busy = atomic_load_explicit(&c->busy_ns, memory_order_relaxed);
      uint64_t h[NHIST], tot = 0;
      for (int b = 0; b < NHIST; b++) {
        uint64_t v = atomic_load_explicit(&c->hist[b], memory_order_relaxed);
        h[b] = v - c->l_hist[b];
        c->l_hist[b] = v;
        tot += h[b];
      }
      struct cs_link_record l = {
          .recv = c->dir != 0,
          .closed = closed,
          .rank = cs_cfg.rank,
          .peer = c->peer_rank,
          .dev = c->dev,
          .token = c->token,
          .msgs = msgs - c->l_msgs,
          .bytes = bytes - c->l_bytes,
          .busy_ns = busy - c->l_busy,
          .max_inflight = (uint64_t)atomic_load_explicit(&c->max_inflight, memory_order_relaxed),
      };
      int64_t real = cs_now_ns(CLOCK_REALTIME);
      l.t0_ns = c->l_emit_real;
      l.t_ns = real;
      l.gbps_p50 = hist_quantile(h, tot, 0.5);
      l.gbps_p10 = hist_quantile(h, tot, 0.1);
      l.gbps_mean = l.busy_ns ? (double)l.bytes * 8.0 / (double)l.busy_ns : 0;
      struct cs_record r;
      cs_link_pack(&l, &r);
      c->l_msgs = msgs;
      c->l_bytes = bytes;
      c->l_busy = busy;
      c->l_emit_mono = now;
      c->l_emit_real = real;
      emit(&r);
      n++;
    }
    if (closed) atomic_store_explicit(&c->state, 0, memory_order_release);
  }
  return n;
}
