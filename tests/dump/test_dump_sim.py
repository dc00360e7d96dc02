#!/usr/bin/env python3
"""tests/dump/test_dump_sim.py CASE --cli COLLSCOPE --job OPCOUNT_JOB

The dump file end to end on the simulator: 4 ranks of opcount_job under `collscope run
--sim`, each rank counting its own AllReduces in a file that outlives it.
  enospc:  the dump directory is a small tmpfs; once every rank has written op records the
           test fills it, frees it 1.5 s later, and checks that every line is JSON, that
           each footer's drops == ops the job ran - op records in the file (nothing lost
           uncounted), that the drops records add up to the footer's, and that every rank
           wrote records again after the space came back. Needs mount(2) (root); exit 77
           (skipped) where mounting is not permitted.
  sigterm: SIGTERM to the launcher mid-job (termination signals reach each rank between two
           calls: OPCOUNT_GATE=1, unless the environment sets 0); every dump has a footer
           and op records + footer drops == ops the job ran, and the launcher exits 128+15.
Prints the measured figures."""
import argparse, errno, glob, json, os, shutil, signal, subprocess, sys, tempfile, time

RANKS = 4
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def start_job(cli, job, dumps, counts, steps, size="4K", env_extra=None):
    # no health samples: their lines lost to a full disk count as drops too, and these
    # checks compare drops with the op records lost
    env = dict(os.environ, COLLSCOPE_DIR=dumps, COLLSCOPE_SHM_DIR=counts, OPCOUNT_DIR=counts,
               COLLSCOPE_JOB_ID="dumptest", COLLSCOPE_HEALTH_MS="0")
    env.update(env_extra or {})
    cmd = [cli, "run", "-n", str(RANKS), "--sim", "--no-kill-on-fail", "--", job, "--steps", str(steps),
           "--size", size]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def counters(counts):
    out = {}
    for r in range(RANKS):
        try:
            with open(os.path.join(counts, "ops.r%d" % r), "rb") as f:
                b = f.read(8)
            out[r] = int.from_bytes(b, "little") if len(b) == 8 else 0
        except OSError:
            out[r] = 0
    return out


def load_dump(path):
    """(objects, bad line count, whether the file ends with a newline)"""
    with open(path, "rb") as f:
        data = f.read()
    objs, bad = [], 0
    for line in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"):
        try:
            objs.append(json.loads(line))
        except ValueError:
            bad += 1
    return objs, bad


def dumps_by_rank(dumps):
    out = {}
    for p in glob.glob(os.path.join(dumps, "*.jsonl")):
        objs, bad = load_dump(p)
        hdr = next((o for o in objs if o.get("type") == "header"), None)
        rank = hdr["rank"] if hdr else int(os.path.basename(p).split("-r")[1].split("-")[0])
        out[rank] = (p, objs, bad)
    return out


def ops_in(objs):
    return sum(1 for o in objs if o.get("type") == "op")


def footer_of(objs):
    return next((o for o in objs if o.get("type") == "footer"), None)


def wait_for(pred, timeout, proc):
    end = time.time() + timeout
    while time.time() < end and proc.poll() is None:
        if pred():
            return True
        time.sleep(0.05)
    return False


def fill(path):
    """Write path until the file system is full; returns the bytes written."""
    n = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for chunk in (1 << 20, 4096, 1):
            b = b"\0" * chunk
            while True:
                try:
                    w = os.write(fd, b)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
                n += w
                if w < chunk:
                    break
    finally:
        os.close(fd)
    return n


