#!/usr/bin/env python3
"""bench/insn_check.py: instructions collscope adds per intercepted ncclAllReduce,
counted by callgrind (deterministic, unlike nanoseconds) on the null backend: the
driver bench_insn_count runs bare, through the shim with timing on, and through the
shim with COLLSCOPE_DISABLE=1; only its measured_calls() function is counted. Fails
when an added count is above its bar.
The "on" run times every op (COLLSCOPE_EVENT_SAMPLE=1); the "default" run is the shipped
configuration, where small collectives are timed 1 in COLLSCOPE_EVENT_SAMPLE (its average).
  insn_check.py VALGRIND DRIVER SHIM NULL_CUDA [--max-on N] [--max-default N] [--max-off N]"""
import os
import subprocess
import sys
import tempfile

CALLS, BATCHES = 200, 10


def count(valgrind, driver, env_extra, tmp, tag):
    out = os.path.join(tmp, "cg." + tag)
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "COLLSCOPE_DISABLE", "COLLSCOPE_TIMING"):
        env.pop(k, None)
    env.update(env_extra)
    cmd = [valgrind, "--tool=callgrind", "-q", "--toggle-collect=measured_calls",
           "--callgrind-out-file=" + out, driver, str(CALLS), str(BATCHES)]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit("insn_check: %s run failed (%d): %s" % (tag, p.returncode, p.stderr[-2000:]))
    total = None
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or (total is None and line.startswith("summary:")):
                total = int(line.split()[1])
    if total is None:
        sys.exit("insn_check: no totals in the callgrind output of the %s run" % tag)
    return total


def main():
    a = sys.argv[1:]
    if len(a) < 4:
        sys.exit(__doc__)
    valgrind, driver, shim, cuda = a[:4]
    max_on, max_def, max_off = 250.0, 250.0, 15.0
    rest = a[4:]
    for i in range(0, len(rest) - 1, 2):
        if rest[i] == "--max-on":
            max_on = float(rest[i + 1])
        elif rest[i] == "--max-default":
            max_def = float(rest[i + 1])
        elif rest[i] == "--max-off":
            max_off = float(rest[i + 1])
    with tempfile.TemporaryDirectory(prefix="collscope-insn-") as tmp:
        base = {"COLLSCOPE_LIBCUDA": cuda, "COLLSCOPE_DIR": os.path.join(tmp, "dump")}
        bare = count(valgrind, driver, base, tmp, "bare")
        # every op timed (COLLSCOPE_EVENT_SAMPLE=1): the full event path, not its sampled average
        on = count(valgrind, driver, dict(base, LD_PRELOAD=shim, COLLSCOPE_EVENT_SAMPLE="1"), tmp, "on")
        dflt = count(valgrind, driver, dict(base, LD_PRELOAD=shim), tmp, "default")
        off = count(valgrind, driver, dict(base, LD_PRELOAD=shim, COLLSCOPE_DISABLE="1"), tmp, "off")
    n = CALLS * BATCHES
    # added instructions per call from the integer totals (exact at n calls)
    add_on, add_def, add_off = (on - bare) / n, (dflt - bare) / n, (off - bare) / n
    bare, on, dflt, off = bare / n, on / n, dflt / n, off / n
    print("instructions per ncclAllReduce call (callgrind, null backend, %d calls):" % n)
    print("  bare %.1f; shim, every op timed %.1f (+%.1f, bar %g); default (sampled events) %.1f (+%.1f, bar %g);"
          " COLLSCOPE_DISABLE=1 %.1f (+%.1f, bar %g)"
          % (bare, on, add_on, max_on, dflt, add_def, max_def, off, add_off, max_off))
    bad = []
    if add_on > max_on:
        bad.append("timing on adds %.1f > %g" % (add_on, max_on))
    if add_def > max_def:
        bad.append("default config adds %.1f > %g" % (add_def, max_def))
    if add_off > max_off:
        bad.append("disabled adds %.1f > %g" % (add_off, max_off))
    if bad:
        print("FAIL: " + "; ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
