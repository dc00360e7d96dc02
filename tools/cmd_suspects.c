/* tools/cmd_suspects.c: `collscope suspects DIR...`: the hosts (and their GPUs) that the
 * report of each DIR implicates, with the evidence, a level (drain / watch), and the
 * scheduler actions that follow: scontrol drain lines and an --exclude list (slurm), or the
 * healthy hosts in topology order for a rerun (hostfile). Findings come only from
 * cli_report_json(), the document `report --json` prints, so the two never disagree. */
#include "cli.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "collscope/hostlist.h"
#include "collscope/slurm_node.h"
#include "suspects_nodes.h"
#include "xalloc.h"

enum level { LVL_NONE = 0,
             LVL_WATCH = 1,
             LVL_DRAIN = 2 };
static const char *level_name(int l) { return l == LVL_DRAIN ? "drain" : l == LVL_WATCH ? "watch"
                                                                                        : "ok"; }

struct evidence {
  const char *kind; /* straggler, sdc, slow_link, hang_missing, hang_stuck, nccl_errors, health (static) */
  int level;
  size_t dir;     /* index into the DIR arguments */
  long long rank; /* -1: none */
  char detail[256];
};

struct gpu {
  long long rank, device;
  char pci[40];
  char uuid[96]; /* NVML's, from the report's health section; "" unknown */
  size_t dir;
};

/* A host is keyed by what an action would name: a verified node ("v:" node), or an
 * unverified host name from the dumps ("u:" name), which no action ever names. */
struct host {
  char *key;
  const char *name; /* the node, or the dump's host name (points into key) */
  bool verified;
  char why[200];   /* unverified: what is missing (the first reason found) */
  char label[128]; /* verified: the dumps' host name when it differs from the node, else "" */
  struct evidence *ev;
  size_t nev, capev;
  struct gpu *gpus; /* the GPUs of the ranks the evidence names */
  size_t ngpus, capgpus;
  size_t jobs_seen, jobs_implicated, jobs_straggler;
  size_t last_seen_dir, last_impl_dir, last_strag_dir; /* +1: 0 = none yet */
  int level;
  UT_hash_handle hh;
};

struct suspects {
  struct host *hosts; /* uthash by key */
  const char **dirs, **jobs;
  size_t ndirs;
  struct sn_dir *nodes; /* per DIR: its node records and dump headers */
  bool trust_names;     /* --trust-host-names: act on plain host names no record vouches for */
};

/* The host entry for a host name of DIR d's report (and the rank the evidence names, -1
 * none): its verified node when the node records vouch for it, else the name, unverified. */
static struct host *host_get(struct suspects *s, size_t d, const char *label, long long rank) {
  char why[200] = "";
  const char *node = sn_node_of(&s->nodes[d], label, rank, why, sizeof why);
  if (!node && s->trust_names && cs_node_name_ok(label)) node = label;
  size_t kl = strlen(node ? node : label) + 3;
  char *key = xcalloc(1, kl);
  snprintf(key, kl, "%s%s", node ? "v:" : "u:", node ? node : label);
  struct host *h;
  HASH_FIND_STR(s->hosts, key, h);
  if (h) {
    free(key);
  } else {
    h = xcalloc(1, sizeof *h);
    h->key = key;
    h->name = key + 2;
    h->verified = node != NULL;
    HASH_ADD_KEYPTR(hh, s->hosts, h->key, strlen(h->key), h);
  }
  if (!h->verified && !h->why[0]) snprintf(h->why, sizeof h->why, "%s", why);
  if (h->verified && !h->label[0] && strcmp(label, h->name) != 0) snprintf(h->label, sizeof h->label, "%s", label);
  return h;
}

static const char *jstr(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : NULL;
}
static long long jint(json_t *o, const char *k, long long def) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}
static double jreal(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : 0;
}

