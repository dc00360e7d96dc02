#!/usr/bin/env python3
"""tests/balance/test_steps_sim.py CASE --cli COLLSCOPE --apps DIR

The report's steps section (docs/balance.md "Steps"): per rank and step, the step time on its
GPU split into compute, communication not overlapped, waiting for peers and pipeline bubble,
on the modeled clock (COLLSCOPE_SIM_CLOCK=model, seed 1, every op timed): exact figures under
any load. In every case each step's four parts sum to its step time exactly (integer ns).
Cases:
  dp_clean: dp_train, 8 ranks, --compute-us 1000, --size 256K, 10 steps: steps 1..8 on every
      rank; compute per step is the app's: 3 buckets of 1000 us of sleep on the stream,
      plus its 6 copies (tests/sim/cuda/model.c sim_model_copy: 2 us + bytes / 25 B/ns each,
      truncated to the ns), to the dumps' event rounding (EVENT_NS); no wait, no bubble; the text, JSON and HTML say so;
  dp_slow: the same with rank 5's compute 10 % slower (slow:rank=5,compute=10): rank 5's
      compute is 300 us higher per step and every other rank waits that much longer for it in
      each step (both to EVENT_NS); rank 5 waits for none;
  dp_big: dp_train, 24 ranks on 4 hosts, rank 5 10 % slower: the text stays bounded (one row
      over all ranks, the 4 ranks of most compute, rank 5 first, and the 4 of least), the JSON
      lists all 24;
  pp_1f1b: megatron_pp, 4 stages (--pp 4, --tp 1), 1F1B over 4 microbatches: every stage's
      bubble is its wait in the Send/Recv chain and at the grad-norm AllReduce across the
      stages (the drain's order); its share of the step is 3/7 ((stages - 1) / (microbatches
      + stages - 1), the ideal 1F1B bubble) within 1.5 points, nonzero on the first and the
      last stage, and the figures are pinned to the ns;
  pp_dp: megatron_pp, 4 stages x 2 replicas, 30 steps (more ops a rank than the 1,024 held,
      the tensor-parallel communicator's instances walked after the pipeline's): every rank
      has at least 15 steps, none incomplete, its bubble 3/7 of the step within 1.5 points, pinned per stage."""
import argparse, json, os, re, shutil, subprocess, tempfile

# every op of a job (megatron_pp's 30 steps: 2,850 a rank) GPU-timed even if collscope's harvest
# thread, which tops the event pool up, is not scheduled while the job runs (a machine at load
# ~300 left 26 ops of rank 0 untimed and the balance figures short)
EVENTS_ALL = "8192"
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1",
         "COLLSCOPE_EVENT_PREFILL": EVENTS_ALL}
