#!/usr/bin/env python3
"""tests/net/test_net_sim.py CASE --cli COLLSCOPE --apps DIR --shim LIBCOLLSCOPE --sim-dir DIR

The NCCL_NET wrapper end to end on the simulator: 8 ranks of dp_train on 4 simulated hosts
(collscope run --sim, the shim preloaded). The sim's libnccl.so.2 loads NCCL_NET_PLUGIN the
way NCCL does and sends its inter-host ring hops through it; libcollscope wraps simnet
(COLLSCOPE_NET_INNER=simnet). Cases:
  slowlink   link:a=simhost2,b=simhost3 fault -> report's slow_links names that host pair only
  identical  results (dp_train's checksums) equal without a net plugin, with simnet, and with
             the wrapper around simnet; link records only with the wrapper
  failopen   wrapper without an inner / inner missing / inner init failing: job unchanged,
             one log line per process, no link records
  abi9       the sim drives the wrapper's ncclNetPlugin_v9 and _v10 tables"""
import argparse, glob, json, os, shutil, subprocess, sys, tempfile

HOSTS = "simhost[1-4]"
FAULT = "link:a=simhost2,b=simhost3,us=3000"


def run_job(a, tmp, tag, env_extra, ops=None, steps=10):
    out = os.path.join(tmp, tag)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_SIM_DIR=a.sim_dir)
    for k in ("NCCL_NET_PLUGIN", "COLLSCOPE_NET_INNER", "COLLSCOPE_SIM_FAULTS", "COLLSCOPE_SIMNET_FAIL",
              "COLLSCOPE_SIM_NET_ABI"):
        env.pop(k, None)
    env.update(env_extra)
    cmd = [a.cli, "run", "-n", "8", "--hosts", HOSTS, "--sim", "--", os.path.join(a.apps, "dp_train"),
           "--steps", str(steps), "--size", "256K"]
    if ops:
        cmd += ["--ops", ops]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    if p.returncode != 0:
        print(p.stdout)
    assert p.returncode == 0, (tag, p.returncode)
    sums = sorted(l for l in p.stdout.splitlines() if l.startswith("summary "))
    assert sums and all("PASS" in l for l in sums), (tag, sums)
    return p.stdout, sums, out


def links(d):
    v = []
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            o = json.loads(line)
            if o.get("type") == "link":
                v.append(o)
    return v


def report(a, d, env=None):
    p = subprocess.run([a.cli, "report", d, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, **(env or {})))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def wrapped(a, extra=None):
    e = {"NCCL_NET_PLUGIN": a.shim, "COLLSCOPE_NET_INNER": "simnet"}
    e.update(extra or {})
    return e


def check_slow(a, d, tag, need_straggler=False):
    r = report(a, d)
    for l in r["links"]:
        print("  %s: %s -> %s  %d bytes  p50 %.3f Gbit/s  p10 %.3f  side %s%s" % (
            tag, l["src_host"], l["dst_host"], l["bytes"], l["gbps_p50"], l["gbps_p10"], l["side"],
            "  SLOW" if l["slow"] else ""))
    assert len(r["links"]) == 4, r["links"]   # ring 0..7 on 4 hosts: 4 inter-host edges
    assert all(l["side"] == "send" and l["src_host"] and l["dst_host"] for l in r["links"]), r["links"]
    slow = [(s["src_host"], s["dst_host"]) for s in r["slow_links"]]
    assert slow == [("simhost2", "simhost3")], r["slow_links"]
    named = 0
    for s in r["stragglers"]:
        if s["kind"] == "link" and s["rank"] == -1:
            assert (s["src_host"], s["dst_host"]) == ("simhost2", "simhost3"), s
            print("  %s: straggler entry kind link (rank -1) now names %s -> %s" % (tag, s["src_host"], s["dst_host"]))
            named += 1
    assert named or not need_straggler, r["stragglers"]
    text = subprocess.run([a.cli, "report", d], stdout=subprocess.PIPE, text=True).stdout
    assert "slow link: simhost2 -> simhost3" in text, text
    s = r["slow_links"][0]
    print("  %s: slow pair simhost2 -> simhost3 at %.3f Gbit/s p50 vs median %.3f of the others (ratio %.4f)" % (
        tag, s["gbps_p50"], s["ref_gbps_p50"], s["ratio"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--sim-dir", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-net-")
    try:
        if a.case == "slowlink":
            out, _, d = run_job(a, tmp, "slow", wrapped(a, {"COLLSCOPE_SIM_FAULTS": FAULT}), steps=20)
            check_slow(a, d, "slowlink", need_straggler=True)
            # no fault: no slow pair
            out, _, d = run_job(a, tmp, "clean", wrapped(a))
            # the simulator's transport is CPU-bound: on a loaded 2-core box clean pairs differ
            # by 2-3x (seen: 22.5 vs 45-53 Gbit/s), across the default 0.5 threshold; the faulty
            # pair above is at ~0.007 of the others. Judge the clean run at 0.2.
            r = report(a, d, {"COLLSCOPE_LINK_SLOW_FRAC": "0.2"})
            assert len(r["links"]) == 4 and r["slow_links"] == [], r["links"]
            print("  clean: 4 pairs, no slow link (p50 %s Gbit/s)" % ", ".join("%.2f" % l["gbps_p50"] for l in r["links"]))
        elif a.case == "identical":
            for ops in (None, "mixed"):
                _, s0, d0 = run_job(a, tmp, "none-%s" % ops, {}, ops=ops)
                _, s1, d1 = run_job(a, tmp, "simnet-%s" % ops, {"NCCL_NET_PLUGIN": "simnet"}, ops=ops)
                _, s2, d2 = run_job(a, tmp, "wrapped-%s" % ops, wrapped(a), ops=ops)
                assert s0 == s1 == s2, (s0, s1, s2)
                assert not links(d0) and not links(d1), "link records without the wrapper"
                lk = links(d2)
                assert lk and sum(l["bytes"] for l in lk if l["dir"] == "send") == \
                    sum(l["bytes"] for l in lk if l["dir"] == "recv") > 0, lk
                print("  identical (%s): %s" % (ops or "allreduce", s0[0]))
        elif a.case == "failopen":
            _, s0, _ = run_job(a, tmp, "ref", {})
            cases = [("noinner", {"NCCL_NET_PLUGIN": a.shim}, "COLLSCOPE_NET_INNER is not set"),
                     ("missing", {"NCCL_NET_PLUGIN": a.shim, "COLLSCOPE_NET_INNER": "/nonexistent/libnccl-net-x.so"},
                      "cannot load COLLSCOPE_NET_INNER"),
                     ("initfail", wrapped(a, {"COLLSCOPE_SIMNET_FAIL": "init"}), "failed to initialise")]
            for tag, env, msg in cases:
                out, s, d = run_job(a, tmp, tag, env)
                assert s == s0, (tag, s, s0)
                assert not links(d), tag
                n = sum(1 for l in out.splitlines() if msg in l)
                assert n == 8, (tag, n, out)   # one line per process
                print("  failopen %s: results unchanged, no link records, %d log lines (one per rank)" % (tag, n))
        elif a.case == "abi9":
            for abi in ("9", "10"):
                out, _, d = run_job(a, tmp, "abi" + abi, wrapped(a, {"COLLSCOPE_SIM_FAULTS": FAULT,
                                                                     "COLLSCOPE_SIM_NET_ABI": abi}))
                check_slow(a, d, "v" + abi)
        else:
            print("unknown case", a.case)
            return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
