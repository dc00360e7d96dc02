#!/usr/bin/env python3
"""tests/tools/test_trace_memory.py: `collscope trace` reads dumps in memory that does not
grow with the records (tools/trace/trace.h): the same 8 ranks with N and 4 N op records each
(tests/tools/gen_dumps), rank 0 with a salvage file next to its dump (which must not make the set
load whole), the whole trace written (--max-size 0) to /dev/null, and the peak resident
memory of each run (its own rusage) within a few MiB of each other. --format picks the trace's
format (json, perfetto). Loading the set whole, as
the trace once did, costs ~240 bytes a record: +7 MiB here."""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

RANKS, OPS = 8, 3000
SLACK_KB = 4096


def peak_kb(cmd):
    """run cmd (stdout to /dev/null), return (exit status, its peak RSS in KiB). The kernel
    counts the spawning process's resident memory at exec in the child's peak too, so this
    script keeps itself small (~10 MiB, below the trace's own)"""
    with open(os.devnull, "wb") as null:
        pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1)])
    _, status, ru = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_maxrss


def add_salvage(d):
    """rank 0's salvage file: its header marked salvaged, its last 20 op lines (in the dump too)
    and 5 more with later seqs"""
    name = next(n for n in os.listdir(d) if "-r0-" in n)
    ops = collections.deque(maxlen=20)   # streamed: this process stays small (see peak_kb)
    with open(os.path.join(d, name)) as f:
        head = f.readline().rstrip("\n")
        for line in f:
            if line.startswith('{"type":"op"'):
                ops.append(line.rstrip("\n"))
    ops = list(ops)
    more = [re.sub(r'"seq":(\d+)', lambda m: '"seq":%d' % (int(m.group(1)) + 1000000), l) for l in ops[-5:]]
    head = head.replace('"exe":', '"salvaged_from":"/dev/shm/collscope-ring","exe":')
    with open(os.path.join(d, name.replace(".jsonl", ".salvage.jsonl")), "w") as f:
        f.write("\n".join([head] + ops + more) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--format", default="json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-trmem-")
    try:
        peaks = []
        for mult in (1, 4):
            d = os.path.join(tmp, f"x{mult}")
            subprocess.run([a.gen, "--ranks", str(RANKS), "--ops", str(OPS * mult), "--out", d, "--jobs", "1"],
                           check=True)
            add_salvage(d)
            rc, kb = peak_kb([a.cli, "trace", d, "--max-size", "0", "-j", "2", "--format", a.format])
            if rc != 0:
                print(f"FAIL: trace exited {rc} on {RANKS} x {OPS * mult}")
                return 1
            print(f"{a.format}: {RANKS} ranks x {OPS * mult} records: peak RSS {kb} KiB")
            peaks.append(kb)
        grew = peaks[1] - peaks[0]
        if grew > SLACK_KB:
            print(f"FAIL: 4x the records cost {grew} KiB more (bound {SLACK_KB} KiB): memory grows with records")
            return 1
        print(f"ok: 4x the records, {grew} KiB more")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
