/* integrations/slurm/cs_spank_opts.c: --collscope option and plugstack.conf arguments.
 * Every key and value is checked here, in srun, so that a bad one stops the job before it
 * is launched; the shim then only sees values it accepts. */
#include "cs_spank_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cs_spank_site_init(struct cs_spank_site *s) {
  memset(s, 0, sizeof *s);
  snprintf(s->shim, sizeof s->shim, "%s", CS_SPANK_DEFAULT_SHIM);
  snprintf(s->dir, sizeof s->dir, "%s", "collscope-%j");
}

static int copy(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) return -1;
  memcpy(dst, src, n + 1);
  return 0;
}

static bool is_uint(const char *v, unsigned long lo, unsigned long hi) {
  if (!v || !*v) return false;
  for (const char *p = v; *p; p++)
    if (*p < '0' || *p > '9') return false;
  errno = 0;
  char *end;
  unsigned long x = strtoul(v, &end, 10);
  return errno == 0 && *end == 0 && x >= lo && x <= hi;
}

static bool one_of(const char *v, const char *const *words) {
  for (; *words; words++)
    if (strcmp(v, *words) == 0) return true;
  return false;
}

static bool sdc_ok(const char *v) {
  static const char *const w[] = {"off", "all", NULL};
  if (one_of(v, w)) return true;
  return strncmp(v, "sample:", 7) == 0 && is_uint(v + 7, 1, 1UL << 30);
}
static bool timing_ok(const char *v) {
  static const char *const w[] = {"auto", "events", "on", "1", "profiler", "off", "0", NULL};
  return one_of(v, w);
}
static bool log_ok(const char *v) {
  static const char *const w[] = {"quiet", "warn", "info", "debug", NULL};
  return one_of(v, w);
}
static bool action_ok(const char *v) {
  static const char *const w[] = {"log", "abort", NULL};
  return one_of(v, w);
}
static bool bool_ok(const char *v) {
  static const char *const w[] = {"0", "1", NULL};
  return one_of(v, w);
}
static bool record_ok(const char *v) { return !strcmp(v, "full") || !strcmp(v, "summary"); }
static bool hang_ok(const char *v) { return is_uint(v, 0, 1UL << 20); }
static bool ring_ok(const char *v) { return is_uint(v, 0, 1UL << 22); }
static bool bytes_ok(const char *v) { return is_uint(v, 0, 1UL << 40); }
/* a path: printable, no ',' (the list separator) */
static bool path_ok(const char *v) {
  if (!*v) return false;
  for (const unsigned char *p = (const unsigned char *)v; *p; p++)
    if (*p < 0x20 || *p == 0x7f) return false;
  return true;
}

/* key -> shim variable, with its check and the words shown in an error */
static const struct opt_key {
  const char *key, *var;
  bool (*ok)(const char *);
  const char *accepts;
} opt_keys[] = {
    {"sdc", "COLLSCOPE_SDC", sdc_ok, "off, all or sample:N"},
    {"sdc_min_bytes", "COLLSCOPE_SDC_MIN_BYTES", bytes_ok, "a number of bytes"},
    {"sdc_action", "COLLSCOPE_SDC_ACTION", action_ok, "log or abort"},
    {"timing", "COLLSCOPE_TIMING", timing_ok, "auto, events, profiler or off"},
    {"topology", "COLLSCOPE_TOPOLOGY", path_ok, "a file"},
    {"hang", "COLLSCOPE_HANG_TIMEOUT", hang_ok, "seconds, 0..1048576"},
    {"ring", "COLLSCOPE_RING", ring_ok, "records, 0..4194304"},
    {"log", "COLLSCOPE_LOG", log_ok, "quiet, warn, info or debug"},
    {"online", "COLLSCOPE_ONLINE", bool_ok, "0 or 1"},
    {"record", "COLLSCOPE_RECORD", record_ok, "full or summary"},
    {"dir", "COLLSCOPE_DIR", path_ok, "a directory (%j job id, %u user, %s step id)"},
};
#define NKEYS (sizeof opt_keys / sizeof opt_keys[0])

