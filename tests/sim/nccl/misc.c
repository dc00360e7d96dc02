/* tests/sim/nccl/misc.c: NCCL_DEBUG logging, last-error text, fault list parsing
 * (COLLSCOPE_SIM_FAULTS), the topology map (COLLSCOPE_SIM_TOPOLOGY) and the per-link byte
 * counters written at exit (COLLSCOPE_SIM_LINKSTATS). */
#include "simnccl.h"
#include "../nvml/simhealth.h"
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------------------------------------------------------------- debug output */
int sn_debug_level;
static char last_error[1024];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void debug_read_env(void) {
  const char *e = getenv("NCCL_DEBUG");
  sn_debug_level = 0;
  if (!e) return;
  if (!strcasecmp(e, "WARN")) sn_debug_level = 1;
  else if (!strcasecmp(e, "INFO") || !strcasecmp(e, "TRACE")) sn_debug_level = 2;
  else if (!strcasecmp(e, "VERSION")) sn_debug_level = 0;
}
void sn_debug_init(void) { pthread_once(&debug_once, debug_read_env); }

static void vlog(int level, int dev, const char *fmt, va_list ap) {
  char msg[900];
  vsnprintf(msg, sizeof msg, fmt, ap);
  sn_debug_init();
  pthread_mutex_lock(&log_mu);
  if (level == 1) snprintf(last_error, sizeof last_error, "%s", msg);
  if (sn_debug_level >= level) {
    fprintf(stdout, "%s:%d:%d [%d] NCCL %s %s\n", simcuda_hostname(), (int)getpid(),
            (int)syscall(SYS_gettid), dev, level == 1 ? "WARN" : "INFO", msg);
    fflush(stdout);
  }
  pthread_mutex_unlock(&log_mu);
}
void sn_warn(int dev, const char *fmt, ...) { va_list ap; va_start(ap, fmt); vlog(1, dev, fmt, ap); va_end(ap); }
void sn_info(int dev, const char *fmt, ...) { va_list ap; va_start(ap, fmt); vlog(2, dev, fmt, ap); va_end(ap); }

SN_API const char *pncclGetLastError(ncclComm_t comm) {
  (void)comm;   /* like NCCL: comm is unused */
  return last_error;
}
SN_ALIAS(ncclGetLastError)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
SN_API void pncclResetDebugInit(void) {
  pthread_mutex_lock(&log_mu);
  debug_read_env();
  pthread_mutex_unlock(&log_mu);
}
SN_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop

/* ---------------------------------------------------------------- faults */
struct sn_fault *sn_faults;
int sn_nfaults;
static pthread_once_t faults_once = PTHREAD_ONCE_INIT;

static int parse_code(const char *v) {
  static const char *names[] = {"Success", "UnhandledCudaError", "SystemError", "InternalError",
                                "InvalidArgument", "InvalidUsage", "RemoteError", "InProgress"};
  if (!strncmp(v, "nccl", 4)) v += 4;
  for (int i = 0; i < 8; i++) if (!strcmp(v, names[i])) return i;
  char *end;
  long x = strtol(v, &end, 10);
  if (*v && !*end && x > 0 && x < ncclNumResults) return (int)x;
  return -1;
}

/* Fault forms reuse fields of struct sn_fault (simnccl.h) that their kind does not
 * otherwise use:
 *  - `slow:rank=R,pct=P` and `nic:host=H,pct=P`: us = 0, elem = P in thousandths of a percent
 *    (coll.c: slow_pct_us; sn_link_delay_us);
 *  - `nic:host=H`: the host in a;
 *  - `stall:rank=R,seq=S`: kind SN_F_HANG with at_hop = 1 (the host thread blocks inside
 *    the call before enqueuing anything; coll.c: enqueue);
 *  - `gpuhang:rank=R,seq=S`: kind SN_F_HANG with gpu = 1 (the GPU hangs in the first work its
 *    stream runs after seq S - 1's item and its end event; coll.c: gpu_hang). */