STEPS = 10
COMPUTE_US = 1000
BUCKETS = (256 * 1024, 256 * 1024 // 8, 256 * 1024 // 64)  # dp_train --size 256K: BYTES, BYTES/8, BYTES/64
# per step: 3 host-function sleeps of --compute-us, and per bucket a copy in and a copy out
COPIES_NS = 2 * sum(2000 + b // 25 for b in BUCKETS)
COMPUTE_NS = 3 * COMPUTE_US * 1000 + COPIES_NS
# the dumps' GPU times are the shim's CUDA event times: cuEventElapsedTime's float milliseconds
# from the event pool's anchor (hooks/timing_harvest.c), a few ns of rounding per time; a
# step's figure is a sum of differences of such times: equal to the model's within EVENT_NS
EVENT_NS = 8


def near(v, want):
    return all(abs(x - want) <= EVENT_NS for x in v)


def run_job(cli, apps, d, app, args, n, faults="", steps=STEPS):
    env = dict(os.environ, COLLSCOPE_DIR=d, COLLSCOPE_SHM_DIR=os.path.dirname(d), COLLSCOPE_SIM_FAULTS=faults, **MODEL)
    cmd = [cli, "run", "-n", str(n), "--hosts", "simhost[1-4]", "--sim", "--", os.path.join(apps, app), "--steps",
           str(steps)] + args
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=200)
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout[-3000:]


def report(cli, d, *extra):
    p = subprocess.run([cli, "report", d] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def steps_of(cli, d, nranks, untimed=0):
    r = json.loads(report(cli, d, "--json"))
    s = r["steps"]
    assert "steps" in r["sections"], r["sections"]
    assert s["ranks"] == nranks and s["ranks_without_steps"] == 0 and not s["out_of_memory"], s
    by = {}
    for x in s["per_rank"]:
        for st in x["per_step"]:
            parts = st["compute_ns"] + st["comm_ns"] + st["wait_ns"] + st["bubble_ns"]
            assert parts == st["step_ns"] and min(st["compute_ns"], st["comm_ns"], st["wait_ns"], st["bubble_ns"]) >= 0, \
                (x["rank"], st)
        assert x["untimed_ops"] == untimed, x
        by[x["rank"]] = x
    return r, by


def dp(cli, apps, tmp, name, faults="", n=8):
    d = os.path.join(tmp, name, "d")
    os.makedirs(os.path.dirname(d))
    run_job(cli, apps, d, "dp_train", ["--size", "256K", "--compute-us", str(COMPUTE_US)], n, faults)
    r, by = steps_of(cli, d, n)
    assert sorted(by) == list(range(n)), sorted(by)
    for x in by.values():  # step 0 holds the set-up; step 9 has no next step to end it
        assert [st["step"] for st in x["per_step"]] == list(range(1, STEPS - 1)), x["per_step"]
        assert x["ops_per_step"] == 3 and x["steps_incomplete"] == 0 and x["unmatched_p2p"] == 0, x
    return d, r, by


def case_dp_clean(cli, apps, tmp):
    d, r, by = dp(cli, apps, tmp, "clean")
    for k, x in sorted(by.items()):
        c = [st["compute_ns"] for st in x["per_step"]]
        print("rank %d: step %.1f us, compute %s ns, comm %.1f us, wait %.1f us" % (
            k, x["median_us"]["step"], sorted(set(c)), x["median_us"]["comm"], x["median_us"]["wait"]))
        assert len(c) == STEPS - 2 and near(c, COMPUTE_NS), (k, c, COMPUTE_NS)
        assert all(st["wait_ns"] <= EVENT_NS and st["bubble_ns"] == 0 for st in x["per_step"]), x["per_step"]
        assert abs(sum(x["share"].values()) - 1) < 1e-9, x["share"]
        assert x["stage"] is None, x
    text = report(cli, d)
    assert re.search(r"^# Steps: 8 ranks, 64 steps in all", text, re.M), text
    assert re.search(r"^  rank 5 +[0-9.]+ +%.1f " % (COMPUTE_NS / 1e3), text, re.M), text
    html = report(cli, d, "--html")
    sec = re.search(r'<section id="steps" data-chart="steps">.*?</section>', html, re.S)
    assert sec, "no steps chart on the page"
    bars = re.findall(r'data-rank="(\d+)" data-part="(\w+)" data-share="([0-9.]+)"', sec.group(0))
    assert len(bars) == 32 and {b[1] for b in bars} == {"compute", "comm", "wait", "bubble"}, bars
    comp = {int(b[0]): float(b[2]) for b in bars if b[1] == "compute"}
    assert all(abs(comp[k] - by[k]["share"]["compute"]) < 1e-4 for k in range(8)), comp


def case_dp_slow(cli, apps, tmp):
    _, _, clean = dp(cli, apps, tmp, "clean")
    _, _, slow = dp(cli, apps, tmp, "slow", faults="slow:rank=5,compute=10")
    extra = 300 * 1000  # 10 % of 3 x 1000 us of sleep; the copies are not slowed
    for k in range(8):
        c = [st["compute_ns"] for st in slow[k]["per_step"]]
        w = [a["wait_ns"] - b["wait_ns"] for a, b in zip(slow[k]["per_step"], clean[k]["per_step"])]
        print("rank %d: compute %s ns, wait grew by %s ns" % (k, sorted(set(c)), sorted(set(w))))
        if k == 5:
            assert len(c) == STEPS - 2 and near(c, COMPUTE_NS + extra), c
            assert all(st["wait_ns"] <= EVENT_NS for st in slow[k]["per_step"]), slow[k]["per_step"]
        else:
            assert len(c) == STEPS - 2 and near(c, COMPUTE_NS), c
            assert len(w) == STEPS - 2 and near(w, extra), w


def case_dp_big(cli, apps, tmp):
    d, r, by = dp(cli, apps, tmp, "big", faults="slow:rank=5,compute=10", n=24)
    text = report(cli, d)
    sec = text[text.index("# Steps:"):]
    sec = sec[:sec.index("\n\n")] if "\n\n" in sec else sec
    print(sec)
    rows = re.findall(r"^  rank (\d+) ", sec, re.M)
    assert len(rows) == 8 and rows[0] == "5", rows
    assert re.search(r"^  all ranks \(24\) ", sec, re.M), sec
    assert re.search(r"^  \.\.\. 16 ranks between", sec, re.M), sec
    assert len(r["steps"]["per_rank"]) == 24 and r["steps"]["per_stage"][0]["ranks"] == 24, r["steps"]["per_stage"]


# the pipeline's pinned figures: per rank its median step, compute and bubble (us, to 0.1)
PP_PINNED = {0: (15327.0, 8253.8, 6584.1), 1: (15327.0, 8272.2, 6392.5), 2: (15327.0, 8272.2, 6373.2),
             3: (15327.0, 8253.8, 6564.9)}


def case_pp_1f1b(cli, apps, tmp):
    d = os.path.join(tmp, "pp", "d")
    os.makedirs(os.path.dirname(d))
    run_job(cli, apps, d, "megatron_pp", ["--size", "64K", "--tp", "1", "--pp", "4", "--microbatches", "4", "--layers",
                                          "2", "--compute-us", str(COMPUTE_US), "--pause-ms", "20"], 4)
    # the layers' captured graphs hold 8 ops per rank: no GPU times (their time counts as compute)
    r, by = steps_of(cli, d, 4, untimed=8)
    p = r["pipeline"]
    assert p["stages"] == 4 and p["microbatches"] == 4 and p["schedule"] == "1f1b", p
    want = 3 / 7  # (stages - 1) / (microbatches + stages - 1)
    for k, x in sorted(by.items()):
        tot = {f: sum(st[f + "_ns"] for st in x["per_step"]) for f in ("step", "compute", "comm", "wait", "bubble")}
        share = tot["bubble"] / tot["step"]
        m = x["median_us"]
        print("rank %d (stage %s): %d steps, step %.1f us, compute %.1f, comm %.1f, wait %.1f, bubble %.1f us: "
              "bubble %.2f %% of the step (1F1B ideal %.2f %%)" % (k, x["stage"], x["steps"], m["step"], m["compute"],
                                                                 m["comm"], m["wait"], m["bubble"], 100 * share,
                                                                 100 * want))
        assert x["stage"] == k and x["steps"] == STEPS - 2 and x["steps_incomplete"] == 0, x
        assert abs(share - want) < 0.015, (k, share)
        assert (round(m["step"], 1), round(m["compute"], 1), round(m["bubble"], 1)) == PP_PINNED[k], m
        assert m["wait"] * 1e3 <= EVENT_NS, m  # every wait there is the pipeline's
    assert by[0]["median_us"]["bubble"] > 0 and by[3]["median_us"]["bubble"] > 0
    stages = r["steps"]["per_stage"]
    assert [g["stage"] for g in stages] == [0, 1, 2, 3], stages


# megatron_pp 4 stages x 2 replicas, 30 steps: per stage (step, compute, bubble) medians (us)
PP_DP_PINNED = {0: (15242.6, 8255.0, 6584.1), 1: (15242.6, 8273.5, 6392.5), 2: (15242.6, 8273.5, 6373.2),
                3: (15242.6, 8255.0, 6564.9)}


def case_pp_dp(cli, apps, tmp):
    d = os.path.join(tmp, "ppdp", "d")
    os.makedirs(os.path.dirname(d))
    run_job(cli, apps, d, "megatron_pp", ["--size", "64K", "--tp", "1", "--pp", "4", "--microbatches", "4", "--layers",
                                          "2", "--compute-us", str(COMPUTE_US), "--pause-ms", "20", "--no-grad-norm"],
            8, steps=30)
    # 30 steps of ~48 ops a rank outgrow the 1,024 ops a rank holds, and the walk gives the
    # tensor-parallel communicator's instances after the pipeline's: the latest by start are held
    r, by = steps_of(cli, d, 8, untimed=8)
    want = 3 / 7
    for k, x in sorted(by.items()):
        tot = {f: sum(st[f + "_ns"] for st in x["per_step"]) for f in ("step", "compute", "comm", "wait", "bubble")}
        m = x["median_us"]
        print("rank %d (stage %s): %d steps (%d incomplete), step %.1f us, compute %.1f, bubble %.1f: bubble %.2f %%" %
              (k, x["stage"], x["steps"], x["steps_incomplete"], m["step"], m["compute"], m["bubble"],
               100 * tot["bubble"] / tot["step"]))
        assert x["stage"] == k // 2 and x["steps"] >= 15 and x["steps_incomplete"] == 0, x
        assert abs(tot["bubble"] / tot["step"] - want) < 0.015, (k, tot)
        assert (round(m["step"], 1), round(m["compute"], 1), round(m["bubble"], 1)) == PP_DP_PINNED[k // 2], m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["dp_clean", "dp_slow", "dp_big", "pp_1f1b", "pp_dp"])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-steps-")
    try:
        globals()["case_" + a.case](a.cli, a.apps, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
