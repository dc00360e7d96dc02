/* shim/config.c: reads collscope's environment once (COLLSCOPE_*, launcher rank/job
 * variables) into cs_cfg (stats/core.c). Defaults come from the table of variables
 * (include/collscope/env_vars.def); a bad value is logged in one line (variable, value,
 * default used) and defaulted. */
#include "collscope/slurm_node.h"
#include "cs_internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the defaults: from the one table of variables (include/collscope/env_vars.def) */
static const struct {
  const char *name, *def;
} env_defaults[] = {
#define CS_ENV_VAR(name, def, who, meaning) {name, def},
#include "collscope/env_vars.def"
#undef CS_ENV_VAR
};

static const char *env_default(const char *name) {
  for (size_t i = 0; i < sizeof env_defaults / sizeof env_defaults[0]; i++)
    if (!strcmp(env_defaults[i].name, name)) return env_defaults[i].def;
  return "unset";
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

/* A value from the environment, fit for one log line: at most 64 bytes shown, control and
 * non-ASCII bytes as '?' (a value may hold newlines or escape sequences). */
static const char *shown(const char *v, char *buf, size_t len) {
  size_t n = 0;
  for (; v[n] && n + 4 < len && n < 64; n++) buf[n] = (v[n] >= 0x20 && v[n] < 0x7f) ? v[n] : '?';
  if (v[n]) buf[n++] = '.', buf[n++] = '.', buf[n++] = '.';
  buf[n] = '\0';
  return buf;
}

/* The one line for a value that is not used: the variable, the value, what was expected and
 * the default used instead. */
static void bad_value(const char *name, const char *v, const char *expected) {
  char b[80];
  cs_log(CS_LOG_WARN, "ignoring %s=%s (expected %s); using the default %s", name, shown(v, b, sizeof b), expected,
         env_default(name));
}

static bool parse_long(const char *v, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi) return false;
  *out = x;
  return true;
}

static long env_long(const char *name, long lo, long hi) {
  const char *v = env(name);
  long x;
  if (v && parse_long(v, lo, hi, &x)) return x;
  if (v) {
    char exp[80];
    snprintf(exp, sizeof exp, "an integer in [%ld, %ld]", lo, hi);
    bad_value(name, v, exp);
  }
  if (parse_long(env_default(name), lo, hi, &x)) return x;
  cs_log(CS_LOG_WARN, "built-in default of %s (%s) is not valid; using %ld", name, env_default(name), lo);
  return lo;
}

static int parse_bool(const char *v) {
  if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) return 1;
  if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) return 0;
  return -1;
}

static bool env_bool(const char *name) {
  const char *v = env(name);
  int b = v ? parse_bool(v) : -1;
  if (b >= 0) return b;
  if (v) bad_value(name, v, "0 or 1");
  return parse_bool(env_default(name)) == 1;
}

/* A word variable: its value, or (logged when set but not understood) the table's default.
 * parse returns -1 for a word it does not know. */
static int env_word(const char *name, int (*parse)(const char *), const char *expected) {
  const char *v = env(name);
  int x = v ? parse(v) : -1;
  if (x >= 0) return x;
  if (v) bad_value(name, v, expected);
  x = parse(env_default(name));
  if (x >= 0) return x;
  cs_log(CS_LOG_WARN, "built-in default of %s (%s) is not valid; using the first of %s", name, env_default(name),
         expected);
  return 0;
}

static int parse_compress(const char *v) {
  if (!strcmp(v, "zstd")) return 1;
  if (!strcmp(v, "off") || !strcmp(v, "0")) return 0;
  return -1;
}

/* COLLSCOPE_BUDGET: bytes with an optional K, M or G (powers of 1024); 0 or unset: no bound */
static uint64_t env_bytes(const char *name, uint64_t lo, uint64_t hi) {
  const char *v = env(name);
  if (!v) return 0;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10, end++;
  else if (*end == 'M' || *end == 'm')
    shift = 20, end++;
  else if (*end == 'G' || *end == 'g')
    shift = 30, end++;
  if (errno || end == v || *end || v[0] == '-' || x > (hi >> shift) || (x != 0 && (x << shift) < lo)) {
    char exp[96];
    snprintf(exp, sizeof exp, "0 or bytes in [%llu, %llu] with an optional K, M or G", (unsigned long long)lo,
             (unsigned long long)hi);
    bad_value(name, v, exp);
    return 0;
  }
  return (uint64_t)x << shift;
}

