/* tests/topology/test_topology.c: topology parsers (Slurm tree/block with Slurm's
 * documented examples, map, ibnetdiscover, SLURM_TOPOLOGY_ADDR), their file:line errors,
 * edge-case hostlists inside them, the planner's properties and crossing counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collscope/hostlist.h"
#include "collscope/topology.h"

static struct cs_topo *parse_ok(const char *text, int fmt) {
  struct cs_topo *t = NULL;
  char err[512];
  if (cs_topo_parse(text, strlen(text), "t.conf", fmt, &t, err, sizeof err)) fail_msg("parse failed: %s", err);
  return t;
}

static void parse_err(const char *text, int fmt, const char *want) {
  struct cs_topo *t = (struct cs_topo *)1;
  char err[512] = "";
  int rc = cs_topo_parse(text, strlen(text), "t.conf", fmt, &t, err, sizeof err);
  if (rc != -1) fail_msg("parse succeeded, expected error '%s'", want);
  assert_null(t);
  if (!strstr(err, want)) fail_msg("error '%s' does not contain '%s'", err, want);
}

static const char *leaf_of(const struct cs_topo *t, const char *h) {
  int i = cs_topo_host_index(t, h);
  if (i < 0) fail_msg("host %s missing", h);
  return t->sw[t->host_leaf[i]].name;
}

static const char *parent_of(const struct cs_topo *t, const char *sw) {
  int i = cs_topo_switch_index(t, sw);
  if (i < 0) fail_msg("switch %s missing", sw);
  return t->sw[i].parent >= 0 ? t->sw[t->sw[i].parent].name : "";
}

/* Slurm topology.conf man page, tree example. */
static void test_slurm_tree_doc(void **s) {
  (void)s;
  const char *conf =
      "# topology.conf\n"
      "# Switch Configuration\n"
      "SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900\n"
      "SwitchName=s1 Nodes=tux[4-7] LinkSpeed=900\n"
      "SwitchName=s2 Switches=s[0-1] LinkSpeed=1800\n"
      "SwitchName=s3 Switches=s[0-1] LinkSpeed=1800\n"
      "SwitchName=s4 Switches=s[2-3] LinkSpeed=3600\n";
  /* s0, s1 each have two parents in this doc example (s2 and s3, redundant uplinks):
   * the first parent in file order places them */
  struct cs_topo *d = parse_ok(conf, CS_TOPO_AUTO);
  assert_int_equal(d->nhost, 8);
  assert_string_equal(leaf_of(d, "tux2"), "s0");
  assert_string_equal(leaf_of(d, "tux6"), "s1");
  assert_string_equal(parent_of(d, "s0"), "s2");
  assert_string_equal(parent_of(d, "s1"), "s2");
  assert_string_equal(parent_of(d, "s2"), "s4");
  cs_topo_free(d);
  const char *tree =
      "SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900\n"
      "SwitchName=s1 Nodes=tux[4-7] LinkSpeed=900\n"
      "SwitchName=s2 Nodes=tux[8-11]\n"
      "SwitchName=s3 Switches=s[0-1]\n"
      "SwitchName=s4 Switches=s[2-3]  # root\n";
  struct cs_topo *t = parse_ok(tree, CS_TOPO_AUTO);
  assert_int_equal(t->format, CS_TOPO_SLURM);
  assert_int_equal(t->nhost, 12);
  assert_int_equal(t->nlevels, 4); /* host leaf spine core */
  assert_string_equal(leaf_of(t, "tux5"), "s1");
  assert_string_equal(leaf_of(t, "tux11"), "s2");
  assert_string_equal(parent_of(t, "s0"), "s3");
  assert_string_equal(parent_of(t, "s3"), "s4");
  assert_string_equal(parent_of(t, "s2"), "s4");
  assert_int_equal(t->sw[cs_topo_switch_index(t, "s4")].nhosts, 12);
  /* s2 is a leaf directly under the root: its level-2 and -3 ancestor is s4 */
  int h = cs_topo_host_index(t, "tux8");
  assert_int_equal(cs_topo_ancestor(t, h, 2), cs_topo_switch_index(t, "s4"));
  cs_topo_free(t);
}

