/* topology/topology.c: the switch tree a topology file describes (struct cs_topo: its
 * switches and hosts, their name indexes, levels and host counts), the caps and work
 * budget every parser charges, and the entry points (format detection, parse, load,
 * SLURM_TOPOLOGY_ADDR strings). The parsers are parse_slurm.c, parse_map.c and
 * parse_ibnet.c; the planner is plan.c. See include/collscope/topology.h. Written for
 * untrusted input (fuzzed): every error path frees what it allocated, sizes are bounded
 * (CS_TOPO_MAX_BYTES of text, CS_TOPO_MAX_HOSTS hosts, CS_TOPO_MAX_SWITCH_REFS Switches=
 * names, names of CS_HOSTLIST_NAME_MAX bytes, CS_TOPO_MAX_LEVELS levels) and every step
 * is linear in the file's size plus those counts. */
#include "topo_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collscope/hostlist.h"

/* ------------------------------------------------------------------ errors, budget */

int ferr(struct ctx *c, int line, const char *fmt, ...) {
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

int charge(struct ctx *c, int line, size_t units) {
  if (!c->max_work) return 0;
  if (units > c->max_work - c->work)
    return ferr(c, line,
                "past the work budget of %zu units (a unit: a host, a Switches= name or %u bytes of text); "
                "plan this topology outside the job with `collscope topo plan` or `collscope run --topology`",
                c->max_work, CS_TOPO_WORK_BYTES);
  c->work += units;
  return 0;
}

/* ------------------------------------------------------------------ names */

static const char *host_key(const void *base, size_t i) { return ((char *const *)base)[i]; }
static const char *switch_key(const void *base, size_t i) { return ((const struct cs_topo_switch *)base)[i].name; }

int cs_topo_host_index(const struct cs_topo *t, const char *host) {
  if (!t || !host || !t->host) return -1;
  return name_index_find(&t->hidx, t->host, host_key, host);
}

int cs_topo_switch_index(const struct cs_topo *t, const char *name) {
  if (!t || !name || !t->sw) return -1;
  return name_index_find(&t->sidx, t->sw, switch_key, name);
}

/* Names are copied into chunks that never move (one malloc per 64 KiB, not per name),
 * freed together by cs_topo_free. */
struct cs_name_chunk {
  struct cs_name_chunk *next;
  size_t used, cap;
  char bytes[];
};

static char *store_name(struct cs_topo *t, const char *name, size_t len) {
  struct cs_name_chunk *c = t->names;
  if (!c || c->cap - c->used < len + 1) {
    size_t cap = len + 1 > 65536 - sizeof *c ? len + 1 : 65536 - sizeof *c;
    if (!(c = malloc(sizeof *c + cap))) return NULL;
    c->next = t->names;
    c->used = 0;
    c->cap = cap;
    t->names = c;
  }
  char *p = c->bytes + c->used;
  memcpy(p, name, len);
  p[len] = '\0';
  c->used += len + 1;
  return p;
}

int add_switch(struct cs_topo *t, const char *name, int line) {
  if (t->nsw == t->swcap) {
    size_t nc = t->swcap ? t->swcap * 2 : 16;
    struct cs_topo_switch *n = realloc(t->sw, nc * sizeof *n);
    if (!n) return -1;
    t->sw = n;
    t->swcap = nc;
  }
  char *nm = store_name(t, name, strlen(name));
  if (!nm) return -1;
  t->sw[t->nsw] = (struct cs_topo_switch){.name = nm, .parent = -1, .level = 1, .line = line};
  /* callers check for a duplicate first; the index keeps the first of two equal names */
  if (name_index_add(&t->sidx, t->sw, switch_key, t->nsw, nm, (int)t->nsw) == -2) return -1;
  return (int)t->nsw++;
}

int add_host_once(struct cs_topo *t, const char *name, size_t len, int leaf) {
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
  int prev = name_index_add(&t->hidx, t->host, host_key, t->nhost, name, (int)t->nhost);
  if (prev == -2) return -1;
  if (prev >= 0) return -2 - prev;
  /* the slot for entry nhost is taken: the entry must exist before any other lookup */
  char *nm = store_name(t, name, len);
  if (!nm) {
    t->host[t->nhost] = (char *)""; /* keep the index consistent; the parse fails */
    t->host_leaf[t->nhost] = leaf;
    t->nhost++;
    return -1;
  }
  t->host[t->nhost] = nm;
  t->host_leaf[t->nhost] = leaf;
  return (int)t->nhost++;
}

int add_host(struct cs_topo *t, const char *name, int leaf) {
  int h = add_host_once(t, name, strlen(name), leaf);
  return h <= -2 ? -2 - h : h;
}

/* ------------------------------------------------------------------ hostlists of a line */

struct host_walk {
  struct ctx *c;
  int line, leaf, dup_msg;
};

static int add_walked_host(const char *name, size_t len, void *arg) {
  struct host_walk *w = arg;
  struct cs_topo *t = w->c->t;
  int h = add_host_once(t, name, len, w->leaf);
  if (h <= -2) {
    const struct cs_topo_switch *leaf = &t->sw[t->host_leaf[-2 - h]];
    if (w->dup_msg) return ferr(w->c, w->line, "host '%s' is listed twice (already under '%s')", name, leaf->name);
    return ferr(w->c, w->line, "host '%s' is already under '%s' (line %d)", name, leaf->name, leaf->line);
  }
  if (h < 0) return ferr(w->c, w->line, "out of memory");
  return 0;
}

/* Count a line's hostlist without expanding it: -1 with FILE:LINE: on a bad one. */
static int count_list(struct ctx *c, int line, const char *what, const char *expr, size_t *n) {
  char e[200];
  if (cs_hostlist_each(expr, 0, NULL, NULL, n, e, sizeof e))
    return ferr(c, line, "bad hostlist in %s='%.80s': %s", what, expr, e);
  return 0;
}

int add_host_list(struct ctx *c, int line, const char *what, const char *expr, int leaf, int dup_msg) {
  size_t n, got;
  if (count_list(c, line, what, expr, &n)) return -1;
  if (n > c->max_hosts - c->t->nhost)
    return ferr(c, line, "more than %zu hosts in the file (the limit; %s='%.40s' adds %zu to the %zu before it)",
                c->max_hosts, what, expr, n, c->t->nhost);
  if (charge(c, line, n)) return -1;
  struct host_walk w = {c, line, leaf, dup_msg};
  char e[200];
  if (cs_hostlist_each(expr, 0, add_walked_host, &w, &got, e, sizeof e)) return -1; /* err set by the walk */
  return 0;
}

struct ref_walk {
  struct ctx *c;
  int line, parent;
};

static int add_walked_ref(const char *name, size_t len, void *arg) {
  struct ref_walk *w = arg;
  struct cs_topo *t = w->c->t;
  (void)len;
  int ch = cs_topo_switch_index(t, name);
  if (ch < 0)
    return ferr(w->c, w->line, "switch '%s' in Switches= is not defined (expected a SwitchName=%s line)", name, name);
  if (ch == w->parent) return ferr(w->c, w->line, "switch '%s' lists itself in Switches=", name);
  /* a switch under several parents (redundant uplinks of a fat tree, as in Slurm's own
   * example): the first parent in file order places it; the others lead to the same
   * hosts, so the order of hosts does not change */
  if (t->sw[ch].parent < 0) t->sw[ch].parent = w->parent;
  return 0;
}

int add_switch_refs(struct ctx *c, int line, const char *expr, int parent) {
  size_t n, got;
  if (count_list(c, line, "Switches", expr, &n)) return -1;
  if (n > c->max_refs - c->refs)
    return ferr(c, line, "more than %zu switch names in Switches= lines (the limit)", c->max_refs);
  if (charge(c, line, n)) return -1;
  c->refs += n;
  struct ref_walk w = {c, line, parent};
  char e[200];
  if (cs_hostlist_each(expr, 0, add_walked_ref, &w, &got, e, sizeof e)) return -1;
  return 0;
}

/* ------------------------------------------------------------------ the tree */

void cs_topo_free(struct cs_topo *t) {
  if (!t) return;
  for (struct cs_name_chunk *c = t->names, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(t->sw);
  free(t->host);
  free(t->host_leaf);
  name_index_free(&t->hidx);
  name_index_free(&t->sidx);
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

/* Depth of every switch (1 = a root) in one pass: each switch is walked up to the first
 * switch whose depth is known, then the walk is unwound. A walk that meets itself is a
 * cycle. O(switches), whatever the shape (a chain of 200,000 is as cheap as a star). */
static int switch_depths(struct ctx *c, int *depth, int *walk, int *maxdepth) {
  struct cs_topo *t = c->t;
  *maxdepth = 0;
  for (size_t i = 0; i < t->nsw; i++) {
    if (depth[i]) continue;
    size_t k = 0;
    int s = (int)i;
    while (s >= 0 && depth[s] == 0) {
      depth[s] = -1; /* on this walk */
      walk[k++] = s;
      s = t->sw[s].parent;
    }
    if (s >= 0 && depth[s] < 0)
      return ferr(c, t->sw[s].line, "switch '%s' is its own ancestor (a cycle in Switches=)", t->sw[s].name);
    int d = s >= 0 ? depth[s] : 0;
    while (k > 0) depth[walk[--k]] = ++d;
    if (d > *maxdepth) *maxdepth = d;
  }
  return 0;
}

/* Levels, host counts, cycle check: linear in switches + hosts x levels. */
static int finalize(struct ctx *c) {
  struct cs_topo *t = c->t;
  int maxdepth = 1;
  if (t->nsw) {
    int *depth = calloc(t->nsw, sizeof *depth), *walk = malloc(t->nsw * sizeof *walk);
    int rc = !depth || !walk ? ferr(c, 0, "out of memory") : switch_depths(c, depth, walk, &maxdepth);
    free(depth);
    free(walk);
    if (rc) return rc;
  }
  if (maxdepth + 1 > CS_TOPO_MAX_LEVELS)
    return ferr(c, 0, "the switch tree is %d levels deep (at most %d supported)", maxdepth,
                CS_TOPO_MAX_LEVELS - 1);
  /* every path is now at most CS_TOPO_MAX_LEVELS - 1 long: the walks below are bounded */
  for (size_t i = 0; i < t->nsw; i++) t->sw[i].level = 1;
  for (size_t i = 0; i < t->nsw; i++)
    for (int s = (int)i, p; (p = t->sw[s].parent) >= 0; s = p)
      if (t->sw[p].level < t->sw[s].level + 1) t->sw[p].level = t->sw[s].level + 1;
  t->nlevels = 1 + maxdepth;
  /* hosts' depths decide the levels reported: the longest path of a leaf with hosts */
  int hdepth = 0;
  for (size_t h = 0; h < t->nhost; h++) {
    int s = t->host_leaf[h], d = 1;
    t->sw[s].nhosts++;
    while (t->sw[s].parent >= 0) {
      s = t->sw[s].parent;
      t->sw[s].nhosts++;
      d++;
    }
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

static void ctx_limits(struct ctx *c, const struct cs_topo_limits *lim) {
  c->max_hosts = lim && lim->max_hosts ? lim->max_hosts : CS_TOPO_MAX_HOSTS;
  c->max_refs = CS_TOPO_MAX_SWITCH_REFS;
  c->max_work = lim ? lim->max_work : 0;
}

static size_t max_bytes_of(const struct cs_topo_limits *lim) {
  return lim && lim->max_bytes && lim->max_bytes < CS_TOPO_MAX_BYTES ? lim->max_bytes : CS_TOPO_MAX_BYTES;
}
/* ------------------------------------------------------------------ entry points */

static int detect(const char *text, size_t len) {
  size_t i = 0;
  while (i < len) {
    size_t e = i;
    while (e < len && text[e] != '\n') e++;
    const char *s = text + i;
    size_t l = e - i;
    while (l && (*s == ' ' || *s == '\t')) {
      s++;
      l--;
    }
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

int cs_topo_parse_limited(const char *text, size_t len, const char *fname, int format,
                          const struct cs_topo_limits *lim, struct cs_topo **out, char *err, size_t errlen) {
  struct ctx c = {.fname = fname ? fname : "(topology)", .err = err, .errlen = errlen};
  ctx_limits(&c, lim);
  if (err && errlen) err[0] = '\0';
  if (out) *out = NULL;
  if (!out || (!text && len)) return ferr(&c, 0, "invalid argument");
  if (len > max_bytes_of(lim)) return ferr(&c, 0, "file larger than %zu bytes", max_bytes_of(lim));
  if (charge(&c, 0, len / CS_TOPO_WORK_BYTES)) return -1;
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
  if (rc) {
    cs_topo_free(c.t);
    return -1;
  }
  *out = c.t;
  return 0;
}

int cs_topo_parse(const char *text, size_t len, const char *fname, int format, struct cs_topo **out,
                  char *err, size_t errlen) {
  return cs_topo_parse_limited(text, len, fname, format, NULL, out, err, errlen);
}

/* The whole file, at most `max` bytes (one more is read to tell a larger file). The size
 * from fstat only sizes the buffer; the read itself is bounded, so a growing file or one
 * without a size (a pipe, /dev/zero) costs at most max + 1 bytes. */
static int read_file(const char *path, size_t max, char **buf, size_t *len, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err && errlen) snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  size_t cap = 65536;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0) {
    if ((unsigned long long)st.st_size > max) {
      close(fd);
      if (err && errlen) snprintf(err, errlen, "%s: file larger than %zu bytes", path, max);
      return -1;
    }
    cap = (size_t)st.st_size + 1;
  }
  if (cap > max + 1) cap = max + 1;
  char *b = malloc(cap);
  size_t n = 0;
  if (!b) {
    close(fd);
    if (err && errlen) snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  for (;;) {
    if (n == cap) {
      if (cap > max) break; /* max + 1 bytes read: too large */
      size_t nc = cap > max / 2 ? max + 1 : cap * 2;
      char *nb = realloc(b, nc);
      if (!nb) {
        free(b);
        close(fd);
        if (err && errlen) snprintf(err, errlen, "%s: out of memory", path);
        return -1;
      }
      b = nb;
      cap = nc;
    }
    ssize_t r = read(fd, b + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      free(b);
      close(fd);
      if (err && errlen) snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
      return -1;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (n > max) {
    free(b);
    if (err && errlen) snprintf(err, errlen, "%s: file larger than %zu bytes", path, max);
    return -1;
  }
  *buf = b;
  *len = n;
  return 0;
}

int cs_topo_load_limited(const char *path, int format, const struct cs_topo_limits *lim, struct cs_topo **out,
                         char *err, size_t errlen) {
  if (out) *out = NULL;
  char *buf;
  size_t len;
  if (read_file(path, max_bytes_of(lim), &buf, &len, err, errlen)) return -1;
  int rc = cs_topo_parse_limited(buf, len, path, format, lim, out, err, errlen);
  free(buf);
  return rc;
}

int cs_topo_load(const char *path, int format, struct cs_topo **out, char *err, size_t errlen) {
  return cs_topo_load_limited(path, format, NULL, out, err, errlen);
}

int cs_topo_from_addrs(const char *const *addrs, size_t n, const char *pattern, struct cs_topo **out,
                       char *err, size_t errlen) {
  struct ctx c = {.fname = "SLURM_TOPOLOGY_ADDR", .err = err, .errlen = errlen};
  ctx_limits(&c, NULL);
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
      if (nc == CS_TOPO_MAX_LEVELS) {
        rc = ferr(&c, 0, "rank %zu: '%s' has more than %d components", r, addrs[r], CS_TOPO_MAX_LEVELS);
        break;
      }
      comp[nc++] = p;
    }
    if (rc) break;
    if (nc == 0) {
      rc = ferr(&c, 0, "rank %zu: empty address", r);
      break;
    }
    if (npat && npat != nc) {
      rc = ferr(&c, 0, "rank %zu: '%s' has %d components, SLURM_TOPOLOGY_ADDR_PATTERN has %d", r, addrs[r], nc, npat);
      break;
    }
    if (npat && strcmp(pat[nc - 1], "node")) {
      rc = ferr(&c, 0, "SLURM_TOPOLOGY_ADDR_PATTERN does not end in 'node'");
      break;
    }
    /* switches root..leaf = comp[0..nc-2] */
    int parent = -1, leaf = -1;
    if (nc == 1) {
      leaf = cs_topo_switch_index(c.t, "(all)");
      if (leaf < 0 && (leaf = add_switch(c.t, "(all)", 0)) < 0) {
        rc = ferr(&c, 0, "out of memory");
        break;
      }
    }
    for (int k = 0; k + 1 < nc && !rc; k++) {
      int s = cs_topo_switch_index(c.t, comp[k]);
      if (s < 0) {
        if ((s = add_switch(c.t, comp[k], 0)) < 0) {
          rc = ferr(&c, 0, "out of memory");
          break;
        }
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
  if (rc) {
    cs_topo_free(c.t);
    return -1;
  }
  *out = c.t;
  return 0;
}
