/* topology/topology.c: topology files (Slurm topology.conf tree and block forms, a plain
 * map, ibnetdiscover output, SLURM_TOPOLOGY_ADDR strings) into one switch tree, and the
 * crossing counts of NCCL's ring and double binary tree. The planner is in plan.c.
 * See include/collscope/topology.h. Written for untrusted input (fuzzed): every error
 * path frees what it allocated, sizes are bounded (CS_TOPO_MAX_BYTES of text, names of
 * CS_HOSTLIST_NAME_MAX bytes, CS_TOPO_MAX_LEVELS levels). */
#include "collscope/topology.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collscope/hostlist.h"

/* ------------------------------------------------------------------ errors */

struct ctx {
  struct cs_topo *t;
  const char *fname;
  char *err;
  size_t errlen;
};

static int ferr(struct ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ferr(struct ctx *c, int line, const char *fmt, ...) {
  if (c->err && c->errlen) {
    int k = line > 0 ? snprintf(c->err, c->errlen, "%s:%d: ", c->fname, line)
                     : snprintf(c->err, c->errlen, "%s: ", c->fname);
    if (k >= 0 && (size_t)k < c->errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  return -1;
}

/* ------------------------------------------------------------------ names */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

/* Open-addressing index (slot = entry index + 1, 0 = empty). */
static int tab_find(const int *tab, size_t cap, char *const *names, size_t stride, const char *name) {
  if (!cap) return -1;
  size_t m = cap - 1, i = (size_t)hash_str(name) & m;
  for (;;) {
    int e = tab[i];
    if (!e) return -1;
    const char *n = *(char *const *)((const char *)names + (size_t)(e - 1) * stride);
    if (!strcmp(n, name)) return e - 1;
    i = (i + 1) & m;
  }
}

static int tab_put(int **tab, size_t *cap, size_t count, char *const *names, size_t stride, int idx) {
  if ((count + 1) * 2 > *cap) {   /* grow and rehash entries 0..count-1 */
    size_t nc = *cap ? *cap * 2 : 64;
    while ((count + 1) * 2 > nc) nc *= 2;
    int *nt = calloc(nc, sizeof *nt);
    if (!nt) return -1;
    free(*tab);
    *tab = nt;
    *cap = nc;
    for (size_t k = 0; k < count; k++) {
      if ((int)k == idx) continue;
      const char *n = *(char *const *)((const char *)names + k * stride);
      size_t i = (size_t)hash_str(n) & (nc - 1);
      while (nt[i]) i = (i + 1) & (nc - 1);
      nt[i] = (int)k + 1;
    }
  }
  const char *n = *(char *const *)((const char *)names + (size_t)idx * stride);
  size_t i = (size_t)hash_str(n) & (*cap - 1);
  while ((*tab)[i]) i = (i + 1) & (*cap - 1);
  (*tab)[i] = idx + 1;
  return 0;
}

int cs_topo_host_index(const struct cs_topo *t, const char *host) {
  if (!t || !host || !t->host) return -1;
  return tab_find(t->htab, t->hcap, t->host, sizeof(char *), host);
}

int cs_topo_switch_index(const struct cs_topo *t, const char *name) {
  if (!t || !name || !t->sw) return -1;
  return tab_find(t->stab, t->scap, &t->sw[0].name, sizeof(struct cs_topo_switch), name);
}


static int add_switch(struct cs_topo *t, const char *name, int line) {
  if (t->nsw == t->swcap) {
    size_t nc = t->swcap ? t->swcap * 2 : 16;
    struct cs_topo_switch *n = realloc(t->sw, nc * sizeof *n);
    if (!n) return -1;
    t->sw = n;
    t->swcap = nc;
  }
  char *nm = strdup(name);
  if (!nm) return -1;
  t->sw[t->nsw] = (struct cs_topo_switch){.name = nm, .parent = -1, .level = 1, .line = line};
  if (tab_put(&t->stab, &t->scap, t->nsw, &t->sw[0].name, sizeof(struct cs_topo_switch), (int)t->nsw)) {
    free(nm);
    return -1;
  }
  return (int)t->nsw++;
}

static int add_host(struct cs_topo *t, const char *name, int leaf) {
  if (t->nhost == t->hostcap) {
    size_t nc = t->hostcap ? t->hostcap * 2 : 64;
    char **n = realloc(t->host, nc * sizeof *n);
    if (!n) return -1;
    t->host = n;
    int *l = realloc(t->host_leaf, nc * sizeof *l);
    if (!l) return -1;
    t->host_leaf = l;
    t->hostcap = nc;
  }
  char *nm = strdup(name);
  if (!nm) return -1;
  t->host[t->nhost] = nm;
  t->host_leaf[t->nhost] = leaf;
  if (tab_put(&t->htab, &t->hcap, t->nhost, t->host, sizeof(char *), (int)t->nhost)) {
    free(nm);
    return -1;
  }
  return (int)t->nhost++;
}

void cs_topo_free(struct cs_topo *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nsw; i++) free(t->sw[i].name);
  for (size_t i = 0; i < t->nhost; i++) free(t->host[i]);
  free(t->sw);
  free(t->host);
  free(t->host_leaf);
  free(t->htab);
  free(t->stab);
  free(t);
}

const char *cs_topo_format_name(int f) {
  switch (f) {
    case CS_TOPO_SLURM: return "slurm";
    case CS_TOPO_MAP: return "map";
    case CS_TOPO_IBNET: return "ibnetdiscover";
    case CS_TOPO_ADDR: return "slurm-topology-addr";
    default: return "auto";
  }
}

const char *cs_topo_level_name(int level) {
  static const char *names[CS_TOPO_MAX_LEVELS] = {"host", "leaf", "spine", "core",
                                                  "level4", "level5", "level6", "level7"};
  if (level < 0 || level >= CS_TOPO_MAX_LEVELS) return "?";
  return names[level];
}

int cs_topo_ancestor(const struct cs_topo *t, int host, int level) {
  if (level <= 0) return host;
  int s = t->host_leaf[host];
  for (int l = 1; l < level && t->sw[s].parent >= 0; l++) s = t->sw[s].parent;
  return s;
}

/* Levels, host counts, cycle check. */
static int finalize(struct ctx *c) {
  struct cs_topo *t = c->t;
  int maxdepth = 1;
  for (size_t i = 0; i < t->nsw; i++) t->sw[i].level = 1;
  for (size_t i = 0; i < t->nsw; i++) {
    int s = (int)i, depth = 1;
    while (t->sw[s].parent >= 0) {
      int p = t->sw[s].parent;
      depth++;
      if ((size_t)depth > t->nsw)
        return ferr(c, t->sw[i].line, "switch '%s' is its own ancestor (a cycle in Switches=)",
                    t->sw[i].name);
      if (t->sw[p].level < t->sw[s].level + 1) t->sw[p].level = t->sw[s].level + 1;
      s = p;
    }
    if (depth > maxdepth) maxdepth = depth;
  }
  if (maxdepth + 1 > CS_TOPO_MAX_LEVELS)
    return ferr(c, 0, "the switch tree is %d levels deep (at most %d supported)", maxdepth,
                CS_TOPO_MAX_LEVELS - 1);
  t->nlevels = 1 + maxdepth;
  /* hosts' depths decide the levels reported: the longest path of a leaf with hosts */
  int hdepth = 0;
  for (size_t h = 0; h < t->nhost; h++) {
    int s = t->host_leaf[h], d = 1;
    t->sw[s].nhosts++;
    while (t->sw[s].parent >= 0) { s = t->sw[s].parent; t->sw[s].nhosts++; d++; }
    if (d > hdepth) hdepth = d;
  }
  if (t->nhost) t->nlevels = 1 + hdepth;
  return 0;
}

static struct cs_topo *topo_new(int format) {
  struct cs_topo *t = calloc(1, sizeof *t);
  if (t) t->format = format;
  return t;
}

/* ------------------------------------------------------------------ lines */

struct line {
  char *s;      /* NUL terminated, comment removed */
  int no;       /* first physical line */
};

/* Split text into logical lines: '\r' dropped, '#' comments removed (outside quotes when
 * `quotes`), trailing backslash joins the next line when `cont`. */
static int split_lines(struct ctx *c, const char *text, size_t len, int quotes, int cont,
                       struct line **out, size_t *nout) {
  struct line *v = NULL;
  size_t n = 0, cap = 0;
  char *cur = NULL;
  size_t curlen = 0;
  int curno = 0, no = 0;
  size_t i = 0;
  while (i < len) {
    size_t e = i;
    while (e < len && text[e] != '\n') e++;
    no++;
    /* strip comment */
    size_t end = i;
    int inq = 0;
    for (size_t k = i; k < e; k++) {
      char ch = text[k];
      if (ch == '\0') {
        free(cur);
        for (size_t q = 0; q < n; q++) free(v[q].s);
        free(v);
        return ferr(c, no, "NUL byte in the file (expected text)");
      }
      if (quotes && ch == '"') inq = !inq;
      if (ch == '#' && !inq) break;
      end = k + 1;
    }
    while (end > i && (text[end - 1] == '\r' || text[end - 1] == ' ' || text[end - 1] == '\t')) end--;
    int more = 0;
    if (cont && end > i && text[end - 1] == '\\') { more = 1; end--; }
    if (!cur) curno = no;
    char *nc = realloc(cur, curlen + (end - i) + 2);
    if (!nc) { free(cur); for (size_t q = 0; q < n; q++) free(v[q].s); free(v); return ferr(c, no, "out of memory"); }
    cur = nc;
    memcpy(cur + curlen, text + i, end - i);
    curlen += end - i;
    if (more) cur[curlen++] = ' ';
    cur[curlen] = '\0';
    i = e < len ? e + 1 : e;
    if (more && i < len) continue;
    for (size_t k = 0; k < curlen; k++) if (cur[k] == '\r' || cur[k] == '\t') cur[k] = ' ';
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      struct line *nv = realloc(v, ncap * sizeof *nv);
      if (!nv) { free(cur); for (size_t q = 0; q < n; q++) free(v[q].s); free(v); return ferr(c, no, "out of memory"); }
      v = nv;
      cap = ncap;
    }
    v[n++] = (struct line){cur, curno};
    cur = NULL;
    curlen = 0;
  }
  free(cur);
  *out = v;
  *nout = n;
  return 0;
}

static void free_lines(struct line *v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i].s);
  free(v);
}

