#!/usr/bin/env python3
"""tests/balance/test_advice_sim.py CASE --cli COLLSCOPE --apps DIR

The balance section's advice applied on the simulator's modeled clock and measured
(docs/balance.md "Host waits"): 4 H100s on simhost1-2, dp_train --compute-us 20000 (3 gradient
buckets a step), every op timed by CUDA events. Cases:
  loader: rank 1's host stalls 200 ms every 50 steps before the step's first collective
          (`hostdelay:rank=1,us=200000,every=50,from=30`, 200 steps): the advice names the data
          loader with exact figures and changes no share; fixed (the job run again without
          the stall) it realises at least 80 % of the predicted gain, and the shares as
          advised (today's) are applied by changing nothing; with rank 1's host clock moved 5 ms
          against its GPU's from collective 300 on (a new clock anchor), the same advice;
  slow:   rank 1's GPU computes 20 % longer every step (`slow:rank=1,compute=20`, 40 steps,
          each rank copying a 1 MiB input batch a step): a compute straggler, share advice;
          dp_train --shares as advised realises at least 80 % of the predicted gain and is not
          slower;
  uneven: ranks 1 and 3 get 10 % more samples (dp_train --shares 1,1.1,1,1.1 --batch-bytes 1M:
          10 % more compute and a larger input batch, 40 steps): advised as uneven data with
          exact figures, not a node; the shards evened (the job run again without --shares)
          realise at least 80 % of the predicted gain and are not slower.
The step time is measured here from the dumps' GPU end times (the steps are known from the
command line), not taken from the report."""
import argparse, glob, json, os, shutil, subprocess, tempfile

BASE = ["--size", "256K", "--compute-us", "20000"]
BATCH = ["--batch-bytes", "1M"]


def run_job(cli, apps, d, steps, faults, extra=()):
    env = dict(os.environ, COLLSCOPE_DIR=d, COLLSCOPE_SHM_DIR=os.path.dirname(d), COLLSCOPE_SIM_CLOCK="model",
               COLLSCOPE_SIM_SEED="1", COLLSCOPE_TIMING="events", COLLSCOPE_EVENT_SAMPLE="1", COLLSCOPE_SIM_GPUS="2",
               COLLSCOPE_SIM_FAULTS=faults)
    cmd = [cli, "run", "-n", "4", "--hosts", "simhost[1-2]", "--sim", "--", os.path.join(apps, "dp_train"),
           "--steps", str(steps)] + BASE + list(extra)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=200)
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout[-3000:]


