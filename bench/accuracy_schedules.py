#!/usr/bin/env python3
"""bench/accuracy_schedules.py: the training-schedule rows of bench/accuracy.py (docs/accuracy.md
"Training schedules"): pipelines with and without the collectives that cross their stages, a data
loader that stalls, uneven data shards, a GPU slow for a while, a host that stalls every other
step; each workload's app and faults as processes, its row's scoring from `collscope report
--json`'s stragglers, pipeline and balance sections, and the rows of the sweep (plan()).

Workloads (as processes, tests/apps):
  pp_x      megatron_pp, TP 1 (8 ranks) or 2 x PP 4 x DP, 1F1B over 4 microbatches, with the
            grad-norm AllReduce over the model-parallel group and the tied-embedding AllReduce
            of the first and the last stage: collectives across the stages;
  pp        the same with neither (--no-grad-norm, no --tied-embedding);
  loader    dp_train, 200 steps; fault `loader`: the culprit's host stalls 200 ms every 50
            steps from collective 30 (`hostdelay:rank=R,us=200000,every=50,from=30`);
  uneven    dp_train --batch-bytes 1M, 40 steps; fault `shares:pct=10`: the culprit and the
            second rank (`two`'s) get 10 % more samples (--shares: 10 % more compute and input);
  loader_20ms, uneven_20ms: the same with 20 ms of compute a bucket (tests/balance's job);
  transient dp_train, 80 steps; fault `transient:pct=20`: the culprit 20 % slow for 30 steps,
            collectives 60 to 149 (`slow:rank=R,pct=20,from=60,until=150`), then healthy;
  flapping  dp_train, 80 steps; fault `flap:us=3000`: the culprit's host 3 ms late every other
            step from collective 3 (`hostdelay:rank=R,us=3000,every=2,from=3`).
In process (bench/accuracy_workloads.c, bench/accuracy_pipeline.c): `pp1f1b` and `pp1f1b_x`, the
pipeline without and with the cross-stage AllReduces, judged as the report judges them (the
schedule, the peers' waits) and scored as accuracy.py's rows (`compute:pct=10` on a middle stage)."""
import math

# the apps' steps and the pipeline's shape (tests/balance/test_pipeline_sim.py's megatron_pp job)
PP_ARGS = ["--size", "64K", "--pp", "4", "--microbatches", "4", "--layers", "2", "--compute-us", "1000",
           "--pause-ms", "20"]  # --pause-ms: wall time only, so the harvest thread keeps every op GPU-timed
DP_ARGS = ["--size", "256K", "--compute-us", "2000"]
STEPS = {"pp": 30, "pp_x": 30, "loader": 200, "loader_20ms": 200, "uneven": 40, "uneven_20ms": 40, "transient": 80,
         "flapping": 80}
FAULTS = {"pp": "stage:pct=10", "pp_x": "stage:pct=10", "loader": "loader", "loader_20ms": "loader",
          "uneven": "shares:pct=10", "uneven_20ms": "shares:pct=10", "transient": "transient:pct=20",
          "flapping": "flap:us=3000"}
# the *_20ms workloads: dp_train's buckets 20 ms of compute each, the job of tests/balance/test_advice_sim.py
DP_20MS = ["--size", "256K", "--compute-us", "20000"]
WORKLOADS = list(STEPS)
DRIVER_WORKLOADS = ["pp1f1b", "pp1f1b_x"]  # in process: bench/accuracy_workloads.c
# the onset (the culprit's first delayed collective, seq) of the faults the simulator does not report
ONSETS = {"loader": 30, "flap": 3}
LOADER_US, LOADER_EVERY = 200000, 50  # the loader fault: a 200 ms stall every 50 steps
# a stall's cost as a share of the step (a loader's, a flapping host's): at or above LOADER_BAR_PCT
# it must be named (#40's bar: a rank that costs the job 5 % of its step time); below
# REPORT_MIN_GAIN_PCT (the report's balance bar, tools/report/report_balance.c MIN_GAIN_PCT) the
# right verdict is none; between them either (right_answer). Recall counts it named either way.
LOADER_BAR_PCT, REPORT_MIN_GAIN_PCT = 5.0, 3.0
TRANSIENT = (60, 150)  # collectives [from, until) of `transient`: steps 20 to 49 of dp_train's 3 a step
FLAP_BAR_STEPS = 60
DP_OPS_PER_STEP = 3  # dp_train: 3 gradient buckets a step, one AllReduce each


