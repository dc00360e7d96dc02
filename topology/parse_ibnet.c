/* topology/parse_ibnet.c: ibnetdiscover output. A leaf is a switch with host channel
 * adapter (H-) peers; a host is the first word of its CA's description; leaves joined
 * through the switches directly attached to them form pods (union-find). Node ids are
 * found through a hash index: linear in the file. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

/* Descriptions and peer ids are kept as spans of the file's text, not copies: a port line
 * of ten bytes costs 12 bytes here, so memory stays a small multiple of the file. */
struct span {
  uint32_t off;
  uint16_t len;
};

struct ibnode {
  char guid[40];
  int is_switch;
  struct span desc;
  int line;
  size_t first_peer, npeers; /* into the peer array */
};
struct ibpeer {
  struct span guid, desc;
  uint8_t is_ca;
};

/* A span's bytes, tabs and CRs as spaces (as the line was read), NUL terminated. */
static void span_str(const char *text, struct span sp, char *out, size_t outlen) {
  size_t l = sp.len < outlen ? sp.len : outlen - 1;
  for (size_t k = 0; k < l; k++) {
    char ch = text[sp.off + k];
    out[k] = ch == '\t' || ch == '\r' ? ' ' : ch;
  }
  out[l] = '\0';
}

/* "S-0002c902004a1234" or "H-..." quoted at *s: copy the id, set type; *at: where it is. */
static int ib_id(char **s, char *guid, size_t glen, char *type, const char **at) {
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
  *at = p;
  *s = e + 1;
  return 0;
}

/* The first "quoted" string after '#' in the line copy buf (at text offset base), at
 * most 255 bytes: its span in the text (empty: none). */
static struct span ib_desc(const char *s, const char *buf, size_t base) {
  struct span sp = {0, 0};
  const char *h = strchr(s, '#');
  if (!h) return sp;
  const char *q = strchr(h, '"');
  if (!q) return sp;
  const char *e = strchr(q + 1, '"');
  if (!e) return sp;
  size_t l = (size_t)(e - q - 1);
  sp.off = (uint32_t)(base + (size_t)(q + 1 - buf));
  sp.len = (uint16_t)(l > 255 ? 255 : l);
  return sp;
}

static void first_word(const char *desc, char *out, size_t len) {
  while (*desc == ' ') desc++;
  size_t l = 0;
  while (desc[l] && desc[l] != ' ' && l + 1 < len) l++;
  memcpy(out, desc, l);
  out[l] = '\0';
}

static const char *node_key(const void *base, size_t i) { return ((const struct ibnode *)base)[i].guid; }

static int uf_find(int *p, int x) {
  while (p[x] != x) {
    p[x] = p[p[x]];
    x = p[x];
  }
  return x;
}

/* the fabric as read: its nodes (switches and CAs, by guid in idx) and the switches' peers */
struct ibgraph {
  struct cs_name_index idx;
  struct ibnode *nodes;
  struct ibpeer *peers;
  size_t nn, np, capn, capp;
};

/* A `Switch N "S-<guid>"`, `Ca N "H-<guid>"` or `Rt ...` line (s after the leading blanks;
 * buf the line, at lstart in the text): a new node, now the current one (*cur), or none
 * for a router. */
static int node_line(struct ctx *c, struct ibgraph *g, char *s, const char *buf, size_t lstart, int lineno, int *cur) {
  int is_sw = s[0] == 'S', is_rt = s[0] == 'R';
  s += is_sw ? 6 : 2;
  if (*s != ' ') return ferr(c, lineno, "expected 'Switch N \"S-<guid>\"' or 'Ca N \"H-<guid>\"'");
  while (*s == ' ') s++;
  while (isdigit((unsigned char)*s)) s++;
  char guid[40], ty;
  const char *at;
  if (ib_id(&s, guid, sizeof guid, &ty, &at) || (is_sw && ty != 'S') || (!is_sw && !is_rt && ty != 'H'))
    return ferr(c, lineno, "expected a quoted node id (\"S-<guid>\" for a Switch, \"H-<guid>\" for a Ca)");
  if (is_rt) {
    *cur = -1;
    return 0;
  }
  if (g->nn == g->capn) {
    size_t nc = g->capn ? g->capn * 2 : 32;
    struct ibnode *nv = realloc(g->nodes, nc * sizeof *nv);
    if (!nv) return ferr(c, lineno, "out of memory");
    g->nodes = nv;
    g->capn = nc;
  }
  struct ibnode *node = &g->nodes[g->nn];
  memset(node, 0, sizeof *node);
  snprintf(node->guid, sizeof node->guid, "%s", guid);
  node->is_switch = is_sw;
  node->line = lineno;
  node->first_peer = g->np;
  node->desc = ib_desc(s, buf, lstart);
  int prev = name_index_add(&g->idx, g->nodes, node_key, g->nn, node->guid, (int)g->nn);
  if (prev == -2) return ferr(c, lineno, "out of memory");
  if (prev >= 0) return ferr(c, lineno, "node %s described twice", guid);
  *cur = (int)g->nn++;
  return 0;
}

