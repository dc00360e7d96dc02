#!/usr/bin/env python3
"""tests/online/online_scale_insn.py VALGRIND TEST_ONLINE_SCALE: the online exchange's
evaluation cost per rank does not grow with the job, counted in instructions.

Runs `test_online_scale --only N` under callgrind for N = 8, 1,024, 32,768 and 131,072 ranks.
Instrumentation is off but around a kept rank's pack and unpack (tests/online/online_model.c
turns it on there), so the total is what the kept ranks' own protocol work costs: a count
that no machine load changes, unlike the CPU time test_online_scale prints. Asserts the
most instructions per kept rank per exchange within 1.25x of the fewest (the wire is of
fixed size; only what a rank's own records and the reduced wire hold may move it)."""
import os
import subprocess
import sys
import tempfile

SIZES = (8, 1024, 32768, 131072)
KEPT, EXCHANGES = 5, 2  # test_online_scale.c
BAR = 1.25


def count(valgrind, test, n, tmp):
    out = os.path.join(tmp, "cg.%d" % n)
    cmd = [valgrind, "--tool=callgrind", "-q", "--instr-atstart=no", "--callgrind-out-file=" + out, test, "--only",
           str(n)]
    # without meson's MALLOC_PERTURB_: glibc would fill every freed state of the model's
    # transient ranks, slow under valgrind (10x at 8,192 ranks) and not what is counted
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_PERTURB_"}
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
    if p.returncode != 0:
        sys.exit("FAIL: %d ranks under callgrind (exit %d): %s%s" % (n, p.returncode, p.stdout[-1000:], p.stderr[-2000:]))
    total = None
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or (total is None and line.startswith("summary:")):
                total = int(line.split()[1])
    if not total:
        sys.exit("FAIL: %d ranks: no instructions counted (is valgrind/callgrind.h missing at build time?)" % n)
    return total / (KEPT * EXCHANGES)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    valgrind, test = sys.argv[1:]
    per = {}
    with tempfile.TemporaryDirectory(prefix="cs-online-insn-") as tmp:
        for n in SIZES:
            per[n] = count(valgrind, test, n, tmp)
            print("%8d ranks: %12.0f instructions per kept rank per exchange (pack + unpack)" % (n, per[n]))
    lo, hi = min(per.values()), max(per.values())
    print("max/min %.3f (bar %.2f)" % (hi / lo, BAR))
    if hi > BAR * lo:
        sys.exit("FAIL: evaluation instructions per rank grow with the job")


if __name__ == "__main__":
    main()
