/* tests/fuzz/fuzz_node_record.c: the node record parser `collscope suspects` trusts
 * (tools/suspects_record.c, format in include/collscope/slurm_node.h). The input is copied to
 * a buffer of its exact size (an over-read is caught), and a record that parses must print
 * back to the same bytes with a plain node name. Built with clang -fsanitize=fuzzer (or
 * driver.c with gcc). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/slurm_node.h"
#include "suspects_nodes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size ? size : 1);
  if (!text) return 0;
  if (size) memcpy(text, data, size);
  struct sn_record r;
  if (sn_record_parse(text, size, &r)) {
    char back[CS_NODE_RECORD_MAX + 1];
    int n = snprintf(back, sizeof back, "%s\njob=%s\nstep=%s\nnode=%s\nuid=%s\npid=%s\n", CS_NODE_RECORD_MAGIC, r.job, r.step,
                     r.node, r.uid, r.pid);
    if (!cs_node_name_ok(r.node) || n < 0 || (size_t)n != size || memcmp(back, text, size) != 0) abort();
  }
  free(text);
  return 0;
}
