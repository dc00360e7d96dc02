/* include/collscope/schema.h: the one schema shared by every writer (the shim's dump
 * writer) and every reader (collscope report/trace): operation kinds with their byte
 * rules and nccl-tests bus-bandwidth factors, datatype and reduction names, and the
 * dump-file schema version. Pure header: no state, no dependencies. */
#ifndef COLLSCOPE_SCHEMA_H
#define COLLSCOPE_SCHEMA_H
#include <stddef.h>
#include <string.h>

#define COLLSCOPE_SCHEMA_VERSION 1

/* How a record's byte count follows from (count, typesize, nranks), nccl-tests' rules. */
enum cs_bytes_rule {
  CS_BYTES_COUNT,     /* count * typesize                     */
  CS_BYTES_COUNT_X_N, /* count * typesize * nranks            */
};
/* Bus bandwidth factor applied to algbw, nccl-tests' rules. */
enum cs_busbw_rule {
  CS_BUSBW_ONE,     /* 1                                    */
  CS_BUSBW_RING_AR, /* 2(n-1)/n                             */
  CS_BUSBW_N1_N,    /* (n-1)/n                              */
};
enum cs_op_class { CS_CLASS_COLL,
                   CS_CLASS_P2P,
                   CS_CLASS_XFER };

/* COLLSCOPE_OP(name, class, bytes rule, busbw rule). `name` is the record's "op" string. */
#define COLLSCOPE_OPS(X) \
  X(AllReduce, CS_CLASS_COLL, CS_BYTES_COUNT, CS_BUSBW_RING_AR) \
  X(Broadcast, CS_CLASS_COLL, CS_BYTES_COUNT, CS_BUSBW_ONE) \
  X(Reduce, CS_CLASS_COLL, CS_BYTES_COUNT, CS_BUSBW_ONE) \
  X(AllGather, CS_CLASS_COLL, CS_BYTES_COUNT_X_N, CS_BUSBW_N1_N) \
  X(ReduceScatter, CS_CLASS_COLL, CS_BYTES_COUNT_X_N, CS_BUSBW_N1_N) \
  X(AlltoAll, CS_CLASS_COLL, CS_BYTES_COUNT_X_N, CS_BUSBW_N1_N) \
  X(Gather, CS_CLASS_COLL, CS_BYTES_COUNT_X_N, CS_BUSBW_N1_N) \
  X(Scatter, CS_CLASS_COLL, CS_BYTES_COUNT_X_N, CS_BUSBW_N1_N) \
  X(Send, CS_CLASS_P2P, CS_BYTES_COUNT, CS_BUSBW_ONE) \
  X(Recv, CS_CLASS_P2P, CS_BYTES_COUNT, CS_BUSBW_ONE) \
  X(Memcpy, CS_CLASS_XFER, CS_BYTES_COUNT, CS_BUSBW_ONE)

enum cs_op {
#define CS_OP_ENUM(name, cls, bytes, busbw) CS_OP_##name,
  COLLSCOPE_OPS(CS_OP_ENUM)
#undef CS_OP_ENUM
      CS_OP_COUNT
};

struct cs_op_info {
  const char *name;
  enum cs_op_class cls;
  enum cs_bytes_rule bytes;
  enum cs_busbw_rule busbw;
};

static const struct cs_op_info cs_op_table[CS_OP_COUNT] = {
#define CS_OP_ROW(name, cls, bytes, busbw) {#name, cls, bytes, busbw},
    COLLSCOPE_OPS(CS_OP_ROW)
#undef CS_OP_ROW
};

static inline int cs_op_from_name(const char *name) {
  for (int i = 0; i < CS_OP_COUNT; i++)
    if (strcmp(cs_op_table[i].name, name) == 0) return i;
  return -1;
}

static inline double cs_busbw_factor(enum cs_op op, int nranks) {
  if ((int)op < 0 || op >= CS_OP_COUNT || nranks < 1) return 1.0;
  switch (cs_op_table[op].busbw) {
  case CS_BUSBW_RING_AR: return 2.0 * (nranks - 1) / nranks;
  case CS_BUSBW_N1_N: return (double)(nranks - 1) / nranks;
  default: return 1.0;
  }
}

static inline size_t cs_op_bytes(enum cs_op op, size_t count, size_t typesize, int nranks) {
  size_t b = count * typesize;
  if ((int)op >= 0 && op < CS_OP_COUNT && cs_op_table[op].bytes == CS_BYTES_COUNT_X_N && nranks > 0)
    b *= (size_t)nranks;
  return b;
}

/* Datatype names in ncclDataType_t order (ncclInt8 = 0 ... ncclFloat8e5m2 = 11). */
// clang-format off
#define COLLSCOPE_DTYPES(X) \
  X(int8, 1) X(uint8, 1) X(int32, 4) X(uint32, 4) X(int64, 8) X(uint64, 8) \
  X(float16, 2) X(float32, 4) X(float64, 8) X(bfloat16, 2) X(float8e4m3, 1) X(float8e5m2, 1)
// clang-format on

static const struct {
  const char *name;
  unsigned size;
} cs_dtype_table[] = {
#define CS_DT_ROW(name, size) {#name, size},
    COLLSCOPE_DTYPES(CS_DT_ROW)
#undef CS_DT_ROW
};
#define CS_DTYPE_COUNT ((int)(sizeof(cs_dtype_table) / sizeof(cs_dtype_table[0])))

static inline const char *cs_dtype_name(int dt) {
  return (dt >= 0 && dt < CS_DTYPE_COUNT) ? cs_dtype_table[dt].name : "invalid";
}
static inline unsigned cs_dtype_size(int dt) {
  return (dt >= 0 && dt < CS_DTYPE_COUNT) ? cs_dtype_table[dt].size : 0;
}

/* Reduction names in ncclRedOp_t order; values >= 5 are user ops (PreMulSum). */
static const char *const cs_redop_names[] = {"sum", "prod", "max", "min", "avg"};
static inline const char *cs_redop_name(int op) {
  if (op >= 0 && op < 5) return cs_redop_names[op];
  return "premulsum";
}

#endif