/* Slurm syntax: case-insensitive keys, quotes, continuation, comments, hostlists. */
static void test_slurm_syntax(void **s) {
  (void)s;
  const char *conf =
      "  switchname=leaf1 NODES=\"n[01-02],gpu-[8-10]-ib\" linkspeed=100 # comment\n"
      "SWITCHNAME=leaf2 \\\n"
      "   Nodes=r[0-1]n[0-1]\r\n"
      "\n"
      "SwitchName=top Switches=\"leaf[1-2]\"\n";
  struct cs_topo *t = parse_ok(conf, CS_TOPO_AUTO);
  assert_int_equal(t->nhost, 9);
  assert_string_equal(leaf_of(t, "n01"), "leaf1");
  assert_string_equal(leaf_of(t, "gpu-10-ib"), "leaf1");
  assert_string_equal(leaf_of(t, "r1n0"), "leaf2");
  assert_string_equal(parent_of(t, "leaf2"), "top");
  cs_topo_free(t);
  /* edge-case hostlists inside Nodes=: padding from the low bound, spaces inside quoted
   * brackets, empty list items, a single-value bracket */
  t = parse_ok("SwitchName=a Nodes=\"n[8-10], m[098-100],,z[5]\"\nSwitchName=b Nodes=\"q[ 1 - 2 ]\"\n", CS_TOPO_SLURM);
  assert_int_equal(t->nhost, 9);
  assert_int_equal(cs_topo_host_index(t, "n08"), -1);
  assert_string_equal(leaf_of(t, "n10"), "a");
  assert_string_equal(leaf_of(t, "m099"), "a");
  assert_string_equal(leaf_of(t, "z5"), "a");
  assert_string_equal(leaf_of(t, "q2"), "b");
  cs_topo_free(t);
  /* Switches= may name a switch defined later */
  t = parse_ok("SwitchName=top Switches=a,b\nSwitchName=a Nodes=x1\nSwitchName=b Nodes=x2\n", CS_TOPO_SLURM);
  assert_string_equal(parent_of(t, "b"), "top");
  cs_topo_free(t);
}

/* Slurm block topology (topology.conf man page). */
static void test_slurm_block(void **s) {
  (void)s;
  const char *conf =
      "BlockName=block1 Nodes=node[01-04]\n"
      "BlockName=block2 Nodes=node[05-08]\n"
      "BlockName=block3 Nodes=node[09-12]\n"
      "BlockName=block4 Nodes=node[13-16]\n"
      "BlockSizes=4,8,16\n";
  struct cs_topo *t = parse_ok(conf, CS_TOPO_AUTO);
  assert_int_equal(t->nhost, 16);
  assert_int_equal(t->nlevels, 4);
  assert_string_equal(leaf_of(t, "node06"), "block2");
  assert_string_equal(parent_of(t, "block2"), "blocks8-0");
  assert_string_equal(parent_of(t, "block3"), "blocks8-1");
  assert_string_equal(parent_of(t, "blocks8-1"), "blocks16-0");
  cs_topo_free(t);
  t = parse_ok("BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\n", CS_TOPO_AUTO);
  assert_int_equal(t->nlevels, 2);
  cs_topo_free(t);
  parse_err("BlockName=b1 Nodes=n1\nBlockSizes=4,12\n", CS_TOPO_AUTO, "t.conf:2: BlockSizes: 12 is not the base size 4 times a power of two");
  parse_err("BlockName=b1 Nodes=n1\nSwitchName=s Nodes=n2\n", CS_TOPO_AUTO, "t.conf:2: SwitchName in a file of the block");
  parse_err("BlockName=b1\n", CS_TOPO_AUTO, "t.conf:1: block 'b1' has no Nodes=");
}

