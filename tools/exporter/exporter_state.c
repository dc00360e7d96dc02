/* tools/exporter/exporter_state.c: the exporter's ring follower (see exporter_state.h): directory
 * scan, checked open, the summary block's series and health folded into monotonic totals,
 * the side ring's rare records, grace period and the per-job detectors. */
#include "exporter_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "collscope/sdc.h"
#include "ring/ring_sched.h"

static const char *const size_name[EXP_SIZE_CLASSES] = {"0-64KiB", "64KiB-1MiB", "1MiB-16MiB", "16MiB-256MiB",
                                                        "256MiB+"};

const char *exp_size_class_name(unsigned c) { return c < EXP_SIZE_CLASSES ? size_name[c] : "?"; }
unsigned exp_size_class(uint64_t bytes) { return cs_ring_size_class(bytes); }
double exp_bucket_le(unsigned b) { return (double)cs_ring_bucket_ns(b) / 1e9; }

int64_t exp_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sat_add(uint64_t *a, uint64_t b) {
  if (__builtin_add_overflow(*a, b, a)) *a = UINT64_MAX;
}

int exp_state_init(struct exp_state *s, const char *dir, double grace_s, FILE *log) {
  memset(s, 0, sizeof *s);
  if (pthread_mutex_init(&s->mu, NULL) != 0) return -1;
  snprintf(s->dir, sizeof s->dir, "%s", dir);
  s->grace_s = grace_s;
  s->analyse_every_s = 10;
  s->log = log;
  s->batch = malloc(EXP_READ_BATCH * sizeof *s->batch);
  if (!s->batch) {
    pthread_mutex_destroy(&s->mu);
    return -1;
  }
  cs_det_params_default(&s->dp);
  cs_det_params_env(&s->dp);
  cs_link_params_default(&s->lp);
  cs_link_params_env(&s->lp);
  return 0;
}

static void rank_free(struct exp_rank *r) {
  if (!r) return;
  cs_ring_reader_close(&r->rd);
  free(r);
}

void exp_state_free(struct exp_state *s) {
  for (size_t i = 0; i < s->n; i++) rank_free(s->v[i]);
  free(s->v);
  free(s->skips);
  free(s->pairs);
  free(s->batch);
  pthread_mutex_destroy(&s->mu);
}

/* ---- skipped files: reported once per (dev, ino) ---- */
static struct exp_skip *skip_find(struct exp_state *s, uint64_t dev, uint64_t ino) {
  for (size_t i = 0; i < s->nskips; i++)
    if (s->skips[i].dev == dev && s->skips[i].ino == ino) return &s->skips[i];
  return NULL;
}

static void skip_note(struct exp_state *s, const char *name, uint64_t dev, uint64_t ino, const char *why) {
  struct exp_skip *k = skip_find(s, dev, ino);
  if (k) {
    k->seen = true;
    return;
  }
  s->skipped_total++;
  char pr[4 * 256 + 1];
  ring_text_escape(pr, sizeof pr, name, strlen(name));
  if (s->log) fprintf(s->log, "collscope exporter: skipping %s/%s: %s\n", s->dir, pr, why);
  if (s->nskips >= EXP_MAX_SKIPS) return; /* reported again later: still one line per pass at most */
  if (!s->skips) s->skips = calloc(EXP_MAX_SKIPS, sizeof *s->skips);
  if (!s->skips) return;
  k = &s->skips[s->nskips++];
  k->dev = dev;
  k->ino = ino;
  k->seen = true;
  snprintf(k->name, sizeof k->name, "%s", name);
}

/* ---- the summary block ---- */
/* a snapshot that cannot come from an honest writer: more timed than counted, more in the
 * buckets than timed */
static bool series_sane(const struct cs_ring_series_vals *v) {
  uint64_t inb = 0;
  for (unsigned b = 0; b < EXP_BUCKETS; b++)
    if (__builtin_add_overflow(inb, v->bucket[b], &inb)) return false;
  return v->timed <= v->count && v->errors <= v->count && inb <= v->timed;
}

