#!/usr/bin/env python3
"""tests/dump/test_always_on.py CASE --cli COLLSCOPE --apps APPS_DIR

COLLSCOPE_RECORD=summary (docs/always-on.md) end to end: 8 ranks of dp_train on the simulator's
modeled clock (COLLSCOPE_SIM_CLOCK=model, seed 1), so every figure is exact under any load.
  ops:       the same job (jitter:pct=20: durations that differ, 120 steps) in full and in summary mode: the
             report's ops rows (count, timed, p50, p99, mean, busbw, busbw(mean)) agree within
             1 %, the summary section's ops, memcpys, errors and timed ops are equal, the report
             says how many ops it read from summaries, and summary mode writes at
             least 20x fewer bytes per rank (both printed)
  fail:      rank 2's 100th call fails (fail:...,code=InternalError), the launcher ends the
             others: in summary mode rank 2's dump holds a "failed" window followed by the failed
             op's line (status != 0), the other ranks a "signal" window, and the report counts
             the same error ops as the full recording of the same job
  hang:      (the host's clock: a hang is a timeout on it; the verdict is not a duration)
             stall:rank=5,seq=30 with COLLSCOPE_HANG_TIMEOUT=2, ended (SIGKILL) once `collscope top`
             shows 7 ranks HUNG: in summary mode each of them wrote a "hang" window (its ring's
             lines flushed with the hang line), rank 5 (stuck inside the call: no pending op) an
             "idle" window, and the report's hangs section equals the full recording's (the stuck
             seq, the missing rank 5, the ranks stuck in it)
  straggler: slow:rank=5,pct=20 with the online exchange (COLLSCOPE_ONLINE_EVERY=16): its
             finding opens a window on every rank (a ring of 600 records: the windows hold part of
             the job), and the report of the summary-mode dumps names rank 5 as a straggler from the windows' op lines
Prints the measured figures."""
import argparse, glob, json, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hung_jobs  # noqa: E402  (tests/hung_jobs.py)

HOSTS = "simhost[1-4]"
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1"}
failures = []
STEPS = 120


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def run_job(cli, apps, tmp, name, mode, faults, steps, env_extra=None, kill_on_fail=False):
    out = os.path.join(tmp, name, "dumps")
    shm = os.path.join(tmp, name, "shm")
    os.makedirs(shm, exist_ok=True)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS=faults,
               COLLSCOPE_RECORD=mode, COLLSCOPE_COMPRESS="off", **MODEL)  # the cases read *.jsonl
    env.update(env_extra or {})
    cmd = [cli, "run", "-n", "8", "--hosts", HOSTS, "--sim"] + ([] if kill_on_fail else ["--no-kill-on-fail"])
    cmd += ["--", os.path.join(apps, "dp_train"), "--steps", str(steps), "--size", "256K"]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    return p, out


