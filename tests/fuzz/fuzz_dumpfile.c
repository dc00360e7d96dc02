/* tests/fuzz/fuzz_dumpfile.c: libFuzzer entry point for the dump-file reader
 * (tools/dumpfile.c), the parser every `collscope report`/`trace` input goes through:
 * the input bytes become one .jsonl file, which is loaded, grouped into collective
 * instances and freed. Built like the other targets (fuzz_target.c's meson rules). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dumpfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/cs-fuzz-dump-%d.jsonl", (int)getpid());
  if (size > 1 << 20) return 0;
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  if (size && fwrite(data, 1, size, f) != size) {
    fclose(f);
    return 0;
  }
  fclose(f);
  FILE *devnull = fopen("/dev/null", "w");
  struct cs_dumpset *set = cs_dumpset_load(path);
  if (set) {
    if (devnull) cs_dumpset_print_errors(set, devnull);
    struct cs_instances inst;
    if (cs_group_instances(set, &inst) == 0) cs_instances_free(&inst);
    cs_dumpset_free(set);
  }
  if (devnull) fclose(devnull);
  unlink(path);
  return 0;
}