/* A `[port](...) "<peer id>"` line of node cur: the peer, kept when cur is a switch. */
static int port_line(struct ctx *c, struct ibgraph *g, char *s, const char *buf, size_t lstart, int lineno, int cur) {
  if (cur < 0) return ferr(c, lineno, "port line outside a Switch or Ca block");
  char *r = strchr(s, ']');
  if (!r) return ferr(c, lineno, "expected '[port]' at the start of a port line");
  s = r + 1;
  if (*s == '(') {
    r = strchr(s, ')');
    if (!r) return ferr(c, lineno, "unbalanced '(' in a port line");
    s = r + 1;
  }
  struct ibpeer pe;
  memset(&pe, 0, sizeof pe);
  char ty, pguid[40];
  const char *at;
  if (ib_id(&s, pguid, sizeof pguid, &ty, &at))
    return ferr(c, lineno, "expected the peer's quoted id (\"S-<guid>\" or \"H-<guid>\") after the port");
  if (ty == 'R') return 0;
  pe.is_ca = ty == 'H';
  pe.guid = (struct span){(uint32_t)(lstart + (size_t)(at - buf)), (uint16_t)strlen(pguid)};
  pe.desc = ib_desc(s, buf, lstart);
  if (!g->nodes[cur].is_switch) return 0;
  if (g->np == g->capp) {
    size_t nc = g->capp ? g->capp * 2 : 64;
    struct ibpeer *nv = realloc(g->peers, nc * sizeof *nv);
    if (!nv) return ferr(c, lineno, "out of memory");
    g->peers = nv;
    g->capp = nc;
  }
  g->peers[g->np++] = pe;
  g->nodes[cur].npeers++;
  return 0;
}

/* the text's nodes and their ports, line by line (the '#' descriptions matter here: the raw
 * lines are read, with tabs, CRs and NULs as blanks and lines cut at 1023 bytes) */
static int read_graph(struct ctx *c, const char *text, size_t len, struct ibgraph *g) {
  int rc = 0, cur = -1, lineno = 0;
  size_t off = 0;
  while (off < len && !rc) {
    size_t e = off;
    while (e < len && text[e] != '\n') e++;
    lineno++;
    size_t lstart = off, l = e - off;
    char buf[1024];
    if (l >= sizeof buf) l = sizeof buf - 1;
    memcpy(buf, text + off, l);
    buf[l] = '\0';
    for (size_t k = 0; k < l; k++)
      if (buf[k] == '\t' || buf[k] == '\r' || buf[k] == '\0') buf[k] = ' ';
    off = e < len ? e + 1 : e;
    char *s = buf;
    while (*s == ' ') s++;
    if (!*s || *s == '#') continue;
    if (!strncmp(s, "Switch", 6) || !strncmp(s, "Ca", 2) || !strncmp(s, "Rt", 2))
      rc = node_line(c, g, s, buf, lstart, lineno, &cur);
    else if (*s == '[')
      rc = port_line(c, g, s, buf, lstart, lineno, cur);
    else if (!strchr(s, '=')) /* vendid=, devid=, sysimgguid=, switchguid=, caguid= and other attribute lines */
      rc = ferr(c, lineno, "unexpected line '%.40s' (expected Switch, Ca, a port line or key=value)", s);
  }
  return rc;
}

/* Hosts and leaves: every CA on a switch port is a host (its description's first word; the
 * first leaf wins for a host with more HCAs) under that switch, which becomes a leaf of t;
 * swid[i]: node i's switch in t, -1 when it is not a leaf. */
