/* tools/trace/trace_perfetto.c: `collscope trace --format perfetto`: the JSON trace's tracks and
 * events as a Perfetto protobuf trace (schema: tools/trace/perfetto/perfetto_trace.proto, encoded by
 * protobuf-c).
 *
 * Streaming: a Trace is a sequence of `packet` fields (field 1, length-delimited), so each
 * TracePacket is packed on its own and appended to its reading thread's buffer behind its tag
 * (0x0a) and length; the buffers go to the file as they fill (trace_out.h). No trace is held.
 *
 * Layout (the JSON's, cmd_trace.c): per dump file a process track (ProcessDescriptor: pid, name
 * "rank R (host)"), ordered by rank; under it a "host" track (communicator events) and one
 * track per CUDA stream, in stream order. A timed op or copy is a SLICE_BEGIN / SLICE_END pair
 * on its stream's track (begin at start_ns, end at start_ns + dur_us), anything else an
 * INSTANT; the record's fields are debug annotations named as the JSON's args. The members of a
 * collective instance (comm, seq) share one flow id, which Perfetto chains in time order.
 *
 * Each reading thread's buffer is one packet sequence (trusted_packet_sequence_id = thread + 1)
 * with its own interning: categories and argument names are given in the sequence's first
 * packet; event names and repeated string values (op, dtype, comm id...) get an id the first
 * time the sequence writes them, up to PF_INTERN_MAX per sequence (after that, inline). Strings
 * that are not UTF-8 are written with each stray byte as U+0080..U+00FF, as the JSON's \u00XX. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/dump_schema.h"
#include "collscope/hash.h"
#include "collscope/schema.h"
#include "perfetto_trace.pb-c.h"
#include "trace.h"
#include "xalloc.h"

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent Event;
typedef Perfetto__Protos__DebugAnnotation Annotation;

/* ---------- fixed names: categories and argument names ---------- */

enum { CAT_COLL = 1,
       CAT_P2P,
       CAT_XFER,
       CAT_COMM,
       CAT_END };
static const char *const cat_names[CAT_END] = {NULL, "coll", "p2p", "xfer", "comm"};

/* the argument names: the dump schema's keys (include/collscope/dump_schema.h), and "src" */
static const char *const src_name = "src";
#define PF_ARGS(X) \
  X(COMM, cs_dump_op_keys.comm) \
  X(COMM_SIZE, cs_dump_op_keys.comm_size) \
  X(COMM_RANK, cs_dump_op_keys.comm_rank) \
  X(RANK, cs_dump_op_keys.rank) \
  X(SEQ, cs_dump_op_keys.seq) \
  X(OP, cs_dump_op_keys.op_name) \
  X(DTYPE, cs_dump_op_keys.dtype) \
  X(COUNT, cs_dump_op_keys.count) \
  X(BYTES, cs_dump_op_keys.bytes) \
  X(REDOP, cs_dump_op_keys.redop) \
  X(ROOT, cs_dump_op_keys.root) \
  X(PEER, cs_dump_op_keys.peer) \
  X(STREAM, cs_dump_op_keys.stream) \
  X(GROUP, cs_dump_op_keys.group) \
  X(ENQUEUE_NS, cs_dump_op_keys.enqueue_ns) \
  X(START_NS, cs_dump_op_keys.start_ns) \
  X(END_NS, cs_dump_op_keys.end_ns) \
  X(DUR_US, cs_dump_op_keys.dur_us) \
  X(TIMING, cs_dump_op_keys.timing_name) \
  X(CAPTURED, cs_dump_op_keys.captured) \
  X(SITE, cs_dump_op_keys.site) \
  X(STATUS, cs_dump_op_keys.status) \
  X(SRC, src_name) \
  X(API, cs_dump_xfer_keys.api) \
  X(KIND, cs_dump_xfer_keys.kind) \
  X(ASYNC, cs_dump_xfer_keys.async) \
  X(EVENT, cs_dump_comm_keys.event) \
  X(SIZE, cs_dump_comm_keys.size) \
  X(DEVICE, cs_dump_comm_keys.device) \
  X(PARENT, cs_dump_comm_keys.parent) \
  X(T_NS, cs_dump_comm_keys.t_ns)
