/* tests/fuzz/fuzz_dumpfile.c: libFuzzer entry point for the dump-file reader
 * (tools/dump/dumpfile.c) and `collscope report`, the path every dump a job leaves goes through.
 * The input bytes become a process's dump collscope-fz-r0-p1.jsonl; its first line plus the
 * second half of the input become the same process's salvage file, so the salvage merge
 * runs too. The directory is loaded, grouped into collective instances, and reported as
 * text and as JSON (stragglers, hangs, links, SDC, balance with --layers and --shares) into a
 * file, then once with a --job that is absent. Built like the other targets (fuzz_target.c's meson rules). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dump/dumpfile.h"
#include "fuzz_report_quiet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_file(const char *path, const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  if (na) fwrite(a, 1, na, f);
  if (nb) fwrite(b, 1, nb, f);
  fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char dir[64], dump[128], salv[128], out[128];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/cs-fuzz-dump-%d", (int)getpid());
    snprintf(dump, sizeof dump, "%s/collscope-fz-r0-p1.jsonl", dir);
    snprintf(salv, sizeof salv, "%s/collscope-fz-r0-p1.salvage.jsonl", dir);
    snprintf(out, sizeof out, "%s/report.out", dir);
  }
  if (size > 1 << 20) return 0;
  mkdir(dir, 0700);
  write_file(dump, data, size, NULL, 0);
  const uint8_t *nl = size ? memchr(data, '\n', size) : NULL;
  size_t first = nl ? (size_t)(nl - data) + 1 : size, half = size / 2 > first ? size / 2 : first;
  write_file(salv, data, first, data + half, size - half);

  struct cs_dumpset *set = cs_dumpset_load_jobs(dir, NULL, 1);
  if (set) {
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) cs_dumpset_print_errors(set, devnull);
    if (devnull) fclose(devnull);
    struct cs_instances inst;
    if (cs_group_instances(set, &inst) == 0) cs_instances_free(&inst);
    cs_dumpset_free(set);
  }
  /* one reading thread: a thread started and joined per read costs more than the parse of
   * a fuzz input under the sanitizers; the pool's one-thread path reads the same code */
  char *text[] = {"report", dir, "-j1", "-o", out, NULL};
  char *json[] = {"report", dir, "-j1", "--json", "-o", out, NULL};
  char *other[] = {"report", dir, "-j1", "--job", "no-such-job", NULL};
  char *html[] = {"report", dir, "-j1", "--html", "-o", out, NULL};
  /* the balance section's layer counts and today's shares (a pipeline of 2 stages, 2 ranks) */
  char *balance[] = {"report", dir, "-j1", "--json", "--layers", "3,5", "--shares", "1,2", "-o", out, NULL};
  fuzz_report_quiet(text);
  fuzz_report_quiet(json);
  fuzz_report_quiet(html);
  fuzz_report_quiet(balance);
  fuzz_report_quiet(other);
  unlink(out);
  unlink(salv);
  unlink(dump);
  rmdir(dir);
  return 0;
}