/* the rank's GPU (device index, PCI bus id) from the report's rank table */
static void add_gpu(struct host *h, const char *label, json_t *ranks, long long rank, size_t dir) {
  if (rank < 0) return;
  size_t i;
  json_t *r;
  json_array_foreach(ranks, i, r) {
    if (jint(r, "rank", -2) != rank) continue;
    const char *host = jstr(r, "host");
    if (!host || strcmp(host, label) != 0) continue;
    long long dev = jint(r, "device", -1);
    const char *pci = jstr(r, "pci_bus_id");
    for (size_t k = 0; k < h->ngpus; k++)
      if (h->gpus[k].dir == dir && h->gpus[k].rank == rank) return;
    XGROW(h->gpus, h->ngpus, h->capgpus);
    struct gpu *g = &h->gpus[h->ngpus++];
    g->rank = rank, g->device = dev, g->dir = dir;
    snprintf(g->pci, sizeof g->pci, "%s", pci ? pci : "");
    return;
  }
}

static void add_ev(struct suspects *s, const char *host, json_t *ranks, size_t dir, const char *kind, int level,
                   long long rank, const char *fmt, ...) __attribute__((format(printf, 8, 9)));
static void add_ev(struct suspects *s, const char *host, json_t *ranks, size_t dir, const char *kind, int level,
                   long long rank, const char *fmt, ...) {
  if (!host) return;
  struct host *h = host_get(s, dir, host, rank);
  XGROW(h->ev, h->nev, h->capev);
  struct evidence *e = &h->ev[h->nev++];
  e->kind = kind, e->level = level, e->dir = dir, e->rank = rank;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->detail, sizeof e->detail, fmt, ap);
  va_end(ap);
  if (h->last_impl_dir != dir + 1) h->jobs_implicated++, h->last_impl_dir = dir + 1;
  if (!strcmp(kind, "straggler") && h->last_strag_dir != dir + 1) h->jobs_straggler++, h->last_strag_dir = dir + 1;
  add_gpu(h, host, ranks, rank, dir);
}

/* XIDs after which NVIDIA's guidance is a GPU reset or node service (double-bit ECC, row
 * remapping events and failure, NVLink error, fell off the bus, ECC page retirement limits,
 * contained/uncontained ECC, GSP errors): drain; any other XID: watch. */
static bool xid_needs_reset(long long code) {
  static const long long codes[] = {48, 63, 64, 74, 79, 92, 94, 95, 119, 120};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    if (codes[i] == code) return true;
  return false;
}

/* The report's health section (tools/report/report_health.c): GPU errors per rank, IB port errors
 * per host. Uncorrectable ECC, a pending or failed row remap and XIDs that need a reset
 * drain the host; other errors (corrected ECC, other XIDs, NVLink, PCIe replays, IB) watch it.
 * The GPUs' UUIDs fill in the GPU lists. */