static int parse_entry(char *ent, struct sn_fault *f, const char **why) {
  char *colon = strchr(ent, ':');
  *why = "expected kind:key=value,...";
  if (!colon) return -1;
  *colon = 0;
  memset(f, 0, sizeof *f);
  f->rank = -1; f->seq = -1; f->comm = 0; f->bit = -1; f->code = -1;
  int have_us = 0, have_elem = 0, have_at = 0, have_pct = 0, have_every = 0;
  if (!strcmp(ent, "slow")) f->kind = SN_F_SLOW;
  else if (!strcmp(ent, "link")) f->kind = SN_F_LINK;
  else if (!strcmp(ent, "flip")) f->kind = SN_F_FLIP;
  else if (!strcmp(ent, "hang")) f->kind = SN_F_HANG;
  else if (!strcmp(ent, "stall")) { f->kind = SN_F_HANG; f->at_hop = 1; }
  else if (!strcmp(ent, "gpuhang")) { f->kind = SN_F_HANG; f->gpu = 1; }
  else if (!strcmp(ent, "fail")) f->kind = SN_F_FAIL;
  else if (!strcmp(ent, "hostdelay")) f->kind = SN_F_HOSTDELAY;   /* applied by libcuda.so.1 (cuda/model.c) */
  else if (!strcmp(ent, "jitter")) f->kind = SN_F_JITTER;   /* applied by libcuda.so.1 (cuda/model.c) */
  else if (!strcmp(ent, "nic")) f->kind = SN_F_NIC;
  else { *why = "unknown kind"; return -1; }
  char *save = NULL;
  for (char *kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq || eq == kv || !eq[1]) { *why = "expected key=value"; return -1; }
    *eq = 0;
    const char *k = kv, *v = eq + 1;
    char *end = NULL;
    long long num = strtoll(v, &end, 10);
    int isnum = *end == 0;
    if (!strcmp(k, "rank") && isnum && num >= 0) f->rank = (int)num;
    else if (!strcmp(k, "seq") && isnum && num >= 0) f->seq = num;
    else if (!strcmp(k, "comm") && isnum && num >= 0) f->comm = (int)num;
    else if (!strcmp(k, "us") && isnum && num >= 0 && num < 100000000) { f->us = (unsigned)num; have_us = 1; }
    else if ((!strcmp(k, "pct") || !strcmp(k, "tail")) && f->kind == SN_F_JITTER) {
      double x = strtod(v, &end);
      int tail = !strcmp(k, "tail");
      if (*end || end == v || !(x >= 0 && x <= (tail ? 1000 : 99))) {
        *why = tail ? "tail: expected 0 <= T <= 1000" : "pct: expected 0 <= P <= 99";
        return -1;
      }
      have_pct |= !tail;
    }
    else if (!strcmp(k, "from") && isnum && num >= 0 && f->kind != SN_F_JITTER) f->from = num;
    else if (!strcmp(k, "until") && isnum && num >= 1 && f->kind == SN_F_SLOW) f->until = num;
    else if (!strcmp(k, "every") && isnum && num >= 1 && num <= 1000000 && (f->kind == SN_F_SLOW || f->kind == SN_F_HOSTDELAY)) {
      f->every = num;
      have_every = 1;
    }
    else if (!strcmp(k, "compute") && f->kind == SN_F_SLOW) {   /* applied by libcuda.so.1 (cuda/model.c) */
      double x = strtod(v, &end);
      if (*end || end == v || !(x > 0 && x <= 1000)) { *why = "compute: expected 0 < P <= 1000"; return -1; }
      f->compute = 1;
    }
    else if (!strcmp(k, "host") && f->kind == SN_F_NIC && strlen(v) < sizeof f->a) strcpy(f->a, v);
    else if (!strcmp(k, "pct") && (f->kind == SN_F_SLOW || f->kind == SN_F_NIC)) {
      double x = strtod(v, &end);
      if (*end || end == v || !(x > 0 && x <= 1000)) { *why = "pct: expected 0 < P <= 1000"; return -1; }
      f->elem = (unsigned long long)(x * 1000 + 0.5);
      have_pct = 1;
    }
    else if (!strcmp(k, "elem") && f->kind != SN_F_SLOW && isnum && num >= 0) { f->elem = (unsigned long long)num; have_elem = 1; }
    else if (!strcmp(k, "bit") && isnum && num >= 0 && num < 64) f->bit = (int)num;
    else if (!strcmp(k, "at") && (!strcmp(v, "out") || !strcmp(v, "hop"))) { f->at_hop = !strcmp(v, "hop"); have_at = 1; }
    else if (!strcmp(k, "a") && strlen(v) < sizeof f->a) strcpy(f->a, v);
    else if (!strcmp(k, "b") && strlen(v) < sizeof f->b) strcpy(f->b, v);
    else if (!strcmp(k, "code") && (f->code = parse_code(v)) >= 0) {}
    else { *why = "bad key or value"; return -1; }
  }
  switch (f->kind) {
  case SN_F_SLOW:
    if (f->rank < 0 || have_us + have_pct + f->compute != 1) {
      *why = "slow needs rank and one of us, pct, compute"; return -1;
    }
    if (have_every && f->compute) { *why = "slow: every applies to us and pct"; return -1; }
    break;
  case SN_F_NIC:
    if (!f->a[0] || have_us == have_pct) { *why = "nic needs host and one of us, pct"; return -1; }
    break;
  case SN_F_LINK: if (!f->a[0] || !f->b[0] || !have_us) { *why = "link needs a, b and us"; return -1; } break;
  case SN_F_FLIP:
    if (f->rank < 0 || f->seq < 0 || !have_elem || f->bit < 0 || !have_at) {
      *why = "flip needs rank, seq, elem, bit and at=out|hop"; return -1;
    }
    break;
  case SN_F_HANG:
    if (f->rank < 0 || f->seq < 0) { *why = "hang/stall needs rank and seq"; return -1; }
    if (f->gpu && f->seq < 1) { *why = "gpuhang needs seq >= 1 (it hangs after seq - 1)"; return -1; }
    break;
  case SN_F_FAIL: if (f->rank < 0 || f->seq < 0 || f->code < 0) { *why = "fail needs rank, seq and code"; return -1; } break;
  case SN_F_HOSTDELAY:
    if (f->rank < 0 || !have_us || f->seq >= 0) { *why = "hostdelay takes rank and us"; return -1; }
    break;
  case SN_F_JITTER: if (!have_pct) { *why = "jitter needs pct"; return -1; } break;
  }
  return 0;
}

