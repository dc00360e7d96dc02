#!/usr/bin/env python3
"""bench/sdc_overhead.py: measured cost of the SDC checks on the simulator ("default
on at a rate whose measured overhead is under 1% on the simulator's bandwidth-bound runs").

  python3 bench/sdc_overhead.py [--build build] [--steps 8192] [--count 1048576] [--pairs 5]
                                [--configs off,default,sample:256] [--json FILE]

Runs tests/sdc/sdc_job (AllReduce, fp32, --count elements = 4 MiB per rank by default,
--reuse: data filled once) on 4 ranks / 2 simulated hosts under `collscope run --sim`,
once per configuration per round, in an order rotated every round, and reports:

 (a) the GPU-side overhead, from the simulator's own accounting (COLLSCOPE_SIM_KERNEL_STATS,
     tests/sim/cuda/kstats.c): time the simulated GPU spent in the sdc_reduce kernel over
     the rest of each rank's GPU span (first item start to last item end), summed over
     the ranks -- what the checks add to the GPU timeline -- and the kernel's thread CPU
     over the rest of the ranks' CPU. Per run; median and bootstrap 95% CI over the runs.
     The ratio of two sampling rates' overheads checks the linear model (~ launches).
 (b) interleaved A/B against `off`, per pair (same round): job wall time (the whole
     `collscope run`), the slowest rank's loop time (sdc_job loop_ms), and CPU =
     user+sys of everything `collscope run` started (getrusage RUSAGE_CHILDREN), as
     median ratio and bootstrap 95% CI over the pairs.

The default 8192 steps is a whole number of sample:2048 periods (the checked collectives
are 0, 2048, 4096, 6144: 4 per rank, the first included), so the kernel share at the
default rate is measured, not derived. --steps 200 reproduces the README's short job
(one check per rank, the first collective) and then the script also prints how much of
the CPU difference default-off the check kernel itself explains.

One run of the default settings takes 9-10 minutes on a 2-core machine (each job 20-45 s).
Needs a build with the simulator (meson option sim=true) and the SDC kernel (nvcc)."""
import argparse
import glob
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

NRANKS = 4
HOSTS = "simhost[1-2]"


def run_job(cli, job, sim_dir, cfg, steps, count, work):
    """one job: (wall_s, cpu_s, loop_ms of the slowest rank, kstats files)"""
    ks = os.path.join(work, "kstats")
    dump = os.path.join(work, "dump")
    shutil.rmtree(ks, ignore_errors=True)
    shutil.rmtree(dump, ignore_errors=True)
    os.makedirs(ks)
    env = dict(os.environ)
    env.update({"COLLSCOPE_SIM_DIR": sim_dir, "COLLSCOPE_DIR": dump, "COLLSCOPE_SIM_KERNEL_STATS": ks,
                "COLLSCOPE_LOG": "warn"})
    env.pop("COLLSCOPE_SDC", None)
    env.pop("COLLSCOPE_SDC_MIN_BYTES", None)   # the default (1 MiB): the job's 4 MiB ops are eligible
    if cfg != "default":
        env["COLLSCOPE_SDC"] = cfg
    argv = [cli, "run", "-n", str(NRANKS), "--hosts", HOSTS, "--sim", "--", job, "--steps", str(steps), "--op",
            "AllReduce", "--dtype", "float32", "--count", str(count), "--reuse"]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-2000:])
        raise SystemExit("job failed (%s): rc=%d" % (cfg, p.returncode))
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    loops = [float(m) for m in re.findall(r"loop_ms=([0-9.]+)", p.stdout)]
    if len(loops) != NRANKS:
        raise SystemExit("expected %d rank lines, got %d" % (NRANKS, len(loops)))
    files = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(ks, "kstats-*.json")))]
    if len(files) != NRANKS:
        raise SystemExit("expected %d kstats files, got %d" % (NRANKS, len(files)))
    return wall, cpu, max(loops), files


def kernel_figures(files):
    """sums over the ranks: launches, kernel wall/CPU ns, GPU span ns, ranks' CPU ns"""
    k = {"launches": 0, "sdc_ns": 0, "sdc_cpu_ns": 0, "span_ns": 0, "busy_ns": 0, "proc_cpu_ns": 0,
         "first_ns": []}
    for f in files:
        k["span_ns"] += f["span_ns"]
        k["busy_ns"] += f["busy_ns"]
        k["proc_cpu_ns"] += f["proc_cpu_ns"]
        for fn in f["fns"]:
            if fn["kind"] == "kernel" and fn["name"] == "sdc_reduce":
                k["launches"] += fn["count"]
                k["sdc_ns"] += fn["ns"]
                k["sdc_cpu_ns"] += fn["cpu_ns"]
    return k


def boot_ci(xs, stat=statistics.median, n=4000, seed=1):
    if len(xs) < 2:
        return (xs[0], xs[0]) if xs else (float("nan"), float("nan"))
    rnd = random.Random(seed)
    v = sorted(stat([rnd.choice(xs) for _ in xs]) for _ in range(n))
    return v[int(0.025 * n)], v[int(0.975 * n) - 1]


