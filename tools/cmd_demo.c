/* tools/cmd_demo.c: `collscope demo` -- the data-parallel test job (tests/apps dp_train)
 * with 8 ranks on 2 simulated hosts, on the simulator, through cli_run_launch() (the
 * code of `collscope run`), then a summary and what the shim wrote; then the same job with
 * a straggler, with a corrupted collective, and on a mixed cluster with a power-capped GPU;
 * then the balance section's advice for a mixed cluster, applied; last the straggler job in
 * the always-on recording mode (tools/demo_always_on.c). */
#include "cli.h"
#include "collscope/detect.h"
#include "collscope/topology.h"
#include "dump/dumpfile.h"

#include <jansson.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEMO_RANKS 8
#define DEMO_HOSTS "simhost[1-2]"
#define DEMO_NHOSTS 2
#define DEMO_SIZE (1u << 20) /* dp_train --size: buckets of SIZE, SIZE/8, SIZE/64 bytes */

static const char help_demo[] =
    "usage: collscope demo [--keep DIR] [--steps N] [--no-shim] [-v]\n"
    "\n"
    "Runs the data-parallel test job (tests/apps dp_train: fp32 AllReduce of gradient\n"
    "buckets of several sizes each step, results checked exactly) with 8 ranks on the\n"
    "two simulated hosts simhost[1-2] on the CUDA/NCCL simulator, through the same code\n"
    "as `collscope run -n 8 --hosts simhost[1-2] --sim --tag-output`, then prints what\n"
    "it did (ranks, hosts, steps, sizes, pass/fail, wall time) and the dump files the\n"
    "shim wrote. Then the job with a straggler, with a flipped bit, on a mixed\n"
    "cluster, the balance section's advice applied, a topology plan, the hosts\n"
    "implicated, and the straggler job recorded always-on (COLLSCOPE_RECORD=summary:\n"
    "its flight-recorder windows, its bytes against full mode). No GPU is needed.\n"
    "\n"
    "options:\n"
    "  --keep DIR     write the dump files into DIR (created if missing); default: a\n"
    "                 fresh collscope-demo-<date>-<time> directory under $COLLSCOPE_DIR,\n"
    "                 or under the current directory when COLLSCOPE_DIR is unset.\n"
    "                 The ranks get COLLSCOPE_DIR set to that directory.\n"
    "  --steps N      training steps (default 5)\n"
    "  --no-shim      run without libcollscope.so (no dump files)\n"
    "  -v, --verbose  launcher details (see collscope run --verbose)\n"
    "  -h, --help     this text\n"
    "\n"
    "exit status: 0 if every rank checked its results, else the job's status.\n";

void cmd_demo_help(FILE *out) {
  fputs(help_demo, out);
  fputc('\n', out);
  cli_help_env(out);
}

/* -h or --help anywhere before "--", even where an option would take it as its value */
static int wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--")) return 0;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void human_bytes(char *buf, size_t len, unsigned long long b) {
  if (b >= (1ull << 20) && b % (1ull << 20) == 0)
    snprintf(buf, len, "%llu MiB", b >> 20);
  else if (b >= 1024 && b % 1024 == 0)
    snprintf(buf, len, "%llu KiB", b >> 10);
  else
    snprintf(buf, len, "%llu B", b);
}

/* mkdir -p */
int cli_mkdirs(const char *path) {
  char p[PATH_MAX];
  if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
    *s = '/';
  }
  if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

/* demo_html(): the report of dir as an HTML page, dir/report.html, and its path */
static void demo_html(const char *dir) {
  char page[PATH_MAX];
  if (snprintf(page, sizeof page, "%s/report.html", dir) >= (int)sizeof page) return;
  char *hargv[] = {"report", (char *)dir, "--html", "-o", page, NULL};
  fflush(stdout);
  if (cmd_report(5, hargv) == 0) printf("  HTML report: %s (open it in a browser)\n", page);
}

/* demo_after_run(): what the demo shows after the job: how many per-rank dump files
 * the shim wrote, the `collscope report` of them, and a Perfetto trace next to them. */
