/* topology/topo_internal.h: what the topology parsers share and no caller sees: the
 * parse context (error text, caps, work budget), the switch/host tables of a cs_topo,
 * the hostlist walk that charges the caps before it expands anything, logical lines,
 * and the hash index behind the name lookups. */
#ifndef COLLSCOPE_TOPO_INTERNAL_H
#define COLLSCOPE_TOPO_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "collscope/topology.h"

struct ctx {
  struct cs_topo *t;
  const char *fname;
  char *err;
  size_t errlen;
  size_t max_hosts;      /* hosts in the whole file */
  size_t refs, max_refs; /* names expanded from Switches= (all lines together) */
  size_t work, max_work; /* budget units charged so far and allowed (0: no budget) */
};

int ferr(struct ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Charge `units` of work (a host, a Switches= name, CS_TOPO_WORK_BYTES bytes of text)
 * before doing it: -1 with FILE:LINE: when the budget would be exceeded. */
int charge(struct ctx *c, int line, size_t units);

/* (struct cs_name_index is in the public header, inside struct cs_topo.)
 * name -> index over entries of an array (the array may move: names are read through
 * `key`). Open addressing on (index, hash) slots, load <= 1/2. */
typedef const char *(*name_key_fn)(const void *base, size_t i);
int name_index_find(const struct cs_name_index *x, const void *base, name_key_fn key, const char *name);
/* Add `name` as entry idx (count entries are in) unless present, in one probe: -1 added,
 * >= 0 the index already holding that name (nothing added), -2 out of memory. */
int name_index_add(struct cs_name_index *x, const void *base, name_key_fn key, size_t count, const char *name,
                   int idx);
void name_index_free(struct cs_name_index *x);

int add_switch(struct cs_topo *t, const char *name, int line);
int add_host(struct cs_topo *t, const char *name, int leaf);
/* Both return the new index, -1 out of memory; add_host_once: -2 - index of the host
 * when it is already present (one hash probe for the check and the insert). */
int add_host_once(struct cs_topo *t, const char *name, size_t len, int leaf);

/* The hosts of a hostlist expression on one line, each added under `leaf`: counted
 * first (nothing allocated), checked against the file's host cap and the budget, then
 * added one by one. A host already present is an error: `dup_msg` 0 names the leaf and
 * its line (Slurm form), 1 says "listed twice" (plain map). */
int add_host_list(struct ctx *c, int line, const char *what, const char *expr, int leaf, int dup_msg);
/* Switches= of switch `parent`: every name must be defined; the first parent wins. */
int add_switch_refs(struct ctx *c, int line, const char *expr, int parent);

struct line {
  char *s; /* NUL terminated, comment removed, not blank */
  int no;  /* first physical line */
};
struct lines {
  struct line *v;
  size_t n;
  char *text; /* the lines' bytes */
};
int split_lines(struct ctx *c, const char *text, size_t len, int quotes, int cont, struct lines *out);
void free_lines(struct lines *l);
int blank(const char *s);

int parse_slurm(struct ctx *c, const char *text, size_t len);
int parse_map(struct ctx *c, const char *text, size_t len);
int parse_ibnet(struct ctx *c, const char *text, size_t len);

#endif