static int add_leaves(struct ctx *c, const char *text, struct ibgraph *g, int *swid) {
  struct cs_topo *t = c->t;
  struct ibnode *nodes = g->nodes;
  for (size_t i = 0; i < g->nn; i++) {
    if (!nodes[i].is_switch) continue;
    for (size_t k = 0; k < nodes[i].npeers; k++) {
      struct ibpeer *pe = &g->peers[nodes[i].first_peer + k];
      if (!pe->is_ca) continue;
      char pguid[40], desc[256], host[256];
      span_str(text, pe->guid, pguid, sizeof pguid);
      int ca = name_index_find(&g->idx, nodes, node_key, pguid);
      span_str(text, ca >= 0 && nodes[ca].desc.len ? nodes[ca].desc : pe->desc, desc, sizeof desc);
      first_word(desc, host, sizeof host);
      if (!host[0]) return ferr(c, nodes[i].line, "CA %s has no description (the host name is its first word)", pguid);
      if (swid[i] < 0) {
        char nm[300], sdesc[256];
        span_str(text, nodes[i].desc, sdesc, sizeof sdesc);
        const char *d = sdesc[0] ? sdesc : nodes[i].guid;
        snprintf(nm, sizeof nm, "%s", d);
        if (cs_topo_switch_index(t, nm) >= 0) snprintf(nm, sizeof nm, "%.200s (%s)", d, nodes[i].guid);
        swid[i] = add_switch(t, nm, nodes[i].line);
        if (swid[i] < 0) return ferr(c, 0, "out of memory");
      }
      if (cs_topo_host_index(t, host) >= 0) continue; /* more HCAs: first leaf wins */
      if (t->nhost >= c->max_hosts) return ferr(c, nodes[i].line, "more than %zu hosts in the file (the limit)", c->max_hosts);
      int rc = charge(c, nodes[i].line, 1);
      if (rc) return rc;
      if (add_host(t, host, swid[i]) < 0) return ferr(c, 0, "out of memory");
    }
  }
  return 0;
}

/* Pods: leaves joined through the switches directly attached to them (union-find over par);
 * with more than one pod, each gets a switch pod0, pod1, ... as its leaves' parent. */
static int add_pods(struct ctx *c, const char *text, struct ibgraph *g, const int *swid, int *par) {
  struct cs_topo *t = c->t;
  size_t nn = g->nn;
  for (size_t i = 0; i < nn; i++) {
    if (!g->nodes[i].is_switch || swid[i] < 0) continue;
    for (size_t k = 0; k < g->nodes[i].npeers; k++) {
      struct ibpeer *pe = &g->peers[g->nodes[i].first_peer + k];
      if (pe->is_ca) continue;
      char pguid[40];
      span_str(text, pe->guid, pguid, sizeof pguid);
      int j = name_index_find(&g->idx, g->nodes, node_key, pguid);
      if (j < 0 || swid[j] >= 0) continue; /* unknown, or another leaf */
      int a = uf_find(par, (int)i), b = uf_find(par, j);
      if (a != b) par[a] = b;
    }
  }
  int rc = 0;
  size_t npods = 0;
  int *podsw = calloc(nn ? nn : 1, sizeof *podsw);
  if (!podsw) rc = ferr(c, 0, "out of memory");
  for (size_t i = 0; i < nn && !rc; i++) podsw[i] = -1;
  for (size_t i = 0; i < nn && !rc; i++)
    if (swid[i] >= 0 && podsw[uf_find(par, (int)i)] < 0) {
      podsw[uf_find(par, (int)i)] = 0;
      npods++;
    }
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
        if (podsw[r] < 0) {
          rc = ferr(c, 0, "out of memory");
          break;
        }
      }
      t->sw[swid[i]].parent = podsw[r];
    }
  }
  free(podsw);
  return rc;
}

int parse_ibnet(struct ctx *c, const char *text, size_t len) {
  struct lines L;
  if (split_lines(c, text, len, 0, 0, &L)) return -1; /* rejects NUL bytes */
  free_lines(&L);
  struct ibgraph g = {0};
  int rc = read_graph(c, text, len, &g);
  int *swid = NULL, *par = NULL;
  if (!rc) {
    swid = malloc((g.nn ? g.nn : 1) * sizeof *swid);
    par = malloc((g.nn ? g.nn : 1) * sizeof *par);
    if (!swid || !par) rc = ferr(c, 0, "out of memory");
  }
  for (size_t i = 0; i < g.nn && !rc; i++) {
    swid[i] = -1;
    par[i] = (int)i;
  }
  if (!rc) rc = add_leaves(c, text, &g, swid);
  if (!rc) rc = add_pods(c, text, &g, swid, par);
  if (!rc && c->t->nhost == 0) rc = ferr(c, 0, "no switch with host channel adapters found (expected ibnetdiscover output)");
  free(swid);
  free(par);
  free(g.nodes);
  free(g.peers);
  name_index_free(&g.idx);
  return rc;
}