/* NOW - LAST, field by field; false when a field went backwards or the difference is not a
 * sane snapshot itself (then the series restarted: NOW is added afresh) */
static bool series_delta(const struct cs_ring_series_vals *now, const struct cs_ring_series_vals *last,
                         struct cs_ring_series_vals *d) {
  const uint64_t *a = (const uint64_t *)now, *b = (const uint64_t *)last;
  uint64_t *o = (uint64_t *)d;
  for (size_t i = 0; i < sizeof *d / 8; i++) {
    if (a[i] < b[i]) return false;
    o[i] = a[i] - b[i];
  }
  return series_sane(d);
}

static void take_series(struct exp_rank *r, struct exp_opstat *o, const struct cs_ring_series *src) {
  struct cs_ring_series_vals v, d;
  uint64_t gen = o->gen;
  int rc = cs_ring_read_series(src, &v, &gen);
  if (rc < 0) r->torn++;
  if (rc != 1) return;
  o->gen = gen;           /* this snapshot is judged once */
  if (!series_sane(&v)) { /* not taken: the next honest snapshot is compared with the last good one */
    r->invalid++;
    return;
  }
  if (!series_delta(&v, &o->raw, &d)) {
    d = v;
    r->restarts++;
  }
  o->raw = v;
  sat_add(&o->count, d.count);
  sat_add(&o->errors, d.errors);
  sat_add(&o->bytes, d.bytes);
  sat_add(&o->timed, d.timed);
  for (unsigned b = 0; b < EXP_BUCKETS; b++) sat_add(&o->bucket[b], d.bucket[b]);
  o->dur_sum_s += (double)d.dur_ns / 1e9;
  o->bus_bytes += (double)d.bus_bytes;
  if (d.dur_ns > 0 && d.timed > 0) o->busbw_Bps = (double)d.bus_bytes / ((double)d.dur_ns / 1e9);
}

/* a total of the ring (never backwards here): a value below the previous one is a restart */
static void mono(uint64_t *total, uint64_t *last, uint64_t now) {
  sat_add(total, now >= *last ? now - *last : now);
  *last = now;
}

/* an IB device name as the sampler checks it: [A-Za-z0-9_.-], not starting with '.' */
static bool dev_name_ok(const char *s) {
  if (!*s || *s == '.') return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
          *s == '-' || *s == '.'))
      return false;
  return true;
}

static void take_health(struct exp_rank *r) {
  struct exp_health *h = &r->health;
  struct cs_ring_health_vals v;
  uint64_t gen = h->gen;
  if (cs_ring_read_health(&r->rd, &v, &gen) != 1) return;
  h->gen = gen;
  h->raw = v;
  h->have = v.t_ns > 0;
  const uint64_t now[EXP_HC_COUNT] = {v.ecc_corrected, v.ecc_uncorrected, v.pcie_replay, v.nvlink_crc,
                                      v.nvlink_replay, v.nvlink_recovery, v.xid_events};
  for (unsigned k = 0; k < EXP_HC_COUNT; k++) mono(&h->total[k], &h->last[k], now[k]);
  for (unsigned p = 0; p < v.nib; p++) {
    const struct cs_ring_ib_port *ip = &v.ib[p];
    if (strcmp(h->ib_dev[p], ip->dev) != 0 || h->ib_port[p] != ip->port) { /* another port in this row */
      h->ib_dev[p][0] = 0;
      if (!dev_name_ok(ip->dev) || ip->port > 255) continue; /* not a name the sampler writes: no series */
      snprintf(h->ib_dev[p], sizeof h->ib_dev[p], "%s", ip->dev);
      h->ib_port[p] = ip->port;
      memset(h->ib_total[p], 0, sizeof h->ib_total[p]);
      memset(h->ib_last[p], 0, sizeof h->ib_last[p]);
    }
    for (unsigned k = 0; k < CS_RING_IB_COUNTERS; k++) mono(&h->ib_total[p][k], &h->ib_last[p][k], ip->c[k]);
  }
}

