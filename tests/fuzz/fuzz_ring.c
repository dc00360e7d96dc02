/* tests/fuzz/fuzz_ring.c: libFuzzer entry point for the stats-ring reader, the code every
 * `collscope top`, `collscope salvage` and `collscope exporter` input goes through: the
 * input bytes become one ring file (collscope-<euid>-fuzz-r0.ring in a private directory;
 * the header's uid field, when present, is set to the caller's so that the owner checks pass
 * and the fuzzer gets past them), which is loaded by tools/ring/ring_view.c (analysis/ring_reader.c's
 * checked reader), written as a salvage dump to /dev/null, checked for liveness and freed;
 * then the exporter's follower reads it (summary block: series, side ring, health, GPU
 * identity; the detectors over the newest records) and renders an exposition. Built like
 * the other targets (see meson.build). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exporter/exporter_metrics.h"
#include "exporter/exporter_state.h"
#include "ring/ring_view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool pass_openmetrics(size_t size) { return size & 1; } /* both formats get inputs */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char dir[64], path[160];
  static FILE *devnull;
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/cs-fuzz-ring-XXXXXX");
    if (!mkdtemp(dir)) return 0;
    snprintf(path, sizeof path, "%s/collscope-%u-fuzz-r0.ring", dir, (unsigned)geteuid());
    devnull = fopen("/dev/null", "w");
  }
  if (size > 1 << 20 || !devnull) return 0;
  uint8_t *img = malloc(size ? size : 1);
  if (!img) return 0;
  memcpy(img, data, size);
  uint32_t uid = (uint32_t)geteuid();
  if (size >= offsetof(struct cs_ring_hdr, uid) + sizeof uid) memcpy(img + offsetof(struct cs_ring_hdr, uid), &uid, sizeof uid);
  unlink(path);
  FILE *f = fopen(path, "wbx");
  if (!f) {
    free(img);
    return 0;
  }
  size_t w = size ? fwrite(img, 1, size, f) : 0;
  fclose(f);
  free(img);
  if (w != size) return 0;
  struct ring_view v;
  if (ring_view_load(&v, path, "fuzz", devnull) == 0) {
    salvage_write_dump(devnull, &v);
    (void)cs_ring_writer_dead(v.rd.h);
    fprintf(devnull, "%s %s %s\n", v.host, v.job, v.path);
    ring_view_free(&v);
  }
  struct exp_state st;
  if (exp_state_init(&st, dir, 300, devnull) == 0) {
    for (int pass = 0; pass < 2; pass++) exp_state_poll(&st, exp_now_ns());
    pthread_mutex_lock(&st.mu);
    exp_state_analyse(&st, exp_now_ns());
    size_t len = 0;
    char *text = exp_render_buf(&st, pass_openmetrics(size), &len);
    pthread_mutex_unlock(&st.mu);
    if (text) fwrite(text, 1, len, devnull);
    free(text);
    exp_state_free(&st);
  }
  unlink(path);
  return 0;
}
