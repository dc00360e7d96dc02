/* tools/demo_always_on.c: `collscope demo`'s always-on step: the straggler job recorded as a
 * job of weeks would be (COLLSCOPE_RECORD=summary, docs/always-on.md) on the simulator's
 * modeled clock, then the report's flight section (the online finding's windows), the ops the
 * report read from summaries, one finding window's last op on every rank, and the bytes
 * written against the same job recorded in full mode. */
#include "cli.h"
#include "dump/dumpfile.h"

#include <dirent.h>
#include <limits.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define AO_FLIGHT_OPS "256"
#define AO_FLIGHT_AFTER "64"
#define AO_STEPS 100 /* long enough in host time for the online exchange to be up (it starts on its own thread) */

/* bytes and files of the dump files (collscope-*.jsonl, *.jsonl.zst) in dir */
static unsigned long long dump_bytes(const char *dir, size_t *nfiles) {
  unsigned long long sum = 0;
  *nfiles = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (strncmp(e->d_name, "collscope-", 10) != 0 ||
        !((l > 6 && !strcmp(e->d_name + l - 6, ".jsonl")) || (l > 10 && !strcmp(e->d_name + l - 10, ".jsonl.zst"))))
      continue;
    char p[PATH_MAX];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p && stat(p, &st) == 0) {
      sum += (unsigned long long)st.st_size;
      (*nfiles)++;
    }
  }
  closedir(d);
  return sum;
}

/* the report's text into a file, then its flight section and its summaries note on stdout */
static void print_flight(const char *dir) {
  char out[PATH_MAX];
  if (snprintf(out, sizeof out, "%s/report.txt", dir) >= (int)sizeof out) return;
  char *rargv[] = {"report", (char *)dir, "-o", out, NULL};
  fflush(stdout);
  if (cmd_report(4, rargv) != 0) return;
  FILE *f = fopen(out, "r");
  if (!f) return;
  char line[1024];
  int in_flight = 0;
  printf("  the report's flight section (collscope report %s):\n", dir);
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "# Flight recorder", 17))
      in_flight = 1;
    else if (in_flight && (line[0] == '\n' || (line[0] == '#' && line[1] == ' ' && isupper((unsigned char)line[2]))))
      in_flight = 0; /* a blank line or the next section's title ends it; its own lines go on in lower case */
    if (in_flight) printf("  %s", line);
  }
  rewind(f);
  while (fgets(line, sizeof line, f))
    if (strstr(line, "ops read from summaries")) printf("  the report's note:%s%s", line[0] == ' ' ? "" : " ", line);
  fclose(f);
}

/* the first finding window of the lowest rank, and its trigger op (the last op the ring held
 * when the finding came) on every rank whose windows hold that op */
static void print_window_detail(const char *dir) {
  struct cs_dumpset *set = cs_dumpset_load(dir);
  if (set->fatal) {
    cs_dumpset_free(set);
    return;
  }
  const struct cs_dumpfile *wf = NULL;
  const struct cs_window_rec *w = NULL;
  for (size_t i = 0; i < set->nfiles && !w; i++)
    for (size_t j = 0; j < set->files[i].nwindows && !w; j++)
      if (set->files[i].windows[j].reason && !strcmp(set->files[i].windows[j].reason, "finding")) {
        wf = &set->files[i];
        w = &wf->windows[j];
      }
  const struct cs_op_rec *last = NULL; /* the window's last op before the trigger */
  for (size_t k = 0; w && k < wf->nops; k++) {
    const struct cs_op_rec *o = &wf->ops[k];
    if (o->in_window && o->line > w->line && o->line <= w->line + w->before) last = o;
  }
  if (!last) {
    printf("  (no finding window with op lines)\n");
    cs_dumpset_free(set);
    return;
  }
  printf("  rank %d's finding window in detail: %llu op lines before the finding, up to %llu after; the\n"
         "  last op before it, seq %lld %s of %llu bytes, as every rank's window holds it:\n",
         w->rank, (unsigned long long)w->before, (unsigned long long)w->after, (long long)last->seq,
         last->op_name ? last->op_name : "?", (unsigned long long)last->bytes);
  for (size_t i = 0; i < set->nfiles; i++)
    for (size_t k = 0; k < set->files[i].nops; k++) {
      const struct cs_op_rec *o = &set->files[i].ops[k];
      if (!o->in_window || o->seq != last->seq || o->bytes != last->bytes || o->comm_size != last->comm_size ||
          !o->op_name || !last->op_name || strcmp(o->op_name, last->op_name) != 0)
        continue;
      printf("    rank %d  %-9s seq %lld  %8.1f us on the GPU\n", o->rank, o->op_name, (long long)o->seq, o->dur_us);
      break;
    }
  cs_dumpset_free(set);
}

