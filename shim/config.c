/* shim/config.c: reads collscope's environment once (COLLSCOPE_*, launcher rank/job
 * variables) and owns the one-line logger. Bad values are logged and defaulted. */
#include "cs_internal.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cs_config cs_cfg;

void cs_log(int level, const char *fmt, ...) {
  if (level > cs_cfg.log_level) return;
  char line[1024];
  int n = snprintf(line, sizeof(line), "collscope[%d]: ", (int)getpid());
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && n < (int)sizeof(line)) n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof(line) - 1) n = (int)sizeof(line) - 2;
  if (n < 0) return;
  line[n++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w;
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

static long env_long(const char *name, long def, long lo, long hi) {
  const char *v = env(name);
  if (!v) return def;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end || x < lo || x > hi) {
    cs_log(CS_LOG_WARN, "ignoring %s=%s (expected an integer in [%ld, %ld]); using %ld", name, v, lo, hi, def);
    return def;
  }
  return x;
}

static bool env_bool(const char *name, bool def) {
  const char *v = env(name);
  if (!v) return def;
  if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) return true;
  if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) return false;
  cs_log(CS_LOG_WARN, "ignoring %s=%s (expected 0/1); using %d", name, v, (int)def);
  return def;
}

/* COLLSCOPE_SDC=off|all|sample:N, COLLSCOPE_SDC_MIN_BYTES, COLLSCOPE_SDC_ACTION=log|abort */
#define CS_SDC_DEFAULT_SAMPLE 2048u   /* ~0.5% on the simulator's bandwidth-bound runs (bench_sdc) */
#define CS_SDC_DEFAULT_MIN_BYTES (1L << 20)
static void cs_sdc_config_load(void) {
  const char *v = env("COLLSCOPE_SDC");
  cs_cfg.sdc_mode = CS_SDC_SAMPLE;
  cs_cfg.sdc_sample = CS_SDC_DEFAULT_SAMPLE;
  if (v) {
    char *end;
    unsigned long n;
    if (!strcmp(v, "off") || !strcmp(v, "0")) cs_cfg.sdc_mode = CS_SDC_OFF;
    else if (!strcmp(v, "all") || !strcmp(v, "on") || !strcmp(v, "1")) cs_cfg.sdc_mode = CS_SDC_ALL;
    else if (!strncmp(v, "sample:", 7) && (errno = 0, n = strtoul(v + 7, &end, 10), !errno && !*end && n >= 1 &&
                                            n <= 1000000))
      cs_cfg.sdc_sample = (unsigned)n, cs_cfg.sdc_mode = n == 1 ? CS_SDC_ALL : CS_SDC_SAMPLE;
    else
      cs_log(CS_LOG_WARN, "ignoring COLLSCOPE_SDC=%s (expected off, all or sample:N); using sample:%u", v,
             CS_SDC_DEFAULT_SAMPLE);
  }
  cs_cfg.sdc_min_bytes = (uint64_t)env_long("COLLSCOPE_SDC_MIN_BYTES", CS_SDC_DEFAULT_MIN_BYTES, 0, 1L << 50);
  const char *a = env("COLLSCOPE_SDC_ACTION");
  cs_cfg.sdc_action = CS_SDC_ACTION_LOG;
  if (a && !strcmp(a, "abort")) cs_cfg.sdc_action = CS_SDC_ACTION_ABORT;
  else if (a && strcmp(a, "log")) cs_log(CS_LOG_WARN, "ignoring COLLSCOPE_SDC_ACTION=%s (expected log or abort)", a);
}

static int first_int_env(const char *const *names, int def) {
  for (int i = 0; names[i]; i++) {
    const char *v = env(names[i]);
    if (!v) continue;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end == 0 && x >= 0 && x < (1L << 30)) return (int)x;
  }
  return def;
}

static void copy_str(char *dst, size_t len, const char *src) {
  snprintf(dst, len, "%s", src);
}

