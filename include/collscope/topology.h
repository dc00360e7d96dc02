/* include/collscope/topology.h: the network topology (hosts under leaf switches under
 * upper switches) and the planner that orders a job's hosts so every leaf is contiguous.
 *
 * Formats (cs_topo_parse, CS_TOPO_AUTO detects them from the content):
 *  - Slurm topology.conf, tree form: `SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900`,
 *    `SwitchName=s4 Switches=s[0-3]`; block form: `BlockName=b1 Nodes=...` and
 *    `BlockSizes=4,8` (the first size is the base block; a later size S groups S/base
 *    consecutive blocks into one upper level; sizes must be base x 2^k, increasing).
 *    Keys are case-insensitive; `#` starts a comment (not inside quotes); values may be
 *    quoted; a trailing backslash continues the line; names are hostlist expressions.
 *  - A plain map: `host leaf [spine [core ...]]` per line (host may be a hostlist).
 *  - ibnetdiscover output: a leaf is a switch with CA (H-) peers, a host is the first
 *    word of the CA description; leaves joined through their directly attached upper
 *    switches form "pods" (a second level, only when there is more than one pod).
 * Errors are "FILE:LINE: what was wrong (expected ...)".
 *
 * Levels: 0 = host, 1 = leaf, 2 = the leaf's parent ("spine"), 3 ("core"), then
 * "level4"... A ring hop or tree edge *crosses* level L when its two hosts have
 * different ancestors at level L (level 0: different hosts). */
#ifndef COLLSCOPE_TOPOLOGY_H
#define COLLSCOPE_TOPOLOGY_H
#include <stddef.h>

enum cs_topo_format { CS_TOPO_AUTO = 0,
                      CS_TOPO_SLURM,
                      CS_TOPO_MAP,
                      CS_TOPO_IBNET,
                      CS_TOPO_ADDR };

#define CS_TOPO_MAX_LEVELS 8 /* host + up to 7 switch levels */
#define CS_TOPO_MAX_BYTES (64u << 20)
/* Hosts in one file, all lines together (an error names the line that passes it), and
 * names expanded from Switches= (all lines together). Parsing is linear in the file's
 * size plus these counts. */
#define CS_TOPO_MAX_HOSTS 1000000u
#define CS_TOPO_MAX_SWITCH_REFS 1000000u
/* Work budget units: one per host, one per Switches= name, one per this many bytes. */
#define CS_TOPO_WORK_BYTES 64u

struct cs_topo_limits {
  size_t max_bytes; /* file size; 0: CS_TOPO_MAX_BYTES */
  size_t max_hosts; /* hosts in the file; 0: CS_TOPO_MAX_HOSTS */
  size_t max_work;  /* work units (see CS_TOPO_WORK_BYTES); 0: no budget beyond the caps.
                        * Counted, not timed: every process given the same file decides
                        * the same, which the shim's collective decisions rely on. */
};

/* private: topology/name_index.c and the name storage of topology.c */
struct cs_name_slot {
  unsigned idx1, hash;
}; /* entry index + 1 (0: empty), its hash */
struct cs_name_index {
  struct cs_name_slot *slot;
  size_t cap;
};
struct cs_name_chunk;

struct cs_topo_switch {
  char *name;
  int parent;    /* switch index, -1 for a root */
  int level;     /* 1 = leaf */
  size_t nhosts; /* hosts below it (all levels) */
  int line;      /* where it was defined (0: implicit) */
};

struct cs_topo {
  int format;
  size_t nsw;
  struct cs_topo_switch *sw;
  size_t nhost;
  char **host;    /* host names */
  int *host_leaf; /* switch index of each host's leaf */
  int nlevels;    /* levels incl. host: 1 + the longest switch path */
  /* private: hash indexes of host and switch names, allocated entries of host / sw */
  struct cs_name_index hidx, sidx;
  size_t swcap, hostcap;
  struct cs_name_chunk *names; /* where host and switch names live (freed together) */
};

/* Parse text (len bytes, need not be NUL terminated) named fname in error messages.
 * Returns 0 and *out, or -1 with "fname:line: ..." in err. */
int cs_topo_parse(const char *text, size_t len, const char *fname, int format, struct cs_topo **out,
                  char *err, size_t errlen);
/* Read and parse a file (format by content). */
int cs_topo_load(const char *path, int format, struct cs_topo **out, char *err, size_t errlen);
/* The same under other limits (NULL: the defaults), e.g. the shim's work budget. */
int cs_topo_parse_limited(const char *text, size_t len, const char *fname, int format,
                          const struct cs_topo_limits *lim, struct cs_topo **out, char *err, size_t errlen);
int cs_topo_load_limited(const char *path, int format, const struct cs_topo_limits *lim, struct cs_topo **out,
                         char *err, size_t errlen);
/* From per-rank SLURM_TOPOLOGY_ADDR strings ("s2.s0.tux3") and the pattern
 * ("switch.switch.node"; NULL: every component but the last is a switch). */
int cs_topo_from_addrs(const char *const *addrs, size_t n, const char *pattern, struct cs_topo **out,
                       char *err, size_t errlen);
void cs_topo_free(struct cs_topo *t);
const char *cs_topo_format_name(int format);
/* Level name: "host", "leaf", "spine", "core", "level4", ... (static storage). */
const char *cs_topo_level_name(int level);
int cs_topo_host_index(const struct cs_topo *t, const char *host); /* -1 if unknown */
int cs_topo_switch_index(const struct cs_topo *t, const char *name);
/* Ancestor id at a level of a host: level 0 = host index, else a switch index (a path
 * shorter than the level gives its root). */
int cs_topo_ancestor(const struct cs_topo *t, int host, int level);

/* Crossings of one item order, per level (index 0..nlevels-1). */
struct cs_crossings {
  long ring[CS_TOPO_MAX_LEVELS];   /* inter-node ring hops crossing the level */
  long tree[CS_TOPO_MAX_LEVELS];   /* edges of NCCL's double binary tree (both trees) */
  long groups[CS_TOPO_MAX_LEVELS]; /* distinct ancestors at the level */
};

/* Count crossings of n items (host indexes hostidx[order[i]] for i = 0..n-1; order NULL:
 * identity). Like NCCL, nodes are numbered by their first item, the ring links node k to
 * k+1 (cyclic) and the trees are ncclGetDtree's over the node numbers. */
void cs_topo_crossings(const struct cs_topo *t, const int *hostidx, const size_t *order, size_t n,
                       struct cs_crossings *out);

struct cs_plan {
  size_t n;
  int *hostidx;  /* topology host index per input item */
  size_t *order; /* order[i] = input index of the item placed at position i */
  size_t *pos;   /* pos[j] = new position of input item j */
  int nlevels;
  int changed; /* order differs from the input */
  struct cs_crossings before, after;
};

/* Plan n items (host names in launch order, duplicates allowed: several ranks per host).
 * Leaves contiguous, leaves under one upper switch adjacent (recursively), groups in the
 * order of their first item, original order kept inside a host and leaf. Unknown hosts:
 * -1 and an error listing them. */
int cs_topo_plan(const struct cs_topo *t, const char *const *hosts, size_t n, struct cs_plan *out,
                 char *err, size_t errlen);
void cs_plan_free(struct cs_plan *p);

#endif