static void gather_health(struct suspects *s, size_t d, json_t *doc, json_t *ranks) {
  json_t *hl = json_object_get(doc, "health"), *o, *e;
  size_t i, k;
  json_array_foreach(json_object_get(hl, "ranks"), i, o) {
    const char *host = jstr(o, "host");
    long long r = jint(o, "rank", -1), ue = jint(o, "ecc_uncorrected", 0), ce = jint(o, "ecc_corrected", 0);
    if (!host) continue;
    if (ue > 0) add_ev(s, host, ranks, d, "health", LVL_DRAIN, r, "rank %lld: %lld uncorrectable ECC error%s", r, ue, ue == 1 ? "" : "s");
    if (json_is_true(json_object_get(o, "remap_pending")))
      add_ev(s, host, ranks, d, "health", LVL_DRAIN, r, "rank %lld: row remapping pending (the GPU needs a reset)", r);
    if (json_is_true(json_object_get(o, "remap_failure")))
      add_ev(s, host, ranks, d, "health", LVL_DRAIN, r, "rank %lld: row remapping failed", r);
    json_array_foreach(json_object_get(o, "xid"), k, e) {
      long long code = json_is_integer(e) ? (long long)json_integer_value(e) : jint(e, "code", -1);
      if (code >= 0)
        add_ev(s, host, ranks, d, "health", xid_needs_reset(code) ? LVL_DRAIN : LVL_WATCH, r, "rank %lld: XID %lld", r, code);
    }
    if (ce > 0 && ue <= 0)
      add_ev(s, host, ranks, d, "health", LVL_WATCH, r, "rank %lld: %lld corrected ECC error%s", r, ce, ce == 1 ? "" : "s");
    long long nvl = 0;
    json_array_foreach(json_object_get(o, "nvlink"), k, e) nvl += jint(e, "crc", 0) + jint(e, "replay", 0) + jint(e, "recovery", 0);
    if (nvl > 0) add_ev(s, host, ranks, d, "health", LVL_WATCH, r, "rank %lld: %lld NVLink CRC/replay/recovery errors", r, nvl);
    long long pcie = jint(o, "pcie_replay", 0);
    if (pcie > 0) add_ev(s, host, ranks, d, "health", LVL_WATCH, r, "rank %lld: %lld PCIe replays", r, pcie);
    const char *uuid = jstr(o, "gpu_uuid");
    struct host *h = host_get(s, d, host, r);
    for (k = 0; uuid && k < h->ngpus; k++)
      if (h->gpus[k].dir == d && h->gpus[k].rank == r) snprintf(h->gpus[k].uuid, sizeof h->gpus[k].uuid, "%s", uuid);
  }
  static const char *const ib_errors[] = {"symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
                                          "port_xmit_discards", "local_link_integrity_errors",
                                          "excessive_buffer_overrun_errors"};
  json_array_foreach(json_object_get(hl, "hosts"), i, o) {
    const char *host = jstr(o, "host");
    json_array_foreach(json_object_get(o, "ports"), k, e) {
      long long n = 0;
      for (size_t c = 0; c < sizeof ib_errors / sizeof ib_errors[0]; c++) n += jint(e, ib_errors[c], 0) > 0 ? jint(e, ib_errors[c], 0) : 0;
      if (n > 0 && host)
        add_ev(s, host, ranks, d, "health", LVL_WATCH, -1, "IB %s port %lld: %lld link errors", jstr(e, "dev") ? jstr(e, "dev") : "?",
               jint(e, "port", 0), n);
    }
  }
}