def case_enospc(cli, job, tmp):
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt)
    try:
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        why = m.stdout.strip() if m.returncode != 0 else None
    except OSError as e:
        why = str(e)
    if why is not None:
        print("SKIP: cannot mount a tmpfs here (%s); the unit test shim-unit-dump covers write failures" % why)
        return 77
    try:
        dumps = os.path.join(mnt, "dumps")
        os.makedirs(dumps)
        counts = os.path.join(tmp, "counts")
        os.makedirs(counts)
        # at least 6000 x 500 us = 3 s of calls: the disk is full for 1.5 s of them
        p = start_job(cli, job, dumps, counts, steps=6000,
                      env_extra={"COLLSCOPE_FLUSH_MS": "200", "OPCOUNT_PACE_US": "500"})

        def started():  # every rank's file holds more than its header and comm line
            f = glob.glob(os.path.join(dumps, "*.jsonl"))
            return len(f) == RANKS and all(os.path.getsize(x) > 2000 for x in f)
        if not check(wait_for(started, 60, p), "every rank wrote op records before the disk filled"):
            p.kill()
            print(p.communicate()[0])
            return 1
        filler = os.path.join(mnt, "filler")
        c0 = counters(counts)
        nfill = fill(filler)
        time.sleep(1.5)
        c1 = counters(counts)
        os.unlink(filler)
        t_free = time.time_ns()
        out = p.communicate(timeout=300)[0]
        check(p.returncode == 0, "job exit code %d, output:\n%s" % (p.returncode, out))
        print("filled %d bytes; ops per rank while full: %s" % (nfill, {r: c1[r] - c0[r] for r in c0}))
        ran = counters(counts)
        d = dumps_by_rank(dumps)
        check(len(d) == RANKS, "one dump per rank: %d" % len(d))
        total_lost = total_drops = 0
        for r in sorted(d):
            path, objs, bad = d[r]
            ft = footer_of(objs)
            n = ops_in(objs)
            drops = ft["drops"] if ft else None
            drop_lines = sum(o["count"] for o in objs if o.get("type") == "drops")
            after = sum(1 for o in objs if o.get("type") == "op" and o["enqueue_ns"] > t_free)
            print("rank %d: ran %d ops, %d op records, lost %d, footer drops %s (drops records %d), "
                  "%d malformed lines, %d op records after the space came back"
                  % (r, ran[r], n, ran[r] - n, drops, drop_lines, bad, after))
            total_lost += ran[r] - n
            total_drops += drops or 0
            check(bad == 0, "rank %d: %d malformed lines" % (r, bad))
            check(objs and objs[0].get("type") == "header", "rank %d: the header comes first" % r)
            if not check(ft is not None, "rank %d: footer written" % r):
                continue
            check(drops == ran[r] - n, "rank %d: footer drops %d == ops run %d - op records %d"
                  % (r, drops, ran[r], n))
            check(drop_lines == drops, "rank %d: drops records add up to %d, footer says %d" % (r, drop_lines, drops))
            check(after > 0, "rank %d: writing resumed after the space came back" % r)
        check(total_lost > 0, "the full disk cost records (else the test proves nothing)")
        print("summary enospc: ops lost %d, counted as drops %d" % (total_lost, total_drops))
    finally:
        subprocess.run(["umount", "-l", mnt])
    return 0


def case_sigterm(cli, job, tmp):
    dumps = os.path.join(tmp, "dumps")
    counts = os.path.join(tmp, "counts")
    os.makedirs(counts)
    gate = os.environ.get("OPCOUNT_GATE", "1")  # 0: signals land anywhere in the job
    p = start_job(cli, job, dumps, counts, steps=1000000, env_extra={"OPCOUNT_GATE": gate})
    if not check(wait_for(lambda: min(counters(counts).values()) >= 2000, 60, p), "every rank ran 2000 ops"):
        p.kill()
        print(p.communicate()[0])
        return 1
    time.sleep(0.5)
    t0 = time.time()
    p.send_signal(signal.SIGTERM)
    out = p.communicate(timeout=60)[0]
    took = time.time() - t0
    print("launcher exit %d after %.2f s" % (p.returncode, took))
    check(p.returncode == 128 + signal.SIGTERM, "the ranks died of SIGTERM (the job's fate unchanged):\n" + out)
    ran = counters(counts)
    d = dumps_by_rank(dumps)
    check(len(d) == RANKS, "one dump per rank: %d" % len(d))
    total_ran = total_rec = 0
    for r in sorted(d):
        path, objs, bad = d[r]
        ft = footer_of(objs)
        n = ops_in(objs)
        drops = ft["drops"] if ft else 0
        total_ran += ran[r]
        total_rec += n
        print("rank %d: ran %d ops, %d op records (%.1f%% lost), footer %s, drops %d, malformed %d"
              % (r, ran[r], n, 100.0 * (ran[r] - n) / max(ran[r], 1), "yes" if ft else "NO", drops, bad))
        check(bad == 0, "rank %d: %d malformed lines" % (r, bad))
        if not check(ft is not None, "rank %d: footer written" % r):
            continue
        check(n + drops == ran[r], "rank %d: op records %d + drops %d == ops run %d" % (r, n, drops, ran[r]))
    print("summary sigterm: %d of %d ops recorded (%.1f%% lost), %.2f s from SIGTERM to exit"
          % (total_rec, total_ran, 100.0 * (total_ran - total_rec) / max(total_ran, 1), took))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--job", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-dump-")
    try:
        rc = globals()["case_" + a.case](a.cli, a.job, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if rc == 77:
        return 77
    if failures or rc:
        print("%d check(s) failed" % len(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