def report(cli, dumps):
    p = subprocess.run([cli, "report", "--json", dumps], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    if not check(p.returncode == 0, "report %s: rc %d: %s" % (dumps, p.returncode, p.stderr[-400:])):
        return {}
    return json.loads(p.stdout)


def report_text(cli, dumps):
    return subprocess.run([cli, "report", dumps], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120).stdout


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def per_rank_bytes(dumps):
    sizes = [os.path.getsize(p) for p in glob.glob(os.path.join(dumps, "*.jsonl"))]
    return sum(sizes) / max(len(sizes), 1)


def close(a, b, rel=0.01):
    if a is None or b is None:
        return a == b
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def case_ops(cli, apps, tmp):
    faults = "jitter:pct=20"
    # 120 steps: 960 timed records a row, so the full recording's percentiles are exact
    # (tools/report/report_agg.h AGG_EXACT) while the summaries' come from their histograms
    pf, full = run_job(cli, apps, tmp, "full", "full", faults, STEPS)
    ps, summ = run_job(cli, apps, tmp, "summary", "summary", faults, STEPS)
    check(pf.returncode == 0 and ps.returncode == 0, "jobs: rc %d / %d" % (pf.returncode, ps.returncode))
    bf, bs = per_rank_bytes(full), per_rank_bytes(summ)
    print("bytes per rank: full %.0f, summary %.0f (%.1fx smaller)" % (bf, bs, bf / max(bs, 1)))
    check(bs * 20 <= bf, "summary mode wrote %.0f bytes per rank, not 20x fewer than full mode's %.0f" % (bs, bf))
    rf, rs = report(cli, full), report(cli, summ)
    key = lambda o: (o["op"], o["comm_size"], o["bucket_lo"])
    of = {key(o): o for o in rf.get("ops", [])}
    os_ = {key(o): o for o in rs.get("ops", [])}
    check(of and set(of) == set(os_), "ops rows differ: full %s, summary %s" % (sorted(of), sorted(os_)))
    for k in sorted(of):
        a, b = of[k], os_.get(k)
        if not b:
            continue
        ta, tb = a["time_us"] or {}, b["time_us"] or {}
        print("%-28s full p50 %.3f p99 %.3f mean %.3f busbw %.4f | summary p50 %.3f p99 %.3f mean %.3f busbw %.4f" %
              (str(k), ta.get("p50", 0), ta.get("p99", 0), ta.get("mean", 0), a["busbw_gbs"] or 0, tb.get("p50", 0),
               tb.get("p99", 0), tb.get("mean", 0), b["busbw_gbs"] or 0))
        check(a["count"] == b["count"] and a["timed"] == b["timed"] and a["bytes"] == b["bytes"],
              "%s: count/timed/bytes %d/%d/%d in full, %d/%d/%d in summary" %
              (k, a["count"], a["timed"], a["bytes"], b["count"], b["timed"], b["bytes"]))
        for f in ("p50", "p99", "mean"):
            check(close(ta.get(f), tb.get(f)), "%s: %s %s in full, %s in summary" % (k, f, ta.get(f), tb.get(f)))
        for f in ("busbw_gbs", "busbw_mean_gbs", "algbw_gbs"):
            check(close(a[f], b[f]), "%s: %s %s in full, %s in summary" % (k, f, a[f], b[f]))
    sf, ss = rf.get("summary", {}), rs.get("summary", {})
    for f in ("ops", "xfers", "errors", "timed"):
        check(sf.get(f) == ss.get(f) and sf.get(f) is not None,
              "summary section %s: %s in full, %s in summary" % (f, sf.get(f), ss.get(f)))
    fl = rs.get("flight", {})
    nops = sum(o["count"] for o in rs.get("ops", []))
    check(fl.get("summary_ops") == nops and nops == 8 * STEPS * 3,
          "summary_ops %s, ops in the table %d (want %d)" % (fl.get("summary_ops"), nops, 8 * STEPS * 3))
    check("ops read from summaries (RECORD=summary): %d" % nops in report_text(cli, summ),
          "the report's notes do not say how many ops came from summaries")


def case_fail(cli, apps, tmp):
    faults = "fail:rank=2,seq=100,code=InternalError"
    pf, full = run_job(cli, apps, tmp, "full", "full", faults, 200, kill_on_fail=True)
    ps, summ = run_job(cli, apps, tmp, "summary", "summary", faults, 200, kill_on_fail=True)
    check(ps.returncode != 0, "the failing job exited 0")
    wins = {}
    for path in glob.glob(os.path.join(summ, "*.jsonl")):
        ls = lines(path)
        rank = ls[0].get("rank")
        for i, o in enumerate(ls):
            if o.get("type") == "window":
                after = [x for x in ls[i + 1:i + 1 + o["ring_ops"]] if x.get("type") == "op"]
                wins.setdefault(rank, []).append((o["reason"], after))
    print("windows: %s" % {r: [(w[0], len(w[1])) for w in v] for r, v in sorted(wins.items())})
    r2 = wins.get(2, [])
    check(any(w[0] == "failed" and w[1] and w[1][-1].get("status", 0) != 0 for w in r2),
          "rank 2 has no 'failed' window ending with the failed op: %s" % [(w[0], len(w[1])) for w in r2])
    check(all(any(w[0] == "signal" for w in wins.get(r, [])) for r in range(8) if r != 2),
          "not every other rank wrote a 'signal' window: %s" % sorted(wins))
    rf, rs = report(cli, full), report(cli, summ)
    ef, es = rf.get("summary", {}).get("errors"), rs.get("summary", {}).get("errors")
    print("error ops: full %s, summary %s" % (ef, es))
    check(ef is not None and ef >= 1 and ef == es, "error ops: full %s, summary %s" % (ef, es))
    check(len(rs.get("flight", {}).get("windows", [])) == 8, "the report lists %d windows, want 8" %
          len(rs.get("flight", {}).get("windows", [])))


def run_hung(cli, apps, tmp, name, mode):
    out, shm = os.path.join(tmp, name, "dumps"), os.path.join(tmp, name, "shm")
    os.makedirs(shm, exist_ok=True)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS="stall:rank=5,seq=30",
               COLLSCOPE_HANG_TIMEOUT="2", COLLSCOPE_RECORD=mode,  # host clock: the hang timeout is the host's
               COLLSCOPE_COMPRESS="off")  # the case reads *.jsonl
    cmd = [cli, "run", "-n", "8", "--hosts", HOSTS, "--sim", "--no-kill-on-fail", "--", "timeout", "-s", "KILL", "120",
           os.path.join(apps, "dp_train"), "--steps", "200", "--size", "256K"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    def idle_written():  # summary mode: rank 5's window too (it comes COLLSCOPE_HANG_TIMEOUT after its last op)
        for path in glob.glob(os.path.join(out, "*-r5-*.jsonl")):
            with open(path) as f:
                if '"reason":"idle"' in f.read():
                    return True
        return False
    hung_jobs.kill_when_hung(p, cli, shm, lambda pids: len(pids) >= 7 and (mode == "full" or idle_written()))
    p.wait(timeout=180)
    return out


def case_hang(cli, apps, tmp):
    full, summ = run_hung(cli, apps, tmp, "full", "full"), run_hung(cli, apps, tmp, "summary", "summary")
    hang_windows = 0
    for path in glob.glob(os.path.join(summ, "*.jsonl")):
        ls = lines(path)
        kinds = [o.get("type") for o in ls]
        for i, o in enumerate(ls):
            if o.get("type") == "window" and o.get("reason") == "hang":
                hang_windows += 1
                check(o["ring_ops"] > 0 and "op" in kinds[i + 1:i + 1 + o["ring_ops"]] and "hang" in kinds[i + 1:],
                      "%s: the hang window holds no op lines before the hang line" % os.path.basename(path))
    idle = [o for p in glob.glob(os.path.join(summ, "*-r5-*.jsonl")) for o in lines(p)
            if o.get("type") == "window" and o.get("reason") == "idle"]
    check(len(idle) == 1 and idle[0]["ring_ops"] > 0, "rank 5 (stuck inside its call) wrote no 'idle' window")
    print("hang windows: %d, rank 5's idle windows: %d" % (hang_windows, len(idle)))
    check(hang_windows == 7, "%d hang windows, want 7 (every rank but the stalled one)" % hang_windows)
    hf, hs = report(cli, full).get("hangs"), report(cli, summ).get("hangs")
    print("hangs: full %s\n       summary %s" % (json.dumps(hf), json.dumps(hs)))
    strip = lambda hs_: json.dumps([dict(h, comm="") for h in hs_ or []], sort_keys=True)  # ids differ per run
    check(hf and strip(hf) == strip(hs), "the hangs sections differ")


def case_straggler(cli, apps, tmp):
    # a ring smaller than the job: the windows hold part of it
    env = {"COLLSCOPE_ONLINE_EVERY": "16", "COLLSCOPE_LOG": "warn", "COLLSCOPE_FLIGHT_OPS": "600",
           "COLLSCOPE_FLIGHT_AFTER": "300"}
    p, summ = run_job(cli, apps, tmp, "summary", "summary", "slow:rank=5,pct=20", 300, env_extra=env)
    check(p.returncode == 0, "job rc %d" % p.returncode)
    r = report(cli, summ)
    wins = r.get("flight", {}).get("windows", [])
    print("windows: %s" % sorted((w["rank"], w["reason"]) for w in wins))
    check(sorted(w["rank"] for w in wins if w["reason"] == "finding") == list(range(8)),
          "not every rank wrote a 'finding' window")
    wops, sops = r.get("flight", {}).get("window_ops", 0), r.get("flight", {}).get("summary_ops", 0)
    print("op lines in windows %d of %d ops" % (wops, sops))
    check(0 < wops < sops // 2, "the windows hold %d of %d ops (want some, under half)" % (wops, sops))
    st = r.get("stragglers", [])
    print("stragglers: %s" % [(s.get("rank"), s.get("kind")) for s in st])
    check([s.get("rank") for s in st] == [5], "the report's stragglers are %s, want rank 5" % [s.get("rank") for s in st])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["ops", "fail", "hang", "straggler"])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        {"ops": case_ops, "fail": case_fail, "hang": case_hang, "straggler": case_straggler}[a.case](a.cli, a.apps, tmp)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