/* One report's findings into s. */
static void gather(struct suspects *s, size_t d, json_t *doc) {
  json_t *ranks = json_object_get(doc, "ranks"), *a, *o;
  if (!json_is_array(ranks))
    ranks = json_array();
  else
    json_incref(ranks);
  size_t i;
  json_array_foreach(ranks, i, o) { /* every host of the job */
    const char *host = jstr(o, "host");
    if (!host) continue;
    struct host *h = host_get(s, d, host, jint(o, "rank", -1));
    if (h->last_seen_dir != d + 1) h->jobs_seen++, h->last_seen_dir = d + 1;
    long long errs = jint(o, "errors", 0);
    if (errs > 0)
      add_ev(s, host, ranks, d, "nccl_errors", LVL_WATCH, jint(o, "rank", -1), "rank %lld: %lld NCCL call%s failed",
             jint(o, "rank", -1), errs, errs == 1 ? "" : "s");
  }
  a = json_object_get(doc, "stragglers");
  json_array_foreach(a, i, o) {
    const char *kind = jstr(o, "kind");
    long long rank = jint(o, "rank", -1);
    if (kind && !strcmp(kind, "link")) {
      if (rank >= 0)
        add_ev(s, jstr(o, "host"), ranks, d, "slow_link", LVL_WATCH, rank, "rank %lld on comm %s: collectives slow with no late arrival (link)",
               rank, jstr(o, "comm") ? jstr(o, "comm") : "?");
      /* the pair itself, unless the slow_links section names it (then it is read there) */
      const char *src = jstr(o, "src_host"), *dst = jstr(o, "dst_host");
      if (src && dst && !json_array_size(json_object_get(doc, "slow_links"))) {
        add_ev(s, src, ranks, d, "slow_link", LVL_WATCH, -1, "slow link end %s -> %s", src, dst);
        add_ev(s, dst, ranks, d, "slow_link", LVL_WATCH, -1, "slow link end %s -> %s", src, dst);
      }
      continue;
    }
    add_ev(s, jstr(o, "host"), ranks, d, "straggler", LVL_WATCH, rank,
           "rank %lld on comm %s: last in %.0f%% of its collectives, %.0f us late (median collective %.0f us)", rank,
           jstr(o, "comm") ? jstr(o, "comm") : "?", jreal(o, "share_last") * 100, jreal(o, "lateness_us"),
           jreal(o, "median_dur_us"));
  }
  a = json_object_get(doc, "slow_links");
  json_array_foreach(a, i, o) {
    const char *src = jstr(o, "src_host"), *dst = jstr(o, "dst_host");
    if (!src || !dst) continue;
    double g = jreal(o, "gbps_p50"), ref = jreal(o, "ref_gbps_p50");
    add_ev(s, src, ranks, d, "slow_link", LVL_WATCH, -1, "slow link end %s -> %s: %.3g Gbit/s vs %.3g", src, dst, g, ref);
    add_ev(s, dst, ranks, d, "slow_link", LVL_WATCH, -1, "slow link end %s -> %s: %.3g Gbit/s vs %.3g", src, dst, g, ref);
  }
  a = json_object_get(doc, "hangs");
  json_array_foreach(a, i, o) {
    json_t *mr = json_object_get(o, "missing_ranks"), *mh = json_object_get(o, "hosts");
    json_t *sr = json_object_get(o, "stuck_ranks"), *sh = json_object_get(o, "stuck_hosts");
    const char *comm = jstr(o, "comm") ? jstr(o, "comm") : "?";
    long long seq = jint(o, "seq", -1);
    size_t nm = json_array_size(mh);
    /* the ranks that never entered are the cause; the stuck ones only when none is missing */
    for (size_t k = 0; k < nm; k++) {
      long long r = json_integer_value(json_array_get(mr, k));
      add_ev(s, json_string_value(json_array_get(mh, k)), ranks, d, "hang_missing", LVL_WATCH, r,
             "rank %lld never entered seq %lld of comm %s (hang)", r, seq, comm);
    }
    for (size_t k = 0; nm == 0 && k < json_array_size(sh); k++) {
      long long r = json_integer_value(json_array_get(sr, k));
      add_ev(s, json_string_value(json_array_get(sh, k)), ranks, d, "hang_stuck", LVL_WATCH, r,
             "rank %lld stuck inside seq %lld of comm %s (hang)", r, seq, comm);
    }
  }
  a = json_object_get(doc, "sdc");
  json_array_foreach(a, i, o) {
    long long r = jint(o, "suspect_rank", -1);
    add_ev(s, jstr(o, "host"), ranks, d, "sdc", LVL_DRAIN, r, "SDC suspect: rank %lld, %s seq %lld of comm %s (%s check)", r,
           jstr(o, "op") ? jstr(o, "op") : "?", jint(o, "seq", -1), jstr(o, "comm") ? jstr(o, "comm") : "?",
           jstr(o, "check") ? jstr(o, "check") : "?");
  }
  gather_health(s, d, doc, ranks);
  json_decref(ranks);
}

/* drain: any drain evidence, or implicated in 2 or more jobs and in more than half the jobs
 * the host took part in; watch: any other evidence */
static void classify(struct suspects *s) {
  struct host *h, *t;
  HASH_ITER(hh, s->hosts, h, t) {
    h->level = LVL_NONE;
    for (size_t i = 0; i < h->nev; i++)
      if (h->ev[i].level > h->level) h->level = h->ev[i].level;
    size_t seen = h->jobs_seen > h->jobs_implicated ? h->jobs_seen : h->jobs_implicated;
    if (h->jobs_implicated >= 2 && 2 * h->jobs_implicated > seen) h->level = LVL_DRAIN;
  }
}

static int by_level_name(struct host *a, struct host *b) {
  if (a->level != b->level) return b->level - a->level;
  return strcmp(a->key, b->key);
}

/* a host an action may name: a verified node (or, with --trust-host-names, a plain name),
 * never ALL, a hostlist expression or a name outside Slurm's node-name characters */