static void faults_parse(void) {
  const char *env = getenv("COLLSCOPE_SIM_FAULTS");
  if (!env || !*env) return;
  char *dup = strdup(env);
  if (!dup) return;
  int cap = 1;
  for (const char *p = env; *p; p++) cap += *p == ';';
  sn_faults = calloc((size_t)cap, sizeof *sn_faults);
  char *save = NULL;
  for (char *ent = strtok_r(dup, ";", &save); ent && sn_faults; ent = strtok_r(NULL, ";", &save)) {
    while (isspace((unsigned char)*ent)) ent++;
    if (!*ent) continue;
    char orig[256];
    snprintf(orig, sizeof orig, "%s", ent);
    const char *why;
    size_t klen = strcspn(ent, ":");
    if (ent[klen] == ':' && sh_is_health_kind(ent, klen)) continue;   /* tests/sim/nvml/simhealth.c */
    if (parse_entry(ent, &sn_faults[sn_nfaults], &why) == 0) sn_nfaults++;
    else fprintf(stderr, "collscope-sim: COLLSCOPE_SIM_FAULTS: ignoring bad entry '%s' (%s)\n", orig, why);
  }
  free(dup);
}
void sn_faults_init(void) { pthread_once(&faults_once, faults_parse); }

/* a link fault's host: a name, or `*` for any host (also the same host) */
static int host_is(const char *pat, const char *h) { return !strcmp(pat, "*") || !strcmp(pat, h); }

/* seq < 0: a transfer outside any collective's count (every onset has passed) */
unsigned sn_link_delay_us(const char *ha, const char *hb, long long seq, double *bw_scale) {
  unsigned us = 0;
  sn_faults_init();
  for (int i = 0; i < sn_nfaults; i++) {
    struct sn_fault *f = &sn_faults[i];
    if (f->kind != SN_F_LINK && f->kind != SN_F_NIC) continue;
    if (seq >= 0 && !sn_fault_on(f, seq)) continue;
    if (f->kind == SN_F_LINK) {
      if ((host_is(f->a, ha) && host_is(f->b, hb)) || (host_is(f->a, hb) && host_is(f->b, ha))) us += f->us;
      continue;
    }
    /* nic: every inter-host edge with one end on the host (its NIC carries them all) */
    if (strcmp(ha, hb) && (!strcmp(f->a, ha) || !strcmp(f->a, hb))) {
      us += f->us;
      if (f->elem && bw_scale) *bw_scale /= 1.0 + (double)f->elem / 100000.0;
    }
  }
  return us;
}

/* ---------------------------------------------------------------- topology map */
struct leafent { char host[64], leaf[64]; };
static struct leafent *leaves;
static int nleaves;
static pthread_once_t topo_once = PTHREAD_ONCE_INIT;

static void topo_load(void) {
  const char *path = getenv("COLLSCOPE_SIM_TOPOLOGY");
  if (!path || !*path) return;
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[512];
  int cap = 0;
  while (fgets(line, sizeof line, f)) {
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char host[64], leaf[64];
    if (sscanf(line, "%63s %63s", host, leaf) != 2) continue;
    if (nleaves == cap) {
      cap = cap ? cap * 2 : 16;
      struct leafent *n = realloc(leaves, (size_t)cap * sizeof *n);
      if (!n) break;
      leaves = n;
    }
    strcpy(leaves[nleaves].host, host);
    strcpy(leaves[nleaves].leaf, leaf);
    nleaves++;
  }
  fclose(f);
}
static const char *leaf_of(const char *h) {
  for (int i = 0; i < nleaves; i++) if (!strcmp(leaves[i].host, h)) return leaves[i].leaf;
  return NULL;
}
const char *sn_leaf_of(const char *host) {
  pthread_once(&topo_once, topo_load);
  return leaf_of(host);
}
int sn_leaf_hosts(const char *leaf) {
  pthread_once(&topo_once, topo_load);
  int n = 0;
  for (int i = 0; i < nleaves; i++) n += !strcmp(leaves[i].leaf, leaf);
  return n;
}
int sn_link_class(const char *ha, const char *hb) {
  pthread_once(&topo_once, topo_load);
  if (!strcmp(ha, hb)) return 0;
  const char *la = leaf_of(ha), *lb = leaf_of(hb);
  if (la && lb && !strcmp(la, lb)) return 1;
  return 2;
}

