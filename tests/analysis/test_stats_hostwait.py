#!/usr/bin/env python3
"""tests/analysis/test_stats_hostwait.py CASE --cli COLLSCOPE --apps DIR

A job's own host sleeps and its P2P on the modeled clock (COLLSCOPE_SIM_CLOCK=model,
docs/simulator.md), end to end through collscope's dumps: 8 ranks of tests/apps/hostsleep on 4
simulated hosts, every op timed by CUDA events. Per step: two AllReduces, then each even rank
computes on its stream and sends to the next rank, which receives (one Send/Recv pair per
host). Rank 3 sleeps 3000 us on the host before its odd steps.
Cases: usleep, nanosleep, clock_nanosleep (the sleep's function): the other ranks' first
AllReduce of each odd step lasts exactly 3000 us longer than rank 3's, every other AllReduce
is in lockstep, and every Recv lasts exactly the sender's 2000 us of compute longer than its
Send; determinism: the same seeded job with jitter, quiet and beside two busy loops, writes
bit-identical dur_us in every op record."""
import glob, json, os, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import case_main  # noqa: E402  (tests/case_main.py: the shared command line)

STEPS = 10
SLEEP_US = 3000
P2P_COMPUTE_US = 2000
# a 256 KiB Send/Recv inside a host: NVLink latency 3.4 us + 256 KiB / 150 GB/s, rounded to
# the ns (tests/sim/nccl/collcost.c, model.c)
P2P_US = 5.148
MODEL_EVENTS = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
                "COLLSCOPE_EVENT_SAMPLE": "1"}


def run_job(cli, apps, tmp, fn, faults="", busy=0):
    out = os.path.join(tmp, "dumps")
    shm = os.path.join(tmp, "shm")
    os.makedirs(shm, exist_ok=True)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS=faults, **MODEL_EVENTS)
    cmd = [cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--no-kill-on-fail", "--",
           os.path.join(apps, "hostsleep"), "--steps", str(STEPS), "--size", "256K",
           "--sleep", "3:%d:%s" % (SLEEP_US, fn), "--p2p-compute-us", str(P2P_COMPUTE_US)]
    loops = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(busy)]
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
    finally:
        for y in loops:
            y.kill()
            y.wait()
    assert p.returncode == 0, p.stdout[-3000:]
    dur = {}
    for f in glob.glob(os.path.join(out, "*.jsonl")):
        for line in open(f):
            o = json.loads(line)
            if o.get("type") == "op" and o["timing"] == "gpu_event":
                dur[(o["rank"], o["seq"])] = (o["op"], o["dur_us"])
    return dur


def near(a, b):
    return abs(a - b) < 0.01   # CUDA events: float ms


def check_sleep(cli, apps, tmp, fn):
    dur = run_job(cli, apps, tmp, fn)
    assert sorted(dur) == [(r, s) for r in range(8) for s in range(3 * STEPS)], sorted(dur)
    for step in range(STEPS):
        ar1 = {r: dur[(r, 3 * step)][1] for r in range(8)}
        ar2 = {r: dur[(r, 3 * step + 1)][1] for r in range(8)}
        wait = SLEEP_US if step % 2 else 0
        assert all(near(ar1[r] - ar1[3], wait) for r in range(8) if r != 3), (fn, step, ar1)
        assert all(near(ar2[r], ar2[0]) for r in range(8)), (fn, step, ar2)
        for r in range(0, 8, 2):
            send, recv = dur[(r, 3 * step + 2)], dur[(r + 1, 3 * step + 2)]
            assert send[0] == "Send" and recv[0] == "Recv", (send, recv)
            assert near(send[1], P2P_US) and near(recv[1], P2P_COMPUTE_US + P2P_US), (fn, step, r, send, recv)
    print("%s: the first AllReduce of odd steps waits %d us for rank 3 (seq 3: rank 3 %.3f us, rank 0 %.3f us); "
          "each Recv %.3f us, its Send %.3f us" % (fn, SLEEP_US, dur[(3, 3)][1], dur[(0, 3)][1], dur[(1, 2)][1],
                                                   dur[(0, 2)][1]))


def case_usleep(cli, apps, tmp):
    check_sleep(cli, apps, tmp, "usleep")


def case_nanosleep(cli, apps, tmp):
    check_sleep(cli, apps, tmp, "nanosleep")


def case_clock_nanosleep(cli, apps, tmp):
    check_sleep(cli, apps, tmp, "clock_nanosleep")


def case_determinism(cli, apps, tmp):
    # seeded jitter on every compute and collective; the sleeps and the P2P waits as above
    calm = run_job(cli, apps, os.path.join(tmp, "calm"), "usleep", faults="jitter:pct=2")
    busy = run_job(cli, apps, os.path.join(tmp, "busy"), "usleep", faults="jitter:pct=2", busy=2)
    assert calm and set(calm) == set(busy), (len(calm), len(busy))
    diff = [k for k in calm if calm[k] != busy[k]]
    assert not diff, ["%s: %s vs %s" % (k, calm[k], busy[k]) for k in diff[:10]]
    print("%d op durations identical quiet and beside two busy loops (e.g. rank 1 seq 5 Recv %.3f us)" %
          (len(calm), calm[(1, 5)][1]))


if __name__ == "__main__":
    case_main.run(globals(), "collscope-hostwait-")