static bool actionable(const struct host *h) { return h->verified && cs_node_name_ok(h->name); }
static const char *why_not(const struct host *h, char *buf, size_t cap) {
  const char *plain = cs_node_name_ok(h->name) ? "" : "not a plain node name (ALL, a hostlist expression or other characters)";
  if (h->verified) return plain;
  snprintf(buf, cap, "%s%s%s", h->why[0] ? h->why : "not a verified node name", *plain ? "; " : "", plain);
  return buf;
}

/* the printable form of a hostile string (at most 127 bytes, anything odd as '?') */
static const char *safe(const char *v, char *b, size_t cap) {
  size_t n = 0;
  for (; *v && n + 1 < cap && n < 127; v++) b[n++] = (*v >= 0x20 && *v < 0x7f && *v != '"' && *v != '\\') ? *v : '?';
  b[n] = 0;
  return b;
}

static void gpu_list(const struct host *h, FILE *o) {
  for (size_t k = 0; k < h->ngpus; k++) {
    const struct gpu *g = &h->gpus[k];
    char b[64];
    fprintf(o, "%s", k ? ", " : "  gpus: ");
    if (g->device >= 0)
      fprintf(o, "%lld", g->device);
    else
      fprintf(o, "?");
    if (g->pci[0]) fprintf(o, " (%s)", safe(g->pci, b, sizeof b));
    if (g->uuid[0]) fprintf(o, " %s", safe(g->uuid, b, sizeof b));
    fprintf(o, " rank %lld", g->rank);
  }
}

static void print_text(struct suspects *s, FILE *o) {
  size_t n = 0;
  struct host *h, *t;
  char b1[160], b2[300], wb[400];
  fprintf(o, "# collscope suspects over %zu job%s (dump directories):\n", s->ndirs, s->ndirs == 1 ? "" : "s");
  for (size_t d = 0; d < s->ndirs; d++)
    fprintf(o, "#   %s  %s\n", safe(s->jobs[d], b1, sizeof b1), safe(s->dirs[d], b2, sizeof b2));
  HASH_ITER(hh, s->hosts, h, t) {
    if (!h->level) continue;
    n++;
    fprintf(o, "%-5s  %s  implicated in %zu of %zu job%s", level_name(h->level), safe(h->name, b1, sizeof b1),
            h->jobs_implicated, h->jobs_seen, h->jobs_seen == 1 ? "" : "s");
    gpu_list(h, o);
    fprintf(o, "\n");
    if (!actionable(h))
      fprintf(o, "    (no action: %s)\n", safe(why_not(h, wb, sizeof wb), b2, sizeof b2));
    else if (h->label[0])
      fprintf(o, "    (host name in the dumps: %s)\n", safe(h->label, b2, sizeof b2));
    for (size_t i = 0; i < h->nev; i++)
      fprintf(o, "    %-12s %s  [%s]\n", h->ev[i].kind, safe(h->ev[i].detail, b2, sizeof b2),
              safe(s->jobs[h->ev[i].dir], b1, sizeof b1));
  }
  if (!n) fprintf(o, "(no host implicated)\n");
}