static void test_slurm_errors(void **s) {
  (void)s;
  parse_err("SwitchName=s0 Nodes=a Switches=b\n", CS_TOPO_SLURM, "t.conf:1: switch 's0' has both Nodes= and Switches=");
  parse_err("SwitchName=s0 Nodes=a\nSwitchName=s0 Nodes=b\n", CS_TOPO_SLURM, "t.conf:2: switch 's0' is defined twice (first at line 1)");
  parse_err("SwitchName=s0 Nodes=a\n\nSwitchName=s1 Nodes=a\n", CS_TOPO_SLURM, "t.conf:3: host 'a' is already under 's0' (line 1)");
  parse_err("SwitchName=s0 Nodes=tux[1-\n", CS_TOPO_SLURM, "t.conf:1: bad hostlist in Nodes='tux[1-'");
  parse_err("SwitchName=s0 Nodes=tux[3-1]\n", CS_TOPO_SLURM, "reversed range");
  parse_err("SwitchName=s0 Switches=s9\n", CS_TOPO_SLURM, "t.conf:1: switch 's9' in Switches= is not defined");
  parse_err("SwitchName=s0 Nodes=a Speed=3\n", CS_TOPO_SLURM, "t.conf:1: unknown key 'Speed' (expected Nodes, Switches or LinkSpeed)");
  parse_err("SwitchName=s0 Nodes=\"a\n", CS_TOPO_SLURM, "t.conf:1: unterminated quote");
  parse_err("# c\nSwitchName=s0 Nodes\n", CS_TOPO_SLURM, "t.conf:2: expected KEY=VALUE, got 'Nodes'");
  parse_err("SwitchName=s0 Nodes=\n", CS_TOPO_SLURM, "t.conf:1: empty value for Nodes");
  parse_err("SwitchName=a Switches=b\nSwitchName=b Switches=a\n", CS_TOPO_SLURM, "its own ancestor");
  parse_err("SwitchName=s0 Nodes=a LinkSpeed=fast\n", CS_TOPO_SLURM, "t.conf:1: LinkSpeed='fast': expected a number");
  parse_err("Nodes=a\n", CS_TOPO_SLURM, "t.conf:1: unknown key 'Nodes' (expected SwitchName=, BlockName= or BlockSizes= first");
  parse_err("# only comments\n\n", CS_TOPO_SLURM, "no SwitchName= or BlockName= line");
  parse_err("SwitchName=s0 Nodes=a \\\n  Nodes=b\n", CS_TOPO_SLURM, "t.conf:1: Nodes given twice on one line");
}

static void test_map(void **s) {
  (void)s;
  const char *map =
      "# host leaf spine core\n"
      "h[1-2]  leafA spine1 core\n"
      "h3\tleafB spine1 core   # tab separated\n"
      "h4 leafC spine2 core\n"
      "\n";
  struct cs_topo *t = parse_ok(map, CS_TOPO_AUTO);
  assert_int_equal(t->format, CS_TOPO_MAP);
  assert_int_equal(t->nhost, 4);
  assert_int_equal(t->nlevels, 4);
  assert_string_equal(leaf_of(t, "h2"), "leafA");
  assert_string_equal(parent_of(t, "leafC"), "spine2");
  cs_topo_free(t);
  parse_err("h1 leafA\nh1 leafB\n", CS_TOPO_MAP, "t.conf:2: host 'h1' is listed twice");
  parse_err("h1\n", CS_TOPO_MAP, "t.conf:1: expected 'host leaf [spine [core ...]]'");
  parse_err("h1 leafA sp1\nh2 leafA sp2\n", CS_TOPO_MAP, "t.conf:2: 'leafA' is under 'sp1' at line 1 but under 'sp2' here");
  parse_err("h1 leafA sp1\nh2 sp1 x\n", CS_TOPO_MAP, "t.conf:2: 'sp1' is a level-2 switch at line 1 but level 1 here");
  parse_err("h[1-2 leafA\n", CS_TOPO_MAP, "t.conf:1: bad hostlist");
}

