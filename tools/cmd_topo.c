/* tools/cmd_topo.c: `collscope topo plan|show`: the topology-aware host order for a
 * launcher (srun, mpirun, torchrun forms, or JSON) and a human view of a topology file.
 * cli_topo_order_hosts() is the same planner for `collscope run --topology`. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "collscope/hostlist.h"
#include "collscope/topology.h"

static const char help_topo[] =
    "usage: collscope topo plan --topology FILE (--hosts HOSTLIST | --hostfile FILE)\n"
    "                           [--json | --form srun|mpirun|torchrun|hosts]\n"
    "                           [--tasks-per-node N] [--format auto|slurm|map|ibnet]\n"
    "       collscope topo show FILE [--format auto|slurm|map|ibnet]\n"
    "\n"
    "NCCL orders its inter-node ring and double binary tree by rank order and does not\n"
    "know the network. `plan` orders the job's hosts (launch order) so every leaf\n"
    "switch's hosts are contiguous and leaves under one upper switch are adjacent\n"
    "(recursively), keeping the launch order inside a leaf, and prints per level how many\n"
    "ring hops and tree edges cross it before and after, the new order and the rank map,\n"
    "and the forms the launchers take:\n"
    "  srun      one line per task: SLURM_HOSTFILE=FILE srun --distribution=arbitrary ...\n"
    "  mpirun    'host slots=N' lines: mpirun --hostfile FILE ...\n"
    "  torchrun  'host node_rank' lines: torchrun --node-rank=RANK on that host\n"
    "`show` prints the switch tree with host counts, to check a file.\n"
    "\n"
    "Topology files (format detected from the content, or --format):\n"
    "  slurm  topology.conf: SwitchName=s0 Nodes=tux[0-3] / SwitchName=s4 Switches=s[0-3],\n"
    "         or BlockName=b1 Nodes=... with BlockSizes=4,8\n"
    "  map    one line per host: host leaf [spine [core ...]] (host may be a hostlist)\n"
    "  ibnet  ibnetdiscover output (leaf = switch with HCAs, host = first word of the CA)\n"
    "Errors name FILE:LINE. Hosts of the job missing from the file are an error.\n"
    "\n"
    "options:\n"
    "  --topology FILE        the topology file\n"
    "  --hosts HOSTLIST       the job's hosts in launch order (Slurm hostlist)\n"
    "  --hostfile FILE        the same from a file: first word of each line, '#' comments\n"
    "  --json                 {\"order\":[...],\"crossings\":{\"before\":{LEVEL:HOPS},\"after\":{...}},\n"
    "                         \"tree_crossings\":{...},\"groups\":{...},\"rank_map\":[...],\n"
    "                         \"srun\":{...},\"mpirun\":{...},\"torchrun\":[...]}\n"
    "  --form F               print only that launcher form (to redirect into a file)\n"
    "  --tasks-per-node N     ranks per host in the rank map and srun/mpirun forms (1)\n"
    "levels: host, leaf, spine, core, level4...; a hop crosses a level when its two hosts\n"
    "have different switches at that level. After planning, ring hops crossing a level\n"
    "equal the number of groups at that level (when more than one): the minimum.\n"
    "In process: COLLSCOPE_TOPOLOGY=FILE makes the shim route AllReduce, Broadcast and\n"
    "Reduce through a communicator reordered the same way (see README).\n"
    "exit status: 0, 1 on a bad file or unknown hosts, 2 on a usage error.\n";

void cmd_topo_help(FILE *out) { fputs(help_topo, out); }

static void tsay(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void tsay(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  fputs("collscope topo: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int parse_format(const char *s) {
  if (!strcmp(s, "auto")) return CS_TOPO_AUTO;
  if (!strcmp(s, "slurm")) return CS_TOPO_SLURM;
  if (!strcmp(s, "map")) return CS_TOPO_MAP;
  if (!strcmp(s, "ibnet") || !strcmp(s, "ibnetdiscover")) return CS_TOPO_IBNET;
  return -1;
}

/* Hosts of a hostfile: first word of each line ('#' comments; a word may be a hostlist;
 * "host slots=N" and repeated lines are fine), duplicates dropped (a hash set: linear in
 * the hosts), first one wins. At most CS_TOPO_MAX_HOSTS names, as in a topology file:
 * the walk stops at the line that passes it, before expanding any further. */
struct seen_host {
  char *name;
  UT_hash_handle hh;
};
struct hostfile {
  char **v;
  size_t n, cap, listed;
  struct seen_host *seen;
  const char *why;
};

