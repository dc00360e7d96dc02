#!/usr/bin/env python3
"""tests/dump/test_always_on_zoo.py CASE --build BUILD

COLLSCOPE_RECORD=summary (docs/always-on.md) against the full recording of the same seeded job
on the simulator's modeled clock, the online exchange on in both (COLLSCOPE_ONLINE_EVERY=16),
through bench/always_on_zoo.py (the accuracy zoo's apps, faults and job shape, bench/accuracy.py):
  zoo:      the 8-rank rows of dp, 3d and moe, clean and with faults (dp: slow:pct=20, a
            straggler the online exchange finds, and hostdelay:pct=20, one it finds in some runs
            only; 3d: compute:pct=20, and slow:pct=20 on communicators the online exchange never
            sees; moe: slow:pct=20): the report's stragglers (rank, comm rank, kind, first-flag
            instance and seq), hangs and SDC findings identical in both modes, and the slow and
            hostdelay rows flag their culprit from the summary-mode windows (the local trigger's,
            docs/always-on.md, for dp hostdelay and 3d slow)
  balance:  dp_train as the zoo runs it with rank 5's GPU 20 % slower at its compute, and with
            simhost2's GPUs an older half-speed model, a flight ring of 64 records (the
            windows hold a part of the job): the balance section's figures (per rank compute,
            step, share; the step now and balanced, the gain and its interval) within 2 % of
            the full recording's, the same verdicts, action and advice
  pipeline: train3d as the zoo runs it (compute:pct=20), each stage given 8 layers: the
            pipeline part of the balance section (stages in chain order, their ranks and compute,
            microbatches, flushed, the pipeline step now and balanced, the gain, the layer
            counts, the action) within 2 % of the full recording's, from the Send/Recv members'
            gaps lines (the schedule's figures and the last 512 ops' running compute)
  hostile:  the same summary-mode dumps with one rank's gaps line broken in each way a file can
            (a list with a value that is no integer, 65 values, fewer values than ops, ops of
            2^64-1, ops of 2^62: more than the file's summary lines count, a second line with
            fewer ops than the first, the last ops' seqs not rising or one short): the report
            exits 0 and the
            balance section leaves that rank's member out (7 ranks), or keeps the line with the
            most ops (8 ranks, the figures of the intact run; a broken seq list: 8 ranks, the
            line's stage-comparison instances refused); flight.gaps_refused counts each (a seq
            list: flight.gaps_sched_refused)
  hostile_p2p: train3d's summary-mode dumps with one rank's Send/Recv gaps line broken 8 ways
            (a peer negative or past 2^31, Sends before a Recv over the Sends, got 2, lists of
            different lengths, Sends over ops, a running-compute list short or with a negative
            step): the report exits 0 and counts the line refused (gaps_refused) or its schedule
            figures refused (gaps_sched_refused), exactly once
Prints the measured figures."""
import argparse, glob, json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import always_on_zoo as zoo  # noqa: E402  (bench/always_on_zoo.py)

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


ZOO_ROWS = [("dp", "none"), ("dp", "slow:pct=20"), ("dp", "hostdelay:pct=20"), ("3d", "none"), ("3d", "compute:pct=20"),
            ("3d", "slow:pct=20"), ("moe", "none"), ("moe", "slow:pct=20")]
CULPRIT = 5  # bench/accuracy.py culprits() at 8 ranks


def case_zoo(b):
    for w, f in ZOO_ROWS:
        o = zoo.row(b, w, f, 8, 1)
        print("%-4s %-15s full %s | summary %s | windows %d, %d of %d ops in them | bytes/rank %d full, %d summary" %
              (w, f, zoo.show(o["full"]["stragglers"]), zoo.show(o["summary"]["stragglers"]), o["windows"],
               o["window_ops"], o["summary_ops"], o["bytes_full"], o["bytes_summary"]))
        check(o["identical"], "%s %s: the findings differ: full %s, summary %s" % (w, f, o["full"], o["summary"]))
        if f.startswith("slow") or f.startswith("hostdelay"):
            check(any(s[0] == CULPRIT for s in o["summary"]["stragglers"]),
                  "%s %s: summary mode does not flag rank %d" % (w, f, CULPRIT))
            check(o["windows"] >= 8, "%s %s: %d windows, want one a rank at least" % (w, f, o["windows"]))