static const char ibnet[] =
    "#\n"
    "# Topology file: generated on Tue Jan  1 00:00:00 2026\n"
    "#\n"
    "vendid=0x2c9\n"
    "devid=0xc738\n"
    "switchguid=0x248a0703005e1234(248a0703005e1234)\n"
    "Switch\t36 \"S-248a0703005e1234\"\t\t# \"leaf-1\" enhanced port 0 lid 3 lmc 0\n"
    "[1]\t\"H-0c42a10300c0ffe0\"[1](c42a10300c0ffe0) \t\t# \"gpu01 mlx5_0\" lid 10 4xHDR\n"
    "[2]\t\"H-0c42a10300c0ffe8\"[1](c42a10300c0ffe8) \t\t# \"gpu02 mlx5_0\" lid 11 4xHDR\n"
    "[35]\t\"S-248a0703005e9999\"[1]\t\t# \"spine-1\" lid 2 4xHDR\n"
    "\n"
    "Switch\t36 \"S-248a0703005e5678\"\t\t# \"leaf-2\" enhanced port 0 lid 4 lmc 0\n"
    "[1]\t\"H-0c42a10300c0aaa0\"[1](c42a10300c0aaa0) \t\t# \"gpu03 mlx5_0\" lid 12 4xHDR\n"
    "[35]\t\"S-248a0703005e9999\"[2]\t\t# \"spine-1\" lid 2 4xHDR\n"
    "\n"
    "Switch\t36 \"S-248a0703005e9999\"\t\t# \"spine-1\" enhanced port 0 lid 2 lmc 0\n"
    "[1]\t\"S-248a0703005e1234\"[35]\t\t# \"leaf-1\" lid 3 4xHDR\n"
    "[2]\t\"S-248a0703005e5678\"[35]\t\t# \"leaf-2\" lid 4 4xHDR\n"
    "\n"
    "Switch\t36 \"S-248a0703005e7777\"\t\t# \"leaf-3\" enhanced port 0 lid 5 lmc 0\n"
    "[1]\t\"H-0c42a10300c0bbb0\"[1](c42a10300c0bbb0) \t\t# \"gpu04 mlx5_0\" lid 13 4xHDR\n"
    "\n"
    "vendid=0x2c9\n"
    "caguid=0x0c42a10300c0ffe0\n"
    "Ca\t1 \"H-0c42a10300c0ffe0\"\t\t# \"gpu01 mlx5_0\"\n"
    "[1](c42a10300c0ffe0) \t\"S-248a0703005e1234\"[1]\t\t# lid 10 lmc 0 \"leaf-1\" lid 3 4xHDR\n";

static void test_ibnet(void **s) {
  (void)s;
  struct cs_topo *t = parse_ok(ibnet, CS_TOPO_AUTO);
  assert_int_equal(t->format, CS_TOPO_IBNET);
  assert_int_equal(t->nhost, 4);
  assert_string_equal(leaf_of(t, "gpu01"), "leaf-1");
  assert_string_equal(leaf_of(t, "gpu02"), "leaf-1");
  assert_string_equal(leaf_of(t, "gpu03"), "leaf-2");
  assert_string_equal(leaf_of(t, "gpu04"), "leaf-3");
  /* leaf-1 and leaf-2 share spine-1: one pod; leaf-3 is alone: a second pod */
  assert_int_equal(t->nlevels, 3);
  assert_string_equal(parent_of(t, "leaf-1"), parent_of(t, "leaf-2"));
  assert_string_not_equal(parent_of(t, "leaf-1"), parent_of(t, "leaf-3"));
  cs_topo_free(t);
  parse_err("Switch 36 \"S-1234\"\n[1] \"X-12\"[1]\n", CS_TOPO_IBNET, "t.conf:2: expected the peer's quoted id");
  parse_err("[1] \"H-1234\"[1]\n", CS_TOPO_IBNET, "t.conf:1: port line outside a Switch or Ca block");
  parse_err("Switch 36 S-1234\n", CS_TOPO_IBNET, "t.conf:1: expected a quoted node id");
  parse_err("Switch 36 \"S-1234\"\n[1] \"S-5678\"[1]\n", CS_TOPO_IBNET, "no switch with host channel adapters");
}

