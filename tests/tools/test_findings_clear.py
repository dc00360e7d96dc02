#!/usr/bin/env python3
"""tests/tools/test_findings_clear.py --cli COLLSCOPE --apps APPS_DIR

Findings that clear: a straggler has a start, an end or `ongoing`, in the report, `top` and
the exporter. Two seeded 8-rank dp_train jobs on the simulator's modeled clock (100 steps, 300
instances of one communicator), rank 5 slowed 20% (`slow:pct=20`):
  transient   from collective 30 until 120, then healthy: the report names rank 5, flagged at
              seqs 40-182 (exact: the detector's windows forget the slowdown 62 instances after
              it ends), `cleared` in the text and `ongoing: false` in JSON, and what it cost:
              the lateness its peers waited for it over seqs 41-182 (analysis/finding_cost.c),
              in us and as a share of its op times' span there (JSON cost_us, cost_pct; the
              text's cost column); `top` shows rank 5
              CLEARED (not STRAGGLER) within --cleared 60 s of its own op times, nothing with
              --cleared 0.5 (0.8 s of ops came after); the exporter's collscope_straggler is 0
  persistent  from collective 30 on: `ongoing` to the last instance; `top` STRAGGLER; the
              exporter's gauge 1 for rank 5 alone."""
import argparse, json, os, re, subprocess, sys, tempfile

MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1", "COLLSCOPE_KEEP_SHM": "1"}
LINK = "link:a=*,b=*,us=300"
GRACE = "100000000"   # the rings' times are the modeled clock's (2026-01-01 on): keep them in view
TRANSIENT_FLAGGED = (40, 182)
TRANSIENT_COST = (69836.053, 7.038478)  # us, % (to 0.1 us and 1e-4 %: the clock calibration's rounding)


def job(a, tmp, faults):
    dumps, shm = os.path.join(tmp, "dumps"), os.path.join(tmp, "shm")
    os.makedirs(shm)
    env = dict(os.environ, COLLSCOPE_DIR=dumps, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS=faults, **MODEL)
    p = subprocess.run([a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--",
                        os.path.join(a.apps, "dp_train"), "--steps", "100", "--compute-us", "2000"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:]
    out = lambda *c: subprocess.run([a.cli] + list(c), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    check=True).stdout
    r = json.loads(out("report", "--json", dumps))
    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    assert len(s) == 1 and s[0]["rank"] == 5, r["stragglers"]
    text = out("report", dumps)
    line = [l for l in text.split("# Stragglers")[1].split("\n# Hangs")[0].splitlines() if l.split()[:1] == ["5"]]
    assert len(line) == 1, text
    top = lambda *extra: {x["rank"]: x["flags"] for x in json.loads(out("top", "--json", "--shm-dir", shm, *extra))["processes"]}
    gauge = {}
    for l in out("exporter", "--once", "--shm-dir", shm, "--grace", GRACE).splitlines():
        m = re.match(r'collscope_straggler\{(?:.*,)?rank="(\d+)".*\} (\S+)$', l)
        if m:
            gauge[int(m.group(1))] = float(m.group(2))
    assert sorted(gauge) == list(range(8)), gauge
    return s[0], line[0], top, gauge


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-clear-")

    s, line, top, gauge = job(a, os.path.join(tmp, "transient"), LINK + ";slow:rank=5,pct=20,from=30,until=120")
    print("transient: %s" % line.strip())
    assert (s["first_flag_seq"], s["last_flag_seq"]) == TRANSIENT_FLAGGED, s
    assert s["ongoing"] is False and s["comm_last_seq"] == 299, s
    assert re.search(r"\b%d-%d cleared\b" % TRANSIENT_FLAGGED, line), line
    print("transient: cost %.3f us, %.6f %%" % (s["cost_us"], s["cost_pct"]))
    assert abs(s["cost_us"] - TRANSIENT_COST[0]) <= 0.1 and abs(s["cost_pct"] - TRANSIENT_COST[1]) <= 1e-4, s
    assert re.search(r"\bcleared +%.1f ms %.2f%%" % (TRANSIENT_COST[0] / 1e3, TRANSIENT_COST[1]), line), line
    flags = top()
    assert "CLEARED" in flags[5] and "STRAGGLER" not in flags[5], flags
    assert all("CLEARED" not in f and "STRAGGLER" not in f for r, f in flags.items() if r != 5), flags
    flags = top("--cleared", "0.5")
    assert all("CLEARED" not in f and "STRAGGLER" not in f for f in flags.values()), flags
    assert all(v == 0 for v in gauge.values()), gauge
    print("transient: top CLEARED for rank 5 (dropped with --cleared 0.5), exporter gauge 0")

    s, line, top, gauge = job(a, os.path.join(tmp, "persistent"), LINK + ";slow:rank=5,pct=20,from=30")
    print("persistent: %s" % line.strip())
    assert s["ongoing"] is True and s["last_flag_seq"] == s["comm_last_seq"] == 299, s
    assert re.search(r"\b%d-299 ongoing\b" % s["first_flag_seq"], line), line
    print("persistent: cost %.3f us, %.6f %%" % (s["cost_us"], s["cost_pct"]))
    assert s["cost_us"] > TRANSIENT_COST[0] and s["cost_pct"] > TRANSIENT_COST[1], s  # slow to the end
    flags = top()
    assert "STRAGGLER" in flags[5] and "CLEARED" not in flags[5], flags
    assert {r: v for r, v in gauge.items() if v} == {5: 1.0}, gauge
    print("persistent: ongoing to seq 299, top STRAGGLER, exporter gauge 1 for rank 5 alone")


if __name__ == "__main__":
    main()