static void demo_after_run(const char *dir) {
  DIR *d = opendir(dir);
  size_t n = 0;
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      size_t l = strlen(e->d_name);
      if (!strncmp(e->d_name, "collscope-", 10) &&
          ((l > 6 && !strcmp(e->d_name + l - 6, ".jsonl")) || (l > 10 && !strcmp(e->d_name + l - 10, ".jsonl.zst"))))
        n++;
    }
    closedir(d);
  }
  if (n == 0) {
    printf("  no dump files in %s (was the shim preloaded? see collscope run --verbose)\n", dir);
    return;
  }
  printf("  %zu per-rank dump files in %s\n\n", n, dir);
  fflush(stdout);
  char *rargv[] = {"report", (char *)dir, NULL};
  cmd_report(2, rargv);
  char trace[PATH_MAX];
  if (snprintf(trace, sizeof trace, "%s/trace.json", dir) < (int)sizeof trace) {
    char *targv[] = {"trace", (char *)dir, "-o", trace, NULL};
    fflush(stdout);
    if (cmd_trace(4, targv) == 0) printf("\n  Perfetto/Chrome trace: %s (open it in ui.perfetto.dev)\n", trace);
  }
  demo_html(dir);
}

/* demo_straggler(): the same job again with rank 5's GPU slowed by 3 ms before each
 * collective (simulator fault slow:rank=5,us=3000): rank 0's online-exchange line during the
 * run, then the report's stragglers section: collscope names rank 5, its host and kind
 * compute. */
/* demo_suspects(): the demo's runs (clean, straggler, SDC) through `collscope suspects`:
 * the hosts to drain or watch, and the scheduler actions that follow. */
static void demo_suspects(const char *absdir) {
  char sdir[PATH_MAX], cdir[PATH_MAX];
  struct stat st;
  char *argv[8] = {"suspects", (char *)absdir};
  int argc = 2;
  if (snprintf(sdir, sizeof sdir, "%s/straggler", absdir) < (int)sizeof sdir && stat(sdir, &st) == 0) argv[argc++] = sdir;
  if (snprintf(cdir, sizeof cdir, "%s/sdc", absdir) < (int)sizeof cdir && stat(cdir, &st) == 0) argv[argc++] = cdir;
  printf("\ncollscope demo: the hosts these %d runs implicate (collscope suspects %s", argc - 1, absdir);
  for (int i = 2; i < argc; i++) printf(" %s", argv[i]);
  printf("):\n");
  fflush(stdout);
  cmd_suspects(argc, argv);
  printf("  as scheduler actions (--format slurm):\n");
  fflush(stdout);
  argv[argc++] = "--format";
  argv[argc++] = "slurm";
  cmd_suspects(argc, argv);
  fflush(stdout);
}

static void demo_straggler(struct cli_run_opts *o, const char *absdir, char *app, long steps, char *size_s) {
  char sdir[PATH_MAX], env_dir[PATH_MAX + 32], steps_s[32];
  if (snprintf(sdir, sizeof sdir, "%s/straggler", absdir) >= (int)sizeof sdir || cli_mkdirs(sdir) != 0) return;
  snprintf(env_dir, sizeof env_dir, "COLLSCOPE_DIR=%s", sdir);
  snprintf(steps_s, sizeof steps_s, "%ld", steps);
  char *env[] = {env_dir, "COLLSCOPE_SIM_FAULTS=slow:rank=5,us=3000", "COLLSCOPE_ONLINE_EVERY=16"};
  char *app_argv[] = {app, "--steps", steps_s, "--size", size_s, NULL};
  o->env = env;
  o->nenv = 3;
  o->argv = app_argv;
  o->tag_output = 0;
  printf("\ncollscope demo: straggler -- the same job, %ld steps, with rank 5's GPU 3 ms late to every\n"
         "  collective (COLLSCOPE_SIM_FAULTS=slow:rank=5,us=3000); dumps in %s\n"
         "  during the run, rank 0 logs what the online exchange (every 16 collectives here,\n"
         "  COLLSCOPE_ONLINE_EVERY=16) finds; afterwards the report reads the dumps:\n",
         steps, sdir);
  fflush(stdout);
  int rc = cli_run_launch(o);
  if (rc != 0) {
    printf("  the straggler job failed (status %d)\n", rc);
    return;
  }
  struct cs_dumpset *set = cs_dumpset_load(sdir);
  if (!set->fatal) {
    struct cs_det_params p;
    struct cs_det_result det;
    cs_det_params_default(&p);
    cs_det_params_env(&p);
    if (cli_detect_dumpset(set, &p, &det) == 0) {
      cli_text_stragglers(&det, &p, stdout);
      for (size_t i = 0; i < det.nstragglers; i++)
        if (det.stragglers[i].rank >= 0)
          printf("\n  caught: rank %d on %s is the straggler (%s): last to arrive in %.0f%% of the collectives,\n"
                 "  %.0f us late on a median collective of %.0f us; first flagged after %zu collectives\n",
                 det.stragglers[i].rank, det.stragglers[i].host, cs_det_kind_name(det.stragglers[i].kind),
                 det.stragglers[i].share_last * 100, det.stragglers[i].lateness_us, det.stragglers[i].median_dur_us,
                 det.stragglers[i].first_flag_instance);
      cs_det_result_free(&det);
    }
  }
  cs_dumpset_free(set);
  demo_html(sdir);
  fflush(stdout);
}

