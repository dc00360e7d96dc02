/* tools/cmd_suspects.c: `collscope suspects DIR...`: the hosts (and their GPUs) that the
 * report of each DIR implicates, with the evidence, a level (drain / watch), and the
 * scheduler actions that follow: scontrol drain lines and an --exclude list (slurm), or the
 * healthy hosts in topology order for a rerun (hostfile). Findings come only from
 * cli_report_json(), the document `report --json` prints, so the two never disagree. */
#include "cli.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uthash.h>

#include "collscope/hostlist.h"
#include "collscope/slurm_node.h"
#include "suspects_internal.h"
#include "suspects_slurm.h"
#include "xalloc.h"
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

/* the printable form of a hostile string (at most 255 bytes, anything odd as '?') */
static const char *safe(const char *v, char *b, size_t cap) {
  size_t n = 0;
  for (; *v && n + 1 < cap && n < 255; v++) b[n++] = (*v >= 0x20 && *v < 0x7f && *v != '"' && *v != '\\') ? *v : '?';
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

/* the runs, each directory's job as the directory names it, and what does not hold there */
static void print_header(const struct suspects *s, FILE *o) {
  char b1[160], b2[300];
  fprintf(o, "# collscope suspects over %zu run%s (dump directories; each counts once, whatever job id its dumps claim):\n",
          s->ndirs, s->ndirs == 1 ? "" : "s");
  for (size_t d = 0; d < s->ndirs; d++) {
    fprintf(o, "#   run %zu: job %s  %s", d + 1, safe(s->jobs[d], b1, sizeof b1), safe(s->dirs[d], b2, sizeof b2));
    if (s->uids[d] >= 0) fprintf(o, "  (uid %lld)", s->uids[d]);
    fprintf(o, "\n");
    const struct sn_dir *nd = &s->nodes[d];
    for (size_t i = 0; i < nd->nnotes; i++) fprintf(o, "#     ! %s\n", nd->notes[i]);
    if (nd->notes_dropped) fprintf(o, "#     ! and %zu more\n", nd->notes_dropped);
  }
}

/* why an actionable host with drain-level evidence is watched, and what confirms it */
static const char *unconfirmed_why(const struct suspects *s, const struct host *h, char *buf, size_t cap) {
  char users[64];
  if (h->nuids == 1)
    snprintf(users, sizeof users, "jobs of one user (uid %lld)", h->uids[0]);
  else
    snprintf(users, sizeof users, "jobs of no known user");
  if (h->check == 1)
    snprintf(buf, cap, "drain-level evidence from %s; the site's check passed (%s): watch", users, s->verify_cmd);
  else if (h->check == 3)
    snprintf(buf, cap, "drain-level evidence from %s; the site's check could not run (%s): watch", users, s->verify_cmd);
  else
    snprintf(buf, cap, "drain-level evidence from %s: watch; drain when a check run as root fails, e.g. "
                       "collscope suspects ... --verify-cmd 'ssh %%n dcgmi diag -r 2'",
             users);
  return buf;
}

static void print_text(struct suspects *s, FILE *o) {
  size_t n = 0;
  struct host *h, *t;
  char b1[160], b2[300], wb[400];
  print_header(s, o);
  HASH_ITER(hh, s->hosts, h, t) {
    if (!h->level) continue;
    n++;
    fprintf(o, "%-5s  %s  implicated in %zu of %zu run%s", level_name(h->level), safe(h->name, b1, sizeof b1),
            h->jobs_implicated, h->jobs_seen, h->jobs_seen == 1 ? "" : "s");
    gpu_list(h, o);
    fprintf(o, "\n");
    if (!actionable(h))
      fprintf(o, "    (no action: %s)\n", safe(why_not(h, wb, sizeof wb), b2, sizeof b2));
    else if (h->label[0])
      fprintf(o, "    (host name in the dumps: %s)\n", safe(h->label, b2, sizeof b2));
    if (h->unconfirmed && actionable(h)) fprintf(o, "    (%s)\n", unconfirmed_why(s, h, wb, sizeof wb));
    for (size_t i = 0; i < h->nev; i++)
      fprintf(o, "    %-12s %s  [run %zu: job %s]\n", h->ev[i].kind, safe(h->ev[i].detail, b2, sizeof b2), h->ev[i].dir + 1,
              safe(s->jobs[h->ev[i].dir], b1, sizeof b1));
  }
  if (!n) fprintf(o, "(no host implicated)\n");
  if (s->naside) fprintf(o, "# straggler findings charged to no node (--cleared-after %g s):\n", s->cleared_after);
  for (size_t i = 0; i < s->naside; i++)
    fprintf(o, "#   %-12s %s: %s  [run %zu: job %s]\n", s->aside[i].kind, safe(s->aside[i].host, b1, sizeof b1),
            safe(s->aside[i].detail, b2, sizeof b2), s->aside[i].dir + 1, safe(s->jobs[s->aside[i].dir], wb, sizeof wb));
}

static json_t *doc_json(struct suspects *s) {
  json_t *root = json_object(), *dirs = json_array(), *hosts = json_array();
  for (size_t d = 0; d < s->ndirs; d++) {
    json_t *o = json_object(), *notes = json_array();
    json_object_set_new(o, "dir", json_string(s->dirs[d]));
    json_object_set_new(o, "job", json_string(s->jobs[d]));
    json_object_set_new(o, "uid", s->uids[d] >= 0 ? json_integer(s->uids[d]) : json_null());
    for (size_t i = 0; i < s->nodes[d].nnotes; i++) json_array_append_new(notes, json_string(s->nodes[d].notes[i]));
    json_object_set_new(o, "notes", notes);
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
    json_t *u = json_array();
    for (size_t k = 0; k < h->nuids; k++) json_array_append_new(u, json_integer(h->uids[k]));
    json_object_set_new(o, "uids", u);
    json_object_set_new(o, "unconfirmed", json_boolean(h->unconfirmed));
    static const char *const checks[] = {"not run", "passed", "failed", "could not run"};
    json_object_set_new(o, "check", json_string(checks[h->check & 3]));
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
  json_t *as = json_array();
  for (size_t i = 0; i < s->naside; i++) {
    const struct aside *a = &s->aside[i];
    json_t *x = json_object();
    json_object_set_new(x, "kind", json_string(a->kind));
    json_object_set_new(x, "host", json_string(a->host));
    json_object_set_new(x, "rank", a->rank >= 0 ? json_integer(a->rank) : json_null());
    json_object_set_new(x, "job", json_string(s->jobs[a->dir]));
    json_object_set_new(x, "dir", json_string(s->dirs[a->dir]));
    json_object_set_new(x, "cleared_s", isfinite(a->cleared_s) ? json_real(a->cleared_s) : json_null());
    json_object_set_new(x, "detail", json_string(a->detail));
    json_array_append_new(as, x);
  }
  json_object_set_new(root, "set_aside", as);
  json_object_set_new(root, "cleared_after_s", json_real(s->cleared_after));
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
  print_header(s, o);
  HASH_ITER(hh, s->hosts, h, t) {
    if (h->unconfirmed && actionable(h)) fprintf(o, "# not drained: %s: %s\n", h->name, unconfirmed_why(s, h, wb, sizeof wb));
  }
  HASH_ITER(hh, s->hosts, h, t) {
    if (h->level != LVL_DRAIN) continue;
    if (!actionable(h)) {
      fprintf(o, "# not drained: %s: %s\n", safe(h->name, b, sizeof b), why_not(h, wb, sizeof wb));
      continue;
    }
    /* the reason: the kinds of evidence and how often */
    char why[200] = "";
    size_t w = 0;
    static const char *const kinds[] = {"sdc", "health", "straggler", "slow_link",
                                        "slow_nic", "hang_missing", "hang_gpu", "hang_stuck", "nccl_errors"};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
      size_t c = 0;
      for (size_t i = 0; i < h->nev; i++) c += !strcmp(h->ev[i].kind, kinds[k]);
      if (c && w < sizeof why) w += (size_t)snprintf(why + w, sizeof why - w, "%s%s x%zu", w ? ", " : "", kinds[k], c);
    }
    char conf[64];
    if (h->nuids >= 2)
      snprintf(conf, sizeof conf, "%zu+ users", h->nuids);
    else
      snprintf(conf, sizeof conf, "the site's check failed");
    fprintf(o, "scontrol update NodeName=%s State=DRAIN Reason=\"collscope: %s in %zu of %zu runs; %s\"\n", h->name, why,
            h->jobs_implicated, h->jobs_seen, conf);
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

/* The site's check of node `node`: cmd split at spaces (no shell), each "%n" the node.
 * Returns 1 passed (exit 0), 2 failed (any other exit), 3 could not run. */
static int run_check(const char *cmd, const char *node) {
  char *argv[33], buf[4096], *copy = xstrdup(cmd), *save = NULL;
  char *exp[32] = {0};
  int n = 0;
  for (char *t = strtok_r(copy, " \t", &save); t && n < 32; t = strtok_r(NULL, " \t", &save)) {
    char *pct = strstr(t, "%n");
    if (pct) {
      size_t len = strlen(t) + strlen(node) + 1;
      exp[n] = xcalloc(1, len);
      snprintf(exp[n], len, "%.*s%s%s", (int)(pct - t), t, node, pct + 2);
      argv[n] = exp[n];
    } else
      argv[n] = t;
    n++;
  }
  argv[n] = NULL;
  int rc = n ? sn_run_capture(argv, buf, sizeof buf, 600, false) : -1;
  for (int i = 0; i < n; i++) free(exp[i]);
  free(copy);
  return rc < 0 ? 3 : rc == 0 ? 1
                              : 2;
}

void cmd_suspects_help(FILE *o) {
  fputs("usage: collscope suspects DIR... [--format text|json|slurm|hostfile] [--topology FILE]\n"
        "                          [--verify-cmd CMD] [--cleared-after S] [--no-slurm] [--trust-host-names]\n"
        "                          [-o FILE] [-j N]\n"
        "\n"
        "Lists the hosts (and the GPUs, by device index, PCI bus id and UUID) that the reports\n"
        "of the dump directories implicate, with the evidence: straggler (compute), SDC suspect,\n"
        "slow link end, missing from or stuck in a hang, NCCL errors (failed calls), health\n"
        "(GPU ECC, XID, row remapping, NVLink, PCIe, IB port errors).\n"
        "Levels: drain (SDC suspect; uncorrectable ECC, row remap pending or failed, an XID\n"
        "that needs a GPU reset; implicated in 2 or more runs and in more than half of the\n"
        "runs it took part in, e.g. a straggler in 3 of 5) and watch (anything else). A dump is\n"
        "its job owner's to edit: drain-level evidence drains only when jobs of two users\n"
        "(uids from the SPANK plugin's node records) implicate the node, or the site's check\n"
        "fails; otherwise the node is watched and the check to run is named. Each DIR is one\n"
        "run, whatever job id its dumps claim.\n"
        "\n"
        "  --format text      (default) one block per host\n"
        "  --format json      the same as one JSON object\n"
        "  --format slurm     scontrol drain lines for the drain hosts and --exclude=HOSTLIST\n"
        "                     (every suspect) for the next srun; printed, never run\n"
        "  --format hostfile  the jobs' other hosts, one a line, for a rerun: in the order of\n"
        "                     the topology plan with --topology FILE (collscope topo plan),\n"
        "                     else in hostlist order\n"
        "  --verify-cmd CMD   the site's check of one node, run (as whoever runs suspects,\n"
        "                     meant as root) for each node with drain-level evidence of one\n"
        "                     user: split at spaces, no shell, %n the node; exit 0 passed\n"
        "                     (watch), any other status failed (drain)\n"
        "  --cleared-after S  a straggler the report says cleared more than S seconds of the\n"
        "                     job's clock before its end is set aside, no action (default 300)\n"
        "  --no-slurm         do not ask scontrol/sacct which nodes a job ran on\n"
        "  --trust-host-names act on plain host names of the dumps that no node record of the\n"
        "                     SPANK plugin vouches for (dumps from collscope run, or a site\n"
        "                     whose jobs cannot choose COLLSCOPE_HOSTNAME); never on ALL, a\n"
        "                     hostlist expression or a name outside [A-Za-z0-9._-]\n"
        "  -o, --output FILE  write there (whole or not at all)\n"
        "  -j N               reading threads per report (default: one per core)\n"
        "Actions (slurm, hostfile) name only nodes that root-owned node records of the SPANK\n"
        "plugin vouch for: of the directory's job (the number its name ends in), for the\n"
        "dump's own pid, on a node Slurm says the job ran on; anything else is a '#' line\n"
        "saying why (docs/slurm.md). A straggler the balance section explains by the job's own\n"
        "data (uneven_data, data_loader) is set aside too: not the node.\n"
        "exit status: 0, 1 when a directory has no usable report, 2 for a usage error.\n",
        o);
}

int cmd_suspects(int argc, char **argv) {
  const char *format = "text", *topofile = NULL, *outpath = NULL;
  unsigned jobs = 0;
  bool no_slurm = false;
  struct suspects s = {0};
  s.cleared_after = 300;
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
      cmd_suspects_help(stdout);
      free(s.dirs), free(s.jobs);
      return 0;
    }
    if (!dashdash && !strcmp(a, "--trust-host-names")) {
      s.trust_names = true;
      continue;
    }
    if (!dashdash && !strcmp(a, "--no-slurm")) {
      no_slurm = true;
      continue;
    }
    if (!dashdash && a[0] == '-' && a[1]) {
      if (!val) {
        fprintf(stderr, "collscope suspects: %s needs a value\n", a);
        cmd_suspects_help(stderr);
        free(s.dirs), free(s.jobs);
        return CLI_EXIT_USAGE;
      }
      if (!strcmp(a, "--format"))
        format = val;
      else if (!strcmp(a, "--topology"))
        topofile = val;
      else if (!strcmp(a, "--verify-cmd"))
        s.verify_cmd = val;
      else if (!strcmp(a, "--cleared-after")) {
        char *end;
        double v = strtod(val, &end);
        if (*end || end == val || !isfinite(v) || v < 0) {
          fprintf(stderr, "collscope suspects: --cleared-after: expected seconds >= 0\n");
          free(s.dirs), free(s.jobs);
          return CLI_EXIT_USAGE;
        }
        s.cleared_after = v;
      } else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
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
        cmd_suspects_help(stderr);
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
    cmd_suspects_help(stderr);
    free(s.dirs), free(s.jobs);
    return CLI_EXIT_USAGE;
  }
  int rc = 0;
  json_t **docs = xcalloc(s.ndirs, sizeof *docs);
  s.nodes = xcalloc(s.ndirs, sizeof *s.nodes);
  s.uids = xcalloc(s.ndirs, sizeof *s.uids);
  for (size_t d = 0; d < s.ndirs; d++) {
    int st = 0;
    s.uids[d] = -1;
    docs[d] = cli_report_json(s.dirs[d], NULL, NULL, jobs, &st);
    if (!docs[d]) {
      fprintf(stderr, "collscope suspects: %s: no usable report; left out\n", s.dirs[d]);
      rc = 1;
      s.jobs[d] = s.dirs[d];
      continue;
    }
    const char *job = suspects_jstr(json_object_get(docs[d], "summary"), "job");
    sn_dir_load(&s.nodes[d], s.dirs[d], jobs, job ? job : "", !no_slurm);
    /* the directory's job, as its name says (else the dumps'): never what the dumps claim
     * against it */
    s.jobs[d] = s.nodes[d].job[0] ? s.nodes[d].job : s.dirs[d];
    s.uids[d] = s.nodes[d].uid;
    struct stat dst;
    if (s.uids[d] < 0 && s.trust_names && stat(s.dirs[d], &dst) == 0) s.uids[d] = (long long)dst.st_uid;
    suspects_gather(&s, d, docs[d]);
  }
  suspects_classify(&s);
  if (s.verify_cmd) {
    struct host *h, *t;
    int checked = 0;
    HASH_ITER(hh, s.hosts, h, t) {
      if (!h->unconfirmed || !actionable(h)) continue;
      h->check = run_check(s.verify_cmd, h->name);
      checked = 1;
    }
    if (checked) suspects_classify(&s);
  }
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
  free(s.nodes), free(s.uids), free(s.aside);
  free(docs), free(s.dirs), free(s.jobs);
  return rc;
}
