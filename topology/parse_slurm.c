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

int parse_slurm(struct ctx *c, const char *text, size_t len) {
  struct cs_topo *t = c->t;
  struct lines L;
  if (split_lines(c, text, len, 1, 1, &L)) return -1;
  struct pending_sw *pend = NULL;
  size_t npend = 0, cappend = 0, capblocks = 0;
  int rc = 0, mode = 0; /* 1 tree, 2 block */
  int *blocks = NULL;
  size_t nblocks = 0;
  unsigned long long sizes[CS_TOPO_MAX_LEVELS];
  int nsizes = 0, sizes_line = 0;
  for (size_t i = 0; i < L.n && !rc; i++) {
    struct kv kv[8];
    int nkv = 0;
    if ((rc = parse_kvs(c, &L.v[i], kv, 8, &nkv))) break;
    if (nkv == 0) continue;
    const char *first = kv[0].key;
    int no = L.v[i].no;
    if (!strcasecmp(first, "SwitchName") || !strcasecmp(first, "BlockName")) {
      int block = !strcasecmp(first, "BlockName");
      if (mode && mode != (block ? 2 : 1)) {
        rc = ferr(c, no, "%s in a file of the %s form (a file is either tree or block)", first,
                  mode == 1 ? "tree (SwitchName)" : "block (BlockName)");
        break;
      }
      mode = block ? 2 : 1;
      const char *nodes = NULL, *switches = NULL;
      for (int k = 1; k < nkv; k++) {
        if (!strcasecmp(kv[k].key, "Nodes"))
          nodes = kv[k].val;
        else if (!block && !strcasecmp(kv[k].key, "Switches"))
          switches = kv[k].val;
        else if (!block && !strcasecmp(kv[k].key, "LinkSpeed")) {
          unsigned long long v;
          if (parse_uint(kv[k].val, 1ULL << 62, &v)) {
            rc = ferr(c, no, "LinkSpeed='%.40s': expected a number", kv[k].val);
            break;
          }
        } else {
          rc = ferr(c, no, "unknown key '%s' (expected %s)", kv[k].key,
                    block ? "Nodes" : "Nodes, Switches or LinkSpeed");
          break;
        }
      }
      if (rc) break;
      if (nodes && switches) {
        rc = ferr(c, no, "switch '%.80s' has both Nodes= and Switches= (a line has one or the other)", kv[0].val);
        break;
      }
      if (block && !nodes) {
        rc = ferr(c, no, "block '%.80s' has no Nodes= (expected BlockName=NAME Nodes=HOSTLIST)", kv[0].val);
        break;
      }
      if (cs_topo_switch_index(t, kv[0].val) >= 0) {
        int prev = t->sw[cs_topo_switch_index(t, kv[0].val)].line;
        rc = ferr(c, no, "%s '%.80s' is defined twice (first at line %d)", block ? "block" : "switch", kv[0].val, prev);
        break;
      }
      if (strpbrk(kv[0].val, "[],")) {
        rc = ferr(c, no, "%s='%.80s': expected one name, not a hostlist", first, kv[0].val);
        break;
      }
      int sw = add_switch(t, kv[0].val, no);
      if (sw < 0) {
        rc = ferr(c, no, "out of memory");
        break;
      }
      if (block) {
        if (grow((void **)&blocks, &capblocks, nblocks, sizeof *blocks)) {
          rc = ferr(c, no, "out of memory");
          break;
        }
        blocks[nblocks++] = sw;
      }
      if (nodes && (rc = add_host_list(c, no, "Nodes", nodes, sw, 0))) break;
      if (switches && !rc) {
        if (grow((void **)&pend, &cappend, npend, sizeof *pend)) {
          rc = ferr(c, no, "out of memory");
          break;
        }
        pend[npend++] = (struct pending_sw){sw, no, switches};
      }
    } else if (!strcasecmp(first, "BlockSizes")) {
      if (mode == 1) {
        rc = ferr(c, no, "BlockSizes in a tree-form file (it belongs to the block form)");
        break;
      }
      mode = 2;
      if (nkv > 1) {
        rc = ferr(c, no, "unknown key '%s' after BlockSizes (expected BlockSizes=N,N,...)", kv[1].key);
        break;
      }
      if (nsizes) {
        rc = ferr(c, no, "BlockSizes given twice (first at line %d)", sizes_line);
        break;
      }
      sizes_line = no;
      char *s = kv[0].val;
      while (*s && !rc) {
        char *e = strchr(s, ',');
        if (e) *e = '\0';
        unsigned long long v;
        if (parse_uint(s, 1u << 30, &v) || v == 0)
          rc = ferr(c, no, "BlockSizes: '%.20s' is not a positive number", s);
        else if (nsizes == CS_TOPO_MAX_LEVELS - 1)
          rc = ferr(c, no, "BlockSizes: more than %d sizes", CS_TOPO_MAX_LEVELS - 2);
        else if (nsizes && (v <= sizes[nsizes - 1] || v % sizes[0] || ((v / sizes[0]) & (v / sizes[0] - 1))))
          rc = ferr(c, no, "BlockSizes: %llu is not the base size %llu times a power of two larger than the previous size", v, sizes[0]);
        else
          sizes[nsizes++] = v;
        if (!e) break;
        s = e + 1;
      }
    } else {
      rc = ferr(c, no, "unknown key '%s' (expected SwitchName=, BlockName= or BlockSizes= first on a line)", first);
    }
  }
  /* Switches= references, now that every switch is defined */
  for (size_t p = 0; p < npend && !rc; p++) rc = add_switch_refs(c, pend[p].line, pend[p].expr, pend[p].sw);
  /* block aggregation levels */
  if (!rc && mode == 2 && nsizes > 1) {
    int *prev = malloc((nblocks ? nblocks : 1) * sizeof *prev);
    if (!prev) rc = ferr(c, 0, "out of memory");
    for (size_t b = 0; b < nblocks && prev; b++) prev[b] = blocks[b];
    for (int k = 1; k < nsizes && !rc; k++) {
      size_t f = (size_t)(sizes[k] / sizes[0]);
      int cur = -1;
      for (size_t b = 0; b < nblocks && !rc; b++) {
        if (b % f == 0) {
          char nm[96];
          snprintf(nm, sizeof nm, "blocks%llu-%zu", sizes[k], b / f);
          if (cs_topo_switch_index(t, nm) >= 0) {
            rc = ferr(c, sizes_line, "block name '%s' clashes with an aggregate name", nm);
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
  }
  if (!rc && t->nsw == 0) rc = ferr(c, 0, "no SwitchName= or BlockName= line (expected a Slurm topology.conf)");
  free(pend);
  free(blocks);
  free_lines(&L);
  return rc;
}