static json_t *doc_json(struct suspects *s) {
  json_t *root = json_object(), *dirs = json_array(), *hosts = json_array();
  for (size_t d = 0; d < s->ndirs; d++) {
    json_t *o = json_object();
    json_object_set_new(o, "dir", json_string(s->dirs[d]));
    json_object_set_new(o, "job", json_string(s->jobs[d]));
    json_array_append_new(dirs, o);
  }
  struct host *h, *t;
  HASH_ITER(hh, s->hosts, h, t) {
    if (!h->level) continue;
    json_t *o = json_object(), *ev = json_array(), *g = json_array();
    json_object_set_new(o, "host", json_string(h->name));
    json_object_set_new(o, "level", json_string(level_name(h->level)));
    /* verified: a node the actions may name; else why not */
    json_object_set_new(o, "verified", json_boolean(actionable(h)));
    char wb[400];
    if (!actionable(h)) json_object_set_new(o, "unverified_reason", json_string(why_not(h, wb, sizeof wb)));
    if (h->label[0]) json_object_set_new(o, "dump_host", json_string(h->label));
    json_object_set_new(o, "jobs_implicated", json_integer((json_int_t)h->jobs_implicated));
    json_object_set_new(o, "jobs_seen", json_integer((json_int_t)h->jobs_seen));
    for (size_t k = 0; k < h->ngpus; k++) {
      json_t *x = json_object();
      json_object_set_new(x, "rank", json_integer(h->gpus[k].rank));
      json_object_set_new(x, "device", h->gpus[k].device >= 0 ? json_integer(h->gpus[k].device) : json_null());
      json_object_set_new(x, "pci_bus_id", json_string(h->gpus[k].pci));
      json_object_set_new(x, "uuid", h->gpus[k].uuid[0] ? json_string(h->gpus[k].uuid) : json_null());
      json_object_set_new(x, "job", json_string(s->jobs[h->gpus[k].dir]));
      json_array_append_new(g, x);
    }
    json_object_set_new(o, "gpus", g);
    for (size_t i = 0; i < h->nev; i++) {
      json_t *x = json_object();
      json_object_set_new(x, "kind", json_string(h->ev[i].kind));
      json_object_set_new(x, "level", json_string(level_name(h->ev[i].level)));
      json_object_set_new(x, "job", json_string(s->jobs[h->ev[i].dir]));
      json_object_set_new(x, "dir", json_string(s->dirs[h->ev[i].dir]));
      json_object_set_new(x, "rank", h->ev[i].rank >= 0 ? json_integer(h->ev[i].rank) : json_null());
      json_object_set_new(x, "detail", json_string(h->ev[i].detail));
      json_array_append_new(ev, x);
    }
    json_object_set_new(o, "evidence", ev);
    json_array_append_new(hosts, o);
  }
  json_object_set_new(root, "jobs", dirs);
  json_object_set_new(root, "suspects", hosts);
  return root;
}

/* the suspects (level >= min) an action may name; *skipped counts the others */
static const char **pick(struct suspects *s, int min, bool healthy, size_t *n, size_t *skipped) {
  const char **v = xcalloc(HASH_COUNT(s->hosts) + 1, sizeof *v);
  *n = 0, *skipped = 0;
  struct host *h, *t;
  HASH_ITER(hh, s->hosts, h, t) {
    if (healthy ? h->level != LVL_NONE : h->level < min) continue;
    if (!actionable(h)) {
      (*skipped)++;
      continue;
    }
    v[(*n)++] = h->name;
  }
  return v;
}

static void print_slurm(struct suspects *s, FILE *o) {
  struct host *h, *t;
  char b[160], wb[400];
  fprintf(o, "# collscope suspects: scheduler actions (printed, not run)\n");
  HASH_ITER(hh, s->hosts, h, t) {
    if (h->level != LVL_DRAIN) continue;
    if (!actionable(h)) {
      fprintf(o, "# not drained: %s: %s\n", safe(h->name, b, sizeof b), why_not(h, wb, sizeof wb));
      continue;
    }
    /* the reason: the kinds of evidence and how often */
    char why[200] = "";
    size_t w = 0;
    static const char *const kinds[] = {"sdc", "health", "straggler", "slow_link", "hang_missing", "hang_stuck", "nccl_errors"};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
      size_t c = 0;
      for (size_t i = 0; i < h->nev; i++) c += !strcmp(h->ev[i].kind, kinds[k]);
      if (c && w < sizeof why) w += (size_t)snprintf(why + w, sizeof why - w, "%s%s x%zu", w ? ", " : "", kinds[k], c);
    }
    fprintf(o, "scontrol update NodeName=%s State=DRAIN Reason=\"collscope: %s in %zu of %zu jobs\"\n", h->name, why,
            h->jobs_implicated, h->jobs_seen);
  }
  size_t n, skipped;
  const char **v = pick(s, LVL_WATCH, false, &n, &skipped);
  HASH_ITER(hh, s->hosts, h, t) {
    if (h->level >= LVL_WATCH && h->level != LVL_DRAIN && !actionable(h))
      fprintf(o, "# not excluded: %s: %s\n", safe(h->name, b, sizeof b), why_not(h, wb, sizeof wb));
  }
  char *hl = n ? cs_hostlist_compress(v, n) : NULL;
  if (hl)
    fprintf(o, "--exclude=%s\n", hl);
  else
    fprintf(o, "# no host to exclude\n");
  free(hl);
  free(v);
}

