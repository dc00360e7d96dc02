/* bench/sim_latency.c: small-message AllReduce latency on the simulator, with and
 * without the shim, in one run. Each configuration starts 2 ranks (processes) of this
 * same binary, linked against the real -lnccl -lcudart and run on the simulator; each
 * rank times ITERS x (ncclAllReduce 8 B + cudaStreamSynchronize). The configurations
 * alternate (A B A B ...) so machine noise hits both; the table shows medians.
 * Also per configuration: the CPU time of the ncclAllReduce call itself on the calling
 * thread (call_cpu) and the whole process's CPU time per op (proc_cpu: every thread,
 * including collscope's harvest thread and the simulator's stream worker), for the shim
 * under each COLLSCOPE_TIMING mode (off, events, auto = NCCL profiler plugin).
 *   bench_sim_latency SIM_DIR SHIM_PATH [--iters N] [--rounds R]                  */
#include <cuda_runtime.h>
#include <sched.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}
static double cpu_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int rank_main(int iters) {
  int rank = atoi(getenv("RANK")), n = atoi(getenv("WORLD_SIZE"));
  const char *dir = getenv("BENCH_DIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/uid", dir);
  ncclUniqueId id;
  if (cudaSetDevice(rank)) return 3;
  if (rank == 0) {
    char tmp[4200];
    ncclGetUniqueId(&id);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(&id, sizeof(id), 1, f) != 1) return 4;
    fclose(f);
    rename(tmp, path);
  } else {
    FILE *f = NULL;
    for (int i = 0; i < 30000 && !(f = fopen(path, "rb")); i++) usleep(1000);
    if (!f || fread(&id, sizeof(id), 1, f) != 1) return 5;
    fclose(f);
  }
  ncclComm_t comm;
  cudaStream_t s;
  float *buf;
  if (ncclCommInitRank(&comm, n, id, rank) || cudaStreamCreate(&s) || cudaMalloc((void **)&buf, 8)) return 6;
  for (int i = 0; i < 200; i++) ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s), cudaStreamSynchronize(s);
  double *t = malloc(sizeof(double) * (size_t)iters), *c = malloc(sizeof(double) * (size_t)iters);
  double p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < iters; i++) {
    double t0 = now_us(), c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s);
    c[i] = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    cudaStreamSynchronize(s);
    t[i] = now_us() - t0;
  }
  double pc = (cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - p0) / iters;
  qsort(t, (size_t)iters, sizeof(double), cmp_d);
  qsort(c, (size_t)iters, sizeof(double), cmp_d);
  if (rank == 0) printf("%.3f %.1f %.1f\n", t[iters / 2], c[iters / 2], pc);
  ncclCommDestroy(comm);
  return 0;
}

static double last_call_ns, last_proc_ns;
static double run_config(const char *self, const char *sim, const char *shim, const char *iters, const char *timing) {
  char dir[] = "/tmp/collscope-lat-XXXXXX";
  if (!mkdtemp(dir)) return -1;
  int p[2];
  if (pipe(p)) return -1;
  pid_t pid[2];
  for (int r = 0; r < 2; r++) {
    pid[r] = fork();
    if (pid[r] == 0) {
      char rs[8];
      snprintf(rs, sizeof(rs), "%d", r);
      setenv("RANK", rs, 1);
      /* one core per rank (when there are enough): the ranks' threads then hand work to
       * each other on a fixed core instead of wherever the scheduler puts them, which
       * otherwise dominates the run-to-run spread on a 2-core machine */
      long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
      if (ncpu >= 2) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(r % (int)ncpu, &set);
        sched_setaffinity(0, sizeof set, &set);
      }
      setenv("WORLD_SIZE", "2", 1);
      setenv("BENCH_DIR", dir, 1);
      setenv("BENCH_RANK", "1", 1);
      setenv("LD_LIBRARY_PATH", sim, 1);
      setenv("COLLSCOPE_DIR", dir, 1);
      setenv("COLLSCOPE_LOG", "quiet", 1);
      if (shim)
        setenv("LD_PRELOAD", shim, 1);
      else
        unsetenv("LD_PRELOAD");
      if (timing)
        setenv("COLLSCOPE_TIMING", timing, 1);
      else
        unsetenv("COLLSCOPE_TIMING");
      if (r == 0) dup2(p[1], 1);
      close(p[0]);
      execl(self, self, iters, (char *)NULL);
      _exit(127);
    }
  }
  close(p[1]);
  char out[64] = "";
  ssize_t n = read(p[0], out, sizeof(out) - 1);
  out[n > 0 ? n : 0] = 0;
  close(p[0]);
  int bad = 0;
  for (int r = 0; r < 2; r++) {
    int st;
    waitpid(pid[r], &st, 0);
    bad |= !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd)) bad = 1;
  double lat = -1;
  if (sscanf(out, "%lf %lf %lf", &lat, &last_call_ns, &last_proc_ns) < 1) bad = 1;
  return bad ? -1 : lat;
}

int main(int argc, char **argv) {
  if (getenv("BENCH_RANK")) return rank_main(atoi(argv[1]));
  if (argc < 3) {
    fprintf(stderr, "usage: %s SIM_DIR SHIM_PATH [--iters N] [--rounds R]\n", argv[0]);
    return 2;
  }
  const char *iters = "2000";
  int rounds = 5;
  for (int i = 3; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "--iters"))
      iters = argv[++i];
    else if (!strcmp(argv[i], "--rounds"))
      rounds = atoi(argv[++i]);
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return 1;
  self[n] = 0;
  /* configurations, alternated each round: bare, then the shim under each timing mode */
  static const char *const names[] = {"bare", "shim timing=off", "shim timing=events", "shim timing=auto"};
  static const char *const modes[] = {NULL, "off", "events", "auto"};
  enum { NC = 4 };
  double lat[NC][64], call[NC][64], proc[NC][64];
  if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < NC; k++) {
      lat[k][r] = run_config(self, argv[1], k ? argv[2] : NULL, iters, modes[k]);
      call[k][r] = last_call_ns;
      proc[k][r] = last_proc_ns;
      if (lat[k][r] < 0) {
        fprintf(stderr, "a rank failed (%s)\n", names[k]);
        return 1;
      }
    }
  printf("simulator AllReduce 8 B + stream sync, 2 ranks, median of %d rounds x %s iterations\n", rounds, iters);
  printf("%-20s %12s %8s %14s %14s\n", "mode", "latency us", "ratio", "call_cpu ns", "proc_cpu ns/op");
  for (int k = 0; k < NC; k++) {
    qsort(lat[k], (size_t)rounds, sizeof(double), cmp_d);
    qsort(call[k], (size_t)rounds, sizeof(double), cmp_d);
    qsort(proc[k], (size_t)rounds, sizeof(double), cmp_d);
  }
  for (int k = 0; k < NC; k++)
    printf("%-20s %12.2f %8.3f %14.0f %14.0f\n", names[k], lat[k][rounds / 2], lat[k][rounds / 2] / lat[0][rounds / 2],
           call[k][rounds / 2], proc[k][rounds / 2]);
  return 0;
}
