#!/usr/bin/env python3
"""Mid-job fault onsets on the modeled clock, exactly (docs/simulator.md "Faults").

Each case runs dp_train (8 ranks on simhost[1-4], 3 AllReduces per step, --compute-us 1000)
with collscope twice, without and with the fault, and compares per rank and collective
instance k (seq on the one communicator):
  gap(k) = start(k) - end(k-1)   -- how late the rank arrives at k (its own delays)
  dur(k) = end(k) - start(k)     -- how long it waits in k (its peers' delays, link costs)
The difference faulted - clean, rounded to the microsecond (the CUDA events' float ms), must
be exactly the fault's effect at the instances its onset (from=S, every=N) names, and 0 at
every other instance and rank. No jitter: the modeled clock makes both runs exact.

usage: test_faults.py CASE --cli collscope --apps DIR
"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import case_main  # noqa: E402  (tests/case_main.py: the shared command line)

HOSTS = "simhost[1-4]"  # ranks 2h, 2h+1 on simhost(h+1)
STEPS = 6
N = 3 * STEPS  # instances per rank
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1", "NCCL_DEBUG": "WARN"}


def run(cli, apps, tmp, faults):
    out = os.path.join(tmp, "dumps-%d" % len(os.listdir(tmp)))
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_SIM_FAULTS=faults, **MODEL)
    cmd = [cli, "run", "-n", "8", "--hosts", HOSTS, "--sim", "--", os.path.join(apps, "dp_train"), "--steps",
           str(STEPS), "--size", "64K", "--compute-us", "1000"]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert p.returncode == 0, p.stdout
    assert "ignoring bad entry" not in p.stdout, p.stdout
    ops = {}
    for f in glob.glob(os.path.join(out, "*.jsonl")):
        for line in open(f):
            o = json.loads(line)
            if o.get("type") == "op" and o["seq"] >= 0:
                assert o["timing"] == "gpu_event", o
                ops[(o["rank"], o["seq"])] = (o["start_ns"], o["end_ns"])
    assert len(ops) == 8 * N, len(ops)
    return ops


def effect(cli, apps, tmp, faults):
    """{(rank, k): (gap diff us, dur diff us)} for k in 1..N-1"""
    clean, bad = run(cli, apps, tmp, ""), run(cli, apps, tmp, faults)

    def gd(ops, r, k):
        return ops[(r, k)][0] - ops[(r, k - 1)][1], ops[(r, k)][1] - ops[(r, k)][0]

    out = {}
    for r in range(8):
        for k in range(1, N):
            (g0, d0), (g1, d1) = gd(clean, r, k), gd(bad, r, k)
            out[(r, k)] = (round((g1 - g0) / 1000), round((d1 - d0) / 1000))
    return out


def show(e):
    for r in range(8):
        print("rank %d: %s" % (r, " ".join("%d/%d" % e[(r, k)] for k in range(1, N))))


def expect(e, want):
    """want(r, k) -> (gap us, dur us)"""
    show(e)
    bad = [(r, k, e[(r, k)], want(r, k)) for r in range(8) for k in range(1, N) if e[(r, k)] != want(r, k)]
    assert not bad, "rank, instance, got, want: %s" % bad[:8]


def straggler(rank, onset, us):
    """rank arrives `us` late at the instances onset(k) names; its peers wait that long in them"""
    return lambda r, k: ((us, 0) if r == rank else (0, us)) if onset(k) else (0, 0)


# slow:us from=S: the stall before collective S and every later one, nothing before
def case_slow_from(cli, apps, tmp):
    expect(effect(cli, apps, tmp, "slow:rank=5,us=2000,from=7"), straggler(5, lambda k: k >= 7, 2000))


# slow every=N: one instance in N from the onset (an intermittent straggler)
def case_slow_every(cli, apps, tmp):
    expect(effect(cli, apps, tmp, "slow:rank=5,us=2000,from=6,every=4"),
           straggler(5, lambda k: k >= 6 and (k - 6) % 4 == 0, 2000))


# slow:pct from=S: P% of the rank's median duration (measured before the onset), from S on
def case_slow_pct_from(cli, apps, tmp):
    e = effect(cli, apps, tmp, "slow:rank=4,pct=10,from=9")
    u = e[(4, 9)][0]
    assert u > 0, e[(4, 9)]
    expect(e, straggler(4, lambda k: k >= 9, u))


# slow:compute=P from=S: the rank's modeled compute (1000 us before each bucket) P% longer
def case_compute_from(cli, apps, tmp):
    expect(effect(cli, apps, tmp, "slow:rank=2,compute=10,from=5"), straggler(2, lambda k: k >= 5, 100))


# hostdelay from=S: at each synchronize once collective S-1 completed (dp_train synchronizes
# once per step, after its last bucket), so the first collective of each later step is late
def case_hostdelay_from(cli, apps, tmp):
    expect(effect(cli, apps, tmp, "hostdelay:rank=3,us=300,from=5"),
           straggler(3, lambda k: k >= 6 and k % 3 == 0, 300))


# link from=S: every ring step over the simhost1-simhost2 edge 100 us longer from collective S:
# an AllReduce of 8 ranks has 2 x 7 steps
def case_link_from(cli, apps, tmp):
    expect(effect(cli, apps, tmp, "link:a=simhost1,b=simhost2,us=100,from=5"),
           lambda r, k: (0, 1400) if k >= 5 else (0, 0))


# nic:us: every inter-host edge of simhost2 (to simhost1 and simhost3 in the ring) 50 us longer
def case_nic_from(cli, apps, tmp):
    expect(effect(cli, apps, tmp, "nic:host=simhost2,us=50,from=4"), lambda r, k: (0, 700) if k >= 4 else (0, 0))


# nic:pct: simhost2's NIC at 1/(1 + P/100) of its bandwidth: each of the 14 steps moves a
# chunk of bytes/8 at 12.5 B/ns (100 Gbit/s) once more at pct=100; dp_train's buckets are
# 64 KiB, 8 KiB and 1 KiB
def case_nic_pct(cli, apps, tmp):
    def want(r, k):
        chunk = (65536 >> (3 * (k % 3))) / 8
        return (0, round(14 * chunk / 12.5 / 1000)) if k >= 3 else (0, 0)

    e = effect(cli, apps, tmp, "nic:host=simhost2,pct=100,from=3")
    assert e[(0, 3)] == (0, 9), e[(0, 3)]
    expect(e, want)


# throttle seq=S: from the first collective after S, the rank's compute is pct% slower
# (200 us of the 1000) and its collectives stall pct% of their median (simhealth's slowdown)
def case_throttle_compute(cli, apps, tmp):
    e = effect(cli, apps, tmp, "throttle:rank=6,reason=thermal,pct=20,seq=5")
    u = e[(6, 6)][0]
    assert 200 < u < 300, e[(6, 6)]
    expect(e, straggler(6, lambda k: k >= 6, u))


# throttle seq=S,until=E: slowed from the first collective after S to collective E (the
# throttle ends once E completed), compute and stall alike
def case_throttle_window(cli, apps, tmp):
    e = effect(cli, apps, tmp, "throttle:rank=6,reason=thermal,pct=20,seq=5,until=11")
    u = e[(6, 6)][0]
    assert 200 < u < 300, e[(6, 6)]
    expect(e, straggler(6, lambda k: 6 <= k <= 11, u))


# two faults on different hosts with different onsets: each rank's own delay, the peers wait
# for the later of the two
def case_two_faults(cli, apps, tmp):
    e = effect(cli, apps, tmp, "slow:rank=1,us=1000,from=4;slow:rank=6,compute=20,from=8")

    def want(r, k):
        late = {1: 1000 if k >= 4 else 0, 6: 200 if k >= 8 else 0}
        worst = max(late.values())
        return late.get(r, 0), worst - late.get(r, 0)

    expect(e, want)


def main():
    case_main.run(globals(), "collscope-faults-")


if __name__ == "__main__":
    sys.exit(main())
