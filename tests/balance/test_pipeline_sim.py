#!/usr/bin/env python3
"""tests/balance/test_pipeline_sim.py CASE --cli COLLSCOPE --apps DIR

Pipelines judged against their schedule (docs/detection.md "Pipelines", docs/balance.md
"Pipelines"), on the modeled clock (COLLSCOPE_SIM_CLOCK=model, seed 1, every op timed): exact
figures under any load.
Cases:
  mp_clean: megatron_pp, 4 stages x 2 data-parallel replicas, 1F1B over 4 microbatches, the
      grad-norm AllReduce over the model-parallel group and the tied-embedding AllReduce
      between the first and the last stage: no straggler; the report's pipeline section
      recovers the stages, the microbatches and 1F1B's warm-up, and counts the 6 cross-stage
      lateness findings the stage order explains; the balance section is the pipeline's;
  mp_slow: the same with rank 2 (stage 1) 10 % slower (slow:rank=2,compute=10): exactly rank 2
      is a straggler, named as stage 1 against its stage's peer (it never arrives last: the
      drain's stage 0 does, so the schedule names it from its compute gap); rank 0 (stage 0)
      10 % slower: the detector's findings on rank 0 at the grad-norm and the tied embedding,
      each kept against its stage's peer, and no second finding for either;
  pp_layers: pipeline (one stage per rank, 4 H100s) --layers 8,8,8,8: no advice; 4,8,8,12:
      the report proposes 8,8,8,8 (the steps flushed: the gradients come back to stage 0), and
      applied it realises >= 80 % of the predicted gain;
  mp_layers: megatron_pp --stage-layers 4,8,8,12 (steps flushed by the cross-stage
      AllReduces): the same, the balance model counting the pipeline's fill and drain;
  mp_stage_summary: mp_stage_slow's job, 40 steps, recorded with COLLSCOPE_RECORD=summary and no
      window (docs/always-on.md): the clean run names no one; with slow:rank=5,compute=10 rank 5
      is named as stage 2 from the gaps lines' last 64 ops of the data-parallel communicator,
      its figures against the full recording's, and still when rank 5's line is rewritten as if
      a record had been lost (the seqs align the members), and not when its ops are all marked
      without a gap (ring_nogap);
  pp_noisy: pipeline --layers 8,8,8,10, 12 steps, every compute sleep and collective with a
      heavy tail (jitter:pct=1,tail=100): the predicted gain is over 3 % of the step, but its
      95 % interval across steps reaches below zero: no advice."""
import argparse, glob, json, math, os, shutil, subprocess, tempfile

STEPS = 30
# every op of a job (megatron_pp's 30 steps: 2,850 a rank) GPU-timed even if collscope's harvest
# thread, which tops the event pool up, is not scheduled while the job runs (a machine at load
# ~300 left 26 ops of rank 0 untimed and the balance figures short)
EVENTS_ALL = "8192"
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1",
         "COLLSCOPE_EVENT_PREFILL": EVENTS_ALL}
# --pause-ms: 20 ms of wall time after each step (a raw system call: no modeled time) so that collscope's
# harvest thread recycles the CUDA events of a job the modeled clock runs faster than it:
# every op GPU-timed on a loaded machine too
PAUSE = ["--pause-ms", "20"]
MP = ["--size", "64K", "--tp", "1", "--pp", "4", "--microbatches", "4", "--layers", "2", "--compute-us", "1000",
      "--tied-embedding"] + PAUSE
COST = (8699.9855, 1.89362482563)  # case_mp_stage_slow: rank 5's finding, us and % of its span
H100 = "simhost1=NVIDIA H100 80GB HBM3;simhost2=NVIDIA H100 80GB HBM3"


def run_job(cli, apps, d, app, args, n, hosts, faults="", steps=STEPS, env_extra=None):
    env = dict(os.environ, COLLSCOPE_DIR=d, COLLSCOPE_SHM_DIR=os.path.dirname(d), COLLSCOPE_SIM_FAULTS=faults, **MODEL)
    env.update(env_extra or {})
    cmd = [cli, "run", "-n", str(n), "--hosts", hosts, "--sim", "--", os.path.join(apps, app), "--steps", str(steps)]
    p = subprocess.run(cmd + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=200)
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout[-3000:]


