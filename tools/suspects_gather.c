/* tools/suspects_gather.c: `collscope suspects`: what each DIR's report document implicates
 * (stragglers, SDC findings, slow links, hangs, NCCL errors, GPU and IB health), as evidence
 * on the host (its verified node, or the unverified dump host name) and its GPUs, and each
 * host's level from that evidence. */
#include "suspects_internal.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "collscope/slurm_node.h"
#include "xalloc.h"

/* The host entry for a host name of DIR d's report (and the rank the evidence names, -1
 * none): its verified node when the node records vouch for it; the node the record of the
 * rank's pid names when the dump contradicts it (unverified); else the name, unverified.
 * `evidence`: the reason an unverified host is not acted on comes from the first evidence,
 * so that it cites the rank the evidence is about. */
static struct host *host_get(struct suspects *s, size_t d, const char *label, long long rank, bool evidence) {
  char why[200] = "";
  const char *claimed = NULL;
  const char *node = sn_node_of(&s->nodes[d], label, rank, why, sizeof why, &claimed);
  if (!node && !claimed && s->trust_names && cs_node_name_ok(label)) node = label;
  const char *name = node ? node : claimed ? claimed
                                           : label;
  size_t kl = strlen(name) + 3;
  char *key = xcalloc(1, kl);
  snprintf(key, kl, "%s%s", node ? "v:" : claimed ? "c:"
                                                  : "u:",
           name);
  struct host *h;
  HASH_FIND_STR(s->hosts, key, h);
  if (h) {
    free(key);
  } else {
    h = xcalloc(1, sizeof *h);
    h->key = key;
    h->name = key + 2;
    h->verified = node != NULL;
    h->uids[0] = h->uids[1] = -1;
    HASH_ADD_KEYPTR(hh, s->hosts, h->key, strlen(h->key), h);
  }
  if (!h->verified && evidence && !h->nev) snprintf(h->why, sizeof h->why, "%s", why);
  if (!h->verified && !h->why[0]) snprintf(h->why, sizeof h->why, "%s", why);
  if (h->verified && !h->label[0] && strcmp(label, h->name) != 0) snprintf(h->label, sizeof h->label, "%s", label);
  return h;
}

const char *suspects_jstr(json_t *o, const char *k) {
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
    const char *host = suspects_jstr(r, "host");
    if (!host || strcmp(host, label) != 0) continue;
    long long dev = jint(r, "device", -1);
    const char *pci = suspects_jstr(r, "pci_bus_id");
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
  struct host *h = host_get(s, dir, host, rank, true);
  XGROW(h->ev, h->nev, h->capev);
  struct evidence *e = &h->ev[h->nev++];
  e->kind = kind, e->level = level, e->dir = dir, e->rank = rank;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->detail, sizeof e->detail, fmt, ap);
  va_end(ap);
  if (h->last_impl_dir != dir + 1) {
    h->jobs_implicated++, h->last_impl_dir = dir + 1;
    long long u = s->uids ? s->uids[dir] : -1;
    if (u >= 0 && h->nuids < 2 && (h->nuids == 0 || h->uids[0] != u)) h->uids[h->nuids++] = u;
  }
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
    const char *host = suspects_jstr(o, "host");
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
    const char *uuid = suspects_jstr(o, "gpu_uuid");
    struct host *h = host_get(s, d, host, r, false);
    for (k = 0; uuid && k < h->ngpus; k++)
      if (h->gpus[k].dir == d && h->gpus[k].rank == r) snprintf(h->gpus[k].uuid, sizeof h->gpus[k].uuid, "%s", uuid);
  }
  static const char *const ib_errors[] = {"symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
                                          "port_xmit_discards", "local_link_integrity_errors",
                                          "excessive_buffer_overrun_errors"};
  json_array_foreach(json_object_get(hl, "hosts"), i, o) {
    const char *host = suspects_jstr(o, "host");
    json_array_foreach(json_object_get(o, "ports"), k, e) {
      long long n = 0;
      for (size_t c = 0; c < sizeof ib_errors / sizeof ib_errors[0]; c++) n += jint(e, ib_errors[c], 0) > 0 ? jint(e, ib_errors[c], 0) : 0;
      if (n > 0 && host)
        add_ev(s, host, ranks, d, "health", LVL_WATCH, -1, "IB %s port %lld: %lld link errors", suspects_jstr(e, "dev") ? suspects_jstr(e, "dev") : "?",
               jint(e, "port", 0), n);
    }
  }
}

