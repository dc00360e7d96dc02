#!/usr/bin/env python3
"""tests/sim/cuda/tests/test_nvcc_launch.py: runs nvcc_launch (built by nvcc with -cudart
shared) on the simulator twice: by default, `fill` and the anonymous-namespace `scale` run
their host implementations and `nosim` fails with cudaErrorInvalidDeviceFunction (98), no
warning; with COLLSCOPE_SIM_KERNELS=model, `nosim` runs as modeled time (result untouched)
and stderr names it exactly once, saying its results are not computed."""
import os
import subprocess
import sys

exe, sim_dir = sys.argv[1], sys.argv[2]
fails = []
line = "kernel _Z5nosimPf has no simulator implementation"
for mode in ("default", "model"):
    env = dict(os.environ)
    env.pop("COLLSCOPE_SIM_KERNELS", None)
    env.pop("COLLSCOPE_SIM_KERNEL_US", None)
    env["LD_LIBRARY_PATH"] = sim_dir + ":" + env.get("LD_LIBRARY_PATH", "")
    args = [exe]
    if mode == "model":
        env["COLLSCOPE_SIM_KERNELS"] = "model"
        env["COLLSCOPE_SIM_KERNEL_US"] = "20"
        args.append("model")
    p = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    print("%s: rc %d\n%s%s" % (mode, p.returncode, p.stdout, p.stderr))
    if p.returncode != 0:
        fails.append("%s: rc %d" % (mode, p.returncode))
    want = 1 if mode == "model" else 0
    if p.stderr.count(line) != want or (want and "NOT computed" not in p.stderr):
        fails.append("%s: the modeled-kernel warning %d times, want %d" % (mode, p.stderr.count(line), want))
for f in fails:
    print("FAIL: " + f, file=sys.stderr)
sys.exit(1 if fails else 0)
