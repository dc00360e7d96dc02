#!/usr/bin/env python3
"""bench/detect_sim.py: straggler detection figures on the simulator (docs/detection.md).

  detect_sim.py sens  --build BUILD [--pct 5] [--runs 10] [--steps 40]
      8 ranks of dp_train on 4 simulated hosts in the quiet shape of tests/analysis
      (link:a=*,b=*,us=300 wire latency, --compute-us 2000), rank 5 slowed by
      slow:rank=5,pct=P; prints first_flag_instance per run and its distribution.
  detect_sim.py clean --build BUILD [--instances 100000] [--shape mixed|quiet]
      clean jobs until that many collective instances were evaluated; mixed: AllReduce,
      AllGather, ReduceScatter, Broadcast of 8 B .. 4 MiB, CPU-bound timing (the noisy
      case); prints instances, false positives (any straggler or hang) and instances/s.

Run by hand (minutes); not a test. Exit status 1 when a run fails or, for clean, any
false positive was found."""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tempfile, time

QUIET = "link:a=*,b=*,us=300"


def job(b, tmp, faults, args, env_extra=None):
    out, shm = os.path.join(tmp, "d"), os.path.join(tmp, "shm")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(shm, exist_ok=True)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS=faults, **(env_extra or {}))
    cli = os.path.join(b, "tools", "collscope")
    cmd = [cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--", os.path.join(b, "tests", "apps", "dp_train")]
    t0 = time.monotonic()
    p = subprocess.run(cmd + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("job failed (%d): %s" % (p.returncode, p.stdout[-2000:]))
    r = subprocess.run([cli, "report", out, "--json"], stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(r.stdout), dt, p.stdout


def sens(a):
    firsts, since, misses = [], [], 0
    with tempfile.TemporaryDirectory(prefix="cs-sens-") as tmp:
        for i in range(a.runs):
            r, _, log = job(a.build, tmp, QUIET + ";slow:rank=5,pct=%g" % a.pct,
                            ["--steps", str(a.steps), "--size", "256K", "--compute-us", "2000"], {"NCCL_DEBUG": "INFO"})
            m = re.findall(r"slow fault: rank 5 first stall (\d+) us, before seq (\d+)", log)
            onset = int(m[0][1]) if m else 0
            s = [x for x in r["stragglers"] if x["rank"] >= 0]
            ok = len(s) == 1 and s[0]["rank"] == 5
            f = s[0]["first_flag_instance"] if ok else None
            print("run %d: instances %d, flagged %s, first_flag_instance %s (first delayed seq %d), offset %.0f us "
                  "of median %.0f us, share_last %.2f, kind %s" %
                  (i, r["summary"]["instances"], [x["rank"] for x in s], f, onset, s[0]["offset_us"] if s else 0,
                   s[0]["median_dur_us"] if s else 0, s[0]["share_last"] if s else 0, s[0]["kind"] if s else "-"),
                  flush=True)
            if ok:
                firsts.append(f)
                since.append(f - onset)
            else:
                misses += 1
    if firsts:
        print("slow %g%%: %d/%d runs flagged rank 5 only; first_flag_instance %s; instances since the first "
              "delayed one: min %d median %g max %d %s" % (a.pct, len(firsts), a.runs, sorted(firsts), min(since),
                                                            statistics.median(since), max(since), sorted(since)))
    return 1 if misses else 0


def clean(a):
    total, fps, secs, runs = 0, [], 0.0, 0
    if a.shape == "mixed":
        faults, args = "", ["--ops", "mixed", "--size", "4M", "--steps", "2500"]
    else:
        faults, args = QUIET, ["--size", "256K", "--compute-us", "2000", "--steps", "500"]
    with tempfile.TemporaryDirectory(prefix="cs-clean-") as tmp:
        while total < a.instances:
            r, dt, _ = job(a.build, tmp, faults, args)
            n = r["summary"]["instances"]
            total += n
            secs += dt
            runs += 1
            bad = r["stragglers"] + r["hangs"]
            fps += bad
            print("run %d: %d instances in %.1f s (%.0f/s), false positives %d%s" %
                  (runs, n, dt, n / dt, len(bad), (": " + json.dumps(bad)) if bad else ""), flush=True)
    print("clean %s: %d instances in %d runs, %.1f s of jobs (%.0f instances/s), false positives %d" %
          (a.shape, total, runs, secs, total / secs, len(fps)))
    return 1 if fps else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["sens", "clean"])
    ap.add_argument("--build", default="build")
    ap.add_argument("--pct", type=float, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--instances", type=int, default=100000)
    ap.add_argument("--shape", choices=["mixed", "quiet"], default="mixed")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    sys.exit(sens(a) if a.what == "sens" else clean(a))


if __name__ == "__main__":
    main()
