/* tests/sim/nvml/simhealth.c: parser of the simulator's health faults and GPU models
 * (simhealth.h). Same conventions as the NCCL simulator's fault list (tests/sim/nccl/misc.c):
 * `;`-separated `kind:key=value,...` entries, a bad entry is named on stderr and skipped. */
#include "simhealth.h"
#include "collscope/hostlist.h"
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sh_fault *sh_faults;
int sh_nfaults;

struct sh_model { char **hosts; size_t nhosts; char name[96]; double speed; };
static struct sh_model *models;
static int nmodels;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static double ramp_ms = 1000;

static const char *const kinds[] = {"throttle", "ecc", "xid", "remap", "nvlink", "ib"};

int sh_is_health_kind(const char *kind, size_t len) {
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (strlen(kinds[i]) == len && !strncmp(kinds[i], kind, len)) return 1;
  return 0;
}

static int num(const char *v, long long *out) {
  char *end;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || x < 0) return 0;
  *out = x;
  return 1;
}

/* 0 parsed, 1 not a health kind, -1 bad (why set) */
static int parse_entry(char *ent, struct sh_fault *f, const char **why) {
  char *colon = strchr(ent, ':');
  *why = "expected kind:key=value,...";
  if (!colon) return 1;
  if (!sh_is_health_kind(ent, (size_t)(colon - ent))) return 1;
  *colon = 0;
  memset(f, 0, sizeof *f);
  f->rank = -1; f->seq = -1; f->until = -1; f->port = 1; f->link = -1; f->reason = -1; f->code = -1;
  for (int i = 0; i < 6; i++) if (!strcmp(ent, kinds[i])) f->kind = (enum sh_kind)i;
  char *save = NULL;
  for (char *kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq || eq == kv || !eq[1]) { *why = "expected key=value"; return -1; }
    *eq = 0;
    const char *k = kv, *v = eq + 1;
    long long x = 0;
    int isnum = num(v, &x);
    if (!strcmp(k, "rank") && isnum && x < 1000000) f->rank = (int)x;
    else if (!strcmp(k, "seq") && isnum) f->seq = x;
    else if (!strcmp(k, "until") && isnum) f->until = x;
    else if (!strcmp(k, "host") && strlen(v) < sizeof f->host) strcpy(f->host, v);
    else if (!strcmp(k, "dev") && strlen(v) < sizeof f->dev) strcpy(f->dev, v);
    else if (!strcmp(k, "port") && isnum && x > 0 && x < 256) f->port = (int)x;
    else if (!strcmp(k, "link") && isnum && x < 18) f->link = (int)x;
    else if (!strcmp(k, "code") && isnum && x < 100000) f->code = (int)x;
    else if (!strcmp(k, "pending") && isnum) f->pending = x != 0;
    else if (!strcmp(k, "reason") && !strcmp(v, "power")) f->reason = SH_R_POWER;
    else if (!strcmp(k, "reason") && !strcmp(v, "thermal")) f->reason = SH_R_THERMAL;
    else if (!strcmp(k, "reason") && !strcmp(v, "hw_slowdown")) f->reason = SH_R_HW_SLOWDOWN;
    else if (!strcmp(k, "pct")) {
      char *end;
      f->pct = strtod(v, &end);
      if (*end || !(f->pct >= 0 && f->pct <= 1000)) { *why = "pct: expected 0 <= P <= 1000"; return -1; }
    }
    else if (!strcmp(k, "corrected") && isnum) f->corrected = x;
    else if (!strcmp(k, "uncorrected") && isnum) f->uncorrected = x;
    else if (!strcmp(k, "crc") && isnum) f->crc = x;
    else if (!strcmp(k, "replay") && isnum) f->replay = x;
    else if (!strcmp(k, "recovery") && isnum) f->recovery = x;
    else if (!strcmp(k, "symbol_error") && isnum) f->symbol_error = x;
    else if (!strcmp(k, "link_downed") && isnum) f->link_downed = x;
    else if (!strcmp(k, "xmit_wait") && isnum) f->xmit_wait = x;
    else if (!strcmp(k, "cnp") && isnum) f->cnp = x;
    else { *why = "bad key or value"; return -1; }
  }
  switch (f->kind) {
  case SH_THROTTLE:
    if (f->rank < 0 || f->reason < 0) { *why = "throttle needs rank and reason"; return -1; }
    if (f->until >= 0 && f->until <= f->seq) { *why = "throttle: until must be after seq"; return -1; }
    break;
  case SH_ECC: case SH_REMAP: if (f->rank < 0) { *why = "needs rank"; return -1; } break;
  case SH_XID: if (f->rank < 0 || f->code < 0 || f->seq < 0) { *why = "xid needs rank, code and seq"; return -1; } break;
  case SH_NVLINK: if (f->rank < 0 || f->link < 0) { *why = "nvlink needs rank and link"; return -1; } break;
  case SH_IB: if (!f->host[0] || !f->dev[0]) { *why = "ib needs host and dev"; return -1; } break;
  }
  return 0;
}

