/* tools/dump/opscan.h: a scanner for "op" lines laid out exactly as the shim's dump writer writes
 * them (the op list of include/collscope/dump_schema.h: its key order, no whitespace, no
 * escapes), the fast path of the dump loader (DESIGN.md "Reading dumps").
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

#include "collscope/dump_schema.h"

struct cs_slice {
  const char *s;
  size_t n;
};

/* one member per row of the op list (include/collscope/dump_schema.h), by its JSON type;
 * the "sdc" object's rows as sdc_<name> (sdc_checked 0 when absent; as the loader reads
 * it: a checked value outside 1..3 reads as 0, bit 0 cleared when fp is null; null sums
 * are NAN) */
#define CS_OPSCAN_I32(m) long long m;
#define CS_OPSCAN_I64(m) long long m;
#define CS_OPSCAN_U64(m) uint64_t m;
#define CS_OPSCAN_US(m) double m;
#define CS_OPSCAN_F64(m) double m;
#define CS_OPSCAN_STR(m) struct cs_slice m;
#define CS_OPSCAN_SITE(m) struct cs_slice m;
#define CS_OPSCAN_NAME(m) struct cs_slice m;
#define CS_OPSCAN_NAME0(m) struct cs_slice m; /* s NULL: null */
#define CS_OPSCAN_ID(m) uint64_t m;
#define CS_OPSCAN_ID0(m) \
  uint64_t m; \
  bool has_##m;
#define CS_OPSCAN_HEX(m) uint64_t m;
#define CS_OPSCAN_BOOL(m) bool m;
#define CS_OPSCAN_OBJ(m) /* its own rows, below */
#define CS_OPSCAN_MEMBER(m, key, jt, wr, rd, def) CS_OPSCAN_##jt(m)
#define CS_OPSCAN_SDC_MEMBER(m, key, jt, wr, rd, def) CS_OPSCAN_##jt(sdc_##m)
struct cs_opscan {
  CS_DUMP_OP_FIELDS(CS_OPSCAN_MEMBER)
  CS_DUMP_SDC_FIELDS(CS_OPSCAN_SDC_MEMBER)
};

/* line: len bytes without the newline (need not be NUL-terminated). */
bool cs_opscan(const char *line, size_t len, struct cs_opscan *out);

#endif