/* demo_health(): why, not only who: a mixed cluster (simhost4's GPUs are A100s, 0.4x the
 * speed of the other hosts' H100s) and rank 1's GPU held at its power cap (simulator faults,
 * health sampled every 100 ms through the simulated NVML). The report's stragglers, each
 * with the causes its rank's health samples show (tools/report/report_health.c). */
static void demo_health(struct cli_run_opts *o, const char *absdir, char *app) {
  char hdir[PATH_MAX], env_dir[PATH_MAX + 32];
  if (snprintf(hdir, sizeof hdir, "%s/health", absdir) >= (int)sizeof hdir || cli_mkdirs(hdir) != 0) return;
  snprintf(env_dir, sizeof env_dir, "COLLSCOPE_DIR=%s", hdir);
  char *env[] = {env_dir, "COLLSCOPE_SIM_FAULTS=link:a=*,b=*,us=300;throttle:rank=1,reason=power,pct=150",
                 "COLLSCOPE_SIM_GPU_MODEL=simhost[1-3]=NVIDIA H100 80GB HBM3;simhost4=NVIDIA A100-SXM4-80GB,speed=0.4",
                 "COLLSCOPE_HEALTH_MS=100", "COLLSCOPE_ONLINE_EVERY=16"};
  char *app_argv[] = {app, "--steps", "30", "--size", "256K", "--compute-us", "2000", NULL};
  const char *hosts = o->hosts;
  o->env = env;
  o->nenv = 5;
  o->argv = app_argv;
  o->hosts = "simhost[1-4]";
  o->tag_output = 0;
  printf("\ncollscope demo: GPU health -- 8 ranks on 4 hosts, 30 steps; simhost4's GPUs are A100s running\n"
         "  collectives 0.4x as fast as the H100s of simhost[1-3] (COLLSCOPE_SIM_GPU_MODEL), and rank 1's GPU\n"
         "  sits at its power cap (COLLSCOPE_SIM_FAULTS=throttle:rank=1,reason=power,pct=150); NVML sampled\n"
         "  every 100 ms (COLLSCOPE_HEALTH_MS=100); dumps in %s\n",
         hdir);
  fflush(stdout);
  int rc = cli_run_launch(o);
  o->hosts = hosts;
  if (rc != 0) {
    printf("  the health job failed (status %d)\n", rc);
    return;
  }
  int st = 0;
  json_t *doc = cli_report_json(hdir, NULL, NULL, 0, &st);
  json_t *stragglers = doc ? json_object_get(doc, "stragglers") : NULL;
  size_t i, k;
  json_t *s, *c;
  printf("  the report's stragglers and their causes (collscope report %s; docs/health.md):\n", hdir);
  json_array_foreach(stragglers, i, s) {
    printf("    rank %lld (%s):", (long long)json_integer_value(json_object_get(s, "rank")),
           json_string_value(json_object_get(s, "host")) ? json_string_value(json_object_get(s, "host")) : "network");
    json_t *causes = json_object_get(s, "causes");
    if (!json_array_size(causes)) printf(" no cause in its health samples");
    json_array_foreach(causes, k, c) printf("%s %s: %s", k ? ";" : "", json_string_value(json_object_get(c, "kind")),
                                            json_string_value(json_object_get(c, "detail")));
    printf("\n");
  }
  if (!json_array_size(stragglers)) printf("    (none)\n");
  json_decref(doc);
  printf("  the per-model split of the ops and ranks tables: collscope report %s --by-model\n", hdir);
  demo_html(hdir);
  fflush(stdout);
}

