#!/usr/bin/env python3
"""tests/integration/test_callpatterns.py CASE --shim SO --sim-dir DIR --prog EXE

Call patterns of frameworks, run by tests/integration/callpatterns.c (two simulated GPUs, one
thread each) with and without the shim, on the modeled clock:
  capture   every capture mode (global, thread, relaxed), grouped and not, above and below
            the SDC size (COLLSCOPE_SDC=all): rc 0 and identical output with and without the
            shim; the captured op is counted in the footer's sdc_captured when at or above the
            SDC size, and no SDC kernel was launched into the graph; and a thread's first
            checked collective (the SDC set-up) while another thread captures in global mode
            leaves that capture whole
  comm      a split of a non-blocking parent, a split inside a group, a non-blocking init:
            every op on the new communicator carries its id (the same on both ranks, not
            0), size 2, its rank and seqs 0, 1, 2, and a comm record names it
  simulate  ncclGroupSimulateEnd, then 20 AllReduces per rank: all 40 recorded (seq 2..21),
            the 4 simulated ops counted as drops, none recorded
  sample    COLLSCOPE_EVENT_SAMPLE=8, each thread on its own communicator, AlltoAll and
            grouped Send/Recv of three sizes: every (communicator, rank, op, bytes) row that
            ran at least 4 times has at least 4 GPU-timed records"""
import argparse, collections, glob, json, os, shutil, subprocess, sys, tempfile

SDC_BYTES = 1 << 20  # COLLSCOPE_SDC_MIN_BYTES's default