#define PF_ARG_ENUM(id, key) A_##id,
enum { A_NONE,
       PF_ARGS(PF_ARG_ENUM) A_END };
#define PF_ARG_NAME(id, key) [A_##id] = &key,
static const char *const *const arg_names[A_END] = {PF_ARGS(PF_ARG_NAME)};

/* ---------- per-sequence interning ---------- */

#define PF_INTERN_MAX 1024 /* names (and values) per sequence given an id; later ones inline */
#define PF_INTERN_LEN 256  /* longer strings are always inline */
#define PF_SLOTS 2048      /* open addressing, at most half full */

struct pf_intern {
  char **s; /* PF_SLOTS, NULL: empty */
  uint64_t *iid;
  size_t n;
};

struct pf_seq {
  bool started;
  struct pf_intern names, values;
};

struct pf_state {
  struct pf_seq *seq;
  unsigned n;
};

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* the string's id in t, 0 when it is not interned (too long, table full); *fresh: new now, and
 * *copy the table's copy of it (lives as long as the table) */
static uint64_t intern(struct pf_intern *t, const char *s, bool *fresh, const char **copy) {
  *fresh = false;
  *copy = s;
  size_t len = strlen(s);
  if (len > PF_INTERN_LEN) return 0;
  if (!t->s) {
    t->s = xcalloc(PF_SLOTS, sizeof *t->s);
    t->iid = xcalloc(PF_SLOTS, sizeof *t->iid);
  }
  size_t i = (size_t)hash_str(s) & (PF_SLOTS - 1);
  for (; t->s[i]; i = (i + 1) & (PF_SLOTS - 1))
    if (strcmp(t->s[i], s) == 0) return t->iid[i];
  if (t->n >= PF_INTERN_MAX) return 0;
  t->s[i] = xstrdup(s);
  t->iid[i] = ++t->n;
  *fresh = true;
  *copy = t->s[i];
  return t->iid[i];
}

static void intern_free(struct pf_intern *t) {
  if (t->s)
    for (size_t i = 0; i < PF_SLOTS; i++) free(t->s[i]);
  free(t->s);
  free(t->iid);
}

/* ---------- one packet being built ---------- */

#define PF_MAX_ARGS 24
#define PF_MAX_OWNED (PF_MAX_ARGS + 2)

struct pf_pkt {
  struct trace_run *R;
  unsigned worker;
  struct pf_seq *q;
  Packet p;
  Event e;
  uint64_t cat, flow;
  Annotation a[PF_MAX_ARGS];
  Annotation *ap[PF_MAX_ARGS];
  /* interned entries new in this packet */
  Perfetto__Protos__InternedData idata;
  Perfetto__Protos__EventName en;
  Perfetto__Protos__EventName *enp;
  Perfetto__Protos__InternedString is[PF_MAX_ARGS];
  Perfetto__Protos__InternedString *isp[PF_MAX_ARGS];
  char *owned[PF_MAX_OWNED]; /* strings made valid UTF-8 for this packet */
  size_t nowned;
  char src[512], hex[2][17]; /* formatted values, alive until the packet is written */
  unsigned nhex;
};

/* s as valid UTF-8: itself, or a copy with each stray byte as the code point of its value */
static const char *utf8(struct pf_pkt *k, const char *s) {
  const unsigned char *u = (const unsigned char *)s;
  size_t n = strlen(s), i = 0;
  while (i < n) {
    size_t l = u[i] < 0x80 ? 1 : tout_utf8_len(u + i, n - i);
    if (!l) break;
    i += l;
  }
  if (i == n || k->nowned == PF_MAX_OWNED) return i == n ? s : "";
  char *c = xrealloc(NULL, 2 * n + 1), *p = c;
  for (i = 0; i < n;) {
    size_t l = u[i] < 0x80 ? 1 : tout_utf8_len(u + i, n - i);
    if (l) {
      memcpy(p, u + i, l);
      p += l;
      i += l;
    } else {
      *p++ = (char)(0xc0 | (u[i] >> 6));
      *p++ = (char)(0x80 | (u[i] & 0x3f));
      i++;
    }
  }
  *p = 0;
  k->owned[k->nowned++] = c;
  return c;
}