/* one balance job: 4 ranks, 2 H100s on simhost1 and 2 A100s at half their speed on simhost2,
 * on the modeled clock (every op timed); its report's balance section (NULL on failure) */
static json_t *balance_job(const struct cli_run_opts *o, const char *dir, char *app, const char *shares) {
  char env_dir[PATH_MAX + 32];
  snprintf(env_dir, sizeof env_dir, "COLLSCOPE_DIR=%s", dir);
  char *env[] = {env_dir, "COLLSCOPE_SIM_CLOCK=model", "COLLSCOPE_TIMING=events", "COLLSCOPE_EVENT_SAMPLE=1",
                 "COLLSCOPE_SIM_GPUS=2",
                 "COLLSCOPE_SIM_GPU_MODEL=simhost1=NVIDIA H100 80GB HBM3;simhost2=NVIDIA A100-SXM4-80GB,speed=0.5"};
  char *app_argv[] = {app, "--steps", "8", "--size", "256K", "--compute-us", "20000",
                      shares ? "--shares" : NULL, (char *)shares, NULL};
  struct cli_run_opts b = *o;
  b.nranks = 4;
  b.hosts = "simhost[1-2]";
  b.env = env;
  b.nenv = 6;
  b.argv = app_argv;
  b.tag_output = 0;
  if (cli_mkdirs(dir) != 0 || cli_run_launch(&b) != 0) return NULL;
  int st = 0;
  json_t *doc = cli_report_json(dir, NULL, NULL, 0, &st);
  json_t *bal = doc ? json_incref(json_object_get(doc, "balance")) : NULL;
  json_decref(doc);
  return bal;
}

/* demo_balance(): what to do about the slower GPUs: the balance section's shares for 2 H100s
 * and 2 A100s at half speed, the job run again with them (dp_train --shares), and the step
 * time measured from its dumps against the prediction (docs/balance.md) */