def fmt_pct(x):
    return "%+.2f%%" % (100 * x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=8192)
    ap.add_argument("--count", type=int, default=1048576, help="fp32 elements per rank (default 4 MiB)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--configs", default="off,default,sample:256")
    ap.add_argument("--json", help="write every run's figures here")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    cli, job, sim_dir = os.path.join(b, "tools", "collscope"), os.path.join(b, "tests", "sdc", "sdc_job"), \
        os.path.join(b, "tests", "sim")
    for f in (cli, job):
        if not os.access(f, os.X_OK):
            raise SystemExit("missing %s (build the simulator and the SDC job first)" % f)
    cfgs = a.configs.split(",")
    if cfgs[0] != "off":
        raise SystemExit("the first configuration must be off (the A/B baseline)")
    work = tempfile.mkdtemp(prefix="sdc_overhead_")
    runs = {c: [] for c in cfgs}
    load0 = os.getloadavg()
    t_start = time.monotonic()
    try:
        for r in range(a.pairs):
            order = cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]
            for c in order:
                wall, cpu, loop, files = run_job(cli, job, sim_dir, c, a.steps, a.count, work)
                k = kernel_figures(files)
                runs[c].append({"round": r, "wall_s": wall, "cpu_s": cpu, "loop_ms": loop, **k})
                print("round %d %-12s wall %6.2f s  cpu %6.2f s  loop %8.1f ms  sdc launches %4d  GPU time +%.3f%%"
                      % (r, c, wall, cpu, loop, k["launches"], 100.0 * k["sdc_ns"] / (k["span_ns"] - k["sdc_ns"])),
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()
    mb = a.count * 4 / 2 ** 20
    print("\nsim AllReduce %.3g MiB fp32 x %d steps, %d ranks / 2 hosts, %d rounds (%.0f s; load average %.1f -> %.1f)"
          % (mb, a.steps, NRANKS, a.pairs, time.monotonic() - t_start, load0[0], load1[0]))
    print("(a) simulator accounting, sums over the ranks: sdc_reduce kernel time over the rest of the ranks' GPU span,\n"
          "    and its thread CPU over the rest of the ranks' CPU; median [bootstrap 95%% CI] over %d runs:" % a.pairs)
    share = {}
    for c in cfgs:
        rs = runs[c]
        launches = sorted(set(x["launches"] for x in rs))
        # added GPU time relative to the same work without the checks
        g = [x["sdc_ns"] / (x["span_ns"] - x["sdc_ns"]) for x in rs]
        cp = [x["sdc_cpu_ns"] / (x["proc_cpu_ns"] - x["sdc_cpu_ns"]) for x in rs]
        # sdc_ns and launches are both sums over the ranks (launches include each rank's
        # set-up self-test, small ones, so this slightly understates a check of --count)
        per = [x["sdc_ns"] / x["launches"] * 2 / 1e6 for x in rs if x["launches"]]
        share[c] = statistics.median(g)
        lo, hi = boot_ci(g)
        clo, chi = boot_ci(cp)
        print("  %-12s launches %-8s GPU time +%.3f%% [%.3f, %.3f]  ranks' CPU +%.3f%% [%.3f, %.3f]%s"
              % (c, ",".join(map(str, launches)), 100 * share[c], 100 * lo, 100 * hi, 100 * statistics.median(cp),
                 100 * clo, 100 * chi, ("  per check (2 launches, self-test's included) %.2f ms" % statistics.median(per))
                 if per else ""))
    samp = [c for c in cfgs if c.startswith("sample:") or c == "default"]
    if len(samp) >= 2 and share[samp[0]] > 0:
        base = samp[0]
        nl = {c: statistics.median(x["launches"] for x in runs[c]) for c in samp}
        for c in samp[1:]:
            print("  linear model: overhead(%s)/overhead(%s) = %.2f, launches %.0f/%.0f = %.2f"
                  % (c, base, share[c] / share[base], nl[c], nl[base], nl[c] / nl[base]))
    print("(b) interleaved A/B against off, ratio per pair, median [bootstrap 95%% CI] over %d pairs:" % a.pairs)
    off = runs["off"]
    for c in cfgs[1:]:
        line = "  %-12s" % c
        for key, label in (("wall_s", "job wall"), ("loop_ms", "slowest loop"), ("cpu_s", "CPU")):
            rat = [x[key] / o[key] - 1 for x, o in zip(runs[c], off)]
            lo, hi = boot_ci(rat)
            line += "  %s %s [%s, %s]" % (label, fmt_pct(statistics.median(rat)), fmt_pct(lo), fmt_pct(hi))
        print(line)
        # how much of the CPU difference the check kernel explains (the rest: set-up, shim)
        d = [x["cpu_s"] - o["cpu_s"] for x, o in zip(runs[c], off)]
        kc = [x["sdc_cpu_ns"] / 1e9 for x in runs[c]]
        dlo, dhi = boot_ci(d)
        print("  %-12s  CPU difference %.3f s [%.3f, %.3f]; check kernel CPU %.3f s (median)"
              % ("", statistics.median(d), dlo, dhi, statistics.median(kc)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"steps": a.steps, "count": a.count, "pairs": a.pairs, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
