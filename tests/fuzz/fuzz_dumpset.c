/* tests/fuzz/fuzz_dumpset.c: libFuzzer entry point for `collscope report` over a set of rank
 * files, where the joins across ranks live (collective instances, stragglers, the health
 * section's majority GPU model and causes, links, communicators). fuzz_dumpfile.c reads one
 * file at a time; this target splits its input at each line that is exactly "%%" into 2 to 8
 * dumps, collscope-fz<k>-r<k>-p<k+1>.jsonl in a private directory (an input with one piece
 * gives it and an empty second file; pieces past the eighth go into the eighth). Each piece
 * holds the rank's header, health, op, comm and link lines (the corpus,
 * tests/fuzz/corpus/dumpset/, starts from such sets). The set is reported as text, JSON and
 * HTML, with one reading thread. Built like the other targets (meson.build). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fuzz_report_quiet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FILES 8
#define SEP "\n%%\n"

/* the next "\n%%\n" in [p, end) (its newline before), or NULL */
static const uint8_t *next_sep(const uint8_t *p, const uint8_t *end) {
  size_t n = sizeof SEP - 1;
  for (; p && (size_t)(end - p) >= n; p++) {
    p = memchr(p, '\n', (size_t)(end - p));
    if (!p || (size_t)(end - p) < n) return NULL;
    if (!memcmp(p, SEP, n)) return p;
  }
  return NULL;
}

static void file_path(char *b, size_t n, const char *dir, int k) {
  snprintf(b, n, "%s/collscope-fz%d-r%d-p%d.jsonl", dir, k, k, k + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char dir[64], out[128];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/cs-fuzz-dumpset-%d", (int)getpid());
    snprintf(out, sizeof out, "%s/report.out", dir);
  }
  if (size > 1 << 20) return 0;
  mkdir(dir, 0700);
  const uint8_t *p = data, *end = data + size;
  int nfiles = 0;
  char path[128];
  while (nfiles < MAX_FILES) {
    const uint8_t *s = nfiles < MAX_FILES - 1 ? next_sep(p, end) : NULL;
    const uint8_t *stop = s ? s + 1 : end; /* the piece keeps its last newline */
    file_path(path, sizeof path, dir, nfiles);
    FILE *f = fopen(path, "wb");
    if (f) {
      if (stop > p) fwrite(p, 1, (size_t)(stop - p), f);
      fclose(f);
    }
    nfiles++;
    if (!s) break;
    p = s + sizeof SEP - 1;
  }
  if (nfiles < 2) { /* one piece: an empty second rank file */
    file_path(path, sizeof path, dir, nfiles++);
    FILE *f = fopen(path, "wb");
    if (f) fclose(f);
  }
  char *text[] = {"report", dir, "-j1", "-o", out, NULL};
  char *json[] = {"report", dir, "-j1", "--json", "-o", out, NULL};
  char *html[] = {"report", dir, "-j1", "--html", "-o", out, NULL};
  fuzz_report_quiet(text);
  fuzz_report_quiet(json);
  fuzz_report_quiet(html);
  unlink(out);
  for (int k = 0; k < nfiles; k++) {
    file_path(path, sizeof path, dir, k);
    unlink(path);
  }
  rmdir(dir);
  return 0;
}