static int print_hostfile(struct suspects *s, const char *topofile, FILE *o) {
  size_t n, skipped;
  const char **v = pick(s, 0, true, &n, &skipped);
  if (skipped)
    fprintf(stderr, "collscope suspects: %zu host%s left out of the hostfile: not verified node names (docs/slurm.md)\n",
            skipped, skipped == 1 ? "" : "s");
  int rc = 0;
  if (topofile && n && cli_topo_order_hosts(topofile, (char **)v, n, 0))
    rc = 1;
  else if (!topofile) {
    /* the hostlist order: expand the compressed list */
    char *hl = n ? cs_hostlist_compress(v, n) : NULL;
    char **hosts = NULL, err[256];
    size_t nh = 0;
    if (hl && cs_hostlist_expand(hl, &hosts, &nh, err, sizeof err) == 0) {
      for (size_t i = 0; i < nh; i++) fprintf(o, "%s\n", hosts[i]);
      cs_hostlist_free(hosts, nh);
    }
    free(hl);
    free(v);
    return 0;
  }
  for (size_t i = 0; !rc && i < n; i++) fprintf(o, "%s\n", v[i]);
  free(v);
  return rc;
}

static void usage(FILE *o) {
  fputs("usage: collscope suspects DIR... [--format text|json|slurm|hostfile] [--topology FILE]\n"
        "                          [--trust-host-names] [-o FILE] [-j N]\n"
        "\n"
        "Lists the hosts (and the GPUs, by device index, PCI bus id and UUID) that the reports\n"
        "of the dump directories implicate, with the evidence: straggler (compute), SDC suspect,\n"
        "slow link end, missing from or stuck in a hang, NCCL errors (failed calls), health\n"
        "(GPU ECC, XID, row remapping, NVLink, PCIe, IB port errors).\n"
        "Levels: drain (SDC suspect; uncorrectable ECC, row remap pending or failed, an XID\n"
        "that needs a GPU reset; implicated in 2 or more jobs and in more than half of the\n"
        "jobs it ran in, e.g. a straggler in 3 of 5) and watch (anything else).\n"
        "\n"
        "  --format text      (default) one block per host\n"
        "  --format json      the same as one JSON object\n"
        "  --format slurm     scontrol drain lines for the drain hosts and --exclude=HOSTLIST\n"
        "                     (every suspect) for the next srun; printed, never run\n"
        "  --format hostfile  the jobs' other hosts, one a line, for a rerun: in the order of\n"
        "                     the topology plan with --topology FILE (collscope topo plan),\n"
        "                     else in hostlist order\n"
        "  --trust-host-names act on plain host names of the dumps that no node record of the\n"
        "                     SPANK plugin vouches for (dumps from collscope run, or a site\n"
        "                     whose jobs cannot choose COLLSCOPE_HOSTNAME); never on ALL, a\n"
        "                     hostlist expression or a name outside [A-Za-z0-9._-]\n"
        "  -o, --output FILE  write there (whole or not at all)\n"
        "  -j N               reading threads per report (default: one per core)\n"
        "Actions (slurm, hostfile) name only nodes the SPANK plugin's root-owned node records\n"
        "vouch for; any other host is a '#' line saying why (docs/slurm.md).\n"
        "exit status: 0, 1 when a directory has no usable report, 2 for a usage error.\n",
        o);
}

