/* tools/trace/trace_out.h: the trace's output buffers and its JSON text, written without building JSON
 * values: events are formatted into per-thread buffers (one per reading thread) that go to the
 * output file whole, under a lock, so the reading threads write events as the dumps stream (the
 * binary formats use the same buffers, tout_set_binary). The JSON text is what
 * jansson writes for the same values (compact, keys in the order given, reals as %.17g with
 * ".0" added when needed, strings escaped as jansson does; bytes that are not UTF-8, which
 * jansson would refuse, as \u00XX). */
#ifndef COLLSCOPE_TOOLS_TRACE_OUT_H
#define COLLSCOPE_TOOLS_TRACE_OUT_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct tbuf { /* one thread's pending text */
  char *s;
  size_t n, cap;
};

struct trace_out {
  FILE *o;
  pthread_mutex_t lock;
  bool first;     /* no event written yet: the next one has no leading comma */
  bool failed;    /* a write failed */
  uint64_t bytes; /* written so far */
  struct tbuf *w;
  unsigned nw; /* per thread */
};

void tout_init(struct trace_out *t, FILE *o, unsigned threads);
/* the thread's buffer; its text goes out at tout_end_event() when it is large */
struct tbuf *tout_buf(struct trace_out *t, unsigned worker);
/* starts an event: ",\n{" (the comma left out for the file's first event at flush time) */
void tout_begin_event(struct tbuf *b);
/* ends it ('}') and writes the buffer out when it holds over ~1 MiB */
void tout_end_event(struct trace_out *t, struct tbuf *b);
void tout_flush(struct trace_out *t, struct tbuf *b);
void tout_flush_all(struct trace_out *t);
/* binary output: records are written as they are, with no comma between them */
void tout_set_binary(struct trace_out *t);
/* a binary record has been appended: writes the buffer out when it holds over ~1 MiB */
void tout_end_record(struct trace_out *t, struct tbuf *b);
void tout_free(struct trace_out *t);

void tb_raw(struct tbuf *b, const char *s, size_t n);
void tb_lit(struct tbuf *b, const char *s);             /* raw text, NUL-terminated */
char *tb_room(struct tbuf *b, size_t n);                /* n bytes appended, for the caller to fill */
void tb_key(struct tbuf *b, bool comma, const char *k); /* [,]"k": (k needs no escaping) */
void tb_str(struct tbuf *b, const char *s);             /* a JSON string, escaped */
void tb_int(struct tbuf *b, long long v);
void tb_u64(struct tbuf *b, uint64_t v);
void tb_real(struct tbuf *b, double v);              /* as jansson writes a real */
void tb_us(struct tbuf *b, int64_t ns);              /* exact ns / 1000, three decimals */
void tb_fixed3(struct tbuf *b, double v);            /* "%.3f" */
void tb_hex(struct tbuf *b, uint64_t v, bool pad16); /* "0000..." (16 digits) or "0x..." */
/* length of the valid UTF-8 sequence at s (at most n bytes), 0 when invalid */
size_t tout_utf8_len(const unsigned char *s, size_t n);

#endif
