/* hooks/health_ib.c: InfiniBand/RoCE port counters from sysfs, the network half of the
 * health sampler (hooks/health.h). Reads <root>/class/infiniband/<dev>/ports/<port>/
 * counters/, hw_counters/, state and rate; root is COLLSCOPE_SYSFS_ROOT (default /sys; `%h`
 * in it stands for this host's name, for per-host trees in tests). Run by local rank 0 of
 * each host only. Bounded: at most 16 devices x 4 ports, each file read into 64 bytes. The
 * first sample of a port is its baseline; later samples hold deltas. */
#include "hooks/health.h"
#include "stats/core.h"
#include "collscope/ring.h"
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PORTS 64
static const char *const counters[] = {
    "symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_xmit_discards",
    "port_xmit_wait", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
    "port_xmit_data", "port_rcv_data"};
static const char *const hw_counters[] = {"out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled"};
#define NC (sizeof counters / sizeof *counters)
#define NH (sizeof hw_counters / sizeof *hw_counters)

static struct port {
  char dev[32];
  int port;
  bool have[NC + NH];
  unsigned long long base[NC + NH];
} ports[MAX_PORTS];
static int nports = -1; /* -1: not scanned yet */
static char root[1024];

static bool safe_name(const char *s) {
  if (!*s || *s == '.' || strlen(s) >= 32) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
      return false;
  return true;
}

/* a small sysfs file's text (at most 63 bytes), false when absent */
static bool read_small(const char *path, char *out, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  ssize_t n = read(fd, out, cap - 1);
  close(fd);
  if (n <= 0) return false;
  out[n] = 0;
  char *nl = strchr(out, '\n');
  if (nl) *nl = 0;
  return true;
}
static bool read_u64(const char *path, unsigned long long *v) {
  char t[64], *end;
  if (!read_small(path, t, sizeof t)) return false;
  *v = strtoull(t, &end, 10);
  return end != t;
}

static void set_root(void) {
  const char *r = getenv("COLLSCOPE_SYSFS_ROOT");
  if (!r || !*r) r = "/sys";
  size_t n = 0;
  for (const char *p = r; *p && n < sizeof root - 1; p++) {
    if (p[0] == '%' && p[1] == 'h') {
      for (const char *h = cs_cfg.host; *h && n < sizeof root - 1; h++) root[n++] = *h;
      p++;
    } else {
      root[n++] = *p;
    }
  }
  root[n] = 0;
}

static void scan(void) {
  set_root();
  nports = 0;
  char path[1400];
  snprintf(path, sizeof path, "%s/class/infiniband", root);
  DIR *d = opendir(path);
  if (!d) {
    cs_log(CS_LOG_INFO, "health: no %s: InfiniBand ports not sampled", path);
    return;
  }
  struct dirent *e;
  int ndev = 0;
  while ((e = readdir(d)) && ndev < 16) {
    if (!safe_name(e->d_name)) continue;
    ndev++;
    char pp[1500];
    if (snprintf(pp, sizeof pp, "%s/%s/ports", path, e->d_name) >= (int)sizeof pp) continue;
    DIR *pd = opendir(pp);
    if (!pd) continue;
    struct dirent *pe;
    int np = 0;
    while ((pe = readdir(pd)) && np < 4 && nports < MAX_PORTS) {
      char *end;
      long p = strtol(pe->d_name, &end, 10);
      if (*end || end == pe->d_name || p < 0 || p > 255) continue;
      struct port *po = &ports[nports++];
      memset(po, 0, sizeof *po);
      snprintf(po->dev, sizeof po->dev, "%s", e->d_name);
      po->port = (int)p;
      np++;
    }
    closedir(pd);
  }
  closedir(d);
}

/* counters whose rise is an error (not traffic, not congestion) */
static bool is_error_counter(size_t k) {
  return k <= 4 || k == 6 || k == 7 || k == NC || k == NC + 1;
}

bool cs_health_ib_sample(struct cs_strbuf *b, bool *errors, struct cs_ring_health_vals *hv) {
  if (nports < 0) scan();
  if (nports == 0) return false;
  _Static_assert(NC + NH == CS_RING_IB_COUNTERS, "the ring's IB counters are these");
  hv->valid |= CS_RH_IB;
  hv->nib = (uint64_t)(nports < CS_RING_IB_PORTS ? nports : CS_RING_IB_PORTS);
  cs_sb_printf(b, ",\"ib\":[");
  for (int i = 0; i < nports; i++) {
    struct port *po = &ports[i];
    struct cs_ring_ib_port *rp = i < CS_RING_IB_PORTS ? &hv->ib[i] : NULL;
    if (rp) {
      size_t n = strnlen(po->dev, sizeof rp->dev - 1);
      memcpy(rp->dev, po->dev, n);
      rp->dev[n] = 0;
      rp->port = (uint32_t)po->port;
    }
    char dir[1500], f[1700], t[64];
    if (snprintf(dir, sizeof dir, "%s/class/infiniband/%s/ports/%d", root, po->dev, po->port) >= (int)sizeof dir) continue;
    cs_sb_printf(b, "%s{\"dev\":\"%s\",\"port\":%d", i ? "," : "", po->dev, po->port);
    if (snprintf(f, sizeof f, "%s/state", dir) >= (int)sizeof f) continue;
    if (read_small(f, t, sizeof t)) {
      const char *s = strchr(t, ':');
      s = s ? s + 1 : t;
      while (*s == ' ') s++;
      char w[16];
      size_t n = 0;
      for (; s[n] && n < sizeof w - 1 && ((s[n] >= 'A' && s[n] <= 'Z') || s[n] == '_'); n++) w[n] = s[n];
      w[n] = 0;
      cs_sb_printf(b, ",\"state\":\"%s\"", w);
      if (rp) rp->active = strcmp(w, "ACTIVE") == 0;
    }
    if (snprintf(f, sizeof f, "%s/rate", dir) < (int)sizeof f && read_small(f, t, sizeof t)) {
      double gbps = strtod(t, NULL);
      cs_sb_printf(b, ",\"rate_gbps\":%g", gbps);
      if (rp) rp->rate_mbps = gbps > 0 && gbps < 1e7 ? (uint64_t)(gbps * 1000 + 0.5) : 0;
    }
    for (size_t k = 0; k < NC + NH; k++) {
      unsigned long long v;
      if (snprintf(f, sizeof f, "%s/%s/%s", dir, k < NC ? "counters" : "hw_counters", k < NC ? counters[k] : hw_counters[k - NC]) >= (int)sizeof f ||
          !read_u64(f, &v)) continue;
      if (po->have[k]) {
        unsigned long long d = v >= po->base[k] ? v - po->base[k] : v;
        cs_sb_printf(b, ",\"%s\":%llu", k < NC ? counters[k] : hw_counters[k - NC], d);
        if (d && is_error_counter(k)) *errors = true;
        if (rp) rp->c[k] += d;
      }
      po->have[k] = true;
      po->base[k] = v;
    }
    cs_sb_printf(b, "}");
  }
  cs_sb_printf(b, "]");
  return true;
}