def run(a, argv, shim, extra=None):
    tmp = tempfile.mkdtemp(prefix="cs-callpat-")
    dump = os.path.join(tmp, "dump")
    env = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_JOB_ID", "COLLSCOPE_SIM_FAULTS",
              "LD_PRELOAD"):
        env.pop(k, None)
    env.update({
        "LD_LIBRARY_PATH": a.sim_dir + ":" + env.get("LD_LIBRARY_PATH", ""),
        "COLLSCOPE_SIM_GPUS": "2", "COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_DIR": dump,
        "COLLSCOPE_SHM_DIR": tmp, "COLLSCOPE_HOSTNAME": "h1", "COLLSCOPE_JOB_ID": "callpat",
    })
    env.update(extra or {})
    if shim:
        env["LD_PRELOAD"] = a.shim
    p = subprocess.run([a.prog] + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    recs = []
    for f in sorted(glob.glob(os.path.join(dump, "*.jsonl"))):
        recs += [json.loads(l) for l in open(f) if l.strip()]
    shutil.rmtree(tmp, ignore_errors=True)
    return p, recs


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def footer(recs):
    f = [r for r in recs if r["type"] == "footer"]
    check(len(f) == 1, "one footer: %s" % f)
    return f[0]


def ops(recs):
    return [r for r in recs if r["type"] == "op"]


def case_capture(a):
    for mode in ("global", "thread", "relaxed"):
        for grouped in ("0", "1"):
            for count in (SDC_BYTES // 4 * 2, 1024):  # 2 MiB (the SDC checks it) and 4 KiB
                argv = ["capture", mode, grouped, str(count)]
                base, _ = run(a, argv, False)
                got, recs = run(a, argv, True, {"COLLSCOPE_SDC": "all"})
                print("%s: rc %d / %d with the shim" % (" ".join(argv), base.returncode, got.returncode))
                check(base.returncode == 0, "without the shim: %s %s" % (base.stdout, base.stderr))
                check(got.returncode == 0, "with the shim: %s %s" % (got.stdout, got.stderr))
                check(sorted(base.stdout.splitlines()) == sorted(got.stdout.splitlines()),
                      "output differs:\n%s\n%s" % (base.stdout, got.stdout))
                check("SDC check memory" not in got.stderr, got.stderr)
                f = footer(recs)
                o = ops(recs)
                cap = [r for r in o if r["captured"]]
                check(len(cap) == 2, "two captured records: %s" % cap)
                # and every replay timed, rank by rank, the seqs following the capture's
                for cr in (0, 1):
                    rep = sorted((r for r in o if r.get("graph") and r["comm_rank"] == cr), key=lambda r: r["seq"])
                    check([r["replay"] for r in rep] == list(range(1, 101)) and
                          [r["seq"] for r in rep] == list(range(1, 101)) and
                          all(r["timing"] == "gpu_event" for r in rep),
                          "rank %d: replays %s" % (cr, [(r["seq"], r.get("replay"), r["timing"]) for r in rep][:8]))
                check(len(o) == 202, "%d records, want 2 captured + 2 x 100 replays" % len(o))
                want = 2 if count * 4 >= SDC_BYTES else 0
                check(f.get("sdc_captured") == want and f.get("sdc_launches") == 0,
                      "sdc_captured %s (want %d), sdc_launches %s" % (f.get("sdc_captured"), want,
                                                                       f.get("sdc_launches")))
    # another thread's first checked collective during a global capture: the SDC set-up
    # (allocations) must not invalidate that capture
    base, _ = run(a, ["beside"], False)
    got, recs = run(a, ["beside"], True, {"COLLSCOPE_SDC": "all"})
    print("beside: rc %d / %d with the shim" % (base.returncode, got.returncode))
    check(base.returncode == 0, "without the shim: %s %s" % (base.stdout, base.stderr))
    check(got.returncode == 0, "with the shim: %s %s" % (got.stdout, got.stderr))
    check(sorted(base.stdout.splitlines()) == sorted(got.stdout.splitlines()), "output differs")
    f = footer(recs)
    check(f.get("sdc") == "ready" and f.get("sdc_launches") == 2, "rank 1's op checked: %s" % f)


def case_comm(a):
    for kind in ("splitnb", "splitgroup", "initnb"):
        p, recs = run(a, ["comm", kind], True)
        print("comm %s: rc %d" % (kind, p.returncode))
        check(p.returncode == 0, p.stdout + p.stderr)
        comms = [r for r in recs if r["type"] == "comm" and r["event"] in ("init", "split")]
        o = ops(recs)
        check(len(o) == 6, "6 ops: %s" % o)
        ids = {r["comm"] for r in o}
        check(len(ids) == 1 and "0" * 16 not in ids, "one comm id on every op: %s" % ids)
        cid = ids.pop()
        check(sorted((r["comm_size"], r["comm_rank"], r["seq"]) for r in o) ==
              [(2, rk, s) for rk in (0, 1) for s in (0, 1, 2)], "size, rank, seq: %s" %
              [(r["comm_size"], r["comm_rank"], r["seq"]) for r in o])
        mine = [r for r in comms if r["comm"] == cid]
        check(sorted((r["size"], r["rank"]) for r in mine) == [(2, 0), (2, 1)], "comm records: %s" % mine)
        if kind != "initnb":
            check(all(r["event"] == "split" and r["parent"] for r in mine), "split records: %s" % mine)


def case_simulate(a):
    p, recs = run(a, ["simulate"], True)
    print("simulate: rc %d" % p.returncode)
    check(p.returncode == 0, p.stdout + p.stderr)
    o = ops(recs)
    f = footer(recs)
    print("ops %d, footer ops %d drops %d" % (len(o), f["ops"], f["drops"]))
    check(len(o) == 40 and f["ops"] == 40, "40 ops recorded: %d, footer %d" % (len(o), f["ops"]))
    check(f["drops"] == 4, "the 4 simulated ops counted: drops %d" % f["drops"])
    check(all(r["group"] == 0 for r in o), "no grouped record")
    check(sorted(r["seq"] for r in o) == sorted(list(range(2, 22)) * 2), "seqs %s" % sorted(r["seq"] for r in o))


def case_sample(a):
    p, recs = run(a, ["sample"], True, {"COLLSCOPE_EVENT_SAMPLE": "8"})
    print("sample: rc %d" % p.returncode)
    check(p.returncode == 0, p.stdout + p.stderr)
    ran, timed = collections.Counter(), collections.Counter()
    for r in ops(recs):
        k = (r["comm"], r["comm_rank"], r["op"], r["bytes"])
        ran[k] += 1
        timed[k] += r["timing"] == "gpu_event"
    blind = [(k, ran[k], timed[k]) for k in ran if ran[k] >= 4 and timed[k] < 4]
    print("records %d, gpu-timed %d, rows %d, rows with < 4 timed: %s" % (sum(ran.values()), sum(timed.values()),
                                                                          len(ran), blind))
    check(len(ran) == 18 and all(v >= 6 for v in ran.values()), "18 rows: %s" % ran)
    check(not blind, "blind rows")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["capture", "comm", "simulate", "sample"])
    ap.add_argument("--shim", required=True)
    ap.add_argument("--sim-dir", required=True)
    ap.add_argument("--prog", required=True)
    a = ap.parse_args()
    globals()["case_" + a.case](a)
    print("ok")


if __name__ == "__main__":
    main()
