#!/usr/bin/env python3
"""tests/integration/test_exit_race.py CASE --shim SO --sim-dir DIR --prog EXE --cli COLLSCOPE [--runs N]

Several threads end a process at once (tests/integration/exit_race.c: one grouped AllReduce on
two simulated GPUs, then a barrier and exit/abort/return from main); the shim's dump must
still be whole: header first, both ops, footer last with ops == 2, and no stats ring left
behind. CASE: exit2, exit8 (N threads call exit), main (exit and return from main), signal
(exit, and exit from a signal handler), abort (exit and abort: the process dies of SIGABRT
or exits 1; the dump must be readable and, with `collscope salvage` of a ring left behind,
hold both ops). Each case runs --runs times (default 5): the race is released by a barrier,
so every run releases the threads together, whatever the load."""
import argparse, glob, json, os, resource, shutil, signal, subprocess, sys, tempfile

CASES = {
    "exit2": (["exit", "2"], {1}),
    "exit8": (["exit", "8"], {1}),
    "main": (["main"], {0, 1}),
    "signal": (["signal"], {1}),
    "abort": (["abort"], {1, -signal.SIGABRT}),
}


def read_dump(path):
    """Lines of a dump up to its last complete one (a cut-off last line is not a record)."""
    data = open(path, "rb").read()
    lines = data.split(b"\n")
    if lines and lines[-1] != b"":
        lines = lines[:-1]  # no newline yet: not a whole line
    return [json.loads(l) for l in lines if l]


def ops_of(recs):
    return sorted((o["comm_rank"], o["op"], o["seq"]) for o in recs if o.get("type") == "op")


WANT_OPS = [(0, "AllReduce", 0), (1, "AllReduce", 0)]


def one_run(a, case, i):
    argv, rcs = CASES[case]
    tmp = tempfile.mkdtemp(prefix="cs-exit-race-")
    try:
        dump, shm = os.path.join(tmp, "dump"), os.path.join(tmp, "shm")
        os.makedirs(shm)
        env = dict(os.environ)
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_JOB_ID", "COLLSCOPE_SIM_FAULTS"):
            env.pop(k, None)
        env.update({
            "LD_PRELOAD": a.shim, "LD_LIBRARY_PATH": a.sim_dir + ":" + env.get("LD_LIBRARY_PATH", ""),
            "COLLSCOPE_SIM_GPUS": "2", "COLLSCOPE_DIR": dump, "COLLSCOPE_SHM_DIR": shm,
            "COLLSCOPE_HOSTNAME": "h1", "COLLSCOPE_JOB_ID": "exitrace", "COLLSCOPE_EVENT_SAMPLE": "1",
        })
        p = subprocess.run([a.prog] + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
        files = glob.glob(os.path.join(dump, "*.jsonl"))
        sizes = [os.path.getsize(f) for f in files]
        print("%s run %d: rc %d, dump sizes %s, rings left %s" % (case, i, p.returncode, sizes, sorted(os.listdir(shm))))
        assert "exit_race: ready" in p.stdout, p.stdout
        assert p.returncode in rcs, (p.returncode, p.stdout)
        assert len(files) == 1, (files, p.stdout)
        recs = read_dump(files[0])
        assert not recs or recs[0]["type"] == "header", recs[:1]
        whole = bool(recs) and recs[-1]["type"] == "footer"
        if case != "abort" or whole:
            assert whole, ("no footer", sizes, recs[-1:], p.stdout)
            assert recs[-1]["ops"] == 2, recs[-1]
            assert ops_of(recs) == WANT_OPS, ops_of(recs)
            assert os.listdir(shm) == [], os.listdir(shm)  # the ring went with the clean exit
            return "whole"
        # abort won before the footer: what the dump has plus what the ring keeps holds every op
        out = os.path.join(tmp, "salvaged")
        s = subprocess.run([a.cli, "salvage", "--shm-dir", shm, "-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        print(s.stdout)
        got = set(ops_of(recs))
        for f in glob.glob(os.path.join(out, "*.salvage.jsonl")):
            got |= set(ops_of(read_dump(f)))
        assert sorted(got) == WANT_OPS, (sorted(got), sizes)
        return "salvaged"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--shim", required=True)
    ap.add_argument("--sim-dir", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    seen = [one_run(a, a.case, i) for i in range(a.runs)]
    print("PASS", a.case, {k: seen.count(k) for k in set(seen)})


if __name__ == "__main__":
    sys.exit(main())