/* ---- the side ring's records ---- */
static void fold_sdc(struct exp_rank *r, const struct cs_record *rec) {
  r->sdc_checks++;
  struct exp_sdc_entry *e = &r->sdc[r->sdc_next];
  e->comm = rec->comm_id;
  e->seq = (int64_t)rec->seq;
  e->op = rec->op;
  e->dtype = rec->dtype;
  e->redop = rec->redop;
  e->root = rec->root;
  e->comm_size = rec->comm_size;
  e->comm_rank = rec->comm_rank;
  e->count = rec->count;
  e->checked = rec->sdc_checked;
  e->fp = rec->fingerprint;
  e->in_sum = rec->in_sum;
  e->in_abs = rec->in_abs;
  e->out_sum = rec->out_sum;
  e->done = false;
  r->sdc_next = (r->sdc_next + 1) % EXP_SDC_WINDOW;
  if (r->sdc_n < EXP_SDC_WINDOW) r->sdc_n++;
}

static void fold_link(struct exp_rank *r, const struct cs_record *rec) {
  struct cs_link_obs *o = &r->links[r->link_next];
  struct cs_link_record l;
  cs_link_unpack(rec, &l);
  memset(o, 0, sizeof *o);
  bool send = !l.recv;
  o->send = send;
  o->src_rank = send ? r->rank : l.peer;
  o->dst_rank = send ? l.peer : r->rank;
  o->src_host = send ? r->host : NULL; /* peers' hosts are filled in by the job's analysis */
  o->dst_host = send ? NULL : r->host;
  o->bytes = l.bytes;
  o->msgs = l.msgs;
  o->busy_us = (double)l.busy_ns / 1e3;
  o->gbps_p50 = l.gbps_p50;
  o->gbps_p10 = l.gbps_p10;
  r->link_next = (r->link_next + 1) % EXP_LINK_WINDOW;
  if (r->link_n < EXP_LINK_WINDOW) r->link_n++;
}

static void fold_side(struct exp_rank *r, const struct cs_record *rec) {
  if (rec->type == CS_REC_OP && rec->op < CS_OP_COUNT && (rec->sdc_checked & 1) && rec->seq != UINT64_MAX &&
      rec->status == 0)
    fold_sdc(r, rec);
  else if (rec->type == CS_REC_HANG)
    r->hang_reports++;
  else if (rec->type == CS_REC_LINK)
    fold_link(r, rec);
  else
    r->invalid++;
}

/* the detector's window: the op records among the newest EXP_TAIL of the main ring */
static void refill_window(struct exp_state *s, struct exp_rank *r) {
  if (s->batch) exp_gaps_fold(&r->gaps, &r->rd, s->batch, EXP_READ_BATCH);
  size_t got = s->batch ? cs_ring_read_latest(&r->rd, s->batch, EXP_TAIL) : 0;
  r->det_n = r->det_next = 0;
  for (size_t i = 0; i < got; i++) {
    const struct cs_record *rec = &s->batch[i];
    if (rec->type != CS_REC_OP || rec->op >= CS_OP_COUNT || rec->seq == UINT64_MAX) continue;
    ring_det_op(&r->det[r->det_next], rec, r->rank, r->host);
    r->det_next = (r->det_next + 1) % EXP_DET_WINDOW;
    if (r->det_n < EXP_DET_WINDOW) r->det_n++;
  }
}