static void test_addrs(void **s) {
  (void)s;
  const char *a[] = {"s2.s0.tux0", "s2.s1.tux4", "s2.s0.tux1", "s2.s0.tux0"};
  struct cs_topo *t;
  char err[256];
  assert_int_equal(cs_topo_from_addrs(a, 4, "switch.switch.node", &t, err, sizeof err), 0);
  assert_int_equal(t->nhost, 3);
  assert_string_equal(leaf_of(t, "tux1"), "s0");
  assert_string_equal(parent_of(t, "s1"), "s2");
  cs_topo_free(t);
  const char *b[] = {"s0.tux0", "s1.s0.tux4"};
  assert_int_equal(cs_topo_from_addrs(b, 2, NULL, &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "two different parents"));
  assert_int_equal(cs_topo_from_addrs(a, 1, "switch.node", &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "has 3 components"));
}

/* ------------------------------------------------------------------ planner */

/* 8 hosts over 4 leaves under 2 spines, launched interleaved across leaves */
static const char map8[] =
    "h1 l1 s1\nh2 l2 s1\nh3 l3 s2\nh4 l4 s2\nh5 l1 s1\nh6 l2 s1\nh7 l3 s2\nh8 l4 s2\n";

static void check_plan_props(const struct cs_topo *t, const char *const *hosts, size_t n, const struct cs_plan *p) {
  /* permutation */
  char *seen = calloc(n, 1);
  for (size_t i = 0; i < n; i++) {
    assert_true(p->order[i] < n);
    assert_false(seen[p->order[i]]);
    seen[p->order[i]] = 1;
    assert_int_equal(p->pos[p->order[i]], i);
  }
  free(seen);
  /* every group at every level is contiguous; original order kept inside a leaf
   * (for distinct hosts) */
  for (int l = 0; l < t->nlevels; l++) {
    int *closed = calloc(t->nsw + t->nhost, sizeof *closed);
    int prev = -1;
    for (size_t i = 0; i < n; i++) {
      int a = cs_topo_ancestor(t, p->hostidx[p->order[i]], l);
      if (a != prev) {
        if (closed[a]) fail_msg("level %d group %d is not contiguous", l, a);
        if (prev >= 0) closed[prev] = 1;
        prev = a;
      }
    }
    free(closed);
    /* ring hops after = groups when more than one (the minimum) */
    long want = p->after.groups[l] > 1 ? p->after.groups[l] : 0;
    if (p->after.ring[l] != want) fail_msg("level %d: %ld ring hops after, minimum %ld", l, p->after.ring[l], want);
    assert_true(p->after.ring[l] <= p->before.ring[l]);
  }
  /* inside a leaf: hosts in the order of their first item; a host's items in input order */
  size_t *firstapp = malloc(t->nhost * sizeof *firstapp);
  for (size_t h = 0; h < t->nhost; h++) firstapp[h] = n;
  for (size_t j = 0; j < n; j++)
    if (firstapp[p->hostidx[j]] == n) firstapp[p->hostidx[j]] = j;
  for (size_t i = 1; i < n; i++) {
    size_t a = p->order[i - 1], b = p->order[i];
    int ha = p->hostidx[a], hb = p->hostidx[b];
    if (ha == hb)
      assert_true(a < b);
    else if (t->host_leaf[ha] == t->host_leaf[hb])
      assert_true(firstapp[ha] < firstapp[hb]);
    (void)hosts;
  }
  free(firstapp);
}

