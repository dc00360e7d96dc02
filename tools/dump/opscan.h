/* tools/dump/opscan.h: a scanner for "op" lines laid out exactly as the shim's dump writer writes
 * them (stats/dump_writer_records.c: fixed key order, no whitespace, no escapes), the fast path of the
 * dump loader (DESIGN.md "Reading dumps").
 *
 * Contract: cs_opscan() accepts a line only when a JSON parser would read it as an op
 * record with the same values and the loader would accept it (comm_size >= 1); anything
 * else -- another layout, a key out of order, whitespace, an escape, a byte >= 0x80, an
 * integer beyond a long long, a number the grammar does not allow, comm_size < 1 -- returns
 * false, and the loader reads the line with jansson, which validates it and words any
 * error. So the fast path never decides that a line is malformed. */
#ifndef COLLSCOPE_TOOLS_OPSCAN_H
#define COLLSCOPE_TOOLS_OPSCAN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cs_slice {
  const char *s;
  size_t n;
};

struct cs_opscan {
  uint64_t comm, stream;
  long long comm_size, comm_rank, rank, seq, count, root, peer, group, status;
  uint64_t bytes;
  long long enqueue_ns, start_ns, end_ns;
  double dur_us;
  struct cs_slice op, dtype, redop /* s NULL: null */, timing, site;
  bool captured;
  /* "sdc" object: checked 0 when absent; as the loader reads it (a checked value outside
   * 1..3 reads as 0, bit 0 cleared when fp is null; null sums are NAN) */
  unsigned sdc_checked;
  uint64_t sdc_fp;
  double sdc_in_sum, sdc_in_abs, sdc_out_sum;
};

/* line: len bytes without the newline (need not be NUL-terminated). */
bool cs_opscan(const char *line, size_t len, struct cs_opscan *out);

#endif