static void follow(struct exp_state *s, struct exp_rank *r) {
  struct cs_ring_hdr *h = (struct cs_ring_hdr *)(uintptr_t)r->rd.h;
  struct cs_ring_stats *b = cs_ring_stats_of(h);
  uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
  if (head != r->records) s->dirty = true;
  if (head > r->records) r->records = head; /* a counter: never backwards, whatever the file does */
  for (unsigned c = 0; c <= EXP_COMM_LABELS; c++) {
    if (c < EXP_COMM_LABELS && c == r->ncomm_labels) { /* the row's communicator, as first seen */
      uint64_t id = atomic_load_explicit(&b->comm_ids[c], memory_order_acquire);
      bool dup = false;
      for (unsigned k = 0; k < c; k++) dup |= r->comm_ids[k] == id;
      if (id && !dup) r->comm_ids[r->ncomm_labels++] = id;
    }
    /* a row is read once its communicator is known (the writer names it first): two rows
     * never render with the same labels */
    if (c < EXP_COMM_LABELS && c >= r->ncomm_labels) continue;
    for (unsigned o = 0; o < CS_OP_COUNT; o++)
      for (unsigned z = 0; z < EXP_SIZE_CLASSES; z++) take_series(r, &r->ops[c][o][z], &b->series[c][o][z]);
  }
  struct cs_record *buf = s->batch;
  size_t got;
  do {
    got = buf ? cs_ring_read_side(&r->rd, buf, EXP_READ_BATCH) : 0;
    for (size_t i = 0; i < got; i++) fold_side(r, &buf[i]);
  } while (got == EXP_READ_BATCH);
  take_health(r);
  if (!r->gpu_uuid[0] && !r->pci_bus_id[0])
    cs_ring_gpu_ident(&r->rd, r->gpu_uuid, sizeof r->gpu_uuid, r->pci_bus_id, sizeof r->pci_bus_id);
  uint64_t d = atomic_load_explicit(&h->drops, memory_order_relaxed);
  if (d > r->drops) r->drops = d; /* a counter: never backwards, whatever the file does */
}

/* ---- rings ---- */
static struct exp_rank *rank_find(struct exp_state *s, uint64_t dev, uint64_t ino) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i]->dev == dev && s->v[i]->ino == ino) return s->v[i];
  return NULL;
}

