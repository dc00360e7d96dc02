#!/usr/bin/env python3
"""tests/apps/test_initall_report.py: one process driving every simulated GPU (initall:
ncclCommInitAll, no RANK in the environment) with the shim: the report names the process by
the communicator ranks it held ("c0-7", JSON ranks[].comm_ranks) and counts them in the
summary's ranks (8), instead of "ranks 0" and a rank "?"."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

cli, app, shim, sim_dir = sys.argv[1:5]
work = tempfile.mkdtemp(prefix="cs-initall-")
dump = os.path.join(work, "dump")
env = {k: v for k, v in os.environ.items()
       if not (k.startswith("COLLSCOPE_") or k.startswith("NCCL_") or k in ("LD_PRELOAD", "RANK", "WORLD_SIZE"))}
env.update({"COLLSCOPE_DIR": dump, "COLLSCOPE_SHIM": shim, "COLLSCOPE_SIM_DIR": sim_dir, "COLLSCOPE_RING": "0",
            "COLLSCOPE_ONLINE": "0", "COLLSCOPE_SIM_GPUS": "8"})
fails = []
p = subprocess.run([cli, "run", "--sim", "--", app, "--steps", "2", "--size", "64K"], env=env,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
if p.returncode:
    fails.append("initall rc %d: %s" % (p.returncode, p.stderr[-1500:]))
rj = subprocess.run([cli, "report", dump, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    timeout=60)
doc = json.loads(rj.stdout) if rj.returncode == 0 else {}
ranks = doc.get("ranks", [])
if doc.get("summary", {}).get("ranks") != 8:
    fails.append("summary ranks %s, want 8" % doc.get("summary", {}).get("ranks"))
if len(ranks) != 1 or ranks[0].get("rank") != -1 or ranks[0].get("comm_ranks") != \
        {"comm_size": 8, "first": 0, "last": 7, "count": 8}:
    fails.append("ranks rows: %s" % ranks)
rt = subprocess.run([cli, "report", dump], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
text = rt.stdout
if "ranks 8 " not in text or not any(l.split()[:1] == ["c0-7"] for l in text.splitlines()):
    fails.append("text report does not name the ranks c0-7:\n" + text[:1500])
shutil.rmtree(work, ignore_errors=True)
for f in fails:
    print("FAIL: " + f, file=sys.stderr)
print("initall report: %d failures" % len(fails))
sys.exit(1 if fails else 0)
