#!/usr/bin/env python3
"""tests/dump/test_snapshot.py CASE --cli COLLSCOPE --apps APPS_DIR

The always-on recording's defaults and `collscope snapshot` (docs/always-on.md), end to end on
the simulator's modeled clock (COLLSCOPE_SIM_CLOCK=model, seed 1).
  compress: COLLSCOPE_COMPRESS unset gives *.jsonl.zst files in summary mode and *.jsonl in full
            mode; a value that is set wins in both (off in summary mode, zstd in full mode); the
            report reads the compressed summary-mode dumps (every op counted from summaries).
Prints the measured figures."""
import argparse, json, os, shutil, subprocess, sys, tempfile

MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1"}
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def job_env(tmp, name, extra):
    out, shm = os.path.join(tmp, name, "dumps"), os.path.join(tmp, name, "shm")
    os.makedirs(shm, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "COLLSCOPE_COMPRESS"}
    env.update(COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_JOB_ID="snap" + name, **MODEL)
    env.update(extra)
    return env, out, shm


def job_cmd(cli, apps, n, steps):
    return [cli, "run", "-n", str(n), "--hosts", "simhost[1-2]", "--sim", "--no-kill-on-fail", "--",
            os.path.join(apps, "dp_train"), "--steps", str(steps), "--size", "256K"]


def report(cli, dumps):
    p = subprocess.run([cli, "report", "--json", dumps], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    if not check(p.returncode == 0, "report %s: rc %d: %s" % (dumps, p.returncode, p.stderr[-400:])):
        return {}
    return json.loads(p.stdout)


def case_compress(a, tmp):
    steps = 5
    for name, extra, suffix in (("summary", {"COLLSCOPE_RECORD": "summary"}, ".jsonl.zst"),
                                ("full", {"COLLSCOPE_RECORD": "full"}, ".jsonl"),
                                ("summaryoff", {"COLLSCOPE_RECORD": "summary", "COLLSCOPE_COMPRESS": "off"}, ".jsonl"),
                                ("fullzstd", {"COLLSCOPE_RECORD": "full", "COLLSCOPE_COMPRESS": "zstd"}, ".jsonl.zst")):
        env, out, _ = job_env(tmp, name, extra)
        p = subprocess.run(job_cmd(a.cli, a.apps, 2, steps), env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        check(p.returncode == 0, "%s job: rc %d: %s" % (name, p.returncode, p.stdout[-400:]))
        names = sorted(os.listdir(out)) if os.path.isdir(out) else []
        print("%-10s %s: %s" % (name, json.dumps(extra), names))
        check(len(names) == 2 and all(n.endswith(suffix) and (suffix == ".jsonl.zst" or not n.endswith(".zst"))
                                      for n in names), "%s: 2 %s files wanted, got %s" % (name, suffix, names))
        if name == "summary":
            fl = report(a.cli, out).get("flight", {})
            check(fl.get("summary_ops") == 2 * steps * 3,
                  "the compressed summary-mode dumps: summary_ops %s, want %d" % (fl.get("summary_ops"), 2 * steps * 3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["compress"])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cs-snapshot-")
    try:
        {"compress": case_compress}[a.case](a, tmp)
    finally:
        if not failures:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept", tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
