#!/usr/bin/env python3
"""tests/net/test_net_sim.py CASE --cli COLLSCOPE --apps DIR --shim LIBCOLLSCOPE --sim-dir DIR

The NCCL_NET wrapper end to end on the simulator: 8 ranks of dp_train on 4 simulated hosts
(collscope run --sim, the shim preloaded; ranks 2h, 2h+1 on simhost<h+1>, so the ring is
0..7). The sim's libnccl.so.2 loads NCCL_NET_PLUGIN the way NCCL does and sends its inter-host
traffic through it (ring hops, and pairwise transfers on a connection per ordered rank pair);
libcollscope wraps simnet (COLLSCOPE_NET_INNER=simnet). Cases:
  slowlink   link:a=simhost2,b=simhost3 fault -> report's slow_links names that host pair only
  p2plink    the same fault under dp_train --ops pairwise (AlltoAll + Send/Recv, no ring op):
             12 host pairs, slow_links = simhost2 <-> simhost3 (both directions) only; send-side
             link records for exactly the 48 inter-host rank pairs (most not ring neighbours),
             their bytes equal to the payload the job sends each peer
  identical  results (dp_train's checksums) equal without a net plugin, with simnet, and with
             the wrapper around simnet (allreduce, mixed, pairwise); link records only with the
             wrapper
  failopen   wrapper without an inner / inner missing / inner init failing: job unchanged,
             one log line per process, no link records
  slownic    nic:host=simhost3,pct=20 (its NIC at 1/1.2 of the bandwidth), the ring and pairwise:
             slow_nics = simhost3 only, its pairs at exactly 1/1.2 of the others' mean throughput,
             no slow link; a slow link names no NIC (slowlink, p2plink), nor a clean job
  abi9       the sim drives the wrapper's ncclNetPlugin_v9, _v10 and _v11 tables (the other
             cases its _v12, as NCCL 2.30 does)"""
import argparse, glob, json, os, shutil, subprocess, sys, tempfile

HOSTS = "simhost[1-4]"
FAULT = "link:a=simhost2,b=simhost3,us=3000"
# the slow-link cases run on the modeled clock (docs/simulator.md): every send's post-to-done
# time is simnet's wire model (size / 100 Gbit/s + the link delay), whatever the host's load
MODEL = {"COLLSCOPE_SIM_CLOCK": "model"}
P2P_US = 3000
FAULT_NIC = "nic:host=simhost3,pct=20"
# the ratio of simhost3's pairs' mean throughput to the others' on the modeled clock: the ring's
# 2 pairs, pairwise's 6 (its messages' wire time x 1.2, the link's delay on top of it alike)
NIC_RATIO = (0.833472803347, 0.833357919064)
FAULT_P2P = "link:a=simhost2,b=simhost3,us=%d" % P2P_US


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


# On the wall clock the simulator's transport is CPU-bound (healthy pairs differed by up to 6x
# on a loaded 2-core box, and the thresholds had to be loosened to 0.05 and 0.1); on the
# modeled clock every healthy pair measures the same, so the product default (0.5) judges.
HEALTHY_GBPS = 106.496  # 100 Gbit/s in the link histogram's bucket (4 per octave, its middle)


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
    assert r["slow_nics"] == [], r["slow_nics"]  # one slow pair: its ends' other pairs are healthy
    named = 0
    for s in r["stragglers"]:
        if s["kind"] == "link" and s["rank"] == -1:
            assert (s["src_host"], s["dst_host"]) == ("simhost2", "simhost3"), s
            print("  %s: straggler entry kind link (rank -1) now names %s -> %s" % (tag, s["src_host"], s["dst_host"]))
            named += 1
    assert named or not need_straggler, r["stragglers"]
    text = subprocess.run([a.cli, "report", d], stdout=subprocess.PIPE, text=True).stdout
    assert "slow link: simhost2 -> simhost3" in text, text
    healthy = [l["gbps_p50"] for l in r["links"] if (l["src_host"], l["dst_host"]) != ("simhost2", "simhost3")]
    assert healthy == [HEALTHY_GBPS] * 3, healthy
    s = r["slow_links"][0]
    print("  %s: slow pair simhost2 -> simhost3 at %.3f Gbit/s p50 vs median %.3f of the others (ratio %.4f)" % (
        tag, s["gbps_p50"], s["ref_gbps_p50"], s["ratio"]))


