#!/usr/bin/env python3
"""tests/integration/test_graph_replay.py: replays of CUDA graphs holding captured AllReduces,
timed by the shim (hooks/graph_timing.c), on the simulator's modeled clock.

Runs graph_replay.c as 2 ranks (one GPU each) with and without the shim and checks: the same
output and exit codes; per rank one eager op, the captured ops (timing "captured"), and one
record per captured op and launch with timing gpu_event, one graph id, replay 1..LAUNCHES in
launch order, seqs that follow the capture's and agree across ranks, and (ungrouped) the
eager op's duration exactly; a group of ops on one stream shares its replay span (group_ops).
Prints `collscope report`'s AllReduce row (busbw).
Usage: test_graph_replay.py CASE --shim SO --sim-dir DIR --prog EXE --cli EXE"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

# case: (capture mode, iterations captured, ops per NCCL group (0: no group), launches, API)
CASES = {
    "global": ("global", 1, 0, 100, "runtime"),
    "thread_grouped": ("thread", 1, 1, 100, "runtime"),
    "iters5": ("global", 5, 0, 20, "runtime"),  # nccl-tests -G 5: a graph of 5 iterations, launched again and again
    "group2": ("relaxed", 1, 2, 50, "runtime"),
    "driver": ("global", 1, 0, 100, "driver"),  # instantiated and launched with the driver API
    # the driver fails collscope's graph calls (graphfail_cuda.c): no replay records (record), or
    # replay records with host timing (setevent); the job's output is the same
    "fail_record": ("global", 5, 0, 20, "runtime"),
    "fail_setevent": ("global", 1, 0, 100, "runtime"),
    # a global-mode capture open on a side stream while collscope's threads start (the harvest
    # thread, the online exchange's set-up): none of their CUDA calls may invalidate it
    "beside": ("global", 1, 0, 10, "runtime"),
}
HOLD_MS = {"beside": "400"}
# small: 4 KiB AllReduces (under the event sample's size), 70 eager ones first (seqs 0-69: the
# row's first 4 and seq 64 timed, the rest sampled out), then one captured at seq 70 (not a
# multiple of the sample, its row past its first 4): only the open capture keeps it bracketed
CASES["small"] = ("global", 1, 0, 100, "runtime")
SMALL = {"GRAPH_COUNT": "1024", "GRAPH_EAGER": "70", "COLLSCOPE_TIMING": "events"}  # (the CUDA-event path samples)
EAGER = {"small": 70}

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def run(args, argv, shim, extra=None):
    work = tempfile.mkdtemp(prefix="cs-graph-")
    dump = os.path.join(work, "dump")
    probe = os.path.join(work, "probe")
    os.makedirs(probe)
    procs = []
    for r in range(2):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env.update({
            "RANK": str(r), "WORLD_SIZE": "2", "LOCAL_RANK": str(r), "PROBE_DIR": probe,
            "COLLSCOPE_DIR": dump, "COLLSCOPE_JOB_ID": "graph", "COLLSCOPE_HOSTNAME": "h1",
            "LD_LIBRARY_PATH": args.sim_dir + ":" + env.get("LD_LIBRARY_PATH", ""),
            "COLLSCOPE_SIM_CLOCK": "model",
            # the eager op is the reference duration: no SDC check kernel inside its span
            "COLLSCOPE_SDC": "off",
        })
        if args.case in HOLD_MS:
            env["GRAPH_HOLD_MS"] = HOLD_MS[args.case]
        if args.case == "small":
            env.update(SMALL)
        if shim:
            env["LD_PRELOAD"] = args.shim
            env.update(extra or {})
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            o, e = p.communicate()
            check(False, "rank timed out")
        out.append((p.returncode, o, e))
    return out, dump, work


def lines_with(text, prefix):
    return [l for l in text.splitlines() if l.startswith(prefix)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    for a in ("--shim", "--sim-dir", "--prog", "--cli", "--graphfail"):
        ap.add_argument(a, default="")
    args = ap.parse_args()
    mode, iters, group, launches, api = CASES[args.case]
    nops = iters * (group if group else 1)
    argv = [args.prog, mode, str(iters), str(group), str(launches), api]

    base, _, wbase = run(args, argv, shim=False)
    fail = args.case[5:] if args.case.startswith("fail_") else ""
    extra = {"COLLSCOPE_LIBCUDA": args.graphfail, "GRAPHFAIL": fail} if fail else None
    shimmed, dump, work = run(args, argv, shim=True, extra=extra)
    for r, (a, b) in enumerate(zip(base, shimmed)):
        check(a[0] == 0 and b[0] == 0, "rank %d exit codes %d without the shim, %d with (%s)" % (r, a[0], b[0], b[2][-400:]))
        check(lines_with(a[1], "result") == lines_with(b[1], "result") and lines_with(a[1], "result"),
              "rank %d output differs: %s vs %s" % (r, lines_with(a[1], "result"), lines_with(b[1], "result")))
        check(lines_with(b[1], "expect") == ["expect eager=%d captured=%d replayed=%d" %
                                             (EAGER.get(args.case, 1), nops, nops * launches)],
              "rank %d: %s" % (r, lines_with(b[1], "expect")))

    per_rank = {}
    for f in sorted(glob.glob(os.path.join(dump, "*.jsonl"))):
        recs = [json.loads(l) for l in open(f)]
        per_rank[recs[0]["rank"]] = [x for x in recs if x["type"] == "op"]
        foot = [x for x in recs if x["type"] == "footer"]
        lost = {"record": nops, "setevent": nops * launches}.get(fail, 0)  # what could not be timed, counted
        check(len(foot) == 1 and foot[0].get("timing_lost") == lost,
              "rank %d footer timing_lost %s, want %d" % (recs[0]["rank"], foot and foot[0].get("timing_lost"), lost))
    check(sorted(per_rank) == [0, 1], "dumps of ranks %s" % sorted(per_rank))
    keys = {}
    for r, ops in sorted(per_rank.items()):
        eager = [x for x in ops if not x.get("graph") and not x["captured"]]
        cap = [x for x in ops if x["captured"]]
        rep = sorted((x for x in ops if x.get("graph")), key=lambda x: x["seq"])
        check(len(eager) == EAGER.get(args.case, 1) and eager[0]["timing"] == "gpu_event",
              "rank %d eager records %s" % (r, eager[:3]))
        check(len(cap) == nops and all(x["timing"] == "captured" for x in cap), "rank %d captured records %s" % (r, cap))
        if fail == "record":  # no node made at capture: the replays are not recorded
            check(not rep, "rank %d: %d replay records without graph nodes" % (r, len(rep)))
            continue
        if fail == "setevent":  # every replay recorded, with host timing (no event could be set)
            check(len(rep) == nops * launches and all(x["timing"] == "host" for x in rep),
                  "rank %d replay records %d, timings %s" % (r, len(rep), {x["timing"] for x in rep}))
            keys[r] = [(x["seq"], x["replay"]) for x in rep]
            continue
        if not check(len(rep) == nops * launches, "rank %d: %d replay records, want %d" % (r, len(rep), nops * launches)):
            continue
        check(len({x["graph"] for x in rep}) == 1, "rank %d graph ids %s" % (r, {x["graph"] for x in rep}))
        check(all(x["timing"] == "gpu_event" for x in rep), "rank %d replay timings %s" % (r, {x["timing"] for x in rep}))
        check([x["replay"] for x in rep] == [k // nops + 1 for k in range(nops * launches)],
              "rank %d replay numbers out of order" % r)
        first = max(x["seq"] for x in cap) + 1
        check([x["seq"] for x in rep] == list(range(first, first + nops * launches)), "rank %d replay seqs" % r)
        ends = [x["end_ns"] for x in rep]
        check(all(x["start_ns"] < x["end_ns"] for x in rep) and ends == sorted(ends), "rank %d replay spans" % r)
        ref = eager[0]["end_ns"] - eager[0]["start_ns"] if eager else 0
        if group > 1:
            check(all(x.get("group_ops") == group for x in rep), "rank %d group_ops %s" % (r, {x.get("group_ops") for x in rep}))
            for k in range(0, len(rep), group):
                m = rep[k:k + group]
                check(len({(x["start_ns"], x["end_ns"]) for x in m}) == 1, "rank %d group members' spans differ" % r)
        else:
            durs = {x["end_ns"] - x["start_ns"] for x in rep}
            check(durs == {ref}, "rank %d replay durations %s ns, the eager op's %d ns" % (r, sorted(durs)[:5], ref))
        keys[r] = [(x["seq"], x["replay"], x["bytes"]) for x in rep]
    check(fail == "record" or (len(keys) == 2 and keys.get(0) == keys.get(1)), "seq/replay sequences differ across ranks")

    if args.cli:
        rep = subprocess.run([args.cli, "report", dump], capture_output=True, text=True)
        check(rep.returncode == 0, "report failed: %s" % rep.stderr[-400:])
        for l in rep.stdout.splitlines():
            if "AllReduce" in l or "busbw(GB/s)" in l:
                print(l)
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(wbase, ignore_errors=True)
    print("%s: %s" % (args.case, "FAILED (%d)" % len(failures) if failures else "ok"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