static void rank_open(struct exp_state *s, const char *name, const struct stat *st, int64_t now_ns) {
  if (s->n >= EXP_MAX_RINGS) {
    skip_note(s, name, (uint64_t)st->st_dev, (uint64_t)st->st_ino, "too many rings (the exporter follows 4096)");
    return;
  }
  struct exp_rank *r = calloc(1, sizeof *r);
  if (!r) {
    skip_note(s, name, (uint64_t)st->st_dev, (uint64_t)st->st_ino, "out of memory");
    return;
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  if (cs_ring_reader_open(&r->rd, path) != 0) {
    /* "not initialised" too: the writer links a ring under its name only once it is built */
    const char *why = r->rd.why ? r->rd.why : strerror(errno);
    skip_note(s, name, (uint64_t)st->st_dev, (uint64_t)st->st_ino, why);
    free(r);
    return;
  }
  const struct cs_ring_hdr *h = r->rd.h;
  snprintf(r->name, sizeof r->name, "%s", name);
  r->dev = r->rd.dev;
  r->ino = r->rd.ino;
  r->pid = *(const volatile int32_t *)&h->pid;
  r->rank = *(const volatile int32_t *)&h->rank;
  r->local_rank = *(const volatile int32_t *)&h->local_rank;
  r->world_size = *(const volatile int32_t *)&h->world_size;
  r->created_ns = *(const volatile int64_t *)&h->created_ns;
  memcpy(r->job_id, h->job, sizeof r->job_id - 1);
  ring_text_escape(r->host, sizeof r->host, h->host, sizeof h->host);
  ring_text_escape(r->job, sizeof r->job, r->job_id, sizeof r->job_id);
  /* a second ring with the same job, rank and pid (a pid reused within the grace period)
   * would give two series the same labels: the newer one waits until the older is dropped */
  for (size_t i = 0; i < s->n; i++) {
    const struct exp_rank *o = s->v[i];
    if (o->pid == r->pid && o->rank == r->rank && !strcmp(o->job_id, r->job_id)) {
      cs_ring_reader_close(&r->rd);
      free(r);
      return;
    }
  }
  struct exp_rank **nv = realloc(s->v, (s->n + 1) * sizeof *nv);
  if (!nv) {
    rank_free(r);
    return;
  }
  s->v = nv;
  s->v[s->n++] = r;
  r->seen = true;
  (void)now_ns;
}

/* Exited (clean exit or dead writer): the grace period runs from when the exporter first
 * saw it, or from the writer's last heartbeat when that is later (a ring found long after
 * its job ended is not brought back). */
static bool rank_expired(struct exp_state *s, struct exp_rank *r, int64_t now_ns) {
  struct cs_ring_hdr *h = (struct cs_ring_hdr *)(uintptr_t)r->rd.h;
  bool closed = atomic_load_explicit(&h->closed, memory_order_acquire) != 0;
  int64_t hb = atomic_load_explicit(&h->heartbeat_ns, memory_order_relaxed);
  /* a writer that beat within the last 5 s is alive: /proc is asked only about quiet rings */
  bool beating = hb > now_ns - 5000000000LL && hb < now_ns + 1000000000LL;
  if (!r->exited && (closed || (!beating && cs_ring_writer_dead(h)))) {
    r->exited = true;
    r->exited_ns = hb > 0 && hb < now_ns ? hb : now_ns;
  }
  return r->exited && ((double)now_ns - (double)r->exited_ns) / 1e9 > s->grace_s;
}

static int cmp_rank(const void *a, const void *b) {
  const struct exp_rank *x = *(struct exp_rank *const *)a, *y = *(struct exp_rank *const *)b;
  int j = strcmp(x->job_id, y->job_id);
  if (j) return j;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void exp_state_poll(struct exp_state *s, int64_t now_ns) {
  int64_t t0 = exp_now_ns();
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->n; i++) s->v[i]->seen = false;
  for (size_t i = 0; i < s->nskips; i++) s->skips[i].seen = false;
  DIR *d = opendir(s->dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!cs_ring_name_ours(e->d_name)) continue;
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      struct exp_rank *r = rank_find(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
      if (r) {
        r->seen = true;
        continue;
      }
      struct exp_skip *k = skip_find(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
      if (k) {
        k->seen = true;
        continue;
      }
      rank_open(s, e->d_name, &st, now_ns);
    }
    closedir(d);
  }
  /* forget skipped files that are gone (bounded list; a new file there is checked again) */
  size_t k = 0;
  for (size_t i = 0; i < s->nskips; i++)
    if (s->skips[i].seen) s->skips[k++] = s->skips[i];
  s->nskips = k;
  /* follow, then drop what expired (an unlinked ring stays readable through its mapping) */
  size_t w = 0;
  for (size_t i = 0; i < s->n; i++) {
    struct exp_rank *r = s->v[i];
    if (i) { /* let a waiting scrape in between rings: each rank's figures stay consistent */
      pthread_mutex_unlock(&s->mu);
      pthread_mutex_lock(&s->mu);
    }
    follow(s, r);
    if (rank_expired(s, r, now_ns)) {
      if (r->seen && s->nskips < EXP_MAX_SKIPS) { /* still in the directory: do not pick it up again */
        if (!s->skips) s->skips = calloc(EXP_MAX_SKIPS, sizeof *s->skips);
        if (s->skips) {
          struct exp_skip *sk = &s->skips[s->nskips++];
          sk->dev = r->dev;
          sk->ino = r->ino;
          sk->seen = true;
          snprintf(sk->name, sizeof sk->name, "%s", r->name);
        }
      }
      s->dropped_total++;
      s->dirty = true;
      rank_free(r);
      continue;
    }
    s->v[w++] = r;
  }
  s->n = w;
  if (s->n) qsort(s->v, s->n, sizeof *s->v, cmp_rank);
  if (s->dirty && (s->last_analyse_ns == 0 || ((double)now_ns - (double)s->last_analyse_ns) / 1e9 >= s->analyse_every_s)) {
    exp_state_analyse(s, now_ns);
    s->last_analyse_ns = now_ns;
  }
  s->last_poll_s = (double)(exp_now_ns() - t0) / 1e9;
  pthread_mutex_unlock(&s->mu);
}

/* ---- per-job analysis ---- */
static void analyse_sdc(struct exp_rank **v, size_t n) {
  /* group the job's not yet compared SDC entries by (comm, seq); an instance is compared
   * once every member of its communicator is in the windows */
  for (size_t i = 0; i < n; i++) {
    struct exp_rank *r = v[i];
    for (size_t a = 0; a < r->sdc_n; a++) {
      struct exp_sdc_entry *e = &r->sdc[a];
      if (e->done || e->comm_size < 2 || e->comm_size > 4096) continue;
      struct cs_sdc_member m[64];
      struct exp_rank *owner[64];
      struct exp_sdc_entry *ent[64];
      size_t nm = 0;
      for (size_t j = 0; j < n && nm < 64; j++) {
        struct exp_rank *q = v[j];
        for (size_t b = 0; b < q->sdc_n && nm < 64; b++) {
          struct exp_sdc_entry *f = &q->sdc[b];
          if (f->done || f->comm != e->comm || f->seq != e->seq) continue;
          m[nm] = (struct cs_sdc_member){.comm_rank = f->comm_rank, .checked = f->checked, .fp = f->fp, .in_sum = f->in_sum, .in_abs = f->in_abs, .out_sum = f->out_sum};
          owner[nm] = q;
          ent[nm++] = f;
        }
      }
      if ((int)nm < e->comm_size && nm < 64) continue; /* wait for the other members */
      struct cs_sdc_instance in = {.op = e->op, .dtype = e->dtype, .redop = e->redop, .root = e->root, .comm_size = e->comm_size, .count = e->count, .n = nm, .m = m};
      struct cs_sdc_finding f[8];
      struct cs_sdc_outcome oc;
      memset(&oc, 0, sizeof oc);
      size_t nf = cs_sdc_compare(&in, f, 8, &oc);
      for (size_t x = 0; x < nf && x < 8; x++) {
        for (size_t y = 0; y < nm; y++)
          if (f[x].suspect >= 0 && m[y].comm_rank == f[x].suspect) owner[y]->sdc_findings++;
      }
      for (size_t y = 0; y < nm; y++) ent[y]->done = true;
    }
  }
}

static void analyse_links(struct exp_state *s, struct exp_rank **v, size_t n, struct exp_linkpair **pairs,
                          size_t *npairs, size_t *cap) {
  size_t tot = 0;
  for (size_t i = 0; i < n; i++) tot += v[i]->link_n;
  if (!tot) return;
  struct cs_link_obs *obs = calloc(tot, sizeof *obs);
  if (!obs) return;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t a = 0; a < v[i]->link_n; a++) {
      struct cs_link_obs o = v[i]->links[a];
      for (size_t j = 0; j < n; j++) { /* the peer's host, from the job's own rings */
        if (!o.src_host && v[j]->rank == o.src_rank) o.src_host = v[j]->host;
        if (!o.dst_host && v[j]->rank == o.dst_rank) o.dst_host = v[j]->host;
      }
      obs[k++] = o;
    }
  struct cs_link_pair *lp = NULL;
  size_t nlp = 0;
  if (cs_links_aggregate(obs, k, &s->lp, &lp, &nlp) == 0) {
    for (size_t i = 0; i < nlp; i++) {
      if (!lp[i].src_host || !lp[i].dst_host) continue;
      if (*npairs == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        struct exp_linkpair *np = realloc(*pairs, nc * sizeof *np);
        if (!np) break;
        *pairs = np;
        *cap = nc;
      }
      struct exp_linkpair *p = &(*pairs)[(*npairs)++];
      snprintf(p->src, sizeof p->src, "%s", lp[i].src_host);
      snprintf(p->dst, sizeof p->dst, "%s", lp[i].dst_host);
      snprintf(p->job, sizeof p->job, "%s", v[0]->job);
      p->gbps_p50 = lp[i].gbps_p50;
      p->ref_gbps = lp[i].ref_gbps_p50;
      p->slow = lp[i].slow;
    }
    free(lp);
  }
  free(obs);
}