static int take_host(const char *name, size_t len, void *arg) {
  struct hostfile *hf = arg;
  if (++hf->listed > CS_TOPO_MAX_HOSTS) {
    hf->why = "limit";
    return -1;
  }
  struct seen_host *sh;
  HASH_FIND(hh, hf->seen, name, len, sh);
  if (sh) return 0;
  if (hf->n == hf->cap) {
    size_t nc = hf->cap ? hf->cap * 2 : 64;
    char **nv = realloc(hf->v, nc * sizeof *nv);
    if (!nv) {
      hf->why = "oom";
      return -1;
    }
    hf->v = nv;
    hf->cap = nc;
  }
  if (!(sh = malloc(sizeof *sh)) || !(sh->name = strdup(name))) {
    free(sh);
    hf->why = "oom";
    return -1;
  }
  hf->v[hf->n++] = sh->name;
  HASH_ADD_KEYPTR(hh, hf->seen, sh->name, len, sh);
  return 0;
}

static int read_hostfile(const char *path, char ***hosts, size_t *n) {
  FILE *f = fopen(path, "r");
  if (!f) {
    tsay("--hostfile %s: %s", path, strerror(errno));
    return -1;
  }
  char *line = NULL;
  size_t linecap = 0;
  struct hostfile hf = {0};
  int no = 0, rc = 0;
  while (getline(&line, &linecap, f) >= 0) {
    no++;
    char *h = strchr(line, '#');
    if (h) *h = '\0';
    char *save = NULL, *w = strtok_r(line, " \t\r\n", &save);
    if (!w) continue;
    size_t ne;
    char err[200];
    if (cs_hostlist_each(w, 0, take_host, &hf, &ne, err, sizeof err)) {
      if (hf.why && !strcmp(hf.why, "limit"))
        tsay("%s:%d: more than %u hosts in the hostfile (the limit)", path, no, CS_TOPO_MAX_HOSTS);
      else if (hf.why)
        tsay("%s:%d: out of memory", path, no);
      else
        tsay("%s:%d: %s", path, no, err);
      rc = -1;
      break;
    }
  }
  free(line);
  fclose(f);
  struct seen_host *sh, *tmp;
  HASH_ITER(hh, hf.seen, sh, tmp) {
    HASH_DEL(hf.seen, sh);
    free(sh);
  }
  if (!rc && hf.n == 0) {
    tsay("--hostfile %s: no hosts", path);
    rc = -1;
  }
  if (rc) {
    cs_hostlist_free(hf.v, hf.n);
    return -1;
  }
  *hosts = hf.v;
  *n = hf.n;
  return 0;
}

int cli_topo_order_hosts(const char *topofile, char **hosts, size_t n, int verbose) {
  struct cs_topo *t;
  char err[1024];
  if (cs_topo_load(topofile, CS_TOPO_AUTO, &t, err, sizeof err)) {
    fprintf(stderr, "collscope run: --topology: %s\n", err);
    return -1;
  }
  struct cs_plan p;
  if (cs_topo_plan(t, (const char *const *)hosts, n, &p, err, sizeof err)) {
    fprintf(stderr, "collscope run: --topology %s: %s\n", topofile, err);
    cs_topo_free(t);
    return -1;
  }
  char **tmp = malloc((n ? n : 1) * sizeof *tmp);
  if (!tmp) {
    cs_plan_free(&p);
    cs_topo_free(t);
    return -1;
  }
  for (size_t i = 0; i < n; i++) tmp[i] = hosts[p.order[i]];
  memcpy(hosts, tmp, n * sizeof *tmp);
  free(tmp);
  if (verbose) {
    fprintf(stderr, "collscope run: --topology %s: ring hops crossing", topofile);
    for (int l = 1; l < p.nlevels; l++)
      fprintf(stderr, " %s %ld -> %ld;", cs_topo_level_name(l), p.before.ring[l], p.after.ring[l]);
    fprintf(stderr, " order:");
    for (size_t i = 0; i < n; i++) fprintf(stderr, " %s", hosts[i]);
    fprintf(stderr, "\n");
  }
  cs_plan_free(&p);
  cs_topo_free(t);
  return 0;
}

/* --json is written as it goes (no document tree: 131,072 hosts cost a few MB, not
 * hundreds). Strings are escaped as JSON requires; bytes outside ASCII as \u00XX. */