static int parse_log_level(const char *v) {
  if (!strcmp(v, "quiet")) return CS_LOG_QUIET;
  if (!strcmp(v, "warn")) return CS_LOG_WARN;
  if (!strcmp(v, "info")) return CS_LOG_INFO;
  if (!strcmp(v, "debug")) return CS_LOG_DEBUG;
  return -1;
}

static int parse_timing(const char *v) { return cs_timing_mode_parse(v); }

/* COLLSCOPE_EVENT_SAMPLE: a power of two (the hot path masks the seq with N - 1) */
static int parse_pow2(const char *v) {
  long n;
  if (!parse_long(v, 1, 1L << 16, &n) || (n & (n - 1))) return -1;
  return (int)n;
}

/* COLLSCOPE_RECORD: full (0) or summary (1) */
static int parse_flight_local(const char *v) {
  if (!strcmp(v, "off") || !strcmp(v, "0")) return 0;
  if (!strcmp(v, "rank")) return 1;
  if (!strcmp(v, "job")) return 2;
  return -1;
}

static int parse_record(const char *v) { return !strcmp(v, "full") ? 0 : !strcmp(v, "summary") ? 1
                                                                                               : -1; }

static int parse_sdc_action(const char *v) {
  if (!strcmp(v, "log")) return CS_SDC_ACTION_LOG;
  if (!strcmp(v, "abort")) return CS_SDC_ACTION_ABORT;
  return -1;
}

/* COLLSCOPE_SDC=off|all|sample:N: the mode, and N in *sample (sample:1 is all) */
static int parse_sdc(const char *v, unsigned *sample) {
  *sample = 1;
  if (!strcmp(v, "off") || !strcmp(v, "0")) return CS_SDC_OFF;
  if (!strcmp(v, "all") || !strcmp(v, "on") || !strcmp(v, "1")) return CS_SDC_ALL;
  long n;
  if (strncmp(v, "sample:", 7) || !parse_long(v + 7, 1, 1000000, &n)) return -1;
  *sample = (unsigned)n;
  return n == 1 ? CS_SDC_ALL : CS_SDC_SAMPLE;
}

static void cs_sdc_config_load(void) {
  const char *v = env("COLLSCOPE_SDC");
  unsigned sample = 1;
  int mode = v ? parse_sdc(v, &sample) : -1;
  if (mode < 0) {
    if (v) bad_value("COLLSCOPE_SDC", v, "off, all or sample:N with N in [1, 1000000]");
    mode = parse_sdc(env_default("COLLSCOPE_SDC"), &sample);
  }
  cs_cfg.sdc_mode = mode < 0 ? CS_SDC_OFF : mode;
  cs_cfg.sdc_sample = sample;
  cs_cfg.sdc_min_bytes = (uint64_t)env_long("COLLSCOPE_SDC_MIN_BYTES", 0, 1L << 50);
  cs_cfg.sdc_gate_bytes = cs_cfg.sdc_mode == CS_SDC_OFF ? UINT64_MAX : cs_cfg.sdc_min_bytes;
  cs_cfg.sdc_action = env_word("COLLSCOPE_SDC_ACTION", parse_sdc_action, "log or abort");
}

/* The first of names that holds a rank-like integer; a set one that does not is logged. */
static int first_int_env(const char *const *names) {
  const char *bad = NULL, *bad_v = NULL;
  int found = -1;
  const char *found_name = NULL;
  for (int i = 0; names[i] && !found_name; i++) {
    const char *v = env(names[i]);
    long x;
    if (!v) continue;
    if (parse_long(v, 0, (1L << 30) - 1, &x))
      found = (int)x, found_name = names[i];
    else if (!bad)
      bad = names[i], bad_v = v;
  }
  if (bad) {
    char b[80];
    if (found_name)
      cs_log(CS_LOG_WARN, "ignoring %s=%s (expected an integer in [0, %ld]); using %s=%d", bad,
             shown(bad_v, b, sizeof b), (1L << 30) - 1, found_name, found);
    else
      cs_log(CS_LOG_WARN, "ignoring %s=%s (expected an integer in [0, %ld]); using the default -1", bad,
             shown(bad_v, b, sizeof b), (1L << 30) - 1);
  }
  return found;
}