static void demo_balance(const struct cli_run_opts *o, const char *absdir, char *app) {
  char d0[PATH_MAX], d1[PATH_MAX];
  if (snprintf(d0, sizeof d0, "%s/balance/even", absdir) >= (int)sizeof d0 ||
      snprintf(d1, sizeof d1, "%s/balance/shares", absdir) >= (int)sizeof d1)
    return;
  printf("\ncollscope demo: balance -- what to do about slower GPUs: 4 ranks, 2 H100s (simhost1) and 2 A100s at\n"
         "  half their speed (simhost2), 8 steps of dp_train --compute-us 20000 on the modeled clock\n"
         "  (COLLSCOPE_SIM_CLOCK=model); dumps in %s\n",
         d0);
  fflush(stdout);
  json_t *bal = balance_job(o, d0, app, NULL);
  if (!bal || !json_is_number(json_object_get(bal, "gain_pct"))) {
    printf("  the balance job failed or gave no prediction\n");
    json_decref(bal);
    return;
  }
  char shares[256];
  size_t len = 0, i;
  json_t *r;
  printf("  the report's balance section (collscope report %s):\n", d0);
  json_array_foreach(json_object_get(bal, "ranks"), i, r) {
    printf("    rank %lld %-24s compute %8.0f us/step, share %.4f (%s)\n",
           (long long)json_integer_value(json_object_get(r, "rank")), json_string_value(json_object_get(r, "gpu")),
           json_number_value(json_object_get(r, "compute_us")), json_number_value(json_object_get(r, "share")),
           json_string_value(json_object_get(r, "verdict")));
    if (len < sizeof shares)
      len += (size_t)snprintf(shares + len, sizeof shares - len, "%s%.4f", i ? "," : "",
                              json_number_value(json_object_get(r, "share")));
  }
  double now = json_number_value(json_object_get(bal, "step_us_now"));
  double pred = json_number_value(json_object_get(bal, "step_us_balanced"));
  printf("    step %.0f us now, %.0f us predicted with these shares (%.1f %% faster); action: %s\n", now, pred,
         json_number_value(json_object_get(bal, "gain_pct")), json_string_value(json_object_get(bal, "action")));
  json_decref(bal);
  printf("  the job again with dp_train --shares %s (dumps in %s):\n", shares, d1);
  fflush(stdout);
  bal = balance_job(o, d1, app, shares);
  if (bal && json_is_number(json_object_get(bal, "step_us_now"))) {
    double after = json_number_value(json_object_get(bal, "step_us_now"));
    printf("    step %.0f us measured: %.0f %% of the predicted gain realised (docs/balance.md)\n", after,
           now > pred ? 100.0 * (now - after) / (now - pred) : 0.0);
  } else {
    printf("    the rerun failed\n");
  }
  json_decref(bal);
  fflush(stdout);
}

/* demo_sdc(): the job again with a bit flipped in the AllReduce output that rank 6
 * receives at seq 3 (simulator fault flip:...,at=out), SDC checks on every collective;
 * then the report's sdc section: the fingerprint check names rank 6 and its host. The
 * flipped rank's own result check fails, so the other ranks are not killed when it exits. */
static void demo_sdc(struct cli_run_opts *o, const char *absdir, char *app, char *size_s) {
  char sdir[PATH_MAX], env_dir[PATH_MAX + 32];
  if (snprintf(sdir, sizeof sdir, "%s/sdc", absdir) >= (int)sizeof sdir || cli_mkdirs(sdir) != 0) return;
  snprintf(env_dir, sizeof env_dir, "COLLSCOPE_DIR=%s", sdir);
  char *env[] = {env_dir, "COLLSCOPE_SDC=all", "COLLSCOPE_SDC_MIN_BYTES=0",
                 "COLLSCOPE_SIM_FAULTS=flip:rank=6,seq=3,elem=1000,bit=27,at=out"};
  char *app_argv[] = {app, "--steps", "2", "--size", size_s, NULL};
  o->env = env;
  o->nenv = 4;
  o->argv = app_argv;
  o->tag_output = 0;
  o->kill_on_fail = 0;
  printf("\ncollscope demo: silent data corruption -- 2 steps with bit 27 of element 1000 flipped in the\n"
         "  AllReduce output rank 6 receives at seq 3 (COLLSCOPE_SIM_FAULTS=flip:rank=6,seq=3,elem=1000,bit=27,at=out),\n"
         "  checks on every collective (COLLSCOPE_SDC=all); dumps in %s\n",
         sdir);
  fflush(stdout);
  int rc = cli_run_launch(o);
  printf("  job status %d (rank 6's own result check fails: expected)\n", rc);
  fflush(stdout);
  if (cli_report_sdc_text(sdir, stdout) > 0)
    printf("\n  caught: the fingerprint of rank 6's output differs from the other 7 ranks' on seq 3\n");
  demo_html(sdir);
  fflush(stdout);
}

/* demo_topology(): the rack/switch planner on a small made-up fabric: 4 hosts launched
 * interleaved across 2 leaf switches (what a scheduler often hands out), the order
 * collscope proposes and the ring hops that cross a leaf before and after. */
