#!/usr/bin/env python3
"""tests/integration/test_env_config.py: the shim's reading of its environment, end to end on
the simulator (probe job of test_shim.py, `mix` scenario).

  hostname   COLLSCOPE_HOSTNAME values that are paths ('../../x', 'x/../../escaped' with the
             directory it needs to resolve, 300 bytes) still give one dump per rank directly
             inside COLLSCOPE_DIR, a safe host name in the header, one log line per rank, and
             nothing written anywhere else.
  badvalues  a bad value of each variable shim/config.c parses (unknown words, numbers out of
             range or not numbers) logs exactly one line naming the variable, the value and
             the default `collscope help` gives, and the job runs as with the variable unset
             (same footer keys, so COLLSCOPE_TIMING=bogus means auto). A run with a clean
             environment logs no such line (every default of the table parses).
Usage: test_env_config.py CASE --shim SO --sim-dir DIR --probe EXE --cli COLLSCOPE"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

failures = []
SAFE_HOST = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,126}$")
DUMP_NAME = re.compile(r"^collscope-(.+)-r(\d+)-p\d+\.jsonl$")


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def run_ranks(args, rank_env, common_env=None, plant=None, timeout=120):
    """One probe `mix` rank per entry of rank_env (extra variables of that rank); plant: a
    directory made inside COLLSCOPE_DIR before the ranks start."""
    work = tempfile.mkdtemp(prefix="cs-envtest-")
    dump = os.path.join(work, "dump")
    probe_dir = os.path.join(work, "probe")
    os.makedirs(probe_dir)
    if plant:
        os.makedirs(os.path.join(dump, plant))
    n = len(rank_env)
    procs = []
    for r, extra in enumerate(rank_env):
        env = {k: v for k, v in os.environ.items() if not k.startswith("COLLSCOPE_")}
        env.update({
            "RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
            "COLLSCOPE_HOSTNAME": "h%d" % r, "PROBE_DIR": probe_dir, "COLLSCOPE_DIR": dump,
            "COLLSCOPE_JOB_ID": "envtest", "LD_PRELOAD": args.shim,
            "LD_LIBRARY_PATH": args.sim_dir + ":" + os.environ.get("LD_LIBRARY_PATH", ""),
        })
        env.update(common_env or {})
        env.update(extra)
        procs.append(subprocess.Popen([args.probe, "mix"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            o, e = p.communicate()
            check(False, "rank timed out")
        out.append((p.returncode, o, e))
    for r, (rc, o, e) in enumerate(out):
        check(rc == 0, "rank %d failed: rc=%d stderr=%s" % (r, rc, e[-1500:]))
    return out, dump, work


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def help_defaults(cli):
    out = subprocess.run([cli, "help"], stdout=subprocess.PIPE, text=True, check=True).stdout
    rows = re.findall(r"^  (\S+) +default: (.*?)  \[", out, re.M)
    return dict(rows)


def test_hostname(args):
    hosts = ["../../x", "x/../../escaped", "a" * 300]
    # unsanitised, rank 1's dump/collscope-x/../../escaped-r1-... resolves to work/escaped-r1-...
    # once dump/collscope-x is a directory: plant it before the job starts
    out, dump, work = run_ranks(args, [{"COLLSCOPE_HOSTNAME": h} for h in hosts], plant="collscope-x")
    files = [os.path.join(dp, fn) for dp, _, names in os.walk(work) for fn in names if fn.endswith(".jsonl")]
    outside = [f for f in files if os.path.dirname(f) != dump]
    check(not outside, "dump files written outside COLLSCOPE_DIR: %s" % outside)
    inside = [f for f in files if os.path.dirname(f) == dump]
    check(len(inside) == len(hosts), "%d dump files in COLLSCOPE_DIR, want %d (stderr: %s)"
          % (len(inside), len(hosts), [e[-300:] for _, _, e in out]))
    by_rank = {}
    for f in inside:
        m = DUMP_NAME.match(os.path.basename(f))
        if not check(m, "dump file name %s" % os.path.basename(f)):
            continue
        recs = load(f)
        host = recs[0].get("host", "")
        check(m.group(1) == host, "file %s but header host %r" % (os.path.basename(f), host))
        check(SAFE_HOST.match(host), "rank %s: unsafe host name %r" % (m.group(2), host))
        check(recs[-1].get("type") == "footer", "%s: no footer" % f)
        by_rank[int(m.group(2))] = host
    check(sorted(by_rank) == list(range(len(hosts))), "ranks with a dump: %s" % sorted(by_rank))
    check(len(by_rank.get(2, "")) == 127, "a 300-byte host name kept %d bytes, want 127" % len(by_rank.get(2, "")))
    for r, (rc, o, e) in enumerate(out):
        lines = [l for l in e.splitlines() if "COLLSCOPE_HOSTNAME" in l]
        check(len(lines) == 1, "rank %d: want one log line about COLLSCOPE_HOSTNAME, got %r" % (r, lines))
    shutil.rmtree(work, ignore_errors=True)
    # a plain name is kept as it is, and logs nothing
    out, dump, work = run_ranks(args, [{"COLLSCOPE_HOSTNAME": "node-01.example_a"}, {}])
    names = sorted(os.path.basename(f) for f in glob.glob(os.path.join(dump, "*.jsonl")))
    check(len(names) == 2 and names[0].startswith("collscope-h1-r1-") and
          names[1].startswith("collscope-node-01.example_a-r0-"), "plain host names changed: %s" % names)
    check(not any("COLLSCOPE_HOSTNAME" in e for _, _, e in out), "a plain host name was logged")
    shutil.rmtree(work, ignore_errors=True)


# variable -> a value shim/config.c cannot use
BAD = {
    "COLLSCOPE_TIMING": "bogus",
    "COLLSCOPE_LOG": "bogus",
    "COLLSCOPE_SDC": "sample:0",
    "COLLSCOPE_SDC_ACTION": "explode",
    "COLLSCOPE_SDC_MIN_BYTES": "-5",
    "COLLSCOPE_QUEUE": "5",
    "COLLSCOPE_FLUSH_MS": "lots",
    "COLLSCOPE_RING": "99999999999999999999",
    "COLLSCOPE_KEEP_SHM": "maybe",
    "COLLSCOPE_ONLINE": "perhaps",
    "COLLSCOPE_ONLINE_EVERY": "0",
    "COLLSCOPE_ONLINE_TIMEOUT": "1x",
    "COLLSCOPE_HANG_TIMEOUT": "-1",
    "COLLSCOPE_PROFILER_PROBES": "2000000",
    "COLLSCOPE_EVENT_SAMPLE": "48",
    "COLLSCOPE_EVENT_SAMPLE_BYTES": "-1",
    "COLLSCOPE_DISABLE": "sometimes",
}


def footer(dump, rank):
    for f in glob.glob(os.path.join(dump, "*-r%d-*.jsonl" % rank)):
        recs = load(f)
        return recs[-1] if recs and recs[-1].get("type") == "footer" else {}
    return {}


def test_badvalues(args):
    defaults = help_defaults(args.cli)
    clean, dump0, w0 = run_ranks(args, [{}, {}])
    for r, (rc, o, e) in enumerate(clean):
        bad = [l for l in e.splitlines() if l.startswith("collscope[") and ("ignoring" in l or "default" in l)]
        check(not bad, "rank %d: a clean environment logged %r" % (r, bad))
    res, dump, w = run_ranks(args, [{}, {}], common_env=BAD)
    for r, (rc, o, e) in enumerate(res):
        lines = e.splitlines()
        for name, value in BAD.items():
            mine = [l for l in lines if (name + "=") in l]
            if not check(len(mine) == 1, "rank %d: want one log line for %s=%s, got %r" % (r, name, value, mine)):
                continue
            want_default = defaults.get(name)
            check(want_default and ("%s=%s" % (name, value)) in mine[0] and
                  mine[0].endswith("default " + want_default),
                  "rank %d: line for %s must name the value %s and the default %s: %r"
                  % (r, name, value, want_default, mine[0]))
        f0, f1 = footer(dump0, r), footer(dump, r)
        check(f1, "rank %d: no footer with bad values" % r)
        check(sorted(f0) == sorted(f1), "rank %d: footer keys %s with bad values, %s unset (a bad value "
              "must behave as unset)" % (r, sorted(f1), sorted(f0)))
        # COLLSCOPE_TIMING=bogus is auto: NCCL loaded collscope's profiler plugin as when unset
        check(f0.get("profiler") == f1.get("profiler"), "rank %d: profiler plugin '%s' with bad values, '%s' "
              "unset" % (r, f1.get("profiler"), f0.get("profiler")))
    shutil.rmtree(w0, ignore_errors=True)
    shutil.rmtree(w, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    for a in ("--shim", "--sim-dir", "--probe", "--cli"):
        ap.add_argument(a, default="")
    args = ap.parse_args()
    globals()["test_" + args.case](args)
    print("%s: %s" % (args.case, "FAILED (%d)" % len(failures) if failures else "ok"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