def culprits(w, fault, n):
    """the culprit (rank 5 or N/2+5) and, for uneven shards, the second rank (1 or N/4+1)"""
    if fault == "none":
        return []
    c, c2 = (5, 1) if n == 8 else (n // 2 + 5, n // 4 + 1)
    return sorted([c, c2]) if fault.startswith("shares") else [c]


def app_cmd(w, fault, n, steps=None):
    k = str(steps or STEPS[w])
    if w in ("pp", "pp_x"):
        tp = "1" if n == 8 else "2"
        extra = ["--tied-embedding"] if w == "pp_x" else ["--no-grad-norm"]
        return "megatron_pp", ["--steps", k, "--tp", tp] + PP_ARGS + extra, {}
    base = DP_20MS if w.endswith("_20ms") else DP_ARGS
    if w.startswith("uneven"):
        shares = ["1.1" if r in culprits(w, fault, n) else "1" for r in range(n)]
        return "dp_train", ["--steps", k, "--batch-bytes", "1M", "--shares", ",".join(shares)] + base, {}
    return "dp_train", ["--steps", k] + base, {}


def stall_cost(us, every, b):
    """a stall of `us` every `every` steps as a percentage of the report's step (b: its balance
    section), None when it has no step"""
    step = b.get("step_us_now") or 0
    return 100.0 * us / (every * step) if step > 0 else None


def right_answer(named, quiet, cost):
    """a stall fault's verdict: named when its stalls cost >= LOADER_BAR_PCT of the step (or the
    cost is unknown), nothing named or advised below REPORT_MIN_GAIN_PCT, either between"""
    if cost is None or cost >= LOADER_BAR_PCT:
        return named
    return quiet if cost < REPORT_MIN_GAIN_PCT else named or quiet


def sim_faults(w, fault, n, base):
    """base: the noise and ring-step entries (accuracy.py sim_faults)"""
    f = list(base)
    cs = culprits(w, fault, n)
    kind = fault.split(":")[0]
    if kind == "stage":  # the culprit's GPU P% slower at its compute, from the start
        f.append("slow:rank=%d,compute=%s" % (cs[0], fault.split("=")[1]))
    elif kind == "loader":
        f.append("hostdelay:rank=%d,us=%d,every=%d,from=%d" % (cs[0], LOADER_US, LOADER_EVERY, ONSETS["loader"]))
    elif kind == "transient":
        f.append("slow:rank=%d,pct=%s,from=%d,until=%d" % ((cs[0], fault.split("=")[1]) + TRANSIENT))
    elif kind == "flap":
        f.append("hostdelay:rank=%d,us=%s,every=2,from=%d" % (cs[0], fault.split("=")[1], ONSETS["flap"]))
    elif kind not in ("none", "shares"):
        return None
    return ";".join(f)


def plan(seeds):
    """(workload, ranks, fault, seeds, max process ranks, noise, shape): every schedule workload
    clean and with its fault at 8 and 64 ranks as processes, 2 % and 5 % + tail; the in-process
    pipelines at 1,024 and 16,384 ranks"""
    p = []
    for n in (8, 64):
        for nz in ("2", "5t"):
            for w in WORKLOADS:
                p += [(w, n, f, seeds, 256, nz, "wire") for f in ("none", FAULTS[w])]
    for n in (1024, 16384):
        for nz in ("2", "5t"):
            for w in DRIVER_WORKLOADS:
                p += [(w, n, f, seeds, 0, nz, "wire") for f in ("none", "compute:pct=10")]
    return p


def _balance_ranks(rep):
    b = rep.get("balance") or {}
    return b, {x["rank"]: x for x in b.get("ranks") or []}


def score(w, fault, n, runs, ranks_per_host):
    """the row's figures: recall and kind as accuracy.py's score() plus, per workload, what the
    issue asks (`verdict`: the share of seeds whose named verdict is the expected one)"""
    cs = culprits(w, fault, n)
    kind = fault.split(":")[0]
    rec = kok = coll = ver = 0
    after, false, clean, extra = [], 0, 0, []
    for r in runs:
        rep = r["report"]
        st = [s for s in rep["stragglers"]]
        b, br = _balance_ranks(rep)
        pipe = rep.get("pipeline") or {}
        slow_st = pipe.get("slow_stages") or []
        if kind == "none":
            clean += r["judged"]
            false += len(st) + len(r["hangs"]) + len(r["slow_links"]) + len(slow_st)
            # a clean run's balance: every rank ok
            ver += all(x.get("verdict") == "ok" for x in br.values())
            continue
        onset = r.get("onset")
        pre = [s for s in r["stragglers"] if s["rank"] >= 0 and s.get("after") is not None and s["after"] <= 0]
        false += len(pre)
        if onset is not None:
            clean += max(0, onset - 9)
        hit = [s for s in r["stragglers"] if s["rank"] in cs and s["host"] == "simhost%d" % (
            s["rank"] // ranks_per_host + 1) and (s.get("after") is None or s["after"] > 0)]
        others = [s for s in st if s["rank"] >= 0 and s["rank"] not in cs]
        fa = [s["after"] for s in hit if s.get("after")]
        if kind == "stage":
            stage = next((i for i, g in enumerate(pipe.get("per_stage") or []) if cs[0] in g.get("ranks", [])), None)
            named = [s for s in slow_st if s.get("rank") == cs[0]]
            ok = bool(hit) or bool(named)
            rec += ok
            kok += ok and all(s["kind"] == "compute" for s in hit)
            ver += any(s.get("stage") == stage for s in named)
            coll += bool(others) or any(s.get("rank") != cs[0] for s in slow_st)
            after.append(None)
            extra.append({"stage": stage, "stragglers": len(hit), "slow_stages": len(named)})
            continue
        if kind in ("loader", "shares"):
            want = "data_loader" if kind == "loader" else "uneven_data"
            vs = [br.get(c, {}).get("verdict") for c in cs]
            ok = all(v == want for v in vs)
            rec += ok
            if kind == "loader":  # no share change: the stall is the host's, no share of the batch moves it
                kok += ok and b.get("action") == "fix_loader" and "no share change" in (b.get("advice") or "")
            else:  # uneven data, not slow nodes: no other verdict on them, the advice the data's
                kok += ok and (b.get("advice") or "").startswith("uneven data")
            cost = stall_cost(LOADER_US, LOADER_EVERY, b) if kind == "loader" else None
            quiet = all(v == "ok" for v in vs) and b.get("action") == "none"  # nothing named, nothing advised
            ver += right_answer(ok, quiet, cost)
            coll += any(x.get("verdict") != "ok" for k, x in br.items() if k not in cs) or bool(others)
            after.append(None)
            dev = max([abs(x["share"] - x["share_now"]) for x in br.values() if x.get("share") is not None] or [0])
            extra.append({"verdicts": vs, "action": b.get("action"), "stragglers_on_culprits": len(hit),
                          "share_change": round(dev, 5), "stall_us": br.get(cs[0], {}).get("stall_us"),
                          "stall_cost_pct": round(cost, 2) if cost is not None else None})
            continue
        # transient, flapping: the detector names the culprit
        ok = bool(hit)
        rec += ok
        coll += bool(others)
        if kind == "transient":  # found, and cleared once healthy again
            ong = [s.get("ongoing") for s in rep["stragglers"] if s["rank"] in cs]
            kok += ok and not any(ong)
            ver += ok and not any(ong)
            after.append(min(fa) if ok and fa else None)
            extra.append({"ongoing": ong})
        else:  # named within FLAP_BAR_STEPS steps: dp_train's comm has 3 instances a step
            steps = math.ceil(min(fa) / DP_OPS_PER_STEP) if ok and fa else None
            kok += ok and all(s["kind"] == "compute" or s["kind"] == "host" for s in hit)
            cost = stall_cost(float(fault.split("=")[1]), 2, b)  # every other step
            # below the bar naming it is not required, and a finding on it is true whatever its cost
            ver += right_answer(steps is not None and steps <= FLAP_BAR_STEPS, True, cost)
            after.append(steps)
            extra.append({"kinds": sorted({s["kind"] for s in hit}), "verdict": br.get(cs[0], {}).get("verdict"),
                          "stall_cost_pct": round(cost, 2) if cost is not None else None})
    k = len(runs)
    none = kind == "none"
    return {"recall": None if none else rec / k, "kind_ok": None if none else kok / k, "cause_ok": None,
            "verdict_ok": ver / k if k else None, "flag_after": [] if none else after,
            "false_per_million": (false / clean * 1e6) if clean else None, "judged_clean": clean,
            "collateral": None if none else coll / k, "explained": 0, "detail": extra}


# ---------------------------------------------------------------- the page (bench/accuracy_page.py)

VERDICT_OF = {"pp": "the culprit's stage named (`pipeline.slow_stages`)",
              "loader": "`data_loader` on the culprit when its stalls cost >= 5 % of the step (below the report's "
                        "3 %: no verdict and no advice; between: either)",
              "uneven": "`uneven_data` on both", "transient": "cleared (`ongoing` false)",
              "flapping": "named within %d steps when its stalls cost >= 5 %% of the step (below: not required)"
                          % FLAP_BAR_STEPS}


def _family(w):
    return w.replace("_20ms", "").replace("_x", "")


def page_section(rows, fmt, after_cell, noise_names):
    """docs/accuracy.md's "Training schedules": the text and one table of the rows of WORKLOADS and
    DRIVER_WORKLOADS"""
    L = ["## Training schedules", "",
         "bench/accuracy_schedules.py: the culprit is rank 5 (8 ranks) or N/2+5, the second rank 1 or N/4+1.",
         "- `pp_x`: tests/apps/megatron_pp, TP 1 (8 ranks) or 2 x PP 4 x DP, 1F1B over 4 microbatches, 1 ms a",
         "  pass, 30 steps, with the collectives across the stages (the grad-norm AllReduce over the",
         "  model-parallel group, the tied-embedding AllReduce of the first and the last stage); `pp` without",
         "  them (--no-grad-norm, untied embeddings). `stage:pct=10`: the culprit (stage 2, a middle stage)",
         "  10 % slower at its compute (`slow:rank=R,compute=10`) from the start.",
         "- `loader`: dp_train (3 buckets of 2 ms a step), 200 steps; `loader` the culprit's host stalls 200 ms",
         "  every 50 steps from collective 30 (`hostdelay:rank=R,us=200000,every=50,from=30`). `loader_20ms`:",
         "  the same job with 20 ms a bucket (tests/balance/test_advice_sim.py's).",
         "- `uneven`: dp_train --batch-bytes 1M, 40 steps; `shares:pct=10` the culprit and the second rank",
         "  with 10 % more samples (--shares: 10 % more compute and input bytes); `uneven_20ms` with 20 ms a bucket.",
         "- `transient`: dp_train, 80 steps; `transient:pct=20` the culprit 20 % slow at collectives 60-149",
         "  (steps 20-49: `slow:rank=R,pct=20,from=60,until=150`), then healthy.",
         "- `flapping`: dp_train, 80 steps; `flap:us=3000` the culprit's host 3 ms late every other step from",
         "  collective 3 (`hostdelay:rank=R,us=3000,every=2,from=3`).",
         "- `pp1f1b`, `pp1f1b_x` (in process, bench/accuracy_workloads.c): the same pipeline at TP 2 x PP 4 x DP",
         "  without and with the cross-stage AllReduces, `compute:pct=10` on the culprit (stage 2). The driver",
         "  runs 1F1B with each stage's Sends and Recvs meeting their peers' (bench/accuracy_pipeline.c) and",
         "  judges the detector's findings as the report does: the schedule (analysis/schedule.c: a",
         "  cross-stage finding the stage order explains is left out), then the peers' waits",
         "  (analysis/peer_wait.c: a link finding that is its wait for a flagged peer moves to that peer).",
         "  Those left out are no false findings: counted in `explained`.",
         "",
         "Columns as above, and verdict: the share of seeds with the row's own outcome: a clean row every",
         "balance verdict `ok`; " + "; ".join("`%s` %s" % kv for kv in VERDICT_OF.items()) + ". kind: `stage`",
         "a compute finding on the culprit; `loader` the verdict with the action `fix_loader` and \"no share",
         "change\"; `uneven` both verdicts and the advice \"uneven data\"; `transient` found and cleared;",
         "`flapping` a compute or host finding. after: instances from the onset to the first flag (`flapping`:",
         "steps). false: clean rows count every straggler, slow stage, hang and slow link. noise: rows with",
         "`cost model alone` run without the 300 us ring step (the issue's own cases' short steps: at 64 ranks",
         "the ring step makes a step 120-184 ms, and a stall fault then costs 1-2 % of it).", "",
         "| workload | ranks | fault | noise | mode | seeds | recall | kind | verdict | after (median / max) | collateral | false / 1M (judged) | wall |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = WORKLOADS + DRIVER_WORKLOADS
    mine = [o for o in rows if o["workload"] in order]
    for o in sorted(mine, key=lambda o: (order.index(o["workload"]), o["mode"] != "processes", o["ranks"],
                                         ("2", "5t", "10t").index(o["noise"]), o["fault"] != "none")):
        L.append("| %s | %d | `%s` | %s | %s | %d | %s | %s | %s | %s | %s | %s (%d) | %.0f s |" % (
            o["workload"], o["ranks"], o["fault"],
            noise_names[o["noise"]] + (", cost model alone" if o.get("shape", "wire") == "bare" else ""),
            o.get("mode_cell", o["mode"]), o["seeds"], fmt(o["recall"]),
            fmt(o["kind_ok"]), fmt(o.get("verdict_ok")), after_cell(o["flag_after"]), fmt(o["collateral"]),
            fmt(o["false_per_million"], False), o["judged_clean"], o["wall_s"]))
    for w in order:
        cl = [o for o in mine if o["workload"] == w and o["fault"] == "none"]
        tot = sum(o["judged_clean"] for o in cl)
        fp = sum((o["false_per_million"] or 0) * o["judged_clean"] / 1e6 for o in cl)
        if cl:
            L.append("")
            L.append("%s: judged clean instances %d, false findings %d (%s per 1M)." % (
                w, tot, round(fp), "%g" % (fp / tot * 1e6) if tot else "n/a"))
    return L + [""]