static void json_str(FILE *f, const char *s) {
  const unsigned char *c = (const unsigned char *)s;
  while (*c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\') c++;
  if (!*c) {
    fprintf(f, "\"%s\"", s);
    return;
  } /* the common case: nothing to escape */
  fputc('"', f);
  for (c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') {
      fputc('\\', f);
      fputc(*c, f);
    } else if (*c < 0x20 || *c >= 0x7f)
      fprintf(f, "\\u%04x", *c);
    else
      fputc(*c, f);
  }
  fputc('"', f);
}

static void json_levels(FILE *f, const long *v, int nlevels) {
  fputc('{', f);
  for (int l = 0; l < nlevels; l++) fprintf(f, "%s\"%s\": %ld", l ? ", " : "", cs_topo_level_name(l), v[l]);
  fputc('}', f);
}

static void print_json(const char *file, const struct cs_topo *t, const struct cs_plan *p, char **hosts, int tpn) {
  FILE *f = stdout;
  fputs("{\n \"topology\": ", f);
  json_str(f, file);
  fprintf(f, ",\n \"format\": \"%s\",\n \"levels\": [", cs_topo_format_name(t->format));
  for (int l = 0; l < p->nlevels; l++) fprintf(f, "%s\"%s\"", l ? ", " : "", cs_topo_level_name(l));
  fputs("],\n \"order\": [", f);
  for (size_t i = 0; i < p->n; i++) {
    fputs(i ? ",\n  " : "\n  ", f);
    json_str(f, hosts[p->order[i]]);
  }
  fputs("\n ],\n \"crossings\": {\"before\": ", f);
  json_levels(f, p->before.ring, p->nlevels);
  fputs(", \"after\": ", f);
  json_levels(f, p->after.ring, p->nlevels);
  fputs("},\n \"tree_crossings\": {\"before\": ", f);
  json_levels(f, p->before.tree, p->nlevels);
  fputs(", \"after\": ", f);
  json_levels(f, p->after.tree, p->nlevels);
  fputs("},\n \"groups\": ", f);
  json_levels(f, p->after.groups, p->nlevels);
  fprintf(f, ",\n \"changed\": %s,\n \"tasks_per_node\": %d,\n \"rank_map\": [", p->changed ? "true" : "false", tpn);
  for (size_t i = 0; i < p->n; i++) {
    fputs(i ? ",\n  {\"host\": " : "\n  {\"host\": ", f);
    json_str(f, hosts[p->order[i]]);
    fprintf(f, ", \"node_rank\": %zu, \"was\": %zu, \"ranks\": [", i, p->order[i]);
    for (int k = 0; k < tpn; k++) fprintf(f, "%s%zu", k ? ", " : "", i * (size_t)tpn + (size_t)k);
    fputs("]}", f);
  }
  fputs("\n ],\n \"srun\": {\"hostfile\": [", f);
  for (size_t i = 0; i < p->n; i++)
    for (int k = 0; k < tpn; k++) {
      fputs(i || k ? ",\n  " : "\n  ", f);
      json_str(f, hosts[p->order[i]]);
    }
  fputs("\n ], \"usage\": \"SLURM_HOSTFILE=FILE srun --distribution=arbitrary ...\"},\n \"mpirun\": {\"hostfile\": [", f);
  for (size_t i = 0; i < p->n; i++) {
    char line[512];
    snprintf(line, sizeof line, "%s slots=%d", hosts[p->order[i]], tpn);
    fputs(i ? ",\n  " : "\n  ", f);
    json_str(f, line);
  }
  fputs("\n ], \"usage\": \"mpirun --hostfile FILE ...\"},\n \"torchrun\": [", f);
  for (size_t i = 0; i < p->n; i++) {
    fputs(i ? ",\n  {\"host\": " : "\n  {\"host\": ", f);
    json_str(f, hosts[p->order[i]]);
    fprintf(f, ", \"node_rank\": %zu}", i);
  }
  fputs("\n ]\n}\n", f);
}

static void print_form(const char *form, const struct cs_plan *p, char **hosts, int tpn) {
  for (size_t i = 0; i < p->n; i++) {
    const char *h = hosts[p->order[i]];
    if (!strcmp(form, "srun"))
      for (int k = 0; k < tpn; k++) printf("%s\n", h);
    else if (!strcmp(form, "mpirun"))
      printf("%s slots=%d\n", h, tpn);
    else if (!strcmp(form, "torchrun"))
      printf("%s %zu\n", h, i);
    else
      printf("%s\n", h);
  }
}

