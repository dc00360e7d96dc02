#!/usr/bin/env python3
"""tests/integration/test_dlsym.py MAIN SHIM LIBCUDA: collscope's dlsym (shim/dlsym_hook.c) changes
no lookup but the driver's graph and capture calls on the driver's own handle. dlsym_main prints
what dlsym answers (RTLD_NEXT from the program and from a library, RTLD_DEFAULT, an explicit
handle, a missing name); the lines must be the same with and without the shim preloaded, and on
the driver's handle cuGraphLaunch and cuStreamBeginCapture_v2 are collscope's only with it,
cuMemAlloc_v2 the driver's either way."""
import os
import subprocess
import sys

main, shim, libcuda = sys.argv[1:4]


def run(preload):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = shim
    p = subprocess.run([main, libcuda], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    return p.returncode, p.stdout.splitlines(), p.stderr


rc0, out0, err0 = run(False)
rc1, out1, err1 = run(True)
print("\n".join(out1))
fails = []
if rc0 != 0 or rc1 != 0:
    fails.append("exit %d / %d: %s %s" % (rc0, rc1, err0[-400:], err1[-400:]))
want = ["main_next 1", "lib_next 2", "default 1", "handle_b 2", "missing null"]
if out0[:5] != want or out1[:5] != want:
    fails.append("lookups %s without, %s with the shim; want %s" % (out0[:5], out1[:5], want))
if out0[5:] != ["driver launch_wrapped=0 capture_wrapped=0 other_driver=1"]:
    fails.append("without the shim: %s" % out0[5:])
if out1[5:] != ["driver launch_wrapped=1 capture_wrapped=1 other_driver=1"]:
    fails.append("with the shim: %s" % out1[5:])
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
