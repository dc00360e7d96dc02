/* tools/run/run_env.c: the environment `collscope run` gives every rank (or a wrapped launcher):
 * the job id, the simulator's libraries first in LD_LIBRARY_PATH (--sim), the shim in
 * LD_PRELOAD, --env KEY=VALUE, and a free port for MASTER_PORT. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "run_internal.h"

/* Put `add` into the ':'-separated variable `name`, first or last; no duplicates. */
static int path_var_add(const char *name, const char *add, int prepend) {
  const char *cur = getenv(name);
  if (!cur || !*cur) return setenv(name, add, 1);
  size_t alen = strlen(add);
  for (const char *p = cur; *p;) { /* already there: leave it */
    const char *e = strchr(p, ':');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == alen && !strncmp(p, add, l)) {
      if (!prepend || p == cur) return 0;
      break; /* present but not first: rebuild with it first */
    }
    if (!e) break;
    p = e + 1;
  }
  size_t need = strlen(cur) + alen + 2;
  char *v = malloc(need);
  if (!v) return -1;
  if (prepend)
    snprintf(v, need, "%s:%s", add, cur);
  else
    snprintf(v, need, "%s:%s", cur, add);
  int rc = setenv(name, v, 1);
  free(v);
  return rc;
}

int run_valid_kv(const char *kv) {
  const char *eq = strchr(kv, '=');
  return eq && eq != kv;
}

int run_put_kv(const char *kv) {
  const char *eq = strchr(kv, '=');
  char key[256];
  size_t kl = (size_t)(eq - kv);
  if (kl >= sizeof key) return -1;
  memcpy(key, kv, kl);
  key[kl] = '\0';
  return setenv(key, eq + 1, 1);
}

int run_prepare_env(const struct cli_run_opts *o) {
  if (o->job_id) {
    setenv("COLLSCOPE_JOB_ID", o->job_id, 1);
  } else {
    const char *j = getenv("COLLSCOPE_JOB_ID");
    if (!j || !*j) {
      char id[64];
      snprintf(id, sizeof id, "run-%d-%ld", (int)getpid(), (long)time(NULL));
      setenv("COLLSCOPE_JOB_ID", id, 1);
    }
  }
  if (o->sim) {
    const char *sd = cli_sim_dir();
    if (!sd) {
      const char *e = getenv("COLLSCOPE_SIM_DIR");
      if (e && *e)
        run_say("--sim: COLLSCOPE_SIM_DIR=%s is not a directory", e);
      else
        run_say("--sim: simulator libraries not found (build tests/sim, or set COLLSCOPE_SIM_DIR)");
      return -1;
    }
    if (path_var_add("LD_LIBRARY_PATH", sd, 1)) return -1;
    if (o->verbose) run_say("simulator: %s", sd);
  }
  if (!o->no_shim) {
    const char *shim = cli_shim_path();
    if (shim) {
      if (path_var_add("LD_PRELOAD", shim, 0)) return -1;
      if (o->verbose) run_say("shim: %s", shim);
    } else if (o->verbose) {
      const char *e = getenv("COLLSCOPE_SHIM");
      run_say("shim %s not found: running without it", (e && *e) ? e : "libcollscope.so");
    }
  }
  return 0;
}

/* whether 127.0.0.1:port can be bound now (closed again at once) */
static int port_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

/* MASTER_PORT: a free port below the kernel's ephemeral range (ip_local_port_range), where
 * neither an outgoing connection's source port nor another program's bind to port 0 can take
 * it between this probe and rank 0's bind (a port the kernel hands out from the ephemeral
 * range could be given to anyone in that gap). Random in [10000, the range's start), probed;
 * the kernel's choice when that range is too small or all probes fail. */
int run_free_port(void) {
  int lo = 32768;
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f) {
    int a, b;
    if (fscanf(f, "%d %d", &a, &b) == 2 && a > 0 && a <= 65535) lo = a;
    fclose(f);
  }
  if (lo > 10000 + 256) {
    unsigned seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = (unsigned)getpid() ^ (unsigned)time(NULL);
    for (int i = 0; i < 64; i++) {
      seed = seed * 1103515245u + 12345u;
      int port = 10000 + (int)((seed >> 8) % (unsigned)(lo - 10000));
      if (port_free(port)) return port;
    }
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t al = sizeof a;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &al) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}