def report(cli, d, extra=()):
    p = subprocess.run([cli, "report", d, "--json"] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    assert p.returncode == 0, p.stderr
    t = subprocess.run([cli, "report", d] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return json.loads(p.stdout)["balance"], t.stdout


def measured_step_us(d, steps):
    """the slowest rank's (end of its last step - end of its first) / (steps - 1)"""
    worst = 0.0
    files = glob.glob(os.path.join(d, "*.jsonl"))
    assert len(files) == 4, files
    for f in files:
        ops = sorted((o for o in map(json.loads, open(f)) if o.get("type") == "op"), key=lambda o: o["seq"])
        assert all(o["timing"] == "gpu_event" for o in ops), f
        per = len(ops) // steps
        assert per * steps == len(ops), (f, len(ops))
        worst = max(worst, (ops[steps * per - 1]["end_ns"] - ops[per - 1]["end_ns"]) / 1e3 / (steps - 1))
    return worst


def check_gain(now, predicted, after, what):
    want, got = now - predicted, now - after
    print("%s: step now %.1f us, predicted %.1f us, measured after %.1f us: %.1f %% of the predicted gain" %
          (what, now, predicted, after, 100.0 * got / want))
    assert want > 0 and got >= 0.8 * want and after <= now, (now, predicted, after)


def case_loader(cli, apps, tmp):
    steps, d0, d1 = 200, os.path.join(tmp, "stall", "d"), os.path.join(tmp, "fixed", "d")
    run_job(cli, apps, d0, steps, "hostdelay:rank=1,us=200000,every=50,from=30")
    b, text = report(cli, d0)
    print(text[text.index("# Balance"):text.index("# Notes")])
    r = {x["rank"]: x for x in b["ranks"]}
    assert b["action"] == "fix_loader", b
    assert b["advice"] == ("data loader on rank 1 (host simhost1): stalls of 200 ms every 50 steps cost 6.2 % of the "
                           "job; its GPU waits for its host before the step, which no share of the batch moves: no "
                           "share change"), b["advice"]
    assert [r[k]["verdict"] for k in range(4)] == ["ok", "data_loader", "ok", "ok"], b["ranks"]
    assert (r[1]["stalls"], round(r[1]["stall_us"] / 1e3), r[1]["stall_every_steps"]) == (4, 200, 50), r[1]
    # the stalls are the host's, not the GPU's: rank 1 computes as long as its peers, no share moves
    assert all(abs(r[k]["compute_us"] - r[0]["compute_us"]) < 1 for k in range(4)), b["ranks"]
    assert all(abs(r[k]["share"] - r[k]["share_now"]) < 1e-4 for k in range(4)), b["ranks"]
    now = measured_step_us(d0, steps)
    assert abs(now - b["step_us_now"]) < 1e-3 * now, (now, b["step_us_now"])
    # a new anchor on rank 1 from collective 300 on: its enqueue stamps 5 ms later against its
    # GPU's times; against the steps before and after, no stall
    d2 = os.path.join(tmp, "anchor", "d")
    shutil.copytree(d0, d2)
    f = glob.glob(os.path.join(d2, "*-r1-*.jsonl"))[0]
    lines = []
    for l in open(f):
        o = json.loads(l)
        if o.get("type") == "op" and o["seq"] >= 300:
            o["enqueue_ns"] += 5000000
        lines.append(json.dumps(o, separators=(",", ":")))
    open(f, "w").write("\n".join(lines) + "\n")
    b2, _ = report(cli, d2)
    r2 = b2["ranks"][1]
    assert (b2["advice"], r2["stalls"], r2["stall_every_steps"]) == (b["advice"], 4, 50), b2
    # the advice applied: the loader fixed (no stall); the shares as advised are today's
    run_job(cli, apps, d1, steps, "")
    check_gain(now, b["step_us_loader_fixed"], measured_step_us(d1, steps), "loader fixed")
    b1, _ = report(cli, d1)
    assert b1["action"] == "none" and all(x["verdict"] == "ok" for x in b1["ranks"]), b1


def case_slow(cli, apps, tmp):
    steps, d0, d1 = 40, os.path.join(tmp, "slow", "d"), os.path.join(tmp, "shares", "d")
    faults = "slow:rank=1,compute=20"
    run_job(cli, apps, d0, steps, faults, BATCH)
    b, text = report(cli, d0)
    print(text[text.index("# Balance"):text.index("# Notes")])
    assert b["action"] == "balance" and b["ranks"][1]["verdict"] == "unexplained", b
    assert b["step_us_loader_fixed"] is None and b["ranks"][1]["stalls"] == 0, b
    now = measured_step_us(d0, steps)
    arg = ",".join("%.6f" % x["share"] for x in b["ranks"])
    assert b["advice"].startswith("rebalance, and look at the node: 1 slow rank"), b["advice"]
    run_job(cli, apps, d1, steps, faults, BATCH + ["--shares", arg])
    check_gain(now, b["step_us_balanced"], measured_step_us(d1, steps), "slow rank, --shares " + arg)


def case_uneven(cli, apps, tmp):
    steps, d0, d1 = 40, os.path.join(tmp, "uneven", "d"), os.path.join(tmp, "even", "d")
    run_job(cli, apps, d0, steps, "", BATCH + ["--shares", "1,1.1,1,1.1"])
    b, text = report(cli, d0)
    print(text[text.index("# Balance"):text.index("# Notes")])
    r = {x["rank"]: x for x in b["ranks"]}
    assert b["action"] == "balance", b
    assert b["advice"] == ("uneven data: ranks 1,3 get 10 % more samples than the others (their compute and their "
                           "copies to the GPU per step are larger; the GPUs are alike): even the shards"), b["advice"]
    assert [r[k]["verdict"] for k in range(4)] == ["ok", "uneven_data", "ok", "uneven_data"], b["ranks"]
    assert r[1]["cause"] == "its process copies 7.7 % more bytes to its GPU per step than the ranks that are not slow", r[1]
    # the shards evened: every share a quarter (today's follow the compute)
    assert all(abs(x["share"] - 0.25) < 1e-9 for x in b["ranks"]), b["ranks"]
    assert abs(r[1]["share_now"] / r[0]["share_now"] - 1.1) < 1e-3, b["ranks"]
    now = measured_step_us(d0, steps)
    run_job(cli, apps, d1, steps, "", BATCH)
    check_gain(now, b["step_us_balanced"], measured_step_us(d1, steps), "uneven data, shards evened")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cs-advice-")
    try:
        {"loader": case_loader, "slow": case_slow, "uneven": case_uneven}[a.case](a.cli, a.apps, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