static void parse_faults(void) {
  const char *env = getenv("COLLSCOPE_SIM_FAULTS");
  if (!env || !*env) return;
  char *dup = strdup(env);
  int cap = 1;
  for (const char *p = env; *p; p++) cap += *p == ';';
  sh_faults = calloc((size_t)cap, sizeof *sh_faults);
  if (!dup || !sh_faults) { free(dup); return; }
  char *save = NULL;
  for (char *ent = strtok_r(dup, ";", &save); ent; ent = strtok_r(NULL, ";", &save)) {
    while (isspace((unsigned char)*ent)) ent++;
    char orig[256];
    snprintf(orig, sizeof orig, "%s", ent);
    const char *why;
    int r = parse_entry(ent, &sh_faults[sh_nfaults], &why);
    if (r == 0) sh_nfaults++;
    else if (r < 0) fprintf(stderr, "collscope-sim: COLLSCOPE_SIM_FAULTS: ignoring bad entry '%s' (%s)\n", orig, why);
  }
  free(dup);
}

/* COLLSCOPE_SIM_GPU_MODEL: `HOSTLIST=NAME[,speed=S];...` */
static void parse_models(void) {
  const char *env = getenv("COLLSCOPE_SIM_GPU_MODEL");
  if (!env || !*env) return;
  char *dup = strdup(env);
  int cap = 1;
  for (const char *p = env; *p; p++) cap += *p == ';';
  models = calloc((size_t)cap, sizeof *models);
  if (!dup || !models) { free(dup); return; }
  char *save = NULL;
  for (char *ent = strtok_r(dup, ";", &save); ent; ent = strtok_r(NULL, ";", &save)) {
    struct sh_model *m = &models[nmodels];
    char *eq = strchr(ent, '=');
    const char *why = "expected HOSTLIST=NAME[,speed=S]";
    if (!eq) goto bad;
    *eq = 0;
    char *name = eq + 1, *sp = strstr(name, ",speed=");
    m->speed = 1.0;
    if (sp) {
      char *end;
      *sp = 0;
      m->speed = strtod(sp + 7, &end);
      if (*end || !(m->speed > 0.01 && m->speed <= 100)) { why = "speed: expected 0.01 < S <= 100"; goto bad; }
    }
    if (!*name || strlen(name) >= sizeof m->name) { why = "model name empty or too long"; goto bad; }
    snprintf(m->name, sizeof m->name, "%s", name);
    char err[128];
    if (cs_hostlist_expand_max(ent, 4096, &m->hosts, &m->nhosts, err, sizeof err) != 0) { why = err; goto bad; }
    nmodels++;
    continue;
  bad:
    fprintf(stderr, "collscope-sim: COLLSCOPE_SIM_GPU_MODEL: ignoring bad entry (%s)\n", why);
  }
  free(dup);
}

static void init_once(void) {
  const char *r = getenv("COLLSCOPE_SIM_HEALTH_RAMP_MS");
  if (r && *r) {
    double x = strtod(r, NULL);
    if (x > 0 && x < 1e9) ramp_ms = x;
  }
  parse_faults();
  parse_models();
}
void sh_init(void) { pthread_once(&once, init_once); }

const char *sh_gpu_model(const char *host, double *speed) {
  sh_init();
  for (int i = 0; i < nmodels; i++)
    for (size_t j = 0; j < models[i].nhosts; j++)
      if (!strcmp(models[i].hosts[j], host)) { if (speed) *speed = models[i].speed; return models[i].name; }
  if (speed) *speed = 1.0;
  return "NVIDIA H100 80GB HBM3";
}

int sh_any_slow(void) {
  sh_init();
  if (nmodels) return 1;
  for (int i = 0; i < sh_nfaults; i++) if (sh_faults[i].kind == SH_THROTTLE) return 1;
  return 0;
}

int sh_throttle_active(const struct sh_fault *f, long long seq) {
  return f->kind == SH_THROTTLE && (f->seq < 0 || seq >= f->seq) && (f->until < 0 || seq < f->until);
}

static double slow_pct(int rank, const char *host, int any, long long seq) {
  sh_init();
  double pct = 0, speed = 1;
  for (int i = 0; i < sh_nfaults; i++)
    if (sh_faults[i].kind == SH_THROTTLE && sh_faults[i].rank == rank && (any || sh_throttle_active(&sh_faults[i], seq)))
      pct += sh_faults[i].pct;
  sh_gpu_model(host, &speed);
  if (speed < 1) pct += (1.0 / speed - 1.0) * 100.0;
  return pct;
}
double sh_slow_pct(int rank, const char *host) { return slow_pct(rank, host, 1, -1); }
double sh_slow_pct_at(int rank, const char *host, long long seq) { return slow_pct(rank, host, 0, seq); }

long long sh_ramp(long long n, double elapsed_ms) {
  sh_init();
  if (elapsed_ms >= ramp_ms) return n;
  if (elapsed_ms <= 0) return 0;
  return (long long)((double)n * elapsed_ms / ramp_ms);
}
