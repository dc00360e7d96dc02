/* stats/dump_writer.h: the per-process JSONL dump file (schema in DESIGN.md). Only the
 * harvest thread calls these, so there is no locking. Lines are only ever written whole;
 * a record that cannot be written is counted in cs_st.drops. */
#ifndef COLLSCOPE_DUMP_WRITER_H
#define COLLSCOPE_DUMP_WRITER_H
#include "core.h"
#include <sys/types.h>

/* The file system calls the writer makes on its file: write(2) and ftruncate(2). A seam
 * for tests (tests/stats/test_dump.c makes writes fail); nothing else sets it. */
struct cs_dump_io {
  ssize_t (*write)(int fd, const void *buf, size_t n);
  int (*ftruncate)(int fd, off_t length);
};
extern struct cs_dump_io cs_dump_io;

/* What the dump writes about the layers above it, handed over at load (shim/wiring.c).
 * Without them: driver version 0, no PCI bus id, xfer api "unknown", no GPU identity in the
 * header, no footer fields. The keys they write are rows of include/collscope/dump_schema.h. */
struct cs_dump_kv { /* a footer writer's output: ,"key":value in call order */
  void (*str)(const char *key, const char *v);
  void (*u64)(const char *key, uint64_t v);
};
#define CS_DUMP_FOOTERS 4
struct cs_dump_sources {
  /* header: the CUDA driver's version and the device's PCI bus id (hooks/cuda_driver.c) */
  void (*device_info)(int device, int *driver_version, char *bus, size_t bus_len);
  /* xfer records: the name of the CUDA runtime call (shim/cudart_wrappers.c) */
  const char *(*xfer_api_name)(int api);
  /* header: appends `,"key":value...` (at most cap bytes) after the writer's own fields: the
   * GPU's identity (hooks/health.c); called once a header, on the harvest thread */
  size_t (*header_extra)(int device, char *out, size_t cap);
  /* footer: each writes its fields, in this order (NCCL profiler's standing, SDC's) */
  void (*footer[CS_DUMP_FOOTERS])(const struct cs_dump_kv *kv);
};
void cs_dump_sources_set(const struct cs_dump_sources *s);

/* Create the directory (mkdir -p) and the file (0600, O_EXCL|O_NOFOLLOW). */
bool cs_dump_open(void);
void cs_dump_record(const struct cs_record *r);
void cs_dump_drops(uint64_t count);
/* a "drops" line for the drops (cs_st.drops) no line covers yet, if any */
void cs_dump_drops_sync(void);
/* an op not complete after COLLSCOPE_HANG_TIMEOUT (docs/dump-format.md, "hang" record) */
/* started: 1 the op's GPU start event had completed, 0 it had not, -1 no start event */
void cs_dump_hang(const struct cs_record *r, int64_t now_ns, int started);
/* flushes, then the footer: ops/xfers (records on the file), drops (all, write_drops among
 * them), ops_recorded (op records written or lost to write errors), ... */
void cs_dump_footer(void);
/* A line a module above stats/ formatted (hooks/health.c: a "health" record): one JSON
 * object without its newline, at most CS_DUMP_RAW_MAX bytes (a longer one is dropped and
 * counted). device: the header's device should the header not be written yet. */
#define CS_DUMP_RAW_MAX 12288
void cs_dump_raw_line(const char *json, size_t len, int device);
/* write(2) the buffered whole lines; on an error the file is cut back to its last whole
 * line and the buffer's records are counted as dropped (the next flush tries again) */
void cs_dump_flush(void);
void cs_dump_close(void);
const char *cs_dump_path(void);
void cs_dump_atfork_child(void);

#endif