static void demo_topology(void) {
  static const char map[] =
      "# host leaf spine\n"
      "simhost1 leafA spine0\nsimhost2 leafB spine0\nsimhost3 leafA spine0\nsimhost4 leafB spine0\n";
  const char *hosts[] = {"simhost1", "simhost2", "simhost3", "simhost4"};
  struct cs_topo *t = NULL;
  struct cs_plan p;
  char err[256];
  if (cs_topo_parse(map, sizeof map - 1, "demo-map", CS_TOPO_MAP, &t, err, sizeof err) != 0) {
    printf("  topology demo skipped: %s\n", err);
    return;
  }
  if (cs_topo_plan(t, hosts, 4, &p, err, sizeof err) != 0) {
    printf("  topology demo skipped: %s\n", err);
    cs_topo_free(t);
    return;
  }
  printf("\ncollscope demo: topology-aware ring order (collscope topo plan)\n");
  printf("  fabric: leafA = simhost1, simhost3; leafB = simhost2, simhost4; launch order simhost[1-4]\n");
  printf("  new order:");
  for (size_t i = 0; i < p.n; i++) printf(" %s", hosts[p.order[i]]);
  printf("\n  ring hops crossing a leaf switch: %ld before, %ld after (NCCL rings follow rank order)\n",
         p.before.ring[1], p.after.ring[1]);
  printf("  apply it with: collscope run --topology FILE ...   or COLLSCOPE_TOPOLOGY=FILE in the job\n");
  cs_plan_free(&p);
  cs_topo_free(t);
}

/* the demo's options */
struct demo_opts {
  const char *keep; /* --keep DIR, NULL: a fresh directory */
  long steps;
  int no_shim, verbose;
};
/* the command line into d; -1: go on, else the exit status */
static int demo_args(int argc, char **argv, struct demo_opts *d) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--no-shim")) {
      d->no_shim = 1;
      continue;
    }
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
      d->verbose = 1;
      continue;
    }
    if (!strcmp(a, "--keep") || !strncmp(a, "--keep=", 7)) {
      d->keep = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
      if (!d->keep || !*d->keep) {
        fprintf(stderr, "collscope demo: --keep needs a directory\n");
        return CLI_EXIT_USAGE;
      }
      continue;
    }
    if (!strcmp(a, "--steps") || !strncmp(a, "--steps=", 8)) {
      const char *v = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
      char *end;
      d->steps = v ? strtol(v, &end, 10) : -1;
      if (!v || *end || d->steps < 1 || d->steps > 100000) {
        fprintf(stderr, "collscope demo: --steps: expected 1..100000\n");
        return CLI_EXIT_USAGE;
      }
      continue;
    }
    fprintf(stderr, "collscope demo: unknown argument '%s' (collscope demo --help)\n", a);
    return CLI_EXIT_USAGE;
  }

  return -1;
}

/* the dumps' directory, made if missing: DIR of --keep, else a fresh
 * collscope-demo-<date>-<time> under $COLLSCOPE_DIR (or .); its absolute path into absdir.
 * 0, or 1 with a message. */
static int demo_dir(const char *keep, char *absdir, size_t cap) {
  char dir[PATH_MAX];
  if (keep) {
    snprintf(dir, sizeof dir, "%s", keep);
  } else {
    const char *base = getenv("COLLSCOPE_DIR");
    if (!base || !*base) base = ".";
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(dir, sizeof dir, "%s/collscope-demo-%s", base, stamp);
    struct stat st;
    if (stat(dir, &st) == 0) snprintf(dir, sizeof dir, "%s/collscope-demo-%s-%d", base, stamp, (int)getpid());
  }
  if (cli_mkdirs(dir) != 0) {
    fprintf(stderr, "collscope demo: cannot create %s: %s\n", dir, strerror(errno));
    return 1;
  }
  char resolved[PATH_MAX];
  snprintf(absdir, cap, "%s", realpath(dir, resolved) ? resolved : dir);
  return 0;
}

