/* tests/apps/envdump.c: prints the launcher contract as one line and can fail on
 * purpose, for tests/apps/launcher_test.sh. No CUDA.
 *
 *   envdump [--exit R:CODE]... [--signal R:SIG]... [--sleep SECONDS] [--sleep-rank R:SECONDS]...
 *           [--stderr] [--lines N] [--partial]
 *
 * Prints "envdump rank=.. local_rank=.. world=.. local_world=.. group_rank=..
 * group_world=.. host=.. master=ADDR:PORT job=.. preload=.. ldpath0=.. extra=.." on
 * stdout (or stderr with --stderr), then --lines N extra numbered lines, then sleeps
 * (nanosleep, no spinning), then exits with CODE / raises SIG if its RANK matches. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *ev(const char *k) {
  const char *v = getenv(k);
  return v ? v : "-";
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* "R:V" matching this rank -> V */
static int match(const char *spec, int rank, double *val) {
  char *end;
  long r = strtol(spec, &end, 10);
  if (*end != ':') {
    fprintf(stderr, "envdump: bad spec '%s' (expected R:VALUE)\n", spec);
    exit(64);
  }
  if (r != rank) return 0;
  *val = strtod(end + 1, NULL);
  return 1;
}

int main(int argc, char **argv) {
  int rank = atoi(ev("RANK"));
  int code = 0, sig = 0, to_err = 0, lines = 0, partial = 0;
  double sleep_for = 0, v;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--stderr")) {
      to_err = 1;
      continue;
    }
    if (!strcmp(a, "--partial")) {
      partial = 1;
      continue;
    }
    if (!next) {
      fprintf(stderr, "envdump: %s needs a value\n", a);
      return 64;
    }
    i++;
    if (!strcmp(a, "--exit")) {
      if (match(next, rank, &v)) code = (int)v;
    } else if (!strcmp(a, "--signal")) {
      if (match(next, rank, &v)) sig = (int)v;
    } else if (!strcmp(a, "--sleep"))
      sleep_for = strtod(next, NULL);
    else if (!strcmp(a, "--sleep-rank")) {
      if (match(next, rank, &v)) sleep_for = v;
    } else if (!strcmp(a, "--lines"))
      lines = atoi(next);
    else {
      fprintf(stderr, "envdump: unknown option %s\n", a);
      return 64;
    }
  }
  FILE *out = to_err ? stderr : stdout;
  char ldpath0[4096];
  snprintf(ldpath0, sizeof ldpath0, "%s", ev("LD_LIBRARY_PATH"));
  ldpath0[strcspn(ldpath0, ":")] = '\0';
  fprintf(out,
          "envdump rank=%s local_rank=%s world=%s local_world=%s group_rank=%s group_world=%s "
          "host=%s master=%s:%s job=%s preload=%s ldpath0=%s extra=%s\n",
          ev("RANK"), ev("LOCAL_RANK"), ev("WORLD_SIZE"), ev("LOCAL_WORLD_SIZE"), ev("GROUP_RANK"),
          ev("GROUP_WORLD_SIZE"), ev("COLLSCOPE_HOSTNAME"), ev("MASTER_ADDR"), ev("MASTER_PORT"),
          ev("COLLSCOPE_JOB_ID"), ev("LD_PRELOAD"), ldpath0, ev("ENVDUMP_EXTRA"));
  for (int k = 0; k < lines; k++) fprintf(out, "line %d of rank %d\n", k, rank);
  if (partial) fprintf(out, "no newline at the end");
  fflush(out);
  if (sleep_for > 0) sleep_s(sleep_for);
  if (sleep_for > 0) {
    fprintf(out, "done rank=%d\n", rank);
    fflush(out);
  }
  if (sig) raise(sig);
  return code;
}