void exp_state_live(struct exp_state *s, int64_t now_ns) {
  for (size_t i = 0; i < s->n; i++) {
    struct exp_rank *r = s->v[i];
    struct cs_ring_hdr *h = (struct cs_ring_hdr *)(uintptr_t)r->rd.h;
    r->pending = atomic_load_explicit(&h->pending, memory_order_relaxed);
    int64_t oldest = atomic_load_explicit(&h->oldest_pending_ns, memory_order_relaxed);
    r->hang_s = !r->exited && r->pending && oldest > 0 && oldest < now_ns ? ((double)now_ns - (double)oldest) / 1e9 : 0;
    r->hung = !r->exited && (atomic_load_explicit(&h->hung, memory_order_relaxed) > 0 || r->hang_reports > 0);
  }
}

static void analyse_job(struct exp_state *s, struct exp_rank **v, size_t n) {
  size_t tot = 0, ngap = 0;
  for (size_t i = 0; i < n; i++) {
    tot += v[i]->det_n;
    ngap += exp_gaps_count(&v[i]->gaps);
    v[i]->straggler = false;
    v[i]->lateness_s = v[i]->offset_s = 0;
  }
  struct cs_det_op *ops = calloc(tot ? tot : 1, sizeof *ops);
  struct ring_sched_gap *hist = malloc((ngap ? ngap : 1) * sizeof *hist);
  if (!ops || !hist) {
    free(ops);
    free(hist);
    return;
  }
  ngap = 0;
  for (size_t i = 0; i < n; i++) ngap += exp_gaps_put(&v[i]->gaps, v[i]->rank, v[i]->host, hist + ngap);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) /* oldest first (the window wraps): the schedule reads ring order */
    for (size_t a = 0; a < v[i]->det_n; a++)
      ops[k++] = v[i]->det[v[i]->det_n == EXP_DET_WINDOW ? (v[i]->det_next + a) % EXP_DET_WINDOW : a];
  struct cs_det_result det;
  if (cs_detect(ops, k, &s->dp, CS_DET_HANG_OFF, &det) == 0) {
    /* the pipeline schedule and the peers' waits, as the report applies them (ring_sched.h) */
    struct ring_sched_counts sc;
    if (ring_sched_judge_hist(ops, k, hist, ngap, &det, &sc) < 0)
      fputs("collscope exporter: pipeline schedule out of memory: stragglers not judged against it\n", stderr);
    for (size_t i = 0; i < n; i++) {
      struct exp_rank *r = v[i];
      for (size_t x = 0; x < det.nranks; x++) {
        const struct cs_det_rankstat *rs = &det.ranks[x];
        if (rs->rank != r->rank || rs->lateness_us / 1e6 < r->lateness_s) continue;
        r->lateness_s = rs->lateness_us / 1e6;
        r->offset_s = rs->offset_us / 1e6;
      }
      for (size_t x = 0; x < det.nstragglers; x++)
        if (det.stragglers[x].kind == CS_DET_COMPUTE && det.stragglers[x].rank == r->rank &&
            cs_det_straggler_ongoing(&det.stragglers[x]))
          r->straggler = true; /* a cleared finding: 0 again (Prometheus keeps when it was 1) */
    }
    cs_det_result_free(&det);
  }
  free(ops);
  free(hist);
  analyse_sdc(v, n);
}

void exp_state_analyse(struct exp_state *s, int64_t now_ns) {
  (void)now_ns;
  for (size_t i = 0; i < s->n; i++) refill_window(s, s->v[i]);
  s->npairs = 0;
  size_t cap = s->npairs;
  free(s->pairs);
  s->pairs = NULL;
  for (size_t i = 0; i < s->n;) { /* s->v is sorted by job */
    size_t j = i + 1;
    while (j < s->n && !strcmp(s->v[j]->job_id, s->v[i]->job_id)) j++;
    analyse_job(s, s->v + i, j - i);
    analyse_links(s, s->v + i, j - i, &s->pairs, &s->npairs, &cap);
    i = j;
  }
  s->dirty = false;
}