/* one run of the job into dir, in mode ("summary" or "full"); its status */
static int run_mode(struct cli_run_opts *o, const char *dir, const char *mode, char *app, char *steps_s, char *size_s) {
  char env_dir[PATH_MAX + 32], env_mode[64];
  if (cli_mkdirs(dir) != 0) return 1;
  snprintf(env_dir, sizeof env_dir, "COLLSCOPE_DIR=%s", dir);
  snprintf(env_mode, sizeof env_mode, "COLLSCOPE_RECORD=%s", mode);
  char *env[] = {env_dir,
                 env_mode,
                 "COLLSCOPE_FLIGHT_OPS=" AO_FLIGHT_OPS,
                 "COLLSCOPE_FLIGHT_AFTER=" AO_FLIGHT_AFTER,
                 "COLLSCOPE_SIM_FAULTS=slow:rank=5,us=3000",
                 "COLLSCOPE_ONLINE_EVERY=16",
                 /* the windows of the online exchange's finding alone (the local trigger would
                  * open its own on the waiting ranks: docs/always-on.md) */
                 "COLLSCOPE_FLIGHT_LOCAL=off",
                 "COLLSCOPE_SIM_CLOCK=model",
                 "COLLSCOPE_SIM_SEED=1"};
  char *app_argv[] = {app, "--steps", steps_s, "--size", size_s, NULL};
  o->env = env;
  o->nenv = sizeof env / sizeof env[0];
  o->argv = app_argv;
  o->tag_output = 0;
  o->kill_on_fail = 1;
  fflush(stdout);
  int rc = cli_run_launch(o);
  o->env = NULL;
  o->argv = NULL;
  return rc;
}

void demo_always_on(struct cli_run_opts *o, const char *absdir, char *app, char *size_s) {
  char sdir[PATH_MAX], fdir[PATH_MAX], steps_s[32];
  if (snprintf(sdir, sizeof sdir, "%s/always-on/summary", absdir) >= (int)sizeof sdir ||
      snprintf(fdir, sizeof fdir, "%s/always-on/full", absdir) >= (int)sizeof fdir)
    return;
  snprintf(steps_s, sizeof steps_s, "%d", AO_STEPS);
  printf("\ncollscope demo: always-on -- the straggler job (%d steps, rank 5 3 ms late, modeled clock:\n"
         "  COLLSCOPE_SIM_CLOCK=model) recorded as a job of weeks would be: COLLSCOPE_RECORD=summary writes\n"
         "  per-interval summaries (zstd by default) and keeps the last " AO_FLIGHT_OPS " ops in a flight recorder\n"
         "  (COLLSCOPE_FLIGHT_OPS=" AO_FLIGHT_OPS "), written with the next " AO_FLIGHT_AFTER
         " when something happens: here the online\n"
         "  exchange's straggler finding; dumps in %s\n",
         AO_STEPS, sdir);
  int rc = run_mode(o, sdir, "summary", app, steps_s, size_s);
  if (rc != 0) {
    printf("  the always-on job failed (status %d)\n", rc);
    return;
  }
  print_flight(sdir);
  print_window_detail(sdir);
  printf("  the same job in full mode (COLLSCOPE_RECORD=full, every op a line) for the bytes; dumps in %s\n", fdir);
  rc = run_mode(o, fdir, "full", app, steps_s, size_s);
  size_t ns, nf;
  unsigned long long bs = dump_bytes(sdir, &ns), bf = dump_bytes(fdir, &nf);
  if (rc == 0 && ns && nf && bs)
    printf("  bytes written: summary mode %llu in %zu files (%llu per rank), full mode %llu (%llu per rank):\n"
           "  %.0fx fewer\n",
           bs, ns, bs / ns, bf, bf / nf, (double)bf / (double)bs);
  printf("  a running job's windows on demand: collscope snapshot JOB (docs/always-on.md)\n");
  fflush(stdout);
}