static void test_plan_interleaved(void **s) {
  (void)s;
  struct cs_topo *t = parse_ok(map8, CS_TOPO_MAP);
  const char *hosts[] = {"h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"};
  struct cs_plan p;
  char err[256];
  assert_int_equal(cs_topo_plan(t, hosts, 8, &p, err, sizeof err), 0);
  const char *want[] = {"h1", "h5", "h2", "h6", "h3", "h7", "h4", "h8"};
  for (int i = 0; i < 8; i++) assert_string_equal(hosts[p.order[i]], want[i]);
  assert_true(p.changed);
  assert_int_equal(p.nlevels, 3);
  /* before: every hop crosses a leaf; h4->h5 and h8->h1 wrap... spine: s1 s1 s2 s2 s1 s1 s2 s2 */
  assert_int_equal(p.before.ring[0], 8);
  assert_int_equal(p.before.ring[1], 8);
  assert_int_equal(p.before.ring[2], 4);
  assert_int_equal(p.after.ring[1], 4);
  assert_int_equal(p.after.ring[2], 2);
  assert_int_equal(p.after.groups[1], 4);
  assert_int_equal(p.after.groups[2], 2);
  /* trees: 2 x (8 - 1) edges in all, fewer crossing after */
  assert_int_equal(p.before.tree[0], 14);
  assert_int_equal(p.after.tree[0], 14);
  assert_true(p.after.tree[1] < p.before.tree[1]);
  assert_true(p.after.tree[2] <= p.before.tree[2]);
  check_plan_props(t, hosts, 8, &p);
  cs_plan_free(&p);
  /* several ranks per host (rank order): ranks of a host stay together, in rank order */
  const char *ranks[] = {"h1", "h1", "h2", "h2", "h5", "h5", "h6", "h6"};
  assert_int_equal(cs_topo_plan(t, ranks, 8, &p, err, sizeof err), 0);
  size_t want_r[] = {0, 1, 4, 5, 2, 3, 6, 7};
  for (int i = 0; i < 8; i++) assert_int_equal(p.order[i], want_r[i]);
  assert_int_equal(p.before.ring[0], 4); /* 4 nodes */
  assert_int_equal(p.before.ring[1], 4);
  assert_int_equal(p.after.ring[1], 2);
  cs_plan_free(&p);
  /* already grouped: unchanged */
  const char *grouped[] = {"h1", "h5", "h2", "h6"};
  assert_int_equal(cs_topo_plan(t, grouped, 4, &p, err, sizeof err), 0);
  assert_false(p.changed);
  assert_int_equal(p.before.ring[1], p.after.ring[1]);
  cs_plan_free(&p);
  /* unknown hosts are an error naming them */
  const char *bad[] = {"h1", "zz9", "h2", "zz9", "yy"};
  assert_int_equal(cs_topo_plan(t, bad, 5, &p, err, sizeof err), -1);
  assert_string_equal(err, "2 hosts are not in the topology: zz9, yy");
  cs_topo_free(t);
}

/* NCCL's double binary tree over 4 nodes: tree 0 edges 1-2, 2-0, 3-2; tree 1 (mirror)
 * edges 2-1, 1-3, 0-1. Hosts A A B B: tree0 crosses at 1-2, 2-0; tree1 at 2-1, 1-3. */
static void test_tree_shape(void **s) {
  (void)s;
  struct cs_topo *t = parse_ok("a1 A\na2 A\nb1 B\nb2 B\n", CS_TOPO_MAP);
  int idx[4] = {cs_topo_host_index(t, "a1"), cs_topo_host_index(t, "a2"), cs_topo_host_index(t, "b1"),
                cs_topo_host_index(t, "b2")};
  struct cs_crossings c;
  cs_topo_crossings(t, idx, NULL, 4, &c);
  assert_int_equal(c.tree[0], 6);
  assert_int_equal(c.tree[1], 4);
  assert_int_equal(c.ring[1], 2);
  /* odd node count: shifted second tree; 3 nodes a1 b1 b2: tree0 1->2? no: bits */
  int idx3[3] = {idx[0], idx[2], idx[3]};
  cs_topo_crossings(t, idx3, NULL, 3, &c);
  /* tree0 (n=3): 1->up 2? rank1: bit1, up=(0)|2=2 ; rank2: bit2 -> up=0|4 >=3 -> 0.
   * edges 1-2 (B-B), 2-0 (B-A). tree1 shift: r'=(r-1) mod 3: node0->2, node1->0, node2->1;
   * up in btree of shifted rank, then +1: node1 (s=0) root; node2 (s=1) up 2 -> node 0;
   * node0 (s=2) up 0 -> node1. edges 2-0 (B-A), 0-1 (A-B). leaf crossings: 1 + 2 = 3 */
  assert_int_equal(c.tree[1], 3);
  assert_int_equal(c.tree[0], 4);
  cs_topo_free(t);
}

