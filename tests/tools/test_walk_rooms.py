#!/usr/bin/env python3
"""tests/tools/test_walk_rooms.py: the walk of one op record through `collscope report`
(DESIGN.md "Reading dumps"): the source files ("rooms") whose functions handle it, from its dump
line to the detector. A 2-rank dump of one AllReduce each (tests/tools/gen_dumps) is reported
(-j 1) under the debugger with a breakpoint on every function of tools/, analysis/ and stats/
(walk_rooms_gdb.py); the record followed is the last one parsed (the one that completes the
instance). A stop is the record's when its stack holds one of the functions that carry it: the
op line's parse (fast_op, dump_parse_op, only while that line is parsed), agg_on_op (the
report's tables), cs_walk_push / cs_walk_advance (the walk, and the instance it hands on),
cs_det_stream_instance (the detector); the SDC comparison, views, balance and steps that also
take the instance are left out. Consecutive stops in one file are one visit; a visit to a file
already left is a return (a call into it: coming back from a call is not counted). The walk to the detector's door (the entry of cs_det_stream_instance)
must visit at most MAX_ROOMS files. Skipped (77) without the debugger."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

MAX_ROOMS = 8
START = {"fast_op", "dump_parse_op"}
CARRY = START | {"agg_on_op", "cs_walk_push", "cs_walk_advance", "cs_det_stream_instance"}
SIDE = {"report_agg_sdc_instance", "report_views_instance", "report_balance_instance", "report_steps_gather_instance"}
DOOR = "cs_det_stream_instance"


def walk(hits, to_door):
    """the rooms of the record's walk, in order (one entry per visit): at each of the record's
    stops, the files of the frames that were not on its previous stop's stack (inlined
    functions are frames too), outermost first, from the outermost carrying function down"""
    names = [set(f[0] for f in h) for h in hits]
    first = max(i for i, n in enumerate(names) if "agg_on_op" in n)
    last = first
    while first > 0 and START & names[first - 1]:
        first -= 1
    while last + 1 < len(hits) and START & names[last + 1]:
        last += 1
    rooms, prev = [], []
    for i in range(first, len(hits)):
        n = names[i]
        carry = CARRY if i <= last else CARRY - START  # a later line's parse is not this record's
        if not carry & n or SIDE & n:
            continue
        stack = list(reversed(hits[i]))  # outermost first
        root = min(k for k, f in enumerate(stack) if f[0] in carry)
        stack = stack[root:]
        if to_door and DOOR in n:
            stack = stack[:[f[0] for f in stack].index(DOOR) + 1]  # not inside the detector
        c = 0
        while c < len(prev) and c < len(stack) and prev[c] == stack[c]:
            c += 1
        for f in stack[c:]:
            if not rooms or rooms[-1] != f[1]:
                rooms.append(f[1])
        prev = stack
    return rooms


def figures(rooms):
    seen, returns = set(), 0
    for r in rooms:
        returns += r in seen
        seen.add(r)
    return len(seen), returns


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--src", required=True)
    a = ap.parse_args()
    gdb = shutil.which("gdb")
    if not gdb:
        print("SKIP: no debugger")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        dumps, out = os.path.join(tmp, "d"), os.path.join(tmp, "hits")
        subprocess.run([a.gen, "--ranks", "2", "--ops", "1", "--out", dumps], check=True, stdout=subprocess.DEVNULL)
        env = dict(os.environ, WALK_SRC=os.path.abspath(a.src), WALK_OUT=out)
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "walk_rooms_gdb.py")
        subprocess.run([gdb, "-q", "-batch", "-nx", "-x", script, "--args", a.cli, "report", "-j", "1", dumps],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hits = [[x.split("@", 1) for x in line.split()] for line in open(out)]
    if not any(h and h[0][0] == DOOR for h in hits):
        print("FAIL: the detector was never entered (no debug information?)")
        return 1
    full, door = walk(hits, False), walk(hits, True)
    for what, rooms in (("to the detector's door", door), ("through the detector", full)):
        n, r = figures(rooms)
        print("walk %s: %d rooms, %d returns" % (what, n, r))
        print("  " + " -> ".join(rooms))
    n, _ = figures(door)
    if n > MAX_ROOMS:
        print("FAIL: the walk to the detector visits %d rooms, more than %d" % (n, MAX_ROOMS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
