/* topology/parse_slurm.c: Slurm's topology.conf, tree form (SwitchName= with Nodes= or
 * Switches=, LinkSpeed=) and block form (BlockName= Nodes=, BlockSizes=), into the
 * switch tree of topology.c. Switches= may name switches defined later: they are
 * resolved after the last line. Linear in the file plus the hosts and names it lists. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topo_internal.h"

struct kv {
  char key[32];
  char *val;
};

/* Parse KEY=VALUE pairs of a line (values may be "quoted"). */
static int parse_kvs(struct ctx *c, struct line *ln, struct kv *kv, int maxkv, int *nkv) {
  char *s = ln->s;
  int n = 0;
  for (;;) {
    while (*s == ' ') s++;
    if (!*s) break;
    char *k = s;
    while (*s && *s != '=' && *s != ' ') s++;
    if (*s != '=') {
      *s = '\0';
      return ferr(c, ln->no, "expected KEY=VALUE, got '%.64s'", k);
    }
    size_t kl = (size_t)(s - k);
    if (kl == 0) return ferr(c, ln->no, "'=' without a key (expected KEY=VALUE)");
    if (n == maxkv) return ferr(c, ln->no, "too many KEY=VALUE pairs on one line");
    if (kl >= sizeof kv[n].key) return ferr(c, ln->no, "unknown key '%.*s'", 40, k);
    memcpy(kv[n].key, k, kl);
    kv[n].key[kl] = '\0';
    s++;
    char *v = s;
    if (*s == '"') {
      v = ++s;
      while (*s && *s != '"') s++;
      if (*s != '"') return ferr(c, ln->no, "unterminated quote in the value of %s", kv[n].key);
      *s++ = '\0';
      if (*s && *s != ' ') return ferr(c, ln->no, "expected a space after the quoted value of %s", kv[n].key);
    } else {
      while (*s && *s != ' ') s++;
      if (*s) *s++ = '\0';
    }
    if (!*v) return ferr(c, ln->no, "empty value for %s (expected %s=VALUE)", kv[n].key, kv[n].key);
    kv[n].val = v;
    for (int q = 0; q < n; q++)
      if (!strcasecmp(kv[q].key, kv[n].key)) return ferr(c, ln->no, "%s given twice on one line", kv[n].key);
    n++;
  }
  *nkv = n;
  return 0;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *v) {
  if (!*s) return -1;
  unsigned long long x = 0;
  for (; *s; s++) {
    if (!isdigit((unsigned char)*s)) return -1;
    x = x * 10 + (unsigned)(*s - '0');
    if (x > max) return -1;
  }
  *v = x;
  return 0;
}

struct pending_sw {
  int sw;
  int line;
  const char *expr;
}; /* expr: in the lines' text */

/* Room for one more element in a growing array (doubling: linear in the elements). */
static int grow(void **v, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 16;
  void *nv = realloc(*v, nc * size);
  if (!nv) return -1;
  *v = nv;
  *cap = nc;
  return 0;
}

/* what the lines of a topology.conf build up before the tree is complete */
struct slurm_conf {
  int mode;                /* 0 not known yet, 1 tree (SwitchName), 2 block (BlockName) */
  struct pending_sw *pend; /* Switches= references, resolved once every switch is defined */
  size_t npend, cappend;
  int *blocks; /* the blocks' switches, in file order */
  size_t nblocks, capblocks;
  unsigned long long sizes[CS_TOPO_MAX_LEVELS]; /* BlockSizes= */
  int nsizes, sizes_line;
};

/* a `SwitchName=NAME Nodes=|Switches=... [LinkSpeed=N]` or `BlockName=NAME Nodes=...` line */
static int switch_line(struct ctx *c, struct slurm_conf *sc, struct kv *kv, int nkv, int no) {
  struct cs_topo *t = c->t;
  const char *first = kv[0].key;
  int block = !strcasecmp(first, "BlockName");
  if (sc->mode && sc->mode != (block ? 2 : 1))
    return ferr(c, no, "%s in a file of the %s form (a file is either tree or block)", first,
                sc->mode == 1 ? "tree (SwitchName)" : "block (BlockName)");
  sc->mode = block ? 2 : 1;
  const char *nodes = NULL, *switches = NULL;
  for (int k = 1; k < nkv; k++) {
    if (!strcasecmp(kv[k].key, "Nodes"))
      nodes = kv[k].val;
    else if (!block && !strcasecmp(kv[k].key, "Switches"))
      switches = kv[k].val;
    else if (!block && !strcasecmp(kv[k].key, "LinkSpeed")) {
      unsigned long long v;
      if (parse_uint(kv[k].val, 1ULL << 62, &v)) return ferr(c, no, "LinkSpeed='%.40s': expected a number", kv[k].val);
    } else {
      return ferr(c, no, "unknown key '%s' (expected %s)", kv[k].key, block ? "Nodes" : "Nodes, Switches or LinkSpeed");
    }
  }
  if (nodes && switches)
    return ferr(c, no, "switch '%.80s' has both Nodes= and Switches= (a line has one or the other)", kv[0].val);
  if (block && !nodes) return ferr(c, no, "block '%.80s' has no Nodes= (expected BlockName=NAME Nodes=HOSTLIST)", kv[0].val);
  if (cs_topo_switch_index(t, kv[0].val) >= 0) {
    int prev = t->sw[cs_topo_switch_index(t, kv[0].val)].line;
    return ferr(c, no, "%s '%.80s' is defined twice (first at line %d)", block ? "block" : "switch", kv[0].val, prev);
  }
  if (strpbrk(kv[0].val, "[],")) return ferr(c, no, "%s='%.80s': expected one name, not a hostlist", first, kv[0].val);
  int sw = add_switch(t, kv[0].val, no);
  if (sw < 0) return ferr(c, no, "out of memory");
  if (block) {
    if (grow((void **)&sc->blocks, &sc->capblocks, sc->nblocks, sizeof *sc->blocks)) return ferr(c, no, "out of memory");
    sc->blocks[sc->nblocks++] = sw;
  }
  int rc = nodes ? add_host_list(c, no, "Nodes", nodes, sw, 0) : 0;
  if (rc) return rc;
  if (switches) {
    if (grow((void **)&sc->pend, &sc->cappend, sc->npend, sizeof *sc->pend)) return ferr(c, no, "out of memory");
    sc->pend[sc->npend++] = (struct pending_sw){sw, no, switches};
  }
  return 0;
}