static struct pf_seq *seq_of(struct trace_run *R, unsigned worker) {
  struct pf_state *st = R->fmt;
  return &st->seq[worker < st->n ? worker : 0];
}

static void pkt_init(struct pf_pkt *k, struct trace_run *R, unsigned worker) {
  memset(k, 0, sizeof *k);
  k->R = R;
  k->worker = worker;
  k->q = seq_of(R, worker);
  perfetto__protos__trace_packet__init(&k->p);
  perfetto__protos__track_event__init(&k->e);
  perfetto__protos__interned_data__init(&k->idata);
  k->p.has_trusted_packet_sequence_id = true;
  k->p.trusted_packet_sequence_id = (worker < ((struct pf_state *)R->fmt)->n ? worker : 0) + 1;
}

static void varint(struct tbuf *b, uint64_t v) {
  char t[10];
  size_t n = 0;
  do {
    t[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  tb_raw(b, t, n);
}

/* appends the packet as one `packet` field of Trace and frees what it owned */
static void pkt_write(struct pf_pkt *k) {
  struct trace_out *out = &k->R->out;
  struct tbuf *b = tout_buf(out, k->worker);
  size_t n = protobuf_c_message_get_packed_size(&k->p.base);
  tb_raw(b, "\x0a", 1); /* field 1, wire type 2 */
  varint(b, n);
  protobuf_c_message_pack(&k->p.base, (uint8_t *)tb_room(b, n));
  tout_end_record(out, b);
  for (size_t i = 0; i < k->nowned; i++) free(k->owned[i]);
  k->nowned = 0;
}

/* the sequence's first packet: its state cleared, the fixed names interned */
static void seq_start(struct trace_run *R, unsigned worker) {
  struct pf_seq *q = seq_of(R, worker);
  if (q->started) return;
  q->started = true;
  struct pf_pkt k;
  pkt_init(&k, R, worker);
  Perfetto__Protos__EventCategory cats[CAT_END], *catp[CAT_END];
  Perfetto__Protos__DebugAnnotationName names[A_END], *namep[A_END];
  for (size_t i = 1; i < CAT_END; i++) {
    perfetto__protos__event_category__init(&cats[i]);
    cats[i].has_iid = true;
    cats[i].iid = i;
    cats[i].name = (char *)cat_names[i];
    catp[i - 1] = &cats[i];
  }
  for (size_t i = 1; i < A_END; i++) {
    perfetto__protos__debug_annotation_name__init(&names[i]);
    names[i].has_iid = true;
    names[i].iid = i;
    names[i].name = (char *)*arg_names[i];
    namep[i - 1] = &names[i];
  }
  k.idata.n_event_categories = CAT_END - 1;
  k.idata.event_categories = catp;
  k.idata.n_debug_annotation_names = A_END - 1;
  k.idata.debug_annotation_names = namep;
  k.p.interned_data = &k.idata;
  k.p.has_sequence_flags = true;
  k.p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
  pkt_write(&k);
}

/* ---------- track events ---------- */

static uint64_t process_uuid(int pid) { return ((uint64_t)(uint32_t)pid + 1) << 16; }
static uint64_t track_uuid(int pid, int tid) { return process_uuid(pid) | (uint64_t)(tid + 1); }

static void ev_name(struct pf_pkt *k, const char *name) {
  name = utf8(k, name);
  bool fresh;
  uint64_t iid = intern(&k->q->names, name, &fresh, &name);
  if (!iid) {
    k->e.name = (char *)name;
    return;
  }
  k->e.has_name_iid = true;
  k->e.name_iid = iid;
  if (fresh) {
    perfetto__protos__event_name__init(&k->en);
    k->en.has_iid = true;
    k->en.iid = iid;
    k->en.name = (char *)name;
    k->enp = &k->en;
    k->idata.n_event_names = 1;
    k->idata.event_names = &k->enp;
  }
}

static Annotation *arg(struct pf_pkt *k, int name) {
  if (k->e.n_debug_annotations >= PF_MAX_ARGS) return NULL;
  Annotation *a = &k->a[k->e.n_debug_annotations];
  perfetto__protos__debug_annotation__init(a);
  a->has_name_iid = true;
  a->name_iid = (uint64_t)name;
  k->ap[k->e.n_debug_annotations++] = a;
  return a;
}
static void arg_int(struct pf_pkt *k, int name, int64_t v) {
  Annotation *a = arg(k, name);
  if (!a) return;
  a->has_int_value = true;
  a->int_value = v;
}
static void arg_bool(struct pf_pkt *k, int name, bool v) {
  Annotation *a = arg(k, name);
  if (!a) return;
  a->has_bool_value = true;
  a->bool_value = v;
}
static void arg_double(struct pf_pkt *k, int name, double v) {
  Annotation *a = arg(k, name);
  if (!a) return;
  a->has_double_value = true;
  a->double_value = isfinite(v) ? v : 0.0;
}
static void arg_ptr(struct pf_pkt *k, int name, uint64_t v) { /* shown as 0x... */
  Annotation *a = arg(k, name);
  if (!a) return;
  a->has_pointer_value = true;
  a->pointer_value = v;
}
/* a string value: interned when `repeats` (few distinct values), else inline; none for NULL */
static void arg_str(struct pf_pkt *k, int name, const char *v, bool repeats) {
  if (!v) return;
  Annotation *a = arg(k, name);
  if (!a) return;
  v = utf8(k, v);
  bool fresh = false;
  uint64_t iid = repeats ? intern(&k->q->values, v, &fresh, &v) : 0;
  if (!iid) {
    a->string_value = (char *)v;
    return;
  }
  a->has_string_value_iid = true;
  a->string_value_iid = iid;
  if (fresh) {
    size_t i = k->idata.n_debug_annotation_string_values++;
    perfetto__protos__interned_string__init(&k->is[i]);
    k->is[i].has_iid = true;
    k->is[i].iid = iid;
    k->is[i].has_str = true;
    k->is[i].str.data = (uint8_t *)v;
    k->is[i].str.len = strlen(v);
    k->isp[i] = &k->is[i];
    k->idata.debug_annotation_string_values = k->isp;
  }
}
static void arg_hex16(struct pf_pkt *k, int name, uint64_t v) { /* a communicator id, as the JSON's */
  char *t = k->hex[k->nhex++ & 1];
  snprintf(t, sizeof k->hex[0], "%016" PRIx64, v);
  arg_str(k, name, t, true);
}

/* writes the event at ts on the track */
static void ev_write(struct pf_pkt *k, Perfetto__Protos__TrackEvent__Type type, uint64_t track, int64_t ts) {
  k->p.has_timestamp = true;
  k->p.timestamp = ts > 0 ? (uint64_t)ts : 0;
  k->e.has_type = true;
  k->e.type = type;
  k->e.has_track_uuid = true;
  k->e.track_uuid = track;
  if (k->cat) {
    k->e.n_category_iids = 1;
    k->e.category_iids = &k->cat;
  }
  if (k->flow) {
    k->e.n_flow_ids = 1;
    k->e.flow_ids = &k->flow;
  }
  k->e.debug_annotations = k->ap;
  k->p.track_event = &k->e;
  if (k->idata.n_event_names || k->idata.n_debug_annotation_string_values) k->p.interned_data = &k->idata;
  k->p.has_sequence_flags = true;
  k->p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
  pkt_write(k);
}

static void slice_end(struct trace_run *R, unsigned worker, uint64_t track, int64_t ts) {
  struct pf_pkt k;
  pkt_init(&k, R, worker);
  ev_write(&k, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, track, ts);
}

static int64_t end_ns(int64_t start_ns, int64_t end, double dur_us) {
  return start_ns + (int64_t)llround(trace_slice_dur_us(start_ns, end, dur_us) * 1e3);
}

/* the instance's flow id: the same in every file, never 0 */
static uint64_t flow_id(uint64_t comm, int64_t seq) {
  uint64_t z = cs_hash_fin(comm ^ ((uint64_t)seq * CS_HASH_GOLDEN));
  return z ? z : 1;
}

static void src_arg(struct pf_pkt *k, const char *fname, unsigned line) {
  snprintf(k->src, sizeof k->src, "%s:%u", fname, line);
  arg_str(k, A_SRC, k->src, false);
}

static void pf_op(struct trace_run *R, unsigned worker, const char *fname, const struct cs_op_rec *o, int pid,
                  int tid) {
  seq_start(R, worker);
  struct pf_pkt k;
  pkt_init(&k, R, worker);
  char nb[128];
  ev_name(&k, trace_op_event_name(o, nb, sizeof nb));
  k.cat = o->op >= 0 && cs_op_table[o->op].cls == CS_CLASS_P2P ? CAT_P2P : CAT_COLL;
  bool slice = trace_op_slice(o);
  if (slice && o->seq >= 0) k.flow = flow_id(o->comm, o->seq);
  arg_hex16(&k, A_COMM, o->comm);
  arg_int(&k, A_COMM_SIZE, o->comm_size);
  arg_int(&k, A_COMM_RANK, o->comm_rank);
  arg_int(&k, A_RANK, o->rank);
  arg_int(&k, A_SEQ, o->seq);
  arg_str(&k, A_OP, o->op_name, true);
  arg_str(&k, A_DTYPE, o->dtype, true);
  arg_int(&k, A_COUNT, o->count);
  arg_int(&k, A_BYTES, (int64_t)o->bytes);
  arg_str(&k, A_REDOP, o->redop, true);
  arg_int(&k, A_ROOT, o->root);
  arg_int(&k, A_PEER, o->peer);
  arg_ptr(&k, A_STREAM, o->stream);
  arg_int(&k, A_GROUP, o->group);
  arg_int(&k, A_ENQUEUE_NS, o->enqueue_ns);
  arg_int(&k, A_START_NS, o->start_ns);
  arg_int(&k, A_END_NS, o->end_ns);
  arg_double(&k, A_DUR_US, o->dur_us);
  arg_str(&k, A_TIMING, o->timing_name, true);
  arg_bool(&k, A_CAPTURED, o->captured);
  arg_str(&k, A_SITE, o->site, true);
  arg_int(&k, A_STATUS, o->status);
  src_arg(&k, fname, o->line);
  uint64_t track = track_uuid(pid, tid);
  if (!slice) {
    ev_write(&k, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, track, o->enqueue_ns);
    return;
  }
  ev_write(&k, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, track, o->start_ns);
  slice_end(R, worker, track, end_ns(o->start_ns, o->end_ns, o->dur_us));
}

static void pf_xfer(struct trace_run *R, const char *fname, const struct cs_xfer_rec *x, int pid, int tid) {
  seq_start(R, 0);
  struct pf_pkt k;
  pkt_init(&k, R, 0);
  char name[128];
  trace_xfer_event_name(x, name, sizeof name);
  ev_name(&k, name);
  k.cat = CAT_XFER;
  arg_str(&k, A_OP, x->op_name ? x->op_name : "", true);
  arg_str(&k, A_API, x->api, true);
  arg_str(&k, A_KIND, x->kind, true);
  arg_int(&k, A_BYTES, (int64_t)x->bytes);
  arg_ptr(&k, A_STREAM, x->stream);
  arg_bool(&k, A_ASYNC, x->async);
  arg_int(&k, A_ENQUEUE_NS, x->enqueue_ns);
  arg_int(&k, A_START_NS, x->start_ns);
  arg_int(&k, A_END_NS, x->end_ns);
  arg_double(&k, A_DUR_US, x->dur_us);
  arg_str(&k, A_TIMING, x->timing_name, true);
  arg_str(&k, A_SITE, x->site, true);
  arg_int(&k, A_STATUS, x->status);
  src_arg(&k, fname, x->line);
  uint64_t track = track_uuid(pid, tid);
  if (!trace_xfer_slice(x)) {
    ev_write(&k, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, track, x->enqueue_ns);
    return;
  }
  ev_write(&k, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, track, x->start_ns);
  slice_end(R, 0, track, end_ns(x->start_ns, x->end_ns, x->dur_us));
}

static void pf_comm(struct trace_run *R, const struct cs_comm_rec *c, int pid) {
  seq_start(R, 0);
  struct pf_pkt k;
  pkt_init(&k, R, 0);
  char name[128];
  trace_comm_event_name(c, name, sizeof name);
  ev_name(&k, name);
  k.cat = CAT_COMM;
  arg_str(&k, A_EVENT, c->event ? c->event : "", true);
  arg_hex16(&k, A_COMM, c->comm);
  arg_int(&k, A_SIZE, c->size);
  arg_int(&k, A_RANK, c->rank);
  arg_int(&k, A_DEVICE, c->device);
  if (c->has_parent) arg_hex16(&k, A_PARENT, c->parent);
  arg_int(&k, A_T_NS, c->t_ns);
  ev_write(&k, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, track_uuid(pid, 0), c->t_ns);
}

/* ---------- tracks ---------- */

static void track(struct trace_run *R, uint64_t uuid, uint64_t parent, const char *name, int rank, int pid,
                  const char *pname) {
  struct pf_pkt k;
  pkt_init(&k, R, 0);
  Perfetto__Protos__TrackDescriptor d;
  Perfetto__Protos__ProcessDescriptor pd;
  perfetto__protos__track_descriptor__init(&d);
  d.has_uuid = true;
  d.uuid = uuid;
  d.has_sibling_order_rank = true;
  d.sibling_order_rank = rank;
  if (parent) {
    d.has_parent_uuid = true;
    d.parent_uuid = parent;
    d.name = (char *)utf8(&k, name);
  } else {
    perfetto__protos__process_descriptor__init(&pd);
    pd.has_pid = true;
    pd.pid = pid;
    pd.process_name = (char *)utf8(&k, pname);
    d.process = &pd;
    d.has_child_ordering = true;
    d.child_ordering = PERFETTO__PROTOS__TRACK_DESCRIPTOR__CHILD_TRACKS_ORDERING__EXPLICIT;
  }
  k.p.track_descriptor = &d;
  pkt_write(&k);
}

static void pf_begin(struct trace_run *R) {
  struct pf_state *st = xcalloc(1, sizeof *st);
  st->n = R->out.nw;
  st->seq = xcalloc(st->n, sizeof *st->seq);
  R->fmt = st;
  tout_set_binary(&R->out);
  seq_start(R, 0);
  const struct cs_dumpset *set = R->set;
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    if (f->read_index >= R->nf) continue;
    const struct tfile *F = &R->f[f->read_index];
    if (!F->ok) continue;
    char name[256];
    trace_process_name(f, name, sizeof name);
    uint64_t pu = process_uuid(F->pid);
    track(R, pu, 0, NULL, (int)i, F->pid, name);
    if (f->ncomms) track(R, track_uuid(F->pid, 0), pu, "host", 0, 0, NULL);
    size_t nt = F->nstreams + F->streams_full;
    for (size_t k = 0; k < nt; k++) {
      char sn[64];
      trace_stream_name(F, k, sn, sizeof sn);
      track(R, track_uuid(F->pid, (int)k + 1), pu, sn, (int)k + 1, 0, NULL);
    }
  }
}

static void pf_end(struct trace_run *R) {
  struct pf_state *st = R->fmt;
  if (!st) return;
  for (unsigned i = 0; i < st->n; i++) {
    intern_free(&st->seq[i].names);
    intern_free(&st->seq[i].values);
  }
  free(st->seq);
  free(st);
  R->fmt = NULL;
}

static const struct trace_emit emit = {
    .name = "perfetto",
    .bytes_per_record = 320, /* measured on bench/gen_dumps sets: ~306 (docs/benchmarks-readers.md) */
    .begin = pf_begin,
    .op = pf_op,
    .xfer = pf_xfer,
    .comm = pf_comm,
    .instance = NULL, /* flows: the members' shared flow id */
    .end = pf_end,
};

const struct trace_emit *trace_emit_perfetto(void) { return &emit; }