/* One report's findings into s. */
void suspects_gather(struct suspects *s, size_t d, json_t *doc) {
  json_t *ranks = json_object_get(doc, "ranks"), *a, *o;
  if (!json_is_array(ranks))
    ranks = json_array();
  else
    json_incref(ranks);
  size_t i;
  json_array_foreach(ranks, i, o) { /* every host of the job */
    const char *host = suspects_jstr(o, "host");
    if (!host) continue;
    struct host *h = host_get(s, d, host, jint(o, "rank", -1), false);
    if (h->last_seen_dir != d + 1) h->jobs_seen++, h->last_seen_dir = d + 1;
    long long errs = jint(o, "errors", 0);
    if (errs > 0)
      add_ev(s, host, ranks, d, "nccl_errors", LVL_WATCH, jint(o, "rank", -1), "rank %lld: %lld NCCL call%s failed",
             jint(o, "rank", -1), errs, errs == 1 ? "" : "s");
  }
  a = json_object_get(doc, "stragglers");
  json_array_foreach(a, i, o) {
    const char *kind = suspects_jstr(o, "kind");
    long long rank = jint(o, "rank", -1);
    if (kind && !strcmp(kind, "link")) {
      if (rank >= 0)
        add_ev(s, suspects_jstr(o, "host"), ranks, d, "slow_link", LVL_WATCH, rank, "rank %lld on comm %s: collectives slow with no late arrival (link)",
               rank, suspects_jstr(o, "comm") ? suspects_jstr(o, "comm") : "?");
      /* the pair itself, unless the slow_links section names it (then it is read there) */
      const char *src = suspects_jstr(o, "src_host"), *dst = suspects_jstr(o, "dst_host");
      if (src && dst && !json_array_size(json_object_get(doc, "slow_links"))) {
        add_ev(s, src, ranks, d, "slow_link", LVL_WATCH, -1, "slow link end %s -> %s", src, dst);
        add_ev(s, dst, ranks, d, "slow_link", LVL_WATCH, -1, "slow link end %s -> %s", src, dst);
      }
      continue;
    }
    double cleared;
    if (suspects_straggler_aside(s, d, doc, o, &cleared)) continue;
    char when[96] = "";
    if (isfinite(cleared)) snprintf(when, sizeof when, "; cleared %.3f s before the job's end", cleared);
    add_ev(s, suspects_jstr(o, "host"), ranks, d, "straggler", LVL_WATCH, rank,
           "rank %lld on comm %s: last in %.0f%% of its collectives, %.0f us late (median collective %.0f us)%s", rank,
           suspects_jstr(o, "comm") ? suspects_jstr(o, "comm") : "?", jreal(o, "share_last") * 100, jreal(o, "lateness_us"),
           jreal(o, "median_dur_us"), when);
  }
  a = json_object_get(doc, "slow_links");
  json_array_foreach(a, i, o) {
    const char *src = suspects_jstr(o, "src_host"), *dst = suspects_jstr(o, "dst_host");
    if (!src || !dst) continue;
    double g = jreal(o, "gbps_p50"), ref = jreal(o, "ref_gbps_p50");
    add_ev(s, src, ranks, d, "slow_link", LVL_WATCH, -1, "slow link end %s -> %s: %.3g Gbit/s vs %.3g", src, dst, g, ref);
    add_ev(s, dst, ranks, d, "slow_link", LVL_WATCH, -1, "slow link end %s -> %s: %.3g Gbit/s vs %.3g", src, dst, g, ref);
  }
  a = json_object_get(doc, "slow_nics"); /* the host itself: every pair of it slower */
  json_array_foreach(a, i, o) {
    const char *host = suspects_jstr(o, "host");
    if (!host) continue;
    add_ev(s, host, ranks, d, "slow_nic", LVL_WATCH, -1, "slow NIC: its %lld pairs at %.3g Gbit/s vs %.3g of the others", jint(o, "pairs", 0),
           jreal(o, "gbps"), jreal(o, "others_gbps"));
  }
  a = json_object_get(doc, "hangs");
  json_array_foreach(a, i, o) {
    json_t *mr = json_object_get(o, "missing_ranks"), *mh = json_object_get(o, "hosts");
    json_t *sr = json_object_get(o, "stuck_ranks"), *sh = json_object_get(o, "stuck_hosts");
    json_t *ur = json_object_get(o, "unstarted_ranks"), *uh = json_object_get(o, "unstarted_hosts");
    const char *comm = suspects_jstr(o, "comm") ? suspects_jstr(o, "comm") : "?";
    long long seq = jint(o, "seq", -1);
    size_t nm = json_array_size(mh), nu = json_array_size(uh);
    /* the ranks that never entered are the cause, then those whose GPU never reached it while a
     * peer's is inside it; the stuck ones only when neither is named */
    for (size_t k = 0; k < nm; k++) {
      long long r = json_integer_value(json_array_get(mr, k));
      add_ev(s, json_string_value(json_array_get(mh, k)), ranks, d, "hang_missing", LVL_WATCH, r,
             "rank %lld never entered seq %lld of comm %s (hang)", r, seq, comm);
    }
    for (size_t k = 0; k < nu; k++) {
      long long r = json_integer_value(json_array_get(ur, k));
      add_ev(s, json_string_value(json_array_get(uh, k)), ranks, d, "hang_gpu", LVL_WATCH, r,
             "rank %lld's GPU never started seq %lld of comm %s while a peer's was inside it (hang)", r, seq, comm);
    }
    for (size_t k = 0; nm == 0 && nu == 0 && k < json_array_size(sh); k++) {
      long long r = json_integer_value(json_array_get(sr, k));
      add_ev(s, json_string_value(json_array_get(sh, k)), ranks, d, "hang_stuck", LVL_WATCH, r,
             "rank %lld stuck inside seq %lld of comm %s (hang)", r, seq, comm);
    }
  }
  a = json_object_get(doc, "sdc");
  json_array_foreach(a, i, o) {
    long long r = jint(o, "suspect_rank", -1);
    add_ev(s, suspects_jstr(o, "host"), ranks, d, "sdc", LVL_DRAIN, r, "SDC suspect: rank %lld, %s seq %lld of comm %s (%s check)", r,
           suspects_jstr(o, "op") ? suspects_jstr(o, "op") : "?", jint(o, "seq", -1), suspects_jstr(o, "comm") ? suspects_jstr(o, "comm") : "?",
           suspects_jstr(o, "check") ? suspects_jstr(o, "check") : "?");
  }
  gather_health(s, d, doc, ranks);
  json_decref(ranks);
}

/* drain-level: any drain evidence, or implicated in 2 or more runs and in more than half the
 * runs the host took part in; watch: any other evidence. Everything in a dump is its job
 * owner's to edit, so drain-level evidence drains only when jobs of two users (uids from
 * root-owned records) implicate the host; else it is watch, unconfirmed, until the site's
 * check (cmd_suspects.c) fails. */
void suspects_classify(struct suspects *s) {
  struct host *h, *t;
  HASH_ITER(hh, s->hosts, h, t) {
    h->level = LVL_NONE;
    h->unconfirmed = false;
    for (size_t i = 0; i < h->nev; i++)
      if (h->ev[i].level > h->level) h->level = h->ev[i].level;
    size_t seen = h->jobs_seen > h->jobs_implicated ? h->jobs_seen : h->jobs_implicated;
    if (h->jobs_implicated >= 2 && 2 * h->jobs_implicated > seen) h->level = LVL_DRAIN;
    if (h->level == LVL_DRAIN && h->nuids < 2 && h->check != 2) {
      h->level = LVL_WATCH;
      h->unconfirmed = true;
    }
  }
}