int cmd_demo(int argc, char **argv) {
  if (wants_help(argc, argv)) {
    cmd_demo_help(stdout);
    return 0;
  }
  struct demo_opts d = {NULL, 5, 0, 0};
  int st = demo_args(argc, argv, &d);
  if (st >= 0) return st;
  const char *keep = d.keep;
  long steps = d.steps;
  int no_shim = d.no_shim, verbose = d.verbose;
  const char *sim = cli_sim_dir();
  if (!sim) {
    fprintf(stderr, "collscope demo: simulator libraries not found (build tests/sim, or set COLLSCOPE_SIM_DIR)\n");
    return 1;
  }
  const char *apps = cli_apps_dir();
  char app[PATH_MAX];
  if (!apps || snprintf(app, sizeof app, "%s/dp_train", apps) >= (int)sizeof app || access(app, X_OK) != 0) {
    fprintf(stderr, "collscope demo: test job dp_train not found (build tests/apps, or set COLLSCOPE_APPS_DIR)\n");
    return 1;
  }

  char absdir[PATH_MAX];
  if (demo_dir(keep, absdir, sizeof absdir)) return 1;

  char steps_s[32], size_s[32], env_dir[PATH_MAX + 32];
  snprintf(steps_s, sizeof steps_s, "%ld", steps);
  snprintf(size_s, sizeof size_s, "%u", DEMO_SIZE);
  snprintf(env_dir, sizeof env_dir, "COLLSCOPE_DIR=%s", absdir);
  char *env[] = {env_dir};
  char *app_argv[] = {app, "--steps", steps_s, "--size", size_s, NULL};

  struct cli_run_opts o;
  cli_run_opts_init(&o);
  o.nranks = DEMO_RANKS;
  o.hosts = DEMO_HOSTS;
  o.sim = 1;
  o.no_shim = no_shim;
  o.tag_output = 1;
  o.verbose = verbose;
  o.env = env;
  o.nenv = 1;
  o.argv = app_argv;

  const char *shim = no_shim ? NULL : cli_shim_path();
  char b0[32], b1[32], b2[32];
  human_bytes(b0, sizeof b0, DEMO_SIZE);
  human_bytes(b1, sizeof b1, DEMO_SIZE / 8);
  human_bytes(b2, sizeof b2, DEMO_SIZE / 64);
  printf("collscope demo: data-parallel training on the CUDA/NCCL simulator\n");
  printf("  job:    dp_train, %d ranks on %d simulated hosts %s (%d GPUs each), %ld steps\n",
         DEMO_RANKS, DEMO_NHOSTS, DEMO_HOSTS, DEMO_RANKS / DEMO_NHOSTS, steps);
  printf("  work:   per step, fp32 sum-AllReduce of gradient buckets of %s, %s and %s, results checked exactly\n",
         b0, b1, b2);
  printf("  shim:   %s\n", no_shim ? "off (--no-shim)" : shim ? shim
                                                              : "not found: running without it");
  printf("  dumps:  %s\n", absdir);
  printf("  same as: collscope run -n %d --hosts '%s' --sim --tag-output --env COLLSCOPE_DIR=%s -- %s --steps %ld --size %u\n\n",
         DEMO_RANKS, DEMO_HOSTS, absdir, app, steps, DEMO_SIZE);
  fflush(stdout);

  double t0 = now_s();
  int rc = cli_run_launch(&o);
  double wall = now_s() - t0;

  printf("\ncollscope demo: %s -- %d ranks, %d hosts, %ld steps, %.2f s wall time%s\n",
         rc == 0 ? "PASS" : "FAIL", DEMO_RANKS, DEMO_NHOSTS, steps, wall,
         rc == 0 ? ", every rank verified its AllReduce results" : "");
  if (rc != 0) printf("  the job's exit status was %d (see the rank output above)\n", rc);
  demo_after_run(absdir);
  printf("  Prometheus: run `collscope exporter` (serves /metrics on 127.0.0.1:9464) while a job runs; see docs/exporter.md\n");
  fflush(stdout);
  if (rc == 0) demo_straggler(&o, absdir, app, steps < 20 ? 20 : steps, size_s);
  if (rc == 0) demo_sdc(&o, absdir, app, size_s);
  if (rc == 0) demo_health(&o, absdir, app);
  if (rc == 0) demo_balance(&o, absdir, app);
  if (rc == 0) demo_topology();
  if (rc == 0) demo_suspects(absdir);
  if (rc == 0) demo_always_on(&o, absdir, app, size_s);
  return rc;
}
