/* include/collscope/dump_emit.h: the dump schema's lists (include/collscope/dump_schema.h) as
 * line-writing code: CS_EMIT_LINE(type, LIST) defines `struct cs_emit_<type>` (one member per
 * row) and `put_<type>_line()`, which writes {"type":"<type>" and the rows in the list's order
 * as one whole line; CS_EMIT_OBJECT(name, LIST) the same for an object field's value. The
 * shim's writer (stats/dump_writer_records.c) and the synthetic dump generator
 * (tests/tools/gen_dumps.c) both write through it, so neither spells a key or orders fields.
 *
 * The includer supplies, before expanding a CS_EMIT_* macro:
 *   put(const char *s, size_t n)         appends n bytes to the line being formatted
 *   CS_EMIT_BUF, CS_EMIT_LEN             that line buffer and its length (lvalues): an
 *                                        object's first key's comma becomes its brace
 *   one value writer per JSON type: put_i64 (I32, I64), put_u64, put_us, put_f64, put_str,
 *   put_site, put_name, put_name0, put_id, put_id0, put_hex, put_bool
 *   cs_emit_sources(v)                   writes a layer's fields where the list's first
 *                                        SOURCE row stands (v: the line's struct pointer)
 *   CS_EMIT_T_SITE (optional)            the member type of a SITE row (default: a code
 *                                        address, uint64_t)
 * Every value writer is called with the member's value; no other key is written. */
#ifndef COLLSCOPE_DUMP_EMIT_H
#define COLLSCOPE_DUMP_EMIT_H
#include "collscope/dump_schema.h"
#include <stdbool.h>
#include <stdint.h>

/* a field as the writer holds it */
#define CS_EMIT_T_I32 int64_t
#define CS_EMIT_T_I64 int64_t
#define CS_EMIT_T_U64 uint64_t
#define CS_EMIT_T_US int64_t /* nanoseconds */
#define CS_EMIT_T_F64 double
#define CS_EMIT_T_STR const char *
#ifndef CS_EMIT_T_SITE
#define CS_EMIT_T_SITE uint64_t /* code address */
#endif
#define CS_EMIT_T_NAME const char *
#define CS_EMIT_T_NAME0 const char * /* NULL: null */
#define CS_EMIT_T_ID uint64_t
#define CS_EMIT_T_ID0 const uint64_t * /* NULL: null */
#define CS_EMIT_T_HEX uint64_t
#define CS_EMIT_T_BOOL bool
#define CS_EMIT_T_OBJ const void * /* the object's struct cs_emit_<member>; NULL: not written */
#define CS_EMIT_MEMBER(m, key, jt, wr, rd, def) CS_EMIT_T_##jt m;

/* a field's value onto the line */
#define CS_EMIT_VAL_I32(m, v) put_i64(v)
#define CS_EMIT_VAL_I64(m, v) put_i64(v)
#define CS_EMIT_VAL_U64(m, v) put_u64(v)
#define CS_EMIT_VAL_US(m, v) put_us(v)
#define CS_EMIT_VAL_F64(m, v) put_f64(v)
#define CS_EMIT_VAL_STR(m, v) put_str(v)
#define CS_EMIT_VAL_SITE(m, v) put_site(v)
#define CS_EMIT_VAL_NAME(m, v) put_name(v)
#define CS_EMIT_VAL_NAME0(m, v) put_name0(v)
#define CS_EMIT_VAL_ID(m, v) put_id(v)
#define CS_EMIT_VAL_ID0(m, v) put_id0(v)
#define CS_EMIT_VAL_HEX(m, v) put_hex(v)
#define CS_EMIT_VAL_BOOL(m, v) put_bool(v)
#define CS_EMIT_VAL_OBJ(m, v) put_obj_##m(v)

/* IFSET rows: whether the field is written */
#define CS_EMIT_SET_I32(v) ((v) >= 0)
#define CS_EMIT_SET_I64(v) ((v) >= 0)
#define CS_EMIT_SET_U64(v) ((v) != 0)
#define CS_EMIT_SET_NAME(v) ((v) && *(v))
#define CS_EMIT_SET_STR(v) ((v) && *(v))
#define CS_EMIT_SET_OBJ(v) ((v) != NULL)

#define CS_EMIT_LIT(lit) put(lit, sizeof(lit) - 1)
#define CS_EMIT_KEY(k) CS_EMIT_LIT(",\"" k "\":")

#define CS_EMIT_ROW(m, key, jt, wr, rd, def) CS_EMIT_##wr(m, key, jt)
#define CS_EMIT_ALWAYS(m, key, jt) \
  CS_EMIT_KEY(key); \
  CS_EMIT_VAL_##jt(m, v->m);
#define CS_EMIT_IFSET(m, key, jt) \
  if (CS_EMIT_SET_##jt(v->m)) { \
    CS_EMIT_KEY(key); \
    CS_EMIT_VAL_##jt(m, v->m); \
  }
/* the layers' fields go where the first SOURCE row stands */
#define CS_EMIT_SOURCE(m, key, jt) \
  if (!sources_done) { \
    sources_done = true; \
    cs_emit_sources(v); \
  }

/* put_<type>_line(): {"type":"<type>" and the list's rows, a whole line */
#define CS_EMIT_LINE(type, LIST) \
  struct cs_emit_##type { \
    LIST(CS_EMIT_MEMBER) \
  }; \
  static void put_##type##_line(const struct cs_emit_##type *v) { \
    bool sources_done = false; \
    (void)sources_done; \
    CS_EMIT_LIT("{\"type\":\"" #type "\""); \
    LIST(CS_EMIT_ROW) \
    CS_EMIT_LIT("}\n"); \
  }
/* put_obj_<name>(): an object field's value; its first key's comma becomes the brace */
#define CS_EMIT_OBJECT(name, LIST) \
  struct cs_emit_##name { \
    LIST(CS_EMIT_MEMBER) \
  }; \
  static void put_obj_##name(const void *p) { \
    const struct cs_emit_##name *v = p; \
    size_t brace = CS_EMIT_LEN; \
    LIST(CS_EMIT_ROW) \
    if (CS_EMIT_LEN > brace) CS_EMIT_BUF[brace] = '{'; \
    CS_EMIT_LIT("}"); \
  }

#endif
