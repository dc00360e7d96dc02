"""tests/hung_jobs.py: ending a job that hangs the way a scheduler would, once collscope has
said so. `collscope top --once --json` lists the processes with a stats ring; each shim
writes its hang record and flushes its dump before its ring says HUNG, so a verdict that
waits for those flags follows the shims' reports, however slowly the host gets there. The
tests and bench/accuracy.py share it."""
import json
import os
import subprocess
import time


def top_processes(cli, shm):
    """the processes `collscope top` shows in shm (empty when it cannot read them)"""
    q = subprocess.run([cli, "top", "--once", "--json", "--shm-dir", shm], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return json.loads(q.stdout)["processes"] if q.returncode == 0 else []


def kill_when_hung(p, cli, shm, enough, poll=0.1):
    """While job p runs: once enough(pids flagged HUNG) is true, SIGKILL every process with a
    ring and return True; False when the job ended first."""
    while p.poll() is None:
        procs = top_processes(cli, shm)
        if enough({x["pid"] for x in procs if "HUNG" in x["flags"]}):
            for x in procs:
                try:
                    os.kill(x["pid"], 9)
                except ProcessLookupError:
                    pass
            return True
        time.sleep(poll)
    return False