/* Random topologies and launch orders: the properties hold. */
static void test_plan_random(void **s) {
  (void)s;
  unsigned seed = 12345;
  for (int iter = 0; iter < 200; iter++) {
    int nh = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 40;
    int nleaf = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 8;
    int nsp = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 3;
    char *buf = malloc(64 * (size_t)nh + 64);
    size_t len = 0;
    for (int h = 0; h < nh; h++) {
      int leaf = (int)((seed = seed * 1103515245 + 12345) >> 16) % nleaf;
      len += (size_t)sprintf(buf + len, "n%d l%d s%d c\n", h, leaf, leaf % nsp);
    }
    struct cs_topo *t = parse_ok(buf, CS_TOPO_MAP);
    free(buf);
    int n = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % (2 * nh);
    char **names = malloc((size_t)n * sizeof *names);
    for (int j = 0; j < n; j++) {
      names[j] = malloc(16);
      snprintf(names[j], 16, "n%d", (int)((seed = seed * 1103515245 + 12345) >> 16) % nh);
    }
    struct cs_plan p;
    char err[256];
    assert_int_equal(cs_topo_plan(t, (const char *const *)names, (size_t)n, &p, err, sizeof err), 0);
    check_plan_props(t, (const char *const *)names, (size_t)n, &p);
    cs_plan_free(&p);
    for (int j = 0; j < n; j++) free(names[j]);
    free(names);
    cs_topo_free(t);
  }
}

static int parse_limited(const char *text, const struct cs_topo_limits *lim, struct cs_topo **t, char *err,
                         size_t errlen) {
  return cs_topo_parse_limited(text, strlen(text), "t.conf", CS_TOPO_AUTO, lim, t, err, errlen);
}

/* The host cap counts every line of a file and names the line that passes it, before
 * anything of that line is expanded; a hostfile-sized cap is one parameter away. */
static void test_host_cap(void **s) {
  (void)s;
  struct cs_topo *t;
  char err[512];
  struct cs_topo_limits lim = {.max_hosts = 10};
  assert_int_equal(parse_limited("SwitchName=a Nodes=n[0-5]\nSwitchName=b Nodes=m[0-3]\n", &lim, &t, err, sizeof err), 0);
  assert_int_equal(t->nhost, 10);
  cs_topo_free(t);
  assert_int_equal(parse_limited("SwitchName=a Nodes=n[0-5]\nSwitchName=b Nodes=m[0-4]\n", &lim, &t, err, sizeof err), -1);
  assert_null(t);
  if (!strstr(err, "t.conf:2: more than 10 hosts in the file")) fail_msg("%s", err);
  assert_int_equal(parse_limited("n[0-7] l1\nm[0-2] l2\n", &lim, &t, err, sizeof err), -1);
  if (!strstr(err, "t.conf:2: more than 10 hosts in the file")) fail_msg("%s", err);
  /* the default cap: 1M over all lines, where each line alone is within a hostlist's cap */
  parse_err("SwitchName=a Nodes=a[0-599999]\nSwitchName=b Nodes=b[0-399999]\nSwitchName=c Nodes=c0\n", CS_TOPO_SLURM,
            "t.conf:3: more than 1000000 hosts in the file");
}

/* The work budget: counted (so every process decides the same), charged before the work,
 * naming the line where it runs out. */
