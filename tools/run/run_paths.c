/* tools/run/run_paths.c: where collscope's own artefacts are (the simulator, the shim, the demo's
 * test apps): an env override, else relative to the running executable (a meson build tree
 * or an install prefix), else the configured package directory. Used by run and demo. */
#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef COLLSCOPE_PREFIX
#define COLLSCOPE_PREFIX "/usr/local"
#endif
/* where the install keeps the simulator (sim/) and the demo's job (apps/): meson's
 * collscope_pkglibdir, tried after the directories next to the executable */
#ifndef COLLSCOPE_PKGLIBDIR
#define COLLSCOPE_PKGLIBDIR COLLSCOPE_PREFIX "/lib/collscope"
#endif

static int is_dir(const char *p) {
  struct stat st;
  return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static int is_file(const char *p) {
  struct stat st;
  return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Directory of the running executable and its parent ("" when unknown). */
static const char *exe_parent(const char **exe_dir_out) {
  static char dir[PATH_MAX], parent[PATH_MAX];
  static int done;
  if (!done) {
    done = 1;
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) {
      dir[0] = '\0';
    } else {
      dir[n] = '\0';
      char *slash = strrchr(dir, '/');
      if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
      snprintf(parent, sizeof parent, "%s", dir);
      slash = strrchr(parent, '/');
      if (slash) *(slash == parent ? slash + 1 : slash) = '\0';
    }
  }
  if (exe_dir_out) *exe_dir_out = dir;
  return parent;
}

/* True when the executable sits in <build>/tools (a meson build tree). */
static int in_build_tree(void) {
  const char *dir;
  const char *parent = exe_parent(&dir);
  size_t n = strlen(dir);
  if (n < 6 || strcmp(dir + n - 6, "/tools") != 0) return 0;
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/build.ninja", parent);
  return is_file(p);
}

/* Install prefix: <prefix>/bin/collscope -> <prefix>; else the configured prefix. */
static const char *install_prefix(void) {
  const char *dir;
  const char *parent = exe_parent(&dir);
  size_t n = strlen(dir);
  if (n >= 4 && strcmp(dir + n - 4, "/bin") == 0 && parent[0]) return parent;
  return COLLSCOPE_PREFIX;
}

/* Try fmt-formatted candidates; keep the first that exists (check: dir or file). */
static const char *first_existing(char *buf, size_t len, int want_dir, const char *base,
                                  const char *const *rel, const char *must_hold) {
  for (size_t i = 0; rel[i]; i++) {
    snprintf(buf, len, "%s/%s", base, rel[i]);
    if (want_dir) {
      if (!is_dir(buf)) continue;
      if (must_hold) {
        char f[PATH_MAX + 64];
        snprintf(f, sizeof f, "%s/%s", buf, must_hold);
        if (!is_file(f)) continue;
      }
      return buf;
    }
    if (is_file(buf)) return buf;
  }
  return NULL;
}

static const char *env_nonempty(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

const char *cli_sim_dir(void) {
  static char buf[PATH_MAX];
  const char *e = env_nonempty("COLLSCOPE_SIM_DIR");
  if (e) return is_dir(e) ? e : NULL;
  if (in_build_tree()) {
    static const char *const rel[] = {"tests/sim", NULL};
    return first_existing(buf, sizeof buf, 1, exe_parent(NULL), rel, "libcuda.so.1");
  }
  static const char *const rel[] = {"lib/collscope/sim", "lib64/collscope/sim", NULL};
  static const char *const configured[] = {"sim", NULL};
  const char *d = first_existing(buf, sizeof buf, 1, install_prefix(), rel, "libcuda.so.1");
  return d ? d : first_existing(buf, sizeof buf, 1, COLLSCOPE_PKGLIBDIR, configured, "libcuda.so.1");
}

const char *cli_shim_path(void) {
  static char buf[PATH_MAX];
  const char *e = env_nonempty("COLLSCOPE_SHIM");
  if (e) return is_file(e) ? e : NULL;
  if (in_build_tree()) {
    static const char *const rel[] = {"shim/libcollscope.so", NULL};
    return first_existing(buf, sizeof buf, 0, exe_parent(NULL), rel, NULL);
  }
  static const char *const rel[] = {"lib/libcollscope.so", "lib64/libcollscope.so",
                                    "lib/x86_64-linux-gnu/libcollscope.so",
                                    "lib/aarch64-linux-gnu/libcollscope.so", NULL};
  return first_existing(buf, sizeof buf, 0, install_prefix(), rel, NULL);
}

const char *cli_apps_dir(void) {
  static char buf[PATH_MAX];
  const char *e = env_nonempty("COLLSCOPE_APPS_DIR");
  if (e) return is_dir(e) ? e : NULL;
  if (in_build_tree()) {
    static const char *const rel[] = {"tests/apps", NULL};
    return first_existing(buf, sizeof buf, 1, exe_parent(NULL), rel, "dp_train");
  }
  static const char *const rel[] = {"lib/collscope/apps", "libexec/collscope/apps", NULL};
  static const char *const configured[] = {"apps", NULL};
  const char *d = first_existing(buf, sizeof buf, 1, install_prefix(), rel, "dp_train");
  return d ? d : first_existing(buf, sizeof buf, 1, COLLSCOPE_PKGLIBDIR, configured, "dp_train");
}
