#!/usr/bin/env python3
"""tests/analysis/test_flapping_sim.py CASE --cli COLLSCOPE --apps DIR

The cost rule (analysis/detect_cost.c) end to end on the modeled clock (COLLSCOPE_SIM_CLOCK=model,
seed 1, every op timed): 8 ranks of dp_train (3 AllReduces and one synchronize per step) on 4
simulated hosts, 2% jitter, rank 3's host delayed after some synchronizes (`hostdelay` with
from= and every=, docs/simulator.md), then `collscope report --json`. Cases: flap3ms (3 ms on
every other step from step 20), loader200ms (200 ms every 50 steps from step 10, over 150
steps), clean (150 steps with a 20% exponential tail on the jitter, nothing). Each names rank 3 by the cost rule within 60 steps of the
onset with exact figures, or names nobody. Prints the findings."""
import glob, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import case_main  # noqa: E402  (tests/case_main.py: the shared command line)
from test_stats_sim import MODEL_EVENTS, report, run_job  # noqa: E402

PER_STEP = 3  # dp_train's AllReduces per step (tests/apps/dp_train.c)


def findings(cli, apps, tmp, faults, steps):
    p, d, shm = run_job(cli, apps, tmp, "jitter:pct=2" + faults, steps=steps, env_extra=MODEL_EVENTS)
    assert p.returncode == 0, p.stdout
    r = report(cli, d)
    print(json.dumps(r["stragglers"], indent=1))
    assert r["hangs"] == [], r["hangs"]
    return r["stragglers"], d


def cost_share(d, rank, window, stall_min_us):
    """rank's cost share over the last `window` instances, from the dump files (independent of
    analysis/): its lateness (the lower median duration less its own) where it arrived last by
    at least stall_min_us, over the sum of each instance's elapsed time, the lower median over
    the ranks of the time between their op's ends in it and in the previous instance. The host
    work between steps runs on the host's own time (docs/simulator.md), so this share is
    checked against the dumps, not against a constant."""
    inst = {}
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            o = json.loads(line)
            if o.get("type") == "op" and o["timing"] == "gpu_event" and o["seq"] >= 0:
                inst.setdefault(o["seq"], {})[o["rank"]] = (o["dur_us"], o["end_ns"])
    seqs = sorted(inst)
    cost, elapsed = 0.0, 0
    for i in range(len(seqs) - window, len(seqs)):
        cur, prev = inst[seqs[i]], inst[seqs[i - 1]]
        elapsed += statistics.median_low([cur[r][1] - prev[r][1] for r in cur if r in prev])
        med = statistics.median_low([v[0] for v in cur.values()])
        late = med - cur[rank][0]
        if min(cur.values())[0] == cur[rank][0] and late >= stall_min_us:
            cost += late
    return cost * 1e3 / elapsed


def named(cli, apps, tmp, faults, steps, onset_step, want):
    s, d = findings(cli, apps, tmp, faults, steps)
    assert len(s) == 1 and s[0]["rank"] == 3 and s[0]["host"] == "simhost2", s
    x = s[0]
    assert x["kind"] == "compute" and x["rule"] == "cost", x
    onset = onset_step * PER_STEP  # the seq of the first delayed collective
    assert 0 <= x["first_flag_seq"] - onset < 60 * PER_STEP, (x["first_flag_seq"], onset)
    got = {k: round(x[k], 6) if isinstance(x[k], float) else x[k] for k in want}
    assert got == want, (got, want)
    share = cost_share(d, 3, x["cost_instances"], x["stall_us"] / 2)
    assert abs(x["cost_share"] - share) < 1e-6, (x["cost_share"], share)
    print("rank 3 named %d instances (%.1f steps) after the onset: %s" %
          (x["first_flag_seq"] - onset, (x["first_flag_seq"] - onset) / PER_STEP, got))


# 3 ms on every other step from step 20 (collective 60; about 14 x the 209 us AllReduce):
# flagged 44 instances after the onset (the cost window first holds 100 instances at seq 99, then
# 6 to persist); over the last 300 instances late in 50, every 6 instances
FLAP3MS = {"first_flag_seq": 104, "late_instances": 50, "cost_instances": 300, "period_instances": 6,
           "stall_us": 3000.0}


def case_flap3ms(cli, apps, tmp):
    named(cli, apps, tmp, ";hostdelay:rank=3,us=3000,from=60,every=2", 120, 20, FLAP3MS)


# 200 ms every 50 steps from step 10 (collective 30), 150 steps: flagged 5 instances after the
# second stall (collective 180), 52 steps after the onset; 2 of the last 300 instances
LOADER200MS = {"first_flag_seq": 185, "late_instances": 2, "cost_instances": 300, "period_instances": None,
               "stall_us": 199999.994}


def case_loader200ms(cli, apps, tmp):
    named(cli, apps, tmp, ";hostdelay:rank=3,us=200000,from=30,every=50", 150, 10, LOADER200MS)


def case_clean(cli, apps, tmp):
    s, d = findings(cli, apps, tmp, ",tail=20", 150)
    assert s == [], s


def main():
    case_main.run(globals(), "collscope-flap-")


if __name__ == "__main__":
    main()
