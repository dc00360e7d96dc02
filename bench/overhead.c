/* bench/overhead.c: CPU cost collscope adds per intercepted collective, against the
 * null backend (bench/null: NCCL and CUDA entry points that return at once), printed
 * side by side for the bare call, the shim with timing on, and the shim with
 * COLLSCOPE_DISABLE=1; then a paced run (default 500k ops/s for 2 s) through the shim
 * that reports how many records reached the dump file and how many were dropped.
 *   bench_overhead SHIM_PATH NULL_CUDA_PATH [--rate N] [--seconds S]              */
#include <dirent.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 16384
#define ROUNDS 40

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static ncclComm_t setup(void) {
  ncclUniqueId id;
  ncclComm_t comm;
  ncclGetUniqueId(&id);
  if (ncclCommInitRank(&comm, 8, id, 0) != ncclSuccess) exit(3);
  return comm;
}

/* child: median ns per call over ROUNDS batches (queue drained between batches) */
static int child_overhead(void) {
  ncclComm_t comm = setup();
  float buf[4];
  double per[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    double t0 = now_s();
    for (int i = 0; i < BATCH; i++) ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, comm, NULL);
    per[r] = (now_s() - t0) * 1e9 / BATCH;
    usleep(40000); /* let the harvest thread drain: not part of the call cost */
  }
  qsort(per, ROUNDS, sizeof(double), cmp_d);
  printf("%.2f\n", per[ROUNDS / 2]);
  ncclCommDestroy(comm);
  return 0;
}

/* child: paced calls at `rate` per second for `secs` */
static int child_paced(double rate, double secs) {
  ncclComm_t comm = setup();
  float buf[4];
  double t0 = now_s();
  long n = 0, total = (long)(rate * secs);
  while (n < total) {
    long due = (long)((now_s() - t0) * rate);
    if (due > total) due = total;
    while (n < due) {
      ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, comm, NULL);
      n++;
    }
    if (n < total) usleep(100);
  }
  printf("%ld %.3f\n", n, now_s() - t0);
  ncclCommDestroy(comm);
  return 0;
}

static int run_child(char *self, const char *mode, const char *preload, int disable, const char *dir,
                     const char *cuda, const char *rate, const char *secs, char *out, size_t outlen) {
  int p[2];
  if (pipe(p)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    setenv("BENCH_CHILD", mode, 1);
    setenv("COLLSCOPE_LIBCUDA", cuda, 1);
    setenv("COLLSCOPE_DIR", dir, 1);
    if (preload)
      setenv("LD_PRELOAD", preload, 1);
    else
      unsetenv("LD_PRELOAD");
    if (disable)
      setenv("COLLSCOPE_DISABLE", "1", 1);
    else
      unsetenv("COLLSCOPE_DISABLE");
    execl(self, self, rate, secs, (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  ssize_t n = read(p[0], out, outlen - 1);
  out[n > 0 ? n : 0] = 0;
  close(p[0]);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* count op lines and sum drops in the dump files of dir */
static void scan_dumps(const char *dir, long *ops, long *drops) {
  *ops = *drops = 0;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strstr(e->d_name, ".jsonl")) continue;
    char path[8192];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
      if (strncmp(line, "{\"type\":\"op\"", 12) == 0)
        (*ops)++;
      else if (strncmp(line, "{\"type\":\"drops\"", 15) == 0)
        *drops += atol(line + 24);
    }
    fclose(f);
  }
  closedir(d);
}

int main(int argc, char **argv) {
  const char *mode = getenv("BENCH_CHILD");
  if (mode && !strcmp(mode, "overhead")) return child_overhead();
  if (mode && !strcmp(mode, "paced")) return child_paced(atof(argv[1]), atof(argv[2]));
  if (argc < 3) {
    fprintf(stderr, "usage: %s SHIM_PATH NULL_CUDA_PATH [--rate N] [--seconds S]\n", argv[0]);
    return 2;
  }
  const char *shim = argv[1], *cuda = argv[2], *rate = "500000", *secs = "2";
  for (int i = 3; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "--rate"))
      rate = argv[++i];
    else if (!strcmp(argv[i], "--seconds"))
      secs = argv[++i];
  }
  char dir[] = "/tmp/collscope-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return 1;
  self[n] = 0;
  char out[256];
  double bare, on, off;
  if (run_child(self, "overhead", NULL, 0, dir, cuda, "0", "0", out, sizeof(out))) return 1;
  bare = atof(out);
  if (run_child(self, "overhead", shim, 0, dir, cuda, "0", "0", out, sizeof(out))) return 1;
  on = atof(out);
  if (run_child(self, "overhead", shim, 1, dir, cuda, "0", "0", out, sizeof(out))) return 1;
  off = atof(out);
  printf("collscope overhead per ncclAllReduce call (null backend, median of %d batches of %d)\n", ROUNDS, BATCH);
  printf("%-28s %10s %10s %8s\n", "mode", "ns/call", "added ns", "ratio");
  printf("%-28s %10.1f %10s %8s\n", "bare (no shim)", bare, "-", "1.00");
  printf("%-28s %10.1f %10.1f %8.2f\n", "shim, timing on", on, on - bare, on / bare);
  printf("%-28s %10.1f %10.1f %8.2f\n", "shim, COLLSCOPE_DISABLE=1", off, off - bare, off / bare);

  char pdir[4200];
  snprintf(pdir, sizeof(pdir), "%s/paced", dir);
  if (run_child(self, "paced", shim, 0, pdir, cuda, rate, secs, out, sizeof(out))) return 1;
  long calls = 0;
  double took = 0;
  sscanf(out, "%ld %lf", &calls, &took);
  long ops, drops;
  scan_dumps(pdir, &ops, &drops);
  printf("paced run: %ld calls in %.2f s (%.0f ops/s): %ld records written, %ld dropped\n", calls, took,
         took > 0 ? (double)calls / took : 0.0, ops, drops);
  char cmd[4300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd)) return 1;
  return (ops == calls && drops == 0) ? 0 : 4;
}