/* A name that becomes part of a file name (host, job): [A-Za-z0-9._-] kept, any other byte
 * (a '/' too) becomes '_', a leading '.' becomes '_', at most max bytes, never empty.
 * Logs one line (at log_level) when the name had to change. */
static void set_file_name_part(char *dst, size_t max, const char *src, const char *what, int log_level) {
  size_t n = 0;
  bool changed = false;
  for (; src[n] && n < max; n++) {
    char c = src[n];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || (c == '.' && n > 0);
    dst[n] = ok ? c : '_';
    changed |= !ok;
  }
  changed |= src[n] != '\0';
  if (n == 0) dst[n++] = '_', changed = true;
  dst[n] = '\0';
  if (changed) {
    char b[80];
    cs_log(log_level, "%s %s is not a safe file name part ([A-Za-z0-9._-], no leading '.', at most %zu bytes); "
                      "using %s",
           what, shown(src, b, sizeof b), max, dst);
  }
}

#define CS_HOST_MAX 127 /* bytes of a host name kept (the stats ring's host field holds 127) */

void cs_config_load(void) {
  cs_cfg.log_level = CS_LOG_WARN; /* so that a bad COLLSCOPE_LOG is reported */
  cs_cfg.log_level = env_word("COLLSCOPE_LOG", parse_log_level, "quiet, warn, info or debug");
  cs_cfg.disabled = env_bool("COLLSCOPE_DISABLE");
  cs_cfg.timing_mode = env_word("COLLSCOPE_TIMING", parse_timing, "auto, events, profiler or off");
  cs_cfg.timing = cs_cfg.timing_mode != CS_TMODE_OFF;
  cs_cfg.prof_probes = (unsigned)env_long("COLLSCOPE_PROFILER_PROBES", 0, 1L << 20);
  int event_sample = env_word("COLLSCOPE_EVENT_SAMPLE", parse_pow2, "a power of two in [1, 65536]");
  cs_cfg.event_sample_mask = event_sample > 1 ? (uint64_t)event_sample - 1 : 0;
  cs_cfg.event_sample_bytes = (uint64_t)env_long("COLLSCOPE_EVENT_SAMPLE_BYTES", 0, 1L << 50);
  cs_cfg.event_prefill = (unsigned)env_long("COLLSCOPE_EVENT_PREFILL", 2, 65536);
  /* off: no events to save (every op says host); N = 1: every op timed, one compare */
  if (!cs_cfg.timing || !cs_cfg.event_sample_mask) cs_cfg.event_sample_bytes = 0;
  cs_cfg.queue_cap = (size_t)env_long("COLLSCOPE_QUEUE", 1024, 1L << 24);
  cs_cfg.flush_ms = (unsigned)env_long("COLLSCOPE_FLUSH_MS", 10, 1000);
  cs_cfg.budget = env_bytes("COLLSCOPE_BUDGET", (uint64_t)64 << 10, (uint64_t)1 << 50);
  cs_cfg.libcuda = env("COLLSCOPE_LIBCUDA");
  cs_cfg.libnccl = env("COLLSCOPE_LIBNCCL");
  cs_cfg.ring_cap = (size_t)env_long("COLLSCOPE_RING", 0, 1L << 22);
  cs_cfg.keep_shm = env_bool("COLLSCOPE_KEEP_SHM");
  cs_cfg.hang_timeout_s = (unsigned)env_long("COLLSCOPE_HANG_TIMEOUT", 0, 1L << 20);
  cs_cfg.record_summary = env_word("COLLSCOPE_RECORD", parse_record, "full or summary") == 1;
  /* COLLSCOPE_COMPRESS unset: zstd in summary mode (a recording of weeks), plain in full mode
   * (a diagnostic run whose *.jsonl is read directly); a value that is set always wins */
  const char *compress = env("COLLSCOPE_COMPRESS");
  int z = compress ? parse_compress(compress) : -1;
  if (compress && z < 0) bad_value("COLLSCOPE_COMPRESS", compress, "zstd or off");
  cs_cfg.compress = z >= 0 ? z == 1 : cs_cfg.record_summary;
  cs_cfg.summary_s = (unsigned)env_long("COLLSCOPE_SUMMARY_S", 1, 86400);
  cs_cfg.flight_ops = (size_t)env_long("COLLSCOPE_FLIGHT_OPS", 1, 1L << 20);
  cs_cfg.flight_after = (size_t)env_long("COLLSCOPE_FLIGHT_AFTER", 0, 1L << 20);
  cs_cfg.flight_local = env_word("COLLSCOPE_FLIGHT_LOCAL", parse_flight_local, "job, rank or off");
  cs_sdc_config_load();
  cs_cfg.online = env_bool("COLLSCOPE_ONLINE");
  cs_cfg.online_every = (unsigned)env_long("COLLSCOPE_ONLINE_EVERY", 1, 1L << 30);
  cs_cfg.online_timeout_s = (unsigned)env_long("COLLSCOPE_ONLINE_TIMEOUT", 1, 1L << 20);

  static const char *const rank_vars[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", NULL};
  static const char *const local_vars[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "MPI_LOCALRANKID", NULL};
  static const char *const size_vars[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL};
  cs_cfg.rank = first_int_env(rank_vars);
  cs_cfg.local_rank = first_int_env(local_vars);
  cs_cfg.world_size = first_int_env(size_vars);
  static const char *const step_vars[] = {"SLURM_STEP_ID", NULL};
  cs_cfg.step = first_int_env(step_vars);

  /* the host name becomes part of the dump file's name: never a path */
  const char *h = env("COLLSCOPE_HOSTNAME");
  char sys_host[256] = "";
  if (!h) {
    if (gethostname(sys_host, sizeof sys_host - 1) == 0 && sys_host[0])
      h = sys_host;
    else
      h = "unknown";
  }
  set_file_name_part(cs_cfg.host, CS_HOST_MAX, h, env("COLLSCOPE_HOSTNAME") ? "COLLSCOPE_HOSTNAME" : "host name",
                     CS_LOG_WARN);

  /* the node Slurm says this task runs on: a header field, the label above stays the user's */
  const char *node = env("SLURMD_NODENAME");
  if (node && cs_node_name_ok(node) && strlen(node) < sizeof cs_cfg.slurm_node)
    snprintf(cs_cfg.slurm_node, sizeof cs_cfg.slurm_node, "%s", node);

  const char *job = env("SLURM_JOB_ID");
  const char *job_var = "SLURM_JOB_ID";
  if (!job) job = env("TORCHELASTIC_RUN_ID"), job_var = "TORCHELASTIC_RUN_ID";
  if (!job) job = env("COLLSCOPE_JOB_ID"), job_var = "COLLSCOPE_JOB_ID";
  /* a job id becomes part of a path too (launchers' ids may hold other characters: info) */
  if (job)
    set_file_name_part(cs_cfg.job, sizeof cs_cfg.job - 1, job, job_var, CS_LOG_INFO);
  else
    snprintf(cs_cfg.job, sizeof(cs_cfg.job), "local-%d", (int)getppid());

  const char *dir = env("COLLSCOPE_DIR");
  if (dir && strlen(dir) >= sizeof cs_cfg.dir) {
    bad_value("COLLSCOPE_DIR", dir, "a path shorter than 4096 bytes");
    dir = NULL;
  }
  /* none: no dump files, the stats ring alone (stats/harvest.c, docs/rings.md) */
  cs_cfg.dumps_off = dir && strcmp(dir, "none") == 0;
  if (dir)
    snprintf(cs_cfg.dir, sizeof(cs_cfg.dir), "%s", dir);
  else
    snprintf(cs_cfg.dir, sizeof(cs_cfg.dir), "./collscope-%s", cs_cfg.job);
}
