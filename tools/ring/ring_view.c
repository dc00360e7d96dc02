/* tools/ring/ring_view.c: loading a stats ring for the CLI and making its strings printable
 * (see ring_view.h). */
#include "ring_view.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ring_text_escape(char *dst, size_t dstlen, const char *src, size_t srclen) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  if (!dstlen) return;
  for (size_t i = 0; i < srclen && src[i]; i++) {
    unsigned char c = (unsigned char)src[i];
    bool plain = c >= 0x20 && c < 0x7f && c != '\\';
    size_t need = plain ? 1 : 4;
    if (o + need >= dstlen) break;
    if (plain) {
      dst[o++] = (char)c;
    } else {
      dst[o++] = '\\';
      dst[o++] = 'x';
      dst[o++] = hex[c >> 4];
      dst[o++] = hex[c & 15];
    }
  }
  dst[o] = 0;
}

void ring_json_string(FILE *o, const char *s) {
  fputc('"', o);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(o, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      fprintf(o, "\\u%04x", c);
    else
      fputc(c, o);
  }
  fputc('"', o);
}

int ring_view_load(struct ring_view *v, const char *path, const char *cmd, FILE *err) {
  memset(v, 0, sizeof *v);
  ring_text_escape(v->path, sizeof v->path, path, strlen(path));
  if (cs_ring_reader_open(&v->rd, path) != 0) {
    if (err) fprintf(err, "collscope %s: skipping %s: %s\n", cmd, v->path, v->rd.why ? v->rd.why : strerror(errno));
    return -1;
  }
  const struct cs_ring_hdr *h = v->rd.h;
  /* the reader checked that host and job are terminated and that the job is the name's; the
   * writer may rewrite them since, so copy with bounds */
  memcpy(v->job_id, h->job, sizeof v->job_id - 1);
  ring_text_escape(v->host, sizeof v->host, h->host, sizeof h->host);
  ring_text_escape(v->job, sizeof v->job, v->job_id, sizeof v->job_id);
  size_t cap = (size_t)v->rd.capacity; /* validated: <= CS_RING_MAX_CAPACITY and within the file */
  v->recs = malloc(cap * sizeof *v->recs);
  if (!v->recs) {
    if (err) fprintf(err, "collscope %s: skipping %s: out of memory for %zu records\n", cmd, v->path, cap);
    cs_ring_reader_close(&v->rd);
    return -1;
  }
  v->nrecs = cs_ring_read(&v->rd, v->recs, cap);
  return 0;
}

void ring_view_free(struct ring_view *v) {
  free(v->recs);
  v->recs = NULL;
  cs_ring_reader_close(&v->rd);
}

bool ring_rec_timed(const struct cs_record *r) {
  return (r->timing == CS_TIMING_GPU_EVENT || r->timing == CS_TIMING_PROFILER) && r->start_ns > 0 &&
         r->end_ns >= r->start_ns && r->end_ns < INT64_MAX / 2 && r->end_ns - r->start_ns < 1000000000000000LL;
}

void ring_det_op(struct cs_det_op *d, const struct cs_record *r, int rank, const char *host) {
  memset(d, 0, sizeof *d);
  d->comm = r->comm_id;
  d->seq = (int64_t)r->seq;
  d->comm_size = r->comm_size;
  d->comm_rank = r->comm_rank;
  d->rank = rank;
  d->host = host;
  d->start_ns = r->start_ns;
  d->end_ns = r->end_ns;
  d->enqueue_ns = r->enqueue_ns;
  d->state = r->status != 0 || r->timing == CS_TIMING_ERROR ? CS_DET_FAILED
             : ring_rec_timed(r)                            ? CS_DET_DONE
             : r->timing == CS_TIMING_SAMPLED_OUT           ? CS_DET_ENTERED
                                                            : CS_DET_UNTIMED;
  d->p2p = r->op < CS_OP_COUNT && cs_op_table[r->op].cls == CS_CLASS_P2P;
  d->bytes = r->bytes;
  /* a group's members that share one span: one instance (analysis/detect_group.c) */
  d->group = r->group;
  d->group_ops = r->group_ops;
  d->peer = r->peer;
  d->recv = r->op == CS_OP_Recv;
}