static void print_text(const char *file, const struct cs_topo *t, const struct cs_plan *p, char **hosts, int tpn) {
  printf("topology %s (%s): %zu hosts in the job, order %s\n", file, cs_topo_format_name(t->format), p->n,
         p->changed ? "changed" : "unchanged (already grouped)");
  printf("%-8s %7s   %-17s   %-17s\n", "level", "groups", "ring hops", "tree edges");
  printf("%-8s %7s   %8s %8s   %8s %8s\n", "", "", "before", "after", "before", "after");
  for (int l = 0; l < p->nlevels; l++)
    printf("%-8s %7ld   %8ld %8ld   %8ld %8ld\n", cs_topo_level_name(l), p->after.groups[l], p->before.ring[l],
           p->after.ring[l], p->before.tree[l], p->after.tree[l]);
  printf("\nnode rank  host  (launch index before)\n");
  for (size_t i = 0; i < p->n; i++) printf("%9zu  %s  (%zu)\n", i, hosts[p->order[i]], p->order[i]);
  printf("\n# srun: write these lines to FILE, then SLURM_HOSTFILE=FILE srun --distribution=arbitrary ...\n");
  print_form("srun", p, hosts, tpn);
  printf("\n# mpirun: mpirun --hostfile FILE ... with FILE =\n");
  print_form("mpirun", p, hosts, tpn);
  printf("\n# torchrun: on each host, torchrun --nnodes=%zu --node-rank=RANK ...  (host RANK)\n", p->n);
  print_form("torchrun", p, hosts, tpn);
}

static int topo_plan(int argc, char **argv) {
  const char *topo = NULL, *hostlist = NULL, *hostfile = NULL, *form = NULL;
  int json = 0, format = CS_TOPO_AUTO;
  long tpn = 1;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
#define VAL(name) (!strcmp(a, name) && next ? (i++, next) : NULL)
    const char *v;
    if (!strcmp(a, "--json"))
      json = 1;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      cmd_topo_help(stdout);
      return 0;
    } else if ((v = VAL("--topology")))
      topo = v;
    else if ((v = VAL("--hosts")) || (v = VAL("-H")))
      hostlist = v;
    else if ((v = VAL("--hostfile")))
      hostfile = v;
    else if ((v = VAL("--form")))
      form = v;
    else if ((v = VAL("--format"))) {
      if ((format = parse_format(v)) < 0) {
        tsay("--format %s: expected auto, slurm, map or ibnet", v);
        return CLI_EXIT_USAGE;
      }
    } else if ((v = VAL("--tasks-per-node"))) {
      char *end;
      tpn = strtol(v, &end, 10);
      if (*end || tpn < 1 || tpn > 4096) {
        tsay("--tasks-per-node %s: expected 1..4096", v);
        return CLI_EXIT_USAGE;
      }
    } else {
      tsay("plan: unknown or incomplete option '%s' (collscope topo --help)", a);
      return CLI_EXIT_USAGE;
    }
#undef VAL
  }
  if (!topo || (!hostlist == !hostfile)) {
    tsay("plan needs --topology FILE and one of --hosts HOSTLIST or --hostfile FILE");
    return CLI_EXIT_USAGE;
  }
  if (form && strcmp(form, "srun") && strcmp(form, "mpirun") && strcmp(form, "torchrun") && strcmp(form, "hosts")) {
    tsay("--form %s: expected srun, mpirun, torchrun or hosts", form);
    return CLI_EXIT_USAGE;
  }
  char **hosts = NULL;
  size_t n = 0;
  if (hostlist) {
    char err[256];
    if (cs_hostlist_expand(hostlist, &hosts, &n, err, sizeof err)) {
      tsay("--hosts '%s': %s", hostlist, err);
      return CLI_EXIT_USAGE;
    }
  } else if (read_hostfile(hostfile, &hosts, &n)) {
    return 1;
  }
  struct cs_topo *t;
  char err[1024];
  if (cs_topo_load(topo, format, &t, err, sizeof err)) {
    tsay("%s", err);
    cs_hostlist_free(hosts, n);
    return 1;
  }
  struct cs_plan p;
  if (cs_topo_plan(t, (const char *const *)hosts, n, &p, err, sizeof err)) {
    tsay("%s: %s", topo, err);
    cs_topo_free(t);
    cs_hostlist_free(hosts, n);
    return 1;
  }
  if (json)
    print_json(topo, t, &p, hosts, (int)tpn);
  else if (form)
    print_form(form, &p, hosts, (int)tpn);
  else
    print_text(topo, t, &p, hosts, (int)tpn);
  cs_plan_free(&p);
  cs_topo_free(t);
  cs_hostlist_free(hosts, n);
  return 0;
}