def report(cli, d, extra=()):
    p = subprocess.run([cli, "report", d, "--json"] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def megatron(cli, apps, tmp, name, faults="", args=(), steps=STEPS, extra=()):
    d = os.path.join(tmp, name, "d")
    os.makedirs(os.path.dirname(d))
    run_job(cli, apps, d, "megatron_pp", MP + list(args), 8, "simhost[1-4]", faults, steps)
    return d, report(cli, d, extra)


def check_schedule(r):
    p = r["pipeline"]
    print("pipeline:", json.dumps({k: p[k] for k in ("stages", "microbatches", "schedule", "explained_by_schedule")}))
    assert p["stages"] == 4 and p["microbatches"] == 4 and p["schedule"] == "1f1b", p
    assert [s["ranks"] for s in p["per_stage"]] == [[0, 1], [2, 3], [4, 5], [6, 7]], p["per_stage"]
    # 1F1B: stage s runs min(P - s - 1, M) warm-up forwards, then one more before its first backward
    assert [s["forwards_before_first_backward"] for s in p["per_stage"]] == [4, 3, 2, None], p["per_stage"]
    # two pipelines (one per replica); grad-norm and tied embedding per replica cross stages
    assert len(p["comms"]["pipeline"]) == 2 and len(p["comms"]["cross_stage"]) == 4, p["comms"]
    return p


def case_mp_clean(cli, apps, tmp):
    _, r = megatron(cli, apps, tmp, "clean")
    got = [(s["rank"], s["kind"]) for s in r["stragglers"]]
    print("stragglers:", got)
    assert got == [], r["stragglers"]
    p = check_schedule(r)
    # the stage order's lateness, each explained: the 1F1B drain ends on stage 0, so per replica
    # stage 0 arrives last at the tied-embedding AllReduce (2 findings), and stages 0 and 3 leave
    # it together after stages 1 and 2 reached the grad-norm AllReduce (4 findings)
    assert p["explained_by_schedule"] == 6 and p["slow_stages"] == [], p
    b = r["balance"]
    print("balance:", json.dumps({k: b.get(k) for k in ("kind", "action", "advice", "microbatches")}))
    assert b["kind"] == "pipeline" and b["action"] == "none" and b["microbatches"] == 4, b
    # every stage's compute per step: 8 passes (4 microbatches, forward and backward) of 1 ms
    c = [s["compute_us"] for s in b["stages"]]
    assert all(8000 < x < 8400 for x in c), c


def case_mp_slow(cli, apps, tmp):
    _, r = megatron(cli, apps, tmp, "slow", faults="slow:rank=2,compute=10")
    got = [(s["rank"], s["kind"], s["rule"]) for s in r["stragglers"]]
    print("stragglers:", got)
    # named by the schedule over the whole job (rule `stage`: no flag instance of its own)
    assert got == [(2, "compute", "stage")], r["stragglers"]
    p = check_schedule(r)
    slow = [(s["stage"], s["rank"], round(s["gap_us"], 1), round(s["stage_gap_us"], 1)) for s in p["slow_stages"]]
    print("slow stages:", slow, "explained:", p["explained_by_schedule"])
    # rank 2's step at the grad-norm: 8 passes of 1.1 ms; its stage peer rank 3's of 1 ms
    assert slow == [(1, 2, 9077.5, 8277.5)], p["slow_stages"]
    # rank 2 delays its replica's pipeline but never arrives last (the drain's stage 0 and the
    # tied embedding's stage 3 do, as in mp_clean): all 6 lateness findings explained
    assert p["explained_by_schedule"] == 6, p
    # stage 0 slow: the detector flags rank 0 at both cross-stage AllReduces (the drain's stage
    # is last there anyway); the schedule keeps both against rank 1 and adds none of its own
    _, r = megatron(cli, apps, tmp, "slow0", faults="slow:rank=0,compute=10")
    got = [(s["rank"], s["kind"]) for s in r["stragglers"]]
    print("stragglers:", got)
    assert got == [(0, "compute"), (0, "compute")], r["stragglers"]
    p = check_schedule(r)
    slow = [(s["stage"], s["rank"], round(s["gap_us"], 1), round(s["stage_gap_us"], 1)) for s in p["slow_stages"]]
    print("slow stages:", slow, "explained:", p["explained_by_schedule"])
    # 8 passes of 1.1 ms against 8 of 1 ms, the modeled figures to 0.1 us (the mean of 29 gaps)
    assert len(slow) == 2 and all(x[:2] == (0, 0) and abs(x[2] - 9068.25) <= 0.1 and abs(x[3] - 8268.3) <= 0.1
                                  for x in slow), p["slow_stages"]
    assert p["explained_by_schedule"] == 4, p


# megatron_pp without a collective across its stages (--no-grad-norm, no tied embedding)
NO_CROSS = ["--no-grad-norm"]


def slow_stages(p):
    return [(s["stage"], s["rank"], s["basis"], round(s["gap_us"], 1), round(s["stage_gap_us"], 1),
             s.get("above"), s.get("instances")) for s in p["slow_stages"]]


def case_mp_stage_slow(cli, apps, tmp):
    d = os.path.join(tmp, "nocross", "d")
    os.makedirs(os.path.dirname(d))
    args = [a for a in MP if a != "--tied-embedding"] + NO_CROSS
    run_job(cli, apps, d, "megatron_pp", args, 8, "simhost[1-4]", "")
    r = report(cli, d)
    p = r["pipeline"]
    print("clean: stragglers", [(s["rank"], s["kind"]) for s in r["stragglers"]], "slow stages", slow_stages(p))
    assert p["stages"] == 4 and p["comms"]["cross_stage"] == [], p
    assert r["stragglers"] == [] and p["slow_stages"] == [], (r["stragglers"], p["slow_stages"])
    d = os.path.join(tmp, "nocross_slow", "d")
    os.makedirs(os.path.dirname(d))
    run_job(cli, apps, d, "megatron_pp", args, 8, "simhost[1-4]", "slow:rank=5,compute=10")
    r = report(cli, d)
    p = r["pipeline"]
    got = [(s["rank"], s["kind"]) for s in r["stragglers"]]
    slow = slow_stages(p)
    print("slow rank 5: stragglers", got, "slow stages", slow, "p", [s["p"] for s in p["slow_stages"]])
    assert [s["rule"] for s in r["stragglers"]] == ["stage"], r["stragglers"]
    # rank 5's whole pipeline copy waits for it at every Send/Recv, so its stage peer rank 4 is
    # as late as it at their data-parallel reduce-scatter: the detector sees no one late; rank
    # 5's compute before the reduce-scatter, 8 passes of 1.1 ms against rank 4's 8 of 1 ms
    # (half of it per instance: the all-gather right after has none), names it as stage 2
    assert got == [(5, "compute")], r["stragglers"]
    # (its mean gap per instance, to 0.1 us; above rank 4 at each of the 29 reduce-scatters
    # after step 0; the all-gathers' gaps, a few us of timing noise either way, weigh next to
    # nothing in the sign test: p below 0.001 over the 8 members judged)
    assert [x[:3] for x in slow] == [(2, 5, "stage_compute")], p["slow_stages"]
    s = p["slow_stages"][0]
    assert abs(s["gap_us"] - 4459.85) <= 0.1 and abs(s["stage_gap_us"] - 4066.63) <= 0.1, s
    assert s["above"] >= 29 and s["p"] < 1e-3 / 8, s
    # what it cost: its lateness at its stage's collectives over its flagged span, and that
    # share of its own ops' time between the span's ends (the span from its ops' GPU ends)
    f = r["stragglers"][0]
    print("cost", f["cost_us"], f["cost_pct"])
    assert abs(f["cost_us"] - COST[0]) <= 0.01 and abs(f["cost_pct"] - COST[1]) <= 1e-6, f


# COLLSCOPE_RECORD=summary (docs/always-on.md) without windows: only the gaps lines carry the job
SUMMARY = {"COLLSCOPE_RECORD": "summary", "COLLSCOPE_FLIGHT_LOCAL": "off", "COLLSCOPE_FLIGHT_OPS": "64",
           "COLLSCOPE_FLIGHT_AFTER": "32", "COLLSCOPE_COMPRESS": "off"}
SUMMARY_STEPS = 40  # 80 ops of the data-parallel communicator: its gaps lines hold the last 64


def gaps_line_set(d, rank, comm, **kv):
    """rank's gaps line of comm with the keys kv replaced"""
    f = [x for x in glob.glob(os.path.join(d, "*.jsonl")) if "-r%d-" % rank in os.path.basename(x)]
    ls = open(f[0]).read().splitlines()
    for i, l in enumerate(ls):
        o = json.loads(l)
        if o.get("type") == "gaps" and o["comm"] == comm:
            o.update(kv)
            ls[i] = json.dumps(o, separators=(",", ":"))
    with open(f[0], "w") as fh:
        fh.write("\n".join(ls) + "\n")


def lose_record(d, rank, comm, lost):
    """rank's gaps line of comm rewritten as if its record of seq `lost` never reached the writer:
    one op fewer, its first and last 64 recorded ops (seq lost - 1's running compute then the
    next op's predecessor: the next op's gap takes in the lost one's); the line of an 80-op
    member holds every op's figures (first 64, last 64)"""
    f = [x for x in glob.glob(os.path.join(d, "*.jsonl")) if "-r%d-" % rank in os.path.basename(x)]
    assert len(f) == 1, f
    ls = open(f[0]).read().splitlines()
    ints = lambda v: [int(x) for x in v.split(",")]
    for i, l in enumerate(ls):
        o = json.loads(l)
        if o.get("type") != "gaps" or o["comm"] != comm:
            continue
        n = o["ops"]
        assert n == 80 and ints(o["ring_seq"]) == list(range(16, 80)), (n, o["ring_seq"])
        cum = {**dict(zip(range(64), ints(o["head_gap"]))), **dict(zip(range(16, 80), ints(o["ring_gap"])))}
        end = {**dict(zip(range(64), ints(o["head_end"]))), **dict(zip(range(16, 80), ints(o["ring_end"])))}
        kept = [q for q in range(n) if q != lost]
        o.update(ops=n - 1, head_gap=",".join(str(cum[q]) for q in kept[:64]),
                 head_end=",".join(str(end[q]) for q in kept[:64]), ring_gap=",".join(str(cum[q]) for q in kept[-64:]),
                 ring_end=",".join(str(end[q]) for q in kept[-64:]), ring_seq=",".join(map(str, kept[-64:])))
        ls[i] = json.dumps(o, separators=(",", ":"))
        with open(f[0], "w") as fh:
            fh.write("\n".join(ls) + "\n")
        return
    assert False, "no gaps line of %s in %s" % (comm, f[0])


def case_mp_stage_summary(cli, apps, tmp):
    args = [a for a in MP if a != "--tied-embedding"] + NO_CROSS
    got, dirs = {}, {}
    for name, faults, mode in (("clean", "", "summary"), ("slow_full", "slow:rank=5,compute=10", "full"),
                               ("slow", "slow:rank=5,compute=10", "summary")):
        d = os.path.join(tmp, name, "d")
        os.makedirs(os.path.dirname(d))
        run_job(cli, apps, d, "megatron_pp", args, 8, "simhost[1-4]", faults, SUMMARY_STEPS,
                SUMMARY if mode == "summary" else {"COLLSCOPE_RECORD": "full"})
        r = report(cli, d)
        p = r["pipeline"]
        got[name], dirs[name] = r, d
        print("%s (%s): stragglers %s, slow stages %s, p %s, windows %s, gaps_sched_refused %s" %
              (name, mode, [(s["rank"], s["kind"]) for s in r["stragglers"]], slow_stages(p),
               [s.get("p") for s in p["slow_stages"]], len(r.get("flight", {}).get("windows", [])),
               r.get("flight", {}).get("gaps_sched_refused")))
        assert p["stages"] == 4 and p["comms"]["cross_stage"] == [], p
    clean, full, summ = got["clean"], got["slow_full"], got["slow"]
    # the clean job: no straggler, no slow stage, from its gaps lines alone (no window opened)
    assert clean["stragglers"] == [] and clean["pipeline"]["slow_stages"] == [], clean["pipeline"]["slow_stages"]
    for r in (full, summ):
        assert [(s["rank"], s["kind"]) for s in r["stragglers"]] == [(5, "compute")], r["stragglers"]
        assert [x[:3] for x in slow_stages(r["pipeline"])] == [(2, 5, "stage_compute")], r["pipeline"]["slow_stages"]
    f, s = full["pipeline"]["slow_stages"][0], summ["pipeline"]["slow_stages"][0]
    assert summ["flight"]["windows"] == [] and summ["flight"]["gaps_sched_refused"] == 0, summ["flight"]
    # the means are every op's (the writer sums them): the full recording's, to the modeled
    # clock's ns of timing noise between two runs; 8 passes of 1.1 ms against rank 4's 8 of 1 ms
    assert abs(s["gap_us"] - 4479.3) <= 0.1 and abs(s["stage_gap_us"] - 4084.4) <= 0.1, s
    assert abs(s["gap_us"] - f["gap_us"]) <= 0.01 and abs(s["stage_gap_us"] - f["stage_gap_us"]) <= 0.01, (f, s)
    # the sign test over the instances the last 64 ops hold: rank 5 above rank 4 at each of their
    # 32 reduce-scatters (weight w, its peer's gap there; the all-gathers' gaps, timing noise
    # either way, weigh next to nothing): T = 32 w, sum w^2 = 32 w^2, p = exp(-16); the full
    # recording's 39 reduce-scatters after step 0: p = exp(-19.5)
    assert s["above"] >= 32 and s["instances"] <= 64 and s["instances"] < f["instances"], (f, s)
    assert abs(s["p"] / math.exp(-16) - 1) < 1e-3 and abs(f["p"] / math.exp(-19.5) - 1) < 1e-3, (f, s)
    # rank 5's record of the reduce-scatter of seq 40 lost before the writer: its ops from then on
    # sit one place earlier in its line, and the seqs still align them with rank 4's; that
    # instance has one member (no comparison), the next all-gather's gap takes in the lost one's
    # (weighed by rank 4's all-gather gap, next to nothing): 31 reduce-scatters above, p = exp(-15.5)
    lose_record(dirs["slow"], 5, s["comm"], 40)
    r = report(cli, dirs["slow"])
    ls = r["pipeline"]["slow_stages"]
    print("rank 5 lost seq 40: slow stages", slow_stages(r["pipeline"]), [x.get("p") for x in ls])
    assert [x[:3] for x in slow_stages(r["pipeline"])] == [(2, 5, "stage_compute")], ls
    assert ls[0]["above"] >= 31 and ls[0]["instances"] <= s["instances"], (s, ls)
    assert abs(ls[0]["p"] / math.exp(-15.5) - 1) < 1e-3, ls
    # the line saying none of those ops has a gap of its own (ring_nogap: what a timed op after a
    # break gives): rank 5 is in no instance's comparison and not named
    gaps_line_set(dirs["slow"], 5, s["comm"], ring_nogap="0x%x" % (2**64 - 1))
    r = report(cli, dirs["slow"])
    assert r["pipeline"]["slow_stages"] == [], r["pipeline"]["slow_stages"]


def measured_step_us(d, n):
    """the slowest rank's step: its ops by end time (the graphs' captured records, which run
    at replay, left out), split into STEPS equal steps: (end of the last step - end of the
    first) / (STEPS - 1)"""
    files = glob.glob(os.path.join(d, "*.jsonl"))
    assert len(files) == n, files
    worst = 0.0
    for f in files:
        ops = sorted((o for o in map(json.loads, open(f)) if o.get("type") == "op" and o["timing"] != "captured"),
                     key=lambda o: o["end_ns"])
        bad = [(o["op"], o["seq"], o["timing"]) for o in ops if o["timing"] != "gpu_event"]
        assert not bad, (f, bad[:5], len(bad))
        per = len(ops) // STEPS
        assert per * STEPS == len(ops), (f, len(ops))
        worst = max(worst, (ops[STEPS * per - 1]["end_ns"] - ops[per - 1]["end_ns"]) / 1e3 / (STEPS - 1))
    return worst


def check_gain(b, now, after, what):
    want = b["pipeline_step_us_now"] - b["pipeline_step_us_balanced"]
    got = now - after
    print("%s: step now %.1f us (report %.1f), predicted gain %.1f us [%.1f, %.1f], measured after %.1f us: %.1f %% "
          "of the predicted gain realised" % (what, now, b["pipeline_step_us_now"], want, b["pipeline_gain_us_ci"][0],
                                               b["pipeline_gain_us_ci"][1], after, 100.0 * got / want))
    assert abs(now - b["pipeline_step_us_now"]) < 1e-3 * now, (now, b["pipeline_step_us_now"])
    assert want > 0 and b["pipeline_gain_us_ci"][0] > 0, b
    assert after <= now and got >= 0.8 * want, (now, want, after)


def pipeline(cli, apps, tmp, layers, faults="", steps=STEPS):
    d = os.path.join(tmp, layers, "d")
    os.makedirs(os.path.dirname(d))
    run_job(cli, apps, d, "pipeline", ["--size", "64K", "--compute-us", "1000", "--microbatches", "4", "--layers",
                                       layers] + PAUSE, 4, "simhost[1-2]", faults, steps,
            env_extra={"COLLSCOPE_SIM_GPU_MODEL": H100, "COLLSCOPE_SIM_GPUS": "2"})
    b = report(cli, d, ["--layers", layers])["balance"]
    print("%s: %s" % (layers, json.dumps({k: b.get(k) for k in ("kind", "action", "advice", "pipeline_flushed",
                                                               "pipeline_gain_pct", "pipeline_gain_us_ci")})))
    return d, b


def case_pp_layers(cli, apps, tmp):
    d0, b = pipeline(cli, apps, tmp, "8,8,8,8")
    assert b["kind"] == "pipeline" and b["action"] == "none" and b["microbatches"] == 4, b
    assert [s["layers"] for s in b["stages"]] == [8, 8, 8, 8] and b["pipeline_gain_pct"] == 0, b["stages"]
    d1, b = pipeline(cli, apps, tmp, "4,8,8,12")
    assert b["action"] == "balance" and b["pipeline_flushed"], b
    assert b["advice"] == "the work is split unevenly on GPUs of one speed: move layers as listed", b
    layers = [s["layers"] for s in b["stages"]]
    assert layers == [8, 8, 8, 8], b["stages"]
    # every stage's compute per step is its layers' alone (8 passes of 1 ms each), the Recvs'
    # waits for their Sends not in it
    assert [round(s["layer_us"]) for s in b["stages"]] == [8009, 8009, 8009, 8003], b["stages"]
    # flushed (stage 0's next forward waits for its last backward): (M - 1) / M of the slowest
    # stage's 32 ms, the stages' total unchanged
    assert abs(b["pipeline_step_us_now"] - b["pipeline_step_us_balanced"] - 23966.0) < 1, b
    check_gain(b, measured_step_us(d1, 4), measured_step_us(d0, 4), "pipeline, --layers 4,8,8,12 -> 8,8,8,8")


def case_mp_layers(cli, apps, tmp):
    d1, r = megatron(cli, apps, tmp, "uneven", args=["--stage-layers", "4,8,8,12"], extra=["--layers", "4,8,8,12"])
    b = r["balance"]
    print("balance:", json.dumps({k: b.get(k) for k in ("kind", "action", "pipeline_flushed", "pipeline_gain_pct")}))
    assert b["kind"] == "pipeline" and b["action"] == "balance" and b["pipeline_flushed"], b
    layers = [s["layers"] for s in b["stages"]]
    assert layers == [8, 8, 8, 8], b["stages"]
    # flushed: (M - 1) / M of the slowest stage's 32 ms, the stages' total unchanged
    assert abs(b["pipeline_step_us_now"] - b["pipeline_step_us_balanced"] - 23754.1) < 1, b
    d0, r0 = megatron(cli, apps, tmp, "even", args=["--stage-layers", "8,8,8,8"], extra=["--layers", "8,8,8,8"])
    assert r0["balance"]["action"] == "none", r0["balance"]
    check_gain(b, measured_step_us(d1, 8), measured_step_us(d0, 8), "megatron_pp, --stage-layers 4,8,8,12 -> 8,8,8,8")


def case_pp_noisy(cli, apps, tmp):
    _, b = pipeline(cli, apps, tmp, "8,8,8,10", faults="jitter:pct=1,tail=100", steps=12)
    lo, hi = b["pipeline_gain_us_ci"]
    assert b["pipeline_gain_pct"] >= 3 and lo < 0 < hi and b["pipeline_gain_steps"] == 11, b
    assert b["action"] == "none" and "not above zero" in b["advice"], b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cs-pipeline-")
    try:
        {"mp_clean": case_mp_clean, "mp_slow": case_mp_slow, "mp_stage_slow": case_mp_stage_slow,
         "mp_stage_summary": case_mp_stage_summary, "pp_layers": case_pp_layers,
         "mp_layers": case_mp_layers, "pp_noisy": case_pp_noisy}[a.case](a.cli, a.apps, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