void cs_config_load(void) {
  const char *lv = env("COLLSCOPE_LOG");
  cs_cfg.log_level = CS_LOG_WARN;
  if (lv) {
    if (!strcmp(lv, "quiet")) cs_cfg.log_level = CS_LOG_QUIET;
    else if (!strcmp(lv, "info")) cs_cfg.log_level = CS_LOG_INFO;
    else if (!strcmp(lv, "debug")) cs_cfg.log_level = CS_LOG_DEBUG;
  }
  cs_cfg.disabled = env_bool("COLLSCOPE_DISABLE", false);
  const char *t = env("COLLSCOPE_TIMING");
  cs_cfg.timing_mode = cs_timing_mode_parse(t);
  if (cs_cfg.timing_mode < 0) {
    cs_log(CS_LOG_WARN, "ignoring COLLSCOPE_TIMING=%s (expected auto, events, profiler or off); using events", t);
    cs_cfg.timing_mode = CS_TMODE_EVENTS;
  }
  cs_cfg.timing = cs_cfg.timing_mode != CS_TMODE_OFF;
  cs_cfg.prof_probes = (unsigned)env_long("COLLSCOPE_PROFILER_PROBES", 64, 0, 1L << 20);
  cs_cfg.queue_cap = (size_t)env_long("COLLSCOPE_QUEUE", 1L << 16, 1024, 1L << 24);
  cs_cfg.flush_ms = (unsigned)env_long("COLLSCOPE_FLUSH_MS", 1000, 10, 1000);
  cs_cfg.libcuda = env("COLLSCOPE_LIBCUDA");
  cs_cfg.libnccl = env("COLLSCOPE_LIBNCCL");
  cs_cfg.ring_cap = (size_t)env_long("COLLSCOPE_RING", 16384, 0, 1L << 22);
  cs_cfg.keep_shm = env_bool("COLLSCOPE_KEEP_SHM", false);
  cs_cfg.hang_timeout_s = (unsigned)env_long("COLLSCOPE_HANG_TIMEOUT", 300, 0, 1L << 20);
  cs_sdc_config_load();
  cs_cfg.online = env_bool("COLLSCOPE_ONLINE", true);
  cs_cfg.online_every = (unsigned)env_long("COLLSCOPE_ONLINE_EVERY", 1000, 1, 1L << 30);
  cs_cfg.online_timeout_s = (unsigned)env_long("COLLSCOPE_ONLINE_TIMEOUT", 300, 1, 1L << 20);

  static const char *const rank_vars[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", NULL};
  static const char *const local_vars[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "MPI_LOCALRANKID", NULL};
  static const char *const size_vars[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL};
  cs_cfg.rank = first_int_env(rank_vars, -1);
  cs_cfg.local_rank = first_int_env(local_vars, -1);
  cs_cfg.world_size = first_int_env(size_vars, -1);

  const char *h = env("COLLSCOPE_HOSTNAME");
  if (h) copy_str(cs_cfg.host, sizeof(cs_cfg.host), h);
  else if (gethostname(cs_cfg.host, sizeof(cs_cfg.host) - 1) != 0) copy_str(cs_cfg.host, sizeof(cs_cfg.host), "unknown");

  const char *job = env("SLURM_JOB_ID");
  if (!job) job = env("TORCHELASTIC_RUN_ID");
  if (!job) job = env("COLLSCOPE_JOB_ID");
  if (job) copy_str(cs_cfg.job, sizeof(cs_cfg.job), job);
  else snprintf(cs_cfg.job, sizeof(cs_cfg.job), "local-%d", (int)getppid());
  /* a job id becomes part of a path: keep it to a safe alphabet */
  for (char *c = cs_cfg.job; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
          *c == '_' || *c == '.'))
      *c = '_';

  const char *dir = env("COLLSCOPE_DIR");
  if (dir) copy_str(cs_cfg.dir, sizeof(cs_cfg.dir), dir);
  else snprintf(cs_cfg.dir, sizeof(cs_cfg.dir), "./collscope-%s", cs_cfg.job);
}