static void test_work_budget(void **s) {
  (void)s;
  struct cs_topo *t;
  char err[512];
  const char *conf = "SwitchName=a Nodes=n[0-99]\nSwitchName=b Nodes=m[0-99]\nSwitchName=c Switches=a,b\n";
  struct cs_topo_limits lim = {.max_work = 202}; /* 200 hosts + 2 names; 81 bytes: 1 unit */
  assert_int_equal(parse_limited(conf, &lim, &t, err, sizeof err), -1);
  if (!strstr(err, "t.conf:3: past the work budget of 202 units")) fail_msg("%s", err);
  lim.max_work = 203;
  assert_int_equal(parse_limited(conf, &lim, &t, err, sizeof err), 0);
  assert_int_equal(t->nhost, 200);
  cs_topo_free(t);
  lim.max_work = 150;
  assert_int_equal(parse_limited(conf, &lim, &t, err, sizeof err), -1);
  if (!strstr(err, "t.conf:2: past the work budget of 150 units")) fail_msg("%s", err);
  lim = (struct cs_topo_limits){.max_bytes = 40};
  assert_int_equal(parse_limited(conf, &lim, &t, err, sizeof err), -1);
  if (!strstr(err, "larger than 40 bytes")) fail_msg("%s", err);
}

/* A chain of n switches: s0 holds `first` (e.g. "Nodes=h0"), s(i) has Switches=s(i-1). */
static char *chain(size_t n, const char *first, size_t *len) {
  size_t cap = n * 40 + 64;
  char *text = malloc(cap);
  assert_non_null(text);
  *len = (size_t)snprintf(text, cap, "SwitchName=s0 %s\n", first);
  for (size_t i = 1; i < n; i++) *len += (size_t)snprintf(text + *len, cap - *len, "SwitchName=s%zu Switches=s%zu\n", i, i - 1);
  return text;
}

/* Deep chains and cycles are found in one pass over the switches: a chain of 200,000 is
 * rejected for its depth (walking up from every switch took tens of seconds), and the
 * same chain closed into a cycle is named as one. */
static void test_deep_chain(void **s) {
  (void)s;
  size_t len;
  struct cs_topo *t;
  char err[512];
  char *text = chain(200000, "Nodes=h0", &len);
  clock_t c0 = clock();
  assert_int_equal(cs_topo_parse(text, len, "chain.conf", CS_TOPO_AUTO, &t, err, sizeof err), -1);
  print_message("200,000-switch chain rejected in %.3f s of CPU\n", (double)(clock() - c0) / CLOCKS_PER_SEC);
  if (!strstr(err, "the switch tree is 200000 levels deep")) fail_msg("%s", err);
  free(text);
  text = chain(200000, "Switches=s199999", &len);
  assert_int_equal(cs_topo_parse(text, len, "chain.conf", CS_TOPO_AUTO, &t, err, sizeof err), -1);
  if (!strstr(err, "is its own ancestor")) fail_msg("%s", err);
  free(text);
}

static void test_load_errors(void **s) {
  (void)s;
  struct cs_topo *t;
  char err[256];
  assert_int_equal(cs_topo_load("/nonexistent/topo.conf", CS_TOPO_AUTO, &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "/nonexistent/topo.conf: cannot open"));
  struct cs_topo *u = NULL;
  char txt[] = "h1 l1\nh2 l\0x\n";
  assert_int_equal(cs_topo_parse(txt, sizeof txt - 1, "z.map", CS_TOPO_MAP, &u, err, sizeof err), -1);
  assert_non_null(strstr(err, "z.map:2: NUL byte"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slurm_tree_doc),
      cmocka_unit_test(test_slurm_syntax),
      cmocka_unit_test(test_slurm_block),
      cmocka_unit_test(test_slurm_errors),
      cmocka_unit_test(test_map),
      cmocka_unit_test(test_ibnet),
      cmocka_unit_test(test_addrs),
      cmocka_unit_test(test_plan_interleaved),
      cmocka_unit_test(test_tree_shape),
      cmocka_unit_test(test_plan_random),
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_host_cap),
      cmocka_unit_test(test_work_budget),
      cmocka_unit_test(test_deep_chain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