static void key_list(char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (size_t i = 0; i < NKEYS && n < cap; i++) {
    int w = snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", opt_keys[i].key);
    if (w < 0) break;
    n += (size_t)w;
  }
}

/* What Slurm hands a plugin for the bare flag: NULL on srun's own command line, and the
 * string "(null)" in the steps of a job submitted with a bare `sbatch --collscope` or
 * `#SBATCH --collscope` (the option travels through the job's environment as printf's
 * rendering of NULL). `--collscope=` (empty) is the bare flag too: Slurm cannot tell the two
 * apart everywhere. */
static bool bare_flag(const char *opts) {
  return !opts || !*opts || strcmp(opts, "(null)") == 0 || strcmp(opts, "on") == 0;
}

int cs_spank_job_parse(struct cs_spank_job *job, const char *opts, char *err, size_t errlen) {
  memset(job, 0, sizeof *job);
  job->given = true;
  if (bare_flag(opts)) return 0;
  if (strcmp(opts, "off") == 0) {
    job->off = true;
    return 0;
  }
  char buf[4096];
  if (copy(buf, sizeof buf, opts)) {
    snprintf(err, errlen, "the option list is longer than %zu bytes", sizeof buf - 1);
    return -1;
  }
  bool seen[NKEYS] = {0};
  /* items split by hand, not strtok: an empty item (",", "a=1,,b=2", a trailing ',') is an
   * error, never silently skipped */
  char *item = buf;
  for (;;) {
    char *comma = strchr(item, ',');
    if (comma) *comma = 0;
    if (!*item) {
      snprintf(err, errlen, "an empty item in the option list (KEY=VALUE items separated by single commas)");
      return -1;
    }
    char *eq = strchr(item, '=');
    if (!eq) {
      char keys[512];
      key_list(keys, sizeof keys);
      snprintf(err, errlen, "'%.64s' is not KEY=VALUE (keys: %s; or the single word on or off)", item, keys);
      return -1;
    }
    *eq = 0;
    const char *val = eq + 1;
    size_t ki = NKEYS;
    for (size_t i = 0; i < NKEYS; i++)
      if (strcmp(item, opt_keys[i].key) == 0) ki = i;
    if (ki == NKEYS) {
      char keys[512];
      key_list(keys, sizeof keys);
      snprintf(err, errlen, "unknown key '%.64s' (keys: %s)", item, keys);
      return -1;
    }
    const struct opt_key *k = &opt_keys[ki];
    if (seen[ki]) {
      snprintf(err, errlen, "%s is given twice (each key at most once)", k->key);
      return -1;
    }
    seen[ki] = true;
    if (!k->ok(val)) {
      snprintf(err, errlen, "bad value '%.64s' for %s (expected %s)", val, k->key, k->accepts);
      return -1;
    }
    if (strcmp(k->key, "dir") == 0) {
      char probe[1024];
      if (copy(job->dir, sizeof job->dir, val) || cs_spank_expand(val, "1", "u", "0", probe, sizeof probe)) {
        snprintf(err, errlen, "bad value '%.64s' for dir (a path; %%j job id, %%u user, %%s step id, %%%% a %%)", val);
        return -1;
      }
    } else {
      if (job->nvars == CS_SPANK_MAX_VARS) {
        snprintf(err, errlen, "too many options");
        return -1;
      }
      int w = snprintf(job->vars[job->nvars], sizeof job->vars[job->nvars], "%s=%s", k->var, val);
      if (w < 0 || (size_t)w >= sizeof job->vars[job->nvars]) {
        snprintf(err, errlen, "the value of %s is too long", k->key);
        return -1;
      }
      job->nvars++;
    }
    if (!comma) break;
    item = comma + 1;
  }
  return 0;
}