# dp_train --ops pairwise's traffic (tests/apps/dp_train.c run_pairwise): payload bytes per
# (src rank, dst rank) over `steps` steps of one AlltoAll and one Send/Recv to rank + shift,
# n floats per peer each, n from SIZES (one per step) capped by --size
SIZES = [8, 4096, 256, 65536, 32, 1 << 20, 1024, 16384, 64, 4 << 20, 512, 262144]


def pairwise_bytes(world, steps, size):
    out = {}
    for step in range(steps):
        n = max(1, min(SIZES[step % len(SIZES)], size) // 4)
        shift = 1 + step % (world - 1)
        for r in range(world):
            for p in range(world):
                if p != r:   # AlltoAll: n floats to every peer; Send/Recv: n floats to r + shift
                    out[(r, p)] = out.get((r, p), 0) + 4 * n * (2 if p == (r + shift) % world else 1)
    return out


def check_p2plink(a, d):
    hosts = {}
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            o = json.loads(line)
            if o.get("type") == "header":
                hosts[o["rank"]] = o["host"]
    assert sorted(hosts) == list(range(8)), hosts
    # the ring: hosts in order of their lowest rank, ranks ascending inside a host
    ring = sorted(range(8), key=lambda r: (min(q for q in hosts if hosts[q] == hosts[r]), r))
    neighbours = {(ring[i], ring[(i + 1) % 8]) for i in range(8)} | {(ring[(i + 1) % 8], ring[i]) for i in range(8)}
    sent = {}
    for l in links(d):
        if l["dir"] == "send":
            sent[(l["rank"], l["peer"])] = sent.get((l["rank"], l["peer"]), 0) + l["bytes"]
    want = {k: v for k, v in pairwise_bytes(8, 20, 256 * 1024).items() if hosts[k[0]] != hosts[k[1]]}
    assert len(want) == 48, want
    assert sent == want, ("send-side link bytes per rank pair", sorted(sent.items()), sorted(want.items()))
    far = sorted(k for k in sent if k not in neighbours)
    assert len(far) == 48 - 8, far   # inter-host ring neighbours: 1-2, 3-4, 5-6, 7-0, each way
    print("  p2plink: send-side link records for all %d inter-host rank pairs, %d of them not ring neighbours "
          "(e.g. %d -> %d), bytes = the job's payload per pair" % (len(sent), len(far), far[0][0], far[0][1]))
    # judged at the product default: every healthy pair measures the same on the modeled clock
    r = report(a, d)
    for l in r["links"]:
        print("  p2plink: %s -> %s  %d bytes  p50 %.3f Gbit/s  p10 %.3f  side %s%s" % (
            l["src_host"], l["dst_host"], l["bytes"], l["gbps_p50"], l["gbps_p10"], l["side"], "  SLOW" if l["slow"] else ""))
    pairs = sorted((l["src_host"], l["dst_host"]) for l in r["links"])
    assert pairs == sorted((x, y) for x in set(hosts.values()) for y in set(hosts.values()) if x != y), pairs
    assert all(l["side"] == "send" for l in r["links"]), r["links"]
    slow = sorted((s["src_host"], s["dst_host"]) for s in r["slow_links"])
    assert slow == [("simhost2", "simhost3"), ("simhost3", "simhost2")], r["slow_links"]
    assert r["slow_nics"] == [], r["slow_nics"]
    text = subprocess.run([a.cli, "report", d], stdout=subprocess.PIPE, text=True).stdout
    assert "slow link: simhost2 -> simhost3" in text and "slow link: simhost3 -> simhost2" in text, text
    healthy = [l["gbps_p50"] for l in r["links"] if {l["src_host"], l["dst_host"]} != {"simhost2", "simhost3"}]
    assert healthy == [HEALTHY_GBPS] * 10, healthy
    # simnet delivers every message of the pair P2P_US late: no message (256 KiB at most) can
    # beat 256 KiB / P2P_US, so the wire delay is in the plugin's post-to-done times. The p50
    # is a histogram bucket's middle (4 buckets per octave, shim/net_plugin_harvest.c): up to
    # 12.5% above the throughput it stands for.
    cap = 262144 * 8 / (P2P_US * 1e-6) / 1e9 * 1.125
    assert all(s["gbps_p50"] < cap for s in r["slow_links"]), (cap, r["slow_links"])
    for s in r["slow_links"]:
        print("  p2plink: slow pair %s -> %s at %.3f Gbit/s p50 vs median %.3f of the others (ratio %.4f)" % (
            s["src_host"], s["dst_host"], s["gbps_p50"], s["ref_gbps_p50"], s["ratio"]))


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
            out, _, d = run_job(a, tmp, "slow", wrapped(a, dict(MODEL, COLLSCOPE_SIM_FAULTS=FAULT)), steps=20)
            check_slow(a, d, "slowlink", need_straggler=True)
            # no fault: no slow pair
            out, _, d = run_job(a, tmp, "clean", wrapped(a, MODEL))
            r = report(a, d)
            assert len(r["links"]) == 4 and r["slow_links"] == [] and r["slow_nics"] == [], r["links"]
            assert [l["gbps_p50"] for l in r["links"]] == [HEALTHY_GBPS] * 4, r["links"]
            print("  clean: 4 pairs, no slow link (p50 %s Gbit/s)" % ", ".join("%.2f" % l["gbps_p50"] for l in r["links"]))
        elif a.case == "p2plink":
            _, sums, d = run_job(a, tmp, "p2p", wrapped(a, dict(MODEL, COLLSCOPE_SIM_FAULTS=FAULT_P2P)), ops="pairwise",
                                 steps=20)
            assert "ops=pairwise transfers=40 " in sums[0], sums
            check_p2plink(a, d)
        elif a.case == "identical":
            for ops in (None, "mixed", "pairwise"):
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
        elif a.case == "slownic":
            # simnet carries every message with an end on simhost3 at 1/1.2 of 100 Gbit/s (as the
            # simulator's cost model does its ring edges); per pair, bytes x 8 / the messages' time
            for ops, npairs, ratio in ((None, 2, NIC_RATIO[0]), ("pairwise", 6, NIC_RATIO[1])):
                _, _, d = run_job(a, tmp, "nic-%s" % ops, wrapped(a, dict(MODEL, COLLSCOPE_SIM_FAULTS=FAULT_NIC)), ops=ops,
                                  steps=20)
                r = report(a, d)
                print("  slownic (%s): slow NICs %s, slow links %s" % (ops or "allreduce", r["slow_nics"], r["slow_links"]))
                assert r["slow_links"] == [], r["slow_links"]  # 20 %: no pair far below the rest
                assert [(n["host"], n["pairs"]) for n in r["slow_nics"]] == [("simhost3", npairs)], r["slow_nics"]
                n = r["slow_nics"][0]
                assert abs(n["ratio"] - ratio) <= 1e-9 and n["other_pairs"] == npairs, n
                text = subprocess.run([a.cli, "report", d], stdout=subprocess.PIPE, text=True).stdout
                assert "slow NIC: simhost3: its %d pairs (in and out)" % npairs in text, text
        elif a.case == "abi9":
            for abi in ("9", "10", "11"):  # the default (12) is every other case's
                out, _, d = run_job(a, tmp, "abi" + abi, wrapped(a, dict(MODEL, COLLSCOPE_SIM_FAULTS=FAULT,
                                                                          COLLSCOPE_SIM_NET_ABI=abi)))
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