def close(a, b, rel=0.02):
    if a is None or b is None:
        return a == b
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-9)


BALANCE_ROWS = [("dp", "compute:pct=20", {}),
                ("hetero", "none", {})]


PIPE_ROWS = [("3d", "compute:pct=20")]


def pipe_report(b, w, f, mode, **kw):
    """the report of one mode's dumps, given each stage 8 layers (the layer advice)"""
    tmp = tempfile.mkdtemp(prefix="cs-pp-")
    try:
        zoo.run_mode(b, w, f, 8, 1, mode, keep=tmp, **kw)
        out = os.path.join(tmp, "d")
        base = json.loads(subprocess.run([os.path.join(b, "tools", "collscope"), "report", out, "--json"],
                                         stdout=subprocess.PIPE, text=True, check=True).stdout)
        n = len((base.get("balance") or {}).get("stages") or [])
        if not n:
            return base
        r = subprocess.run([os.path.join(b, "tools", "collscope"), "report", out, "--json", "--layers",
                            ",".join(["8"] * n)], stdout=subprocess.PIPE, text=True, check=True)
        return json.loads(r.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def case_pipeline(b):
    """train3d: the pipeline part of the balance section (stages in order, per-stage compute,
    microbatches, flushed, the step and the layer advice) from the gaps lines as from op lines"""
    for w, f in PIPE_ROWS:
        bf = pipe_report(b, w, f, "full").get("balance") or {}
        bs = pipe_report(b, w, f, "summary", ring=64, after=32).get("balance") or {}
        sf, ss = bf.get("stages") or [], bs.get("stages") or []
        print("%s %s pipeline: full %d stages %s, step %s us, %s microbatches, layers %s | summary %d stages %s, "
              "step %s us, %s microbatches, layers %s" %
              (w, f, len(sf), [x["compute_us"] for x in sf], bf.get("pipeline_step_us_now"), bf.get("microbatches"),
               [x["layers"] for x in sf], len(ss), [x["compute_us"] for x in ss], bs.get("pipeline_step_us_now"),
               bs.get("microbatches"), [x["layers"] for x in ss]))
        if not check(len(sf) >= 2, "%s %s: no pipeline stages in full mode" % (w, f)):
            continue
        check(len(sf) == len(ss), "%s %s: %d stages in full, %d in summary" % (w, f, len(sf), len(ss)))
        # the advice text is the data-parallel part's in this job (its host waits are not in the gaps lines)
        for k in ("microbatches", "pipeline_flushed", "action"):
            check(bf.get(k) == bs.get(k), "%s %s: balance %s: full %r, summary %r" % (w, f, k, bf.get(k), bs.get(k)))
        for k in ("pipeline_step_us_now", "pipeline_step_us_balanced", "pipeline_gain_pct"):
            check(close(bf.get(k), bs.get(k)), "%s %s: balance %s: full %s, summary %s" % (w, f, k, bf.get(k), bs.get(k)))
        worst = 0.0
        for x, y in zip(sf, ss):
            check(x["stage"] == y["stage"] and x["rank"] == y["rank"] and x["layers"] == y["layers"],
                  "%s %s: stage %s rank %s layers %s in full, stage %s rank %s layers %s in summary" %
                  (w, f, x["stage"], x["rank"], x["layers"], y["stage"], y["rank"], y["layers"]))
            check(close(x["compute_us"], y["compute_us"]), "%s %s: stage %d compute: full %s, summary %s" %
                  (w, f, x["stage"], x["compute_us"], y["compute_us"]))
            if x["compute_us"] and y["compute_us"]:
                worst = max(worst, abs(x["compute_us"] - y["compute_us"]) / abs(x["compute_us"]))
        print("  largest per-stage compute difference %.2g %%" % (100 * worst))


def case_balance(b):
    # the windows stay a small part of the job (a 64-op ring), so the balance figures must come
    # from the gaps lines: the local trigger is off here, its windows (opened on the trigger
    # file's once-a-second look, so their number follows the wall clock) covered half of this
    # 960-op job beside a busy machine
    os.environ["COLLSCOPE_FLIGHT_LOCAL"] = "off"
    for w, f, _ in BALANCE_ROWS:
        full = zoo.run_mode(b, w, f, 8, 1, "full")
        summ = zoo.run_mode(b, w, f, 8, 1, "summary", ring=64, after=32)
        bf, bs = full[0].get("balance") or {}, summ[0].get("balance") or {}
        fl = summ[0].get("flight", {})
        print("%s %s: windows %d (%d of %d ops); full: %s steps, step %s us now, %s balanced, gain %s %%, %s | "
              "summary: %s steps, step %s us now, %s balanced, gain %s %%, %s" %
              (w, f, len(fl.get("windows", [])), fl.get("window_ops", 0), fl.get("summary_ops", 0), bf.get("steps"),
               bf.get("step_us_now"), bf.get("step_us_balanced"), bf.get("gain_pct"), bf.get("action"),
               bs.get("steps"), bs.get("step_us_now"), bs.get("step_us_balanced"), bs.get("gain_pct"),
               bs.get("action")))
        if not check(bf.get("kind") == "data_parallel" and bf.get("ranks"), "%s %s: no balance in full mode" % (w, f)):
            continue
        for k in ("kind", "ops_per_step", "steps", "action", "advice"):
            check(bf.get(k) == bs.get(k), "%s %s: balance %s: full %r, summary %r" % (w, f, k, bf.get(k), bs.get(k)))
        for k in ("step_us_now", "step_us_balanced", "gain_pct"):
            check(close(bf.get(k), bs.get(k)), "%s %s: balance %s: full %s, summary %s" % (w, f, k, bf.get(k), bs.get(k)))
        for i, (x, y) in enumerate(zip(bf.get("gain_us_ci") or [], bs.get("gain_us_ci") or [None, None])):
            check(close(x, y), "%s %s: gain_us_ci[%d]: full %s, summary %s" % (w, f, i, x, y))
        rf, rs = bf.get("ranks", []), bs.get("ranks", [])
        check(len(rf) == len(rs), "%s %s: %d ranks in full, %d in summary" % (w, f, len(rf), len(rs)))
        worst = 0.0
        for x, y in zip(rf, rs):
            check(x["rank"] == y["rank"] and x["verdict"] == y["verdict"],
                  "%s %s: rank %s verdict %s in full, rank %s %s in summary" %
                  (w, f, x["rank"], x["verdict"], y["rank"], y["verdict"]))
            for k in ("compute_us", "step_us", "share"):
                check(close(x[k], y[k]), "%s %s: rank %d %s: full %s, summary %s" % (w, f, x["rank"], k, x[k], y[k]))
                if x[k] and y[k]:
                    worst = max(worst, abs(x[k] - y[k]) / abs(x[k]))
        print("  verdicts %s; largest per-rank difference %.2g %%" % ([x["verdict"] for x in rf], 100 * worst))
        check(fl.get("gaps_lines", 0) >= 8, "%s %s: the report read %s gaps lines, want one a rank at least" %
              (w, f, fl.get("gaps_lines")))
        check(len(fl.get("windows", [])) > 0 and fl.get("window_ops", 0) < fl.get("summary_ops", 0) // 2,
              "%s %s: the windows (%d, %d ops) are not a small part of the job's %d ops" %
              (w, f, len(fl.get("windows", [])), fl.get("window_ops", 0), fl.get("summary_ops", 0)))


def gaps_broken(line, how):
    o = json.loads(line)
    if how == "not-integer":
        o["ring_gap"] = o["ring_gap"].replace(",", ",x", 1)
    elif how == "65-values":
        o["head_end"] = ",".join(["1"] * 65)
    elif how == "fewer-values":
        o["ring_end"] = ",".join(o["ring_end"].split(",")[:-1])
    elif how == "ops-huge":
        o["ops"] = 2**64 - 1
    elif how == "ops-uncounted":  # more ops than the file's summary lines count
        o["ops"] = 2**62
    elif how == "seq-falling":  # the last ops' seqs not rising: no instances for the stage comparison
        v = o["ring_seq"].split(",")
        v[1], v[2] = v[2], v[1]
        o["ring_seq"] = ",".join(v)
    elif how == "seq-short":
        o["ring_seq"] = ",".join(o["ring_seq"].split(",")[:-1])
    return json.dumps(o, separators=(",", ":"))


def report_rewritten(b, d, victim, ls, how):
    """the report's JSON of d with victim's lines replaced by ls; None (a failed check) when
    the report does not exit 0"""
    with open(victim, "w") as fh:
        fh.write("\n".join(ls) + "\n")
    p = subprocess.run([os.path.join(b, "tools", "collscope"), "report", "--json", d], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    if not check(p.returncode == 0, "%s: report rc %d: %s" % (how, p.returncode, p.stderr[-300:])):
        return None
    return json.loads(p.stdout)


def case_hostile(b):
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["COLLSCOPE_COMPRESS"] = "off"  # plain lines to break (summary mode writes zstd by default)
        zoo.run_mode(b, "dp", "compute:pct=20", 8, 1, "summary", keep=tmp)
        d = os.path.join(tmp, "d")
        victim = sorted(glob.glob(os.path.join(d, "*-r3-*.jsonl")))[0]
        with open(victim) as fh:
            orig = fh.read().splitlines()
        gi = [i for i, l in enumerate(orig) if '"type":"gaps"' in l]
        check(len(gi) == 1, "rank 3 wrote %d gaps lines, want 1" % len(gi))
        ref = None
        for how in ["intact", "not-integer", "65-values", "fewer-values", "ops-huge", "ops-uncounted", "earlier-more",
                    "seq-falling", "seq-short"]:
            ls = list(orig)
            if how == "earlier-more":  # a later line with fewer ops: the fuller one counts
                o = json.loads(ls[gi[0]])
                o.update(ops=o["ops"] - 3, ring_gap=",".join(o["ring_gap"].split(",")[:-3]))
                ls.insert(gi[0] + 1, json.dumps(o, separators=(",", ":")))
            elif how != "intact":
                ls[gi[0]] = gaps_broken(ls[gi[0]], how)
            rep = report_rewritten(b, d, victim, ls, how)
            if rep is None:
                continue
            bal = rep.get("balance") or {}
            # refused by the balance section, or (ops past 2^63) by the reader as malformed; the
            # inserted line of earlier-more has fewer ring values than its other lists: refused
            refused = ((rep.get("flight") or {}).get("gaps_refused"), (rep.get("summary") or {}).get("malformed_lines"))
            want = (0, 0) if how in ("intact", "seq-falling", "seq-short") else (0, 1) if how == "ops-huge" else (1, 0)
            check(refused == want, "%s: flight.gaps_refused, summary.malformed_lines %s, want %s" % (how, refused, want))
            ranks = [x["rank"] for x in bal.get("ranks", [])]
            want = list(range(8)) if how in ("intact", "earlier-more", "seq-falling", "seq-short") else [0, 1, 2, 4, 5, 6, 7]
            # a line whose seqs are broken keeps its compute; the stage comparison takes none of its ops
            sched = (rep.get("flight") or {}).get("gaps_sched_refused")
            want_sched = 1 if how in ("seq-falling", "seq-short") else 0
            check(sched == want_sched, "%s: flight.gaps_sched_refused %s, want %s" % (how, sched, want_sched))
            print("%-13s balance ranks %s, step %s us" % (how, ranks, bal.get("step_us_now")))
            check(ranks == want, "%s: the balance section's ranks %s, want %s" % (how, ranks, want))
            if how == "intact":
                ref = bal
            elif how == "earlier-more" and ref:
                check(bal.get("ranks") == ref.get("ranks"), "earlier-more: the figures differ from the intact run's")


def p2p_broken(o, how):
    """one Send/Recv member's schedule figures broken one way"""
    peers = o["peers"].split(",")
    if how == "peer-negative":
        o["peers"] = ",".join(["-1"] + peers[1:])
    elif how == "peer-huge":
        o["peers"] = ",".join([str(2**40)] + peers[1:])
    elif how == "sent-over-sends":
        o["sent_before"] = ",".join([str(o["sends"] + 1)] + o["sent_before"].split(",")[1:])
    elif how == "got-2":
        o["got"] = ",".join(["2"] + o["got"].split(",")[1:])
    elif how == "lists-differ":
        o["got"] = o["got"] + ",1"
    elif how == "sends-over-ops":
        o["sends"] = o["ops"] + 1
    elif how == "long-gap-short":
        o["long_gap"] = ",".join(o["long_gap"].split(",")[:-1])
    elif how == "long-gap-negative":
        o["long_gap"] = o["long_gap"] + ",-5"
        o["long_gap"] = ",".join(o["long_gap"].split(",")[:1] + o["long_gap"].split(",")[2:])
    return json.dumps(o, separators=(",", ":"))


# how -> (gaps lines refused, Send/Recv schedule figures refused): a member whose counts or
# running compute are wrong is left out whole; one whose peer lists are wrong keeps its compute
# but gives the schedule nothing
P2P_BROKEN = {"peer-negative": (0, 1), "peer-huge": (0, 1), "sent-over-sends": (0, 1), "got-2": (0, 1),
              "lists-differ": (0, 1), "sends-over-ops": (1, 0), "long-gap-short": (1, 0), "long-gap-negative": (1, 0)}


def case_hostile_p2p(b):
    """train3d's summary-mode dumps with one rank's Send/Recv gaps line broken in each way: the
    report exits 0 and counts what it refused"""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["COLLSCOPE_COMPRESS"] = "off"
        w, f = PIPE_ROWS[0]
        zoo.run_mode(b, w, f, 8, 1, "summary", keep=tmp, ring=64, after=32)
        d = os.path.join(tmp, "d")
        victim = sorted(glob.glob(os.path.join(d, "*-r2-*.jsonl")))[0]
        with open(victim) as fh:
            orig = fh.read().splitlines()
        gi = [i for i, l in enumerate(orig) if '"type":"gaps"' in l and '"send_recv":true' in l]
        if not check(gi, "rank 2 wrote no Send/Recv gaps line"):
            return
        for how in ["intact"] + list(P2P_BROKEN):
            ls = list(orig)
            if how != "intact":
                ls[gi[-1]] = p2p_broken(json.loads(ls[gi[-1]]), how)
            rep = report_rewritten(b, d, victim, ls, how)
            if rep is None:
                continue
            fl = rep.get("flight") or {}
            got = (fl.get("gaps_refused"), fl.get("gaps_sched_refused"))
            want = P2P_BROKEN.get(how, (0, 0))
            print("%-18s refused %s, schedule figures refused %s" % (how, got[0], got[1]))
            check(got == want, "%s: gaps_refused, gaps_sched_refused %s, want %s" % (how, got, want))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["zoo", "balance", "pipeline", "hostile", "hostile_p2p"])
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    {"zoo": case_zoo, "balance": case_balance, "pipeline": case_pipeline, "hostile": case_hostile,
     "hostile_p2p": case_hostile_p2p}[a.case](os.path.abspath(a.build))
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