const char *cs_spank_opts_show(const char *opts, char *out, size_t outlen) {
  if (!opts) opts = "";
  size_t n = strlen(opts);
  if (n <= CS_SPANK_SHOW_MAX)
    snprintf(out, outlen, "%s", opts);
  else
    snprintf(out, outlen, "%.*s... (%zu bytes)", CS_SPANK_SHOW_MAX, opts, n);
  /* control bytes as '?': one line in a log */
  for (char *p = out; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
  return out;
}

int cs_spank_site_arg(struct cs_spank_site *s, const char *arg, char *err, size_t errlen) {
  const char *eq = strchr(arg, '=');
  if (!eq) {
    snprintf(err, errlen, "plugstack.conf argument '%.64s' is not KEY=VALUE (shim=, dir=, group=, default=)", arg);
    return -1;
  }
  size_t kl = (size_t)(eq - arg);
  const char *v = eq + 1;
  int bad = 0;
  if (kl == 4 && strncmp(arg, "shim", 4) == 0)
    bad = !path_ok(v) || copy(s->shim, sizeof s->shim, v);
  else if (kl == 3 && strncmp(arg, "dir", 3) == 0) {
    char probe[1024];
    bad = !path_ok(v) || copy(s->dir, sizeof s->dir, v) || cs_spank_expand(v, "1", "u", "0", probe, sizeof probe);
  } else if (kl == 5 && strncmp(arg, "group", 5) == 0)
    bad = !*v || copy(s->group, sizeof s->group, v);
  else if (kl == 7 && strncmp(arg, "default", 7) == 0) {
    if (strcmp(v, "on") == 0)
      s->default_on = true;
    else if (strcmp(v, "off") == 0)
      s->default_on = false;
    else
      bad = 1;
  } else {
    snprintf(err, errlen, "unknown plugstack.conf argument '%.*s' (shim=, dir=, group=, default=)", (int)(kl > 64 ? 64 : kl),
             arg);
    return -1;
  }
  if (bad) {
    snprintf(err, errlen, "bad plugstack.conf value '%.64s' for %.*s", v, (int)(kl > 64 ? 64 : kl), arg);
    return -1;
  }
  return 0;
}

bool cs_spank_job_enabled(const struct cs_spank_site *s, const struct cs_spank_job *job) {
  if (job->given) return !job->off;
  return s->default_on;
}

int cs_spank_expand(const char *tmpl, const char *jobid, const char *user, const char *stepid, char *out,
                    size_t outlen) {
  size_t n = 0;
  if (!outlen) return -1;
  for (const char *p = tmpl; *p; p++) {
    const char *add;
    char one[2] = {*p, 0};
    if (*p == '%') {
      p++;
      switch (*p) {
      case 'j': add = jobid; break;
      case 'u': add = user; break;
      case 's': add = stepid; break;
      case '%': add = "%"; break;
      default: return -1;
      }
      /* a substituted part is one path component, never a way up or across */
      if (*p != '%' && (!*add || strchr(add, '/') || strcmp(add, ".") == 0 || strcmp(add, "..") == 0)) return -1;
    } else {
      add = one;
    }
    size_t l = strlen(add);
    if (l >= outlen - n) return -1;
    memcpy(out + n, add, l);
    n += l;
  }
  out[n] = 0;
  return n ? 0 : -1;
}

int cs_spank_preload(const char *shim, const char *cur, char *out, size_t outlen) {
  size_t sl = strlen(shim);
  int w = snprintf(out, outlen, "%s", shim);
  if (w < 0 || (size_t)w >= outlen) return -1;
  size_t n = (size_t)w;
  if (!cur) return 0;
  /* entries are separated by ':' or ' ' (ld.so accepts both) */
  const char *p = cur;
  while (*p) {
    size_t l = strcspn(p, ": ");
    if (l && !(l == sl && strncmp(p, shim, l) == 0)) {
      if (l + 1 >= outlen - n) return -1;
      out[n++] = ':';
      memcpy(out + n, p, l);
      n += l;
      out[n] = 0;
    }
    p += l;
    if (*p) p++;
  }
  return 0;
}
