#!/usr/bin/env python3
"""tests/topology/gen_topo.py: deterministic topology inputs, hostile and fleet-size.

usage: gen_topo.py KIND OUTDIR [options]
KIND:
  chain    a chain of --switches switches in Slurm's tree form (one host on the bottom
           switch, each switch the only child of the next): deeper than any real tree,
           and a file of a few MB (200,000 switches: 3.4 MB)
  hostbomb --lines lines 'SwitchName=sK Nodes=nK-[0-999999]' (40 lines: 1.4 KB that would
           expand to 40 M hosts)
  fleet    a 3-level tree of 32-host leaves for --hosts hosts (default 131,072):
           fleet.conf (Slurm tree form: one 'SwitchName=leafN Nodes=n[A-B]' line per leaf,
           spines of 32 leaves, cores of 32 spines), fleet-block.conf (Slurm block form, the
           same leaves as 32-host blocks, BlockSizes=32,1024,32768) and fleet.hosts (every
           host once, one a line, in a fixed shuffled order: a scheduler's interleaved launch)
Every file is a function of the arguments only (fixed seed), so runs compare.
"""
import argparse
import os
import random
import sys


def gen_chain(d, switches):
    p = os.path.join(d, "chain.conf")
    with open(p, "w") as f:
        f.write("SwitchName=s0 Nodes=h0\n")
        for i in range(1, switches):
            f.write(f"SwitchName=s{i} Switches=s{i - 1}\n")
    return [p]


def gen_hostbomb(d, lines):
    p = os.path.join(d, "hostbomb.conf")
    with open(p, "w") as f:
        for k in range(lines):
            f.write(f"SwitchName=s{k} Nodes=n{k}-[0-999999]\n")
    return [p]


def gen_fleet(d, hosts, per_leaf=32, leaves_per_spine=32, spines_per_core=32, seed=16):
    if hosts % per_leaf:
        sys.exit("gen_topo.py: --hosts must be a multiple of 32")
    nleaf = hosts // per_leaf
    nspine = (nleaf + leaves_per_spine - 1) // leaves_per_spine
    ncore = (nspine + spines_per_core - 1) // spines_per_core
    tree = os.path.join(d, "fleet.conf")
    with open(tree, "w") as f:
        f.write(f"# {hosts} hosts, {nleaf} leaves of {per_leaf}, {nspine} spines, {ncore} cores\n")
        for l in range(nleaf):
            f.write(f"SwitchName=leaf{l} Nodes=n[{l * per_leaf}-{(l + 1) * per_leaf - 1}] LinkSpeed=400\n")
        for s in range(nspine):
            lo, hi = s * leaves_per_spine, min(nleaf, (s + 1) * leaves_per_spine) - 1
            f.write(f"SwitchName=spine{s} Switches=leaf[{lo}-{hi}]\n")
        for c in range(ncore):
            lo, hi = c * spines_per_core, min(nspine, (c + 1) * spines_per_core) - 1
            f.write(f"SwitchName=core{c} Switches=spine[{lo}-{hi}]\n")
    block = os.path.join(d, "fleet-block.conf")
    with open(block, "w") as f:
        f.write(f"BlockSizes={per_leaf},{per_leaf * leaves_per_spine},{per_leaf * leaves_per_spine * spines_per_core}\n")
        for l in range(nleaf):
            f.write(f"BlockName=b{l} Nodes=n[{l * per_leaf}-{(l + 1) * per_leaf - 1}]\n")
    order = list(range(hosts))
    random.Random(seed).shuffle(order)
    hf = os.path.join(d, "fleet.hosts")
    with open(hf, "w") as f:
        f.writelines(f"n{h}\n" for h in order)
    return [tree, block, hf]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["chain", "hostbomb", "fleet"])
    p.add_argument("outdir")
    p.add_argument("--switches", type=int, default=200000)
    p.add_argument("--lines", type=int, default=40)
    p.add_argument("--hosts", type=int, default=131072)
    a = p.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    if a.kind == "chain":
        out = gen_chain(a.outdir, a.switches)
    elif a.kind == "hostbomb":
        out = gen_hostbomb(a.outdir, a.lines)
    else:
        out = gen_fleet(a.outdir, a.hosts)
    for f in out:
        print(f"{f} {os.path.getsize(f)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