/* ---------------------------------------------------------------- link stats */
struct edge { int comm, src, dst; char sh[64], dh[64]; int cls; uint64_t bytes; };
static struct edge *edges;
static int nedges, capedges;
static struct ncclComm *live[256];
static pthread_mutex_t ls_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t ls_once = PTHREAD_ONCE_INIT;
static const char *ls_prefix;

static void fold_locked(struct ncclComm *c) {
  if (!c->sent_bytes) return;
  for (int d = 0; d < c->nranks; d++) {
    uint64_t b = atomic_exchange(&c->sent_bytes[d], 0);
    if (!b) continue;
    const char *sh = c->shm->ranks[c->rank].host, *dh = c->shm->ranks[d].host;
    int i;
    for (i = 0; i < nedges; i++)
      if (edges[i].comm == c->index && edges[i].src == c->rank && edges[i].dst == d &&
          !strcmp(edges[i].sh, sh) && !strcmp(edges[i].dh, dh)) break;
    if (i == nedges) {
      if (nedges == capedges) {
        int nc = capedges ? capedges * 2 : 32;
        struct edge *n = realloc(edges, (size_t)nc * sizeof *n);
        if (!n) return;
        edges = n; capedges = nc;
      }
      memset(&edges[i], 0, sizeof edges[i]);
      edges[i].comm = c->index; edges[i].src = c->rank; edges[i].dst = d;
      snprintf(edges[i].sh, sizeof edges[i].sh, "%s", sh);
      snprintf(edges[i].dh, sizeof edges[i].dh, "%s", dh);
      edges[i].cls = sn_link_class(sh, dh);
      nedges++;
    }
    edges[i].bytes += b;
  }
}

static void ls_write(void) {
  static const char *cls[3] = {"same_host", "same_leaf", "cross_leaf"};
  pthread_mutex_lock(&ls_mu);
  for (int i = 0; i < 256; i++) if (live[i]) fold_locked(live[i]);
  char path[4096];
  snprintf(path, sizeof path, "%s.%d.json", ls_prefix, (int)getpid());
  FILE *f = fopen(path, "w");
  if (f) {
    uint64_t tot[3] = {0, 0, 0};
    for (int i = 0; i < nedges; i++) tot[edges[i].cls] += edges[i].bytes;
    fprintf(f, "{\"pid\":%d,\"host\":\"%s\",\"same_host\":%llu,\"same_leaf\":%llu,\"cross_leaf\":%llu,\"edges\":[",
            (int)getpid(), simcuda_hostname(), (unsigned long long)tot[0], (unsigned long long)tot[1],
            (unsigned long long)tot[2]);
    for (int i = 0; i < nedges; i++)
      fprintf(f, "%s{\"comm\":%d,\"src\":%d,\"dst\":%d,\"src_host\":\"%s\",\"dst_host\":\"%s\",\"class\":\"%s\",\"bytes\":%llu}",
              i ? "," : "", edges[i].comm, edges[i].src, edges[i].dst, edges[i].sh, edges[i].dh,
              cls[edges[i].cls], (unsigned long long)edges[i].bytes);
    fprintf(f, "]}\n");
    fclose(f);
  }
  pthread_mutex_unlock(&ls_mu);
}
static void ls_init(void) {
  ls_prefix = getenv("COLLSCOPE_SIM_LINKSTATS");
  if (ls_prefix && *ls_prefix) atexit(ls_write);
  else ls_prefix = NULL;
}
/* called once per new communicator */
void sn_linkstats_register(void) { pthread_once(&ls_once, ls_init); }
void sn_linkstats_track(struct ncclComm *c, int add) {
  if (!ls_prefix) return;
  pthread_mutex_lock(&ls_mu);
  for (int i = 0; i < 256; i++) {
    if (add && !live[i]) { live[i] = c; break; }
    if (!add && live[i] == c) { live[i] = NULL; fold_locked(c); break; }
  }
  pthread_mutex_unlock(&ls_mu);
}
void sn_linkstats_fold(struct ncclComm *c) { sn_linkstats_track(c, 0); }