static void show_sw(const struct cs_topo *t, int s, int depth, int **kids, const size_t *nk, char ***lh, const size_t *nlh) {
  printf("%*s%s  (level %s, %zu host%s)", depth * 2, "", t->sw[s].name, cs_topo_level_name(t->sw[s].level),
         t->sw[s].nhosts, t->sw[s].nhosts == 1 ? "" : "s");
  if (nlh[s]) {
    char *c = cs_hostlist_compress((const char *const *)lh[s], nlh[s]);
    printf(": %s", c ? c : "?");
    free(c);
  }
  printf("\n");
  for (size_t k = 0; k < nk[s]; k++) show_sw(t, kids[s][k], depth + 1, kids, nk, lh, nlh);
}

static int topo_show(int argc, char **argv) {
  const char *file = NULL;
  int format = CS_TOPO_AUTO;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      cmd_topo_help(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--format") && i + 1 < argc) {
      if ((format = parse_format(argv[++i])) < 0) {
        tsay("--format %s: expected auto, slurm, map or ibnet", argv[i]);
        return CLI_EXIT_USAGE;
      }
    } else if (argv[i][0] != '-' && !file) {
      file = argv[i];
    } else {
      tsay("show: unexpected argument '%s' (collscope topo show FILE [--format F])", argv[i]);
      return CLI_EXIT_USAGE;
    }
  }
  if (!file) {
    tsay("show needs a FILE");
    return CLI_EXIT_USAGE;
  }
  struct cs_topo *t;
  char err[1024];
  if (cs_topo_load(file, format, &t, err, sizeof err)) {
    tsay("%s", err);
    return 1;
  }
  size_t leaves = 0;
  for (size_t s = 0; s < t->nsw; s++) leaves += t->sw[s].level == 1;
  printf("%s: %s, %zu hosts, %zu switches (%zu leaves), levels:", file, cs_topo_format_name(t->format), t->nhost,
         t->nsw, leaves);
  for (int l = 0; l < t->nlevels; l++) printf(" %s", cs_topo_level_name(l));
  printf("\n");
  int **kids = calloc(t->nsw + 1, sizeof *kids);
  size_t *nk = calloc(t->nsw + 1, sizeof *nk);
  char ***lh = calloc(t->nsw + 1, sizeof *lh);
  size_t *nlh = calloc(t->nsw + 1, sizeof *nlh);
  int rc = 0;
  if (!kids || !nk || !lh || !nlh) rc = 1;
  for (size_t s = 0; s < t->nsw && !rc; s++) {
    int p = t->sw[s].parent;
    if (p < 0) continue;
    int *nv = realloc(kids[p], (nk[p] + 1) * sizeof *nv);
    if (!nv) {
      rc = 1;
      break;
    }
    kids[p] = nv;
    kids[p][nk[p]++] = (int)s;
  }
  for (size_t h = 0; h < t->nhost && !rc; h++) {
    int s = t->host_leaf[h];
    char **nv = realloc(lh[s], (nlh[s] + 1) * sizeof *nv);
    if (!nv) {
      rc = 1;
      break;
    }
    lh[s] = nv;
    lh[s][nlh[s]++] = t->host[h];
  }
  for (size_t s = 0; s < t->nsw && !rc; s++)
    if (t->sw[s].parent < 0) show_sw(t, (int)s, 0, kids, nk, lh, nlh);
  for (size_t s = 0; s < t->nsw && kids && lh; s++) {
    free(kids[s]);
    free(lh[s]);
  }
  free(kids);
  free(nk);
  free(lh);
  free(nlh);
  cs_topo_free(t);
  if (rc) tsay("out of memory");
  return rc;
}

int cmd_topo(int argc, char **argv) {
  if (argc < 2) {
    cmd_topo_help(stderr);
    return CLI_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    cmd_topo_help(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "plan")) return topo_plan(argc - 2, argv + 2);
  if (!strcmp(argv[1], "show")) return topo_show(argc - 2, argv + 2);
  tsay("unknown subcommand '%s' (expected plan or show)", argv[1]);
  return CLI_EXIT_USAGE;
}
