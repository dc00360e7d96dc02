#!/usr/bin/env python3
"""bench/topo_scale.py: `collscope topo` on hostile and fleet-size inputs (written by
tests/topology/gen_topo.py), one or more builds side by side in one run.

usage: topo_scale.py --cli PATH [--cli PATH ...] [--timeout S] [--dir DIR]
Prints one row per input and build: wall seconds, CPU seconds (user + sys) and peak RSS
of the command, and its exit status and first line of stderr. A run past --timeout is
killed and shown as such (with the RSS it had reached).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "tests", "topology", "gen_topo.py")


def measure(cmd, timeout):
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        _, status, ru = os.wait4(p.pid, 0)
        timer.cancel()
        dt = time.monotonic() - t0
        err.seek(0)
        first = (err.read().decode(errors="replace").strip().splitlines() or [""])[0]
    rc = os.waitstatus_to_exitcode(status)
    killed = rc == -9 and dt >= timeout
    return dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, "killed" if killed else rc, first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", action="append", required=True)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--dir")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="cs-topo-scale-")
    for kind in ("chain", "hostbomb", "fleet"):
        subprocess.run([sys.executable, GEN, kind, d], check=True, capture_output=True)
    cases = [
        ("chain 200k switches", ["topo", "show", os.path.join(d, "chain.conf")]),
        ("hostbomb 40 x 1M", ["topo", "show", os.path.join(d, "hostbomb.conf")]),
        ("fleet 131k tree --json", ["topo", "plan", "--topology", os.path.join(d, "fleet.conf"), "--hostfile",
                                    os.path.join(d, "fleet.hosts"), "--json"]),
        ("fleet 131k block --json", ["topo", "plan", "--topology", os.path.join(d, "fleet-block.conf"), "--hostfile",
                                     os.path.join(d, "fleet.hosts"), "--json"]),
        ("fleet 131k tree --form hosts", ["topo", "plan", "--topology", os.path.join(d, "fleet.conf"), "--hostfile",
                                          os.path.join(d, "fleet.hosts"), "--form", "hosts"]),
    ]
    print(f"{'input':30} {'build':>6} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8} {'exit':>6}  message")
    for name, args in cases:
        for i, cli in enumerate(a.cli):
            dt, cpu, rss, rc, first = measure([cli] + args, a.timeout)
            print(f"{name:30} {i:>6} {dt:8.2f} {cpu:8.2f} {rss:8.0f} {rc!s:>6}  {first[:90]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