int cmd_suspects(int argc, char **argv) {
  const char *format = "text", *topofile = NULL, *outpath = NULL;
  unsigned jobs = 0;
  struct suspects s = {0};
  s.dirs = xcalloc((size_t)argc + 1, sizeof *s.dirs);
  s.jobs = xcalloc((size_t)argc + 1, sizeof *s.jobs);
  bool dashdash = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!dashdash && !strcmp(a, "--")) {
      dashdash = true;
      continue;
    }
    if (!dashdash && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
      usage(stdout);
      free(s.dirs), free(s.jobs);
      return 0;
    }
    if (!dashdash && !strcmp(a, "--trust-host-names")) {
      s.trust_names = true;
      continue;
    }
    if (!dashdash && a[0] == '-' && a[1]) {
      if (!val) {
        fprintf(stderr, "collscope suspects: %s needs a value\n", a);
        usage(stderr);
        free(s.dirs), free(s.jobs);
        return CLI_EXIT_USAGE;
      }
      if (!strcmp(a, "--format"))
        format = val;
      else if (!strcmp(a, "--topology"))
        topofile = val;
      else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
        outpath = val;
      else if (!strcmp(a, "-j")) {
        char *end;
        long n = strtol(val, &end, 10);
        if (*end || n < 0 || n > 1024) {
          fprintf(stderr, "collscope suspects: -j: expected 0..1024\n");
          free(s.dirs), free(s.jobs);
          return CLI_EXIT_USAGE;
        }
        jobs = (unsigned)n;
      } else {
        fprintf(stderr, "collscope suspects: unknown option '%s'\n", a);
        usage(stderr);
        free(s.dirs), free(s.jobs);
        return CLI_EXIT_USAGE;
      }
      i++;
      continue;
    }
    s.dirs[s.ndirs++] = a;
  }
  if (!s.ndirs || (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "slurm") &&
                   strcmp(format, "hostfile"))) {
    fprintf(stderr, "collscope suspects: %s\n", s.ndirs ? "--format: expected text, json, slurm or hostfile" : "no DIR given");
    usage(stderr);
    free(s.dirs), free(s.jobs);
    return CLI_EXIT_USAGE;
  }
  int rc = 0;
  json_t **docs = xcalloc(s.ndirs, sizeof *docs);
  s.nodes = xcalloc(s.ndirs, sizeof *s.nodes);
  for (size_t d = 0; d < s.ndirs; d++) {
    int st = 0;
    docs[d] = cli_report_json(s.dirs[d], NULL, NULL, jobs, &st);
    if (!docs[d]) {
      fprintf(stderr, "collscope suspects: %s: no usable report; left out\n", s.dirs[d]);
      rc = 1;
      s.jobs[d] = s.dirs[d];
      continue;
    }
    const char *job = jstr(json_object_get(docs[d], "summary"), "job");
    s.jobs[d] = job && *job ? job : s.dirs[d];
    sn_dir_load(&s.nodes[d], s.dirs[d], jobs);
    gather(&s, d, docs[d]);
  }
  classify(&s);
  HASH_SORT(s.hosts, by_level_name);

  char *tmp = NULL;
  FILE *o = cli_out_open("suspects", outpath, &tmp);
  if (!o)
    rc = 1;
  else {
    int wrc = 0;
    if (!strcmp(format, "json")) {
      json_t *j = doc_json(&s);
      wrc = json_dumpf(j, o, JSON_INDENT(2)) != 0;
      fputc('\n', o);
      json_decref(j);
    } else if (!strcmp(format, "slurm"))
      print_slurm(&s, o);
    else if (!strcmp(format, "hostfile"))
      wrc = print_hostfile(&s, topofile, o);
    else
      print_text(&s, o);
    int crc = cli_out_close("suspects", o, tmp, outpath, wrc);
    if (wrc || crc) rc = 1;
  }

  struct host *h, *t;
  HASH_ITER(hh, s.hosts, h, t) {
    HASH_DEL(s.hosts, h);
    free(h->key), free(h->ev), free(h->gpus), free(h);
  }
  for (size_t d = 0; d < s.ndirs; d++) json_decref(docs[d]), sn_dir_free(&s.nodes[d]);
  free(s.nodes);
  free(docs), free(s.dirs), free(s.jobs);
  return rc;
}

void cmd_suspects_help(FILE *out) { usage(out); }
