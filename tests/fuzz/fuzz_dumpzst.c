/* tests/fuzz/fuzz_dumpzst.c: libFuzzer entry point for the compressed dump's reading path
 * (tools/dump/dump_zstd.c under tools/dump/dump_reader.c): the input becomes a process's dump
 * collscope-fz-r0-p1.jsonl.zst, read whole (cs_dumpset_load_jobs) and streamed in small pieces
 * (cs_dumpset_stream), so frames are cut across pieces. The first byte picks how:
 *  'Z': the rest is the file as it is (frames, skippable frames, garbage, zstd bombs);
 *  any other: the rest is dump text, compressed as the writer does (one frame per run of
 *       about 300 bytes of whole lines, the last one possibly without its newline), and the
 *       file cut at a position the first byte picks, as a crash in a write leaves it.
 * Built like the other targets (tests/fuzz/meson.build). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "dump/dumpfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count_op(void *ctx, unsigned worker, size_t file, const struct cs_dumpfile *f, const struct cs_op_rec *r) {
  (void)worker, (void)file, (void)f, (void)r;
  (*(size_t *)ctx)++;
}

/* the text as the writer's frames, cut to `keep` parts in 256 of its length */
static size_t frames_of(const uint8_t *t, size_t n, unsigned keep, uint8_t *out, size_t cap) {
  size_t o = 0, pos = 0;
  while (pos < n) {
    size_t end = pos + 300 < n ? pos + 300 : n;
    while (end < n && t[end - 1] != '\n') end++;
    size_t z = ZSTD_compress(out + o, cap - o, t + pos, end - pos, 1);
    if (ZSTD_isError(z)) return 0;
    o += z;
    pos = end;
  }
  return keep == 255 ? o : o * keep / 255;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char dir[64], dump[128];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/cs-fuzz-dumpzst-%d", (int)getpid());
    snprintf(dump, sizeof dump, "%s/collscope-fz-r0-p1.jsonl.zst", dir);
  }
  if (size < 1 || size > 1 << 16) return 0;
  mkdir(dir, 0700);
  const uint8_t *file = data + 1;
  size_t n = size - 1;
  uint8_t *buf = NULL;
  if (data[0] != 'Z') {
    size_t cap = ZSTD_compressBound(n) + 64 * (n / 300 + 1);
    buf = malloc(cap);
    if (!buf) return 0;
    n = frames_of(data + 1, size - 1, data[0], buf, cap);
    file = buf;
  }
  FILE *f = fopen(dump, "wb");
  if (f) {
    if (n) fwrite(file, 1, n, f);
    fclose(f);
  }
  free(buf);

  struct cs_dumpset *set = cs_dumpset_load_jobs(dir, NULL, 1);
  FILE *devnull = fopen("/dev/null", "w");
  if (devnull) cs_dumpset_print_errors(set, devnull);
  cs_dumpset_free(set);
  size_t ops = 0;
  struct cs_stream_ops so = {.ctx = &ops, .jobs = 1, .budget = 1, .op = count_op};
  set = cs_dumpset_stream(dir, NULL, &so);
  if (devnull) cs_dumpset_print_errors(set, devnull);
  if (devnull) fclose(devnull);
  cs_dumpset_free(set);
  unlink(dump);
  return 0;
}
