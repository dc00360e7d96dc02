#!/usr/bin/env python3
"""bench/writer_cpu_check.py: the dump writer's CPU per record (an NCCL op or a CUDA memcpy)
in the four recording modes, counted by callgrind (instructions: deterministic, unlike
nanoseconds) in bench_writer_cpu's measured_records() only: full (COLLSCOPE_RECORD=full,
plain, the full recording's default), full+zstd, summary (COLLSCOPE_COMPRESS=off) and
summary+zstd (the always-on default). Summary mode runs with COLLSCOPE_SUMMARY_S=1: 60 times
the default's summary lines, so its figure is an upper bound. Fails when summary mode, plain
or compressed, costs more instructions per record than the full recording (plain), or more
than --max-summary.
  writer_cpu_check.py VALGRIND DRIVER [--seconds S (20)] [--max-summary N]"""
import os
import subprocess
import sys
import tempfile

MODES = (("full", {"COLLSCOPE_RECORD": "full", "COLLSCOPE_COMPRESS": "off"}),
         ("full+zstd", {"COLLSCOPE_RECORD": "full", "COLLSCOPE_COMPRESS": "zstd"}),
         ("summary", {"COLLSCOPE_RECORD": "summary", "COLLSCOPE_COMPRESS": "off"}),
         ("summary+zstd", {"COLLSCOPE_RECORD": "summary", "COLLSCOPE_COMPRESS": "zstd"}))


def count(valgrind, driver, seconds, env_extra, tmp, tag):
    out = os.path.join(tmp, "cg." + tag)
    # MALLOC_PERTURB_ (set by the test runner) would add libc's fill of the compressor's buffers
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("COLLSCOPE_") and k not in ("LD_PRELOAD", "MALLOC_PERTURB_")}
    env.update(env_extra, COLLSCOPE_SUMMARY_S="1")
    cmd = [valgrind, "--tool=callgrind", "-q", "--toggle-collect=measured_records", "--callgrind-out-file=" + out,
           driver, str(seconds)]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit("writer_cpu_check: %s run failed (%d): %s" % (tag, p.returncode, p.stderr[-2000:]))
    records = int(p.stdout.split()[1])
    total = None
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or (total is None and line.startswith("summary:")):
                total = int(line.split()[1])
    if total is None or records <= 0:
        sys.exit("writer_cpu_check: no totals or records in the %s run" % tag)
    return total / records, records


def main():
    a = sys.argv[1:]
    if len(a) < 2:
        sys.exit(__doc__)
    valgrind, driver = a[:2]
    seconds, max_summary = 20.0, None
    rest = a[2:]
    for i in range(0, len(rest) - 1, 2):
        if rest[i] == "--seconds":
            seconds = float(rest[i + 1])
        elif rest[i] == "--max-summary":
            max_summary = float(rest[i + 1])
    per = {}
    with tempfile.TemporaryDirectory(prefix="collscope-writer-cpu-") as tmp:
        for tag, env in MODES:
            per[tag], n = count(valgrind, driver, seconds, env, tmp, tag)
    print("writer instructions per record (callgrind, %d records: %g s of dp_train's mix at 500 ops/s, "
          "each op with 2 memcpys):" % (n, seconds))
    print("  " + "; ".join("%s %.1f" % (tag, per[tag]) for tag, _ in MODES))
    bad = []
    for tag in ("summary", "summary+zstd"):
        if per[tag] > per["full"]:
            bad.append("%s %.1f > full %.1f" % (tag, per[tag], per["full"]))
        if max_summary is not None and per[tag] > max_summary:
            bad.append("%s %.1f > bar %g" % (tag, per[tag], max_summary))
    if bad:
        print("FAIL: " + "; ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
