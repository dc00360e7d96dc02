#!/usr/bin/env python3
"""The workload zoo at 8 ranks on 2 simulated hosts, on the modeled clock, with collscope.

Each case runs one app through `collscope run --sim` (the shim preloaded), checks that the app
exits 0 (its own exact result checks passed) and that collscope's dumps hold the communicators
(sizes, per rank) and the op counts per communicator the app's schedule implies.

usage: test_zoo.py CASE --cli collscope --apps DIR
"""
import collections
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import case_main  # noqa: E402  (tests/case_main.py: the shared command line)

HOSTS = "simhost[1-2]"
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1"}


def run(cli, apps, tmp, app, args, env_extra=None, n=8):
    out = os.path.join(tmp, "dumps-%s-%d" % (app, len(os.listdir(tmp))))
    shm = os.path.join(tmp, "shm")
    os.makedirs(shm, exist_ok=True)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, **MODEL)
    env.update(env_extra or {})
    hosts = HOSTS if n == 8 else "simhost[1-%d]" % (n // 8)  # 8 GPUs per simulated host
    cmd = [cli, "run", "-n", str(n), "--hosts", hosts, "--sim", "--", os.path.join(apps, app)] + list(args)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    print("\n".join(x for x in p.stdout.splitlines() if "summary" in x or "FAIL" in x or "MISMATCH" in x))
    assert p.returncode == 0, "%s exited %d" % (app, p.returncode)
    return out, p.stdout


def load(d):
    """per rank: {comm: size}, Counter((comm size, op)) of the op records, op streams"""
    comms, ops, streams = {}, {}, {}
    files = glob.glob(os.path.join(d, "*.jsonl"))
    for f in files:
        rank = None
        c, o, s = {}, collections.Counter(), collections.defaultdict(set)
        for line in open(f):
            x = json.loads(line)
            t = x.get("type")
            if t == "header":
                rank = x["rank"]
            elif t == "comm" and x["event"] in ("init", "split"):
                c[x["comm"]] = x["size"]
            elif t == "op" and x["seq"] >= 0:
                o[(x["comm_size"], x["op"])] += 1
                s[x["comm"]].add(x["stream"])
        comms[rank], ops[rank], streams[rank] = c, o, s
    assert sorted(comms) == list(range(8)), sorted(comms)
    return comms, ops, streams


def sizes(comms, rank):
    return sorted(comms[rank].values())


def case_fsdp(cli, apps, tmp):
    d, _ = run(cli, apps, tmp, "fsdp", ["--steps", "3", "--size", "64K", "--layers", "4", "--compute-us", "500"])
    comms, ops, streams = load(d)
    for r in range(8):
        assert sizes(comms, r) == [8], comms[r]
        assert ops[r] == {(8, "AllGather"): 12, (8, "ReduceScatter"): 12}, ops[r]
        # prefetch: the collectives run on their own stream, not the compute/copy stream
        (world,) = comms[r]
        assert len(streams[r][world]) == 1, streams[r]


def case_fsdp_noprefetch(cli, apps, tmp):
    d, _ = run(cli, apps, tmp, "fsdp", ["--steps", "2", "--size", "64K", "--layers", "3", "--prefetch", "0"])
    comms, ops, _ = load(d)
    for r in range(8):
        assert ops[r] == {(8, "AllGather"): 6, (8, "ReduceScatter"): 6}, ops[r]


def case_train3d(cli, apps, tmp):
    # TP 2 inside a host, PP 2 across the two hosts, DP 2: world + TP + PP + DP per rank
    steps, M = 2, 4
    d, out = run(cli, apps, tmp, "train3d", ["--steps", str(steps), "--size", "16K", "--tp", "2", "--pp", "2",
                                             "--microbatches", str(M), "--compute-us", "300"])
    assert "summary train3d world=8 tp=2 pp=2 dp=2" in out, out
    comms, ops, _ = load(d)
    for r in range(8):
        assert sizes(comms, r) == [2, 2, 2, 8], comms[r]
        stage = r // 4
        want = collections.Counter()
        # TP AllReduce per microbatch and pass; the DP AllReduce once per step (both size 2)
        want[(2, "AllReduce")] = steps * (2 * M + 1)
        # 1F1B: every microbatch's activation goes forward and its gradient back once
        want[(2, "Send")] = steps * M
        want[(2, "Recv")] = steps * M
        assert ops[r] == want, (r, stage, ops[r], want)


def case_moe(cli, apps, tmp):
    steps = 3
    d, _ = run(cli, apps, tmp, "moe", ["--steps", str(steps), "--size", "32K", "--skew", "1.2", "--compute-us", "400"])
    comms, ops, _ = load(d)
    for r in range(8):
        assert sizes(comms, r) == [8], comms[r]
        # counts AlltoAll, then dispatch and combine: a Send and a Recv with every rank (itself too)
        assert ops[r] == {(8, "AlltoAll"): steps, (8, "Send"): steps * 2 * 8, (8, "Recv"): steps * 2 * 8}, ops[r]


def case_accum(cli, apps, tmp):
    d, out = run(cli, apps, tmp, "accum", ["--steps", "10", "--accum", "4", "--size", "64K", "--compute-us", "1000"])
    assert "allreduces=3" in out, out
    comms, ops, _ = load(d)
    for r in range(8):
        assert ops[r] == {(8, "AllReduce"): 3}, ops[r]  # steps 3, 7 and the last (9)


def case_multicomm4(cli, apps, tmp):
    d, _ = run(cli, apps, tmp, "multicomm", ["--steps", "3", "--size", "64K", "--comms", "4", "--compute-us", "500"])
    comms, ops, streams = load(d)
    for r in range(8):
        assert sizes(comms, r) == [8] * 5, comms[r]
        assert ops[r] == {(8, "AllReduce"): 12}, ops[r]
        used = [c for c in comms[r] if c in streams[r]]
        assert len(used) == 4, streams[r]
        assert len(set().union(*(streams[r][c] for c in used))) == 4, streams[r]  # one stream each


def case_hetero(cli, apps, tmp):
    # simhost2 has a slower GPU model (tests/sim/nvml/simhealth.c): its compute and collectives
    # take 1/speed as long; dp_train still checks every result
    env = {"COLLSCOPE_SIM_GPU_MODEL": "simhost2=NVIDIA A100-SXM4-80GB,speed=0.5"}
    d, _ = run(cli, apps, tmp, "dp_train", ["--steps", "4", "--size", "64K", "--compute-us", "1000"], env)
    comms, ops, _ = load(d)
    for r in range(8):
        assert ops[r] == {(8, "AllReduce"): 12}, ops[r]
    # the slow GPUs (ranks 4-7) compute 2 x 1000 us per bucket and arrive last: the fast ones
    # wait about 1000 us in every collective after the first, the slow ones not at all
    wait = collections.defaultdict(list)
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            x = json.loads(line)
            if x.get("type") == "op" and x["seq"] >= 1:
                wait[x["rank"]].append(x["dur_us"])
    fast, slow = max(min(wait[r]) for r in range(4)), max(max(wait[r]) for r in range(4, 8))
    print("fast ranks wait at least %.1f us, slow ones at most %.1f us" % (fast, slow))
    assert fast > slow + 900, (fast, slow)


def timeline(d):
    """per rank: sorted (communicator creation index, seq, op, dur_us, start_ns, end_ns) of its ops"""
    out = {}
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        idx, ops, rank = {}, [], None
        for line in open(f):
            x = json.loads(line)
            if x.get("type") == "header":
                rank = x["rank"]
            elif x.get("type") == "comm" and x["comm"] not in idx:
                idx[x["comm"]] = len(idx)
            elif x.get("type") == "op" and x["seq"] >= 0:
                ops.append((idx[x["comm"]], x["seq"], x["op"], x["dur_us"], x["start_ns"], x["end_ns"]))
        out[rank] = sorted(ops)
    return out


# The same job twice, with mid-job faults: the same GPU times to the nanosecond. fsdp's
# prefetch (a second stream joined by events) and train3d's four communicators are where the
# host's scheduling could leak into the modeled clock.
def case_deterministic(cli, apps, tmp):
    env = {"COLLSCOPE_SIM_FAULTS": "slow:rank=2,compute=50,from=9;hostdelay:rank=5,us=200,from=7;"
           "nic:host=simhost2,us=20,from=4;jitter:pct=2", "COLLSCOPE_SIM_SEED": "7"}
    for app, args in (("fsdp", ["--steps", "4", "--size", "64K", "--layers", "4", "--compute-us", "800"]),
                      ("train3d", ["--steps", "2", "--size", "16K", "--tp", "2", "--pp", "2", "--compute-us", "300"]),
                      ("moe", ["--steps", "3", "--size", "32K", "--compute-us", "400"])):
        runs = [timeline(run(cli, apps, tmp, app, args, env)[0]) for _ in range(3)]
        assert len(runs[0]) == 8 and all(len(v) > 0 for v in runs[0].values()), runs[0].keys()
        # GPU durations bit for bit; start and end are GPU times placed on the host's clock by
        # collscope's calibration: an anchor event, refreshed every 2 s of wall time, and
        # cuEventElapsedTime's float milliseconds from it (CUDA's API), so a time carries the
        # float's rounding of its distance from whichever anchor the run took: at most half a
        # float ulp of the job's span (2^-24 of it), plus 1 ns for the anchor's own midpoint
        ops = [o for v in runs[0].values() for o in v]
        span = max(o[5] for o in ops) - min(o[4] for o in ops)
        tol = 1 + span / 2**24
        for k in (1, 2):
            assert [len(runs[k][r]) for r in range(8)] == [len(runs[0][r]) for r in range(8)], app
            diff = [(r, a, b) for r in range(8) for a, b in zip(runs[0][r], runs[k][r])
                    if a[:4] != b[:4] or abs(a[4] - b[4]) > tol or abs(a[5] - b[5]) > tol]
            assert not diff, (app, "tolerance %.1f ns" % tol, diff[:4])


# Every app at N ranks (8 GPUs per simulated host; train3d: TP 4 inside a host, PP 4 across
# hosts, DP the rest), each with one dump per rank. `scale64` is registered; `scale256` (about
# 10-40 s per app on two loaded cores) is run by hand.
SCALE = [("dp_train", ["--steps", "4", "--size", "64K", "--compute-us", "1000"], None),
         ("fsdp", ["--steps", "3", "--size", "64K", "--layers", "4", "--compute-us", "500"], None),
         ("train3d", ["--steps", "2", "--size", "16K", "--tp", "4", "--pp", "4", "--compute-us", "300"], None),
         ("moe", ["--steps", "3", "--size", "32K", "--compute-us", "400"], None),
         ("accum", ["--steps", "8", "--accum", "4", "--size", "64K", "--compute-us", "1000"], None),
         ("multicomm", ["--steps", "3", "--size", "64K", "--comms", "4", "--compute-us", "500"], None),
         ("dp_train", ["--steps", "4", "--size", "64K", "--compute-us", "1000"],
          {"COLLSCOPE_SIM_GPU_MODEL": "simhost2=NVIDIA A100-SXM4-80GB,speed=0.5"})]


def scale(cli, apps, tmp, n):
    for app, args, env in SCALE:
        d, out = run(cli, apps, tmp, app, args, env, n=n)
        assert "PASS" in out, out[-2000:]
        files = glob.glob(os.path.join(d, "*.jsonl"))
        assert len(files) == n, (app, len(files))


def case_scale64(cli, apps, tmp):
    scale(cli, apps, tmp, 64)


def case_scale256(cli, apps, tmp):
    scale(cli, apps, tmp, 256)


def main():
    case_main.run(globals(), "collscope-zoo-")


if __name__ == "__main__":
    sys.exit(main())