static int blank(const char *s) {
  while (*s == ' ') s++;
  return *s == '\0';
}

/* ------------------------------------------------------------------ Slurm */

struct kv { char key[32]; char *val; };

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

static int expand(struct ctx *c, int line, const char *what, const char *expr, char ***h, size_t *n) {
  char e[200];
  if (cs_hostlist_expand(expr, h, n, e, sizeof e))
    return ferr(c, line, "bad hostlist in %s='%.80s': %s", what, expr, e);
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

struct pending_sw { int sw; int line; char *expr; };

static int parse_slurm(struct ctx *c, const char *text, size_t len) {
  struct cs_topo *t = c->t;
  struct line *ln;
  size_t nl;
  if (split_lines(c, text, len, 1, 1, &ln, &nl)) return -1;
  struct pending_sw *pend = NULL;
  size_t npend = 0;
  int rc = 0, mode = 0; /* 1 tree, 2 block */
  int *blocks = NULL;
  size_t nblocks = 0;
  unsigned long long sizes[CS_TOPO_MAX_LEVELS];
  int nsizes = 0, sizes_line = 0;
  for (size_t i = 0; i < nl && !rc; i++) {
    if (blank(ln[i].s)) continue;
    struct kv kv[8];
    int nkv = 0;
    if ((rc = parse_kvs(c, &ln[i], kv, 8, &nkv))) break;
    if (nkv == 0) continue;
    const char *first = kv[0].key;
    int no = ln[i].no;
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
        if (!strcasecmp(kv[k].key, "Nodes")) nodes = kv[k].val;
        else if (!block && !strcasecmp(kv[k].key, "Switches")) switches = kv[k].val;
        else if (!block && !strcasecmp(kv[k].key, "LinkSpeed")) {
          unsigned long long v;
          if (parse_uint(kv[k].val, 1ULL << 62, &v)) { rc = ferr(c, no, "LinkSpeed='%.40s': expected a number", kv[k].val); break; }
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
      if (block && !nodes) { rc = ferr(c, no, "block '%.80s' has no Nodes= (expected BlockName=NAME Nodes=HOSTLIST)", kv[0].val); break; }
      if (cs_topo_switch_index(t, kv[0].val) >= 0) {
        int prev = t->sw[cs_topo_switch_index(t, kv[0].val)].line;
        rc = ferr(c, no, "%s '%.80s' is defined twice (first at line %d)", block ? "block" : "switch", kv[0].val, prev);
        break;
      }
      if (strpbrk(kv[0].val, "[],")) { rc = ferr(c, no, "%s='%.80s': expected one name, not a hostlist", first, kv[0].val); break; }
      int sw = add_switch(t, kv[0].val, no);
      if (sw < 0) { rc = ferr(c, no, "out of memory"); break; }
      if (block) {
        int *nb = realloc(blocks, (nblocks + 1) * sizeof *nb);
        if (!nb) { rc = ferr(c, no, "out of memory"); break; }
        blocks = nb;
        blocks[nblocks++] = sw;
      }
      if (nodes) {
        char **h;
        size_t n;
        if ((rc = expand(c, no, "Nodes", nodes, &h, &n))) break;
        for (size_t k = 0; k < n && !rc; k++) {
          int prev = cs_topo_host_index(t, h[k]);
          if (prev >= 0)
            rc = ferr(c, no, "host '%s' is already under '%s' (line %d)", h[k], t->sw[t->host_leaf[prev]].name,
                      t->sw[t->host_leaf[prev]].line);
          else if (add_host(t, h[k], sw) < 0)
            rc = ferr(c, no, "out of memory");
        }
        cs_hostlist_free(h, n);
      }
      if (switches && !rc) {
        struct pending_sw *np = realloc(pend, (npend + 1) * sizeof *np);
        if (!np) { rc = ferr(c, no, "out of memory"); break; }
        pend = np;
        pend[npend] = (struct pending_sw){sw, no, strdup(switches)};
        if (!pend[npend].expr) { rc = ferr(c, no, "out of memory"); break; }
        npend++;
      }
    } else if (!strcasecmp(first, "BlockSizes")) {
      if (mode == 1) { rc = ferr(c, no, "BlockSizes in a tree-form file (it belongs to the block form)"); break; }
      mode = 2;
      if (nkv > 1) { rc = ferr(c, no, "unknown key '%s' after BlockSizes (expected BlockSizes=N,N,...)", kv[1].key); break; }
      if (nsizes) { rc = ferr(c, no, "BlockSizes given twice (first at line %d)", sizes_line); break; }
      sizes_line = no;
      char *s = kv[0].val;
      while (*s && !rc) {
        char *e = strchr(s, ',');
        if (e) *e = '\0';
        unsigned long long v;
        if (parse_uint(s, 1u << 30, &v) || v == 0) rc = ferr(c, no, "BlockSizes: '%.20s' is not a positive number", s);
        else if (nsizes == CS_TOPO_MAX_LEVELS - 1) rc = ferr(c, no, "BlockSizes: more than %d sizes", CS_TOPO_MAX_LEVELS - 2);
        else if (nsizes && (v <= sizes[nsizes - 1] || v % sizes[0] || ((v / sizes[0]) & (v / sizes[0] - 1))))
          rc = ferr(c, no, "BlockSizes: %llu is not the base size %llu times a power of two larger than the previous size", v, sizes[0]);
        else sizes[nsizes++] = v;
        if (!e) break;
        s = e + 1;
      }
    } else {
      rc = ferr(c, no, "unknown key '%s' (expected SwitchName=, BlockName= or BlockSizes= first on a line)", first);
    }
  }
  /* Switches= references, now that every switch is defined */
  for (size_t p = 0; p < npend && !rc; p++) {
    char **h;
    size_t n;
    if ((rc = expand(c, pend[p].line, "Switches", pend[p].expr, &h, &n))) break;
    for (size_t k = 0; k < n && !rc; k++) {
      int ch = cs_topo_switch_index(t, h[k]);
      if (ch < 0) rc = ferr(c, pend[p].line, "switch '%s' in Switches= is not defined (expected a SwitchName=%s line)", h[k], h[k]);
      else if (ch == pend[p].sw) rc = ferr(c, pend[p].line, "switch '%s' lists itself in Switches=", h[k]);
      else if (t->sw[ch].parent < 0) t->sw[ch].parent = pend[p].sw;
      /* else: a switch under several parents (redundant uplinks of a fat tree, as in
       * Slurm's own example): the first parent in file order places it; the others
       * lead to the same hosts, so the order of hosts does not change */
    }
    cs_hostlist_free(h, n);
  }
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
          if (cs_topo_switch_index(t, nm) >= 0) { rc = ferr(c, sizes_line, "block name '%s' clashes with an aggregate name", nm); break; }
          cur = add_switch(t, nm, 0);
          if (cur < 0) { rc = ferr(c, 0, "out of memory"); break; }
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
  for (size_t p = 0; p < npend; p++) free(pend[p].expr);
  free(pend);
  free(blocks);
  free_lines(ln, nl);
  return rc;
}

/* ------------------------------------------------------------------ plain map */

static int parse_map(struct ctx *c, const char *text, size_t len) {
  struct cs_topo *t = c->t;
  struct line *ln;
  size_t nl;
  if (split_lines(c, text, len, 0, 0, &ln, &nl)) return -1;
  int rc = 0;
  for (size_t i = 0; i < nl && !rc; i++) {
    char *tok[CS_TOPO_MAX_LEVELS + 1];
    int nt = 0, no = ln[i].no;
    char *save = NULL;
    for (char *p = strtok_r(ln[i].s, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
      if (nt == CS_TOPO_MAX_LEVELS) { rc = ferr(c, no, "more than %d switch levels (expected 'host leaf [spine [core ...]]')", CS_TOPO_MAX_LEVELS - 1); break; }
      tok[nt++] = p;
    }
    if (rc || nt == 0) continue;
    if (nt < 2) { rc = ferr(c, no, "expected 'host leaf [spine [core ...]]', got only '%.80s'", tok[0]); break; }
    int ids[CS_TOPO_MAX_LEVELS];
    for (int k = 1; k < nt && !rc; k++) {
      if (strlen(tok[k]) > CS_HOSTLIST_NAME_MAX) { rc = ferr(c, no, "switch name longer than %u bytes", CS_HOSTLIST_NAME_MAX); break; }
      int s = cs_topo_switch_index(t, tok[k]);
      if (s < 0) {
        s = add_switch(t, tok[k], no);
        if (s < 0) { rc = ferr(c, no, "out of memory"); break; }
        t->sw[s].level = k;   /* position in the path, checked below */
      } else if (t->sw[s].level != k) {
        rc = ferr(c, no, "'%s' is a level-%d switch at line %d but level %d here", tok[k], t->sw[s].level, t->sw[s].line, k);
        break;
      }
      for (int q = 1; q < k && !rc; q++)
        if (ids[q] == s) rc = ferr(c, no, "switch '%s' appears twice in one path", tok[k]);
      ids[k] = s;
    }
    for (int k = 1; k < nt && !rc; k++) {
      int s = ids[k], want = k + 1 < nt ? ids[k + 1] : -1;
      if (t->sw[s].line != no && t->sw[s].parent != want) {
        rc = ferr(c, no, "'%s' is under '%s' at line %d but under '%s' here", tok[k],
                  t->sw[s].parent >= 0 ? t->sw[t->sw[s].parent].name : "(nothing)", t->sw[s].line,
                  want >= 0 ? t->sw[want].name : "(nothing)");
        break;
      }
      t->sw[s].parent = want;
    }
    if (rc) break;
    char **h;
    size_t n;
    if ((rc = expand(c, no, "host", tok[0], &h, &n))) break;
    for (size_t k = 0; k < n && !rc; k++) {
      int prev = cs_topo_host_index(t, h[k]);
      if (prev >= 0) rc = ferr(c, no, "host '%s' is listed twice (already under '%s')", h[k], t->sw[t->host_leaf[prev]].name);
      else if (add_host(t, h[k], ids[1]) < 0) rc = ferr(c, no, "out of memory");
    }
    cs_hostlist_free(h, n);
  }
  if (!rc && t->nhost == 0) rc = ferr(c, 0, "no hosts (expected lines 'host leaf [spine ...]')");
  free_lines(ln, nl);
  return rc;
}

/* ------------------------------------------------------------------ ibnetdiscover */

struct ibnode {
  char guid[40];
  int is_switch;
  char desc[256];
  int line;
  size_t first_peer, npeers;   /* into the peer array */
};
struct ibpeer { char guid[40]; int is_ca; char desc[256]; };

/* "S-0002c902004a1234" or "H-..." quoted at *s: copy the id, set type. */
static int ib_id(char **s, char *guid, size_t glen, char *type) {
  char *p = *s;
  while (*p == ' ') p++;
  if (*p != '"') return -1;
  p++;
  if ((p[0] != 'S' && p[0] != 'H' && p[0] != 'R') || p[1] != '-') return -1;
  *type = p[0];
  char *e = strchr(p, '"');
  if (!e || (size_t)(e - p) >= glen || e - p < 3) return -1;
  memcpy(guid, p, (size_t)(e - p));
  guid[e - p] = '\0';
  *s = e + 1;
  return 0;
}

/* first "quoted" string after '#' */
static void ib_desc(const char *s, char *out, size_t len) {
  out[0] = '\0';
  const char *h = strchr(s, '#');
  if (!h) return;
  const char *q = strchr(h, '"');
  if (!q) return;
  const char *e = strchr(q + 1, '"');
  if (!e) return;
  size_t l = (size_t)(e - q - 1);
  if (l >= len) l = len - 1;
  memcpy(out, q + 1, l);
  out[l] = '\0';
}

static void first_word(const char *desc, char *out, size_t len) {
  while (*desc == ' ') desc++;
  size_t l = 0;
  while (desc[l] && desc[l] != ' ' && l + 1 < len) l++;
  memcpy(out, desc, l);
  out[l] = '\0';
}

static int find_node(struct ibnode *v, size_t n, const char *guid) {
  for (size_t i = 0; i < n; i++) if (!strcmp(v[i].guid, guid)) return (int)i;
  return -1;
}

static int uf_find(int *p, int x) {
  while (p[x] != x) { p[x] = p[p[x]]; x = p[x]; }
  return x;
}

static int parse_ibnet(struct ctx *c, const char *text, size_t len) {
  struct cs_topo *t = c->t;
  struct line *ln;
  size_t nl;
  if (split_lines(c, text, len, 0, 0, &ln, &nl)) return -1;
  /* comments were stripped by split_lines: re-read raw lines for the '#' descriptions */
  struct ibnode *nodes = NULL;
  struct ibpeer *peers = NULL;
  size_t nn = 0, np = 0, capn = 0, capp = 0;
  int rc = 0, cur = -1;
  size_t off = 0;
  int lineno = 0;
  while (off < len && !rc) {
    size_t e = off;
    while (e < len && text[e] != '\n') e++;
    lineno++;
    size_t l = e - off;
    char buf[1024];
    if (l >= sizeof buf) l = sizeof buf - 1;
    memcpy(buf, text + off, l);
    buf[l] = '\0';
    for (size_t k = 0; k < l; k++) if (buf[k] == '\t' || buf[k] == '\r' || buf[k] == '\0') buf[k] = ' ';
    off = e < len ? e + 1 : e;
    char *s = buf;
    while (*s == ' ') s++;
    if (!*s || *s == '#') continue;
    if (!strncmp(s, "Switch", 6) || !strncmp(s, "Ca", 2) || !strncmp(s, "Rt", 2)) {
      int is_sw = s[0] == 'S', is_rt = s[0] == 'R';
      s += is_sw ? 6 : 2;
      if (*s != ' ') { rc = ferr(c, lineno, "expected 'Switch N \"S-<guid>\"' or 'Ca N \"H-<guid>\"'"); break; }
      while (*s == ' ') s++;
      while (isdigit((unsigned char)*s)) s++;
      char guid[40], ty;
      if (ib_id(&s, guid, sizeof guid, &ty) || (is_sw && ty != 'S') || (!is_sw && !is_rt && ty != 'H')) {
        rc = ferr(c, lineno, "expected a quoted node id (\"S-<guid>\" for a Switch, \"H-<guid>\" for a Ca)");
        break;
      }
      if (is_rt) { cur = -1; continue; }
      if (find_node(nodes, nn, guid) >= 0) { rc = ferr(c, lineno, "node %s described twice", guid); break; }
      if (nn == capn) {
        size_t nc = capn ? capn * 2 : 32;
        struct ibnode *nv = realloc(nodes, nc * sizeof *nv);
        if (!nv) { rc = ferr(c, lineno, "out of memory"); break; }
        nodes = nv;
        capn = nc;
      }
      struct ibnode *nd = &nodes[nn];
      memset(nd, 0, sizeof *nd);
      snprintf(nd->guid, sizeof nd->guid, "%s", guid);
      nd->is_switch = is_sw;
      nd->line = lineno;
      nd->first_peer = np;
      ib_desc(s, nd->desc, sizeof nd->desc);
      cur = (int)nn++;
      continue;
    }
    if (*s == '[') {
      if (cur < 0) { rc = ferr(c, lineno, "port line outside a Switch or Ca block"); break; }
      char *r = strchr(s, ']');
      if (!r) { rc = ferr(c, lineno, "expected '[port]' at the start of a port line"); break; }
      s = r + 1;
      if (*s == '(') { r = strchr(s, ')'); if (!r) { rc = ferr(c, lineno, "unbalanced '(' in a port line"); break; } s = r + 1; }
      struct ibpeer pe;
      memset(&pe, 0, sizeof pe);
      char ty;
      if (ib_id(&s, pe.guid, sizeof pe.guid, &ty)) {
        rc = ferr(c, lineno, "expected the peer's quoted id (\"S-<guid>\" or \"H-<guid>\") after the port");
        break;
      }
      if (ty == 'R') continue;
      pe.is_ca = ty == 'H';
      ib_desc(s, pe.desc, sizeof pe.desc);
      if (nodes[cur].is_switch) {
        if (np == capp) {
          size_t nc = capp ? capp * 2 : 64;
          struct ibpeer *nv = realloc(peers, nc * sizeof *nv);
          if (!nv) { rc = ferr(c, lineno, "out of memory"); break; }
          peers = nv;
          capp = nc;
        }
        peers[np++] = pe;
        nodes[cur].npeers++;
      }
      continue;
    }
    /* vendid=, devid=, sysimgguid=, switchguid=, caguid= and other attribute lines */
    if (strchr(s, '=')) continue;
    rc = ferr(c, lineno, "unexpected line '%.40s' (expected Switch, Ca, a port line or key=value)", s);
  }
  (void)ln;
  /* hosts and leaves */
  int *swid = NULL, *par = NULL;
  if (!rc) {
    swid = malloc((nn ? nn : 1) * sizeof *swid);
    par = malloc((nn ? nn : 1) * sizeof *par);
    if (!swid || !par) rc = ferr(c, 0, "out of memory");
  }
  for (size_t i = 0; i < nn && !rc; i++) { swid[i] = -1; par[i] = (int)i; }
  for (size_t i = 0; i < nn && !rc; i++) {
    if (!nodes[i].is_switch) continue;
    for (size_t k = 0; k < nodes[i].npeers && !rc; k++) {
      struct ibpeer *pe = &peers[nodes[i].first_peer + k];
      if (!pe->is_ca) continue;
      int ca = find_node(nodes, nn, pe->guid);
      char host[256];
      first_word(ca >= 0 && nodes[ca].desc[0] ? nodes[ca].desc : pe->desc, host, sizeof host);
      if (!host[0]) { rc = ferr(c, nodes[i].line, "CA %s has no description (the host name is its first word)", pe->guid); break; }
      if (swid[i] < 0) {
        char nm[300];
        const char *d = nodes[i].desc[0] ? nodes[i].desc : nodes[i].guid;
        snprintf(nm, sizeof nm, "%s", d);
        if (cs_topo_switch_index(t, nm) >= 0) snprintf(nm, sizeof nm, "%.200s (%s)", d, nodes[i].guid);
        swid[i] = add_switch(t, nm, nodes[i].line);
        if (swid[i] < 0) { rc = ferr(c, 0, "out of memory"); break; }
      }
      if (cs_topo_host_index(t, host) >= 0) continue;   /* more HCAs: first leaf wins */
      if (add_host(t, host, swid[i]) < 0) rc = ferr(c, 0, "out of memory");
    }
  }
  /* pods: leaves joined through the switches directly attached to them */
  if (!rc) {
    for (size_t i = 0; i < nn; i++) {
      if (!nodes[i].is_switch || swid[i] < 0) continue;
      for (size_t k = 0; k < nodes[i].npeers; k++) {
        struct ibpeer *pe = &peers[nodes[i].first_peer + k];
        if (pe->is_ca) continue;
        int j = find_node(nodes, nn, pe->guid);
        if (j < 0 || swid[j] >= 0) continue;   /* unknown, or another leaf */
        int a = uf_find(par, (int)i), b = uf_find(par, j);
        if (a != b) par[a] = b;
      }
    }
    size_t npods = 0;
    int *podsw = calloc(nn ? nn : 1, sizeof *podsw);
    if (!podsw) rc = ferr(c, 0, "out of memory");
    for (size_t i = 0; i < nn && !rc; i++) podsw[i] = -1;
    for (size_t i = 0; i < nn && !rc; i++)
      if (swid[i] >= 0 && podsw[uf_find(par, (int)i)] < 0) { podsw[uf_find(par, (int)i)] = 0; npods++; }
    if (!rc && npods > 1) {
      size_t k = 0;
      for (size_t i = 0; i < nn; i++) podsw[i] = -1;
      for (size_t i = 0; i < nn && !rc; i++) {
        if (swid[i] < 0) continue;
        int r = uf_find(par, (int)i);
        if (podsw[r] < 0) {
          char nm[64];
          snprintf(nm, sizeof nm, "pod%zu", k++);
          podsw[r] = add_switch(t, nm, 0);
          if (podsw[r] < 0) { rc = ferr(c, 0, "out of memory"); break; }
        }
        t->sw[swid[i]].parent = podsw[r];
      }
    }
    free(podsw);
  }
  if (!rc && t->nhost == 0) rc = ferr(c, 0, "no switch with host channel adapters found (expected ibnetdiscover output)");
  free(swid);
  free(par);
  free(nodes);
  free(peers);
  free_lines(ln, nl);
  return rc;
}

/* ------------------------------------------------------------------ entry points */

static int detect(const char *text, size_t len) {
  size_t i = 0;
  while (i < len) {
    size_t e = i;
    while (e < len && text[e] != '\n') e++;
    const char *s = text + i;
    size_t l = e - i;
    while (l && (*s == ' ' || *s == '\t')) { s++; l--; }
    if (l >= 13 && !strncmp(s, "# Topology file", 15 > l ? l : 15)) return CS_TOPO_IBNET;
    if (l && *s != '#') {
      if ((l > 7 && !strncmp(s, "Switch", 6) && (s[6] == ' ' || s[6] == '\t')) ||
          (l > 3 && !strncmp(s, "Ca", 2) && (s[2] == ' ' || s[2] == '\t')))
        return CS_TOPO_IBNET;
      if ((l >= 11 && !strncasecmp(s, "SwitchName=", 11)) || (l >= 10 && !strncasecmp(s, "BlockName=", 10)) ||
          (l >= 11 && !strncasecmp(s, "BlockSizes=", 11)))
        return CS_TOPO_SLURM;
      if (memchr(s, '=', l)) return CS_TOPO_SLURM;
      return CS_TOPO_MAP;
    }
    i = e + 1;
  }
  return CS_TOPO_MAP;
}

int cs_topo_parse(const char *text, size_t len, const char *fname, int format, struct cs_topo **out,
                  char *err, size_t errlen) {
  struct ctx c = {NULL, fname ? fname : "(topology)", err, errlen};
  if (err && errlen) err[0] = '\0';
  if (out) *out = NULL;
  if (!out || (!text && len)) return ferr(&c, 0, "invalid argument");
  if (len > CS_TOPO_MAX_BYTES) return ferr(&c, 0, "file larger than %u bytes", CS_TOPO_MAX_BYTES);
  if (format == CS_TOPO_AUTO) format = detect(text, len);
  c.t = topo_new(format);
  if (!c.t) return ferr(&c, 0, "out of memory");
  int rc;
  switch (format) {
    case CS_TOPO_SLURM: rc = parse_slurm(&c, text, len); break;
    case CS_TOPO_MAP: rc = parse_map(&c, text, len); break;
    case CS_TOPO_IBNET: rc = parse_ibnet(&c, text, len); break;
    default: rc = ferr(&c, 0, "unknown format %d", format);
  }
  if (!rc) rc = finalize(&c);
  if (rc) { cs_topo_free(c.t); return -1; }
  *out = c.t;
  return 0;
}

int cs_topo_load(const char *path, int format, struct cs_topo **out, char *err, size_t errlen) {
  if (out) *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (err && errlen) snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      if (cap >= CS_TOPO_MAX_BYTES + 1) break;
      size_t nc = cap ? cap * 2 : 65536;
      char *nb = realloc(buf, nc);
      if (!nb) { free(buf); fclose(f); if (err && errlen) snprintf(err, errlen, "%s: out of memory", path); return -1; }
      buf = nb;
      cap = nc;
    }
    size_t r = fread(buf + len, 1, cap - len, f);
    len += r;
    if (r == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    if (err && errlen) snprintf(err, errlen, "%s: read error", path);
    return -1;
  }
  int rc = cs_topo_parse(buf, len, path, format, out, err, errlen);
  free(buf);
  return rc;
}

int cs_topo_from_addrs(const char *const *addrs, size_t n, const char *pattern, struct cs_topo **out,
                       char *err, size_t errlen) {
  struct ctx c = {NULL, "SLURM_TOPOLOGY_ADDR", err, errlen};
  if (err && errlen) err[0] = '\0';
  *out = NULL;
  c.t = topo_new(CS_TOPO_ADDR);
  if (!c.t) return ferr(&c, 0, "out of memory");
  int rc = 0;
  char pat[CS_TOPO_MAX_LEVELS][16];
  int npat = 0;
  if (pattern && *pattern) {
    const char *p = pattern;
    while (*p && npat < CS_TOPO_MAX_LEVELS) {
      const char *e = strchr(p, '.');
      size_t l = e ? (size_t)(e - p) : strlen(p);
      snprintf(pat[npat++], sizeof pat[0], "%.*s", (int)(l < 15 ? l : 15), p);
      if (!e) break;
      p = e + 1;
    }
  }
  for (size_t r = 0; r < n && !rc; r++) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", addrs[r] ? addrs[r] : "");
    char *comp[CS_TOPO_MAX_LEVELS];
    int nc = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, ".", &save); p; p = strtok_r(NULL, ".", &save)) {
      if (nc == CS_TOPO_MAX_LEVELS) { rc = ferr(&c, 0, "rank %zu: '%s' has more than %d components", r, addrs[r], CS_TOPO_MAX_LEVELS); break; }
      comp[nc++] = p;
    }
    if (rc) break;
    if (nc == 0) { rc = ferr(&c, 0, "rank %zu: empty address", r); break; }
    if (npat && npat != nc) { rc = ferr(&c, 0, "rank %zu: '%s' has %d components, SLURM_TOPOLOGY_ADDR_PATTERN has %d", r, addrs[r], nc, npat); break; }
    if (npat && strcmp(pat[nc - 1], "node")) { rc = ferr(&c, 0, "SLURM_TOPOLOGY_ADDR_PATTERN does not end in 'node'"); break; }
    /* switches root..leaf = comp[0..nc-2] */
    int parent = -1, leaf = -1;
    if (nc == 1) {
      leaf = cs_topo_switch_index(c.t, "(all)");
      if (leaf < 0 && (leaf = add_switch(c.t, "(all)", 0)) < 0) { rc = ferr(&c, 0, "out of memory"); break; }
    }
    for (int k = 0; k + 1 < nc && !rc; k++) {
      int s = cs_topo_switch_index(c.t, comp[k]);
      if (s < 0) {
        if ((s = add_switch(c.t, comp[k], 0)) < 0) { rc = ferr(&c, 0, "out of memory"); break; }
        c.t->sw[s].parent = parent;
      } else if (c.t->sw[s].parent != parent) {
        rc = ferr(&c, 0, "rank %zu: switch '%s' has two different parents", r, comp[k]);
        break;
      }
      parent = leaf = s;
    }
    if (rc) break;
    int h = cs_topo_host_index(c.t, comp[nc - 1]);
    if (h >= 0) {
      if (c.t->host_leaf[h] != leaf) rc = ferr(&c, 0, "rank %zu: host '%s' under two different switches", r, comp[nc - 1]);
    } else if (add_host(c.t, comp[nc - 1], leaf) < 0) {
      rc = ferr(&c, 0, "out of memory");
    }
  }
  if (!rc) rc = finalize(&c);
  if (rc) { cs_topo_free(c.t); return -1; }
  *out = c.t;
  return 0;
}
