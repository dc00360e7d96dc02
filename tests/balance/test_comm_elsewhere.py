#!/usr/bin/env python3
"""tests/balance/test_comm_elsewhere.py CASE --cli COLLSCOPE --apps DIR

Findings that a rank's longer communication in its other communicators explains
(analysis/comm_elsewhere.c, docs/detection.md "Pipelines"), on tests/apps/torch_pg: PyTorch's
process groups as NCCL sees them (a world group with coalesced AllReduces, all_to_all_single and
batch_isend_irecv with both ring neighbours; a 2 x 4 mesh of row and column groups; each group
on a stream of its own), 8 ranks on 2 hosts, on the modeled clock (seed 1, 2 % jitter, every op
timed): exact figures under any load.
Cases:
  pg_clean: no fault. Ranks 3 and 7 send across the host boundary in the ring exchange and ranks
      4 and 0 receive across it: their exchange ends ~98 us later than their row and column
      peers', so they arrive ~98 us late at their next group's AllReduce, with a stream gap as
      much longer. No straggler: the 4 findings the detector makes are each explained by the
      rank's time elsewhere (>= half its lateness).
  pg_slow: rank 5 stalls 30 % of each collective's duration before it, from its op 20
      (slow:rank=5,pct=30,from=20): exactly rank 5's 3 findings remain (compute), and ranks 0,
      3 and 4 are explained (rank 4 waits for rank 5 in their row and across the ring).
Both cases also read the rings the job left: `collscope top` and the exporter
(tools/ring/ring_sched.c) flag no rank clean and rank 5 alone with the fault."""
import json, os, re, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import case_main  # noqa: E402  (tests/case_main.py)

MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1"}


def ring_verdicts(cli, shm):
    """`top`'s STRAGGLER ranks and its findings, and the exporter's straggler gauges set, over
    the rings the job left (tools/ring/ring_sched.c applies the same judgements)"""
    out = lambda *c: subprocess.run([cli] + list(c), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    check=True).stdout
    top = json.loads(out("top", "--json", "--shm-dir", shm))
    flagged = sorted(p["rank"] for p in top["processes"] if "STRAGGLER" in p["flags"])
    found = sorted((s["rank"], s["kind"]) for s in top["stragglers"])
    gauge = sorted(int(m.group(1)) for m in (re.match(r'collscope_straggler\{(?:.*,)?rank="(\d+)".*\} (\S+)$', l)
                                             for l in out("exporter", "--once", "--shm-dir", shm, "--grace",
                                                          "100000000").splitlines()) if m and float(m.group(2)))
    print("top: STRAGGLER on %s, findings %s; exporter gauges set %s" % (flagged, found, gauge))
    return flagged, found, gauge


def run(cli, apps, tmp, faults):
    d, shm = os.path.join(tmp, "d"), os.path.join(tmp, "shm")
    os.makedirs(d)
    os.makedirs(shm)
    env = dict(os.environ, COLLSCOPE_DIR=d, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS=faults,
               COLLSCOPE_KEEP_SHM="1", **MODEL)
    cmd = [cli, "run", "-n", "8", "--hosts", "simhost[1-2]", "--sim", "--", os.path.join(apps, "torch_pg"),
           "--steps", "60"]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=200)
    assert p.returncode == 0, p.stdout[-3000:]
    p = subprocess.run([cli, "report", d, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    pl = r.get("pipeline") or {}
    ex = sorted((x["rank"], x["lateness_us"], round(x["time_elsewhere_excess_us"], 1)) for x in pl["comm_elsewhere"])
    st = sorted((s["rank"], s["kind"]) for s in r["stragglers"])
    print("stragglers:", st)
    print("explained by time elsewhere (rank, lateness us, excess us):", ex)
    assert pl["explained_by_comm_elsewhere"] == len(ex), pl
    for rank, late, excess in ex:
        assert excess >= 0.5 * late, (rank, late, excess)
    return st, ex, ring_verdicts(cli, shm)


def case_pg_clean(cli, apps, tmp):
    st, ex, (flagged, found, gauge) = run(cli, apps, tmp, "jitter:pct=2")
    assert st == [], st
    assert flagged == [] and found == [] and gauge == [], (flagged, found, gauge)
    # the lateness the detector measures, exact on the modeled clock
    assert [(r, l) for r, l, _ in ex] == [(0, 99.274), (3, 97.89), (4, 97.482), (7, 97.961)], ex


def case_pg_slow(cli, apps, tmp):
    st, ex, (flagged, found, gauge) = run(cli, apps, tmp, "jitter:pct=2;slow:rank=5,pct=30,from=20")
    assert st == [(5, "compute")] * 3, st
    assert flagged == [5] and {r for r, _ in found} == {5} and gauge == [5], (flagged, found, gauge)
    assert [(r, l) for r, l, _ in ex] == [(0, 99.274), (3, 97.89), (4, 97.1825)], ex


if __name__ == "__main__":
    case_main.run(globals(), "cs-celse-")
