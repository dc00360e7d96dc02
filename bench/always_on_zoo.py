#!/usr/bin/env python3
"""bench/always_on_zoo.py: the accuracy zoo's rows (bench/accuracy.py) recorded in full and in
summary mode (COLLSCOPE_RECORD=summary, docs/always-on.md) with the same seed on the
simulator's modeled clock, the online exchange on in both as an always-on site runs it, and
the report's findings of the two compared (the table in docs/always-on.md, "Findings against
the full recording").

  always_on_zoo.py --build BUILD [--workloads dp,3d,moe] [--ranks 8,64] [--faults F,F]
      [--seed S] [--json] [--markdown]
      F: the zoo's fault names (none, slow:pct=P, compute:pct=P, hostdelay:pct=P; a fault the
      zoo cannot run on a workload is left out). Prints one JSON object a row (--json) or a
      markdown table (--markdown): the straggler findings of each mode (rank, kind, first-flag
      instance and seq), the hangs and SDC findings, whether they are identical, and the
      bytes per rank of each mode. Exits 1 when a row's findings differ.

A row's findings are identical when the two reports name the same (rank, comm_rank, kind)
stragglers with the same first-flag instance and seq, the same hangs (stuck seq, missing
ranks, stuck ranks) and the same SDC findings (seq, check, suspect); communicator ids are
drawn per run and are left out of the comparison."""
import argparse, glob, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import accuracy  # noqa: E402  (bench/accuracy.py: the zoo's apps, faults and job shape)

ONLINE_EVERY = "16"  # the online exchange every 16 world collectives (tests/online)
# the flight ring and its after records of the summary runs: the defaults (COLLSCOPE_FLIGHT_OPS,
# COLLSCOPE_FLIGHT_AFTER), as a site runs them; --ring 64 --after 32 shows windows that hold a
# small part of the job
RING, AFTER = 4096, 1024
FAULTS = ["none", "slow:pct=20", "compute:pct=20", "hostdelay:pct=20"]


def run_mode(b, w, fault, n, seed, mode, steps=None, ring=RING, after=AFTER, keep=None):
    """one job of the zoo row in one recording mode: (report JSON, bytes per rank); keep: a
    directory to leave the dumps in (else they are removed)"""
    faults = accuracy.sim_faults(fault, n, w)
    app = accuracy.app_cmd(w, n, steps)
    if faults is None or app is None:
        return None
    tmp = keep or tempfile.mkdtemp(prefix="cs-zoo-")
    try:
        out, shm = os.path.join(tmp, "d"), os.path.join(tmp, "shm")
        os.makedirs(shm)
        env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS=faults,
                   COLLSCOPE_SIM_SEED=str(seed), COLLSCOPE_SIM_CLOCK="model", COLLSCOPE_TIMING="events",
                   COLLSCOPE_EVENT_SAMPLE="1", COLLSCOPE_RECORD=mode, COLLSCOPE_ONLINE_EVERY=ONLINE_EVERY,
                   COLLSCOPE_LOG="warn", COLLSCOPE_FLIGHT_OPS=str(ring), COLLSCOPE_FLIGHT_AFTER=str(after))
        env.update(app[2])
        cli = os.path.join(b, "tools", "collscope")
        cmd = [cli, "run", "-n", str(n), "--hosts", "simhost[1-%d]" % (n // accuracy.ranks_per_host(n)), "--sim",
               "--no-kill-on-fail", "--", os.path.join(b, "tests", "apps", app[0])] + app[1]
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
        if p.returncode:
            sys.exit("job failed (%d): %s" % (p.returncode, p.stdout[-3000:]))
        r = subprocess.run([cli, "report", out, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            sys.exit("report failed: %s" % r.stderr)
        sizes = [os.path.getsize(f) for f in glob.glob(os.path.join(out, "*.jsonl*"))]  # .jsonl.zst: summary mode's default
        return json.loads(r.stdout), sum(sizes) / max(len(sizes), 1)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def findings(rep):
    """what the comparison holds equal: stragglers, hangs, SDC findings (no communicator ids)"""
    st = sorted((s["rank"], s["comm_rank"], s["kind"], s["first_flag_instance"], s["first_flag_seq"])
                for s in rep.get("stragglers", []))
    hangs = sorted((h.get("seq"), tuple(h.get("missing_ranks", [])), tuple(h.get("stuck_ranks", [])))
                   for h in rep.get("hangs", []))
    sdc = sorted((x.get("seq"), x.get("check"), x.get("suspect_rank")) for x in rep.get("sdc", []))
    return {"stragglers": st, "hangs": hangs, "sdc": sdc}


def row(b, w, fault, n, seed, steps=None, ring=RING, after=AFTER):
    full = run_mode(b, w, fault, n, seed, "full", steps)
    if full is None:
        return None
    summ = run_mode(b, w, fault, n, seed, "summary", steps, ring, after)
    ff, fs = findings(full[0]), findings(summ[0])
    fl = summ[0].get("flight", {})
    return {"workload": w, "fault": fault, "ranks": n, "seed": seed, "full": ff, "summary": fs,
            "identical": ff == fs,
            "same_ranks_kinds": sorted({s[:3] for s in ff["stragglers"]}) == sorted({s[:3] for s in fs["stragglers"]}),
            "same_first_flag": [s[3:] for s in ff["stragglers"]] == [s[3:] for s in fs["stragglers"]],
            "bytes_full": round(full[1]), "bytes_summary": round(summ[1]),
            "windows": len(fl.get("windows", [])), "window_ops": fl.get("window_ops", 0),
            "summary_ops": fl.get("summary_ops", 0)}


def show(st, most=6):
    """rank, kind, first-flag instance and seq of each straggler finding, the first `most`"""
    out = ", ".join("r%d %s @%d/s%d" % (s[0], s[2], s[3], s[4]) for s in st[:most]) or "none"
    return out + (" and %d more" % (len(st) - most) if len(st) > most else "")


def markdown(rows):
    out = ["| workload | ranks | fault | full: stragglers (rank kind @first-flag instance/seq) | summary | identical | "
           "bytes/rank full | summary |", "|---|---|---|---|---|---|---|---|"]
    for o in rows:
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            o["workload"], o["ranks"], o["fault"], show(o["full"]["stragglers"]), show(o["summary"]["stragglers"]),
            "yes" if o["identical"] else "**no**", "{:,}".format(o["bytes_full"]), "{:,}".format(o["bytes_summary"])))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workloads", default="dp,3d,moe")
    ap.add_argument("--ranks", default="8,64")
    ap.add_argument("--faults", default=",".join(FAULTS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--ring", type=int, default=RING, help="COLLSCOPE_FLIGHT_OPS of the summary runs")
    ap.add_argument("--after", type=int, default=AFTER, help="COLLSCOPE_FLIGHT_AFTER of the summary runs")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    rows, bad = [], 0
    for n in [int(x) for x in a.ranks.split(",")]:
        for w in a.workloads.split(","):
            for f in a.faults.split(","):
                o = row(b, w, f, n, a.seed, a.steps, a.ring, a.after)
                if o is None:
                    continue
                rows.append(o)
                bad += not o["identical"]
                if a.json or not a.markdown:
                    print(json.dumps(o), flush=True)
    if a.markdown:
        print(markdown(rows))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
