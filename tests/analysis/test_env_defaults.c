/* tests/analysis/test_env_defaults.c: the detectors' built-in defaults (analysis/detect.c,
 * analysis/links.c) are the ones the table of variables (include/collscope/env_vars.def) and
 * so `collscope help` and the docs give. The shim takes its defaults from the table itself;
 * the detectors keep theirs in code, so this test ties the two. */
#include "collscope/detect.h"
#include "collscope/links.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name, *def;
} table[] = {
#define CS_ENV_VAR(name, def, who, meaning) {name, def},
#include "collscope/env_vars.def"
#undef CS_ENV_VAR
};

static int failures;

static void same(const char *name, double code_default) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (strcmp(table[i].name, name)) continue;
    char *end;
    double t = strtod(table[i].def, &end);
    if (*end || end == table[i].def || t != code_default) {
      printf("FAIL: %s: table default '%s', code default %g\n", name, table[i].def, code_default);
      failures++;
    }
    return;
  }
  printf("FAIL: %s is not in include/collscope/env_vars.def\n", name);
  failures++;
}

int main(void) {
  struct cs_det_params d;
  cs_det_params_default(&d);
  same("COLLSCOPE_STRAGGLER_WINDOW", d.window);
  same("COLLSCOPE_STRAGGLER_MIN", d.min_instances);
  same("COLLSCOPE_STRAGGLER_SHARE", d.share);
  same("COLLSCOPE_STRAGGLER_Z", d.z);
  same("COLLSCOPE_STRAGGLER_PERSIST", d.persist);
  same("COLLSCOPE_STRAGGLER_OFFSET_Z", d.offset_z);
  same("COLLSCOPE_STRAGGLER_RECENT", d.recent);
  same("COLLSCOPE_STRAGGLER_RECENT_Z", d.recent_z);
  same("COLLSCOPE_STRAGGLER_RECENT_SHARE", d.recent_share);
  same("COLLSCOPE_STRAGGLER_FLOOR_US", d.floor_us);
  same("COLLSCOPE_STRAGGLER_FRAC", d.frac);
  same("COLLSCOPE_LINK_FLOOR_US", d.link_floor_us);
  struct cs_link_params l;
  cs_link_params_default(&l);
  same("COLLSCOPE_LINK_SLOW_FRAC", l.slow_frac);
  same("COLLSCOPE_LINK_MIN_BYTES", (double)l.min_bytes);
  printf("env-defaults: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
