/* tools/cmd_topo.c: `collscope topo plan|show`: the topology-aware host order for a
 * launcher (srun, mpirun, torchrun forms, or JSON) and a human view of a topology file.
 * cli_topo_order_hosts() is the same planner for `collscope run --topology`. */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int cmd_topo_help(FILE *out) {
  fputs(help_topo, out);
  return 0;
}

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
 * "host slots=N" and repeated lines are fine), duplicates dropped, first one wins. */
static int read_hostfile(const char *path, char ***hosts, size_t *n) {
  FILE *f = fopen(path, "r");
  if (!f) { tsay("--hostfile %s: %s", path, strerror(errno)); return -1; }
  char line[4096];
  char **v = NULL;
  size_t nv = 0, cap = 0;
  int no = 0, rc = 0;
  while (fgets(line, sizeof line, f)) {
    no++;
    char *h = strchr(line, '#');
    if (h) *h = '\0';
    char *save = NULL, *w = strtok_r(line, " \t\r\n", &save);
    if (!w) continue;
    char **e;
    size_t ne;
    char err[200];
    if (cs_hostlist_expand(w, &e, &ne, err, sizeof err)) { tsay("%s:%d: %s", path, no, err); rc = -1; break; }
    for (size_t k = 0; k < ne; k++) {
      int dup = 0;
      for (size_t q = 0; q < nv && !dup; q++) dup = !strcmp(v[q], e[k]);
      if (dup) { free(e[k]); continue; }
      if (nv == cap) {
        cap = cap ? cap * 2 : 64;
        char **nw = realloc(v, cap * sizeof *nw);
        if (!nw) { rc = -1; free(e[k]); continue; }
        v = nw;
      }
      v[nv++] = e[k];
    }
    free(e);
  }
  fclose(f);
  if (!rc && nv == 0) { tsay("--hostfile %s: no hosts", path); rc = -1; }
  if (rc) { cs_hostlist_free(v, nv); return -1; }
  *hosts = v;
  *n = nv;
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
  if (!tmp) { cs_plan_free(&p); cs_topo_free(t); return -1; }
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

static json_t *levels_obj(const long *v, int nlevels) {
  json_t *o = json_object();
  for (int l = 0; l < nlevels; l++) json_object_set_new(o, cs_topo_level_name(l), json_integer(v[l]));
  return o;
}

static void print_json(const char *file, const struct cs_topo *t, const struct cs_plan *p, char **hosts, int tpn) {
  json_t *root = json_object();
  json_object_set_new(root, "topology", json_string(file));
  json_object_set_new(root, "format", json_string(cs_topo_format_name(t->format)));
  json_t *lv = json_array();
  for (int l = 0; l < p->nlevels; l++) json_array_append_new(lv, json_string(cs_topo_level_name(l)));
  json_object_set_new(root, "levels", lv);
  json_t *order = json_array();
  for (size_t i = 0; i < p->n; i++) json_array_append_new(order, json_string(hosts[p->order[i]]));
  json_object_set_new(root, "order", order);
  json_t *cr = json_object();
  json_object_set_new(cr, "before", levels_obj(p->before.ring, p->nlevels));
  json_object_set_new(cr, "after", levels_obj(p->after.ring, p->nlevels));
  json_object_set_new(root, "crossings", cr);
  json_t *tr = json_object();
  json_object_set_new(tr, "before", levels_obj(p->before.tree, p->nlevels));
  json_object_set_new(tr, "after", levels_obj(p->after.tree, p->nlevels));
  json_object_set_new(root, "tree_crossings", tr);
  json_object_set_new(root, "groups", levels_obj(p->after.groups, p->nlevels));
  json_object_set_new(root, "changed", json_boolean(p->changed));
  json_object_set_new(root, "tasks_per_node", json_integer(tpn));
  json_t *rm = json_array(), *tor = json_array(), *sr = json_array(), *mp = json_array();
  for (size_t i = 0; i < p->n; i++) {
    const char *h = hosts[p->order[i]];
    json_t *e = json_object();
    json_object_set_new(e, "host", json_string(h));
    json_object_set_new(e, "node_rank", json_integer((json_int_t)i));
    json_object_set_new(e, "was", json_integer((json_int_t)p->order[i]));
    json_t *rk = json_array();
    for (int k = 0; k < tpn; k++) {
      json_array_append_new(rk, json_integer((json_int_t)i * tpn + k));
      json_array_append_new(sr, json_string(h));
    }
    json_object_set_new(e, "ranks", rk);
    json_array_append_new(rm, e);
    json_t *te = json_object();
    json_object_set_new(te, "host", json_string(h));
    json_object_set_new(te, "node_rank", json_integer((json_int_t)i));
    json_array_append_new(tor, te);
    char line[512];
    snprintf(line, sizeof line, "%s slots=%d", h, tpn);
    json_array_append_new(mp, json_string(line));
  }
  json_object_set_new(root, "rank_map", rm);
  json_t *s = json_object();
  json_object_set_new(s, "hostfile", sr);
  json_object_set_new(s, "usage", json_string("SLURM_HOSTFILE=FILE srun --distribution=arbitrary ..."));
  json_object_set_new(root, "srun", s);
  json_t *m = json_object();
  json_object_set_new(m, "hostfile", mp);
  json_object_set_new(m, "usage", json_string("mpirun --hostfile FILE ..."));
  json_object_set_new(root, "mpirun", m);
  json_object_set_new(root, "torchrun", tor);
  json_dumpf(root, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  fputc('\n', stdout);
  json_decref(root);
}

static void print_form(const char *form, const struct cs_plan *p, char **hosts, int tpn) {
  for (size_t i = 0; i < p->n; i++) {
    const char *h = hosts[p->order[i]];
    if (!strcmp(form, "srun"))
      for (int k = 0; k < tpn; k++) printf("%s\n", h);
    else if (!strcmp(form, "mpirun")) printf("%s slots=%d\n", h, tpn);
    else if (!strcmp(form, "torchrun")) printf("%s %zu\n", h, i);
    else printf("%s\n", h);
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
    if (!strcmp(a, "--json")) json = 1;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) return cmd_topo_help(stdout);
    else if ((v = VAL("--topology"))) topo = v;
    else if ((v = VAL("--hosts")) || (v = VAL("-H"))) hostlist = v;
    else if ((v = VAL("--hostfile"))) hostfile = v;
    else if ((v = VAL("--form"))) form = v;
    else if ((v = VAL("--format"))) {
      if ((format = parse_format(v)) < 0) { tsay("--format %s: expected auto, slurm, map or ibnet", v); return CLI_EXIT_USAGE; }
    } else if ((v = VAL("--tasks-per-node"))) {
      char *end;
      tpn = strtol(v, &end, 10);
      if (*end || tpn < 1 || tpn > 4096) { tsay("--tasks-per-node %s: expected 1..4096", v); return CLI_EXIT_USAGE; }
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
    if (cs_hostlist_expand(hostlist, &hosts, &n, err, sizeof err)) { tsay("--hosts '%s': %s", hostlist, err); return CLI_EXIT_USAGE; }
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
  if (json) print_json(topo, t, &p, hosts, (int)tpn);
  else if (form) print_form(form, &p, hosts, (int)tpn);
  else print_text(topo, t, &p, hosts, (int)tpn);
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
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return cmd_topo_help(stdout);
    if (!strcmp(argv[i], "--format") && i + 1 < argc) {
      if ((format = parse_format(argv[++i])) < 0) { tsay("--format %s: expected auto, slurm, map or ibnet", argv[i]); return CLI_EXIT_USAGE; }
    } else if (argv[i][0] != '-' && !file) {
      file = argv[i];
    } else {
      tsay("show: unexpected argument '%s' (collscope topo show FILE [--format F])", argv[i]);
      return CLI_EXIT_USAGE;
    }
  }
  if (!file) { tsay("show needs a FILE"); return CLI_EXIT_USAGE; }
  struct cs_topo *t;
  char err[1024];
  if (cs_topo_load(file, format, &t, err, sizeof err)) { tsay("%s", err); return 1; }
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
    if (!nv) { rc = 1; break; }
    kids[p] = nv;
    kids[p][nk[p]++] = (int)s;
  }
  for (size_t h = 0; h < t->nhost && !rc; h++) {
    int s = t->host_leaf[h];
    char **nv = realloc(lh[s], (nlh[s] + 1) * sizeof *nv);
    if (!nv) { rc = 1; break; }
    lh[s] = nv;
    lh[s][nlh[s]++] = t->host[h];
  }
  for (size_t s = 0; s < t->nsw && !rc; s++)
    if (t->sw[s].parent < 0) show_sw(t, (int)s, 0, kids, nk, lh, nlh);
  for (size_t s = 0; s < t->nsw && kids && lh; s++) { free(kids[s]); free(lh[s]); }
  free(kids);
  free(nk);
  free(lh);
  free(nlh);
  cs_topo_free(t);
  if (rc) tsay("out of memory");
  return rc;
}

int cmd_topo(int argc, char **argv) {
  if (argc < 2) { cmd_topo_help(stderr); return CLI_EXIT_USAGE; }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) return cmd_topo_help(stdout);
  if (!strcmp(argv[1], "plan")) return topo_plan(argc - 2, argv + 2);
  if (!strcmp(argv[1], "show")) return topo_show(argc - 2, argv + 2);
  tsay("unknown subcommand '%s' (expected plan or show)", argv[1]);
  return CLI_EXIT_USAGE;
}
