#!/usr/bin/env python3
"""tests/tools/test_groups_sim.py: the report on NCCL groups, end to end on the simulator's
modeled clock (COLLSCOPE_SIM_CLOCK=model: every figure exact under any load), 4 ranks,
tests/apps/busbw_loop with CUDA-event timing of every op:

  - nccl-tests' -m 4 (`--agg 4`: 4 AllReduces of a size in one group per iteration; the app
    prints the loop's time / (steps x 4), as nccl-tests' src/common.cu BenchTime does): no
    AllReduce row is timed with the group's span (its records are counted as `grouped`), and
    the group row `AllReduce x4` of 4 x S bytes has, for every S >= 32 KiB, the app's own busbw
    for size S and the -m 1 run's busbw of S, both within 0.1% (the requirement is 10%);
  - a grouped Send/Recv all-to-all (`--op alltoall`, PyTorch's all_to_all_single): one
    AlltoAll group row per size with the app's bytes (count per peer x peers, nccl-tests'
    src/alltoall.cu) and busbw (factor (n-1)/n), within 0.1%, and one detector instance per
    call (the comms section's instances);
  - the HTML page marks the group rows and notes the members without a time of their own.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

FAILS = []
SIZES = [32768 * 4 ** k for k in range(4)]  # 32 KiB .. 2 MiB
STEPS, WARMUP = 10, 2


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL: " + msg, file=sys.stderr)
    return cond


def close(a, b, tol=1e-3):
    return a is not None and b is not None and abs(a - b) <= tol * abs(b)


def run(args, work, name, extra):
    dump = os.path.join(work, name)
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("COLLSCOPE_") or k.startswith("NCCL_") or k == "LD_PRELOAD":
            env.pop(k)
    env.update({"COLLSCOPE_DIR": dump, "COLLSCOPE_SHIM": args.shim, "COLLSCOPE_SIM_DIR": args.sim_dir,
                "COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_TIMING": args.timing, "COLLSCOPE_EVENT_SAMPLE": "1",
                "COLLSCOPE_SDC": "off", "COLLSCOPE_RING": "0", "COLLSCOPE_ONLINE": "0"})
    p = subprocess.run([args.cli, "run", "-n", "4", "--sim", "--", args.app, "--min", str(SIZES[0]), "--size",
                        str(SIZES[-1]), "--warmup", str(WARMUP), "--steps", str(STEPS)] + extra,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
    check(p.returncode == 0, "%s: run rc %d: %s" % (name, p.returncode, p.stderr[-2000:]))
    app = {}
    for line in p.stdout.splitlines():
        if line.startswith("busbw "):
            kv = dict(x.split("=", 1) for x in line.split()[1:])
            app[int(kv["bytes"])] = float(kv["busbw_gbs"])  # every rank prints the same figures
    check(sorted(app) == SIZES, "%s: app sizes %s" % (name, sorted(app)))
    r = subprocess.run([args.cli, "report", dump, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    check(r.returncode == 0, "%s: report rc %d: %s" % (name, r.returncode, r.stderr[-800:]))
    return app, json.loads(r.stdout) if r.returncode == 0 else {"ops": [], "comms": []}, dump


def rows(doc, op, group):
    return {r["bytes"]: r for r in doc["ops"] if r["op"] == op and ("group_ops" in r) == group}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--sim-dir", required=True)
    # events: every op on CUDA events; auto (the default): after probation NCCL's profiler plugin
    # times the ops, and a fused group's members all get its launch's kernel stamps
    ap.add_argument("--timing", default="events")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cs-groups-")

    app1, doc1, _ = run(args, work, "m1", ["--agg", "1"])
    app4, doc4, dump4 = run(args, work, "m4", ["--agg", "4"])
    # the HTML page: the group rows marked as groups, the members' note
    html = os.path.join(work, "m4.html")
    h = subprocess.run([args.cli, "report", dump4, "--html", "-o", html], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    page = open(html).read() if h.returncode == 0 and os.path.exists(html) else ""
    check(page.count('<tr data-group="1">') == len(SIZES) and 'data-note="grouped"' in page,
          "HTML: group rows or the members' note missing")
    one = rows(doc1, "AllReduce", False)
    members = rows(doc4, "AllReduce", False)
    groups = rows(doc4, "AllReduce x4", True)
    for s in SIZES:
        m = members.get(s)
        check(m is not None and m["timed"] == 0 and m.get("grouped") == m["count"],
              "-m 4 size %d: member row timed with the group's span: %s" % (s, m))
        g = groups.get(4 * s)
        if not check(g is not None and g["group_ops"] == 4, "-m 4 size %d: no group row: %s" % (s, doc4["ops"])):
            continue
        bw = g["busbw_mean_gbs"]
        check(close(bw, app4[s]), "-m 4 size %d: report busbw %s, the app's (nccl-tests -m 4) %s" % (s, bw, app4[s]))
        ref = one.get(s, {}).get("busbw_mean_gbs")
        check(close(bw, ref), "-m 4 size %d: report busbw %s, the -m 1 report's %s" % (s, bw, ref))
        print("size %8d: -m 4 group row %.4f GB/s, app %.4f, -m 1 row %s" % (s, bw, app4[s], ref))

    appa, doca, dumpa = run(args, work, "a2a", ["--op", "alltoall"])
    a2a = rows(doca, "AlltoAll", True)
    for s in SIZES:
        g = a2a.get(s)
        if not check(g is not None and g["group_ops"] == 8, "alltoall size %d: no AlltoAll row: %s" % (s, doca["ops"])):
            continue
        check(close(g["busbw_mean_gbs"], appa[s]),
              "alltoall size %d: report busbw %s, the app's %s" % (s, g["busbw_mean_gbs"], appa[s]))
        print("alltoall %8d: group row %.4f GB/s, app %.4f" % (s, g["busbw_mean_gbs"], appa[s]))
    for op in ("Send", "Recv"):
        for s, r in rows(doca, op, False).items():
            check(r["timed"] == 0 and r.get("grouped") == r["count"], "alltoall %s row timed: %s" % (op, r))
    # one instance per call: each size's warm-up and timed iterations, plus the ops that are
    # no group on rank 0's file (none expected; counted from the dump to be exact)
    groups_r0, plain_r0 = set(), 0
    for f in glob.glob(os.path.join(dumpa, "*-r0-*.jsonl")):
        for line in open(f):
            x = json.loads(line)
            if x.get("type") != "op" or x.get("seq", -1) < 0:
                continue
            if x.get("group_ops", 0) > 1:
                groups_r0.add(x["group"])
            else:
                plain_r0 += 1
    check(len(groups_r0) == len(SIZES) * (STEPS + WARMUP), "alltoall: %d groups on rank 0" % len(groups_r0))
    inst = sum(c["instances"] for c in doca["comms"])
    check(inst == len(groups_r0) + plain_r0,
          "alltoall: %d instances, want one per call: %d" % (inst, len(groups_r0) + plain_r0))
    shutil.rmtree(work, ignore_errors=True)
    if FAILS:
        print("%d checks failed" % len(FAILS), file=sys.stderr)
        return 1
    print("groups: -m 4 and alltoall group rows agree with nccl-tests' figures; one instance per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