/* a `BlockSizes=N,N,...` line: the base block size, then aggregates of a power of two of it */
static int block_sizes_line(struct ctx *c, struct slurm_conf *sc, struct kv *kv, int nkv, int no) {
  if (sc->mode == 1) return ferr(c, no, "BlockSizes in a tree-form file (it belongs to the block form)");
  sc->mode = 2;
  if (nkv > 1) return ferr(c, no, "unknown key '%s' after BlockSizes (expected BlockSizes=N,N,...)", kv[1].key);
  if (sc->nsizes) return ferr(c, no, "BlockSizes given twice (first at line %d)", sc->sizes_line);
  sc->sizes_line = no;
  unsigned long long *sizes = sc->sizes;
  int rc = 0;
  char *s = kv[0].val;
  while (*s && !rc) {
    char *e = strchr(s, ',');
    if (e) *e = '\0';
    unsigned long long v;
    if (parse_uint(s, 1u << 30, &v) || v == 0)
      rc = ferr(c, no, "BlockSizes: '%.20s' is not a positive number", s);
    else if (sc->nsizes == CS_TOPO_MAX_LEVELS - 1)
      rc = ferr(c, no, "BlockSizes: more than %d sizes", CS_TOPO_MAX_LEVELS - 2);
    else if (sc->nsizes && (v <= sizes[sc->nsizes - 1] || v % sizes[0] || ((v / sizes[0]) & (v / sizes[0] - 1))))
      rc = ferr(c, no, "BlockSizes: %llu is not the base size %llu times a power of two larger than the previous size", v,
                sizes[0]);
    else
      sizes[sc->nsizes++] = v;
    if (!e) break;
    s = e + 1;
  }
  return rc;
}

/* the block form's aggregation levels: per BlockSizes= size past the first, a switch
 * `blocks<size>-<i>` over each run of blocks it holds */
static int add_block_levels(struct ctx *c, struct slurm_conf *sc) {
  struct cs_topo *t = c->t;
  int rc = 0;
  int *prev = malloc((sc->nblocks ? sc->nblocks : 1) * sizeof *prev);
  if (!prev) rc = ferr(c, 0, "out of memory");
  for (size_t b = 0; b < sc->nblocks && prev; b++) prev[b] = sc->blocks[b];
  for (int k = 1; k < sc->nsizes && !rc; k++) {
    size_t f = (size_t)(sc->sizes[k] / sc->sizes[0]);
    int cur = -1;
    for (size_t b = 0; b < sc->nblocks && !rc; b++) {
      if (b % f == 0) {
        char nm[96];
        snprintf(nm, sizeof nm, "blocks%llu-%zu", sc->sizes[k], b / f);
        if (cs_topo_switch_index(t, nm) >= 0) {
          rc = ferr(c, sc->sizes_line, "block name '%s' clashes with an aggregate name", nm);
          break;
        }
        cur = add_switch(t, nm, 0);
        if (cur < 0) {
          rc = ferr(c, 0, "out of memory");
          break;
        }
      }
      /* the level below's group of this block gets `cur` as parent */
      int below = prev[b];
      t->sw[below].parent = cur;
      prev[b] = cur;
    }
  }
  free(prev);
  return rc;
}

int parse_slurm(struct ctx *c, const char *text, size_t len) {
  struct lines L;
  if (split_lines(c, text, len, 1, 1, &L)) return -1;
  struct slurm_conf sc;
  memset(&sc, 0, sizeof sc);
  int rc = 0;
  for (size_t i = 0; i < L.n && !rc; i++) {
    struct kv kv[8];
    int nkv = 0;
    if ((rc = parse_kvs(c, &L.v[i], kv, 8, &nkv))) break;
    if (nkv == 0) continue;
    const char *first = kv[0].key;
    int no = L.v[i].no;
    if (!strcasecmp(first, "SwitchName") || !strcasecmp(first, "BlockName"))
      rc = switch_line(c, &sc, kv, nkv, no);
    else if (!strcasecmp(first, "BlockSizes"))
      rc = block_sizes_line(c, &sc, kv, nkv, no);
    else
      rc = ferr(c, no, "unknown key '%s' (expected SwitchName=, BlockName= or BlockSizes= first on a line)", first);
  }
  /* Switches= references, now that every switch is defined */
  for (size_t p = 0; p < sc.npend && !rc; p++) rc = add_switch_refs(c, sc.pend[p].line, sc.pend[p].expr, sc.pend[p].sw);
  if (!rc && sc.mode == 2 && sc.nsizes > 1) rc = add_block_levels(c, &sc);
  if (!rc && c->t->nsw == 0) rc = ferr(c, 0, "no SwitchName= or BlockName= line (expected a Slurm topology.conf)");
  free(sc.pend);
  free(sc.blocks);
  free_lines(&L);
  return rc;
}
